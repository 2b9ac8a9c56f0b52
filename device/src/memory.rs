//! The machine's physical memory, shared by the CPU side (simulated OS, driver, UMD) and the
//! device.
//!
//! Every location is an [`AtomicU64`]: the device only makes aligned 8-byte accesses
//! (`rvgpu_hw::addr::ACCESS_ALIGN`), and 64-bit values must be single-copy atomic for CPU and
//! GPU alike (NF-01). Backing memory with atomics makes the concurrency real and data-race
//! free: the CPU side and the device thread access the same words with the orderings they
//! choose, exactly as a driver does with `InterlockedXxx` against a DMA engine.
//!
//! Two kinds of memory:
//! - **System RAM**: allocations handed out by [`Memory::alloc_system`] at page-aligned bus
//!   addresses in `[SYSMEM_START, SYSMEM_LIMIT)`. Address 0 is never valid. Consecutive
//!   allocations are separated by an unmapped guard page, so an access that runs off the end
//!   of an allocation fails instead of silently touching a neighbour. Freed ranges are reused,
//!   but only after the allocator has gone round the whole range since (next fit): churn never
//!   runs the bus out of addresses, and a stale address stays unmapped as long as
//!   it can. Whoever frees memory the device may reach must first make sure it no longer can
//!   (unmapped from the GPU's page tables and the TLB flushed, or the engine idle or reset).
//! - **VRAM**: `vram_size` bytes at GPU address [`VRAM_BASE`], also CPU-visible (BAR4).
//!
//! An access names a [`PhysAddr`] (system RAM at its bus address, VRAM at [`VRAM_BASE`] plus
//! the offset); what puts system RAM on the bus or takes it off names a [`BusAddr`].
//!
//! Where the words live is a seam ([`RamBacking`]): in-process memory allocated here, or memory
//! another process shares with this one (a VM's guest RAM or a memfd VRAM that a vfio-user
//! client maps, `device/vfu`). [`Memory::map_system`] puts external RAM on the bus at a given
//! address; [`Memory::with_vram`] takes external VRAM. The device cannot tell the two apart.
//!
//! A third kind of system RAM is for an OS that runs where the device is a real PCI function
//! (a Linux guest): [`Memory::with_pool`] carves every `alloc_system` out of one
//! range of physical memory the guest kernel left alone (`memmap=`), at its real addresses, so
//! the bus address the driver programs is the physical address the device reaches.
//!
//! Whether the *device* may touch a system address (the SYSWIN allow-list) is the device's
//! check, not this module's: `Memory` is the bus, not the IOMMU.
//!
//! CPU pointers: [`SysAlloc::cpu_ptr`] and [`Memory::vram_cpu_ptr`] give raw pointers to the
//! atomic words. Contract for users who dereference them (the code here never does): the
//! pointer is valid for `len` bytes while the `SysAlloc` (or a clone of it) is alive,
//! respectively while the `Memory` is alive; every access through it must be an atomic access
//! to an aligned 8-byte word (`AtomicU64::from_ptr` or equivalent), because the device accesses
//! the same words concurrently. Freeing an allocation removes it from the GPU's view at once;
//! its backing stays alive until the last handle goes, so a late device access to a freed
//! address fails cleanly (unmapped, until the allocator comes round to it again) and a late CPU
//! access is still memory-safe.

use std::collections::{BTreeMap, HashMap};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use rvgpu_hw::addr::{BusAddr, PhysAddr, SYSMEM_LIMIT, VRAM_BASE};
use rvgpu_hw::PAGE_SIZE;

mod sysmap;
use sysmap::{next_fit, overlaps, SysMap};

/// First bus address handed out for system RAM (keeps 0 and low addresses invalid).
pub const SYSMEM_START: u64 = 0x1000_0000;

