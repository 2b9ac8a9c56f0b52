//! The device thunks' blocks: `D3DKMTCreateDevice` and `D3DKMTGetDeviceState`. Offsets follow
//! from the member lists of the reference pages under the x64 rules (`D3DKMT_PTR` members and
//! a union holding a pointer 8 bytes, 8-aligned; a flag word is its `UINT` value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_CREATEDEVICE`: `D3DKMTCreateDevice`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createdevice>
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATEDEVICE {
        /// In: the adapter, the low half of the `hAdapter`/`pAdapter` union (user mode passes
        /// the handle).
        #[offset(0)]
        pub hAdapter: D3DKMT_HANDLE,
        /// The union's upper half (a kernel caller's `pAdapter`).
        #[offset(4)]
        pub Padding0: UINT,
        /// In: the `D3DKMT_CREATEDEVICEFLAGS` word.
        #[offset(8)]
        pub Flags: UINT,
        /// Out: the device.
        #[offset(12)]
        pub hDevice: D3DKMT_HANDLE,
        /// Out (legacy): the command buffer; a WDDM 2 adapter's create leaves it.
        #[offset(16)]
        pub pCommandBuffer: D3DKMT_PTR,
        /// Out (legacy): its size.
        #[offset(24)]
        pub CommandBufferSize: UINT,
        /// Alignment of the next member.
        #[offset(28)]
        pub Padding1: UINT,
        /// Out (legacy): the allocation list.
        #[offset(32)]
        pub pAllocationList: D3DKMT_PTR,
        /// Out (legacy): its entries.
        #[offset(40)]
        pub AllocationListSize: UINT,
        /// Alignment of the next member.
        #[offset(44)]
        pub Padding2: UINT,
        /// Out (legacy): the patch location list.
        #[offset(48)]
        pub pPatchLocationList: D3DKMT_PTR,
        /// Out (legacy): its entries.
        #[offset(56)]
        pub PatchLocationListSize: UINT,
        /// Tail padding to the 8-byte alignment.
        #[offset(60)]
        pub Padding3: UINT,
    }
}

c_type! {
    /// `D3DKMT_GETDEVICESTATE`: `D3DKMTGetDeviceState`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_getdevicestate>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_GETDEVICESTATE {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the `D3DKMT_DEVICESTATE_TYPE`, which arm of the union is asked for.
        #[offset(4)]
        pub StateType: UINT,
        /// Out: the state union (`ExecutionState`, `PresentState`, `ResetState`,
        /// `PresentStateDWM`, `PageFaultState`, `PresentQueueState`); the largest arm sets its
        /// 48 bytes and 8-byte alignment. `ExecutionState` and `ResetState` are its first
        /// `UINT`.
        #[offset(8)]
        pub State: [UINT64; 6],
    }
}
