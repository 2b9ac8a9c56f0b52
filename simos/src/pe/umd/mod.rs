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

mod dll;
pub mod gdi32;
pub mod guest;
mod mapping;
mod process;
mod wait_group;
pub mod win32;
mod win32_state;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::cpu::{self, Stop, StubResult, Stubs};
use super::{image, ntoskrnl, unicorn};
use crate::base::lock::lock;
pub use dll::UmdImage;
pub(crate) use process::Handler;
pub use process::UserProcess;

static LOADED: super::ImageCache<UmdImage> = super::ImageCache::new();

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
}

impl UserProcess {
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
}
