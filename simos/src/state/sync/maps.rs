//! The books of native-fence pages mapped into processes' GPU VA spaces, kept with the fence
//! storage (`FenceOs::maps`): which page each process maps where and how often, and the
//! pages retired but not yet unmapped. VidMm's `fencemap` maps and unmaps them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rvgpu_umd::kmt::KmtHandle;

use crate::base::process_id::ProcessId;

#[derive(Debug, Clone, Copy)]
pub(crate) struct PageMap {
    pub(crate) va: u64,
    pub(crate) refs: u32,
}

#[derive(Debug)]
pub(crate) struct Retired {
    pub(crate) pid: ProcessId,
    pub(crate) page: u64,
    pub(crate) va: u64,
    /// The process's hardware queues at the close.
    pub(crate) queues: Vec<KmtHandle>,
}

/// One adapter's books of fence pages mapped into processes.
#[derive(Debug, Default)]
pub(crate) struct FenceMaps {
    /// (process, device page of the fence value) → where it is mapped and by how many.
    pub(crate) pages: HashMap<(ProcessId, u64), PageMap>,
    pub(crate) retired: Vec<Retired>,
    /// Serialises map and unmap: the books are updated around paging, which must not run
    /// under the fence lock (the DPC that reports paging takes it).
    pub(crate) serial: Arc<Mutex<()>>,
}

impl FenceMaps {
    /// Whether any process maps the device page `page` (live or retired).
    pub(crate) fn maps_page(&self, page: u64) -> bool {
        self.pages.keys().any(|(_, p)| *p == page) || self.retired.iter().any(|r| r.page == page)
    }

    /// Pages `pid` has mapped, live and retired.
    pub(crate) fn pages_of(&self, pid: ProcessId) -> (usize, usize) {
        (
            self.pages.keys().filter(|(p, _)| *p == pid).count(),
            self.retired.iter().filter(|r| r.pid == pid).count(),
        )
    }
}
