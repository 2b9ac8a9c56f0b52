//! The shipped user-mode driver under the simulated OS: `rvgpu_umd.dll`, loaded and run in the
//! same x86-64 emulator as `rvgpu.sys`.
//!
//! Each process maps its own copy of the DLL as the Windows loader maps it ([`super::image`];
//! `mapping`: its statics are the process's own); its imports are bound to the simulated OS's
//! user-mode side: gdi32's D3DKMT thunks ([`gdi32`]) decode the very structures the DLL passes
//! and call the simulated thunk layer ([`crate::kmt::SimKmt`] and what it calls) for the
//! process the DLL belongs to; kernel32's heap, SRW locks, events, waits and module functions,
//! advapi32's ETW registration ([`win32`]); ntdll's `memcpy`, `memmove` and `memset` are machine
//! code run in the emulator, as for the driver image. An import the bridge does not implement
//! fails the load with its name.
//!
//! A [`UserProcess`] is one Windows process that loaded the DLL: one simulated process per
//! adapter it created devices on (all its devices there share that process's GPU VA space,
//! handle table and TDR history; it ends when the `UserProcess` is dropped), its handle tables
//! (adapters, devices and every object a thunk created, each with the device that owns it), its
//! heap and its events. Its [`UserProcess::call`] runs an export of the DLL on an emulated processor in
//! user mode ([`cpu::call_user`]): an exception in the DLL ends the call (the process), never
//! the machine; a thunk that reaches the driver image runs it on a second processor, as a
//! system call would. The doorbell page a thunk hands the DLL is an MMIO region of the arena
//! routed to the doorbell's OS mapping object ([`crate::ums::DoorbellCpuState`]), so the DLL's
//! doorbell store reaches the device exactly as the Linux UMD's `SimDoorbell::ring` does;
//! `Lock2` pointers, fence values and the heap are host memory (one address space).

pub mod gdi32;
pub mod guest;
mod mapping;
pub mod win32;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::cpu::{self, Stop, StubResult, Stubs};
use super::{image, ntoskrnl, unicorn};
use crate::base::lock::lock;
use crate::Machine;
use mapping::Mapping;

/// The DLL file, loaded once per host process per file (like the driver image): its bytes,
/// what its imports bind to and the stubs of the thunks it finds with `GetProcAddress`, shared
/// by every process's copy (`mapping`; a stub runs for the calling thread's process).
pub struct UmdImage {
    data: Vec<u8>,
    /// A first mapping of the file, which never runs: the layout and the special instructions
    /// every process's copy has.
    layout: image::Image,
    path: PathBuf,
    _stubs: Arc<Stubs>,
    /// What each import (module, name) is bound to: a stub, or the shared copy of an ntdll
    /// routine's machine code.
    targets: HashMap<(String, String), usize>,
    /// `GetProcAddress(gdi32, name)` answers: the run-time thunks' stubs.
    runtime: HashMap<&'static str, usize>,
}

impl std::fmt::Debug for UmdImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UmdImage")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

static LOADED: super::ImageCache<UmdImage> = super::ImageCache::new();

/// A routine of the simulated OS the DLL calls, with its arguments (Windows x64).
pub(crate) type Handler = fn(&UserProcess, &[u64; 12]) -> StubResult;

/// What an import binds to.
enum Binding {
    Host(Handler),
    Code(&'static [u8]),
}

/// The binding of `module!name`, or `None` (the load fails with the name).
fn bind(module: &str, name: &str) -> Option<Binding> {
    match module {
        "gdi32.dll" => gdi32::import(name).map(Binding::Host),
        "kernel32.dll" | "advapi32.dll" => win32::import(module, name).map(Binding::Host),
        // ntdll exports the C-library routines as ntoskrnl does; the same machine code.
        "ntdll.dll" => ntoskrnl::machine_code(name).map(Binding::Code),
        _ => None,
    }
}

thread_local! {
    /// The process whose DLL code this thread is running (set by [`UserProcess::call`]).
    static CURRENT: RefCell<Option<Arc<UserProcess>>> = const { RefCell::new(None) };
}

/// A stub for `handler`, run for the calling thread's process.
fn stub_fn(name: &'static str, handler: Handler) -> cpu::StubFn {
    Arc::new(move |w: &[u64; 12]| {
        let p = CURRENT.with(|c| c.borrow().clone());
        match p {
            Some(p) => {
                p.count(name);
                handler(&p, w)
            }
            None => {
                eprintln!("rvgpu-simos: the UMD image called {name} outside any process");
                StubResult::Return(u64::from(gdi32::STATUS_UNSUCCESSFUL))
            }
        }
    })
}

impl UmdImage {
    /// The DLL at `path`, read once per host process (a rebuilt file is read anew). Fails with
    /// the name of an import the simulated OS does not implement, of a section it cannot give
    /// each process its own copy of, or when the emulator cannot be loaded (with the command
    /// that installs it).
    pub fn load(path: &Path) -> Result<Arc<Self>, String> {
        unicorn::api()?;
        LOADED.get(path, "UMD image", Self::read)
    }

