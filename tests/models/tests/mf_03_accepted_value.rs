//! MF-03: a hardware queue's accepted progress value (`HwqSched::accepted`,
//! `simos/src/ums/hwqueue.rs` and `held.rs`), checked exhaustively with `loom`.
//!
//! The value is the highest progress value the OS took for the queue; a signal packet waits
//! for the queue's progress fence to reach the value it reads. Writers raise it with
//! `fetch_max`: a submission held behind other work under the queue's state lock together
//! with its list entry; a direct submission once the KMD took it, without the lock (no entry
//! goes with it). The signal reads it without the lock, then queues its entry under it: a
//! held value it read is in the list before the signal's entry can be.
//!
//! The invariants: every held submission whose value a signal read is ahead of that signal in
//! the list (the signal never waits for work queued behind it); a signal queued after a
//! submission returned (the same thread) waits for at least its value; the value ends at the
//! highest one. The negative control raises a held submission's value before taking the lock,
//! and loom must find a signal ahead of the held submission it waits for.
//!
//! The model mirrors the simulated OS step for step; keep them in sync.

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// The panic message of a violation; the negative control looks for it.
const BEHIND: &str = "a signal waits for a held submission queued behind it";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Submit(u64),
    Signal { after: u64 },
}

#[derive(Default)]
struct Queue {
    accepted: AtomicU64,
    list: Mutex<Vec<Entry>>,
}

impl Queue {
    /// A submission held behind other work: value and entry under the lock (or the value
    /// first: the negative control).
    fn held(&self, value: u64, inside: bool) {
        if !inside {
            self.accepted.fetch_max(value, Ordering::AcqRel);
        }
        let mut list = self.list.lock().unwrap();
        if inside {
            self.accepted.fetch_max(value, Ordering::AcqRel);
        }
        list.push(Entry::Submit(value));
    }

    /// A direct submission, once the KMD took it.
    fn direct(&self, value: u64) {
        self.accepted.fetch_max(value, Ordering::AcqRel);
    }

    /// A signal packet: the value read, then its entry queued.
    fn signal(&self) -> u64 {
        let after = self.accepted.load(Ordering::Acquire);
        self.list.lock().unwrap().push(Entry::Signal { after });
        after
    }

    fn check(&self) {
        let list = self.list.lock().unwrap();
        for (i, e) in list.iter().enumerate() {
            if let Entry::Signal { after } = *e {
                let behind = list
                    .get(i + 1..)
                    .unwrap_or_default()
                    .iter()
                    .any(|e| matches!(*e, Entry::Submit(v) if v <= after));
                assert!(!behind, "{BEHIND}: {list:?}");
            }
        }
    }
}

fn model(inside: bool) {
    loom::model(move || {
        let q = Arc::new(Queue::default());
        let held = {
            let q = q.clone();
            thread::spawn(move || q.held(2, inside))
        };
        let direct = {
            let q = q.clone();
            thread::spawn(move || {
                q.direct(1);
                // The same thread's signal after its submission returned.
                let after = q.signal();
                assert!(after >= 1, "a signal missed its own thread's submission");
            })
        };
        q.signal();
        held.join().unwrap();
        direct.join().unwrap();
        q.check();
        assert_eq!(q.accepted.load(Ordering::Acquire), 2);
    });
}

#[test]
fn mf_03_accepted_value_held_entries_precede_their_signals() {
    model(true);
}

#[test]
fn mf_03_accepted_value_raised_outside_the_lock_is_found() {
    rvgpu_models::expect_violation(
        || model(false),
        "signal queued ahead of the held submission it waits for",
        BEHIND,
    );
}
