//! The steps every recovery path shares, below the per-engine, hardware-scheduled and
//! adapter-wide paths that call them: the node's snapshot, the DPC flush, the dependent engine
//! group and the engine status, the test's pause, the driver's current fence, and putting
//! devices in error (UM-10).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::ntstatus::NT_SUCCESS;
use rvgpu_ddi::tdr::{
    DXGKARG_QUERYCURRENTFENCE, DXGKARG_QUERYDEPENDENTENGINEGROUP, DXGKARG_QUERYENGINESTATUS,
    DXGK_ENGINESTATUS,
};
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{self, sim_err, table};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::processor::IrqlScope;
use crate::ob::KmtHandle;
use crate::ums;

use super::irq::Interrupts;
use super::state::{TdrEvent, TdrShared};

/// What steps 4–7 of the TDR-05 sequence learnt about the node before its reset.
pub(super) struct Prepared {
    /// The node's completed fence ID at the snapshot.
    pub c_snap: u32,
    /// The dependent engine group: the nodes to reset.
    pub mask: u64,
    /// The adapter's node count.
    pub nodes: u32,
    /// The device whose work was running on the node when it timed out (24H2
    /// `VidSchiResetEngine`), charged for the timeout.
    pub running: Option<KmtHandle>,
}

/// Steps 4–7 of the TDR-05 sequence (docs/tdr.md#the-simulated-os), under the recovery's
/// gate: the snapshot, nothing to reset (`None`) if the node has no work, the DPC flush, the
/// dependent group (a driver bug unless it succeeds with the node and no bit ≥ the node
/// count; TDR-02), the engine status, and the test's pause (TDR-07).
pub(super) fn prepare_reset(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    stalled: Option<KmtHandle>,
    irq: &dyn Interrupts,
) -> Result<Option<Prepared>, SimError> {
    let step = lock(&sh.os).step;
    // Step 4: the snapshot at device IRQL.
    let (s_snap, c_snap) = snapshot_node(a, sh, node);
    // Step 5.
    let queue_work = ums::tdr_queues(a)
        .iter()
        .any(|q| q.node == node && q.watched_busy());
    if s_snap == c_snap && !queue_work {
        let mut os = lock(&sh.os);
        os.node(node).ignore_irq = false;
        os.events.push(TdrEvent::NothingToReset { node });
        return Ok(None);
    }
    // The context running on the node when it timed out (24H2 `VidSchiResetEngine`).
    let running = super::process::running_device(a, sh, node, stalled);
    // Step 6.
    flush_dpcs(a, step, irq)?;
    lock(&sh.os).events.push(TdrEvent::DpcFlushed { node });
    // Step 7.
    let t = table(a)?;
    let nodes = lock(&a.caps).map_or(1, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    let (st, mask) = query_dependent_group(a, node)?;
    let valid = if nodes >= 64 {
        u64::MAX
    } else {
        (1u64 << nodes) - 1
    };
    if !NT_SUCCESS(st) || mask & (1u64 << node) == 0 || mask & !valid != 0 {
        return Err(sim_err(
            a,
            format!(
                "driver bug: DxgkDdiQueryDependentEngineGroup(node {node}) = {:#x}, mask \
                 {mask:#x} (must succeed, contain the node, no bit >= {nodes}; TDR-02)",
                st as u32
            ),
        ));
    }
    lock(&sh.os)
        .events
        .push(TdrEvent::DependentGroup { node, mask });
    if let Some(qes) = ddi::in_table!(t, DxgkDdiQueryEngineStatus) {
        let mut q = DXGKARG_QUERYENGINESTATUS {
            NodeOrdinal: node,
            EngineOrdinal: 0,
            EngineStatus: DXGK_ENGINESTATUS::default(),
        };
        let ctx = a.context();
        let st = qes.passive(a, (ctx, &mut q))?;
        if !NT_SUCCESS(st) {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: DxgkDdiQueryEngineStatus must succeed, returned {:#x}",
                    st as u32
                ),
            ));
        }
        let responsive = q.EngineStatus.is_set(DXGK_ENGINESTATUS::Responsive);
        lock(&sh.os)
            .events
            .push(TdrEvent::EngineStatus { node, responsive });
    }
    pause_before_reset(a, sh, node, step, irq);
    Ok(Some(Prepared {
        c_snap,
        mask,
        nodes,
        running,
    }))
}

