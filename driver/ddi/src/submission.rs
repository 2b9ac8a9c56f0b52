//! Devices, contexts, node metadata, hardware queues and user-mode submission (doorbells):
//! the DDIs and argument structures of user-mode submission (d3dkmddi.h, d3dkmdt.h, d3dukmdt.h).
//!
//! Sources: the learn.microsoft.com reference page of each type (syntax blocks give member order
//! and types; the localized copies of each page were compared with the en-us one). Offsets follow
//! from MSVC natural alignment on x86_64 and are asserted below. Values that could not be checked
//! against a page carry an `UNVERIFIED:` comment.
//!
//! **Which handle `DxgkDdiCreateHwQueue` receives.** Its first parameter, `hHwContext`, is the
//! KMD's handle of the *context* the queue belongs to: the `hContext` the driver returned from
//! `DxgkDdiCreateContext` (for a context created with
//! [`DXGK_CREATECONTEXTFLAGS::HwQueueSupported`]). It is not a handle from
//! `DxgkDdiCreateHwContext`. Evidence: the `DXGKDDI_CREATEHWQUEUE` page calls it "the hardware
//! context handle that the hardware queue belongs to"; at the thunk level
//! `D3DKMT_CREATEHWQUEUE::hHwContext` names that context, and Microsoft's own Linux port of
//! dxgkrnl (drivers/hv/dxgkrnl, `dxgkio_create_hwqueue`) resolves that handle as an ordinary
//! context object, the kind `D3DKMTCreateContextVirtual` creates and dxgkrnl backs with
//! `DxgkDdiCreateContext`. `DxgkDdiCreateHwContext` / `DxgkDdiDestroyHwContext` (bound in
//! [`crate::hws`] from the d3dkmddi.h declaration, which has a separate `DXGKARG_CREATEHWCONTEXT`
//! with `D3DDDI_CREATEHWCONTEXTFLAGS` and `DXGK_HWCONTEXT_CAPS`; Microsoft publishes no
//! reference page for them) belong to the separate `D3DKMTCreateHwContext` path. UNVERIFIED:
//! that a Windows dxgkrnl never passes a `DxgkDdiCreateHwContext` handle here; a driver that does
//! not implement `DxgkDdiCreateHwContext` can only ever see its own context handles.
//!
//! Adapter handles: `DxgkDdiCreateDevice`, `DxgkDdiGetNodeMetadata`,
//! `DxgkDdiSubmitCommandToHwQueue`, `DxgkDdiSuspendContext` and `DxgkDdiResumeContext` receive
//! `hAdapter`; the five doorbell DDIs, `DxgkDdiCreateContext`, `DxgkDdiCreateHwQueue` and the
//! destroy DDIs receive only object handles or their argument structure.

use core::ffi::c_void;

use crate::basic::*;
use crate::dxgkrnl::D3DDDI_DOORBELLSTATUS;
use crate::macros::{
    bitfield, c_enum, c_type, extern_fn, flag_word, layout, reserved_flags, unbound_fn,
    union_debug, zeroed_default,
};

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------

bitfield! {
    /// `DXGK_CREATEDEVICEFLAGS`: what kind of device `DxgkDdiCreateDevice` creates.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_createdeviceflags>
    pub struct DXGK_CREATEDEVICEFLAGS: u32 {
        /// The device is the system (paging) device.
        SystemDevice: 0, 1;
        /// The device is a GDI device (Windows 7+).
        GdiDevice: 1, 1;
        /// Reserved, zero.
        Reserved: 2, 29;
        /// Reserved (Windows 8+), zero.
        DXGK_DEVICE_RESERVED0: 31, 1;
    }
}
layout!(DXGK_CREATEDEVICEFLAGS, size = 4);

c_type! {
    /// Anonymous union of [`DXGKARG_CREATEDEVICE`]: `Flags` on input, `pInfo` (the legacy
    /// `DXGK_DEVICEINFO` output of pre-WDDM 2.0 drivers) otherwise.
    ///
    /// `DXGK_DEVICEINFO` is not bound; `pInfo` is an untyped pointer.
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_CREATEDEVICE_0 {
        /// In: device creation flags.
        pub Flags: DXGK_CREATEDEVICEFLAGS,
        /// `DXGK_DEVICEINFO *` (not bound).
        pub pInfo: PVOID,
    }
}

// Both arms are plain data; reading the pointer-sized arm reads every byte.
union_debug!(DXGKARG_CREATEDEVICE_0 => pInfo);

c_type! {
    /// `DXGKARG_CREATEDEVICE`: argument of `DxgkDdiCreateDevice`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_createdevice>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATEDEVICE {
        /// In: dxgkrnl's handle of the device (for callbacks). Out: the driver's device handle.
        #[offset(0)]
        pub hDevice: HANDLE,
        /// `Flags` / `pInfo`.
        #[offset(8)]
        pub Anonymous: DXGKARG_CREATEDEVICE_0,
        /// In: PASID of the owning process (SVM GPUs; Windows 10+).
        #[offset(16)]
        pub Pasid: ULONG,
        /// In: the driver's handle of the owning process object (Windows 10+).
        #[offset(24)]
        pub hKmdProcess: HANDLE,
    }
}

