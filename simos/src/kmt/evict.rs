//! `D3DKMTEvict`'s kernel entry as 24H2 answers it
//! (`K:DxgkEvictInternal` @0x14035E31C): the caller's structure as written, the checks in
//! 24H2's order with their statuses, the list looked up and evicted 16 handles at a time
//! through the simulated VidMm ([`crate::vidmm::residency`]), and back only
//! `NumBytesToTrim`, on success.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{EvictFlags, KmtHandle, NtStatus};

use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DKMT_EVICT` in the released x64 layout (32 bytes; 24H2 captures 0x20 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dkmtEvict {
    /// `hDevice` (in).
    pub h_device: u32,
    /// `NumAllocations` (in).
    pub num_allocations: u32,
    /// `AllocationList` (in), an address in the caller's process.
    pub allocation_list: u64,
    /// `Flags` (`D3DDDI_EVICT_FLAGS`, in).
    pub flags: u32,
    /// Alignment.
    pub _pad: u32,
    /// `NumBytesToTrim` (out).
    pub num_bytes_to_trim: u64,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(D3dkmtEvict, num_allocations) == 4);
    assert!(offset_of!(D3dkmtEvict, allocation_list) == 8);
    assert!(offset_of!(D3dkmtEvict, flags) == 16);
    assert!(offset_of!(D3dkmtEvict, num_bytes_to_trim) == 24);
    assert!(size_of::<D3dkmtEvict>() == 32);
};

/// `D3DDDI_EVICT_FLAGS::EvictOnlyIfNecessary`.
pub const EVICT_ONLY_IF_NECESSARY: u32 = 1 << 0;
/// `D3DDDI_EVICT_FLAGS::NotWrittenTo`.
pub const EVICT_NOT_WRITTEN_TO: u32 = 1 << 1;
/// `D3DDDI_EVICT_FLAGS` has two bits: a `Value` from this one up is refused.
const EVICT_FLAGS_END: u32 = 1 << 2;
/// Handles 24H2 looks up and evicts per step (its `PagedPoolArray<DXGALLOCATIONREFERENCE,16>`).
pub const EVICT_GROUP: u32 = 16;

fn bad() -> NtStatus {
    NtStatus(STATUS_INVALID_PARAMETER)
}

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
/// On success `a.num_bytes_to_trim` is VidMm's last answer (0 when VidMm gave none); on
/// failure `a` is unchanged.
pub fn dxgk_evict_internal(
    m: &Machine,
    a: &mut D3dkmtEvict,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    mut list: impl FnMut(u64, u32) -> Result<Vec<KmtHandle>, NtStatus>,
    allocation: impl Fn(KmtHandle) -> Option<KmtHandle>,
) -> Result<(), NtStatus> {
    if a.num_allocations == 0 || a.allocation_list == 0 || a.flags >= EVICT_FLAGS_END {
        return Err(bad());
    }
    let p = device(a.h_device).ok_or_else(bad)?;
    let sh = m.kmt(&p).thunk()?;
    super::lock::device_active(&sh, p.device)?;
    let bytes = u64::from(a.num_allocations) * 4;
    if a.allocation_list.checked_add(bytes).is_none() {
        return Err(bad());
    }
    let only_if_necessary = a.flags & EVICT_ONLY_IF_NECESSARY != 0;
    let not_written_to = a.flags & EVICT_NOT_WRITTEN_TO != 0;
    let mut trim = 0;
    let mut done = 0u32;
    while done < a.num_allocations {
        let n = (a.num_allocations - done).min(EVICT_GROUP);
        let at = a.allocation_list + u64::from(done) * 4;
        let group = list(at, n)?;
        if group.iter().any(|&h| allocation(h) != Some(p.device)) {
            crate::ums::mark_device_as_error(&sh, p.device, 0xB).map_err(super::status)?;
            return Err(bad());
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
    a.num_bytes_to_trim = trim;
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
    let mut a = D3dkmtEvict {
        h_device: p.device,
        num_allocations: u32::try_from(allocations.len()).unwrap_or(u32::MAX),
        allocation_list: base,
        flags: (u32::from(flags.evict_only_if_necessary) * EVICT_ONLY_IF_NECESSARY)
            | (u32::from(flags.not_written_to) * EVICT_NOT_WRITTEN_TO),
        ..Default::default()
    };
    let list = |at: u64, n: u32| {
        let i = (at.wrapping_sub(base) / 4) as usize;
        allocations
            .get(i..i.saturating_add(n as usize))
            .map(<[KmtHandle]>::to_vec)
            .ok_or_else(bad)
    };
    dxgk_evict_internal(
        m,
        &mut a,
        |h| (h == p.device).then_some(p),
        list,
        |h| super::gpu_va::allocation_device(m, &p, h),
    )?;
    Ok(a.num_bytes_to_trim)
}
