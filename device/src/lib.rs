//! rvgpu-device: the emulated rvgpu GPU.
//!
//! Implements the hardware described by `rvgpu-hw` (the one description of the device):
//! - [`memory::Memory`]: physical memory (system RAM allocations + VRAM) made of atomic
//!   64-bit words, shared by the CPU side and the device with real concurrency;
//! - [`device::Device`]: BAR0 registers with trap semantics ([`rvgpu_hw::mmio::MmioBus`]),
//!   BAR2 doorbells, the command processor (CMP) with per-engine runlists, the event ring and
//!   a level-triggered interrupt line ([`device::InterruptLine`]), engine/adapter reset and
//!   fault injection. It runs either on its own thread ([`device::Mode::Threaded`]) or one
//!   quantum at a time on the caller's thread ([`device::Mode::Step`], deterministic).

pub mod device;
pub mod hash;
pub mod memory;

pub use device::{
    BusCounts, Device, DeviceConfig, DoorbellStats, EngineSnapshot, InterruptLine, IrqDelay,
    LatchLine, Mode, QueueSnapshot, STEP_TICKS,
};
pub use memory::{Memory, RamBacking, SysAlloc, DEFAULT_SYSTEM_CAP, SYSMEM_START};
