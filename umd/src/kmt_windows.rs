//! The kernel thunks on Windows: [`WinKmt`] implements [`Kmt`] over the D3DKMT functions of
//! gdi32.dll, so the portable submission core (`submit`) runs over the real OS.
//!
//! **Status, honestly.** This module is only *compiled* in this repository (by the
//! `x86_64-pc-windows-msvc` cross-build of rvgpu_umd.dll, scripts/package.sh); it has never run
//! on Windows. The DLL runs in the x86-64 emulator over the simulated OS's thunks
//! (docs/pe-image.md, `simos/tests/pe_umd.rs`), which exercises the calls its C API makes.
//! It runs only on Windows 11 24H2 or later (WDDM 3.2) with the rvgpu KMD installed, and even
//! there allocation creation cannot succeed yet: [`WinKmt::create_allocation`] needs the KMD's
//! `DxgkDdiCreateAllocation` and a GPU virtual address for the allocation, which the v1 KMD does
//! not provide (identity GPU addressing, no VidMm segment model: docs/usermode-submission.md,
//! "Private driver data"). The simulated OS (`rvgpu_simos`) implements the same trait and is
//! where the submission logic is exercised.
//!
//! **Where the thunks come from.**
//! - Up to WDDM 3.1 (`D3DKMTOpenAdapterFromLuid`, `D3DKMTCreateDevice`,
//!   `D3DKMTCreateContextVirtual`, `D3DKMTSubmitCommand`, `D3DKMTCreateHwQueue`,
//!   `D3DKMTSubmitCommandToHwQueue`,
//!   `D3DKMTCreateAllocation2`, `D3DKMTLock2`, `D3DKMTUnlock2`, `D3DKMTDestroyAllocation2`,
//!   `D3DKMTInvalidateCache`, `D3DKMTMakeResident`, `D3DKMTEvict`, `D3DKMTCreatePagingQueue`,
//!   `D3DKMTReserveGpuVirtualAddress`, `D3DKMTMapGpuVirtualAddress`,
//!   `D3DKMTFreeGpuVirtualAddress`, `D3DKMTUpdateGpuVirtualAddress`,
//!   `D3DKMTWaitForSynchronizationObjectFromCpu`, ...): `windows-sys`
//!   (`Wdk::Graphics::Direct3D`, imported from gdi32.dll through windows-link's raw-dylib).
//! - The WDDM 3.2 user-mode submission thunks (`D3DKMTCreateDoorbell`, `D3DKMTConnectDoorbell`,
//!   `D3DKMTDestroyDoorbell`, `D3DKMTNotifyWorkSubmission`) are **not functions in windows-sys
//!   0.61**, and the structures it has under those names are an older prerelease layout:
//!   its `D3DKMT_CREATE_DOORBELL` lacks `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`
//!   and `hDoorbell`, and its connect/destroy/notify structures name `hHwQueue` where the
//!   released header has `hDoorbell`. The structures are therefore declared here from
//!   learn.microsoft.com (URLs on each, sizes asserted), and the functions are looked up at run
//!   time with `GetProcAddress` in gdi32.dll rather than imported, so that the DLL still loads
//!   on a Windows without them (pre-24H2) and reports `STATUS_NOT_SUPPORTED` instead of failing
//!   to load.
//!
//! **CPU views** are raw pointers the OS returned (ring and ring control through `Lock2`,
//! doorbell page, doorbell status page, last-queued value, progress fence). Every access is
//! atomic or volatile, 8-byte aligned, and bounds-checked where a size is known.

use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};

pub use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCloseAdapter, D3DKMTCreateDevice, D3DKMTCreateHwQueue, D3DKMTDestroyDevice,
    D3DKMTDestroyHwQueue, D3DKMTOpenAdapterFromLuid, D3DKMTSubmitCommandToHwQueue,
    D3DKMT_CLOSEADAPTER, D3DKMT_OPENADAPTERFROMLUID,
};
use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTCreateAllocation2, D3DKMTCreateContextVirtual, D3DKMTCreatePagingQueue,
    D3DKMTCreateSynchronizationObject2, D3DKMTDestroyAllocation2, D3DKMTDestroyContext,
    D3DKMTDestroyPagingQueue, D3DKMTDestroySynchronizationObject, D3DKMTEvict,
    D3DKMTFreeGpuVirtualAddress, D3DKMTInvalidateCache, D3DKMTLock2, D3DKMTMakeResident,
    D3DKMTMapGpuVirtualAddress, D3DKMTReserveGpuVirtualAddress,
    D3DKMTSignalSynchronizationObjectFromCpu, D3DKMTSubmitCommand,
    D3DKMTSubmitSignalSyncObjectsToHwQueue, D3DKMTSubmitWaitForSyncObjectsToHwQueue, D3DKMTUnlock2,
    D3DKMTUpdateGpuVirtualAddress, D3DKMTWaitForSynchronizationObjectFromCpu,
    D3DDDI_ALLOCATIONINFO2, D3DDDI_DESTROYPAGINGQUEUE, D3DDDI_MAKERESIDENT,
    D3DDDI_MAPGPUVIRTUALADDRESS, D3DDDI_MONITORED_FENCE, D3DDDI_PAGINGQUEUE_PRIORITY_NORMAL,
    D3DDDI_RESERVEGPUVIRTUALADDRESS, D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION,
    D3DKMT_CLIENTHINT_UNKNOWN, D3DKMT_CREATEALLOCATION, D3DKMT_CREATECONTEXTVIRTUAL,
    D3DKMT_CREATEDEVICE, D3DKMT_CREATEHWQUEUE, D3DKMT_CREATEPAGINGQUEUE,
    D3DKMT_CREATESYNCHRONIZATIONOBJECT2, D3DKMT_DESTROYALLOCATION2, D3DKMT_DESTROYCONTEXT,
    D3DKMT_DESTROYDEVICE, D3DKMT_DESTROYHWQUEUE, D3DKMT_DESTROYSYNCHRONIZATIONOBJECT, D3DKMT_EVICT,
    D3DKMT_FREEGPUVIRTUALADDRESS, D3DKMT_INVALIDATECACHE, D3DKMT_LOCK2,
    D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU, D3DKMT_SUBMITCOMMAND, D3DKMT_SUBMITCOMMANDTOHWQUEUE,
    D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE, D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE,
    D3DKMT_UNLOCK2, D3DKMT_UPDATEGPUVIRTUALADDRESS, D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU,
};
use windows_sys::Win32::Foundation::{LUID, NTSTATUS, STATUS_NO_MEMORY, STATUS_PENDING};
use windows_sys::Win32::System::Threading::{
    AcquireSRWLockExclusive, ReleaseSRWLockExclusive, SRWLOCK,
};

use crate::fence::{FenceMapping, NativeFence};
use crate::kmt::{
    checked_progress, Allocation, AllocationCpu, AllocationPdd, DestroyFlags, Doorbell,
    DoorbellCpu, DoorbellStatus, EvictFlags, FenceCpu, HwQueue, Kmt, KmtHandle, MakeResidentError,
    MakeResidentFlags, MapGpuVa, MappedGpu, MappedGpuVa, NtStatus, PagingFence, PagingQueue,
    QueueProgress, ReserveGpuVa, UpdateGpuVa, UpdateGpuVaOp, UPDATE_GPU_VA_COPY, UPDATE_GPU_VA_MAP,
    UPDATE_GPU_VA_MAP_PROTECT, UPDATE_GPU_VA_UNMAP,
};

/// Objects per `D3DKMTSubmit{Wait,Signal}...ToHwQueue` call (stack arrays; more are split).
const SYNC_CHUNK: usize = 16;

/// Calls `submit` with the handle and value arrays of each chunk of at most [`SYNC_CHUNK`]
/// of `fences` and their count, stopping at the first failure; no fences at all is
/// `STATUS_INVALID_PARAMETER`.
fn in_sync_chunks(
    fences: &[(KmtHandle, u64)],
    mut submit: impl FnMut(&[u32; SYNC_CHUNK], &[u64; SYNC_CHUNK], u32) -> NTSTATUS,
) -> Result<(), NtStatus> {
    if fences.is_empty() {
        return Err(NtStatus(STATUS_INVALID_PARAMETER));
    }
    for chunk in fences.chunks(SYNC_CHUNK) {
        let mut handles = [0u32; SYNC_CHUNK];
        let mut values = [0u64; SYNC_CHUNK];
        let mut n = 0u32;
        for ((h, v), (dh, dv)) in chunk.iter().zip(handles.iter_mut().zip(values.iter_mut())) {
            *dh = *h;
            *dv = *v;
            n += 1;
        }
        check(submit(&handles, &values, n))?;
    }
    Ok(())
}

/// `NTSTATUS` values this module returns itself.
pub const STATUS_NOT_SUPPORTED: NTSTATUS = 0xC000_00BB_u32 as NTSTATUS;
/// The OS returned something unusable (a null or misaligned CPU address).
pub const STATUS_INVALID_PARAMETER: NTSTATUS = 0xC000_000D_u32 as NTSTATUS;
/// `STATUS_INVALID_HANDLE`.
const STATUS_INVALID_HANDLE: NTSTATUS = 0xC000_0008_u32 as NTSTATUS;
/// An event could not be created.
pub const STATUS_INSUFFICIENT_RESOURCES: NTSTATUS = 0xC000_009A_u32 as NTSTATUS;

