//! Allocations (docs/memory.md "Allocations"): `DxgkDdiCreateAllocation`,
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

use rvgpu_hw::pdd::{
    AllocationKind, AllocationPdd, ALLOCATION_CPU_CACHED, ALLOCATION_CPU_VISIBLE, ALLOCATION_FLAGS,
    ALLOCATION_GPU_READ_ONLY, ALLOCATION_PDD_VERSION, PDD_MAGIC,
};
use zerocopy::FromBytes;

use crate::handle::{Handle, Kind};
use crate::status::{self, Status};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::addr::GpuVa;

pub mod ddi;
pub mod index;

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
    /// A device-specific handle of Dxgkrnl's open for the creating device (`Flags.Create`):
    /// the allocation it names, which Dxgkrnl then passes this handle for (24H2's
    /// `DxgkDdiCreateDoorbell`). `None` for an allocation and for other opens.
    pub of: Option<Handle>,
    /// An allocation: the device Dxgkrnl opened it for at its creation (`Flags.Create`), the
    /// only device whose queues may ring on it.
    pub creator: Option<Handle>,
    /// Where VidMm has it mapped now, learnt from the UPDATEPAGETABLE operations it asks
    /// for ([`ddi::note_mapping`]).
    pub mapped: Mappings,
}

/// Most mapped runs the KMD remembers per allocation. VidMm maps every allocation once at a
/// VA of its own; a process may map it again (`D3DKMTMapGpuVirtualAddress`,
/// `D3DKMTUpdateGpuVirtualAddress`). Past this bound a further run is not recorded: nothing
/// fails (the page tables are VidMm's and are written anyway), but a doorbell whose ring is
/// mapped only there is refused with `STATUS_INVALID_PARAMETER`, as for an unmapped ring. The
/// runs live inline in the record, so recording one never allocates and cannot fail.
pub const MAX_MAPPINGS: usize = 4;

/// Part of an allocation mapped at one place of one process: the allocation's pages
/// `[lo, hi)` at `base + page * PAGE_SIZE`, `base` being where its byte 0 would be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    process: Handle,
    base: u64,
    lo: u64,
    hi: u64,
}

impl Run {
    /// The run's VA range (`None` if it would wrap, which [`Mappings::add`] never stores).
    fn va(&self) -> Option<(u64, u64)> {
        let lo = self
            .base
            .checked_add(self.lo.checked_mul(rvgpu_hw::PAGE_SIZE)?)?;
        let hi = self
            .base
            .checked_add(self.hi.checked_mul(rvgpu_hw::PAGE_SIZE)?)?;
        Some((lo, hi))
    }
}

/// The places an allocation is mapped at (at most [`MAX_MAPPINGS`] runs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mappings {
    runs: [Option<Run>; MAX_MAPPINGS],
}

impl Mappings {
    /// Records pages `[lo, hi)` of the allocation mapped with byte 0 at `base` in `process`,
    /// merged with a run of the same place it touches. `false`: no room (not recorded).
    fn add(&mut self, process: Handle, base: u64, lo: u64, hi: u64) -> bool {
        let mut new = Run {
            process,
            base,
            lo,
            hi,
        };
        if lo >= hi || new.va().is_none() {
            return false;
        }
        // Merging can make the new run touch another one: absorb until none is left.
        loop {
            let hit = self.runs.iter_mut().find(|r| {
                r.is_some_and(|r| {
                    r.process == process && r.base == base && r.lo <= new.hi && new.lo <= r.hi
                })
            });
            let Some(slot) = hit else { break };
            if let Some(r) = slot.take() {
                new.lo = new.lo.min(r.lo);
                new.hi = new.hi.max(r.hi);
            }
        }
        match self.runs.iter_mut().find(|r| r.is_none()) {
            Some(free) => {
                *free = Some(new);
                true
            }
            None => false,
        }
    }

    /// Forgets whatever is recorded in `[va_lo, va_hi)` of `process` (those entries now map
    /// something else, or nothing). A run split in two with no room for its upper part keeps
    /// only the lower one: forgetting a mapping only ever makes the doorbell refuse more.
    fn cut(&mut self, process: Handle, va_lo: u64, va_hi: u64) {
        let mut upper: Option<Run> = None;
        for slot in self.runs.iter_mut() {
            let Some(r) = *slot else { continue };
            let Some((lo, hi)) = r.va() else {
                *slot = None;
                continue;
            };
            if r.process != process || va_hi <= lo || hi <= va_lo {
                continue;
            }
            let page = |va: u64| va.saturating_sub(r.base) / rvgpu_hw::PAGE_SIZE;
            let below = (va_lo > lo).then(|| Run {
                hi: page(va_lo),
                ..r
            });
            let above = (va_hi < hi).then(|| Run {
                lo: page(va_hi),
                ..r
            });
            *slot = below.or(above);
            if below.is_some() && above.is_some() {
                upper = above;
            }
        }
        if let (Some(u), Some(free)) = (upper, self.runs.iter_mut().find(|r| r.is_none())) {
            *free = Some(u);
        }
    }