/// Memory this process does not own as Rust data but may access as atomic 64-bit words:
/// typically a shared mapping another process (a VM) also writes. The slice must stay the
/// same (address and length) and valid for as long as the object lives; the `Memory` keeps
/// the object alive while any access is in progress, so unmapping it from the bus never
/// invalidates an access already under way.
pub trait RamBacking: Send + Sync {
    /// The region as atomic words (length = bytes / 8).
    fn words(&self) -> &[AtomicU64];
}

/// Word-granular backing store of one in-process region.
type OwnedWords = Arc<[AtomicU64]>;

/// Backing store of one region: allocated here, or shared from elsewhere ([`RamBacking`]).
/// In-process words are kept inline (no dynamic call on the hot path).
#[derive(Clone)]
enum Words {
    Owned(OwnedWords),
    Mapped(Arc<dyn RamBacking>),
}

impl Words {
    #[inline]
    fn get(&self) -> &[AtomicU64] {
        match self {
            Words::Owned(w) => w,
            Words::Mapped(m) => m.words(),
        }
    }

    fn bytes(&self) -> u64 {
        (self.get().len() as u64).saturating_mul(8)
    }
}

fn zeroed_words(bytes: u64) -> Option<OwnedWords> {
    let n = usize::try_from(bytes / 8).ok()?;
    // Zeroed by the allocator (calloc: fresh pages from the kernel are not written again),
    // instead of storing every word; a machine's VRAM is hundreds of megabytes.
    let words = Arc::<[AtomicU64]>::new_zeroed_slice(n);
    // SAFETY: every element is all-zero bytes, which is a valid `AtomicU64` (value 0).
    Some(unsafe { words.assume_init() })
}

/// A system-RAM allocation: where the device sees it (`bus_addr`) and how the CPU reaches it.
#[derive(Clone)]
pub struct SysAlloc {
    /// Bus (= GPU, version 1 has no page tables) address of byte 0; page aligned, never 0.
    pub bus_addr: u64,
    /// Length in bytes (the request rounded up to whole pages).
    pub len: u64,
    /// The words, resolved once: CPU stores through an allocation are the UMD's and the
    /// driver's hot path, so they do not go through the backing's kind on every access.
    base: NonNull<AtomicU64>,
    n: usize,
    /// Keeps `base..base + n` alive.
    _backing: Words,
}

// SAFETY: `base`/`n` only cache the slice of `backing`, which is `Send + Sync` (atomic words
// behind `Arc`s) and kept alive by this value; the cache adds no thread affinity.
unsafe impl Send for SysAlloc {}
// SAFETY: as above; shared access is to atomic words only.
unsafe impl Sync for SysAlloc {}

impl std::fmt::Debug for SysAlloc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SysAlloc")
            .field("bus_addr", &format_args!("{:#x}", self.bus_addr))
            .field("len", &self.len)
            .finish()
    }
}

impl SysAlloc {
    fn new(bus_addr: u64, len: u64, backing: Words) -> Self {
        let w = backing.get();
        Self {
            bus_addr,
            len,
            base: NonNull::from(w).cast::<AtomicU64>(),
            n: w.len(),
            _backing: backing,
        }
    }

    /// The allocation as atomic words (safe CPU-side access).
    #[inline]
    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: `base` and `n` are the slice `backing.get()` returned, and a backing's words
        // stay at the same address and length while it lives (`RamBacking`'s contract; an
        // `Arc<[_]>` never moves); `self._backing` keeps it alive for the borrow of `self`.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.n) }
    }

    /// Raw pointer to word 0, for code that works with raw pointers like a kernel driver.
    /// See the module docs for the contract; the pointer's provenance covers all `len` bytes.
    pub fn cpu_ptr(&self) -> NonNull<AtomicU64> {
        NonNull::from(self.words()).cast::<AtomicU64>()
    }

    /// Same pointer as `*mut u64` (what `AtomicU64::from_ptr` takes).
    pub fn as_mut_ptr(&self) -> *mut u64 {
        self.cpu_ptr().as_ptr().cast::<u64>()
    }

    /// The word at byte offset `off` (8-byte aligned, inside the allocation).
    pub fn word(&self, off: u64) -> Option<&AtomicU64> {
        if !off.is_multiple_of(8) {
            return None;
        }
        self.words().get(usize::try_from(off / 8).ok()?)
    }
}

