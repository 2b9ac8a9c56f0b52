//! rvgpu-simos: the simulated Windows graphics kernel that runs the rvgpu driver on the host.
//!
//! A [`Machine`] is one physical memory, N emulated adapters and a simulated Dxgkrnl that calls
//! the driver exactly the way Windows does: `DriverEntry` → [`dxgkrnl::sim_dxgk_initialize`]
//! (the table is validated and copied), then every DDI through that table with real DXGKARG
//! structures, at the IRQL Windows uses ([`irql`]), with a [`callbacks`] table behind
//! `DXGKRNL_INTERFACE`, interrupts and DPCs serviced by dedicated threads or inline
//! ([`interrupt`]), and the host kernel [`kernel::SimKernel`] as the driver's `Platform`.
//!
//! Strictness: where Windows would bug-check, the machine halts with the same code and
//! parameters ([`bugcheck`]); the test sees `Err(SimError::Bugcheck(..))` from every call.

pub mod adapter;
pub mod bugcheck;
pub mod callbacks;
pub mod dxgkrnl;
pub mod error;
pub mod fence;
pub mod fencelog;
pub mod interrupt;
pub mod irql;
pub mod kernel;
pub mod kmt;
pub mod legacy;
pub mod machine;
pub mod notify;
pub mod resources;
pub mod state;
pub mod tdr;
pub mod testing;
pub mod testing_tdr;
pub mod trace;
pub mod ums;

pub use bugcheck::BugCheck;
pub use error::SimError;
pub use fence::{MonitoredFence, NativeFence, NativeFenceDesc, ProcessId, SimEvent, WaitOutcome};
pub use kernel::SimKernel;
pub use machine::{AdapterConfig, AdapterInfo, Machine, MachineConfig, Mode, OsConfig};
pub use notify::{Notification, Processed};
pub use rvgpu_kmd::platform::Irql;
pub use state::{Fault, LogLine};
pub use tdr::{Cause, TdrConfig, TdrEvent, TdrReason};
pub use trace::{qpc, ReleaseVia, TraceEvent, TraceSink};
pub use ums::{DoorbellInfo, DoorbellState, Power, UmsEvent, UmsProcess};
