//! Safe reads of Dxgkrnl's argument blocks: the unions, and the buffers of a
//! DxgkDdiQueryAdapterInfo request.
//!
//! Each union accessor says once which arm is live and why reading it is defined; the rest of
//! the driver takes plain values. Arrays and buffers the OS passes by pointer become slices and
//! views through one call's [`Call`], which the thunks make and the logic may take: it sits here,
//! below both, so that neither reaches up into the other.
//!
//! A QueryAdapterInfo request as the answering logic (`caps`, `gpummu`, `power`) sees it
//! ([`Request`]): its type and its input and output buffers, resolved once from Dxgkrnl's
//! pointers when the request is made ([`Request::from_os`], called by the DDI thunk). The
//! logic reads and writes through it and holds no OS pointer. Every refusal is
//! `STATUS_INVALID_PARAMETER`: `BUFFER_TOO_SMALL` is outside the status allow-list of
//! Dxgkrnl's QueryAdapterInfo wrapper (docs/windows-bringup.md BR-23).

use crate::mdl::MdlPages;
use crate::status::{self, Status};
use core::ffi::c_void;
use core::marker::PhantomData;
use core::mem::size_of;
use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGK_QUERYADAPTERINFOTYPE, DXGK_QUERYPHYSICALADAPTERCAPSIN,
};
use rvgpu_ddi::mdl::{MDL, MDL_PFN_ARRAY_OFFSET, PFN_NUMBER, PMDL};
use rvgpu_ddi::memory::DXGK_QUERYSEGMENTOUT4;
use rvgpu_ddi::memory::{DXGK_QUERYPAGETABLELEVELDESCIN, DXGK_QUERYSEGMENTIN4};
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

/// The range of a memory descriptor of a resource list (`CmResourceTypeMemory` or
/// `CmResourceTypeMemoryLarge`, which the caller checked).
pub(crate) fn memory_range(
    d: &rvgpu_ddi::CM_PARTIAL_RESOURCE_DESCRIPTOR,
) -> rvgpu_ddi::CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE {
    // SAFETY: for memory types the union holds a range (all variants share the Start/Length
    // layout); every arm is plain data.
    unsafe { d.u.Memory }
}

/// The page frame of a `DXGK_PTE`.
#[inline]
pub(crate) fn pte_frame(e: &rvgpu_ddi::memory::DXGK_PTE) -> u64 {
    // SAFETY: both arms of the address union are the same u64.
    unsafe { e.Anonymous2.PageAddress }
}

/// The table address of a page-table update whose `UpdateMode` is GPU_PHYSICAL (the caller
/// checked it).
#[inline]
pub(crate) fn gpu_physical_table(
    op: &rvgpu_ddi::memory::DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
) -> rvgpu_ddi::memory::D3DGPU_PHYSICAL_ADDRESS {
    // SAFETY: the table address arm is the one UpdateMode (GPU_PHYSICAL) names; every arm is
    // plain data, so the read is defined whatever the mode.
    unsafe { op.PageTableAddress.Anonymous.GpuPhysical }
}

/// The table address of a page-table update whose `UpdateMode` is CPU_VIRTUAL (the caller
/// checked it): the kernel CPU address of the table.
#[inline]
pub(crate) fn cpu_virtual_table(
    op: &rvgpu_ddi::memory::DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
) -> rvgpu_ddi::PVOID {
    // SAFETY: the table address arm is the one UpdateMode (CPU_VIRTUAL) names; every arm is
    // plain data, so the read is defined whatever the mode.
    unsafe { op.PageTableAddress.Anonymous.CpuVirtual }
}

/// The native progress fence handle of a DxgkDdiCreateHwQueue.
#[inline]
pub(crate) fn hw_queue_native_progress_fence(
    args: &rvgpu_ddi::submission::DXGKARG_CREATEHWQUEUE,
) -> HANDLE {
    // SAFETY: both members of the union are plain data over initialised bytes, and the
    // pointer-sized one covers all of them: any bit pattern is a valid value.
    unsafe { args.Anonymous.hHwQueueNativeProgressFence }
}

