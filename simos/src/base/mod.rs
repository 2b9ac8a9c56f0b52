//! The bottom layer of the simulated OS: what every component needs and that names nothing
//! above it — the one way to take a lock, errors and bug checks, the CPU clock, the IRQL check
//! (over the rule table, `dxgkrnl::rules`, itself a leaf), process ids, the interrupt line, the
//! pool injector, the DDI observer and the notifications a DPC returns.

pub mod bugcheck;
pub mod clock;
pub mod error;
pub mod irql;
pub mod line;
pub mod lock;
pub mod lowres;
pub mod notify;
pub mod observer;
pub mod process_id;
