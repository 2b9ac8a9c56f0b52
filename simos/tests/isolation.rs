//! Process isolation by the GPU MMU, end to end through the real UMD, the simulated
//! Dxgkrnl/VidMm, the real KMD and the emulated GPU.
//!
//! Every process runs in its own GPU VA space: VidMm builds its page tables only through the
//! KMD's paging buffers, the KMD programs the root into the process's queue descriptors, and
//! the GPU translates every address a user-mode queue uses. A process naming memory it was not
//! given gets a page fault: nothing is written, its device goes to error and its queues report
//! the device removed (UM-10), and every other process keeps working.

mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use std::time::Duration;

use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE};
use rvgpu_hw::cmd::{Command, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_simos::kmt::{SimFence, SimKmt, SimMem};
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFenceDesc, UmsEvent, UmsProcess};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, HwQueue, Kmt};
use rvgpu_umd::submit::{SubmitError, UserQueue};

const PATTERN: u64 = 0xA11C_E5A1_A11C_E5A1;

/// A process with a user-mode queue on engine 0 and one buffer the CPU filled with
/// [`PATTERN`].
struct Proc<'m> {
    p: UmsProcess,
    k: SimKmt<'m>,
    buf: Allocation<SimMem>,
    /// The VA an attacker names for `buf` ([`victim`]).
    target: u64,
}

/// Where a victim's UMD maps its buffer a second time, at an address no other process maps:
/// under 24H2 every process's own Maps start at the top of its space, so the buffer's first
/// VA is mapped in the attacker's space too (to the attacker's own buffer), and naming it is
/// no attack.
const VICTIM_VA: u64 = 0x5000_0000_0000;

/// [`process`] whose buffer is also mapped at [`VICTIM_VA`] (its `target`), the paging fence
/// waited for.
fn victim(m: &Machine) -> Proc<'_> {
    let mut v = process(m);
    let (queue, _) = okk(m, v.k.device_paging_queue());
    let r = okk(
        m,
        v.k.map_gpu_va(&rvgpu_umd::kmt::MapGpuVa::read_write(
            queue,
            VICTIM_VA,
            v.buf.handle,
            0,
            1,
        )),
    );
    let pf = rvgpu_umd::kmt::PagingFence {
        fence: okk(m, v.k.device_paging_queue()).1,
        value: r.paging_fence_value,
    };
    okk(m, rvgpu_umd::kmt::wait_paging(&v.k, Some(pf)));
    v.target = r.va;
    v
}

fn process(m: &Machine) -> Proc<'_> {
    let p = ok(m, m.create_process(0));
    let k = m.kmt(&p);
    let buf = okk(m, k.create_allocation(4096));
    for off in (0..4096).step_by(8) {
        buf.mem.store(off, PATTERN);
    }
    let target = buf.gpu_va;
    Proc { p, k, buf, target }
}

/// A step-mode machine with 4 doorbells whose OS follows `reading`.
fn machine_reading(reading: rvgpu_simos::Windows) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 4;
    cfg.os.windows = reading;
    started(cfg)
}

/// A native fence of `v`'s process.
fn native_fence(m: &Machine, v: &Proc<'_>) -> rvgpu_simos::NativeFence {
    ok(
        m,
        m.create_native_fence(0, v.p.pid, NativeFenceDesc::default()),
    )
}

/// A kernel-mode hardware queue of `v`'s process on node 0 and a command buffer of it holding
/// `cmd`: the queue, the buffer and the command's size in bytes.
fn queue_with_buffer(
    m: &Machine,
    v: &Proc<'_>,
    cmd: Command,
) -> (HwQueue<SimFence>, Allocation<SimMem>, u32) {
    let context = okk(m, v.k.create_context(0));
    let mut pdd = hw_queue_pdd();
    let q = okk(
        m,
        v.k.create_hw_queue(context, false, zerocopy::IntoBytes::as_mut_bytes(&mut pdd)),
    );
    let buf = okk(
        m,
        v.k.create_allocation_as(4096, rvgpu_hw::pdd::AllocationKind::Commands),
    );
    let mut words = [0u64; 8];
    let n = cmd.encode(&mut words).unwrap();
    for (i, w) in words[..n].iter().enumerate() {
        buf.mem.store(i as u64 * 8, *w);
    }
    (q, buf, (n * 8) as u32)
}

