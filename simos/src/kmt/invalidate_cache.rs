//! `D3DKMTInvalidateCache`'s kernel entry as 24H2 answers it (`K:DxgkInvalidateCache`
//! @0x1401B35A0, then `M:VIDMM_GLOBAL::InvalidateCache` @0x1400956F8): the caller's structure
//! as written, Dxgkrnl's checks in 24H2's order, then VidMm's range rules and the CPU's
//! write-back and drop of the range's lines (AL-06). No driver DDI is involved; nothing is
//! written back.

use rvgpu_ddi::d3dkmt::D3DKMT_INVALIDATECACHE;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::refusal::row::*;
use crate::adapter::AdapterShared;
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsProcess;

refusals! {
    /// `D3DKMTInvalidateCache`'s refusals, in 24H2's order.
    InvalidateCacheCheck => INVALIDATE_CACHE_CHECKS {
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        Allocation: "hAllocation not an allocation in the caller's handle table" => INVALID_PARAMETER;
        OtherDevice: "hAllocation of another device" => INVALID_PARAMETER;
        NoVidMmAllocation: "hAllocation without a VidMm allocation" => INVALID_PARAMETER,
            elsewhere "not modelled: every simulated allocation has its VidMm allocation";
        Offset: "on an adapter needing CPU cache maintenance, Offset at or past the \
            allocation's end" => INVALID_PARAMETER;
        Length: "on an adapter needing CPU cache maintenance, Length (0: to the end) past the \
            allocation's end" => INVALID_PARAMETER;
    }
}

/// `D3DKMTInvalidateCache`'s row of the thunk catalog ([`super::catalog`]).
pub const INVALIDATE_CACHE: Thunk = Thunk {
    name: "D3DKMTInvalidateCache",
    source: Some(&[
        src("DxgkInvalidateCache", 0x1401B35A0),
        src("VIDMM_GLOBAL::InvalidateCache", 0x1400956F8),
    ]),
    checks: INVALIDATE_CACHE_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("invalidate_cache::dxgk_invalidate_cache"),
    gaps: "VidMm's early success is taken as the adapter being I/O-coherent (the \
           VIDMM_GLOBAL flag it tests, or a process flag, not identified further); VidMm's \
           refusal of an allocation without a CPU mapping in the process \
           (STATUS_INVALID_PARAMETER) is not modelled: every allocation here has one",
};

/// `DxgkInvalidateCache` for the caller's structure `a`, in 24H2's order:
/// 1. `hDevice` not in the caller's handle table (`device`): STATUS_INVALID_PARAMETER;
/// 2. the device not active: STATUS_DEVICE_REMOVED;
/// 3. `hAllocation` not an allocation in the caller's table (`allocation`: the device it is
///    of), or of another device: STATUS_INVALID_PARAMETER (every allocation here has a VidMm
///    allocation);
/// 4. VidMm (`vidmm_invalidate_cache`, below).
pub fn dxgk_invalidate_cache(
    m: &Machine,
    a: &D3DKMT_INVALIDATECACHE,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    allocation: impl FnOnce(KmtHandle) -> Option<KmtHandle>,
) -> Result<(), NtStatus> {
    let p = device(a.hDevice).ok_or(InvalidateCacheCheck::Device.refuse())?;
    let sh = m.kmt(&p).thunk()?;
    super::lock::device_active(&sh, p.device, InvalidateCacheCheck::DeviceActive.refuse())?;
    match allocation(a.hAllocation) {
        None => return Err(InvalidateCacheCheck::Allocation.refuse()),
        Some(d) if d != p.device => return Err(InvalidateCacheCheck::OtherDevice.refuse()),
        Some(_) => {}
    }
    vidmm_invalidate_cache(&sh, p.device, a.hAllocation, a.Offset, a.Length)
}

/// `M:VIDMM_GLOBAL::InvalidateCache` @0x1400956F8: on an adapter whose CPU caches need no
/// maintenance it succeeds at once, before any range rule (the VIDMM_GLOBAL flag it tests is
/// taken as the adapter's I/O coherence, the KMD's `CacheCoherent` aperture); else `length`
/// 0 means to the end, and `offset` at or past the end or `length` past it is
/// STATUS_INVALID_PARAMETER; then the CPU writes back and drops the range's lines.
fn vidmm_invalidate_cache(
    sh: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
    offset: u64,
    length: u64,
) -> Result<(), NtStatus> {
    if lock(&sh.mm.memory_model).io_coherent() {
        return Ok(());
    }
    let (cache, length) = {
        let os = lock(&sh.ums);
        let al = os
            .allocations
            .get(&h)
            .filter(|al| al.device == device && !al.closed)
            .ok_or(InvalidateCacheCheck::Allocation.refuse())?;
        let size = al.alloc.len;
        if offset >= size {
            return Err(InvalidateCacheCheck::Offset.refuse());
        }
        let length = if length == 0 { size - offset } else { length };
        if length > size - offset {
            return Err(InvalidateCacheCheck::Length.refuse());
        }
        (al.cache.clone(), length)
    };
    if let Some(c) = cache {
        c.invalidate(offset, length);
    }
    Ok(())
}
