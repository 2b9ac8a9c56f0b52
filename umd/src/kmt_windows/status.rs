//! A thunk's status as a `Result`.

use windows_sys::Win32::Foundation::NTSTATUS;

use crate::kmt::NtStatus;

pub(super) fn check(status: NTSTATUS) -> Result<(), NtStatus> {
    if status < 0 {
        Err(NtStatus(status))
    } else {
        Ok(())
    }
}
