//! Native fences at GPU VAs of each process, as Windows gives them
//! (`D3DDDI_NATIVEFENCEMAPPING`: CurrentValue and MonitoredValue "in the current process's
//! address space"), through the real UMD (`Kmt::create_shareable_native_fence` / `open_native_fence`),
//! the simulated OS and the KMD. The device runs without `OPTIMIZED_FENCE_IRQ`, so every
//! interrupt report is a fence array the tests can read: a named fence, or NULL (a scan).

mod common;

use common::*;
use std::time::Duration;

use rvgpu_hw::cmd::{Command, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, Mode, NativeFence, Notification, UmsEvent, UmsProcess};
use rvgpu_umd::fence::NativeFence as UmdFence;
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::{SubmitError, UserQueue};

use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;

fn machine(mode: Mode) -> Machine {
    machine_with(mode, |a| {
        a.device.doorbells = 8;
        a.device.optimized_fence_irq = false;
    })
}

/// The OS's handles of the native fences `queues` complete on where the OS gave them no
/// progress fence (24H2: the UMD's own); their reports are the queues' bookkeeping, not the
/// fences a test is about.
fn progress_handles(m: &Machine, queues: &[&UserQueue<SimKmt<'_>>]) -> Vec<usize> {
    queues
        .iter()
        .filter(|q| !q.os_sees_work())
        .filter_map(|q| m.native_fence_by_kmt(0, q.progress_fence()))
        .map(|f| f.global_handle())
        .collect()
}

/// Whether every report names fences (no full scan), each `fence` or one of `progress`
/// ([`progress_handles`]), and one names `fence`.
fn only_named(reports: &[Option<Vec<usize>>], fence: usize, progress: &[usize]) -> bool {
    let named = |r: &Option<Vec<usize>>| {
        r.as_deref()
            .is_some_and(|h| h.iter().all(|x| *x == fence || progress.contains(x)))
    };
    reports.iter().all(named)
        && reports
            .iter()
            .any(|r| r.as_deref().is_some_and(|h| h.contains(&fence)))
}

/// Native-fence reports of adapter 0 so far: `Some(handles)` named, `None` a full scan.
fn fence_reports(m: &Machine) -> Vec<Option<Vec<usize>>> {
    m.notifications(0)
        .into_iter()
        .filter_map(|p| match p.notification {
            Notification::NativeFenceSignaled { fences, .. } => Some(fences),
            _ => None,
        })
        .collect()
}

/// The OS's instance behind a UMD fence.
fn os_fence(m: &Machine, f: &UmdFence) -> NativeFence {
    m.native_fence_by_kmt(0, f.kmt)
        .expect("the OS knows the handle")
}

struct Proc<'m> {
    p: UmsProcess,
    k: SimKmt<'m>,
}

fn process(m: &Machine) -> Proc<'_> {
    let p = ok(m, m.create_process(0));
    Proc { p, k: m.kmt(&p) }
}

/// `f` of `from` made available to `to` as on Windows: an NT handle `from` makes
/// (`D3DKMTShareObjects`), duplicated into `to`'s handle table; the handle in `to`'s table.
fn shared_into(m: &Machine, from: &Proc, f: &UmdFence, to: &Proc) -> u64 {
    let h = okk(m, from.k.share_native_fence(f.kmt));
    if from.p.pid == to.p.pid {
        return h;
    }
    let t = ok(m, m.duplicate_handle(from.p.pid, h, to.p.pid));
    okk(m, from.k.close_nt_handle(h));
    t
}

/// A shareable native fence `from` makes at 0, opened by `to` through an NT handle it then
/// closes: `from`'s instance, `to`'s, and the OS's fence.
fn opened_by(m: &Machine, from: &Proc, to: &Proc) -> (UmdFence, UmdFence, NativeFence) {
    let f = okk(m, from.k.create_shareable_native_fence(0));
    let h = shared_into(m, from, &f, to);
    let g = okk(m, to.k.open_native_fence(h));
    okk(m, to.k.close_nt_handle(h));
    let os = os_fence(m, &f);
    (f, g, os)
}

