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
//!
//! D3DKMT handles (the `D3DKMT_HANDLE`s thunks return) come from a per-process table too,
//! with the values Windows gives them ([`LocalHandles`]); a component keeps its objects by
//! such a handle in a `HandleMap`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use rvgpu_ddi::ntstatus::{STATUS_INSUFFICIENT_RESOURCES, STATUS_INVALID_HANDLE};
use rvgpu_ddi::NTSTATUS;

use crate::base::error::SimError;
use crate::base::process_id::ProcessId;

mod attach;
mod handle_map;
pub(crate) use attach::{current_process, Attached};
pub(crate) use handle_map::HandleMap;

/// A D3DKMT handle (what the UMD holds).
pub type KmtHandle = u32;

/// The bits every D3DKMT handle has set. Wine's `dlls/win32u/tests/d3dkmt.c`
/// (`check_d3dkmt_local`, `is_d3dkmt_handle`), whose `ok()` lines pass on Windows, checks
/// `handle & 0xc0000000` on every local handle Windows returns and `!(handle & 0xc0000000)` on
/// every NT handle, which tells the two apart. Both bits are set here so a caller that
/// sign-extends or truncates a handle (`as i32`, `as u16`) fails here as it would there.
pub const D3DKMT_HANDLE_TOP_BITS: u32 = 0xC000_0000;
/// The step between a process's consecutive D3DKMT handles, and the bits that are clear in
/// every one (the same test: `handle && !(handle & 0x3f)`, and the next handle a process gets
/// is the last one plus 0x40, "local handles are monotonically increasing", whatever kind
/// of object and whether or not the last one was destroyed since).
pub const D3DKMT_HANDLE_STEP: u32 = 0x40;
/// Handles one run of a process's table holds before the process continues in a new run.
/// Windows' handle values are per process and may coincide across processes; the simulated
/// OS keeps objects of every process in adapter-wide maps, so each process draws its values
/// from runs no other live process uses. Within a run, a process's handles are exactly
/// Windows' sequence; a process holding more than this many handles over its life continues
/// in another run (a jump Windows does not make, far past what Wine's tests or the
/// harness create).
pub const D3DKMT_HANDLES_PER_RUN: u32 = 1 << 12;
/// Runs below [`D3DKMT_HANDLE_TOP_BITS`]: 2^24 values a step apart, less the one that would
/// be the bare top bits.
const RUNS: u32 = ((1 << 24) - 1) / D3DKMT_HANDLES_PER_RUN;

#[derive(Debug, Default)]
struct ProcessRun {
    /// The runs this process holds; it allocates from the last.
    runs: Vec<u32>,
    /// Handles taken from the last run.
    used: u32,
}

/// Every process's D3DKMT handle table: which values it has handed out. A value is never
/// handed out twice to a process (Wine's test: a destroyed handle is not reused, the next
/// one is 0x40 above the last); a run goes back to the pool only when its process is gone.
#[derive(Debug, Default)]
struct LocalState {
    processes: HashMap<ProcessId, ProcessRun>,
    /// Run -> the process using it.
    owner: BTreeMap<u32, ProcessId>,
    /// Where the search for a free run starts (runs are taken round-robin, so a run a
    /// process gave up is reused as late as possible).
    cursor: u32,
}

/// D3DKMT handle tables of every process (one for the whole simulation: many machines run in
/// one test process and the driver's own handle maps are driver-wide).
#[derive(Debug, Default)]
pub struct LocalHandles {
    state: Mutex<LocalState>,
}

static LOCAL_HANDLES: std::sync::LazyLock<LocalHandles> =
    std::sync::LazyLock::new(LocalHandles::default);

/// The simulation's D3DKMT handle tables.
pub fn local_handles() -> &'static LocalHandles {
    &LOCAL_HANDLES
}

/// A new D3DKMT handle in `process`'s table (Windows' values, unique among live processes of
/// the whole test process, as many machines share it): the one table UMS objects, native
/// fences and VidMm's paging queues take their handles from.
pub(crate) fn new_kmt_handle(process: ProcessId) -> Result<KmtHandle, SimError> {
    local_handles()
        .allocate(process)
        .map_err(SimError::DdiFailed)
}

/// The D3DKMT handle value of entry `index` (0-based) of run `run`.
fn encode(run: u32, index: u32) -> u32 {
    // Counted from 1: the bits below the top ones are never all clear.
    D3DKMT_HANDLE_TOP_BITS | ((run * D3DKMT_HANDLES_PER_RUN + index + 1) * D3DKMT_HANDLE_STEP)
}

