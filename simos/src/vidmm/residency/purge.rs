//! VidMm's purge of every segment around an adapter-wide recovery, and its restore
//! (docs/tdr.md "Adapter-wide").
//!
//! 24H2 order (`K:DXGADAPTER::Reset` @0x140195458): `K:DXGADAPTER::PrepareToReset`
//! @0x140193794 calls `DxgkDdiResetFromTimeout`; then `K:ADAPTER_RENDER::Reset` @0x1403F2C34
//! purges (`K:ADAPTER_RENDER::PurgeSegments` @0x1402C8CE4 with no flags and no process), resets
//! VidSch, calls `DxgkDdiRestartFromTimeout`, restarts VidSch, and restores
//! (`K:ADAPTER_RENDER::RestoreFromPurgeSegments` @0x1403B6B24) before it resets each device.
//! The purge is system command 102 on VidMm's worker (`M:VIDMM_GLOBAL::PurgeAllSegments`
//! @0x1400BC934, `M:VIDMM_GLOBAL::ProcessSystemCommand` @0x1400E2548); the restore is command
//! 101 (`M:VIDMM_GLOBAL::RestoreFromPurge` @0x1400BC7A8).
//!
//! - **Purge.** `M:VIDMM_PHYSICAL_ADAPTER::PurgeSegments` @0x1400D644C calls
//!   `M:VIDMM_SEGMENT::PurgeContent` @0x1400D6EFC on every segment when the flags are 0, memory
//!   and aperture alike; it evicts each resident allocation that is not locked
//!   (`M:VIDMM_GLOBAL::PurgeAllocation` @0x1400D7384) and marks it faulted for its devices.
//!   Microsoft's "Thread synchronization and TDR" says what the driver sees: an allocation in
//!   a memory segment is evicted by a TRANSFER of size zero, no content moving because the
//!   reset lost it; one in an aperture segment is unmapped.
//!   Here: each allocation in VRAM gets that TRANSFER (built, never run: the engines are
//!   reset and VidSch has not restarted) and its VRAM is poisoned, content lost. Each aperture
//!   run VidMm mapped gets `DXGK_OPERATION_UNMAP_APERTURE_SEGMENT` (the same).
//! - **Restore.** `M:VIDMM_APERTURE_SEGMENT::RestoreFromPurge` @0x1400FC360 maps every
//!   allocation still on the aperture segment's lists again at its offset, with its pages:
//!   here `DXGK_OPERATION_MAP_APERTURE_SEGMENT` for each run unmapped by the purge, after the
//!   driver's restart.
//! - **Recommit.** After the restore the page-table updates and TLB flushes the reset dropped
//!   are submitted again in their order (`vidmm::inflight`, which also holds VidMm still for
//!   the whole recovery).
//! - **Not modelled.** 24H2 also evicts every process's root page table
//!   (`M:VIDMM_GLOBAL::PurgePageTables` @0x1400FFCC0) and recommits the VAs of every
//!   allocation still resident (`M:VIDMM_GLOBAL::RecommitGpuVirtualAddresses` @0x1400D2258).
//!   Here the page tables stay in VRAM through the reset, so only what it dropped is written
//!   again; a purged allocation keeps its VRAM and its mappings with its content lost, and
//!   every device is reset right after.

use rvgpu_ddi::basic::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::vidmm::host::Host;
use crate::vidmm::mdl::{Mdl, MAX_MDL_PAGES};
use crate::vidmm::paging::{build_paging, mdl_side, segment_side};

use super::{segment_address, Backing, Place, PAGE, VRAM_POISON};

/// A run of aperture pages VidMm mapped: its first offset and the bus page at each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApertureRun {
    pub offset: u64,
    pub pages: Vec<u64>,
}

/// What the purge took away, for the restore and for tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Purge {
    /// Allocations told of their eviction from VRAM (TRANSFER of size zero), and the bytes
    /// the driver wrote for it (none is run).
    pub notified: Vec<(KmtHandle, usize)>,
    /// Aperture runs unmapped, to be mapped again.
    pub unmapped: Vec<ApertureRun>,
}

