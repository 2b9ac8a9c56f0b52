//! Native GPU fences and their logs (NF-, LOG-; d3dkmddi.h, d3dukmdt.h).
//!
//! Sources: the learn.microsoft.com reference page of each type (syntax blocks give member order
//! and types), cross-checked against C# bindings generated from an SDK `d3dkmddi.h`
//! (smourier/DirectN) and against the "Native GPU fence objects" design page. Every layout is
//! asserted for x86_64 below; offsets follow from MSVC natural alignment (pointers, `HANDLE`,
//! `UINT64` and `D3DGPU_VIRTUAL_ADDRESS` are 8-aligned, `UINT`/enums/flag words 4-aligned).
//!
//! Of the eight native-fence DDIs only [`PDXGKDDI_CREATENATIVEFENCE`],
//! [`PDXGKDDI_OPENNATIVEFENCE`] and [`PDXGKDDI_CLOSENATIVEFENCE`] receive `hAdapter`; the other
//! five ([`PDXGKDDI_DESTROYNATIVEFENCE`], [`PDXGKDDI_UPDATEMONITOREDVALUES`],
//! [`PDXGKDDI_UPDATECURRENTVALUESFROMCPU`], [`PDXGKDDI_SETNATIVEFENCELOGBUFFER`],
//! [`PDXGKDDI_UPDATENATIVEFENCELOGS`]) receive only their argument structure, so the driver must
//! find its adapter through the fence or hardware-queue handle it returned earlier.

use core::ffi::c_void;

use crate::basic::*;
use crate::macros::{
    c_enum, c_type, extern_fn, flag_word, index_word_union, log_buffer_sizes, reserved_flags,
    unbound_fn, zeroed_default,
};

c_type! {
    /// `DXGK_NATIVE_FENCE_CAPS`: answer to `DXGKQAITYPE_NATIVE_FENCE_CAPS` (56 bytes on x64, which
    /// is also the output size dxgkrnl passes for this query).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_native_fence_caps>
    // wdk-layout-check: skip: 10.0.22621 has the pre-release WDDM 3.1 layout; this follows the 24H2 (WDDM 3.2) reference page
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_NATIVE_FENCE_CAPS {
        /// Stride between the monitored values of fences packed into one page.
        #[offset(0)]
        pub MonitoredValueStride: UINT,
        /// Map current/monitored values into the system (paging) process GPU VA space for the CMP.
        #[offset(4)]
        pub MapToGpuSystemProcess: BOOLEAN,
        /// Lowest GPU VA for fence mappings (optional, 0 = no limit).
        #[offset(8)]
        pub MinimumAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Highest GPU VA for fence mappings (optional, 0 = no limit).
        #[offset(16)]
        pub MaximumAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Reserved.
        #[offset(24)]
        pub Reserved: [BYTE; 28],
    }
}

// ---------------------------------------------------------------------------------------------
// d3dukmdt.h: fence type, per-process mapping, private-data size
// ---------------------------------------------------------------------------------------------

/// `D3DDDI_NATIVE_FENCE_PDD_SIZE`: size in bytes of the private driver data carried by
/// [`DXGKARG_CREATENATIVEFENCE`] and [`DXGKARG_OPENNATIVEFENCE`] (the UMD's
/// `D3DKMT_CREATENATIVEFENCE::PrivateDriverData`).
///
/// Value from the "Native GPU fence objects" design page (`#define D3DDDI_NATIVE_FENCE_PDD_SIZE 64`)
/// and the SDK-generated bindings (`SizeConst = 64`).
pub const D3DDDI_NATIVE_FENCE_PDD_SIZE: usize = 64;

c_enum! {
    /// `D3DDDI_NATIVEFENCE_TYPE`: kind of native fence (storage placement and CPU access).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-d3dddi_nativefence_type>
    pub type D3DDDI_NATIVEFENCE_TYPE = i32 {
        /// Full CPU and GPU interoperability; current and monitored values in system memory (or the
        /// monitored value in local memory for the "optimized" variant).
        D3DDDI_NATIVEFENCE_TYPE_DEFAULT,
        /// Engine-to-engine synchronisation only: no CPU access, no CPU wait/signal.
        D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU,
    }
}

// ---------------------------------------------------------------------------------------------
// Flag words (all `union { struct { UINT ... }; UINT Value; }`)
// ---------------------------------------------------------------------------------------------

