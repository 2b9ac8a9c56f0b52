//! What the fence operations ask of VidMm: the OS's fence-value and log pages mapped into GPU
//! address spaces. A mapping runs paging work and waits for it, which in step mode only the
//! whole machine can drive, so the machine provides these (`crate::machine`). Giving pages
//! back needs no paging at once: they go on VidMm's list of retired pages ([`retire_system`]).

use rvgpu_hw::addr::BusAddr;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;

/// VidMm's page mappings, as the fence operations and the fence logs use them.
pub(crate) trait VidMmPages {
    /// Maps the OS's pages covering `[pa, pa + bytes)` (device addresses) into the paging
    /// process at the same VAs (fence storage and log buffers the CMP writes).
    fn map_system(&self, a: &AdapterShared, pa: u64, bytes: u64) -> Result<(), SimError>;

    /// Maps the OS's page at device address `pa` into `pid` at the same VA (a legacy
    /// monitored fence's value; no allocation behind it).
    fn map_os_page(&self, a: &AdapterShared, pid: ProcessId, pa: u64) -> Result<(), SimError>;

    /// Maps the page holding a native fence's value at device address `pa` into `pid` at a VA
    /// of its own (or counts one more use of it); the value's VA there.
    fn map_fence_value(&self, a: &AdapterShared, pid: ProcessId, pa: u64) -> Result<u64, SimError>;

    /// Drops one use of the page holding the fence value at `pa` in `pid`.
    fn unmap_fence_value(&self, a: &AdapterShared, pid: ProcessId, pa: u64)
        -> Result<(), SimError>;

    /// Unmaps the retired fence pages nothing can reach any more.
    fn reap_fence_maps(&self, a: &AdapterShared) -> Result<(), SimError>;
}

/// Hands `[bus, bus + bytes)` of system memory back to VidMm: without a paging process it is
/// freed at once, otherwise it stays allocated (and mapped) until VidMm's `reap_system_pages`
/// unmaps it through the driver, so the CMP never reaches memory that was reused.
pub(crate) fn retire_system(a: &AdapterShared, bus: u64, bytes: u64) {
    let kept = lock(&a.mm.vidmm).retire_system(bus, bytes);
    if !kept {
        a.device.memory().free_system(BusAddr::new(bus));
    }
}
