//! One Windows process that loaded the DLL (the parent's documentation tells what it holds):
//! its copy of the DLL, its handle tables, its kernel32 objects, what it counted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::dll::UmdImage;
use super::gdi32::doorbell_page::DoorbellPage;
use super::guest;
use super::mapping::Mapping;
use super::win32_state::Win32State;
use crate::base::lock::lock;
use crate::pe::cpu::{Stop, StubResult};
use crate::Machine;

/// A routine of the simulated OS the DLL calls, with its arguments (Windows x64).
pub(crate) type Handler = fn(&UserProcess, &[u64; 12]) -> StubResult;

/// What the bridge knows of one device the DLL created.
#[derive(Clone, Copy, Debug)]
pub(super) struct Device {
    pub(super) sim: crate::UmsProcess,
}

/// The handle tables of a process (`D3DKMT` handles are per process on Windows; a handle this
/// process did not get names nothing here).
#[derive(Default)]
pub(super) struct Handles {
    /// Adapter index → the simulated process this process is on that adapter (made by its
    /// first device there; `device` is that first device): every later device there is a
    /// device of it, sharing its GPU VA space, handle table and TDR history.
    pub(super) processes: HashMap<usize, crate::UmsProcess>,
    /// `hAdapter` → adapter index.
    pub(super) adapters: HashMap<u32, usize>,
    /// `hDevice` → the device.
    pub(super) devices: HashMap<u32, Device>,
    /// Every other handle a thunk returned (contexts, queues, doorbells, paging queues, sync
    /// objects, allocations) → the `hDevice` that owns it.
    pub(super) owner: HashMap<u32, u32>,
    /// Paging queues, for `D3DKMTMakeResident`.
    pub(super) paging: HashMap<u32, rvgpu_umd::kmt::PagingQueue<crate::kmt::SimFence>>,
    /// Live `Lock2` views by allocation: the view (keeps the memory alive) and its lock count.
    pub(super) locks: HashMap<u32, (crate::kmt::SimMem, u32)>,
    /// Doorbells: their page's window.
    pub(super) doorbells: HashMap<u32, DoorbellPage>,
    /// Native fence instances' `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` as created or opened (24H2
    /// keeps them with the device's instance and refuses a CPU signal or wait they forbid; a
    /// monitored fence's are on the OS's object).
    pub(super) sync_flags: HashMap<u32, u32>,
}

/// One Windows process that loaded the DLL, on one machine.
pub struct UserProcess {
    pub(super) machine: Arc<Machine>,
    pub(super) image: Arc<UmdImage>,
    /// The process's own copy of the DLL; `Err`: it could not be mapped (the host's address
    /// space is exhausted), and every call stops with why.
    pub(super) mapping: Result<Mapping, String>,
    pub(super) handles: Mutex<Handles>,
    /// Held while a device is created, so that two threads' first devices on one adapter
    /// make one simulated process.
    pub(super) creating: Mutex<()>,
    pub(super) win32: Win32State,
    /// Calls per import (tests: which path the DLL took).
    pub(super) calls: Mutex<HashMap<&'static str, u64>>,
    /// Doorbell stores that reached a live doorbell page.
    pub(super) rings: Arc<AtomicU64>,
    /// Counting mode (`RVGPU_PE_COUNT`): per entry address called, (calls, instructions of
    /// the DLL itself — not of the thunks or the driver image behind them).
    pub(super) instructions: Mutex<HashMap<usize, (u64, u64)>>,
}

impl std::fmt::Debug for UserProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserProcess")
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

impl UserProcess {
    /// A process on `machine` that has loaded `image` (its own copy of it).
    pub fn new(machine: Arc<Machine>, image: Arc<UmdImage>) -> Arc<Self> {
        let mapping = image.map();
        Arc::new(Self {
            machine,
            image,
            mapping,
            handles: Mutex::new(Handles::default()),
            creating: Mutex::new(()),
            win32: Win32State::default(),
            calls: Mutex::new(HashMap::new()),
            rings: Arc::new(AtomicU64::new(0)),
            instructions: Mutex::new(HashMap::new()),
        })
    }

    /// A process on `machine` that has loaded `image`, or why its copy could not be mapped.
    pub(crate) fn try_new(
        machine: Arc<Machine>,
        image: Arc<UmdImage>,
    ) -> Result<Arc<Self>, String> {
        let p = Self::new(machine, image);
        match &p.mapping {
            Ok(_) => Ok(p),
            Err(e) => Err(e.clone()),
        }
    }

    /// The machine.
    pub fn machine(&self) -> &Arc<Machine> {
        &self.machine
    }

