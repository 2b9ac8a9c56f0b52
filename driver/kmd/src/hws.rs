//! Hardware scheduling (`DXGK_FEATURE_HWSCH`): the DDIs through which the OS drives
//! the CMP's scheduler, and what the driver advertises for it.
//!
//! **When.** Only when the OS enabled `DXGK_FEATURE_HWSCH` ([`crate::features`]) *and* the
//! device has what the DDIs need — a scheduling log (`CAPS.SCHED_LOG`), per-engine reset and
//! GPU page tables (context scheduling needs GPU virtual addressing on the node, BR-71) — does
//! the driver set `ContextSchedulingSupported` on its nodes ([`active`]). Without it the OS
//! schedules in software: kernel-mode submission through `DxgkDdiSubmitCommand`, no hardware
//! queues, no user-mode submission.
//!
//! **Hardware contexts are the driver's contexts.** Windows' VidSch keeps, per hardware
//! context, the handle the driver returned from `DxgkDdiCreateContext`, and passes it to
//! `DxgkDdiCreateHwQueue`, `DxgkDdiSetContextSchedulingProperties` and
//! `DxgkCbInvalidateHwContext`; the 22631 dxgmms2 never calls `DxgkDdiCreateHwContext`,
//! `DxgkDdiDestroyHwContext`, `DxgkDdiSwitchToHwContextList` or `DxgkDdiUpdateHwContextState`
//! (docs/hws.md §2, read from the decompiled `VidSchiCreateHwContextInternal` and
//! `DXGHWQUEUE::Initialize`). Those slots stay NULL: filling them would promise a protocol
//! nothing exercises.
//!
//! | DDI | IRQL | here |
//! |---|---|---|
//! | `DxgkDdiSetupPriorityBands` | PASSIVE | [`setup_priority_bands`]: checked and kept; the CMP has strict priority between bands, no time quanta (hardware.md 5.4) |
//! | `DxgkDdiSetSchedulingLogBuffer` | PASSIVE | [`set_scheduling_log_buffer`]: the engine's `SCHED_LOG_*` registers; synchronous, as the page requires |
//! | `DxgkDdiSetContextSchedulingProperties` | PASSIVE | [`set_context_scheduling_properties`]: the context's priority word, in every descriptor of its queues |
//! | `DxgkDdiResetHwEngine` | PASSIVE | [`crate::reset::reset_hw_engine`]: engine reset, guilty context invalidated, engine left held |
//! | `DxgkDdiResumeHwEngine` | PASSIVE | [`crate::reset::resume_hw_engine`]: the runlist without invalidated contexts, which ends the hold |

use rvgpu_ddi::hws::{
    DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES, DXGKARG_SETSCHEDULINGLOGBUFFER,
    DXGKARG_SETUPPRIORITYBANDS, DXGK_SCHEDULING_LOG_BUFFER, DXGK_SCHEDULING_PRIORITY_BAND,
    DXGK_SCHEDULING_PRIORITY_BAND_COUNT, DXGK_SCHEDULING_PRIORITY_BAND_NORMAL,
    DXGK_SCHEDULING_PRIORITY_BAND_REALTIME,
};
use rvgpu_hw::regs::{self, Caps};
use rvgpu_hw::schedlog;

use crate::adapter::{Adapter, Live};
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist;
use crate::status::{self, Status};

// The device writes the OS's layout (rvgpu-hw describes it without depending on the DDI
// bindings): the two must agree.
const _: () = assert!(schedlog::HEADER_SIZE == DXGK_SCHEDULING_LOG_BUFFER::HEADER_SIZE);
const _: () = assert!(schedlog::ENTRY_SIZE == DXGK_SCHEDULING_LOG_BUFFER::ENTRY_SIZE);

/// The device half of [`active`]: a scheduling log, per-engine reset and page tables.
pub fn device_capable(caps: Caps) -> bool {
    caps.contains(Caps::SCHED_LOG | Caps::PER_ENGINE_RESET | Caps::PAGE_TABLES)
}

/// Whether the adapter runs with hardware scheduling: the OS enabled `DXGK_FEATURE_HWSCH`, the
/// device can and the table has the DDIs. Fixed for a start.
pub fn active<P: Platform>(live: &Live<P>) -> bool {
    live.features.hwsch.is_some()
        && device_capable(live.identity.caps)
        && crate::gpummu::supported(live)
        && live.ddis.hws
}

/// Whether nodes offer user-mode submission: the OS enabled `DXGK_FEATURE_USER_MODE_SUBMISSION`
/// (which it does only with HWSCH), the nodes are hardware-scheduled (BR-73) and native fences
/// are advertised (24H2 requires `NativeGpuFence` for a user-mode submission node, and user-mode
/// queues can only use native fences).
pub fn user_mode_submission<P: Platform>(live: &Live<P>) -> bool {
    live.features.user_mode_submission.is_some()
        && active(live)
        && crate::caps::native_gpu_fence(live)
}

