//! The blocks of the thunks that create a sync object (`D3DKMTCreateSynchronizationObject2`,
//! with its d3dukmdt.h `D3DDDI_SYNCHRONIZATIONOBJECTINFO2`), signal and wait on one from the CPU
//! (`D3DKMTSignalSynchronizationObjectFromCpu`, `D3DKMTWaitForSynchronizationObjectFromCpu`)
//! and on a hardware queue (`D3DKMTSubmitSignalSyncObjectsToHwQueue`,
//! `D3DKMTSubmitWaitForSyncObjectsToHwQueue`).
//! Offsets follow from the member lists of the reference pages under the x64 rules
//! (`D3DKMT_PTR` and `D3DKMT_ALIGN64` members 8 bytes, 8-aligned; a flag word is its `UINT`
//! value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU`: `D3DKMTSignalSynchronizationObjectFromCpu`'s
    /// block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_signalsynchronizationobjectfromcpu>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: entries in each array.
        #[offset(4)]
        pub ObjectCount: UINT,
        /// In: the sync objects (`D3DKMT_HANDLE` array).
        #[offset(8)]
        pub ObjectHandleArray: D3DKMT_PTR,
        /// In: the value each is signalled to (`UINT64` array).
        #[offset(16)]
        pub FenceValueArray: D3DKMT_PTR,
        /// In: the `D3DDDICB_SIGNALFLAGS` word.
        #[offset(24)]
        pub Flags: UINT,
        /// Tail padding to the 8-byte alignment.
        #[offset(28)]
        pub Padding0: UINT,
    }
}

c_type! {
    /// `D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU`:
    /// `D3DKMTWaitForSynchronizationObjectFromCpu`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_waitforsynchronizationobjectfromcpu>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: entries in each array.
        #[offset(4)]
        pub ObjectCount: UINT,
        /// In: the sync objects (`D3DKMT_HANDLE` array).
        #[offset(8)]
        pub ObjectHandleArray: D3DKMT_PTR,
        /// In: the value each is waited for (`UINT64` array).
        #[offset(16)]
        pub FenceValueArray: D3DKMT_PTR,
        /// In: an event of the caller's process to set, or 0 to block (`HANDLE`).
        #[offset(24)]
        pub hAsyncEvent: D3DKMT_PTR,
        /// In: the `D3DDDI_WAITFORSYNCHRONIZATIONOBJECTFROMCPU_FLAGS` word.
        #[offset(32)]
        pub Flags: UINT,
        /// Tail padding to the 8-byte alignment.
        #[offset(36)]
        pub Padding0: UINT,
    }
}

c_type! {
    /// `D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE`: `D3DKMTSubmitSignalSyncObjectsToHwQueue`'s
    /// block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_submitsignalsyncobjectstohwqueue>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE {
        /// In: the `D3DDDICB_SIGNALFLAGS` word.
        #[offset(0)]
        pub Flags: UINT,
        /// In: queues at `BroadcastHwQueueArray`.
        #[offset(4)]
        pub BroadcastHwQueueCount: ULONG,
        /// In: the hardware queues that signal (`D3DKMT_HANDLE` array).
        #[offset(8)]
        pub BroadcastHwQueueArray: D3DKMT_PTR,
        /// In: entries in each object array.
        #[offset(16)]
        pub ObjectCount: UINT,
        /// Alignment of the next member.
        #[offset(20)]
        pub Padding0: UINT,
        /// In: the sync objects (`D3DKMT_HANDLE` array).
        #[offset(24)]
        pub ObjectHandleArray: D3DKMT_PTR,
        /// In: the value each is signalled to (`UINT64` array).
        #[offset(32)]
        pub FenceValueArray: D3DKMT_PTR,
    }
}

c_type! {
    /// `D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE`: `D3DKMTSubmitWaitForSyncObjectsToHwQueue`'s
    /// block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_submitwaitforsyncobjectstohwqueue>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE {
        /// In: the hardware queue that waits.
        #[offset(0)]
        pub hHwQueue: D3DKMT_HANDLE,
        /// In: entries in each array.
        #[offset(4)]
        pub ObjectCount: UINT,
        /// In: the sync objects (`D3DKMT_HANDLE` array).
        #[offset(8)]
        pub ObjectHandleArray: D3DKMT_PTR,
        /// In: the value each is waited for (`UINT64` array).
        #[offset(16)]
        pub FenceValueArray: D3DKMT_PTR,
    }
}

c_type! {
    /// `D3DDDI_SYNCHRONIZATIONOBJECTINFO2`: what `D3DKMTCreateSynchronizationObject2` creates.
    /// The union after `Flags` (64 bytes, 8-aligned) is laid out as its `MonitoredFence` arm,
    /// the one rvgpu creates, then the rest of the union as `Reserved`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_synchronizationobjectinfo2>
    #[size(80)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_SYNCHRONIZATIONOBJECTINFO2 {
        /// In: the `D3DDDI_SYNCHRONIZATIONOBJECT_TYPE`, which arm of the union follows.
        #[offset(0)]
        pub Type: UINT,
        /// In: the `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` word.
        #[offset(4)]
        pub Flags: UINT,
        /// `MonitoredFence`, in: the fence's first value.
        #[offset(8)]
        pub InitialFenceValue: UINT64,
        /// `MonitoredFence`, out: the CPU address of the fence's value.
        #[offset(16)]
        pub FenceValueCPUVirtualAddress: D3DKMT_PTR,
        /// `MonitoredFence`, out: the GPU address of the fence's value.
        #[offset(24)]
        pub FenceValueGPUVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// `MonitoredFence`, in: the engines that may signal it.
        #[offset(32)]
        pub EngineAffinity: UINT,
        /// `MonitoredFence`'s tail padding.
        #[offset(36)]
        pub Padding0: UINT,
        /// The rest of the union's 64 bytes.
        #[offset(40)]
        pub Reserved: [UINT64; 4],
        /// Out: the global share handle of a `Shared` object without `NtSecuritySharing`.
        #[offset(72)]
        pub SharedHandle: D3DKMT_HANDLE,
        /// Tail padding to the 8-byte alignment.
        #[offset(76)]
        pub Padding1: UINT,
    }
}

c_type! {
    /// `D3DKMT_CREATESYNCHRONIZATIONOBJECT2`: `D3DKMTCreateSynchronizationObject2`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createsynchronizationobject2>
    #[size(96)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATESYNCHRONIZATIONOBJECT2 {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// Alignment of `Info`.
        #[offset(4)]
        pub Padding0: UINT,
        /// In/out: the object.
        #[offset(8)]
        pub Info: D3DDDI_SYNCHRONIZATIONOBJECTINFO2,
        /// Out: the sync object.
        #[offset(88)]
        pub hSyncObject: D3DKMT_HANDLE,
        /// Tail padding to the 8-byte alignment.
        #[offset(92)]
        pub Padding1: UINT,
    }
}
