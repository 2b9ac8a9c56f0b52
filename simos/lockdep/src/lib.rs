//! The order the simulated OS takes its locks in, checked on every acquisition.
//!
//! Two threads that take the same two locks in opposite orders can deadlock, but only when
//! their windows overlap, which a test run may never hit. Driver Verifier's deadlock detection
//! catches the same hazard in a driver from the order alone (bug check 0xC4, parameter
//! 0x1001, on the first acquisition that closes a cycle); the simulated OS holds itself to that
//! rule in debug builds. This crate keeps the record: every "class A held while class B was
//! taken" seen in the process, and the classes each thread holds now. Which locks form a class
//! is the caller's policy (`rvgpu_simos::base::lock`): a class is named by a type or by the
//! place a lock is taken. Locks of one class nested in each other are not ordered.
//!
//! The record lives in fixed tables and never touches the heap (tests that count a machine's
//! heap bytes do not see it), and it is a crate of its own so that debug builds, where it runs
//! on every lock, compile it optimised.

use std::cell::RefCell;
use std::io::Write;
use std::panic::Location;
use std::sync::Mutex;

/// Where a lock is taken.
pub type Site = &'static Location<'static>;

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

/// A lock class: the unit the order is kept between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class(u16);

/// A class's name: a type, or the place a lock is taken.
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

type Bits = [[u64; WORDS]; CLASSES];

/// Every class's name, by number; every edge held -> taken as a bit, with where the two were
/// taken when it was first seen.
struct Record {
    names: [Option<Name>; CLASSES],
    count: usize,
    after: Bits,
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

/// Stops the process with `msg` (straight to the file descriptor: a test harness's capture of
/// `eprintln!` would be lost with the process).
fn stop(msg: &str) -> ! {
    let _ = std::io::stderr().write_all(msg.as_bytes());
    std::process::abort()
}

/// What one thread keeps: the classes it holds (each with where it was first taken and how
/// many of its locks are held), the edges it already checked (so the record is consulted once
/// per edge and thread), and the classes it already looked up, by the address of their name (a
/// type name or a call site is a static), so that a take consults the record's lock only the
/// first time: open addressing, a few probes, an entry overwritten when they are full.
struct Thread {
    held: [(u16, Option<Site>, u32); DEPTH],
    len: usize,
    seen: Bits,
    known: [(usize, u16); CACHE],
}

thread_local! {
    static THREAD: RefCell<Thread> = const {
        RefCell::new(Thread {
            held: [(0, None, 0); DEPTH],
            len: 0,
            seen: [[0; WORDS]; CLASSES],
            known: [(0, 0); CACHE],
        })
    };
}

fn bit(m: &Bits, a: u16, b: u16) -> bool {
    m.get(usize::from(a))
        .and_then(|row| row.get(usize::from(b) / 64))
        .is_some_and(|w| w & (1 << (b % 64)) != 0)
}

fn set(m: &mut Bits, a: u16, b: u16) {
    if let Some(w) = m
        .get_mut(usize::from(a))
        .and_then(|row| row.get_mut(usize::from(b) / 64))
    {
        *w |= 1 << (b % 64);
    }
}

impl Class {
    /// The class of the locks over values of type `ty` (its `std::any::type_name`).
    pub fn of_type(ty: &'static str) -> Self {
        Self::of(ty.as_ptr() as usize, Name::Type(ty))
    }

    /// The class of the locks taken at `site`.
    pub fn of_site(site: Site) -> Self {
        Self::of(site as *const Location<'static> as usize, Name::Site(site))
    }

    fn of(key: usize, name: Name) -> Self {
        let slot = (key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 8);
        let cached = THREAD.with(|t| {
            let t = t.borrow();
            (0..PROBES).find_map(|i| {
                let (k, id) = t.known[(slot + i) % CACHE];
                (k == key).then_some(id)
            })
        });
        if let Some(id) = cached {
            return Class(id);
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
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            let free = (0..PROBES)
                .find(|i| t.known[(slot + i) % CACHE].0 == 0)
                .unwrap_or(0);
            t.known[(slot + free) % CACHE] = (key, id);
        });
        Class(id)
    }
}

/// Records that `class` is about to be taken at `site`; stops the process if that closes a
/// cycle with an order already seen. Called before blocking, so a real deadlock is reported
/// rather than hung in.
pub fn acquiring(class: Class, site: Site) -> Class {
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        let t = &mut *t;
        for &(held, held_site, _) in &t.held[..t.len] {
            if held == class.0 || bit(&t.seen, held, class.0) {
                continue;
            }
            set(&mut t.seen, held, class.0);
            if let Some(held_site) = held_site {
                add_edge(held, held_site, class.0, site);
            }
        }
        hold(t, class, site);
    });
    class
}

/// `class` is held again (after a condition-variable wait).
pub fn reacquired(class: Class, site: Site) {
    THREAD.with(|t| hold(&mut t.borrow_mut(), class, site));
}

fn hold(t: &mut Thread, class: Class, site: Site) {
    let len = t.len;
    if let Some(e) = t.held[..len]
        .iter_mut()
        .rev()
        .find(|(c, _, _)| *c == class.0)
    {
        e.2 += 1;
        return;
    }
    if len == DEPTH {
        stop("simulated OS lock-order check: a thread holds more classes than it records\n");
    }
    t.held[len] = (class.0, Some(site), 1);
    t.len += 1;
}

/// A hold of `class` ends (guards may drop in any order).
pub fn released(class: Class) {
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        let len = t.len;
        if let Some(i) = t.held[..len].iter().rposition(|(c, _, _)| *c == class.0) {
            t.held[i].2 -= 1;
            if t.held[i].2 == 0 {
                t.held.copy_within(i + 1..len, i);
                t.len -= 1;
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
                "simulated OS lock order violated (Driver Verifier's deadlock detection stops a \
                 driver with 0xC4/0x1001 for this):\n  taking {} at {site}\n  while holding {} \
                 (taken at {held_site}),\n  but the opposite order was seen before:\n",
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