/// A context's place in the CMP's strict priority order: band in bits 16..24, the level
/// inside the band next; the queue's own priority (its private data, at most
/// `HW_QUEUE_PRIORITY_MAX`) is added in the low byte by [`crate::hwqueue::HwQueue::descriptor`].
/// Higher runs first (hardware.md 5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ContextPriority(u32);

impl ContextPriority {
    /// Normal band, middle level: what a context has until the OS sets its properties.
    pub const DEFAULT: Self = Self::new(DXGK_SCHEDULING_PRIORITY_BAND_NORMAL as u32, 0x80);
    /// The highest: realtime band, top level.
    pub const MAX: Self = Self::new(DXGK_SCHEDULING_PRIORITY_BAND_REALTIME as u32, 0xFF);

    const fn new(band: u32, level: u32) -> Self {
        Self(((band & 0xFF) << 16) | ((level & 0xFF) << 8))
    }

    /// The word the descriptor's low byte is added to.
    pub const fn word(self) -> u32 {
        self.0
    }

    /// From the OS's properties; `None` for a band outside the four the header defines.
    pub fn from_properties(p: &DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES) -> Option<Self> {
        let band: DXGK_SCHEDULING_PRIORITY_BAND = p.priorityBand;
        if !(0..DXGK_SCHEDULING_PRIORITY_BAND_COUNT).contains(&band) {
            return None;
        }
        // Realtime contexts are ordered by their realtime level, the others by their priority
        // inside the process; both are signed and centred on 0 here.
        let level = if band == DXGK_SCHEDULING_PRIORITY_BAND_REALTIME {
            p.realtimeBandPriorityLevel
        } else {
            p.inProcessPriority
        };
        let centred = level.clamp(-128, 127).saturating_add(128);
        Some(Self::new(
            u32::try_from(band).ok()?,
            u32::try_from(centred).ok()?,
        ))
    }
}

/// The priority bands as the OS last set them (kept for `DxgkDdiCollectDbgInfo` and tests; the
/// CMP does not time-slice, hardware.md 5.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bands {
    /// Set at least once.
    pub set: bool,
    /// 100 ns units, per band.
    pub grace: [u64; 4],
    pub quantum: [u64; 4],
    pub process_grace: [u64; 4],
    pub normal_percentage: u32,
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
    let live = a.started()?;
    if !active(live) {
        return Err(status::NOT_SUPPORTED);
    }
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
    let live = a.started()?;
    if !active(live) {
        return Err(status::NOT_SUPPORTED);
    }
    let node = args.NodeOrdinal;
    if node >= live.identity.config.engines || args.EngineOrdinal != 0 {
        return Err(status::INVALID_PARAMETER);
    }
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
    let live = a.started()?;
    if !active(live) {
        return Err(status::NOT_SUPPORTED);
    }
    let h = Handle::decode_on(args.hContext, Kind::Context, a.table_slot())?;
    let priority = ContextPriority::from_properties(args).ok_or(status::INVALID_PARAMETER)?;
    let mut s = live.sched.lock();
    let ctx = s.contexts.get_mut(&h).ok_or(status::INVALID_HANDLE)?;
    if ctx.priority == priority {
        return Ok(());
    }
    ctx.priority = priority;
    let engine = ctx.engine;
    let listed = s.queues.values().any(|q| q.context == h && s.runnable(q));
    if listed {
        runlist::commit_context(&live.regs, &s, engine, h)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(band: i32, rt: i32, inproc: i32) -> DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES {
        DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES {
            priorityBand: band,
            realtimeBandPriorityLevel: rt,
            inProcessPriority: inproc,
            ..Default::default()
        }
    }

    #[test]
    fn bands_dominate_levels_and_levels_order_inside_a_band() {
        let p = |b, r, i| ContextPriority::from_properties(&props(b, r, i)).map(|p| p.word());
        // A focus context at its lowest level still outranks a normal one at its highest.
        assert!(p(2, 0, -1000) > p(1, 0, 1000));
        assert!(p(1, 0, 5) > p(1, 0, -5));
        // Realtime orders by its own level, not the in-process one.
        assert!(p(3, 10, -100) > p(3, 9, 100));
        assert_eq!(p(4, 0, 0), None);
        assert_eq!(p(-1, 0, 0), None);
        // The queue's own priority (≤ 15) lives below the context's.
        assert_eq!(ContextPriority::DEFAULT.word() & 0xFF, 0);
    }
}
