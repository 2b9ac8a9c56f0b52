//! The argument blocks of the D3DKMT thunks (d3dkmthk.h, with the d3dukmdt.h blocks they
//! carry) that rvgpu passes or answers, in the released x64 layout: the one definition the
//! UMD's Windows thunks, the simulated OS's thunk entries and its gdi32 bridge share.
//!
//! Each block is plain bytes both ways (zerocopy's `FromBytes`/`IntoBytes`): padding is an
//! explicit `Padding*` member, and a `D3DKMT_PTR(T, Name)` member, a user-mode pointer
//! widened to 64 bits (on x64 the pointer itself), is its address, [`D3DKMT_PTR`]. The UMD
//! writes its own pointers' addresses there ([`d3dkmt_ptr`]); the simulated OS reads the block
//! out of the calling process's memory, where an address is all a pointer is. A caller starts a
//! block from zero (`zerocopy::FromZeros::new_zeroed`).

pub mod adapter;
pub mod allocation;
pub mod context;
pub mod device;
pub mod doorbell;
pub mod gpu_va;
pub mod hw_queue;
pub mod memory;
pub mod native_fence;
pub mod one_handle;
pub mod paging;
pub mod submit_command;
pub mod sync;

pub use adapter::*;
pub use allocation::*;
pub use context::*;
pub use device::*;
pub use doorbell::*;
pub use gpu_va::*;
pub use hw_queue::*;
pub use memory::*;
pub use native_fence::*;
pub use one_handle::*;
pub use paging::*;
pub use submit_command::*;
pub use sync::*;

/// A `D3DKMT_PTR(T, Name)` member: the user-mode address, 64 bits on every target.
pub type D3DKMT_PTR = u64;

/// The [`D3DKMT_PTR`] value of `p` (the caller's own pointer, passed to the kernel).
pub fn d3dkmt_ptr<T>(p: *const T) -> D3DKMT_PTR {
    p as usize as u64
}
