//! Driver and adapter life as the PnP manager and Dxgkrnl drive it: DriverEntry, AddDevice,
//! StartDevice (with the caps check), StopDevice, RemoveDevice, Unload. Above the components
//! and the loader: a start brings up every component, a load installs the package
//! (`crate::install`) and maps the image (`crate::pe`).

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use rvgpu_ddi::adapter::*;
use rvgpu_ddi::basic::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_kmd::platform::Irql;

use crate::adapter::bringup;
use crate::adapter::context;
use crate::adapter::ddi::{self, check_status, At};
use crate::adapter::irql::Routine;
use crate::adapter::kernel::SimKernel;
use crate::adapter::load::{self, TableHook};
use crate::adapter::{adapter_luid, AdapterShared, Life};
use crate::base::bugcheck::{self, BugCheck};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::processor;
use crate::dxgkrnl::callbacks;
use crate::dxgkrnl::interrupt;
use crate::machine::{AdapterInfo, Machine, Mode};

/// The byte the OS pre-fills the `DXGK_DRIVERCAPS` buffer with before QueryAdapterInfo.
pub const CAPS_FILL: u8 = 0xCD;

/// The DRIVERCAPS checks the simulated Dxgkrnl makes at start (a failure fails the start,
/// [`SimError::Rejected`]): the deprecated `Reserved`/`Reserved1` blocks must be zero (Dxgkrnl
/// would misread anything else), the adapter must have 1..=ENGINE_MAX nodes (interrupt reports
/// are checked against that count), and a line-based interrupt is message number 0.
pub fn validate_caps(caps: &DXGK_DRIVERCAPS) -> Result<(), String> {
    if caps.Reserved != Default::default() || caps.Reserved1 != Default::default() {
        return Err("DRIVERCAPS Reserved/Reserved1 (deprecated) are not zero".into());
    }
    let nodes = caps.GpuEngineTopology.NbAsymetricProcessingNodes;
    if !(1..=rvgpu_hw::regs::ENGINE_MAX).contains(&nodes) {
        return Err(format!(
            "DRIVERCAPS GpuEngineTopology.NbAsymetricProcessingNodes = {nodes:#x}"
        ));
    }
    if caps.InterruptMessageNumber != 0 {
        return Err(format!(
            "DRIVERCAPS InterruptMessageNumber = {:#x} on a line-based interrupt",
            caps.InterruptMessageNumber
        ));
    }
    Ok(())
}

/// A refused install or service start, logged and returned as the load's failure.
fn refused_install(
    state: &crate::adapter::state::MachineState,
    r: crate::install::Refusal,
) -> SimError {
    state.push_log(
        rvgpu_kmd::platform::Level::Error,
        format!("driver install or load refused: {r}"),
    );
    SimError::StartRefused {
        rule: r.rule,
        status: r.code as NTSTATUS,
        why: r.why,
    }
}

impl Machine {
    /// Every adapter's keys become what the install wrote (with the configuration's edits on
    /// top, [`crate::install::AdapterKeys::with_edits`]), and so does the software key the
    /// driver's registry reads see.
    fn adopt_installed_keys(&self, keys: &crate::install::AdapterKeys) {
        for a in &self.adapters {
            *lock(&a.installed_keys) = Some(keys.clone());
            crate::adapter::registry::publish_software_key(
                a.resources.pdo() as usize,
                a.registry_keys().software_key,
            );
        }
    }

    /// DriverEntry through `rvgpu::driver_entry::<SimKernel>` with the simulated
    /// `DxgkInitialize`.
    pub fn load_driver(&mut self) -> Result<(), SimError> {
        self.load_driver_inner(None, None)
    }

    /// Like [`Machine::load_driver`], but `edit` changes the table the driver hands to
    /// `DxgkInitialize` *before* Dxgkrnl copies and checks it: a driver built differently (for
    /// instance declaring another interface version, windows-bringup.md §15 question 1).
    pub fn load_driver_as_built(
        &mut self,
        edit: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
    ) -> Result<(), SimError> {
        self.load_driver_inner(None, Some(Box::new(edit)))
    }

    /// Like [`Machine::load_driver`], then lets `hook` rewrite the validated table: a test
    /// can replace a slot with a misbehaving routine (e.g. an ISR reporting an unknown fence
    /// handle) to prove the OS side catches it.
    pub fn load_driver_with(
        &mut self,
        hook: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
    ) -> Result<(), SimError> {
        self.load_driver_inner(Some(Box::new(hook)), None)
    }