/// `DXGKDDI_CREATEDEVICE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_CREATEDEVICE pCreateDevice)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createdevice>
pub type PDXGKDDI_CREATEDEVICE = DDI_FN<*mut DXGKARG_CREATEDEVICE>;

extern_fn! {
    /// `DXGKDDI_DESTROYDEVICE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hDevice)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroydevice>
    pub type PDXGKDDI_DESTROYDEVICE = fn(hDevice: HANDLE) -> NTSTATUS;
}

// ---------------------------------------------------------------------------------------------
// Contexts
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// `DXGK_CREATECONTEXTFLAGS`: what kind of context `DxgkDdiCreateContext` creates.
    ///
    /// The page shows several `#if` variants; the newest (bound here) has `TestContext` and
    /// `Reserved : 26`; older interface versions end earlier with a wider `Reserved`, which
    /// leaves the defined bit positions unchanged.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_createcontextflags>
    pub struct DXGK_CREATECONTEXTFLAGS {
        /// System (paging) context.
        SystemContext,
        /// GDI context (Windows 7+).
        GdiContext,
        /// The context uses GPU virtual addressing (Windows 10+).
        VirtualAddressing,
        /// Context that may reach allocations outside the video protected region (Windows 10+).
        SystemProtectedContext,
        /// The context will own hardware queues (hardware scheduling).
        HwQueueSupported,
        /// Kernel-mode test context (WDDM 3.2).
        TestContext,
    }
}

flag_word! {
    /// `DXGK_CONTEXTINFO_CAPS`: optional context capabilities reported in
    /// [`DXGK_CONTEXTINFO::Caps`] (Windows 10+).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_contextinfo_caps>
    pub struct DXGK_CONTEXTINFO_CAPS {
        /// No memory patching is needed for this context.
        NoPatchingRequired,
        /// The driver manages memory residency itself.
        DriverManagesResidency,
        /// The context uses the IoMmu.
        UseIoMmu,
    }
}

c_type! {
    /// `DXGK_CONTEXTINFO`: filled by the driver in `DxgkDdiCreateContext` (DMA buffer and list
    /// sizes for the legacy submission path, capabilities, paging companion node).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_contextinfo>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_CONTEXTINFO {
        /// Initial DMA buffer size in bytes.
        #[offset(0)]
        pub DmaBufferSize: UINT,
        /// Bit set of segment ids the DMA buffer may live in.
        #[offset(4)]
        pub DmaBufferSegmentSet: UINT,
        /// Bytes of driver private data per DMA buffer (nonpaged; 0 = none).
        #[offset(8)]
        pub DmaBufferPrivateDataSize: UINT,
        /// Initial number of allocation list entries.
        #[offset(12)]
        pub AllocationListSize: UINT,
        /// Initial number of patch location list entries.
        #[offset(16)]
        pub PatchLocationListSize: UINT,
        /// Reserved, zero (Windows 7+).
        #[offset(20)]
        pub Reserved: UINT,
        /// Optional capabilities (Windows 10+).
        #[offset(24)]
        pub Caps: DXGK_CONTEXTINFO_CAPS,
        /// Engine id of the paging companion (Windows 10+).
        #[offset(28)]
        pub PagingCompanionNodeId: ULONG,
    }
}

c_type! {
    /// `DXGKARG_CREATECONTEXT`: argument of `DxgkDdiCreateContext`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_createcontext>
    #[size(72)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATECONTEXT {
        /// Out: the driver's context handle (later `hContext` of `DxgkDdiDestroyContext`, and the
        /// `hHwContext` of `DxgkDdiCreateHwQueue`; see the module documentation).
        #[offset(0)]
        pub hContext: HANDLE,
        /// In: node the context runs on.
        #[offset(8)]
        pub NodeOrdinal: UINT,
        /// In: engine within the node.
        #[offset(12)]
        pub EngineAffinity: UINT,
        /// In: creation flags.
        #[offset(16)]
        pub Flags: DXGK_CREATECONTEXTFLAGS,
        /// In: UMD private data.
        #[offset(24)]
        pub pPrivateDriverData: PVOID,
        /// In: size of `pPrivateDriverData` in bytes.
        #[offset(32)]
        pub PrivateDriverDataSize: UINT,
        /// Out: context description.
        #[offset(36)]
        pub ContextInfo: DXGK_CONTEXTINFO,
    }
}

/// `DXGKDDI_CREATECONTEXT` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hDevice,
/// INOUT_PDXGKARG_CREATECONTEXT pCreateContext)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createcontext>
pub type PDXGKDDI_CREATECONTEXT = DDI_FN<*mut DXGKARG_CREATECONTEXT>;

