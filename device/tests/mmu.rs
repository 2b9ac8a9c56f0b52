//! The device MMU (docs/hardware.md §12): walks, faults at each level, permissions (NF-01's
//! user/privileged split), the TLB and its invalidation, and page-crossing accesses.

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_device::device::mmu::{Chunk, Fault, Mmu, Privilege};
use rvgpu_device::Memory;
use rvgpu_hw::addr::{GpuVa, VRAM_BASE};
use rvgpu_hw::mmu::{self, Access, FaultReason, PageAttrs, Pte};

/// Builds page tables in system memory the way VidMm + the KMD's paging buffers would.
struct Space {
    mem: Arc<Memory>,
    root: u64,
    next: u64,
    end: u64,
}

const RW_USER: PageAttrs = PageAttrs {
    writable: true,
    user: true,
    vram: false,
    coherent: true,
    no_execute: false,
};

/// [`RW_USER`] with `change` made to it.
fn rw_user_but(change: impl FnOnce(&mut PageAttrs)) -> PageAttrs {
    let mut attrs = RW_USER;
    change(&mut attrs);
    attrs
}

impl Space {
    fn new() -> Self {
        let mem = Memory::new(16 << 20);
        let arena = mem.alloc_system(1 << 20, mmu::TABLE_SIZE).unwrap();
        let root = arena.bus_addr;
        let end = root + arena.len;
        Space {
            mem,
            root,
            next: root + mmu::TABLE_SIZE,
            end,
        }
    }

    fn new_table(&mut self) -> u64 {
        let t = self.next;
        self.next += mmu::TABLE_SIZE;
        assert!(self.next <= self.end);
        t
    }

    /// Address of the entry for `va` at `level`, creating directory tables on the way.
    fn entry(&mut self, va: u64, level: u8) -> u64 {
        let mut table = self.root;
        let mut l = mmu::ROOT_LEVEL;
        while l > level {
            let e = mmu::entry_addr(table, GpuVa::new(va), l).unwrap();
            let pte = Pte(self.mem.read_u64(PhysAddr::new(e)).unwrap());
            table = if pte.valid() {
                pte.addr()
            } else {
                let t = self.new_table();
                self.mem
                    .write_u64(PhysAddr::new(e), Pte::table(t, false).unwrap().0)
                    .unwrap();
                t
            };
            l -= 1;
        }
        mmu::entry_addr(table, GpuVa::new(va), level).unwrap()
    }

    fn map(&mut self, va: u64, pa: u64, attrs: PageAttrs) {
        let e = self.entry(va, 0);
        self.mem
            .write_u64(PhysAddr::new(e), Pte::page(pa, attrs, false).unwrap().0)
            .unwrap();
    }

    fn map_large(&mut self, va: u64, pa: u64, attrs: PageAttrs) {
        let e = self.entry(va, mmu::LARGE_LEVEL);
        self.mem
            .write_u64(PhysAddr::new(e), Pte::page(pa, attrs, true).unwrap().0)
            .unwrap();
    }

    fn page(&self) -> u64 {
        self.mem.alloc_system(4096, 4096).unwrap().bus_addr
    }

    /// A space with a fresh 4 KiB page mapped at [`VA`] with `attrs`: (space, the page).
    fn with_page(attrs: PageAttrs) -> (Self, u64) {
        let mut s = Self::new();
        let pa = s.page();
        s.map(VA, pa, attrs);
        (s, pa)
    }

    /// `mmu`'s translation of `len` bytes at `va` under this space's root.
    fn translate(
        &self,
        mmu: &Mmu,
        va: u64,
        len: u64,
        access: Access,
        who: Privilege,
    ) -> Result<Vec<Chunk>, Fault> {
        mmu.translate(&self.mem, self.root, GpuVa::new(va), len, access, who)
    }
}

const VA: u64 = 0x0000_1234_5678_0000 & ((1 << 48) - 1) & !0xfff;