    fn load_driver_inner(
        &mut self,
        hook: Option<TableHook>,
        as_built: Option<TableHook>,
    ) -> Result<(), SimError> {
        if let Some(f) = self.state.fault() {
            return Err(f.into());
        }
        if self.loaded {
            return Err(self.misuse("driver already loaded".into()));
        }
        // The PE image's DriverEntry takes them as raw pointers (the Linux build gets them
        // through the FFI's `driver_entry`).
        #[cfg(target_os = "linux")]
        let driver_object = crate::adapter::resources::opaque(&self.driver_object);
        #[cfg(target_os = "linux")]
        let registry_path =
            (&self.registry_path.0 as *const rvgpu_ddi::basic::UNICODE_STRING).cast::<c_void>();
        let state = self.state.clone();
        let _ctx = context::MachineContext::enter(state.clone());
        // DriverEntry runs at PASSIVE_LEVEL (DRIVER_INITIALIZE).
        if let Err(b) = crate::adapter::irql::check(
            Routine::DriverEntry,
            processor::current_irql(),
            crate::dxgkrnl::callbacks::ffi::sim_dxgk_initialize as *const () as usize,
        ) {
            state.raise_bugcheck(b);
            return Err(SimError::Bugcheck(b));
        }
        // The Linux build has no files to install, but Windows still runs the INF stage for
        // its device, on the machine's own build: the models line must match it (IN-08), and
        // the registry it writes is the adapters' keys, as the package's install is for
        // `rvgpu.sys` (below).
        #[cfg(target_os = "linux")]
        let linux_build = self.config.driver == crate::os::driver_build::DriverBuild::Linux;
        #[cfg(not(target_os = "linux"))]
        let linux_build = true;
        if !self.config.install && !linux_build {
            return Err(self.misuse(
                "rvgpu.sys is loaded from its installed package: `install` stays on".into(),
            ));
        }
        if self.config.install && linux_build {
            match crate::install::inf_stage_keys(&self.config.os.windows) {
                Ok(keys) => self.adopt_installed_keys(&keys),
                Err(r) => return Err(refused_install(&state, r)),
            }
        }
        // The image comes from the package: installed as `pnputil /add-driver /install` does
        // (INF, catalog, trust), then the service start's code integrity and kernel loader
        // checks (LD-01..LD-05) on the driver-store copy (docs/windows-bringup.md §2, §1,
        // `crate::install`).
        #[cfg(target_os = "linux")]
        let pe = match &self.config.driver {
            crate::os::driver_build::DriverBuild::Pe(package) => {
                let loaded = crate::install::install_and_load(package.as_deref(), &self.config.os)
                    .map_err(|e| SimError::setup_said("installing rvgpu", e))?;
                let image = match loaded {
                    Ok((image, keys)) => {
                        self.adopt_installed_keys(&keys);
                        image
                    }
                    Err(r) => return Err(refused_install(&state, r)),
                };
                Some(
                    crate::pe::attach(&state, Some(&image))
                        .map_err(|e| SimError::setup_said("loading rvgpu.sys", e))?,
                )
            }
            crate::os::driver_build::DriverBuild::Linux => None,
        };
        #[cfg(target_os = "linux")]
        let knows_win8 = self.config.os.dxgkrnl_knows_win8_initialize;
        let status = load::with_loading(state.clone(), self.table.clone(), hook, as_built, || {
            #[cfg(target_os = "linux")]
            if let Some(pe) = &pe {
                // The image's DriverEntry on an emulated processor; a fault in it is raised on
                // this machine (checked below).
                return load::with_win8_initialize(knows_win8, || {
                    pe.driver_entry(driver_object, registry_path).unwrap_or(0)
                });
            }
            crate::dxgkrnl::callbacks::ffi::driver_entry::<SimKernel>(
                &self.driver_object,
                &self.registry_path,
            )
        });
        if let Err(b) = processor::check_return_irql(
            Irql::Passive,
            bugcheck::irql_unexpected::SIM_DDI,
            rvgpu::driver_entry::<SimKernel> as *const () as usize as u64,
            0,
            Routine::DriverEntry.id(),
        ) {
            state.raise_bugcheck(b);
        }
        if let Some(f) = state.fault() {
            return Err(f.into());
        }
        ddi::check_routine(Routine::DriverEntry, status)?;
        if self.table.get().is_none() {
            return Err(self.misuse("DriverEntry succeeded without calling DxgkInitialize".into()));
        }
        self.loaded = true;
        Ok(())
    }

