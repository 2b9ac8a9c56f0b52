//! The one way the simulation takes a mutex (a leaf: every module locks, none of them needs
//! more than this to do it), and the check that its locks are always taken in one order.
//!
//! Two threads that take the same two locks in opposite orders can deadlock, but only when
//! their windows overlap, which a test run may never hit. In debug builds every acquisition
//! goes through `rvgpu_lockdep`, which stops the process on the first one that closes a cycle,
//! as Driver Verifier's deadlock detection stops a driver (bug check 0xC4, parameter 0x1001).
//! This module decides what a lock's class is (`class`): taking the adapter's fence table,
//! then a fence's state, on one path and a fence's state, then the table, on another is
//! reported the first time both orders have been seen, whether or not the threads ever met.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

/// A held mutex ([`lock`]); derefs to the guarded value. The order record is told of the
/// release before the mutex is let go (`Held` is dropped first: fields drop in order).
pub(crate) struct Locked<'a, T: ?Sized> {
    #[cfg(debug_assertions)]
    class: Held,
    guard: MutexGuard<'a, T>,
}

/// The order record's entry for a held lock of a class (none: not ordered).
#[cfg(debug_assertions)]
struct Held(Option<rvgpu_lockdep::Class>);

#[cfg(debug_assertions)]
impl Held {
    /// The class, with the record no longer told of a release when this is dropped.
    fn take(mut self) -> Option<rvgpu_lockdep::Class> {
        self.0.take()
    }
}

#[cfg(debug_assertions)]
impl Drop for Held {
    fn drop(&mut self) {
        if let Some(class) = self.0 {
            rvgpu_lockdep::released(class);
        }
    }
}

impl<T: ?Sized> Deref for Locked<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: ?Sized> DerefMut for Locked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for Locked<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// Locks a mutex, recovering the data if a thread panicked while holding it: a panic is already
/// a test failure, and the simulation must still be able to report what it recorded.
#[track_caller]
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> Locked<'_, T> {
    #[cfg(debug_assertions)]
    let class = {
        let site = std::panic::Location::caller();
        class(std::any::type_name::<T>(), site).map(|c| rvgpu_lockdep::acquiring(c, site))
    };
    let guard = m.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    Locked {
        #[cfg(debug_assertions)]
        class: Held(class),
        guard,
    }
}

/// Runs `wait` (a condition-variable wait) on a held mutex: the lock is let go while waiting
/// (so it is not held for the order check either) and held again when `wait` returns.
#[track_caller]
pub(crate) fn waiting<'a, T: ?Sized, R>(
    held: Locked<'a, T>,
    wait: impl FnOnce(MutexGuard<'a, T>) -> (MutexGuard<'a, T>, R),
) -> (Locked<'a, T>, R) {
    #[cfg(debug_assertions)]
    let Locked { class, guard } = held;
    #[cfg(not(debug_assertions))]
    let Locked { guard } = held;
    #[cfg(debug_assertions)]
    let class = class.take();
    #[cfg(debug_assertions)]
    if let Some(class) = class {
        rvgpu_lockdep::released(class);
    }
    let (guard, result) = wait(guard);
    #[cfg(debug_assertions)]
    if let Some(class) = class {
        rvgpu_lockdep::reacquired(class, std::panic::Location::caller());
    }
    (
        Locked {
            #[cfg(debug_assertions)]
            class: Held(class),
            guard,
        },
        result,
    )
}

/// The class of a mutex over `ty` taken at `site`, if it is ordered at all: the guarded
/// value's type, when it is one of the simulated OS's own (`rvgpu_simos::…`, one kind of object
/// per type). A mutex that guards nothing (`Mutex<()>`, a lock for a sequence rather than for
/// data) has no type to tell it apart, so each place that takes one is its own class: cycles
/// through two such places are still found, while one of them taken at two places may hide a
/// cycle. A mutex over a standard type (`bool`, a `Vec`, a map) is not ordered at all: many
/// unrelated locks share such a type, and one class for all of them would report cycles that
/// do not exist.
#[cfg(debug_assertions)]
fn class(ty: &'static str, site: rvgpu_lockdep::Site) -> Option<rvgpu_lockdep::Class> {
    if ty == "()" {
        Some(rvgpu_lockdep::Class::of_site(site))
    } else if ty.starts_with("rvgpu_simos::") {
        Some(rvgpu_lockdep::Class::of_type(ty))
    } else {
        None
    }
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::lock;
    use std::sync::Mutex;

    /// Two kinds of object of the simulated OS, each behind its own lock.
    struct Table;
    struct Entry;

    /// Set in the child process the tests below start: it runs the orders, the parent judges.
    const CHILD: &str = "RVGPU_LOCK_ORDER_CHILD";

    /// Runs test `name` of this binary in a child process that takes the locks; its exit
    /// status and what it wrote to stderr.
    fn in_child(name: &str) -> (bool, String) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn opposite_orders_on_two_threads_stop_the_process_though_they_never_meet() {
        if std::env::var_os(CHILD).is_some() {
            let (table, entry) = (Mutex::new(Table), Mutex::new(Entry));
            std::thread::scope(|s| {
                s.spawn(|| {
                    let _t = lock(&table);
                    let _e = lock(&entry);
                })
                .join()
                .unwrap();
                // The first thread is gone: no deadlock can happen now, the order alone is
                // the fault.
                s.spawn(|| {
                    let _e = lock(&entry);
                    let _t = lock(&table);
                })
                .join()
                .unwrap();
            });
            return;
        }
        let (ok, stderr) = in_child(
            "base::lock::tests::opposite_orders_on_two_threads_stop_the_process_though_they_never_meet",
        );
        assert!(!ok, "the child finished: {stderr}");
        assert!(stderr.contains("lock order violated"), "{stderr}");
        assert!(stderr.contains("lock::tests::Table"), "{stderr}");
        assert!(stderr.contains("lock::tests::Entry"), "{stderr}");
    }

    #[test]
    fn one_order_kept_everywhere_and_nested_objects_of_one_kind_pass() {
        if std::env::var_os(CHILD).is_some() {
            let table = Mutex::new(Table);
            let (a, b) = (Mutex::new(Entry), Mutex::new(Entry));
            for _ in 0..2 {
                let _t = lock(&table);
                let _a = lock(&a);
                let _b = lock(&b);
            }
            // The other way round within one kind, and released out of order.
            let t = lock(&table);
            let bb = lock(&b);
            let aa = lock(&a);
            drop(t);
            drop(bb);
            drop(aa);
            let _t = lock(&table);
            return;
        }
        let (ok, stderr) = in_child(
            "base::lock::tests::one_order_kept_everywhere_and_nested_objects_of_one_kind_pass",
        );
        assert!(ok, "{stderr}");
    }
}
