//! GPU virtual addresses an application places itself (docs/memory.md "GPU VA thunks"):
//! `rvgpu_va_reserve` reserves a range of the device's GPU VA space
//! (`D3DKMTReserveGpuVirtualAddress`), `rvgpu_buffer_map_va` maps pages of a buffer's current
//! memory read-write at a VA inside it (`D3DKMTMapGpuVirtualAddress` on a paging queue made
//! for the call, waited for until the mapping is usable), `rvgpu_va_free` frees the range
//! (`D3DKMTFreeGpuVirtualAddress`: every page of it unmapped). Generic over the thunks `K`
//! (`Arc<WinKmt>` on Windows, the unit tests' mock on the host); `capi` checks the arguments
//! with [`check_reserve`], [`check_map`] and [`check_free`] before any handle is looked up.

use crate::capi::types::RvgpuStatus;

/// The page size of a mapping (`SizeInPages`, `OffsetInPages`).
pub(crate) const PAGE: u64 = 4096;
/// The alignment of a reservation the application places (`BaseAddress`).
pub(crate) const RESERVE_ALIGN: u64 = 0x1_0000;

/// A reservation: `size` a non-zero multiple of [`PAGE`]; `base` 0 (the OS chooses) or
/// [`RESERVE_ALIGN`]-aligned, with the range not wrapping.
pub(crate) fn check_reserve(base: u64, size: u64) -> Result<(), RvgpuStatus> {
    let ok = size != 0
        && size.is_multiple_of(PAGE)
        && base.is_multiple_of(RESERVE_ALIGN)
        && base.checked_add(size).is_some();
    ok.then_some(()).ok_or(RvgpuStatus::InvalidArgument)
}

/// A mapping: `va` non-zero and page-aligned, `pages` non-zero, neither the buffer's page
/// range nor the VA range wrapping.
pub(crate) fn check_map(va: u64, first_page: u64, pages: u64) -> Result<(), RvgpuStatus> {
    let ok = va != 0
        && va.is_multiple_of(PAGE)
        && pages != 0
        && first_page.checked_add(pages).is_some()
        && pages
            .checked_mul(PAGE)
            .and_then(|bytes| va.checked_add(bytes))
            .is_some();
    ok.then_some(()).ok_or(RvgpuStatus::InvalidArgument)
}

/// A free: `base` non-zero and [`RESERVE_ALIGN`]-aligned, `size` as for a reservation.
pub(crate) fn check_free(base: u64, size: u64) -> Result<(), RvgpuStatus> {
    if base == 0 {
        return Err(RvgpuStatus::InvalidArgument);
    }
    check_reserve(base, size)
}

#[cfg(any(windows, test))]
pub(crate) use imp::{free, map, reserve};

#[cfg(any(windows, test))]
mod imp {
    use crate::capi::buffer::{self, AdapterObj};
    use crate::capi::handles::{self as handles, Kind};
    use crate::capi::types::{status_from_nt, RvgpuStatus};
    use crate::kmt::{Kmt, MapGpuVa, ReserveGpuVa};

    use crate::capi::va::PAGE;

    fn adapter_kmt<K: Kmt + Clone + 'static>(a: usize) -> Result<K, RvgpuStatus> {
        Ok(handles::get::<AdapterObj<K>>(Kind::Adapter, a)?
            .lock()
            .kmt
            .clone())
    }

    /// Reserves `size` bytes at `base` (0: the OS chooses) of adapter `a`'s device; the VA.
    pub(crate) fn reserve<K: Kmt + Clone + 'static>(
        a: usize,
        base: u64,
        size: u64,
    ) -> Result<u64, RvgpuStatus> {
        let kmt = adapter_kmt::<K>(a)?;
        let r = ReserveGpuVa {
            base,
            size,
            ..ReserveGpuVa::default()
        };
        kmt.reserve_gpu_va(&r).map_err(status_from_nt)
    }

    /// Maps `pages` pages of buffer `b`'s current memory from page `first_page` read-write
    /// at `va`, and waits until the GPU may use the mapping. Pages past the buffer's are
    /// `InvalidArgument`.
    pub(crate) fn map<K: Kmt + Clone + 'static>(
        b: usize,
        va: u64,
        first_page: u64,
        pages: u64,
    ) -> Result<(), RvgpuStatus> {
        let (kmt, allocation, size) = buffer::backing::<K>(b)?;
        let end = first_page
            .checked_add(pages)
            .ok_or(RvgpuStatus::InvalidArgument)?;
        if end > size.div_ceil(PAGE) {
            return Err(RvgpuStatus::InvalidArgument);
        }
        let pq = kmt.create_paging_queue(0).map_err(status_from_nt)?;
        let r = MapGpuVa::read_write(pq.handle, va, allocation, first_page, pages);
        // The mapping may be used once the paging fence reaches its value; the queue goes
        // after that either way.
        let mapped = kmt
            .map_gpu_va(&r)
            .and_then(|m| kmt.wait_for_fence(pq.fence, m.paging_fence_value));
        let gone = kmt.destroy_paging_queue(pq.handle);
        mapped.and(gone).map_err(status_from_nt)
    }

    /// Frees the range of `size` bytes at `base` of adapter `a`'s device.
    pub(crate) fn free<K: Kmt + Clone + 'static>(
        a: usize,
        base: u64,
        size: u64,
    ) -> Result<(), RvgpuStatus> {
        adapter_kmt::<K>(a)?
            .free_gpu_va(base, size)
            .map_err(status_from_nt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DDI-03: what an attacker passes is refused before any handle is looked up: empty,
    /// unaligned and wrapping ranges, a NULL VA, no pages.
    #[test]
    fn ddi_03_va_arguments_are_checked() {
        assert_eq!(check_reserve(0, PAGE), Ok(()));
        assert_eq!(check_reserve(RESERVE_ALIGN, 16 * PAGE), Ok(()));
        for (base, size) in [
            (0, 0),
            (0, 100),
            (0x1000, PAGE),
            (!(RESERVE_ALIGN - 1), RESERVE_ALIGN),
        ] {
            assert_eq!(
                check_reserve(base, size),
                Err(RvgpuStatus::InvalidArgument),
                "reserve {base:#x} + {size:#x}"
            );
        }
        assert_eq!(check_map(RESERVE_ALIGN + PAGE, 1, 2), Ok(()));
        for (va, first, pages) in [
            (0, 0, 1),
            (0x1234, 0, 1),
            (PAGE, 0, 0),
            (PAGE, u64::MAX, 1),
            (PAGE, 0, u64::MAX / PAGE + 1),
            (!(PAGE - 1), 0, 2),
        ] {
            assert_eq!(
                check_map(va, first, pages),
                Err(RvgpuStatus::InvalidArgument),
                "map {va:#x} pages {first}+{pages}"
            );
        }
        assert_eq!(check_free(RESERVE_ALIGN, PAGE), Ok(()));
        assert_eq!(check_free(0, PAGE), Err(RvgpuStatus::InvalidArgument));
        assert_eq!(
            check_free(RESERVE_ALIGN + PAGE, PAGE),
            Err(RvgpuStatus::InvalidArgument)
        );
    }
}