    /// AddDevice (first start), StartDevice, the start-time adapter queries, then connects the
    /// interrupt.
    pub fn start_adapter(&mut self, i: usize) -> Result<AdapterInfo, SimError> {
        let a = self.adapter(i)?.clone();
        let t = self.table()?;
        let life = *lock(&a.life);
        if life == Life::Started {
            return Err(self.misuse(format!("adapter {i} already started")));
        }
        if life == Life::Absent {
            self.add_device(i, &a, &t)?;
        }
        let start = ddi::in_table!(t, DxgkDdiStartDevice)
            .ok_or_else(|| self.misuse("no StartDevice".into()))?;
        let mut start_info = start_info(i);
        // The feature database, before StartDevice: the driver asks it from StartDevice on
        // ([D] DpiFeatureStartDevice in DpiFdoStartAdapter).
        let db = crate::dxgkrnl::features::negotiate(&a, &t)?;
        *lock(&a.features) = db;
        let mut iface = Box::new(callbacks::interface_for(&a));
        *lock(&a.interface) = Some(crate::adapter::SendTable(*iface));
        // From here the driver holds the DeviceHandle and may queue DPCs.
        a.handle_valid.store(true, Ordering::Release);
        *lock(&a.irq.dpc_gate) = true;
        let (mut sources, mut children) = (u32::MAX, u32::MAX);
        // BR-20: Dxgkrnl connects the interrupt before StartDevice ([D] DpiFdoStartAdapter), so
        // the ISR may run before and during the start, with nothing mapped yet.
        a.irq.connected.store(true, Ordering::Release);
        a.irq.irq_wake.notify();
        // The DPC gate opened above: a DPC queued before it may run now.
        a.irq.dpc_wake.notify();
        let ctx = a.context();
        a.observer()
            .handed(&rvgpu_ddi::handover::START_DEVICE, &start_info);
        let status = start.call_unaudited(
            &a,
            At::Caller,
            (
                ctx,
                &mut start_info,
                &mut *iface,
                &mut sources,
                &mut children,
            ),
        );
        if !matches!(status, Ok(s) if s >= 0) {
            // A failed start: the interrupt is disconnected and no DPC may run for it any more.
            a.irq.connected.store(false, Ordering::Release);
            drop(lock(&a.irq.interrupt_lock));
            let _ = interrupt::flush_dpcs(&a, self.config.mode == Mode::Threaded);
        }
        check_status(start, status?)?;
        let caps = match self.query_caps_raw(&a, &t) {
            Ok(c) => c,
            Err(e) => {
                let _ = self.stop_inner(&a, &t);
                return Err(e);
            }
        };
        // From here the OS knows the adapter's nodes (interrupt reports are checked against
        // them).
        *lock(&a.caps) = Some(caps);
        // BR-58, BR-37: the physical adapters' caps, asked right after DRIVERCAPS.
        let physical = self.query_physical_adapter_caps(&a, &t, &caps)?;
        // Adapter creation's caps and DDI-table rules (docs/windows-bringup.md §6), in order.
        let facts = bringup::facts::gather(&a, &t, &caps, sources, children)?;
        let mut rules = bringup::check_caps(&caps, physical.as_ref(), &t, &facts);
        // BR-61/62/64/68: VidMm asks for the segments and, for a GPU-VA adapter,
        // the GPU MMU's caps and page-table levels while the render core is created.
        match crate::vidmm::init::query(&a, &t, &caps)? {
            Ok(model) => *lock(&a.mm.memory_model) = model,
            Err(v) => rules.push(v),
        }
        if let Some(v) = rules.into_iter().next() {
            return self.refuse(&a, &t, v);
        }
        let reject =
            |why: String| -> Result<AdapterInfo, SimError> { Err(SimError::Rejected(why)) };
        if let Err(w) = start_checks(&a, &t, &caps, sources, children)? {
            self.state.push_log(
                rvgpu_kmd::platform::Level::Error,
                format!("start rejected: {w}"),
            );
            self.stop_inner(&a, &t)?;
            return reject(w);
        }
        // UM-03, BR-70: node metadata for every node.
        let metadata = match crate::ums::query_node_metadata(&a, &t, &caps)? {
            Ok(m) => m,
            Err(v) => return self.refuse(&a, &t, v),
        };
        // BR-71..75 per node.
        let rules = bringup::nodes::check_nodes(&a, &t, &caps, &metadata);
        if let Some(v) = rules.into_iter().next() {
            return self.refuse(&a, &t, v);
        }
        // UM-04, BR-76: the user-mode submission caps, after the node rules.
        match crate::ums::query_at_start(&a, &t, &caps, metadata) {
            Ok(()) => {}
            Err(SimError::StartRefused { rule, status, why }) => {
                return self.refuse(&a, &t, bringup::Violation { rule, status, why });
            }
            Err(SimError::Rejected(w)) => {
                self.state.push_log(
                    rvgpu_kmd::platform::Level::Error,
                    format!("start rejected: {w}"),
                );
                self.stop_inner(&a, &t)?;
                return reject(w);
            }
            Err(e) => return Err(e),
        }
        // BR-57 (the history-buffer precision), then BR-54 once the render core is
        // initialised, before power management.
        let history = bringup::facts::history_precision(&a, &t)?;
        if let Some(v) = bringup::check_render_core(&t, history) {
            return self.refuse(&a, &t, v);
        }
        if let Some(end) = self.init_paging_and_scheduling(&a, &t, &caps) {
            return end;
        }
        // BR-100…BR-106: runtime power management (`dxgkrnl::power`), after the render core.
        let components = match crate::dxgkrnl::power::initialize(&a, &t, &caps) {
            Ok(Ok(c)) => c,
            Ok(Err(v)) => return self.refuse(&a, &t, v),
            Err(e) => return Err(e),
        };
        *lock(&a.caps) = Some(caps);
        *lock(&a.life) = Life::Started;
        if let Some(c) = components {
            // BR-107: StartRuntimePowerManagement once the adapter is up.
            crate::ums::runtime_pm_registered(&a, c.components, c.node_component);
            crate::dxgkrnl::power::start(&a, &t)?;
        }
        Ok(AdapterInfo {
            sources,
            children,
            caps,
        })
    }