#[test]
fn walks_a_4k_page() {
    let (s, pa) = Space::with_page(RW_USER);
    let mmu = Mmu::new();
    let c = s
        .translate(&mmu, VA + 0x10, 16, Access::Write, Privilege::User)
        .unwrap();
    assert_eq!(
        c,
        vec![Chunk {
            pa: PhysAddr::new(pa + 0x10),
            len: 16
        }]
    );
    mmu.write_bytes(
        &s.mem,
        s.root,
        GpuVa::new(VA + 8),
        &7u64.to_le_bytes(),
        Privilege::User,
    )
    .unwrap();
    assert_eq!(s.mem.read_u64(PhysAddr::new(pa + 8)), Some(7));
}

#[test]
fn walks_a_2m_page_in_vram() {
    let mut s = Space::new();
    let va = 0x4000_0000; // 2 MiB aligned
    s.map_large(va, 0x20_0000, rw_user_but(|a| a.vram = true));
    let mmu = Mmu::new();
    let c = s
        .translate(&mmu, va + 0x1f_f000, 8, Access::Read, Privilege::User)
        .unwrap();
    assert_eq!(c[0].pa, PhysAddr::new(VRAM_BASE + 0x20_0000 + 0x1f_f000));
    // One large TLB entry serves every 4 KiB of the 2 MiB page.
    s.translate(&mmu, va + 0x1000, 8, Access::Read, Privilege::User)
        .unwrap();
    assert_eq!(mmu.stats().misses, 1);
    assert_eq!(mmu.stats().hits, 1);
}

#[test]
fn invalid_entry_faults_at_its_level() {
    for level in 0..mmu::LEVELS {
        let (mut s, _) = Space::with_page(RW_USER);
        let e = s.entry(VA, level);
        s.mem.write_u64(PhysAddr::new(e), 0).unwrap();
        let r = s.translate(&Mmu::new(), VA, 8, Access::Read, Privilege::Kernel);
        assert_eq!(
            r,
            Err(Fault {
                va: VA,
                access: Access::Read,
                level,
                reason: FaultReason::NotPresent
            }),
            "level {level}"
        );
    }
}

#[test]
fn reserved_bits_and_bad_tables_fault() {
    let (mut s, _) = Space::with_page(RW_USER);
    let e = s.entry(VA, 2);
    let v = s.mem.read_u64(PhysAddr::new(e)).unwrap();
    s.mem.write_u64(PhysAddr::new(e), v | 1 << 60).unwrap();
    let r = s
        .translate(&Mmu::new(), VA, 8, Access::Read, Privilege::Kernel)
        .unwrap_err();
    assert_eq!(r.reason, FaultReason::Reserved);
    assert_eq!(r.level, 2);
    // A directory entry naming memory that does not exist: the next level's table is
    // unreadable.
    s.mem
        .write_u64(PhysAddr::new(e), Pte::table(0xdead_0000, false).unwrap().0)
        .unwrap();
    let r = s
        .translate(&Mmu::new(), VA, 8, Access::Read, Privilege::Kernel)
        .unwrap_err();
    assert_eq!(r.reason, FaultReason::TableUnreadable);
    assert_eq!(r.level, 1);
    // Root 0 / a non-canonical VA.
    let m = Mmu::new();
    assert_eq!(
        m.translate(
            &s.mem,
            0x10,
            GpuVa::new(VA),
            8,
            Access::Read,
            Privilege::Kernel
        )
        .unwrap_err()
        .reason,
        FaultReason::TableUnreadable
    );
    assert_eq!(
        s.translate(&m, 1 << 48, 8, Access::Read, Privilege::Kernel)
            .unwrap_err()
            .reason,
        FaultReason::NonCanonical
    );
}