reserved_flags! {
    /// `DXGKARG_CREATENATIVEFENCE_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_createnativefence_flags>
    DXGKARG_CREATENATIVEFENCE_FLAGS;
    /// `DXGK_OPENNATIVEFENCE_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_opennativefence_flags>
    DXGK_OPENNATIVEFENCE_FLAGS;
    /// `DXGK_CLOSENATIVEFENCE_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_closenativefence_flags>
    DXGK_CLOSENATIVEFENCE_FLAGS;
    /// `DXGK_DESTROYNATIVEFENCE_FLAGS` (all bits reserved). The `DXGKARG_DESTROYNATIVEFENCE`
    /// page's prose calls it `DXGKARG_DESTROYNATIVEFENCE_FLAGS`; its syntax block and the
    /// flags' own page use this name.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_destroynativefence_flags>
    DXGK_DESTROYNATIVEFENCE_FLAGS;
    /// `DXGKARG_UPDATEMONITOREDVALUES_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_updatemonitoredvalues_flags>
    DXGKARG_UPDATEMONITOREDVALUES_FLAGS;
}

flag_word! {
    /// `DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_updatecurrentvaluesfromcpu_flags>
    pub struct DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS {
        /// The fence can no longer be relied on (e.g. its device is in error): the new value is
        /// "always signaled"; GPU waits on it must pass at once and GPU signals of it must not
        /// touch its storage.
        AlwaysSignaled,
        /// Do not write the current value: it was already updated (cross-adapter fence); only
        /// re-scan the runlist and unblock GPU waiters now satisfied.
        NotificationOnly,
    }
}

reserved_flags! {
    /// `DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_setnativefencelogbuffer_flags>
    DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS;
    /// `DXGKARG_UPDATENATIVEFENCELOGS_FLAGS` (all bits reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_updatenativefencelogs_flags>
    DXGKARG_UPDATENATIVEFENCELOGS_FLAGS;
}

// ---------------------------------------------------------------------------------------------
// Create / open / close / destroy
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `DXGKARG_CREATENATIVEFENCE`: argument of `DxgkDdiCreateNativeFence`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_createnativefence>
    // wdk-layout-check: skip: 10.0.22621 has the pre-release WDDM 3.1 layout; this follows the 24H2 (WDDM 3.2) reference page
    #[size(136)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATENATIVEFENCE {
        /// In: the dxgkrnl handle of the fence. Out: the driver's global fence handle, which
        /// dxgkrnl passes back in later DDIs and which the driver reports in
        /// `NativeFenceSignaled::pSignaledNativeFenceArray`.
        #[offset(0)]
        pub hGlobalNativeFence: HANDLE,
        /// In: fence type.
        #[offset(8)]
        pub Type: D3DDDI_NATIVEFENCE_TYPE,
        /// In: current value's GPU VA in the system process (only if
        /// [`DXGK_NATIVE_FENCE_CAPS::MapToGpuSystemProcess`]).
        #[offset(16)]
        pub CurrentValueSystemProcessGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In: monitored value's GPU VA in the system process (only if `MapToGpuSystemProcess`).
        #[offset(24)]
        pub MonitoredValueSystemProcessGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In/out: private data from the UMD's `D3DKMTCreateNativeFence`, copied back to it.
        #[offset(32)]
        pub pPrivateDriverData: [BYTE; D3DDDI_NATIVE_FENCE_PDD_SIZE],
        /// In: flags.
        #[offset(96)]
        pub Flags: DXGKARG_CREATENATIVEFENCE_FLAGS,
        /// Reserved.
        #[offset(100)]
        pub Reserved: [BYTE; 32],
    }
}

