//! VidMm's residency books per adapter (behind `VidMmState::residency`): where each tracked
//! allocation lives, who needs it resident, its backing store, and the free VRAM of each local
//! segment. Data and the bookkeeping on it only; making resident and evicting (the paging) is
//! in [`crate::vidmm::residency`].

use std::collections::{BTreeMap, HashMap};

use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::sync::fence::MonitoredFence;
use crate::state::vidmm::gpuva::Phys;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// One hardware queue's outstanding work at a point in time (AL-03): its progress fence and
/// the value it must reach (UMS's `queued_work` lists a device's).
#[derive(Clone, Debug)]
pub(crate) struct QueuedWork {
    pub(crate) queue: KmtHandle,
    pub(crate) fence: MonitoredFence,
    pub(crate) value: u64,
}

impl QueuedWork {
    /// Complete, or no longer able to run: the queue is gone (its destruction ended its work);
    /// `queue_alive` answers whether a queue still exists.
    pub(crate) fn done(&self, queue_alive: impl Fn(KmtHandle) -> bool) -> bool {
        self.fence.value() >= self.value || !queue_alive(self.queue)
    }
}

/// Where an allocation's contents are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// System memory (the implicit system-memory segment, `Segment` 0 in its PTEs): its own
    /// pages, which is where everything the CPU maps lives. Named after the aperture segment
    /// because that is the id that puts system memory in a segment set ("GPU segments").
    Aperture,
    /// Local memory: `segment` and the offset in it.
    Local { segment: u32, offset: u64 },
    /// Not resident: the contents are in the backing store, its VAs kept and unmapped.
    Evicted,
}

/// VidMm's residency record of one allocation.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) pid: ProcessId,
    pub(crate) device: KmtHandle,
    /// The driver's handle (`hAllocation` of the paging operations).
    pub(crate) kmd: usize,
    /// The VA VidMm reserved for it at create, mapped while it is resident; `None` where
    /// create gives none (`answers::AllocationVa::MappedByCaller`): the process maps it itself
    /// (`vidmm::va`).
    pub(crate) va: Option<u64>,
    pub(crate) pages: u64,
    /// Bus address of the allocation's own system memory (the pages the CPU maps, and
    /// where it lives when placed in system memory).
    pub(crate) sysmem: u64,
    /// Where its contents are while it is not in VRAM.
    pub(crate) backing: Backing,
    /// Local segments it may live in, best first.
    pub(crate) order: Vec<u32>,
    /// The aperture is in its segment set.
    pub(crate) aperture: bool,
    pub(crate) place: Place,
    /// The device's residency count.
    pub(crate) count: u32,
    /// Work queued when the count reached zero; eviction waits for it.
    pub(crate) idle_after: Vec<QueuedWork>,
    /// Released without `EvictOnlyIfNecessary`: leaves VRAM as soon as it is idle.
    pub(crate) eager: bool,
    /// The VRAM copy may hold GPU writes the backing store lacks: set by an Evict without
    /// `NotWrittenTo` (the GPU may have written since it was made resident), cleared when the
    /// two copies are made equal (page-in, transfer out). Never reset by MakeResident: writes
    /// of an earlier residency that never left VRAM still need their transfer.
    pub(crate) dirty: bool,
    /// When the count reached zero (least recently released goes first).
    pub(crate) idle_since: u64,
}

impl Entry {
    pub(crate) fn bytes(&self) -> u64 {
        self.pages * PAGE
    }

    /// The system pages that hold the allocation when it is not in VRAM, page by page: the
    /// backing store, which is also what GPU page tables map (`Segment` 0) while it lives in
    /// system memory ("GPU segments": not mapped into the aperture).
    pub(crate) fn system_pages(&self) -> Vec<Phys> {
        match &self.backing {
            Backing::Own => pages_of((0, self.sysmem), self.pages),
            Backing::Pages(p) => p.iter().map(|p| (0, p.bus_addr)).collect(),
        }
    }
}

/// An allocation's backing store (docs/memory.md "System memory and MDLs").
#[derive(Debug)]
pub(crate) enum Backing {
    /// Its own system memory: what the CPU maps, which never leaves for VRAM, so no
    /// transfer ever names it.
    Own,
    /// System memory pages, each its own region of the bus (so no two are physically
    /// adjacent), that VidMm names to the driver by MDLs (`SegmentId` 0). On Windows a
    /// backing store is pageable memory whose physical pages are wherever the memory manager
    /// put them; these are deliberately scattered so a driver that assumes otherwise fails.
    Pages(Vec<rvgpu_device::SysAlloc>),
}

/// Per-adapter residency state (behind `VidMmState::residency`).
#[derive(Debug, Default)]
pub struct State {
    pub(crate) heaps: Option<Vec<Heap>>,
    pub(crate) entries: HashMap<KmtHandle, Entry>,
    pub(crate) tick: u64,
}

impl State {
    /// Where allocation `h`'s pages are now, page by page (`None`: evicted or not tracked).
    pub(crate) fn pages(&self, h: KmtHandle) -> Option<Vec<Phys>> {
        let e = self.entries.get(&h)?;
        match e.place {
            Place::Evicted => None,
            Place::Local { segment, offset } => Some(pages_of((segment, offset), e.pages)),
            Place::Aperture => Some(e.system_pages()),
        }
    }
}

/// Free VRAM of one local segment: offset → length, page-aligned, coalesced.
#[derive(Debug)]
pub(crate) struct Heap {
    pub(crate) segment: u32,
    /// The segment's `BaseAddress` (VRAM offset): alignment is of the address, not the offset.
    pub(crate) base: u64,
    pub(crate) free: BTreeMap<u64, u64>,
}

impl Heap {
    /// First fit. A request of a large page or more (`large`, 0 when the driver has no large
    /// pages) first looks for room at an address aligned to a large page, so that VidMm can
    /// map it with large pages (`LeafTag::large_pages`); then anywhere.
    pub(crate) fn alloc(&mut self, bytes: u64, large: u64) -> Option<u64> {
        if large != 0 && bytes >= large {
            if let Some(at) = self.alloc_aligned(bytes, large) {
                return Some(at);
            }
        }
        let (&start, &len) = self.free.iter().find(|(_, &len)| len >= bytes)?;
        self.free.remove(&start);
        if len > bytes {
            self.free.insert(start + bytes, len - bytes);
        }
        Some(start)
    }

    /// First fit at an address aligned to `align`; what is left before and after stays free.
    pub(crate) fn alloc_aligned(&mut self, bytes: u64, align: u64) -> Option<u64> {
        let base = self.base;
        let (start, len, at) = self.free.iter().find_map(|(&start, &len)| {
            let at = (base + start).checked_next_multiple_of(align)? - base;
            (at + bytes <= start + len).then_some((start, len, at))
        })?;
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        let end = at + bytes;
        if start + len > end {
            self.free.insert(end, start + len - end);
        }
        Some(at)
    }

    pub(crate) fn release(&mut self, start: u64, bytes: u64) {
        let (mut start, mut len) = (start, bytes);
        if let Some(next) = self.free.remove(&(start + len)) {
            len += next;
        }
        if let Some((&prev, &plen)) = self.free.range(..start).next_back() {
            if prev + plen == start {
                self.free.remove(&prev);
                start = prev;
                len += plen;
            }
        }
        self.free.insert(start, len);
    }
}

/// `pages` pages from `first`, page by page.
pub(crate) fn pages_of(first: Phys, pages: u64) -> Vec<Phys> {
    (0..pages).map(|i| (first.0, first.1 + i * PAGE)).collect()
}