/// NF-01 (the user/privileged split: CurrentValue read-only to user mappings, MonitoredValue
/// kernel-only) and no-execute: one row per permission taken away from a page. The access it
/// forbids faults at the leaf with its reason and writes nothing; the row's other access works.
#[test]
fn nf_01_each_permission_faults_only_the_access_it_forbids() {
    let (user, kernel) = (Privilege::User, Privilege::Kernel);
    let rows = [
        (
            "read-only",
            rw_user_but(|a| a.writable = false),
            (Access::Write, kernel, FaultReason::ReadOnly),
            (Access::Read, user),
        ),
        (
            "kernel-only",
            rw_user_but(|a| a.user = false),
            (Access::Read, user, FaultReason::Privileged),
            (Access::Write, kernel),
        ),
        (
            "no-execute",
            rw_user_but(|a| a.no_execute = true),
            (Access::Execute, user, FaultReason::NoExecute),
            (Access::Read, user),
        ),
    ];
    for (row, attrs, (access, who, reason), (allowed, allowed_who)) in rows {
        let (s, pa) = Space::with_page(attrs);
        let mmu = Mmu::new();
        let fault = Fault {
            va: VA,
            access,
            level: 0,
            reason,
        };
        assert_eq!(s.translate(&mmu, VA, 8, access, who), Err(fault), "{row}");
        if access == Access::Write {
            let r = mmu.write_bytes(&s.mem, s.root, GpuVa::new(VA), &[1; 8], who);
            assert_eq!(r, Err(fault), "{row}");
        }
        assert_eq!(
            s.mem.read_u64(PhysAddr::new(pa)),
            Some(0),
            "{row}: the page is unchanged"
        );
        let ok = s.translate(&mmu, VA, 8, allowed, allowed_who);
        assert!(ok.is_ok(), "{row}: {allowed:?} by {allowed_who:?}: {ok:?}");
        if allowed == Access::Write {
            mmu.write_bytes(&s.mem, s.root, GpuVa::new(VA), &[2; 8], allowed_who)
                .unwrap();
            let written = u64::from_le_bytes([2; 8]);
            assert_eq!(s.mem.read_u64(PhysAddr::new(pa)), Some(written), "{row}");
        }
    }
}

#[test]
fn tlb_hits_after_a_walk_and_is_tagged_by_root() {
    let (mut a, _) = Space::with_page(RW_USER);
    let mmu = Mmu::new();
    a.translate(&mmu, VA, 8, Access::Read, Privilege::User)
        .unwrap();
    a.translate(&mmu, VA + 8, 8, Access::Read, Privilege::User)
        .unwrap();
    assert_eq!(mmu.stats().misses, 1);
    assert_eq!(mmu.stats().hits, 1);
    // Another root with the same VA unmapped: no hit on A's entry.
    let other_root = a.new_table();
    let r = mmu.translate(
        &a.mem,
        other_root,
        GpuVa::new(VA),
        8,
        Access::Read,
        Privilege::User,
    );
    assert_eq!(r.unwrap_err().reason, FaultReason::NotPresent);
}

#[test]
fn stale_entry_not_used_after_invalidate() {
    let (mut s, pa) = Space::with_page(RW_USER);
    let mmu = Mmu::new();
    mmu.write_bytes(&s.mem, s.root, GpuVa::new(VA), &[1; 8], Privilege::User)
        .unwrap();
    // Unmap (Release store, as a paging buffer would), then invalidate this root.
    let e = s.entry(VA, 0);
    s.mem.store(PhysAddr::new(e), 0, Ordering::Release).unwrap();
    mmu.invalidate(s.root);
    let r = mmu.write_bytes(&s.mem, s.root, GpuVa::new(VA), &[9; 8], Privilege::User);
    assert_eq!(r.unwrap_err().reason, FaultReason::NotPresent);
    assert_eq!(
        s.mem.read_u64(PhysAddr::new(pa)),
        Some(u64::from_le_bytes([1; 8]))
    );

    // Remap read-only elsewhere, invalidate all: the new entry is used.
    let pa2 = s.page();
    s.map(VA, pa2, rw_user_but(|a| a.writable = false));
    mmu.invalidate(0);
    assert_eq!(mmu.tlb_len(), 0);
    let c = s
        .translate(&mmu, VA, 8, Access::Read, Privilege::User)
        .unwrap();
    assert_eq!(c[0].pa, PhysAddr::new(pa2));
    assert_eq!(
        s.translate(&mmu, VA, 8, Access::Write, Privilege::User)
            .unwrap_err()
            .reason,
        FaultReason::ReadOnly
    );
}

#[test]
fn crossing_into_an_unmapped_page_faults_before_any_write() {
    let (s, pa) = Space::with_page(RW_USER);
    let mmu = Mmu::new();
    let r = mmu.write_bytes(
        &s.mem,
        s.root,
        GpuVa::new(VA + 4096 - 8),
        &[5; 16],
        Privilege::User,
    );
    assert_eq!(
        r,
        Err(Fault {
            va: VA + 4096,
            access: Access::Write,
            level: 0,
            reason: FaultReason::NotPresent
        })
    );
    assert_eq!(s.mem.read_u64(PhysAddr::new(pa + 4096 - 8)), Some(0));
}

