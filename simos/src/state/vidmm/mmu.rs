//! What VidMm's GpuMmu keeps per adapter (behind `VidMmState::vidmm`): each process's GPU VA
//! space and DMA-buffer arena, the paging process, and the aperture's books. Data and the
//! bookkeeping on it only; the paging that changes the GPU's tables is in [`crate::vidmm::mmu`],
//! [`crate::vidmm::aperture`] and [`crate::vidmm::dmabuf`].

use std::collections::{BTreeMap, HashMap};

use rvgpu_ddi::ntstatus::STATUS_INVALID_HANDLE;
use rvgpu_device::SysAlloc;

use crate::base::error::SimError;
use crate::base::process_id::ProcessId;
use crate::state::vidmm::gpuva::{AddressSpace, TableHeap};

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// VidMm's paging (system) process in its books
/// ([`crate::vidmm::mmu::system_space::vidmm_init_paging_process`]).
pub(crate) const PAGING_PID: ProcessId = ProcessId(u32::MAX);

/// Pages of one process's arena (1 MiB: 256 single-page buffers in flight).
pub(crate) const ARENA_PAGES: u64 = 256;

/// A process as VidMm knows it.
#[derive(Debug)]
pub struct VmProcess {
    /// `DXGKARG_CREATEPROCESS::hKmdProcess`.
    pub kmd: usize,
    pub space: AddressSpace,
    /// Where its kernel-mode DMA buffers live ([`crate::vidmm::dmabuf`]); made at its first one.
    pub arena: Option<Arena>,
}

/// Per-adapter GpuMmu state.
#[derive(Debug, Default)]
pub struct VidMm {
    pub(crate) heap: Option<TableHeap>,
    pub(crate) processes: HashMap<ProcessId, VmProcess>,
    /// Paging sequences in flight (they hold the GPU in D0).
    pub(crate) busy: u32,
    /// The thread running a power transition that pages (the D3 trim): it holds
    /// the adapter's power sequence exclusively and the GPU is in D0, so its paging takes no
    /// power reference.
    pub(crate) power_thread: Option<std::thread::ThreadId>,
    /// The driver's handle of the paging process ([`open_paging_process`]).
    pub(crate) paging_kmd: Option<usize>,
    /// The aperture's ranges and dummy page ([`crate::vidmm::aperture`]).
    pub(crate) aperture: Ranges,
    /// System memory the OS gave back while mapped in the paging process: unmapped and freed
    /// at the next safe point ([`system_space::reap_system_pages`]).
    pub(crate) retired_system: Vec<(u64, u64)>,
    /// Serialises changes to the paging process's space. Every thread maps into that one
    /// space (queue and fence creation), and a change's books are updated before its paging
    /// buffer runs: without this, a thread could write a leaf into a table another thread
    /// has allocated but not yet linked, and its check would find the page unmapped.
    pub(crate) system_serial: std::sync::Arc<std::sync::Mutex<()>>,
    /// VidMm is building the paging process's space and names every table it updates by its
    /// CPU address (`UpdateMode = CPU_VIRTUAL`; `answers::PagingStart`).
    pub(crate) cpu_updates: bool,
    /// Page-table updates sent with `UpdateMode = CPU_VIRTUAL` so far (tests).
    pub(crate) cpu_updates_sent: u64,
}

impl VidMm {
    /// Whether `pid` has an address space here.
    pub(crate) fn has_process(&self, pid: ProcessId) -> bool {
        self.processes.contains_key(&pid)
    }

    /// `pid`'s address space; a process without one is `STATUS_INVALID_HANDLE`.
    pub(crate) fn space_of(&mut self, pid: ProcessId) -> Result<&mut VmProcess, SimError> {
        self.processes
            .get_mut(&pid)
            .ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))
    }

    /// Keeps `[bus, bus + bytes)` of system memory the OS gave back while the paging process
    /// may map it, for [`crate::vidmm::mmu::system_space::reap_system_pages`] to unmap and free; `false`
    /// without a paging process (nothing maps it: the caller frees it at once).
    pub(crate) fn retire_system(&mut self, bus: u64, bytes: u64) -> bool {
        if !self.has_process(PAGING_PID) {
            return false;
        }
        self.retired_system.push((bus, bytes));
        true
    }

    pub(crate) fn paging_begin(&mut self) {
        self.busy += 1;
    }

    pub(crate) fn paging_end(&mut self) {
        self.busy = self.busy.saturating_sub(1);
    }

    pub(crate) fn paging_busy(&self) -> bool {
        self.busy > 0
    }

    /// The KMD process handle and root (segment, offset) of `pid`, if VidMm has one.
    pub fn process(&self, pid: ProcessId) -> Option<(usize, u32, u64)> {
        self.processes
            .get(&pid)
            .map(|p| (p.kmd, p.space.geometry.segment, p.space.root))
    }
}