fn check(status: NTSTATUS) -> Result<(), NtStatus> {
    if status < 0 {
        Err(NtStatus(status))
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// WDDM 3.2 doorbell thunks: structures (released d3dkmthk.h layout) and run-time lookup
// ---------------------------------------------------------------------------------------------

/// `D3DKMT_CREATE_DOORBELL`:
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_create_doorbell>
/// (`D3DKMT_PTR` members are plain pointers on x64.)
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dkmtCreateDoorbell {
    pub hHwQueue: u32,
    pub hRingBuffer: u32,
    pub hRingBufferControl: u32,
    /// `D3DKMT_CREATE_DOORBELL_FLAGS` (bit 0 RequireSecondaryCpuVA, bit 1
    /// ResizeRingBufferOperation):
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_create_doorbell_flags>
    pub Flags: u32,
    pub PrivateDriverDataSize: u32,
    pub PrivateDriverData: *mut c_void,
    pub DoorbellCPUVirtualAddress: *mut c_void,
    pub DoorbellSecondaryCPUVirtualAddress: *mut c_void,
    pub DoorbellStatusCPUVirtualAddress: *mut c_void,
    pub HwQueueProgressFenceLastQueuedValueCPUVirtualAddress: *mut c_void,
    pub hDoorbell: u32,
}

/// `D3DKMT_CONNECT_DOORBELL` (`Flags` is `D3DKMT_CONNECT_DOORBELL_FLAGS`, all reserved):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_connect_doorbell>
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dkmtConnectDoorbell {
    pub hDoorbell: u32,
    pub Flags: u32,
}

/// `D3DKMT_DESTROY_DOORBELL`:
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_destroy_doorbell>
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dkmtDestroyDoorbell {
    pub hDoorbell: u32,
}

/// `D3DKMT_NOTIFY_WORK_SUBMISSION` (`Flags` is `D3DKMT_NOTIFY_WORK_SUBMISSION_FLAGS`, all
/// reserved):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_notify_work_submission>
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dkmtNotifyWorkSubmission {
    pub hDoorbell: u32,
    pub Flags: u32,
}

/// `D3DDDI_NATIVEFENCEMAPPING`:
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_nativefencemapping>
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dddiNativeFenceMapping {
    pub CurrentValueCpuVa: *mut c_void,
    pub CurrentValueGpuVa: u64,
    pub MonitoredValueGpuVa: u64,
    pub Reserved: [u8; 32],
}

impl D3dddiNativeFenceMapping {
    /// All zeros: what the caller passes in for the OS to fill.
    const EMPTY: Self = Self {
        CurrentValueCpuVa: ptr::null_mut(),
        CurrentValueGpuVa: 0,
        MonitoredValueGpuVa: 0,
        Reserved: [0; 32],
    };
}

/// `D3DDDI_NATIVEFENCEINFO`:
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_nativefenceinfo>
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dddiNativeFenceInfo {
    pub InitialFenceValue: u64,
    pub EngineAffinity: u32,
    /// `D3DDDI_NATIVEFENCE_TYPE` (0 = `D3DDDI_NATIVEFENCE_TYPE_DEFAULT`).
    pub Type: i32,
    /// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`.
    pub Flags: u32,
    pub NativeFenceMapping: D3dddiNativeFenceMapping,
    pub Reserved: [u8; 28],
}

/// `D3DDDI_NATIVE_FENCE_PDD_SIZE` (rvgpu_ddi::fence has the same value, from the design page).
pub const NATIVE_FENCE_PDD_SIZE: usize = 64;

/// `D3DKMT_CREATENATIVEFENCE`:
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_createnativefence>
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dkmtCreateNativeFence {
    pub hDevice: u32,
    pub hSyncObject: u32,
    pub PrivateDriverData: [u8; NATIVE_FENCE_PDD_SIZE],
    pub Info: D3dddiNativeFenceInfo,
    /// `D3DKMT_CREATENATIVEFENCE_FLAGS`.
    pub Flags: u32,
    pub Reserved: [u8; 28],
}

/// `D3DKMT_OPENNATIVEFENCEFROMNTHANDLE`:
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_opennativefencefromnthandle>
#[repr(C)]
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct D3dkmtOpenNativeFenceFromNtHandle {
    pub hNtHandle: *mut c_void,
    pub hDevice: u32,
    pub EngineAffinity: u32,
    /// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`.
    pub Flags: u32,
    pub hSyncObject: u32,
    pub NativeFenceMapping: D3dddiNativeFenceMapping,
    pub PrivateDriverData: [u8; NATIVE_FENCE_PDD_SIZE],
    pub Reserved: [u8; 32],
}

/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::Shared` (bit 0): the fence may be shared by NT handle.
const SYNC_FLAG_SHARED: u32 = 1 << 0;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NtSecuritySharing` (bit 1): shared through
/// `D3DKMTShareObjects` (an NT handle) rather than a global handle.
const SYNC_FLAG_NT_SECURITY_SHARING: u32 = 1 << 1;
/// `GENERIC_ALL`: what a D3D runtime asks for when it shares a sync object by NT handle.
const GENERIC_ALL: u32 = 0x1000_0000;

/// Compile-time layout checks of one structure: `layout!(T { Field: offset, ... } size N)`
/// asserts `offset_of!(T, Field) == offset` for each field listed and `size_of::<T>() == N`
/// (either part may be left out).
macro_rules! layout {
    ($t:ident $({ $($field:ident: $off:literal),* $(,)? })? $(size $size:literal)?) => {
        $($(assert!(core::mem::offset_of!($t, $field) == $off);)*)?
        $(assert!(core::mem::size_of::<$t>() == $size);)?
    };
}

// The GPU VA thunks' structures come from windows-sys; their layout checked against the
// 22621 SDK's d3dukmdt.h / d3dkmthk.h (every D3DKMT_ALIGN64 member 8-aligned).
#[cfg(target_pointer_width = "64")]
const _: () = {
    layout!(D3DDDI_MAPGPUVIRTUALADDRESS {
        hAllocation: 32,
        Protection: 56,
        VirtualAddress: 88,
        PagingFenceValue: 96,
    } size 104);
    layout!(D3DDDI_RESERVEGPUVIRTUALADDRESS { Size: 32, VirtualAddress: 56 } size 72);
    layout!(D3DKMT_FREEGPUVIRTUALADDRESS size 24);
    // D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION: the type, then a 56-byte union (MapProtect's
    // members, hAllocation padded to 8); 22631 dxgkrnl copies operations at a 64-byte stride
    // and reads a MAP's hAllocation at offset 24.
    layout!(D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION { Anonymous: 8 } size 64);
    layout!(D3DKMT_UPDATEGPUVIRTUALADDRESS { Operations: 16, FenceValue: 40, Flags: 48 } size 56);
};

/// `D3DKMT_UPDATEGPUVIRTUALADDRESS::Flags.DoNotWait` (bit 0).
const UPDATE_GPU_VA_DO_NOT_WAIT: u32 = 1 << 0;

/// One operation as the thunk takes it (the union member its type names).
fn update_operation(op: &UpdateGpuVaOp) -> D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
    use windows_sys::Wdk::Graphics::Direct3D::{
        D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE, D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_0,
        D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_1, D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_2,
        D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_3,
    };
    let mut protection = D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE::default();
    protection.Anonymous.Value = op.protection.0;
    let mut out = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
        OperationType: op.operation_type,
        ..Default::default()
    };
    match op.operation_type {
        UPDATE_GPU_VA_MAP => {
            out.Anonymous.Map = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_0 {
                BaseAddress: op.base,
                SizeInBytes: op.size,
                hAllocation: op.allocation,
                AllocationOffsetInBytes: op.allocation_offset,
                AllocationSizeInBytes: op.allocation_size,
            };
        }
        UPDATE_GPU_VA_MAP_PROTECT => {
            out.Anonymous.MapProtect = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_1 {
                BaseAddress: op.base,
                SizeInBytes: op.size,
                hAllocation: op.allocation,
                AllocationOffsetInBytes: op.allocation_offset,
                AllocationSizeInBytes: op.allocation_size,
                Protection: protection,
                DriverProtection: op.driver_protection,
            };
        }
        UPDATE_GPU_VA_UNMAP => {
            out.Anonymous.Unmap = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_2 {
                BaseAddress: op.base,
                SizeInBytes: op.size,
                Protection: protection,
            };
        }
        UPDATE_GPU_VA_COPY => {
            out.Anonymous.Copy = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_3 {
                SourceAddress: op.base,
                SizeInBytes: op.size,
                DestAddress: op.dest,
            };
        }
        // Any other type goes as it is: the OS refuses it.
        _ => {}
    }
    out
}

// Sizes and offsets below are computed from the documented member lists under the x64 C
// layout rules (`D3DKMT_ALIGN64` members 8-aligned); no Windows SDK header was available here
// to compare against.
#[cfg(target_pointer_width = "64")]
const _: () = {
    layout!(D3dkmtCreateDoorbell {
        PrivateDriverData: 24,
        DoorbellStatusCPUVirtualAddress: 48,
        HwQueueProgressFenceLastQueuedValueCPUVirtualAddress: 56,
        hDoorbell: 64,
    } size 72);
    assert!(core::mem::align_of::<D3dkmtCreateDoorbell>() == 8);
    layout!(D3dkmtConnectDoorbell size 8);
    layout!(D3dkmtDestroyDoorbell size 4);
    layout!(D3dkmtNotifyWorkSubmission size 8);
    layout!(D3dddiNativeFenceMapping size 56);
    layout!(D3dddiNativeFenceInfo { NativeFenceMapping: 24 } size 112);
    layout!(D3dkmtCreateNativeFence { Info: 72, Flags: 184 } size 216);
    layout!(D3dkmtOpenNativeFenceFromNtHandle {
        hDevice: 8,
        hSyncObject: 20,
        NativeFenceMapping: 24,
        PrivateDriverData: 80,
    } size 176);
};

// windows-sys' `D3DKMT_CREATESYNCHRONIZATIONOBJECT2` against the Windows SDK's d3dkmthk.h and
// d3dukmdt.h (x64): `Info` 8-aligned because its union has `D3DKMT_ALIGN64` members and a
// 64-byte `Reserved[8]` arm; in the monitored-fence arm the initial value, CPU address, GPU
// address and engine affinity follow each other at 8-byte steps.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use windows_sys::Wdk::Graphics::Direct3D::{
        D3DDDI_SYNCHRONIZATIONOBJECTINFO2, D3DDDI_SYNCHRONIZATIONOBJECTINFO2_0_4,
    };
    layout!(D3DDDI_SYNCHRONIZATIONOBJECTINFO2 { Anonymous: 8, SharedHandle: 72 } size 80);
    layout!(D3DDDI_SYNCHRONIZATIONOBJECTINFO2_0_4 {
        FenceValueCPUVirtualAddress: 8,
        FenceValueGPUVirtualAddress: 16,
        EngineAffinity: 24,
    });
    layout!(D3DKMT_CREATESYNCHRONIZATIONOBJECT2 { Info: 8, hSyncObject: 88 } size 96);
};

