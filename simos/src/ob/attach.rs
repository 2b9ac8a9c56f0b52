//! The process whose D3DKMT handle table a callback without a process argument resolves
//! handles in: Dxgkrnl's `DXGPROCESS::GetCurrent`, the process of the thread that made the
//! thunk call the DDI runs under. The simulated OS runs a process's thunks on whatever thread
//! the test uses, so it names that process for the span of each DDI call that needs it.

use std::cell::Cell;

use crate::base::process_id::ProcessId;

thread_local! {
    static CURRENT: Cell<Option<ProcessId>> = const { Cell::new(None) };
}

/// The calling thread acts for `process` while the guard lives (nested attaches restore the
/// outer one).
#[derive(Debug)]
pub(crate) struct Attached(Option<ProcessId>);

impl Attached {
    pub(crate) fn enter(process: ProcessId) -> Self {
        Self(CURRENT.with(|c| c.replace(Some(process))))
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// The process the calling thread acts for (`None`: a system thread, no process's table).
pub(crate) fn current_process() -> Option<ProcessId> {
    CURRENT.with(Cell::get)
}