/// One process's DMA-buffer arena.
#[derive(Debug)]
pub struct Arena {
    pub(crate) backing: SysAlloc,
    /// GPU VA of the arena's first page in the process.
    pub(crate) va: u64,
    /// Carved buffers: first page index → pages.
    pub(crate) carved: BTreeMap<u64, u64>,
}

impl Arena {
    /// First fit of `pages` contiguous free pages.
    pub(crate) fn carve(&mut self, pages: u64) -> Option<u64> {
        let mut at = 0u64;
        for (&start, &len) in &self.carved {
            if start.saturating_sub(at) >= pages {
                break;
            }
            at = start.saturating_add(len);
        }
        (at.checked_add(pages)? <= ARENA_PAGES).then(|| {
            self.carved.insert(at, pages);
            at
        })
    }

    pub(crate) fn contains(&self, bus: u64) -> bool {
        bus >= self.backing.bus_addr && bus < self.backing.bus_addr + self.backing.len
    }
}

/// The first aperture offset VidMm hands out: neither 0 nor any bus address.
pub const FIRST_OFFSET: u64 = 0x0123_5000;

/// VidMm's book of the aperture: free ranges (offset → bytes), the dummy page, and which
/// bus page VidMm had the driver map at each mapped aperture page (the oracle its strict
/// page-table walk checks a `Segment` = aperture entry against).
#[derive(Debug, Default)]
pub struct Ranges {
    pub(crate) free: Option<BTreeMap<u64, u64>>,
    pub(crate) dummy: Option<u64>,
    pub(crate) segment: Option<u32>,
    pub(crate) mapped: BTreeMap<u64, u64>,
}

impl Ranges {
    /// The bus address VidMm mapped at `offset` of aperture segment `segment`, if it did.
    pub(crate) fn bus_of(&self, segment: u32, offset: u64) -> Option<u64> {
        if self.segment != Some(segment) {
            return None;
        }
        let page = offset - offset % PAGE;
        self.mapped.get(&page).map(|b| b + offset % PAGE)
    }

    /// Whether `segment` is the aperture VidMm mapped pages in.
    pub(crate) fn is_aperture(&self, segment: u32) -> bool {
        self.segment == Some(segment)
    }

    pub(crate) fn free_map(&mut self, size: u64) -> &mut BTreeMap<u64, u64> {
        self.free.get_or_insert_with(|| {
            let end = size.min(rvgpu_device::memory::SYSMEM_START);
            let mut m = BTreeMap::new();
            if end > FIRST_OFFSET {
                m.insert(FIRST_OFFSET, end - FIRST_OFFSET);
            }
            m
        })
    }

    /// First fit of `bytes` (whole pages).
    pub(crate) fn alloc(&mut self, size: u64, bytes: u64) -> Option<u64> {
        let free = self.free_map(size);
        let (&start, &len) = free.iter().find(|(_, &len)| len >= bytes)?;
        free.remove(&start);
        if len > bytes {
            free.insert(start + bytes, len - bytes);
        }
        Some(start)
    }

    pub(crate) fn release(&mut self, size: u64, start: u64, bytes: u64) {
        let free = self.free_map(size);
        let (mut start, mut len) = (start, bytes);
        if let Some(next) = free.remove(&(start + len)) {
            len += next;
        }
        if let Some((&prev, &plen)) = free.range(..start).next_back() {
            if prev + plen == start {
                free.remove(&prev);
                start = prev;
                len += plen;
            }
        }
        free.insert(start, len);
    }
}
