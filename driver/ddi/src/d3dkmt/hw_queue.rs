//! The kernel-submission hardware queue thunks' blocks: `D3DKMTCreateHwQueue` and
//! `D3DKMTSubmitCommandToHwQueue`. Offsets follow from d3dkmthk.h's member lists under the x64
//! rules (`D3DKMT_PTR` and `D3DKMT_ALIGN64` members 8 bytes, 8-aligned; a flag word is its
//! `UINT` value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_CREATEHWQUEUE`: `D3DKMTCreateHwQueue`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createhwqueue>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATEHWQUEUE {
        /// In: the context the queue belongs to.
        #[offset(0)]
        pub hHwContext: D3DKMT_HANDLE,
        /// In (and out, for `NativeProgressFence`): the `D3DDDI_CREATEHWQUEUEFLAGS` word.
        #[offset(4)]
        pub Flags: UINT,
        /// In: the size of the private data.
        #[offset(8)]
        pub PrivateDriverDataSize: UINT,
        /// Alignment of the next member.
        #[offset(12)]
        pub Padding0: UINT,
        /// In/out: the driver's private data in the caller's memory, or none.
        #[offset(16)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// Out: the queue.
        #[offset(24)]
        pub hHwQueue: D3DKMT_HANDLE,
        /// Out: its progress fence.
        #[offset(28)]
        pub hHwQueueProgressFence: D3DKMT_HANDLE,
        /// Out: the CPU address of the progress fence's value.
        #[offset(32)]
        pub HwQueueProgressFenceCPUVirtualAddress: D3DKMT_PTR,
        /// Out: the GPU address of the progress fence's value.
        #[offset(40)]
        pub HwQueueProgressFenceGPUVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    }
}

c_type! {
    /// `D3DKMT_SUBMITCOMMANDTOHWQUEUE`: `D3DKMTSubmitCommandToHwQueue`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_submitcommandtohwqueue>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_SUBMITCOMMANDTOHWQUEUE {
        /// In: the queue.
        #[offset(0)]
        pub hHwQueue: D3DKMT_HANDLE,
        /// Alignment of the next member.
        #[offset(4)]
        pub Padding0: UINT,
        /// In: the progress fence value the buffer's completion signals.
        #[offset(8)]
        pub HwQueueProgressFenceId: UINT64,
        /// In: the command buffer's GPU virtual address.
        #[offset(16)]
        pub CommandBuffer: D3DGPU_VIRTUAL_ADDRESS,
        /// In: its length in bytes.
        #[offset(24)]
        pub CommandLength: UINT,
        /// In: the size of the private data.
        #[offset(28)]
        pub PrivateDriverDataSize: UINT,
        /// In: the driver's private data in the caller's memory, or none.
        #[offset(32)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// In: the primaries at `WrittenPrimaries`.
        #[offset(40)]
        pub NumPrimaries: UINT,
        /// Alignment of the next member.
        #[offset(44)]
        pub Padding1: UINT,
        /// In: the primaries the buffer writes (`D3DKMT_HANDLE` array), or none.
        #[offset(48)]
        pub WrittenPrimaries: D3DKMT_PTR,
    }
}