fn untouched(m: &Machine, b: &Allocation<SimMem>) {
    for off in (0..4096).step_by(8) {
        assert_eq!(
            b.mem.load(off),
            PATTERN,
            "word {off:#x} was written; {}",
            diagnostics(m)
        );
    }
}

/// Submits work that will fault: with real concurrency the fault may be handled (the device in
/// error, its doorbell aborted) before the submit's own status loop is done, and the submit
/// then reports `STATUS_DEVICE_REMOVED`, or the queue lost when its kernel-mode fallback was
/// refused for the device in error (UM-10). Anything else is a failure.
fn submit_faulting(m: &Machine, q: &mut UserQueue<SimKmt<'_>>, cmds: &[Command]) {
    match q.submit(cmds) {
        Ok(_) => {}
        Err(SubmitError::Kmt(st)) if st.0 == STATUS_DEVICE_REMOVED => {}
        Err(SubmitError::Lost) => {}
        Err(e) => panic!("submit: {e:?}; {}", diagnostics(m)),
    }
}

/// Runs until the OS has handled a page fault of `p`'s device (its device in error).
fn faulted(m: &Machine, p: &UmsProcess) -> u64 {
    let seen = ok(
        m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.ums_events(0)
                .contains(&UmsEvent::DeviceError { device: p.device })
        }),
    );
    assert!(seen, "no page fault reported: {}", diagnostics(m));
    let va = m
        .ums_events(0)
        .iter()
        .find_map(|e| match e {
            UmsEvent::PageFault { va, .. } => Some(*va),
            _ => None,
        })
        .unwrap();
    // UM-10: the device is in error: its thunks fail with STATUS_DEVICE_REMOVED.
    let k = m.kmt(p);
    assert!(k.create_allocation(4096).is_err(), "device in error");
    va
}

/// A process's queue keeps completing work after another's fault.
fn still_works(m: &Machine, v: &Proc<'_>) {
    let mut q = okk(m, UserQueue::new(v.k, &config(0)));
    let done = okk(m, q.submit(&[fill(&v.buf, 8, 0x5AFE)]));
    okk(m, q.wait(done));
    assert_eq!(v.buf.mem.load(8), 0x5AFE);
    okk(m, q.close());
}

/// The attack: process B's user-mode queue names process A's buffer by A's GPU VA.
#[test]
fn user_queue_cannot_write_another_process_memory() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = with_doorbells(mode, 4);
        let a = victim(&m);
        let b = process(&m);
        let mut qb = okk(&m, UserQueue::new(b.k, &config(0)));
        submit_faulting(
            &m,
            &mut qb,
            &[Command::Fill {
                dst: a.target,
                bytes: 4096,
                pattern: 0xBAD,
            }],
        );
        let va = faulted(&m, &b.p);
        assert_eq!(va, a.target, "the fault names the VA B used");
        untouched(&m, &a.buf);
        // B's queue learns the loss at its next submission: 24H2 writes no doorbell status
        // when it puts a device in error, and B's progress fence reads the maximum. Under the
        // pages the KMD aborts its doorbells first, which a threaded GPU can make the faulting
        // submission's own status check see: the queue then already knows it is lost, from
        // the abort. A's world goes on.
        let expected = if qb.is_lost() {
            assert_eq!(
                qb.doorbell_end(),
                Some(rvgpu_umd::kmt::DoorbellStatus::DisconnectedAbort),
                "a queue lost before its next submission learned it from its aborted doorbell"
            );
            SubmitError::Lost
        } else {
            SubmitError::Kmt(rvgpu_umd::kmt::NtStatus(STATUS_DEVICE_REMOVED))
        };
        assert_eq!(qb.submit(&[fill(&b.buf, 0, 1)]).err(), Some(expected));
        still_works(&m, &a);
        drop(qb);
        ok(&m, m.kill_process(&b.p));
        exits_clean(&m, &a.p);
    }
}

