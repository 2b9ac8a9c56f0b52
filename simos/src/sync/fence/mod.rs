//! The OS side of native GPU fences (NF-01 … NF-17, MF-04): what Dxgkrnl/VidSch do.
//!
//! - **Objects and handles (NF-12, NF-13).** [`crate::Machine::create_native_fence`] allocates
//!   CurrentValue and MonitoredValue, calls `DxgkDdiCreateNativeFence` with a process-wide
//!   unique `hGlobalNativeFence` (a global counter: many machines share one test process and
//!   the driver keeps a driver-wide handle map), parses the returned private data, and opens
//!   the creating process's instance (`DxgkDdiOpenNativeFence`, `hLocalNativeFence`). Every
//!   further process opens its own instance; destroying an instance is `Close` only, and the
//!   last one is `Close` then `Destroy` (NF-13). The global handle is registered in the
//!   adapter's `native_fences` set before create (so an interrupt report naming it is valid)
//!   and removed after Destroy returned (from then on a report naming it is 0x119, NF-14).
//! - **Storage (NF-05, NF-06).** Placed by type (docs/architecture.md, "Native fences: design
//!   notes"): `D3DDDI_NATIVEFENCE_TYPE_DEFAULT` and cross-adapter fences in system memory (bus
//!   address = system-process GPU VA in v1, identity mapping, what `MapToGpuSystemProcess` asks
//!   for); `D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU` fences, CurrentValue and MonitoredValue, in local
//!   memory (VidMm's part: pages from the top of VRAM, GPU address `VRAM_BASE` + offset, kernel
//!   CPU address in the BAR4 view; freed when the fence is destroyed). `INTRA_GPU` fences have
//!   no CPU wait or signal (the OS refuses both) and are never cross-adapter. Non-shareable fences of one process are
//!   packed into shared pages at the caps' `MonitoredValueStride` (CurrentValues on one page,
//!   MonitoredValues on another: they have different protections); a shareable fence gets
//!   pages of its own. Pages are never returned while the machine lives: a destroyed fence's
//!   slot may still be the target of queued GPU work (Dxgkrnl defers such frees until the work
//!   retires; the simulation defers them to the machine's end).
//! - **MonitoredValue (NF-02, NF-04, NF-07).** Per fence the pending CPU waits; the OS value
//!   follows the reading ([`crate::os::answers::MonitoredValue`]: the pages' lowest
//!   pending value − 1, or 24H2's value of the wait that set it, raised by new waits), is
//!   `u64::MAX` with none, or 0 held for a cross-adapter fence (NF-16). Whenever it changes, `DxgkDdiUpdateMonitoredValues` runs at device IRQL under
//!   the adapter's interrupt lock (synchronised with the ISR); after it returns the OS
//!   resamples CurrentValue and releases satisfied waits, and repeats until the value is
//!   stable (`settle`).
//! - **Interrupts (NF-04, NF-14).** `DxgkCbNotifyDpc` records which fences a
//!   `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` report named (or "all" for a NULL array); when the
//!   driver's DPC returns, VidSch's DPC-time work resamples exactly those fences (or every
//!   native fence of the adapter), releases satisfied waits and re-arms MonitoredValue
//!   (`process_dpc_work`). A cross-adapter fence's new value is propagated to the other
//!   adapters with `DxgkDdiUpdateCurrentValuesFromCpu(NotificationOnly)` (NF-16); after a
//!   report that named no fence, 24H2 names none either (`NumFences` 0), and a fence whose
//!   device went in error reaches the other adapters as always signalled (`u64::MAX`, then
//!   `AlwaysSignaled`).
//!   `DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED` (legacy monitored fences) is recorded but not
//!   processed: the simulation has no legacy monitored fences yet.
//! - **CPU waits (MF-04).** Event form: [`crate::Machine::wait_native_fence_event`] returns a
//!   [`SimEvent`]. Blocking form: [`crate::Machine::wait_native_fence`]. In step mode a
//!   blocking wait drives the machine itself (rounds of device steps, interrupts and DPCs on
//!   the calling thread) until the wait is satisfied or a round makes no progress: an idle
//!   machine can no longer signal the fence without the caller, so the wait times out then
//!   (no deadlock, deterministic).
//! - **CPU signal (NF-17).** `DxgkDdiUpdateCurrentValuesFromCpu` at DISPATCH_LEVEL, then the
//!   satisfied CPU waits are released.
//! - **Cross-adapter (NF-16, NF-18).** Each adapter gets its own native-fence object (own
//!   `hGlobalNativeFence` and MonitoredValue, the driver's handle → adapter map needs one
//!   adapter per handle) over one CurrentValue in system memory. On an adapter without native
//!   fences the fence is a legacy monitored fence over the same value; the reverse (a monitored
//!   fence opened as native) works the same way. Legacy GPU-side waits
//!   (`WaitForSynchronizationObjectFromGpu`) resume the held context through a callback; legacy
//!   GPU signals are software packets that, with no software contexts yet, reach the head at
//!   once.
//!
//! Not simulated yet: VidMm's segments (the local pages stand in for the segments a driver
//! names for `D3DKMDT_STANDARDALLOCATION_FENCESTORAGE`), `AlwaysSignaled` on the fence's own
//! adapter (24H2 stores `u64::MAX` there with flags 0), `No64BitAtomics` (MF-02). GPU work in the fence tests comes from [`crate::testing::gpu`]: user-mode
//! hardware queues of simulated processes ([`crate::ums`]) whose rings the tests write. DPC-time
//! updates are batched (one `UpdateMonitoredValues` call names every fence it re-arms); a
//! CPU wait or signal updates its own fence only.

pub(crate) mod dpc;
pub(crate) mod logs;
pub(crate) mod monitored;
pub(crate) mod native;
pub(crate) mod pages;
pub(crate) mod reclaim;
pub(crate) mod settle;
pub(crate) mod share;
mod values;
pub(crate) mod wait;

pub(crate) use self::dpc::*;
pub use self::native::OpenAccess;
pub(crate) use self::pages::VidMmPages;
pub use self::settle::*;
pub use self::values::*;
pub use self::wait::FenceWaits;
pub(crate) use self::wait::{abandon_cpu_waits, signal_device_fences_to_max};
pub use crate::state::sync::storage::FenceOs;

pub use crate::base::process_id::ProcessId;
mod event;
pub use crate::state::sync::fence::*;
