//! The object manager, as far as graphics objects need it: per-process NT handle tables.
//!
//! On Windows a sync object crosses processes only through an NT handle: the creator makes one
//! (`D3DKMTShareObjects`, for an object created shareable), hands it to another process with
//! `DuplicateHandle` (which needs a handle to the target process with `PROCESS_DUP_HANDLE`),
//! and that process opens the object from the handle in *its own* table
//! (`D3DKMTOpenSyncObjectFromNtHandle2`, `D3DKMTOpenNativeFenceFromNtHandle`). A handle value
//! means nothing outside the table it is in, so guessing one names only the guesser's own
//! objects. The tables here keep that property; the objects they refer to are the OS's
//! (a reference keeps the object alive, as an NT handle does).
//! <https://learn.microsoft.com/windows/win32/sysinfo/handles-and-objects>,
//! <https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtshareobjects>.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rvgpu_ddi::ntstatus::{STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_HANDLE};
use rvgpu_ddi::NTSTATUS;

use crate::sync::fence::{FenceObj, ProcessId};

/// What an NT handle refers to.
#[derive(Clone, Debug)]
pub enum NtObject {
    /// A shareable native fence (its OS object on the adapter it was created on).
    NativeFence(Arc<FenceObj>),
}

/// NT handles one process may hold here. Windows' own limit is 2^24 per process; a smaller
/// one keeps a handle-leaking process from growing the simulation without bound, and is
/// still far above what any test holds.
pub const HANDLES_PER_PROCESS: usize = 1 << 16;

#[derive(Debug, Default)]
struct Table {
    /// Next value; NT handles are multiples of 4 (the low two bits are tag bits).
    next: u64,
    entries: BTreeMap<u64, NtObject>,
}

/// Every process's NT handle table.
#[derive(Debug, Default)]
pub struct HandleTables {
    tables: Mutex<HashMap<ProcessId, Table>>,
}

impl HandleTables {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProcessId, Table>> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new handle to `obj` in `process`'s table.
    pub fn insert(&self, process: ProcessId, obj: NtObject) -> Result<u64, NTSTATUS> {
        let mut t = self.lock();
        let table = t.entry(process).or_default();
        if table.entries.len() >= HANDLES_PER_PROCESS {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        // The first free multiple of 4 from `next` on (values are reused only after a wrap,
        // as Windows reuses freed handle-table slots).
        let mut h = table.next.max(4);
        while table.entries.contains_key(&h) {
            h = h.checked_add(4).unwrap_or(4);
        }
        table.next = h.checked_add(4).unwrap_or(4);
        table.entries.insert(h, obj);
        Ok(h)
    }

    /// The object handle `h` of `process` refers to.
    pub fn get(&self, process: ProcessId, h: u64) -> Result<NtObject, NTSTATUS> {
        self.lock()
            .get(&process)
            .and_then(|t| t.entries.get(&h))
            .cloned()
            .ok_or(STATUS_INVALID_HANDLE)
    }

    /// `CloseHandle`: removes `h` from `process`'s table; returns what it referred to.
    pub fn remove(&self, process: ProcessId, h: u64) -> Result<NtObject, NTSTATUS> {
        self.lock()
            .get_mut(&process)
            .and_then(|t| t.entries.remove(&h))
            .ok_or(STATUS_INVALID_HANDLE)
    }

    /// Process exit: the whole table goes; returns what its handles referred to.
    pub fn take_process(&self, process: ProcessId) -> Vec<NtObject> {
        self.lock()
            .remove(&process)
            .map(|t| t.entries.into_values().collect())
            .unwrap_or_default()
    }

    /// Handles `process` holds.
    pub fn count(&self, process: ProcessId) -> usize {
        self.lock().get(&process).map_or(0, |t| t.entries.len())
    }
}
