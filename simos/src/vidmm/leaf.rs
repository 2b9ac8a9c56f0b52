//! What the leaves of a mapping belong to, as VidMm tells the driver in its page-table updates
//! (a leaf: fences, allocations and the VA thunks tag their mappings without knowing VidMm's
//! spaces).

/// What the leaves of a mapping belong to, for the driver (`hAllocation`, `Flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeafTag {
    /// The driver's allocation handle (0: none).
    pub handle: usize,
    /// VA of the object's first page (leaves report their offset from it).
    pub base_va: u64,
    /// The mapping is an allocation's own VA, which VidMm unmaps only whole (eviction,
    /// destruction): where the driver's caps allow, a run that fills a large page aligned in
    /// VA and in memory is mapped with one level-1 entry (`DXGK_PTE::LargePage`;
    /// `DXGK_GPUMMUCAPS::LargePageSupported`, `SysMemLargePageSupported`,
    /// `AllowNonAlignedLargePageAddress`).
    pub large_pages: bool,
    /// Every leaf maps the allocation's one page at this byte offset: a Map range past what
    /// the allocation has from its offset repeats what is left, and when that is one 4 KiB
    /// page 24H2 sends the leaves as one repeated entry (see `vidmm::mmu`'s `vidmm_run_once`).
    pub repeat_page: Option<u64>,
    /// The `DriverProtection` the process mapped the range with (`D3DDDI_MAPGPUVIRTUALADDRESS`,
    /// a MAP_PROTECT's): handed to the driver with its leaves' updates.
    pub driver_protection: u64,
}

impl LeafTag {
    /// The tag for a run starting at `va`: the object's first page is at `base_va` when the
    /// caller set it (a process mapping part of an allocation, `vidmm::va`), else at `va`.
    pub(crate) fn based_at(self, va: u64) -> Self {
        let base_va = if self.base_va == 0 { va } else { self.base_va };
        Self { base_va, ..self }
    }
}
