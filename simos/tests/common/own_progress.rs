//! A user-mode queue that completes on a native fence of its own whatever the reading: the
//! thunks of [`SimKmt`] with the progress fence taken out of a user-mode queue's
//! `D3DKMTCreateHwQueue` answer, as 24H2 gives it (`UmsProgress::None`).

use rvgpu_simos::kmt::{SimDoorbell, SimFence, SimKmt, SimMem};
use rvgpu_umd::fence::NativeFence;
use rvgpu_umd::kmt::{Allocation, AllocationKind, Doorbell, HwQueue, Kmt, KmtHandle, NtStatus};

/// Each `fn name(&self, args) -> R;` calls the same thunk of the wrapped [`SimKmt`];
/// `fn name(&self, args) -> R, then edit;` passes its answer through `edit` (which may read the
/// arguments).
macro_rules! forward {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty $(, then $edit:expr)?;)*) => {
        $(fn $name(&self $(, $arg: $ty)*) -> $ret {
            let answer = self.0.$name($($arg),*);
            $(let answer = $edit(answer);)?
            answer
        })*
    };
}

/// The edit of `D3DKMTCreateHwQueue`'s answer: a user-mode queue loses its progress fence.
fn without_user_progress(
    user_mode: bool,
) -> impl Fn(Result<HwQueue<SimFence>, NtStatus>) -> Result<HwQueue<SimFence>, NtStatus> {
    move |answer| {
        let mut q = answer?;
        if user_mode {
            q.progress = None;
        }
        Ok(q)
    }
}

/// [`SimKmt`], but a user-mode queue comes back without the OS's progress fence.
#[derive(Clone, Copy, Debug)]
pub struct NoUserProgress<'m>(pub SimKmt<'m>);

impl Kmt for NoUserProgress<'_> {
    type Mem = SimMem;
    type Doorbell = SimDoorbell;
    type Fence = SimFence;

    forward! {
        fn create_hw_queue(&self, context: KmtHandle, user_mode_submission: bool, private_data: &mut [u8]) -> Result<HwQueue<SimFence>, NtStatus>, then without_user_progress(user_mode_submission);
        fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus>;
        fn node_hw_scheduled(&self, node: u32) -> Result<bool, NtStatus>;
        fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus>;
        fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
        fn create_allocation_as(&self, size: u64, kind: AllocationKind) -> Result<Allocation<SimMem>, NtStatus>;
        fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus>;
        fn create_doorbell(&self, queue: KmtHandle, ring: KmtHandle, control: KmtHandle, pdd: &mut [u8]) -> Result<Doorbell<SimDoorbell>, NtStatus>;
        fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn submit_command_to_hw_queue(&self, queue: KmtHandle, value: u64, gpu: u64, bytes: u32) -> Result<(), NtStatus>;
        fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;
        fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus>;
        fn native_fence_cpu(&self, fence: &NativeFence) -> Result<SimFence, NtStatus>;
        fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus>;
    }
}
