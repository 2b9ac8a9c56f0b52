//! One DxgkDdiQueryAdapterInfo request as the answering logic (`caps`, `gpummu`, `power`)
//! sees it: its type and its input and output buffers, resolved once from Dxgkrnl's
//! pointers when the request is made ([`Request::from_os`], called by the DDI thunk). The
//! logic reads and writes through it and holds no OS pointer.
//!
//! Every refusal is `STATUS_INVALID_PARAMETER`: `BUFFER_TOO_SMALL` is outside the status
//! allow-list of Dxgkrnl's QueryAdapterInfo wrapper (docs/windows-bringup.md BR-23).

use core::mem::size_of;

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGK_QUERYADAPTERINFOTYPE, DXGK_QUERYPHYSICALADAPTERCAPSIN,
};
use rvgpu_ddi::memory::DXGK_QUERYSEGMENTOUT4;
use rvgpu_ddi::memory::{DXGK_QUERYPAGETABLELEVELDESCIN, DXGK_QUERYSEGMENTIN4};

use crate::status::{self, Status};

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
