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
    use std::collections::{HashMap, HashSet};
    use std::io::Write;
    use std::panic::Location;
    use std::sync::Mutex;

    use rvgpu_device::hash::MulHash;

    type Site = &'static Location<'static>;

    /// What the order is kept between: the guarded value's type, when it is one of the
    /// simulated OS's own (`rvgpu_simos::…`, one kind of object per type). A mutex that guards
    /// nothing (`Mutex<()>`, a lock for a sequence rather than for data) has no type to tell it
    /// apart, so each place that takes one is its own class: cycles through two such places are
    /// still found, while one of them taken at two places may hide a cycle. A mutex over a
    /// standard type (`bool`, a `Vec`, a map) is not ordered at all: many unrelated locks share
    /// such a type, and one class for all of them would report cycles that do not exist.
    ///
    /// A class is a small number given out once per name ([`Names`]), so the check on every
    /// acquisition hashes integers, not type names.
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    pub(super) struct Class(u32);

    /// A class's name: a type, or the place a unit lock is taken.
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    enum Name {
        Type(&'static str),
        Site(&'static str, u32, u32),
    }

    impl std::fmt::Display for Name {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Name::Type(ty) => write!(f, "Mutex<{ty}>"),
                Name::Site(file, line, col) => {
                    write!(f, "the unit lock taken at {file}:{line}:{col}")
                }
            }
        }
    }

    /// Every class's name, by number, and the numbers by name.
    #[derive(Default)]
    struct Names {
        by_name: HashMap<Name, Class>,
        names: Vec<Name>,
    }

    type Graph = HashMap<Class, HashMap<Class, (Site, Site), MulHash>, MulHash>;

    #[derive(Default)]
    struct Record {
        names: Names,
        /// Edges held -> taken, each with where the two were taken when it was first seen.
        graph: Graph,
    }

    static RECORD: Mutex<Option<Record>> = Mutex::new(None);

    fn record<R>(f: impl FnOnce(&mut Record) -> R) -> R {
        let mut g = RECORD.lock().unwrap_or_else(|p| p.into_inner());
        f(g.get_or_insert_with(Record::default))
    }

    thread_local! {
        /// The classes this thread holds, in the order taken, with where each was taken.
        static HELD: RefCell<Vec<(Class, Site)>> = const { RefCell::new(Vec::new()) };
        /// Edges this thread already checked (the global record is consulted once per edge
        /// and thread).
        static SEEN: RefCell<HashSet<(Class, Class), MulHash>> = RefCell::new(HashSet::default());
        /// Classes this thread already looked up, by the address of their name (a type name
        /// or a call site is a static: one address per name, as far as this thread sees it).
        static CLASSES: RefCell<HashMap<usize, Class, MulHash>> = RefCell::new(HashMap::default());
    }

    impl Class {
        /// The class of a mutex over `ty` taken at `site`, if it is ordered at all.
        pub(super) fn of(ty: &'static str, site: Site) -> Option<Self> {
            let (key, name) = if ty == "()" {
                (
                    site as *const Location<'static> as usize,
                    Name::Site(site.file(), site.line(), site.column()),
                )
            } else if ty.starts_with("rvgpu_simos::") {
                (ty.as_ptr() as usize, Name::Type(ty))
            } else {
                return None;
            };
            let known = CLASSES.with(|c| c.borrow().get(&key).copied());
            Some(known.unwrap_or_else(|| {
                let class = record(|r| {
                    let next = Class(u32::try_from(r.names.names.len()).unwrap_or(u32::MAX));
                    let class = *r.names.by_name.entry(name).or_insert(next);
                    if class == next {
                        r.names.names.push(name);
                    }
                    class
                });
                CLASSES.with(|c| c.borrow_mut().insert(key, class));
                class
            }))
        }
    }

    /// Records that `class` is about to be taken at `site`; stops the process if that closes
    /// a cycle with an order already seen. Checked before blocking, so a real deadlock is
    /// reported rather than hung in.
    pub(super) fn acquiring(class: Class, site: Site) -> Class {
        let new: Vec<(Class, Site)> = HELD.with(|h| {
            let h = h.borrow();
            if h.is_empty() {
                return Vec::new();
            }
            SEEN.with(|s| {
                let mut seen = s.borrow_mut();
                h.iter()
                    .filter(|(held, _)| *held != class && seen.insert((*held, class)))
                    .copied()
                    .collect()
            })
        });
        for (held, held_site) in new {
            add_edge(held, held_site, class, site);
        }
        reacquired(class, site);
        class
    }

    /// `class` is held again (after a condition-variable wait).
    pub(super) fn reacquired(class: Class, site: Site) {
        HELD.with(|h| h.borrow_mut().push((class, site)));
    }

    /// The last-taken hold of `class` ends (guards may drop in any order).
    pub(super) fn released(class: Class) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(i) = h.iter().rposition(|(c, _)| *c == class) {
                h.remove(i);
            }
        });
    }

    fn add_edge(held: Class, held_site: Site, taken: Class, site: Site) {
        let report = record(|r| {
            if let Some(path) = path(&r.graph, taken, held) {
                let name = |c: Class| {
                    r.names
                        .names
                        .get(c.0 as usize)
                        .map_or_else(|| "?".to_string(), |n| n.to_string())
                };
                let mut msg = format!(
                    "simulated OS lock order violated (Driver Verifier's deadlock detection \
                     stops a driver with 0xC4/0x1001 for this):\n  taking {} at {site}\n  \
                     while holding {} (taken at {held_site}),\n  but the opposite order was \
                     seen before:\n",
                    name(taken),
                    name(held)
                );
                for (a, b, (sa, sb)) in path {
                    msg.push_str(&format!(
                        "    {} taken at {sb} while holding {} (taken at {sa})\n",
                        name(b),
                        name(a)
                    ));
                }
                return Some(msg);
            }
            r.graph
                .entry(held)
                .or_default()
                .entry(taken)
                .or_insert((held_site, site));
            None
        });
        if let Some(msg) = report {
            // Straight to the file descriptor: the test harness's capture of `eprintln!` would
            // be lost with the process.
            let _ = std::io::stderr().write_all(msg.as_bytes());
            std::process::abort();
        }
    }

    /// The edges of a path `from` -> ... -> `to`, if one exists.
    fn path(graph: &Graph, from: Class, to: Class) -> Option<Vec<(Class, Class, (Site, Site))>> {
        let mut parent: HashMap<Class, (Class, (Site, Site))> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        let mut visited = HashSet::from([from]);
        while let Some(n) = queue.pop_front() {
            if n == to {
                let mut edges = Vec::new();
                let mut at = to;
                while let Some(&(p, sites)) = parent.get(&at) {
                    edges.push((p, at, sites));
                    at = p;
                }
                edges.reverse();
                return Some(edges);
            }
            for (&next, &sites) in graph.get(&n).into_iter().flatten() {
                if visited.insert(next) {
                    parent.insert(next, (n, sites));
                    queue.push_back(next);
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
