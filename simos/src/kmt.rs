//! The D3DKMT thunks of a simulated process: an implementation of [`rvgpu_umd::kmt::Kmt`] over
//! the simulated Dxgkrnl ([`crate::ums`]), so the real UMD code runs against the simulated OS
//! and the real KMD.
//!
//! Each thunk does what Dxgkrnl does for it (handle checks, UM-03/UM-04/UM-05 rules, the OS
//! sequences of connect and power) and calls the KMD's DDIs; a failure the OS or the KMD
//! returns comes back as the NTSTATUS. If the machine halts (bug check or simulation error), a
//! thunk returns `STATUS_UNSUCCESSFUL` and the test sees the fault from the machine.
//!
//! CPU views: allocations are the memory itself ([`SimMem`], 64-bit atomic words, so the UMD's
//! stores and the GPU's reads are data-race free), except a cached view on an adapter that
//! does not snoop CPU caches, which goes through the allocation's `CpuCache` (AL-06); the
//! doorbell page is the OS mapping object ([`SimDoorbell`]: dummy page or physical doorbell,
//! UM-09); a fence value is a read-only view of the OS's monitored fence or of a native fence's
//! CurrentValue ([`SimFence`]).
//!
//! The thunk handle and what the entries share are [`process`]; the UMD's calls, each through
//! its entry, are `umd`. This module only declares and re-exports, so no entry imports it.

pub use crate::base::error::STATUS_IO_TIMEOUT;
pub use crate::os::DEFAULT_THUNK_COST;
pub use process::{charge_thunk_cost, SimDoorbell, SimFence, SimKmt, SimMem};

pub mod adapter;
pub mod allocation;
pub mod catalog;
pub mod context_virtual;
pub mod destroy_sync;
pub mod device;
pub mod device_state;
pub mod doorbell;
pub mod escape;
pub mod escape_types;
pub mod evict;
pub mod feature;
pub mod gpu_va;
pub mod hw_queue;
pub mod hw_queue_sync;
pub mod invalidate_cache;
pub mod lock;
pub mod native_fence;
pub mod paging_queue;
pub mod process;
pub mod query_adapter_info;
pub mod refusal;
pub mod share;
pub mod submit_command;
pub mod sync_from_cpu;
pub mod sync_object;
mod umd;
mod umd_nodes;