impl LocalHandles {
    fn lock(&self) -> std::sync::MutexGuard<'_, LocalState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new D3DKMT handle in `process`'s table: 0x40 above the last one it got.
    /// `STATUS_INSUFFICIENT_RESOURCES` only when every run belongs to a live process.
    pub fn allocate(&self, process: ProcessId) -> Result<u32, NTSTATUS> {
        let mut s = self.lock();
        if let Some(p) = s.processes.get_mut(&process) {
            if let Some(&run) = p.runs.last().filter(|_| p.used < D3DKMT_HANDLES_PER_RUN) {
                let h = encode(run, p.used);
                p.used += 1;
                return Ok(h);
            }
        }
        let run = (0..RUNS)
            .map(|i| (s.cursor + i) % RUNS)
            .find(|r| !s.owner.contains_key(r))
            .ok_or(STATUS_INSUFFICIENT_RESOURCES)?;
        s.cursor = (run + 1) % RUNS;
        s.owner.insert(run, process);
        let p = s.processes.entry(process).or_default();
        // The process's earlier runs stay its own: its objects there are still alive.
        p.runs.push(run);
        p.used = 1;
        Ok(encode(run, 0))
    }

    /// Process exit: its table goes, and its values may be another process's later.
    pub fn release(&self, process: ProcessId) {
        let mut s = self.lock();
        for run in s
            .processes
            .remove(&process)
            .map(|p| p.runs)
            .unwrap_or_default()
        {
            s.owner.remove(&run);
        }
    }
}

/// NT handles one process may hold here. Windows' own limit is 2^24 per process; a smaller
/// one keeps a handle-leaking process from growing the simulation without bound, and is
/// still far above what any test holds.
pub const HANDLES_PER_PROCESS: usize = 1 << 16;

#[derive(Debug)]
struct Table<O> {
    /// Next value; NT handles are multiples of 4 (the low two bits are tag bits).
    next: u64,
    entries: BTreeMap<u64, O>,
}

impl<O> Default for Table<O> {
    fn default() -> Self {
        Self {
            next: 0,
            entries: BTreeMap::new(),
        }
    }
}

/// Every process's NT handle table, on one machine. `O` is what a handle refers to: the
/// object types are the components' (a native fence's is in `crate::sync::fence`).
#[derive(Debug)]
pub struct HandleTables<O> {
    tables: Mutex<HashMap<ProcessId, Table<O>>>,
    /// The machine's processes: their D3DKMT handle tables ([`LocalHandles`]) go with it.
    processes: Mutex<Vec<ProcessId>>,
}

impl<O> Default for HandleTables<O> {
    fn default() -> Self {
        Self {
            tables: Mutex::default(),
            processes: Mutex::default(),
        }
    }
}

impl<O> Drop for HandleTables<O> {
    fn drop(&mut self) {
        let processes = self.processes.get_mut().unwrap_or_else(|p| p.into_inner());
        for p in processes.drain(..) {
            local_handles().release(p);
        }
    }
}

impl<O: Clone> HandleTables<O> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProcessId, Table<O>>> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `process` runs on this machine: its D3DKMT handle table is released with the machine.
    pub fn own_process(&self, process: ProcessId) {
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(process);
    }

    /// `process` is gone (its last device destroyed): its NT handle table (already closed)
    /// and its D3DKMT handle values go with it, as Windows' handle tables go with their
    /// process, so the values are another process's later and a machine takes any number of
    /// process lifetimes.
    pub fn release_process(&self, process: ProcessId) {
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| *p != process);
        self.lock().remove(&process);
        local_handles().release(process);
    }

    /// A new handle to `obj` in `process`'s table.
    pub fn insert(&self, process: ProcessId, obj: O) -> Result<u64, NTSTATUS> {
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
    pub fn get(&self, process: ProcessId, h: u64) -> Result<O, NTSTATUS> {
        self.lock()
            .get(&process)
            .and_then(|t| t.entries.get(&h))
            .cloned()
            .ok_or(STATUS_INVALID_HANDLE)
    }

    /// `CloseHandle`: removes `h` from `process`'s table; returns what it referred to.
    pub fn remove(&self, process: ProcessId, h: u64) -> Result<O, NTSTATUS> {
        self.lock()
            .get_mut(&process)
            .and_then(|t| t.entries.remove(&h))
            .ok_or(STATUS_INVALID_HANDLE)
    }

    /// Process exit: the whole table goes; returns what its handles referred to.
    pub fn take_process(&self, process: ProcessId) -> Vec<O> {
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