/// The purge, between `DxgkDdiResetFromTimeout` and `DxgkDdiRestartFromTimeout`. A driver
/// that fails one of its paging operations fails the recovery (24H2 bug-checks on a failed
/// purge command: `M:VIDMM_GLOBAL::PurgeAllSegments`).
pub(crate) fn purge_segments(
    host: &dyn Host,
    a: &AdapterShared,
    vidmm: &mut crate::vidmm::inflight::Suspended<'_>,
) -> Result<Purge, SimError> {
    let mut out = Purge::default();
    // Nothing is submitted: the host only names the paging node's system context.
    let dma = crate::vidmm::dmapool::paging_buffer_bytes(a);
    let st = vidmm.residency()?;
    let mut local: Vec<KmtHandle> = st
        .entries
        .iter()
        .filter(|(_, e)| matches!(e.place, Place::Local { .. }))
        .map(|(h, _)| *h)
        .collect();
    local.sort();
    for h in local {
        let Some(e) = st.entries.get_mut(&h) else {
            continue;
        };
        let Place::Local { segment, offset } = e.place else {
            continue;
        };
        let pages: Vec<u64> = match &e.backing {
            Backing::Pages(p) => p.iter().take(MAX_MDL_PAGES).map(|p| p.bus_addr).collect(),
            Backing::Own => Vec::new(),
        };
        let mdl = Mdl::of_pages(&pages).ok_or(SimError::Internal("MDL over its page limit"))?;
        let op = DXGKARG_BUILDPAGINGBUFFER_0 {
            Transfer: DXGKARG_BUILDPAGINGBUFFER_Transfer {
                hAllocation: e.kmd as HANDLE,
                TransferOffset: 0,
                TransferSize: 0,
                Source: segment_side(segment, segment_address(a, segment, offset)),
                Destination: mdl_side(mdl.as_ptr()),
                Flags: DXGK_TRANSFERFLAGS::default()
                    .with(DXGK_TRANSFERFLAGS::TransferStart, 1)
                    .with(DXGK_TRANSFERFLAGS::TransferEnd, 1),
                MdlOffset: 0,
            },
        };
        let written = built(build_paging(host, a, DXGK_OPERATION_TRANSFER, op, dma)?)?;
        drop(mdl);
        // The reset lost the content: nothing is written back, and what the GPU reads there
        // from now on is VidMm's poison.
        e.dirty = false;
        poison(a, segment, offset, e.bytes());
        out.notified.push((h, written));
    }
    let runs = aperture_runs(a);
    let segment = aperture_segment(a);
    let dummy = match runs.is_empty() {
        true => 0,
        false => crate::vidmm::aperture::dummy_page(a)?,
    };
    for run in runs {
        let op = DXGKARG_BUILDPAGINGBUFFER_0 {
            UnmapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment {
                hDevice: std::ptr::null_mut(),
                hAllocation: std::ptr::null_mut(),
                SegmentId: segment,
                OffsetInPages: (run.offset / PAGE) as SIZE_T,
                NumberOfPages: run.pages.len() as SIZE_T,
                DummyPage: LARGE_INTEGER {
                    QuadPart: dummy as i64,
                },
            },
        };
        built(build_paging(
            host,
            a,
            DXGK_OPERATION_UNMAP_APERTURE_SEGMENT,
            op,
            dma,
        )?)?;
        out.unmapped.push(run);
    }
    Ok(out)
}

/// The restore, after `DxgkDdiRestartFromTimeout`: every aperture run the purge unmapped is
/// mapped again with the pages it had, through paging buffers VidSch now runs.
pub(crate) fn restore_from_purge(
    host: &dyn Host,
    a: &AdapterShared,
    purge: &Purge,
) -> Result<(), SimError> {
    let node = crate::vidmm::paging::paging_node(a);
    let segment = aperture_segment(a);
    let coherent = lock(&a.mm.memory_model).segment(segment).is_some_and(|s| {
        s.Flags
            .is_set(rvgpu_ddi::memory::DXGK_SEGMENTFLAGS::CacheCoherent)
    });
    for run in &purge.unmapped {
        let mdl = Mdl::of_pages(&run.pages).ok_or(SimError::Internal("MDL over its page limit"))?;
        let mut op = DXGKARG_BUILDPAGINGBUFFER_0 {
            MapApertureSegment: DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment {
                hDevice: std::ptr::null_mut(),
                hAllocation: std::ptr::null_mut(),
                SegmentId: segment,
                OffsetInPages: (run.offset / PAGE) as SIZE_T,
                NumberOfPages: run.pages.len() as SIZE_T,
                pMdl: mdl.as_ptr(),
                Flags: DXGK_MAPAPERTUREFLAGS::default()
                    .with(DXGK_MAPAPERTUREFLAGS::CacheCoherent, u32::from(coherent)),
                MdlOffset: 0,
            },
        };
        crate::vidmm::paging::paging_op(
            host,
            a,
            node,
            DXGK_OPERATION_MAP_APERTURE_SEGMENT,
            &mut op,
            Vec::new(),
        )?;
        drop(mdl);
    }
    Ok(())
}

/// The bytes the driver wrote over every pass of one operation, or its failure.
fn built(passes: Vec<(NTSTATUS, Vec<u64>)>) -> Result<usize, SimError> {
    let mut bytes = 0usize;
    for (st, words) in passes {
        if !NT_SUCCESS(st) && st != STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER {
            return Err(SimError::DdiFailed(st));
        }
        bytes = bytes.saturating_add(words.len() * 8);
    }
    Ok(bytes)
}

fn poison(a: &AdapterShared, segment: u32, offset: u64, bytes: u64) {
    let base = lock(&a.mm.memory_model).segment_base(segment).unwrap_or(0);
    let first = ((base + offset) / 8) as usize;
    let n = (bytes / 8) as usize;
    if let Some(words) = a.device.memory().vram_words().get(first..first + n) {
        for w in words {
            w.store(VRAM_POISON, std::sync::atomic::Ordering::Release);
        }
    }
}

fn aperture_segment(a: &AdapterShared) -> u32 {
    lock(&a.mm.vidmm).aperture.segment.unwrap_or(0)
}

/// The aperture pages VidMm has mapped, in runs of consecutive offsets of at most one MDL.
fn aperture_runs(a: &AdapterShared) -> Vec<ApertureRun> {
    let v = lock(&a.mm.vidmm);
    let mut runs: Vec<ApertureRun> = Vec::new();
    for (&offset, &bus) in &v.aperture.mapped {
        match runs.last_mut() {
            Some(r)
                if r.offset + r.pages.len() as u64 * PAGE == offset
                    && r.pages.len() < MAX_MDL_PAGES =>
            {
                r.pages.push(bus)
            }
            _ => runs.push(ApertureRun {
                offset,
                pages: vec![bus],
            }),
        }
    }
    runs
}
