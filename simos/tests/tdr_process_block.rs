//! The per-process TDR block (docs/tdr.md#the-simulated-os), a step of the OS's engine-reset
//! sequence (TDR-05): under 24H2 a process whose work times out an engine for the fourth
//! time within `TdrLimitTime` loses the adapter — its next device is refused with
//! STATUS_ACCESS_DENIED and the adapter leaves its enumeration — while every other process
//! carries on. Under the pages' reading nothing is blocked. Every test runs on both driver
//! builds and both readings.

mod common;

use common::tdr::*;
use common::*;
use std::time::Duration;

use rvgpu_ddi::ntstatus::STATUS_ACCESS_DENIED;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::machine::answers::ProcessTdrBlock;
use rvgpu_simos::{Machine, Mode, SimError, TdrConfig, TdrEvent, UmsProcess};
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::submit::UserQueue;

/// Whether the machine plays 24H2's block (the pages have none).
fn blocks(m: &Machine) -> bool {
    m.os_config().windows.reading().process_tdr_block == ProcessTdrBlock::Blocks
}

/// One engine timeout charged to `p`'s process: a HANG on a new context of `p`'s device,
/// recovered by an engine reset (the `n`th of the machine).
fn hang(m: &Machine, p: &UmsProcess, n: u64) {
    let k = m.kmt(p);
    let ctx = okk(m, k.create_context(0));
    ok(m, m.submit_legacy(p, ctx, &[Command::Hang]));
    run_until(m, "engine reset", |m| resets(m) == n);
}

/// `hangs` engine timeouts of one process, each on a device it creates anew after the last
/// one was lost (as an application recreates its device), `idle` rounds apart. Returns the
/// process's first device.
fn hang_repeatedly(m: &Machine, hangs: u64, idle: usize) -> UmsProcess {
    let first = ok(m, m.create_process(0));
    let mut p = first;
    for n in 1..=hangs {
        if n > 1 {
            p = ok(m, m.create_device(&first));
        }
        hang(m, &p, n);
        if idle > 0 {
            let _ = m.run_until(idle, Duration::from_secs(30), |_| false);
        }
    }
    first
}

/// The process-block events so far.
fn blocked_events(m: &Machine) -> usize {
    m.tdr_events(0)
        .iter()
        .filter(|e| matches!(e, TdrEvent::ProcessBlocked { .. }))
        .count()
}

/// TDR-05 with 24H2's block: the fourth engine timeout of one process within `TdrLimitTime`
/// (the default `TdrLimitCount` of 5, less one) blocks it on the adapter — its next device is
/// refused with STATUS_ACCESS_DENIED and the adapter leaves its enumeration — while another
/// process creates devices and sees the adapter as before. Under the pages nothing is blocked.
#[test]
fn tdr_05_fourth_engine_timeout_within_tdr_limit_time_refuses_the_process_new_devices() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    assert_eq!(TdrConfig::default().limit_count, 5);
    let p = hang_repeatedly(&m, 4, 0);
    let other = ok(&m, m.create_process(0));
    let again = ok(&m, m.create_device(&other));
    assert_eq!(again.pid, other.pid);
    assert_eq!(m.enum_adapters(other.pid), vec![0]);
    assert!(!m.is_gpu_access_blocked(0, other.pid));
    if blocks(&m) {
        match m.create_device(&p) {
            Err(SimError::DdiFailed(s)) => assert_eq!(s, STATUS_ACCESS_DENIED),
            r => panic!("a blocked process's new device: {r:?}"),
        }
        assert!(m.is_gpu_access_blocked(0, p.pid));
        assert!(m.enum_adapters(p.pid).is_empty(), "the adapter is hidden");
        assert_eq!(blocked_events(&m), 1);
        // The block is the process's: it outlives the device that was charged first.
        ok(&m, m.exit_process(&p));
        assert!(m.is_gpu_access_blocked(0, p.pid));
    } else {
        ok(&m, m.create_device(&p));
        assert!(!m.is_gpu_access_blocked(0, p.pid));
        assert_eq!(m.enum_adapters(p.pid), vec![0]);
        assert_eq!(blocked_events(&m), 0);
    }
    assert!(
        m.bugcheck().is_none(),
        "engine resets never reach TdrLimitCount"
    );
    no_fault(&m);
}

/// TDR-05: three engine timeouts of one process within `TdrLimitTime` block nothing.
#[test]
fn tdr_05_three_engine_timeouts_leave_the_process_its_adapter() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let p = hang_repeatedly(&m, 3, 0);
    ok(&m, m.create_device(&p));
    assert!(!m.is_gpu_access_blocked(0, p.pid));
    assert_eq!(m.enum_adapters(p.pid), vec![0]);
    assert_eq!(blocked_events(&m), 0);
    no_fault(&m);
}

