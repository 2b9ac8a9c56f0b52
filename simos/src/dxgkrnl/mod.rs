//! Dxgkrnl, the DirectX graphics kernel: driver load (`DxgkInitialize`), the one way the OS
//! calls a DDI, the IRQL check against the rule table, interrupts and DPCs,
//! the `DXGKRNL_INTERFACE` callbacks and the host kernel the driver runs on
//! ([`kernel::SimKernel`]). What every layer needs (locks, errors, bug checks, the thread's
//! IRQL) is in [`crate::base`], re-exported here under the names it has always had. The adapter's life under the PnP manager
//! (DriverEntry, start, stop, remove), which installs and loads the image, sits above the
//! components in `crate::pnp`.

pub mod adapter;
pub mod bringup;
pub use crate::base::bugcheck;
pub mod callbacks;
pub mod context;
pub mod ddi;
pub mod featuredb;
pub mod features;
pub mod interrupt;
pub mod irq;
pub mod irql;
pub mod kernel;
pub mod kmdver;
pub mod kmtest;
pub mod ktimer;
pub use crate::base::line;
pub mod load;
pub use crate::base::lowres;
pub use crate::base::notify;
pub mod observer;
pub mod power;
pub mod registry;
pub mod resources;
pub mod rules;
pub mod slot;
pub mod state;
pub mod timers;
pub mod waiter;
