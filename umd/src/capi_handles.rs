//! The C API's handles: every object an application holds (adapter, queue, fence, buffer,
//! context) is a token into the process's table of live objects, never a pointer the DLL
//! dereferences. A token carries its object's kind, slot and generation, so a call given a
//! destroyed (stale), forged or wrong-kind handle finds no live object and returns
//! `RVGPU_STATUS_INVALID_HANDLE` instead of touching freed memory.
//!
//! The table holds nothing but the objects: no call's meaning depends on it (there is no
//! current adapter or queue), it only lets every entry validate what it is given. A lookup
//! clones the object's `Arc`, so a handle destroyed by one thread while another uses it is
//! freed when that call returns.
//!
//! Each object sits behind its own lock ([`Shared`]). A call that needs several locks takes
//! them in one order (buffers before queues, each kind by handle value) so that two threads
//! cannot deadlock.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::capi::RvgpuStatus;

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

struct Slot {
    generation: u32,
    kind: u8,
    object: Option<Object>,
}

/// Live objects at most.
const SLOTS: usize = 4096;

/// A fixed array, not a heap vector: the table outlives every object and must not itself live
/// in memory a process heap frees (the emulator maps the DLL's data once for all its
/// simulated processes, docs/pe-image.md).
struct Table {
    slots: [Slot; SLOTS],
    /// Where the search for a free slot starts (the slot after the last one used).
    next: usize,
}

static TABLE: Shared<Table> = Shared::new(Table {
    slots: [const {
        Slot {
            generation: 1,
            kind: 0,
            object: None,
        }
    }; SLOTS],
    next: 0,
});

fn token(index: usize, kind: Kind, generation: u32) -> usize {
    // usize is 64-bit on every target the DLL is built for; a 32-bit build would lose the
    // generation and so only weaken stale-handle detection.
    let t = (u64::from(generation) << 32) | (u64::from(kind as u8) << 24) | (index as u64 + 1);
    t as usize
}

/// (slot index, kind, generation) of a token; `None` for a value no token has.
fn split(handle: usize) -> Option<(usize, u8, u32)> {
    let t = handle as u64;
    let index = usize::try_from(t & 0xFF_FFFF).ok()?.checked_sub(1)?;
    Some((index, (t >> 24) as u8, (t >> 32) as u32))
}

/// Makes `value` a live object of `kind`; its handle. `OutOfMemory` when every slot is live.
pub(crate) fn insert<T: 'static>(kind: Kind, value: T) -> Result<usize, RvgpuStatus> {
    let object: Object = Arc::new(Shared::new(value));
    let mut t = TABLE.lock();
    let start = t.next;
    let index = (0..SLOTS)
        .map(|i| (start + i) % SLOTS)
        .find(|&i| t.slots.get(i).is_some_and(|s| s.object.is_none()))
        .ok_or(RvgpuStatus::OutOfMemory)?;
    t.next = (index + 1) % SLOTS;
    let slot = t.slots.get_mut(index).ok_or(RvgpuStatus::OutOfMemory)?;
    slot.kind = kind as u8;
    slot.object = Some(object);
    Ok(token(index, kind, slot.generation))
}

/// Looks `handle` up; `remove` also ends it (its slot's next object gets a new generation).
fn find<T: 'static>(
    kind: Kind,
    handle: usize,
    remove: bool,
) -> Result<Arc<Shared<T>>, RvgpuStatus> {
    if handle == 0 {
        return Err(RvgpuStatus::InvalidArgument);
    }
    let (index, k, generation) = split(handle).ok_or(RvgpuStatus::InvalidHandle)?;
    if k != kind as u8 {
        return Err(RvgpuStatus::InvalidHandle);
    }
    let object = {
        let mut t = TABLE.lock();
        let slot = t.slots.get_mut(index).ok_or(RvgpuStatus::InvalidHandle)?;
        if slot.generation != generation || slot.kind != k {
            return Err(RvgpuStatus::InvalidHandle);
        }
        let object = slot.object.clone().ok_or(RvgpuStatus::InvalidHandle)?;
        if remove {
            slot.object = None;
            slot.generation = slot.generation.checked_add(1).unwrap_or(1);
        }
        object
    };
    object
        .downcast::<Shared<T>>()
        .map_err(|_| RvgpuStatus::InvalidHandle)
}

/// The live object `handle` names: `InvalidArgument` for 0, `InvalidHandle` for anything
/// else that is not a live object of `kind` (and type `T`).
pub(crate) fn get<T: 'static>(kind: Kind, handle: usize) -> Result<Arc<Shared<T>>, RvgpuStatus> {
    find(kind, handle, false)
}

/// As [`get`], and the handle ends: later calls with it return `InvalidHandle`.
pub(crate) fn take<T: 'static>(kind: Kind, handle: usize) -> Result<Arc<Shared<T>>, RvgpuStatus> {
    find(kind, handle, true)
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
}
