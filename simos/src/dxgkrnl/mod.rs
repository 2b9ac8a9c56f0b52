//! Dxgkrnl above the components: the `DXGKRNL_INTERFACE` callbacks the driver calls
//! ([`callbacks`]), interrupts and DPCs with the DPC's fan-out to the components that act on
//! what the ISR reported ([`interrupt`]), feature negotiation ([`features`]), runtime power
//! ([`power`]) and the kernel-mode testing escape ([`kmtest`]). Everything here may call
//! VidMm, VidSch, fences and UMS; what they call in turn (the adapter, the one way to call a
//! DDI, the IRQL rules, the host kernel) is [`crate::adapter`], below them. What every layer
//! needs (locks, errors, bug checks, the thread's IRQL) is in [`crate::base`]. The adapter's
//! life under the PnP manager (DriverEntry, start, stop, remove), which installs and loads the
//! image, sits above the components in `crate::pnp`.

pub mod callbacks;
pub mod features;
pub mod interrupt;
pub mod kmtest;
pub mod power;
