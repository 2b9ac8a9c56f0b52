//! VidSch, the GPU scheduler inside Dxgkrnl: kernel-mode (OS-scheduled) submission and
//! timeout detection and recovery (TDR).

pub mod hws;
pub mod legacy;
pub(crate) mod passive;
pub mod system;
pub mod tdr;
