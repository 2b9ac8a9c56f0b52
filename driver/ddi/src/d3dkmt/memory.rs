//! The blocks of the thunks that reach an allocation's memory: `D3DKMTLock2`,
//! `D3DKMTUnlock2`, `D3DKMTInvalidateCache`, `D3DKMTEvict`. Offsets follow from the member
//! lists of the reference pages under the x64 rules (`D3DKMT_PTR`, `D3DKMT_ALIGN64` and
//! `SIZE_T` members 8 bytes, 8-aligned; a flag word is its `UINT` value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::{c_type, flag_word};

flag_word! {
    /// `D3DDDI_EVICT_FLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_evict_flags>
    pub struct D3DDDI_EVICT_FLAGS {
        /// Evict only if the memory is needed elsewhere.
        EvictOnlyIfNecessary,
        /// The allocations were not written since they were made resident.
        NotWrittenTo,
    }
}

c_type! {
    /// `D3DKMT_LOCK2`: `D3DKMTLock2`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_lock2>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_LOCK2 {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the allocation.
        #[offset(4)]
        pub hAllocation: D3DKMT_HANDLE,
        /// In: the `D3DDDICB_LOCK2FLAGS` word.
        #[offset(8)]
        pub Flags: UINT,
        /// Alignment of the next member.
        #[offset(12)]
        pub Padding0: UINT,
        /// Out: the CPU address of the allocation's memory.
        #[offset(16)]
        pub pData: D3DKMT_PTR,
    }
}

c_type! {
    /// `D3DKMT_UNLOCK2`: `D3DKMTUnlock2`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_unlock2>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_UNLOCK2 {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the allocation.
        #[offset(4)]
        pub hAllocation: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DKMT_INVALIDATECACHE`: `D3DKMTInvalidateCache`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_invalidatecache>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_INVALIDATECACHE {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the allocation.
        #[offset(4)]
        pub hAllocation: D3DKMT_HANDLE,
        /// In: the range's start in the allocation (`SIZE_T`).
        #[offset(8)]
        pub Offset: UINT64,
        /// In: the range's length (`SIZE_T`; 0: to the allocation's end).
        #[offset(16)]
        pub Length: UINT64,
    }
}

c_type! {
    /// `D3DKMT_EVICT`: `D3DKMTEvict`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_evict>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_EVICT {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: handles at `AllocationList`.
        #[offset(4)]
        pub NumAllocations: UINT,
        /// In: the allocations (`D3DKMT_HANDLE` array).
        #[offset(8)]
        pub AllocationList: D3DKMT_PTR,
        /// In: the [`D3DDDI_EVICT_FLAGS`] word.
        #[offset(16)]
        pub Flags: UINT,
        /// Alignment of the next member.
        #[offset(20)]
        pub Padding0: UINT,
        /// Out: bytes the caller should trim to fit its budget.
        #[offset(24)]
        pub NumBytesToTrim: UINT64,
    }
}
