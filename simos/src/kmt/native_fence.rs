//! `D3DKMTCreateNativeFence`'s kernel entry, as 24H2 `K:NtDxgkCreateNativeFenceInternal`
//! @0x1401F8C68 answers it: the caller's `D3DKMT_CREATENATIVEFENCE` as written, its checks in
//! that function's order and with its statuses, then the fence, and back exactly the fields it
//! writes (`hSyncObject`, `PrivateDriverData`, and the 0x70 bytes from `InitialFenceValue` up to
//! the outer `Flags`, of which the mapping's three addresses are new); and
//! `D3DKMTOpenNativeFenceFromNtHandle`'s, as `K:NtDxgkOpenNativeFenceFromNtHandleInternal`
//! @0x1401E15EC answers it.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::ntstatus::{STATUS_ACCESS_DENIED, STATUS_INVALID_PARAMETER};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use crate::machine::Machine;
use crate::os::answers::OpenFencePdd;
use crate::sync::fence::NativeFence;
use crate::ums::UmsProcess;

/// `D3DKMT_CREATENATIVEFENCE` in the released x64 layout (216 bytes: `D3DDDI_NATIVEFENCEINFO`
/// inline, its `D3DDDI_NATIVEFENCEMAPPING` inside it).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub struct D3dkmtCreateNativeFence {
    /// `hDevice` (in).
    pub h_device: u32,
    /// `hSyncObject` (out).
    pub h_sync_object: u32,
    /// `PrivateDriverData` (out: the KMD's, `D3DDDI_NATIVEFENCE_PDD_SIZE`).
    pub private_driver_data: [u8; 64],
    /// `Info.InitialFenceValue`.
    pub initial_fence_value: u64,
    /// `Info.EngineAffinity`.
    pub engine_affinity: u32,
    /// `Info.Type` (`D3DDDI_NATIVEFENCE_TYPE`).
    pub fence_type: u32,
    /// `Info.Flags` (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`).
    pub info_flags: u32,
    /// Alignment of the mapping.
    pub _pad0: u32,
    /// `Info.NativeFenceMapping.CurrentValueCpuVa` (out).
    pub current_value_cpu_va: u64,
    /// `Info.NativeFenceMapping.CurrentValueGpuVa` (out).
    pub current_value_gpu_va: u64,
    /// `Info.NativeFenceMapping.MonitoredValueGpuVa` (out).
    pub monitored_value_gpu_va: u64,
    /// `Info.NativeFenceMapping.ReservedInt`: must be zero.
    pub mapping_reserved: [u8; 32],
    /// `Info.Reserved`: must be zero.
    pub info_reserved: [u8; 28],
    /// Alignment.
    pub _pad1: u32,
    /// `Flags` (`D3DDDI_CREATENATIVEFENCEINFO_FLAGS`, no bit defined): must be zero.
    pub flags: u32,
    /// `Reserved`: must be zero.
    pub reserved: [u8; 28],
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(D3dkmtCreateNativeFence, initial_fence_value) == 72);
    assert!(offset_of!(D3dkmtCreateNativeFence, fence_type) == 84);
    assert!(offset_of!(D3dkmtCreateNativeFence, info_flags) == 88);
    assert!(offset_of!(D3dkmtCreateNativeFence, current_value_cpu_va) == 96);
    assert!(offset_of!(D3dkmtCreateNativeFence, mapping_reserved) == 120);
    assert!(offset_of!(D3dkmtCreateNativeFence, info_reserved) == 152);
    assert!(offset_of!(D3dkmtCreateNativeFence, flags) == 184);
    assert!(size_of::<D3dkmtCreateNativeFence>() == 216);
};

/// The byte range of the structure 24H2 writes back on success: `hSyncObject` at 4, the private
/// data at 8..72, and 0x70 bytes from 72 (up to the outer `Flags` at 184).
pub const WRITTEN_BACK: core::ops::Range<usize> = 4..184;

