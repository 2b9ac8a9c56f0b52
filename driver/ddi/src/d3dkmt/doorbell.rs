//! The WDDM 3.2 doorbell thunks' blocks: `D3DKMTCreateDoorbell`, `D3DKMTConnectDoorbell`,
//! `D3DKMTDestroyDoorbell`, `D3DKMTNotifyWorkSubmission`. Offsets follow from the member lists
//! of the reference pages under the x64 rules (`D3DKMT_PTR` members 8 bytes, 8-aligned). A
//! flag word member is its `Value` (a `UINT`), so that the block stays plain bytes.

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::{c_type, flag_word, reserved_flags};

flag_word! {
    /// `D3DKMT_CREATE_DOORBELL_FLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_create_doorbell_flags>
    pub struct D3DKMT_CREATE_DOORBELL_FLAGS {
        /// A secondary CPU address of the doorbell is wanted.
        RequireSecondaryCpuVA,
        /// The doorbell replaces one whose ring buffer is being resized.
        ResizeRingBufferOperation,
    }
}

reserved_flags! {
    /// `D3DKMT_CONNECT_DOORBELL_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_connect_doorbell_flags>
    D3DKMT_CONNECT_DOORBELL_FLAGS;
    /// `D3DKMT_NOTIFY_WORK_SUBMISSION_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_notify_work_submission_flags>
    D3DKMT_NOTIFY_WORK_SUBMISSION_FLAGS;
}

c_type! {
    /// `D3DKMT_CREATE_DOORBELL`: `D3DKMTCreateDoorbell`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_create_doorbell>
    #[size(72)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATE_DOORBELL {
        /// In: the user-mode-submission hardware queue.
        #[offset(0)]
        pub hHwQueue: D3DKMT_HANDLE,
        /// In: the ring buffer allocation.
        #[offset(4)]
        pub hRingBuffer: D3DKMT_HANDLE,
        /// In: the ring buffer control allocation.
        #[offset(8)]
        pub hRingBufferControl: D3DKMT_HANDLE,
        /// In: the [`D3DKMT_CREATE_DOORBELL_FLAGS`] word.
        #[offset(12)]
        pub Flags: UINT,
        /// In: bytes at `PrivateDriverData`.
        #[offset(16)]
        pub PrivateDriverDataSize: UINT,
        /// Alignment of the next member.
        #[offset(20)]
        pub Padding0: UINT,
        /// In/out: the UMD's private data for the KMD.
        #[offset(24)]
        pub PrivateDriverData: D3DKMT_PTR,
        /// Out: the doorbell's CPU address.
        #[offset(32)]
        pub DoorbellCPUVirtualAddress: D3DKMT_PTR,
        /// Out: the secondary CPU address (asked for by `RequireSecondaryCpuVA`).
        #[offset(40)]
        pub DoorbellSecondaryCPUVirtualAddress: D3DKMT_PTR,
        /// Out: the doorbell status's CPU address.
        #[offset(48)]
        pub DoorbellStatusCPUVirtualAddress: D3DKMT_PTR,
        /// Out: the CPU address of the queue progress fence's last queued value.
        #[offset(56)]
        pub HwQueueProgressFenceLastQueuedValueCPUVirtualAddress: D3DKMT_PTR,
        /// Out: the doorbell.
        #[offset(64)]
        pub hDoorbell: D3DKMT_HANDLE,
        /// Tail padding to the 8-byte alignment.
        #[offset(68)]
        pub Padding1: UINT,
    }
}

c_type! {
    /// `D3DKMT_CONNECT_DOORBELL`: `D3DKMTConnectDoorbell`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_connect_doorbell>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CONNECT_DOORBELL {
        /// In: the doorbell.
        #[offset(0)]
        pub hDoorbell: D3DKMT_HANDLE,
        /// In: the [`D3DKMT_CONNECT_DOORBELL_FLAGS`] word (reserved).
        #[offset(4)]
        pub Flags: UINT,
    }
}

c_type! {
    /// `D3DKMT_DESTROY_DOORBELL`: `D3DKMTDestroyDoorbell`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_destroy_doorbell>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_DESTROY_DOORBELL {
        /// In: the doorbell.
        #[offset(0)]
        pub hDoorbell: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DKMT_NOTIFY_WORK_SUBMISSION`: `D3DKMTNotifyWorkSubmission`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_notify_work_submission>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_NOTIFY_WORK_SUBMISSION {
        /// In: the doorbell.
        #[offset(0)]
        pub hDoorbell: D3DKMT_HANDLE,
        /// In: the [`D3DKMT_NOTIFY_WORK_SUBMISSION_FLAGS`] word (reserved).
        #[offset(4)]
        pub Flags: UINT,
    }
}
