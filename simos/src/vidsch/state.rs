//! VidSch's per-adapter state: its system objects, its hardware-scheduling state and the wake
//! of its PASSIVE worker. Held by the adapter
//! ([`crate::dxgkrnl::adapter::AdapterShared::sch`]); the operations live in the sibling
//! modules.

use std::sync::{Arc, Mutex};

use crate::base::line::Wake;

/// VidSch's state for one adapter.
#[derive(Debug, Default)]
pub struct VidSchState {
    /// VidSch's system device and per-node system contexts (BR-66, [`crate::vidsch::system`]).
    pub system: Mutex<crate::vidsch::system::SystemObjects>,
    /// VidSch's hardware-scheduling state: node set-up calls, scheduling logs, context bands
    /// ([`crate::vidsch::hws`]).
    pub hws: Mutex<crate::vidsch::hws::HwsOs>,
    /// Wakes VidSch's PASSIVE worker (work was posted; the DPC thread after a DPC that left
    /// it something, or after each DPC while TDR detection is on). Three wakes, so that an
    /// interrupt on the way to a CPU waiter does not wake every simulation thread at once.
    pub wake: Arc<Wake>,
}
