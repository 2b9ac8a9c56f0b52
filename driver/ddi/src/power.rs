//! Runtime power management (component-level F-states): the power-component answers of
//! `DXGKQAITYPE_NUMPOWERCOMPONENTS` / `DXGKQAITYPE_POWERCOMPONENTINFO`, and the two DDIs the
//! OS calls when `DXGK_DRIVERCAPS::SupportRuntimePowerManagement` is set.
//!
//! Layouts are the 10.0.22621 `d3dkmddi.h` ("Defines for runtime power management"), x86_64;
//! the byte offsets below were also read back from the decompiled 22631 dxgkrnl
//! (`DXGADAPTER::InitializePowerManagement` reads `StateCount` at +0, `States[i]` at
//! +8 + 24·i, `ComponentMapping.ComponentType` at +200, `NodeIndex` at +204, `Flags` at +208,
//! `ComponentGuid` at +212, `ProviderCount` at +268, `Providers` at +272, and passes an
//! `OutputDataSize` of 336).

use crate::basic::{GUID, HANDLE, NTSTATUS, PVOID, SIZE_T, UINT};
use crate::macros::{
    bitfield, c_enum, c_type, extern_fn, flag_word, layout, unbound_fn, union_debug, zeroed_default,
};

/// `DXGK_FSTATE_UNKNOWN_POWER`: an unknown `NominalPower`.
pub const DXGK_FSTATE_UNKNOWN_POWER: u32 = 0xFFFF_FFFF;
/// `DXGK_FSTATE_UNKNOWN_TIME`: an unknown latency or residency.
// wdk-layout-check: skip: bindgen types the all-ones 64-bit #define as a signed -1 (same bits)
pub const DXGK_FSTATE_UNKNOWN_TIME: u64 = 0xFFFF_FFFF_FFFF_FFFF;
/// `DXGK_MAX_F_STATES`: entries in `DXGK_POWER_RUNTIME_COMPONENT::States`.
pub const DXGK_MAX_F_STATES: usize = 8;
/// `DXGK_POWER_COMPONENT_NAME_SIZE`.
pub const DXGK_POWER_COMPONENT_NAME_SIZE: usize = 40;
/// `DXGK_MAX_POWER_COMPONENT_PROVIDERS`.
pub const DXGK_MAX_POWER_COMPONENT_PROVIDERS: usize = 16;

c_type! {
    /// `DXGK_POWER_RUNTIME_STATE`: one F-state of a component.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_power_runtime_state>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_RUNTIME_STATE {
        /// 100 ns units to return to F0 from this state; 0 for F0.
        #[offset(0)]
        pub TransitionLatency: u64,
        /// 100 ns units the component must stay in this state for it to be worthwhile; 0 for F0.
        #[offset(8)]
        pub ResidencyRequirement: u64,
        /// Microwatts drawn in this state; non-zero for F0.
        #[offset(16)]
        pub NominalPower: u32,
    }
}

c_enum! {
    /// `DXGK_POWER_COMPONENT_TYPE` (C enum).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_power_component_type>
    pub type DXGK_POWER_COMPONENT_TYPE = i32 {
        /// An engine (a node): `EngineDesc.NodeIndex` names it.
        DXGK_POWER_COMPONENT_ENGINE,
        /// A monitor.
        DXGK_POWER_COMPONENT_MONITOR,
        /// A monitor refresh.
        DXGK_POWER_COMPONENT_MONITOR_REFRESH,
        /// A memory segment.
        DXGK_POWER_COMPONENT_MEMORY,
        /// Memory refresh.
        DXGK_POWER_COMPONENT_MEMORY_REFRESH,
        /// Another component.
        DXGK_POWER_COMPONENT_OTHER,
        /// The D3 transition component.
        DXGK_POWER_COMPONENT_D3_TRANSITION,
        /// A shared component.
        DXGK_POWER_COMPONENT_SHARED,
        /// One past the last type (WDDM 2.2+ headers).
        DXGK_POWER_COMPONENT_MAX,
    }
}

c_type! {
    /// The one-`UINT` descriptions of `DXGK_POWER_COMPONENT_MAPPING`'s anonymous union (the C
    /// header declares one unnamed struct per component type; every one is a single `UINT`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_power_component_mapping>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_POWER_COMPONENT_MAPPING_0 {
        /// `EngineDesc.NodeIndex` (`DXGK_POWER_COMPONENT_ENGINE`).
        pub EngineDesc: DXGK_POWER_COMPONENT_ENGINE_DESC,
        /// `MonitorRefreshDesc.VidPnSourceID`.
        pub MonitorRefreshDesc: DXGK_POWER_COMPONENT_MONITOR_REFRESH_DESC,
        /// `MonitorDesc.VidPnTargetID`.
        pub MonitorDesc: DXGK_POWER_COMPONENT_MONITOR_DESC,
        /// `MemoryDesc.SegmentID` (zero-based).
        pub MemoryDesc: DXGK_POWER_COMPONENT_MEMORY_DESC,
        /// `SharedDesc.SharedType`.
        pub SharedDesc: DXGK_POWER_COMPONENT_SHARED_DESC,
    }
}