    /// Where byte 0 is in `process` for a run that maps the allocation's first `len` bytes,
    /// the earliest recorded first.
    pub fn base_covering(&self, process: Handle, len: u64) -> Option<u64> {
        let pages = len.div_ceil(rvgpu_hw::PAGE_SIZE);
        self.runs
            .iter()
            .flatten()
            .find(|r| r.process == process && r.lo == 0 && r.hi >= pages)
            .map(|r| r.base)
    }

    /// Each recorded run as `(process, first VA, end VA)`.
    fn spans(&self) -> impl Iterator<Item = (Handle, u64, u64)> + '_ {
        self.runs
            .iter()
            .flatten()
            .filter_map(|r| r.va().map(|(lo, hi)| (r.process, lo, hi)))
    }

    /// How many runs are recorded.
    pub fn len(&self) -> usize {
        self.runs.iter().flatten().count()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What an allocation imposes on the page-table entries VidMm writes for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagePolicy {
    /// Its pages are read-only to the GPU.
    pub gpu_read_only: bool,
    /// The GPU may fetch commands from its pages.
    pub executable: bool,
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
        of: None,
        creator: None,
        mapped: Mappings::default(),
    })
}

/// The allocation a handle Dxgkrnl passes for one of `device`'s allocations names, with its
/// own handle: the device-specific handle of Dxgkrnl's open for the creating device (what
/// 24H2 passes, K:`DXGDOORBELL::Initialize` @0x1401D9E74) or the allocation's own handle (what
/// Microsoft's pages describe). Either way the allocation must be one `device` created: a
/// handle of another device's open, an open of a shared allocation, or an allocation another
/// device created is `STATUS_INVALID_PARAMETER`.
pub fn own_allocation(
    slot: u8,
    allocations: &crate::kmem::SortedMap<Handle, Allocation>,
    device: Handle,
    raw: HANDLE,
) -> Result<(Handle, &Allocation), Status> {
    let h = Handle::decode_on(raw, Kind::Allocation, slot)?;
    let al = allocations.get(&h).ok_or(status::INVALID_PARAMETER)?;
    let (h, al) = match (al.opened_by, al.of) {
        (Some(by), Some(of)) if by == device => {
            (of, allocations.get(&of).ok_or(status::INVALID_PARAMETER)?)
        }
        (None, _) => (h, al),
        _ => return Err(status::INVALID_PARAMETER),
    };
    if al.opened_by.is_some() || al.creator != Some(device) {
        return Err(status::INVALID_PARAMETER);
    }
    Ok((h, al))
}

