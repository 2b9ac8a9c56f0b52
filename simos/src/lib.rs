//! rvgpu-simos: the simulated Windows graphics kernel that runs the rvgpu driver on the host.
//!
//! A [`Machine`] is one physical memory, N emulated adapters and a simulated Dxgkrnl that calls
//! the driver exactly the way Windows does: `DriverEntry` → `DxgkInitialize`
//! (the table is validated and copied), then every DDI through that table with real DXGKARG
//! structures ([`adapter::ddi`]), at the IRQL Windows uses ([`adapter::irql`], with every rule of
//! a DDI in one row of [`adapter::rules`]), with a
//! [`dxgkrnl::callbacks`] table behind `DXGKRNL_INTERFACE`, interrupts and DPCs serviced by
//! dedicated threads or inline ([`dxgkrnl::interrupt`]), and the host kernel
//! [`adapter::kernel::SimKernel`] as the driver's `Platform`.
//!
//! Modules follow the Windows components they stand for: [`adapter`] (the graphics kernel's
//! core: the adapter and the one way to call a DDI), [`dxgkrnl`] (its callbacks, DPCs and
//! power), [`vidsch`] (scheduling and TDR), [`vidmm`] (memory), [`sync`] (fences and fence
//! logs), [`ums`] (user-mode submission), [`kmt`] (the D3DKMT thunks); what each component
//! keeps is in [`state`], below the adapter that holds it; [`machine`] ties them into one
//! machine, [`pnp`] loads the driver and starts and stops its adapters, and [`testing`] holds
//! driver stand-ins for tests.
//!
//! Strictness: where Windows would bug-check, the machine halts with the same code and
//! parameters ([`base::bugcheck`]); the test sees `Err(SimError::Bugcheck(..))` from every
//! call.

pub mod adapter;
pub mod base;
pub mod dxgkrnl;
pub use crate::base::error;
pub mod etw;
pub mod hal;
pub mod install;
pub mod kmt;
pub mod machine;
pub mod ob;
pub mod os;
#[cfg(target_os = "linux")]
pub mod pe;
pub mod pnp;
pub mod state;
pub mod sync;
pub mod testing;
pub mod ums;
pub mod vidmm;
pub mod vidsch;

pub use adapter::kernel::SimKernel;
pub use adapter::state::LogLine;
pub use base::bugcheck::BugCheck;
pub use base::lowres::{LowResources, PoolStats};
pub use base::notify::{Notification, Processed};
pub use error::{Fault, SimError};
pub use machine::{
    AdapterConfig, AdapterInfo, CpuArch, Kernel, Machine, MachineConfig, Mode, OsConfig, Windows,
};
pub use rvgpu_kmd::platform::Irql;
pub use state::sync::trace::{qpc, ReleaseVia, TraceEvent, TraceSink};
pub use sync::fence::{
    FenceWaits, LateWakes, MonitoredFence, NativeFence, NativeFenceDesc, OpenAccess, ProcessId,
    SimEvent, WaitOutcome,
};
pub use ums::{DoorbellInfo, DoorbellState, Power, UmsEvent, UmsProcess};
pub use vidsch::hws::{ContextPriority, HwsCall, SchedLogEntry, SchedLogStats};
pub use vidsch::tdr::{Cause, TdrConfig, TdrDump, TdrEvent, TdrReason};
