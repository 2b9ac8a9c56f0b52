//! The calling thread's current machine: whom a kernel service or callback called without (or
//! with a bad) adapter handle bug-checks, and the faults of threads that have none.

use std::sync::Mutex;

use rvgpu_kmd::platform::Irql;

pub use crate::adapter::ddi::{current_machine, current_machine_halted, MachineContext};
use crate::base::bugcheck::{self, kirql, BugCheck};
use crate::base::lock::lock;
use crate::base::processor::current_irql;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::state::MachineState;
    use std::sync::Arc;

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
