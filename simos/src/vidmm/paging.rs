//! VidMm's paging: paging buffers built by `DxgkDdiBuildPagingBuffer` (FILL, TRANSFER) and
//! submitted on the system context with `Flags.Paging` through the kernel-mode path of
//! [`crate::vidsch::legacy`]. `DxgkDdiBuildPagingBuffer` runs at PASSIVE_LEVEL (UNVERIFIED).

use rvgpu_ddi::basic::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::tdr::*;

use crate::adapter::ddi::{self};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::{lock, Locked};
use crate::ob::KmtHandle;
use crate::state::vidmm::PageTableTurn;
use crate::vidmm::host::Host;

/// The turn to change `a`'s page tables: held from a change's working out in VidMm's books to
/// the submission of its paging buffers (`vidmm::mmu`), so changes reach the paging engine in
/// the order they were worked out, whichever thread makes them. Taken after the paging power
/// reference: a holder never waits for power.
pub(crate) fn page_table_turn(a: &AdapterShared) -> Locked<'_, PageTableTurn> {
    if page_table_turn_taken(a) {
        // Counted before the wait, so a test sees a change wait its turn as an event.
        a.mm.page_table_waits
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    lock(&a.mm.page_tables)
}

/// Times a thread of `a` found the page-table turn taken and waited for it.
pub(crate) fn page_table_turn_waits(a: &AdapterShared) -> u64 {
    a.mm.page_table_waits
        .load(std::sync::atomic::Ordering::SeqCst)
}

/// Whether a page-table change of `a` is between its working out and its submission now. A
/// step-mode round leaves its paging for later then: the change's own thread may be the one
/// stepping the machine (its submission waiting for room on the ring).
pub(crate) fn page_table_turn_taken(a: &AdapterShared) -> bool {
    matches!(
        a.mm.page_tables.try_lock(),
        Err(std::sync::TryLockError::WouldBlock)
    )
}

/// One side of a TRANSFER that `build_transfer` builds.
#[derive(Clone, Copy, Debug)]
pub enum TransferSide<'a> {
    /// A segment id and a segment address (`BaseAddress` + offset).
    Segment(u32, u64),
    /// System memory the MDL describes (`SegmentId` 0).
    Mdl(&'a crate::vidmm::mdl::Mdl),
}

/// Builds (without submitting) one TRANSFER of `bytes` from `src` to `dst`, in paging
/// buffers of `dma_bytes` (the rules: `Machine::build_transfer`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_transfer(
    host: &dyn Host,
    a: &AdapterShared,
    src: TransferSide<'_>,
    dst: TransferSide<'_>,
    bytes: u64,
    transfer_offset: u32,
    mdl_offset: u32,
    dma_bytes: u32,
) -> Result<Vec<(NTSTATUS, Vec<u64>)>, SimError> {
    let side = |s: &TransferSide<'_>| match s {
        TransferSide::Segment(id, addr) => segment_side(*id, *addr),
        TransferSide::Mdl(m) => mdl_side(m.as_ptr()),
    };
    let op = DXGKARG_BUILDPAGINGBUFFER_0 {
        Transfer: DXGKARG_BUILDPAGINGBUFFER_Transfer {
            // A transfer for no allocation of the OS's.
            hAllocation: std::ptr::null_mut(),
            TransferOffset: transfer_offset,
            TransferSize: bytes as SIZE_T,
            Source: side(&src),
            Destination: side(&dst),
            Flags: DXGK_TRANSFERFLAGS::default(),
            MdlOffset: mdl_offset,
        },
    };
    build_paging(host, a, DXGK_OPERATION_TRANSFER, op, dma_bytes)
}

