//! The `Machine`'s methods on memory.

use crate::machine::Machine;

impl Machine {
    /// Bytes of the machine's system memory still to be had: its size
    /// ([`rvgpu_device::Memory::set_system_cap`]) less what the OS, the driver and every
    /// process hold. Whatever is created and destroyed, it comes back to where it was.
    pub fn system_memory_free(&self) -> u64 {
        self.memory().system_free()
    }
}
