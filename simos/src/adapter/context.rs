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
    // The current machine as a raw `Arc` pointer (null: none) that owns one strong count: a
    // plain pointer needs no destructor registration, which every DDI call's enter and leave
    // would otherwise check. The count moves between the cell and the guards' `previous`, so
    // every non-null pointer held by either keeps its machine alive, in whatever order guards
    // drop.
    static CURRENT: Cell<*const MachineState> = const { Cell::new(std::ptr::null()) };
}

/// Makes a machine the calling thread's current machine for the lifetime of the guard, so
/// kernel services and callbacks called without (or with a bad) adapter handle know whom to
/// bug-check.
#[derive(Debug)]
pub struct MachineContext {
    /// The machine current before (null: none), with the strong count the cell held for it.
    previous: *const MachineState,
}

impl MachineContext {
    /// Enters `state`'s context.
    #[inline]
    pub fn enter(state: Arc<MachineState>) -> Self {
        let previous = CURRENT.with(|c| c.replace(Arc::into_raw(state)));
        Self { previous }
    }
}

impl Drop for MachineContext {
    #[inline]
    fn drop(&mut self) {
        let left = CURRENT.with(|c| c.replace(self.previous));
        if !left.is_null() {
            // SAFETY: a non-null pointer in the cell came from `Arc::into_raw` and carries one
            // strong count, which the cell gave up by the replace above.
            drop(unsafe { Arc::from_raw(left) });
        }
    }
}

/// The calling thread's current machine.
pub fn current_machine() -> Option<Arc<MachineState>> {
    let m = CURRENT.with(Cell::get);
    if m.is_null() {
        return None;
    }
    // SAFETY: the cell's pointer came from `Arc::into_raw` and its strong count is held while
    // it is in the cell, so the machine is alive; the new count is the returned `Arc`'s.
    unsafe {
        Arc::increment_strong_count(m);
        Some(Arc::from_raw(m))
    }
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
    let m = CURRENT.with(Cell::get);
    // SAFETY: as in `current_machine`: the cell's strong count keeps the machine alive.
    !m.is_null() && unsafe { (*m).is_halted() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DDI-02 (whom a bug check halts): the guards pass the current machine's strong count
    /// between the thread's cell and themselves: nested contexts restore the outer machine,
    /// and leaving the last one gives every count back (none leaked, none freed twice).
    #[test]
    fn ddi_02_nested_machine_contexts_restore_the_outer_machine_and_release_their_counts() {
        let outer = Arc::new(MachineState::new());
        let inner = Arc::new(MachineState::new());
        assert!(current_machine().is_none());
        {
            let _o = MachineContext::enter(outer.clone());
            assert!(current_machine().is_some_and(|m| Arc::ptr_eq(&m, &outer)));
            {
                let _i = MachineContext::enter(inner.clone());
                assert!(current_machine().is_some_and(|m| Arc::ptr_eq(&m, &inner)));
                assert_eq!(Arc::strong_count(&inner), 2);
                assert!(!current_machine_halted());
                inner.raise_sim_error("halted inside");
                assert!(current_machine_halted());
            }
            assert!(current_machine().is_some_and(|m| Arc::ptr_eq(&m, &outer)));
            assert!(!current_machine_halted());
            assert_eq!(Arc::strong_count(&inner), 1);
        }
        assert!(current_machine().is_none());
        assert_eq!(Arc::strong_count(&outer), 1);
    }
}