c_type! {
    /// `DXGKARG_OPENNATIVEFENCE`: argument of `DxgkDdiOpenNativeFence` (one per process / device
    /// that opens the fence, including the creating one).
    ///
    /// Two layouts are published. The current en-us reference page (syntax generated from a
    /// recent header) has `pPrivateDriverData[D3DDDI_NATIVE_FENCE_PDD_SIZE]` between `Flags` and
    /// `Reserved` (144 bytes, bound here); the Microsoft docs source, the older localized pages
    /// and SDK-generated bindings (smourier/DirectN) have no `pPrivateDriverData` (80 bytes, see
    /// [`DXGKARG_OPENNATIVEFENCE_SIZE_WITHOUT_PDD`]). 24H2 passes the 144-byte one:
    /// `DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC (nohuto/decompiled-pseudocode, 11-24H2 at
    /// 47643d2d3267a3915bcb22adebae1a7734bba79f, dxgkrnl) builds it on the stack as five 8-byte
    /// fields (the fence's driver handle, the device sync object, the device's driver handle, the
    /// CurrentValue and MonitoredValue GPU VAs) followed by a 104-byte tail it zeroes: `Flags`,
    /// `pPrivateDriverData` and `Reserved` all 0.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_opennativefence>
    #[size(144)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_OPENNATIVEFENCE {
        /// In: the driver's global handle from `DxgkDdiCreateNativeFence`.
        #[offset(0)]
        pub hGlobalNativeFence: HANDLE,
        /// In: the dxgkrnl handle of the local object. Out: the driver's local handle.
        #[offset(8)]
        pub hLocalNativeFence: HANDLE,
        /// In: driver handle of the parent device of the local object.
        #[offset(16)]
        pub hDevice: HANDLE,
        /// In: current value's GPU VA in the user process.
        #[offset(24)]
        pub CurrentValueGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In: monitored value's GPU VA in the user process.
        #[offset(32)]
        pub MonitoredValueGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In: flags.
        #[offset(40)]
        pub Flags: DXGK_OPENNATIVEFENCE_FLAGS,
        /// Private driver data (24H2 passes zeros, see the type documentation).
        #[offset(44)]
        pub pPrivateDriverData: [BYTE; D3DDDI_NATIVE_FENCE_PDD_SIZE],
        /// Reserved.
        #[offset(108)]
        pub Reserved: [BYTE; 32],
    }
}

/// Size of [`DXGKARG_OPENNATIVEFENCE`] in the published variant without `pPrivateDriverData`
/// (`Reserved` at 44, 76 bytes of members padded to 80). Not a header constant.
pub const DXGKARG_OPENNATIVEFENCE_SIZE_WITHOUT_PDD: usize = 80;

/// Bytes of [`DXGKARG_OPENNATIVEFENCE`] that both published variants share (through `Flags`).
pub const DXGKARG_OPENNATIVEFENCE_COMMON_PREFIX: usize = 44;

c_type! {
    /// `DXGKARG_CLOSENATIVEFENCE`: argument of `DxgkDdiCloseNativeFence`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_closenativefence>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CLOSENATIVEFENCE {
        /// In: the driver's local handle from `DxgkDdiOpenNativeFence`.
        #[offset(0)]
        pub hLocalNativeFence: HANDLE,
        /// In: flags.
        #[offset(8)]
        pub Flags: DXGK_CLOSENATIVEFENCE_FLAGS,
        /// Reserved.
        #[offset(12)]
        pub Reserved: [BYTE; 32],
    }
}

c_type! {
    /// `DXGKARG_DESTROYNATIVEFENCE`: argument of `DxgkDdiDestroyNativeFence`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_destroynativefence>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_DESTROYNATIVEFENCE {
        /// In: the driver's global handle from `DxgkDdiCreateNativeFence`.
        #[offset(0)]
        pub hGlobalNativeFence: HANDLE,
        /// In: flags.
        #[offset(8)]
        pub Flags: DXGK_DESTROYNATIVEFENCE_FLAGS,
        /// Reserved.
        #[offset(12)]
        pub Reserved: [BYTE; 32],
    }
}

// ---------------------------------------------------------------------------------------------
// Monitored / current value updates
// ---------------------------------------------------------------------------------------------

c_type! {
    /// `DXGKARG_UPDATEMONITOREDVALUES`: argument of `DxgkDdiUpdateMonitoredValues` (three parallel
    /// arrays of `NumFences` entries; there is no per-fence entry structure). The kernel CPU VAs
    /// are valid only for the duration of the call.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_updatemonitoredvalues>
    // wdk-layout-check: skip: 10.0.22621 has the pre-release WDDM 3.1 layout; this follows the 24H2 (WDDM 3.2) reference page
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_UPDATEMONITOREDVALUES {
        /// In: `NumFences` native fence handles.
        #[offset(0)]
        pub NativeFenceArray: *mut HANDLE,
        /// In: `NumFences` new monitored values.
        #[offset(8)]
        pub UpdatedValueArray: *mut UINT64,
        /// In: `NumFences` read/write kernel CPU VAs of the monitored values.
        #[offset(16)]
        pub MonitoredValueKernelCpuVa: *mut *mut c_void,
        /// In: number of fences.
        #[offset(24)]
        pub NumFences: UINT,
        /// In: flags.
        #[offset(28)]
        pub Flags: DXGKARG_UPDATEMONITOREDVALUES_FLAGS,
        /// Reserved.
        #[offset(32)]
        pub Reserved: [BYTE; 28],
    }
}