/// Every command that carries an address, pointed at memory the process was not given (A's
/// buffer, an unmapped VA, a kernel structure's bus address): a page fault, nothing written.
#[test]
fn every_address_carrying_command_faults_on_foreign_memory() {
    let m = with_doorbells(Mode::Step, 4);
    let a = victim(&m);
    // The KMD's own memory: a kernel structure at its bus address (the identity VA is mapped
    // in no user process).
    let kernel_va = 0x1000_0000u64;
    let unmapped = 0x7000_0000_0000u64;
    let cases = |target: u64, own: u64| {
        vec![
            ("FILL", fill64(target, 1)),
            (
                "COPY into",
                Command::Copy {
                    src: own,
                    dst: target,
                    bytes: 64,
                },
            ),
            ("TIMESTAMP", Command::Timestamp { addr: target }),
            (
                "FENCE_SIGNAL",
                Command::FenceSignal {
                    flags: 0,
                    value_addr: target,
                    value: 9,
                    monitored_addr: 0,
                    report_tag: 0,
                },
            ),
            (
                "FENCE_WAIT",
                Command::FenceWait {
                    addr: target,
                    value: 1,
                },
            ),
            (
                "INDIRECT",
                Command::Indirect {
                    addr: target,
                    bytes: 64,
                },
            ),
        ]
    };
    for target in [a.target, kernel_va, unmapped] {
        for (name, cmd) in cases(target, 0) {
            m.clear_ums_events(0);
            let b = process(&m);
            let cmd = match cmd {
                Command::Copy { dst, bytes, .. } => Command::Copy {
                    src: b.buf.gpu_va,
                    dst,
                    bytes,
                },
                c => c,
            };
            let mut qb = okk(&m, UserQueue::new(b.k, &config(0)));
            submit_faulting(&m, &mut qb, &[cmd]);
            let va = faulted(&m, &b.p);
            assert_eq!(va, target, "{name} at {target:#x}");
            untouched(&m, &a.buf);
            drop(qb);
            ok(&m, m.kill_process(&b.p));
        }
    }
    still_works(&m, &a);
    exits_clean(&m, &a.p);
}

/// NF-01: a native fence's MonitoredValue is mapped into the process but never for user-mode
/// queues; CurrentValue is. A user queue's FENCE_SIGNAL of CurrentValue works (with the
/// conditional-interrupt read of MonitoredValue done by the CMP); a write to MonitoredValue
/// faults and changes nothing. Under every reading: where the OS names the fence's storage at
/// create (26H1, the pages) and where it maps MonitoredValue's page unmarked, before the open
/// that first names it (24H2).
#[test]
fn nf_01_user_queue_cannot_write_monitored_value() {
    for reading in rvgpu_simos::Windows::READINGS {
        user_queue_write_of_monitored_value_faults(reading);
    }
}

fn user_queue_write_of_monitored_value_faults(reading: rvgpu_simos::Windows) {
    let m = machine_reading(reading);
    let v = process(&m);
    let f = native_fence(&m, &v);
    let pdd = f.pdd();
    let mut q = okk(&m, UserQueue::new(v.k, &config(0)));
    let done = okk(
        &m,
        q.submit(&[Command::FenceSignal {
            flags: SIGNAL_CONDITIONAL_IRQ,
            value_addr: f.current_value_va(),
            value: 5,
            monitored_addr: f.monitored_value_va(),
            report_tag: pdd.report_tag,
        }]),
    );
    okk(&m, q.wait(done));
    assert_eq!(
        f.current_value(),
        5,
        "{}: CurrentValue is a user page",
        reading.name()
    );
    let before = f.monitored_value();
    okk(
        &m,
        q.submit(&[Command::Fill {
            dst: f.monitored_value_va(),
            bytes: 8,
            pattern: 0,
        }]),
    );
    let va = faulted(&m, &v.p);
    assert_eq!(va, f.monitored_value_va(), "{}", reading.name());
    assert_eq!(
        f.monitored_value(),
        before,
        "{}: MonitoredValue unchanged",
        reading.name()
    );
    drop(q);
    ok(&m, m.kill_process(&v.p));
    no_fault(&m);
}

/// A DMA buffer runs with its process's privilege on a kernel-mode hardware queue too
/// (`D3DKMTSubmitCommandToHwQueue`): a FILL across a native fence's MonitoredValue, which a
/// process may map but only the OS may write (NF-01), faults at MonitoredValue as it would on
/// a user-mode queue and never lands; the device goes to error, whose fences the OS then
/// signals to `u64::MAX`. Under every reading (24H2 maps MonitoredValue's page unmarked and
/// writable, before the create's open names it).
#[test]
fn nf_01_kernel_mode_queue_buffer_cannot_write_monitored_value() {
    for reading in rvgpu_simos::Windows::READINGS {
        kernel_mode_queue_write_of_monitored_value_faults(reading);
    }
}

