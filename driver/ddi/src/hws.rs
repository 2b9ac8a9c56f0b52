//! Hardware scheduling (HWS, `DXGK_FEATURE_HWSCH`): the DDIs through which the OS drives a GPU
//! scheduler on the device — hardware contexts (`DxgkDdiCreateHwContext`,
//! `DxgkDdiDestroyHwContext`), the per-engine run list (`DxgkDdiSwitchToHwContextList`,
//! `DxgkDdiUpdateHwContextState`), the scheduling log (`DxgkDdiSetSchedulingLogBuffer`),
//! priority bands and per-context scheduling properties (`DxgkDdiSetupPriorityBands`,
//! `DxgkDdiSetContextSchedulingProperties`, `DxgkDdiNotifyFocusPresent`) and engine
//! reset/resume (`DxgkDdiResetHwEngine`, `DxgkDdiResumeHwEngine`) — d3dkmddi.h, plus
//! `D3DDDI_CREATEHWCONTEXTFLAGS` from d3dukmdt.h.
//!
//! Bound elsewhere and not repeated here: `DXGKARG_SUSPENDCONTEXT` / `DXGKARG_RESUMECONTEXT`
//! and their DDIs, the hardware-queue DDIs (`DxgkDdiCreateHwQueue`, `DxgkDdiDestroyHwQueue`,
//! `DxgkDdiSubmitCommandToHwQueue`) in [`crate::submission`]; `DxgkCbInvalidateHwContext` with
//! the other callbacks in [`crate::dxgkrnl`]; the `HwContextListSwitchCompleted`,
//! `SchedulingLogInterrupt`, `GpuEngineTimeout` and `SuspendContextCompleted` interrupt arms in
//! [`crate::interrupt`]. The `DRIVER_INITIALIZATION_DATA` slots are in [`crate::init`].
//!
//! Interface versions: WDDM 2.2 (`0x700A`) introduced hardware contexts, the context-list
//! switch and `DxgkDdiResetHwEngine`; WDDM 2.3 (`0x8001`) `DxgkDdiUpdateHwContextState`;
//! WDDM 2.4 (`0x9006`) everything else here. Every DDI in this module is
//! `_IRQL_requires_(PASSIVE_LEVEL)` except `DxgkDdiNotifyFocusPresent` (PASSIVE_LEVEL up to
//! DISPATCH_LEVEL).
//!
//! Sources: the WDK 10.0.22621 d3dkmddi.h / d3dukmdt.h declarations (member order, types, IRQL
//! annotations, parameter typedefs) and the learn.microsoft.com reference page of each type
//! where one exists; Microsoft publishes none for `DXGKDDI_CREATEHWCONTEXT`,
//! `DXGKDDI_DESTROYHWCONTEXT`, `DXGKARG_CREATEHWCONTEXT` or `DXGK_HWCONTEXT_CAPS`, so those
//! rest on the header alone. Layouts are checked by `wdk-layout-check` against the same
//! headers (with `DXGKDDI_INTERFACE_VERSION=0x11007`) and asserted below for x86_64.
//!
//! Pointer mutability follows the header's parameter typedefs: `IN_CONST_P…` is `*const`,
//! `INOUT_P…` is `*mut`.

use core::ffi::c_void;

use crate::basic::*;
use crate::macros::{
    c_enum, c_type, extern_fn, flag_word, index_word_union, log_buffer_sizes, reserved_flags,
    unbound_fn, union_debug, zeroed_default,
};

// ---------------------------------------------------------------------------------------------
// Hardware contexts (WDDM 2.2)
// ---------------------------------------------------------------------------------------------

reserved_flags! {
    /// `D3DDDI_CREATEHWCONTEXTFLAGS`: creation flags of a hardware context
    /// ([`DXGKARG_CREATEHWCONTEXT::Flags`]). No flag is defined; the whole word is reserved.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_createhwcontextflags>
    D3DDDI_CREATEHWCONTEXTFLAGS;
}

