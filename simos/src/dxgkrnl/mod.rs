//! Dxgkrnl, the DirectX graphics kernel: driver load (`DxgkInitialize`), adapter life (PnP),
//! the one way the OS calls a DDI, the IRQL model, interrupts and DPCs, bug checks, the
//! `DXGKRNL_INTERFACE` callbacks and the host kernel the driver runs on ([`kernel::SimKernel`]).

pub mod adapter;
pub mod bringup;
pub use crate::base::bugcheck;
pub mod callbacks;
pub mod ddi;
pub mod features;
pub mod interrupt;
pub use crate::base::irql;
pub mod kernel;
pub mod kmdver;
pub mod kmtest;
pub mod ktimer;
pub use crate::base::line;
pub mod load;
pub use crate::base::lowres;
pub use crate::base::notify;
pub use crate::base::observer;
pub mod pnp;
pub mod power;
pub mod registry;
pub mod resources;
pub mod rules;
pub mod state;
