//! What every GPU VA operation of VidMm shares: the page size and protection bits, the
//! statuses VidMm refuses with, a caller's device rule, the top of a process's space and a
//! mapping's leaf tag.

use rvgpu_ddi::memory::DXGK_GPUMMUCAPS_FLAGS;
use rvgpu_ddi::ntstatus::*;
use rvgpu_umd::kmt::GpuVaProtection;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::gpuva::Phys;
use crate::state::vidmm::va::UserMap;
use crate::vidmm::leaf::LeafTag;

pub(super) const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE` bits, as the UMD's trait names them.
pub(super) const PROTECTION_WRITE: u64 = GpuVaProtection::WRITE.0;

pub(super) const PROTECTION_EXECUTE: u64 = GpuVaProtection::EXECUTE.0;

pub(super) const PROTECTION_ZERO: u64 = GpuVaProtection::ZERO.0;

pub(super) const PROTECTION_NO_ACCESS: u64 = GpuVaProtection::NO_ACCESS.0;

pub(super) const PROTECTION_SYSTEM_USE_ONLY: u64 = GpuVaProtection::SYSTEM_USE_ONLY.0;

/// Reservations start on 64 KiB (VIDMM_GLOBAL::VidMmReserveGpuVirtualAddress passes 0x10000 as
/// the alignment; AllocateVirtualAddressRange refuses a `BaseAddress` off it).
pub const RESERVE_ALIGN: u64 = 0x1_0000;

/// Lowest VA a process may reserve or map at: below it this VidMm maps the OS's own pages a
/// process uses (fence storage) at their device address (`vidmm::mmu`'s `VA_BASE`), so that
/// part of the space is never free for the process.
pub const USER_VA_FLOOR: u64 = 0x4000_0000_0000;

pub(super) fn bad() -> SimError {
    SimError::DdiFailed(STATUS_INVALID_PARAMETER)
}

/// Not free / not found where the allocator looked (AllocateVirtualAddressRange and
/// MapVirtualAddressRange fail with STATUS_UNSUCCESSFUL).
pub(super) fn unsuccessful() -> SimError {
    SimError::DdiFailed(STATUS_UNSUCCESSFUL)
}

pub(super) fn tag(m: &UserMap, va: u64) -> LeafTag {
    LeafTag {
        handle: m.kmd,
        // The allocation's first page would be here: the driver is told each leaf's offset in
        // the allocation (`AllocationOffsetInBytes`), not its offset in this mapping.
        base_va: va - m.offset * PAGE,
        // A process's own mapping may be unmapped in part (`vidmm::va`).
        large_pages: false,
        repeat_page: None,
        driver_protection: m.driver_protection,
    }
}

/// Pages `[offset, offset + pages)` of an allocation whose pages are `all` (`None` past
/// its end, which the callers' range checks exclude).
pub(super) fn pages_at(all: &[Phys], offset: u64, pages: u64) -> Option<Vec<Phys>> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(pages).ok()?)?;
    all.get(start..end).map(<[Phys]>::to_vec)
}

/// The device's process and error state.
pub(super) fn device_pid(a: &AdapterShared, device: KmtHandle) -> Result<ProcessId, SimError> {
    let os = lock(&a.ums);
    match os.devices.get(&device) {
        None => Err(bad()),
        Some(d) if d.in_error() => Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED)),
        Some(d) => Ok(d.process),
    }
}

/// The top of the VA space (exclusive).
pub(super) fn va_limit(a: &AdapterShared, pid: ProcessId) -> Option<u64> {
    let v = lock(&a.mm.vidmm);
    let p = v.processes.get(&pid)?;
    Some(1u64 << p.space.geometry.va_bits())
}

/// Whether the driver writes zero PTEs (`DXGK_GPUMMUCAPS::ZeroInPteSupported`).
pub(super) fn zero_in_pte(a: &AdapterShared) -> bool {
    lock(&a.mm.memory_model)
        .gpummu
        .as_ref()
        .is_some_and(|(caps, _)| caps.Flags.get(DXGK_GPUMMUCAPS_FLAGS::ZeroInPteSupported) != 0)
}
