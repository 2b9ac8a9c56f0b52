//! The device's GPU MMU: a page-table walker over [`Memory`] and a TLB tagged by root.
//!
//! The format is `rvgpu_hw::mmu`; docs/hardware.md §12 and docs/memory.md describe the model.
//!
//! Concurrency protocol (threaded and step modes alike):
//! - The walker reads entries with Acquire loads; whoever writes page tables (the KMD through
//!   paging buffers) stores them with Release before it invalidates, so a walk that starts after
//!   the invalidation sees the new entries.
//! - The TLB is one mutex-protected map plus a generation counter. A translation samples the
//!   generation (Acquire) before it walks and inserts its result only if the generation is
//!   still the same under the lock; an invalidation bumps the generation and clears entries
//!   under the same lock. So an invalidation that returns leaves no cached translation of its
//!   root(s), and a walk that raced with it cannot put a stale one back.
//! - A translation that completed before the invalidation may still be in use by the command
//!   being executed; the register path waits for the CMP's current quantum to finish (it takes
//!   the CMP lock, `Core::tlb_invalidate`), and every quantum translates afresh, so no access
//!   after the register write returns uses a translation from before it (hardware.md §12.5).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rvgpu_hw::addr::{GpuVa, PhysAddr};
use rvgpu_hw::mmu::{self, Access, Decoded, FaultReason, PageAttrs, Pte};

use crate::memory::Memory;

/// Bound on cached translations; a full TLB is emptied (simple, never stale).
pub const TLB_CAPACITY: usize = 256;

/// A failed translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The first faulting VA (page-granular accesses: the start of the access or of the first
    /// page that failed).
    pub va: u64,
    pub access: Access,
    /// Level of the entry (or table) where translation stopped.
    pub level: u8,
    pub reason: FaultReason,
}

/// One physically contiguous piece of a translated access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Where the piece starts in the device's physical space.
    pub pa: PhysAddr,
    pub len: u64,
}

/// Who is accessing: decides whether [`Pte::USER`] is required.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privilege {
    /// A user-mode queue: only U pages.
    User,
    /// A kernel-mode queue or the CMP itself.
    Kernel,
}

#[derive(Clone, Copy, Debug)]
struct TlbEntry {
    /// Physical base of the page.
    pa: PhysAddr,
    attrs: PageAttrs,
    level: u8,
}

#[derive(Default)]
struct Tlb {
    /// (root, page-aligned VA, page size) → entry.
    map: HashMap<(u64, u64, u64), TlbEntry, TagHash>,
}

/// The TLB's hash of a tag ([`crate::hash`]). A hardware TLB indexes its sets with a few
/// address bits; this is the emulator's equivalent, and it changes no behaviour (hits,
/// misses, capacity and flushes are the same).
type TagHash = crate::hash::MulHash;

/// Counters (tests and benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbStats {
    pub hits: u64,
    pub misses: u64,
    pub invalidations: u64,
}

/// The MMU of one device.
#[derive(Default)]
pub struct Mmu {
    tlb: Mutex<Tlb>,
    generation: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    invalidations: AtomicU64,
}

impl std::fmt::Debug for Mmu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mmu").field("stats", &self.stats()).finish()
    }
}

/// A non-canonical `va` faults before any table is read.
fn canonical(va: u64, access: Access) -> Result<(), Fault> {
    if mmu::is_canonical(GpuVa::new(va)) {
        Ok(())
    } else {
        Err(Fault {
            va,
            access,
            level: mmu::ROOT_LEVEL,
            reason: FaultReason::NonCanonical,
        })
    }
}

/// Physical address an entry's address field names.
fn phys(pte: Pte) -> Option<PhysAddr> {
    if pte.vram() {
        PhysAddr::vram(pte.addr())
    } else {
        Some(PhysAddr::new(pte.addr()))
    }
}

