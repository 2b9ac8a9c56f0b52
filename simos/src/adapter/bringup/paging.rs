//! The paging phase: after the render core, `VIDMM_GLOBAL::VidMmInitializePagingProcess` sets
//! up the paging process with the driver's own DDIs, and VidSch sets up each
//! hardware-scheduled node; every failure ends the start with the failing status. The calls and
//! their order are `crate::pnp`'s, `crate::vidsch::system`'s and `crate::vidsch::hws`'s.

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY};
use rvgpu_ddi::NTSTATUS;

use super::rule::{Answer, Facts, Rule, Violation};

/// BR-66's rows: the paging process object, the system device and one system context per node
/// (`VidSchCreateSystemDevices`), the paging fences and the paging process's space.
pub const PAGING_PROCESS_RULES: &[Rule<Answer>] = &[Rule::driver_status(
    "BR-66",
    "[D] VIDMM_GLOBAL::VidMmInitializePagingProcess, VidSchCreateSystemDevices; [H] NTOSEYE.md \
     (a NOT_IMPLEMENTED system context kept a 26100 adapter at Code 43)",
    "the paging process: its object, then `DxgkDdiCreateDevice` (system device) and \
     `DxgkDdiCreateContext` (one system context per node) succeed, then the DMA pools (BR-65), \
     the paging fences and the paging VA space",
    |s| s.failed().map(|st| s.why(st)),
)];

/// What the paging pool's rows read (\[D\] `InitDmaPools` → `VIDMM_DMA_POOL::Init`).
pub struct PagingPool {
    /// `PagingBufferSegmentId` (0: contiguous system memory).
    pub segment: u32,
    /// Why `VerifySegmentSet` refuses the segment's set (`crate::vidmm::dmapool`), or `None`.
    pub segment_set: Option<String>,
    /// `PagingBufferSize`.
    pub size: u32,
}

impl Facts for PagingPool {}

const POOL: &str = "[D] InitDmaPools, VIDMM_DMA_POOL::Init, VerifySegmentSet; [H] NTOSEYE.md, \
                    INITDMAPOOLS_HANDOVER.md";

/// BR-65(b)'s rows: the paging DMA pool, after the system devices and before the paging fences
/// and VA space.
pub const PAGING_POOL_RULES: &[Rule<PagingPool>] = &[
    Rule::refuse(
        "BR-65",
        POOL,
        "(b) the paging pool's segment (`PagingBufferSegmentId`, unless 0) exists and is an \
         **aperture** segment (Code 43 on 26100)",
        STATUS_INVALID_PARAMETER,
        |p| {
            let why = p.segment_set.as_ref()?;
            Some(format!(
                "paging buffers (PagingBufferSegmentId {}): {why}",
                p.segment
            ))
        },
    ),
    // Inferred: with segment 0 AddDmaBufferToPool asks MmAllocateContiguousNodeMemory for
    // PagingBufferSize bytes and fails the pool with NO_MEMORY when it gets nothing.
    Rule::refuse(
        "BR-65",
        POOL,
        "(b) `PagingBufferSize` not 0 (the pool's two buffers are allocated at once)",
        STATUS_NO_MEMORY,
        |p| (p.size == 0).then(|| "PagingBufferSize 0: the paging pool has no buffers".into()),
    ),
];

/// BR-65(b) over the paging pool's facts.
pub fn check_paging_pool(p: &PagingPool) -> Option<Violation> {
    super::rule::first(PAGING_POOL_RULES, p)
}

/// BR-77's rows, per hardware-scheduled node.
pub const PRIORITY_BAND_RULES: &[Rule<Answer>] = &[Rule::driver_status(
    "BR-77",
    "[D24] dxgmms2 VidSchiInitializeNode @ 0x1400A7B94; [M] DXGKDDI_SETUPPRIORITYBANDS",
    "`DxgkDdiSetupPriorityBands` with dxgmms2's defaults succeeds on every hardware-scheduled \
     node (`NOT_IMPLEMENTED` or NULL tolerated)",
    |s| {
        s.failed()
            .filter(|st| *st != STATUS_NOT_IMPLEMENTED)
            .map(|st| s.why(st))
    },
)];

/// BR-79's rows, per hardware-scheduled node of a WDDM 2.5+ driver.
pub const SCHEDULING_LOG_RULES: &[Rule<Answer>] = &[Rule::driver_status(
    "BR-79",
    "[D] VidSchCreateSchedulingLogs (from VidMmInitializePagingProcess); [M] \
     DXGKDDI_SETSCHEDULINGLOGBUFFER",
    "WDDM 2.5+: `DxgkDdiSetSchedulingLogBuffer` with a 0x800-entry log succeeds on every \
     hardware-scheduled node (`NOT_IMPLEMENTED` or NULL tolerated)",
    |s| {
        s.failed()
            .filter(|st| *st != STATUS_NOT_IMPLEMENTED)
            .map(|st| s.why(st))
    },
)];

/// The first of `rows` that fires for `what` (on `node`) answering `status`.
pub fn check(
    rows: &[Rule<Answer>],
    what: &'static str,
    node: Option<u32>,
    status: Option<NTSTATUS>,
) -> Option<Violation> {
    super::rule::first(rows, &Answer { what, node, status })
}
