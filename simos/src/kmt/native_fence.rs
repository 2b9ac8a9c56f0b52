//! `D3DKMTCreateNativeFence`'s kernel entry, as 24H2 `K:NtDxgkCreateNativeFenceInternal`
//! @0x1401F8C68 answers it: the caller's `D3DKMT_CREATENATIVEFENCE` as written, its checks in
//! that function's order and with its statuses, then the fence, and back exactly the fields it
//! writes (`hSyncObject`, `PrivateDriverData`, and the 0x70 bytes from `InitialFenceValue` up to
//! the outer `Flags`, of which the mapping's three addresses are new); and
//! `D3DKMTOpenNativeFenceFromNtHandle`'s, as `K:NtDxgkOpenNativeFenceFromNtHandleInternal`
//! @0x1401E15EC answers it.

pub use rvgpu_ddi::d3dkmt::{D3DKMT_CREATENATIVEFENCE, D3DKMT_OPENNATIVEFENCEFROMNTHANDLE};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};
use zerocopy::IntoBytes;

use super::refusal::row::*;
use crate::machine::Machine;
use crate::os::answers::OpenFencePdd;
use crate::sync::fence::NativeFence;
use crate::ums::UmsProcess;

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

/// 24H2's argument checks, in its order, before any handle is looked up; every refusal is
/// STATUS_INVALID_PARAMETER:
/// 1. `Info.Type` other than `D3DDDI_NATIVEFENCE_TYPE_DEFAULT`;
/// 2. the outer `Flags` non-zero, or an `Info.Flags` bit of [`SYNC_FLAGS_REFUSED`];
/// 3. `NtSecuritySharing` without `Shared`, then `Shared` without `NtSecuritySharing`;
/// 4. `NoSignal` with `NoWait`;
/// 5. a non-zero byte in `Reserved`, `Info.Reserved` or the mapping's `ReservedInt`.
pub fn check_arguments(a: &D3DKMT_CREATENATIVEFENCE) -> Result<(), NtStatus> {
    type C = CreateNativeFenceCheck;
    let f = a.Info.Flags;
    if a.Info.Type != 0 {
        return Err(C::Type.refuse());
    }
    if a.Flags != 0 || f & SYNC_FLAGS_REFUSED != 0 {
        return Err(C::Flags.refuse());
    }
    let shared = f & SYNC_SHARED != 0;
    let nt_security = f & SYNC_NT_SECURITY_SHARING != 0;
    if nt_security && !shared {
        return Err(C::NtSharingUnshared.refuse());
    }
    if shared && !nt_security {
        return Err(C::SharedWithoutNt.refuse());
    }
    if f & SYNC_NO_SIGNAL != 0 && f & SYNC_NO_WAIT != 0 {
        return Err(C::NoSignalNoWait.refuse());
    }
    let zero = |b: &[u8]| b.iter().all(|&x| x == 0);
    if !zero(&a.Reserved) || !zero(&a.Info.Reserved) || !zero(&a.Info.NativeFenceMapping.Reserved) {
        return Err(C::Reserved.refuse());
    }
    Ok(())
}

refusals! {
    /// `D3DKMTCreateNativeFence`'s refusals, in 24H2's order.
    CreateNativeFenceCheck => CREATE_NATIVE_FENCE_CHECKS {
        Type: "Info.Type not D3DDDI_NATIVEFENCE_TYPE_DEFAULT" => INVALID_PARAMETER;
        Flags: "Flags non-zero, or an Info.Flags bit of 0x7FFFF800" => INVALID_PARAMETER;
        NtSharingUnshared: "NtSecuritySharing without Shared" => INVALID_PARAMETER;
        SharedWithoutNt: "Shared without NtSecuritySharing" => INVALID_PARAMETER;
        NoSignalNoWait: "NoSignal with NoWait" => INVALID_PARAMETER;
        Reserved: "a non-zero byte of Reserved, Info.Reserved or the mapping's" => INVALID_PARAMETER;
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        NoNativeFences: "the adapter not on dxgmms2, or without native fences" => INVALID_PARAMETER,
            elsewhere "the simulated fence's create (`create_native_fence_raw`) makes it";
    }
}

