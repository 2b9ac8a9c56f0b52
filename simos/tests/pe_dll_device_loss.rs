//! Device loss as an application of the shipped `rvgpu_umd.dll` learns it (UM-10, TDR-09):
//! its C API reports the loss with what Windows tells a program (the status the driver wrote
//! into a queue's doorbell, `D3DKMTGetDeviceState`, a thunk's `STATUS_DEVICE_REMOVED`),
//! never reports work that did not run as done, and the application recovers by recreating
//! its device. Every test runs on both driver builds: `rvgpu.sys` in the emulator and the
//! Linux build.

mod common;

use std::sync::Arc;

use common::dll::*;
use common::pe::{call, log_of, pe_machine, threaded_machine, umd};
use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::pe::DriverBuild;
use rvgpu_simos::{Machine, TdrConfig};

const DEVICE_LOST: u64 = 3;
const INVALID_HANDLE: u64 = 8;
/// `RVGPU_DEVICE_EXECUTION_*` (`D3DKMT_DEVICEEXECUTION_STATE`).
const ACTIVE: u32 = 1;
const RESET: u32 = 2;
const HUNG: u32 = 3;
/// `D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT`.
const ABORT: i32 = 3;
/// `RVGPU_QUEUE_KERNEL_MODE`.
const KERNEL_MODE: u64 = 1;
const SECOND: u64 = 1_000_000_000;

fn both_builds(test: impl Fn(Arc<Machine>)) {
    test(pe_machine());
    test(threaded_machine(DriverBuild::Linux));
}

/// `RvgpuDeviceLossInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Loss {
    lost: u32,
    execution_state: u32,
    doorbell_status: i32,
    device_removed: u32,
    adapter_reset: u32,
}

fn loss_info(p: &Arc<UserProcess>, adapter: u64) -> Loss {
    let mut raw = [0xAAAA_AAAAu32; 6];
    let r = call(
        p,
        "rvgpu_device_loss_info",
        &[adapter, raw.as_mut_ptr() as u64],
    );
    assert_eq!(r, OK, "rvgpu_device_loss_info");
    assert_eq!(raw[5], 0, "reserved");
    Loss {
        lost: raw[0],
        execution_state: raw[1],
        doorbell_status: raw[2] as i32,
        device_removed: raw[3],
        adapter_reset: raw[4],
    }
}

/// `RvgpuQueueStatus`: (completed, lost, doorbell status).
fn queue_status(p: &Arc<UserProcess>, q: u64) -> (u64, u32, i32) {
    let mut st = [0u64; 5];
    assert_eq!(
        call(p, "rvgpu_queue_status", &[q, st.as_mut_ptr() as u64]),
        OK
    );
    (st[1], (st[3] >> 32) as u32, (st[4] >> 32) as i32)
}

fn fill(va: u64, offset: u64, pattern: u64) -> Vec<u32> {
    dwords(&[Command::Fill {
        dst: va + offset,
        bytes: 64,
        pattern,
    }])
}

/// `rvgpu_submit`: (status, progress value).
fn submit(p: &Arc<UserProcess>, q: u64, cmds: &[u32]) -> (u64, u64) {
    let mut progress = 0u64;
    let r = submit_dwords(p, q, cmds, &mut progress);
    (r, progress)
}

/// `rvgpu_queue_submit` of `cmds` behind a GPU wait for `fence` to reach `value`: the
/// progress value.
fn submit_behind_wait(p: &Arc<UserProcess>, q: u64, cmds: &[u32], fence: u64, value: u64) -> u64 {
    let entry = [fence, value];
    let desc = [
        cmds.as_ptr() as u64,
        cmds.len() as u64,
        entry.as_ptr() as u64,
        1,
        0,
        0,
    ];
    let mut progress = 0u64;
    assert_eq!(
        call(
            p,
            "rvgpu_queue_submit",
            &[q, desc.as_ptr() as u64, addr(&mut progress)]
        ),
        OK
    );
    progress
}

