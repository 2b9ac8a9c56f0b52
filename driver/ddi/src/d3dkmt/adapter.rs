//! The adapter thunks' blocks: `D3DKMTOpenAdapterFromLuid`, `D3DKMTEnumAdapters2` (with its
//! `D3DKMT_ADAPTERINFO` entries), `D3DKMTIsFeatureEnabled`, `D3DKMTQueryAdapterInfo` and
//! `D3DKMTEscape` (addressed to an adapter, optionally a device and context). Offsets follow from the member
//! lists of the reference pages under the x64 rules (`D3DKMT_PTR` members 8 bytes, 8-aligned;
//! `LUID` two 4-byte halves; a flag word is its `UINT` value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::feature::DXGK_FEATURE_ID;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_OPENADAPTERFROMLUID`: `D3DKMTOpenAdapterFromLuid`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_openadapterfromluid>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_OPENADAPTERFROMLUID {
        /// In: the adapter's LUID.
        #[offset(0)]
        pub AdapterLuid: LUID,
        /// Out: the adapter in the caller's handle table.
        #[offset(8)]
        pub hAdapter: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DKMT_ADAPTERINFO`: one adapter `D3DKMTEnumAdapters2` lists.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_adapterinfo>
    #[size(20)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_ADAPTERINFO {
        /// The adapter, opened in the caller's handle table.
        #[offset(0)]
        pub hAdapter: D3DKMT_HANDLE,
        /// The adapter's LUID.
        #[offset(4)]
        pub AdapterLuid: LUID,
        /// The adapter's video present sources.
        #[offset(12)]
        pub NumOfSources: ULONG,
        /// `BOOL`: whether precise present regions are preferred.
        #[offset(16)]
        pub bPrecisePresentRegionsPreferred: INT,
    }
}

c_type! {
    /// `D3DKMT_ENUMADAPTERS2`: `D3DKMTEnumAdapters2`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_enumadapters2>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_ENUMADAPTERS2 {
        /// In: entries at `pAdapters`; out: entries written (or, with no array, the most).
        #[offset(0)]
        pub NumAdapters: ULONG,
        /// Alignment of the next member.
        #[offset(4)]
        pub Padding0: UINT,
        /// Out: the caller's [`D3DKMT_ADAPTERINFO`] array, or none.
        #[offset(8)]
        pub pAdapters: D3DKMT_PTR,
    }
}

c_type! {
    /// `D3DKMT_ISFEATUREENABLED`: `D3DKMTIsFeatureEnabled`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_isfeatureenabled>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_ISFEATUREENABLED {
        /// In: the adapter, or 0 for the global feature database.
        #[offset(0)]
        pub hAdapter: D3DKMT_HANDLE,
        /// In: the feature.
        #[offset(4)]
        pub FeatureId: DXGK_FEATURE_ID,
        /// Out: the `DXGK_ISFEATUREENABLED_RESULT` word (`Version` in the low 16 bits, then
        /// `Enabled`, `KnownFeature`).
        #[offset(8)]
        pub Result: UINT,
    }
}

c_type! {
    /// `D3DKMT_QUERYADAPTERINFO`: `D3DKMTQueryAdapterInfo`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_queryadapterinfo>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_QUERYADAPTERINFO {
        /// In: the adapter.
        #[offset(0)]
        pub hAdapter: D3DKMT_HANDLE,
        /// In: the `KMTQUERYADAPTERINFOTYPE`, which structure `pPrivateDriverData` holds.
        #[offset(4)]
        pub Type: UINT,
        /// In/out: that structure in the caller's memory.
        #[offset(8)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// In: its size in bytes.
        #[offset(16)]
        pub PrivateDriverDataSize: UINT,
        /// Tail padding to the 8-byte alignment.
        #[offset(20)]
        pub Padding0: UINT,
    }
}

c_type! {
    /// `D3DKMT_ESCAPE`: `D3DKMTEscape`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_escape>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_ESCAPE {
        /// In: the adapter.
        #[offset(0)]
        pub hAdapter: D3DKMT_HANDLE,
        /// In: the device, or 0.
        #[offset(4)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the `D3DKMT_ESCAPETYPE`.
        #[offset(8)]
        pub Type: UINT,
        /// In: the `D3DDDI_ESCAPEFLAGS` word.
        #[offset(12)]
        pub Flags: UINT,
        /// In/out: the escape's data in the caller's memory.
        #[offset(16)]
        pub pPrivateDriverData: D3DKMT_PTR,
        /// In: its size in bytes.
        #[offset(24)]
        pub PrivateDriverDataSize: UINT,
        /// In: the context, or 0.
        #[offset(28)]
        pub hContext: D3DKMT_HANDLE,
    }
}
