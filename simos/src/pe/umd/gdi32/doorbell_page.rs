//! A doorbell's CPU pages in the DLL's address space: an MMIO window of the arena routed to the
//! doorbell's OS mapping object.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::pe::cpu;
use crate::ums::DoorbellCpuState;

/// Bytes of the doorbell page, the status page and the last-queued page of a doorbell's
/// window.
pub(super) const PAGE: usize = 4096;

/// The CPU pages of one doorbell the DLL holds: one window of the arena, routed to the
/// doorbell's OS mapping object. Page 0 is `DoorbellCPUVirtualAddress` (an 8-byte store rings:
/// [`DoorbellCpuState::ring`], the physical doorbell or the dummy page, as the OS maps it
/// now), page 1 `DoorbellStatusCPUVirtualAddress` (reads the status), page 2
/// `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress` (the last-queued value).
pub(crate) struct DoorbellPage {
    pub(super) base: usize,
    live: Arc<AtomicBool>,
}

impl DoorbellPage {
    pub(super) fn new(
        state: &Arc<DoorbellCpuState>,
        rings: &Arc<AtomicU64>,
    ) -> Result<Self, String> {
        let live = Arc::new(AtomicBool::new(true));
        let weak: Weak<DoorbellCpuState> = Arc::downgrade(state);
        let (l, r) = (live.clone(), rings.clone());
        let base = cpu::register_window(
            3 * PAGE,
            Arc::new(move |offset: usize, width: usize, write: Option<u64>| {
                // After D3DKMTDestroyDoorbell the pages mean nothing: stores are dropped and
                // reads return 0 (Windows unmaps them; the DLL never touches them again).
                let Some(s) = weak.upgrade().filter(|_| l.load(Ordering::Acquire)) else {
                    return 0;
                };
                match (offset / PAGE, write) {
                    (0, Some(v)) if width == 8 && offset == 0 => {
                        s.ring(v);
                        r.fetch_add(1, Ordering::AcqRel);
                        0
                    }
                    (1, None) if offset == PAGE => u64::from(s.status() as u32),
                    (2, Some(v)) if width == 8 && offset == 2 * PAGE => {
                        s.set_last_queued(v);
                        0
                    }
                    (2, None) if offset == 2 * PAGE => s.last_queued(),
                    _ => 0,
                }
            }),
        )?;
        Ok(Self { base, live })
    }

    pub(super) fn retire(&self) {
        self.live.store(false, Ordering::Release);
    }
}