    /// AddDevice on an absent adapter `i`, then the OS's check of the KMD's version (BR-14).
    fn add_device(
        &mut self,
        i: usize,
        a: &std::sync::Arc<AdapterShared>,
        t: &DRIVER_INITIALIZATION_DATA,
    ) -> Result<(), SimError> {
        let add = ddi::in_table!(t, DxgkDdiAddDevice)
            .ok_or_else(|| self.misuse("no AddDevice".into()))?;
        let pdo = a.resources.pdo();
        let mut ctx: *mut c_void = std::ptr::null_mut();
        let status = add.call_unaudited(a, At::Caller, (pdo, &mut ctx))?;
        check_status(add, status)?;
        if ctx.is_null() {
            return Err(self.misuse("AddDevice succeeded with a NULL context".into()));
        }
        a.set_context(ctx);
        *lock(&a.life) = Life::Added;
        // BR-14: after the miniport's AddDevice, `DpiAddDevice` creates the FDO and
        // `DpiFdoInitializeFdo` compares the KMD's file version with DriverVer; a refusal
        // undoes the FDO and calls the miniport's RemoveDevice ([D24] `DpiAddDevice` @
        // 0x1402393B0).
        if let Err(refusal) = self.check_kmd_version(a, t) {
            self.remove_adapter(i)?;
            return Err(refusal);
        }
        Ok(())
    }

    /// BR-66, BR-65(b), BR-77, BR-79: the paging process, the system device and contexts, the
    /// paging DMA pool, the paging process's space, each node's bands and scheduling logs.
    /// `Some`: the start ends with it.
    fn init_paging_and_scheduling(
        &mut self,
        a: &std::sync::Arc<AdapterShared>,
        t: &DRIVER_INITIALIZATION_DATA,
        caps: &DXGK_DRIVERCAPS,
    ) -> Option<Result<AdapterInfo, SimError>> {
        // BR-66 (VidMmInitializePagingProcess → VidSchCreateSystemDevices): the system device
        // and one system context per node, before the scheduling logs.
        // The paging process comes first ([D] VIDMM_PAGING_PROCESS::InitPagingProcess); its
        // VA space and root after the system contexts that page it (InitPagingProcessVaSpace).
        if let Err(e) = crate::vidmm::mmu::open_paging_process(a) {
            return Some(self.paging_process_failed(a, t, e));
        }
        let nodes = caps.GpuEngineTopology.NbAsymetricProcessingNodes;
        match crate::vidsch::system::create(a, t, nodes) {
            Ok(Ok(())) => {}
            Ok(Err(v)) => return Some(self.refuse(a, t, v)),
            Err(e) => {
                let _ = crate::vidsch::system::destroy(a, t);
                return Some(Err(e));
            }
        }
        // BR-65(b) ([D] VidMmInitializePagingProcess → InitDmaPools): the paging DMA pool,
        // after the system devices and before the paging fences and VA space.
        let pool = crate::vidmm::dmapool::paging_pool(a);
        if let Some(v) = bringup::paging::check_paging_pool(&pool) {
            return Some(self.refuse(a, t, v));
        }
        // The paging process's space, root and scheduling logs are built with the tables
        // named by CPU address on 24H2 (InitPagingProcessVaSpace).
        let building = crate::vidmm::mmu::system_space::building_paging_space(a);
        if let Err(e) = crate::vidmm::mmu::system_space::vidmm_init_paging_process(self, a) {
            drop(building);
            return Some(self.paging_process_failed(a, t, e));
        }
        // BR-77 (VidSchiInitializeNode) and BR-79 (VidSchCreateSchedulingLogs): priority bands
        // and scheduling logs on every hardware-scheduled node before any work is scheduled.
        let paging = crate::vidsch::hws::PagingSpace {
            map: &|pa, n| self.vidmm_map_system(a, pa, n, Default::default()),
            unmap: &|pa, n| crate::vidmm::mmu::system_space::vidmm_unmap_system(self, a, pa, n),
        };
        let nodes = crate::vidsch::hws::initialize_nodes(&paging, a, t);
        drop(building);
        if let Err(e) = nodes {
            self.state.push_log(
                rvgpu_kmd::platform::Level::Error,
                format!("start failed: {e}"),
            );
            return Some(self.stop_inner(a, t).and(Err(e)));
        }
        None
    }

