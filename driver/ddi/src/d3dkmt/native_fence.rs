//! The native fence thunks' blocks: `D3DKMTCreateNativeFence`,
//! `D3DKMTOpenNativeFenceFromNtHandle`, and the d3dukmdt.h blocks inside them. Offsets follow
//! from the member lists of the reference pages under the x64 rules (`D3DKMT_ALIGN64` and
//! `D3DKMT_PTR` members 8 bytes, 8-aligned).

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::fence::{D3DDDI_NATIVEFENCE_TYPE, D3DDDI_NATIVE_FENCE_PDD_SIZE};
use crate::macros::{c_type, reserved_flags};

reserved_flags! {
    /// `D3DKMT_CREATENATIVEFENCE_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_createnativefence_flags>
    D3DKMT_CREATENATIVEFENCE_FLAGS;
}

c_type! {
    /// `D3DDDI_NATIVEFENCEMAPPING`: a native fence's mappings in the caller's process, which
    /// `D3DKMTCreateNativeFence` and `D3DKMTOpenNativeFenceFromNtHandle` return.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_nativefencemapping>
    // wdk-layout-check: skip: 10.0.22621 has the pre-release WDDM 3.1 layout; this follows the 24H2 (WDDM 3.2) reference page
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_NATIVEFENCEMAPPING {
        /// Read-only CPU mapping of the current value (user mode polls it).
        #[offset(0)]
        pub CurrentValueCpuVa: D3DKMT_PTR,
        /// Read/write GPU mapping of the current value in the process address space.
        #[offset(8)]
        pub CurrentValueGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// Read/write GPU mapping of the monitored value in the process address space.
        #[offset(16)]
        pub MonitoredValueGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// Reserved, zero.
        #[offset(24)]
        pub Reserved: [BYTE; 32],
    }
}

c_type! {
    /// `D3DDDI_NATIVEFENCEINFO`: what a native fence is, and its mapping.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_nativefenceinfo>
    // wdk-layout-check: skip: 10.0.22621 has the pre-release WDDM 3.1 layout; this follows the 24H2 (WDDM 3.2) reference page
    #[size(112)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_NATIVEFENCEINFO {
        /// In: the fence's first value.
        #[offset(0)]
        pub InitialFenceValue: UINT64,
        /// In: the engines that may wait on or signal it.
        #[offset(8)]
        pub EngineAffinity: UINT,
        /// In: the kind of fence.
        #[offset(12)]
        pub Type: D3DDDI_NATIVEFENCE_TYPE,
        /// In/out: the `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` word.
        #[offset(16)]
        pub Flags: UINT,
        /// Alignment of the mapping.
        #[offset(20)]
        pub Padding0: UINT,
        /// Out: the fence's mappings in the caller's process.
        #[offset(24)]
        pub NativeFenceMapping: D3DDDI_NATIVEFENCEMAPPING,
        /// Reserved, zero.
        #[offset(80)]
        pub Reserved: [BYTE; 28],
        /// Tail padding to the 8-byte alignment.
        #[offset(108)]
        pub Padding1: UINT,
    }
}

c_type! {
    /// `D3DKMT_CREATENATIVEFENCE`: `D3DKMTCreateNativeFence`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_createnativefence>
    #[size(216)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CREATENATIVEFENCE {
        /// In: the device the fence is made on.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// Out: the fence in this process.
        #[offset(4)]
        pub hSyncObject: D3DKMT_HANDLE,
        /// In/out: the private data the KMD's `DxgkDdiCreateNativeFence` fills.
        #[offset(8)]
        pub PrivateDriverData: [BYTE; D3DDDI_NATIVE_FENCE_PDD_SIZE],
        /// In/out: the fence's description and mapping.
        #[offset(72)]
        pub Info: D3DDDI_NATIVEFENCEINFO,
        /// In: the [`D3DKMT_CREATENATIVEFENCE_FLAGS`] word (reserved).
        #[offset(184)]
        pub Flags: UINT,
        /// Reserved, zero.
        #[offset(188)]
        pub Reserved: [BYTE; 28],
    }
}

impl D3DKMT_CREATENATIVEFENCE {
    /// The block as a caller fills it: a default fence on `hDevice` starting at `initial`
    /// with the `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` word `flags`, every other byte zero.
    pub fn new(hDevice: D3DKMT_HANDLE, initial: UINT64, flags: UINT) -> Self {
        let mut a = Self::new_zeroed();
        a.hDevice = hDevice;
        a.Info.InitialFenceValue = initial;
        a.Info.Flags = flags;
        a
    }
}

c_type! {
    /// `D3DKMT_OPENNATIVEFENCEFROMNTHANDLE`: `D3DKMTOpenNativeFenceFromNtHandle`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_opennativefencefromnthandle>
    #[size(176)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_OPENNATIVEFENCEFROMNTHANDLE {
        /// In: an NT handle of the caller's process (`D3DKMT_PTR(HANDLE, hNtHandle)`).
        #[offset(0)]
        pub hNtHandle: D3DKMT_PTR,
        /// In: the device the fence is opened on.
        #[offset(8)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the engines that may wait on or signal it.
        #[offset(12)]
        pub EngineAffinity: UINT,
        /// In/out: the `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` word.
        #[offset(16)]
        pub Flags: UINT,
        /// Out: the fence in this process.
        #[offset(20)]
        pub hSyncObject: D3DKMT_HANDLE,
        /// Out: the fence's mappings in this process.
        #[offset(24)]
        pub NativeFenceMapping: D3DDDI_NATIVEFENCEMAPPING,
        /// In/out: private data.
        #[offset(80)]
        pub PrivateDriverData: [BYTE; D3DDDI_NATIVE_FENCE_PDD_SIZE],
        /// Reserved, zero.
        #[offset(144)]
        pub Reserved: [BYTE; 32],
    }
}

impl D3DKMT_OPENNATIVEFENCEFROMNTHANDLE {
    /// The block as a caller fills it: `hNtHandle` opened on `hDevice`, every other byte zero.
    pub fn new(hNtHandle: D3DKMT_PTR, hDevice: D3DKMT_HANDLE) -> Self {
        let mut a = Self::new_zeroed();
        a.hNtHandle = hNtHandle;
        a.hDevice = hDevice;
        a
    }
}