flag_word! {
    /// `DXGK_HWCONTEXT_CAPS`: what the driver reports back about a hardware context it created
    /// ([`DXGKARG_CREATEHWCONTEXT::ContextCaps`]).
    ///
    /// No reference page exists for this type; the layout is the d3dkmddi.h declaration. The
    /// closest page is the user-mode thunk that ends in `DxgkDdiCreateHwContext`:
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatehwcontext>
    pub struct DXGK_HWCONTEXT_CAPS {
        /// The context's GPU accesses go through the IOMMU rather than the GPU MMU.
        UseIoMmu,
    }
}

c_type! {
    /// `DXGKARG_CREATEHWCONTEXT`: argument of `DxgkDdiCreateHwContext` (40 bytes on x64).
    ///
    /// No reference page exists for this type; member order and types are the d3dkmddi.h
    /// declaration. See the thunk it serves:
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createhwcontext>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATEHWCONTEXT {
        /// In: the runtime's handle of the new context. Out: the driver's handle, which the OS
        /// passes back in every later call about this context.
        #[offset(0)]
        pub hHwContext: HANDLE,
        /// In: the node the context will run on.
        #[offset(8)]
        pub NodeOrdinal: UINT,
        /// In: engine affinity within the node (physical adapter mask).
        #[offset(12)]
        pub EngineAffinity: UINT,
        /// In: creation flags (none defined).
        #[offset(16)]
        pub Flags: D3DDDI_CREATEHWCONTEXTFLAGS,
        /// In: size in bytes of `pPrivateDriverData`.
        #[offset(20)]
        pub PrivateDriverDataSize: UINT,
        /// In/out: private data exchanged with the user-mode driver.
        #[offset(24)]
        pub pPrivateDriverData: *mut c_void,
        /// Out: capabilities of the created context.
        #[offset(32)]
        pub ContextCaps: DXGK_HWCONTEXT_CAPS,
    }
}

/// `DXGKDDI_CREATEHWCONTEXT` (PASSIVE_LEVEL; WDDM 2.2+): `(IN_CONST_HANDLE hDevice,
/// INOUT_PDXGKARG_CREATEHWCONTEXT pCreateContext)`. Creates a hardware context on a device
/// created by `DxgkDdiCreateDevice`; the driver writes its own handle into `hHwContext`.
///
/// No reference page exists for this DDI; the signature is the d3dkmddi.h typedef.
/// Related documentation (the thunk):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatehwcontext>
pub type PDXGKDDI_CREATEHWCONTEXT = DDI_FN<*mut DXGKARG_CREATEHWCONTEXT>;

extern_fn! {
    /// `DXGKDDI_DESTROYHWCONTEXT` (PASSIVE_LEVEL; WDDM 2.2+): `(IN_CONST_HANDLE hHwContext)` —
    /// the driver's handle from [`DXGKARG_CREATEHWCONTEXT::hHwContext`].
    ///
    /// No reference page exists for this DDI; the signature is the d3dkmddi.h typedef.
    /// Related documentation (the thunk):
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroyhwcontext>
    pub type PDXGKDDI_DESTROYHWCONTEXT = fn(hHwContext: HANDLE) -> NTSTATUS;
}

// ---------------------------------------------------------------------------------------------
// Run list and context state (WDDM 2.2 / 2.3)
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `DXGKARG_SWITCHTOHWCONTEXTLIST`: the (at most two) contexts one engine should run next.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_switchtohwcontextlist>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SWITCHTOHWCONTEXTLIST {
        /// The context to run now; if the engine is running something else it preempts it. NULL
        /// tells the engine to go idle.
        #[offset(0)]
        pub hHwContextFirst: HANDLE,
        /// The context to run once every queue of `hHwContextFirst` is idle or waiting; may be
        /// NULL.
        #[offset(8)]
        pub hHwContextSecond: HANDLE,
        /// Node of the engine being switched.
        #[offset(16)]
        pub NodeOrdinal: UINT,
        /// Engine (physical adapter) within the node.
        #[offset(20)]
        pub EngineOrdinal: UINT,
    }
}

/// `DXGKDDI_SWITCHTOHWCONTEXTLIST` (PASSIVE_LEVEL; WDDM 2.2+): `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_SWITCHTOHWCONTEXTLIST pHwContextList)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_switchtohwcontextlist>
pub type PDXGKDDI_SWITCHTOHWCONTEXTLIST = DDI_FN<*const DXGKARG_SWITCHTOHWCONTEXTLIST>;

