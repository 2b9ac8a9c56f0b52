//! WDDM feature enablement: `DXGK_FEATURE_ID`, the `DxgkServicesFeature` interface
//! ([`DXGK_FEATURE_INTERFACE`]) and the native-fence feature interface (d3dukmdt.h, d3dkmddi.h,
//! dispmprt.h).
//!
//! Flow (NF-10): `DxgkCbQueryServices(DeviceHandle, DxgkServicesFeature, &mut iface)` fills a
//! [`DXGK_FEATURE_INTERFACE`] (`Size`/`Version` set by the caller, version
//! [`DXGK_FEATURE_INTERFACE_VERSION_1`]); `IsFeatureEnabled` with
//! [`DXGKARGCB_ISFEATUREENABLED2`] for [`DXGK_FEATURE_NATIVE_FENCE`]; if enabled,
//! `QueryFeatureInterface` with [`DXGKARGCB_QUERYFEATUREINTERFACE`] returns a
//! [`DXGKCBINT_FEATURE_NATIVEFENCE_1`] whose `GetOSCaps` fills
//! [`DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1`].

use core::ffi::c_void;

use crate::basic::*;
use crate::macros::{bitfield, c_enum, c_type, extern_fn, interface_table, layout, reserved_flags};

c_enum! {
    /// `DXGK_FEATURE_ID`: a feature category in the upper 4 bits, a sub-ID in the lower 28.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-dxgk_feature_id>
    pub type DXGK_FEATURE_ID = i32 {
        /// Hardware-accelerated GPU scheduling (driver category).
        DXGK_FEATURE_HWSCH,
        /// Hardware flip queue.
        DXGK_FEATURE_HWFLIPQUEUE,
        /// LDA in GPU paravirtualisation.
        DXGK_FEATURE_LDA_GPUPV,
        /// KMD signals CPU events.
        DXGK_FEATURE_KMD_SIGNAL_CPU_EVENT,
        /// User-mode work submission.
        DXGK_FEATURE_USER_MODE_SUBMISSION,
        /// Share backing store with KMD.
        DXGK_FEATURE_SHARE_BACKING_STORE_WITH_KMD,
        /// Sample feature for testing.
        DXGK_FEATURE_SAMPLE = 31,
        /// Page-based memory manager.
        DXGK_FEATURE_PAGE_BASED_MEMORY_MANAGER,
        /// Kernel-mode testing interface.
        DXGK_FEATURE_KERNEL_MODE_TESTING,
        /// 64K page-table demotion fix.
        DXGK_FEATURE_64K_PT_DEMOTION_FIX,
        /// GPU-PV present on hardware queue fix.
        DXGK_FEATURE_GPUPV_PRESENT_HWQUEUE,
        /// GPU VA with IoMmu.
        DXGK_FEATURE_GPUVAIOMMU,
        /// Native GPU fences (driver category, sub-ID 37; values from a bindgen run over WDK
        /// headers and the `DXGK_DRIVER_FEATURE` reference page).
        DXGK_FEATURE_NATIVE_FENCE,
    }
}
/// Shift of the category field of a [`DXGK_FEATURE_ID`].
pub const DXGK_FEATURE_ID_CATEGORY_SHIFT: u32 = 28;
/// Mask of the sub-ID field of a [`DXGK_FEATURE_ID`].
pub const DXGK_FEATURE_ID_MASK: u32 = 0x0FFF_FFFF;

/// `DXGK_FEATURE_VERSION`: a 16-bit feature version.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_isfeatureenabled_result>
pub type DXGK_FEATURE_VERSION = UINT16;

bitfield! {
    /// Flag half-word of [`DXGK_ISFEATUREENABLED_RESULT`] (anonymous union in C, whose other
    /// member is `DXGK_FEATURE_VERSION Value`).
    pub struct DXGK_ISFEATUREENABLED_RESULT_0: u16 {
        /// The feature is enabled.
        Enabled: 0, 1;
        /// The OS knows the feature.
        KnownFeature: 1, 1;
        /// The driver supports it.
        SupportedByDriver: 2, 1;
        /// Supported on the current configuration.
        SupportedOnCurrentConfig: 3, 1;
        /// Reserved.
        Reserved: 4, 12;
    }
}
layout!(DXGK_ISFEATUREENABLED_RESULT_0, size = 2);

c_type! {
    /// `DXGK_ISFEATUREENABLED_RESULT`: answer of a feature query.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_isfeatureenabled_result>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_ISFEATUREENABLED_RESULT {
        /// Negotiated version when enabled.
        #[offset(0)]
        pub Version: UINT16,
        /// Flags.
        #[offset(2)]
        pub Anonymous: DXGK_ISFEATUREENABLED_RESULT_0,
    }
}

reserved_flags! {
    /// `DXGKARGCB_ISFEATUREENABLED2_FLAGS`: all reserved.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkargcb_isfeatureenabled2>
    DXGKARGCB_ISFEATUREENABLED2_FLAGS;
}

