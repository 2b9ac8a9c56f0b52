//! The paging queue thunks' blocks: `D3DKMTCreatePagingQueue` and `D3DKMTMakeResident`.
//! Offsets follow from the member lists of the reference pages under the x64 rules
//! (`D3DKMT_PTR` and `D3DKMT_ALIGN64` members 8 bytes, 8-aligned; a flag word is its `UINT`
//! value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_CREATEPAGINGQUEUE`: `D3DKMTCreatePagingQueue`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createpagingqueue>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATEPAGINGQUEUE {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the `D3DDDI_PAGINGQUEUE_PRIORITY`.
        #[offset(4)]
        pub Priority: INT,
        /// Out: the paging queue.
        #[offset(8)]
        pub hPagingQueue: D3DKMT_HANDLE,
        /// Out: its fence.
        #[offset(12)]
        pub hSyncObject: D3DKMT_HANDLE,
        /// Out: the CPU address of the fence's value.
        #[offset(16)]
        pub FenceValueCPUVirtualAddress: D3DKMT_PTR,
        /// In: the physical adapter of a linked adapter.
        #[offset(24)]
        pub PhysicalAdapterIndex: UINT,
        /// Tail padding to the 8-byte alignment.
        #[offset(28)]
        pub Padding0: UINT,
    }
}

c_type! {
    /// `D3DDDI_MAKERESIDENT`: `D3DKMTMakeResident`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_makeresident>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_MAKERESIDENT {
        /// In: the paging queue.
        #[offset(0)]
        pub hPagingQueue: D3DKMT_HANDLE,
        /// In: handles at `AllocationList`.
        #[offset(4)]
        pub NumAllocations: UINT,
        /// In: the allocations (`D3DKMT_HANDLE` array).
        #[offset(8)]
        pub AllocationList: D3DKMT_PTR,
        /// In: their priorities (`UINT` array), or none.
        #[offset(16)]
        pub PriorityList: D3DKMT_PTR,
        /// In: the `D3DDDI_MAKERESIDENT_FLAGS` word.
        #[offset(24)]
        pub Flags: UINT,
        /// Alignment of the next member.
        #[offset(28)]
        pub Padding0: UINT,
        /// Out: the paging fence value that says the allocations are resident.
        #[offset(32)]
        pub PagingFenceValue: UINT64,
        /// Out: bytes to trim to fit the budget.
        #[offset(40)]
        pub NumBytesToTrim: UINT64,
    }
}