flag_word! {
    /// `DXGK_UPDATEHWCONTEXTSTATE_FLAGS`: requested execution state of a hardware context.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_updatehwcontextstate_flags>
    pub struct DXGK_UPDATEHWCONTEXTSTATE_FLAGS {
        /// 1: suspend the context; 0: it may run.
        Suspended,
        /// Raise `DXGK_INTERRUPT_HWCONTEXTLIST_SWITCH_COMPLETED` once the GPU has applied the
        /// new state.
        InterruptOnSwitchCompletion,
    }
}

c_type! {
    /// `DXGKARG_UPDATEHWCONTEXTSTATE`: new priority and run state of one hardware context.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_updatehwcontextstate>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_UPDATEHWCONTEXTSTATE {
        /// The driver's handle of the context being changed.
        #[offset(0)]
        pub hHwContext: HANDLE,
        /// Fence value that identifies this request (reported back with the switch-completed
        /// interrupt).
        #[offset(8)]
        pub ContextSwitchFence: UINT64,
        /// Priority relative to the other running contexts of the same node.
        #[offset(16)]
        pub Priority: UINT,
        /// Requested run state.
        #[offset(20)]
        pub Flags: DXGK_UPDATEHWCONTEXTSTATE_FLAGS,
    }
}

/// `DXGKDDI_UPDATEHWCONTEXTSTATE` (PASSIVE_LEVEL; WDDM 2.3+): `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_UPDATEHWCONTEXTSTATE pUpdateHwContextState)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updatehwcontextstate>
pub type PDXGKDDI_UPDATEHWCONTEXTSTATE = DDI_FN<*const DXGKARG_UPDATEHWCONTEXTSTATE>;

// ---------------------------------------------------------------------------------------------
// Scheduling log (WDDM 2.4)
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `DXGK_SCHEDULING_LOG_OPERATION`: what a scheduling log entry records
    /// ([`DXGK_SCHEDULING_LOG_ENTRY::OperationType`], declared `UINT` there). Each operation has
    /// its own arm of the entry's payload union.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_scheduling_log_operation>
    pub type DXGK_SCHEDULING_LOG_OPERATION = i32 {
        /// A context changed state ([`DXGK_SCHEDULING_LOG_ENTRY_0::ContextStateChange`]).
        DXGK_SCHEDULING_LOG_OPERATION_CONTEXT_STATE_CHANGE,
    }

    /// `DXGK_SCHEDULING_LOG_CONTEXT_STATE`: execution state of a context as the GPU scheduler logs
    /// it.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_scheduling_log_context_state>
    pub type DXGK_SCHEDULING_LOG_CONTEXT_STATE = i32 {
        /// No work pending on the context.
        DXGK_SCHEDULING_LOG_CONTEXT_STATE_IDLE,
        /// The context is executing on the GPU.
        DXGK_SCHEDULING_LOG_CONTEXT_STATE_RUNNING,
        /// Work is pending but the context is not executing.
        DXGK_SCHEDULING_LOG_CONTEXT_STATE_READY,
        /// Ready and already chosen as the next context to run, but not started yet (optional state).
        DXGK_SCHEDULING_LOG_CONTEXT_STATE_READY_STANDBY,
    }
}

c_type! {
    /// `DXGK_SCHEDULING_LOG_CONTEXT_STATE_CHANGE`: payload of a context-state-change log entry.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_scheduling_log_context_state_change>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_SCHEDULING_LOG_CONTEXT_STATE_CHANGE {
        /// The driver's handle of the context.
        #[offset(0)]
        pub hKmdContext: HANDLE,
        /// The state the context entered.
        #[offset(8)]
        pub newContextState: DXGK_SCHEDULING_LOG_CONTEXT_STATE,
    }
}

index_word_union!(
    DXGK_SCHEDULING_LOG_HEADER_0,
    DXGK_SCHEDULING_LOG_HEADER_0_0,
    DXGK_SCHEDULING_LOG_HEADER,
    "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_scheduling_log_header"
);