c_type! {
    /// `DXGKARG_UPDATECURRENTVALUESFROMCPU`: argument of `DxgkDdiUpdateCurrentValuesFromCpu`
    /// (parallel arrays of `NumFences` entries; kernel CPU VAs valid only during the call).
    ///
    /// Member order from the reference page, confirmed by SDK-generated bindings. (The design
    /// page's draft declaration puts `Flags` and `NumFences` first; that draft is not the header.)
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_updatecurrentvaluesfromcpu>
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_UPDATECURRENTVALUESFROMCPU {
        /// In: `NumFences` native fence handles.
        #[offset(0)]
        pub NativeFenceArray: *mut HANDLE,
        /// In: `NumFences` new current values.
        #[offset(8)]
        pub UpdatedValueArray: *mut UINT64,
        /// In: `NumFences` read/write kernel CPU VAs of the current values.
        #[offset(16)]
        pub CurrentValueKernelCpuVa: *mut *mut c_void,
        /// In: number of fences.
        #[offset(24)]
        pub NumFences: UINT,
        /// In: flags (`AlwaysSignaled`, `NotificationOnly`).
        #[offset(28)]
        pub Flags: DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS,
        /// Reserved.
        #[offset(32)]
        pub Reserved: [BYTE; 28],
    }
}

// ---------------------------------------------------------------------------------------------
// Native fence logs (d3dukmdt.h) and their DDIs (d3dkmddi.h)
// ---------------------------------------------------------------------------------------------

c_enum! {
    /// `DXGK_NATIVE_FENCE_LOG_TYPE`: which operations a log buffer records.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-dxgk_native_fence_log_type>
    pub type DXGK_NATIVE_FENCE_LOG_TYPE = i32 {
        /// The log records waits.
        DXGK_NATIVE_FENCE_LOG_TYPE_WAITS = 1,
        /// The log records signals.
        DXGK_NATIVE_FENCE_LOG_TYPE_SIGNALS,
    }

    /// `DXGK_NATIVE_FENCE_LOG_OPERATION`: the operation of one log entry
    /// ([`DXGK_NATIVE_FENCE_LOG_ENTRY::OperationType`], declared `UINT` there).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-dxgk_native_fence_log_operation>
    pub type DXGK_NATIVE_FENCE_LOG_OPERATION = i32 {
        /// A signal executed on the GPU.
        DXGK_NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED,
        /// A wait was satisfied on the GPU.
        DXGK_NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED,
    }
}

index_word_union!(
    DXGK_NATIVE_FENCE_LOG_HEADER_0,
    DXGK_NATIVE_FENCE_LOG_HEADER_0_0,
    DXGK_NATIVE_FENCE_LOG_HEADER,
    "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_native_fence_log_header"
);

c_type! {
    /// `DXGK_NATIVE_FENCE_LOG_HEADER`: header of a native fence log buffer (40 bytes).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_native_fence_log_header>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_NATIVE_FENCE_LOG_HEADER {
        /// `FirstFreeEntryIndex` / `WraparoundCount` / `AtomicWraparoundAndEntryIndex`.
        #[offset(0)]
        pub Anonymous: DXGK_NATIVE_FENCE_LOG_HEADER_0,
        /// Waits or signals log.
        #[offset(8)]
        pub Type: DXGK_NATIVE_FENCE_LOG_TYPE,
        /// Number of entries in the buffer's `Entries` array.
        #[offset(16)]
        pub NumberOfEntries: UINT64,
        /// Reserved.
        #[offset(24)]
        pub Reserved: [UINT64; 2],
    }
}

