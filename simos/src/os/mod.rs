//! The OS a machine plays: the Windows ([`windows`]: its kernel and the answers where code and
//! pages disagree, [`answers`]), how it runs, the CPU architecture and the OS's switches, and
//! what a machine is built from ([`config`]: its adapters, the switches' defaults). Below the
//! installer and the Dxgkrnl core, which name them; with them the driver build it loads
//! ([`driver_build`]).

pub mod answers;
pub mod config;
pub mod driver_build;
pub mod windows;

pub use self::config::*;
pub use self::windows::{Kernel, Windows};
