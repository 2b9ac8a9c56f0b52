//! The OS side of user-mode work submission (UM-01 … UM-22): what Dxgkrnl/VidSch do
//! for processes, D3D devices, contexts, hardware queues, allocations and doorbells.
//!
//! **Objects.** A simulated process ([`UmsProcess`]) owns one D3D device on one adapter
//! (`DxgkDdiCreateDevice`). Through its [`crate::kmt::SimKmt`] (the D3DKMT thunks the real UMD
//! calls) it creates contexts (`DxgkDdiCreateContext` on a node), hardware queues
//! (`DxgkDdiCreateHwQueue`, each with an OS-created progress fence: a legacy monitored fence,
//! [`crate::sync::fence`]), allocations (GPU-visible, CPU-mapped system memory from the machine's
//! `Memory`; `DxgkDdiCreateAllocation` is not bound, so the allocation object is the OS's own
//! and the handle the KMD receives for it in `DXGKARG_CREATEDOORBELL` is the OS kernel handle)
//! and doorbells (`DxgkDdiCreateDoorbell`). Every object has a D3DKMT handle (what the UMD holds),
//! an OS kernel handle (what the KMD receives as input, e.g. `hDoorbell` on input of create) and
//! the KMD's handle (what the KMD returned; checked non-null and unique among the adapter's live
//! objects of that kind).
//!
//! **What is enforced** (a violation by the UMD is an error status; by the KMD a simulation
//! error or a bug check, never leniency):
//! - UM-03/UM-04: at adapter start the OS calls `DxgkDdiGetNodeMetadata` for every node and
//!   `DXGKQAITYPE_USERMODESUBMISSION_CAPS`; a user-mode queue may only be created on a node that
//!   reported `UserModeSubmission`, and a doorbell only for such a queue, and only if the caps
//!   reported a doorbell size (`STATUS_NOT_SUPPORTED` otherwise). A node claiming user-mode
//!   submission without usable caps fails the start.
//! - UM-05: `D3DKMTSubmitCommandToHwQueue` on a user-mode queue is refused by the OS
//!   (`STATUS_INVALID_PARAMETER`); [`Machine::ddi_submit_command_to_hw_queue`] bypasses the OS
//!   check to prove the KMD refuses it too. Progress values must increase.
//! - UM-07: each doorbell holds a reference on its ring and ring-control allocations; a
//!   `D3DKMTDestroyAllocation2` of a referenced allocation closes the UMD's handle but the
//!   memory lives until the doorbell is destroyed; the OS frees the UMD's remaining allocations
//!   itself only when the device is destroyed.
//! - UM-08: the ring's CPU view is the allocation's memory, independent of the doorbell state.
//! - UM-09: the doorbell CPU VA the UMD writes is an OS mapping object: a dummy page of
//!   `DoorbellSizeInBytes` until connect, the physical doorbell (BAR2 page) after connect, the
//!   dummy page again after any disconnect. The KMD's `KernelCpuVirtualAddress` must lie
//!   page-aligned inside a live `DxgkCbMapMemory` mapping of BAR2 (else a simulation error
//!   naming the address); the process mapping is of the physical page, as on Windows, not of
//!   the KMD's mapping. The connect status must be `CONNECTED` or `CONNECTED_NOTIFY_KMD`, and
//!   (dedicated model) `DOORBELL_BIND[page]` must name the queue when the connect returns.
//!   Every disconnect writes the status before the dummy page; an OS-initiated one does both
//!   before `DxgkDdiDisconnectDoorbell` (lossless; the documented after-return order is not).
//! - `DxgkCbDisconnectDoorbell` (PASSIVE_LEVEL, [`crate::adapter::irql`]): the reason must be one of the
//!   `DISCONNECTED_*` values and the handles must name a live doorbell and its queue, else the
//!   callback returns `STATUS_INVALID_PARAMETER` (what Windows documents) and the machine halts
//!   with a simulation error naming the driver bug. Disconnecting an already disconnected
//!   doorbell succeeds. Handles: the binding calls them the driver's handles while Microsoft's
//!   create page says the KMD "can store the input handle" (the OS's): the simulation accepts
//!   either pair, but both handles of one kind (UNVERIFIED which one Windows uses).
//! - Doorbell DDIs are only called in the right state: Connect on a disconnected doorbell,
//!   Disconnect on a connected one, NotifyWorkSubmission on a connected one (otherwise the ping
//!   is dropped: the work is collected at reconnect). Disconnect, Destroy and
//!   NotifyWorkSubmission must succeed (a failure is a simulation error).
//! - Destroy order: a queue with a doorbell, a context with queues, cannot be destroyed
//!   (`STATUS_INVALID_PARAMETER` to the UMD); the OS's own teardowns go doorbell, queue,
//!   allocations, context, device. After `DxgkDdiDestroyHwQueue` returns, the queue id the KMD
//!   reported in its private data must no longer be in any committed runlist (a simulation
//!   check of the hardware: a queue left behind is a leak). A started adapter's devices are torn
//!   down (abnormal exit) before StopDevice; RemoveDevice with live devices is an error.
//! - UM-13: on `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE` with `TransitionToF1` VidSch (a PASSIVE
//!   worker: the adapter's worker thread, or the step loop) disconnects every connected doorbell
//!   of that node (`DISCONNECTED_RETRY`) and, only if the node is idle then (no active
//!   reference, no kernel-mode or held submission outstanding, no queue of the node with a
//!   last-queued progress value ahead of its fence), sets the node's power component to F1
//!   (`DxgkDdiSetPowerComponentFState(component, 1)` for the engine component the driver
//!   registered for the node at start, `dxgkrnl::power`, BR-100…BR-109). A connect, a
//!   kernel-mode submission (`D3DKMTSubmitCommandToHwQueue`, held submissions, VidSch's DMA
//!   buffers) takes an active reference on the node first, which brings it to F0
//!   (`node_active`); the engine being power-gated on the device while the OS holds the node
//!   in F0 is a simulation error naming the driver.
//! - UM-14: [`Machine::power_down`] (runtime, only when no queue has work the OS has not seen
//!   complete, UM-16) suspends every context, disconnects every doorbell
//!   (`DISCONNECTED_RETRY`), then `SetPowerState(D3)`; a connect (or a kernel-mode submit, or
//!   an exit that must wait) in D3 powers up (`SetPowerState(D0)`), connects, then resumes the
//!   contexts the power-down suspended.
//! - Locking: a process's thunks are serialised by its device's lock and take the adapter's
//!   `ums_seq` shared, so processes reach the KMD concurrently; power, F1 and device loss take
//!   it exclusively. Nothing is held across a wait, and the callback takes neither. F-state
//!   changes (UM-13) take the adapter's `ums_fstate` (after `ums_seq` when both are held, before
//!   `ums`, VidSch's TDR state and VidMm's lock, never the other way round): an active reference
//!   (`node_active`: F0, then the count) and the F1 decision (idle check, then F1) are each
//!   atomic under it, so F1 never lands between a reference's F0 and its work. A kernel-mode
//!   submission counts its reference in its first look at the queue instead when the node is
//!   F0 with no change under way (`power::take_if_f0`): an F1 decided past that count declines.
//! - UM-17: [`Machine::exit_process`]: per queue disconnect, wait for the last-queued progress
//!   value (a queue that never completes is a simulation error), destroy doorbell, queue,
//!   allocations, context, device.
//! - UM-18: [`Machine::kill_process`]: device in error, suspend each context, disconnect each
//!   doorbell, destroy everything without waiting.
//! - UM-10: a device VidSch puts in error keeps its doorbells as they are (24H2 writes a status
//!   only at create, connect, the driver's `DxgkCbDisconnectDoorbell` and destroy): the KMD
//!   aborts them. [`Machine::device_lost`]: a forced adapter-wide recovery resets every
//!   device of the adapter, and the KMD aborts their doorbells through that callback; the UMD
//!   destroys its queue and recreates the device.
//!
//! Every OS step is recorded as a [`UmsEvent`] ([`Machine::ums_events`]) so tests can check
//! sequences in order.
//!
//! **Layering.** UMS's operations take the adapter they run on and, where they need fences,
//! VidMm or the OS's configuration, a `UmsHost` (the machine). The `Machine` methods named
//! here live with the machine (`machine::api::ums`): each looks the adapter up and calls the
//! operation.
//!
//! [`Machine::ddi_submit_command_to_hw_queue`]: crate::Machine::ddi_submit_command_to_hw_queue
//! [`Machine::power_down`]: crate::Machine::power_down
//! [`Machine::exit_process`]: crate::Machine::exit_process
//! [`Machine::kill_process`]: crate::Machine::kill_process
//! [`Machine::device_lost`]: crate::Machine::device_lost
//! [`Machine::ums_events`]: crate::Machine::ums_events

pub(crate) mod allocation;
mod context;
mod disconnect;
mod doorbell;
pub use doorbell::DOORBELL_PRIVATE_DATA_MAX;
mod held;
mod host;
mod hwqueue;
pub(crate) mod kmd;
mod kmtest;
mod locks;
mod lookup;
mod loss;
mod power;
pub(crate) mod process;
mod query;
mod root;
mod start;
mod worker;

pub(crate) use self::context::*;
pub use self::disconnect::*;
pub(crate) use self::doorbell::*;
pub use self::held::*;
pub(crate) use self::host::UmsHost;
pub(crate) use self::hwqueue::*;
pub(crate) use self::kmd::*;
pub(crate) use self::kmtest::TestTarget;
pub(crate) use self::loss::*;
pub(crate) use self::power::*;
pub(crate) use self::query::*;
pub(crate) use self::root::ensure_root;
pub(crate) use self::start::*;
pub(crate) use self::worker::*;
pub use crate::ob::KmtHandle;
pub use crate::state::ums::events::*;
pub use crate::state::ums::mapping::*;
pub use crate::state::ums::*;
