//! The argument blocks the thunks decode that have no definition of their own: each other block
//! is the one definition of `rvgpu_ddi::d3dkmt` or of the thunk's kernel entry in
//! [`crate::kmt`].

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A structure whose first member is the one handle it carries (`D3DKMT_CLOSEADAPTER`,
/// `D3DKMT_DESTROYDEVICE`, `D3DKMT_DESTROYCONTEXT`, `D3DKMT_DESTROYHWQUEUE`,
/// `D3DDDI_DESTROYPAGINGQUEUE`, `D3DKMT_DESTROYSYNCHRONIZATIONOBJECT`).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub(super) struct OneHandle {
    pub(super) handle: u32,
}