extern_fn! {
    /// `DXGKDDI_DESTROYCONTEXT` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hContext)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroycontext>
    pub type PDXGKDDI_DESTROYCONTEXT = fn(hContext: HANDLE) -> NTSTATUS;
}

c_type! {
    /// `DXGKARG_SUSPENDCONTEXT`: argument of `DxgkDdiSuspendContext` (preempt now, no grace period;
    /// completion is reported with the given fence value).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_suspendcontext>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SUSPENDCONTEXT {
        /// In: the driver's context handle.
        #[offset(0)]
        pub hContext: HANDLE,
        /// In: per-context, monotonically increasing value to report with the "context suspended"
        /// interrupt once the preemption completed (lower-case `c` as in the header).
        #[offset(8)]
        pub contextSuspendFence: UINT64,
    }
}

c_type! {
    /// `DXGKARG_RESUMECONTEXT`: argument of `DxgkDdiResumeContext` (contexts start resumed).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_resumecontext>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_RESUMECONTEXT {
        /// In: the driver's context handle.
        #[offset(0)]
        pub hContext: HANDLE,
    }
}

/// `DXGKDDI_SUSPENDCONTEXT`: `(IN_CONST_HANDLE hAdapter, IN_CONST_PDXGKARG_SUSPENDCONTEXT
/// pSuspendContext)`. Returns `STATUS_SUCCESS` if already suspended, else `STATUS_PENDING` and
/// the GPU later reports `contextSuspendFence` by interrupt. (As for resume, the page's prose
/// describes `hAdapter` as "the hardware context"; the context travels in the argument.)
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_suspendcontext>
pub type PDXGKDDI_SUSPENDCONTEXT = DDI_FN<*const DXGKARG_SUSPENDCONTEXT>;

/// `DXGKDDI_RESUMECONTEXT`: `(IN_CONST_HANDLE hAdapter, IN_CONST_PDXGKARG_RESUMECONTEXT
/// pResumeContext)`. (The page's prose calls the first parameter "the hardware context"; the
/// syntax names it `hAdapter`, and the context travels in the argument.)
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_resumecontext>
pub type PDXGKDDI_RESUMECONTEXT = DDI_FN<*const DXGKARG_RESUMECONTEXT>;

// ---------------------------------------------------------------------------------------------
// Node metadata (d3dkmdt.h)
// ---------------------------------------------------------------------------------------------

/// `DXGK_MAX_METADATA_NAME_LENGTH`: WCHARs in [`DXGK_NODEMETADATA::FriendlyName`].
pub const DXGK_MAX_METADATA_NAME_LENGTH: usize = 32;

c_enum! {
    /// `DXGK_ENGINE_TYPE`: kind of engine a node is.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ne-d3dkmdt-dxgk_engine_type>
    pub type DXGK_ENGINE_TYPE = i32 {
        /// Other (give `FriendlyName`).
        DXGK_ENGINE_TYPE_OTHER,
        /// 3D.
        DXGK_ENGINE_TYPE_3D,
        /// Video decode.
        DXGK_ENGINE_TYPE_VIDEO_DECODE,
        /// Video encode.
        DXGK_ENGINE_TYPE_VIDEO_ENCODE,
        /// Video processing.
        DXGK_ENGINE_TYPE_VIDEO_PROCESSING,
        /// Scene assembly.
        DXGK_ENGINE_TYPE_SCENE_ASSEMBLY,
        /// Copy.
        DXGK_ENGINE_TYPE_COPY,
        /// Overlay.
        DXGK_ENGINE_TYPE_OVERLAY,
        /// Crypto.
        DXGK_ENGINE_TYPE_CRYPTO,
        /// Video codec (listed on the current reference page; absent from older headers).
        DXGK_ENGINE_TYPE_VIDEO_CODEC,
        /// One past the last value: 10 per the current page (implicit values, with `VIDEO_CODEC`
        /// before it). The 10.0.22621 header ends at `CRYPTO`, giving 9. Do not report it as an
        /// engine type.
        // wdk-layout-check: skip: 22621 predates DXGK_ENGINE_TYPE_VIDEO_CODEC (its MAX is 9)
        DXGK_ENGINE_TYPE_MAX,
    }
}

