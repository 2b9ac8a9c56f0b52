//! The bottom layer of the simulated OS: what every other module needs and that names nothing
//! above it — the one way to take a lock, errors and bug checks, the CPU clock, the calling
//! thread's IRQL, process ids, the interrupt line, the pool injector and the notifications a
//! DPC returns.

pub mod bugcheck;
pub mod clock;
pub mod error;
pub mod line;
pub mod lock;
pub mod lowres;
pub mod notify;
pub mod process_id;
pub mod processor;
