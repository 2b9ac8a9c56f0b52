//! A callback's entry, as every Dxgkrnl callback starts: the caller's IRQL checked against
//! the routine's rule ([`crate::adapter::irql`]) and `DeviceHandle` resolved through the
//! adapter registry. An unknown or removed adapter's handle is what Dxgkrnl would dereference
//! as garbage: bug check 0x50. Below the components, so that a component that implements a
//! callback (VidMm's contiguous memory) enters it the same way.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_ddi::basic::HANDLE;

use crate::adapter::context;
use crate::adapter::irql::{self, Routine};
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{self, BugCheck};
use crate::base::processor::current_irql;

/// Checks the IRQL of `routine` and resolves the handle. `None` means the machine halted (bug
/// check recorded) and the callback must return its failure value.
pub(crate) fn enter(
    routine: Routine,
    handle: HANDLE,
    address: usize,
) -> Option<Arc<AdapterShared>> {
    let adapter = AdapterShared::from_handle(handle);
    // A violation is recorded on the adapter's machine when the handle names one (a driver
    // thread need not be inside a simulated call), else on the thread's current machine.
    let raise = |b: BugCheck| match &adapter {
        Some(a) => a.state.raise_bugcheck(b),
        None => context::raise(b),
    };
    if let Err(b) = irql::check(routine, current_irql(), address) {
        raise(b);
        return None;
    }
    match adapter {
        // A removed adapter's handle is freed Dxgkrnl memory: the same page fault as a handle
        // that never existed, on the machine the adapter belonged to.
        Some(a) if !a.handle_valid.load(Ordering::Acquire) => {
            a.state.raise_bugcheck(BugCheck::new(
                bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
                [handle as usize as u64, 0, address as u64, 0],
            ));
            None
        }
        Some(a) if !a.state.is_halted() => Some(a),
        Some(_) => None,
        None => {
            context::raise(BugCheck::new(
                bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
                [handle as usize as u64, 0, address as u64, 0],
            ));
            None
        }
    }
}

/// The entry of a callback that returns an `NTSTATUS`: [`enter`] for `Routine::$routine` at the
/// callback's own address, returning `STATUS_UNSUCCESSFUL` from the callback when the machine
/// halted; with `$args`, then `STATUS_INVALID_PARAMETER` when that argument pointer is null.
/// Evaluates to the adapter.
macro_rules! enter_status {
    ($routine:ident, $handle:expr, $callback:ident) => {
        match $crate::adapter::callback::enter(
            $crate::adapter::irql::Routine::$routine,
            $handle,
            $callback as *const () as usize,
        ) {
            Some(a) => a,
            None => return ::rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL,
        }
    };
    ($routine:ident, $handle:expr, $callback:ident, $args:ident) => {{
        let a = $crate::adapter::callback::enter_status!($routine, $handle, $callback);
        if $args.is_null() {
            return ::rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
        }
        a
    }};
}
pub(crate) use enter_status;