bitfield! {
    /// `DXGK_NODEMETADATA_FLAGS` (d3dkmdt.h): engine capabilities. The user-mode submission bit
    /// is named `UserModeSubmission` (bit 3, WDDM 3.2), not `UserModeSubmissionSupported`.
    ///
    /// The header's newest `#if` branch is bound (`Reserved : 11` then
    /// `MaxInFlightHwQueueBuffers : 16`); older branches keep the same positions for the bits
    /// they define.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_dxgk_nodemetadata_flags>
    pub struct DXGK_NODEMETADATA_FLAGS: u32 {
        /// Context-based scheduling model supported.
        ContextSchedulingSupported: 0, 1;
        /// Ring buffer fence release supported (Windows 10 1809+).
        RingBufferFenceRelease: 1, 1;
        /// Tracked workloads supported (Windows 10 1809+).
        SupportTrackedWorkload: 2, 1;
        /// User-mode work submission supported (Windows 11 24H2).
        UserModeSubmission: 3, 1;
        /// Kernel-mode test command buffers supported (Windows 11 24H2).
        SupportBuildTestCommandBuffer: 4, 1;
        /// Reserved, zero.
        Reserved: 5, 11;
        /// Most command buffers the hardware scheduler hands the KMD at once (0 = no limit).
        MaxInFlightHwQueueBuffers: 16, 16;
    }
}
layout!(DXGK_NODEMETADATA_FLAGS, size = 4);

c_type! {
    /// `DXGK_NODEMETADATA` (d3dkmdt.h): description of one node's engine.
    ///
    /// d3dkmdt.h declares it inside `#pragma pack(push, 1)`: 74 bytes, no tail padding, so
    /// `Flags` sits at 68 and the two BOOLEANs at 72 and 73. Dxgkrnl keeps one of these per node in
    /// an array with a 74-byte stride, so writing a padded (76- or 80-byte) value would overwrite
    /// the next node's entry. Packed here too: fields are read and written by value (no
    /// references into the struct).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmdt/ns-d3dkmdt-_dxgk_nodemetadata>
    #[size(74)]
    #[repr(C, packed(1))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DXGK_NODEMETADATA {
        /// Engine type.
        #[offset(0)]
        pub EngineType: DXGK_ENGINE_TYPE,
        /// NUL-terminated UTF-16 name; required for [`DXGK_ENGINE_TYPE_OTHER`], else empty.
        #[offset(4)]
        pub FriendlyName: [WCHAR; DXGK_MAX_METADATA_NAME_LENGTH],
        /// Capability flags (WDDM 2.2+; the same four bytes are `Reserved` before 2.2).
        #[offset(68)]
        pub Flags: DXGK_NODEMETADATA_FLAGS,
        /// The node's engines support the GpuMmu model (WDDM 2.0+).
        #[offset(72)]
        pub GpuMmuSupported: BOOLEAN,
        /// The node's engines support the IoMmu model (WDDM 2.0+).
        #[offset(73)]
        pub IoMmuSupported: BOOLEAN,
    }
}
const _: () = assert!(core::mem::align_of::<DXGK_NODEMETADATA>() == 1);

/// `DXGKARG_GETNODEMETADATA`: the header's alias of [`DXGK_NODEMETADATA`], filled by
/// `DxgkDdiGetNodeMetadata`.
pub type DXGKARG_GETNODEMETADATA = DXGK_NODEMETADATA;

extern_fn! {
    /// `DXGKDDI_GETNODEMETADATA` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
    /// UINT NodeOrdinalAndAdapterIndex, OUT_PDXGKARG_GETNODEMETADATA pGetNodeMetadata)`. Must
    /// succeed for every node ordinal below the node count. The middle parameter packs the node
    /// ordinal in the low 16 bits and the physical adapter index in the high 16 bits (as
    /// `D3DKMT_NODEMETADATA::NodeOrdinalAndAdapterIndex` documents).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_getnodemetadata>
    pub type PDXGKDDI_GETNODEMETADATA = fn(
        hAdapter: HANDLE,
        NodeOrdinalAndAdapterIndex: UINT,
        pGetNodeMetadata: *mut DXGKARG_GETNODEMETADATA,
    ) -> NTSTATUS;
}

// ---------------------------------------------------------------------------------------------
// Hardware queues
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// `D3DDDI_CREATEHWQUEUEFLAGS` (d3dukmdt.h): hardware queue creation flags.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_createhwqueueflags>
    pub struct D3DDDI_CREATEHWQUEUEFLAGS {
        /// Work may run longer than the TDR limit; no GPU timeout.
        DisableGpuTimeout,
        /// Do not take part in D3D12 broadcast fence signals (Windows 10 2004+).
        NoBroadcastSignal,
        /// Do not block on D3D12 broadcast fence waits (Windows 10 2004+).
        NoBroadcastWait,
        /// Reserved for the system.
        NoKmdAccess,
        /// User-mode submission queue: work arrives only through its doorbell (WDDM 3.2).
        UserModeSubmission,
        /// The progress fence is a native fence: read
        /// [`DXGKARG_CREATEHWQUEUE_0::hHwQueueNativeProgressFence`] (Windows 11 24H2).
        NativeProgressFence,
        /// Kernel-mode test queue (Windows 11 24H2).
        TestQueue,
    }
}

