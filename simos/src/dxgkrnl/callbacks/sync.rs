//! `DxgkCbSynchronizeExecution`: the argument checks 24H2 makes before it takes the interrupt
//! lock ([`super::interrupt`] runs the routine under it).

use rvgpu_ddi::basic::*;
use rvgpu_ddi::ntstatus::*;

use super::view::{Place, SyncView};

/// `DxgkCbSynchronizeExecution` as 24H2's `K:DpSynchronizeExecution` @0x140026180 checks it: a
/// NULL handle, routine or `ReturnValue` is `STATUS_INVALID_PARAMETER` before anything runs, and
/// `MessageNumber` is read only for a message-signalled interrupt (checked against its message
/// count there). This OS's interrupt is line-based, so the number is not looked at.
pub(super) fn synchronize_execution(
    handle: HANDLE,
    routine: Option<impl SyncView>,
    _message_number: ULONG,
    return_value: Option<impl Place<BOOLEAN>>,
    entry: usize,
) -> NTSTATUS {
    let (Some(routine), Some(return_value)) = (routine, return_value) else {
        return STATUS_INVALID_PARAMETER;
    };
    if handle.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    super::interrupt::synchronize_execution(handle, routine, return_value, entry)
}
