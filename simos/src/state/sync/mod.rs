//! The fences' state: fence objects and their CPU waits ([`fence`]), the per-adapter fence
//! table ([`storage`]), the fence pages mapped into processes ([`maps`]), the fence logs' books
//! ([`fencelog`], over the log buffers' words in [`logbuffer`]) and the OS's trace of fence
//! events ([`trace`]).

pub mod fence;
pub mod fencelog;
pub mod logbuffer;
pub mod maps;
pub mod storage;
pub mod trace;
