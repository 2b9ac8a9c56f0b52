//! `D3DKMTCreateSynchronizationObject2`'s kernel entry, as 24H2
//! `K:DxgkCreateSynchronizationObjectImpl` @0x1403708E8 (called by the thunk's
//! `K:DxgkCreateSynchronizationObject` @0x1403708C0 as a user-mode call) and
//! `K:CreateSynchronizationObjectInternal` @0x1402F9BAC answer it: the caller's
//! `D3DKMT_CREATESYNCHRONIZATIONOBJECT2` as written, the checks in that order with those
//! statuses, then the object, and back exactly what 24H2 writes (`hSyncObject`; a monitored
//! fence's 0x20 bytes of `Info.MonitoredFence`, of which the two addresses are new).
//!
//! The simulated kernel makes the one type rvgpu's callers use, `D3DDDI_MONITORED_FENCE`. The
//! others (the mutex, semaphore, fence and CPU-notification objects, and the periodic monitored
//! fence that needs a display target) and a monitored fence asking `NoGPUAccess` or
//! `CrossAdapter` pass 24H2's checks and are then refused with STATUS_NOT_SUPPORTED, where 24H2
//! would make them.

use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use crate::machine::Machine;
use crate::state::sync::fence::MonitoredFence;
use crate::ums::{self, UmsProcess};

use super::native_fence::{
    SYNC_FLAGS_REFUSED, SYNC_NO_GPU_ACCESS, SYNC_NO_SIGNAL, SYNC_NO_WAIT, SYNC_NT_SECURITY_SHARING,
    SYNC_SHARED,
};

/// `D3DDDI_SYNCHRONIZATIONOBJECT_TYPE::D3DDDI_CPU_NOTIFICATION`.
pub const CPU_NOTIFICATION: u32 = 4;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_TYPE::D3DDDI_MONITORED_FENCE`.
pub const MONITORED_FENCE: u32 = 5;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_TYPE::D3DDDI_PERIODIC_MONITORED_FENCE`.
pub const PERIODIC_MONITORED_FENCE: u32 = 6;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::CrossAdapter`.
pub const SYNC_CROSS_ADAPTER: u32 = 1 << 2;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::SignalByKmd`.
pub const SYNC_SIGNAL_BY_KMD: u32 = 1 << 8;

use super::refusal::row::*;
pub use rvgpu_ddi::d3dkmt::D3DKMT_CREATESYNCHRONIZATIONOBJECT2;

/// 24H2 copies 0x60 bytes in (`RtlCopyVolatileMemory`), the structure's size.
pub const CAPTURED: usize = 0x60;
/// What 24H2 writes back on success for a monitored fence: `hSyncObject` at 88, and the 0x20
/// bytes of `Info.MonitoredFence` at 16 (`Info.SharedHandle` at 80 only for a `Shared` object
/// without `NtSecuritySharing`, which a fence cannot be, or for a process kind rvgpu's callers
/// are not).
pub const WRITTEN_BACK: [core::ops::Range<usize>; 2] = [88..92, 16..48];

/// A structure as a caller fills it for a monitored fence on `h_device` starting at
/// `initial`, with `flags`; the rest zero.
pub fn monitored_fence(
    h_device: KmtHandle,
    initial: u64,
    flags: u32,
) -> D3DKMT_CREATESYNCHRONIZATIONOBJECT2 {
    let mut a = D3DKMT_CREATESYNCHRONIZATIONOBJECT2 {
        hDevice: h_device,
        ..Default::default()
    };
    a.Info.Type = MONITORED_FENCE;
    a.Info.Flags = flags;
    a.Info.InitialFenceValue = initial;
    a
}

