//! Backends: what the cases run against.
//!
//! A case never talks to the simulated OS directly: it opens a [`Session`] (one machine with
//! its adapters, fresh for each case) on a [`Backend`] and uses the abstract adapter API below.
//! The default backend is [`sim::SimBackend`], the emulated GPU under the simulated OS.
//!
//! A session always has the driver and adapter life cycle; everything else is a capability
//! ([`caps`], one module each with its trait and the types of its calls): fences,
//! cross-adapter fences, user-mode submission (processes, buffers, queues made by the UMD's
//! submission core), UMD native fences and the OS's fence logs, TDR as a client sees it and
//! the OS's record of it, and the simulation-only controls and observations (OS traces, OS
//! controls, fault injection, direct DDI calls, step mode, bug checks). A Windows backend (the
//! installed driver through D3DKMT) implements the traits it can and lists them in
//! [`Backend::capabilities`]; the runner skips a case that needs one it lacks, with the
//! reason. Within a trait, a method it cannot honour still reports [`Failure::Unsupported`],
//! and cases leave out the checks of observations that are optional for them
//! (`Case::optional`).
//!
//! The backends: [`sim`] (the simulated OS in process), [`kmt`] (a D3DKMT program over the
//! simulated thunks or Windows' gdi32, through the Rust UMD), `dll` (the same program through
//! the shipped UMD DLL's C API, `--umd pe`). The two that drive the driver as an application
//! does implement the capabilities they share once, in `app`, over the one primitive each
//! supplies: the UMD's calls.
//!
//! Everything here is re-exported at this level, so cases name `crate::backend::X`; the
//! modules inside the backend layer name each other's items by their own module, never through
//! this index.

pub(crate) mod app;
pub mod caps;
pub mod common;
pub mod config;
mod device;
#[cfg(target_os = "linux")]
pub mod dll;
pub(crate) mod gpuva;
pub mod kmt;
pub(crate) mod lanes;
pub mod restricted;
mod session;
pub mod sim;
pub mod testing;
pub(crate) mod tracked;
mod umd_queue;

pub use caps::*;
pub(crate) use common::{nth, nth_mut};
pub use common::{BugCheckInfo, Failure};
pub use config::{ExecMode, Misbehaviour, SessionConfig};
pub use device::DeviceSettings;
pub(crate) use session::{reset_used, used};
pub use session::{Backend, Session, StartedAdapter, Until};