fn kernel_mode_queue_write_of_monitored_value_faults(reading: rvgpu_simos::Windows) {
    const PATTERN: u64 = 0x0BAD_0BAD_0BAD_0BAD;
    let m = machine_reading(reading);
    let v = process(&m);
    let f = native_fence(&m, &v);
    let waiter = ok(&m, m.wait_native_fence_event(&f, 5));
    assert_ne!(f.monitored_value(), u64::MAX, "the CPU waiter armed it");
    let fill = Command::Fill {
        dst: f.monitored_value_va(),
        bytes: 8,
        pattern: PATTERN,
    };
    let (q, buf, bytes) = queue_with_buffer(&m, &v, fill);
    match v
        .k
        .submit_command_to_hw_queue(q.handle, 1, buf.gpu_va, bytes)
    {
        Ok(()) => {}
        // The fault handled first: VidSch refuses the device in error.
        Err(st) if st.0 == STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE => {}
        Err(e) => panic!("submit: {e:?}; {}", diagnostics(&m)),
    }
    let va = faulted(&m, &v.p);
    assert_eq!(
        va,
        f.monitored_value_va(),
        "{}: the fault names MonitoredValue",
        reading.name()
    );
    assert_ne!(
        f.monitored_value(),
        PATTERN,
        "{}: the buffer's write never landed",
        reading.name()
    );
    assert_eq!(
        f.current_value(),
        u64::MAX,
        "the OS ended the device's fences"
    );
    assert!(waiter.is_signaled());
    drop(q);
    ok(&m, m.kill_process(&v.p));
    no_fault(&m);
}

/// The driver's `DxgkDdiSetRootPageTable`, saved by the table hooks of the stand-ins below.
static SET_ROOT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
/// Set: the stand-in gives process contexts no root (as if the driver refused it).
static ROOTS_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

type SetRoot = unsafe extern "system" fn(
    rvgpu_ddi::HANDLE,
    *const rvgpu_ddi::allocation::DXGKARG_SETROOTPAGETABLE,
);

/// The driver's own `DxgkDdiSetRootPageTable` ([`SET_ROOT`]) with the OS's arguments.
///
/// # Safety
/// Called from a stand-in for the DDI with the arguments the OS passed it.
unsafe fn real_set_root(
    h: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::allocation::DXGKARG_SETROOTPAGETABLE,
) {
    // SAFETY: the address is the driver's DxgkDdiSetRootPageTable, stored as a `SetRoot`
    // before the machine started; called with the OS's own arguments.
    unsafe {
        let f: SetRoot = std::mem::transmute(*SET_ROOT.get().unwrap());
        f(h, args)
    }
}

unsafe extern "system" fn set_root_until_refused(
    h: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::allocation::DXGKARG_SETROOTPAGETABLE,
) {
    if ROOTS_REFUSED.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    // SAFETY: the OS's own arguments to this stand-in.
    unsafe { real_set_root(h, args) }
}

/// UM-15: a process context that never got `DxgkDdiSetRootPageTable` (24H2 sends it only at a
/// kernel-mode submission or a resume, `M:VidSchiEnsureRootPageTableUpdated` @0x1400EAF40;
/// here the stand-in drops every one) runs its buffer under the root the driver learnt from
/// VidMm's root-level updates of that process, never on the bus: the FILL at the process's VA
/// lands in its own buffer, with no fault and no device error.
#[test]
fn um_15_a_process_context_without_set_root_runs_under_its_process_s_root() {
    let m = started_with(MachineConfig::single(Mode::Step), |t| {
        let real = t.DxgkDdiSetRootPageTable.expect("a GpuMmu driver");
        let _ = SET_ROOT.set(real as usize);
        t.DxgkDdiSetRootPageTable = Some(set_root_until_refused);
    });
    ROOTS_REFUSED.store(true, std::sync::atomic::Ordering::SeqCst);
    let v = process(&m);
    let (q, cmds, bytes) = queue_with_buffer(&m, &v, fill(&v.buf, 0, 0x600D));
    okk(
        &m,
        v.k.submit_command_to_hw_queue(q.handle, 1, cmds.gpu_va, bytes),
    );
    ok(&m, m.run_until_idle());
    let events = m.ums_events(0);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, UmsEvent::PageFault { .. } | UmsEvent::DeviceError { .. })),
        "{}",
        diagnostics(&m)
    );
    assert_eq!(v.buf.mem.load(0), 0x600D, "{}", diagnostics(&m));
    drop(q);
    ok(&m, m.kill_process(&v.p));
    no_fault(&m);
}

