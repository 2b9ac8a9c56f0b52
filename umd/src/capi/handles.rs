//! The C API's handles: every object an application holds (adapter, queue, fence, buffer,
//! context) is a token into the process's table of live objects, never a pointer the DLL
//! dereferences. A token carries its object's kind, slot and generation, so a call given a
//! destroyed (stale), forged or wrong-kind handle finds no live object and returns
//! `RVGPU_STATUS_INVALID_HANDLE` instead of touching freed memory.
//!
//! The table holds nothing but the objects: no call's meaning depends on it (there is no
//! current adapter or queue), it only lets every entry validate what it is given. A lookup
//! takes no lock: it pins its slot for the call ([`with`]), or clones the object's `Arc`
//! ([`get`]), so a handle destroyed by one thread while another uses it is freed when that
//! call returns.
//!
//! Each object sits behind its own lock ([`Shared`]). A call that needs several locks takes
//! them in one order (buffers before queues, each kind by handle value) so that two threads
//! cannot deadlock.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::{Any, TypeId};
use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::capi::types::RvgpuStatus;

/// The kind of object a handle names (bits 24..32 of the token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Adapter = 1,
    Queue = 2,
    Fence = 3,
    Buffer = 4,
    Context = 5,
}

/// A value behind a spin lock. Calls on one object are short (a ring write, a thunk); a wait
/// for the GPU is made after the lock is released.
pub(crate) struct Shared<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through `lock`, which gives one thread at a time access.
// The objects behind the C API's handles are process-wide kernel handles and heap memory with
// no thread affinity, so moving or sharing them between threads under the lock is sound.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

impl<T> core::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl<T> Shared<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Exclusive access until the guard drops.
    pub(crate) fn lock(&self) -> Guard<'_, T> {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        Guard { owner: self }
    }
}

/// Access to a [`Shared`] value.
pub(crate) struct Guard<'a, T> {
    owner: &'a Shared<T>,
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock: no other reference to the value exists.
        unsafe { &*self.owner.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only access through the guard.
        unsafe { &mut *self.owner.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        self.owner.locked.store(false, Ordering::Release);
    }
}

type Object = Arc<dyn Any + Send + Sync>;

/// A slot's state word: the generation (bits 32..64) and kind (24..32) of the handle that
/// names its object, laid out as in a token; whether it holds an object ([`OCCUPIED`]) that
/// handles still name ([`LIVE`]); and how many lookups are using it now ([`PINS`]).
const PINS: u64 = (1 << 22) - 1;
/// The object may be looked up (its handle has not been ended).
const LIVE: u64 = 1 << 22;
/// The slot holds an object (set by `insert`, cleared once `take` took it out).
const OCCUPIED: u64 = 1 << 23;
/// The bits a token shares with its slot's state word.
const NAME: u64 = !0xFF_FFFF;

struct Slot {
    state: AtomicU64,
    /// Written only while no lookup can read it: by `insert` while not [`OCCUPIED`] (inserts
    /// are serialized), by `take` once the slot is not [`LIVE`] and its pins are gone.
    object: UnsafeCell<Option<Entry>>,
}

/// An object and its type, compared on lookup without a call through the object's vtable.
struct Entry {
    type_id: TypeId,
    object: Object,
}

impl Entry {
    /// The object, if it is an `O`.
    #[inline(always)]
    fn get<O: Any>(&self) -> Option<&O> {
        if self.type_id != TypeId::of::<O>() {
            return None;
        }
        // SAFETY: `type_id` is the object's own (set with it in `insert_object`), so the
        // object is an `O`; the pointer comes from the live `Arc`, borrowed with `self`.
        Some(unsafe { &*Arc::as_ptr(&self.object).cast::<O>() })
    }
}

/// Live objects at most.
const SLOTS: usize = 4096;

/// A fixed array, not a heap vector: a slot never moves (a lookup pins it without a lock, as
/// below) and the table outlives every object.
///
/// A lookup takes no lock: it pins the slot (one compare-and-swap on its state word, which
/// also checks the handle's generation and kind) and unpins it when done, so a destroy that
/// ends the handle meanwhile waits for the pins to go before it takes the object out.
struct Table {
    slots: [Slot; SLOTS],
}

// SAFETY: a slot's object is read only under a pin and written only when no pin can exist
// (see `Slot::object`); the state words are atomics. The objects themselves are `Send + Sync`.
unsafe impl Sync for Table {}

static TABLE: Table = Table {
    slots: [const {
        Slot {
            state: AtomicU64::new(1 << 32),
            object: UnsafeCell::new(None),
        }
    }; SLOTS],
};

/// Serializes inserts; holds where the search for a free slot starts (the slot after the last
/// one used).
static INSERTING: Shared<usize> = Shared::new(0);

