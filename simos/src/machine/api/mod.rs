//! The `Machine`'s test-facing methods, by topic, over the components they reach.

mod memory;
mod tdr;
mod ums;