c_type! {
    /// `DXGK_SCHEDULING_LOG_HEADER`: header of a scheduling log buffer (32 bytes). The OS hands
    /// the buffer over with the index and wraparound count at zero and `NumberOfEntries` set; the
    /// entries themselves are not initialised.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_scheduling_log_header>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_SCHEDULING_LOG_HEADER {
        /// `FirstFreeEntryIndex` / `WraparoundCount` / `AtomicWraparoundAndEntryIndex`.
        #[offset(0)]
        pub Anonymous: DXGK_SCHEDULING_LOG_HEADER_0,
        /// Number of entries in the buffer's `Entries` array.
        #[offset(8)]
        pub NumberOfEntries: UINT64,
        /// Reserved.
        #[offset(16)]
        pub Reserved: [UINT64; 2],
    }
}

c_type! {
    /// The anonymous payload union of [`DXGK_SCHEDULING_LOG_ENTRY`], selected by `OperationType`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_scheduling_log_entry>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGK_SCHEDULING_LOG_ENTRY_0 {
        /// [`DXGK_SCHEDULING_LOG_OPERATION_CONTEXT_STATE_CHANGE`].
        #[offset(0)]
        pub ContextStateChange: DXGK_SCHEDULING_LOG_CONTEXT_STATE_CHANGE,
        /// Raw view; sizes the union.
        #[offset(0)]
        pub ReservedOperationData: [UINT64; 2],
    }
}

// The valid arm depends on the entry's `OperationType`, which the union cannot see.
union_debug!(DXGK_SCHEDULING_LOG_ENTRY_0);

c_type! {
    /// `DXGK_SCHEDULING_LOG_ENTRY`: one logged scheduling event (32 bytes).
    ///
    /// `OperationType` and `ReservedOperationTypeBits` are declared in C as 32-bit bitfields of a
    /// `UINT` (to hold an enum value in a fixed width); each fills its own word, so they are bound
    /// as plain `UINT`s with the same layout.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_scheduling_log_entry>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_SCHEDULING_LOG_ENTRY {
        /// GPU timestamp of the event.
        #[offset(0)]
        pub GpuTimeStamp: UINT64,
        /// A [`DXGK_SCHEDULING_LOG_OPERATION`] value: which arm of `Anonymous` is valid.
        #[offset(8)]
        pub OperationType: UINT,
        /// Reserved.
        #[offset(12)]
        pub ReservedOperationTypeBits: UINT,
        /// Per-operation payload.
        #[offset(16)]
        pub Anonymous: DXGK_SCHEDULING_LOG_ENTRY_0,
    }
}

c_type! {
    /// `DXGK_SCHEDULING_LOG_BUFFER`: a header followed by `Header.NumberOfEntries` entries
    /// (declared with a one-element array, so `size_of` covers one entry only; use
    /// [`Self::size_for_entries`]).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_scheduling_log_buffer>
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGK_SCHEDULING_LOG_BUFFER {
        /// Header.
        #[offset(0)]
        pub Header: DXGK_SCHEDULING_LOG_HEADER,
        /// First entry of the variable-length array.
        #[offset(32)]
        pub Entries: [DXGK_SCHEDULING_LOG_ENTRY; 1],
    }
}

log_buffer_sizes!(
    DXGK_SCHEDULING_LOG_BUFFER,
    DXGK_SCHEDULING_LOG_HEADER,
    DXGK_SCHEDULING_LOG_ENTRY
);

c_type! {
    /// `DXGKARG_SETSCHEDULINGLOGBUFFER`: the scheduling log buffer one engine writes to from now
    /// on. The call is synchronous: once it returns, the engine must not write to the previous
    /// buffer.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_setschedulinglogbuffer>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SETSCHEDULINGLOGBUFFER {
        /// In: node.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// In: engine (physical adapter) within the node.
        #[offset(4)]
        pub EngineOrdinal: UINT,
        /// In: number of entries in the buffer.
        #[offset(8)]
        pub NumberOfEntries: UINT,
        /// In: kernel-mode CPU address of the buffer
        /// ([`DXGK_SCHEDULING_LOG_BUFFER::size_for_entries`]`(NumberOfEntries)` bytes).
        #[offset(16)]
        pub LogBufferCpuVa: *mut DXGK_SCHEDULING_LOG_BUFFER,
        /// In: GPU virtual address of the same buffer.
        #[offset(24)]
        pub LogBufferGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In: index (below `NumberOfEntries`) of the entry whose write must also raise
        /// `DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT`.
        #[offset(32)]
        pub InterruptEntry: UINT,
    }
}