    /// The paging process could not be set up (\[D\] VidMmInitializePagingProcess: the first
    /// failure fails the adapter): a failure with a status is BR-66's (`bringup::paging`).
    fn paging_process_failed(
        &self,
        a: &AdapterShared,
        t: &DRIVER_INITIALIZATION_DATA,
        e: SimError,
    ) -> Result<AdapterInfo, SimError> {
        let rows = bringup::paging::PAGING_PROCESS_RULES;
        match bringup::paging::check(rows, "the paging process", None, e.status()) {
            Some(v) => {
                self.state.push_log(
                    rvgpu_kmd::platform::Level::Error,
                    format!("paging process: {e}"),
                );
                self.refuse(a, t, v)
            }
            None => {
                self.state.push_log(
                    rvgpu_kmd::platform::Level::Error,
                    format!("start failed: paging process: {e}"),
                );
                self.stop_inner(a, t)?;
                Err(e)
            }
        }
    }

    /// BR-14 (`bringup::add_device`): a file version that differs from the device's
    /// DriverVersion and is not exempt fails AddDevice (`Err`: the refusal to return once the
    /// miniport's AddDevice is undone).
    fn check_kmd_version(
        &self,
        a: &AdapterShared,
        t: &DRIVER_INITIALIZATION_DATA,
    ) -> Result<(), SimError> {
        use crate::adapter::kmdver;
        let file = match &a.config.kmd_file_version {
            Some(v) => v.clone(),
            None => self.kmd_file_version(),
        };
        let outcome = kmdver::check(
            a.os.disable_version_mismatch_check,
            t.Version,
            u32::from(a.config.pci_vendor_id),
            a.registry_keys().driver_version.as_deref(),
            file,
        );
        let mismatch = match outcome {
            kmdver::Outcome::Mismatch { pnp, file } => {
                Some((kmdver::dotted(file), kmdver::dotted(pnp)))
            }
            // Equal, exempt or not compared: Windows goes on without a word.
            kmdver::Outcome::Match
            | kmdver::Outcome::Exempt { .. }
            | kmdver::Outcome::Skipped(_) => None,
        };
        let Some(v) = bringup::add_device::check_kmd_version(mismatch) else {
            return Ok(());
        };
        self.state.push_log(
            rvgpu_kmd::platform::Level::Error,
            format!("AddDevice refused: {}: {}", v.rule, v.why),
        );
        Err(SimError::StartRefused {
            rule: v.rule,
            status: v.status,
            why: v.why,
        })
    }

    /// The file version of the driver build this machine loads: the `rvgpu.sys` a PE machine
    /// runs, or the version build.rs stamps for the Linux build.
    fn kmd_file_version(&self) -> Result<u64, String> {
        #[cfg(target_os = "linux")]
        if let Some(pe) = self.state.pe() {
            return crate::adapter::kmdver::file_version_of(pe.path());
        }
        Ok(crate::adapter::registry::stamped_file_version())
    }

    /// Fails the start for `v` with Windows' status (the adapter is stopped again).
    fn refuse(
        &self,
        a: &AdapterShared,
        t: &DRIVER_INITIALIZATION_DATA,
        v: bringup::Violation,
    ) -> Result<AdapterInfo, SimError> {
        self.state.push_log(
            rvgpu_kmd::platform::Level::Error,
            format!("start refused: {}: {}", v.rule, v.why),
        );
        self.stop_inner(a, t)?;
        Err(SimError::StartRefused {
            rule: v.rule,
            status: v.status,
            why: v.why,
        })
    }