/// As [`build_transfer`], any operation.
pub(crate) fn build_paging(
    host: &dyn Host,
    a: &AdapterShared,
    operation: DXGK_BUILDPAGINGBUFFER_OPERATION,
    op: DXGKARG_BUILDPAGINGBUFFER_0,
    dma_bytes: u32,
) -> Result<Vec<(NTSTATUS, Vec<u64>)>, SimError> {
    let f = build_ddi(a)?;
    let mut out = Vec::new();
    let mut multipass = 0u32;
    let system = host.paging_context(a, paging_node(a));
    for _ in 0..4096 {
        let pass = one_pass(a, f, system, operation, op, multipass, dma_bytes)?;
        let (st, mut buf) = (pass.status, pass.words);
        let written = ((pass.write_offset / 8) as usize).min(buf.len());
        buf.truncate(written);
        out.push((st, buf));
        if st != STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER {
            return Ok(out);
        }
        if written == 0 {
            return Err(SimError::Stuck(
                "DxgkDdiBuildPagingBuffer made no progress".into(),
            ));
        }
        multipass = pass.multipass;
    }
    Err(SimError::Stuck(
        "paging operation needs too many passes".into(),
    ))
}

/// Builds `op` with `DxgkDdiBuildPagingBuffer` (multipass as the driver asks) and submits
/// each pass with `Flags.Paging` on the system context of `node`. Returns the fence IDs.
pub(crate) fn paging_op(
    host: &dyn Host,
    a: &AdapterShared,
    node: u32,
    operation: DXGK_BUILDPAGINGBUFFER_OPERATION,
    op: &mut DXGKARG_BUILDPAGINGBUFFER_0,
    owners: Vec<KmtHandle>,
) -> Result<Vec<u32>, SimError> {
    let f = build_ddi(a)?;
    let mut ids = Vec::new();
    let mut multipass = 0u32;
    // Each pass is one buffer of the paging pool, of the driver's PagingBufferSize
    // (BR-65, `vidmm::dmapool`); a multipass build submits each pass on its own.
    let bytes = crate::vidmm::dmapool::paging_buffer_bytes(a);
    // The driver's paging context: the paging node's system context ([D]
    // VIDMM_GLOBAL::SetupForBuildPagingBuffer, VidSchGetDriverPagingContext).
    let system = host.paging_context(a, node);
    for _pass in 0..4096 {
        audit_op(a, operation, op);
        let pass = one_pass(a, f, system, operation, *op, multipass, bytes)?;
        let (st, buf) = (pass.status, pass.words);
        let more = st == STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
        if !NT_SUCCESS(st) && !more {
            return Err(SimError::DdiFailed(st));
        }
        let written = (pass.write_offset / 8) as usize;
        if written > buf.len() {
            let msg = format!(
                "driver bug: DxgkDdiBuildPagingBuffer wrote {} bytes into a {} byte buffer",
                pass.write_offset, bytes
            );
            a.state.raise_sim_error(msg.clone());
            return Err(SimError::Violation(msg));
        }
        if written > 0 {
            ids.push(host.submit_paging(a, node, &buf[..written], system, owners.clone())?);
        }
        if !more {
            return Ok(ids);
        }
        if pass.multipass <= multipass && written == 0 {
            return Err(SimError::Stuck(
                "DxgkDdiBuildPagingBuffer made no progress".into(),
            ));
        }
        multipass = pass.multipass;
    }
    Err(SimError::Stuck(
        "paging operation needs too many passes".into(),
    ))
}

/// One side of a TRANSFER: `addr` in segment `id`.
pub(crate) fn segment_side(id: u32, addr: u64) -> DXGKARG_BUILDPAGINGBUFFER_Transfer_Source {
    DXGKARG_BUILDPAGINGBUFFER_Transfer_Source {
        SegmentId: id,
        Anonymous: DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0 {
            SegmentAddress: LARGE_INTEGER {
                QuadPart: addr as i64,
            },
        },
    }
}

/// One side of a TRANSFER: the system pages `mdl` describes (segment 0).
pub(crate) fn mdl_side(mdl: PMDL) -> DXGKARG_BUILDPAGINGBUFFER_Transfer_Source {
    DXGKARG_BUILDPAGINGBUFFER_Transfer_Source {
        SegmentId: 0,
        Anonymous: DXGKARG_BUILDPAGINGBUFFER_Transfer_Source_0 { pMdl: mdl },
    }
}

