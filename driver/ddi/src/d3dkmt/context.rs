//! The context thunk's block: `D3DKMTCreateContextVirtual`. Offsets follow from the member
//! list of the reference page under the x64 rules (`D3DKMT_PTR` members 8 bytes, 8-aligned; a
//! flag word is its `UINT` value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_CREATECONTEXTVIRTUAL`: `D3DKMTCreateContextVirtual`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createcontextvirtual>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATECONTEXTVIRTUAL {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the node the context runs on.
        #[offset(4)]
        pub NodeOrdinal: UINT,
        /// In: the engine of that node, as a one-bit mask.
        #[offset(8)]
        pub EngineAffinity: UINT,
        /// In: the `D3DDDI_CREATECONTEXTFLAGS` word.
        #[offset(12)]
        pub Flags: UINT,
        /// In/out: the driver's private data in the caller's memory, or none.
        #[offset(16)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// In: its size in bytes.
        #[offset(24)]
        pub PrivateDriverDataSize: UINT,
        /// In: the `D3DKMT_CLIENTHINT`, which runtime makes the context.
        #[offset(28)]
        pub ClientHint: UINT,
        /// Out: the context.
        #[offset(32)]
        pub hContext: D3DKMT_HANDLE,
        /// Tail padding to the 8-byte alignment.
        #[offset(36)]
        pub Padding0: UINT,
    }
}
