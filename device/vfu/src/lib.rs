//! rvgpu-vfu: the emulated rvgpu (`rvgpu-device`) as a PCI function of a virtual machine,
//! served over vfio-user (QEMU's `vfio-user-pci` device) with rust-vmm's `vfio_user` crate.
//!
//! - [`pci`]: configuration space (IDs, class, BARs and their sizing, INTA, power-management
//!   (D0, D3hot), MSI and PCI Express capabilities);
//! - [`backend`]: the regions (BAR0 registers through the device's `MmioBus`, BAR2 doorbells,
//!   BAR4 VRAM as a shared memfd), DMA into the client's guest RAM, interrupts;
//! - [`doorbell`]: BAR2 as memory the client maps, and the poller that rings the device from
//!   it (dedicated doorbells);
//! - [`irq`]: the device's level-triggered line delivered through the client's eventfds
//!   (INTx with vfio's mask/unmask protocol, or MSI);
//! - [`shm`]: the memfd and the shared mappings behind VRAM and guest RAM;
//! - [`server`]: the blocking loop, one client at a time, device renewed between clients; the
//!   socket's private directory and the peer check;
//! - [`guard`]: what stands between a client and the protocol library (message sizes and
//!   descriptors checked before the library reads them, time limits).
//!
//! The contract is docs/hardware.md, "PCI front end (vfio-user)".

pub mod backend;
pub mod doorbell;
pub mod guard;
pub mod irq;
pub mod pci;
pub mod server;
pub mod shm;

pub use backend::{Backend, Probe};
pub use server::{SessionEnd, VfuServer};
