//! VidMm's per-adapter state: the driver's contiguous memory and BAR mappings, what VidMm
//! learnt of the adapter's memory, its GPU VA spaces, residency and paging queues. Held by the
//! adapter ([`crate::adapter::AdapterShared::mm`]); the operations are in [`crate::vidmm`].
//! Also the objects VidMm keeps in other components' state: user-mode allocations (in UMS's
//! books, `ums::allocation`) and the fence pages mapped into processes (in the fences' state,
//! [`crate::state::sync::maps`]). A leaf: nothing here imports an operation.

pub mod cpucache;
pub mod gpuva;
pub mod mmu;
pub mod model;
pub mod residency;
pub mod va;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use rvgpu_device::SysAlloc;

use crate::ob::KmtHandle;
use crate::state::vidmm::cpucache::CpuCache;
use crate::state::vidmm::gpuva::Update;
use crate::state::vidmm::residency::QueuedWork;

/// What freed contiguous memory is filled with while in quarantine.
pub const FREED_POISON: u64 = 0xF4EE_D0F4_EED0_F4EE;

/// A contiguous allocation handed to the driver.
#[derive(Debug)]
pub struct Contiguous {
    /// The memory (kept alive while the driver owns it).
    pub alloc: SysAlloc,
}

/// VidMm's state for one adapter.
#[derive(Debug, Default)]
pub struct VidMmState {
    /// Contiguous allocations by VA.
    pub contiguous: Mutex<HashMap<usize, Contiguous>>,
    /// Freed contiguous allocations, kept alive and poisoned ([`FREED_POISON`]) so that a
    /// driver writing through a stale pointer is caught at Unload instead of corrupting
    /// memory someone else owns.
    pub quarantine: Mutex<Vec<(usize, Contiguous)>>,
    /// Live BAR mappings: VA → number of mappings at that VA (two mappings of the same
    /// VRAM range share a VA and need two unmaps).
    pub mappings: Mutex<HashMap<usize, usize>>,
    /// What VidMm learnt of the adapter's memory at start ([`crate::state::vidmm::model`]).
    pub memory_model: Mutex<crate::state::vidmm::model::MemoryModel>,
    /// VidMm's GPU VA spaces and page-table heap ([`crate::state::vidmm::mmu`]).
    pub vidmm: Mutex<crate::state::vidmm::mmu::VidMm>,
    /// VidMm's residency: where each user allocation lives and who needs it resident
    /// ([`crate::state::vidmm::residency`]). Held for a whole residency operation, paging
    /// included, as VidMm serialises its own.
    pub residency: Mutex<crate::state::vidmm::residency::State>,
    /// Paging queues and the GPU VA ranges processes reserve and map through the D3DKMT
    /// thunks ([`crate::state::vidmm::va`]). Taken after `residency`, before `vidmm`.
    pub gpuva: Mutex<crate::state::vidmm::va::State>,
    /// A queued GPU VA update became ready to run (its fence wait was satisfied, or it does
    /// not wait): VidMm's update worker has work (`crate::vidmm::va::update`).
    pub(crate) updates_due: Arc<AtomicBool>,
    /// A paging queue has operations VidMm's worker has not looked at (`crate::vidmm::worker`).
    pub(crate) paging_due: AtomicBool,
    /// Wakes VidMm's worker thread: one per adapter, as 24H2's (the thread
    /// `M:VidMmWorkerThreadProc2` @0x14009FBE0 runs, woken by the event
    /// `M:VidMmEnqueueTask` @0x14008F99C sets).
    pub(crate) wake: Arc<crate::base::line::Wake>,
    /// Held for one turn of VidMm's worker: a paging queue's operations are done by one
    /// thread at a time, in their order.
    pub(crate) worker: Mutex<WorkerTurn>,
    /// Held from the moment a page-table change is worked out in VidMm's books until its
    /// paging buffers are submitted, so the paging engine gets the changes in the order they
    /// were worked out (`crate::vidmm::paging::page_table_turn`). Taken after the paging power
    /// reference, before `vidmm`.
    pub(crate) page_tables: Mutex<PageTableTurn>,
    /// Times a thread found `page_tables` held and waited for it (`vidmm::paging`).
    pub(crate) page_table_waits: AtomicU64,
    /// Counts changes of the processes' roots (a VA space made, moved or dropped): a context
    /// whose cached count matches has the root VidSch last sent for it (`crate::ums::root`).
    pub(crate) root_generation: AtomicU64,
    /// VidMm's paging batches in flight and whether an adapter-wide recovery holds VidMm
    /// (`crate::vidmm::inflight`). Taken alone or last.
    pub(crate) in_flight: Mutex<InFlight>,
}

/// VidMm's paging batches submitted and not yet seen complete, by submission order, and the
/// recovery's hold on VidMm (`crate::vidmm::inflight`).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// The next batch's number.
    pub(crate) next: u64,
    /// An adapter-wide recovery holds VidMm: a waiter hands its batch over and stops waiting.
    pub(crate) suspended: bool,
    pub(crate) batches: BTreeMap<u64, Batch>,
}