fn token(index: usize, kind: Kind, generation: u32) -> usize {
    // usize is 64-bit on every target the DLL is built for; a 32-bit build would lose the
    // generation and so only weaken stale-handle detection.
    let t = (u64::from(generation) << 32) | (u64::from(kind as u8) << 24) | (index as u64 + 1);
    t as usize
}

/// The slot a token of `kind` names; `None` for a value no token of that kind has.
#[inline(always)]
fn slot_of(kind: Kind, handle: usize) -> Result<&'static Slot, RvgpuStatus> {
    if handle == 0 {
        return Err(RvgpuStatus::InvalidArgument);
    }
    let t = handle as u64;
    if (t >> 24) as u8 != kind as u8 {
        return Err(RvgpuStatus::InvalidHandle);
    }
    let index = usize::try_from(t & 0xFF_FFFF)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .ok_or(RvgpuStatus::InvalidHandle)?;
    TABLE.slots.get(index).ok_or(RvgpuStatus::InvalidHandle)
}

/// A lookup in progress: its slot's object stays in the table until it drops.
struct Pin {
    slot: &'static Slot,
}

impl Pin {
    /// Pins the slot `handle` names if the handle is live.
    #[inline(always)]
    fn new(kind: Kind, handle: usize) -> Result<Self, RvgpuStatus> {
        let slot = slot_of(kind, handle)?;
        let want = (handle as u64 & NAME) | OCCUPIED | LIVE;
        let mut s = slot.state.load(Ordering::Relaxed);
        loop {
            if s & !PINS != want {
                return Err(RvgpuStatus::InvalidHandle);
            }
            if s & PINS == PINS {
                // Every pin count in use (millions of threads in one slot): wait for one.
                core::hint::spin_loop();
                s = slot.state.load(Ordering::Relaxed);
                continue;
            }
            match slot.state.compare_exchange_weak(
                s,
                s.wrapping_add(1),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(Self { slot }),
                Err(now) => s = now,
            }
        }
    }

    /// The pinned slot's object.
    #[inline(always)]
    fn entry(&self) -> Option<&Entry> {
        // SAFETY: the pin was taken while the slot was live, and the object is written only
        // when the slot is unoccupied (no pin can be taken) or not live with no pins left.
        unsafe { (*self.slot.object.get()).as_ref() }
    }
}

impl Drop for Pin {
    #[inline(always)]
    fn drop(&mut self) {
        self.slot.state.fetch_sub(1, Ordering::Release);
    }
}

/// Makes `value` a live object of `kind` behind its own lock ([`Shared`]); its handle.
/// `OutOfMemory` when every slot is live.
pub(crate) fn insert<T: 'static>(kind: Kind, value: T) -> Result<usize, RvgpuStatus> {
    insert_object(kind, Shared::new(value))
}

/// Makes `object` a live object of `kind` as it is (an object that needs no lock: read-only,
/// or made of atomics); its handle. `OutOfMemory` when every slot is live.
pub(crate) fn insert_object<O: Any + Send + Sync>(
    kind: Kind,
    object: O,
) -> Result<usize, RvgpuStatus> {
    let object: Object = Arc::new(object);
    let mut next = INSERTING.lock();
    let start = *next;
    for i in 0..SLOTS {
        let index = (start + i) % SLOTS;
        let Some(slot) = TABLE.slots.get(index) else {
            break;
        };
        let s = slot.state.load(Ordering::Acquire);
        if s & OCCUPIED != 0 {
            continue;
        }
        // SAFETY: unoccupied: no pin (pins need LIVE) and no take (takes need LIVE) can
        // reach the object, and inserts are serialized by `INSERTING`.
        unsafe {
            *slot.object.get() = Some(Entry {
                type_id: TypeId::of::<O>(),
                object,
            })
        };
        let generation = (s >> 32) as u32;
        slot.state.store(
            (u64::from(generation) << 32) | (u64::from(kind as u8) << 24) | OCCUPIED | LIVE,
            Ordering::Release,
        );
        *next = (index + 1) % SLOTS;
        return Ok(token(index, kind, generation));
    }
    Err(RvgpuStatus::OutOfMemory)
}

/// Calls `f` with the live object `handle` names, without a lock or a reference count: the
/// object cannot be taken out of the table while `f` runs (a concurrent destroy waits), so
/// `f` must not destroy it itself. `InvalidArgument` for 0, `InvalidHandle` for anything else
/// that is not a live object of `kind` (and type `O`).
#[inline(always)]
pub(crate) fn with_object<O: Any, R>(
    kind: Kind,
    handle: usize,
    f: impl FnOnce(&O) -> R,
) -> Result<R, RvgpuStatus> {
    let pin = Pin::new(kind, handle)?;
    let object = pin
        .entry()
        .and_then(Entry::get::<O>)
        .ok_or(RvgpuStatus::InvalidHandle)?;
    Ok(f(object))
}