// The windows-sys structures of the allocation and residency thunks, checked against the
// member lists of d3dkmthk.h / d3dukmdt.h in the Windows SDK (x64 rules: pointers,
// `D3DKMT_ALIGN64` and `SIZE_T` members 8 bytes and 8-aligned; flag unions one UINT):
// - D3DKMT_CREATEALLOCATION:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createallocation>
// - D3DDDI_ALLOCATIONINFO2:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_allocationinfo2>
// - D3DKMT_LOCK2:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_lock2>
// - D3DKMT_UNLOCK2:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_unlock2>
// - D3DKMT_DESTROYALLOCATION2:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_destroyallocation2>
// - D3DDDICB_DESTROYALLOCATION2FLAGS:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddicb_destroyallocation2flags>
// - D3DKMT_INVALIDATECACHE:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_invalidatecache>
// - D3DDDI_MAKERESIDENT:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_makeresident>
// - D3DDDI_MAKERESIDENT_FLAGS:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_makeresident_flags>
// - D3DKMT_EVICT:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_evict>
// - D3DDDI_EVICT_FLAGS:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_evict_flags>
#[cfg(target_pointer_width = "64")]
const _: () = {
    use windows_sys::Wdk::Graphics::Direct3D::{
        D3DDDICB_DESTROYALLOCATION2FLAGS, D3DDDI_EVICT_FLAGS, D3DDDI_MAKERESIDENT_FLAGS,
    };
    layout!(D3DKMT_CREATEALLOCATION {
        pPrivateRuntimeData: 16,
        PrivateDriverDataSize: 40,
        NumAllocations: 44,
        Anonymous2: 48,
        Flags: 56,
        hPrivateRuntimeResourceHandle: 64,
    } size 72);
    layout!(D3DDDI_ALLOCATIONINFO2 {
        pPrivateDriverData: 16,
        PrivateDriverDataSize: 24,
        Flags: 32,
        GpuVirtualAddress: 40,
        Reserved: 56,
    } size 96);
    layout!(D3DKMT_LOCK2 { Flags: 8, pData: 16 } size 24);
    layout!(D3DKMT_UNLOCK2 { hAllocation: 4 } size 8);
    layout!(D3DKMT_DESTROYALLOCATION2 {
        phAllocationList: 8,
        AllocationCount: 16,
        Flags: 20,
    } size 24);
    layout!(D3DDDICB_DESTROYALLOCATION2FLAGS size 4);
    layout!(D3DKMT_INVALIDATECACHE { Offset: 8, Length: 16 } size 24);
    layout!(D3DDDI_MAKERESIDENT {
        NumAllocations: 4,
        AllocationList: 8,
        PriorityList: 16,
        Flags: 24,
        PagingFenceValue: 32,
        NumBytesToTrim: 40,
    } size 48);
    layout!(D3DDDI_MAKERESIDENT_FLAGS size 4);
    layout!(D3DKMT_EVICT {
        NumAllocations: 4,
        AllocationList: 8,
        Flags: 16,
        NumBytesToTrim: 24,
    } size 32);
    layout!(D3DDDI_EVICT_FLAGS size 4);
};

/// `D3DDDICB_DESTROYALLOCATION2FLAGS::AssumeNotInUse` (bit 0).
const DESTROY_ASSUME_NOT_IN_USE: u32 = 1 << 0;
/// `D3DDDI_MAKERESIDENT_FLAGS::CantTrimFurther` (bit 0).
const MAKERESIDENT_CANT_TRIM_FURTHER: u32 = 1 << 0;
/// `D3DDDI_EVICT_FLAGS::EvictOnlyIfNecessary` (bit 0).
const EVICT_ONLY_IF_NECESSARY: u32 = 1 << 0;
/// `D3DDDI_EVICT_FLAGS::NotWrittenTo` (bit 1).
const EVICT_NOT_WRITTEN_TO: u32 = 1 << 1;

/// `D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission` (bit 4):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_createhwqueueflags>
pub const CREATEHWQUEUE_USER_MODE_SUBMISSION: u32 = 1 << 4;

/// A WDDM 3.2 thunk: `NTSTATUS (APIENTRY *)(ARGS *)`.
pub type Thunk = unsafe extern "system" fn(args: *mut c_void) -> NTSTATUS;

/// The thunks looked up by name (the WDDM 3.2 ones windows-sys 0.61 lacks).
#[derive(Debug, Clone, Copy)]
pub enum Wddm32Thunk {
    CreateDoorbell,
    ConnectDoorbell,
    DestroyDoorbell,
    NotifyWorkSubmission,
    /// `D3DKMTCreateNativeFence` (24H2): not a function in windows-sys 0.61 either, and its
    /// `D3DKMT_CREATENATIVEFENCE` there is a prerelease layout.
    CreateNativeFence,
    /// `D3DKMTOpenNativeFenceFromNtHandle` (24H2): not in windows-sys 0.61.
    OpenNativeFenceFromNtHandle,
    /// `D3DKMTIsFeatureEnabled` (24H2), absent from windows-sys 0.61:
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtisfeatureenabled>.
    IsFeatureEnabled,
}

impl Wddm32Thunk {
    /// How many there are: the last one's index plus one (sizes the lookup cache; a new thunk
    /// goes last, or here).
    const COUNT: usize = Self::IsFeatureEnabled as usize + 1;

    const fn name(self) -> &'static core::ffi::CStr {
        match self {
            Self::CreateDoorbell => c"D3DKMTCreateDoorbell",
            Self::ConnectDoorbell => c"D3DKMTConnectDoorbell",
            Self::DestroyDoorbell => c"D3DKMTDestroyDoorbell",
            Self::NotifyWorkSubmission => c"D3DKMTNotifyWorkSubmission",
            Self::CreateNativeFence => c"D3DKMTCreateNativeFence",
            Self::OpenNativeFenceFromNtHandle => c"D3DKMTOpenNativeFenceFromNtHandle",
            Self::IsFeatureEnabled => c"D3DKMTIsFeatureEnabled",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// "gdi32.dll" as UTF-16, NUL-terminated.
const GDI32: [u16; 10] = {
    let s = *b"gdi32.dll\0";
    let mut out = [0u16; 10];
    let mut i = 0;
    while i < 10 {
        #[allow(clippy::indexing_slicing)] // const-evaluated, in bounds by the loop condition
        {
            out[i] = s[i] as u16;
        }
        i += 1;
    }
    out
};

/// Looked-up thunks: null = not looked up yet, [`MISSING`] = this Windows lacks it.
static THUNKS: [AtomicPtr<c_void>; Wddm32Thunk::COUNT] =
    [const { AtomicPtr::new(ptr::null_mut()) }; Wddm32Thunk::COUNT];
const MISSING: *mut c_void = ptr::dangling_mut::<c_void>();

fn lookup_uncached(thunk: Wddm32Thunk) -> Option<Thunk> {
    use windows_sys::Win32::System::LibraryLoader::{
        GetModuleHandleW, GetProcAddress, LoadLibraryW,
    };
    // SAFETY: NUL-terminated UTF-16 module name; GetModuleHandleW takes no reference.
    let mut module = unsafe { GetModuleHandleW(GDI32.as_ptr()) };
    if module.is_null() {
        // SAFETY: as above; loads gdi32.dll if this process has not yet.
        module = unsafe { LoadLibraryW(GDI32.as_ptr()) };
    }
    if module.is_null() {
        return None;
    }
    // SAFETY: valid module handle and NUL-terminated ASCII name.
    let proc = unsafe { GetProcAddress(module, thunk.name().as_ptr().cast()) }?;
    // SAFETY: every D3DKMT thunk has the signature `NTSTATUS APIENTRY f(ARGS *)`.
    Some(unsafe { core::mem::transmute::<unsafe extern "system" fn() -> isize, Thunk>(proc) })
}

/// Looks up a WDDM 3.2 thunk in gdi32.dll (once per process); `None` on a Windows that does
/// not have it.
pub fn lookup(thunk: Wddm32Thunk) -> Option<Thunk> {
    let slot = THUNKS.get(thunk.index())?;
    let cached = slot.load(Ordering::Acquire);
    if cached == MISSING {
        return None;
    }
    if !cached.is_null() {
        // SAFETY: only ever stored from a `Thunk` below (function pointers and data pointers
        // have the same size and representation on Windows targets).
        return Some(unsafe { core::mem::transmute::<*mut c_void, Thunk>(cached) });
    }
    let found = lookup_uncached(thunk);
    slot.store(
        found.map_or(MISSING, |f| f as *mut c_void),
        Ordering::Release,
    );
    found
}

/// Calls a WDDM 3.2 thunk, or returns STATUS_NOT_SUPPORTED if this Windows lacks it.
///
/// # Safety
/// `args` must point to the thunk's argument structure, valid as the thunk documents.
pub unsafe fn call(thunk: Wddm32Thunk, args: *mut c_void) -> NTSTATUS {
    match lookup(thunk) {
        // SAFETY: caller contract on `args`.
        Some(f) => unsafe { f(args) },
        None => STATUS_NOT_SUPPORTED,
    }
}

/// [`call`] with the thunk's argument structure.
///
/// # Safety
/// `args` must be the argument structure the thunk documents, valid as it documents.
unsafe fn call_with<T>(thunk: Wddm32Thunk, args: &mut T) -> NTSTATUS {
    // SAFETY: caller contract on `args`.
    unsafe { call(thunk, ptr::from_mut(args).cast()) }
}

/// Opens an adapter by LUID; returns its D3DKMT handle.
pub fn open_adapter(luid: LUID) -> Result<u32, NTSTATUS> {
    let mut args = D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: luid,
        hAdapter: 0,
    };
    // SAFETY: a valid, initialised argument structure on the stack.
    let status = unsafe { D3DKMTOpenAdapterFromLuid(&mut args) };
    if status < 0 {
        Err(status)
    } else {
        Ok(args.hAdapter)
    }
}

/// Closes an adapter handle from [`open_adapter`].
pub fn close_adapter(adapter: u32) -> NTSTATUS {
    let args = D3DKMT_CLOSEADAPTER { hAdapter: adapter };
    // SAFETY: a valid argument structure; D3DKMT validates the handle.
    unsafe { D3DKMTCloseAdapter(&args) }
}

// ---------------------------------------------------------------------------------------------
// CPU views
// ---------------------------------------------------------------------------------------------

/// CPU view of an allocation: the `Lock2` mapping.
#[derive(Clone, Debug)]
pub struct WinMem {
    base: *mut u64,
    size: u64,
}

impl WinMem {
    /// The word at byte `offset`, if 8-aligned and in range.
    fn word(&self, offset: u64) -> Option<&AtomicU64> {
        if !offset.is_multiple_of(8) || offset.checked_add(8)? > self.size {
            return None;
        }
        let index = usize::try_from(offset / 8).ok()?;
        // SAFETY: `base` is the CPU mapping of `size` bytes that `Lock2` returned and `index`
        // is in range (checked above), so the word stays inside the mapping.
        let p = unsafe { self.base.add(index) };
        // SAFETY: `p` is 8-aligned (checked at creation) and stays mapped until the
        // allocation is destroyed, which the submission core does only after its last access;
        // the GPU and this process access the words only atomically.
        Some(unsafe { AtomicU64::from_ptr(p) })
    }
}

impl AllocationCpu for WinMem {
    fn store(&self, offset: u64, value: u64) {
        if let Some(w) = self.word(offset) {
            w.store(value, Ordering::Release);
        }
    }
    fn load(&self, offset: u64) -> u64 {
        self.word(offset).map_or(0, |w| w.load(Ordering::Acquire))
    }
    #[inline]
    fn store_word(&self, index: u64, value: u64) {
        // The ring's stores: one bound check per word (no alignment to check).
        if index < self.size / 8 {
            if let Ok(i) = usize::try_from(index) {
                // SAFETY: `base` is the CPU mapping of `size` bytes that `Lock2` returned and
                // `i` is below `size / 8`, so the word stays inside the mapping.
                let p = unsafe { self.base.add(i) };
                // SAFETY: as in `word`: 8-aligned, mapped until the allocation is destroyed,
                // accessed only atomically.
                unsafe { AtomicU64::from_ptr(p) }.store(value, Ordering::Release);
            }
        }
    }
    fn cpu_ptr(&self) -> *mut u8 {
        self.base.cast()
    }
}

/// CPU views of a doorbell: the doorbell page, the status page and the last-queued value.
#[derive(Debug)]
pub struct WinDoorbell {
    doorbell: *mut u64,
    status: *const i32,
    /// `None`: the OS keeps no last-queued value for the queue (24H2).
    last_queued: Option<*mut u64>,
}

impl DoorbellCpu for WinDoorbell {
    fn ring(&self, value: u64) {
        // The write pointer was stored with Release; the doorbell page may be write-combining,
        // so fence before the doorbell write (hardware.md 8.5, P3 before P4) and after it (the
        // status read that follows must not pass it).
        fence(Ordering::SeqCst);
        // SAFETY: `DoorbellCPUVirtualAddress` from D3DKMTCreateDoorbell: a writable mapping
        // (physical doorbell or the OS's dummy page) that lives until D3DKMTDestroyDoorbell,
        // which the submission core calls only after its last ring; checked non-null and
        // 8-aligned at creation. Volatile: a device register write.
        unsafe { ptr::write_volatile(self.doorbell, value) };
        fence(Ordering::SeqCst);
    }

