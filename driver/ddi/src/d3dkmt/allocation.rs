//! The allocation thunks' blocks: `D3DKMTCreateAllocation2` (with its d3dukmdt.h
//! `D3DDDI_ALLOCATIONINFO2` array) and `D3DKMTDestroyAllocation2`. Offsets follow from the
//! headers' member lists under the x64 rules (`D3DKMT_PTR`, `D3DKMT_ALIGN64` and `HANDLE`
//! members 8 bytes, 8-aligned; a union is its widest arm; a flag word is its `UINT` value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_CREATEALLOCATION`: `D3DKMTCreateAllocation2`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createallocation>
    #[size(72)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATEALLOCATION {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In/out: the resource, or 0 for none.
        #[offset(4)]
        pub hResource: D3DKMT_HANDLE,
        /// Out: the global share handle of a shared resource.
        #[offset(8)]
        pub hGlobalShare: D3DKMT_HANDLE,
        /// Alignment of the next member.
        #[offset(12)]
        pub Padding0: UINT,
        /// In: the runtime's private data, or none.
        #[offset(16)]
        pub pPrivateRuntimeData: D3DKMT_PTR,
        /// In: its size.
        #[offset(24)]
        pub PrivateRuntimeDataSize: UINT,
        /// Alignment of the next member.
        #[offset(28)]
        pub Padding1: UINT,
        /// In: the resource's driver private data (the union's other arm is
        /// `pStandardAllocation`).
        #[offset(32)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// In: its size.
        #[offset(40)]
        pub PrivateDriverDataSize: UINT,
        /// In: entries at `pAllocationInfo2`.
        #[offset(44)]
        pub NumAllocations: UINT,
        /// In/out: the allocations (a [`D3DDDI_ALLOCATIONINFO2`] array; the union's other arm
        /// is `pAllocationInfo`).
        #[offset(48)]
        pub pAllocationInfo2: D3DKMT_PTR,
        /// In/out: the `D3DKMT_CREATEALLOCATIONFLAGS` word.
        #[offset(56)]
        pub Flags: UINT,
        /// Alignment of the next member.
        #[offset(60)]
        pub Padding2: UINT,
        /// In: the runtime's handle of the resource.
        #[offset(64)]
        pub hPrivateRuntimeResourceHandle: D3DKMT_PTR,
    }
}

c_type! {
    /// `D3DDDI_ALLOCATIONINFO2`: one allocation of `D3DKMTCreateAllocation2`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_allocationinfo2>
    #[size(96)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_ALLOCATIONINFO2 {
        /// Out: the allocation.
        #[offset(0)]
        pub hAllocation: D3DKMT_HANDLE,
        /// Alignment of the next member.
        #[offset(4)]
        pub Padding0: UINT,
        /// In: system memory backing the allocation, or none (the union's other arm is
        /// `hSection`).
        #[offset(8)]
        pub pSystemMem: D3DKMT_PTR,
        /// In: the allocation's driver private data.
        #[offset(16)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// In: its size.
        #[offset(24)]
        pub PrivateDriverDataSize: UINT,
        /// In: the video present source of a primary.
        #[offset(28)]
        pub VidPnSourceId: D3DDDI_VIDEO_PRESENT_SOURCE_ID,
        /// In: the `D3DDDI_ALLOCATIONINFOFLAGS` word.
        #[offset(32)]
        pub Flags: UINT,
        /// Alignment of the next member.
        #[offset(36)]
        pub Padding1: UINT,
        /// In/out: the allocation's GPU virtual address.
        #[offset(40)]
        pub GpuVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: the residency priority (the union's other arm is an 8-byte `Unused`).
        #[offset(48)]
        pub Priority: UINT,
        /// The union's upper half.
        #[offset(52)]
        pub Padding2: UINT,
        /// Reserved, zero.
        #[offset(56)]
        pub Reserved: [UINT64; 5],
    }
}

c_type! {
    /// `D3DKMT_DESTROYALLOCATION2`: `D3DKMTDestroyAllocation2`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_destroyallocation2>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_DESTROYALLOCATION2 {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the resource, or 0.
        #[offset(4)]
        pub hResource: D3DKMT_HANDLE,
        /// In: the allocations (`D3DKMT_HANDLE` array).
        #[offset(8)]
        pub phAllocationList: D3DKMT_PTR,
        /// In: entries at `phAllocationList`.
        #[offset(16)]
        pub AllocationCount: UINT,
        /// In: the `D3DDDICB_DESTROYALLOCATION2FLAGS` word.
        #[offset(20)]
        pub Flags: UINT,
    }
}
