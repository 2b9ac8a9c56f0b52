//! The calling thread's current machine: whom a kernel service or callback called without (or
//! with a bad) adapter handle bug-checks, and the faults of threads that have none.

use std::cell::Cell;
use std::sync::{Arc, Mutex};

use rvgpu_kmd::platform::Irql;

use crate::adapter::state::MachineState;
use crate::base::bugcheck::{self, kirql, BugCheck};
use crate::base::lock::lock;
use crate::base::processor::current_irql;

thread_local! {
    // A `Cell`, not a `RefCell`: every DDI call enters and leaves it, and a swap needs no
    // borrow flag.
    static CURRENT: Cell<Option<Arc<MachineState>>> = const { Cell::new(None) };
}

/// Makes a machine the calling thread's current machine for the lifetime of the guard, so
/// kernel services and callbacks called without (or with a bad) adapter handle know whom to
/// bug-check.
#[derive(Debug)]
pub struct MachineContext {
    previous: Option<Arc<MachineState>>,
}

impl MachineContext {
    /// Enters `state`'s context.
    pub fn enter(state: Arc<MachineState>) -> Self {
        let previous = CURRENT.with(|c| c.replace(Some(state)));
        Self { previous }
    }
}

impl Drop for MachineContext {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // The machine left is dropped outside the thread-local.
        drop(CURRENT.with(|c| c.replace(previous)));
    }
}

/// The calling thread's current machine.
pub fn current_machine() -> Option<Arc<MachineState>> {
    CURRENT.with(|c| {
        let m = c.take();
        let current = m.clone();
        c.set(m);
        current
    })
}

/// Faults raised on threads that had no current machine (a test calling driver code directly).
static ORPHAN_FAULTS: Mutex<Vec<BugCheck>> = Mutex::new(Vec::new());

/// Records a bug check on the current machine (or in the orphan list).
pub fn raise(b: BugCheck) {
    match current_machine() {
        Some(m) => m.raise_bugcheck(b),
        None => {
            eprintln!("rvgpu-simos: bug check outside any machine: {b}");
            lock(&ORPHAN_FAULTS).push(b);
        }
    }
}

/// Raises 0xA `IRQL_NOT_LESS_OR_EQUAL` when the caller's IRQL is above `max`, the documented
/// maximum of kernel routine `routine` (parameters: `routine`, the IRQL, 8 (execute), `routine`;
/// 0 for a routine with no address on the host). Returns whether it raised.
pub fn irql_above(max: Irql, routine: u64) -> bool {
    let current = current_irql();
    if current <= max {
        return false;
    }
    raise(BugCheck::new(
        bugcheck::IRQL_NOT_LESS_OR_EQUAL,
        [routine, kirql(current), 8, routine],
    ));
    true
}

/// Bug checks raised on threads without a current machine.
pub fn orphan_bugchecks() -> Vec<BugCheck> {
    lock(&ORPHAN_FAULTS).clone()
}

/// Whether the calling thread's current machine has halted.
pub fn current_machine_halted() -> bool {
    CURRENT.with(|c| {
        let m = c.take();
        let halted = m.as_ref().is_some_and(|m| m.is_halted());
        c.set(m);
        halted
    })
}