/// The first `words` 64-bit words of `buffer` (locked for reading, untracked uses only).
fn read_buffer(p: &Arc<UserProcess>, buffer: u64, words: usize) -> Vec<u64> {
    let mut data = 0u64;
    assert_eq!(
        call(p, "rvgpu_buffer_lock", &[buffer, 1, 0, 0, addr(&mut data)]),
        OK
    );
    // SAFETY: the buffer's CPU mapping (4096 bytes), locked for reading.
    let v = unsafe { std::slice::from_raw_parts(data as *const u64, words) }.to_vec();
    assert_eq!(call(p, "rvgpu_buffer_unlock", &[buffer]), OK);
    v
}

/// A device recreated after the loss works: a new adapter handle (a new device), a new queue,
/// a fill that runs. Closes everything again.
fn recreated_device_works(p: &Arc<UserProcess>) {
    let (a, q) = open_queue(p);
    let (b, va) = buffer_4k(p, a);
    let (r, v) = submit(p, q, &fill(va, 0, 0x4E57));
    assert_eq!(r, OK);
    assert_eq!(call(p, "rvgpu_queue_wait", &[q, v, 5 * SECOND]), OK);
    assert_eq!(read_buffer(p, b, 8), vec![0x4E57; 8]);
    let info = loss_info(p, a);
    assert_eq!((info.lost, info.execution_state), (0, ACTIVE), "{info:?}");
    assert_eq!(call(p, "rvgpu_buffer_destroy", &[b, 0, 0]), OK);
    assert_eq!(call(p, "rvgpu_destroy_queue", &[q]), OK);
    assert_eq!(call(p, "rvgpu_close_adapter", &[a]), OK);
}

/// Destroys the objects of a lost device: each call returns (whatever its status), never a
/// fault.
fn tear_down(p: &Arc<UserProcess>, buffers: &[u64], queues: &[u64], fences: &[u64], a: u64) {
    for b in buffers {
        let _ = call(p, "rvgpu_buffer_destroy", &[*b, 0, 0]);
    }
    for f in fences {
        let _ = call(p, "rvgpu_fence_destroy", &[*f]);
    }
    for q in queues {
        let _ = call(p, "rvgpu_destroy_queue", &[*q]);
    }
    assert_eq!(call(p, "rvgpu_close_adapter", &[a]), OK);
}

/// UM-10: a guilty device. Its queue's HANG times the engine out; the KMD aborts the device's
/// doorbells (`DxgkCbDisconnectDoorbell` with DISCONNECTED_ABORT; the OS writes none). The
/// work queued behind the HANG never runs and a wait for it answers DEVICE_LOST, not success,
/// though the OS signalled the device's fences to the maximum, and so is a lock of a buffer
/// that work writes; the queue's completed value stays at what ran. `rvgpu_device_loss_info` reports HUNG, the doorbell's abort, a device
/// the OS still accepts and no adapter reset. A device the process opened separately on the
/// same adapter is not lost and keeps working; the guilty one is recreated and works.
#[test]
fn um_10_the_dll_reports_a_guilty_devices_doorbell_abort_and_recovers_by_recreating_it() {
    both_builds(guilty_device);
}

