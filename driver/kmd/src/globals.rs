//! Driver-wide state: the table of adapters, reachable at any IRQL.
//!
//! Some DDIs identify their object but not its adapter (`DxgkDdiDestroyNativeFence`,
//! `DxgkDdiUpdateMonitoredValues` — the latter at device IRQL). The driver finds the adapter
//! through this table: a fixed array of slots, each a pointer and a count of readers.
//!
//! - A reader increments the count, then loads the pointer; a remover clears the pointer, then
//!   waits for the count to drop to zero before the adapter is freed. This is the
//!   store-buffering pattern: each side has a SeqCst fence between its store and its load, or
//!   the reader could see the old pointer while the remover sees no reader. The protocol is
//!   model-checked in `tests/models` (`adapter_table`).
//! - Readers never block and never allocate, so `with` is usable at device IRQL. The remover
//!   (RemoveDevice, PASSIVE) spins only for the length of a reader's critical section.

use core::any::TypeId;
use core::cell::UnsafeCell;
use core::sync::atomic::{fence, AtomicPtr, AtomicU32, Ordering};

/// Most adapters one driver instance serves.
pub const MAX_ADAPTERS: usize = 16;

struct Slot {
    ptr: AtomicPtr<()>,
    readers: AtomicU32,
    /// The concrete type behind `ptr`, written before `ptr` is published (Release) and read
    /// after it is loaded (Acquire): a slot is never read as the wrong `Adapter<P>`.
    type_id: UnsafeCell<Option<TypeId>>,
}

/// The table.
pub struct AdapterTable {
    slots: [Slot; MAX_ADAPTERS],
}

// SAFETY: `type_id` is written only by `register` while the slot is unpublished (null pointer,
// claimed by a successful compare-exchange from a dedicated "claiming" marker) and read only
// after an Acquire load of a non-null pointer that the write happens-before.
unsafe impl Sync for AdapterTable {}

/// Marks a slot being claimed by `register` (never dereferenced).
const CLAIMING: *mut () = core::ptr::dangling_mut::<()>();

impl AdapterTable {
    /// An empty table (usable in a `static`).
    pub const fn new() -> Self {
        Self {
            slots: [const {
                Slot {
                    ptr: AtomicPtr::new(core::ptr::null_mut()),
                    readers: AtomicU32::new(0),
                    type_id: UnsafeCell::new(None),
                }
            }; MAX_ADAPTERS],
        }
    }

    /// Publishes `object` (which must stay alive until [`AdapterTable::unregister`] returns)
    /// and returns its slot index, or `None` if the table is full.
    pub fn register<T: 'static>(&self, object: *const T) -> Option<u8> {
        for (i, slot) in self.slots.iter().enumerate() {
            let claimed = slot
                .ptr
                .compare_exchange(
                    core::ptr::null_mut(),
                    CLAIMING,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok();
            if claimed {
                // SAFETY: the slot is claimed by this thread (CLAIMING), so no other thread
                // writes `type_id`, and readers ignore a claiming slot.
                unsafe { *slot.type_id.get() = Some(TypeId::of::<T>()) };
                slot.ptr.store(object.cast_mut().cast(), Ordering::Release);
                return u8::try_from(i).ok();
            }
        }
        None
    }

    /// Runs `f` with the object in slot `index` if it is live and of type `T`. Lock-free and
    /// allocation-free; `f` must be short (RemoveDevice waits for it).
    pub fn with<T: 'static, R>(&self, index: u8, f: impl FnOnce(&T) -> R) -> Option<R> {
        let slot = self.slots.get(usize::from(index))?;
        slot.readers.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let p = slot.ptr.load(Ordering::Acquire);
        let result = if p.is_null() || p == CLAIMING {
            None
        } else {
            // SAFETY: `type_id` was written before `p` was published (see `register`).
            let ty = unsafe { *slot.type_id.get() };
            if ty == Some(TypeId::of::<T>()) {
                // SAFETY: `p` is a live `T`: published by `register`, and `unregister` waits
                // for our reader count before its owner frees it.
                Some(f(unsafe { &*p.cast::<T>() }))
            } else {
                None
            }
        };
        slot.readers.fetch_sub(1, Ordering::Release);
        result
    }

    /// Unpublishes slot `index` and waits until no reader is inside [`AdapterTable::with`] for
    /// it; afterwards the object may be freed. PASSIVE only.
    pub fn unregister(&self, index: u8) {
        let Some(slot) = self.slots.get(usize::from(index)) else {
            return;
        };
        // Park the slot as "claiming" (readers ignore it, `register` cannot take it) until no
        // reader can still be reading its `type_id`; only then make it free.
        slot.ptr.store(CLAIMING, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        // Acquire pairs with the readers' Release decrement: their use of the object happens
        // before our caller frees it.
        while slot.readers.load(Ordering::Acquire) != 0 {
            core::hint::spin_loop();
        }
        slot.ptr.store(core::ptr::null_mut(), Ordering::Release);
    }
}

impl Default for AdapterTable {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for AdapterTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let live = self
            .slots
            .iter()
            .filter(|s| {
                let p = s.ptr.load(Ordering::Relaxed);
                !p.is_null() && p != CLAIMING
            })
            .count();
        f.debug_struct("AdapterTable").field("live", &live).finish()
    }
}

/// The driver's adapter table.
pub static ADAPTERS: AdapterTable = AdapterTable::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_lookup_unregister() {
        let t = AdapterTable::new();
        let a = Box::new(41u32);
        let i = t.register(&*a as *const u32).unwrap();
        assert_eq!(t.with(i, |v: &u32| *v + 1), Some(42));
        assert_eq!(
            t.with(i, |_: &u64| ()),
            None,
            "wrong type is never dereferenced"
        );
        t.unregister(i);
        assert_eq!(t.with(i, |v: &u32| *v), None);
        assert_eq!(t.with(200, |v: &u32| *v), None, "out of range");
    }

    #[test]
    fn full_table_and_slot_reuse() {
        assert_eq!(MAX_ADAPTERS, 16);
        let t = AdapterTable::new();
        let objs: Vec<Box<u32>> = (0..16u32).map(Box::new).collect();
        let idx: Vec<u8> = objs
            .iter()
            .map(|o| t.register(&**o as *const u32).unwrap())
            .collect();
        let extra = Box::new(99u32);
        assert_eq!(t.register(&*extra as *const u32), None);
        t.unregister(idx[3]);
        assert_eq!(t.register(&*extra as *const u32), Some(idx[3]));
        assert_eq!(t.with(idx[3], |v: &u32| *v), Some(99));
    }

    #[test]
    fn unregister_waits_for_readers() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let t = Arc::new(AdapterTable::new());
        let obj = Box::leak(Box::new(AtomicBool::new(true)));
        let i = t.register(obj as *const AtomicBool).unwrap();
        let reader = {
            let t = t.clone();
            std::thread::spawn(move || {
                for _ in 0..200_000 {
                    // While registered, the object must be alive (true).
                    if let Some(alive) = t.with(i, |b: &AtomicBool| b.load(Ordering::SeqCst)) {
                        assert!(alive, "read an adapter after unregister returned");
                    }
                }
            })
        };
        std::thread::yield_now();
        t.unregister(i);
        // "Free" it: anything reading it from now on would see false.
        obj.store(false, Ordering::SeqCst);
        reader.join().unwrap();
    }
}