/// The ring of a user-mode queue's doorbell, from the allocations `DXGKARG_CREATEDOORBELL`
/// names ([`own_allocation`]: allocations the queue's `device` created): the ring starts where
/// VidMm has the ring allocation (`Commands`, not GPU read-only) mapped in the queue's
/// `process`, the control block where it has the ring-control allocation mapped. An
/// allocation mapped at several places serves from any of them that maps its first bytes (the
/// ring's `size`, the control block) contiguously, the earliest recorded first; one mapped
/// nowhere in the process is refused. Everything else about the ring is
/// [`crate::doorbell::check_ring`]. Returns the ring and the two allocations' own handles.
pub fn ring_from_allocations(
    slot: u8,
    allocations: &crate::kmem::SortedMap<Handle, Allocation>,
    device: Handle,
    process: Option<Handle>,
    h_ring: HANDLE,
    h_control: HANDLE,
    size: u32,
) -> Result<(crate::hwqueue::Ring, [Handle; 2]), Status> {
    let process = process.ok_or(status::INVALID_PARAMETER)?;
    let get = |raw: HANDLE, kind: AllocationKind| {
        own_allocation(slot, allocations, device, raw).and_then(|(h, al)| {
            (al.kind == kind)
                .then_some((h, al))
                .ok_or(status::INVALID_PARAMETER)
        })
    };
    let (rh, r) = get(h_ring, AllocationKind::Commands)?;
    let (ch, c) = get(h_control, AllocationKind::RingControl)?;
    if r.gpu_read_only || u64::from(size) > r.size {
        return Err(status::INVALID_PARAMETER);
    }
    let base = r
        .mapped
        .base_covering(process, u64::from(size))
        .ok_or(status::INVALID_PARAMETER)?;
    let control = c
        .mapped
        .base_covering(process, rvgpu_hw::queue::RingControl::SIZE)
        .ok_or(status::INVALID_PARAMETER)?;
    let ring = crate::hwqueue::Ring {
        base: GpuVa::new(base),
        size,
        control: GpuVa::new(control),
    };
    crate::doorbell::check_ring(&ring)?;
    Ok((ring, [rh, ch]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::fixtures::process;

    const P: u64 = rvgpu_hw::PAGE_SIZE;

    /// Runs of one place merge, an unmap in the middle splits, and past
    /// MAX_MAPPINGS nothing more is recorded (the doorbell then refuses that place).
    #[test]
    fn mappings_merge_split_and_stay_bounded() {
        let p = process(1);
        let mut m = Mappings::default();
        // Two leaf-table halves of one mapping at 0x10_0000.
        assert!(m.add(p, 0x10_0000, 0, 2));
        assert!(m.add(p, 0x10_0000, 2, 4));
        assert_eq!(m.len(), 1);
        assert_eq!(m.base_covering(p, 4 * P), Some(0x10_0000));
        assert_eq!(m.base_covering(p, 5 * P), None, "only 4 pages mapped");
        assert_eq!(m.base_covering(process(2), P), None, "another process");
        // Unmapping page 1 splits: the first page still covers a one-page ring.
        m.cut(p, 0x10_0000 + P, 0x10_0000 + 2 * P);
        assert_eq!(m.len(), 2);
        assert_eq!(m.base_covering(p, P), Some(0x10_0000));
        assert_eq!(m.base_covering(p, 2 * P), None);
        // Fill the bound; one more place is not recorded.
        for i in 0..(MAX_MAPPINGS as u64 - 2) {
            assert!(m.add(p, 0x20_0000 + i * 0x10_0000, 0, 1));
        }
        assert!(!m.add(p, 0x90_0000, 0, 1));
        assert_eq!(m.len(), MAX_MAPPINGS);
        // Unmapping a whole run frees its slot.
        m.cut(p, 0x10_0000, 0x10_0000 + P);
        assert_eq!(m.len(), MAX_MAPPINGS - 1);
        assert_eq!(m.base_covering(p, P), Some(0x20_0000));
        // A split with no room left keeps the lower part only.
        assert!(m.add(p, 0xA0_0000, 0, 3));
        m.cut(p, 0xA0_0000 + P, 0xA0_0000 + 2 * P);
        assert_eq!(m.len(), MAX_MAPPINGS);
        assert!(m
            .runs
            .iter()
            .flatten()
            .any(|r| r.base == 0xA0_0000 && r.hi == 1));
        assert!(!m
            .runs
            .iter()
            .flatten()
            .any(|r| r.base == 0xA0_0000 && r.lo == 2));
        // Nonsense is never stored.
        let mut e = Mappings::default();
        assert!(!e.add(p, u64::MAX - P, 0, 2), "wraps");
        assert!(!e.add(p, 0, 3, 3), "empty");
        assert!(e.is_empty());
    }

    fn pdd(size: u64, kind: u32, flags: u32) -> AllocationPdd {
        AllocationPdd {
            magic: PDD_MAGIC,
            version: ALLOCATION_PDD_VERSION,
            size,
            kind,
            flags,
            reserved: 0,
        }
    }

    fn parsed(p: AllocationPdd) -> Result<Allocation, Status> {
        parse(zerocopy::IntoBytes::as_bytes(&p))
    }

    /// AL-04: the KMD decides size and attributes from the UMD's private data: whole pages,
    /// CPU visibility and caching as asked, not opened, mapped nowhere yet.
    #[test]
    fn al_04_private_data_becomes_a_page_rounded_record() {
        let flags = ALLOCATION_CPU_VISIBLE | ALLOCATION_CPU_CACHED;
        let al = parsed(pdd(P + 1, AllocationKind::Commands as u32, flags)).unwrap();
        assert_eq!(al.kind, AllocationKind::Commands);
        assert_eq!(al.size, 2 * P);
        assert!(al.cpu_visible && al.cached && !al.gpu_read_only);
        assert!(al.executable());
        assert_eq!(al.opened_by, None);
        assert_eq!(al.mapped.base_covering(process(1), 1), None);
        let ro = parsed(pdd(
            P,
            AllocationKind::Buffer as u32,
            ALLOCATION_GPU_READ_ONLY,
        ))
        .unwrap();
        assert!(ro.gpu_read_only && !ro.cpu_visible && !ro.executable());
        assert_eq!(
            parsed(pdd(MAX_ALLOCATION_BYTES, 0, 0)).map(|a| a.size),
            Ok(MAX_ALLOCATION_BYTES)
        );
    }

    /// AL-04: private data the KMD does not define is refused, whatever the field: wrong
    /// length, magic, version or reserved bits, unknown flags or kind, no size or too large,
    /// a read-only ring-control block, a cached mapping the CPU cannot have.
    #[test]
    fn al_04_undefined_private_data_is_refused() {
        let bad = Err(status::INVALID_PARAMETER);
        let good = pdd(P, AllocationKind::Buffer as u32, 0);
        assert!(parsed(good).is_ok());
        let bytes = zerocopy::IntoBytes::as_bytes(&good);
        assert_eq!(parse(&bytes[..31]), bad, "short");
        assert_eq!(parse(&[bytes, &[0u8; 8][..]].concat()), bad, "long");
        assert_eq!(parse(&[]), bad, "empty");
        let ring_control = AllocationKind::RingControl as u32;
        for (what, p) in [
            (
                "magic",
                AllocationPdd {
                    magic: !PDD_MAGIC,
                    ..good
                },
            ),
            (
                "version",
                AllocationPdd {
                    version: ALLOCATION_PDD_VERSION + 1,
                    ..good
                },
            ),
            (
                "reserved",
                AllocationPdd {
                    reserved: 1,
                    ..good
                },
            ),
            ("flag", pdd(P, 0, !ALLOCATION_FLAGS)),
            ("kind", pdd(P, 3, 0)),
            ("size 0", pdd(0, 0, 0)),
            ("too large", pdd(MAX_ALLOCATION_BYTES + 1, 0, 0)),
            ("u64::MAX", pdd(u64::MAX, 0, 0)),
            (
                "read-only ring control",
                pdd(P, ring_control, ALLOCATION_GPU_READ_ONLY),
            ),
            ("cached, not visible", pdd(P, 0, ALLOCATION_CPU_CACHED)),
        ] {
            assert_eq!(parsed(p), bad, "{what}");
        }
    }

    /// UM-07 (the attacker's view): a doorbell's ring is named by the queue's device's own
    /// handle of an allocation it created, in either form Dxgkrnl may pass (the device-specific
    /// handle of its creation open, or the allocation's own handle); another device's open,
    /// an open of a shared allocation, another device's creation and an allocation no device
    /// opened at its creation name nothing.
    #[test]
    fn um_07_a_ring_is_named_only_by_its_creating_device() {
        use crate::handle::fixtures::h;
        let (dev_a, dev_b) = (h(Kind::Device, 1), h(Kind::Device, 2));
        let ring = Allocation {
            creator: Some(dev_a),
            ..parsed(pdd(P, AllocationKind::Commands as u32, 0)).expect("valid")
        };
        let open = |by, of| Allocation {
            opened_by: Some(by),
            of,
            creator: None,
            ..ring
        };
        let (created, a_open, b_open, shared, b_created, unopened) = (
            h(Kind::Allocation, 1),
            h(Kind::Allocation, 2),
            h(Kind::Allocation, 3),
            h(Kind::Allocation, 4),
            h(Kind::Allocation, 5),
            h(Kind::Allocation, 6),
        );
        let mut m = crate::kmem::SortedMap::new();
        m.insert(created, ring);
        m.insert(a_open, open(dev_a, Some(created)));
        m.insert(b_open, open(dev_b, Some(created)));
        m.insert(shared, open(dev_a, None));
        m.insert(
            b_created,
            Allocation {
                creator: Some(dev_b),
                ..ring
            },
        );
        m.insert(
            unopened,
            Allocation {
                creator: None,
                ..ring
            },
        );
        let own = |raw: Handle| own_allocation(0, &m, dev_a, raw.as_handle()).map(|(h, _)| h);
        assert_eq!(
            own(a_open),
            Ok(created),
            "the device-specific handle (24H2)"
        );
        assert_eq!(
            own(created),
            Ok(created),
            "the allocation's own handle (the pages)"
        );
        for (what, raw) in [
            ("another device's open of it", b_open),
            ("an open of a shared allocation", shared),
            ("another device's allocation", b_created),
            ("an allocation opened for no creator", unopened),
        ] {
            assert_eq!(own(raw), Err(status::INVALID_PARAMETER), "{what}");
        }
        assert_eq!(
            own(h(Kind::Allocation, 99)),
            Err(status::INVALID_PARAMETER),
            "no allocation"
        );
    }
}
