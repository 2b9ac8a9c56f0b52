//! Fair use of the adapter's finite objects between processes.
//!
//! The adapter has 4,096 hardware queue ids, room for 16,384 contexts, 2^20 native fences,
//! 2^18 opens of them after their first (`fence::table`) and 65,536 records of native-fence
//! pages (`fence::pages`, on the builds that name no fence storage), shared by every process. Windows limits handles per process but not these: a
//! process that takes them all would make every other process's first queue, context or fence
//! fail. So the last few free objects of each pool are a reserve that only a process holding
//! fewer than a handful may take: a greedy process stops short of the reserve, and every other
//! process still gets its first objects (for the opens and the page records the whole pool
//! is the reserve: a bound per process). The figures are this driver's choice (docs/robustness.md §6):
//! large enough for many newcomers at once, small enough that one application can still use
//! nearly the whole adapter. Each is a `REG_DWORD` under the adapter's software key, read once
//! at start ([`Quotas::read`]), so an administrator or a test can change it.

use core::ffi::c_void;

use crate::platform::Platform;
use crate::status::{self, Status};

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

/// Native fences (counted by the local handles a process has open: its creations and its
/// opens of shared fences).
pub const FENCES: Share = Share {
    reserve: 4096,
    first: 64,
};

/// Records of native-fence pages (`fence::pages::MAX_PAGES`), counted by the pages
/// of a process's fences mapped into it before their first opens: a shareable fence's two
/// pages of its own, two per page of a process's packed private fences. The whole pool is
/// the reserve, so every process holds at most `first`: 512 live shareable fences of its
/// own making (far more than an application shares; opens of others' fences take none), or
/// some 260,000 private ones, and 64 processes at their share still fit.
pub const FENCE_PAGES: Share = Share {
    reserve: 1 << 16,
    first: 1024,
};

/// Opens of native fences after their first (`fence::table::MAX_LATER_OPENS`): a process's
/// opens of others' shared fences, or of its own again. They cost the table a local handle
/// each and no page record (`fence::pages`), so they are bounded apart from what a process
/// creates: the whole pool is the reserve, every process holds at most `first` (a compositor
/// opening every client's fence stays far below it), and 64 processes at their share still
/// fit.
pub const FENCE_OPENS: Share = Share {
    reserve: 1 << 18,
    first: 4096,
};

/// Every pool's rule, as the adapter uses them while started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quotas {
    /// Hardware queues and so doorbells ([`QUEUES`]).
    pub queues: Share,
    /// Contexts ([`CONTEXTS`]).
    pub contexts: Share,
    /// Native fences ([`FENCES`]).
    pub fences: Share,
    /// Records of native-fence pages ([`FENCE_PAGES`]).
    pub fence_pages: Share,
    /// Opens of native fences after their first ([`FENCE_OPENS`]).
    pub fence_opens: Share,
}

impl Default for Quotas {
    fn default() -> Self {
        Self {
            queues: QUEUES,
            contexts: CONTEXTS,
            fences: FENCES,
            fence_pages: FENCE_PAGES,
            fence_opens: FENCE_OPENS,
        }
    }
}

/// The registry values (under the adapter's software key) that override each figure.
pub const VALUES: [&str; 10] = [
    "QueueReserve",
    "QueueFirst",
    "ContextReserve",
    "ContextFirst",
    "FenceReserve",
    "FenceFirst",
    "FencePageReserve",
    "FencePageFirst",
    "FenceOpenReserve",
    "FenceOpenFirst",
];

impl Quotas {
    /// The defaults with every `REG_DWORD` the adapter's software key holds among [`VALUES`]
    /// applied (PASSIVE, at start). `pdo` is the adapter's physical device object. A value that
    /// is absent or not a `REG_DWORD` leaves its default; every number is safe (a reserve past
    /// the pool's size counts every process, a `first` of 0 gives the reserve to the system
    /// device only).
    pub fn read<P: Platform>(pdo: *mut c_void) -> Self {
        let mut q = Self::default();
        let fields: [&mut usize; 10] = [
            &mut q.queues.reserve,
            &mut q.queues.first,
            &mut q.contexts.reserve,
            &mut q.contexts.first,
            &mut q.fences.reserve,
            &mut q.fences.first,
            &mut q.fence_pages.reserve,
            &mut q.fence_pages.first,
            &mut q.fence_opens.reserve,
            &mut q.fence_opens.first,
        ];
        for (name, field) in VALUES.iter().zip(fields) {
            if let Some(v) = P::software_key_dword(pdo, name) {
                *field = usize::try_from(v).unwrap_or(usize::MAX);
            }
        }
        q
    }
}

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

    /// [`Self::grants`] as a status: STATUS_NO_MEMORY, what Dxgkrnl accepts from the creating
    /// DDIs, when refused.
    pub fn admit(&self, free: usize, mine: Option<impl FnOnce() -> usize>) -> Result<(), Status> {
        if self.grants(free, mine) {
            Ok(())
        } else {
            Err(status::NO_MEMORY)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a registry (the host platform answers nothing) the defaults stand.
    #[test]
    fn quotas_default_without_registry_values() {
        let q = Quotas::read::<crate::kmem::Host>(core::ptr::null_mut());
        assert_eq!(q, Quotas::default());
        assert_eq!(q.fences, FENCES);
    }

    /// A figure with thousands separated by commas, as the docs write them.
    fn figure(n: usize) -> std::string::String {
        let digits = std::format!("{n}");
        let mut out = std::string::String::new();
        for (i, c) in digits.chars().enumerate() {
            if i != 0 && digits.len().saturating_sub(i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    /// docs/robustness.md §6 states every pool's size and default share as they are here.
    #[test]
    fn robustness_md_states_each_share() {
        let doc = include_str!("../../../docs/robustness.md");
        let pools = [
            (QUEUES, crate::hwqueue::QUEUE_ID_LIMIT as usize),
            (CONTEXTS, crate::context::MAX_CONTEXTS),
            (FENCES, crate::fence::registry::MAX_FENCES as usize),
            // The whole pool (`fence::pages` checks that it is).
            (FENCE_PAGES, FENCE_PAGES.reserve),
            (FENCE_OPENS, crate::fence::table::MAX_LATER_OPENS),
        ];
        for (names, (share, pool)) in VALUES.chunks(2).zip(pools) {
            let head = std::format!("| `{}`, `{}` |", names[0], names[1]);
            let row = doc
                .lines()
                .find(|l| l.starts_with(&head))
                .unwrap_or_else(|| panic!("docs/robustness.md has no row {head}"));
            let cells: std::vec::Vec<&str> = row.split('|').map(str::trim).collect();
            assert!(
                cells[2].ends_with(&std::format!("({})", figure(pool))),
                "{row}: the pool holds {pool}"
            );
            assert_eq!(
                cells[3],
                std::format!("{}, {}", figure(share.reserve), figure(share.first)),
                "{row}"
            );
        }
    }

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
