//! The machine's calls into its image for tests: an import's routine or a callback's stub,
//! run on an emulated processor as the image's own call runs it.

use std::sync::Arc;

use super::cpu::{self, Stop};
use super::{image_of, PeImage};
use crate::adapter::context;
use crate::base::lock::lock;
use crate::base::processor;

impl crate::Machine {
    /// The PE image this machine runs, if it runs one.
    pub fn pe_image(&self) -> Option<Arc<PeImage>> {
        image_of(&self.state)
    }

    /// The address of adapter `i`'s PDO (`DXGK_DEVICE_INFO::PhysicalDeviceObject`), for tests
    /// of the simulated kernel's routines that take one.
    pub fn adapter_pdo(&self, i: usize) -> Option<u64> {
        self.adapter_shared(i)
            .ok()
            .map(|a| a.resources.pdo() as u64)
    }

    /// Calls what the image's import `name` is bound to, with `args`, on an emulated processor
    /// at `irql` in this machine's context: what the image's own call does (tests of the
    /// simulated kernel's rules). `None` when the machine runs no image or the image has no
    /// such import.
    pub fn call_pe_import(
        &self,
        name: &str,
        irql: rvgpu_kmd::platform::Irql,
        args: &[u64],
    ) -> Option<Result<u64, Stop>> {
        let img = image_of(&self.state)?;
        let import = img.loaded.image.imports.iter().find(|i| i.name == name)?;
        // SAFETY: an IAT entry of the mapped image (bound at load).
        let target = unsafe { (import.iat as *const u64).read_unaligned() } as usize;
        Some(self.run_image_code(target, irql, args))
    }

    /// Runs the image's code at `target` with `args` on an emulated processor at `irql`, in
    /// this machine's context, as the image's own call runs it.
    fn run_image_code(
        &self,
        target: usize,
        irql: rvgpu_kmd::platform::Irql,
        args: &[u64],
    ) -> Result<u64, Stop> {
        let _m = context::MachineContext::enter(self.state.clone());
        let _irql = processor::IrqlScope::enter(irql);
        cpu::call(target, args)
    }
}

impl crate::Machine {
    /// The `DeviceHandle` of the callback table the image was last handed (StartDevice's).
    pub fn pe_device_handle(&self) -> Option<u64> {
        let img = image_of(&self.state)?;
        let t = lock(&img.interfaces);
        t.last().map(|i| i.DeviceHandle as u64)
    }

    /// Calls the stub the image was handed for callback `name` (a `DXGKRNL_INTERFACE` slot, or
    /// a routine of an interface a callback returned: `IsFeatureEnabled`, `GetOSCaps`, …) with
    /// `args`, on an emulated processor at `irql` in this machine's context: what the image's
    /// own call does (tests of what the callbacks make of the image's pointers). `None` when
    /// the machine runs no image or the image was handed no such routine.
    pub fn call_pe_callback(
        &self,
        name: &str,
        irql: rvgpu_kmd::platform::Irql,
        args: &[u64],
    ) -> Option<Result<u64, Stop>> {
        let img = image_of(&self.state)?;
        let stub = lock(&img.named_stubs).get(name).copied()?;
        Some(self.run_image_code(stub, irql, args))
    }
}
