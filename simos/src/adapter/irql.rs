//! The IRQL check: at which interrupt request level Windows calls each DDI, and at which
//! levels the driver may call each Dxgkrnl callback.
//!
//! Every DDI wrapper and every callback of the simulation checks its entry against the IRQL
//! column of the rule table ([`crate::adapter::rules`]), whose rows cite the Microsoft reference
//! page each rule comes from. A violation is a bug check ([`check`]):
//!
//! - *above* the highest allowed level: PASSIVE_LEVEL routines are pageable code, so running
//!   one at DISPATCH_LEVEL or above faults on its own code: [`IRQL_NOT_LESS_OR_EQUAL`] (0xA);
//! - *below* the lowest allowed level (say `DxgkCbNotifyInterrupt` outside the ISR):
//!   [`IRQL_NOT_GREATER_OR_EQUAL`] (0x9).
//!
//! [`IRQL_NOT_LESS_OR_EQUAL`]: crate::base::bugcheck::IRQL_NOT_LESS_OR_EQUAL
//! [`IRQL_NOT_GREATER_OR_EQUAL`]: crate::base::bugcheck::IRQL_NOT_GREATER_OR_EQUAL

use rvgpu_kmd::platform::Irql;

pub use crate::adapter::rules::{IrqlRule, Routine};
use crate::base::bugcheck::{self, kirql, BugCheck};

/// Checks that `routine` may run at `current`; `address` is the routine's code address (for the
/// 0xA parameters). Returns the bug check Windows would raise otherwise.
pub fn check(routine: Routine, current: Irql, address: usize) -> Result<(), BugCheck> {
    let rule = routine.rule();
    if current > rule.max {
        let addr = address as u64;
        return Err(BugCheck::new(
            bugcheck::IRQL_NOT_LESS_OR_EQUAL,
            [addr, kirql(current), 8, addr],
        ));
    }
    if current < rule.min {
        return Err(BugCheck::new(
            bugcheck::IRQL_NOT_GREATER_OR_EQUAL,
            [kirql(current), kirql(rule.min), routine.id(), 0],
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passive_ddi_at_dispatch_is_0xa() {
        let err = check(Routine::DxgkDdiQueryAdapterInfo, Irql::Dispatch, 0x1000);
        assert_eq!(
            err,
            Err(BugCheck::new(
                bugcheck::IRQL_NOT_LESS_OR_EQUAL,
                [0x1000, 2, 8, 0x1000]
            ))
        );
    }

    #[test]
    fn notify_interrupt_at_passive_is_0x9() {
        let err = check(Routine::DxgkCbNotifyInterrupt, Irql::Passive, 0);
        assert_eq!(
            err.map_err(|b| b.code),
            Err(bugcheck::IRQL_NOT_GREATER_OR_EQUAL)
        );
    }

    #[test]
    fn isr_at_device_is_fine() {
        assert_eq!(
            check(Routine::DxgkDdiInterruptRoutine, Irql::Device, 0),
            Ok(())
        );
        assert_eq!(check(Routine::DxgkCbQueueDpc, Irql::Device, 0), Ok(()));
    }
}
