//! A process's kernel32 objects: its heap blocks, its events and the CPU waits they carry, its
//! ETW registrations ([`super::win32`] runs the routines on them).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};

use super::wait_group::WaitGroup;
use crate::base::lock::lock;

/// An event object.
#[derive(Default)]
pub(super) struct Event {
    pub(super) state: Mutex<EventState>,
    pub(super) cv: Condvar,
}

#[derive(Default)]
pub(super) struct EventState {
    pub(super) manual_reset: bool,
    pub(super) signalled: bool,
    /// CPU waits the OS registered to signal this event
    /// (`D3DKMTWaitForSynchronizationObjectFromCpu` with `hAsyncEvent`).
    pub(super) fence_waits: Vec<WaitGroup>,
}

impl Event {
    /// Registers a CPU wait that signals the event once it is released. Waits registered
    /// earlier that the OS released already have signalled the event (each registration
    /// signals it on its own release) and are dropped, so an event nobody waits on does not
    /// collect them.
    pub(super) fn add_fence_waits(&self, wait: WaitGroup) {
        let mut st = lock(&self.state);
        let before = st.fence_waits.len();
        st.fence_waits.retain(|g| !g.released());
        if st.fence_waits.len() != before {
            st.signalled = true;
        }
        st.fence_waits.push(wait);
        drop(st);
        self.cv.notify_all();
    }
}

/// The kernel32 state of a process.
#[derive(Default)]
pub(super) struct Win32State {
    pub(super) heap: Mutex<HashMap<usize, std::alloc::Layout>>,
    pub(super) events: Mutex<HashMap<u64, Arc<Event>>>,
    pub(super) next_handle: AtomicU64,
    pub(super) registrations: AtomicU64,
    /// Threads of the process inside `WaitForSingleObject`.
    pub(super) waiting: AtomicU64,
}

impl Win32State {
    pub(super) fn heap_blocks(&self) -> usize {
        lock(&self.heap).len()
    }

    pub(super) fn event(&self, h: u64) -> Option<Arc<Event>> {
        lock(&self.events).get(&h).cloned()
    }
}
