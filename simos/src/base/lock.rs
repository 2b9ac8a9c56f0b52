//! The one way the simulation takes a mutex (a leaf: every module locks, none of them needs
//! more than this to do it), and the check that its locks are always taken in one order.
//!
//! Two threads that take the same two locks in opposite orders can deadlock, but only when
//! their windows overlap, which a test run may never hit. Driver Verifier's deadlock
//! detection catches the same hazard in a driver from the order alone (bug check 0xC4,
//! parameter 0x1001, on the first acquisition that closes a cycle); the simulated OS holds
//! itself to that rule in debug builds ([`order`]). A lock's class is the type of the value
//! it guards, so every fence's state is one class and the adapter's fence table another:
//! taking the table, then a fence's state, on one path and a fence's state, then the table, on
//! another is reported the first time both orders have been seen, whether or not the threads
//! ever met. Locks of one class nested in each other (two fences' states) are not ordered by
//! this check.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

/// A held mutex ([`lock`]); derefs to the guarded value.
pub(crate) struct Locked<'a, T: ?Sized> {
    guard: MutexGuard<'a, T>,
    #[cfg(debug_assertions)]
    class: Option<order::Class>,
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

impl<T: ?Sized> Drop for Locked<'_, T> {
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        if let Some(class) = self.class {
            order::released(class);
        }
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
        order::Class::of(std::any::type_name::<T>(), site).map(|c| order::acquiring(c, site))
    };
    let guard = m.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    Locked {
        guard,
        #[cfg(debug_assertions)]
        class,
    }
}

/// Runs `wait` (a condition-variable wait) on a held mutex: the lock is let go while waiting
/// (so it is not held for the order check either) and held again when `wait` returns.
#[track_caller]
pub(crate) fn waiting<'a, T: ?Sized, R>(
    held: Locked<'a, T>,
    wait: impl FnOnce(MutexGuard<'a, T>) -> (MutexGuard<'a, T>, R),
) -> (Locked<'a, T>, R) {
    let held = std::mem::ManuallyDrop::new(held);
    // SAFETY: `held` is never used or dropped again (`ManuallyDrop`): its guard is moved out
    // exactly once, and its class is `Copy`.
    let guard = unsafe { std::ptr::read(&held.guard) };
    #[cfg(debug_assertions)]
    let class = held.class;
    #[cfg(debug_assertions)]
    if let Some(class) = class {
        order::released(class);
    }
    let (guard, result) = wait(guard);
    #[cfg(debug_assertions)]
    if let Some(class) = class {
        order::reacquired(class, std::panic::Location::caller());
    }
    (
        Locked {
            guard,
            #[cfg(debug_assertions)]
            class,
        },
        result,
    )
}

/// The lock-order record: every "class A held while class B was taken" seen in the process,
/// and the locks each thread holds now.
#[cfg(debug_assertions)]
mod order {
    use std::cell::RefCell;
    use std::io::Write;
    use std::panic::Location;
    use std::sync::Mutex;

    type Site = &'static Location<'static>;

    /// Classes at most (the simulated OS has a few dozen).
    const CLASSES: usize = 512;
    /// Ordered pairs of classes at most.
    const EDGES: usize = 4096;
    /// Classes one thread holds at once at most (locks of one class held together count once).
    const DEPTH: usize = 128;
    const WORDS: usize = CLASSES / 64;
    /// Entries of a thread's cache of classes, and the probes a lookup makes.
    const CACHE: usize = 256;
    const PROBES: usize = 4;

    /// What the order is kept between: the guarded value's type, when it is one of the
    /// simulated OS's own (`rvgpu_simos::…`, one kind of object per type). A mutex that guards
    /// nothing (`Mutex<()>`, a lock for a sequence rather than for data) has no type to tell it
    /// apart, so each place that takes one is its own class: cycles through two such places are
    /// still found, while one of them taken at two places may hide a cycle. A mutex over a
    /// standard type (`bool`, a `Vec`, a map) is not ordered at all: many unrelated locks share
    /// such a type, and one class for all of them would report cycles that do not exist.
    ///
    /// The record lives in fixed tables and never touches the heap, so the tests that count a
    /// machine's heap bytes (`simos/tests/low_resources.rs`) do not see it.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(super) struct Class(u16);