/// `DXGKDDI_SETSCHEDULINGLOGBUFFER` (PASSIVE_LEVEL; WDDM 2.4+): `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_SETSCHEDULINGLOGBUFFER pSetSchedulingLogBuffer)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setschedulinglogbuffer>
pub type PDXGKDDI_SETSCHEDULINGLOGBUFFER = DDI_FN<*const DXGKARG_SETSCHEDULINGLOGBUFFER>;

// ---------------------------------------------------------------------------------------------
// Priority bands and context scheduling properties (WDDM 2.4)
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `DXGK_SCHEDULING_PRIORITY_BAND`: the scheduler's priority bands, lowest first.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_scheduling_priority_band>
    pub type DXGK_SCHEDULING_PRIORITY_BAND = i32 {
        /// Background work; never preempts another band.
        DXGK_SCHEDULING_PRIORITY_BAND_IDLE,
        /// Ordinary work.
        DXGK_SCHEDULING_PRIORITY_BAND_NORMAL,
        /// Work of the application that has the focus.
        DXGK_SCHEDULING_PRIORITY_BAND_FOCUS,
        /// Realtime work.
        DXGK_SCHEDULING_PRIORITY_BAND_REALTIME,
        /// Number of bands (length of the per-band arrays of [`DXGKARG_SETUPPRIORITYBANDS`]).
        DXGK_SCHEDULING_PRIORITY_BAND_COUNT,
    }
}

c_type! {
    /// `DXGKARG_SETUPPRIORITYBANDS`: adapter-wide priority band configuration (104 bytes). Arrays
    /// are indexed by [`DXGK_SCHEDULING_PRIORITY_BAND`]; times are in 100 ns units.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_setupprioritybands>
    #[size(104)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_SETUPPRIORITYBANDS {
        /// How long a band's work waits before it preempts a lower band (ignored for IDLE, which
        /// never preempts; usually 0 for REALTIME).
        #[offset(0)]
        pub gracePeriodForBand: [UINT64; DXGK_SCHEDULING_PRIORITY_BAND_COUNT as usize],
        /// Default time slice between processes within a band.
        #[offset(32)]
        pub processQuantumForBand: [UINT64; DXGK_SCHEDULING_PRIORITY_BAND_COUNT as usize],
        /// Default grace period when processes of the same band preempt each other.
        #[offset(64)]
        pub processGracePeriodForBand: [UINT64; DXGK_SCHEDULING_PRIORITY_BAND_COUNT as usize],
        /// GPU share (0..=50 percent, default 10) the NORMAL band should still get while the
        /// FOCUS band starves it.
        #[offset(96)]
        pub targetNormalBandPercentage: UINT,
    }
}

/// `DXGKDDI_SETUPPRIORITYBANDS` (PASSIVE_LEVEL; WDDM 2.4+): `(IN_CONST_HANDLE hAdapter,
/// IN_CONST_PDXGKARG_SETUPPRIORITYBANDS pSetupPriorityBands)`. Called after the adapter starts
/// and before the first work is scheduled, and possibly again while work runs (the new values
/// apply from the scheduler's next decision).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setupprioritybands>
pub type PDXGKDDI_SETUPPRIORITYBANDS = DDI_FN<*const DXGKARG_SETUPPRIORITYBANDS>;

extern_fn! {
    /// `DXGKDDI_NOTIFYFOCUSPRESENT` (PASSIVE_LEVEL..DISPATCH_LEVEL; WDDM 2.4+):
    /// `(IN_CONST_HANDLE hAdapter)`. Tells the scheduler that the focus application presented.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_notifyfocuspresent>
    pub type PDXGKDDI_NOTIFYFOCUSPRESENT = fn(hAdapter: HANDLE) -> NTSTATUS;
}

