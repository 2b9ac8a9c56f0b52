//! The `NTSTATUS` values this module returns itself, and a thunk's status as a `Result`.

use windows_sys::Win32::Foundation::NTSTATUS;

use crate::kmt::NtStatus;

/// `NTSTATUS` values this module returns itself.
pub const STATUS_NOT_SUPPORTED: NTSTATUS = 0xC000_00BB_u32 as NTSTATUS;
/// The OS returned something unusable (a null or misaligned CPU address).
pub const STATUS_INVALID_PARAMETER: NTSTATUS = 0xC000_000D_u32 as NTSTATUS;
/// `STATUS_INVALID_HANDLE`.
pub(super) const STATUS_INVALID_HANDLE: NTSTATUS = 0xC000_0008_u32 as NTSTATUS;
/// An event could not be created.
pub const STATUS_INSUFFICIENT_RESOURCES: NTSTATUS = 0xC000_009A_u32 as NTSTATUS;

pub(super) fn check(status: NTSTATUS) -> Result<(), NtStatus> {
    if status < 0 {
        Err(NtStatus(status))
    } else {
        Ok(())
    }
}
