//! Fallible heap allocation: the only place the driver allocates.
//!
//! On Windows the global allocator is the non-paged pool, which returns NULL when it is
//! exhausted; the `alloc` crate's infallible APIs (`Box::new`, `Vec::push`, `BTreeMap::insert`,
//! `collect`...) turn that NULL into the alloc-error handler, i.e. a bug check. Every DDI that
//! can allocate therefore allocates only through this module, which reports failure as
//! [`NoMemory`] so the DDI can return STATUS_NO_MEMORY (or STATUS_INSUFFICIENT_RESOURCES at
//! adapter start) with nothing changed. `driver/kmd/clippy.toml` forbids the infallible APIs
//! everywhere else.
//!
//! Each primitive asks [`Platform::pool_allocation_permitted`] once per real allocation (not
//! when the memory is already there), which lets the simulated OS model Driver Verifier's
//! low-resources simulation (docs/robustness.md).
//!
//! Rules for callers: reserve everything a DDI needs before changing any state, so a failure
//! leaves the adapter as it was (e.g. [`SortedMap::try_reserve`] on every map an object goes
//! into, then the infallible-by-construction [`SortedMap::insert_reserved`]).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)] // the fallible wrappers themselves

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};

use crate::platform::Platform;
use crate::status::{self, Status};

/// A pool allocation failed (or the platform refused it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory;

impl From<NoMemory> for Status {
    /// The code the object-creation DDI pages document for "could not allocate memory"
    /// (DxgkDdiCreateDevice, DxgkDdiCreateContext, DxgkDdiCreateAllocation...,
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createcontext>).
    /// Adapter start maps it to STATUS_INSUFFICIENT_RESOURCES itself (PnP start convention;
    /// docs/robustness.md).
    fn from(_: NoMemory) -> Self {
        status::NO_MEMORY
    }
}

fn permitted<P: Platform>() -> Result<(), NoMemory> {
    if P::pool_allocation_permitted() {
        Ok(())
    } else {
        Err(NoMemory)
    }
}

/// `Box::new` that fails instead of bug-checking (`Box::try_new` is not stable).
pub fn try_box<P: Platform, T>(value: T) -> Result<Box<T>, NoMemory> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        // A zero-sized box allocates nothing.
        return Ok(Box::new(value));
    }
    permitted::<P>()?;
    // SAFETY: `layout` has a non-zero size (checked), as `alloc` requires.
    let raw = unsafe { alloc::alloc::alloc(layout) };
    let ptr = NonNull::new(raw.cast::<T>()).ok_or(NoMemory)?;
    // SAFETY: `ptr` is a fresh, exclusively owned block with `T`'s layout; it is initialised
    // here and handed to `Box`, which frees it with the same layout through the global
    // allocator it came from.
    unsafe {
        ptr.as_ptr().write(value);
    }
    // SAFETY: as above: allocated by the global allocator with `Layout::new::<T>()`, now
    // holding an initialised `T`, owned by nothing else.
    Ok(unsafe { Box::from_raw(ptr.as_ptr()) })
}

/// Makes room for `additional` more elements of `v` (exactly; nothing if already there).
pub fn try_reserve<P: Platform, T>(v: &mut Vec<T>, additional: usize) -> Result<(), NoMemory> {
    let spare = v.capacity().saturating_sub(v.len());
    if spare >= additional || core::mem::size_of::<T>() == 0 {
        return Ok(());
    }
    permitted::<P>()?;
    v.try_reserve_exact(additional).map_err(|_| NoMemory)
}

/// An empty vector with room for exactly `n` elements.
pub fn try_with_capacity<P: Platform, T>(n: usize) -> Result<Vec<T>, NoMemory> {
    let mut v = Vec::new();
    try_reserve::<P, T>(&mut v, n)?;
    Ok(v)
}

/// Appends `value` into room reserved before; without room (a bug of the caller's
/// reservation) `value` is handed back instead of allocating.
pub fn push_reserved<T>(v: &mut Vec<T>, value: T) -> Result<(), T> {
    if v.len() < v.capacity() {
        v.push(value);
        Ok(())
    } else {
        Err(value)
    }
}