/// `q` (of `p`) submits `cmd`, which names an address `p` was not given: the submission is
/// taken or refused as from a removed device, and `p`'s device goes to error (a page fault);
/// otherwise the test fails saying `what` it expected.
fn device_error_after(
    m: &Machine,
    q: &mut UserQueue<SimKmt<'_>>,
    cmd: Command,
    p: &UmsProcess,
    what: &str,
) {
    match q.submit(&[cmd]) {
        Ok(_) => {}
        Err(SubmitError::Kmt(st)) if st.0 == STATUS_DEVICE_REMOVED => {}
        Err(e) => panic!("submit: {e:?}; {}", diagnostics(m)),
    }
    let error = UmsEvent::DeviceError { device: p.device };
    let seen = ok(
        m,
        m.run_until(20_000, Duration::from_secs(10), |m| {
            m.ums_events(0).contains(&error)
        }),
    );
    assert!(seen, "{what}: {}", diagnostics(m));
}

/// Two processes that open one fence get VAs of their own (each different from the
/// other's and from the system process's), the UMD signals and waits through its own, and
/// each process's signal wakes the other's waiters, CPU and GPU. The ISR resolves every
/// record, whichever process's VA it carries, to the fence: one named report per signal,
/// never a NULL report (no full rescan).
#[test]
fn two_processes_own_fence_vas_and_wake_each_other() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = machine(mode);
        let (a, b) = (process(&m), process(&m));
        let (fa, fb, os) = opened_by(&m, &a, &b);
        let (ca, cb) = (fa.gpu.current.get(), fb.gpu.current.get());
        let (ma, mb) = (fa.gpu.monitored.get(), fb.gpu.monitored.get());
        assert_ne!(ca, cb, "CurrentValue: one VA per process");
        assert_ne!(ma, mb, "MonitoredValue: one VA per process");
        for va in [ca, cb] {
            assert_ne!(va, os.current_value_gpu(), "not the system-process VA");
        }
        for va in [ma, mb] {
            assert_ne!(va, os.monitored_value_gpu(), "not the system-process VA");
        }
        assert_eq!(fa.gpu.tag, fb.gpu.tag, "one fence, one report tag");
        let mut qa = okk(&m, UserQueue::new(a.k, &config(0)));
        let mut qb = okk(&m, UserQueue::new(b.k, &config(0)));
        if mode == Mode::Step {
            ok(&m, m.run_until_idle());
        }
        let reports_before = fence_reports(&m).len();

        // B signals through its VA: the CPU waiter and A's GPU wait (at A's VA) wake.
        let cpu = ok(&m, m.wait_native_fence_event(&os, 1));
        let a_waits = okk(&m, qa.submit(&[fa.wait(2)]));
        submit_wait(&m, &mut qb, &[fb.signal(1)]);
        assert_eq!(
            cpu.wait(Duration::from_secs(10)),
            Some(rvgpu_simos::WaitOutcome::Satisfied),
            "{}",
            diagnostics(&m)
        );
        submit_wait(&m, &mut qb, &[fb.signal(2)]);
        okk(&m, qa.wait(a_waits));
        // A signals through its VA: B's GPU wait (at B's VA) and a CPU waiter wake.
        let cpu = ok(&m, m.wait_native_fence_event(&os, 3));
        let b_waits = okk(&m, qb.submit(&[fb.wait(3)]));
        submit_wait(&m, &mut qa, &[fa.signal(3)]);
        okk(&m, qb.wait(b_waits));
        assert_eq!(
            cpu.wait(Duration::from_secs(10)),
            Some(rvgpu_simos::WaitOutcome::Satisfied)
        );
        assert_eq!(os.current_value(), 3);
        if mode == Mode::Step {
            ok(&m, m.run_until_idle());
        }
        let reports = fence_reports(&m).split_off(reports_before);
        assert!(
            only_named(
                &reports,
                os.global_handle(),
                &progress_handles(&m, &[&qa, &qb])
            ),
            "the signals with waiters interrupted; every record resolved to the fence (or a \
             queue's own progress fence), none to a full scan: {reports:?}"
        );
        okk(&m, qa.close());
        okk(&m, qb.close());
        no_fault(&m);
    }
}

