//! Allocations (issue 12, docs/memory.md "Allocations"): `DxgkDdiCreateAllocation`,
//! `DxgkDdiDestroyAllocation`, `DxgkDdiDescribeAllocation`,
//! `DxgkDdiGetStandardAllocationDriverData`, `DxgkDdiOpenAllocation`,
//! `DxgkDdiCloseAllocation`.
//!
//! The UMD describes each allocation in its private data ([`AllocationPdd`]), which is
//! untrusted: the KMD parses it with a layout check, refuses anything it does not define,
//! and decides size, alignment, segments and page attributes itself. VidMm then places the
//! allocation and maps it; the KMD sees the mapping again only as `UPDATEPAGETABLE` entries,
//! where the allocation record decides the page attributes VidMm's `DXGK_PTE` cannot express
//! (whether user-mode queues may reach the page, hardware.md §12.3 `USER`).
//!
//! rvgpu is render-only: it has no primary, shadow or staging surfaces, so
//! DescribeAllocation and GetStandardAllocationDriverData refuse every request. They exist
//! because Dxgkrnl refuses a render core without them (docs/windows-bringup.md BR-47).

use rvgpu_ddi::allocation::{
    DXGKARG_CREATEALLOCATION, DXGK_ALLOCATIONINFO, DXGK_ALLOCATIONINFOFLAGS_WDDM2_0,
    DXGK_ALLOCATIONINFO_1, DXGK_CREATEALLOCATIONFLAGS, DXGK_OPENALLOCATIONINFO,
};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::pdd::{
    AllocationKind, AllocationPdd, ALLOCATION_CPU_VISIBLE, ALLOCATION_FLAGS,
    ALLOCATION_GPU_READ_ONLY, ALLOCATION_PDD_VERSION, PDD_MAGIC,
};
use zerocopy::FromBytes;

use crate::adapter::{Adapter, Live};
use crate::gpummu;
use crate::platform::Platform;
use crate::sched::{self, Handle, Kind};
use crate::status::{self, Status};

/// An allocation as the KMD keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub kind: AllocationKind,
    /// Bytes (whole pages).
    pub size: u64,
    pub gpu_read_only: bool,
    /// A device-specific handle from `DxgkDdiOpenAllocation`: the device that opened it.
    pub opened_by: Option<Handle>,
}

impl Allocation {
    /// Whether the GPU may fetch commands from the allocation's pages.
    pub fn executable(&self) -> bool {
        self.kind == AllocationKind::Commands
    }
}

/// Largest allocation the KMD describes (bounds what one request can ask VidMm for).
pub const MAX_ALLOCATION_BYTES: u64 = 1 << 30;
/// Most allocations one adapter keeps.
pub const MAX_ALLOCATIONS: usize = 1 << 16;
/// Most allocations in one CreateAllocation call.
pub const MAX_PER_CALL: u32 = 64;