/// A vector of `n` elements made by `f(i)` (the fallible `(0..n).map(f).collect()`).
pub fn try_from_fn<P: Platform, T>(
    n: usize,
    mut f: impl FnMut(usize) -> T,
) -> Result<Vec<T>, NoMemory> {
    let mut v = try_with_capacity::<P, T>(n)?;
    for i in 0..n {
        // Exact room was reserved: never `Err`.
        let _ = push_reserved(&mut v, f(i));
    }
    Ok(v)
}

/// A boxed value published through an atomic pointer and replaced by newer ones. A replaced
/// value stays alive, chained behind its successor, until the `Retaining` is dropped, so a
/// reader's reference lives as long as its borrow of the `Retaining` (readers never block and
/// never free; the memory of the replaced values is given back at once, at drop).
pub struct Retaining<T> {
    current: AtomicPtr<Retained<T>>,
    /// Owns the values: `Send`/`Sync` as a `Box<T>` is.
    _owns: core::marker::PhantomData<Box<T>>,
}

/// A value and the one it replaced.
struct Retained<T> {
    value: T,
    older: *mut Retained<T>,
}

impl<T> Drop for Retained<T> {
    fn drop(&mut self) {
        if !self.older.is_null() {
            // SAFETY: `older` came from `Box::into_raw` and only this node owns it; nodes are
            // dropped only through `Retaining::drop` (`&mut`), when no reader is left.
            drop(unsafe { Box::from_raw(self.older) });
        }
    }
}

impl<T> Retaining<T> {
    /// Publishes `value` (allocates).
    pub fn try_new<P: Platform>(value: T) -> Result<Self, NoMemory> {
        let node = try_box::<P, _>(Retained {
            value,
            older: core::ptr::null_mut(),
        })?;
        Ok(Self {
            current: AtomicPtr::new(Box::into_raw(node)),
            _owns: core::marker::PhantomData,
        })
    }

    /// The current value. Acquire pairs with the publishing Release store: what was written
    /// to a value before it was published is visible.
    #[inline]
    pub fn get(&self) -> &T {
        // SAFETY: `current` always holds a valid pointer from `Box::into_raw` (set by
        // `try_new`, replaced by `try_replace` with another such pointer); a replaced node
        // stays owned by its successor's `older` chain and is freed only by `Drop`, which needs
        // `&mut self`, so the node outlives this borrow of `self`.
        unsafe { &(*self.current.load(Ordering::Acquire)).value }
    }

    /// Publishes `value` in place of the current one, which stays alive for the readers still
    /// on it (allocates; the caller serialises writers). On error nothing changed.
    pub fn try_replace<P: Platform>(&self, value: T) -> Result<(), NoMemory> {
        let mut node = try_box::<P, _>(Retained {
            value,
            older: core::ptr::null_mut(),
        })?;
        // Linked only once allocated: a node that failed to allocate would drop (and free) its
        // `older`.
        node.older = self.current.load(Ordering::Relaxed);
        // Release: the new value's contents are visible to a reader that loads the pointer.
        self.current.store(Box::into_raw(node), Ordering::Release);
        Ok(())
    }
}

