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
    DXGK_SEGMENTPREFERENCE,
};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::pdd::{
    AllocationKind, AllocationPdd, ALLOCATION_CPU_CACHED, ALLOCATION_CPU_VISIBLE, ALLOCATION_FLAGS,
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
    /// The CPU maps it (it stays in CPU-visible segments).
    pub cpu_visible: bool,
    /// The CPU maps it write-back cached: system memory only (AL-04).
    pub cached: bool,
    /// A device-specific handle from `DxgkDdiOpenAllocation`: the device that opened it.
    pub opened_by: Option<Handle>,
    /// Where VidMm mapped it: `(process, GPU VA of byte 0)`, learnt from the
    /// `FirstPteVirtualAddress` of its UPDATEPAGETABLE operations ([`crate::pagetable`]).
    pub mapped: Option<(Handle, u64)>,
}

impl Allocation {
    /// Whether `[va, va + len)` lies inside this allocation as mapped in `process`.
    pub fn covers(&self, process: Handle, va: u64, len: u64) -> bool {
        let Some((p, base)) = self.mapped else {
            return false;
        };
        let (Some(end), Some(limit)) = (va.checked_add(len), base.checked_add(self.size)) else {
            return false;
        };
        p == process && va >= base && end <= limit
    }
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
    let cpu_visible = pdd.flags & ALLOCATION_CPU_VISIBLE != 0;
    let cached = pdd.flags & ALLOCATION_CPU_CACHED != 0;
    // A cached CPU mapping of memory the CPU cannot map means nothing.
    if cached && !cpu_visible {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(Allocation {
        kind,
        size,
        gpu_read_only,
        cpu_visible,
        cached,
        opened_by: None,
        mapped: None,
    })
}

/// The `DXGK_ALLOCATIONINFO` answer for `al`: page alignment; CPU-visible allocations in the
/// aperture or the CPU-visible part of VRAM, cached ones in the aperture only (the CPU's
/// caches are coherent with system memory, never with VRAM), others anywhere
/// (docs/memory.md). Every CPU-visible allocation lists the aperture: VidMm refuses one that
/// does not (AL-04).
fn describe<P: Platform>(live: &Live<P>, al: &Allocation, info: &mut DXGK_ALLOCATIONINFO) {
    let cpu_visible = al.cpu_visible;
    let bit = |id: u32| 1u32.checked_shl(id.saturating_sub(1)).unwrap_or(0);
    let mut set = bit(gpummu::SEGMENT_APERTURE);
    if !al.cached {
        set |= bit(gpummu::SEGMENT_LOCAL);
    }
    if !cpu_visible && gpummu::local_segment(live, gpummu::SEGMENT_LOCAL_HIDDEN).is_some() {
        set |= bit(gpummu::SEGMENT_LOCAL_HIDDEN);
    }
    info.Size = usize::try_from(al.size).unwrap_or(0);
    info.Alignment = u32::try_from(rvgpu_hw::PAGE_SIZE).unwrap_or(4096);
    info.SupportedReadSegmentSet = set;
    info.SupportedWriteSegmentSet = set;
    info.EvictionSegmentSet = bit(gpummu::SEGMENT_APERTURE);
    info.PreferredSegment = preference(live, al);
    let mut flags = DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::default();
    flags.set(
        DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::CpuVisible,
        u32::from(cpu_visible),
    );
    flags.set(
        DXGK_ALLOCATIONINFOFLAGS_WDDM2_0::Cached,
        u32::from(al.cached),
    );
    info.Anonymous2 = DXGK_ALLOCATIONINFO_1 { FlagsWddm2: flags };
}

/// Where the allocation should go, best first (`DXGK_SEGMENTPREFERENCE`): memory the GPU
/// reaches fastest for what only the GPU touches (VRAM the CPU cannot see first, so the
/// CPU-visible part stays for allocations that need it), the aperture for what the CPU maps.
fn preference<P: Platform>(live: &Live<P>, al: &Allocation) -> DXGK_SEGMENTPREFERENCE {
    let mut order = [0u32; 3];
    if al.cpu_visible {
        order[0] = gpummu::SEGMENT_APERTURE;
    } else {
        let hidden = gpummu::local_segment(live, gpummu::SEGMENT_LOCAL_HIDDEN).is_some();
        order = if hidden {
            [
                gpummu::SEGMENT_LOCAL_HIDDEN,
                gpummu::SEGMENT_LOCAL,
                gpummu::SEGMENT_APERTURE,
            ]
        } else {
            [gpummu::SEGMENT_LOCAL, gpummu::SEGMENT_APERTURE, 0]
        };
    }
    DXGK_SEGMENTPREFERENCE::default()
        .with(DXGK_SEGMENTPREFERENCE::SegmentId0, order[0])
        .with(DXGK_SEGMENTPREFERENCE::SegmentId1, order[1])
        .with(DXGK_SEGMENTPREFERENCE::SegmentId2, order[2])
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
    // Everything is checked before anything is created (no half-made call to undo for bad
    // input); no per-call arrays either: the kernel stack is small.
    for info in infos.iter() {
        parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
    }
    let mut made = 0usize;
    let mut result = Ok(());
    for info in infos.iter_mut() {
        let r = (|| {
            let al = parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
            let h = a.new_handle(Kind::Allocation)?;
            let mut s = live.sched.lock();
            if s.allocations.len() >= MAX_ALLOCATIONS {
                return Err(status::INSUFFICIENT_RESOURCES);
            }
            s.allocations.try_insert::<P>(h, al)?;
            drop(s);
            describe(live, &al, info);
            info.hAllocation = h.as_handle();
            Ok(())
        })();
        if let Err(e) = r {
            result = Err(e);
            break;
        }
        made = made.saturating_add(1);
    }
    if result.is_err() {
        let mut s = live.sched.lock();
        for info in infos.iter_mut().take(made) {
            if let Ok(h) = Handle::decode_on(info.hAllocation, Kind::Allocation, a.table_slot()) {
                s.allocations.remove(&h);
            }
            info.hAllocation = core::ptr::null_mut();
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
        for info in infos.iter() {
            parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
        }
        let mut made = 0usize;
        let mut result = Ok(());
        for info in infos.iter_mut() {
            let r = (|| {
                let al = parse(private(info).ok_or(status::INVALID_PARAMETER)?)?;
                let h = a.new_handle(Kind::Allocation)?;
                let mut s = live.sched.lock();
                if !s.devices.contains_key(&dev) {
                    return Err(status::INVALID_HANDLE);
                }
                if s.allocations.len() >= MAX_ALLOCATIONS {
                    return Err(status::INSUFFICIENT_RESOURCES);
                }
                s.allocations.try_insert::<P>(
                    h,
                    Allocation {
                        opened_by: Some(dev),
                        ..al
                    },
                )?;
                info.hDeviceSpecificAllocation = h.as_handle();
                Ok(())
            })();
            if let Err(e) = r {
                result = Err(e);
                break;
            }
            made = made.saturating_add(1);
        }
        if result.is_err() {
            let mut s = live.sched.lock();
            for info in infos.iter_mut().take(made) {
                let raw = info.hDeviceSpecificAllocation;
                if let Ok(h) = Handle::decode_on(raw, Kind::Allocation, a.table_slot()) {
                    s.allocations.remove(&h);
                }
                info.hDeviceSpecificAllocation = core::ptr::null_mut();
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

/// Whether `h_process` is a user process (not the system / paging process).
pub fn user_process<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_process: HANDLE,
) -> Result<bool, Status> {
    let process = Handle::decode_on(h_process, Kind::Process, a.table_slot())?;
    let s = live.sched.lock();
    let p = s.processes.get(&process).ok_or(status::INVALID_HANDLE)?;
    Ok(!p.system)
}

/// The allocation's page attributes the KMD imposes on top of VidMm's entry (read-only,
/// no-execute), or `None` for a mapping of no allocation.
pub fn page_policy<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_allocation: HANDLE,
) -> Option<Allocation> {
    let h = Handle::decode_on(h_allocation, Kind::Allocation, a.table_slot()).ok()?;
    live.sched
        .lock()
        .allocations
        .get(&h)
        .copied()
        .filter(|al| al.opened_by.is_none())
}

/// Records where VidMm mapped (or unmapped) allocation `h_allocation` in `h_process`: the
/// first entry of an update at allocation offset 0 says where byte 0 is (valid) or that the
/// allocation left the space (invalid).
pub fn note_mapping<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_process: HANDLE,
    h_allocation: HANDLE,
    offset: u64,
    first_va: u64,
    valid: bool,
) {
    let slot = a.table_slot();
    let (Ok(process), Ok(al)) = (
        Handle::decode_on(h_process, Kind::Process, slot),
        Handle::decode_on(h_allocation, Kind::Allocation, slot),
    ) else {
        return;
    };
    if offset != 0 || first_va == 0 {
        return;
    }
    if let Some(al) = live.sched.lock().allocations.get_mut(&al) {
        al.mapped = valid.then_some((process, first_va));
    }
}

/// The ring of a user-mode queue's doorbell, from the allocations `DXGKARG_CREATEDOORBELL`
/// names: the ring starts where VidMm mapped the ring allocation (`Commands`, not GPU
/// read-only) in the queue's `process`, the control block where it mapped the ring-control
/// allocation; both must be the process's own creations (not opened), and the ring's `size`
/// bytes must fit its allocation. Everything else about the ring is [`crate::doorbell::check_ring`].
pub fn ring_from_allocations<P: Platform>(
    a: &Adapter<P>,
    s: &crate::sched::Sched,
    process: Option<Handle>,
    h_ring: HANDLE,
    h_control: HANDLE,
    size: u32,
) -> Result<crate::hwqueue::Ring, Status> {
    let slot = a.table_slot();
    let process = process.ok_or(status::INVALID_PARAMETER)?;
    let get = |h: HANDLE, kind: AllocationKind| {
        let h = Handle::decode_on(h, Kind::Allocation, slot)?;
        s.allocations
            .get(&h)
            .filter(|al| al.opened_by.is_none() && al.kind == kind)
            .copied()
            .ok_or(status::INVALID_PARAMETER)
    };
    let r = get(h_ring, AllocationKind::Commands)?;
    let c = get(h_control, AllocationKind::RingControl)?;
    let base_in = |al: &Allocation| match al.mapped {
        Some((p, base)) if p == process => Ok(base),
        _ => Err(status::INVALID_PARAMETER),
    };
    let ring = crate::hwqueue::Ring {
        base: GpuVa::new(base_in(&r)?),
        size,
        control: GpuVa::new(base_in(&c)?),
    };
    crate::doorbell::check_ring(&ring)?;
    let fits = r.covers(process, ring.base.get(), u64::from(size))
        && c.covers(
            process,
            ring.control.get(),
            rvgpu_hw::queue::RingControl::SIZE,
        );
    if fits && !r.gpu_read_only {
        Ok(ring)
    } else {
        Err(status::INVALID_PARAMETER)
    }
}
