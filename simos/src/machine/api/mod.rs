//! The `Machine`'s test-facing methods, by topic, over the components they reach.

mod adapters;
mod fence_waits;
mod fences;
mod memory;
mod scheduling;
mod tdr;
mod ums;