impl<T> Drop for Retaining<T> {
    fn drop(&mut self) {
        let p = core::mem::replace(self.current.get_mut(), core::ptr::null_mut());
        if !p.is_null() {
            // SAFETY: `current` holds a pointer from `Box::into_raw`, and `&mut self` means no
            // reader holds it any more; the older nodes go with it.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A boxed slice of `n` elements made by `f(i)`.
pub fn try_boxed_slice<P: Platform, T>(
    n: usize,
    f: impl FnMut(usize) -> T,
) -> Result<Box<[T]>, NoMemory> {
    // Exact capacity, so the conversion does not reallocate.
    try_from_fn::<P, T>(n, f).map(Vec::into_boxed_slice)
}

/// A first-in first-out list of word runs (one run per submission), with fallible growth.
/// Runs leave from the front by moving a cursor; the consumed prefix is dropped once it is
/// half of what is held, so a removal costs amortised O(1) entries moved, however long the
/// list (it is drained at DISPATCH_LEVEL). What it may hold is the caller's quota
/// ([`BACKLOG_PROCESS_BYTES`]).
#[derive(Debug, Default)]
pub struct Backlog {
    words: Vec<u64>,
    runs: Vec<usize>,
    /// Words of `words` already taken.
    head: usize,
    /// Runs of `runs` already taken.
    first: usize,
}

/// Bytes of backlog one process may hold across its kernel-mode queues: far above what an
/// application queues behind a wait (docs/usermode-submission.md).
pub const BACKLOG_PROCESS_BYTES: usize = 4 << 20;

/// Bytes a held submission of `words` words costs against [`BACKLOG_PROCESS_BYTES`]: its words
/// and its length.
pub const fn backlog_cost(words: usize) -> usize {
    words.saturating_add(1).saturating_mul(8)
}

impl Backlog {
    /// Appends one run; on failure nothing changed.
    pub fn try_push<P: Platform>(&mut self, run: &[u64]) -> Result<(), NoMemory> {
        if self.words.capacity().saturating_sub(self.words.len()) < run.len() {
            try_reserve::<P, u64>(&mut self.words, run.len().max(64))?;
        }
        if self.runs.len() == self.runs.capacity() {
            try_reserve::<P, usize>(&mut self.runs, 16)?;
        }
        self.words.extend_from_slice(run);
        self.runs.push(run.len());
        Ok(())
    }

    /// The oldest run.
    pub fn front(&self) -> Option<&[u64]> {
        let n = *self.runs.get(self.first)?;
        self.words.get(self.head..self.head.checked_add(n)?)
    }

    /// Drops the oldest run.
    pub fn pop_front(&mut self) {
        let Some(&n) = self.runs.get(self.first) else {
            return;
        };
        self.head = self.head.saturating_add(n).min(self.words.len());
        self.first = self.first.saturating_add(1);
        if self.first >= self.runs.len() {
            self.words.clear();
            self.runs.clear();
            (self.head, self.first) = (0, 0);
        } else if self.first >= self.runs.len() / 2 {
            // Half taken: the rest moves down once (amortised over the runs taken).
            #[cfg(test)]
            count_moves(
                self.words
                    .len()
                    .saturating_sub(self.head)
                    .saturating_add(self.runs.len().saturating_sub(self.first)),
            );
            self.words.drain(..self.head);
            self.runs.drain(..self.first);
            (self.head, self.first) = (0, 0);
        }
    }

    /// Runs held.
    pub fn len(&self) -> usize {
        self.runs.len().saturating_sub(self.first)
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the held runs cost against [`BACKLOG_PROCESS_BYTES`] ([`backlog_cost`] each).
    pub fn bytes(&self) -> usize {
        self.words
            .len()
            .saturating_sub(self.head)
            .saturating_add(self.len())
            .saturating_mul(8)
    }
}

/// An ordered map over sorted vectors: what the driver used `BTreeMap` for, with fallible
/// growth. Keys are mostly handles, created in increasing order, so inserts append.
///
/// Keys and values are kept in two vectors of the same length, index for index: a lookup's
/// binary search steps through the keys alone (an 8-byte stride for a handle, however large
/// the value), and touches one value, the one found.
///
/// Not `Clone` outside tests: a clone would allocate infallibly.
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
pub struct SortedMap<K, V> {
    keys: Vec<K>,
    values: Vec<V>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> SortedMap<K, V> {
    /// An empty map (allocates nothing).
    pub const fn new() -> Self {
        Self {
            keys: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Whether both vectors have room for one more entry.
    fn has_room(&self) -> bool {
        self.keys.len() < self.keys.capacity() && self.values.len() < self.values.capacity()
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    fn find(&self, k: &K) -> Result<usize, usize> {
        self.keys.binary_search(k)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Makes room for one more entry, so that the next [`SortedMap::insert_reserved`] cannot
    /// fail.
    pub fn try_reserve<P: Platform>(&mut self) -> Result<(), NoMemory> {
        self.try_reserve_n::<P>(1)
    }

    /// Makes room for `n` more entries, so that that many inserts need no allocation.
    pub fn try_reserve_n<P: Platform>(&mut self, n: usize) -> Result<(), NoMemory> {
        if self.keys.capacity().saturating_sub(self.keys.len()) < n {
            permitted::<P>()?;
            self.keys.try_reserve(n).map_err(|_| NoMemory)?;
        }
        if self.values.capacity().saturating_sub(self.values.len()) < n {
            permitted::<P>()?;
            self.values.try_reserve(n).map_err(|_| NoMemory)?;
        }
        Ok(())
    }

    /// Inserts (or replaces) `k`, growing the map if needed; the old value if there was one.
    /// On failure `v` is dropped and the map is unchanged.
    pub fn try_insert<P: Platform>(&mut self, k: K, v: V) -> Result<Option<V>, NoMemory> {
        self.try_reserve::<P>()?;
        self.insert_reserved(k, v).map_err(|_| NoMemory)
    }

    /// Inserts (or replaces) `k` into room made by [`SortedMap::try_reserve`]: `Ok` with the old
    /// value if there was one. Without room (a bug of the caller's reservation) it hands the
    /// value back rather than allocate, so that the caller can release what it owns.
    pub fn insert_reserved(&mut self, k: K, v: V) -> Result<Option<V>, V> {
        match self.find(&k) {
            Ok(i) => match self.values.get_mut(i) {
                Some(slot) => Ok(Some(core::mem::replace(slot, v))),
                None => Err(v),
            },
            Err(i) if self.has_room() && i <= self.keys.len() && i <= self.values.len() => {
                self.keys.insert(i, k);
                self.values.insert(i, v);
                Ok(None)
            }
            Err(_) => Err(v),
        }
    }

    /// Inserts, panicking on allocation failure: for host unit tests only.
    #[cfg(test)]
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        self.keys.reserve(1);
        self.values.reserve(1);
        self.insert_reserved(k, v).ok().flatten()
    }

    /// The value of `k`.
    pub fn get(&self, k: &K) -> Option<&V> {
        let i = self.find(k).ok()?;
        self.values.get(i)
    }

    /// The value of `k`, mutably.
    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        let i = self.find(k).ok()?;
        self.values.get_mut(i)
    }

    /// Whether `k` is present.
    pub fn contains_key(&self, k: &K) -> bool {
        self.find(k).is_ok()
    }

    /// Removes `k` (never allocates; the capacity stays for the next insert).
    pub fn remove(&mut self, k: &K) -> Option<V> {
        let i = self.find(k).ok()?;
        if i >= self.values.len() {
            return None;
        }
        #[cfg(test)]
        count_moves(self.keys.len().saturating_sub(i).saturating_sub(1));
        self.keys.remove(i);
        Some(self.values.remove(i))
    }

    /// Index of the first key not below `k` (a binary search).
    pub fn lower_bound(&self, k: &K) -> usize {
        self.keys.partition_point(|x| x < k)
    }

    /// The entry at index `i` in key order.
    pub fn at(&self, i: usize) -> Option<(&K, &V)> {
        Some((self.keys.get(i)?, self.values.get(i)?))
    }

    /// Entries the map holds without allocating.
    pub fn capacity(&self) -> usize {
        self.keys.capacity().min(self.values.capacity())
    }

    /// Indexes of the keys in `lo..=hi`: two binary searches.
    fn span(&self, lo: &K, hi: &K) -> core::ops::Range<usize> {
        let start = self.keys.partition_point(|k| k < lo);
        let end = self.keys.partition_point(|k| k <= hi).max(start);
        start..end
    }

    /// Entries whose keys are in `lo..=hi` (two binary searches, no walk).
    pub fn count_in(&self, lo: &K, hi: &K) -> usize {
        self.span(lo, hi).len()
    }

    /// Removes the entries whose keys are in `lo..=hi` and returns how many (never allocates).
    /// Linear in what it removes plus one move of each entry after them, never one
    /// `Vec::remove` per entry.
    pub fn remove_in(&mut self, lo: &K, hi: &K) -> usize {
        let span = self.span(lo, hi);
        let n = span.len();
        if n == 0 || span.end > self.keys.len() || span.end > self.values.len() {
            return 0;
        }
        #[cfg(test)]
        count_moves(self.keys.len().saturating_sub(span.end));
        self.keys.drain(span.clone());
        self.values.drain(span);
        n
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + '_ {
        self.keys.iter().zip(self.values.iter())
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + '_ {
        self.keys.iter()
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + '_ {
        self.values.iter()
    }

    /// Values in key order, mutably.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + '_ {
        self.values.iter_mut()
    }

    /// Entries in key order, values mutably.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (&K, &mut V)> + '_ {
        self.keys.iter().zip(self.values.iter_mut())
    }

    /// Consumes the map, values in key order.
    pub fn into_values(self) -> impl DoubleEndedIterator<Item = V> {
        self.values.into_iter()
    }

    /// Keeps the entries `f` accepts (never allocates). One pass, linear in the entries: each
    /// kept entry moves at most once, to the end of the kept ones (their order stays), and
    /// the rejected ones are dropped together at the end.
    pub fn retain(&mut self, mut f: impl FnMut(&K, &mut V) -> bool) {
        let n = self.keys.len().min(self.values.len());
        let mut kept = 0usize;
        for i in 0..n {
            let keep = match (self.keys.get(i), self.values.get_mut(i)) {
                (Some(k), Some(v)) => f(k, v),
                _ => true,
            };
            if keep {
                if kept != i {
                    // `kept < i < n`: both in bounds. Everything in `kept..i` was rejected.
                    self.keys.swap(kept, i);
                    self.values.swap(kept, i);
                    #[cfg(test)]
                    count_moves(1);
                }
                kept = kept.saturating_add(1);
            }
        }
        self.keys.truncate(kept);
        self.values.truncate(kept);
    }
}

/// `map[&k]` for host unit tests (kernel code uses `get`, which cannot panic).
#[cfg(test)]
impl<K: Ord, V> core::ops::Index<&K> for SortedMap<K, V> {
    type Output = V;
    fn index(&self, k: &K) -> &V {
        self.get(k).expect("no such key")
    }
}

/// A platform for host unit tests of modules whose constructors allocate through `kmem`:
/// no device; every allocation permitted unless a test on this thread set a budget
/// ([`tests`]' `budget`).
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct Host;

#[cfg(test)]
std::thread_local! {
    /// Allocations [`Host`] still permits on this thread (`u32::MAX`: unlimited).
    static BUDGET: core::cell::Cell<u32> = const { core::cell::Cell::new(u32::MAX) };
    /// Allocations [`Host`] was asked for on this thread.
    static ASKED: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
    /// Entries a [`SortedMap`] removal moved on this thread (the exact work of a removal,
    /// what the tests of bounded work at raised IRQL count).
    static MOVES: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Counts `n` entries moved by a removal ([`MOVES`]).
#[cfg(test)]
fn count_moves(n: usize) {
    MOVES.with(|m| m.set(m.get().saturating_add(n as u64)));
}

/// Entries [`SortedMap`] removals moved on this thread since the last call (and resets it).
#[cfg(test)]
pub(crate) fn take_moves() -> u64 {
    MOVES.with(|m| m.replace(0))
}

/// Asserts bounded work per item: `run(n)` builds its `n` items, calls [`take_moves`], then
/// does the work measured; the entries moved per item must stay at most `bound` at both
/// `sizes` (`what`: what was moved per what, for the message).
#[cfg(test)]
pub(crate) fn assert_moves_per_item(
    what: &str,
    bound: f64,
    sizes: [usize; 2],
    mut run: impl FnMut(usize),
) {
    let [small, big] = sizes.map(|n| {
        run(n);
        take_moves() as f64 / n as f64
    });
    assert!(
        small <= bound && big <= bound,
        "{what}: {small} at {} items, {big} at {}",
        sizes[0],
        sizes[1]
    );
}

// SAFETY: the MMIO functions perform no access at all (there is no device).
#[cfg(test)]
unsafe impl Platform for Host {
    /// No timers: unit tests drive the watchdog's check directly.
    type Timer = ();
    unsafe fn mmio_read32(_: NonNull<u8>, _: usize) -> u32 {
        u32::MAX
    }
    unsafe fn mmio_write32(_: NonNull<u8>, _: usize, _: u32) {}
    unsafe fn mmio_read64(_: NonNull<u8>, _: usize) -> u64 {
        u64::MAX
    }
    unsafe fn mmio_write64(_: NonNull<u8>, _: usize, _: u64) {}
    fn current_irql() -> crate::platform::Irql {
        crate::platform::Irql::Passive
    }
    fn raise_to_dispatch() -> crate::platform::Irql {
        crate::platform::Irql::Passive
    }
    fn lower_irql(_: crate::platform::Irql) {}
    fn bus_address(_: NonNull<u8>) -> Option<rvgpu_hw::addr::BusAddr> {
        None
    }
    fn log(_: crate::platform::Level, _: core::fmt::Arguments<'_>) {}
    fn pool_allocation_permitted() -> bool {
        ASKED.with(|a| a.set(a.get().saturating_add(1)));
        BUDGET.with(|b| match b.get() {
            0 => false,
            u32::MAX => true,
            left => {
                b.set(left.saturating_sub(1));
                true
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use core::cell::Cell;

    pub(crate) fn budget(n: u32) {
        BUDGET.with(|b| b.set(n));
        ASKED.with(|a| a.set(0));
    }

    fn asked() -> u32 {
        ASKED.with(Cell::get)
    }

    #[test]
    fn refused_allocations_are_errors_and_change_nothing() {
        budget(0);
        assert_eq!(try_box::<Host, _>(5u64).err(), Some(NoMemory));
        let mut v: Vec<u32> = Vec::new();
        assert_eq!(try_reserve::<Host, _>(&mut v, 1), Err(NoMemory));
        assert_eq!(v.capacity(), 0);
        let mut m: SortedMap<u32, u32> = SortedMap::new();
        assert_eq!(m.try_insert::<Host>(1, 1), Err(NoMemory));
        assert!(m.is_empty());
        assert_eq!(
            Status::from(try_with_capacity::<Host, u8>(3).unwrap_err()),
            status::NO_MEMORY
        );
    }

    #[test]
    fn the_platform_is_asked_only_for_real_allocations() {
        budget(u32::MAX);
        let mut v = try_with_capacity::<Host, u32>(2).unwrap();
        assert_eq!(asked(), 1);
        push_reserved(&mut v, 1).unwrap();
        push_reserved(&mut v, 2).unwrap();
        assert_eq!(
            push_reserved(&mut v, 3),
            Err(3),
            "no room: handed back, not grown"
        );
        assert_eq!(asked(), 1, "room was reserved: no allocation");
        let _zst = try_box::<Host, _>(()).unwrap();
        assert_eq!(asked(), 1, "a zero-sized box allocates nothing");
        assert_eq!(*try_box::<Host, _>(7u8).unwrap(), 7);
        assert_eq!(asked(), 2);
    }

    #[test]
    fn sorted_map_keeps_key_order_and_replaces() {
        budget(u32::MAX);
        let mut m = SortedMap::new();
        for k in [5u32, 1, 9, 3] {
            assert_eq!(m.try_insert::<Host>(k, k * 10).unwrap(), None);
        }
        assert_eq!(m.try_insert::<Host>(3, 33).unwrap(), Some(30));
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), [1, 3, 5, 9]);
        assert_eq!(m.get(&3), Some(&33));
        assert_eq!(m.remove(&5), Some(50));
        assert_eq!(m.remove(&5), None);
        assert!(!m.contains_key(&5));
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [10, 33, 90]);
        m.retain(|k, _| *k != 1);
        assert_eq!(m.len(), 2);
        let pairs: Vec<(u32, u32)> = m.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(pairs, [(3, 33), (9, 90)], "keys and values stay paired");
        *m.get_mut(&9).unwrap() = 99;
        assert_eq!(m.into_values().collect::<Vec<_>>(), [33, 99]);
    }

    #[test]
    fn insert_reserved_without_room_does_not_allocate() {
        let mut m: SortedMap<u32, u32> = SortedMap::new();
        assert_eq!(
            m.insert_reserved(1, 7),
            Err(7),
            "no room: the value comes back"
        );
        assert!(m.is_empty(), "no room was reserved");
        budget(u32::MAX);
        m.try_reserve::<Host>().unwrap();
        assert_eq!(m.insert_reserved(1, 1), Ok(None));
        assert_eq!(m.get(&1), Some(&1));
    }
}
