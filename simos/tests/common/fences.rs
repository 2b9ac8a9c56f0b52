//! Native fences as the fence suites (`fence_logs`, `fence_grouping`) make and wait on them:
//! the UMD's view and the OS's instance of one fence, and a CPU wait as an event.

use super::okk;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, NativeFence, SimEvent};
use rvgpu_umd::fence::NativeFence as UmdFence;
use rvgpu_umd::kmt::Kmt;

/// A native fence of `k`'s process: its UMD view (with its D3DKMT handle) and the OS's
/// instance of it.
pub fn fence(m: &Machine, k: &SimKmt<'_>) -> (UmdFence, NativeFence) {
    let f = okk(m, k.create_native_fence(0));
    let os = m.native_fence_by_kmt(0, f.kmt).expect("registered");
    (f, os)
}

/// The event a CPU waiter of `f` reaching `v` waits on.
pub fn wait(m: &Machine, f: &NativeFence, v: u64) -> SimEvent {
    okk(m, m.wait_native_fence_event(f, v))
}