c_type! {
    /// Anonymous union of [`DXGKARG_CREATEHWQUEUE`] holding the progress fence.
    ///
    /// UNVERIFIED: the syntax block of the reference page still shows a plain `D3DKMT_HANDLE
    /// hHwQueueProgressFence`; the page's remarks (present in the localized copy that carries them)
    /// say that with [`D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence`] set the KMD must read
    /// `hHwQueueNativeProgressFence`, the driver handle of a native fence, instead. A driver handle
    /// is a `HANDLE`, so the union is bound as `{ D3DKMT_HANDLE; HANDLE; }`. Either way the member
    /// sits at offset 24 and [`DXGKARG_CREATEHWQUEUE`] is 48 bytes (the 4-byte handle is followed
    /// by 4 bytes of padding before the next pointer), so the layout does not depend on which
    /// declaration the header uses.
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union DXGKARG_CREATEHWQUEUE_0 {
        /// In (`NativeProgressFence` clear): handle of the monitored fence dxgkrnl created as the
        /// queue's progress fence.
        pub hHwQueueProgressFence: D3DKMT_HANDLE,
        /// In (`NativeProgressFence` set): the driver's handle of the native fence (from
        /// `DxgkDdiCreateNativeFence`) used as the progress fence.
        pub hHwQueueNativeProgressFence: HANDLE,
    }
}

// Both arms are plain data; the pointer-sized arm covers every byte.
union_debug!(DXGKARG_CREATEHWQUEUE_0 => hHwQueueNativeProgressFence);

c_type! {
    /// `DXGKARG_CREATEHWQUEUE`: argument of `DxgkDdiCreateHwQueue`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_createhwqueue>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATEHWQUEUE {
        /// In: dxgkrnl's handle of the queue. Out: the driver's queue handle.
        #[offset(0)]
        pub hHwQueue: HANDLE,
        /// In: creation flags.
        #[offset(8)]
        pub Flags: D3DDDI_CREATEHWQUEUEFLAGS,
        /// In: size of `pPrivateDriverData` in bytes.
        #[offset(12)]
        pub PrivateDriverDataSize: UINT,
        /// In/out: UMD private data (the KMD may write data back).
        #[offset(16)]
        pub pPrivateDriverData: PVOID,
        /// In: progress fence (monitored or native, see the union).
        #[offset(24)]
        pub Anonymous: DXGKARG_CREATEHWQUEUE_0,
        /// In: kernel CPU VA of the progress fence's current value (read only).
        #[offset(32)]
        pub HwQueueProgressFenceCPUVirtualAddress: PVOID,
        /// In: GPU VA of the progress fence's value (read/write).
        #[offset(40)]
        pub HwQueueProgressFenceGPUVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
    }
}

/// `DXGKDDI_CREATEHWQUEUE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hHwContext,
/// INOUT_PDXGKARG_CREATEHWQUEUE pCreateHwQueue)`. `hHwContext` is the driver's context handle
/// from `DxgkDdiCreateContext` (see the module documentation).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createhwqueue>
pub type PDXGKDDI_CREATEHWQUEUE = DDI_FN<*mut DXGKARG_CREATEHWQUEUE>;

extern_fn! {
    /// `DXGKDDI_DESTROYHWQUEUE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hHwQueue)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroyhwqueue>
    pub type PDXGKDDI_DESTROYHWQUEUE = fn(hHwQueue: HANDLE) -> NTSTATUS;
}

flag_word! {
    /// `DXGK_SUBMITCOMMANDFLAGS`: properties of a submitted DMA buffer (zero for UMD command
    /// buffers on hardware queues; `Present` for `DxgkDdiPresentToHwQueue` buffers).
    ///
    /// The header's newest `#if` branch is bound (`VirtualMachineData`, `Reserved : 23`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_submitcommandflags>
    pub struct DXGK_SUBMITCOMMANDFLAGS {
        /// Paging buffer.
        Paging,
        /// Present (from `DxgkDdiPresent`).
        Present,
        /// Redirected present to a DWM shared allocation.
        RedirectedPresent,
        /// Pretend to run it: signal completion without executing (debug / perf only).
        NullRendering,
        /// Contains a flip.
        Flip,
        /// Contains a flip without a built-in vsync wait.
        FlipWithNoWait,
        /// Switch to the null context (Windows 8+).
        ContextSwitch,
        /// Resubmission after preemption.
        Resubmission,
        /// Submission from a virtual machine.
        VirtualMachineData,
    }
}

