//! Locks for state shared between DDIs and DPCs.
//!
//! State the ISR touches is never behind these locks: the ISR runs above DISPATCH_LEVEL and
//! reaches shared state only through `DxgkCbSynchronizeExecution` (see `interrupt`). These
//! locks protect state shared by PASSIVE-level DDIs and DISPATCH-level DPCs, so they raise to
//! DISPATCH_LEVEL while held: a DPC on the same processor then cannot preempt the holder and
//! spin forever.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::platform::{Irql, Platform};

/// A spin lock that raises to DISPATCH_LEVEL (a KSPIN_LOCK in spirit).
pub struct SpinLock<P: Platform, T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
    _platform: PhantomData<fn() -> P>,
}

// SAFETY: the lock serialises all access to `value`, so sharing the lock between threads is
// sound when the protected value may be sent between them.
unsafe impl<P: Platform, T: Send> Sync for SpinLock<P, T> {}
// SAFETY: moving the lock moves the value; no thread-affine state is kept.
unsafe impl<P: Platform, T: Send> Send for SpinLock<P, T> {}

impl<P: Platform, T> SpinLock<P, T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
            _platform: PhantomData,
        }
    }

    /// Acquires the lock, raising to DISPATCH_LEVEL. Must not be called above DISPATCH_LEVEL
    /// (the ISR never takes these locks).
    pub fn lock(&self) -> SpinGuard<'_, P, T> {
        let previous = P::raise_to_dispatch();
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
        SpinGuard {
            lock: self,
            previous,
        }
    }

    /// Acquires the lock only if it is free now, raising to DISPATCH_LEVEL while held; never
    /// spins, so a zero-level DDI may ask beside any holder. Must not be called above
    /// DISPATCH_LEVEL.
    pub fn try_lock(&self) -> Option<SpinGuard<'_, P, T>> {
        let previous = P::raise_to_dispatch();
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            Some(SpinGuard {
                lock: self,
                previous,
            })
        } else {
            P::lower_irql(previous);
            None
        }
    }

    /// Mutable access without locking, through exclusive ownership.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<P: Platform, T> core::fmt::Debug for SpinLock<P, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SpinLock")
            .field("locked", &self.locked.load(Ordering::Relaxed))
            .finish()
    }
}

/// Holds a [`SpinLock`]; releases it and restores the IRQL on drop.
pub struct SpinGuard<'a, P: Platform, T> {
    lock: &'a SpinLock<P, T>,
    previous: Irql,
}

impl<P: Platform, T> core::fmt::Debug for SpinGuard<'_, P, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SpinGuard")
            .field("previous", &self.previous)
            .finish()
    }
}

impl<P: Platform, T> Deref for SpinGuard<'_, P, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<P: Platform, T> DerefMut for SpinGuard<'_, P, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard exists only while this thread holds the lock, exclusively.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<P: Platform, T> Drop for SpinGuard<'_, P, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
        P::lower_irql(self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host;

    #[test]
    fn try_lock_never_waits_for_a_holder() {
        let l = SpinLock::<Host, u32>::new(7);
        {
            let held = l.lock();
            assert!(l.try_lock().is_none(), "taken while held");
            assert_eq!(*held, 7);
        }
        let mut g = l.try_lock().expect("free again");
        *g = 8;
        drop(g);
        assert_eq!(*l.lock(), 8);
    }
}
