//! What a DDI answered, as the OS takes it: the error its caller gets, the statuses Dxgkrnl's
//! wrappers log, and `DxgkDdiQueryAdapterInfo`'s common forms. Safe code over the callers of
//! [`super`].

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGK_QUERYADAPTERINFOFLAGS, DXGK_QUERYADAPTERINFOTYPE,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;

use super::{AdapterShared, At, Ddi, HandleRefFn};
use crate::adapter::irql::Routine;
use crate::base::error::SimError;

/// The adapter's copy of the driver's table.
pub(crate) fn table(a: &AdapterShared) -> Result<DRIVER_INITIALIZATION_DATA, SimError> {
    a.table.get().ok_or(SimError::NoDriver)
}

/// A slot the OS needs is empty (no halt: the caller reports it).
pub(crate) fn missing(name: &'static str) -> SimError {
    SimError::NoDdi(name)
}

/// A thunk whose DDI the driver does not implement: `STATUS_NOT_SUPPORTED` to the caller.
pub(crate) fn not_supported<T>() -> Result<T, SimError> {
    Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED))
}

/// Halts the machine with a simulation error (the driver broke a rule the OS relies on).
pub(crate) fn sim_err(a: &AdapterShared, msg: String) -> SimError {
    a.state.raise_sim_error(msg.clone());
    SimError::Violation(msg)
}

/// The DDI of `routine` answered with failure `status`: the error its caller gets, named by
/// the routine.
pub fn failed(routine: Routine, status: NTSTATUS) -> SimError {
    SimError::Ddi {
        ddi: routine.rules().name,
        status,
    }
}

/// Turns the status of `routine`'s DDI into a result: a failure goes back to the caller
/// ([`failed`]). For a DDI in no table (`DriverEntry`); [`check_status`] otherwise.
pub(crate) fn check_routine(routine: Routine, status: NTSTATUS) -> Result<(), SimError> {
    if NT_SUCCESS(status) {
        Ok(())
    } else {
        Err(failed(routine, status))
    }
}

/// Turns DDI `ddi`'s status into a result: a failure goes back to the caller ([`failed`]).
pub fn check_status<F: Copy>(ddi: Ddi<F>, status: NTSTATUS) -> Result<(), SimError> {
    check_routine(ddi.routine(), status)
}

/// DDI `ddi`, documented "must succeed", returned `status`: a failure is the driver's bug, a
/// simulation error.
pub(crate) fn must_succeed<F: Copy>(
    a: &AdapterShared,
    ddi: Ddi<F>,
    status: NTSTATUS,
) -> Result<(), SimError> {
    if NT_SUCCESS(status) {
        Ok(())
    } else {
        Err(sim_err(
            a,
            format!(
                "driver bug: {} must succeed and returned {:#010x}",
                ddi.routine().rules().name,
                status as u32
            ),
        ))
    }
}

/// The driver's `DxgkDdiQueryAdapterInfo`, as `slot!(a, DxgkDdiQueryAdapterInfo)` makes it.
pub(crate) type QueryAdapterInfo = HandleRefFn<DXGKARG_QUERYADAPTERINFO>;

/// `DxgkDdiQueryAdapterInfo` of type `ty` into `out` at `at`; returns the driver's status. The
/// caller pre-fills `out` (a 0xCD pattern) so a field the driver leaves unset stays visible.
pub(crate) fn query_adapter_info<T>(
    a: &AdapterShared,
    q: QueryAdapterInfo,
    ty: DXGK_QUERYADAPTERINFOTYPE,
    at: At,
    out: &mut T,
) -> Result<NTSTATUS, SimError> {
    let args = DXGKARG_QUERYADAPTERINFO {
        Type: ty,
        pInputData: std::ptr::null_mut(),
        InputDataSize: 0,
        pOutputData: (out as *mut T).cast(),
        OutputDataSize: std::mem::size_of::<T>() as u32,
        Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
        hKmdProcessHandle: std::ptr::null_mut(),
    };
    query_adapter_info_args(a, q, at, &args)
}

/// Records `status` of `routine` in the adapter's triage log when the wrapper's allow-list does
/// not have it (BR-23: Windows logs it and goes on).
pub fn triage_status(a: &AdapterShared, routine: Routine, status: NTSTATUS) {
    let rules = routine.rules();
    if rules.statuses.is_some_and(|s| !s.allowed.contains(&status)) {
        a.observer().triage(format!(
            "BR-23: {} returned an invalid NTSTATUS {:#010x}",
            rules.name, status as u32
        ));
    }
}

/// `DxgkDdiQueryAdapterInfo` with a caller-built argument block (input data, odd sizes).
pub(crate) fn query_adapter_info_args(
    a: &AdapterShared,
    q: QueryAdapterInfo,
    at: At,
    args: &DXGKARG_QUERYADAPTERINFO,
) -> Result<NTSTATUS, SimError> {
    let status = q.call(a, at, (a.context(), args))?;
    triage_status(a, q.routine(), status);
    Ok(status)
}