impl Mmu {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn stats(&self) -> TlbStats {
        TlbStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            invalidations: self.invalidations.load(Ordering::Relaxed),
        }
    }

    /// Number of cached translations.
    pub fn tlb_len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether a translation of a page of `root` overlapping `[start, end)` is cached (what
    /// an OS-side check asks after an unmap and its FLUSHTLB: nothing of the range may
    /// survive; other pages of the root may be cached again by queues still running).
    pub fn holds_range(&self, root: u64, start: u64, end: u64) -> bool {
        self.lock()
            .map
            .keys()
            .any(|&(r, va, size)| r == root && va < end && va.saturating_add(size) > start)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tlb> {
        // A panic elsewhere while holding the lock leaves a map that is still consistent.
        self.tlb.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops every cached translation of `root`, or of all roots when `root` is 0. When this
    /// returns, no lookup can hit an entry cached before the call.
    pub fn invalidate(&self, root: u64) {
        let mut tlb = self.lock();
        self.generation.fetch_add(1, Ordering::AcqRel);
        if root == 0 {
            tlb.map.clear();
        } else {
            tlb.map.retain(|k, _| k.0 != root);
        }
        self.invalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// Looks `va` up in the TLB.
    fn lookup(&self, root: u64, va: u64) -> Option<(TlbEntry, u64)> {
        let tlb = self.lock();
        for size in [mmu::PAGE_4K, mmu::PAGE_2M] {
            let base = va & !(size - 1);
            if let Some(e) = tlb.map.get(&(root, base, size)) {
                return Some((*e, size));
            }
        }
        None
    }

    fn insert(&self, generation: u64, root: u64, base: u64, size: u64, e: TlbEntry) {
        let mut tlb = self.lock();
        // An invalidation since the walk began may have made this result stale.
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        if tlb.map.len() >= TLB_CAPACITY {
            tlb.map.clear();
        }
        tlb.map.insert((root, base, size), e);
    }

    /// Walks the tables under `root` (a device physical address) for `va`, without the TLB.
    /// Returns the leaf's physical page base, its size and attributes.
    fn walk(
        mem: &Memory,
        root: u64,
        va: u64,
        access: Access,
    ) -> Result<(PhysAddr, u64, PageAttrs, u8), Fault> {
        let fault = |level, reason| Fault {
            va,
            access,
            level,
            reason,
        };
        let mut table = PhysAddr::new(root);
        let mut level = mmu::ROOT_LEVEL;
        loop {
            if !table.is_aligned(mmu::TABLE_SIZE) {
                return Err(fault(level, FaultReason::TableUnreadable));
            }
            let addr = mmu::entry_addr(table.get(), GpuVa::new(va), level)
                .ok_or(fault(level, FaultReason::TableUnreadable))?;
            let raw = mem
                .load(PhysAddr::new(addr), Ordering::Acquire)
                .ok_or(fault(level, FaultReason::TableUnreadable))?;
            let pte = Pte(raw);
            match pte.decode(level) {
                Decoded::Fault(r) => return Err(fault(level, r)),
                Decoded::Page { size } => {
                    let pa = phys(pte).ok_or(fault(level, FaultReason::BadPhysical))?;
                    return Ok((pa, size, pte.attrs(), level));
                }
                Decoded::Table => {
                    table = phys(pte).ok_or(fault(level, FaultReason::TableUnreadable))?;
                    level = level
                        .checked_sub(1)
                        .ok_or(fault(level, FaultReason::Reserved))?;
                }
            }
        }
    }

    /// Translates the page holding `va`: physical address of `va` and bytes left in its page.
    pub fn translate_page(
        &self,
        mem: &Memory,
        root: u64,
        va: GpuVa,
        access: Access,
        who: Privilege,
    ) -> Result<(PhysAddr, u64), Fault> {
        let va = va.get();
        self.translate_leaf(mem, root, va, access, who)
            .map(|(pa, left, _)| (pa, left))
    }

    /// What the tables under `root` say about `va` now, walked without any TLB (an OS-side
    /// oracle comparing page tables with its own records: the same walk and faults as
    /// [`Self::translate_page`] for a kernel read, without the TLB's lock and upkeep).
    /// Returns the physical address of `va` and the size of the page that maps it (4 KiB, or
    /// 2 MiB for a large page).
    pub fn walk_now(mem: &Memory, root: u64, va: GpuVa) -> Result<(PhysAddr, u64), Fault> {
        let va = va.get();
        let access = Access::Read;
        canonical(va, access)?;
        let (base, size, _, level) = Self::walk(mem, root, va, access)?;
        let pa = base.checked_add(va & (size - 1)).ok_or(Fault {
            va,
            access,
            level,
            reason: FaultReason::BadPhysical,
        })?;
        Ok((pa, size))
    }

    /// Translates the 8-byte word at `va` (8-aligned, so it never crosses a page): its
    /// physical address and the level of the leaf entry that mapped it. Whether the physical
    /// word exists is the caller's check (the access itself fails); report that as
    /// [`FaultReason::BadPhysical`] at the returned level.
    pub fn translate_word(
        &self,
        mem: &Memory,
        root: u64,
        va: GpuVa,
        access: Access,
        who: Privilege,
    ) -> Result<(PhysAddr, u8), Fault> {
        let va = va.get();
        self.translate_leaf(mem, root, va, access, who)
            .map(|(pa, _, level)| (pa, level))
    }

    /// [`Self::translate_page`] plus the level of the leaf entry.
    fn translate_leaf(
        &self,
        mem: &Memory,
        root: u64,
        va: u64,
        access: Access,
        who: Privilege,
    ) -> Result<(PhysAddr, u64, u8), Fault> {
        canonical(va, access)?;
        let (entry, size) = match self.lookup(root, va) {
            Some(hit) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                hit
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                let generation = self.generation.load(Ordering::Acquire);
                let (pa, size, attrs, level) = Self::walk(mem, root, va, access)?;
                let e = TlbEntry { pa, attrs, level };
                self.insert(generation, root, va & !(size - 1), size, e);
                (e, size)
            }
        };
        let fault = |reason| Fault {
            va,
            access,
            level: entry.level,
            reason,
        };
        if who == Privilege::User && !entry.attrs.user {
            return Err(fault(FaultReason::Privileged));
        }
        match access {
            Access::Write if !entry.attrs.writable => return Err(fault(FaultReason::ReadOnly)),
            Access::Execute if entry.attrs.no_execute => return Err(fault(FaultReason::NoExecute)),
            _ => {}
        }
        let offset = va & (size - 1);
        let pa = entry
            .pa
            .checked_add(offset)
            .ok_or(fault(FaultReason::BadPhysical))?;
        Ok((pa, size - offset, entry.level))
    }

    /// Translates `[va, va + len)` page by page. Every page is checked before anything is
    /// returned, so a caller that translates first and accesses after never touches memory
    /// for an access that faults anywhere. Physical pages that are not memory fault with
    /// [`FaultReason::BadPhysical`] at the leaf's level.
    pub fn translate(
        &self,
        mem: &Memory,
        root: u64,
        va: GpuVa,
        len: u64,
        access: Access,
        who: Privilege,
    ) -> Result<Vec<Chunk>, Fault> {
        let va = va.get();
        let end = va
            .checked_add(len)
            .filter(|&e| len > 0 && e <= 1 << mmu::VA_BITS);
        let Some(end) = end else {
            return Err(Fault {
                va,
                access,
                level: mmu::ROOT_LEVEL,
                reason: FaultReason::NonCanonical,
            });
        };
        let mut out: Vec<Chunk> = Vec::new();
        let mut cur = va;
        while cur < end {
            let (pa, left, level) = self.translate_leaf(mem, root, cur, access, who)?;
            let n = left.min(end - cur);
            // The words this piece touches (byte accesses read-modify-write whole words).
            let first = pa.get() - pa.get() % 8;
            let words_end = pa
                .get()
                .checked_add(n)
                .and_then(|e| e.checked_next_multiple_of(8));
            let mapped = words_end.is_some_and(|e| mem.is_mapped(PhysAddr::new(first), e - first));
            if !mapped {
                return Err(Fault {
                    va: cur,
                    access,
                    level,
                    reason: FaultReason::BadPhysical,
                });
            }
            match out.last_mut() {
                Some(last) if last.pa.checked_add(last.len) == Some(pa) => last.len += n,
                _ => out.push(Chunk { pa, len: n }),
            }
            cur += n;
        }
        Ok(out)
    }

    /// Writes `data` at `va` (8-byte granular: `va` and the length 8-aligned), or faults
    /// without writing anything.
    pub fn write_bytes(
        &self,
        mem: &Memory,
        root: u64,
        va: GpuVa,
        data: &[u8],
        who: Privilege,
    ) -> Result<(), Fault> {
        let chunks = self.translate(mem, root, va, data.len() as u64, Access::Write, who)?;
        each_piece(va.get(), Access::Write, chunks, |pa, at| {
            mem.write_bytes(pa, data.get(at).unwrap_or(&[]))
        })
    }

    /// Reads `out.len()` bytes at `va`, or faults.
    pub fn read_bytes(
        &self,
        mem: &Memory,
        root: u64,
        va: GpuVa,
        out: &mut [u8],
        who: Privilege,
    ) -> Result<(), Fault> {
        let chunks = self.translate(mem, root, va, out.len() as u64, Access::Read, who)?;
        each_piece(va.get(), Access::Read, chunks, |pa, at| {
            mem.read_bytes(pa, out.get_mut(at).unwrap_or(&mut []))
        })
    }
}

/// Hands each piece of a translated access (`chunks`, from [`Mmu::translate`] of `va`) to
/// `piece` as its physical address and its byte range within the caller's buffer.
/// Translation checked every page is memory; a piece `piece` still fails on was freed
/// meanwhile, which is reported as the translation would have (`BadPhysical`).
fn each_piece(
    va: u64,
    access: Access,
    chunks: Vec<Chunk>,
    mut piece: impl FnMut(PhysAddr, std::ops::Range<usize>) -> Option<()>,
) -> Result<(), Fault> {
    let mut off = 0usize;
    for c in chunks {
        let n = usize::try_from(c.len).unwrap_or(usize::MAX);
        let end = off.saturating_add(n);
        piece(c.pa, off..end).ok_or(Fault {
            va: va.saturating_add(off as u64),
            access,
            level: 0,
            reason: FaultReason::BadPhysical,
        })?;
        off = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk that began before an invalidation must not cache its (possibly stale) result.
    #[test]
    fn insert_after_invalidation_is_dropped() {
        let mmu = Mmu::new();
        let e = TlbEntry {
            pa: PhysAddr::new(0x1000),
            attrs: PageAttrs::default(),
            level: 0,
        };
        let g = mmu.generation.load(Ordering::Acquire);
        mmu.invalidate(0x5000);
        mmu.insert(g, 0x5000, 0, mmu::PAGE_4K, e);
        assert_eq!(mmu.tlb_len(), 0);
        let g = mmu.generation.load(Ordering::Acquire);
        mmu.insert(g, 0x5000, 0, mmu::PAGE_4K, e);
        assert_eq!(mmu.tlb_len(), 1);
    }

    #[test]
    fn tlb_is_bounded() {
        let mmu = Mmu::new();
        let e = TlbEntry {
            pa: PhysAddr::NULL,
            attrs: PageAttrs::default(),
            level: 0,
        };
        for i in 0..(TLB_CAPACITY as u64 * 2) {
            mmu.insert(0, 0x5000, i * mmu::PAGE_4K, mmu::PAGE_4K, e);
        }
        assert!(mmu.tlb_len() <= TLB_CAPACITY);
    }
}
