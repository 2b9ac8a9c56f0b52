//! Fixtures of the TDR suites (`tdr`, `tdr_dump`): machines with timeout detection on (step
//! mode's short timeouts, or one reading of the Windows flows), a hang held until the OS
//! resets it, and the counts and events the tests read.

use super::*;
use rvgpu_umd::submit::UserQueue;

/// A user-mode process on adapter 0, its thunks and a (legacy, kernel-mode DMA) context on
/// node 0 (bind in this order: they then drop as separate locals would).
pub fn process_with_context(m: &Machine) -> (UmsProcess, SimKmt<'_>, KmtHandle) {
    let (p, k) = user_process(m);
    let ctx = okk(m, k.create_context(0));
    (p, k, ctx)
}

/// Two user-mode processes on adapter 0.
pub fn two_processes(m: &Machine) -> (UmsProcess, UmsProcess) {
    (ok(m, m.create_process(0)), ok(m, m.create_process(0)))
}

/// A FILL of `bytes` at `dst` with `pattern`.
pub fn fill_range(dst: u64, bytes: u64, pattern: u64) -> Command {
    Command::Fill {
        dst,
        bytes,
        pattern,
    }
}

/// The fence IDs of the legacy DMA buffers completed on node 0, in completion order.
pub fn completed_on_node0(m: &Machine) -> Vec<u32> {
    m.legacy_completed(0)
        .into_iter()
        .filter(|(n, _)| *n == 0)
        .map(|(_, id)| id)
        .collect()
}

/// Step-mode TDR settings for tests: a short DMA timeout and preemption wait.
pub fn fast() -> TdrConfig {
    TdrConfig {
        timeout_steps: 40,
        preempt_steps: 5,
        ..TdrConfig::default()
    }
}

/// The software-scheduled (legacy DMA) TDR tests: HWS off on the adapter, so kernel-mode DMA
/// buffers go through DxgkDdiSubmitCommand and a timeout through DxgkDdiResetEngine (with HWS
/// on, VidSch resets the node through ResetHwEngine/ResumeHwEngine, tests/hws.rs).
pub fn sw_tdr_machine(mode: Mode, f: impl FnOnce(&mut AdapterConfig)) -> Machine {
    tdr_machine(mode, |a| {
        a.hwsch_feature = false;
        f(a)
    })
}

pub fn tdr_machine(mode: Mode, f: impl FnOnce(&mut AdapterConfig)) -> Machine {
    let m = machine_with(mode, f);
    enable_tdr(&m, fast());
    m
}

/// [`tdr_machine`] playing one reading of the Windows flows.
pub fn tdr_machine_reading(mode: Mode, reading: rvgpu_simos::Windows) -> Machine {
    let mut cfg = MachineConfig::single(mode);
    cfg.os.windows = reading;
    let m = started(cfg);
    enable_tdr(&m, fast());
    m
}

/// A process whose user-mode queue on node 0 runs a HANG; returns once the OS has resumed the
/// node after resetting it (ResumeHwEngine). The queue is never dropped: its device is in error
/// and the test looks at what the reset left.
pub fn hang_a_user_queue_until_resumed(m: &Machine) -> UmsProcess {
    let h = ok(m, m.create_process(0));
    let kh = m.kmt(&h);
    let mut uq = okk(m, UserQueue::new(kh, &config(0)));
    okk(m, uq.submit(&[Command::Hang]));
    run_until(m, "reset", |m| {
        m.tdr_events(0)
            .iter()
            .any(|e| matches!(e, TdrEvent::ResumeHwEngine { .. }))
    });
    std::mem::forget(uq);
    h
}

pub fn pos(ev: &[TdrEvent], p: impl Fn(&TdrEvent) -> bool) -> usize {
    ev.iter()
        .position(p)
        .unwrap_or_else(|| panic!("event missing; events {ev:#?}"))
}

pub fn resets(m: &Machine) -> u64 {
    m.tdr_counts(0).0
}

pub fn adapter_resets(m: &Machine) -> u64 {
    m.tdr_counts(0).1
}

pub fn all_done(m: &Machine, node: u32) -> bool {
    let (s, c) = m.legacy_fences(0, node);
    s == c
}

/// Threaded mode's timeout: Windows' default `TdrDelay` (2 s). The guilty work in these tests
/// is found by the device's own hang report, so the timeout only guards the innocent queues.
/// It counts the machine's time (`TdrOs::now`), so a host that starves the emulator's thread
/// does not use it up; the length is Windows' default, not a margin for a loaded host.
pub const THREADED_TDR_DELAY: Duration = Duration::from_secs(2);

/// Whether `e` is the OS's debug report of an engine timeout (reason 0x141) through the DDI
/// the reading calls: `DxgkDdiCollectDbgInfo2` with `DXGK_TDR_TYPE_ENGINE_TIMEOUT` under
/// 24H2's, `DxgkDdiCollectDbgInfo` under the pages'.
#[allow(dead_code)]
pub fn is_engine_report(e: &TdrEvent) -> bool {
    use rvgpu_simos::machine::answers::DbgInfoDdi;
    match rvgpu_simos::Windows::from_env().reading().dbg_info {
        DbgInfoDdi::SecondWhenFilled => matches!(
            e,
            TdrEvent::CollectDbgInfo2 { reason: 0x141, tdr_type: 6, bytes } if *bytes > 0
        ),
        DbgInfoDdi::First => matches!(e, TdrEvent::CollectDbgInfo { reason: 0x141, .. }),
    }
}