/// A report as the test hooks journal it ([`rvgpu_hw::testhooks::JournalKind`]): a node
/// ring's (`DmaCompleted`, `DmaPreempted`) or a fence's (native, legacy monitored); `None` for
/// any other report.
pub(crate) fn dma_report(
    d: &rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA,
) -> Option<rvgpu_hw::testhooks::JournalRecord> {
    use rvgpu_ddi::interrupt::{
        DXGK_INTERRUPT_DMA_COMPLETED, DXGK_INTERRUPT_DMA_PREEMPTED,
        DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED, DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED,
    };
    use rvgpu_hw::testhooks::JournalKind;
    let (kind, node, a, b) = match d.InterruptType {
        DXGK_INTERRUPT_DMA_COMPLETED => {
            // SAFETY: the arm the interrupt type names; plain data.
            let c = unsafe { d.Anonymous.DmaCompleted };
            (
                JournalKind::DmaCompleted,
                c.NodeOrdinal,
                c.SubmissionFenceId,
                0,
            )
        }
        DXGK_INTERRUPT_DMA_PREEMPTED => {
            // SAFETY: the arm the interrupt type names; plain data.
            let p = unsafe { d.Anonymous.DmaPreempted };
            let (id, last) = (p.PreemptionFenceId, p.LastCompletedFenceId);
            (JournalKind::DmaPreempted, p.NodeOrdinal, id, last)
        }
        DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED => {
            // SAFETY: the arm the interrupt type names; plain data.
            let n = unsafe { d.Anonymous.NativeFenceSignaled };
            let queue = u32::from(!n.hHWQueue.is_null());
            let (node, count) = (n.NodeOrdinal, n.SignaledNativeFenceCount);
            (JournalKind::NativeFenceSignaled, node, count, queue)
        }
        DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED => {
            // SAFETY: the arm the interrupt type names; plain data.
            let m = unsafe { d.Anonymous.MonitoredFenceSignaled };
            (JournalKind::MonitoredFenceSignaled, m.NodeOrdinal, 0, 0)
        }
        _ => return None,
    };
    Some(crate::testhooks::rec(kind, node, a.into(), b.into()))
}

/// The node index of an engine power component's mapping.
#[cfg(test)]
pub(crate) fn engine_node_index(c: &rvgpu_ddi::power::DXGK_POWER_RUNTIME_COMPONENT) -> u32 {
    // SAFETY: the one-UINT union: every arm is the same plain word.
    unsafe { c.ComponentMapping.Anonymous.EngineDesc.NodeIndex }
}

/// The arms of an interrupt report the tests read back, as the OS reads them: the one its
/// `InterruptType` names.
#[cfg(test)]
pub(crate) mod notify {
    use rvgpu_ddi::interrupt::*;

    /// `DmaCompleted`.
    pub(crate) fn dma_completed(
        d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA,
    ) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaCompleted {
        assert_eq!(d.InterruptType, DXGK_INTERRUPT_DMA_COMPLETED);
        // SAFETY: the arm the interrupt type names; plain data.
        unsafe { d.Anonymous.DmaCompleted }
    }

    /// `DmaPageFaulted`.
    pub(crate) fn dma_page_faulted(
        d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA,
    ) -> rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted {
        assert_eq!(
            d.InterruptType,
            rvgpu_ddi::interrupt::DXGK_INTERRUPT_DMA_PAGE_FAULTED
        );
        // SAFETY: the arm the interrupt type names; plain data.
        unsafe { d.Anonymous.DmaPageFaulted }
    }

    /// `HwQueuePageFaulted`.
    pub(crate) fn hw_queue_page_faulted(
        d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA,
    ) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted {
        assert_eq!(d.InterruptType, DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED);
        // SAFETY: the arm the interrupt type names; plain data.
        unsafe { d.Anonymous.HwQueuePageFaulted }
    }
}

