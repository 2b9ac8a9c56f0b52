//! The doorbell's CPU-visible mapping (what the process maps): the physical doorbell page while
//! connected, the dummy page otherwise (UM-09).

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS;
use rvgpu_hw::mmio::MmioBus;

use crate::base::lock::lock;

/// The page size of doorbell and dummy pages.
pub(crate) const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// The dummy page a disconnected doorbell's CPU VA points at.
#[derive(Debug)]
pub(crate) struct DummyPage {
    pub(crate) words: Vec<AtomicU64>,
}

#[derive(Clone)]
pub(crate) enum Mapping {
    Dummy,
    Physical {
        page: u32,
        bus: Weak<dyn MmioBus + Send + Sync>,
    },
}

/// The process-visible side of a doorbell: the doorbell CPU VA (a remappable mapping), the
/// status page, and the queue's last-queued progress value.
pub struct DoorbellCpuState {
    pub(crate) mapping: Mutex<Mapping>,
    pub(crate) dummy: DummyPage,
    pub(crate) status: AtomicI32,
    pub(crate) last_queued: Arc<AtomicU64>,
    pub(crate) dummy_writes: AtomicU64,
    pub(crate) physical_writes: AtomicU64,
}

impl std::fmt::Debug for DoorbellCpuState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoorbellCpuState")
            .field("status", &self.status.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl DoorbellCpuState {
    /// A store to `DoorbellCPUVirtualAddress`: lands on the physical doorbell while mapped,
    /// on the dummy page otherwise. The mapping is held for the store, so once the OS has
    /// pointed the VA at the dummy page no later store reaches the physical page (what the
    /// TLB shoot-down of a remap guarantees on Windows).
    pub fn ring(&self, value: u64) {
        let m = lock(&self.mapping);
        match &*m {
            Mapping::Dummy => {
                if let Some(w) = self.dummy.words.first() {
                    w.store(value, Ordering::Release);
                }
                self.dummy_writes.fetch_add(1, Ordering::Relaxed);
            }
            Mapping::Physical { page, bus } => {
                if let Some(b) = bus.upgrade() {
                    b.write64(*page as usize * PAGE as usize, value);
                }
                self.physical_writes.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `*DoorbellStatusCPUVirtualAddress`.
    pub fn status(&self) -> D3DDDI_DOORBELLSTATUS {
        self.status.load(Ordering::Acquire)
    }

    /// Store to `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`.
    pub fn set_last_queued(&self, v: u64) {
        self.last_queued.store(v, Ordering::Release);
    }

    /// `*HwQueueProgressFenceLastQueuedValueCPUVirtualAddress` (what the UMD last stored).
    pub fn last_queued(&self) -> u64 {
        self.last_queued.load(Ordering::Acquire)
    }

    /// The physical page the CPU VA maps now (`None`: the dummy page).
    pub fn mapped_page(&self) -> Option<u32> {
        match &*lock(&self.mapping) {
            Mapping::Dummy => None,
            Mapping::Physical { page, .. } => Some(*page),
        }
    }

    /// Size in bytes of the dummy page (the caps' `DoorbellSizeInBytes`, UM-04).
    pub fn dummy_size(&self) -> usize {
        self.dummy.words.len() * 8
    }

    /// (stores that landed on the dummy page, stores that reached a physical doorbell).
    pub fn write_counts(&self) -> (u64, u64) {
        (
            self.dummy_writes.load(Ordering::Relaxed),
            self.physical_writes.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn to_dummy(&self) {
        *lock(&self.mapping) = Mapping::Dummy;
    }
}
