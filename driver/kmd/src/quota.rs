//! Fair use of the adapter's finite objects between processes.
//!
//! The adapter has 4,096 hardware queue ids and room for 16,384 contexts, shared by every
//! process. Windows limits handles per process but not these: a process that takes them all
//! would make every other process's first queue or context fail. So the last few free objects
//! of each pool are a reserve that only a process holding fewer than a handful may take: a
//! greedy process stops short of the reserve, and every other process still gets its first
//! objects. The figures are this driver's choice (docs/robustness.md §6): large enough for
//! many newcomers at once, small enough that one application can still use nearly the whole
//! adapter.

/// The rule of one pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// Free objects kept for processes that hold fewer than [`Share::first`].
    pub reserve: usize,
    /// What every process may take even from the reserve.
    pub first: usize,
}

/// Hardware queues (and so doorbells, one per user-mode queue).
pub const QUEUES: Share = Share {
    reserve: 64,
    first: 2,
};

/// Contexts.
pub const CONTEXTS: Share = Share {
    reserve: 256,
    first: 4,
};

impl Share {
    /// Whether a process may take one more object of a pool with `free` left; `mine` counts
    /// what the process holds (asked only when the pool is down to its reserve). `None`: the
    /// system device's objects, which the OS makes at start and are never a process's.
    pub fn grants(&self, free: usize, mine: Option<impl FnOnce() -> usize>) -> bool {
        if free == 0 {
            return false;
        }
        if free > self.reserve {
            return true;
        }
        mine.is_none_or(|count| count() < self.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_goes_to_newcomers_only() {
        let s = Share {
            reserve: 4,
            first: 2,
        };
        let none: Option<fn() -> usize> = None;
        // Above the reserve anyone may take one; nothing is counted.
        let counted = core::cell::Cell::new(false);
        assert!(s.grants(
            5,
            Some(|| {
                counted.set(true);
                1000
            })
        ));
        assert!(!counted.get(), "counted above the reserve");
        // In the reserve: a process holding few may, a greedy one may not.
        assert!(s.grants(4, Some(|| 1)));
        assert!(!s.grants(4, Some(|| 2)));
        assert!(!s.grants(1, Some(|| 1000)));
        assert!(s.grants(1, Some(|| 0)));
        // The system device takes what is there; nobody takes from an empty pool.
        assert!(s.grants(1, none));
        assert!(!s.grants(0, Some(|| 0)));
        assert!(!s.grants(0, none));
    }
}