c_type! {
    /// `DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES`: band, priorities and time slices of one context
    /// (48 bytes). Times are in 100 ns units.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_setcontextschedulingproperties>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES {
        /// The driver's handle of the context.
        #[offset(0)]
        pub hContext: HANDLE,
        /// Band the context belongs to (FOCUS and REALTIME need `SE_INC_BASE_PRIORITY_NAME` in the
        /// calling process).
        #[offset(8)]
        pub priorityBand: DXGK_SCHEDULING_PRIORITY_BAND,
        /// Level 0..=31 among REALTIME contexts; ignored in other bands.
        #[offset(12)]
        pub realtimeBandPriorityLevel: INT,
        /// Priority -7..=+7 (default 0) relative to the process's other contexts.
        #[offset(16)]
        pub inProcessPriority: INT,
        /// Time slice relative to the process's other contexts of the same priority.
        #[offset(24)]
        pub quantum: UINT64,
        /// Grace period when preempting a context of the same priority in the same process.
        #[offset(32)]
        pub gracePeriodSamePriority: UINT64,
        /// Grace period when preempting a lower-priority context in the same process (usually
        /// shorter than `gracePeriodSamePriority`).
        #[offset(40)]
        pub gracePeriodLowerPriority: UINT64,
    }
}

/// `DXGKDDI_SETCONTEXTSCHEDULINGPROPERTIES` (PASSIVE_LEVEL; WDDM 2.4+): `(IN_CONST_HANDLE
/// hAdapter, IN_CONST_PDXGKARG_SETCONTEXTSCHEDULINGPROPERTIES pSetContextSchedulingProperties)`.
/// The OS calls it before the first submission to a new context and whenever the context's
/// device priority or the application's focus changes; the change takes effect from the band's
/// next scheduling round.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setcontextschedulingproperties>
pub type PDXGKDDI_SETCONTEXTSCHEDULINGPROPERTIES =
    DDI_FN<*const DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES>;

// ---------------------------------------------------------------------------------------------
// Engine reset and resume (WDDM 2.2 / 2.4)
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `DXGKARG_RESETHWENGINE`: the engine `DxgkDdiResetHwEngine` resets.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_resethwengine>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_RESETHWENGINE {
        /// In: node of the engine.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// In: engine within the node.
        #[offset(4)]
        pub EngineOrdinal: UINT,
    }
}

/// `DXGKDDI_RESETHWENGINE` (PASSIVE_LEVEL; WDDM 2.2+): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_RESETHWENGINE pResetHwEngine)`. The driver reports every context the reset
/// damaged with `DxgkCbInvalidateHwContext`; the engine stays stopped until
/// `DxgkDdiResumeHwEngine`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resethwengine>
pub type PDXGKDDI_RESETHWENGINE = DDI_FN<*mut DXGKARG_RESETHWENGINE>;

c_type! {
    /// `DXGKARG_RESUMEHWENGINE`: the engine `DxgkDdiResumeHwEngine` restarts.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_resumehwengine>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGKARG_RESUMEHWENGINE {
        /// In: node of the engine.
        #[offset(0)]
        pub NodeOrdinal: UINT,
        /// In: engine within the node.
        #[offset(4)]
        pub EngineOrdinal: UINT,
    }
}

/// `DXGKDDI_RESUMEHWENGINE` (PASSIVE_LEVEL; WDDM 2.4+): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_RESUMEHWENGINE pResumeHwEngine)`. After a successful engine reset, lets the
/// engine schedule again every runnable context that was not invalidated. A failure makes the
/// OS reset the whole GPU.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resumehwengine>
pub type PDXGKDDI_RESUMEHWENGINE = DDI_FN<*mut DXGKARG_RESUMEHWENGINE>;