/// One allocation carved out of a pool ([`Memory::with_pool`]): `len` words of the pool's
/// backing from word `start`.
struct Carved {
    pool: Arc<dyn RamBacking>,
    start: usize,
    len: usize,
}

impl RamBacking for Carved {
    fn words(&self) -> &[AtomicU64] {
        self.pool
            .words()
            .get(self.start..self.start.saturating_add(self.len))
            .unwrap_or(&[])
    }
}

/// Physical memory that system-RAM allocations are carved from, at its own bus addresses.
struct Pool {
    base: u64,
    end: u64,
    backing: Arc<dyn RamBacking>,
}

/// A resolved, bounds-checked run of words (keeps its region alive while used).
pub(crate) struct Span {
    words: Words,
    start: usize,
    len: usize,
}

impl Span {
    pub(crate) fn as_slice(&self) -> &[AtomicU64] {
        // Bounds were checked when the span was built; `get` keeps that a non-panicking fact.
        self.words
            .get()
            .get(self.start..self.start.saturating_add(self.len))
            .unwrap_or(&[])
    }
}

/// Default cap on live system-RAM allocations of one [`Memory`] ([`Memory::set_system_cap`]).
pub const DEFAULT_SYSTEM_CAP: u64 = 1 << 30;

/// The machine's system RAM: one per machine, shared by every device on its bus.
struct SystemRam {
    map: RwLock<SysMap>,
    /// Most bytes of system RAM live at once (what the simulated machine has to give).
    cap: AtomicU64,
    /// Bytes of system RAM currently allocated (not freed).
    used: AtomicU64,
    /// Where allocations come from when they are not this process's memory
    /// ([`Memory::with_pool`]).
    pool: Option<Pool>,
    /// The bus range allocations are placed in: `[SYSMEM_START, SYSMEM_LIMIT)`, or the pool's.
    window: (u64, u64),
    /// [`Memory::set_freed_first`]: allocations take the lowest fitting gap, so a freed range
    /// is handed out again at once.
    freed_first: AtomicBool,
}

/// Physical memory as one device sees it: the machine's system RAM plus the device's own
/// VRAM. Two devices of one machine share system RAM ([`Memory::sibling`]) but never VRAM:
/// each board has its own. `Send + Sync`; share it with `Arc`.
pub struct Memory {
    sys: Arc<SystemRam>,
    vram: Words,
    vram_size: u64,
}