/// NF-14: a process that opens a shared fence from an NT handle signals it with the fence's
/// report tag under every reading, so its GPU signal is reported by name: 24H2 hands the opener
/// its own bytes as `PrivateDriverData` (the UMD zeroes them), the pages the KMD's open data
/// (none), and the UMD takes the tag from the KMD's `DxgkDdiEscape` answer for its device.
#[test]
fn nf_14_an_opener_signals_with_the_fence_report_tag_under_every_reading() {
    for reading in [rvgpu_simos::Windows::W24H2, rvgpu_simos::Windows::PAGES] {
        let mut cfg = rvgpu_simos::MachineConfig::single(Mode::Step);
        cfg.os.windows = reading;
        cfg.adapters[0].device.doorbells = 8;
        cfg.adapters[0].device.optimized_fence_irq = false;
        let m = started(cfg);
        let (a, b) = (process(&m), process(&m));
        let (_fa, fb, os) = opened_by(&m, &a, &b);
        assert_eq!(
            fb.gpu.tag,
            os.pdd().report_tag,
            "{}: the opener's tag is the fence's",
            reading.name()
        );
        let mut qb = okk(&m, UserQueue::new(b.k, &config(0)));
        ok(&m, m.run_until_idle());
        let before = fence_reports(&m).len();
        let cpu = ok(&m, m.wait_native_fence_event(&os, 1));
        submit_wait(&m, &mut qb, &[fb.signal(1)]);
        assert_eq!(
            cpu.wait(Duration::from_secs(10)),
            Some(rvgpu_simos::WaitOutcome::Satisfied),
            "{}: {}",
            reading.name(),
            diagnostics(&m)
        );
        ok(&m, m.run_until_idle());
        let reports = fence_reports(&m).split_off(before);
        assert!(
            only_named(&reports, os.global_handle(), &progress_handles(&m, &[&qb])),
            "{}: the opener's signal names the fence, no scan: {reports:?}",
            reading.name()
        );
        okk(&m, qb.close());
        no_fault(&m);
    }
}

/// A process that uses another process's VA of a fence names nothing of its own
/// there: its signal page-faults, the fence keeps its value, the device goes to error (UM-10)
/// and the other process keeps working.
#[test]
fn another_process_fence_va_faults_and_writes_nothing() {
    let m = machine(Mode::Step);
    let (a, b) = (process(&m), process(&m));
    let fa = okk(&m, a.k.create_shareable_native_fence(7));
    let os = os_fence(&m, &fa);
    let mut qb = okk(&m, UserQueue::new(b.k, &config(0)));
    // B holds no handle to the fence; it writes A's addresses into its ring.
    device_error_after(&m, &mut qb, fa.signal(99), &b.p, "no page fault");
    let va = m.ums_events(0).iter().find_map(|e| match e {
        UmsEvent::PageFault { va, .. } => Some(*va),
        _ => None,
    });
    assert_eq!(va, Some(fa.gpu.current.get()), "the fault names A's VA");
    assert_eq!(os.current_value(), 7, "nothing written");
    drop(qb);
    // A is untouched: its own signal lands.
    let mut qa = okk(&m, UserQueue::new(a.k, &config(0)));
    submit_wait(&m, &mut qa, &[fa.signal(8)]);
    assert_eq!(os.current_value(), 8);
    okk(&m, qa.close());
    ok(&m, m.kill_process(&b.p));
    no_fault(&m);
}

