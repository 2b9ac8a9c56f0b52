//! Queue id → Dxgkrnl's own queue object, read lock-free by the ISR.
//!
//! The interrupt reports that name a hardware queue (`HwQueuePageFaulted.FaultedHwQueue`, the
//! optimized `NativeFenceSignaled.hHWQueue`) name Dxgkrnl's queue: the `hHwQueue` the OS passed
//! *in* to `DxgkDdiCreateHwQueue`, before the driver wrote its own over it. 24H2 follows that
//! pointer to its `DXGHWQUEUE` (+32 the driver's handle, +40 VidSch's queue:
//! `K:DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C,
//! `M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0,
//! `M:VidSchiProcessNativeFenceSignaledDpc` @0x140044BE0), so the driver's own handle there is
//! a wild pointer to it.
//!
//! One `AtomicUsize` per queue id (0 = none). Set before the queue's entry in
//! [`crate::log::QueueIrqTable`] (release), cleared before that entry is cleared under the
//! interrupt lock at destroy: an ISR that finds a queue there finds its Dxgkrnl object here,
//! or 0 while the queue is going away (then it reports no queue).

use alloc::boxed::Box;
#[cfg(test)]
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use rvgpu_hw::queue::NO_QUEUE;

use crate::kmem::{self, NoMemory};
use crate::platform::Platform;

use super::QUEUE_ID_LIMIT;

/// Dxgkrnl's queue object per queue id.
#[derive(Debug)]
pub struct OsQueueTable {
    slots: Box<[AtomicUsize]>,
}

impl OsQueueTable {
    /// A table for every queue id the allocator hands out (allocated at start, PASSIVE).
    pub fn try_for_adapter<P: Platform>() -> Result<Self, NoMemory> {
        let n = usize::try_from(QUEUE_ID_LIMIT).map_err(|_| NoMemory)?;
        Ok(Self {
            slots: kmem::try_boxed_slice::<P, _>(n, |_| AtomicUsize::new(0))?,
        })
    }

    /// A table for host unit tests.
    #[cfg(test)]
    pub fn for_tests() -> Self {
        let v: Vec<AtomicUsize> = (0..QUEUE_ID_LIMIT).map(|_| AtomicUsize::new(0)).collect();
        Self {
            slots: v.into_boxed_slice(),
        }
    }

    fn slot(&self, id: u32) -> Option<&AtomicUsize> {
        if id == NO_QUEUE {
            return None;
        }
        self.slots.get(usize::try_from(id).ok()?)
    }

    /// Queue `id` was created with Dxgkrnl's object `os` (PASSIVE, before the ISR table entry).
    pub fn set(&self, id: u32, os: usize) {
        if let Some(s) = self.slot(id) {
            s.store(os, Ordering::Release);
        }
    }

    /// Queue `id` is going away (PASSIVE, before the ISR table entry is cleared).
    pub fn clear(&self, id: u32) {
        if let Some(s) = self.slot(id) {
            s.store(0, Ordering::Release);
        }
    }

    /// Dxgkrnl's object of queue `id` (device IRQL, lock-free); `None` for no queue or one
    /// going away.
    pub fn get(&self, id: u32) -> Option<usize> {
        let v = self.slot(id)?.load(Ordering::Acquire);
        (v != 0).then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn um_10_the_table_gives_dxgkrnl_s_object_until_the_queue_goes() {
        let t = OsQueueTable::for_tests();
        assert_eq!(t.get(3), None);
        t.set(3, 0xFFFF_9000_1234_0000);
        assert_eq!(t.get(3), Some(0xFFFF_9000_1234_0000));
        t.clear(3);
        assert_eq!(t.get(3), None);
        // Out of range and NO_QUEUE are no queue, never a panic.
        t.set(NO_QUEUE, 1);
        assert_eq!(t.get(NO_QUEUE), None);
        assert_eq!(t.get(u32::MAX - 1), None);
    }
}
