//! Hardware scheduling (`DXGK_FEATURE_HWSCH`): the DDIs through which the OS drives
//! the CMP's scheduler, and what the driver advertises for it. This module is the state (a
//! context's priority, the bands the OS set); [`ddi`] holds the DDIs and the advertisement
//! rules, which read the started adapter.
//!
//! **When.** Only when the OS enabled `DXGK_FEATURE_HWSCH` ([`crate::features`]) *and* the
//! device has what the DDIs need — a scheduling log (`CAPS.SCHED_LOG`), per-engine reset and
//! GPU page tables (context scheduling needs GPU virtual addressing on the node, BR-71) — does
//! the driver set `ContextSchedulingSupported` on its nodes ([`ddi::active`]). Without it the OS
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
//! | `DxgkDdiSetupPriorityBands` | PASSIVE | [`ddi::setup_priority_bands`]: checked and kept; the CMP has strict priority between bands, no time quanta (hardware.md 5.4) |
//! | `DxgkDdiSetSchedulingLogBuffer` | PASSIVE | [`ddi::set_scheduling_log_buffer`]: the engine's `SCHED_LOG_*` registers; synchronous, as the page requires |
//! | `DxgkDdiSetContextSchedulingProperties` | PASSIVE | [`ddi::set_context_scheduling_properties`]: the context's priority word, in every descriptor of its queues |
//! | `DxgkDdiResetHwEngine` | PASSIVE | [`crate::reset::ddi::reset_hw_engine`]: engine reset, guilty context invalidated, engine left held |
//! | `DxgkDdiResumeHwEngine` | PASSIVE | [`crate::reset::ddi::resume_hw_engine`]: the runlist without invalidated contexts, which ends the hold |

use rvgpu_ddi::hws::{
    DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES, DXGK_SCHEDULING_LOG_BUFFER,
    DXGK_SCHEDULING_PRIORITY_BAND, DXGK_SCHEDULING_PRIORITY_BAND_COUNT,
    DXGK_SCHEDULING_PRIORITY_BAND_NORMAL, DXGK_SCHEDULING_PRIORITY_BAND_REALTIME,
};
use rvgpu_hw::regs::Caps;
use rvgpu_hw::schedlog;

pub mod ddi;

// The device writes the OS's layout (rvgpu-hw describes it without depending on the DDI
// bindings): the two must agree.
const _: () = assert!(schedlog::HEADER_SIZE == DXGK_SCHEDULING_LOG_BUFFER::HEADER_SIZE);
const _: () = assert!(schedlog::ENTRY_SIZE == DXGK_SCHEDULING_LOG_BUFFER::ENTRY_SIZE);

/// The device half of [`active`]: a scheduling log, per-engine reset and page tables.
pub fn device_capable(caps: Caps) -> bool {
    caps.contains(Caps::SCHED_LOG | Caps::PER_ENGINE_RESET | Caps::PAGE_TABLES)
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