c_type! {
    /// `DXGKARGCB_ISFEATUREENABLED2`: argument of `DXGK_FEATURE_INTERFACE::IsFeatureEnabled`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkargcb_isfeatureenabled2>
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKARGCB_ISFEATUREENABLED2 {
        /// Feature queried.
        #[offset(0)]
        pub FeatureId: DXGK_FEATURE_ID,
        /// Flags.
        #[offset(4)]
        pub Flags: DXGKARGCB_ISFEATUREENABLED2_FLAGS,
        /// Result.
        #[offset(8)]
        pub Result: DXGK_ISFEATUREENABLED_RESULT,
    }
}

c_type! {
    /// `DXGKARGCB_QUERYFEATUREINTERFACE`: argument of
    /// `DXGK_FEATURE_INTERFACE::QueryFeatureInterface`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkargcb_queryfeatureinterface>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_QUERYFEATUREINTERFACE {
        /// Feature whose interface is wanted.
        #[offset(0)]
        pub FeatureId: DXGK_FEATURE_ID,
        /// Negotiated feature version.
        #[offset(4)]
        pub Version: DXGK_FEATURE_VERSION,
        /// In: size of `Interface`; out: size written.
        #[offset(6)]
        pub InterfaceSize: UINT16,
        /// Interface buffer (e.g. a [`DXGKCBINT_FEATURE_NATIVEFENCE_1`]).
        #[offset(8)]
        pub Interface: *mut c_void,
    }
}

/// `DXGKCB_ISFEATUREENABLED2`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_isfeatureenabled2>
pub type DXGKCB_ISFEATUREENABLED2 = DDI_FN<*mut DXGKARGCB_ISFEATUREENABLED2>;

/// `DXGKCB_QUERYFEATUREINTERFACE`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_queryfeatureinterface>
pub type DXGKCB_QUERYFEATUREINTERFACE = DDI_FN<*mut DXGKARGCB_QUERYFEATUREINTERFACE>;

/// `DXGK_FEATURE_INTERFACE_VERSION_1`.
pub const DXGK_FEATURE_INTERFACE_VERSION_1: USHORT = 1;

interface_table! {
    /// `DXGK_FEATURE_INTERFACE`: returned by `DxgkCbQueryServices` for `DxgkServicesFeature`.
    ///
    /// `Version` is [`DXGK_FEATURE_INTERFACE_VERSION_1`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-dxgk_feature_interface>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_FEATURE_INTERFACE {
        /// Feature query.
        #[offset(32)]
        pub IsFeatureEnabled: DXGKCB_ISFEATUREENABLED2,
        /// Feature interface query.
        #[offset(40)]
        pub QueryFeatureInterface: DXGKCB_QUERYFEATUREINTERFACE,
    }
}

impl Default for DXGK_FEATURE_INTERFACE {
    /// Ready to pass to `DxgkCbQueryServices`: `Size` and `Version` set, pointers null.
    fn default() -> Self {
        Self {
            Size: 48,
            Version: DXGK_FEATURE_INTERFACE_VERSION_1,
            Context: core::ptr::null_mut(),
            InterfaceReference: None,
            InterfaceDereference: None,
            IsFeatureEnabled: None,
            QueryFeatureInterface: None,
        }
    }
}

bitfield! {
    /// `DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1`: what the OS supports for native fences.
    ///
    /// The C declaration is two `UINT` bitfields with no `Value` member; the word is 4 bytes.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkargcb_feature_nativefence_caps_1>
    pub struct DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1: u32 {
        /// The OS can place default-type fence storage in local memory.
        SupportOptimizedDefaultFenceType: 0, 1;
        /// The OS supports `D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU`.
        SupportIntraGpuFenceType: 1, 1;
    }
}
layout!(DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1, size = 4);

extern_fn! {
    /// `DXGKCB_FEATURE_NATIVEFENCE_CAPS_1`: the OS's native-fence caps query (no adapter handle).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_feature_nativefence_caps_1>
    pub type DXGKCB_FEATURE_NATIVEFENCE_CAPS_1 = fn(
        pArgs: *mut DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1,
    ) -> NTSTATUS;
}

c_type! {
    /// `DXGKCBINT_FEATURE_NATIVEFENCE_1`: the interface returned for [`DXGK_FEATURE_NATIVE_FENCE`]
    /// version 1.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkcbint_feature_nativefence_1>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGKCBINT_FEATURE_NATIVEFENCE_1 {
        /// OS caps query.
        #[offset(0)]
        pub GetOSCaps: DXGKCB_FEATURE_NATIVEFENCE_CAPS_1,
    }
}

c_type! {
    /// `DXGKARGCB_QUERYFEATURESUPPORT` (WDDM 2.9 `DxgkCbQueryFeatureSupport`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkargcb_queryfeaturesupport>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARGCB_QUERYFEATURESUPPORT {
        /// `DxgkInterface.DeviceHandle`.
        pub DeviceHandle: HANDLE,
        /// Feature.
        #[offset(8)]
        pub FeatureId: DXGK_FEATURE_ID,
        /// One of the `DXGK_FEATURE_SUPPORT_*` values.
        #[offset(12)]
        pub DriverSupportState: UINT,
        /// Out: whether the driver may enable the feature.
        #[offset(16)]
        pub Enabled: BOOLEAN,
    }
}

