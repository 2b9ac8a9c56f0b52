//! VidSch's PASSIVE TDR worker: detection, the preemption timer, and the DDIs recovery starts
//! with (preempt, collect debug info) plus the DPC flush it waits on.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_NO_MEMORY, STATUS_SUCCESS, STATUS_UNSUCCESSFUL};
use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGKARG_COLLECTDBGINFO_EXT,
    DXGKARG_PREEMPTCOMMAND, DXGKARG_QUERYCURRENTFENCE, DXGK_PREEMPTCOMMANDFLAGS,
    DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT, DXGK_TDR_TYPE_ENGINE_TIMEOUT, VIDEO_ENGINE_TIMEOUT_DETECTED,
};
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{self, sim_err, table, At};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ums;

use super::irq::Interrupts;
use super::recovery::recover_node;
use super::registry::{existing, ENABLED};
use super::state::{Cause, TdrDump, TdrEvent, TdrShared};

/// VidSch's TDR work for one adapter: detection, the preemption timer, recovery. Returns
/// whether it did anything. Step mode: called once per round (the round counter is the clock).
pub(crate) fn run_passive(a: &AdapterShared, irq: &dyn Interrupts) -> bool {
    if ENABLED.load(Ordering::Acquire) == 0 || a.state.is_halted() {
        return false;
    }
    let Some(sh) = existing(a) else { return false };
    let Ok(_one) = sh.recovering.try_lock() else {
        return false;
    };
    let mut os = lock(&sh.os);
    if !os.enabled {
        return false;
    }
    if os.step {
        os.rounds += 1;
    }
    let now = os.now();
    let timeout = os.timeout();
    let preempt_timeout = os.preempt_timeout();
    let watch = os.config.watch_hw_queues;
    drop(os);
    let queues = if watch {
        ums::tdr_queues(a)
    } else {
        Vec::new()
    };
    let mut os = lock(&sh.os);
    let nodes = lock(&a.caps).map_or(0, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    for node in 0..nodes {
        let n = os.node(node);
        // A pending preemption: acknowledged, or timed out.
        if let Some((id, since)) = n.preempt {
            if let Some((pid, last)) = n.preempted.take() {
                if pid == id {
                    n.preempt = None;
                    n.last_change = now;
                    os.events.push(TdrEvent::Preempted {
                        node,
                        fence: id,
                        last_completed: last,
                    });
                    return true;
                }
            }
            if now.saturating_sub(since) >= preempt_timeout {
                n.preempt = None;
                drop(os);
                let _ = recover_node(a, &sh, node, None, irq);
                return true;
            }
            continue;
        }
        // Triggers.
        let mut cause = None;
        if let Some(f) = n.faulted.take() {
            n.faulted_fence = Some(f);
            cause = Some(Cause::Faulted { fence: f });
        } else if std::mem::take(&mut n.hung) {
            cause = Some(Cause::EngineHung);
        } else if n.s > n.c && now.saturating_sub(n.last_change) >= timeout {
            let (s, c) = (n.s, n.c);
            if n.queried_c != Some(c) {
                // Before a late fence counts as a hang, Dxgkrnl asks the driver for the
                // current fence: the completion interrupt may have been lost (the
                // DxgkDdiQueryCurrentFence page, Remarks). A fence ahead of what the OS saw
                // means exactly that: the driver has reported it (NotifyInterrupt + QueueDpc),
                // and the timer starts again. Otherwise the timeout stands, at once.
                n.queried_c = Some(c);
                drop(os);
                let current = query_current_fence(a, node);
                os = lock(&sh.os);
                let lost = current.is_some_and(|f| {
                    let ahead = f.wrapping_sub(c);
                    ahead != 0 && ahead <= s.wrapping_sub(c)
                });
                if lost {
                    os.events.push(TdrEvent::FenceQueried { node });
                    os.node(node).last_change = now;
                    return true;
                }
                // The state lock was released for the call: decide on what holds now.
                let n = os.node(node);
                if !(n.s > n.c && n.c == c && now.saturating_sub(n.last_change) >= timeout) {
                    return true;
                }
            }
            cause = Some(Cause::DmaTimeout);
        } else {
            for q in queues.iter().filter(|q| q.node == node) {
                let busy = q.watched_busy();
                let completed = q.completed.unwrap_or(0);
                let e = n.watch.entry(q.handle).or_insert((completed, now));
                if !busy || e.0 != completed {
                    *e = (completed, now);
                    continue;
                }
                if now.saturating_sub(e.1) >= timeout {
                    *e = (completed, now);
                    cause = Some(Cause::HwQueueStalled { queue: q.handle });
                    break;
                }
            }
        }
        let Some(cause) = cause else { continue };
        os.events.push(TdrEvent::Detected { node, cause });
        let n = os.node(node);
        if n.s > n.c {
            // Preemption attempt (step 2) with a new fence ID, in submission order (under
            // the submission lock, taken before the state lock).
            drop(os);
            let _order = lock(&sh.submit);
            let mut os = lock(&sh.os);
            let n = os.node(node);
            let id = n.next_id;
            n.next_id = n.next_id.wrapping_add(1).max(1);
            n.preempt = Some((id, now));
            n.preempted = None;
            os.events
                .push(TdrEvent::PreemptRequested { node, fence: id });
            drop(os);
            let _ = preempt(a, node, id);
            return true;
        }
        drop(os);
        let stalled = match cause {
            Cause::HwQueueStalled { queue } => Some(queue),
            _ => None,
        };
        let _ = recover_node(a, &sh, node, stalled.or(Some(0)), irq);
        return true;
    }
    false
}

/// `DxgkDdiQueryCurrentFence(node)` at PASSIVE from the watchdog: the fence the driver says
/// completed last, `None` if it failed. A failure is not a bug check: the timeout that follows
/// handles a node the driver cannot answer for.
pub(super) fn query_current_fence(a: &AdapterShared, node: u32) -> Option<u32> {
    let f = table(a)
        .ok()
        .and_then(|t| ddi::in_table!(t, DxgkDdiQueryCurrentFence))?;
    let mut args = DXGKARG_QUERYCURRENTFENCE {
        CurrentFence: 0,
        NodeOrdinal: node,
        EngineOrdinal: 0,
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context and a valid argument block.
    let status = unsafe { ddi::passive_with(a, f, ctx, &mut args) }.ok()?;
    NT_SUCCESS(status).then_some(args.CurrentFence)
}

pub(super) fn preempt(a: &AdapterShared, node: u32, id: u32) -> Result<(), SimError> {
    let f = ddi::table_slot!(a, DxgkDdiPreemptCommand)?
        .ok_or_else(|| sim_err(a, "no DxgkDdiPreemptCommand".into()))?;
    let args = DXGKARG_PREEMPTCOMMAND {
        PreemptionFenceId: id,
        NodeOrdinal: node,
        EngineOrdinal: 0,
        Flags: DXGK_PREEMPTCOMMANDFLAGS::default(),
    };
    let ctx = a.context();
    let status = ddi::call(a, f, At::Level(Irql::Dispatch), |f| {
        // SAFETY: the driver's DDI with its context and a valid argument block.
        unsafe { f(ctx, &args) }
    })?;
    crate::vidsch::legacy::submit_succeeded(a, status, node, id)
}

/// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE with a 4 KiB buffer and a guard after it.
pub(super) fn collect_dbg_info(
    a: &AdapterShared,
    sh: &TdrShared,
    reason: u32,
) -> Result<(), SimError> {
    // A WDDM KMD must implement it; skipping it would hide a missing DDI from every TDR test.
    let f = ddi::table_slot!(a, DxgkDdiCollectDbgInfo)?.ok_or_else(|| {
        sim_err(
            a,
            format!("driver bug: TDR ({reason:#x}) but the driver has no DxgkDdiCollectDbgInfo"),
        )
    })?;
    const SIZE: usize = 4096;
    const GUARD: u8 = 0xA5;
    let mut buf = vec![GUARD; SIZE + 64];
    let mut ext = DXGKARG_COLLECTDBGINFO_EXT::default();
    let args = DXGKARG_COLLECTDBGINFO {
        Reason: reason,
        pBuffer: buf.as_mut_ptr().cast(),
        BufferSize: SIZE,
        pExtension: &mut ext,
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context and a buffer of BufferSize bytes.
    let status = unsafe { ddi::passive_with(a, f, ctx, &args) }?;
    if buf[SIZE..].iter().any(|b| *b != GUARD) {
        return Err(sim_err(
            a,
            format!("driver bug: DxgkDdiCollectDbgInfo({reason:#x}) wrote past BufferSize"),
        ));
    }
    let bytes = if NT_SUCCESS(status) {
        buf[..SIZE].iter().position(|b| *b == 0).unwrap_or(SIZE)
    } else {
        0
    };
    lock(&sh.os)
        .events
        .push(TdrEvent::CollectDbgInfo { reason, bytes });
    Ok(())
}

/// The debug report just before a hardware-scheduled node's reset, as 24H2 makes it
/// (`M:TdrCollectDbgInfoStage1` @0x140368AC0, `K:DXGADAPTER::_DdiCollectDbgInfoNoLocks`
/// @0x1403698F8): reason `VIDEO_ENGINE_TIMEOUT_DETECTED`, `DxgkDdiCollectDbgInfo2` with
/// `DXGK_TDR_TYPE_ENGINE_TIMEOUT` and its 40-byte payload (`hContext` cleared for the driver)
/// where the driver has the slot, else `DxgkDdiCollectDbgInfo`.
///
/// What Stage1 gives and checks: a zeroed 16 MiB buffer (`ExAllocatePool2` without
/// `POOL_FLAG_UNINITIALIZED`) followed by an "EOR" canary, and a 32-byte extension followed by
/// one; a damaged canary marks the dump corrupt, which here is a driver bug. `NoLocks` accepts
/// only `STATUS_SUCCESS`, `STATUS_UNSUCCESSFUL` and `STATUS_NO_MEMORY` (anything else is
/// "Driver returned an invalid NTSTATUS code"), also a driver bug here. The bytes are kept as
/// [`TdrDump`] keeps them, whatever the status.
pub(super) fn collect_dbg_info_24h2(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
) -> Result<(), SimError> {
    let Some(f) = ddi::table_slot!(a, DxgkDdiCollectDbgInfo2)? else {
        return collect_dbg_info(a, sh, VIDEO_ENGINE_TIMEOUT_DETECTED);
    };
    const SIZE: usize = 16 << 20;
    const CANARY: &[u8; 4] = b"EOR\0";
    let mut buf = vec![0u8; SIZE + CANARY.len()];
    buf[SIZE..].copy_from_slice(CANARY);
    /// The extension and its canary, one allocation as Stage1's 36 bytes.
    #[repr(C)]
    struct Ext {
        ext: DXGKARG_COLLECTDBGINFO_EXT,
        canary: [u8; 4],
    }
    let mut ext = Ext {
        ext: DXGKARG_COLLECTDBGINFO_EXT::default(),
        canary: *CANARY,
    };
    let (suspends, ready) = crate::vidsch::hws::node_queue_counts(a, node);
    let mut payload = DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT {
        NodeOrdinal: node,
        EngineOrdinal: 0,
        LastHwCompletedFenceId: 0,
        LastHwSubmittedFenceId: 0,
        NumberOfPendingSuspendRequests: suspends,
        NumberOfReadyInteractiveHwQueues: ready,
        hContext: std::ptr::null_mut(),
    };
    let mut args = DXGKARG_COLLECTDBGINFO2 {
        Reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
        pBuffer: buf.as_mut_ptr().cast(),
        BufferSize: SIZE,
        pExtension: &mut ext.ext,
        TdrType: DXGK_TDR_TYPE_ENGINE_TIMEOUT,
        TdrPayloadSize: std::mem::size_of::<DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>() as u32,
        TdrPayload: (&mut payload as *mut DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT).cast(),
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context, a buffer of BufferSize bytes, an
    // extension and a payload of TdrPayloadSize bytes, all alive for the call.
    let status = unsafe { ddi::passive_with(a, f, ctx, &mut args) }?;
    if buf[SIZE..] != CANARY[..] || ext.canary != *CANARY {
        return Err(sim_err(
            a,
            "driver bug: DxgkDdiCollectDbgInfo2 wrote past BufferSize or its extension".to_string(),
        ));
    }
    if ![STATUS_SUCCESS, STATUS_UNSUCCESSFUL, STATUS_NO_MEMORY].contains(&status) {
        return Err(sim_err(
            a,
            format!(
                "driver bug: DxgkDdiCollectDbgInfo2 returned {status:#x}, not one of its three"
            ),
        ));
    }
    // Stage1 follows a non-null `hContext` as its own context object into the context's
    // process: it must be the OS's handle of a context of this adapter, never the KMD's.
    let hcontext = payload.hContext as usize;
    if hcontext != 0 && !ums::tdr_is_os_context(a, hcontext) {
        return Err(sim_err(
            a,
            format!(
                "driver bug: DxgkDdiCollectDbgInfo2 named hContext {hcontext:#x}, not the OS's \
                 handle of a context of the adapter"
            ),
        ));
    }
    let kept = buf[..SIZE]
        .iter()
        .rposition(|b| *b != 0)
        .map_or(1, |i| i + 1);
    buf.truncate(kept);
    let mut os = lock(&sh.os);
    os.events.push(TdrEvent::CollectDbgInfo2 {
        reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
        tdr_type: DXGK_TDR_TYPE_ENGINE_TIMEOUT,
        bytes: kept,
    });
    os.last_dump = Some(TdrDump {
        status,
        bytes: buf,
        hcontext,
    });
    Ok(())
}

/// Waits until no DPC of the adapter is queued or running (`KeFlushQueuedDpcs`), without
/// closing its gate. Step mode: runs queued DPCs inline.
pub(super) fn flush_dpcs(
    a: &AdapterShared,
    step: bool,
    irq: &dyn Interrupts,
) -> Result<(), SimError> {
    if step {
        for _ in 0..10_000 {
            if !irq.service_dpc(a) {
                break;
            }
        }
        if !a.state.is_halted() && a.irq.dpc_queued.load(Ordering::Acquire) {
            return Err(sim_err(
                a,
                format!("adapter {}: TDR: the DPC keeps queueing itself", a.index),
            ));
        }
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if !a.irq.dpc_queued.load(Ordering::Acquire) {
            if let Ok(g) = a.irq.dpc_gate.try_lock() {
                if !a.irq.dpc_queued.load(Ordering::Acquire) {
                    drop(g);
                    return Ok(());
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(sim_err(
                a,
                "TDR: the DPC flush did not finish in 5 s".into(),
            ));
        }
        a.irq.dpc_wake.notify();
        std::thread::sleep(Duration::from_micros(200));
    }
}