    fn status(&self) -> DoorbellStatus {
        // SAFETY: `DoorbellStatusCPUVirtualAddress`, a read-only OS page holding a
        // D3DDDI_DOORBELLSTATUS (32-bit enum) that lives as long as the doorbell; checked
        // non-null and aligned at creation. Volatile: the OS changes it asynchronously.
        DoorbellStatus::from_raw(unsafe { ptr::read_volatile(self.status) })
    }

    fn set_last_queued(&self, value: u64) {
        let Some(cell) = self.last_queued else { return };
        // SAFETY: `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress`, a writable 64-bit
        // OS location that lives as long as the doorbell; checked non-null and 8-aligned at
        // creation; the OS reads it concurrently, so the store is atomic.
        unsafe { AtomicU64::from_ptr(cell) }.store(value, Ordering::Release);
    }
}

/// Read-only CPU view of a fence value: a progress fence's, a paging fence's or a native
/// fence's CurrentValue.
#[derive(Debug)]
pub struct WinFence {
    value: *const u64,
}

impl FenceCpu for WinFence {
    fn value(&self) -> u64 {
        // SAFETY: `HwQueueProgressFenceCPUVirtualAddress`, `FenceValueCPUVirtualAddress` or a
        // native fence's `CurrentValueCpuVa`: a read-only 8-aligned OS mapping of the value
        // (checked non-null and aligned where the view is made) that lives as long as the
        // queue or fence, which outlive the view. An atomic load of a lock-free size is
        // allowed on read-only memory.
        unsafe { AtomicU64::from_ptr(self.value.cast_mut()) }.load(Ordering::Acquire)
    }
}

/// What `QueryPerformanceCounter` or `QueryPerformanceFrequency` (`query`) writes; 0 if it
/// fails or is negative.
fn performance_query(query: unsafe extern "system" fn(*mut i64) -> windows_sys::core::BOOL) -> u64 {
    let mut v: i64 = 0;
    // SAFETY: `query` is one of the two, which write one i64 through the pointer: a writable
    // i64 on this stack frame.
    if unsafe { query(&mut v) } == 0 {
        return 0;
    }
    u64::try_from(v).unwrap_or(0)
}

fn aligned<T>(p: *mut c_void) -> Option<*mut T> {
    (!p.is_null() && (p as usize).is_multiple_of(core::mem::align_of::<T>())).then_some(p.cast())
}

/// `D3DKMTMakeResident` of `allocations` on paging queue `queue` whose fence is `fence`.
fn make_resident_with(
    queue: KmtHandle,
    fence: KmtHandle,
    allocations: &[KmtHandle],
    flags: MakeResidentFlags,
) -> Result<PagingFence, MakeResidentError> {
    let count = u32::try_from(allocations.len())
        .map_err(|_| MakeResidentError::Status(NtStatus(STATUS_INVALID_PARAMETER)))?;
    let mut args = D3DDDI_MAKERESIDENT {
        hPagingQueue: queue,
        NumAllocations: count,
        AllocationList: allocations.as_ptr(),
        ..Default::default()
    };
    if flags.cant_trim_further {
        args.Flags.Anonymous.Value = MAKERESIDENT_CANT_TRIM_FURTHER;
    }
    // SAFETY: the list points to `count` handles that outlive the call; no priority list.
    let st = unsafe { D3DKMTMakeResident(&mut args) };
    if st == STATUS_NO_MEMORY {
        return Err(MakeResidentError::OverBudget {
            bytes_to_trim: args.NumBytesToTrim,
        });
    }
    // STATUS_PENDING: accepted, the paging fence value is still ahead (the caller waits).
    if st != STATUS_PENDING {
        check(st).map_err(MakeResidentError::Status)?;
    }
    Ok(PagingFence {
        fence,
        value: args.PagingFenceValue,
    })
}

/// The size of each allocation this device created through
/// [`create_allocation_pdd`](Kmt::create_allocation_pdd), for the bounds of its `Lock2` view:
/// `D3DKMT_LOCK2` returns only an address. Guarded by an SRW lock because a `WinKmt` is shared
/// between threads (the C API's adapters).
struct Sizes {
    lock: core::cell::UnsafeCell<SRWLOCK>,
    map: core::cell::UnsafeCell<alloc::collections::BTreeMap<KmtHandle, u64>>,
}

// SAFETY: `map` is only reached through `with`, which holds the SRW lock exclusively.
unsafe impl Sync for Sizes {}
// SAFETY: the map owns its data; an unlocked SRWLOCK is plain data that may move.
unsafe impl Send for Sizes {}

impl core::fmt::Debug for Sizes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Sizes")
    }
}

impl Sizes {
    fn new() -> Self {
        Self {
            // SRWLOCK_INIT is all zeros.
            lock: core::cell::UnsafeCell::new(SRWLOCK {
                Ptr: ptr::null_mut(),
            }),
            map: core::cell::UnsafeCell::new(alloc::collections::BTreeMap::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut alloc::collections::BTreeMap<KmtHandle, u64>) -> R) -> R {
        // SAFETY: `lock` is a valid, initialised SRWLOCK that does not move while `self` is
        // borrowed.
        unsafe { AcquireSRWLockExclusive(self.lock.get()) };
        // SAFETY: the exclusive lock is held, so this is the only reference to the map; `f`
        // cannot reach `self` again (no reentrancy: the closures below only touch the map).
        let r = f(unsafe { &mut *self.map.get() });
        // SAFETY: acquired above by this thread.
        unsafe { ReleaseSRWLockExclusive(self.lock.get()) };
        r
    }
}

// ---------------------------------------------------------------------------------------------
// The thunks
// ---------------------------------------------------------------------------------------------

/// One D3D device on one adapter, with the paging queue used to make allocations resident.
#[derive(Debug)]
pub struct WinKmt {
    adapter: u32,
    device: u32,
    paging_queue: u32,
    paging_fence: u32,
    sizes: Sizes,
    /// The `CurrentValueCpuVa` of each native fence this device created or opened: a CPU wait
    /// on one re-reads it after every slice ([`crate::wait`]).
    native_cpu: Sizes,
}

impl WinKmt {
    /// Opens the adapter with `luid`, creates a device and the paging queue on it that
    /// [`make_resident`](Kmt::make_resident) uses (one per device, for its life).
    pub fn open(luid: LUID) -> Result<Self, NtStatus> {
        let adapter = open_adapter(luid).map_err(NtStatus)?;
        let mut dev = D3DKMT_CREATEDEVICE::default();
        dev.Anonymous.hAdapter = adapter;
        // SAFETY: a valid, initialised argument structure on the stack.
        if let Err(e) = check(unsafe { D3DKMTCreateDevice(&mut dev) }) {
            close_adapter(adapter);
            return Err(e);
        }
        let mut pq = D3DKMT_CREATEPAGINGQUEUE {
            hDevice: dev.hDevice,
            Priority: D3DDDI_PAGINGQUEUE_PRIORITY_NORMAL,
            ..Default::default()
        };
        // SAFETY: as above.
        if let Err(e) = check(unsafe { D3DKMTCreatePagingQueue(&mut pq) }) {
            let d = D3DKMT_DESTROYDEVICE {
                hDevice: dev.hDevice,
            };
            // SAFETY: the device just created.
            unsafe { D3DKMTDestroyDevice(&d) };
            close_adapter(adapter);
            return Err(e);
        }
        Ok(Self {
            adapter,
            device: dev.hDevice,
            paging_queue: pq.hPagingQueue,
            paging_fence: pq.hSyncObject,
            sizes: Sizes::new(),
            native_cpu: Sizes::new(),
        })
    }

