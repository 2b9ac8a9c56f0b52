//! The rvgpu hardware interface: the one description of the device.
//!
//! Everything the driver, the user-mode driver and the device model agree on lives here:
//! PCI identity, register map, doorbell aperture, command encoding, and the layouts of the
//! structures the device reads or writes in memory. docs/hardware.md is the prose version;
//! where they differ, this crate is what the code does and the doc is a bug.
//!
//! `no_std`, no `alloc`: the kernel driver uses it at any IRQL.
#![cfg_attr(not(test), no_std)]

#[macro_use]
mod wire_enum;
#[macro_use]
mod wire_struct;

pub mod addr;
pub mod cmd;
pub mod defaults;
pub mod engine;
pub mod event;
pub mod fence;
pub mod log;
pub mod mmio;
pub mod mmu;
pub mod pci;
pub mod pdd;
pub mod queue;
#[macro_use]
pub mod register;
pub mod regs;
pub mod schedlog;
pub mod tdrdump;
pub mod testhooks;

/// Size of a GPU page and of one doorbell page.
pub const PAGE_SIZE: u64 = 4096;