    /// `DXGKQAITYPE_PHYSICALADAPTERCAPS` for physical adapter 0 (\[D\] `DXGADAPTER::Initialize`,
    /// docs/windows-bringup.md §5 step 4): asked only of a WDDM 2.0+ driver of interface
    /// 0x5005 or later, with the output size of the interface version (32 bytes from 0xC003,
    /// 24 from 0x6000, else 20). A failure is tolerated (Windows then uses defaults and skips
    /// the rules that read the answer): `None`.
    fn query_physical_adapter_caps(
        &self,
        a: &AdapterShared,
        t: &DRIVER_INITIALIZATION_DATA,
        caps: &DXGK_DRIVERCAPS,
    ) -> Result<Option<DXGK_PHYSICALADAPTERCAPS>, SimError> {
        let Some(q) = ddi::in_table!(t, DxgkDdiQueryAdapterInfo) else {
            return Ok(None);
        };
        if (caps.WDDMVersion as u32) < 0x2000 || t.Version < 0x5005 {
            return Ok(None);
        }
        let size: u32 = match t.Version {
            v if v >= 0xC003 => 32,
            v if v >= 0x6000 => 24,
            _ => 20,
        };
        let mut index = DXGK_QUERYPHYSICALADAPTERCAPSIN::default();
        // Pre-filled like DRIVERCAPS, so what the driver leaves unset is visible.
        let mut out = [CAPS_FILL; std::mem::size_of::<DXGK_PHYSICALADAPTERCAPS>()];
        let args = DXGKARG_QUERYADAPTERINFO {
            Type: DXGKQAITYPE_PHYSICALADAPTERCAPS,
            pInputData: (&mut index as *mut DXGK_QUERYPHYSICALADAPTERCAPSIN).cast(),
            InputDataSize: std::mem::size_of_val(&index) as u32,
            pOutputData: out.as_mut_ptr().cast(),
            OutputDataSize: size,
            Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
            hKmdProcessHandle: std::ptr::null_mut(),
        };
        let status = ddi::query_adapter_info_args(a, q, At::Caller, &args)?;
        if status < 0 {
            return Ok(None);
        }
        Ok(ddi::read_plain::<DXGK_PHYSICALADAPTERCAPS>(&out))
    }

    fn query_caps_raw(
        &self,
        a: &AdapterShared,
        t: &DRIVER_INITIALIZATION_DATA,
    ) -> Result<DXGK_DRIVERCAPS, SimError> {
        let q = ddi::in_table!(t, DxgkDdiQueryAdapterInfo)
            .ok_or_else(|| self.misuse("no QueryAdapterInfo".into()))?;
        // Pre-filled with a 0xCD pattern (what an uninitialised pool buffer looks like under
        // Verifier) so a field the driver leaves unset is visible to the checks in
        // `validate_caps` and to tests.
        let mut caps = ddi::filled::<DXGK_DRIVERCAPS>(CAPS_FILL);
        let status = ddi::query_adapter_info(a, q, DXGKQAITYPE_DRIVERCAPS, At::Caller, &mut caps)?;
        check_status(q, status)?;
        Ok(caps)
    }

    /// `DXGKQAITYPE_DRIVERCAPS` on a started adapter, at the calling thread's IRQL.
    pub fn query_driver_caps(&self, i: usize) -> Result<DXGK_DRIVERCAPS, SimError> {
        let a = self.adapter(i)?;
        let t = self.table()?;
        if *lock(&a.life) != Life::Started {
            return Err(self.misuse(format!("adapter {i} is not started")));
        }
        self.query_caps_raw(a, &t)
    }

    fn stop_inner(
        &self,
        a: &AdapterShared,
        t: &DRIVER_INITIALIZATION_DATA,
    ) -> Result<(), SimError> {
        let stop = ddi::in_table!(t, DxgkDdiStopDevice)
            .ok_or_else(|| self.misuse("no StopDevice".into()))?;
        // BR-107: runtime power management stops before the adapter goes ([D] DXGADAPTER::Stop).
        crate::dxgkrnl::power::stop(a, t)?;
        // Teardown: VidSch reads what the GPU logged last.
        crate::vidsch::hws::drain_all(a);
        // The paging process goes before the adapter: the system contexts and the system
        // device, then the paging process itself.
        crate::vidsch::system::destroy(a, t)?;
        crate::vidmm::mmu::close_paging_process(a)?;
        let status = stop.call(a, At::Caller, a.context());
        // Disconnect the interrupt and flush DPCs whatever StopDevice said (IoDisconnectInterrupt
        // and KeFlushQueuedDpcs follow the stop in Dxgkrnl).
        a.irq.connected.store(false, Ordering::Release);
        // Any ISR that was waiting for the lock re-checks `connected` once it has it.
        drop(lock(&a.irq.interrupt_lock));
        let flushed = interrupt::flush_dpcs(a, self.config.mode == Mode::Threaded);
        *lock(&a.life) = Life::Stopped;
        crate::vidsch::hws::release(a);
        let status = status?;
        flushed?;
        check_status(stop, status)
    }

