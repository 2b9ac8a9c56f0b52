//! The sync-object layer of Dxgkrnl: native GPU fences (WDDM 3.2), legacy monitored fences
//! (WDDM 2.0), native fence logs, and the OS's trace of fence events (what GPUView shows).

pub mod fence;
pub mod fencelog;
pub use crate::base::process_id;