zeroed_default!(
    DXGKARG_CREATEHWCONTEXT,
    DXGKARG_SWITCHTOHWCONTEXTLIST,
    DXGKARG_UPDATEHWCONTEXTSTATE,
    DXGK_SCHEDULING_LOG_CONTEXT_STATE_CHANGE,
    DXGK_SCHEDULING_LOG_ENTRY_0,
    DXGK_SCHEDULING_LOG_ENTRY,
    DXGK_SCHEDULING_LOG_BUFFER,
    DXGKARG_SETSCHEDULINGLOGBUFFER,
    DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES,
);

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_NOTIFYCONTEXTPRIORITYCHANGE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_notifycontextprioritychange");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::macros::assert_fields_fill_word;

    #[test]
    fn flag_words_are_contiguous() {
        assert_fields_fill_word!(
            D3DDDI_CREATEHWCONTEXTFLAGS,
            DXGK_HWCONTEXT_CAPS,
            DXGK_UPDATEHWCONTEXTSTATE_FLAGS
        );
    }

    #[test]
    fn key_bits_and_values() {
        assert_eq!(
            DXGK_HWCONTEXT_CAPS::default()
                .with(DXGK_HWCONTEXT_CAPS::UseIoMmu, 1)
                .Value,
            1
        );
        let f = DXGK_UPDATEHWCONTEXTSTATE_FLAGS::default().with(
            DXGK_UPDATEHWCONTEXTSTATE_FLAGS::InterruptOnSwitchCompletion,
            1,
        );
        assert_eq!(f.Value, 2);
        assert!(!f.is_set(DXGK_UPDATEHWCONTEXTSTATE_FLAGS::Suspended));
        assert_eq!(DXGK_SCHEDULING_LOG_OPERATION_CONTEXT_STATE_CHANGE, 0);
        assert_eq!(DXGK_SCHEDULING_LOG_CONTEXT_STATE_READY_STANDBY, 3);
        assert_eq!(DXGK_SCHEDULING_PRIORITY_BAND_REALTIME, 3);
        assert_eq!(DXGK_SCHEDULING_PRIORITY_BAND_COUNT, 4);
        assert_eq!(
            DXGKARG_SETUPPRIORITYBANDS::default()
                .gracePeriodForBand
                .len(),
            4
        );
    }

    #[test]
    fn log_buffer_sizes_match_the_header_annotation() {
        // d3dkmddi.h: `_Field_size_bytes_(32 + 32 * NumberOfEntries)`.
        for n in [0u64, 1, 2048] {
            assert_eq!(
                DXGK_SCHEDULING_LOG_BUFFER::size_for_entries(n),
                Some(32 + 32 * n)
            );
        }
        assert_eq!(DXGK_SCHEDULING_LOG_BUFFER::entry_offset(0), Some(32));
        assert_eq!(DXGK_SCHEDULING_LOG_BUFFER::entry_offset(3), Some(128));
        assert_eq!(DXGK_SCHEDULING_LOG_BUFFER::size_for_entries(u64::MAX), None);
    }

    #[test]
    fn log_header_halves_share_the_word() {
        let h = DXGK_SCHEDULING_LOG_HEADER_0::from_parts(5, 2);
        assert_eq!(h.get(), (2u64 << 32) | 5);
        let p = DXGK_SCHEDULING_LOG_HEADER_0::from_u64((7u64 << 32) | 9).parts();
        assert_eq!((p.FirstFreeEntryIndex, p.WraparoundCount), (9, 7));
        assert_eq!(DXGK_SCHEDULING_LOG_HEADER::default().Anonymous.get(), 0);
    }

    #[test]
    fn log_entry_payload_overlays_the_raw_words() {
        let mut e = DXGK_SCHEDULING_LOG_ENTRY {
            GpuTimeStamp: 0x1234,
            OperationType: DXGK_SCHEDULING_LOG_OPERATION_CONTEXT_STATE_CHANGE as UINT,
            ..Default::default()
        };
        // Member by member, so the arm's padding keeps the zero bytes of `Default`.
        e.Anonymous.ContextStateChange.hKmdContext = 0x40usize as HANDLE;
        e.Anonymous.ContextStateChange.newContextState = DXGK_SCHEDULING_LOG_CONTEXT_STATE_RUNNING;
        // SAFETY: the union was zeroed (Default) and then two members of the ContextStateChange
        // arm written in place; every byte is initialised and the raw arm reads plain words.
        let raw = unsafe { e.Anonymous.ReservedOperationData };
        assert_eq!(raw, [0x40, 1]);
    }

    #[test]
    fn defaults_are_zero() {
        let c = DXGKARG_CREATEHWCONTEXT::default();
        assert!(c.hHwContext.is_null() && c.pPrivateDriverData.is_null());
        assert_eq!((c.Flags.Value, c.ContextCaps.Value), (0, 0));
        let b = DXGKARG_SETUPPRIORITYBANDS::default();
        assert_eq!(b.targetNormalBandPercentage, 0);
        assert!(DXGKARG_SETSCHEDULINGLOGBUFFER::default()
            .LogBufferCpuVa
            .is_null());
    }
}
