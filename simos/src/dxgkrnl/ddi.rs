//! The one way the simulated Dxgkrnl calls a DDI of the driver's table.
//!
//! [`call`] sets the IRQL the DDI runs at, marks the adapter whose DDI the thread is inside,
//! refuses on a halted machine, enforces the routine's IRQL rule on entry, calls, and checks the
//! IRQL on return (0xC8 on a mismatch; Windows' 0x113 for the DDIs behind Dxgkrnl's `Ddi*`
//! wrappers, [`Wrapper::IrqlChecked`] in the rule table, under
//! `OsConfig::ddi_irql_mismatch_is_0x113`). [`passive_with`] and [`call_arg`] are the two
//! common DDI shapes over it. The slot lookup stays with the caller (its message and the
//! point where a missing slot is noticed differ per DDI; [`required_slot!`] is the usual
//! one); the status helpers below map what the DDI returned.

use std::cell::Cell;
use std::sync::Arc;

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGK_QUERYADAPTERINFOFLAGS, DXGK_QUERYADAPTERINFOTYPE,
};
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;
use rvgpu_kmd::platform::Irql;

use crate::base::bugcheck;
use crate::base::error::SimError;
use crate::base::processor;
use crate::base::processor::{current_irql, IrqlScope};
use crate::dxgkrnl::adapter::AdapterShared;
use crate::dxgkrnl::context::MachineContext;
use crate::dxgkrnl::irql::{self, Routine};
use crate::dxgkrnl::rules::Wrapper;
use crate::dxgkrnl::state::MachineState;

/// The IRQL the OS calls a DDI at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The calling thread's level: PnP DDIs on the test thread, where a test may call at the
    /// wrong level on purpose to see the entry check fire.
    Caller,
    /// The level Windows calls this DDI at from this call site.
    Level(Irql),
}

thread_local! {
    /// The adapter whose DDI this thread is inside (resolves ambiguous callback handles).
    static IN_DDI: Cell<usize> = const { Cell::new(0) };
    /// The DDI this thread is inside, innermost (callbacks with rules about where they may be
    /// called from).
    static IN_ROUTINE: Cell<Option<Routine>> = const { Cell::new(None) };
}

/// The DDI the calling thread is inside, innermost (`None`: none).
pub(crate) fn current_routine() -> Option<Routine> {
    IN_ROUTINE.with(Cell::get)
}

struct InRoutine(Option<Routine>);

impl InRoutine {
    fn enter(r: Routine) -> Self {
        Self(IN_ROUTINE.with(|c| c.replace(Some(r))))
    }
}

impl Drop for InRoutine {
    fn drop(&mut self) {
        IN_ROUTINE.with(|c| c.set(self.0));
    }
}

/// The adapter whose DDI the calling thread is inside, as an address (0: none).
pub(crate) fn inside() -> usize {
    IN_DDI.with(Cell::get)
}

struct InDdi(usize);

impl InDdi {
    fn enter(a: &AdapterShared) -> Self {
        Self(IN_DDI.with(|c| c.replace(a as *const AdapterShared as usize)))
    }
}

impl Drop for InDdi {
    fn drop(&mut self) {
        IN_DDI.with(|c| c.set(self.0));
    }
}

/// Calls a DDI of adapter `a` at `at` (`address` is the DDI's code address, for the bug-check
/// parameters).
pub fn call<R>(
    a: &AdapterShared,
    routine: Routine,
    address: usize,
    at: At,
    f: impl FnOnce() -> R,
) -> Result<R, SimError> {
    let _irql = match at {
        At::Caller => None,
        At::Level(l) => Some(IrqlScope::enter(l)),
    };
    let outermost = inside() == 0;
    let _inside = InDdi::enter(a);
    let before = if outermost {
        a.device.bus_counts()
    } else {
        None
    };
    let fatal_0x113 =
        a.os.ddi_irql_mismatch_is_0x113 && routine.rules().wrapper == Wrapper::IrqlChecked;
    let r = call_driver_checked(&a.state, routine, address, fatal_0x113, f);
    if outermost {
        a.observer()
            .charge_bus(routine, before, a.device.bus_counts());
    }
    r
}

/// Calls a DDI of adapter `a` at PASSIVE_LEVEL: [`call`] with [`At::Level`]`(Irql::Passive)`.
pub fn passive<R>(
    a: &AdapterShared,
    routine: Routine,
    address: usize,
    f: impl FnOnce() -> R,
) -> Result<R, SimError> {
    call(a, routine, address, At::Level(Irql::Passive), f)
}

/// Calls `f(handle, arg)`, a DDI of the common `(HANDLE, A)` shape, at PASSIVE_LEVEL
/// ([`passive`]): the adapter's context or a driver object's handle, and the argument block.
///
/// # Safety
///
/// `f` is the driver's DDI for `routine`; `handle` is the handle it takes; `arg`, and every
/// buffer it names, is valid (and outlives the call) as that DDI requires.
pub unsafe fn passive_with<A, R>(
    a: &AdapterShared,
    routine: Routine,
    f: unsafe extern "system" fn(HANDLE, A) -> R,
    handle: HANDLE,
    arg: A,
) -> Result<R, SimError> {
    // SAFETY: the caller's contract.
    passive(a, routine, f as usize, || unsafe { f(handle, arg) })
}

/// Calls `f(arg)`, a DDI whose one parameter is its argument block (the handles are inside it),
/// at `at` ([`call`]).
///
/// # Safety
///
/// `f` is the driver's DDI for `routine`; `arg`, and every buffer it names, is valid (and
/// outlives the call) as that DDI requires.
pub unsafe fn call_arg<A, R>(
    a: &AdapterShared,
    routine: Routine,
    at: At,
    f: unsafe extern "system" fn(A) -> R,
    arg: A,
) -> Result<R, SimError> {
    // SAFETY: the caller's contract.
    call(a, routine, f as usize, at, || unsafe { f(arg) })
}

