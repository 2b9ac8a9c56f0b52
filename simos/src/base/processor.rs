//! The calling thread as a simulated processor: the IRQL it runs at. The simulation sets it
//! for each call it makes into the driver (PASSIVE for ordinary DDIs on test threads, DISPATCH
//! in DPCs, DIRQL in the ISR and in `SynchronizeExecution` routines); the driver's own raises
//! and lowers go through the host kernel (`crate::adapter::kernel`).

use std::cell::Cell;

use rvgpu_kmd::platform::Irql;

use crate::base::bugcheck::BugCheck;

thread_local! {
    static IRQL: Cell<Irql> = const { Cell::new(Irql::Passive) };
}

/// The IRQL of the calling (simulated) processor.
pub fn current_irql() -> Irql {
    IRQL.with(Cell::get)
}

/// Checks that a routine the simulation called (entered at `expected`) returned at the same
/// IRQL. On a mismatch the thread is put back to `expected` (the simulation's own bookkeeping
/// must not inherit the driver's leak) and the 0xC8 Windows raises is returned.
pub fn check_return_irql(
    expected: Irql,
    unique: u64,
    p2: u64,
    p3: u64,
    p4: u64,
) -> Result<(), BugCheck> {
    let current = current_irql();
    if current == expected {
        return Ok(());
    }
    IRQL.with(|c| c.set(expected));
    Err(BugCheck::irql_unexpected(
        current, expected, unique, p2, p3, p4,
    ))
}

/// Sets the calling thread's IRQL for the lifetime of the guard (the simulation's own
/// transitions: entering the ISR, a DPC, a DDI).
#[derive(Debug)]
pub struct IrqlScope {
    previous: Irql,
}

impl IrqlScope {
    /// Switches the thread to `irql` until the guard drops.
    pub fn enter(irql: Irql) -> Self {
        let previous = IRQL.with(|c| c.replace(irql));
        Self { previous }
    }
}

impl Drop for IrqlScope {
    fn drop(&mut self) {
        IRQL.with(|c| c.set(self.previous));
    }
}

/// Sets the calling processor's IRQL (the PE image writing CR8).
pub fn set_irql(irql: Irql) {
    IRQL.with(|c| c.set(irql));
}