// ---------------------------------------------------------------------------------------------
// DxgkDdiQueryAdapterInfo requests
// ---------------------------------------------------------------------------------------------

/// A request's input block type: plain `#[repr(C)]` data for which every bit pattern is a
/// value, so reading one from the OS's bytes is defined.
///
/// # Safety
/// Implement only for such types.
pub(crate) unsafe trait Plain: Copy {}

// SAFETY: a plain integer.
unsafe impl Plain for u32 {}
// SAFETY: `#[repr(C)]` unsigned integers only.
unsafe impl Plain for DXGK_QUERYPHYSICALADAPTERCAPSIN {}
// SAFETY: as above.
unsafe impl Plain for DXGK_QUERYSEGMENTIN4 {}
// SAFETY: as above.
unsafe impl Plain for DXGK_QUERYPAGETABLELEVELDESCIN {}
// SAFETY: integers and a raw pointer (any bit pattern is a raw pointer; it is only
// dereferenced by [`Request::segment_array`], under the OS's contract).
unsafe impl Plain for DXGK_QUERYSEGMENTOUT4 {}

/// One QueryAdapterInfo request.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// `DXGKARG_QUERYADAPTERINFO::Type`.
    pub ty: DXGK_QUERYADAPTERINFOTYPE,
    /// The input block; `None` when the OS passed none (a null pointer).
    input: Option<&'a [u8]>,
    /// The output block; `None` for a null pointer.
    output: Option<&'a mut [u8]>,
}

impl<'a> Request<'a> {
    /// The request `args` describes.
    ///
    /// # Safety
    /// `args` obeys Dxgkrnl's pointer contract for the call (`crate::thunk::contract`): its input and
    /// output buffers are null or hold `InputDataSize`/`OutputDataSize` bytes, readable and
    /// writable respectively, the driver's alone for `'a`; and when `Type` is
    /// `DXGKQAITYPE_QUERYSEGMENT4`, the descriptor array the output block names holds
    /// `NbSegment` × `SegmentDescriptorStride` writable bytes (Microsoft's
    /// `DXGK_QUERYSEGMENTOUT4` page).
    pub(crate) unsafe fn from_os(args: &DXGKARG_QUERYADAPTERINFO) -> Self {
        let bytes = |p: *mut core::ffi::c_void, n: u32| {
            let n = usize::try_from(n).ok()?;
            // SAFETY: non-null and `n` bytes under the function's contract.
            (!p.is_null()).then(|| unsafe { core::slice::from_raw_parts_mut(p.cast::<u8>(), n) })
        };
        Self {
            ty: args.Type,
            input: bytes(args.pInputData, args.InputDataSize).map(|b| &*b),
            output: bytes(args.pOutputData, args.OutputDataSize),
        }
    }

    /// The request `args` describes, for the tests, whose blocks point at live buffers of the
    /// sizes they state, used by nothing else while the request lives.
    #[cfg(test)]
    pub(crate) fn from_test(args: &'a DXGKARG_QUERYADAPTERINFO) -> Self {
        // SAFETY: the tests' blocks obey the contract of `from_os` (above).
        unsafe { Self::from_os(args) }
    }

    /// Whether the OS passed an input block at all.
    pub(crate) fn has_input(&self) -> bool {
        self.input.is_some()
    }

    /// The input block as a `T` (refused when absent or shorter).
    pub(crate) fn input<T: Plain>(&self) -> Result<T, Status> {
        let b = self.input.ok_or(status::INVALID_PARAMETER)?;
        if b.len() < size_of::<T>() {
            return Err(status::INVALID_PARAMETER);
        }
        // SAFETY: `b` holds a `T` (checked); `T: Plain`, so any bytes are a value; read
        // unaligned, as the OS promises no alignment.
        Ok(unsafe { b.as_ptr().cast::<T>().read_unaligned() })
    }