c_type! {
    /// `DXGKARG_SUBMITCOMMANDTOHWQUEUE`: argument of `DxgkDdiSubmitCommandToHwQueue`. The private
    /// data buffer is freed when the DDI returns.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_submitcommandtohwqueue>
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SUBMITCOMMANDTOHWQUEUE {
        /// In: the driver's queue handle.
        #[offset(0)]
        pub hHwQueue: HANDLE,
        /// In: progress fence value to signal when this buffer completes.
        #[offset(8)]
        pub HwQueueProgressFenceId: UINT64,
        /// In: GPU VA of the DMA (command) buffer.
        #[offset(16)]
        pub DmaBufferVirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: size of the DMA buffer in bytes.
        #[offset(24)]
        pub DmaBufferSize: UINT,
        /// In: size of `pDmaBufferPrivateData` in bytes.
        #[offset(28)]
        pub DmaBufferPrivateDataSize: UINT,
        /// In: private data (from `pfnSubmitToHwQueueCb`, or `DxgkDdiPresent` for kernel submits).
        #[offset(32)]
        pub pDmaBufferPrivateData: PVOID,
        /// In: buffer properties.
        #[offset(40)]
        pub Flags: DXGK_SUBMITCOMMANDFLAGS,
        /// In: GPU VA of the progress fence.
        #[offset(48)]
        pub HwQueueProgressFenceGpuVa: D3DGPU_VIRTUAL_ADDRESS,
        /// In: kernel CPU VA of the progress fence.
        #[offset(56)]
        pub HwQueueProgressFenceCpuVa: PVOID,
    }
}

/// `DXGKDDI_SUBMITCOMMANDTOHWQUEUE` (PASSIVE_LEVEL or DISPATCH_LEVEL; not re-entered for one
/// queue): `(IN_CONST_HANDLE hAdapter, IN_CONST_PDXGKARG_SUBMITCOMMANDTOHWQUEUE
/// pSubmitCommandToHwQueue)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandtohwqueue>
pub type PDXGKDDI_SUBMITCOMMANDTOHWQUEUE = DDI_FN<*const DXGKARG_SUBMITCOMMANDTOHWQUEUE>;

// ---------------------------------------------------------------------------------------------
// User-mode submission: capabilities and doorbells (WDDM 3.2)
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// The named anonymous union `Flags` of [`DXGK_USERMODESUBMISSION_CAPS`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_usermodesubmission_caps>
    pub struct DXGK_USERMODESUBMISSION_CAPS_Flags {
        /// The driver supports a secondary doorbell per queue.
        SecondaryDoorbellSupported,
    }
}

c_type! {
    /// `DXGK_USERMODESUBMISSION_CAPS`: answer to
    /// [`crate::adapter::DXGKQAITYPE_USERMODESUBMISSION_CAPS`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_usermodesubmission_caps>
    #[size(28)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DXGK_USERMODESUBMISSION_CAPS {
        /// Capability flags.
        #[offset(0)]
        pub Flags: DXGK_USERMODESUBMISSION_CAPS_Flags,
        /// Size of a doorbell in bytes.
        #[offset(4)]
        pub DoorbellSizeInBytes: UINT,
        /// Size of a secondary doorbell in bytes.
        #[offset(8)]
        pub SecondaryDoorbellSizeInBytes: UINT,
        /// Reserved.
        #[offset(12)]
        pub Reserved: [UCHAR; 16],
    }
}

flag_word! {
    /// `DXGKARG_CREATEDOORBELL_FLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_createdoorbell_flags>
    pub struct DXGKARG_CREATEDOORBELL_FLAGS {
        /// The doorbell is being recreated for the queue with a resized ring buffer.
        ResizeRingBufferOperation,
    }
}

c_type! {
    /// `DXGKARG_CREATEDOORBELL`: argument of `DxgkDdiCreateDoorbell` (create the doorbell object
    /// only; a physical doorbell is assigned later, in `DxgkDdiConnectDoorbell`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_createdoorbell>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATEDOORBELL {
        /// In: the driver's queue handle.
        #[offset(0)]
        pub hHwQueue: HANDLE,
        /// In: dxgkrnl's doorbell handle. Out: the driver's doorbell handle.
        #[offset(8)]
        pub hDoorbell: HANDLE,
        /// In: size of `PrivateDriverData` in bytes.
        #[offset(16)]
        pub PrivateDriverDataSize: UINT,
        /// In/out: private data.
        #[offset(24)]
        pub PrivateDriverData: *mut c_void,
        /// In: the driver's handle of the ring buffer allocation (GPU visible, resident).
        #[offset(32)]
        pub hRingBuffer: HANDLE,
        /// In: the driver's handle of the ring buffer control allocation (GPU visible, resident).
        #[offset(40)]
        pub hRingBufferControl: HANDLE,
        /// In: flags.
        #[offset(48)]
        pub Flags: DXGKARG_CREATEDOORBELL_FLAGS,
    }
}

flag_word! {
    /// `DXGKARG_CONNECTDOORBELL_FLAGS`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_connectdoorbell_flags>
    pub struct DXGKARG_CONNECTDOORBELL_FLAGS {
        /// The UMD asked for a secondary CPU VA: the doorbell needs two physical addresses.
        RequireSecondaryAddress,
    }
}