fn guilty_device(m: Arc<Machine>) {
    let p = UserProcess::new(m.clone(), umd());
    let (a, q) = open_queue(&p);
    let (b, va) = buffer_4k(&p, a);
    // The sibling: a second rvgpu_open_adapter is a second device of the process.
    let (sa, sq) = open_queue(&p);
    let (sb, sva) = buffer_4k(&p, sa);
    assert_ne!(p.devices()[0].device, p.devices()[1].device);

    let (r, v1) = submit(&p, q, &fill(va, 0, 0x1111));
    assert_eq!(r, OK);
    assert_eq!(call(&p, "rvgpu_queue_wait", &[q, v1, 5 * SECOND]), OK);
    assert_eq!(loss_info(&p, a).lost, 0);
    // A forged adapter handle is refused and the report cleared.
    let mut raw = [0xAAAA_AAAAu32; 6];
    let r = call(
        &p,
        "rvgpu_device_loss_info",
        &[0x5A5A_5A58, raw.as_mut_ptr() as u64],
    );
    assert_eq!((r, raw), (INVALID_HANDLE, [0; 6]));
    let (r, _) = submit(&p, q, &dwords(&[Command::Hang]));
    assert_eq!(r, OK);
    let (r, v3) = submit(&p, q, &fill(va, 64, 0x3333));
    assert_eq!(r, OK);
    // A tracked fill of a second buffer behind it: a lock for reading waits for it.
    let (b2, _) = buffer_4k(&p, a);
    let mut v4 = 0u64;
    assert_eq!(
        call(
            &p,
            "rvgpu_buffer_fill",
            &[q, b2, 0, 64, 0x4444, addr(&mut v4)]
        ),
        OK
    );
    // Timeouts armed once everything is queued, so the HANG is detected after it.
    enable_tdr(&m, TdrConfig::default());
    run_until(&m, "the engine reset", |m| m.tdr_counts(0).0 >= 1);

    // The fill behind the HANG never ran: its wait is no success.
    assert_eq!(
        call(&p, "rvgpu_queue_wait", &[q, v3, 5 * SECOND]),
        DEVICE_LOST,
        "{}",
        log_of(&m)
    );
    assert_eq!(read_buffer(&p, b, 16)[8..], [0; 8], "the fill ran");
    // The lock waiting for the fill that never ran is no success either.
    let mut data = 0u64;
    let queues = [q];
    assert_eq!(
        call(
            &p,
            "rvgpu_buffer_lock",
            &[b2, 1, queues.as_ptr() as u64, 1, addr(&mut data)]
        ),
        DEVICE_LOST
    );
    assert_eq!(data, 0);
    let (completed, lost, doorbell) = queue_status(&p, q);
    assert_eq!((completed, lost, doorbell), (v1, 1, ABORT));
    // What ran before the loss still reads as done.
    assert_eq!(call(&p, "rvgpu_queue_wait", &[q, v1, 0]), OK);
    let info = loss_info(&p, a);
    assert_eq!(
        info,
        Loss {
            lost: 1,
            execution_state: HUNG,
            doorbell_status: ABORT,
            device_removed: 0,
            adapter_reset: 0,
        }
    );

    // The sibling device was not lost.
    let info = loss_info(&p, sa);
    assert_eq!((info.lost, info.execution_state), (0, ACTIVE), "{info:?}");
    let (r, w) = submit(&p, sq, &fill(sva, 0, 0x5151));
    assert_eq!(r, OK);
    assert_eq!(call(&p, "rvgpu_queue_wait", &[sq, w, 5 * SECOND]), OK);
    assert_eq!(read_buffer(&p, sb, 8), vec![0x5151; 8]);

    tear_down(&p, &[b, b2], &[q], &[], a);
    recreated_device_works(&p);
    tear_down(&p, &[sb], &[sq], &[], sa);
    assert_eq!(p.open_devices(), 0);
    no_fault(&m);
}

/// UM-10, TDR-09: an adapter-wide recovery loses every device on the adapter, of every
/// process, idle or not. Each reports RESET (or HUNG, the one with work in flight), a device
/// the OS refuses and an adapter reset;
/// work queued behind a GPU wait when it happened, on a user-mode and a kernel-mode queue,
/// never ran and its wait answers DEVICE_LOST, after which the loss report carries the
/// doorbell's abort as the KMD wrote it. Each process recovers by recreating its device.
#[test]
fn um_10_tdr_09_after_an_adapter_reset_every_dll_device_reports_it_and_recreates() {
    both_builds(adapter_reset);
}