/// `D3DKMTCreateNativeFence`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_NATIVE_FENCE: Thunk = Thunk {
    name: "D3DKMTCreateNativeFence",
    source: Some(&[src("NtDxgkCreateNativeFenceInternal", 0x1401F8C68)]),
    checks: CREATE_NATIVE_FENCE_CHECKS,
    written_back: &[
        "hSyncObject",
        "PrivateDriverData",
        "the 0x70 bytes from Info.InitialFenceValue (the mapping's three addresses new)",
    ],
    pending: Pending::No,
    entry: Some("native_fence::nt_dxgk_create_native_fence_internal"),
    gaps: "",
};

/// `NtDxgkCreateNativeFenceInternal` (24H2 @0x1401F8C68) for the caller's structure `a`:
/// [`check_arguments`], then `hDevice` in the caller's handle table (`device`; an unknown one
/// is STATUS_INVALID_PARAMETER), then the fence (the adapter's native-fence support and the
/// KMD's DDIs decide the rest). On success `a` holds what 24H2 writes back ([`WRITTEN_BACK`])
/// and the fence is returned; on failure `a` is unchanged.
pub fn nt_dxgk_create_native_fence_internal(
    m: &Machine,
    a: &mut D3DKMT_CREATENATIVEFENCE,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<NativeFence, NtStatus> {
    check_arguments(a)?;
    let p = device(a.hDevice).ok_or(CreateNativeFenceCheck::Device.refuse())?;
    // 24H2 hands `Info` whole to `DXGGLOBAL::CreateSyncObject`: the creator's instance is
    // registered with the device as its `Info.Flags` say.
    let desc = crate::sync::fence::NativeFenceDesc {
        initial: a.Info.InitialFenceValue,
        shareable: a.Info.Flags & SYNC_SHARED != 0,
        no_signal_max_value_on_tdr: a.Info.Flags & SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR != 0,
        ..Default::default()
    };
    let (h, f) = m.kmt(&p).create_native_fence_raw(desc)?;
    a.hSyncObject = h;
    let pdd = f.pdd();
    let src = pdd.as_bytes();
    let n = src.len().min(a.PrivateDriverData.len());
    a.PrivateDriverData = [0; 64];
    a.PrivateDriverData[..n].copy_from_slice(&src[..n]);
    a.Info.NativeFenceMapping.CurrentValueCpuVa = f.current_value_kernel_va() as u64;
    a.Info.NativeFenceMapping.CurrentValueGpuVa = f.current_value_va();
    a.Info.NativeFenceMapping.MonitoredValueGpuVa = f.monitored_value_va();
    Ok(f)
}

/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NoGPUAccess`.
pub const SYNC_NO_GPU_ACCESS: u32 = 1 << 7;

refusals! {
    /// `D3DKMTOpenNativeFenceFromNtHandle`'s refusals, in 24H2's order.
    OpenNativeFenceFromNtHandleCheck => OPEN_NATIVE_FENCE_FROM_NT_HANDLE_CHECKS {
        StructureUnreadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        Flags: "a Flags bit of 0x7FFFF800" => INVALID_PARAMETER;
        Reserved: "a non-zero byte of Reserved" => INVALID_PARAMETER;
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        NoNativeFences: "the adapter without native fences" => INVALID_PARAMETER;
        NotAHandle: "hNtHandle not a handle of the caller's process" => INVALID_HANDLE,
            elsewhere "the object manager's reference (`share::fence_of_nt_handle`) makes it";
        OtherType: "hNtHandle a handle to an object of another type" => OBJECT_TYPE_MISMATCH,
            elsewhere "the object manager's reference (`share::fence_of_nt_handle`) makes it";
        NoReadControl: "hNtHandle without READ_CONTROL access" => ACCESS_DENIED;
        NotAFence: "the object neither a monitored nor a native fence" => INVALID_PARAMETER,
            elsewhere "not modelled: the simulated object manager holds only native fences";
        NoGpuAccess: "Flags.NoGPUAccess other than at the fence's creation" => INVALID_PARAMETER;
        NoPool: "no pool for the device's instance" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
    }
}

/// `D3DKMTOpenNativeFenceFromNtHandle`'s row of the thunk catalog ([`super::catalog`]).
pub const OPEN_NATIVE_FENCE_FROM_NT_HANDLE: Thunk = Thunk {
    name: "D3DKMTOpenNativeFenceFromNtHandle",
    source: Some(&[
        src("NtDxgkOpenNativeFenceFromNtHandleInternal", 0x1401E15EC),
        src("DXGSYNCOBJECT::Open", 0x1401F4640),
    ]),
    checks: OPEN_NATIVE_FENCE_FROM_NT_HANDLE_CHECKS,
    written_back: &[
        "the 176 bytes as captured, with hSyncObject, the mapping's three addresses and Flags \
         (NoSignal and NoWait replaced by what the NT handle's access withholds); \
         PrivateDriverData the caller's own (DXGSYNCOBJECT::Open gets no buffer for it; the \
         pages' reading returns the KMD's DxgkDdiOpenNativeFence data)",
    ],
    pending: Pending::No,
    entry: Some("native_fence::nt_dxgk_open_native_fence_from_nt_handle_internal"),
    gaps: "the simulated object manager holds only native fences, and keeps no NoGPUAccess \
           of the creation (an open with it is refused)",
};

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
    a: &mut D3DKMT_OPENNATIVEFENCEFROMNTHANDLE,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<NativeFence, NtStatus> {
    type C = OpenNativeFenceFromNtHandleCheck;
    if a.Flags & SYNC_FLAGS_REFUSED != 0 {
        return Err(C::Flags.refuse());
    }
    if a.Reserved.iter().any(|&b| b != 0) {
        return Err(C::Reserved.refuse());
    }
    let p = device(a.hDevice).ok_or(C::Device.refuse())?;
    let adapter = m
        .adapter_shared(p.adapter)
        .map_err(|_| C::Device.refuse())?;
    crate::sync::fence::native::check_native(adapter).map_err(|_| C::NoNativeFences.refuse())?;
    // The NT handle is referenced (for READ_CONTROL) before `DXGSYNCOBJECT::Open` compares
    // the flag.
    use crate::sync::fence::share;
    let (_, access) = share::fence_of_nt_handle(&m.handles, p.pid, a.hNtHandle)
        .map_err(super::process::status)?;
    if access & share::READ_CONTROL == 0 {
        return Err(C::NoReadControl.refuse());
    }
    if a.Flags & SYNC_NO_GPU_ACCESS != 0 {
        return Err(C::NoGpuAccess.refuse());
    }
    let k = m.kmt(&p);
    // `DXGSYNCOBJECT::Open` gets the caller's `Flags` with only NoSignal and NoWait replaced,
    // so the caller's `NoSignalMaxValueOnTdr` decides the instance's registration.
    let no_max_on_tdr = a.Flags & SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR != 0;
    let opened = m
        .open_native_fence_from_nt_handle_on(&p, a.hNtHandle, no_max_on_tdr)
        .map_err(super::process::status)?;
    let (h, f) = k.with_raw_kmt_handle(opened)?;
    a.hSyncObject = h;
    // NoSignal and NoWait as the handle's access withholds them, whatever was asked.
    a.Flags &= !(SYNC_NO_SIGNAL | SYNC_NO_WAIT);
    if access & share::SYNC_ACCESS_SIGNAL == 0 {
        a.Flags |= SYNC_NO_SIGNAL;
    }
    if access & share::SYNC_ACCESS_WAIT == 0 {
        a.Flags |= SYNC_NO_WAIT;
    }
    // 24H2 gives `DXGSYNCOBJECT::Open` no buffer for private data and copies the caller's
    // capture back, its `PrivateDriverData` untouched; the pages return the driver's.
    if m.os_config().windows.reading().open_fence_pdd == OpenFencePdd::DriversOpen {
        a.PrivateDriverData = f.open_pdd();
    }
    a.NativeFenceMapping.CurrentValueCpuVa = f.current_value_kernel_va() as u64;
    a.NativeFenceMapping.CurrentValueGpuVa = f.current_value_va();
    a.NativeFenceMapping.MonitoredValueGpuVa = f.monitored_value_va();
    Ok(f)
}
