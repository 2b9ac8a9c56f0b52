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

pub mod dxgkrnl;
pub mod error;
pub mod kmt;
pub mod machine;
pub mod sync;
pub mod testing;
pub mod ums;
pub mod vidmm;
pub mod vidsch;

pub use dxgkrnl::bugcheck::BugCheck;
pub use dxgkrnl::kernel::SimKernel;
pub use dxgkrnl::notify::{Notification, Processed};
pub use dxgkrnl::state::{Fault, LogLine};
pub use error::SimError;
pub use machine::{AdapterConfig, AdapterInfo, Machine, MachineConfig, Mode, OsConfig};
pub use rvgpu_kmd::platform::Irql;
pub use sync::fence::{
    MonitoredFence, NativeFence, NativeFenceDesc, ProcessId, SimEvent, WaitOutcome,
};
pub use sync::trace::{qpc, ReleaseVia, TraceEvent, TraceSink};
pub use ums::{DoorbellInfo, DoorbellState, Power, UmsEvent, UmsProcess};
pub use vidsch::tdr::{Cause, TdrConfig, TdrEvent, TdrReason};