/// Checks one allocation's private data and returns what the KMD will create.
pub fn parse(bytes: &[u8]) -> Result<Allocation, Status> {
    let pdd = AllocationPdd::read_from_bytes(bytes).map_err(|_| status::INVALID_PARAMETER)?;
    if pdd.magic != PDD_MAGIC || pdd.version != ALLOCATION_PDD_VERSION || pdd.reserved != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    if pdd.flags & !ALLOCATION_FLAGS != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let kind = AllocationKind::from_u32(pdd.kind).ok_or(status::INVALID_PARAMETER)?;
    if pdd.size == 0 || pdd.size > MAX_ALLOCATION_BYTES {
        return Err(status::INVALID_PARAMETER);
    }
    let size = pdd
        .size
        .checked_next_multiple_of(rvgpu_hw::PAGE_SIZE)
        .ok_or(status::INVALID_PARAMETER)?;
    let gpu_read_only = pdd.flags & ALLOCATION_GPU_READ_ONLY != 0;
    // A ring-control block is written by the GPU (read pointer): read-only makes no sense.
    if gpu_read_only && kind == AllocationKind::RingControl {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(Allocation {
        kind,
        size,
        gpu_read_only,
        opened_by: None,
    })
}

/// The `DXGK_ALLOCATIONINFO` answer for `al`: page alignment; CPU-visible allocations in the
/// aperture or the CPU-visible part of VRAM, others anywhere (docs/memory.md).
fn describe<P: Platform>(
    live: &Live<P>,
    al: &Allocation,
    cpu_visible: bool,
    info: &mut DXGK_ALLOCATIONINFO,
) {
    let bit = |id: u32| 1u32.checked_shl(id.saturating_sub(1)).unwrap_or(0);
    let mut set = bit(gpummu::SEGMENT_APERTURE) | bit(gpummu::SEGMENT_LOCAL);
    if !cpu_visible && gpummu::local_segment(live, gpummu::SEGMENT_LOCAL_HIDDEN).is_some() {
        set |= bit(gpummu::SEGMENT_LOCAL_HIDDEN);
    }
    info.Size = usize::try_from(al.size).unwrap_or(0);
    info.Alignment = u32::try_from(rvgpu_hw::PAGE_SIZE).unwrap_or(4096);
    info.SupportedReadSegmentSet = set;
    info.SupportedWriteSegmentSet = set;
    info.EvictionSegmentSet = bit(gpummu::SEGMENT_APERTURE);
    let mut flags = DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::default();
    flags.set(
        DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::CpuVisible,
        u32::from(cpu_visible),
    );
    info.Anonymous2 = DXGK_ALLOCATIONINFO_1 { FlagsWddm2: flags };
}

/// DxgkDdiCreateAllocation (PASSIVE): every allocation of the call or none (a failure frees
/// what the call created).
pub fn create<'p, P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_CREATEALLOCATION,
    infos: &mut [DXGK_ALLOCATIONINFO],
    private: impl Fn(&DXGK_ALLOCATIONINFO) -> Option<&'p [u8]>,
) -> Result<(), Status> {
    let live = a.started()?;
    if !gpummu::supported(live) {
        return Err(status::NOT_SUPPORTED);
    }
    // No resources (no D3D runtime objects above allocations) and no resource private data.
    if args.Flags.Value & !DXGK_CREATEALLOCATIONFLAGS::default().Value != 0
        || args.PrivateDriverDataSize != 0
        || infos.is_empty()
        || args.NumAllocations > MAX_PER_CALL
    {
        return Err(status::INVALID_PARAMETER);
    }
    let mut parsed = [None; MAX_PER_CALL as usize];
    for (slot, info) in parsed.iter_mut().zip(infos.iter()) {
        let bytes = private(info).ok_or(status::INVALID_PARAMETER)?;
        let cpu = AllocationPdd::read_from_bytes(bytes)
            .map(|p| p.flags & ALLOCATION_CPU_VISIBLE != 0)
            .unwrap_or(false);
        *slot = Some((parse(bytes)?, cpu));
    }
    let mut made: [Option<Handle>; MAX_PER_CALL as usize] = [None; MAX_PER_CALL as usize];
    let result = (|| {
        for ((info, p), out) in infos.iter_mut().zip(parsed.iter()).zip(made.iter_mut()) {
            let Some((al, cpu)) = p else {
                return Err(status::INVALID_PARAMETER);
            };
            let h = a.new_handle(Kind::Allocation)?;
            let mut s = live.sched.lock();
            if s.allocations.len() >= MAX_ALLOCATIONS {
                return Err(status::INSUFFICIENT_RESOURCES);
            }
            s.allocations.insert(h, *al);
            drop(s);
            *out = Some(h);
            describe(live, al, *cpu, info);
            info.hAllocation = h.as_handle();
        }
        Ok(())
    })();
    if result.is_err() {
        let mut s = live.sched.lock();
        for h in made.iter().flatten() {
            s.allocations.remove(h);
        }
    }
    result
}

/// DxgkDdiDestroyAllocation (PASSIVE): every handle must name an allocation the KMD created
/// (not a device-specific open); otherwise nothing is destroyed.
pub fn destroy<P: Platform>(a: &Adapter<P>, handles: &[HANDLE]) -> Result<(), Status> {
    let live = a.started()?;
    let slot = a.table_slot();
    let mut s = live.sched.lock();
    for raw in handles {
        let h = Handle::decode_on(*raw, Kind::Allocation, slot)?;
        match s.allocations.get(&h) {
            Some(al) if al.opened_by.is_none() => {}
            _ => return Err(status::INVALID_HANDLE),
        }
    }
    for raw in handles {
        if let Ok(h) = Handle::decode_on(*raw, Kind::Allocation, slot) {
            s.allocations.remove(&h);
        }
    }
    Ok(())
}

