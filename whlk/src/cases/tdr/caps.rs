//! The driver's TDR caps, per engine (TDR-01, TDR-02).

use crate::backend::{
    Backend, Capability, ExecMode, Failure, Misbehaviour, NewQueue, SessionConfig, TdrStep,
    TdrTimeouts,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

use super::super::common::{fill, no_fault, observe, session, wait};
use super::fixtures::{
    all_done, resets, software_scheduled, until, BUF, STEP, VIDEO_ENGINE_TIMEOUT_DETECTED,
    VIDEO_TDR_TIMEOUT_DETECTED,
};

// ---------------------------------------------------------------------------------------------
// TDR-01, TDR-02.

/// What a backend needs to build the case's devices and drivers and read the driver's caps.
const CAPS_MACHINES: [Capability; 3] = [
    Capability::FaultInjection,
    Capability::ConfiguredMachine,
    Capability::KmdCaps,
];

pub(super) fn per_engine_caps(b: &dyn Backend) -> CaseResult {
    let caps = b.capabilities();
    if !CAPS_MACHINES.iter().all(|c| caps.contains(*c)) {
        return per_engine_tdr_as_a_program_sees_it(b);
    }
    let mut s = session(b, ExecMode::Step, |_| {})?;
    ensure!(
        s.kmd_caps()?.driver_caps(0)?.per_engine_tdr,
        "a PER_ENGINE_RESET device with the four DDIs: SupportPerEngineTDR is 0"
    );
    // What a program reads of it, where the backend answers the query.
    let p = s.ums()?.open_process(0)?;
    if let Some(seen) = observe(s.tdr()?.per_engine_tdr(p))? {
        ensure!(
            seen,
            "KMTQAITYPE_WDDM_1_2_CAPS of a driver that reported SupportPerEngineTDR: bit clear"
        );
    }
    // Without PER_ENGINE_RESET the driver cannot claim per-engine TDR, and a Windows that
    // validates WDDM caps does not start a WDDM 1.2+ hardware adapter without it
    // (docs/windows-bringup.md BR-52).
    let mut cfg = SessionConfig::new(ExecMode::Step);
    cfg.per_engine_reset = Some(false);
    cfg.validate_wddm_caps = true;
    let mut s = b.open(&cfg)?;
    s.load_driver()?;
    match s.start_adapter(0) {
        Err(Failure::Backend(m)) if m.contains("BR-52") && m.contains("SupportPerEngineTDR") => {}
        other => ensure!(
            false,
            "a device without PER_ENGINE_RESET: expected the start refused (BR-52), got {other:?}"
        ),
    }
    drop(s);
    let mut cfg = SessionConfig::new(ExecMode::Step);
    cfg.misbehaviour = Some(Misbehaviour::NoResetEngineDdi);
    let mut s = b.open(&cfg)?;
    s.load_driver()?;
    match s.start_adapter(0) {
        // BR-42: refused where Windows checks the caps, naming the missing DDI.
        Err(Failure::Backend(m)) if m.contains("BR-42") && m.contains("ResetEngine") => {}
        Err(Failure::Unsupported(m)) => return Err(CaseError::Skip(m)),
        other => ensure!(
            false,
            "start with SupportPerEngineTDR and no DxgkDdiResetEngine: {other:?}"
        ),
    }
    Ok(())
}

/// TDR-01 on the machine as it is, through D3DKMT alone (a program cannot build a device
/// without PER_ENGINE_RESET, load a driver without `DxgkDdiResetEngine` or read the driver's
/// caps): `D3DKMTQueryAdapterInfo(KMTQAITYPE_WDDM_1_2_CAPS)` answers `SupportPerEngineTDR`
/// set, which the OS copies from the caps the driver reported at start.
fn per_engine_tdr_as_a_program_sees_it(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let p = s.ums()?.open_process(0)?;
    ensure!(
        s.tdr()?.per_engine_tdr(p)?,
        "D3DKMTQueryAdapterInfo(KMTQAITYPE_WDDM_1_2_CAPS): SupportPerEngineTDR is 0"
    );
    no_fault(&*s)
}

pub(super) fn collect_dbg_info_level_zero(b: &dyn Backend) -> CaseResult {
    if super::kmd::form(
        b,
        &[
            Capability::TdrTrace,
            Capability::DirectDdi,
            Capability::ConfiguredMachine,
        ],
        &[Capability::KmdJournal],
    )? == super::kmd::Form::Kmd
    {
        return super::kmd::collect_dbg_info_level_zero(b);
    }
    let mut s = session(b, ExecMode::Threaded, software_scheduled)?;
    s.tdr()?.enable_tdr(0, TdrTimeouts::fast())?;
    for reason in [VIDEO_TDR_TIMEOUT_DETECTED, VIDEO_ENGINE_TIMEOUT_DETECTED] {
        let t = s.direct_ddi()?.collect_dbg_info(0, reason)?;
        ensure!(
            !t.is_empty() && t.len() < 4096,
            "CollectDbgInfo({reason:#x}) outside a TDR returned {} bytes",
            t.len()
        );
    }
    let r = s.direct_ddi()?.collect_dbg_info_under_reset(0, 0)?;
    ensure!(
        r.calls > 0,
        "no CollectDbgInfo call returned while the reset was pending"
    );
    ensure!(
        r.min_len > 0 && r.max_len < 4096,
        "CollectDbgInfo text of {}..{} bytes (buffer 4096)",
        r.min_len,
        r.max_len
    );
    ensure!(
        r.caps_queries == 200,
        "{} of 200 QueryAdapterInfo calls returned",
        r.caps_queries
    );
    let ev = s.tdr_trace_ref()?.tdr_steps(0)?;
    ensure!(
        ev.iter().any(|e| matches!(
            e,
            TdrStep::CollectDbgInfo { reason: VIDEO_ENGINE_TIMEOUT_DETECTED, bytes } if *bytes > 0
        )),
        "the OS's own CollectDbgInfo(0x141) of the reset is missing or empty: {ev:?}"
    );
    ensure!(
        resets(&*s) == 1,
        "resets {:?}",
        s.tdr_trace_ref()?.tdr_recoveries(0)
    );
    no_fault(&*s)
}

/// What a backend needs to build the case's machines and look past D3DKMT.
const MACHINE_VIEW: [Capability; 4] = [
    Capability::ConfiguredMachine,
    Capability::KmdCaps,
    Capability::DirectDdi,
    Capability::DmaContexts,
];

pub(super) fn nodes_and_affinity(b: &dyn Backend) -> CaseResult {
    let caps = b.capabilities();
    if !MACHINE_VIEW.iter().all(|c| caps.contains(*c)) {
        return nodes_as_a_program_sees_them(b);
    }
    for engines in [1u32, 2, 16] {
        // Software-scheduled: a process's DMA buffers go through `D3DKMTSubmitCommand`, which
        // 24H2 refuses on a hardware-scheduled node's contexts.
        let mut s = session(b, ExecMode::Step, |c| {
            c.engines = Some(engines);
            software_scheduled(c);
        })?;
        let caps = s.kmd_caps()?.driver_caps(0)?;
        ensure!(
            caps.nodes == engines,
            "{engines} engines: DRIVERCAPS reports {} nodes",
            caps.nodes
        );
        let p = s.ums()?.open_process(0)?;
        let t = s.ums()?.create_buffer(p, BUF)?;
        for n in 0..engines {
            let mask = s.direct_ddi()?.dependent_engine_group(0, n)?;
            ensure!(
                mask == 1u64 << n,
                "{engines} engines: node {n}'s dependent group {mask:#x}, expected {:#x}",
                1u64 << n
            );
            let c = s.dma_contexts()?.create_context(p, n)?;
            s.dma_contexts()?
                .submit_dma(c, &[fill(t, 8 * u64::from(n), 0x100 + u64::from(n))])?;
        }
        let nodes = engines;
        until(&mut *s, STEP, "DMA buffers on every node", |s| {
            (0..nodes).all(|n| all_done(s, n))
        })?;
        for n in 0..engines {
            let got = s.ums_ref()?.read_buffer(t, 8 * u64::from(n))?;
            ensure!(
                got == 0x100 + u64::from(n),
                "{engines} engines: node {n}'s DMA buffer did not run ({got:#x})"
            );
        }
        no_fault(&*s)?;
    }
    Ok(())
}

/// TDR-02 on the machine as it is, through D3DKMT alone (a program cannot choose the engine
/// count, ask for the dependent engine group, or submit DMA buffers to a hardware-scheduled
/// node): a queue on each node the adapter has runs its work on that node, and the first
/// node past them is refused (a thunk's failure; where the backend reports the driver's node
/// count, any refusal of that node).
fn nodes_as_a_program_sees_them(b: &dyn Backend) -> CaseResult {
    /// More nodes than any rvgpu device has (16 engines).
    const MAX: u32 = 17;
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    let known = observe(s.kmd_caps().and_then(|k| k.driver_caps(0)))?.map(|c| c.nodes);
    let p = s.ums()?.open_process(0)?;
    let t = s.ums()?.create_buffer(p, BUF)?;
    let mut nodes = 0;
    while nodes < MAX {
        let q = match (s.ums()?.create_queue(p, NewQueue::user_mode(nodes)), known) {
            (Ok(q), Some(k)) if nodes >= k => {
                return Err(CaseError::Fail(format!(
                    "a queue on node {nodes} of a driver with {k} nodes: {q:?}"
                )))
            }
            (Ok(q), _) => q,
            (Err(_), Some(k)) if nodes == k => break,
            (Err(Failure::DdiFailed(_)), None) => break,
            (Err(e), _) => return Err(e.into()),
        };
        let n = u64::from(nodes);
        let v = s.ums()?.submit(q, &[fill(t, 8 * n, 0x100 + n)])?;
        wait(&mut *s, q, v, "a queue's work on its node")?;
        let got = s.ums_ref()?.read_buffer(t, 8 * n)?;
        ensure!(got == 0x100 + n, "node {n}'s queue did not run ({got:#x})");
        nodes += 1;
    }
    ensure!(
        (1..MAX).contains(&nodes),
        "{nodes} nodes took a queue: expected at least one, and a refusal past the last"
    );
    no_fault(&*s)
}
