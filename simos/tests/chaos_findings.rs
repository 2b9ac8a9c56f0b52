//! What the chaos run (tests/chaos.rs) found in the simulated OS, each reproduced on its own.
//!
//! - A process exit (UM-17, UM-18) racing another thread's release of freed allocations: the
//!   exit found VidMm's queue of freed allocations empty while another thread was still
//!   unmapping one of them, then unmapped the same pages itself (`STATUS_INVALID_PARAMETER`)
//!   or dropped the address space under the other thread's unmap (`STATUS_INVALID_HANDLE`).
//! - A hardware-scheduled node's reset (TDR-05): completions of the node's kernel-mode ring
//!   that the driver reported after `DxgkDdiResumeHwEngine` resumed the engine, but before the
//!   OS counted the node's reports again, were dropped; the OS's last completed fence ID then
//!   stayed behind the driver's for good.
//! - A process exit left open the native-fence instances the process had opened without a
//!   D3DKMT handle, which kept their fence alive after its creator destroyed it.

mod common;

use std::time::Duration;

use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::testing::tdr::linger_after_resume;
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFenceDesc, TdrEvent};
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::UserQueue;

/// UM-17 / UM-18: threads that each create processes with allocations, free some, and end
/// them by exit or kill, while the others do the same: every exit and kill succeeds, and
/// every object and byte of system memory comes back.
#[test]
fn um_17_exits_racing_other_processes_frees_always_succeed() {
    let m = started(MachineConfig::single(Mode::Threaded));
    one_user_mode_submission(&m);
    let base = (m.ums_live_counts(0), m.gpuva_live_counts(0));
    std::thread::scope(|s| {
        for t in 0..6u64 {
            let m = &m;
            s.spawn(move || {
                for round in 0..25u64 {
                    let p = ok(m, m.create_process(0));
                    let k = m.kmt(&p);
                    let mut a: Vec<_> = (0..4)
                        .map(|i| okk(m, k.create_allocation(4096 << ((t + i) % 4))))
                        .collect();
                    // Freed here, released by whichever thread enters VidMm next.
                    a.truncate(2);
                    let r = if (t + round) % 2 == 0 {
                        m.exit_process(&p)
                    } else {
                        m.kill_process(&p)
                    };
                    if let Err(e) = r {
                        panic!("thread {t} round {round}: {e}\n{}", diagnostics(m));
                    }
                    // The process is gone: its handles must not be closed again.
                    std::mem::forget(a);
                }
            });
        }
    });
    assert_eq!((m.ums_live_counts(0), m.gpuva_live_counts(0)), base);
    no_fault(&m);
}

/// TDR-05 on a hardware-scheduled node: kernel-mode work queued behind a hang (the OS's own
/// DMA buffers: a process's contexts there take none, 24H2 `K:DxgkSubmitCommandInternal`
/// @0x1402A4B90 refuses `D3DKMTSubmitCommand` on them) runs once the engine resumes, and the driver's DmaCompleted reports of it are counted even when they
/// arrive before `DxgkDdiResumeHwEngine` returned (the driver lingers in it here, the device
/// running meanwhile): the OS's last completed fence ID reaches its last submitted, and the
/// node keeps completing work.
#[test]
fn tdr_05_completions_while_the_engine_resumes_are_counted() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 16;
    let m = started_with(cfg, |t| linger_after_resume(t, 50, true));
    let nop = [Command::Nop { len: 1 }];
    let first = ok(&m, m.submit_system(0, 0, &nop));
    run_until(&m, "the first kernel-mode buffer", |m| {
        m.legacy_fences(0, 0) == (first, first)
    });
    enable_tdr_steps(&m, 40, 5);
    let g = ok(&m, m.create_process(0));
    let mut hung = okk(&m, UserQueue::new(m.kmt(&g), &config(0)));
    okk(&m, hung.submit(&[Command::Hang]));
    // The device alone (no OS round): the engine reaches the HANG before the OS hears of it.
    let dev = m.device(0).expect("device").clone();
    for _ in 0..10_000 {
        dev.step();
    }
    // Queued on the hung engine: in flight at the OS's snapshot, run once the engine resumes.
    let last = (0..4)
        .map(|_| ok(&m, m.submit_system(0, 0, &nop)))
        .last()
        .unwrap_or_default();
    run_until(&m, "the reset", |m| {
        m.tdr_events(0)
            .iter()
            .any(|e| matches!(e, TdrEvent::ResumeHwEngine { node: 0, .. }))
    });
    run_until(&m, "the queued buffers counted", |m| {
        m.legacy_fences(0, 0) == (last, last)
    });
    let again = ok(&m, m.submit_system(0, 0, &nop));
    run_until(&m, "a buffer after the reset", |m| {
        m.legacy_fences(0, 0) == (again, again)
    });
    std::mem::forget(hung);
    no_fault(&m);
}

fn run_until(m: &Machine, what: &str, done: impl FnMut(&Machine) -> bool) {
    let held = ok(m, m.run_until(20_000, Duration::from_secs(20), done));
    assert!(
        held,
        "{what}: not reached; legacy fences {:?}, tdr {:#?}",
        m.legacy_fences(0, 0),
        m.tdr_events(0)
    );
}

/// UM-17: a process that exits with a native fence of another process still open closes it;
/// once the creator destroys its instance the fence is gone.
#[test]
fn um_17_exit_closes_the_native_fences_the_process_opened() {
    let m = started(MachineConfig::single(Mode::Threaded));
    let hub = ok(&m, m.create_process(0));
    let shared = NativeFenceDesc {
        shareable: true,
        ..NativeFenceDesc::default()
    };
    let f = ok(&m, m.create_native_fence(0, hub.pid, shared));
    let p = ok(&m, m.create_process(0));
    let opened = ok(&m, m.open_native_fence(&f, p.pid));
    ok(&m, m.exit_process(&p));
    ok(&m, m.destroy_native_fence(&f));
    assert_eq!(
        m.fence_live_counts(0).0,
        (0, 0, 0),
        "the fence outlived every instance"
    );
    drop(opened);
    exits_clean(&m, &hub);
}