/// `words` cut down to whole pages (what VRAM is made of).
fn whole_pages(words: &[AtomicU64]) -> u64 {
    let bytes = (words.len() as u64).saturating_mul(8);
    bytes - bytes % PAGE_SIZE
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("vram_size", &self.vram_size)
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// Memory with `vram_size` bytes of VRAM (rounded down to a whole page) and no system
    /// allocations yet.
    pub fn new(vram_size: u64) -> Arc<Self> {
        Self::with_system(Self::new_system(), vram_size)
    }

    /// Memory whose VRAM is `vram` (its whole pages), for a device whose VRAM must also be
    /// reachable by another process (a vfio-user client maps the same memfd as BAR4). No
    /// system allocations yet.
    pub fn with_vram(vram: Arc<dyn RamBacking>) -> Arc<Self> {
        let vram_size = whole_pages(vram.words());
        Arc::new(Self {
            sys: Self::new_system(),
            vram: Words::Mapped(vram),
            vram_size,
        })
    }

    fn new_system() -> Arc<SystemRam> {
        Self::new_system_in(SYSMEM_LIMIT)
    }

    /// System RAM whose allocations are placed below `limit` (tests: a small window shows what
    /// the full one would only after a terabyte of churn).
    fn new_system_in(limit: u64) -> Arc<SystemRam> {
        Arc::new(SystemRam {
            map: RwLock::new(SysMap {
                regions: BTreeMap::new(),
                pages: HashMap::default(),
                chunks: HashMap::default(),
                next: SYSMEM_START,
            }),
            cap: AtomicU64::new(DEFAULT_SYSTEM_CAP),
            used: AtomicU64::new(0),
            pool: None,
            window: (SYSMEM_START, limit.clamp(SYSMEM_START, SYSMEM_LIMIT)),
            freed_first: AtomicBool::new(false),
        })
    }

    /// Memory for an OS whose device is elsewhere (a PCI function seen by a Linux guest,
    /// the PCI board): VRAM is `vram` (the mapped BAR4), and every [`Memory::alloc_system`] is
    /// carved from `pool`, physical memory at bus address `pool_base` (memory the guest kernel
    /// was told to leave alone, mapped from `/dev/mem`: bus address = physical address).
    /// `None` if `pool_base` is 0 or not page aligned, the pool is empty or not whole pages, or
    /// it passes `SYSMEM_LIMIT`. Freed ranges are reused only after the allocator has gone
    /// round the whole pool once, so a stale address keeps failing for as long as possible.
    pub fn with_pool(
        vram: Arc<dyn RamBacking>,
        pool_base: u64,
        pool: Arc<dyn RamBacking>,
    ) -> Option<Arc<Self>> {
        let len = (pool.words().len() as u64).checked_mul(8)?;
        let end = pool_base.checked_add(len)?;
        if pool_base == 0
            || !pool_base.is_multiple_of(PAGE_SIZE)
            || len == 0
            || !len.is_multiple_of(PAGE_SIZE)
            || end > SYSMEM_LIMIT
        {
            return None;
        }
        let vram_size = whole_pages(vram.words());
        Some(Arc::new(Self {
            sys: Arc::new(SystemRam {
                map: RwLock::new(SysMap {
                    regions: BTreeMap::new(),
                    pages: HashMap::default(),
                    chunks: HashMap::default(),
                    next: pool_base,
                }),
                cap: AtomicU64::new(DEFAULT_SYSTEM_CAP),
                used: AtomicU64::new(0),
                pool: Some(Pool {
                    base: pool_base,
                    end,
                    backing: pool,
                }),
                window: (pool_base, end),
                freed_first: AtomicBool::new(false),
            }),
            vram: Words::Mapped(vram),
            vram_size,
        }))
    }

    /// Whether system RAM is carved from a pool ([`Memory::with_pool`]).
    pub fn is_pooled(&self) -> bool {
        self.sys.pool.is_some()
    }

    /// Another device's view of the same machine: this memory's system RAM and a VRAM of
    /// its own, `vram_size` bytes (rounded down to a whole page).
    pub fn sibling(&self, vram_size: u64) -> Arc<Self> {
        Self::with_system(Arc::clone(&self.sys), vram_size)
    }

    /// Another device's view of the same machine whose VRAM is `vram` (its whole pages): a
    /// second PCI function's mapped BAR4 beside the first's, over one system RAM.
    pub fn sibling_with_vram(&self, vram: Arc<dyn RamBacking>) -> Arc<Self> {
        let vram_size = whole_pages(vram.words());
        Arc::new(Self {
            sys: Arc::clone(&self.sys),
            vram: Words::Mapped(vram),
            vram_size,
        })
    }

    fn with_system(sys: Arc<SystemRam>, vram_size: u64) -> Arc<Self> {
        let vram_size = vram_size - vram_size % PAGE_SIZE;
        let vram = zeroed_words(vram_size).unwrap_or_else(|| Arc::from(Vec::new()));
        let vram_size = (vram.len() as u64).saturating_mul(8);
        Arc::new(Self {
            sys,
            vram: Words::Owned(vram),
            vram_size,
        })
    }

    /// Bytes of VRAM.
    pub fn vram_size(&self) -> u64 {
        self.vram_size
    }

    /// VRAM as atomic words (BAR4, safe access).
    pub fn vram_words(&self) -> &[AtomicU64] {
        let w = self.vram.get();
        w.get(..usize::try_from(self.vram_size / 8).unwrap_or(0))
            .unwrap_or(w)
    }

    /// Raw CPU pointer to VRAM byte 0 (BAR4 mapping). Valid while this `Memory` lives; see the
    /// module docs. `None` if there is no VRAM.
    pub fn vram_cpu_ptr(&self) -> Option<NonNull<AtomicU64>> {
        let w = self.vram_words();
        if w.is_empty() {
            return None;
        }
        Some(NonNull::from(w).cast::<AtomicU64>())
    }

    fn sys_read(&self) -> std::sync::RwLockReadGuard<'_, SysMap> {
        // A panic while holding the lock cannot leave the map inconsistent (every mutation is
        // a single insert/remove), so a poisoned lock is still usable.
        self.sys.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn sys_write(&self) -> std::sync::RwLockWriteGuard<'_, SysMap> {
        self.sys.map.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the most bytes of system RAM that may be allocated at once (default
    /// [`DEFAULT_SYSTEM_CAP`]). Allocations beyond it fail, as on a machine out of memory.
    pub fn set_system_cap(&self, bytes: u64) {
        self.sys.cap.store(bytes, Ordering::Relaxed);
    }

    /// Reuse policy: with `on`, each allocation takes the lowest gap that fits, so freed pages
    /// are handed out again first, as Windows' memory manager reuses a freed physical page at
    /// once; off (the default), next fit (module documentation). The policy under which a
    /// stale device access lands in another owner's memory soonest.
    pub fn set_freed_first(&self, on: bool) {
        self.sys.freed_first.store(on, Ordering::Relaxed);
    }

    /// Bytes of system RAM currently allocated.
    pub fn system_used(&self) -> u64 {
        self.sys.used.load(Ordering::Relaxed)
    }

    /// Bytes of system RAM that may still be allocated: the cap less what is in use.
    pub fn system_free(&self) -> u64 {
        self.sys
            .cap
            .load(Ordering::Relaxed)
            .saturating_sub(self.system_used())
    }

    /// Allocates `bytes` of zeroed system RAM aligned to `align` (a power of two; at least a
    /// page is used). `None` if `bytes` is 0, `align` is not a power of two, the bus address
    /// space below `SYSMEM_LIMIT` is exhausted, or the allocation would exceed the system cap.
    /// Every bound is checked before any host memory is allocated.
    pub fn alloc_system(&self, bytes: u64, align: u64) -> Option<SysAlloc> {
        if bytes == 0 || !align.is_power_of_two() {
            return None;
        }
        let align = align.max(PAGE_SIZE);
        let len = bytes.checked_next_multiple_of(PAGE_SIZE)?;
        let (base, limit) = self.sys.window;
        if len > limit.saturating_sub(base) {
            return None;
        }
        let mut map = self.sys_write();
        // Reserve against the cap (under the map lock, so concurrent allocations cannot both
        // pass the check).
        let used = self.sys.used.load(Ordering::Relaxed);
        let total = used.checked_add(len)?;
        if total > self.sys.cap.load(Ordering::Relaxed) {
            return None;
        }
        let cursor = if self.sys.freed_first.load(Ordering::Relaxed) {
            base
        } else {
            map.next
        };
        let bus_addr = next_fit(&map.regions, cursor, (base, limit), len, align)?;
        let words = match &self.sys.pool {
            Some(pool) => {
                let start = usize::try_from((bus_addr - pool.base) / 8).ok()?;
                let n = usize::try_from(len / 8).ok()?;
                let carved = Carved {
                    pool: Arc::clone(&pool.backing),
                    start,
                    len: n,
                };
                if carved.words().len() != n {
                    return None;
                }
                // Fresh allocations are zeroed, as Windows' are (the pool holds whatever ran
                // before).
                for w in carved.words() {
                    w.store(0, Ordering::Relaxed);
                }
                Words::Mapped(Arc::new(carved))
            }
            None => Words::Owned(zeroed_words(len)?),
        };
        self.sys.used.store(total, Ordering::Relaxed);
        map.next = bus_addr.checked_add(len)?.checked_add(PAGE_SIZE)?;
        map.insert_allocation(bus_addr, words.clone());
        Some(SysAlloc::new(bus_addr, len, words))
    }

    /// Whether the region at `bus_addr` is an allocation (not RAM put on the bus by
    /// [`Memory::map_system`]).
    fn is_allocation(&self, bus_addr: u64, w: &Words) -> bool {
        match w {
            Words::Owned(_) => true,
            Words::Mapped(_) => self
                .sys
                .pool
                .as_ref()
                .is_some_and(|p| bus_addr >= p.base && bus_addr < p.end),
        }
    }

    /// Removes the allocation starting at `bus_addr` from the bus. Returns false if there is
    /// none. CPU handles stay valid (memory-safe) until dropped; the device can no longer
    /// reach the range.
    pub fn free_system(&self, bus_addr: BusAddr) -> bool {
        let bus_addr = bus_addr.get();
        let mut map = self.sys_write();
        if !map
            .regions
            .get(&bus_addr)
            .is_some_and(|w| self.is_allocation(bus_addr, w))
        {
            return false;
        }
        let Some(words) = map.remove_allocation(bus_addr) else {
            return false;
        };
        let used = self.sys.used.load(Ordering::Relaxed);
        self.sys
            .used
            .store(used.saturating_sub(words.bytes()), Ordering::Relaxed);
        true
    }

    /// Puts system RAM that lives elsewhere (`backing`, e.g. a VM's guest RAM shared with
    /// this process) on the bus at `bus_addr`, for its whole length. It does not count
    /// against the system cap (this machine did not allocate it). Returns false, mapping
    /// nothing, if `bus_addr` is not page aligned, the backing is empty or not whole pages,
    /// the range passes `SYSMEM_LIMIT`, or it overlaps a region already on the bus.
    pub fn map_system(&self, bus_addr: BusAddr, backing: Arc<dyn RamBacking>) -> bool {
        let bus_addr = bus_addr.get();
        let len = (backing.words().len() as u64).saturating_mul(8);
        if len == 0 || !bus_addr.is_multiple_of(PAGE_SIZE) || !len.is_multiple_of(PAGE_SIZE) {
            return false;
        }
        let Some(end) = bus_addr.checked_add(len) else {
            return false;
        };
        if end > SYSMEM_LIMIT {
            return false;
        }
        // The pool is the allocator's alone.
        if let Some(p) = &self.sys.pool {
            if bus_addr < p.end && end > p.base {
                return false;
            }
        }
        let mut map = self.sys_write();
        if overlaps(&map.regions, bus_addr, end) {
            return false;
        }
        map.regions.insert(bus_addr, Words::Mapped(backing));
        true
    }

    /// Takes RAM put on the bus by [`Memory::map_system`] at `bus_addr` off it again. The
    /// backing is dropped once no access holds it any more. Returns false if no mapped
    /// region starts there (an allocation from `alloc_system` is not removed).
    pub fn unmap_system(&self, bus_addr: BusAddr) -> bool {
        let bus_addr = bus_addr.get();
        let mut map = self.sys_write();
        if !map
            .regions
            .get(&bus_addr)
            .is_some_and(|w| matches!(w, Words::Mapped(_)) && !self.is_allocation(bus_addr, w))
        {
            return false;
        }
        map.regions.remove(&bus_addr).is_some()
    }

    /// Bus address and length of every region mapped with [`Memory::map_system`].
    pub fn mapped_system(&self) -> Vec<(u64, u64)> {
        self.sys_read()
            .regions
            .iter()
            .filter(|(&a, w)| matches!(w, Words::Mapped(_)) && !self.is_allocation(a, w))
            .map(|(&a, w)| (a, w.bytes()))
            .collect()
    }

    /// Resolves `[addr, addr + bytes)` (8-aligned, non-empty, inside one region) to a span.
    pub(crate) fn span(&self, addr: PhysAddr, bytes: u64) -> Option<Span> {
        let addr = addr.get();
        if !addr.is_multiple_of(8) || !bytes.is_multiple_of(8) || bytes == 0 {
            return None;
        }
        let end = addr.checked_add(bytes)?;
        let len = usize::try_from(bytes / 8).ok()?;
        if addr >= VRAM_BASE {
            if end > VRAM_BASE.checked_add(self.vram_size)? {
                return None;
            }
            let start = usize::try_from((addr - VRAM_BASE) / 8).ok()?;
            return Some(Span {
                words: self.vram.clone(),
                start,
                len,
            });
        }
        let map = self.sys_read();
        let (base, words) = map.region_of(addr)?;
        let region_end = base.checked_add(words.bytes())?;
        if end > region_end {
            return None;
        }
        let start = usize::try_from((addr - base) / 8).ok()?;
        Some(Span {
            words: words.clone(),
            start,
            len,
        })
    }

    /// Runs `f` on the word at `addr` (8-aligned, mapped). The lookup lock is held only for
    /// the duration of `f`, which must not call back into `Memory`.
    fn with_word<R>(&self, addr: PhysAddr, f: impl FnOnce(&AtomicU64) -> R) -> Option<R> {
        let addr = addr.get();
        if !addr.is_multiple_of(8) {
            return None;
        }
        if addr >= VRAM_BASE {
            let idx = usize::try_from(addr.checked_sub(VRAM_BASE)? / 8).ok()?;
            return self.vram_words().get(idx).map(f);
        }
        let map = self.sys_read();
        let (base, words) = map.region_of(addr)?;
        let idx = usize::try_from(addr.checked_sub(base)? / 8).ok()?;
        words.get().get(idx).map(f)
    }

    /// True if `[addr, addr + bytes)` is mapped, 8-aligned and inside one region.
    pub fn is_mapped(&self, addr: PhysAddr, bytes: u64) -> bool {
        self.span(addr, bytes).is_some()
    }

    /// Atomic load with `order`.
    pub fn load(&self, addr: PhysAddr, order: Ordering) -> Option<u64> {
        self.with_word(addr, |w| w.load(order))
    }

    /// Atomic store with `order`.
    pub fn store(&self, addr: PhysAddr, value: u64, order: Ordering) -> Option<()> {
        self.with_word(addr, |w| w.store(value, order))
    }

    /// Atomic `fetch_max`; returns the previous value.
    pub fn fetch_max(&self, addr: PhysAddr, value: u64, order: Ordering) -> Option<u64> {
        self.with_word(addr, |w| w.fetch_max(value, order))
    }

    /// Atomic `fetch_add` (wrapping); returns the previous value.
    pub fn fetch_add(&self, addr: PhysAddr, value: u64, order: Ordering) -> Option<u64> {
        self.with_word(addr, |w| w.fetch_add(value, order))
    }

    /// Atomic compare-exchange; `Some(Ok(prev))` on success, `Some(Err(actual))` on mismatch.
    pub fn compare_exchange(
        &self,
        addr: PhysAddr,
        current: u64,
        new: u64,
        order: Ordering,
    ) -> Option<Result<u64, u64>> {
        let failure = match order {
            Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
            Ordering::AcqRel | Ordering::Acquire => Ordering::Acquire,
            _ => Ordering::SeqCst,
        };
        self.with_word(addr, |w| w.compare_exchange(current, new, order, failure))
    }

    /// Acquire load: what a reader of data published by the other side uses.
    pub fn read_u64(&self, addr: PhysAddr) -> Option<u64> {
        self.load(addr, Ordering::Acquire)
    }

    /// Release store: publishes everything the writer did before.
    pub fn write_u64(&self, addr: PhysAddr, value: u64) -> Option<()> {
        self.store(addr, value, Ordering::Release)
    }

    /// Reads `n` words starting at `addr` (each word atomically, Acquire; the run as a whole
    /// is not a snapshot).
    pub fn read_words(&self, addr: PhysAddr, n: usize) -> Option<Vec<u64>> {
        let bytes = u64::try_from(n).ok()?.checked_mul(8)?;
        if n == 0 {
            return Some(Vec::new());
        }
        let span = self.span(addr, bytes)?;
        Some(
            span.as_slice()
                .iter()
                .map(|w| w.load(Ordering::Acquire))
                .collect(),
        )
    }

    /// Writes `words` starting at `addr` (each word atomically, Release). All or nothing: the
    /// range is checked first.
    pub fn write_words(&self, addr: PhysAddr, words: &[u64]) -> Option<()> {
        if words.is_empty() {
            return Some(());
        }
        let bytes = u64::try_from(words.len()).ok()?.checked_mul(8)?;
        let span = self.span(addr, bytes)?;
        for (d, s) in span.as_slice().iter().zip(words) {
            d.store(*s, Ordering::Release);
        }
        Some(())
    }

    /// Writes arbitrary bytes at any alignment (read-modify-write of the covering words with
    /// compare-exchange, so concurrent writers of *other* bytes of a word are not lost).
    pub fn write_bytes(&self, addr: PhysAddr, data: &[u8]) -> Option<()> {
        self.each_covering_word(addr, data.len(), |w, index| {
            // Update only the bytes of this word that fall inside the range.
            let _ = w.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                let mut b = old.to_le_bytes();
                for (byte, i) in b.iter_mut().zip(index) {
                    if let Some(v) = i.and_then(|i| data.get(i)) {
                        *byte = *v;
                    }
                }
                Some(u64::from_le_bytes(b))
            });
        })
    }

    /// Reads arbitrary bytes at any alignment.
    pub fn read_bytes(&self, addr: PhysAddr, out: &mut [u8]) -> Option<()> {
        self.each_covering_word(addr, out.len(), |w, index| {
            let b = w.load(Ordering::Acquire).to_le_bytes();
            for (byte, i) in b.iter().zip(index) {
                if let Some(o) = i.and_then(|i| out.get_mut(i)) {
                    *o = *byte;
                }
            }
        })
    }

    /// Calls `each` with every word covering the `len` bytes at `addr`, and for each of the
    /// word's bytes (in address order) its index in the range, `None` for a byte outside it.
    /// `None` (and no call) when the covering words are not all memory.
    fn each_covering_word(
        &self,
        addr: PhysAddr,
        len: usize,
        mut each: impl FnMut(&AtomicU64, [Option<usize>; 8]),
    ) -> Option<()> {
        if len == 0 {
            return Some(());
        }
        let len = u64::try_from(len).ok()?;
        let addr = addr.get();
        let first = addr - addr % 8;
        let end = addr.checked_add(len)?.checked_next_multiple_of(8)?;
        let span = self.span(PhysAddr::new(first), end - first)?;
        for (i, w) in span.as_slice().iter().enumerate() {
            let word_addr = first + (i as u64) * 8;
            let index = std::array::from_fn(|k| {
                let a = word_addr + k as u64;
                (a >= addr && a - addr < len).then(|| (a - addr) as usize)
            });
            each(w, index);
        }
        Some(())
    }
}

#[cfg(test)]
mod tests;
