//! No D3DKMT off Windows: nothing can be opened, so no handle of these kinds ever exists and
//! each call refuses the one it is given (after `capi` checked it is non-null).

use super::types::{
    Batch, RvgpuDeviceLossInfo, RvgpuDeviceStatus, RvgpuFenceLogEntry, RvgpuQueueDesc,
    RvgpuQueueStatus, RvgpuStatus,
};

const NONE: RvgpuStatus = RvgpuStatus::InvalidHandle;

pub fn open_adapter(_low: u32, _high: i32) -> Result<usize, RvgpuStatus> {
    Err(RvgpuStatus::NotImplemented)
}
pub fn close_adapter(_a: usize) -> RvgpuStatus {
    NONE
}
pub fn device_status(_a: usize) -> Result<RvgpuDeviceStatus, RvgpuStatus> {
    Err(NONE)
}
pub fn device_loss_info(_a: usize) -> Result<RvgpuDeviceLossInfo, RvgpuStatus> {
    Err(NONE)
}
pub fn create_queue(_a: usize, _d: &RvgpuQueueDesc) -> Result<usize, RvgpuStatus> {
    Err(NONE)
}
pub fn destroy_queue(_q: usize) -> RvgpuStatus {
    NONE
}
pub fn submit(_q: usize, _b: &Batch) -> Result<u64, RvgpuStatus> {
    Err(NONE)
}
pub fn submit_dwords(_q: usize, _c: crate::packets::Dwords<'_>) -> Result<u64, RvgpuStatus> {
    Err(NONE)
}
pub fn queue_wait(_q: usize, _value: u64, _timeout_ns: u64) -> RvgpuStatus {
    NONE
}
pub fn queue_status(_q: usize) -> Result<RvgpuQueueStatus, RvgpuStatus> {
    Err(NONE)
}
pub fn read_fence_log(_q: usize, _out: &mut [RvgpuFenceLogEntry]) -> Result<usize, RvgpuStatus> {
    Err(NONE)
}
pub fn fence_create(_a: usize, _initial: u64, _flags: u32) -> Result<usize, RvgpuStatus> {
    Err(NONE)
}
pub fn fence_open(_a: usize, _nt: usize) -> Result<usize, RvgpuStatus> {
    Err(NONE)
}
pub fn fence_share(_f: usize) -> Result<usize, RvgpuStatus> {
    Err(NONE)
}
pub fn fence_signal(_f: usize, _value: u64) -> RvgpuStatus {
    NONE
}
pub fn fence_value(_f: usize) -> Result<u64, RvgpuStatus> {
    Err(NONE)
}
pub fn fence_wait(_f: usize, _value: u64, _timeout_ns: u64) -> RvgpuStatus {
    NONE
}
pub fn fence_wait_async(_f: usize, _value: u64, _event: usize) -> RvgpuStatus {
    NONE
}
pub fn fence_destroy(_f: usize) -> RvgpuStatus {
    NONE
}
