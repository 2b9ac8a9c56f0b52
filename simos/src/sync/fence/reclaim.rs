//! Fence pages given back: a process's packed pages once it exits, and the empty system
//! pages nothing can reach any more, which VidMm unmaps from the paging process and frees.

use std::collections::BTreeSet;

use rvgpu_hw::addr::BusAddr;

use crate::adapter::AdapterShared;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;

use crate::state::sync::fence::PAGE;

/// Process `pid` exited: the pages it packed fence values into on `a` can go once empty.
pub(crate) fn forget_process(a: &AdapterShared, pid: ProcessId) {
    lock(&a.fence_os).forget_process(pid);
}

/// Hands the empty system fence pages of adapter `a` that nothing can reach any more to
/// VidMm to unmap from the paging process and free (churn leaves the machine's
/// memory where it started). Takes only the fence and VidMm locks; the freeing itself is
/// VidMm's `reap_system_pages`, where no thunk lock is held.
pub(crate) fn retire_empty_pages(a: &AdapterShared) {
    // One lock at a time (the fence and VidMm locks are never nested here). Only empty pages
    // can go, so only their owners are looked up: a destroy costs the same however many
    // pages are live.
    let owners: Vec<ProcessId> = {
        let os = lock(&a.fence_os);
        if os.empty.is_empty() {
            return;
        }
        os.empty
            .iter()
            .filter_map(|b| os.pages.get(b).and_then(|p| p.owner))
            .collect()
    };
    let alive: BTreeSet<ProcessId> = {
        let v = lock(&a.mm.vidmm);
        owners.into_iter().filter(|p| v.has_process(*p)).collect()
    };
    let due = {
        let mut os = lock(&a.fence_os);
        let mapped: BTreeSet<u64> = os
            .empty
            .iter()
            .copied()
            .filter(|b| os.maps.maps_page(*b))
            .collect();
        os.take_free(|b| mapped.contains(&b), |p| alive.contains(&p))
    };
    for (bus, paging) in due {
        if paging {
            super::pages::retire_system(a, bus, PAGE);
        } else {
            a.device.memory().free_system(BusAddr::new(bus));
        }
    }
}
