//! The blocks of the thunks that signal and wait on sync objects from the CPU
//! (`D3DKMTSignalSynchronizationObjectFromCpu`, `D3DKMTWaitForSynchronizationObjectFromCpu`)
//! and on a hardware queue (`D3DKMTSubmitSignalSyncObjectsToHwQueue`,
//! `D3DKMTSubmitWaitForSyncObjectsToHwQueue`).
//! Offsets follow from the member lists of the reference pages under the x64 rules
//! (`D3DKMT_PTR` members 8 bytes, 8-aligned; a flag word is its `UINT` value).

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