    /// StopDevice, then disconnects the interrupt and flushes DPCs. Before it, as
    /// `K:ADAPTER_RENDER::Stop` @0x14019FC38 orders them, every device is torn down
    /// (`K:DXGDEVICE::Stop` @0x1401BBA38: its allocations first, its queues still scheduled, no
    /// flush into error), then the adapter's native fences are destroyed (NF-13 order): a
    /// pending CPU wait ends `Abandoned`, unless a queue still running faulted on the unmapped
    /// allocations, which put its device in error and signalled its fences to `u64::MAX`
    /// first.
    pub fn stop_adapter(&mut self, i: usize) -> Result<(), SimError> {
        let a = self.adapter(i)?.clone();
        let t = self.table()?;
        if *lock(&a.life) != Life::Started {
            return Err(self.misuse(format!("adapter {i} is not started")));
        }
        // Processes go first (their devices are torn down as abnormal exits), then fences.
        self.destroy_all_devices(i)?;
        self.destroy_all_native_fences(i)?;
        self.stop_inner(&a, &t)
    }

    /// PnP surprise removal of started adapter `i` while it runs: the device is
    /// gone at once (`DEVICE_STATUS.LOST`, registers all-ones, no DMA, no interrupt). Then, as
    /// Dxgkrnl does: `DxgkDdiNotifySurpriseRemoval(DxgkRemovalPnPNotify)` if the driver's
    /// caps set `SupportSurpriseRemoval` (its status is ignored, the page says); every D3D
    /// device of the adapter in error (thunks fail with `STATUS_DEVICE_REMOVED`, progress
    /// fences released; no doorbell status is written). The PnP remove that follows is the
    /// caller's: [`Machine::stop_adapter`] (processes' objects destroyed, native-fence waits
    /// abandoned) and [`Machine::remove_adapter`] (leak checks).
    pub fn surprise_remove(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter(i)?.clone();
        if *lock(&a.life) != Life::Started {
            return Err(self.misuse(format!("adapter {i} is not started")));
        }
        a.device.lose_device();
        let supported = lock(&a.caps).is_some_and(|c| c.SupportSurpriseRemoval != 0);
        if supported {
            let t = self.table()?;
            let Some(f) = ddi::in_table!(t, DxgkDdiNotifySurpriseRemoval) else {
                let msg = format!(
                    "adapter {i}: SupportSurpriseRemoval is set but DxgkDdiNotifySurpriseRemoval \
                     is null"
                );
                self.state.raise_sim_error(msg.clone());
                return Err(SimError::Violation(msg));
            };
            let ctx = a.context();
            let removal = rvgpu_ddi::adapter::DxgkRemovalPnPNotify;
            // The return status is ignored for a removal while running (the DDI's page).
            let _ = f.passive(&a, (ctx, removal))?;
        }
        self.device_removed(i)
    }

    /// RemoveDevice on a stopped (or added, never started) adapter.
    pub fn remove_adapter(&mut self, i: usize) -> Result<(), SimError> {
        let a = self.adapter(i)?.clone();
        let t = self.table()?;
        let life = *lock(&a.life);
        if !matches!(life, Life::Stopped | Life::Added) {
            return Err(self.misuse(format!("adapter {i} is {life:?}, not stopped")));
        }
        let remove = ddi::in_table!(t, DxgkDdiRemoveDevice)
            .ok_or_else(|| self.misuse("no RemoveDevice".into()))?;
        // Nothing calls the driver for this adapter afterwards.
        let status = remove.call(&a, At::Caller, a.context())?;
        check_status(remove, status)?;
        // The driver freed its adapter: a kernel timer still set in it is 0xC7.
        if let Err(b) = crate::adapter::ktimer::check_removed(&a) {
            self.state.raise_bugcheck(b);
            return Err(SimError::Bugcheck(b));
        }
        // Dxgkrnl frees the adapter: its DeviceHandle dangles from now on.
        a.handle_valid.store(false, Ordering::Release);
        // What the driver still holds of this adapter can never be released now (every
        // release needs the dead handle).
        let (devices, contexts, queues, doorbells, allocations) = crate::ums::live_counts(&a);
        if devices + contexts + queues + doorbells + allocations != 0 {
            let msg = format!(
                "RemoveDevice of adapter {i} with user-mode submission objects alive: {devices} \
                 device(s), {contexts} context(s), {queues} queue(s), {doorbells} doorbell(s), \
                 {allocations} allocation(s)"
            );
            self.state.raise_sim_error(msg.clone());
            return Err(SimError::Violation(msg));
        }
        let mappings: usize = lock(&a.mm.mappings).values().sum();
        let contiguous = lock(&a.mm.contiguous).len();
        let refs = a.feature_refs.load(Ordering::Acquire);
        if mappings != 0 || contiguous != 0 || refs != 0 {
            let msg = format!(
                "RemoveDevice of adapter {i} returned with {mappings} BAR mapping(s), \
                 {contiguous} contiguous allocation(s) and {refs} feature-interface \
                 reference(s) still held"
            );
            self.state.raise_sim_error(msg.clone());
            return Err(SimError::Violation(msg));
        }
        a.set_context(std::ptr::null_mut());
        *lock(&a.life) = Life::Absent;
        Ok(())
    }