c_type! {
    /// `DXGK_NATIVE_FENCE_LOG_ENTRY`: one logged fence operation (48 bytes).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_native_fence_log_entry>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_NATIVE_FENCE_LOG_ENTRY {
        /// UMD payload: the signaled / unblocked fence value.
        #[offset(0)]
        pub FenceValue: UINT64,
        /// UMD payload: the user-mode `D3DKMT_HANDLE` of the fence.
        #[offset(8)]
        pub hNativeFence: D3DKMT_HANDLE,
        /// UMD payload: a [`DXGK_NATIVE_FENCE_LOG_OPERATION`] value.
        #[offset(12)]
        pub OperationType: UINT,
        /// Reserved (alignment).
        #[offset(16)]
        pub Reserved0: UINT64,
        /// GPU payload, `WAIT_UNBLOCKED` only: when the engine first saw the unresolved wait.
        #[offset(24)]
        pub FenceObservedGpuTimestamp: UINT64,
        /// Reserved (alignment).
        #[offset(32)]
        pub Reserved1: UINT64,
        /// GPU payload: when the operation completed on the GPU.
        #[offset(40)]
        pub FenceEndGpuTimestamp: UINT64,
    }
}

c_type! {
    /// `DXGK_NATIVE_FENCE_LOG_BUFFER`: a header followed by `Header.NumberOfEntries` entries
    /// (declared with a one-element array, so `size_of` covers one entry only; use
    /// [`Self::size_for_entries`]).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-dxgk_native_fence_log_buffer>
    #[size(88)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_NATIVE_FENCE_LOG_BUFFER {
        /// Header.
        #[offset(0)]
        pub Header: DXGK_NATIVE_FENCE_LOG_HEADER,
        /// First entry of the variable-length array.
        #[offset(40)]
        pub Entries: [DXGK_NATIVE_FENCE_LOG_ENTRY; 1],
    }
}

log_buffer_sizes!(
    DXGK_NATIVE_FENCE_LOG_BUFFER,
    DXGK_NATIVE_FENCE_LOG_HEADER,
    DXGK_NATIVE_FENCE_LOG_ENTRY
);

c_type! {
    /// `DXGKARG_SETNATIVEFENCELOGBUFFER`: argument of `DxgkDdiSetNativeFenceLogBuffer` (one call
    /// per log buffer: each hardware queue has a waits log and a signals log; the OS may replace a
    /// buffer later with another call).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_setnativefencelogbuffer>
    #[size(80)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SETNATIVEFENCELOGBUFFER {
        /// In: driver handle of the hardware queue the log belongs to.
        #[offset(0)]
        pub hHwQueue: HANDLE,
        /// In: number of entries in the buffer.
        #[offset(8)]
        pub NumberOfEntries: UINT,
        /// In: read/write kernel CPU VA of the buffer.
        #[offset(16)]
        pub LogBufferCpuVa: *mut DXGK_NATIVE_FENCE_LOG_BUFFER,
        /// In: read/write GPU VA of the buffer in the user process address space.
        #[offset(24)]
        pub LogBufferGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In: read/write GPU VA of the buffer in the system process address space.
        #[offset(32)]
        pub LogBufferSystemProcessGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In: flags.
        #[offset(40)]
        pub Flags: DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS,
        /// Reserved.
        #[offset(44)]
        pub Reserved: [BYTE; 32],
    }
}

c_type! {
    /// `DXGKARG_UPDATENATIVEFENCELOGS`: argument of `DxgkDdiUpdateNativeFenceLogs` (flush pending
    /// log writes of the listed queues, both logs each).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_updatenativefencelogs>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_UPDATENATIVEFENCELOGS {
        /// In: number of handles in `hHWQueue`.
        #[offset(0)]
        pub NumberOfQueues: UINT,
        /// In: driver handles of the hardware queues.
        #[offset(8)]
        pub hHWQueue: *mut HANDLE,
        /// In: flags.
        #[offset(16)]
        pub Flags: DXGKARG_UPDATENATIVEFENCELOGS_FLAGS,
        /// Reserved.
        #[offset(20)]
        pub Reserved: [BYTE; 32],
    }
}

zeroed_default!(
    DXGKARG_CREATENATIVEFENCE,
    DXGKARG_OPENNATIVEFENCE,
    DXGKARG_CLOSENATIVEFENCE,
    DXGKARG_DESTROYNATIVEFENCE,
    DXGKARG_UPDATEMONITOREDVALUES,
    DXGKARG_UPDATECURRENTVALUESFROMCPU,
    DXGKARG_SETNATIVEFENCELOGBUFFER,
    DXGKARG_UPDATENATIVEFENCELOGS,
);

