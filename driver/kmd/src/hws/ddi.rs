//! The hardware-scheduling DDIs and advertisement rules over the state of [`super`].

use rvgpu_ddi::hws::{
    DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES, DXGKARG_SETSCHEDULINGLOGBUFFER,
    DXGKARG_SETUPPRIORITYBANDS,
};
use rvgpu_hw::regs;
use rvgpu_hw::schedlog;

use crate::adapter::{Adapter, Live};
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist;
use crate::status::{self, Status};

use super::{device_capable, Bands, ContextPriority};

/// Whether the adapter runs with hardware scheduling: the OS enabled `DXGK_FEATURE_HWSCH`, the
/// device can and the table has the DDIs. Fixed for a start.
pub fn active<P: Platform>(live: &Live<P>) -> bool {
    live.features.hwsch.is_some()
        && device_capable(live.identity.caps)
        && crate::gpummu::supported(live.mmu())
        && live.ddis.hws
}

/// The started adapter, for a DDI of hardware scheduling: `STATUS_NOT_SUPPORTED` while the
/// OS runs the adapter without it.
pub fn started_hws<P: Platform>(a: &Adapter<P>) -> Result<&Live<P>, Status> {
    let live = a.started()?;
    if !active(live) {
        return Err(status::NOT_SUPPORTED);
    }
    Ok(live)
}

/// Whether nodes offer user-mode submission: the OS enabled `DXGK_FEATURE_USER_MODE_SUBMISSION`
/// (which it does only with HWSCH), the nodes are hardware-scheduled (BR-73) and native fences
/// are advertised (24H2 requires `NativeGpuFence` for a user-mode submission node, and user-mode
/// queues can only use native fences).
pub fn user_mode_submission<P: Platform>(live: &Live<P>) -> bool {
    live.features.user_mode_submission.is_some() && active(live) && live.native_gpu_fence()
}

/// Longest grace period or quantum accepted: one minute in 100 ns units. The OS's defaults are
/// milliseconds; a larger value is a broken argument block, not a policy.
const MAX_PERIOD_100NS: u64 = 60 * 10_000_000;

/// DxgkDdiSetupPriorityBands (PASSIVE; "after adapter startup and before scheduling the first
/// GPU work item", DxgkDdiSetupPriorityBands page).
pub fn setup_priority_bands<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_SETUPPRIORITYBANDS,
) -> Result<(), Status> {
    let live = started_hws(a)?;
    let all = args
        .gracePeriodForBand
        .iter()
        .chain(args.processQuantumForBand.iter())
        .chain(args.processGracePeriodForBand.iter());
    if all.into_iter().any(|&v| v > MAX_PERIOD_100NS) || args.targetNormalBandPercentage > 100 {
        return Err(status::INVALID_PARAMETER);
    }
    let mut s = live.sched.lock();
    s.bands = Bands {
        set: true,
        grace: args.gracePeriodForBand,
        quantum: args.processQuantumForBand,
        process_grace: args.processGracePeriodForBand,
        normal_percentage: args.targetNormalBandPercentage,
    };
    Ok(())
}

/// DxgkDdiSetSchedulingLogBuffer (PASSIVE): points the engine's scheduling log at the OS's
/// buffer. Synchronous ("upon the return … the GPU is not allowed to write any more entries to
/// the previous log", the DDI's page): the device adopts the log inside the `SCHED_LOG_CTRL`
/// write (hardware.md 5.7). `LogBufferGpuVa` is a system-space (CMP) address, like the native
/// fence logs' `LogBufferSystemProcessGpuVa`.
pub fn set_scheduling_log_buffer<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_SETSCHEDULINGLOGBUFFER,
) -> Result<(), Status> {
    let live = started_hws(a)?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    if args.NumberOfEntries == 0 || args.NumberOfEntries > schedlog::ENTRIES_MAX {
        return Err(status::INVALID_PARAMETER);
    }
    let base = args.LogBufferGpuVa;
    if base == 0 || !base.is_multiple_of(8) {
        return Err(status::INVALID_PARAMETER);
    }
    // Under the scheduler lock: a reset (which logs the running context idle) must not
    // interleave with the switch of buffers.
    let mut s = live.sched.lock();
    live.regs.write_at(node, regs::SchedLogCtrl::new(0));
    live.regs.write_at(node, regs::SchedLogBase::new(base));
    live.regs
        .write_at(node, regs::SchedLogEntries::new(args.NumberOfEntries));
    live.regs
        .write_at(node, regs::SchedLogIrqEntry::new(args.InterruptEntry));
    live.regs.write_at(node, regs::SchedLogCtrl::new(1));
    s.sched_logs |= 1u64.checked_shl(node).unwrap_or(0);
    a.event_guard
        .sched_log_on(node, args.NumberOfEntries, args.InterruptEntry);
    Ok(())
}

/// DxgkDdiSetContextSchedulingProperties (PASSIVE): the context's band and level become the
/// priority of every queue it owns, from the next commit of its engine (done here).
pub fn set_context_scheduling_properties<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES,
) -> Result<(), Status> {
    let live = started_hws(a)?;
    let h = Handle::decode_on(args.hContext, Kind::Context, a.table_slot())?;
    let priority = ContextPriority::from_properties(args).ok_or(status::INVALID_PARAMETER)?;
    let mut s = live.sched.lock();
    let Some(engine) = s.set_context(h, |c| &mut c.priority, priority)? else {
        return Ok(());
    };
    let listed = s.queues.values().any(|q| q.context == h && s.runnable(q));
    if listed {
        runlist::commit_context(&live.regs, &s, engine, h)?;
    }
    Ok(())
}