c_type! {
    /// `DXGKARG_CONNECTDOORBELL`: argument of `DxgkDdiConnectDoorbell` (assign a physical doorbell
    /// and return its kernel mapping; dxgkrnl maps it into the process).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_connectdoorbell>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CONNECTDOORBELL {
        /// In: the driver's doorbell handle.
        #[offset(0)]
        pub hDoorbell: HANDLE,
        /// In: flags.
        #[offset(8)]
        pub Flags: DXGKARG_CONNECTDOORBELL_FLAGS,
        /// Out: kernel CPU VA of the physical doorbell.
        #[offset(16)]
        pub KernelCpuVirtualAddress: *mut c_void,
        /// Out (optional): kernel CPU VA of the secondary doorbell.
        #[offset(24)]
        pub SecondaryKernelCpuVirtualAddress: *mut c_void,
        /// Out: status for the UMD's status page: `CONNECTED` or `CONNECTED_NOTIFY_KMD` only.
        #[offset(32)]
        pub Status: D3DDDI_DOORBELLSTATUS,
    }
}

reserved_flags! {
    /// `DXGKARG_DISCONNECTDOORBELL_FLAGS` (all reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_disconnectdoorbell_flags>
    DXGKARG_DISCONNECTDOORBELL_FLAGS;
}

c_type! {
    /// `DXGKARG_DISCONNECTDOORBELL`: argument of `DxgkDdiDisconnectDoorbell` (release the physical
    /// doorbell; the doorbell object stays and may be reconnected).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_disconnectdoorbell>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_DISCONNECTDOORBELL {
        /// In: the driver's doorbell handle.
        #[offset(0)]
        pub hDoorbell: HANDLE,
        /// In: flags.
        #[offset(8)]
        pub Flags: DXGKARG_DISCONNECTDOORBELL_FLAGS,
    }
}

c_type! {
    /// `DXGKARG_DESTROYDOORBELL`: argument of `DxgkDdiDestroyDoorbell`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_destroydoorbell>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_DESTROYDOORBELL {
        /// In: the driver's doorbell handle.
        #[offset(0)]
        pub hDoorbell: HANDLE,
    }
}

reserved_flags! {
    /// `DXGKARG_NOTIFYWORKSUBMISSION_FLAGS` (all reserved).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_notifyworksubmission_flags>
    DXGKARG_NOTIFYWORKSUBMISSION_FLAGS;
}

c_type! {
    /// `DXGKARG_NOTIFYWORKSUBMISSION`: argument of `DxgkDdiNotifyWorkSubmission` (the UMD rang a
    /// doorbell connected with `CONNECTED_NOTIFY_KMD` and tells the KMD).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_notifyworksubmission>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_NOTIFYWORKSUBMISSION {
        /// In: the driver's queue handle.
        #[offset(0)]
        pub hHwQueue: HANDLE,
        /// In: flags.
        #[offset(8)]
        pub Flags: DXGKARG_NOTIFYWORKSUBMISSION_FLAGS,
    }
}

extern_fn! {
    /// `DXGKDDI_CREATEDOORBELL` (PASSIVE_LEVEL): `(INOUT_PDXGKARG_CREATEDOORBELL pArgs)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createdoorbell>
    pub type PDXGKDDI_CREATEDOORBELL = fn(pArgs: *mut DXGKARG_CREATEDOORBELL) -> NTSTATUS;

    /// `DXGKDDI_CONNECTDOORBELL` (PASSIVE_LEVEL): `(INOUT_PDXGKARG_CONNECTDOORBELL pArgs)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_connectdoorbell>
    pub type PDXGKDDI_CONNECTDOORBELL = fn(pArgs: *mut DXGKARG_CONNECTDOORBELL) -> NTSTATUS;

    /// `DXGKDDI_DISCONNECTDOORBELL` (PASSIVE_LEVEL; must succeed):
    /// `(INOUT_PDXGKARG_DISCONNECTDOORBELL pArgs)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_disconnectdoorbell>
    pub type PDXGKDDI_DISCONNECTDOORBELL = fn(pArgs: *mut DXGKARG_DISCONNECTDOORBELL) -> NTSTATUS;

    /// `DXGKDDI_DESTROYDOORBELL` (PASSIVE_LEVEL; must succeed):
    /// `(INOUT_PDXGKARG_DESTROYDOORBELL pArgs)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroydoorbell>
    pub type PDXGKDDI_DESTROYDOORBELL = fn(pArgs: *mut DXGKARG_DESTROYDOORBELL) -> NTSTATUS;

    /// `DXGKDDI_NOTIFYWORKSUBMISSION` (PASSIVE_LEVEL; must succeed):
    /// `(INOUT_PDXGKARG_NOTIFYWORKSUBMISSION pArgs)`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_notifyworksubmission>
    pub type PDXGKDDI_NOTIFYWORKSUBMISSION = fn(
        pArgs: *mut DXGKARG_NOTIFYWORKSUBMISSION,
    ) -> NTSTATUS;
}

// ---------------------------------------------------------------------------------------------
// Runtime power
// ---------------------------------------------------------------------------------------------