/// One batch of paging VidMm waits for.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) node: u32,
    /// Its paging buffers' fence IDs.
    pub(crate) ids: Vec<u32>,
    /// VidSch's count of adapter-wide drops when it was submitted.
    pub(crate) drops: u64,
    /// What the restore submits again if a reset dropped it.
    pub(crate) redo: Redo,
}

/// What a dropped batch needs after the restart.
#[derive(Debug)]
pub(crate) enum Redo {
    /// Page-table updates of the process whose driver handle is `kmd`.
    PageTables {
        kmd: usize,
        updates: Vec<Update>,
        tag: crate::vidmm::leaf::LeafTag,
    },
    /// A TLB flush of `[start, end)` under the root `root` (segment, offset).
    FlushTlb {
        kmd: usize,
        root: (u32, u64),
        start: u64,
        end: u64,
    },
    /// Nothing: content the reset lost stays lost.
    Nothing,
}

impl VidMmState {
    /// Marks paging queued for VidMm's worker and wakes it (the event `M:VidMmEnqueueTask`
    /// @0x14008F99C sets): after the operation is queued, so the worker's turn that clears
    /// the mark sees it (`crate::vidmm::worker`).
    pub(crate) fn paging_queued(&self) {
        self.paging_due
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.wake.notify();
    }
}

/// What `VidMmState::worker` guards: the turn of VidMm's worker itself (a type of its own, so
/// the lock-order check tells it apart).
#[derive(Debug, Default)]
pub struct WorkerTurn;

/// What `VidMmState::page_tables` guards: the turn to change page tables (a type of its own,
/// so the lock-order check tells it apart).
#[derive(Debug, Default)]
pub struct PageTableTurn;

/// Where VidMm mapped an allocation (GpuMmu adapters).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mapped {
    /// The driver's handle (`DXGK_ALLOCATIONINFO::hAllocation`).
    pub(crate) kmd: usize,
    /// The VA VidMm gave it at create (`None`: the process maps it itself).
    pub(crate) va: Option<u64>,
}

#[derive(Debug)]
pub(crate) struct AllocObj {
    /// Its own D3DKMT handle (the reaper finds VidMm's residency record by it).
    pub(crate) handle: KmtHandle,
    pub(crate) device: KmtHandle,
    pub(crate) alloc: SysAlloc,
    pub(crate) mapped: Option<Mapped>,
    /// Doorbells holding a reference (UM-07).
    pub(crate) refs: u32,
    /// The UMD destroyed its handle; the memory waits for the references and for
    /// [`AllocObj::deferred`].
    pub(crate) closed: bool,
    /// AL-03: the work queued on the owning device when the UMD destroyed the handle without
    /// `AssumeNotInUse`: each progress fence and the value it must reach before VidMm frees
    /// the memory.
    pub(crate) deferred: Vec<QueuedWork>,
    /// AL-03 on the kernel-mode DMA path: the last packet the owning device had in flight
    /// then (`vidsch::legacy::device_dma_work`), which may run this allocation's words.
    pub(crate) deferred_dma: Option<u64>,
    /// What the driver said of it in `DXGK_ALLOCATIONINFO` (AL-04).
    pub(crate) info: Described,
    /// The creating device's open of it ([`CreatorOpen`]), if the driver made one.
    pub(crate) opened: Option<CreatorOpen>,
    /// The CPU cache over a `Cached` allocation's memory when the adapter is not I/O coherent
    /// (AL-06): its Lock2 views go through it and `D3DKMTInvalidateCache` finds it here.
    pub(crate) cache: Option<Arc<CpuCache>>,
}

impl AllocObj {
    /// Whether a thunk of `device` may name it: the device's, and its handle not destroyed.
    pub(crate) fn is_open_to(&self, device: KmtHandle) -> bool {
        self.device == device && !self.closed
    }
}

/// The open 24H2 makes of every allocation it creates for the creating device
/// (`K:DXGDEVICE::OpenAllocations` @0x140324850, `Flags.Create`): what the driver answered,
/// and the device it answered for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CreatorOpen {
    /// The device's driver handle (`DxgkDdiOpenAllocation`'s and `DxgkDdiCloseAllocation`'s
    /// `hDevice`).
    pub(crate) device_kmd: usize,
    /// `hDeviceSpecificAllocation`: what 24H2 keeps in the allocation object and passes where
    /// a DDI names the allocation for that device (`DxgkDdiCreateDoorbell`).
    pub(crate) handle: usize,
}

/// What `DxgkDdiCreateAllocation` answered for one allocation.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Described {
    /// The driver's handle (`hAllocation`).
    pub(crate) kmd: usize,
    pub(crate) size: u64,
    /// `FlagsWddm2.CpuVisible`.
    pub(crate) cpu_visible: bool,
    /// `FlagsWddm2.Cached`.
    pub(crate) cached: bool,
    /// `SupportedReadSegmentSet | SupportedWriteSegmentSet` (bit n = segment n + 1).
    pub(crate) segments: u32,
    /// `SupportedWriteSegmentSet`: where VidMm may place it (it must be writable there).
    pub(crate) write_segments: u32,
    /// `PreferredSegment` (`DXGK_SEGMENTPREFERENCE`, raw).
    pub(crate) preferred: u32,
}
