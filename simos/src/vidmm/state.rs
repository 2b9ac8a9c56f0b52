//! VidMm's per-adapter state: the driver's contiguous memory and BAR mappings, what VidMm
//! learnt of the adapter's memory, its GPU VA spaces, residency and paging queues. Held by the
//! adapter ([`crate::dxgkrnl::adapter::AdapterShared::mm`]); the operations live in the
//! sibling modules.

use std::collections::HashMap;
use std::sync::Mutex;

use rvgpu_device::SysAlloc;

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
    /// What VidMm learnt of the adapter's memory at start ([`crate::vidmm::model`]).
    pub memory_model: Mutex<crate::vidmm::model::MemoryModel>,
    /// VidMm's GPU VA spaces and page-table heap ([`crate::vidmm::mmu::state`]).
    pub vidmm: Mutex<crate::vidmm::mmu::state::VidMm>,
    /// VidMm's residency: where each user allocation lives and who needs it resident
    /// ([`crate::vidmm::residency::state`]). Held for a whole residency operation, paging
    /// included, as VidMm serialises its own.
    pub residency: Mutex<crate::vidmm::residency::state::State>,
    /// Paging queues and the GPU VA ranges processes reserve and map through the D3DKMT
    /// thunks ([`crate::vidmm::va::state`]). Taken after `residency`, before `vidmm`.
    pub gpuva: Mutex<crate::vidmm::va::state::State>,
}