    /// The D3DKMT device handle.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// The D3DKMT adapter handle the device was created on.
    pub fn adapter(&self) -> u32 {
        self.adapter
    }

    fn wait(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        match self.wait_timeout(fence, value, u64::MAX)? {
            WaitOutcome::Reached => Ok(()),
            WaitOutcome::TimedOut => Err(NtStatus(crate::wait::STATUS_TIMEOUT)),
        }
    }

    /// CurrentValue of a native fence of this device, read through its CPU mapping. The read
    /// happens under the map's lock, and a destroy takes the fence out of the map under the
    /// same lock before the OS unmaps the value: no read of an unmapped value.
    fn native_value(&self, fence: KmtHandle) -> Option<u64> {
        self.native_cpu.with(|m| {
            let p = *m.get(&fence)? as usize as *const u64;
            if p.is_null() || !p.is_aligned() {
                return None;
            }
            // SAFETY: a `CurrentValueCpuVa` the OS returned for this fence (checked non-null
            // and 8-aligned at create or open), read-only and mapped while it is in the map
            // (see above). Atomic load of a lock-free size.
            Some(unsafe { AtomicU64::from_ptr(p.cast_mut()) }.load(Ordering::Acquire))
        })
    }

    fn destroy_alloc(&self, allocation: KmtHandle, flags: DestroyFlags) -> Result<(), NtStatus> {
        // The UMD keeps its Lock2 view for the allocation's life; end it first. Unlocking an
        // unlocked allocation only fails, so the result does not matter.
        let _ = self.unlock2(allocation);
        let mut args = D3DKMT_DESTROYALLOCATION2 {
            hDevice: self.device,
            phAllocationList: &allocation,
            AllocationCount: 1,
            ..Default::default()
        };
        if flags.assume_not_in_use {
            args.Flags.Anonymous.Value = DESTROY_ASSUME_NOT_IN_USE;
        }
        // SAFETY: the list points to one handle on this stack frame.
        let r = check(unsafe { D3DKMTDestroyAllocation2(&args) });
        if r.is_ok() {
            self.sizes.with(|m| m.remove(&allocation));
        }
        r
    }
}

/// How a wait with a timeout ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The fence reached the value.
    Reached,
    /// The timeout elapsed first.
    TimedOut,
}

/// A native fence created with `D3DKMTCreateNativeFence` (the C API's `RvgpuFence`).
#[derive(Debug)]
pub struct WinNativeFence {
    /// The sync object handle.
    pub handle: KmtHandle,
    /// The CurrentValue CPU mapping (read-only).
    current: *const u64,
    /// Where the OS mapped the fence in this process (`D3DDDI_NATIVEFENCEMAPPING`): the GPU
    /// VAs this process's commands use ("in the current process address space").
    pub mapping: FenceMapping,
    /// What the KMD returned in the private data (`rvgpu_hw::pdd::NativeFencePdd`).
    pub private_data: [u8; NATIVE_FENCE_PDD_SIZE],
}

impl WinNativeFence {
    /// The fence's current value.
    pub fn value(&self) -> u64 {
        // SAFETY: `CurrentValueCpuVa` from D3DKMTCreateNativeFence: a read-only 8-aligned
        // mapping (checked at creation) that lives until the sync object is destroyed, which
        // consumes this object. Atomic load of a lock-free size on read-only memory.
        unsafe { AtomicU64::from_ptr(self.current.cast_mut()) }.load(Ordering::Acquire)
    }
}

/// A legacy monitored fence created with [`WinKmt::create_monitored_fence`].
#[derive(Debug)]
pub struct WinMonitoredFence {
    /// The sync object handle.
    pub handle: KmtHandle,
    /// `FenceValueCPUVirtualAddress` (read-only).
    value: *const u64,
    /// `FenceValueGPUVirtualAddress`: what a GPU signal writes.
    pub value_gpu: u64,
}

impl WinMonitoredFence {
    /// The fence's current value.
    pub fn value(&self) -> u64 {
        // SAFETY: `FenceValueCPUVirtualAddress` from D3DKMTCreateSynchronizationObject2: a
        // read-only 8-aligned mapping (checked at creation) that lives until the sync object is
        // destroyed; the owner drops this view before destroying it. Atomic load of a
        // lock-free size on read-only memory.
        unsafe { AtomicU64::from_ptr(self.value.cast_mut()) }.load(Ordering::Acquire)
    }
}

/// Milliseconds for `WaitForSingleObject`: `timeout_ns` rounded up, below `INFINITE`.
fn timeout_ms(timeout_ns: u64) -> u32 {
    let ms = timeout_ns.div_ceil(1_000_000);
    u32::try_from(ms).unwrap_or(u32::MAX - 1).min(u32::MAX - 1)
}