    /// A class's name: a type, or the place a unit lock is taken.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Name {
        Type(&'static str),
        Site(Site),
    }

    impl std::fmt::Display for Name {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Name::Type(ty) => write!(f, "Mutex<{ty}>"),
                Name::Site(site) => write!(f, "the unit lock taken at {site}"),
            }
        }
    }

    /// Every class's name, by number; every edge held -> taken as a bit, with where the two
    /// were taken when it was first seen.
    struct Record {
        names: [Option<Name>; CLASSES],
        count: usize,
        after: [[u64; WORDS]; CLASSES],
        sites: [Option<(u16, u16, Site, Site)>; EDGES],
        edges: usize,
    }

    static RECORD: Mutex<Record> = Mutex::new(Record {
        names: [None; CLASSES],
        count: 0,
        after: [[0; WORDS]; CLASSES],
        sites: [None; EDGES],
        edges: 0,
    });

    fn record<R>(f: impl FnOnce(&mut Record) -> R) -> R {
        f(&mut RECORD.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Stops the process with `msg` (straight to the file descriptor: the test harness's
    /// capture of `eprintln!` would be lost with the process).
    fn stop(msg: &str) -> ! {
        let _ = std::io::stderr().write_all(msg.as_bytes());
        std::process::abort()
    }

    /// The classes one thread holds: each with where it was first taken and how many of its
    /// locks are held.
    struct Held {
        locks: [(u16, Option<Site>, u32); DEPTH],
        len: usize,
    }

    thread_local! {
        static HELD: RefCell<Held> =
            const { RefCell::new(Held { locks: [(0, None, 0); DEPTH], len: 0 }) };
        /// Edges this thread already checked (the record is consulted once per edge and
        /// thread), as bits.
        static SEEN: RefCell<[[u64; WORDS]; CLASSES]> = const { RefCell::new([[0; WORDS]; CLASSES]) };
        /// Classes this thread already looked up, by the address of their name (a type name or
        /// a call site is a static), so that a take consults the record's lock only the first
        /// time: open addressing, a few probes, an entry overwritten when they are full.
        static KNOWN: RefCell<[(usize, u16); CACHE]> = const { RefCell::new([(0, 0); CACHE]) };
    }

    fn bit(m: &[[u64; WORDS]; CLASSES], a: u16, b: u16) -> bool {
        m.get(usize::from(a))
            .and_then(|row| row.get(usize::from(b) / 64))
            .is_some_and(|w| w & (1 << (b % 64)) != 0)
    }

    fn set(m: &mut [[u64; WORDS]; CLASSES], a: u16, b: u16) {
        if let Some(w) = m
            .get_mut(usize::from(a))
            .and_then(|row| row.get_mut(usize::from(b) / 64))
        {
            *w |= 1 << (b % 64);
        }
    }

    impl Class {
        /// The class of a mutex over `ty` taken at `site`, if it is ordered at all.
        pub(super) fn of(ty: &'static str, site: Site) -> Option<Self> {
            let (key, name) = if ty == "()" {
                (site as *const Location<'static> as usize, Name::Site(site))
            } else if ty.starts_with("rvgpu_simos::") {
                (ty.as_ptr() as usize, Name::Type(ty))
            } else {
                return None;
            };
            let slot = (key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 8);
            let cached = KNOWN.with(|k| {
                let k = k.borrow();
                (0..PROBES).find_map(|i| {
                    let (k0, id) = k[(slot + i) % CACHE];
                    (k0 == key).then_some(id)
                })
            });
            if let Some(id) = cached {
                return Some(Class(id));
            }
            let id = record(|r| {
                let known = r.names[..r.count].iter().position(|n| *n == Some(name));
                known.unwrap_or_else(|| {
                    if r.count == CLASSES {
                        stop("simulated OS lock-order check: more lock classes than it records\n");
                    }
                    r.names[r.count] = Some(name);
                    r.count += 1;
                    r.count - 1
                })
            });
            let id = u16::try_from(id).unwrap_or(u16::MAX);
            KNOWN.with(|k| {
                let mut t = k.borrow_mut();
                let free = (0..PROBES)
                    .find(|i| t[(slot + i) % CACHE].0 == 0)
                    .unwrap_or(0);
                t[(slot + free) % CACHE] = (key, id);
            });
            Some(Class(id))
        }
    }

    /// Records that `class` is about to be taken at `site`; stops the process if that closes
    /// a cycle with an order already seen. Checked before blocking, so a real deadlock is
    /// reported rather than hung in.
    pub(super) fn acquiring(class: Class, site: Site) -> Class {
        HELD.with(|h| {
            let h = h.borrow();
            for &(held, held_site, _) in &h.locks[..h.len] {
                if held == class.0 {
                    continue;
                }
                let new = SEEN.with(|s| {
                    let mut s = s.borrow_mut();
                    let new = !bit(&s, held, class.0);
                    set(&mut s, held, class.0);
                    new
                });
                if let (true, Some(held_site)) = (new, held_site) {
                    add_edge(held, held_site, class.0, site);
                }
            }
        });
        reacquired(class, site);
        class
    }

    /// `class` is held again (after a condition-variable wait).
    pub(super) fn reacquired(class: Class, site: Site) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            let len = h.len;
            if let Some(e) = h.locks[..len].iter_mut().find(|(c, _, _)| *c == class.0) {
                e.2 += 1;
                return;
            }
            if len == DEPTH {
                stop(
                    "simulated OS lock-order check: a thread holds more classes than it records\n",
                );
            }
            h.locks[len] = (class.0, Some(site), 1);
            h.len += 1;
        });
    }

    /// The last-taken hold of `class` ends (guards may drop in any order).
    pub(super) fn released(class: Class) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            let len = h.len;
            if let Some(i) = h.locks[..len].iter().position(|(c, _, _)| *c == class.0) {
                h.locks[i].2 -= 1;
                if h.locks[i].2 == 0 {
                    h.locks.copy_within(i + 1..len, i);
                    h.len -= 1;
                }
            }
        });
    }

    fn add_edge(held: u16, held_site: Site, taken: u16, site: Site) {
        record(|r| {
            if let Some(path) = path(r, taken, held) {
                let name = |c: u16| match r.names.get(usize::from(c)).copied().flatten() {
                    Some(n) => n.to_string(),
                    None => "?".to_string(),
                };
                let mut msg = format!(
                    "simulated OS lock order violated (Driver Verifier's deadlock detection \
                     stops a driver with 0xC4/0x1001 for this):\n  taking {} at {site}\n  \
                     while holding {} (taken at {held_site}),\n  but the opposite order was \
                     seen before:\n",
                    name(taken),
                    name(held)
                );
                for (a, b) in path {
                    let sites = r.sites[..r.edges]
                        .iter()
                        .flatten()
                        .find(|(x, y, _, _)| (*x, *y) == (a, b));
                    if let Some((_, _, sa, sb)) = sites {
                        msg.push_str(&format!(
                            "    {} taken at {sb} while holding {} (taken at {sa})\n",
                            name(b),
                            name(a)
                        ));
                    }
                }
                stop(&msg);
            }
            if bit(&r.after, held, taken) {
                return;
            }
            if r.edges == EDGES {
                stop("simulated OS lock-order check: more lock orders than it records\n");
            }
            set(&mut r.after, held, taken);
            r.sites[r.edges] = Some((held, taken, held_site, site));
            r.edges += 1;
        });
    }

    /// The edges of a path `from` -> ... -> `to` in the record, if one exists (a breadth-first
    /// search over fixed arrays: reporting is the only time it allocates).
    fn path(r: &Record, from: u16, to: u16) -> Option<Vec<(u16, u16)>> {
        let mut parent = [u16::MAX; CLASSES];
        let mut queue = [0u16; CLASSES];
        let (mut head, mut tail) = (0, 1);
        queue[0] = from;
        let mut visited = [false; CLASSES];
        visited[usize::from(from) % CLASSES] = true;
        while head < tail {
            let n = queue[head];
            head += 1;
            if n == to {
                let mut edges = Vec::new();
                let mut at = to;
                while at != from {
                    let p = parent[usize::from(at) % CLASSES];
                    edges.push((p, at));
                    at = p;
                }
                edges.reverse();
                return Some(edges);
            }
            for next in 0..r.count {
                let next16 = u16::try_from(next).unwrap_or(u16::MAX);
                if bit(&r.after, n, next16) && !visited[next] {
                    visited[next] = true;
                    parent[next] = n;
                    queue[tail] = next16;
                    tail += 1;
                }
            }
        }
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