/// Unmap, then access: after the UMD destroys an allocation (VidMm unmaps it and flushes the
/// TLB through the driver's paging buffers), the old VA faults; the GPU never uses the stale
/// translation, and the freed memory is never written.
#[test]
fn access_after_unmap_faults_never_a_stale_translation() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = with_doorbells(mode, 4);
        let v = process(&m);
        let gone = okk(&m, v.k.create_allocation(4096));
        let gone_bus = gone.mem.alloc().bus_addr;
        let mut q = okk(&m, UserQueue::new(v.k, &config(0)));
        // Warm the TLB with the mapping.
        let done = okk(&m, q.submit(&[fill(&gone, 0, 1)]));
        okk(&m, q.wait(done));
        assert_eq!(gone.mem.load(0), 1);
        okk(&m, v.k.destroy_allocation(gone.handle));
        assert!(
            !m.memory().is_mapped(PhysAddr::new(gone_bus), 4096),
            "memory given back"
        );
        submit_faulting(&m, &mut q, &[fill(&gone, 0, 2)]);
        let va = faulted(&m, &v.p);
        assert_eq!(va, gone.gpu_va);
        assert_eq!(gone.mem.load(0), 1, "the freed page was not written");
        drop(q);
        ok(&m, m.kill_process(&v.p));
        no_fault(&m);
    }
}

/// Two processes' buffers get VAs in different regions of their own spaces, and each one's
/// ring reaches only its own: A's and B's queues run side by side, each writing its own
/// buffer, and no doorbell is aborted.
#[test]
fn two_processes_run_side_by_side_in_their_own_spaces() {
    let m = with_doorbells(Mode::Threaded, 4);
    let a = process(&m);
    let b = process(&m);
    // VidMm's own VAs (the pages' reading) are in different regions of each space; 24H2's
    // Maps start at the top of each, so the two may coincide, each reaching its own buffer.
    if m.os_config().windows.reading().allocation_va
        == rvgpu_simos::machine::answers::AllocationVa::AtCreate
    {
        assert_ne!(a.buf.gpu_va, b.buf.gpu_va);
    }
    std::thread::scope(|s| {
        for v in [&a, &b] {
            let m = &m;
            s.spawn(move || {
                let mut q = okk(m, UserQueue::new(v.k, &config(0)));
                for i in 0..50u64 {
                    let done = okk(m, q.submit(&[fill(&v.buf, 16, i)]));
                    okk(m, q.wait(done));
                    assert_eq!(v.buf.mem.load(16), i);
                }
                okk(m, q.close());
            });
        }
    });
    let events = m.ums_events(0);
    assert!(!events
        .iter()
        .any(|e| matches!(e, UmsEvent::PageFault { .. } | UmsEvent::DeviceError { .. })));
    ok(&m, m.exit_process(&a.p));
    exits_clean(&m, &b.p);
}

/// Kernel-mode submission is isolated too: process B's DMA buffer (a legacy context,
/// `DxgkDdiSubmitCommandVirtual`, run by the KMD's node ring through INDIRECT_VM under B's root)
/// naming A's buffer faults; nothing of A's is written, the OS treats it as B's faulted DMA
/// buffer (B's device in error, engine reset), and A's kernel-mode work still runs. B's own
/// buffer is reachable from the same kind of submission.
#[test]
fn kernel_mode_dma_buffer_cannot_write_another_process_memory() {
    // Kernel-mode DMA buffers of the OS's software scheduler (HWS off): a faulting buffer is
    // recovered per engine through DxgkDdiResetEngine. (On a hardware-scheduled node the
    // node ring cannot be recovered per engine and the OS resets the adapter, docs/hws.md §3.)
    let m = machine_with(Mode::Step, |a| {
        a.device.doorbells = 4;
        a.hwsch_feature = false;
    });
    enable_tdr_steps(&m, 40, 5);
    let a = victim(&m);
    let b = process(&m);
    let ca = okk(&m, a.k.create_context(0));
    let cb = okk(&m, b.k.create_context(0));
    // B's own memory: fine.
    let own = ok(&m, m.submit_legacy(&b.p, cb, &[fill(&b.buf, 0, 0x0B)]));
    let done = ok(
        &m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.legacy_fences(0, 0).1 >= own
        }),
    );
    assert!(
        done,
        "B's own DMA buffer did not complete: {}",
        diagnostics(&m)
    );
    assert_eq!(b.buf.mem.load(0), 0x0B);
    // A's memory: a fault, nothing written.
    let bad = ok(
        &m,
        m.submit_legacy(
            &b.p,
            cb,
            &[Command::Fill {
                dst: a.target,
                bytes: 4096,
                pattern: 0xBAD,
            }],
        ),
    );
    let recovered = ok(
        &m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.tdr_counts(0).0 >= 1 && m.legacy_fences(0, 0).1 >= bad
        }),
    );
    assert!(recovered, "no recovery: {}", diagnostics(&m));
    untouched(&m, &a.buf);
    let ev = m.tdr_events(0);
    assert!(
        ev.iter().any(|e| matches!(
            e,
            rvgpu_simos::TdrEvent::Detected {
                node: 0,
                cause: rvgpu_simos::Cause::Faulted { fence }
            } if *fence == bad
        )),
        "{ev:#?}"
    );
    assert!(ev.iter().any(
        |e| matches!(e, rvgpu_simos::TdrEvent::DeviceError { device, .. } if *device == b.p.device)
    ));
    // A's kernel-mode work runs on.
    let good = ok(&m, m.submit_legacy(&a.p, ca, &[fill(&a.buf, 8, 0x600D)]));
    let done = ok(
        &m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.legacy_fences(0, 0).1 >= good
        }),
    );
    assert!(done, "A's DMA buffer did not complete: {}", diagnostics(&m));
    assert_eq!(a.buf.mem.load(8), 0x600D);
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!();