impl Default for DXGK_POWER_COMPONENT_MAPPING_0 {
    fn default() -> Self {
        Self {
            EngineDesc: DXGK_POWER_COMPONENT_ENGINE_DESC::default(),
        }
    }
}

// Every member is one UINT, so reading any of them is reading the word.
union_debug!(DXGK_POWER_COMPONENT_MAPPING_0 => EngineDesc);

c_type! {
    /// `DXGK_POWER_COMPONENT_ENGINE_DESC` (named in a header comment).
    // wdk-layout-check: skip: unnamed struct inside DXGK_POWER_COMPONENT_MAPPING (checked through the parent's union)
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_COMPONENT_ENGINE_DESC {
        /// The node (engine) the component powers.
        #[offset(0)]
        pub NodeIndex: UINT,
    }
}

c_type! {
    /// `DXGK_POWER_COMPONENT_MONITOR_REFRESH_DESC` (named in a header comment).
    // wdk-layout-check: skip: unnamed struct inside DXGK_POWER_COMPONENT_MAPPING (checked through the parent's union)
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_COMPONENT_MONITOR_REFRESH_DESC {
        /// The VidPN source.
        #[offset(0)]
        pub VidPnSourceID: UINT,
    }
}

c_type! {
    /// `DXGK_POWER_COMPONENT_MONITOR_DESC` (named in a header comment).
    // wdk-layout-check: skip: unnamed struct inside DXGK_POWER_COMPONENT_MAPPING (checked through the parent's union)
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_COMPONENT_MONITOR_DESC {
        /// The VidPN target.
        #[offset(0)]
        pub VidPnTargetID: UINT,
    }
}

c_type! {
    /// `DXGK_POWER_COMPONENT_MEMORY_DESC` (named in a header comment).
    // wdk-layout-check: skip: unnamed struct inside DXGK_POWER_COMPONENT_MAPPING (checked through the parent's union)
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_COMPONENT_MEMORY_DESC {
        /// Zero-based memory segment index.
        #[offset(0)]
        pub SegmentID: UINT,
    }
}

c_type! {
    /// `DXGK_POWER_COMPONENT_SHARED_DESC` (named in a header comment): `SharedType`, or its two
    /// WORD halves `SharedTypeFlag` and `DriverCustomValueSet`.
    // wdk-layout-check: skip: unnamed struct inside DXGK_POWER_COMPONENT_MAPPING (checked through the parent's union)
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_COMPONENT_SHARED_DESC {
        /// `SharedType`.
        #[offset(0)]
        pub SharedType: UINT,
    }
}

c_type! {
    /// `DXGK_POWER_COMPONENT_MAPPING`: what a component powers.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_power_component_mapping>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct DXGK_POWER_COMPONENT_MAPPING {
        /// The component's type.
        #[offset(0)]
        pub ComponentType: DXGK_POWER_COMPONENT_TYPE,
        /// The type's description.
        #[offset(4)]
        pub Anonymous: DXGK_POWER_COMPONENT_MAPPING_0,
    }
}

flag_word! {
    /// `DXGK_POWER_COMPONENT_FLAGS` (WDDM 1.3+ layout).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_power_component_flags>
    pub struct DXGK_POWER_COMPONENT_FLAGS {
        /// Old drivers set it; reserved.
        Reserved0,
        /// The driver calls `DxgkCbCompleteFStateTransition` for this component.
        DriverCompletesFStateTransition,
        /// The component goes to F0 when the device leaves D0.
        TransitionTo_F0_OnDx,
        /// No debounce of idle transitions.
        NoDebounce,
        /// Active in D3 (memory and shared components only).
        ActiveInD3,
    }
}
layout!(DXGK_POWER_COMPONENT_FLAGS, size = 4, Value = 0);

bitfield! {
    /// `DXGK_POWER_COMPONENT_INDEX`: the index the OS passes in `POWERCOMPONENTINFO`'s
    /// input, `DxgkDdiSetPowerComponentFState` and `DxgkCbCompleteFStateTransition` (low
    /// word: the component of the physical adapter; high word: the physical adapter).
    ///
    /// d3dkmddi.h (10.0.22621), "Defines for runtime power management".
    pub struct DXGK_POWER_COMPONENT_INDEX: u32 {
        /// Zero-based index relative to the physical adapter.
        PhysicalAdapterComponentIndex: 0, 16;
        /// The physical adapter of a linked configuration.
        PhysicalAdapterIndex: 16, 16;
    }
}
layout!(DXGK_POWER_COMPONENT_INDEX, size = 4, Value = 0);