/// The node's (submitted, completed) snapshot at device IRQL under the interrupt lock; from
/// here on the node's reports are ignored (24H2's `M:VidSchDdiNotifyInterruptWorker`
/// @0x140006B60 returns at once on a report from the ISR for a node whose bit is set in the
/// adapter's resetting mask, which `M:VidSchiResetHwEngine` @0x140052878 clears after the
/// reset).
pub(super) fn snapshot_node(a: &AdapterShared, sh: &TdrShared, node: u32) -> (u32, u32) {
    let _il = lock(&a.irq.interrupt_lock);
    let _irql = IrqlScope::enter(Irql::Device);
    let mut os = lock(&sh.os);
    let n = os.node(node);
    n.ignore_irq = true;
    let (s, c) = (n.s, n.c);
    os.events.push(TdrEvent::Snapshot {
        node,
        submitted: s,
        completed: c,
    });
    (s, c)
}

/// The test's pause just before the reset (TDR-07): the hook works on the in-process device (a
/// PCI board has none to pause).
pub(super) fn pause_before_reset(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    step: bool,
    irq: &dyn Interrupts,
) {
    let hook = a
        .emulated
        .as_ref()
        .and_then(|d| Some((lock(&sh.pause).take()?, d)));
    if let Some((mut h, dev)) = hook {
        h(dev);
        lock(&sh.os).events.push(TdrEvent::Paused { node });
        *lock(&sh.pause) = Some(h);
        if step {
            // Interrupts keep arriving while VidSch prepares the reset (threaded mode: the
            // interrupt thread): the node's reports are recorded as ignored.
            for _ in 0..1000 {
                if !irq.service_interrupt(a) {
                    break;
                }
            }
            while irq.service_dpc(a) {}
        }
    }
}

/// `DxgkDdiQueryDependentEngineGroup(node)` at PASSIVE: (status, mask).
pub(super) fn query_dependent_group(
    a: &AdapterShared,
    node: u32,
) -> Result<(NTSTATUS, u64), SimError> {
    let qdeg = ddi::table_slot!(a, DxgkDdiQueryDependentEngineGroup)?
        .ok_or_else(|| sim_err(a, "TDR without DxgkDdiQueryDependentEngineGroup".into()))?;
    dependent_group(a, qdeg, node)
}

/// The driver's `DxgkDdiQueryDependentEngineGroup` (`f`) for `node` at PASSIVE_LEVEL:
/// (status, mask).
pub(crate) fn dependent_group(
    a: &AdapterShared,
    f: ddi::Of<rvgpu_ddi::tdr::PDXGKDDI_QUERYDEPENDENTENGINEGROUP>,
    node: u32,
) -> Result<(NTSTATUS, u64), SimError> {
    let mut g = DXGKARG_QUERYDEPENDENTENGINEGROUP {
        NodeOrdinal: node,
        EngineOrdinal: 0,
        DependentNodeOrdinalMask: 0,
    };
    let ctx = a.context();
    let st = f.passive(a, (ctx, &mut g))?;
    Ok((st, g.DependentNodeOrdinalMask))
}

/// `DxgkDdiQueryCurrentFence(node)` at PASSIVE: the fence the driver says completed last,
/// `None` if it failed. A failure is not a bug check: the timeout that follows handles a node
/// the driver cannot answer for.
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
    let status = f.passive(a, (ctx, &mut args)).ok()?;
    NT_SUCCESS(status).then_some(args.CurrentFence)
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

/// The device of the stalled hardware queue, added to `errored` when the KMD invalidated no
/// context during the reset (`stalled`: `Some(0)` is a hang report without a known queue).
pub(super) fn error_stalled_queue(
    a: &AdapterShared,
    errored: &mut BTreeSet<KmtHandle>,
    stalled: Option<KmtHandle>,
) {
    if !errored.is_empty() {
        return;
    }
    if let Some(q) = stalled.filter(|q| *q != 0) {
        if let Some(tq) = ums::tdr_queues(a).iter().find(|x| x.handle == q) {
            errored.insert(tq.device);
        }
    }
}

/// Step 11 (UM-10): each device in `devices` is put in error as hung (reason 7). Its doorbells
/// are the driver's to abort ([`ums::tdr_device_error`]).
pub(super) fn error_devices(
    a: &AdapterShared,
    sh: &TdrShared,
    devices: &BTreeSet<KmtHandle>,
) -> Result<(), SimError> {
    if devices.is_empty() {
        return Ok(());
    }
    let _x = ums::tdr_exclusive(a);
    for d in devices {
        if ums::tdr_device_in_error(a, *d) && !ums::tdr_devices(a).contains(d) {
            continue;
        }
        let dbs = ums::tdr_device_error(a, *d, ums::DeviceError::Hung)?;
        lock(&sh.os).events.push(TdrEvent::DeviceError {
            device: *d,
            doorbells_aborted: dbs.len(),
        });
    }
    Ok(())
}
