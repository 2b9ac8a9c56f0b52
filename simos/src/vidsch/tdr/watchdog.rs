//! VidSch's PASSIVE TDR worker: detection, the preemption timer and its
//! `DxgkDdiPreemptCommand`, then recovery (the top of the TDR layers).

use std::sync::atomic::Ordering;

use rvgpu_ddi::tdr::{DXGKARG_PREEMPTCOMMAND, DXGK_PREEMPTCOMMANDFLAGS};
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{self, sim_err, At};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::os::answers::LostFence;
use crate::ums;

use super::irq::Interrupts;
use super::recovery::recover_node;
use super::registry::{existing, ENABLED};
use super::state::{Cause, TdrEvent};
use super::steps::query_current_fence;

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
            // What the device already reported is serviced before the verdict: on Windows the
            // ISR preempts at device IRQL and the DPC it queues runs before that processor
            // returns to this PASSIVE worker, so a completion the GPU signalled in time is
            // never judged a hang. Here the interrupt and DPC threads are host threads the
            // host may not have scheduled yet. A report never raised is not found here.
            drop(os);
            let serviced = service_pending(a, irq);
            os = lock(&sh.os);
            let n = os.node(node);
            if serviced && !(n.s > n.c && n.c == c && now.saturating_sub(n.last_change) >= timeout)
            {
                return true;
            }
            let asks = a.os.windows.reading().lost_fence == LostFence::Asked;
            if asks && n.queried_c != Some(c) {
                // The pages' reading: before a late fence counts as a hang, the OS asks the
                // driver for the current fence, the completion interrupt may have been lost
                // (the DxgkDdiQueryCurrentFence page, Remarks). A fence ahead of what the OS
                // saw means exactly that: the driver has reported it (NotifyInterrupt +
                // QueueDpc), and the timer starts again. Otherwise the timeout stands, at
                // once. 24H2 never asks ([`LostFence::NotAsked`]).
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

/// `DxgkDdiPreemptCommand` (step 2) at DISPATCH with the new fence ID `id`.
fn preempt(a: &AdapterShared, node: u32, id: u32) -> Result<(), SimError> {
    let f = ddi::table_slot!(a, DxgkDdiPreemptCommand)?
        .ok_or_else(|| sim_err(a, "no DxgkDdiPreemptCommand".into()))?;
    let args = DXGKARG_PREEMPTCOMMAND {
        PreemptionFenceId: id,
        NodeOrdinal: node,
        EngineOrdinal: 0,
        Flags: DXGK_PREEMPTCOMMANDFLAGS::default(),
    };
    let ctx = a.context();
    a.observer()
        .handed(&rvgpu_ddi::handover::PREEMPT_COMMAND, &args);
    let status = f.call_unaudited(a, At::Level(Irql::Dispatch), (ctx, &args))?;
    crate::vidsch::legacy::submit_succeeded(a, status, node, id)
}

/// Runs the ISR while the device's line is up and then every queued DPC, as the interrupt and
/// DPC threads would (bounded as the reset's own servicing is); whether anything ran.
fn service_pending(a: &AdapterShared, irq: &dyn Interrupts) -> bool {
    let mut ran = false;
    for _ in 0..1000 {
        if !irq.service_interrupt(a) {
            break;
        }
        ran = true;
    }
    while irq.service_dpc(a) {
        ran = true;
    }
    ran
}