/// 24H2's checks before any handle is looked up, in `DxgkCreateSynchronizationObjectImpl`'s
/// order, each STATUS_INVALID_PARAMETER:
/// 1. an `Info.Flags` bit of [`SYNC_FLAGS_REFUSED`];
/// 2. `NtSecuritySharing` without `Shared`;
/// 3. a monitored or periodic monitored fence: `Shared` without `NtSecuritySharing`, then
///    `NoSignal` with `NoWait`; any other type: `NoGPUAccess` (bit 7).
pub fn check_arguments(a: &D3DKMT_CREATESYNCHRONIZATIONOBJECT2) -> Result<(), NtStatus> {
    type C = CreateSynchronizationObject2Check;
    let f = a.Info.Flags;
    if f & SYNC_FLAGS_REFUSED != 0 {
        return Err(C::Flags.refuse());
    }
    let shared = f & SYNC_SHARED != 0;
    let nt_security = f & SYNC_NT_SECURITY_SHARING != 0;
    if nt_security && !shared {
        return Err(C::NtSharingUnshared.refuse());
    }
    if is_fence(a.Info.Type) {
        if shared && !nt_security {
            return Err(C::SharedWithoutNt.refuse());
        }
        if f & SYNC_NO_SIGNAL != 0 && f & SYNC_NO_WAIT != 0 {
            return Err(C::NoSignalNoWait.refuse());
        }
    } else if f & SYNC_NO_GPU_ACCESS != 0 {
        return Err(C::NoGpuAccess.refuse());
    }
    Ok(())
}

/// `K:DXGADAPTER::IsDxgmms2` @0x14002F1A0: the `WDDMVersion` the driver reported in its
/// DRIVERCAPS (DXGADAPTER +2736) is 2.0 (0x2000) or later, or a byte at +3036 is set (not
/// identified; the simulation takes it as clear).
fn is_dxgmms2(a: &crate::adapter::AdapterShared) -> bool {
    crate::base::lock::lock(&a.caps).is_some_and(|c| c.WDDMVersion as u32 >= 0x2000)
}

/// Whether `t` is one of the two monitored fence types (24H2's `Type - 5 <= 1`).
fn is_fence(t: u32) -> bool {
    t.wrapping_sub(MONITORED_FENCE) <= 1
}

refusals! {
    /// `D3DKMTCreateSynchronizationObject2`'s refusals, in 24H2's order.
    CreateSynchronizationObject2Check => CREATE_SYNCHRONIZATION_OBJECT2_CHECKS {
        StructureUnreadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        Flags: "an Info.Flags bit of 0x7FFFF800" => INVALID_PARAMETER;
        NtSharingUnshared: "NtSecuritySharing without Shared" => INVALID_PARAMETER;
        SharedWithoutNt: "a monitored or periodic monitored fence Shared without NtSecuritySharing" => INVALID_PARAMETER;
        NoSignalNoWait: "a monitored or periodic monitored fence NoSignal with NoWait" => INVALID_PARAMETER;
        NoGpuAccess: "Info.Flags bit 7 on a type other than the two fences" => INVALID_PARAMETER;
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "a fence: the device not active (other types: the adapter not active)" => DEVICE_REMOVED;
        NotDxgmms2: "a fence: the adapter not on dxgmms2" => INVALID_PARAMETER;
        SignalByKmd: "SignalByKmd on a type other than D3DDDI_CPU_NOTIFICATION, or with Shared or \
            CrossAdapter" => INVALID_PARAMETER;
    }
}

/// `D3DKMTCreateSynchronizationObject2`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_SYNCHRONIZATION_OBJECT2: Thunk = Thunk {
    name: "D3DKMTCreateSynchronizationObject2",
    source: Some(&[
        src("DxgkCreateSynchronizationObject", 0x1403708C0),
        src("DxgkCreateSynchronizationObjectImpl", 0x1403708E8),
        src("CreateSynchronizationObjectInternal", 0x1402F9BAC),
        src("DXGGLOBAL::CreateSyncObject", 0x1402FA1CC),
    ]),
    checks: CREATE_SYNCHRONIZATION_OBJECT2_CHECKS,
    written_back: &[
        "hSyncObject",
        "Info.SharedHandle, when Shared without NtSecuritySharing (a fence cannot be) or for \
         a WSL or virtual-machine process",
        "a monitored fence: the 0x20 bytes of Info.MonitoredFence (the CPU and GPU addresses \
         new, InitialFenceValue and EngineAffinity as captured); a periodic one: 0x28 bytes",
    ],
    pending: Pending::No,
    entry: Some("sync_object::dxgk_create_synchronization_object_impl"),
    gaps: "the simulation makes only D3DDDI_MONITORED_FENCE objects: the other types (mutex, \
           semaphore, fence, CPU notification, periodic monitored fence) and a monitored fence \
           with NoGPUAccess or CrossAdapter pass 24H2's checks and are then refused with \
           STATUS_NOT_SUPPORTED where 24H2 makes them; a monitored fence made Shared with \
           NtSecuritySharing is made but D3DKMTShareObjects does not share it (see that row); \
           EngineAffinity is not clamped to the adapter's nodes (24H2 clamps its own copy \
           only, so nothing written back differs)",
};

