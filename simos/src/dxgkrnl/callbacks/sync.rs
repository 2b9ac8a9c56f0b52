//! `DxgkCbSynchronizeExecution`: the argument checks 24H2 makes before it takes the interrupt
//! lock ([`super::interrupt`] runs the routine under it).

use rvgpu_ddi::basic::*;
use rvgpu_ddi::ntstatus::*;

/// `DxgkCbSynchronizeExecution` as 24H2's `K:DpSynchronizeExecution` @0x140026180 checks it: a
/// NULL handle, routine or `ReturnValue` is `STATUS_INVALID_PARAMETER` before anything runs, and
/// `MessageNumber` is read only for a message-signalled interrupt (checked against its message
/// count there). This OS's interrupt is line-based, so the number is not looked at.
pub(super) unsafe extern "system" fn synchronize_execution(
    handle: HANDLE,
    routine: PKSYNCHRONIZE_ROUTINE,
    context: PVOID,
    _message_number: ULONG,
    return_value: *mut BOOLEAN,
) -> NTSTATUS {
    if handle.is_null() || routine.is_none() || return_value.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: the caller's arguments, checked above; the line-based interrupt's number is 0.
    unsafe { super::interrupt::synchronize_execution(handle, routine, context, 0, return_value) }
}