/// The root offsets handed through [`recording_set_root`], in order.
static ROOTS_SET: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

unsafe extern "system" fn recording_set_root(
    h: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::allocation::DXGKARG_SETROOTPAGETABLE,
) {
    // SAFETY: the OS's argument block, valid for the call.
    let offset = unsafe { (*args).Address.SegmentOffset };
    ROOTS_SET.lock().unwrap().push(offset);
    // SAFETY: the OS's own arguments to this stand-in.
    unsafe { real_set_root(h, args) }
}

/// UM-01: a process's root page table that VidMm moved between two kernel-mode submissions
/// reaches the driver before the second runs (24H2 `M:VidSchiEnsureRootPageTableUpdated`
/// @0x1400EAF40, before every packet of `M:VidSchSubmitCommandToHwQueue` @0x140048F00,
/// compares the root the context last got with its process's): exactly one
/// `DxgkDdiSetRootPageTable`, with the new table, and the second FILL lands through it. The
/// old table is cleared by the move, so a context left on it faults instead.
#[test]
fn um_01_a_root_moved_between_two_kernel_mode_submissions_reaches_the_driver_before_the_second() {
    let m = started_with(MachineConfig::single(Mode::Step), |t| {
        let real = t.DxgkDdiSetRootPageTable.expect("a GpuMmu driver");
        let _ = SET_ROOT.set(real as usize);
        t.DxgkDdiSetRootPageTable = Some(recording_set_root);
    });
    let v = process(&m);
    let (q, cmds, bytes) = queue_with_buffer(&m, &v, fill(&v.buf, 0, 0x600D));
    okk(
        &m,
        v.k.submit_command_to_hw_queue(q.handle, 1, cmds.gpu_va, bytes),
    );
    ok(&m, m.run_until_idle());
    assert_eq!(v.buf.mem.load(0), 0x600D, "{}", diagnostics(&m));
    let first = *ROOTS_SET
        .lock()
        .unwrap()
        .last()
        .expect("the first submission's root");
    v.buf.mem.store(0, PATTERN);
    let before = ROOTS_SET.lock().unwrap().len();
    assert!(ok(&m, m.move_process_root(&v.p)), "VidMm moved the root");
    okk(
        &m,
        v.k.submit_command_to_hw_queue(q.handle, 2, cmds.gpu_va, bytes),
    );
    ok(&m, m.run_until_idle());
    let sent = ROOTS_SET.lock().unwrap()[before..].to_vec();
    assert_eq!(
        sent.len(),
        1,
        "one SetRootPageTable for the moved root: {sent:x?}"
    );
    assert_ne!(sent[0], first, "the new table, not the old one");
    let events = m.ums_events(0);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, UmsEvent::PageFault { .. } | UmsEvent::DeviceError { .. })),
        "{}",
        diagnostics(&m)
    );
    assert_eq!(v.buf.mem.load(0), 0x600D, "{}", diagnostics(&m));
    drop(q);
    ok(&m, m.kill_process(&v.p));
    no_fault(&m);
}