/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::Shared`.
pub const SYNC_SHARED: u32 = 1 << 0;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NtSecuritySharing`.
pub const SYNC_NT_SECURITY_SHARING: u32 = 1 << 1;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NoSignal`.
pub const SYNC_NO_SIGNAL: u32 = 1 << 4;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NoWait`.
pub const SYNC_NO_WAIT: u32 = 1 << 5;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NoSignalMaxValueOnTdr`: the instance is not registered
/// with its device, so the device's error does not signal the fence to `u64::MAX`
/// (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC registers only without it and `NoSignal`).
pub const SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR: u32 = 1 << 6;
/// The `Info.Flags` bits 24H2 refuses on a native fence (11..=30).
pub const SYNC_FLAGS_REFUSED: u32 = 0x7FFF_F800;

impl D3dkmtCreateNativeFence {
    /// A structure as a caller fills it: `h_device`, `initial`, `info_flags`, the rest zero.
    pub fn new(h_device: KmtHandle, initial: u64, info_flags: u32) -> Self {
        let mut a = Self::new_zeroed();
        a.h_device = h_device;
        a.initial_fence_value = initial;
        a.info_flags = info_flags;
        a
    }

    fn new_zeroed() -> Self {
        <Self as zerocopy::FromZeros>::new_zeroed()
    }
}

/// 24H2's argument checks, in its order, before any handle is looked up; every refusal is
/// STATUS_INVALID_PARAMETER:
/// 1. `Info.Type` other than `D3DDDI_NATIVEFENCE_TYPE_DEFAULT`;
/// 2. the outer `Flags` non-zero, or an `Info.Flags` bit of [`SYNC_FLAGS_REFUSED`];
/// 3. `NtSecuritySharing` without `Shared`, then `Shared` without `NtSecuritySharing`;
/// 4. `NoSignal` with `NoWait`;
/// 5. a non-zero byte in `Reserved`, `Info.Reserved` or the mapping's `ReservedInt`.
pub fn check_arguments(a: &D3dkmtCreateNativeFence) -> Result<(), NtStatus> {
    let bad = Err(NtStatus(STATUS_INVALID_PARAMETER));
    let f = a.info_flags;
    if a.fence_type != 0 {
        return bad;
    }
    if a.flags != 0 || f & SYNC_FLAGS_REFUSED != 0 {
        return bad;
    }
    let shared = f & SYNC_SHARED != 0;
    let nt_security = f & SYNC_NT_SECURITY_SHARING != 0;
    if shared != nt_security {
        return bad;
    }
    if f & SYNC_NO_SIGNAL != 0 && f & SYNC_NO_WAIT != 0 {
        return bad;
    }
    let zero = |b: &[u8]| b.iter().all(|&x| x == 0);
    if !zero(&a.reserved) || !zero(&a.info_reserved) || !zero(&a.mapping_reserved) {
        return bad;
    }
    Ok(())
}

/// `NtDxgkCreateNativeFenceInternal` (24H2 @0x1401F8C68) for the caller's structure `a`:
/// [`check_arguments`], then `hDevice` in the caller's handle table (`device`; an unknown one
/// is STATUS_INVALID_PARAMETER), then the fence (the adapter's native-fence support and the
/// KMD's DDIs decide the rest). On success `a` holds what 24H2 writes back ([`WRITTEN_BACK`])
/// and the fence is returned; on failure `a` is unchanged.
pub fn nt_dxgk_create_native_fence_internal(
    m: &Machine,
    a: &mut D3dkmtCreateNativeFence,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<NativeFence, NtStatus> {
    check_arguments(a)?;
    let p = device(a.h_device).ok_or(NtStatus(STATUS_INVALID_PARAMETER))?;
    // 24H2 hands `Info` whole to `DXGGLOBAL::CreateSyncObject`: the creator's instance is
    // registered with the device as its `Info.Flags` say.
    let desc = crate::sync::fence::NativeFenceDesc {
        initial: a.initial_fence_value,
        shareable: a.info_flags & SYNC_SHARED != 0,
        no_signal_max_value_on_tdr: a.info_flags & SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR != 0,
        ..Default::default()
    };
    let (h, f) = m.kmt(&p).create_native_fence_raw(desc)?;
    a.h_sync_object = h;
    let pdd = f.pdd();
    let src = pdd.as_bytes();
    let n = src.len().min(a.private_driver_data.len());
    a.private_driver_data = [0; 64];
    a.private_driver_data[..n].copy_from_slice(&src[..n]);
    a.current_value_cpu_va = f.current_value_kernel_va() as u64;
    a.current_value_gpu_va = f.current_value_va();
    a.monitored_value_gpu_va = f.monitored_value_va();
    Ok(f)
}

/// `D3DKMT_OPENNATIVEFENCEFROMNTHANDLE` in the released x64 layout (176 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub struct D3dkmtOpenNativeFenceFromNtHandle {
    /// `hNtHandle` (in): an NT handle of the caller's process.
    pub h_nt_handle: u64,
    /// `hDevice` (in).
    pub h_device: u32,
    /// `EngineAffinity` (in).
    pub engine_affinity: u32,
    /// `Flags` (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`, in/out).
    pub flags: u32,
    /// `hSyncObject` (out).
    pub h_sync_object: u32,
    /// `NativeFenceMapping.CurrentValueCpuVa` (out).
    pub current_value_cpu_va: u64,
    /// `NativeFenceMapping.CurrentValueGpuVa` (out).
    pub current_value_gpu_va: u64,
    /// `NativeFenceMapping.MonitoredValueGpuVa` (out).
    pub monitored_value_gpu_va: u64,
    /// `NativeFenceMapping.ReservedInt`.
    pub mapping_reserved: [u8; 32],
    /// `PrivateDriverData`.
    pub private_driver_data: [u8; 64],
    /// `Reserved`: must be zero.
    pub reserved: [u8; 32],
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(D3dkmtOpenNativeFenceFromNtHandle, flags) == 16);
    assert!(offset_of!(D3dkmtOpenNativeFenceFromNtHandle, h_sync_object) == 20);
    assert!(offset_of!(D3dkmtOpenNativeFenceFromNtHandle, current_value_cpu_va) == 24);
    assert!(offset_of!(D3dkmtOpenNativeFenceFromNtHandle, private_driver_data) == 80);
    assert!(offset_of!(D3dkmtOpenNativeFenceFromNtHandle, reserved) == 144);
    assert!(size_of::<D3dkmtOpenNativeFenceFromNtHandle>() == 176);
};

