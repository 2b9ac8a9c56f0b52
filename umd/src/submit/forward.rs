//! [`Kmt`] for pointers to thunks (`&T`, `Arc<T>`), forwarding every call.

use crate::fence::NativeFence;
use crate::kmt::{Allocation, Doorbell, HwQueue, Kmt, KmtHandle, NtStatus};

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

            fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus> {
                (**self).create_context(node)
            }
            fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_context(context)
            }
            fn create_hw_queue(
                &self,
                context: KmtHandle,
                user_mode_submission: bool,
                private_data: &mut [u8],
            ) -> Result<HwQueue<Self::Fence>, NtStatus> {
                (**self).create_hw_queue(context, user_mode_submission, private_data)
            }
            fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_hw_queue(queue)
            }
            fn create_allocation_as(
                &self,
                size: u64,
                kind: crate::kmt::AllocationKind,
            ) -> Result<Allocation<Self::Mem>, NtStatus> {
                (**self).create_allocation_as(size, kind)
            }
            fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_allocation(allocation)
            }
            fn create_allocation_pdd(
                &self,
                pdd: &crate::kmt::AllocationPdd,
            ) -> Result<crate::kmt::MappedGpu, NtStatus> {
                (**self).create_allocation_pdd(pdd)
            }
            fn lock2(&self, allocation: KmtHandle) -> Result<Self::Mem, NtStatus> {
                (**self).lock2(allocation)
            }
            fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
                (**self).unlock2(allocation)
            }
            fn destroy_allocation2(
                &self,
                allocation: KmtHandle,
                flags: crate::kmt::DestroyFlags,
            ) -> Result<(), NtStatus> {
                (**self).destroy_allocation2(allocation, flags)
            }
            fn invalidate_cache(
                &self,
                allocation: KmtHandle,
                offset: u64,
                length: u64,
            ) -> Result<(), NtStatus> {
                (**self).invalidate_cache(allocation, offset, length)
            }
            fn io_coherent(&self) -> bool {
                (**self).io_coherent()
            }
            fn make_resident(
                &self,
                allocations: &[KmtHandle],
                flags: crate::kmt::MakeResidentFlags,
            ) -> Result<crate::kmt::PagingFence, crate::kmt::MakeResidentError> {
                (**self).make_resident(allocations, flags)
            }
            fn evict(
                &self,
                allocations: &[KmtHandle],
                flags: crate::kmt::EvictFlags,
            ) -> Result<u64, NtStatus> {
                (**self).evict(allocations, flags)
            }
            fn make_resident_on(
                &self,
                queue: &crate::kmt::PagingQueue<Self::Fence>,
                allocations: &[KmtHandle],
                flags: crate::kmt::MakeResidentFlags,
            ) -> Result<crate::kmt::PagingFence, crate::kmt::MakeResidentError> {
                (**self).make_resident_on(queue, allocations, flags)
            }
            fn create_paging_queue(
                &self,
                priority: i32,
            ) -> Result<crate::kmt::PagingQueue<Self::Fence>, NtStatus> {
                (**self).create_paging_queue(priority)
            }
            fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_paging_queue(queue)
            }
            fn reserve_gpu_va(&self, request: &crate::kmt::ReserveGpuVa) -> Result<u64, NtStatus> {
                (**self).reserve_gpu_va(request)
            }
            fn map_gpu_va(
                &self,
                request: &crate::kmt::MapGpuVa,
            ) -> Result<crate::kmt::MappedGpuVa, NtStatus> {
                (**self).map_gpu_va(request)
            }
            fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus> {
                (**self).free_gpu_va(base, size)
            }
            fn update_gpu_va(
                &self,
                update: &crate::kmt::UpdateGpuVa,
                ops: &[crate::kmt::UpdateGpuVaOp],
            ) -> Result<(), NtStatus> {
                (**self).update_gpu_va(update, ops)
            }
            fn create_doorbell(
                &self,
                queue: KmtHandle,
                ring: KmtHandle,
                ring_control: KmtHandle,
                private_data: &mut [u8],
            ) -> Result<Doorbell<Self::Doorbell>, NtStatus> {
                (**self).create_doorbell(queue, ring, ring_control, private_data)
            }
            fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
                (**self).connect_doorbell(doorbell)
            }
            fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_doorbell(doorbell)
            }
            fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
                (**self).notify_work_submission(doorbell)
            }
            fn submit_command_to_hw_queue(
                &self,
                queue: KmtHandle,
                progress_fence_value: u64,
                command_buffer_gpu: u64,
                command_bytes: u32,
            ) -> Result<(), NtStatus> {
                (**self).submit_command_to_hw_queue(
                    queue,
                    progress_fence_value,
                    command_buffer_gpu,
                    command_bytes,
                )
            }
            fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
                (**self).wait_for_fence(fence, value)
            }
            fn submit_command(
                &self,
                context: KmtHandle,
                command_buffer_gpu: u64,
                command_bytes: u32,
            ) -> Result<(), NtStatus> {
                (**self).submit_command(context, command_buffer_gpu, command_bytes)
            }
            fn submit_wait_to_hw_queue(
                &self,
                queue: KmtHandle,
                fences: &[(KmtHandle, u64)],
            ) -> Result<(), NtStatus> {
                (**self).submit_wait_to_hw_queue(queue, fences)
            }
            fn submit_signal_to_hw_queue(
                &self,
                queue: KmtHandle,
                fences: &[(KmtHandle, u64)],
            ) -> Result<(), NtStatus> {
                (**self).submit_signal_to_hw_queue(queue, fences)
            }
            fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
                (**self).create_native_fence(initial_value)
            }
            fn native_fence_cpu(&self, fence: &NativeFence) -> Result<Self::Fence, NtStatus> {
                (**self).native_fence_cpu(fence)
            }
            fn create_shareable_native_fence(
                &self,
                initial_value: u64,
            ) -> Result<NativeFence, NtStatus> {
                (**self).create_shareable_native_fence(initial_value)
            }
            fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus> {
                (**self).share_native_fence(fence)
            }
            fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus> {
                (**self).close_nt_handle(handle)
            }
            fn open_native_fence(&self, shared: u64) -> Result<NativeFence, NtStatus> {
                (**self).open_native_fence(shared)
            }
            fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_native_fence(fence)
            }
            fn signal_native_from_cpu(
                &self,
                fence: KmtHandle,
                value: u64,
            ) -> Result<(), NtStatus> {
                (**self).signal_native_from_cpu(fence, value)
            }
            fn cpu_timestamp(&self) -> u64 {
                (**self).cpu_timestamp()
            }
            fn cpu_timestamp_frequency(&self) -> u64 {
                (**self).cpu_timestamp_frequency()
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
