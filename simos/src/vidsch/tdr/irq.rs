//! What the TDR needs of Dxgkrnl's interrupt path, which sits above VidSch: in step mode the
//! recovery runs the ISR and the queued DPCs inline where, on a threaded machine, the interrupt
//! and DPC threads would run them between its steps. The caller hands in the path
//! (`crate::dxgkrnl::interrupt::InterruptPath`), so VidSch never imports it.

use crate::adapter::AdapterShared;

/// The adapter's interrupt and DPC servicing, as the TDR calls it.
pub(crate) trait Interrupts {
    /// Runs the ISR once, unforced; whether it ran (the line was up).
    fn service_interrupt(&self, a: &AdapterShared) -> bool;
    /// Runs the adapter's queued DPC; whether one ran.
    fn service_dpc(&self, a: &AdapterShared) -> bool;
}