/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NoGPUAccess`.
pub const SYNC_NO_GPU_ACCESS: u32 = 1 << 7;

impl D3dkmtOpenNativeFenceFromNtHandle {
    /// A structure as the UMD fills it: `h_nt_handle` on `h_device`, the rest zero.
    pub fn new(h_nt_handle: u64, h_device: KmtHandle) -> Self {
        let mut a = <Self as zerocopy::FromZeros>::new_zeroed();
        a.h_nt_handle = h_nt_handle;
        a.h_device = h_device;
        a
    }
}

/// `NtDxgkOpenNativeFenceFromNtHandleInternal` (24H2 @0x1401E15EC, `DXGSYNCOBJECT::Open`
/// @0x1401F4640) for the caller's structure `a`, in 24H2's order, STATUS_INVALID_PARAMETER
/// unless said:
/// 1. an `Flags` bit of [`SYNC_FLAGS_REFUSED`];
/// 2. a non-zero byte of `Reserved` (`NoSignal` or `NoWait` asked for is only logged);
/// 3. `hDevice` not in the caller's handle table (`device`);
/// 4. the device's adapter without native fences;
/// 5. `hNtHandle` not an NT handle of the caller's process (STATUS_INVALID_HANDLE), or one
///    without `READ_CONTROL` (STATUS_ACCESS_DENIED);
/// 6. `NoGPUAccess` asked for (no simulated fence is created with it, and the open must match
///    the creation).
///
/// On success `a` holds what 24H2 copies back: `hSyncObject`, the mapping's three addresses,
/// `Flags` with `NoSignal` and `NoWait` as the NT handle's access sets them, and `PrivateDriverData` as the caller wrote it (under
/// the pages' reading, [`OpenFencePdd::DriversOpen`], what the KMD's
/// `DxgkDdiOpenNativeFence` left); the opened instance is returned. On failure `a` is
/// unchanged.
pub fn nt_dxgk_open_native_fence_from_nt_handle_internal(
    m: &Machine,
    a: &mut D3dkmtOpenNativeFenceFromNtHandle,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<NativeFence, NtStatus> {
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    if a.flags & SYNC_FLAGS_REFUSED != 0 || a.reserved.iter().any(|&b| b != 0) {
        return Err(bad);
    }
    let p = device(a.h_device).ok_or(bad)?;
    let adapter = m.adapter_shared(p.adapter).map_err(|_| bad)?;
    crate::sync::fence::native::check_native(adapter).map_err(|_| bad)?;
    // The NT handle is referenced (for READ_CONTROL) before `DXGSYNCOBJECT::Open` compares
    // the flag.
    use crate::sync::fence::share;
    let (_, access) =
        share::fence_of_nt_handle(&m.handles, p.pid, a.h_nt_handle).map_err(super::status)?;
    if access & share::READ_CONTROL == 0 {
        return Err(NtStatus(STATUS_ACCESS_DENIED));
    }
    if a.flags & SYNC_NO_GPU_ACCESS != 0 {
        return Err(bad);
    }
    let k = m.kmt(&p);
    // `DXGSYNCOBJECT::Open` gets the caller's `Flags` with only NoSignal and NoWait replaced,
    // so the caller's `NoSignalMaxValueOnTdr` decides the instance's registration.
    let no_max_on_tdr = a.flags & SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR != 0;
    let opened = m
        .open_native_fence_from_nt_handle_on(&p, a.h_nt_handle, no_max_on_tdr)
        .map_err(super::status)?;
    let (h, f) = k.with_raw_kmt_handle(opened)?;
    a.h_sync_object = h;
    // NoSignal and NoWait as the handle's access withholds them, whatever was asked.
    a.flags &= !(SYNC_NO_SIGNAL | SYNC_NO_WAIT);
    if access & share::SYNC_ACCESS_SIGNAL == 0 {
        a.flags |= SYNC_NO_SIGNAL;
    }
    if access & share::SYNC_ACCESS_WAIT == 0 {
        a.flags |= SYNC_NO_WAIT;
    }
    // 24H2 gives `DXGSYNCOBJECT::Open` no buffer for private data and copies the caller's
    // capture back, its `PrivateDriverData` untouched; the pages return the driver's.
    if m.os_config().reading.open_fence_pdd == OpenFencePdd::DriversOpen {
        a.private_driver_data = f.open_pdd();
    }
    a.current_value_cpu_va = f.current_value_kernel_va() as u64;
    a.current_value_gpu_va = f.current_value_va();
    a.monitored_value_gpu_va = f.monitored_value_va();
    Ok(f)
}