extern_fn! {
    /// `DXGKDDISETPOWERCOMPONENTFSTATE` (at most DISPATCH_LEVEL): `(IN_CONST_HANDLE DriverContext,
    /// UINT ComponentIndex, UINT FState)`; no argument structure. Called only if
    /// `DXGK_DRIVERCAPS::SupportRuntimePowerManagement` is set.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddisetpowercomponentfstate>
    pub type PDXGKDDISETPOWERCOMPONENTFSTATE = fn(
        DriverContext: HANDLE,
        ComponentIndex: UINT,
        FState: UINT,
    ) -> NTSTATUS;
}

zeroed_default!(
    DXGKARG_CREATEDEVICE_0,
    DXGKARG_CREATEDEVICE,
    DXGKARG_CREATECONTEXT,
    DXGKARG_SUSPENDCONTEXT,
    DXGKARG_RESUMECONTEXT,
    DXGK_NODEMETADATA,
    DXGKARG_CREATEHWQUEUE_0,
    DXGKARG_CREATEHWQUEUE,
    DXGKARG_SUBMITCOMMANDTOHWQUEUE,
    DXGKARG_CREATEDOORBELL,
    DXGKARG_CONNECTDOORBELL,
    DXGKARG_DISCONNECTDOORBELL,
    DXGKARG_DESTROYDOORBELL,
    DXGKARG_NOTIFYWORKSUBMISSION,
);

// Slots of `DRIVER_INITIALIZATION_DATA` whose signatures are not bound yet (`init` re-exports
// them): binding one replaces its line with its argument block and prototype.
unbound_fn!(PDXGKDDI_PATCH, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_patch");
unbound_fn!(PDXGKDDI_RENDER, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_render");
unbound_fn!(PDXGKDDI_RENDERKM, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_renderkm");
unbound_fn!(PDXGKDDI_FORMATHISTORYBUFFER, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_formathistorybuffer");
unbound_fn!(PDXGKDDI_RENDERGDI, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_rendergdi");
unbound_fn!(PDXGKDDI_VALIDATESUBMITCOMMAND, "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_validatesubmitcommand");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::macros::assert_fields_fill_word;

    #[test]
    fn flag_words_are_contiguous() {
        assert_fields_fill_word!(
            DXGK_CREATEDEVICEFLAGS,
            DXGK_CREATECONTEXTFLAGS,
            DXGK_CONTEXTINFO_CAPS,
            DXGK_NODEMETADATA_FLAGS,
            D3DDDI_CREATEHWQUEUEFLAGS,
            DXGK_SUBMITCOMMANDFLAGS,
            DXGK_USERMODESUBMISSION_CAPS_Flags,
            DXGKARG_CREATEDOORBELL_FLAGS,
            DXGKARG_CONNECTDOORBELL_FLAGS,
            DXGKARG_DISCONNECTDOORBELL_FLAGS,
            DXGKARG_NOTIFYWORKSUBMISSION_FLAGS
        );
    }

    #[test]
    fn key_bit_positions() {
        assert_eq!(
            D3DDDI_CREATEHWQUEUEFLAGS::default()
                .with(D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission, 1)
                .Value,
            1 << 4
        );
        assert_eq!(
            D3DDDI_CREATEHWQUEUEFLAGS::default()
                .with(D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence, 1)
                .Value,
            1 << 5
        );
        assert_eq!(
            DXGK_NODEMETADATA_FLAGS::default()
                .with(DXGK_NODEMETADATA_FLAGS::UserModeSubmission, 1)
                .Value,
            1 << 3
        );
        let m = DXGK_NODEMETADATA_FLAGS::default()
            .with(DXGK_NODEMETADATA_FLAGS::MaxInFlightHwQueueBuffers, 4);
        assert_eq!(m.Value, 4 << 16);
        assert_eq!(
            DXGK_CREATECONTEXTFLAGS::default()
                .with(DXGK_CREATECONTEXTFLAGS::HwQueueSupported, 1)
                .Value,
            1 << 4
        );
    }

    #[test]
    fn defaults_are_zero() {
        let q = DXGKARG_CREATEHWQUEUE::default();
        assert!(q.hHwQueue.is_null());
        // SAFETY: zeroed union; the pointer arm covers all bytes.
        assert!(unsafe { q.Anonymous.hHwQueueNativeProgressFence }.is_null());
        let c = DXGKARG_CONNECTDOORBELL::default();
        assert_eq!(c.Status, crate::dxgkrnl::D3DDDI_DOORBELLSTATUS_CONNECTED);
        let n = DXGK_NODEMETADATA::default();
        // Packed: copy the field out before comparing (no reference into the struct).
        let name = n.FriendlyName;
        assert_eq!(name, [0u16; DXGK_MAX_METADATA_NAME_LENGTH]);
        assert_eq!(
            DXGK_USERMODESUBMISSION_CAPS::default().DoorbellSizeInBytes,
            0
        );
    }
}
