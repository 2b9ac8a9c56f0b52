//! The NT vocabulary every thunk speaks: a `D3DKMT_HANDLE` and the NTSTATUS values the UMD
//! names. Below both the thunk trait (`kmt`) and the records it returns (`fence`).

/// A `D3DKMT_HANDLE`.
pub type KmtHandle = u32;

/// An NTSTATUS from a thunk that failed (negative values are errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NtStatus(pub i32);

/// `STATUS_NOT_SUPPORTED`: what the default bodies of the optional thunks return.
pub const STATUS_NOT_SUPPORTED: NtStatus = NtStatus(0xC000_00BB_u32 as i32);
/// `STATUS_INVALID_PARAMETER`.
pub const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);
/// `STATUS_NO_MEMORY`.
pub const STATUS_NO_MEMORY: NtStatus = NtStatus(0xC000_0017_u32 as i32);
/// `STATUS_INSUFFICIENT_RESOURCES`: among others, what the KMD's `SubmitCommandToHwQueue`
/// answers while the queue's kernel ring has no room.
pub const STATUS_INSUFFICIENT_RESOURCES: NtStatus = NtStatus(0xC000_009A_u32 as i32);
/// `STATUS_DEVICE_REMOVED`: the device is gone or in error (UM-10).
pub const STATUS_DEVICE_REMOVED: NtStatus = NtStatus(0xC000_02B6_u32 as i32);
/// `STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE`: the scheduler's answer to a kernel-mode
/// submission of a device in error (UM-10), where the other thunks say
/// [`STATUS_DEVICE_REMOVED`].
pub const STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE: NtStatus = NtStatus(0xC01E_0200_u32 as i32);