/// `DxgkCreateSynchronizationObjectImpl` (24H2 @0x1403708E8) for the caller's structure `a`:
/// [`check_arguments`]; `hDevice` in the caller's handle table (`device`; unknown,
/// STATUS_INVALID_PARAMETER); for a fence the device's core access (`K:COREDEVICEACCESS::
/// AcquireShared` @0x14000F550, `lock::device_active`: stopped with its adapter,
/// STATUS_DEVICE_REMOVED; a device VidSch put in error goes on), then the adapter not on
/// dxgmms2 (`is_dxgmms2`, STATUS_INVALID_PARAMETER); then `CreateSynchronizationObjectInternal`
/// @0x1402F9BAC's own check, `SignalByKmd` on a type other than `D3DDDI_CPU_NOTIFICATION` or
/// with `Shared` or `CrossAdapter` (STATUS_INVALID_PARAMETER); then the object. On success `a`
/// holds what 24H2 writes back ([`WRITTEN_BACK`]) and the fence is returned; on failure `a` is
/// unchanged and nothing was made.
pub fn dxgk_create_synchronization_object_impl(
    m: &Machine,
    a: &mut D3DKMT_CREATESYNCHRONIZATIONOBJECT2,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<MonitoredFence, NtStatus> {
    check_arguments(a)?;
    let p = device(a.hDevice).ok_or(CreateSynchronizationObject2Check::Device.refuse())?;
    let k = m.kmt(&p);
    let shared = k.thunk()?;
    if is_fence(a.Info.Type) {
        super::lock::device_active(
            &shared,
            p.device,
            CreateSynchronizationObject2Check::DeviceActive.refuse(),
        )?;
        if !is_dxgmms2(&shared) {
            return Err(CreateSynchronizationObject2Check::NotDxgmms2.refuse());
        }
    }
    if a.Info.Flags & SYNC_SIGNAL_BY_KMD != 0
        && (a.Info.Type != CPU_NOTIFICATION
            || a.Info.Flags & (SYNC_SHARED | SYNC_CROSS_ADAPTER) != 0)
    {
        return Err(CreateSynchronizationObject2Check::SignalByKmd.refuse());
    }
    // The simulation's one type; and a fence without GPU access or across adapters is not
    // modelled.
    if a.Info.Type != MONITORED_FENCE
        || a.Info.Flags & (SYNC_NO_GPU_ACCESS | SYNC_CROSS_ADAPTER) != 0
    {
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    let (h, f) =
        ums::create_sync_fence(m, &shared, p.device, a.Info.InitialFenceValue, a.Info.Flags)
            .map_err(super::process::status)?;
    a.hSyncObject = h;
    a.Info.FenceValueCPUVirtualAddress = f.kernel_va() as u64;
    a.Info.FenceValueGPUVirtualAddress = f.gpu_va();
    Ok(f)
}

impl super::process::SimKmt<'_> {
    /// [`create_monitored_fence`](Self::create_monitored_fence) with `Info.Flags` `flags`
    /// (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`: `NoSignal` or `NoWait` refuse this process's
    /// CPU signals or waits of it).
    pub fn create_monitored_fence_with(
        &self,
        initial: u64,
        flags: u32,
    ) -> Result<(KmtHandle, MonitoredFence), NtStatus> {
        let mut a = monitored_fence(self.p.device, initial, flags);
        let own = self.p;
        let f = dxgk_create_synchronization_object_impl(self.m, &mut a, |h| {
            (h == own.device).then_some(own)
        })?;
        Ok((a.hSyncObject, f))
    }
}