fn adapter_reset(m: Arc<Machine>) {
    let p = UserProcess::new(m.clone(), umd());
    let (a, q) = open_queue(&p);
    let (b, va) = buffer_4k(&p, a);
    let desc = [0u32, KERNEL_MODE as u32, 0, 0];
    let mut kq = 0u64;
    assert_eq!(
        call(
            &p,
            "rvgpu_queue_create",
            &[a, desc.as_ptr() as u64, addr(&mut kq)]
        ),
        OK
    );
    let mut gate = 0u64;
    assert_eq!(call(&p, "rvgpu_fence_create", &[a, 0, addr(&mut gate)]), OK);
    // Another process's device, idle.
    let o = UserProcess::new(m.clone(), umd());
    let (oa, oq) = open_queue(&o);
    let (ob, ova) = buffer_4k(&o, oa);

    let (r, v1) = submit(&p, q, &fill(va, 0, 0x1111));
    assert_eq!(r, OK);
    assert_eq!(call(&p, "rvgpu_queue_wait", &[q, v1, 5 * SECOND]), OK);
    let held = submit_behind_wait(&p, q, &fill(va, 64, 0x2222), gate, 1);
    let kheld = submit_behind_wait(&p, kq, &fill(va, 128, 0x3333), gate, 1);

    m.device_lost(0).expect("the adapter-wide recovery");

    // `K:DXGDEVICE::Reset` @0x1401BB7FC leaves a device RESET, or HUNG where VidSch reports it
    // hung: the device with work in flight may read either, the idle one reads RESET.
    let reset = |info: Loss, states: &[u32], doorbell: i32| {
        assert!(states.contains(&info.execution_state), "{info:?}");
        assert_eq!(
            info,
            Loss {
                lost: 1,
                execution_state: info.execution_state,
                doorbell_status: doorbell,
                device_removed: 1,
                adapter_reset: 1,
            }
        );
    };
    let busy = [RESET, HUNG];
    // Before any queue saw the loss: the OS's word alone.
    reset(loss_info(&p, a), &busy, -1);
    reset(loss_info(&o, oa), &[RESET], -1);
    for (queue, value) in [(q, held), (kq, kheld)] {
        assert_eq!(
            call(&p, "rvgpu_queue_wait", &[queue, value, 5 * SECOND]),
            DEVICE_LOST,
            "{}",
            log_of(&m)
        );
    }
    assert_eq!(queue_status(&p, q).0, v1);
    assert_eq!(queue_status(&p, kq).0, 0);
    reset(loss_info(&p, a), &busy, ABORT);
    let (r, _) = submit(&o, oq, &fill(ova, 0, 1));
    assert_eq!(r, DEVICE_LOST);
    reset(loss_info(&o, oa), &[RESET], ABORT);

    tear_down(&p, &[b], &[q, kq], &[gate], a);
    tear_down(&o, &[ob], &[oq], &[], oa);
    recreated_device_works(&p);
    recreated_device_works(&o);
    assert_eq!((p.open_devices(), o.open_devices()), (0, 0));
    no_fault(&m);
}

/// UM-10 from C, as the header documents it: `examples/device_loss.c`, built with mingw-w64 as
/// strict C99 and run as a Windows process against the shipped DLL, hangs its queue, reads
/// DEVICE_LOST from the wait for the work behind the HANG and the loss report (HUNG, the
/// KMD's doorbell abort, no adapter reset), recreates its device and fills and checks a buffer
/// on it, exiting with 0, on both driver builds. Skipped, saying so, without mingw-w64.
#[test]
fn um_10_the_device_loss_example_recovers_by_recreating_its_device_on_both_driver_builds() {
    use rvgpu_simos::pe::exe::{ExeProcess, ExitStatus};
    let ok = std::process::Command::new("x86_64-w64-mingw32-gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: x86_64-w64-mingw32-gcc is missing (bash scripts/setup.sh mingw)");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dll = rvgpu_simos::pe::build_umd().unwrap_or_else(|e| panic!("{e}"));
    let dir = common::scratch::Scratch::new("pe_dll_device_loss");
    let exe = dir.join("device_loss.exe");
    let r = std::process::Command::new("x86_64-w64-mingw32-gcc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(root.join("umd/include"))
        .arg(root.join("examples/device_loss.c"))
        .arg(&dll)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("x86_64-w64-mingw32-gcc runs");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    both_builds(|m| {
        enable_tdr(&m, TdrConfig::default());
        let p = ExeProcess::load(m.clone(), umd(), &exe, &[]).unwrap_or_else(|e| panic!("{e}"));
        let out = p.run().unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            (out.exit.clone(), out.stdout_text().as_str()),
            (
                ExitStatus::Code(0),
                "device_loss: lost (execution state 3, doorbell status 3, removed 0, \
                 adapter reset 0)\ndevice_loss: recovered\n"
            ),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(p.user_process().open_devices(), 0);
        no_fault(&m);
    });
}