/// TDR-05: four engine timeouts of one process spaced more than `TdrLimitTime` apart never
/// block it (each walk of its history stops at the first older entry).
#[test]
fn tdr_05_engine_timeouts_spaced_beyond_tdr_limit_time_leave_the_process_its_adapter() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let window = 500;
    enable_tdr(
        &m,
        TdrConfig {
            limit_time_steps: window,
            ..fast()
        },
    );
    let p = hang_repeatedly(&m, 4, window as usize + 10);
    ok(&m, m.create_device(&p));
    assert!(!m.is_gpu_access_blocked(0, p.pid));
    assert_eq!(blocked_events(&m), 0);
    no_fault(&m);
}

/// TDR-05: a process registered as DWM is never charged (`M:VidSchRegisterAsDwm`), so four
/// timeouts leave it its adapter; `TdrDebugMode` 3 lifts only the machine's limit, not the
/// per-process block.
#[test]
fn tdr_05_dwm_is_exempt_and_tdr_debug_mode_3_does_not_lift_the_block() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let dwm = ok(&m, m.create_process(0));
    m.register_as_dwm(&dwm);
    let mut p = dwm;
    for n in 1..=4 {
        if n > 1 {
            p = ok(&m, m.create_device(&dwm));
        }
        hang(&m, &p, n);
    }
    ok(&m, m.create_device(&dwm));
    assert!(!m.is_gpu_access_blocked(0, dwm.pid));

    let m = sw_tdr_machine(Mode::Step, |_| {});
    enable_tdr(
        &m,
        TdrConfig {
            debug_mode: 3,
            ..fast()
        },
    );
    let p = hang_repeatedly(&m, 4, 0);
    assert_eq!(m.is_gpu_access_blocked(0, p.pid), blocks(&m));
    no_fault(&m);
}

/// TDR-05 on a hardware-scheduled node: the devices the driver names in
/// `DxgkCbInvalidateHwContext` during `DxgkDdiResetHwEngine` are charged
/// (`M:VidSchInvalidateHwContext`), so the fourth hung user-mode queue of one process blocks
/// it there too.
#[test]
fn tdr_05_hws_node_timeouts_block_the_process_too() {
    let m = tdr_machine(Mode::Step, |_| {});
    let first = ok(&m, m.create_process(0));
    let mut p = first;
    for n in 1..=4 {
        if n > 1 {
            p = ok(&m, m.create_device(&first));
        }
        let mut uq = okk(&m, UserQueue::new(m.kmt(&p), &config(0)));
        okk(&m, uq.submit(&[Command::Hang]));
        run_until(&m, "engine reset", |m| resets(m) == n);
        // The queue's device is in error; the queue stays as the process left it.
        std::mem::forget(uq);
    }
    let invalidated = m
        .tdr_events(0)
        .iter()
        .filter(|e| matches!(e, TdrEvent::Invalidated { .. }))
        .count();
    assert!(invalidated >= 4, "{:#?}", m.tdr_events(0));
    let refused = matches!(
        m.create_device(&first),
        Err(SimError::DdiFailed(s)) if s == STATUS_ACCESS_DENIED
    );
    assert_eq!(refused, blocks(&m), "{:#?}", m.tdr_events(0));
    assert_eq!(m.is_gpu_access_blocked(0, first.pid), blocks(&m));
    ok(&m, m.create_process(0));
    no_fault(&m);
}

/// TDR-05's recreated device lives in the process of the lost one: destroying the lost device
/// leaves the process and its GPU VA space to the new one, whose work runs; the process is
/// gone with its last device.
#[test]
fn tdr_05_a_recreated_device_shares_the_process_and_outlives_the_lost_one() {
    let m = sw_tdr_machine(Mode::Step, |_| {});
    let lost = hang_repeatedly(&m, 1, 0);
    let p = ok(&m, m.create_device(&lost));
    assert_eq!(p.pid, lost.pid);
    assert_ne!(p.device, lost.device);
    ok(&m, m.exit_process(&lost));
    let k = m.kmt(&p);
    let ctx = okk(&m, k.create_context(0));
    let t = okk(&m, k.create_allocation(4096));
    ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 0x5A)]));
    run_until(&m, "fill", |m| all_done(m, 0));
    assert_eq!(t.mem.load(0), 0x5A);
    drop(t);
    ok(&m, m.exit_process(&p));
    assert!(
        matches!(m.create_device(&p), Err(SimError::DdiFailed(_))),
        "no device left: no process to add one to"
    );
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);
