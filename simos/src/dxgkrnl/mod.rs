//! Dxgkrnl, the DirectX graphics kernel: driver load (`DxgkInitialize`), adapter life (PnP),
//! the one way the OS calls a DDI, the IRQL model, interrupts and DPCs, bug checks, the
//! `DXGKRNL_INTERFACE` callbacks and the host kernel the driver runs on ([`kernel::SimKernel`]).

pub mod adapter;
pub mod bringup;
pub mod bugcheck;
pub mod callbacks;
pub mod ddi;
pub mod features;
pub mod interrupt;
pub mod irql;
pub mod kernel;
pub mod kmdver;
pub mod kmtest;
pub mod ktimer;
pub mod load;
pub mod lowres;
pub mod notify;
pub mod observer;
pub mod pnp;
pub mod power;
pub mod registry;
pub mod resources;
pub mod rules;
pub mod state;
