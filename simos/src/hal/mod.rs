//! The hardware access layer: where an adapter's GPU is. [`Board`] is the seam the simulated
//! OS reaches the hardware through, implemented by the emulated device in this process and, on
//! a Linux guest, by a PCI function ([`pci`]). Below the Dxgkrnl core, which holds each
//! adapter's board.

pub mod bars;
pub(crate) mod board;
#[cfg(target_os = "linux")]
pub mod pci;

pub use self::board::{Board, PciSpec};