/// [`with_object`] for an object behind its own lock ([`insert`]).
#[inline(always)]
pub(crate) fn with<T: 'static, R>(
    kind: Kind,
    handle: usize,
    f: impl FnOnce(&Shared<T>) -> R,
) -> Result<R, RvgpuStatus> {
    with_object::<Shared<T>, R>(kind, handle, f)
}

/// The live object `handle` names, to keep: `InvalidArgument` for 0, `InvalidHandle` for
/// anything else that is not a live object of `kind` (and type `O`).
pub(crate) fn get_object<O: Any + Send + Sync>(
    kind: Kind,
    handle: usize,
) -> Result<Arc<O>, RvgpuStatus> {
    let pin = Pin::new(kind, handle)?;
    pin.entry()
        .map(|e| e.object.clone())
        .ok_or(RvgpuStatus::InvalidHandle)?
        .downcast::<O>()
        .map_err(|_| RvgpuStatus::InvalidHandle)
}

/// [`get_object`] for an object behind its own lock ([`insert`]).
pub(crate) fn get<T: 'static>(kind: Kind, handle: usize) -> Result<Arc<Shared<T>>, RvgpuStatus> {
    get_object::<Shared<T>>(kind, handle)
}

/// As [`get_object`], and the handle ends: later calls with it return `InvalidHandle`. Waits
/// for the lookups using the object now ([`with_object`]) to finish.
pub(crate) fn take_object<O: Any + Send + Sync>(
    kind: Kind,
    handle: usize,
) -> Result<Arc<O>, RvgpuStatus> {
    let slot = slot_of(kind, handle)?;
    let want = (handle as u64 & NAME) | OCCUPIED | LIVE;
    let generation = ((handle as u64) >> 32) as u32;
    let next = generation.checked_add(1).unwrap_or(1);
    let ended = (u64::from(next) << 32) | (u64::from(kind as u8) << 24) | OCCUPIED;
    let mut s = slot.state.load(Ordering::Relaxed);
    loop {
        if s & !PINS != want {
            return Err(RvgpuStatus::InvalidHandle);
        }
        match slot.state.compare_exchange_weak(
            s,
            ended | (s & PINS),
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => break,
            Err(now) => s = now,
        }
    }
    // No new pin from here (not live, new generation); the ones taken before end soon.
    while slot.state.load(Ordering::Acquire) & PINS != 0 {
        core::hint::spin_loop();
    }
    // SAFETY: not live and no pins: nothing reads the object, and no insert writes an
    // occupied slot; this call alone ended the handle (its compare-and-swap).
    let entry = unsafe { (*slot.object.get()).take() };
    slot.state.store(u64::from(next) << 32, Ordering::Release);
    entry
        .ok_or(RvgpuStatus::InvalidHandle)?
        .object
        .downcast::<O>()
        .map_err(|_| RvgpuStatus::InvalidHandle)
}

/// [`take_object`] for an object behind its own lock ([`insert`]).
pub(crate) fn take<T: 'static>(kind: Kind, handle: usize) -> Result<Arc<Shared<T>>, RvgpuStatus> {
    take_object::<Shared<T>>(kind, handle)
}