    /// What the output block holds now, as a `T` (an in/out block, QUERYSEGMENT4's).
    pub(crate) fn output_now<T: Plain>(&self) -> Result<T, Status> {
        let b = self.output.as_deref().ok_or(status::INVALID_PARAMETER)?;
        if b.len() < size_of::<T>() {
            return Err(status::INVALID_PARAMETER);
        }
        // SAFETY: as in [`Self::input`].
        Ok(unsafe { b.as_ptr().cast::<T>().read_unaligned() })
    }

    /// Writes `value` to the output block, which must hold a whole `T`.
    pub(crate) fn write<T: Copy>(&mut self, value: &T) -> Result<(), Status> {
        let b = self
            .output
            .as_deref_mut()
            .ok_or(status::INVALID_PARAMETER)?;
        write_bytes(b, value, size_of::<T>())
    }

    /// Writes the prefix of `value` of the largest of `sizes` (ascending layout sizes of the
    /// interface versions) that fits the output block, as an OS of that interface version reads
    /// exactly that many bytes; a block smaller than the first size is refused.
    pub(crate) fn write_prefix<T: Copy>(
        &mut self,
        value: &T,
        sizes: &[usize],
    ) -> Result<(), Status> {
        let b = self
            .output
            .as_deref_mut()
            .ok_or(status::INVALID_PARAMETER)?;
        let len = sizes
            .iter()
            .rev()
            .copied()
            .find(|n| *n <= b.len() && *n <= size_of::<T>())
            .ok_or(status::INVALID_PARAMETER)?;
        write_bytes(b, value, len)
    }

    /// The descriptor array of a `DXGKQAITYPE_QUERYSEGMENT4` filling call, as the output block
    /// names it now (`NbSegment` elements of `SegmentDescriptorStride` bytes); refused when null
    /// or of no size.
    pub(crate) fn segment_array(&mut self) -> Result<&mut [u8], Status> {
        let out: DXGK_QUERYSEGMENTOUT4 = self.output_now()?;
        let len = usize::try_from(out.NbSegment)
            .ok()
            .and_then(|n| n.checked_mul(out.SegmentDescriptorStride))
            .filter(|len| *len != 0 && !out.pSegmentDescriptor.is_null())
            .ok_or(status::INVALID_PARAMETER)?;
        // SAFETY: the array holds `NbSegment` × `SegmentDescriptorStride` writable bytes, the
        // driver's for the call (the contract of [`Self::from_os`]); borrowed through `self`,
        // so no second view of it exists.
        Ok(unsafe { core::slice::from_raw_parts_mut(out.pSegmentDescriptor, len) })
    }
}

/// Copies the first `len` bytes of `value` (at most its size) to the start of `dst`, which must
/// hold them.
pub(crate) fn write_bytes<T: Copy>(dst: &mut [u8], value: &T, len: usize) -> Result<(), Status> {
    if len > size_of::<T>() || dst.len() < len {
        return Err(status::INVALID_PARAMETER);
    }
    // SAFETY: `value` is a live `T` of at least `len` bytes and `dst` holds `len` writable
    // bytes (both checked); the regions do not overlap (`dst` is borrowed mutably); byte copies
    // need no alignment.
    unsafe {
        core::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), dst.as_mut_ptr(), len)
    };
    Ok(())
}

/// One DDI call's pointers under Dxgkrnl's contract (`crate::thunk::contract`), for the call's duration `'a`.
#[derive(Clone, Copy)]
pub(crate) struct Call<'a>(PhantomData<&'a ()>);

impl<'a> Call<'a> {
    /// The contract of the call the caller is in.
    ///
    /// # Safety
    /// The caller is a DDI thunk, `'a` ends before its call returns, and every pointer it
    /// passes to the methods is one Dxgkrnl passed to this call or one that the call's argument
    /// blocks name, resolved at most once while a `&mut` made from it lives.
    pub(crate) unsafe fn new() -> Self {
        Self(PhantomData)
    }

