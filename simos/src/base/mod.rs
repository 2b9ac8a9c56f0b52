//! The bottom layer of the simulated OS: what every other module needs and that names nothing
//! above it — the one way to take a lock, errors and bug checks, the CPU clock, the calling
//! thread's IRQL, process ids, the interrupt line, the pool injector, the notifications a
//! DPC returns, ETW's registrations and sessions, and registry values (what the installer
//! writes and Dxgkrnl reads).

pub mod bugcheck;
pub mod clock;
pub mod error;
pub mod etw;
pub mod line;
pub mod lock;
pub mod lowres;
pub mod notify;
pub mod process_id;
pub mod processor;
pub mod regkey;