    fn read(path: &Path) -> Result<Self, String> {
        let data = std::fs::read(path)
            .map_err(|e| format!("cannot read the UMD image {}: {e}", path.display()))?;
        let layout = image::Image::map(&data)?;
        if let Some(name) = mapping::writable_shared(&layout) {
            return Err(format!(
                "the UMD image's section {name} is writable and shared (IMAGE_SCN_MEM_SHARED): \
                 the simulated OS gives each process its own copy of the DLL at its own address, \
                 so one copy for all cannot be modelled"
            ));
        }
        let stubs = Stubs::new(128)?;
        let mut targets = HashMap::new();
        let mut code = Vec::new();
        for i in &layout.imports {
            let key = (i.module.clone(), i.name.clone());
            match bind(&i.module, &i.name) {
                Some(Binding::Host(h)) => {
                    let name: &'static str = Box::leak(i.name.clone().into_boxed_str());
                    targets.insert(key, stubs.add(&i.name, stub_fn(name, h))?);
                }
                Some(Binding::Code(bytes)) => code.push((key, bytes)),
                None => {
                    return Err(format!(
                        "the UMD image imports {}!{}, which the simulated OS does not implement",
                        i.module, i.name
                    ))
                }
            }
        }
        let bodies: Vec<&'static [u8]> = code.iter().map(|(_, b)| *b).collect();
        for ((key, _), at) in code.into_iter().zip(super::code_range(&bodies)?) {
            targets.insert(key, at);
        }
        let mut runtime = HashMap::new();
        for (name, h) in gdi32::RUNTIME {
            runtime.insert(*name, stubs.add(name, stub_fn(name, *h))?);
        }
        Ok(Self {
            data,
            layout,
            path: path.to_path_buf(),
            _stubs: stubs,
            targets,
            runtime,
        })
    }

    /// A new copy of the DLL for one process: mapped from the file, its imports bound.
    fn map(&self) -> Result<Mapping, String> {
        let img = image::Image::map_again(&self.data, &self.layout)?;
        for i in &img.imports {
            let at = self
                .targets
                .get(&(i.module.clone(), i.name.clone()))
                .ok_or_else(|| format!("{}!{} is not bound", i.module, i.name))?;
            img.bind(i, *at);
        }
        Ok(Mapping::new(img))
    }

    /// The DLL's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The DLL's imports, as `module!name`.
    pub fn imports(&self) -> Vec<String> {
        self.layout
            .imports
            .iter()
            .map(|i| format!("{}!{}", i.module, i.name))
            .collect()
    }

    /// The DLL's named exports.
    pub fn exports(&self) -> Vec<String> {
        self.layout.exports.iter().map(|(n, _)| n.clone()).collect()
    }

    /// `GetProcAddress(gdi32, name)`.
    fn runtime_thunk(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?;
        self.runtime.get(name).copied()
    }
}

/// What the bridge knows of one device the DLL created.
#[derive(Clone, Copy, Debug)]
struct Device {
    sim: crate::UmsProcess,
}

/// The handle tables of a process (`D3DKMT` handles are per process on Windows; a handle this
/// process did not get names nothing here).
#[derive(Default)]
struct Handles {
    /// Adapter index → the simulated process this process is on that adapter (made by its
    /// first device there; `device` is that first device): every later device there is a
    /// device of it, sharing its GPU VA space, handle table and TDR history.
    processes: HashMap<usize, crate::UmsProcess>,
    /// `hAdapter` → adapter index.
    adapters: HashMap<u32, usize>,
    /// `hDevice` → the device.
    devices: HashMap<u32, Device>,
    /// Every other handle a thunk returned (contexts, queues, doorbells, paging queues, sync
    /// objects, allocations) → the `hDevice` that owns it.
    owner: HashMap<u32, u32>,
    /// Paging queues, for `D3DKMTMakeResident`.
    paging: HashMap<u32, rvgpu_umd::kmt::PagingQueue<crate::kmt::SimFence>>,
    /// Live `Lock2` views by allocation: the view (keeps the memory alive) and its lock count.
    locks: HashMap<u32, (crate::kmt::SimMem, u32)>,
    /// Doorbells: their page's window.
    doorbells: HashMap<u32, gdi32::DoorbellPage>,
    /// Native fence instances' `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` as created or opened (24H2
    /// keeps them with the device's instance and refuses a CPU signal or wait they forbid; a
    /// monitored fence's are on the OS's object).
    sync_flags: HashMap<u32, u32>,
}

/// One Windows process that loaded the DLL, on one machine.
pub struct UserProcess {
    machine: Arc<Machine>,
    image: Arc<UmdImage>,
    /// The process's own copy of the DLL; `Err`: it could not be mapped (the host's address
    /// space is exhausted), and every call stops with why.
    mapping: Result<Mapping, String>,
    handles: Mutex<Handles>,
    /// Held while a device is created, so that two threads' first devices on one adapter
    /// make one simulated process.
    creating: Mutex<()>,
    win32: win32::Win32State,
    /// Calls per import (tests: which path the DLL took).
    calls: Mutex<HashMap<&'static str, u64>>,
    /// Doorbell stores that reached a live doorbell page.
    rings: Arc<AtomicU64>,
    /// Counting mode (`RVGPU_PE_COUNT`): per entry address called, (calls, instructions of
    /// the DLL itself — not of the thunks or the driver image behind them).
    instructions: Mutex<HashMap<usize, (u64, u64)>>,
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
            win32: win32::Win32State::default(),
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

