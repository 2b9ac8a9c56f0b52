//! Native GPU fences (NF-01 … NF-18).
//!
//! - [`ddi`]: the fence DDIs (create, open, close, destroy, the two update DDIs).
//! - [`table`]: the fence objects and NF-13's handle lifetimes (PASSIVE).
//! - [`registry`]: the ISR's report tag → OS handle map (device IRQL).
//! - [`handles`]: the OS handle → (adapter, tag) map for DDIs without an adapter handle.
//! - [`report`]: turning device fence events into the OS's interrupt reports.
//!
//! - [`storage`]: where a fence's values may live by type (NF-06, NF-16), checked at create.
//!
//! Storage belongs to the OS (NF-05, NF-06): it allocates CurrentValue and MonitoredValue
//! (system memory, or local memory for `INTRA_GPU` fences). Whether the driver learns where
//! depends on the build (docs/windows-bringup.md, "Where the code and the pages disagree"):
//! by the pages and on 26H1 the OS maps both into the system process (the caps set
//! `MapToGpuSystemProcess`) and passes their GPU addresses to create, and the kernel CPU
//! addresses of the values to store to the update DDIs; 24H2 and 25H2 pass neither, having
//! stored the values themselves. The driver works either way: the CMP reaches a fence's
//! values through the submitting process's mapping (the packets carry those VAs), so the
//! system addresses serve only to aim a CPU signal's rescan and to tell the two pages apart
//! in a process's page tables, and an update without CPU addresses is only the barrier and
//! the device synchronisation.

pub mod ddi;
pub mod handles;
pub mod pages;
pub mod registry;
pub mod report;
pub mod storage;
pub mod table;

/// Most fences one update call may name (bounds the work done at device IRQL).
pub const MAX_FENCES_PER_UPDATE: u32 = 4096;