impl WinKmt {
    /// Waits until `fence` reaches `value` or `timeout_ns` elapses (`u64::MAX`: no timeout):
    /// `D3DKMTWaitForSynchronizationObjectFromCpu` with an event, then `WaitForSingleObject`.
    pub fn wait_timeout(
        &self,
        fence: KmtHandle,
        value: u64,
        timeout_ns: u64,
    ) -> Result<WaitOutcome, NtStatus> {
        use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0, WAIT_TIMEOUT};
        use windows_sys::Win32::System::Threading::{CreateEventW, WaitForSingleObject};
        if timeout_ns == u64::MAX && self.native_value(fence).is_none() {
            // Null event: the call blocks until the fence reaches the value.
            return self
                .wait_async(fence, value, ptr::null_mut())
                .map(|()| WaitOutcome::Reached);
        }
        // SAFETY: default security, manual reset, initially non-signalled, unnamed.
        let event = unsafe { CreateEventW(ptr::null(), 1, 0, ptr::null()) };
        if event.is_null() {
            return Err(NtStatus(STATUS_INSUFFICIENT_RESOURCES));
        }
        // With an event the call returns at once and the OS signals the event later.
        let registered = self.wait_async(fence, value, event);
        let outcome = registered.and_then(|()| {
            // A native fence: bounded slices, re-reading CurrentValue after each (24H2 can
            // raise MonitoredValue over this wait; a late wake is counted and traced).
            if self.native_value(fence).is_some() {
                let slice_ms = timeout_ms(crate::wait::SLICE_NS);
                let r = crate::wait::bounded(
                    value,
                    crate::wait::slices_in(timeout_ns),
                    || {
                        // SAFETY: a valid event handle owned by this function.
                        match unsafe { WaitForSingleObject(event, slice_ms) } {
                            WAIT_OBJECT_0 => Ok(crate::wait::Slice::Released),
                            WAIT_TIMEOUT => Ok(crate::wait::Slice::Pending),
                            _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
                        }
                    },
                    || self.native_value(fence).unwrap_or(0),
                );
                return match r {
                    Ok(crate::wait::Woken::Released) => Ok(WaitOutcome::Reached),
                    Ok(crate::wait::Woken::Late { current }) => {
                        crate::etw_windows::late_wake(fence, value, current);
                        Ok(WaitOutcome::Reached)
                    }
                    Err(NtStatus(crate::wait::STATUS_TIMEOUT)) => Ok(WaitOutcome::TimedOut),
                    Err(e) => Err(e),
                };
            }
            // SAFETY: a valid event handle owned by this function.
            match unsafe { WaitForSingleObject(event, timeout_ms(timeout_ns)) } {
                WAIT_OBJECT_0 => Ok(WaitOutcome::Reached),
                WAIT_TIMEOUT => Ok(WaitOutcome::TimedOut),
                _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
            }
        });
        // SAFETY: the event created above, closed once.
        unsafe { CloseHandle(event) };
        outcome
    }

    /// Registers a CPU wait for `fence` to reach `value` that signals the caller's `event`
    /// (`D3DKMTWaitForSynchronizationObjectFromCpu` with `hAsyncEvent`): returns at once; the
    /// OS signals the event when the wait is released (or the fence is gone). A null `event`
    /// blocks instead, until the fence reaches the value.
    pub fn wait_async(
        &self,
        fence: KmtHandle,
        value: u64,
        event: windows_sys::Win32::Foundation::HANDLE,
    ) -> Result<(), NtStatus> {
        let args = D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
            hDevice: self.device,
            ObjectCount: 1,
            ObjectHandleArray: &fence,
            FenceValueArray: &value,
            hAsyncEvent: event,
            ..Default::default()
        };
        // SAFETY: the arrays point to one handle and one value on this stack frame; the OS
        // validates the event handle (null: no event) and holds its own reference to it.
        check(unsafe { D3DKMTWaitForSynchronizationObjectFromCpu(&args) })
    }

    /// `D3DKMTCreateNativeFence` of a default-type native fence (sysmem CurrentValue and
    /// MonitoredValue), with `initial_value`, keeping the CurrentValue CPU mapping (the C API's
    /// fences). [`Kmt::create_native_fence`] is the same call without the mapping.
    pub fn create_native_fence_mapped(
        &self,
        initial_value: u64,
    ) -> Result<WinNativeFence, NtStatus> {
        self.create_native_fence_with(initial_value, 0)
    }

    /// [`create_native_fence_mapped`](Self::create_native_fence_mapped) with
    /// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` `flags`.
    fn create_native_fence_with(
        &self,
        initial_value: u64,
        flags: u32,
    ) -> Result<WinNativeFence, NtStatus> {
        let mut args = D3dkmtCreateNativeFence {
            hDevice: self.device,
            hSyncObject: 0,
            PrivateDriverData: [0; NATIVE_FENCE_PDD_SIZE],
            Info: D3dddiNativeFenceInfo {
                InitialFenceValue: initial_value,
                EngineAffinity: 0,
                Type: 0,
                Flags: flags,
                NativeFenceMapping: D3dddiNativeFenceMapping::EMPTY,
                Reserved: [0; 28],
            },
            Flags: 0,
            Reserved: [0; 28],
        };
        // SAFETY: the released D3DKMT_CREATENATIVEFENCE layout (asserted above), on this stack
        // frame.
        check(unsafe { call_with(Wddm32Thunk::CreateNativeFence, &mut args) })?;
        let Some(current) = aligned::<u64>(args.Info.NativeFenceMapping.CurrentValueCpuVa) else {
            let _ = self.destroy_sync_object(args.hSyncObject);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        let m = &args.Info.NativeFenceMapping;
        let cpu = current as u64;
        self.native_cpu.with(|t| t.insert(args.hSyncObject, cpu));
        Ok(WinNativeFence {
            handle: args.hSyncObject,
            current: current.cast_const(),
            mapping: FenceMapping {
                current_value_cpu: current as usize,
                current_value_gpu: m.CurrentValueGpuVa,
                monitored_value_gpu: m.MonitoredValueGpuVa,
            },
            private_data: args.PrivateDriverData,
        })
    }

    /// `D3DKMTCreateSynchronizationObject2` of a legacy monitored fence
    /// (`D3DDDI_MONITORED_FENCE`, MF-01) starting at `initial_value`: its handle, the OS's
    /// read-only CPU mapping of the value and the value's GPU address in this process.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatesynchronizationobject2>
    pub fn create_monitored_fence(
        &self,
        initial_value: u64,
    ) -> Result<WinMonitoredFence, NtStatus> {
        let mut args = D3DKMT_CREATESYNCHRONIZATIONOBJECT2 {
            hDevice: self.device,
            ..Default::default()
        };
        args.Info.Type = D3DDDI_MONITORED_FENCE;
        args.Info.Anonymous.MonitoredFence.InitialFenceValue = initial_value;
        // SAFETY: valid argument structure (layout asserted above) on this stack frame.
        check(unsafe { D3DKMTCreateSynchronizationObject2(&mut args) })?;
        // SAFETY: the call filled the monitored-fence member of the union (the type asked).
        let mf = unsafe { args.Info.Anonymous.MonitoredFence };
        let Some(value) = aligned::<u64>(mf.FenceValueCPUVirtualAddress) else {
            let _ = self.destroy_sync_object(args.hSyncObject);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        if mf.FenceValueGPUVirtualAddress == 0 || mf.FenceValueGPUVirtualAddress % 8 != 0 {
            let _ = self.destroy_sync_object(args.hSyncObject);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        Ok(WinMonitoredFence {
            handle: args.hSyncObject,
            value: value.cast_const(),
            value_gpu: mf.FenceValueGPUVirtualAddress,
        })
    }

    /// The submission core's view of a fence just created (`NativeFence::new`); if the OS's
    /// mapping or the KMD's private data is unusable the fence is destroyed again and
    /// `STATUS_INVALID_PARAMETER` returned.
    fn native_fence_of(&self, f: WinNativeFence) -> Result<NativeFence, NtStatus> {
        NativeFence::new(f.handle, &f.mapping, &f.private_data).map_err(|_| {
            let _ = self.destroy_sync_object(f.handle);
            NtStatus(STATUS_INVALID_PARAMETER)
        })
    }

    /// `D3DKMTSignalSynchronizationObjectFromCpu` of one fence to `value`.
    pub fn signal_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        let args = D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU {
            hDevice: self.device,
            ObjectCount: 1,
            ObjectHandleArray: &fence,
            FenceValueArray: &value,
            ..Default::default()
        };
        // SAFETY: the arrays point to one handle and one value on this stack frame.
        check(unsafe { D3DKMTSignalSynchronizationObjectFromCpu(&args) })
    }

    /// `D3DKMTDestroySynchronizationObject`.
    pub fn destroy_sync_object(&self, object: KmtHandle) -> Result<(), NtStatus> {
        self.native_cpu.with(|t| t.remove(&object));
        let args = D3DKMT_DESTROYSYNCHRONIZATIONOBJECT {
            hSyncObject: object,
        };
        // SAFETY: valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroySynchronizationObject(&args) })
    }
}

impl Drop for WinKmt {
    fn drop(&mut self) {
        let mut pq = D3DDDI_DESTROYPAGINGQUEUE {
            hPagingQueue: self.paging_queue,
        };
        // SAFETY: handles this object created; each destroyed once, here.
        unsafe { D3DKMTDestroyPagingQueue(&mut pq) };
        let d = D3DKMT_DESTROYDEVICE {
            hDevice: self.device,
        };
        // SAFETY: as above.
        unsafe { D3DKMTDestroyDevice(&d) };
        close_adapter(self.adapter);
    }
}

impl Kmt for WinKmt {
    type Mem = WinMem;
    type Doorbell = WinDoorbell;
    type Fence = WinFence;

    fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus> {
        let mut args = D3DKMT_CREATECONTEXTVIRTUAL {
            hDevice: self.device,
            NodeOrdinal: node,
            // 0: the node's default engine.
            EngineAffinity: 0,
            ClientHint: D3DKMT_CLIENTHINT_UNKNOWN,
            ..Default::default()
        };
        // SAFETY: a valid argument structure; the thunk writes `hContext` back (the header
        // declares the parameter const, so the pointer is derived from a mutable borrow).
        check(unsafe { D3DKMTCreateContextVirtual(ptr::addr_of_mut!(args).cast_const()) })?;
        Ok(args.hContext)
    }

    fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus> {
        let args = D3DKMT_DESTROYCONTEXT { hContext: context };
        // SAFETY: valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroyContext(&args) })
    }

    fn create_hw_queue(
        &self,
        context: KmtHandle,
        user_mode_submission: bool,
        private_data: &mut [u8],
    ) -> Result<HwQueue<WinFence>, NtStatus> {
        let mut args = D3DKMT_CREATEHWQUEUE {
            hHwContext: context,
            PrivateDriverDataSize: u32::try_from(private_data.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            pPrivateDriverData: private_data.as_mut_ptr().cast(),
            ..Default::default()
        };
        args.Flags.Anonymous.Value = if user_mode_submission {
            CREATEHWQUEUE_USER_MODE_SUBMISSION
        } else {
            0
        };
        // SAFETY: valid argument structure; the private data buffer is live and writable for
        // its length during the call (in/out).
        check(unsafe { D3DKMTCreateHwQueue(&mut args) })?;
        let progress = match checked_progress(
            user_mode_submission,
            args.hHwQueueProgressFence,
            args.HwQueueProgressFenceCPUVirtualAddress as usize,
            args.HwQueueProgressFenceGPUVirtualAddress,
        ) {
            Ok(p) => p,
            Err(e) => {
                let d = D3DKMT_DESTROYHWQUEUE {
                    hHwQueue: args.hHwQueue,
                };
                // SAFETY: the queue just created.
                unsafe { D3DKMTDestroyHwQueue(&d) };
                return Err(e);
            }
        };
        Ok(HwQueue {
            handle: args.hHwQueue,
            progress: progress.map(|p| QueueProgress {
                fence: p.fence,
                // Checked non-null and 8-aligned: the OS's read-only mapping of the value.
                cpu: WinFence {
                    value: p.cpu as *const u64,
                },
                gpu: p.gpu,
            }),
        })
    }

    fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        let args = D3DKMT_DESTROYHWQUEUE { hHwQueue: queue };
        // SAFETY: valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroyHwQueue(&args) })
    }

    /// [`create_allocation_pdd`](Kmt::create_allocation_pdd), then
    /// [`make_resident`](Kmt::make_resident) (waiting for the paging fence: the ring and the
    /// command buffers are used by the GPU at once), then [`lock2`](Kmt::lock2) for the CPU
    /// mapping. The allocation is destroyed again if a step fails.
    fn create_allocation_as(
        &self,
        size: u64,
        kind: crate::kmt::AllocationKind,
    ) -> Result<Allocation<WinMem>, NtStatus> {
        let m = self.create_allocation_pdd(&crate::kmt::allocation_private_data(size, kind))?;
        let handle = m.handle;
        // Until it is made resident nothing has touched it, so VidMm may free it at once;
        // after that, paging work may be queued on it: let VidMm wait.
        let fail = |e: NtStatus, untouched: bool| {
            let _ = self.destroy_alloc(
                handle,
                DestroyFlags {
                    assume_not_in_use: untouched,
                },
            );
            Err(e)
        };
        let paging = match self.make_resident(&[handle], MakeResidentFlags::default()) {
            Ok(p) => p,
            Err(MakeResidentError::OverBudget { .. }) => {
                return fail(NtStatus(STATUS_NO_MEMORY), true);
            }
            Err(MakeResidentError::Status(e)) => return fail(e, true),
        };
        if let Err(e) = self.wait(paging.fence, paging.value) {
            return fail(e, false);
        }
        match self.lock2(handle) {
            Ok(mem) => Ok(Allocation {
                handle,
                gpu_va: m.gpu_va,
                size,
                mem,
            }),
            Err(e) => fail(e, false),
        }
    }

    fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        self.destroy_alloc(allocation, DestroyFlags::default())
    }

    /// `D3DKMTCreateAllocation2` with the UMD's private data: handle, GPU VA and the size the
    /// KMD gives it (`DxgkDdiCreateAllocation` rounds to whole pages). Needs an OS-assigned
    /// GPU VA in `D3DDDI_ALLOCATIONINFO2::GpuVirtualAddress`; without one (the v1 KMD, see the
    /// module documentation) it returns `STATUS_NOT_SUPPORTED`.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreateallocation2>
    fn create_allocation_pdd(&self, pdd: &AllocationPdd) -> Result<MappedGpu, NtStatus> {
        let size = pdd
            .size
            .checked_next_multiple_of(rvgpu_hw::PAGE_SIZE)
            .filter(|s| *s != 0)
            .ok_or(NtStatus(STATUS_INVALID_PARAMETER))?;
        // The thunk takes a mutable pointer to the private data (in/out in the DDI).
        let mut pdd = *pdd;
        let mut info = D3DDDI_ALLOCATIONINFO2 {
            pPrivateDriverData: (&raw mut pdd).cast(),
            PrivateDriverDataSize: core::mem::size_of_val(&pdd) as u32,
            ..Default::default()
        };
        let mut args = D3DKMT_CREATEALLOCATION {
            hDevice: self.device,
            NumAllocations: 1,
            ..Default::default()
        };
        args.Anonymous2.pAllocationInfo2 = &mut info;
        // SAFETY: valid argument structure; `info` and `pdd` outlive the call and `info`
        // receives the handle and GPU VA.
        check(unsafe { D3DKMTCreateAllocation2(&mut args) })?;
        let handle = info.hAllocation;
        let gpu_va = info.GpuVirtualAddress;
        if gpu_va == 0 || !gpu_va.is_multiple_of(64) {
            let _ = self.destroy_alloc(
                handle,
                DestroyFlags {
                    assume_not_in_use: true,
                },
            );
            return Err(NtStatus(STATUS_NOT_SUPPORTED));
        }
        self.sizes.with(|m| m.insert(handle, size));
        Ok(MappedGpu {
            handle,
            gpu_va,
            size,
        })
    }

    /// `D3DKMTLock2` of an allocation from [`create_allocation_pdd`](Kmt::create_allocation_pdd)
    /// (its size bounds the view; another handle is `STATUS_INVALID_PARAMETER`).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtlock2>
    fn lock2(&self, allocation: KmtHandle) -> Result<WinMem, NtStatus> {
        let size = self
            .sizes
            .with(|m| m.get(&allocation).copied())
            .ok_or(NtStatus(STATUS_INVALID_PARAMETER))?;
        let mut lock = D3DKMT_LOCK2 {
            hDevice: self.device,
            hAllocation: allocation,
            ..Default::default()
        };
        // SAFETY: valid argument structure; the OS writes `pData`.
        check(unsafe { D3DKMTLock2(&mut lock) })?;
        let Some(base) = aligned::<u64>(lock.pData) else {
            let _ = self.unlock2(allocation);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        Ok(WinMem { base, size })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtunlock2>
    fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        let args = D3DKMT_UNLOCK2 {
            hDevice: self.device,
            hAllocation: allocation,
        };
        // SAFETY: valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTUnlock2(&args) })
    }

    /// `D3DKMTDestroyAllocation2`, with `AssumeNotInUse` when the flags say so (after ending
    /// the UMD's `Lock2` view).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroyallocation2>
    fn destroy_allocation2(
        &self,
        allocation: KmtHandle,
        flags: DestroyFlags,
    ) -> Result<(), NtStatus> {
        self.destroy_alloc(allocation, flags)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtinvalidatecache>
    fn invalidate_cache(
        &self,
        allocation: KmtHandle,
        offset: u64,
        length: u64,
    ) -> Result<(), NtStatus> {
        let bad = || NtStatus(STATUS_INVALID_PARAMETER);
        let args = D3DKMT_INVALIDATECACHE {
            hDevice: self.device,
            hAllocation: allocation,
            Offset: usize::try_from(offset).map_err(|_| bad())?,
            Length: usize::try_from(length).map_err(|_| bad())?,
        };
        // SAFETY: valid argument structure; D3DKMT validates the handle and the range.
        check(unsafe { D3DKMTInvalidateCache(&args) })
    }

    /// No thunk tells a UMD whether the GPU snoops the CPU's caches (the KMD reports it to the
    /// OS only: `NoCacheCoherentApertureMemory`, segment `CacheCoherent`). x86 and x64 systems
    /// must be I/O coherent (Dxgkrnl refuses a non-coherent aperture there), so they are
    /// coherent here; anywhere else the UMD assumes not, which costs cache maintenance but is
    /// correct either way.
    fn io_coherent(&self) -> bool {
        cfg!(any(target_arch = "x86_64", target_arch = "x86"))
    }

    /// `D3DKMTMakeResident` on the device's paging queue (see
    /// [`make_resident_on`](Kmt::make_resident_on)).
    fn make_resident(
        &self,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        make_resident_with(self.paging_queue, self.paging_fence, allocations, flags)
    }

    /// `D3DKMTMakeResident` on `queue`. `STATUS_PENDING` is success: the paging fence
    /// reaches `PagingFenceValue` once the allocations are in place (the caller waits).
    /// `STATUS_NO_MEMORY` is the over-budget answer, with `NumBytesToTrim`.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtmakeresident>
    fn make_resident_on(
        &self,
        queue: &PagingQueue<WinFence>,
        allocations: &[KmtHandle],
        flags: MakeResidentFlags,
    ) -> Result<PagingFence, MakeResidentError> {
        make_resident_with(queue.handle, queue.fence, allocations, flags)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtevict>
    fn evict(&self, allocations: &[KmtHandle], flags: EvictFlags) -> Result<u64, NtStatus> {
        let mut args = D3DKMT_EVICT {
            hDevice: self.device,
            NumAllocations: u32::try_from(allocations.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            AllocationList: allocations.as_ptr(),
            ..Default::default()
        };
        let mut bits = 0;
        if flags.evict_only_if_necessary {
            bits |= EVICT_ONLY_IF_NECESSARY;
        }
        if flags.not_written_to {
            bits |= EVICT_NOT_WRITTEN_TO;
        }
        args.Flags.Anonymous.Value = bits;
        // SAFETY: the list points to the caller's handles, which outlive the call.
        check(unsafe { D3DKMTEvict(&mut args) })?;
        Ok(args.NumBytesToTrim)
    }

    fn create_doorbell(
        &self,
        queue: KmtHandle,
        ring: KmtHandle,
        ring_control: KmtHandle,
        private_data: &mut [u8],
    ) -> Result<Doorbell<WinDoorbell>, NtStatus> {
        let mut args = D3dkmtCreateDoorbell {
            hHwQueue: queue,
            hRingBuffer: ring,
            hRingBufferControl: ring_control,
            Flags: 0,
            PrivateDriverDataSize: u32::try_from(private_data.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            PrivateDriverData: private_data.as_mut_ptr().cast(),
            DoorbellCPUVirtualAddress: ptr::null_mut(),
            DoorbellSecondaryCPUVirtualAddress: ptr::null_mut(),
            DoorbellStatusCPUVirtualAddress: ptr::null_mut(),
            HwQueueProgressFenceLastQueuedValueCPUVirtualAddress: ptr::null_mut(),
            hDoorbell: 0,
        };
        // SAFETY: the released D3DKMT_CREATE_DOORBELL layout (asserted above); the private
        // data buffer is live and writable for its length during the call.
        check(unsafe { call_with(Wddm32Thunk::CreateDoorbell, &mut args) })?;
        // 24H2 never writes the last-queued address (`DxgkCreateDoorbellInternal`
        // @0x1401D8A50): we read back the null we passed, and the queue has no such cell.
        let last = args.HwQueueProgressFenceLastQueuedValueCPUVirtualAddress;
        let views = (
            aligned::<u64>(args.DoorbellCPUVirtualAddress),
            aligned::<i32>(args.DoorbellStatusCPUVirtualAddress),
            if last.is_null() {
                Some(None)
            } else {
                aligned::<u64>(last).map(Some)
            },
        );
        let (Some(doorbell), Some(status), Some(last_queued)) = views else {
            let _ = self.destroy_doorbell(args.hDoorbell);
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        Ok(Doorbell {
            handle: args.hDoorbell,
            cpu: WinDoorbell {
                doorbell,
                status: status.cast_const(),
                last_queued,
            },
        })
    }

    fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut args = D3dkmtConnectDoorbell {
            hDoorbell: doorbell,
            Flags: 0,
        };
        // SAFETY: the D3DKMT_CONNECT_DOORBELL layout (asserted above).
        check(unsafe { call_with(Wddm32Thunk::ConnectDoorbell, &mut args) })
    }

    fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut args = D3dkmtDestroyDoorbell {
            hDoorbell: doorbell,
        };
        // SAFETY: the D3DKMT_DESTROY_DOORBELL layout (asserted above).
        check(unsafe { call_with(Wddm32Thunk::DestroyDoorbell, &mut args) })
    }

    fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut args = D3dkmtNotifyWorkSubmission {
            hDoorbell: doorbell,
            Flags: 0,
        };
        // SAFETY: the D3DKMT_NOTIFY_WORK_SUBMISSION layout (asserted above).
        check(unsafe { call_with(Wddm32Thunk::NotifyWorkSubmission, &mut args) })
    }

    fn submit_command_to_hw_queue(
        &self,
        queue: KmtHandle,
        progress_fence_value: u64,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let args = D3DKMT_SUBMITCOMMANDTOHWQUEUE {
            hHwQueue: queue,
            HwQueueProgressFenceId: progress_fence_value,
            CommandBuffer: command_buffer_gpu,
            CommandLength: command_bytes,
            ..Default::default()
        };
        // SAFETY: valid argument structure without private data or primaries.
        check(unsafe { D3DKMTSubmitCommandToHwQueue(&args) })
    }

    fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        self.wait(fence, value)
    }

    fn submit_command(
        &self,
        context: KmtHandle,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let mut args = D3DKMT_SUBMITCOMMAND {
            Commands: command_buffer_gpu,
            CommandLength: command_bytes,
            BroadcastContextCount: 1,
            ..Default::default()
        };
        args.BroadcastContext[0] = context;
        // SAFETY: a valid argument structure naming one context, without private data,
        // primaries or history buffers.
        check(unsafe { D3DKMTSubmitCommand(&args) })
    }

    /// `D3DKMTSubmitWaitForSyncObjectsToHwQueue` (windows-sys; MF-03): the objects go in
    /// chunks of [`SYNC_CHUNK`] (waiting on each chunk in turn is waiting on all).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitwaitforsyncobjectstohwqueue>
    fn submit_wait_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        in_sync_chunks(fences, |handles, values, n| {
            let args = D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE {
                hHwQueue: queue,
                ObjectCount: n,
                ObjectHandleArray: handles.as_ptr(),
                FenceValueArray: values.as_ptr(),
            };
            // SAFETY: valid argument structure; both arrays hold `n` entries and live across
            // the call.
            unsafe { D3DKMTSubmitWaitForSyncObjectsToHwQueue(&args) }
        })
    }

    /// `D3DKMTSubmitSignalSyncObjectsToHwQueue` (windows-sys; MF-03). The structure has no
    /// `hHwQueue`: the queue is the one entry of `BroadcastHwQueueArray`; `Flags` zero.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtsubmitsignalsyncobjectstohwqueue>
    fn submit_signal_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        let queues = [queue];
        in_sync_chunks(fences, |handles, values, n| {
            let args = D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE {
                BroadcastHwQueueCount: 1,
                BroadcastHwQueueArray: queues.as_ptr(),
                ObjectCount: n,
                ObjectHandleArray: handles.as_ptr(),
                FenceValueArray: values.as_ptr(),
                ..Default::default()
            };
            // SAFETY: valid argument structure; the arrays hold 1 and `n` entries and live
            // across the call.
            unsafe { D3DKMTSubmitSignalSyncObjectsToHwQueue(&args) }
        })
    }

    /// `D3DKMTCreateNativeFence` ([`WinKmt::create_native_fence_mapped`]): the GPU VAs from
    /// the OS's mapping, the tag from the KMD's private data (`GpuFence::new`); if either is
    /// unusable the fence is destroyed again and `STATUS_INVALID_PARAMETER` returned.
    fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
        self.native_fence_of(self.create_native_fence_mapped(initial_value)?)
    }

    /// The fence's `CurrentValueCpuVa` from its `D3DDDI_NATIVEFENCEMAPPING`, checked non-null
    /// and 8-aligned.
    fn native_fence_cpu(&self, fence: &NativeFence) -> Result<WinFence, NtStatus> {
        let current = fence.current_value_cpu;
        if current == 0 || !current.is_multiple_of(8) {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        Ok(WinFence {
            value: current as *const u64,
        })
    }

    fn create_shareable_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
        self.native_fence_of(self.create_native_fence_with(
            initial_value,
            SYNC_FLAG_SHARED | SYNC_FLAG_NT_SECURITY_SHARING,
        )?)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtshareobjects>
    /// of one native fence, no object attributes (an unnamed handle).
    fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus> {
        use windows_sys::Wdk::Graphics::Direct3D::D3DKMTShareObjects;
        let objects = [fence];
        let mut nt: windows_sys::Win32::Foundation::HANDLE = ptr::null_mut();
        // SAFETY: one handle in `objects`, no attributes, `nt` a writable HANDLE on this frame.
        check(unsafe {
            D3DKMTShareObjects(1, objects.as_ptr(), ptr::null(), GENERIC_ALL, &mut nt)
        })?;
        if nt.is_null() {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        Ok(nt as u64)
    }

    fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus> {
        use windows_sys::Win32::Foundation::CloseHandle;
        // SAFETY: CloseHandle takes any value; one this process does not hold fails.
        if unsafe { CloseHandle(handle as usize as *mut c_void) } == 0 {
            return Err(NtStatus(STATUS_INVALID_HANDLE));
        }
        Ok(())
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopennativefencefromnthandle>
    /// on this device: this process's handle and its own mapping of the fence.
    fn open_native_fence(&self, shared: u64) -> Result<NativeFence, NtStatus> {
        let mut args = D3dkmtOpenNativeFenceFromNtHandle {
            hNtHandle: shared as usize as *mut c_void,
            hDevice: self.device,
            EngineAffinity: 0,
            Flags: 0,
            hSyncObject: 0,
            NativeFenceMapping: D3dddiNativeFenceMapping::EMPTY,
            PrivateDriverData: [0; NATIVE_FENCE_PDD_SIZE],
            Reserved: [0; 32],
        };
        // SAFETY: the documented D3DKMT_OPENNATIVEFENCEFROMNTHANDLE layout (asserted above),
        // on this stack frame.
        check(unsafe { call_with(Wddm32Thunk::OpenNativeFenceFromNtHandle, &mut args) })?;
        let m = &args.NativeFenceMapping;
        let cpu = aligned::<u64>(m.CurrentValueCpuVa);
        let mapping = FenceMapping {
            current_value_cpu: cpu.map_or(0, |p| p as usize),
            current_value_gpu: m.CurrentValueGpuVa,
            monitored_value_gpu: m.MonitoredValueGpuVa,
        };
        match (
            cpu,
            NativeFence::new(args.hSyncObject, &mapping, &args.PrivateDriverData),
        ) {
            (Some(p), Ok(n)) => {
                let cpu = p as u64;
                self.native_cpu.with(|t| t.insert(args.hSyncObject, cpu));
                Ok(n)
            }
            _ => {
                let _ = self.destroy_sync_object(args.hSyncObject);
                Err(NtStatus(STATUS_INVALID_PARAMETER))
            }
        }
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatepagingqueue>
    /// (`PhysicalAdapterIndex` 0; the fence's CPU view is `FenceValueCPUVirtualAddress`).
    fn create_paging_queue(&self, priority: i32) -> Result<PagingQueue<WinFence>, NtStatus> {
        let mut pq = D3DKMT_CREATEPAGINGQUEUE {
            hDevice: self.device,
            Priority: priority,
            ..Default::default()
        };
        // SAFETY: a valid, initialised argument structure on the stack.
        check(unsafe { D3DKMTCreatePagingQueue(&mut pq) })?;
        let Some(value) = aligned::<u64>(pq.FenceValueCPUVirtualAddress) else {
            let mut d = D3DDDI_DESTROYPAGINGQUEUE {
                hPagingQueue: pq.hPagingQueue,
            };
            // SAFETY: the queue just created.
            unsafe { D3DKMTDestroyPagingQueue(&mut d) };
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        };
        Ok(PagingQueue {
            handle: pq.hPagingQueue,
            fence: pq.hSyncObject,
            fence_cpu: WinFence {
                value: value.cast_const(),
            },
        })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroypagingqueue>
    fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        let mut d = D3DDDI_DESTROYPAGINGQUEUE {
            hPagingQueue: queue,
        };
        // SAFETY: a valid argument structure; D3DKMT validates the handle.
        check(unsafe { D3DKMTDestroyPagingQueue(&mut d) })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtreservegpuvirtualaddress>
    /// From user mode the first member is the adapter (`hAdapter`), not a paging queue.
    fn reserve_gpu_va(&self, r: &ReserveGpuVa) -> Result<u64, NtStatus> {
        let mut args = D3DDDI_RESERVEGPUVIRTUALADDRESS {
            BaseAddress: r.base,
            MinimumAddress: r.minimum,
            MaximumAddress: r.maximum,
            Size: r.size,
            ..Default::default()
        };
        args.Anonymous1.hAdapter = self.adapter;
        args.Anonymous2.ReservationType = r.reservation_type;
        // SAFETY: a valid, initialised argument structure; the thunk writes VirtualAddress.
        check(unsafe { D3DKMTReserveGpuVirtualAddress(&mut args) })?;
        Ok(args.VirtualAddress)
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtmapgpuvirtualaddress>
    /// `STATUS_PENDING` is success: the mapping is usable once the paging fence reaches
    /// `PagingFenceValue`.
    fn map_gpu_va(&self, r: &MapGpuVa) -> Result<MappedGpuVa, NtStatus> {
        let mut args = D3DDDI_MAPGPUVIRTUALADDRESS {
            hPagingQueue: r.paging_queue,
            BaseAddress: r.base,
            MinimumAddress: r.minimum,
            MaximumAddress: r.maximum,
            hAllocation: r.allocation,
            OffsetInPages: r.offset_in_pages,
            SizeInPages: r.size_in_pages,
            ..Default::default()
        };
        args.Protection.Anonymous.Value = r.protection.0;
        // SAFETY: a valid, initialised argument structure; the thunk writes the outputs.
        let st = unsafe { D3DKMTMapGpuVirtualAddress(&mut args) };
        if st != STATUS_PENDING {
            check(st)?;
        }
        Ok(MappedGpuVa {
            va: args.VirtualAddress,
            paging_fence_value: args.PagingFenceValue,
        })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtupdategpuvirtualaddress>
    /// Returns once the update is queued; the fence reaches `FenceValue + 1` when it is done.
    /// At most 64 operations per call here (a stack array; more is `STATUS_INVALID_PARAMETER`).
    fn update_gpu_va(&self, u: &UpdateGpuVa, ops: &[UpdateGpuVaOp]) -> Result<(), NtStatus> {
        const MAX_OPS: usize = 64;
        if ops.len() > MAX_OPS {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        let mut list = [D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION::default(); MAX_OPS];
        for (slot, op) in list.iter_mut().zip(ops) {
            *slot = update_operation(op);
        }
        let mut args = D3DKMT_UPDATEGPUVIRTUALADDRESS {
            hDevice: self.device,
            hContext: u.context,
            hFenceObject: u.fence,
            // Bounded by MAX_OPS above.
            NumOperations: ops.len() as u32,
            Operations: list.as_mut_ptr(),
            FenceValue: u.fence_value,
            ..Default::default()
        };
        if u.do_not_wait {
            args.Flags.Value = UPDATE_GPU_VA_DO_NOT_WAIT;
        }
        // SAFETY: `Operations` points to `NumOperations` initialised entries on this stack
        // frame, which outlives the call; the thunk copies them before it returns.
        check(unsafe { D3DKMTUpdateGpuVirtualAddress(&args) })
    }

    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtfreegpuvirtualaddress>
    fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus> {
        let args = D3DKMT_FREEGPUVIRTUALADDRESS {
            hAdapter: self.adapter,
            BaseAddress: base,
            Size: size,
        };
        // SAFETY: a valid argument structure on the stack.
        check(unsafe { D3DKMTFreeGpuVirtualAddress(&args) })
    }

    /// `D3DKMTDestroySynchronizationObject`.
    fn signal_native_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        WinKmt::signal_from_cpu(self, fence, value)
    }

    fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
        self.destroy_sync_object(fence)
    }

    /// `QueryPerformanceCounter` (the clock `DxgkDdiCalibrateGpuClock` reports the CPU side
    /// in); 0 if it fails (it does not on Windows XP and later).
    fn cpu_timestamp(&self) -> u64 {
        performance_query(windows_sys::Win32::System::Performance::QueryPerformanceCounter)
    }

    /// `QueryPerformanceFrequency`.
    fn cpu_timestamp_frequency(&self) -> u64 {
        performance_query(windows_sys::Win32::System::Performance::QueryPerformanceFrequency)
    }
}