/// The handles of `list` without repeats, in lock order (by value).
pub(crate) fn lock_order(list: &[usize]) -> Vec<usize> {
    let mut v: Vec<usize> = list.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destroyed_handle_is_stale_even_when_its_slot_is_reused() {
        let a = insert(Kind::Fence, 5u32).unwrap();
        assert_eq!(*get::<u32>(Kind::Fence, a).unwrap().lock(), 5);
        take::<u32>(Kind::Fence, a).unwrap();
        assert_eq!(
            get::<u32>(Kind::Fence, a).err(),
            Some(RvgpuStatus::InvalidHandle)
        );
        assert_eq!(
            take::<u32>(Kind::Fence, a).err(),
            Some(RvgpuStatus::InvalidHandle)
        );
        // Cycle through every slot (one live object at a time), so one reuses a's slot.
        for i in 0..=SLOTS as u32 {
            let h = insert(Kind::Fence, i).unwrap();
            assert_ne!(h, a);
            take::<u32>(Kind::Fence, h).unwrap();
        }
        assert_eq!(
            get::<u32>(Kind::Fence, a).err(),
            Some(RvgpuStatus::InvalidHandle)
        );
    }

    #[test]
    fn wrong_kind_forged_and_null_handles_are_refused() {
        let q = insert(Kind::Queue, 1u64).unwrap();
        assert_eq!(
            get::<u64>(Kind::Buffer, q).err(),
            Some(RvgpuStatus::InvalidHandle),
            "a queue handle is not a buffer"
        );
        assert_eq!(
            get::<u32>(Kind::Queue, q).err(),
            Some(RvgpuStatus::InvalidHandle),
            "the object is not of the asked type"
        );
        for forged in [1usize, 0xdead_beef, usize::MAX, q ^ (1 << 40)] {
            assert_eq!(
                get::<u64>(Kind::Queue, forged).err(),
                Some(RvgpuStatus::InvalidHandle),
                "{forged:#x}"
            );
        }
        assert_eq!(
            get::<u64>(Kind::Queue, 0).err(),
            Some(RvgpuStatus::InvalidArgument)
        );
        take::<u64>(Kind::Queue, q).unwrap();
    }

    /// The lock-free lookup against a concurrent destroy (threaded stress): reader threads
    /// look handles up with `with` while a destroyer thread ends them with `take` (dropping
    /// the objects) and inserts new ones in the freed slots. A lookup either finds no live
    /// object (`InvalidHandle`) or the very object its handle named, never one already
    /// dropped nor the slot's next object.
    #[test]
    fn a_lookup_never_sees_a_destroyed_or_reused_object() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::Arc as StdArc;
        const LIVE_OBJECTS: usize = 8;
        const ROUNDS: usize = 4000;
        /// An object that records its drop.
        struct Probe {
            id: usize,
            dropped: StdArc<Vec<AtomicBool>>,
        }
        impl Drop for Probe {
            fn drop(&mut self) {
                self.dropped[self.id].store(true, Ordering::SeqCst);
            }
        }
        let dropped: StdArc<Vec<AtomicBool>> = StdArc::new(
            (0..LIVE_OBJECTS * (ROUNDS + 1))
                .map(|_| AtomicBool::new(false))
                .collect(),
        );
        // A new probe `id` under a new handle.
        let insert_probe = |id: usize| {
            let dropped = dropped.clone();
            insert(Kind::Context, Probe { id, dropped }).unwrap()
        };
        // handles[k]: the handle of object `ids[k]` (read by the readers, replaced by the
        // destroyer).
        let handles: StdArc<Vec<(AtomicUsize, AtomicUsize)>> = StdArc::new(
            (0..LIVE_OBJECTS)
                .map(|id| (AtomicUsize::new(insert_probe(id)), AtomicUsize::new(id)))
                .collect(),
        );
        let stop = StdArc::new(AtomicBool::new(false));
        let (found, refused) = (
            StdArc::new(AtomicUsize::new(0)),
            StdArc::new(AtomicUsize::new(0)),
        );
        let readers: Vec<_> = (0..3)
            .map(|r| {
                let (handles, dropped, stop) = (handles.clone(), dropped.clone(), stop.clone());
                let (found, refused) = (found.clone(), refused.clone());
                std::thread::spawn(move || {
                    let mut k = r;
                    while !stop.load(Ordering::Relaxed) {
                        k = (k + 1) % LIVE_OBJECTS;
                        // The id first: the destroyer publishes a new handle after its id.
                        let h = handles[k].0.load(Ordering::SeqCst);
                        let r = with::<Probe, _>(Kind::Context, h, |o| {
                            let p = o.lock();
                            assert!(!dropped[p.id].load(Ordering::SeqCst), "a dropped object");
                            p.id
                        });
                        match r {
                            Ok(id) => {
                                // The handle names exactly one object: the one inserted
                                // with it (its id is fixed per handle below).
                                assert_eq!(id % LIVE_OBJECTS, k, "another slot's object");
                                found.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                assert_eq!(e, RvgpuStatus::InvalidHandle);
                                refused.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        let mut seen = std::collections::HashMap::new();
        for round in 1..=ROUNDS {
            for k in 0..LIVE_OBJECTS {
                let old = handles[k].0.load(Ordering::SeqCst);
                let obj = take::<Probe>(Kind::Context, old).unwrap();
                let id = round * LIVE_OBJECTS + k;
                let h = insert_probe(id);
                assert_ne!(h, old);
                assert!(seen.insert(h, id).is_none(), "a handle came back");
                handles[k].1.store(id, Ordering::SeqCst);
                handles[k].0.store(h, Ordering::SeqCst);
                drop(obj);
                assert_eq!(
                    get::<Probe>(Kind::Context, old).err(),
                    Some(RvgpuStatus::InvalidHandle)
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        for (h, _) in handles.iter() {
            take::<Probe>(Kind::Context, h.load(Ordering::SeqCst)).unwrap();
        }
        assert!(dropped.iter().all(|d| d.load(Ordering::SeqCst)));
        assert!(found.load(Ordering::Relaxed) > 0 && refused.load(Ordering::Relaxed) > 0);
    }
}