    /// A call for the unit tests, whose pointers are to their own live memory of the sizes
    /// they state.
    #[cfg(test)]
    pub(crate) fn for_test() -> Call<'static> {
        Call(PhantomData)
    }

    /// A read-only argument block, or `None` for null.
    pub(crate) fn args<T>(self, args: *const T) -> Option<&'a T> {
        // SAFETY: null, or valid and aligned for the call (`Call::new`).
        unsafe { args.as_ref() }
    }

    /// A writable argument block or out pointer, or `None` for null.
    pub(crate) fn args_mut<T>(self, args: *mut T) -> Option<&'a mut T> {
        // SAFETY: null, or valid, aligned and the driver's alone for the call (`Call::new`).
        unsafe { args.as_mut() }
    }

    /// An OS-provided buffer of `len` bytes (a DDI's in/out private driver data, an output
    /// buffer) as a slice: `Some(&mut [])` when `len` is 0, `None` when the pointer is null
    /// with a non-zero length.
    pub(crate) fn buffer(self, p: *mut c_void, len: impl TryInto<usize>) -> Option<&'a mut [u8]> {
        let len: usize = len.try_into().ok()?;
        if len == 0 {
            return Some(&mut []);
        }
        if p.is_null() {
            return None;
        }
        // SAFETY: non-null, so `len` bytes the driver's alone for the call (`Call::new`).
        Some(unsafe { core::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
    }

    /// A private-data buffer of the call as read-only bytes (`None`: null or empty).
    pub(crate) fn read_only(self, p: *mut c_void, len: u32) -> Option<&'a [u8]> {
        if len == 0 {
            return None;
        }
        self.buffer(p, len).map(|b| &*b)
    }

    /// A read-only OS array of `n` `T`s as a slice (`None` for a null array, more than `max`
    /// elements, or none).
    #[inline]
    pub(crate) fn slice<T>(self, p: *const T, n: u32, max: u32) -> Option<&'a [T]> {
        if p.is_null() || n == 0 || n > max {
            return None;
        }
        let n = usize::try_from(n).ok()?;
        // SAFETY: non-null, so `n` readable elements for the call (`Call::new`).
        Some(unsafe { core::slice::from_raw_parts(p, n) })
    }

    /// Reads the MDL at `mdl`, which the OS built for this call (its header and the `Size`
    /// bytes it declares, header included, readable and unchanged during the call; nothing
    /// else about its contents is assumed).
    pub(crate) fn mdl_pages(self, mdl: PMDL) -> Result<MdlPages<'a>, Status> {
        if mdl.is_null() || !(mdl as usize).is_multiple_of(core::mem::align_of::<MDL>()) {
            return Err(status::INVALID_PARAMETER);
        }
        // SAFETY: non-null and aligned (checked); the header is readable (`Call::new`). MDL
        // is plain data, every bit pattern valid.
        let header = unsafe { core::ptr::read(mdl) };
        // `Size` is the byte length of header + array (wdm.h); read as unsigned so a value
        // with the top bit set is a large size that the span check still bounds.
        let size = usize::from(u16::from_ne_bytes(header.Size.to_ne_bytes()));
        let entries = size
            .checked_sub(MDL_PFN_ARRAY_OFFSET)
            .and_then(|b| b.checked_div(core::mem::size_of::<PFN_NUMBER>()))
            .ok_or(status::INVALID_PARAMETER)?;
        // `MmGetMdlPfnArray` is the address just past the header (inside or one past the
        // `Size` bytes, which include the header); the array is 8-aligned because the header
        // is 8-aligned and 48 bytes long.
        let array = mdl
            .cast::<u8>()
            .wrapping_add(MDL_PFN_ARRAY_OFFSET)
            .cast::<PFN_NUMBER>();
        // SAFETY: `entries` whole, aligned PFN_NUMBERs at `array` fit in the `Size` bytes
        // readable for the call, unchanged during it.
        let pfns = unsafe { core::slice::from_raw_parts(array, entries) };
        MdlPages::new(pfns, header.ByteOffset, header.ByteCount)
    }

    /// The OS's writable buffer of `words` 64-bit words at `p` (a DMA buffer handed in for
    /// the driver to fill during the call), or `None` for null or unaligned.
    pub(crate) fn words_mut(self, p: *mut c_void, words: usize) -> Option<&'a mut [u64]> {
        if p.is_null() || !(p as usize).is_multiple_of(8) {
            return None;
        }
        // SAFETY: non-null and 8-aligned (checked); `words` words the driver's alone for the
        // call (`Call::new`: the caller passes no more than the OS handed in).
        Some(unsafe { core::slice::from_raw_parts_mut(p.cast::<u64>(), words) })
    }

    /// Element `i` of the OS's array of `n` `T`s at `p`, read unaligned (plain data): `None`
    /// for null or `i` not below `n`.
    #[inline]
    pub(crate) fn element<T: Copy>(self, p: *const T, i: usize, n: usize) -> Option<T> {
        if p.is_null() || i >= n {
            return None;
        }
        // SAFETY: `i < n`, so the element is inside the array the call's block names
        // (`Call::new`), readable for the call; unaligned read of plain data.
        Some(unsafe { p.wrapping_add(i).read_unaligned() })
    }

    /// The page table at the kernel CPU address a CPU_VIRTUAL page-table update names
    /// (`DXGK_PAGETABLEUPDATEADDRESS.CpuVirtual`: VidMm's mapping of the whole table, writable
    /// for the call), as its `entries` 64-bit words: `None` for null or not 8-byte aligned.
    /// Atomic words: the GPU may walk the table meanwhile.
    pub(crate) fn cpu_table(
        self,
        p: *mut c_void,
        entries: usize,
    ) -> Option<&'a [core::sync::atomic::AtomicU64]> {
        if p.is_null() || !(p as usize).is_multiple_of(8) {
            return None;
        }
        // SAFETY: non-null and aligned (checked); the table's `entries` words are writable for
        // the call (`Call::new`) and accessed only atomically.
        Some(unsafe { core::slice::from_raw_parts(p.cast_const().cast(), entries) })
    }

    /// A DxgkDdiQueryAdapterInfo request with its buffers resolved.
    pub(crate) fn qai_request(self, args: &'a DXGKARG_QUERYADAPTERINFO) -> Request<'a> {
        // SAFETY: the buffers the block names are the call's (`Call::new`), as
        // `Request::from_os` asks.
        unsafe { Request::from_os(args) }
    }

    /// A structure at the start of a buffer of `len` bytes, if the buffer is non-null, holds
    /// it whole and is aligned for it.
    pub(crate) fn object<T>(self, p: *const c_void, len: impl TryInto<usize>) -> Option<&'a T> {
        let whole = len.try_into().is_ok_and(|n| n >= size_of::<T>());
        if !whole || !p.cast::<T>().is_aligned() {
            return None;
        }
        self.args(p.cast::<T>())
    }

    /// Reads a value the OS passes by pointer, whose alignment is not promised (`None`: null).
    pub(crate) fn read<T: Copy>(self, p: *const T) -> Option<T> {
        // SAFETY: checked non-null, so readable for the call (`Call::new`); unaligned read.
        (!p.is_null()).then(|| unsafe { p.read_unaligned() })
    }

    /// Writes `v` to a buffer of `len` bytes at `p`, whose alignment is not promised (an out
    /// pointer: `len` is its type's size; an interface block: the size the OS gave). `false`,
    /// writing nothing, for a null pointer or a buffer smaller than `T`.
    pub(crate) fn write<T>(self, p: *mut c_void, len: usize, v: T) -> bool {
        if p.is_null() || len < size_of::<T>() {
            return false;
        }
        // SAFETY: non-null, so `len` >= size_of::<T>() writable bytes for the call
        // (`Call::new`); unaligned write.
        unsafe { p.cast::<T>().write_unaligned(v) };
        true
    }

    /// Writes `v` through an out pointer of its own type (`false` for null).
    pub(crate) fn put<T>(self, p: *mut T, v: T) -> bool {
        self.write(p.cast(), size_of::<T>(), v)
    }
}
