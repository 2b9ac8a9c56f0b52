//! AL-03 done by the UMD for work the OS cannot see. VidMm defers destroying an allocation
//! behind the queued work it knows of; 24H2 knows none of a user-mode queue's (it gives the
//! queue no progress fence), so an allocation that such work still uses is kept past its
//! destroy by each of those queues and destroyed when the last of them is done with it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::kmt::{DestroyFlags, Kmt, KmtHandle, NtStatus};

/// An allocation its owner destroyed while queues' work still uses it.
#[derive(Debug)]
pub struct Retained {
    alloc: KmtHandle,
    /// Queues still holding it.
    holders: AtomicUsize,
}

impl Retained {
    /// `alloc`, held by `holders` queues.
    pub fn new(alloc: KmtHandle, holders: usize) -> Arc<Self> {
        Arc::new(Self {
            alloc,
            holders: AtomicUsize::new(holders),
        })
    }

    /// One holder is done with it; the last destroys it. Work the OS does see may still use
    /// it: VidMm decides when it goes (no `AssumeNotInUse`).
    pub fn release<K: Kmt>(&self, kmt: &K) -> Result<(), NtStatus> {
        if !self.let_go() {
            return Ok(());
        }
        kmt.destroy_allocation2(
            self.alloc,
            DestroyFlags {
                assume_not_in_use: false,
            },
        )
    }
}

impl Retained {
    /// One holder lets go: `true` for the last one, exactly once. A release with no holder
    /// left changes nothing (never below zero, so never a second destroy).
    fn let_go(&self) -> bool {
        // AcqRel: the last holder's destroy follows every holder's release.
        self.holders
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok_and(|before| before == 1)
    }
}

/// What one queue holds: retained allocations, each with the progress value after which the
/// queue lets go of it.
#[derive(Debug, Default)]
pub struct RetainList(RefCell<Vec<(Arc<Retained>, u64)>>);

impl RetainList {
    /// Holds `r` until `value`; gives it back if there is no room to.
    pub fn push(&self, r: Arc<Retained>, value: u64) -> Result<(), Arc<Retained>> {
        let Ok(mut list) = self.0.try_borrow_mut() else {
            return Err(r);
        };
        if list.try_reserve(1).is_err() {
            return Err(r);
        }
        list.push((r, value));
        Ok(())
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.try_borrow().is_ok_and(|l| l.is_empty())
    }

    /// [`RetainList::is_empty`]'s negation for an owner with exclusive access (no borrow
    /// flag to check: the submission path).
    pub fn holds_any(&mut self) -> bool {
        !self.0.get_mut().is_empty()
    }

    /// Lets go of what the queue completed (`done`), or of everything (`all`: the queue is
    /// off the hardware).
    pub fn reap<K: Kmt>(&self, kmt: &K, done: u64, all: bool) {
        let Ok(mut list) = self.0.try_borrow_mut() else {
            return;
        };
        list.retain(|(r, value)| {
            if !all && *value > done {
                return true;
            }
            let _ = r.release(kmt);
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AL-03: the last of its holders, and only it, destroys a retained allocation; a release
    /// past the last never goes below zero nor destroys twice.
    #[test]
    fn al03_only_the_last_holder_lets_go_and_never_below_zero() {
        let r = Retained::new(7, 2);
        assert!(!r.let_go());
        assert!(r.let_go(), "the last holder");
        assert!(!r.let_go(), "none left: no second destroy");
        assert_eq!(r.holders.load(Ordering::Relaxed), 0);
    }
}
