//! Moving: the operations are in [`ddi`], re-exported here until the state is split out.

pub mod ddi;
pub use ddi::*;