/// `DxgkDdiBuildPagingBuffer`'s type.
type BuildFn = ddi::Of<rvgpu_ddi::tdr::PDXGKDDI_BUILDPAGINGBUFFER>;

/// The driver's `DxgkDdiBuildPagingBuffer`: without one, paging is `STATUS_NOT_SUPPORTED`.
fn build_ddi(a: &AdapterShared) -> Result<BuildFn, SimError> {
    a.table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiBuildPagingBuffer))
        .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))
}

/// What one `DxgkDdiBuildPagingBuffer` call returned.
struct Pass {
    status: NTSTATUS,
    /// The paging buffer (as 64-bit words, whole size).
    words: Vec<u64>,
    /// `DmaBufferWriteOffset` as the driver left it.
    write_offset: u32,
    /// `MultipassOffset` as the driver left it.
    multipass: u32,
}

/// One call of the driver's BuildPagingBuffer with a fresh paging buffer of `bytes`, naming
/// `system` as the paging context (the arguments VidMm fills for every pass).
fn one_pass(
    a: &AdapterShared,
    f: BuildFn,
    system: usize,
    operation: DXGK_BUILDPAGINGBUFFER_OPERATION,
    op: DXGKARG_BUILDPAGINGBUFFER_0,
    multipass: u32,
    bytes: u32,
) -> Result<Pass, SimError> {
    let mut words = vec![0u64; bytes.div_ceil(8) as usize];
    let mut args = DXGKARG_BUILDPAGINGBUFFER {
        pDmaBuffer: words.as_mut_ptr().cast(),
        DmaSize: bytes,
        pDmaBufferPrivateData: std::ptr::null_mut(),
        DmaBufferPrivateDataSize: 0,
        Operation: operation,
        MultipassOffset: multipass,
        Anonymous: op,
        hSystemContext: system as HANDLE,
        DmaBufferGpuVirtualAddress: 0,
        DmaBufferWriteOffset: 0,
    };
    let ctx = a.context();
    let status = f.passive(a, (ctx, &mut args))?;
    Ok(Pass {
        status,
        words,
        write_offset: args.DmaBufferWriteOffset,
        multipass: args.MultipassOffset,
    })
}

/// Checks VidMm's operation block against its row set of the hand-over audit, once per call
/// as 24H2 refills it per attempt (the central check sees only the outer block, whose type no
/// set reads). The page-table operations are checked where the MMU builds them; the blocks
/// tests build themselves ([`build_paging`]) are probes, not VidMm's, and go unchecked.
fn audit_op(
    a: &AdapterShared,
    operation: DXGK_BUILDPAGINGBUFFER_OPERATION,
    op: &DXGKARG_BUILDPAGINGBUFFER_0,
) {
    use rvgpu_ddi::handover as h;
    let o = a.observer();
    // Each arm is the union member `operation` names, the one its builder wrote.
    match operation {
        DXGK_OPERATION_FILL => o.handed(&h::FILL, &op.fill()),
        DXGK_OPERATION_TRANSFER => o.handed(&h::TRANSFER, &op.transfer()),
        DXGK_OPERATION_MAP_APERTURE_SEGMENT => {
            o.handed(&h::MAP_APERTURE_SEGMENT, &op.map_aperture_segment())
        }
        DXGK_OPERATION_UNMAP_APERTURE_SEGMENT => {
            o.handed(&h::UNMAP_APERTURE_SEGMENT, &op.unmap_aperture_segment())
        }
        _ => {}
    }
}

/// The node the driver pages on (`DXGK_DRIVERCAPS::MemoryManagementCaps.PagingNode`).
pub(crate) fn paging_node(a: &AdapterShared) -> u32 {
    lock(&a.caps).map_or(0, |c| c.MemoryManagementCaps.PagingNode)
}