#[test]
fn crossing_into_a_mapped_page_splits_by_physical_page() {
    let mut s = Space::new();
    let (p1, p2) = (s.page(), s.page());
    s.map(VA, p2, RW_USER);
    s.map(VA + 4096, p1, RW_USER);
    let mmu = Mmu::new();
    let c = s
        .translate(&mmu, VA + 4088, 16, Access::Write, Privilege::User)
        .unwrap();
    assert_eq!(
        c,
        vec![
            Chunk {
                pa: PhysAddr::new(p2 + 4088),
                len: 8
            },
            Chunk {
                pa: PhysAddr::new(p1),
                len: 8
            }
        ]
    );
}

#[test]
fn leaf_naming_missing_memory_faults() {
    let mut s = Space::new();
    s.map(VA, 0x7_0000_0000, RW_USER);
    let r = s.translate(&Mmu::new(), VA, 8, Access::Read, Privilege::User);
    assert_eq!(r.unwrap_err().reason, FaultReason::BadPhysical);
}

/// CPU threads invalidate while the CMP-side thread translates: after every invalidation
/// that followed an unmap, no translation of the old page is ever returned.
#[test]
fn invalidation_races_with_translation() {
    let mut s = Space::new();
    let (old, new) = (s.page(), s.page());
    s.map(VA, old, RW_USER);
    let e = s.entry(VA, 0);
    let mmu = Arc::new(Mmu::new());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let walker = {
        let (mmu, mem, root, done) = (mmu.clone(), s.mem.clone(), s.root, done.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !done.load(Ordering::Acquire) {
                let _ = mmu.translate(&mem, root, GpuVa::new(VA), 8, Access::Read, Privilege::User);
                n += 1;
            }
            n
        })
    };
    std::thread::yield_now();
    s.mem
        .store(
            PhysAddr::new(e),
            Pte::page(new, RW_USER, false).unwrap().0,
            Ordering::Release,
        )
        .unwrap();
    mmu.invalidate(s.root);
    for _ in 0..1000 {
        let c = s
            .translate(&mmu, VA, 8, Access::Read, Privilege::User)
            .unwrap();
        assert_eq!(c[0].pa, PhysAddr::new(new));
    }
    done.store(true, Ordering::Release);
    walker.join().unwrap();
}

/// The TLB-less walk an OS-side oracle uses answers as a kernel read through a fresh TLB does:
/// 4 KiB and 2 MiB pages (any offset), unmapped pages and non-canonical addresses.
#[test]
fn walk_now_agrees_with_a_kernel_read_through_the_tlb() {
    let (mut s, pa) = Space::with_page(RW_USER);
    let large = 0x4000_0000;
    s.map_large(large, 0x20_0000, rw_user_but(|a| a.vram = true));
    let probes = [
        VA,
        VA + 0x18,
        VA + 0x1000,
        large,
        large + 0x1f_f008,
        large + 0x20_0000,
        0,
        1 << 47,
        u64::MAX,
    ];
    for va in probes {
        let tlb = Mmu::new()
            .translate_page(
                &s.mem,
                s.root,
                GpuVa::new(va),
                Access::Read,
                Privilege::Kernel,
            )
            .map(|(pa, _)| pa);
        let now = Mmu::walk_now(&s.mem, s.root, GpuVa::new(va)).map(|(pa, _)| pa);
        assert_eq!(now, tlb, "VA {va:#x}");
    }
    assert_eq!(
        Mmu::walk_now(&s.mem, s.root, GpuVa::new(VA + 0x18)),
        Ok((PhysAddr::new(pa + 0x18), 0x1000))
    );
    assert_eq!(
        Mmu::walk_now(&s.mem, s.root, GpuVa::new(large + 0x1f_f008)),
        Ok((PhysAddr::new(VRAM_BASE + 0x20_0000 + 0x1f_f008), 0x20_0000))
    );
}
