//! [`Kmt`] for pointers to thunks (`&T`, `Arc<T>`), forwarding every call.

use crate::fence::NativeFence;
use crate::kmt::{
    Allocation, AllocationKind, AllocationPdd, DestroyFlags, DeviceExecutionState, Doorbell,
    EvictFlags, HwQueue, Kmt, KmtHandle, MakeResidentError, MakeResidentFlags, MapGpuVa, MappedGpu,
    MappedGpuVa, NtStatus, PagingFence, PagingQueue, ReserveGpuVa, UpdateGpuVa, UpdateGpuVaOp,
};

/// Implements [`Kmt`] for a pointer to thunks by forwarding every call to the pointee. One list
/// for both pointer kinds, so a thunk added to the trait cannot be forwarded by one and silently
/// fall back to the trait's default in the other.
macro_rules! forward_kmt {
    ($(#[$doc:meta])* $ptr:ty) => {
        $(#[$doc])*
        impl<T: Kmt + ?Sized> Kmt for $ptr {
            type Mem = T::Mem;
            type Doorbell = T::Doorbell;
            type Fence = T::Fence;

            crate::forward_thunks! { self => (**self);
                fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus>;
                fn node_hw_scheduled(&self, node: u32) -> Result<bool, NtStatus>;
                fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus>;
                fn create_hw_queue(&self, context: KmtHandle, user_mode_submission: bool, private_data: &mut [u8]) -> Result<HwQueue<Self::Fence>, NtStatus>;
                fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
                fn create_allocation_as(&self, size: u64, kind: AllocationKind) -> Result<Allocation<Self::Mem>, NtStatus>;
                fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus>;
                fn create_allocation_pdd(&self, pdd: &AllocationPdd) -> Result<MappedGpu, NtStatus>;
                fn lock2(&self, allocation: KmtHandle) -> Result<Self::Mem, NtStatus>;
                fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus>;
                fn destroy_allocation2(&self, allocation: KmtHandle, flags: DestroyFlags) -> Result<(), NtStatus>;
                fn invalidate_cache(&self, allocation: KmtHandle, offset: u64, length: u64) -> Result<(), NtStatus>;
                fn io_coherent(&self) -> bool;
                fn make_resident(&self, allocations: &[KmtHandle], flags: MakeResidentFlags) -> Result<PagingFence, MakeResidentError>;
                fn evict(&self, allocations: &[KmtHandle], flags: EvictFlags) -> Result<u64, NtStatus>;
                fn make_resident_on(&self, queue: &PagingQueue<Self::Fence>, allocations: &[KmtHandle], flags: MakeResidentFlags) -> Result<PagingFence, MakeResidentError>;
                fn device_paging_queue(&self) -> Result<(KmtHandle, KmtHandle), NtStatus>;
                fn create_paging_queue(&self, priority: i32) -> Result<PagingQueue<Self::Fence>, NtStatus>;
                fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
                fn reserve_gpu_va(&self, request: &ReserveGpuVa) -> Result<u64, NtStatus>;
                fn map_gpu_va(&self, request: &MapGpuVa) -> Result<MappedGpuVa, NtStatus>;
                fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus>;
                fn update_gpu_va(&self, update: &UpdateGpuVa, ops: &[UpdateGpuVaOp]) -> Result<(), NtStatus>;
                fn create_doorbell(&self, queue: KmtHandle, ring: KmtHandle, ring_control: KmtHandle, private_data: &mut [u8]) -> Result<Doorbell<Self::Doorbell>, NtStatus>;
                fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
                fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
                fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
                fn submit_command_to_hw_queue(&self, queue: KmtHandle, progress_fence_value: u64, command_buffer_gpu: u64, command_bytes: u32) -> Result<(), NtStatus>;
                fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;
                fn submit_command(&self, context: KmtHandle, command_buffer_gpu: u64, command_bytes: u32) -> Result<(), NtStatus>;
                fn submit_wait_to_hw_queue(&self, queue: KmtHandle, fences: &[(KmtHandle, u64)]) -> Result<(), NtStatus>;
                fn submit_signal_to_hw_queue(&self, queue: KmtHandle, fences: &[(KmtHandle, u64)]) -> Result<(), NtStatus>;
                fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus>;
                fn native_fence_cpu(&self, fence: &NativeFence) -> Result<Self::Fence, NtStatus>;
                fn create_shareable_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus>;
                fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus>;
                fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus>;
                fn open_native_fence(&self, shared: u64) -> Result<NativeFence, NtStatus>;
                fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus>;
                fn device_execution_state(&self) -> Result<DeviceExecutionState, NtStatus>;
                fn signal_native_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;
                fn cpu_timestamp(&self) -> u64;
                fn cpu_timestamp_frequency(&self) -> u64;
            }
        }
    };
}

forward_kmt!(
    /// A thunk trait object by reference is a thunk trait object (the harness can share one).
    &T
);
forward_kmt!(
    /// Shared ownership of the thunks (the C API's queues keep their adapter's thunks alive).
    alloc::sync::Arc<T>
);