    fn mapping(&self) -> Result<&Mapping, Stop> {
        self.mapping.as_ref().map_err(|e| Stop::Emulator(e.clone()))
    }

    /// The address of the DLL's export `name` in this process (an import of a program that
    /// links against the DLL).
    pub(crate) fn export_address(&self, name: &str) -> Option<usize> {
        self.mapping.as_ref().ok()?.export(name)
    }

    /// Runs the DLL's export `name` with `args` (Windows x64 convention) in user mode on this
    /// thread; returns RAX. The DLL's exception ends the call with
    /// [`Stop::UserException`]; an export the DLL lacks is [`Stop::Emulator`].
    pub fn call(self: &Arc<Self>, name: &str, args: &[u64]) -> Result<u64, Stop> {
        let addr = self
            .mapping()?
            .export(name)
            .ok_or_else(|| Stop::Emulator(format!("the UMD image exports no {name}")))?;
        self.run(addr, args)
    }

    /// Calls what the DLL's import (or run-time thunk) `name` is bound to, with `args`, as the
    /// DLL's own call does: on an emulated processor in user mode, for this process (tests of
    /// the thunks' handling of what a DLL may pass).
    pub fn call_import(self: &Arc<Self>, name: &str, args: &[u64]) -> Result<u64, Stop> {
        let target = match self
            .mapping()?
            .image
            .imports
            .iter()
            .find(|i| i.name == name)
        {
            // SAFETY: an IAT entry of this process's copy of the DLL (bound when it was mapped;
            // the copy lives as long as the process).
            Some(i) => (unsafe { (i.iat as *const u64).read_unaligned() }) as usize,
            None => self
                .image
                .runtime_thunk(name.as_bytes())
                .ok_or_else(|| Stop::Emulator(format!("the UMD image has no import {name}")))?,
        };
        self.run(target, args)
    }

    /// Runs code at `addr` (a program's, which calls the DLL) as this process, as
    /// [`UserProcess::call`] runs an export.
    pub(crate) fn run_at(self: &Arc<Self>, addr: usize, args: &[u64]) -> Result<u64, Stop> {
        self.run(addr, args)
    }

    fn run(self: &Arc<Self>, addr: usize, args: &[u64]) -> Result<u64, Stop> {
        let prev = CURRENT.with(|c| c.replace(Some(self.clone())));
        // User mode runs at PASSIVE_LEVEL.
        let _irql = crate::base::processor::IrqlScope::enter(rvgpu_kmd::platform::Irql::Passive);
        let before = cpu::executed_user();
        let r = cpu::call_user(addr, args);
        if cpu::counting() {
            let n = cpu::executed_user() - before;
            let mut c = lock(&self.instructions);
            let e = c.entry(addr).or_insert((0, 0));
            e.0 += 1;
            e.1 += n;
        }
        CURRENT.with(|c| *c.borrow_mut() = prev);
        r
    }

    /// Counting mode (`RVGPU_PE_COUNT=1`): the DLL's own instructions per call of export
    /// `name` so far, as (calls, instructions); `None` when it was not called or not counted.
    pub fn instructions(&self, name: &str) -> Option<(u64, u64)> {
        let addr = self.export_address(name)?;
        lock(&self.instructions).get(&addr).copied()
    }

    fn count(&self, name: &'static str) {
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