// ---------------------------------------------------------------------------------------------
// DDI typedefs (DRIVER_INITIALIZATION_DATA slots; re-exported from `crate::init`)
// ---------------------------------------------------------------------------------------------

/// `DXGKDDI_CREATENATIVEFENCE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_CREATENATIVEFENCE pCreateNativeFence)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createnativefence>
pub type PDXGKDDI_CREATENATIVEFENCE = DDI_FN<*mut DXGKARG_CREATENATIVEFENCE>;

/// `DXGKDDI_DESTROYNATIVEFENCE` (PASSIVE_LEVEL): `(INOUT_PDXGKARG_DESTROYNATIVEFENCE
/// pDestroyNativeFence)`; no adapter handle.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroynativefence>
pub type PDXGKDDI_DESTROYNATIVEFENCE = Option<
    unsafe extern "system" fn(pDestroyNativeFence: *mut DXGKARG_DESTROYNATIVEFENCE) -> NTSTATUS,
>;

/// `DXGKDDI_OPENNATIVEFENCE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_OPENNATIVEFENCE pOpenNativeFence)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_opennativefence>
pub type PDXGKDDI_OPENNATIVEFENCE = DDI_FN<*mut DXGKARG_OPENNATIVEFENCE>;

/// `DXGKDDI_CLOSENATIVEFENCE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_CLOSENATIVEFENCE pCloseNativeFence)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_closenativefence>
pub type PDXGKDDI_CLOSENATIVEFENCE = DDI_FN<*mut DXGKARG_CLOSENATIVEFENCE>;

