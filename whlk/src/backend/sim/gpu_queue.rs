//! The GPU queues a case's native fences are signalled and waited on from.

use rvgpu_simos::testing::gpu::{GpuQueue, KernelGpuQueue};

/// A case's GPU queue: user-mode where the adapter offers user-mode submission, kernel-mode
/// otherwise.
pub(super) enum SimGpuQueue {
    User(GpuQueue),
    Kernel(KernelGpuQueue),
}
