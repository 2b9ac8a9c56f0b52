//! Safe reads of the unions in Dxgkrnl's argument blocks.
//!
//! Each accessor says once which arm is live and why reading it is defined; the rest of the
//! driver takes plain values. (Arrays and buffers the OS passes by pointer become slices in the
//! DDI thunks, `crate::thunk`.)

use rvgpu_ddi::submission::{DXGKARG_CREATEDEVICE, DXGK_CREATEDEVICEFLAGS};
use rvgpu_ddi::tdr::{
    DXGKARG_BUILDPAGINGBUFFER_Fill, DXGKARG_BUILDPAGINGBUFFER_Transfer,
    DXGKARG_BUILDPAGINGBUFFER_Transfer_Source, DXGKARG_BUILDPAGINGBUFFER, DXGKARG_SUBMITCOMMAND,
    DXGK_OPERATION_FILL, DXGK_OPERATION_TRANSFER,
};
use rvgpu_ddi::{HANDLE, LARGE_INTEGER};

/// The 64-bit value of a `LARGE_INTEGER`.
pub(crate) fn quad(v: &LARGE_INTEGER) -> i64 {
    // SAFETY: every arm of LARGE_INTEGER covers the same 8 bytes of plain data.
    unsafe { v.QuadPart }
}

/// `hContext` of a DxgkDdiSubmitCommand: rvgpu is context-aware, so that is the live arm.
pub(crate) fn submit_context(args: &DXGKARG_SUBMITCOMMAND) -> HANDLE {
    // SAFETY: both arms are a HANDLE (plain data of the same size).
    unsafe { args.Anonymous.hContext }
}

/// The creation flags of a DxgkDdiCreateDevice.
pub(crate) fn create_device_flags(args: &DXGKARG_CREATEDEVICE) -> DXGK_CREATEDEVICEFLAGS {
    // SAFETY: on input the union holds the flags word (the pointer arm is an output of
    // pre-WDDM 2.0 drivers); both arms are plain data, so reading the flags is always defined.
    unsafe { args.Anonymous.Flags }
}

/// The arm of a DxgkDdiBuildPagingBuffer that its `Operation` names (the ones rvgpu builds).
#[derive(Clone, Copy, Debug)]
pub(crate) enum PagingOperation {
    /// `DXGK_OPERATION_FILL`.
    Fill(DXGKARG_BUILDPAGINGBUFFER_Fill),
    /// `DXGK_OPERATION_TRANSFER`.
    Transfer(DXGKARG_BUILDPAGINGBUFFER_Transfer),
    /// `DXGK_OPERATION_UPDATE_PAGE_TABLE` (GpuMmu).
    UpdatePageTable(rvgpu_ddi::memory::DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE),
    /// `DXGK_OPERATION_FLUSH_TLB` (GpuMmu).
    FlushTlb(rvgpu_ddi::memory::DXGK_BUILDPAGINGBUFFER_FLUSHTLB),
    /// `DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES` (GpuMmu).
    CopyPageTableEntries(rvgpu_ddi::memory::DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES),
    /// `DXGK_OPERATION_MAP_APERTURE_SEGMENT`.
    MapAperture(rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment),
    /// `DXGK_OPERATION_UNMAP_APERTURE_SEGMENT`.
    UnmapAperture(rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER_UnmapApertureSegment),
    /// Any other operation.
    Other,
}

/// Reads the arm `Operation` says is live.
pub(crate) fn paging_operation(args: &DXGKARG_BUILDPAGINGBUFFER) -> PagingOperation {
    match args.Operation {
        DXGK_OPERATION_FILL => {
            // SAFETY: `Operation` says the Fill arm is the valid one; it is plain data.
            PagingOperation::Fill(unsafe { args.Anonymous.Fill })
        }
        DXGK_OPERATION_TRANSFER => {
            // SAFETY: `Operation` says the Transfer arm is the valid one; it is plain data.
            PagingOperation::Transfer(unsafe { args.Anonymous.Transfer })
        }
        rvgpu_ddi::tdr::DXGK_OPERATION_UPDATE_PAGE_TABLE => {
            // SAFETY: `Operation` says the UpdatePageTable arm is the valid one; plain data.
            PagingOperation::UpdatePageTable(unsafe { args.Anonymous.UpdatePageTable })
        }
        rvgpu_ddi::tdr::DXGK_OPERATION_FLUSH_TLB => {
            // SAFETY: `Operation` says the FlushTlb arm is the valid one; plain data.
            PagingOperation::FlushTlb(unsafe { args.Anonymous.FlushTlb })
        }
        rvgpu_ddi::tdr::DXGK_OPERATION_COPY_PAGE_TABLE_ENTRIES => {
            // SAFETY: `Operation` says the CopyPageTableEntries arm is the valid one.
            PagingOperation::CopyPageTableEntries(unsafe { args.Anonymous.CopyPageTableEntries })
        }
        rvgpu_ddi::tdr::DXGK_OPERATION_MAP_APERTURE_SEGMENT => {
            // SAFETY: `Operation` says the MapApertureSegment arm is the valid one; plain data.
            PagingOperation::MapAperture(unsafe { args.Anonymous.MapApertureSegment })
        }
        rvgpu_ddi::tdr::DXGK_OPERATION_UNMAP_APERTURE_SEGMENT => {
            // SAFETY: `Operation` says the UnmapApertureSegment arm is the valid one; plain data.
            PagingOperation::UnmapAperture(unsafe { args.Anonymous.UnmapApertureSegment })
        }
        _ => PagingOperation::Other,
    }
}

/// One side of a transfer: a segment location or system memory described by an MDL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransferSide {
    /// `SegmentId` (non-zero) and `SegmentAddress`.
    Segment(u32, i64),
    /// `SegmentId` 0: `pMdl`.
    Mdl(rvgpu_ddi::PMDL),
}

/// Which arm of a transfer side's union is live: `SegmentId` 0 means `pMdl`, anything else
/// `SegmentAddress` (DXGKARG_BUILDPAGINGBUFFER page, `Transfer.Source.SegmentId`).
pub(crate) fn transfer_side(side: &DXGKARG_BUILDPAGINGBUFFER_Transfer_Source) -> TransferSide {
    if side.SegmentId == 0 {
        // SAFETY: with SegmentId 0 the union holds pMdl (the page); both arms are 8 bytes of
        // plain data, so the read is defined whatever VidMm wrote.
        return TransferSide::Mdl(unsafe { side.Anonymous.pMdl });
    }
    // SAFETY: with a non-zero SegmentId the union holds SegmentAddress (the page); both arms
    // are 8 bytes of plain data.
    let a = unsafe { side.Anonymous.SegmentAddress };
    TransferSide::Segment(side.SegmentId, quad(&a))
}