/// Calls a driver-wide DDI (no adapter: `DxgkDdiUnload`) at the caller's IRQL: refuses on a
/// halted machine, enforces the IRQL rule of `routine`, runs `f` in the machine's context and
/// reports a halt that happened during the call.
pub fn call_driver<R>(
    state: &Arc<MachineState>,
    routine: Routine,
    address: usize,
    f: impl FnOnce() -> R,
) -> Result<R, SimError> {
    call_driver_checked(state, routine, address, false, f)
}

/// [`call_driver`]; with `fatal_0x113` a return at another IRQL raises Windows' 0x113 / 0x10
/// (parameters: sub-code, the DDI's address in place of the adapter object, IRQL at the call,
/// IRQL at the return) instead of the simulation's 0xC8.
fn call_driver_checked<R>(
    state: &Arc<MachineState>,
    routine: Routine,
    address: usize,
    fatal_0x113: bool,
    f: impl FnOnce() -> R,
) -> Result<R, SimError> {
    if let Some(fault) = state.fault() {
        return Err(fault.into());
    }
    let _ctx = MachineContext::enter(state.clone());
    if let Err(b) = irql::check(routine, current_irql(), address) {
        state.raise_bugcheck(b);
        return Err(SimError::Bugcheck(b));
    }
    let entry = current_irql();
    let _routine = InRoutine::enter(routine);
    let r = f();
    let returned = current_irql();
    if let Err(b) = processor::check_return_irql(
        entry,
        bugcheck::irql_unexpected::SIM_DDI,
        address as u64,
        0,
        routine.id(),
    ) {
        state.raise_bugcheck(if fatal_0x113 {
            bugcheck::BugCheck::new(
                bugcheck::VIDEO_DXGKRNL_FATAL_ERROR,
                [
                    bugcheck::dxgkrnl_fatal::DDI_IRQL_MISMATCH,
                    address as u64,
                    bugcheck::kirql(entry),
                    bugcheck::kirql(returned),
                ],
            )
        } else {
            b
        });
    }
    match state.fault() {
        Some(fault) => Err(fault.into()),
        None => Ok(r),
    }
}

/// The adapter's copy of the driver's table.
pub(crate) fn table(a: &AdapterShared) -> Result<DRIVER_INITIALIZATION_DATA, SimError> {
    a.table
        .get()
        .ok_or_else(|| SimError::Simulation("no driver loaded".into()))
}

/// Slot `$slot` of adapter `$a`'s table, read in place: "no driver loaded" without a table,
/// [`missing`] when the slot is empty.
macro_rules! required_slot {
    ($a:expr, $slot:ident) => {
        $a.table
            .slot(|t| t.$slot)
            .ok_or_else(|| $crate::base::error::SimError::Simulation("no driver loaded".into()))
            .and_then(|f| f.ok_or_else(|| $crate::dxgkrnl::ddi::missing(stringify!($slot))))
    };
}
pub(crate) use required_slot;

/// A slot the OS needs is empty (no halt: the caller reports it).
pub(crate) fn missing(name: &str) -> SimError {
    SimError::Simulation(format!("the driver's table has no {name}"))
}

/// A thunk whose DDI the driver does not implement: `STATUS_NOT_SUPPORTED` to the caller.
pub(crate) fn not_supported<T>() -> Result<T, SimError> {
    Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED))
}

/// Halts the machine with a simulation error (the driver broke a rule the OS relies on).
pub(crate) fn sim_err(a: &AdapterShared, msg: String) -> SimError {
    a.state.raise_sim_error(msg.clone());
    SimError::Simulation(msg)
}

/// Turns a DDI status into a result: a failure goes back to the caller.
pub fn check_status(status: NTSTATUS) -> Result<(), SimError> {
    if NT_SUCCESS(status) {
        Ok(())
    } else {
        Err(SimError::DdiFailed(status))
    }
}

/// A DDI documented "must succeed" failed: the driver's bug, a simulation error.
pub(crate) fn must_succeed(
    a: &AdapterShared,
    name: &str,
    status: NTSTATUS,
) -> Result<(), SimError> {
    if NT_SUCCESS(status) {
        Ok(())
    } else {
        Err(sim_err(
            a,
            format!(
                "driver bug: {name} must succeed and returned {:#010x}",
                status as u32
            ),
        ))
    }
}

/// `DxgkDdiQueryAdapterInfo` of type `ty` into `out` at `at`; returns the driver's status. The
/// caller pre-fills `out` (a 0xCD pattern) so a field the driver leaves unset stays visible.
pub(crate) fn query_adapter_info<T>(
    a: &AdapterShared,
    q: unsafe extern "system" fn(HANDLE, *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS,
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

/// `DxgkDdiQueryAdapterInfo` with a caller-built argument block (input data, odd sizes).
pub(crate) fn query_adapter_info_args(
    a: &AdapterShared,
    q: unsafe extern "system" fn(HANDLE, *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS,
    at: At,
    args: &DXGKARG_QUERYADAPTERINFO,
) -> Result<NTSTATUS, SimError> {
    let ctx = a.context();
    let status = call(a, Routine::DxgkDdiQueryAdapterInfo, q as usize, at, || {
        // SAFETY: the driver's QueryAdapterInfo with its context and buffers the caller keeps
        // alive for the call.
        unsafe { q(ctx, args) }
    })?;
    crate::dxgkrnl::bringup::triage_status(a, Routine::DxgkDdiQueryAdapterInfo, status);
    Ok(status)
}