extern_fn! {
    /// `DXGKDDI_UPDATEMONITOREDVALUES` (device IRQL, at most PROFILE_LEVEL - 1; synchronised with
    /// the ISR): `(IN_CONST_PDXGKARG_UPDATEMONITOREDVALUES pUpdateMonitoredValues)`; no adapter
    /// handle.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updatemonitoredvalues>
    pub type PDXGKDDI_UPDATEMONITOREDVALUES = fn(
        pUpdateMonitoredValues: *const DXGKARG_UPDATEMONITOREDVALUES,
    ) -> NTSTATUS;

    /// `DXGKDDI_UPDATECURRENTVALUESFROMCPU` (DISPATCH_LEVEL):
    /// `(IN_CONST_PDXGKARG_UPDATECURRENTVALUESFROMCPU pUpdateCurrentValuesFromCpu)`; no adapter
    /// handle.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updatecurrentvaluesfromcpu>
    pub type PDXGKDDI_UPDATECURRENTVALUESFROMCPU = fn(
        pUpdateCurrentValuesFromCpu: *const DXGKARG_UPDATECURRENTVALUESFROMCPU,
    ) -> NTSTATUS;

    /// `DXGKDDI_SETNATIVEFENCELOGBUFFER` (DISPATCH_LEVEL):
    /// `(IN_CONST_PDXGKARG_SETNATIVEFENCELOGBUFFER pSetNativeFenceLogBuffer)`; no adapter handle.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setnativefencelogbuffer>
    pub type PDXGKDDI_SETNATIVEFENCELOGBUFFER = fn(
        pSetNativeFenceLogBuffer: *const DXGKARG_SETNATIVEFENCELOGBUFFER,
    ) -> NTSTATUS;

    /// `DXGKDDI_UPDATENATIVEFENCELOGS` (DISPATCH_LEVEL):
    /// `(IN_CONST_PDXGKARG_UPDATENATIVEFENCELOGS pUpdateNativeFenceLog)`; no adapter handle.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_updatenativefencelogs>
    pub type PDXGKDDI_UPDATENATIVEFENCELOGS = fn(
        pUpdateNativeFenceLog: *const DXGKARG_UPDATENATIVEFENCELOGS,
    ) -> NTSTATUS;
}

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_SIGNALMONITOREDFENCE, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_signalmonitoredfence");
unbound_fn!(PDXGKDDI_CREATECPUEVENT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createcpuevent");
unbound_fn!(PDXGKDDI_DESTROYCPUEVENT, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroycpuevent");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::macros::assert_fields_fill_word;

    #[test]
    fn flag_words_are_contiguous() {
        assert_fields_fill_word!(
            DXGKARG_CREATENATIVEFENCE_FLAGS,
            DXGK_OPENNATIVEFENCE_FLAGS,
            DXGK_CLOSENATIVEFENCE_FLAGS,
            DXGK_DESTROYNATIVEFENCE_FLAGS,
            DXGKARG_UPDATEMONITOREDVALUES_FLAGS,
            DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS,
            DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS,
            DXGKARG_UPDATENATIVEFENCELOGS_FLAGS
        );
    }

    #[test]
    fn update_current_values_flags() {
        let f = DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS::from_value(0b10);
        assert!(f.is_set(DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS::NotificationOnly));
        assert!(!f.is_set(DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS::AlwaysSignaled));
        let g = DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS::default()
            .with(DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS::AlwaysSignaled, 1);
        assert_eq!(g.Value, 1);
        assert_eq!(
            DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS::mask(
                DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS::Reserved
            ),
            0xFFFF_FFFC
        );
        // A whole-word Reserved field: mask is all ones.
        assert_eq!(
            DXGK_CLOSENATIVEFENCE_FLAGS::mask(DXGK_CLOSENATIVEFENCE_FLAGS::Reserved),
            u32::MAX
        );
    }

    #[test]
    fn log_header_union_halves() {
        // FirstFreeEntryIndex is the LowPart, WraparoundCount the HighPart.
        let h = DXGK_NATIVE_FENCE_LOG_HEADER_0::from_parts(7, 3);
        assert_eq!(h.get(), (3u64 << 32) | 7);
        let p = DXGK_NATIVE_FENCE_LOG_HEADER_0::from_u64(0x0000_0002_0000_0010).parts();
        assert_eq!((p.FirstFreeEntryIndex, p.WraparoundCount), (0x10, 2));
        assert_eq!(DXGK_NATIVE_FENCE_LOG_HEADER::default().Anonymous.get(), 0);
        assert_eq!(
            DXGK_NATIVE_FENCE_LOG_HEADER_0::from_parts(1, 0),
            DXGK_NATIVE_FENCE_LOG_HEADER_0::from_u64(1)
        );
    }

    #[test]
    fn log_buffer_sizes() {
        assert_eq!(DXGK_NATIVE_FENCE_LOG_BUFFER::size_for_entries(0), Some(40));
        assert_eq!(DXGK_NATIVE_FENCE_LOG_BUFFER::size_for_entries(1), Some(88));
        // A 4 KiB log holds 84 entries.
        assert_eq!(
            DXGK_NATIVE_FENCE_LOG_BUFFER::size_for_entries(84),
            Some(4072)
        );
        assert_eq!(DXGK_NATIVE_FENCE_LOG_BUFFER::entry_offset(2), Some(136));
        assert_eq!(
            DXGK_NATIVE_FENCE_LOG_BUFFER::size_for_entries(u64::MAX),
            None
        );
        assert_eq!(
            DXGK_NATIVE_FENCE_LOG_BUFFER::size_for_entries(u64::MAX / 48),
            None
        );
    }

    #[test]
    fn enum_values_and_defaults() {
        assert_eq!(D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU, 1);
        assert_eq!(DXGK_NATIVE_FENCE_LOG_TYPE_SIGNALS, 2);
        assert_eq!(DXGK_NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED, 1);
        let c = DXGKARG_CREATENATIVEFENCE::default();
        assert!(c.hGlobalNativeFence.is_null());
        assert_eq!(c.pPrivateDriverData, [0u8; D3DDDI_NATIVE_FENCE_PDD_SIZE]);
        let u = DXGKARG_UPDATECURRENTVALUESFROMCPU::default();
        assert_eq!((u.NumFences, u.Flags.Value), (0, 0));
        assert!(u.CurrentValueKernelCpuVa.is_null());
        assert!(
            core::mem::offset_of!(DXGKARG_OPENNATIVEFENCE, pPrivateDriverData)
                == DXGKARG_OPENNATIVEFENCE_COMMON_PREFIX
        );
        assert!(
            DXGKARG_OPENNATIVEFENCE_SIZE_WITHOUT_PDD
                < core::mem::size_of::<DXGKARG_OPENNATIVEFENCE>()
        );
    }
}
