//! The [`UmdFences`] capability: the UMD's native fences, signalled and waited on by its queues.

use std::time::Duration;

use crate::backend::common::Failure;

use super::fences::WaitResult;
use super::user_mode::{ProcessRef, UmQueueRef, Work};

/// A native fence a process made through the UMD (`Kmt::create_native_fence`): its D3DKMT
/// handle is what the queue's LOG_WRITEs record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UmFenceRef(pub usize);

/// One item of a batch for [`UmdFences::submit_fence_ops`] (the UMD's `fencelog::Op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceWork {
    /// A packet.
    Work(Work),
    /// GPU signal of the fence to the value (conditional interrupt), logged in the signal log.
    Signal(UmFenceRef, u64),
    /// GPU wait until the fence reaches the value, logged in the wait log.
    Wait(UmFenceRef, u64),
}

/// Native fences made through the UMD (`Kmt::create_native_fence`) and batches that signal and
/// wait on them from a hardware queue. Windows: `D3DKMTCreateNativeFence` and the
/// same UMD core.
pub trait UmdFences {
    /// A native fence of process `p` made through the UMD, starting at `initial`.
    fn create_um_fence(&mut self, p: ProcessRef, initial: u64) -> Result<UmFenceRef, Failure>;

    /// Opens `f` (shared) in process `p`: that process's handle to the same fence.
    fn open_um_fence(&mut self, f: UmFenceRef, p: ProcessRef) -> Result<UmFenceRef, Failure>;

    /// Submits one batch of packets and native-fence operations to the queue (the UMD's
    /// `submit_ops`); returns the progress value that marks its completion.
    fn submit_fence_ops(&mut self, q: UmQueueRef, ops: &[FenceWork]) -> Result<u64, Failure>;

    /// A blocking CPU wait for `f` to reach `value`.
    fn wait_um_fence(
        &mut self,
        f: UmFenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure>;

    /// The fence's CurrentValue.
    fn um_fence_value(&self, f: UmFenceRef) -> Result<u64, Failure>;
}