/// NF-01: a process that opens another's shared fence after its first open is given
/// MonitoredValue as a page no user-mode queue reaches from its first leaf on (VidMm writes it
/// unmarked, as any later rewrite of the page's leaf; the driver already keeps the page from
/// user queues): its queue's signal of CurrentValue lands, its write of MonitoredValue faults
/// and changes nothing.
#[test]
fn nf_01_monitored_value_mapped_after_the_first_open_is_never_a_user_page() {
    let m = machine(Mode::Step);
    let (a, b) = (process(&m), process(&m));
    let (_fa, fb, os) = opened_by(&m, &a, &b);
    let mut qb = okk(&m, UserQueue::new(b.k, &config(0)));
    submit_wait(&m, &mut qb, &[fb.signal(4)]);
    assert_eq!(os.current_value(), 4, "B's CurrentValue is a user page");
    let before = os.monitored_value();
    let write = Command::Fill {
        dst: fb.gpu.monitored.get(),
        bytes: 8,
        pattern: 0,
    };
    device_error_after(&m, &mut qb, write, &b.p, "MonitoredValue written");
    let va = m.ums_events(0).iter().find_map(|e| match e {
        UmsEvent::PageFault { va, .. } => Some(*va),
        _ => None,
    });
    assert_eq!(va, Some(fb.gpu.monitored.get()), "the fault names B's VA");
    assert_eq!(os.monitored_value(), before, "MonitoredValue unchanged");
    drop(qb);
    ok(&m, m.kill_process(&b.p));
    no_fault(&m);
}

/// Untrusted tags: the ISR trusts the tag, not the address, so a process can
/// name another process's fence by forging its tag. That costs one re-read of that fence by
/// the OS (a named report and one DPC resample; no full scan), and the other process's
/// waiter is released only when the value really passes.
#[test]
fn forged_tag_costs_one_resample_and_releases_nobody() {
    let m = machine(Mode::Step);
    let (a, b) = (process(&m), process(&m));
    let fa = okk(&m, a.k.create_shareable_native_fence(0));
    let gb = okk(&m, b.k.create_shareable_native_fence(0));
    let (osa, osb) = (os_fence(&m, &fa), os_fence(&m, &gb));
    let mut qb = okk(&m, UserQueue::new(b.k, &config(0)));
    ok(&m, m.run_until_idle());
    let a_waiter = ok(&m, m.wait_native_fence_event(&osa, 10));
    // A waiter on B's own fence arms its MonitoredValue, so B's signal interrupts.
    let _b_waiter = ok(&m, m.wait_native_fence_event(&osb, 1));
    let reports_before = fence_reports(&m).len();
    let resamples_before = m.native_fence_counts(0).2;
    let forged = Command::FenceSignal {
        flags: SIGNAL_CONDITIONAL_IRQ,
        value_addr: gb.gpu.current.get(),
        value: 1,
        monitored_addr: gb.gpu.monitored.get(),
        report_tag: fa.gpu.tag,
    };
    submit_wait(&m, &mut qb, &[forged]);
    ok(&m, m.run_until_idle());
    let reports = fence_reports(&m).split_off(reports_before);
    let progress = progress_handles(&m, &[&qb]);
    assert!(
        only_named(&reports, osa.global_handle(), &progress),
        "the forged record names A's fence; no full scan: {reports:?}"
    );
    // Besides, one resample per report of the queue's own progress fence (24H2).
    let own = reports
        .iter()
        .flatten()
        .flatten()
        .filter(|h| progress.contains(h))
        .count() as u64;
    assert_eq!(
        m.native_fence_counts(0).2 - resamples_before,
        1 + own,
        "one resample of A's fence"
    );
    assert!(!a_waiter.is_signaled(), "A's value never reached 10");
    assert_eq!(osa.current_value(), 0);
    assert_eq!(osb.current_value(), 1, "B wrote only its own fence");
    // A's honest signal still releases A's waiter.
    let mut qa = okk(&m, UserQueue::new(a.k, &config(0)));
    submit_wait(&m, &mut qa, &[fa.signal(10)]);
    ok(&m, m.run_until_idle());
    assert!(a_waiter.is_signaled(), "{}", diagnostics(&m));
    okk(&m, qa.close());
    okk(&m, qb.close());
    no_fault(&m);
}