/// DxgkDdiOpenAllocation (PASSIVE): a device opens allocations it did not create (shared, or
/// the runtime's own); each info carries the allocation's private data, which is checked as
/// at creation, and gets a device-specific handle that `DxgkDdiCloseAllocation` gives back.
/// `private`: the info's private data, if any.
pub fn open<'p, P: Platform>(
    h_device: HANDLE,
    infos: &mut [DXGK_OPENALLOCATIONINFO],
    private: impl Fn(&DXGK_OPENALLOCATIONINFO) -> Option<&'p [u8]>,
) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_device, Kind::Device, |a, live, dev| {
        if infos.len() > MAX_PER_CALL as usize {
            return Err(status::INVALID_PARAMETER);
        }
        let mut parsed = [None; MAX_PER_CALL as usize];
        for (info, out) in infos.iter().zip(parsed.iter_mut()) {
            let bytes = private(info).ok_or(status::INVALID_PARAMETER)?;
            *out = Some(parse(bytes)?);
        }
        let mut made: [Option<Handle>; MAX_PER_CALL as usize] = [None; MAX_PER_CALL as usize];
        let result = (|| {
            for ((info, p), out) in infos.iter_mut().zip(parsed.iter()).zip(made.iter_mut()) {
                let al = p.ok_or(status::INVALID_PARAMETER)?;
                let h = a.new_handle(Kind::Allocation)?;
                let mut s = live.sched.lock();
                if !s.devices.contains_key(&dev) {
                    return Err(status::INVALID_HANDLE);
                }
                if s.allocations.len() >= MAX_ALLOCATIONS {
                    return Err(status::INSUFFICIENT_RESOURCES);
                }
                s.allocations.insert(
                    h,
                    Allocation {
                        opened_by: Some(dev),
                        ..al
                    },
                );
                *out = Some(h);
                info.hDeviceSpecificAllocation = h.as_handle();
            }
            Ok(())
        })();
        if result.is_err() {
            let mut s = live.sched.lock();
            for h in made.iter().flatten() {
                s.allocations.remove(h);
            }
        }
        result
    })
}

/// DxgkDdiCloseAllocation (PASSIVE): the device-specific handles of `h_device`'s opens.
pub fn close<P: Platform>(h_device: HANDLE, handles: &[HANDLE]) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_device, Kind::Device, |a, live, dev| {
        let slot = a.table_slot();
        let mut s = live.sched.lock();
        for raw in handles {
            let h = Handle::decode_on(*raw, Kind::Allocation, slot)?;
            match s.allocations.get(&h) {
                Some(al) if al.opened_by == Some(dev) => {}
                _ => return Err(status::INVALID_HANDLE),
            }
        }
        for raw in handles {
            if let Ok(h) = Handle::decode_on(*raw, Kind::Allocation, slot) {
                s.allocations.remove(&h);
            }
        }
        Ok(())
    })
}

/// Whether the page VidMm maps for `h_allocation` in process `h_process` may be reached from
/// user-mode queues: never in the system process or for a mapping of no allocation (the
/// KMD's and the OS's own memory), else for every allocation the UMD created.
pub fn user_page<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_process: HANDLE,
    h_allocation: HANDLE,
) -> Result<bool, Status> {
    let slot = a.table_slot();
    let s = live.sched.lock();
    let process = Handle::decode_on(h_process, Kind::Process, slot)?;
    let p = s.processes.get(&process).ok_or(status::INVALID_HANDLE)?;
    if p.system || h_allocation.is_null() {
        return Ok(false);
    }
    let al = Handle::decode_on(h_allocation, Kind::Allocation, slot)?;
    Ok(s.allocations
        .get(&al)
        .is_some_and(|al| al.opened_by.is_none()))
}

/// The allocation's page attributes the KMD imposes on top of VidMm's entry (read-only,
/// no-execute), or `None` for a mapping of no allocation.
pub fn page_policy<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_allocation: HANDLE,
) -> Option<Allocation> {
    let h = Handle::decode_on(h_allocation, Kind::Allocation, a.table_slot()).ok()?;
    live.sched.lock().allocations.get(&h).copied()
}