/// Driver support state: never on.
pub const DXGK_FEATURE_SUPPORT_ALWAYS_OFF: UINT = 0;
/// Driver support state: experimental.
pub const DXGK_FEATURE_SUPPORT_EXPERIMENTAL: UINT = 1;
/// Driver support state: stable.
pub const DXGK_FEATURE_SUPPORT_STABLE: UINT = 2;
/// Driver support state: always on.
pub const DXGK_FEATURE_SUPPORT_ALWAYS_ON: UINT = 3;

extern_fn! {
    /// `DXGKCB_QUERYFEATURESUPPORT`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_queryfeaturesupport>
    pub type DXGKCB_QUERYFEATURESUPPORT = fn(pArgs: *mut DXGKARGCB_QUERYFEATURESUPPORT) -> NTSTATUS;
}

// ---------------------------------------------------------------------------------------------
// The driver's side of the negotiation (WDDM 3.2): Dxgkrnl asks the KMD through
// DxgkDdiQueryInterface for GUID_WDDM_INTERFACE_FEATURE and calls its QueryFeatureSupport for
// every driver feature. Without it Dxgkrnl falls back to a legacy table that knows only the
// oldest feature IDs, so DXGK_FEATURE_NATIVE_FENCE could never be enabled.
// <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/querying-wddm-feature-support-and-enablement>
// ---------------------------------------------------------------------------------------------

/// `GUID_WDDM_INTERFACE_FEATURE` {94BB3993-C6C3-4DA7-8949-A1138232E759} (dispmprt.h, WDDM 3.2).
// wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
pub const GUID_WDDM_INTERFACE_FEATURE: GUID = GUID {
    Data1: 0x94BB_3993,
    Data2: 0xC6C3,
    Data3: 0x4DA7,
    Data4: [0x89, 0x49, 0xA1, 0x13, 0x82, 0x32, 0xE7, 0x59],
};

/// `DXGKDDI_FEATURE_INTERFACE_VERSION_1`: the 48-byte interface of the reference page. (24H2's
/// Dxgkrnl asks for a 56-byte version 2 first and falls back to version 1: decompiled
/// `DpiFeatureStartDevice`.)
// wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
pub const DXGKDDI_FEATURE_INTERFACE_VERSION_1: USHORT = 1;

c_type! {
    /// `DXGKARG_QUERYFEATURESUPPORT`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_queryfeaturesupport>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_QUERYFEATURESUPPORT {
        /// In: the feature.
        #[offset(0)]
        pub FeatureId: DXGK_FEATURE_ID,
        /// Out: lowest version the driver supports (non-zero when supported).
        #[offset(4)]
        pub MinSupportedVersion: DXGK_FEATURE_VERSION,
        /// Out: highest version the driver supports (>= the minimum).
        #[offset(6)]
        pub MaxSupportedVersion: DXGK_FEATURE_VERSION,
        /// In: the driver may report experimental features as supported.
        #[offset(8)]
        pub AllowExperimental: BOOLEAN,
        /// Out: the driver implements the feature.
        #[offset(9)]
        pub SupportedByDriver: BOOLEAN,
        /// Out: the current hardware/configuration can run it.
        #[offset(10)]
        pub SupportedOnCurrentConfig: BOOLEAN,
    }
}

/// `DXGKARG_QUERYFEATUREINTERFACE`: argument of `DxgkDdiQueryFeatureInterface`, with the same
/// fields as [`DXGKARGCB_QUERYFEATUREINTERFACE`] and the roles swapped: Dxgkrnl names the
/// feature, version and buffer size; the driver fills `Interface` and writes the interface's
/// size to `InterfaceSize`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_queryfeatureinterface>
pub type DXGKARG_QUERYFEATUREINTERFACE = DXGKARGCB_QUERYFEATUREINTERFACE;

/// `DXGKDDI_QUERYFEATURESUPPORT` (PASSIVE_LEVEL).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeaturesupport>
pub type PDXGKDDI_QUERYFEATURESUPPORT = DDI_FN<*mut DXGKARG_QUERYFEATURESUPPORT>;
/// `DXGKDDI_QUERYFEATUREINTERFACE` (PASSIVE_LEVEL).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeatureinterface>
pub type PDXGKDDI_QUERYFEATUREINTERFACE = DDI_FN<*mut DXGKARG_QUERYFEATUREINTERFACE>;

interface_table! {
    /// `DXGKDDI_FEATURE_INTERFACE`: the KMD's interface through which Dxgkrnl queries its feature
    /// support (version 1, 48 bytes).
    ///
    /// `Version` is [`DXGKDDI_FEATURE_INTERFACE_VERSION_1`]; `Context` is the adapter context,
    /// passed to every function.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-dxgkddi_feature_interface>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKDDI_FEATURE_INTERFACE {
        /// Feature support query.
        #[offset(32)]
        pub QueryFeatureSupport: PDXGKDDI_QUERYFEATURESUPPORT,
        /// Feature interface query.
        #[offset(40)]
        pub QueryFeatureInterface: PDXGKDDI_QUERYFEATUREINTERFACE,
    }
}
