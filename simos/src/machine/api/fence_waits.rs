//! The `Machine`'s read-only view of the CPU waits the OS keeps on native fences: what a test
//! of waiting processes waits for (their waits registered, MonitoredValue armed, the reached
//! ones released) rather than a stretch of host time without calls.

use crate::base::process_id::ProcessId;
use crate::machine::Machine;
use crate::sync::fence::{wait, FenceWaits};

impl Machine {
    /// The native fences `process` has open on adapter `i`, each with CurrentValue, the
    /// MonitoredValue the OS gave the driver and its pending CPU waits ([`FenceWaits`]).
    pub fn native_fence_waits(&self, i: usize, process: ProcessId) -> Vec<FenceWaits> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| wait::waits_of(a, process))
    }
}
