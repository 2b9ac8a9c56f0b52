//! `D3DKMTEvict`'s kernel entry as 24H2 answers it
//! (`K:DxgkEvictInternal` @0x14035E31C): the caller's structure as written, the checks in
//! 24H2's order with their statuses, the list looked up and evicted 16 handles at a time
//! through the simulated VidMm ([`crate::vidmm::residency`]), and back only
//! `NumBytesToTrim`, on success.

use rvgpu_ddi::d3dkmt::{D3DDDI_EVICT_FLAGS, D3DKMT_EVICT};
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{EvictFlags, KmtHandle, NtStatus};

use super::refusal::row::*;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DDDI_EVICT_FLAGS::EvictOnlyIfNecessary`.
pub const EVICT_ONLY_IF_NECESSARY: u32 =
    D3DDDI_EVICT_FLAGS::mask(D3DDDI_EVICT_FLAGS::EvictOnlyIfNecessary);
/// `D3DDDI_EVICT_FLAGS::NotWrittenTo`.
pub const EVICT_NOT_WRITTEN_TO: u32 = D3DDDI_EVICT_FLAGS::mask(D3DDDI_EVICT_FLAGS::NotWrittenTo);
/// `D3DDDI_EVICT_FLAGS` has two bits: a `Value` from this one up is refused.
const EVICT_FLAGS_END: u32 = 1 << D3DDDI_EVICT_FLAGS::Reserved.shift;
/// Handles 24H2 looks up and evicts per step (its `PagedPoolArray<DXGALLOCATIONREFERENCE,16>`).
pub const EVICT_GROUP: u32 = 16;

refusals! {
    /// `D3DKMTEvict`'s refusals, in 24H2's order.
    EvictCheck => EVICT_CHECKS {
        ProcessContext: "no process context" => INVALID_PARAMETER,
            elsewhere "every simulated caller is a process";
        NumAllocations: "NumAllocations 0" => INVALID_PARAMETER;
        NullList: "AllocationList NULL" => INVALID_PARAMETER;
        Flags: "Flags.Value 4 or more" => INVALID_PARAMETER;
        Device: "hDevice not a device in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        ListWraps: "AllocationList plus NumAllocations wrapping the address space" => INVALID_PARAMETER;
        ListedHandle: "a listed handle not an allocation in the caller's handle table (the device \
            is marked in error, VidSch code 0xB)" => INVALID_PARAMETER;
        OtherDevice: "an allocation of another device than hDevice (the device is marked in error, \
            VidSch code 0xB)" => INVALID_PARAMETER;
    }
}

/// `D3DKMTEvict`'s row of the thunk catalog ([`super::catalog`]).
pub const EVICT: Thunk = Thunk {
    name: "D3DKMTEvict",
    source: Some(&[
        src("DxgkEvict", 0x14035E300),
        src("DxgkEvictInternal", 0x14035E31C),
    ]),
    checks: EVICT_CHECKS,
    written_back: &[
        "NumBytesToTrim, on success: VidMm's answer for the last allocation (VidMm's \
         `VIDMM_GLOBAL::Evict` returns nothing else, and 24H2 evicts one allocation at a time)",
    ],
    pending: Pending::No,
    entry: Some("evict::dxgk_evict_internal"),
    gaps: "a device without user-mode residency is not told apart (24H2 logs, evicts \
           nothing and answers success with NumBytesToTrim 0; every device here takes \
           residency calls); VidMm's Evict (`M:VIDMM_GLOBAL::Evict` @0x1400F0E04) not read: \
           the simulated VidMm's count and placement rules, an Evict past an allocation's \
           MakeResident count changing nothing, and NumBytesToTrim the process's required \
           local memory over the VRAM budget (not compared with \
           `VIDMM_PROCESS_ADAPTER_INFO::GetNumBytesToTrim` @0x1400E8018); the gdi32 bridge \
           reads each group of 16 handles as one copy",
};

/// `DxgkEvictInternal` for the caller's structure `a`, in 24H2's order:
/// 1. `NumAllocations` 0, `AllocationList` NULL, `Flags.Value` 4 or more: each
///    STATUS_INVALID_PARAMETER;
/// 2. `hDevice` not a device in the caller's handle table (`device`):
///    STATUS_INVALID_PARAMETER; the device not active: STATUS_DEVICE_REMOVED;
/// 3. `AllocationList` plus `NumAllocations` handles wrapping: STATUS_INVALID_PARAMETER;
/// 4. per group of [`EVICT_GROUP`] handles, read from the caller (`list`: its fault status):
///    each handle not an allocation in the caller's table, or of another device
///    (`allocation`: its device), puts the device in error (VidSch code 0xB) and is
///    STATUS_INVALID_PARAMETER, the groups before it evicted; then each allocation of the
///    group to VidMm, whose answer 24H2 does not look at (`VIDMM_GLOBAL::Evict` returns
///    nothing) but for the bytes to trim.
///
/// On success `a.NumBytesToTrim` is VidMm's last answer (0 when VidMm gave none); on
/// failure `a` is unchanged.
pub fn dxgk_evict_internal(
    m: &Machine,
    a: &mut D3DKMT_EVICT,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    mut list: impl FnMut(u64, u32) -> Result<Vec<KmtHandle>, NtStatus>,
    allocation: impl Fn(KmtHandle) -> Option<KmtHandle>,
) -> Result<(), NtStatus> {
    if a.NumAllocations == 0 {
        return Err(EvictCheck::NumAllocations.refuse());
    }
    if a.AllocationList == 0 {
        return Err(EvictCheck::NullList.refuse());
    }
    if a.Flags >= EVICT_FLAGS_END {
        return Err(EvictCheck::Flags.refuse());
    }
    let p = device(a.hDevice).ok_or(EvictCheck::Device.refuse())?;
    let sh = m.kmt(&p).thunk()?;
    super::lock::device_active(&sh, p.device, EvictCheck::DeviceActive.refuse())?;
    let bytes = u64::from(a.NumAllocations) * 4;
    if a.AllocationList.checked_add(bytes).is_none() {
        return Err(EvictCheck::ListWraps.refuse());
    }
    let only_if_necessary = a.Flags & EVICT_ONLY_IF_NECESSARY != 0;
    let not_written_to = a.Flags & EVICT_NOT_WRITTEN_TO != 0;
    let mut trim = 0;
    let mut done = 0u32;
    while done < a.NumAllocations {
        let n = (a.NumAllocations - done).min(EVICT_GROUP);
        let at = a.AllocationList + u64::from(done) * 4;
        let group = list(at, n)?;
        // The first handle that fails names the refusal; either marks the device in error.
        let refused = group.iter().find_map(|&h| match allocation(h) {
            None => Some(EvictCheck::ListedHandle),
            Some(d) if d != p.device => Some(EvictCheck::OtherDevice),
            Some(_) => None,
        });
        if let Some(check) = refused {
            crate::ums::mark_device_as_error(&sh, p.device, 0xB).map_err(super::process::status)?;
            return Err(check.refuse());
        }
        for h in group {
            // 24H2 hands VidMm one allocation at a time and ignores its answer.
            if let Ok(t) = m.residency_evict(&sh, p.device, &[h], only_if_necessary, not_written_to)
            {
                trim = t;
            }
        }
        done += n;
    }
    a.NumBytesToTrim = trim;
    Ok(())
}

/// The Rust UMD's `D3DKMTEvict` of `allocations` on `p`'s device: the structure its Windows
/// thunk fills, the list read from the caller's slice a group at a time.
pub(super) fn umd_evict(
    m: &Machine,
    p: UmsProcess,
    allocations: &[KmtHandle],
    flags: EvictFlags,
) -> Result<u64, NtStatus> {
    let base = allocations.as_ptr() as u64;
    let mut a = D3DKMT_EVICT {
        hDevice: p.device,
        NumAllocations: u32::try_from(allocations.len()).unwrap_or(u32::MAX),
        AllocationList: base,
        Flags: (u32::from(flags.evict_only_if_necessary) * EVICT_ONLY_IF_NECESSARY)
            | (u32::from(flags.not_written_to) * EVICT_NOT_WRITTEN_TO),
        ..Default::default()
    };
    let list = |at: u64, n: u32| {
        let i = (at.wrapping_sub(base) / 4) as usize;
        allocations
            .get(i..i.saturating_add(n as usize))
            .map(<[KmtHandle]>::to_vec)
            .ok_or(NtStatus(STATUS_INVALID_PARAMETER))
    };
    dxgk_evict_internal(
        m,
        &mut a,
        |h| (h == p.device).then_some(p),
        list,
        |h| super::gpu_va::allocation_device(m, &p, h),
    )?;
    Ok(a.NumBytesToTrim)
}