    pub(super) fn mapping(&self) -> Result<&Mapping, Stop> {
        self.mapping.as_ref().map_err(|e| Stop::Emulator(e.clone()))
    }

    /// The address of the DLL's export `name` in this process (an import of a program that
    /// links against the DLL).
    pub(crate) fn export_address(&self, name: &str) -> Option<usize> {
        self.mapping.as_ref().ok()?.export(name)
    }

    /// Counting mode (`RVGPU_PE_COUNT=1`): the DLL's own instructions per call of export
    /// `name` so far, as (calls, instructions); `None` when it was not called or not counted.
    pub fn instructions(&self, name: &str) -> Option<(u64, u64)> {
        let addr = self.export_address(name)?;
        lock(&self.instructions).get(&addr).copied()
    }

    pub(super) fn count(&self, name: &'static str) {
        *lock(&self.calls).entry(name).or_insert(0) += 1;
    }

    /// How many times the DLL called import (or run-time thunk) `name`.
    pub fn calls(&self, name: &str) -> u64 {
        lock(&self.calls).get(name).copied().unwrap_or(0)
    }

    /// Doorbell stores of the DLL that reached a live doorbell page (each went to the
    /// doorbell's OS mapping object, as the Linux UMD's ring does).
    pub fn doorbell_rings(&self) -> u64 {
        self.rings.load(Ordering::Acquire)
    }

    /// The D3DKMT handles of the doorbells the DLL holds (for [`Machine::doorbell_info`]).
    pub fn doorbells(&self) -> Vec<u32> {
        lock(&self.handles).doorbells.keys().copied().collect()
    }

    /// Threads of the process blocked in `WaitForSingleObject` now (a waiting thread is one
    /// the OS holds until its event is signalled or its time is up).
    pub fn threads_waiting(&self) -> u64 {
        self.win32.waiting.load(Ordering::Acquire)
    }

    /// Heap blocks the DLL holds.
    pub fn heap_blocks(&self) -> usize {
        self.win32.heap_blocks()
    }

    /// D3D devices the DLL has open.
    pub fn open_devices(&self) -> usize {
        lock(&self.handles).devices.len()
    }

    /// The simulated process this process is on each adapter it created a device on (one per
    /// adapter, whatever its devices; its NT handle table is the one a harness's
    /// `DuplicateHandle` names).
    pub fn nt_processes(&self) -> Vec<crate::ProcessId> {
        let mut v: Vec<crate::ProcessId> = lock(&self.handles)
            .processes
            .values()
            .map(|p| p.pid)
            .collect();
        v.sort_unstable_by_key(|p| p.0);
        v.dedup();
        v
    }

    /// The D3D devices the DLL has open, as the simulated OS knows them, in the order of their
    /// D3DKMT handles (not the map's order, so a test's "first device" is the same every run).
    pub fn devices(&self) -> Vec<crate::UmsProcess> {
        let handles = lock(&self.handles);
        let mut v: Vec<(u32, crate::UmsProcess)> =
            handles.devices.iter().map(|(h, d)| (*h, d.sim)).collect();
        v.sort_unstable_by_key(|(h, _)| *h);
        v.into_iter().map(|(_, d)| d).collect()
    }

    /// The DLL's writable sections as this process sees them now, each as its name and bytes
    /// (tests: what the DLL's statics hold in this process).
    pub fn writable_sections(&self) -> Vec<(String, Vec<u8>)> {
        let Ok(m) = &self.mapping else {
            return Vec::new();
        };
        m.writable()
            .map(|s| {
                let bytes = guest::read_bytes(s.addr as u64, s.len).unwrap_or_default();
                (s.name.clone(), bytes)
            })
            .collect()
    }

    /// Every D3DKMT object handle the DLL holds (contexts, queues, doorbells, allocations,
    /// sync objects, paging queues), sorted: a harness tells which objects a C API call made
    /// by the handles that appeared.
    pub fn objects(&self) -> Vec<u32> {
        let mut v: Vec<u32> = lock(&self.handles).owner.keys().copied().collect();
        v.sort_unstable();
        v
    }
}

impl Drop for UserProcess {
    /// The process ends: on each adapter, the OS closes what the DLL left open (its devices,
    /// UM-17's normal exit) and the simulated process goes with its GPU VA space, TDR history
    /// and handle table (`K:DXGPROCESS::Destroy` @0x14034D4E0); its heap goes.
    fn drop(&mut self) {
        let processes: Vec<crate::UmsProcess> = {
            let mut hs = lock(&self.handles);
            hs.devices.clear();
            hs.processes.drain().map(|(_, p)| p).collect()
        };
        for p in processes {
            let _ = self.machine.end_process(p.adapter, p.pid);
        }
        self.win32.free_heap();
    }
}