c_type! {
    /// `DXGK_POWER_RUNTIME_COMPONENT`: the `DXGKQAITYPE_POWERCOMPONENTINFO` answer (336 bytes).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_power_runtime_component>
    #[size(336)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_POWER_RUNTIME_COMPONENT {
        /// F-states in `States` (1..=8).
        #[offset(0)]
        pub StateCount: u32,
        /// F0, F1, ….
        #[offset(8)]
        pub States: [DXGK_POWER_RUNTIME_STATE; DXGK_MAX_F_STATES],
        /// What the component powers.
        #[offset(200)]
        pub ComponentMapping: DXGK_POWER_COMPONENT_MAPPING,
        /// Behaviour flags.
        #[offset(208)]
        pub Flags: DXGK_POWER_COMPONENT_FLAGS,
        /// A GUID for the PEP.
        #[offset(212)]
        pub ComponentGuid: GUID,
        /// A name (ASCII) for the PEP.
        #[offset(228)]
        pub ComponentName: [u8; DXGK_POWER_COMPONENT_NAME_SIZE],
        /// Entries of `Providers` in use.
        #[offset(268)]
        pub ProviderCount: u32,
        /// Components this one depends on.
        #[offset(272)]
        pub Providers: [u32; DXGK_MAX_POWER_COMPONENT_PROVIDERS],
    }
}

zeroed_default!(DXGK_POWER_RUNTIME_COMPONENT);

/// `DXGK_MAX_P_STATES`: entries in `DXGK_POWER_P_COMPONENT::States`.
pub const DXGK_MAX_P_STATES: usize = 32;

c_type! {
    /// `DXGK_POWER_P_STATE`: one P-state of an engine component.
    ///
    /// d3dkmddi.h (10.0.22621), "Windows Next runtime power management enhancements".
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_P_STATE {
        /// The operating frequency in this P-state (non-zero, decreasing with the P-state).
        #[offset(0)]
        pub OperatingFrequency: u32,
    }
}

c_type! {
    /// `DXGK_POWER_P_COMPONENT`: the `DXGKQAITYPE_POWERCOMPONENTPSTATEINFO` answer (136 bytes).
    ///
    /// d3dkmddi.h (10.0.22621); Dxgkrnl passes `OutputDataSize` 136 (\[D\] 22631
    /// `DXGADAPTER::InitializePowerManagement`).
    #[size(136)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DXGK_POWER_P_COMPONENT {
        /// P-states in `States` (at most 32).
        #[offset(0)]
        pub StateCount: u32,
        /// P0, P1, ….
        #[offset(4)]
        pub States: [DXGK_POWER_P_STATE; DXGK_MAX_P_STATES],
        /// `DXGK_POWER_COMPONENT_P_FLAGS` (all reserved).
        #[offset(132)]
        pub Flags: u32,
    }
}

zeroed_default!(DXGK_POWER_P_COMPONENT);

extern_fn! {
    /// `DXGKDDIPOWERRUNTIMECONTROLREQUEST` (at most DISPATCH_LEVEL): `(DriverContext,
    /// PowerControlCode, InBuffer, InBufferSize, OutBuffer, OutBufferSize, BytesReturned)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddipowerruntimecontrolrequest>
    pub type PDXGKDDIPOWERRUNTIMECONTROLREQUEST = fn(
        DriverContext: HANDLE,
        PowerControlCode: *const GUID,
        InBuffer: PVOID,
        InBufferSize: SIZE_T,
        OutBuffer: PVOID,
        OutBufferSize: SIZE_T,
        BytesReturned: *mut SIZE_T,
    ) -> NTSTATUS;
}

/// `GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START` {CBA549D4-CF3A-445C-9468-2383FD523116}:
/// Dxgkrnl registered the device with PoFx and is about to start runtime power management.
pub const GUID_DXGKDDI_POWER_MANAGEMENT_PREPARE_TO_START: GUID = GUID {
    Data1: 0xcba5_49d4,
    Data2: 0xcf3a,
    Data3: 0x445c,
    Data4: [0x94, 0x68, 0x23, 0x83, 0xfd, 0x52, 0x31, 0x16],
};
/// `GUID_DXGKDDI_POWER_MANAGEMENT_STARTED` {6C929C1D-7D76-4538-93AD-449DC9FDC239}.
pub const GUID_DXGKDDI_POWER_MANAGEMENT_STARTED: GUID = GUID {
    Data1: 0x6c92_9c1d,
    Data2: 0x7d76,
    Data3: 0x4538,
    Data4: [0x93, 0xad, 0x44, 0x9d, 0xc9, 0xfd, 0xc2, 0x39],
};
/// `GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED` {0A9D9621-BC21-4DD4-A0FC-D976E428F738}.
pub const GUID_DXGKDDI_POWER_MANAGEMENT_STOPPED: GUID = GUID {
    Data1: 0x0a9d_9621,
    Data2: 0xbc21,
    Data3: 0x4dd4,
    Data4: [0xa0, 0xfc, 0xd9, 0x76, 0xe4, 0x28, 0xf7, 0x38],
};

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDISETPOWERPSTATE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_driver_initialization_data");
unbound_fn!(PDXGKDDI_POWERRUNTIMESETDEVICEHANDLE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_powerruntimesetdevicehandle");
unbound_fn!(PDXGKDDI_SETTRACKEDWORKLOADPOWERLEVEL, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_settrackedworkloadpowerlevel");
