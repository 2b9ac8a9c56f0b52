//! Native GPU fences (NF-01 … NF-18): work in progress, see docs/architecture.md "Native
//! fences".
//!
//! Built so far: the ISR's tag registry ([`registry`]) and the any-IRQL map from OS handles
//! to fences ([`handles`]). The DDIs (create, open, close,
//! destroy, update monitored and current values) come next; until they exist the driver does
//! not advertise `NativeGpuFence` (see `caps::native_gpu_fence`).

pub mod handles;
pub mod registry;
pub mod report;
pub mod table;
