//! Where an adapter's GPU is: the seam between the simulated OS and the hardware it drives.
//!
//! Two boards implement [`Board`]:
//! - the emulated [`Device`] in this process (every test, bench and the default harness run);
//! - a PCI function a Linux guest sees ([`super::pci::PciBoard`]): the same
//!   emulated GPU served by `rvgpu-vfu` across QEMU's PCIe, reached through the mapped BARs,
//!   guest physical memory and a UIO interrupt.
//!
//! The simulated OS reaches the hardware only through this trait (and the driver only through
//! its `MmioBus` face, behind the trap windows of `DxgkCbMapMemory`). Besides what hardware
//! shows, the in-process device answers *oracle* questions (runlisted queues, TLB contents,
//! engine snapshots) that the simulated OS uses to check the driver; a real function answers
//! them only where a register shows the answer, and `None` ("not observable") makes the check
//! skip on that board alone.

use std::sync::Arc;

use rvgpu_device::{Device, DeviceConfig, EngineSnapshot, Memory, QueueSnapshot};
use rvgpu_hw::mmio::MmioBus;

/// An adapter's hardware as the simulated OS sees it. Its `MmioBus` is BAR0.
pub trait Board: MmioBus + Send + Sync {
    /// Physical memory as this board sees it (system RAM the OS hands out, and its VRAM).
    fn memory(&self) -> &Arc<Memory>;
    /// The device's configuration (counts and capabilities).
    fn config(&self) -> &DeviceConfig;
    /// A 64-bit store to BAR2 page `page` (a doorbell ring).
    fn doorbell_write(&self, page: u32, value: u64);
    /// `DEVICE_STATUS.LOST`.
    fn is_lost(&self) -> bool;
    /// The device's own interrupt request (`INT_STATUS & INT_ENABLE != 0`).
    fn interrupt_pending(&self) -> bool;
    /// The same request as the interrupt controller sees the level of the line, when the
    /// board can tell without a bus access (the in-process device); `None` when only the
    /// delivered line says it (a PCI function, whose line the UIO thread raises and
    /// [`Board::end_of_interrupt`] lowers).
    fn request_level(&self) -> Option<bool> {
        None
    }
    /// Whether the bus fixes the interrupt's kind: `Some(true)` a message (MSI), `Some(false)`
    /// a line, `None` whichever the adapter's configuration asks for (the in-process device,
    /// which offers both).
    fn message_signalled(&self) -> Option<bool> {
        None
    }
    /// Host accesses the device counted so far (`None`: a board that cannot count).
    fn bus_counts(&self) -> Option<rvgpu_device::BusCounts> {
        None
    }
    /// `GPU_CLOCK`.
    fn gpu_clock(&self) -> u64;
    /// After the ISR ran for a delivered interrupt: whatever the interrupt path needs to
    /// deliver the (level-triggered) line again. Nothing for the in-process line, which
    /// follows the device's level by itself.
    fn end_of_interrupt(&self) {}
    /// Step mode: one quantum of the device on this thread; whether anything happened.
    fn step(&self) -> bool;
    /// Stops the board's threads (machine teardown).
    fn stop(&self);
    /// After a bug check: nothing more reaches the device from this machine.
    fn freeze(&self);
    /// Fault injection: surprise removal (in-process only; a no-op elsewhere).
    fn lose_device(&self);
    /// Oracle: every runlisted queue. `None`: not observable on this board.
    fn queues(&self) -> Option<Vec<QueueSnapshot>>;
    /// Oracle: the runlisted queue `queue_id`, found through the device's index (one lookup,
    /// so checks per queue stay O(1) with thousands of queues). Outer `None`: not observable.
    fn queue(&self, queue_id: u32) -> Option<Option<QueueSnapshot>>;
    /// Oracle: whether the TLB caches a translation of `root` in `[start, end)`.
    fn tlb_holds(&self, root: u64, start: u64, end: u64) -> Option<bool>;
    /// Oracle: one engine and its queues.
    fn engine_snapshot(&self, engine: u32) -> Option<EngineSnapshot>;
    /// Whether `engine` is power-gated.
    fn engine_gated(&self, engine: u32) -> Option<bool>;
}

/// The emulated GPU in this process: every question has an answer.
impl Board for Device {
    fn memory(&self) -> &Arc<Memory> {
        Device::memory(self)
    }
    fn bus_counts(&self) -> Option<rvgpu_device::BusCounts> {
        Some(Device::bus_counts(self))
    }
    fn config(&self) -> &DeviceConfig {
        Device::config(self)
    }
    fn doorbell_write(&self, page: u32, value: u64) {
        Device::doorbell_write(self, page, value);
    }
    fn is_lost(&self) -> bool {
        Device::is_lost(self)
    }
    fn interrupt_pending(&self) -> bool {
        Device::interrupt_pending(self)
    }
    fn request_level(&self) -> Option<bool> {
        Some(Device::interrupt_pending(self))
    }
    fn gpu_clock(&self) -> u64 {
        Device::gpu_clock(self)
    }
    fn step(&self) -> bool {
        Device::step(self)
    }
    fn stop(&self) {
        Device::stop(self);
    }
    fn freeze(&self) {
        Device::freeze(self);
    }
    fn lose_device(&self) {
        Device::lose_device(self);
    }
    fn queues(&self) -> Option<Vec<QueueSnapshot>> {
        Some(Device::queues(self))
    }
    fn queue(&self, queue_id: u32) -> Option<Option<QueueSnapshot>> {
        Some(Device::queue(self, queue_id))
    }
    fn tlb_holds(&self, root: u64, start: u64, end: u64) -> Option<bool> {
        Some(Device::tlb_holds(self, root, start, end))
    }
    fn engine_snapshot(&self, engine: u32) -> Option<EngineSnapshot> {
        Device::engine_snapshot(self, engine)
    }
    fn engine_gated(&self, engine: u32) -> Option<bool> {
        Device::engine_gated(self, engine)
    }
}

/// Where the PCI functions and the DMA memory are (`hal::pci`).
#[derive(Clone, Debug)]
pub struct PciSpec {
    /// The functions' sysfs directories (`/sys/bus/pci/devices/…`), adapter 0's first: one
    /// adapter each. Empty: every `1234:5256` function, in bus order (`pci::find_functions`).
    pub functions: Vec<std::path::PathBuf>,
    /// Physical (= bus) address of the memory the kernel left alone (`memmap=SIZE$BASE`).
    pub dma_base: u64,
    /// Its size in bytes.
    pub dma_size: u64,
}