/// Fence pages are mapped once per process and counted (fences packed on a page
/// share it); closing the last fence of a page unmaps it once no queue of the process that
/// could still name it is left; process exit leaves nothing mapped and no fence behind.
#[test]
fn fence_pages_counted_unmapped_at_close_and_at_exit() {
    // The counts are of the test's fences: an OS that gives user-mode queues their progress
    // fence (the pages), so that the UMD makes no native fence of its own for them.
    let mut cfg = rvgpu_simos::MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::PAGES;
    cfg.adapters[0].device.doorbells = 8;
    cfg.adapters[0].device.optimized_fence_irq = false;
    let m = started(cfg);
    let a = process(&m);
    let pid = a.p.pid;
    let f1 = okk(&m, a.k.create_shareable_native_fence(0));
    let f2 = okk(&m, a.k.create_shareable_native_fence(0));
    let page = |va: u64| va & !0xFFF;
    // The thunk's fences are shareable (own pages): two CurrentValue + two MonitoredValue.
    assert_eq!(m.native_fence_mapped_pages(0, pid), (4, 0));
    assert_ne!(page(f1.gpu.current.get()), page(f2.gpu.current.get()));
    // Opening f1 again in the same process maps nothing new, and gets the same VAs.
    let h = shared_into(&m, &a, &f1, &a);
    let f1b = okk(&m, a.k.open_native_fence(h));
    // The NT handle would keep f1 alive without an instance (as on Windows): closed here.
    okk(&m, a.k.close_nt_handle(h));
    assert_eq!(f1b.gpu, f1.gpu);
    assert_eq!(m.native_fence_mapped_pages(0, pid), (4, 0));
    okk(&m, a.k.destroy_native_fence(f1b.kmt));
    assert_eq!(m.native_fence_mapped_pages(0, pid), (4, 0), "f1 still open");
    // No queue in the process: the last close unmaps at once.
    okk(&m, a.k.destroy_native_fence(f1.kmt));
    assert_eq!(m.native_fence_mapped_pages(0, pid), (2, 0));
    // A queue that might still name f2: its pages wait for the queue.
    let mut q = okk(&m, UserQueue::new(a.k, &config(0)));
    // The queue's wait log, mapped into its process (LOG-01), counts beside the fences' pages.
    let logs = m.native_fence_mapped_pages(0, pid).0 - 2;
    submit_wait(&m, &mut q, &[f2.signal(1)]);
    okk(&m, a.k.destroy_native_fence(f2.kmt));
    assert_eq!(m.native_fence_mapped_pages(0, pid), (logs, 2), "retired");
    // Made while the queue lives, f3 takes VAs of its own (f2's are still reserved).
    let f3 = okk(&m, a.k.create_shareable_native_fence(0));
    assert_eq!(
        m.native_fence_mapped_pages(0, pid),
        (2 + logs, 2),
        "f2's wait for the queue"
    );
    assert_ne!(page(f3.gpu.current.get()), page(f2.gpu.current.get()));
    okk(&m, q.close());
    // A queue made now cannot name f2 (its handle is gone), so it does not hold f2's pages;
    // made before they are unmapped, none of its allocations is at their VAs (VidMm reuses
    // freed VAs).
    let mut q = okk(&m, UserQueue::new(a.k, &config(0)));
    // The next native-fence call on the adapter unmaps them (here an open of f3, which maps
    // nothing new in its own process).
    let h = shared_into(&m, &a, &f3, &a);
    let f3b = okk(&m, a.k.open_native_fence(h));
    okk(&m, a.k.close_nt_handle(h));
    okk(&m, a.k.destroy_native_fence(f3b.kmt));
    assert_eq!(m.native_fence_mapped_pages(0, pid), (2 + logs, 0));
    // The new queue using f2's old VA faults: the unmap reached the page tables and the TLB.
    assert_eq!(m.gpu_translate(0, pid, f2.gpu.current), None);
    device_error_after(
        &m,
        &mut q,
        f2.signal(2),
        &a.p,
        "a closed fence's VA still mapped",
    );
    drop(q);
    // Exit: every handle closed, every page gone with the space.
    let before = m.fence_live_counts(0).0;
    ok(&m, m.kill_process(&a.p));
    assert_eq!(m.native_fence_mapped_pages(0, pid), (0, 0));
    let after = m.fence_live_counts(0).0;
    assert_eq!(after.0, before.0 - 1, "f3 destroyed at exit");
    assert_eq!(after.2, before.2 - 1, "its D3DKMT handle closed");
    no_fault(&m);
}
