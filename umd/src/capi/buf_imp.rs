//! The C API's buffer calls dispatched to the types behind the handles: `WinKmt` and its
//! queues on Windows, the unit tests' mocks on the host, and nothing where there is no D3DKMT.

/// The buffer calls over the types behind the handles: `WinKmt` and its queues on Windows,
/// the mocks of the unit tests on the host.
#[cfg(any(windows, test))]
mod imp {
    use crate::capi::buffer as core_;

    #[cfg(windows)]
    type K = alloc::sync::Arc<crate::kmt_windows::WinKmt>;
    #[cfg(windows)]
    type Q = crate::capi::queue::CapiQueue<K>;
    #[cfg(all(test, not(windows)))]
    use crate::capi::mock::{MockKmt as K, MockQueue as Q};

    pub fn create_(a: usize, size: u64) -> Result<usize, crate::capi::RvgpuStatus> {
        core_::create::<K>(a, size)
    }
    pub fn destroy_(b: usize, queues: &[usize]) -> crate::capi::RvgpuStatus {
        core_::destroy::<K, Q>(b, queues)
    }
    pub fn gpu_va(b: usize) -> Result<u64, crate::capi::RvgpuStatus> {
        core_::gpu_va::<K>(b)
    }
    pub fn status(b: usize) -> Result<crate::capi::RvgpuBufferStatus, crate::capi::RvgpuStatus> {
        core_::status::<K>(b)
    }
    pub fn lock_(
        b: usize,
        flags: u32,
        queues: &[usize],
    ) -> Result<*mut core::ffi::c_void, crate::capi::RvgpuStatus> {
        core_::lock::<K, Q>(b, flags, queues)
    }
    pub fn unlock_(b: usize) -> crate::capi::RvgpuStatus {
        core_::unlock::<K>(b)
    }
    pub fn fill(
        q: usize,
        b: usize,
        offset: u64,
        bytes: u64,
        pattern: u64,
    ) -> Result<u64, crate::capi::RvgpuStatus> {
        core_::fill::<K, Q>(q, b, offset, bytes, pattern)
    }
    pub fn copy(
        q: usize,
        src: usize,
        src_offset: u64,
        dst: usize,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<u64, crate::capi::RvgpuStatus> {
        core_::copy::<K, Q>(q, src, src_offset, dst, dst_offset, bytes)
    }
}

/// No D3DKMT off Windows: no adapter, so no buffer either.
#[cfg(not(any(windows, test)))]
mod imp {
    use crate::capi::RvgpuStatus;
    use core::ffi::c_void;

    const NONE: RvgpuStatus = RvgpuStatus::InvalidHandle;

    pub fn create_(_a: usize, _size: u64) -> Result<usize, RvgpuStatus> {
        Err(NONE)
    }
    pub fn destroy_(_b: usize, _queues: &[usize]) -> RvgpuStatus {
        NONE
    }
    pub fn gpu_va(_b: usize) -> Result<u64, RvgpuStatus> {
        Err(NONE)
    }
    pub fn status(_b: usize) -> Result<crate::capi::RvgpuBufferStatus, RvgpuStatus> {
        Err(NONE)
    }
    pub fn lock_(_b: usize, _flags: u32, _queues: &[usize]) -> Result<*mut c_void, RvgpuStatus> {
        Err(NONE)
    }
    pub fn unlock_(_b: usize) -> RvgpuStatus {
        NONE
    }
    pub fn fill(
        _q: usize,
        _b: usize,
        _offset: u64,
        _bytes: u64,
        _pattern: u64,
    ) -> Result<u64, RvgpuStatus> {
        Err(NONE)
    }
    pub fn copy(
        _q: usize,
        _src: usize,
        _src_offset: u64,
        _dst: usize,
        _dst_offset: u64,
        _bytes: u64,
    ) -> Result<u64, RvgpuStatus> {
        Err(NONE)
    }
}

pub(super) use imp::*;