    /// DxgkDdiUnload once every adapter is removed. Contiguous memory the driver still owns
    /// is a leak Driver Verifier reports at unload: 0xC4 subtype 0x62.
    pub fn unload(&mut self) -> Result<(), SimError> {
        if let Some(f) = self.state.fault() {
            return Err(f.into());
        }
        let t = self.table()?;
        if let Some(a) = self
            .adapters
            .iter()
            .find(|a| *lock(&a.life) != Life::Absent)
        {
            return Err(self.misuse(format!("Unload with adapter {} still present", a.index)));
        }
        let unload =
            ddi::in_table!(t, DxgkDdiUnload).ok_or_else(|| self.misuse("no Unload".into()))?;
        unload.call_driver_wide(&self.state, ())?;
        // Contiguous memory and I/O-space mappings are both tracked by Verifier's
        // pool/allocation tracking; one still live at unload is the 0x62 leak.
        let leaked: usize = self
            .adapters
            .iter()
            .map(|a| lock(&a.mm.contiguous).len() + lock(&a.mm.mappings).values().sum::<usize>())
            .sum();
        // The PE image's own pool is tracked the same way (ExAllocatePool2 in the simulated
        // kernel): a block still allocated after Unload is the 0x62 leak, with its count.
        #[cfg(target_os = "linux")]
        let leaked = leaked + self.state.pe().map_or(0, |p| p.pool_in_use().1);
        if leaked != 0 {
            let b = BugCheck::verifier(0x62, 0, 0, leaked as u64);
            self.state.raise_bugcheck(b);
            return Err(SimError::Bugcheck(b));
        }
        // Freed contiguous memory must still hold the poison: a write after free is what
        // special pool catches (0xD5).
        for a in &self.adapters {
            let q = std::mem::take(&mut *lock(&a.mm.quarantine));
            for (va, c) in &q {
                let dirty =
                    c.alloc.words().iter().position(|w| {
                        w.load(Ordering::Acquire) != crate::state::vidmm::FREED_POISON
                    });
                if let Some(i) = dirty {
                    let b = BugCheck::new(
                        bugcheck::DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL,
                        [(va + i * 8) as u64, 1, 0, 0],
                    );
                    self.state.raise_bugcheck(b);
                    return Err(SimError::Bugcheck(b));
                }
            }
        }
        self.table.set(None);
        self.loaded = false;
        Ok(())
    }
}

/// The start-time checks that reject the adapter: its caps, a render-only adapter's
/// sources and children, native fences (NF-10, NF-11). `Err`: why the start is rejected.
fn start_checks(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &DXGK_DRIVERCAPS,
    sources: u32,
    children: u32,
) -> Result<Result<(), String>, SimError> {
    let mut why = validate_caps(caps).err();
    if sources != 0 || children != 0 {
        why = Some(format!(
            "render-only adapter reported {sources} video present sources and {children} children"
        ));
    }
    if caps.SchedulingCaps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence) && !a.native_fence_enabled() {
        // NF-10: the OS fails adapter start when the KMD advertises native fences the OS
        // did not enable.
        why = Some(
            "NativeGpuFence advertised while DXGK_FEATURE_NATIVE_FENCE is disabled (NF-10)".into(),
        );
    }
    let advertised = caps.SchedulingCaps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence);
    let mut fence_caps = None;
    if why.is_none() && advertised {
        // NF-11: the OS asks for the native-fence caps and relies on them.
        match crate::sync::fence::query_caps(a, t) {
            Ok(c) => match crate::sync::fence::validate_native_fence_caps(&c) {
                Ok(()) => fence_caps = Some(c),
                Err(w) => why = Some(w),
            },
            Err(e) => match e.status() {
                Some(s) => {
                    why = Some(format!(
                        "DXGKQAITYPE_NATIVE_FENCE_CAPS failed ({:#010x}) with NativeGpuFence \
                         advertised",
                        s as u32
                    ))
                }
                None => return Err(e),
            },
        }
    }
    lock(&a.fence_os).caps = fence_caps;
    Ok(match why {
        Some(w) => Err(w),
        None => Ok(()),
    })
}

/// The `DXGK_START_INFO` StartDevice gets for adapter `i`: its GUID and LUID, and the DMA
/// queue depth 24H2 always names (K:DpiFdoStartAdapter @0x140245688 writes 32).
fn start_info(i: usize) -> DXGK_START_INFO {
    DXGK_START_INFO {
        RequiredDmaQueueEntry: 32,
        AdapterGuid: GUID {
            Data1: 0x5256_A0A0,
            Data2: 0,
            Data3: 0x4000,
            Data4: [0x80, 0, 0, 0, 0, 0, 0, i as u8],
        },
        AdapterLuid: adapter_luid(i),
    }
}
