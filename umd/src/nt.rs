//! The NT vocabulary every thunk speaks: a `D3DKMT_HANDLE` and the NTSTATUS values the UMD
//! names. Below both the thunk trait (`kmt`) and the records it returns (`fence`).

use rvgpu_ddi::ntstatus;

/// A `D3DKMT_HANDLE`.
pub type KmtHandle = u32;

/// An NTSTATUS from a thunk that failed (negative values are errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NtStatus(pub i32);

/// `STATUS_NOT_SUPPORTED`: what the default bodies of the optional thunks return.
pub const STATUS_NOT_SUPPORTED: NtStatus = NtStatus(ntstatus::STATUS_NOT_SUPPORTED);
/// `STATUS_INVALID_PARAMETER`.
pub const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(ntstatus::STATUS_INVALID_PARAMETER);
/// `STATUS_NO_MEMORY`.
pub const STATUS_NO_MEMORY: NtStatus = NtStatus(ntstatus::STATUS_NO_MEMORY);
/// `STATUS_INSUFFICIENT_RESOURCES`: among others, what the KMD's `SubmitCommandToHwQueue`
/// answers while the queue's kernel ring has no room.
pub const STATUS_INSUFFICIENT_RESOURCES: NtStatus =
    NtStatus(ntstatus::STATUS_INSUFFICIENT_RESOURCES);
/// `STATUS_DEVICE_REMOVED`: the device is gone or in error (UM-10).
pub const STATUS_DEVICE_REMOVED: NtStatus = NtStatus(ntstatus::STATUS_DEVICE_REMOVED);
/// `STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE`: the scheduler's answer to a kernel-mode
/// submission of a device in error (UM-10), where the other thunks say
/// [`STATUS_DEVICE_REMOVED`].
pub const STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE: NtStatus =
    NtStatus(ntstatus::STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE);
