//! The kernel-mode submission thunk's block: `D3DKMTSubmitCommand`. Offsets follow from the
//! member list of the reference page under the x64 rules (`D3DKMT_PTR` members 8 bytes,
//! 8-aligned; a flag word is its `UINT` value) with d3dukmdt.h's array bounds
//! (`D3DDDI_MAX_BROADCAST_CONTEXT` 64, `D3DDDI_MAX_WRITTEN_PRIMARIES` 16).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

/// `D3DDDI_MAX_BROADCAST_CONTEXT`: the contexts one submission may name.
pub const D3DDDI_MAX_BROADCAST_CONTEXT: usize = 64;
/// `D3DDDI_MAX_WRITTEN_PRIMARIES`: the primaries one submission may write.
pub const D3DDDI_MAX_WRITTEN_PRIMARIES: usize = 16;

c_type! {
    /// `D3DKMT_SUBMITCOMMAND`: `D3DKMTSubmitCommand`'s block. No `Default` (the arrays are
    /// longer than the standard library's): a caller starts from `FromZeros::new_zeroed`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_submitcommand>
    #[size(384)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_SUBMITCOMMAND {
        /// In: the command buffer's GPU virtual address.
        #[offset(0)]
        pub Commands: D3DGPU_VIRTUAL_ADDRESS,
        /// In: its length in bytes.
        #[offset(8)]
        pub CommandLength: UINT,
        /// In: the `D3DKMT_SUBMITCOMMANDFLAGS` word.
        #[offset(12)]
        pub Flags: UINT,
        /// In: the present history token, for a present.
        #[offset(16)]
        pub PresentHistoryToken: ULONGLONG,
        /// In: the contexts used of `BroadcastContext`.
        #[offset(24)]
        pub BroadcastContextCount: UINT,
        /// In: the contexts the buffer runs on.
        #[offset(28)]
        pub BroadcastContext: [D3DKMT_HANDLE; D3DDDI_MAX_BROADCAST_CONTEXT],
        /// Alignment of the next member.
        #[offset(284)]
        pub Padding0: UINT,
        /// In: the driver's private data in the caller's memory, or none.
        #[offset(288)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// In: its size in bytes.
        #[offset(296)]
        pub PrivateDriverDataSize: UINT,
        /// In: the primaries used of `WrittenPrimaries`.
        #[offset(300)]
        pub NumPrimaries: UINT,
        /// In: the primaries the buffer writes.
        #[offset(304)]
        pub WrittenPrimaries: [D3DKMT_HANDLE; D3DDDI_MAX_WRITTEN_PRIMARIES],
        /// In: the history buffers at `HistoryBufferArray`.
        #[offset(368)]
        pub NumHistoryBuffers: UINT,
        /// Alignment of the next member.
        #[offset(372)]
        pub Padding1: UINT,
        /// In: the history buffers (`D3DKMT_HANDLE` array), or none.
        #[offset(376)]
        pub HistoryBufferArray: D3DKMT_PTR,
    }
}
