//! A simulated machine: one physical `Memory`, N adapters (each an emulated device), the
//! simulated Dxgkrnl, and in threaded mode an interrupt thread and a DPC thread per adapter.
//!
//! Each adapter's hardware is a [`Board`] ([`crate::hal`]): the emulated device in this
//! process, or (Linux guest) a PCI function ([`pci`], chosen by [`MachineConfig::pci`]).
//!
//! The test-facing API: [`Machine::new`] ([`Machine::try_new`]), [`Machine::load_driver`],
//! [`Machine::start_adapter`],
//! [`Machine::query_driver_caps`], [`Machine::stop_adapter`], [`Machine::remove_adapter`],
//! [`Machine::unload`], [`Machine::bugcheck`], [`Machine::notifications`],
//! [`Machine::driver_log`], [`Machine::device`], and in step mode [`Machine::run_until_idle`]
//! / [`Machine::run_steps`]. Every call returns `Err(SimError::Bugcheck)` once the machine has
//! bug-checked.

mod api;
mod run;
mod stock;

/// The CPU cache model lives with the allocations it caches; kept reachable here.
pub use crate::state::vidmm::cpucache;

// The hardware seam and the PCI board keep their paths under the machine (the harness names
// `machine::PciSpec` and `machine::pci`).
pub use crate::hal::board::{Board, PciSpec};
#[cfg(target_os = "linux")]
pub use crate::hal::pci;
// The readings keep their path under the machine (tests name `machine::answers`).
pub use crate::os::answers;
pub use crate::os::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::thread::JoinHandle;
use std::time::Duration;

use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_device::{Device, DeviceConfig, Memory};
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::RegistryPath;
use crate::adapter::kernel::{self};
use crate::adapter::state::{LogLine, MachineState};
use crate::adapter::waiter::{Round, Waiter};
use crate::adapter::{AdapterShared, DriverTable, Life};
use crate::base::bugcheck::BugCheck;
use crate::base::error::SimError;
use crate::base::line::{SimLine, Wake};
use crate::base::lock::lock;
use crate::base::notify::Processed;
use crate::base::processor::IrqlScope;
use crate::dxgkrnl::interrupt::{self, Serviced};

/// The loop of one of an adapter's simulation threads (threaded mode), until its stop flag.
type ThreadBody = fn(Arc<AdapterShared>, Arc<AtomicBool>);

/// The driver's adapter table is driver-wide with [`rvgpu_kmd::MAX_ADAPTERS`] slots,
/// and every machine of the test process loads the same driver: live adapters of all machines
/// together must fit. A machine holds permits for its adapters from creation until it is
/// dropped (after its orderly [`Machine::shutdown`]); a machine needing more than are free
/// waits (a simulation artifact: on Windows one computer has one driver instance).
struct AdapterPermits(usize);

static LIVE_ADAPTERS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static LIVE_ADAPTERS_CV: std::sync::Condvar = std::sync::Condvar::new();

impl AdapterPermits {
    fn acquire(n: usize) -> Self {
        let cap = rvgpu_kmd::MAX_ADAPTERS;
        let g = lock(&LIVE_ADAPTERS);
        let (mut g, _) = crate::base::lock::waiting(g, |g| {
            LIVE_ADAPTERS_CV
                .wait_timeout_while(g, Duration::from_secs(120), |live| {
                    *live > 0 && *live + n > cap
                })
                .unwrap_or_else(|p| p.into_inner())
        });
        *g += n;
        Self(n)
    }
}

impl Drop for AdapterPermits {
    fn drop(&mut self) {
        let mut g = lock(&LIVE_ADAPTERS);
        *g = g.saturating_sub(self.0);
        LIVE_ADAPTERS_CV.notify_all();
    }
}

/// A simulated machine. Dropping it stops its threads and devices.
pub struct Machine {
    pub(crate) state: Arc<MachineState>,
    pub(crate) config: MachineConfig,
    pub(crate) memory: Arc<Memory>,
    pub(crate) table: Arc<DriverTable>,
    pub(crate) adapters: Vec<Arc<AdapterShared>>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) threads: Vec<JoinHandle<()>>,
    pub(crate) driver_object: Box<[u64; 4]>,
    pub(crate) registry_path: Box<RegistryPath>,
    pub(crate) loaded: bool,
    /// Every process's NT handle table (objects shared across processes, `crate::ob`).
    pub(crate) handles: crate::ob::HandleTables<crate::sync::fence::NtObject>,
    _permits: AdapterPermits,
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("id", &self.state.id())
            .field("mode", &self.config.mode)
            .field("adapters", &self.adapters.len())
            .finish_non_exhaustive()
    }
}

impl Machine {
    /// Builds the machine: memory, devices (started in threaded mode), interrupt and DPC
    /// threads. No driver is loaded yet.
    ///
    /// # Panics
    /// With [`MachineConfig::pci`] set, if the PCI function cannot be opened
    /// ([`Machine::try_new`] returns the error instead). An in-process machine always builds.
    pub fn new(config: MachineConfig) -> Self {
        match Self::try_new(config) {
            Ok(m) => m,
            Err(e) => panic!("cannot build the machine: {e}"),
        }
    }

    /// [`Machine::new`], failing when a PCI function of [`MachineConfig::pci`] cannot be
    /// opened (not found, not bound to uio_pci_generic, BARs or DMA memory not mappable), or
    /// the machine has more adapters than the guest has functions.
    pub fn try_new(config: MachineConfig) -> Result<Self, SimError> {
        let pci_functions = match &config.pci {
            Some(spec) => pci_functions(spec)?,
            None => Vec::new(),
        };
        if config.pci.is_some() && config.mode != Mode::Threaded {
            return Err(SimError::setup("a PCI board needs a threaded machine"));
        }
        if config.pci.is_some() && config.adapters.len() > pci_functions.len() {
            return Err(SimError::setup(format!(
                "{} adapters on {} rvgpu PCI function(s): one function each",
                config.adapters.len(),
                pci_functions.len()
            )));
        }
        let permits = AdapterPermits::acquire(config.adapters.len());
        let state = Arc::new(MachineState::new());
        // System RAM is the machine's; each board has its own VRAM (adapter 0's is the one
        // `Machine::memory` shows at `VRAM_BASE`).
        let vram0 = config.adapters.first().map_or(0, |a| a.device.vram_size);
        let mut memory = Memory::new(vram0);
        memory.set_freed_first(config.os.reuse_freed_pages_first);
        let table = Arc::new(DriverTable::default());
        let device_mode = match config.mode {
            Mode::Threaded => rvgpu_device::Mode::Threaded,
            Mode::Step => rvgpu_device::Mode::Step,
        };
        let mut adapters: Vec<Arc<AdapterShared>> = Vec::new();
        for (i, ac) in config.adapters.iter().enumerate() {
            // The interrupt thread sleeps on the line's wake (the DPC thread and the
            // worker on the adapter's own, Interrupts::dpc_wake and VidSchState::wake).
            let irq_wake = Arc::new(Wake::default());
            let line = Arc::new(SimLine::new(irq_wake.clone()));
            let pci = config.pci.as_ref().zip(pci_functions.get(i));
            let (board, emulated): (Arc<dyn Board>, Option<Arc<Device>>) = match pci {
                Some((spec, function)) => {
                    // The first board maps the DMA pool; the others share its system memory.
                    let system = (i > 0).then_some(&memory);
                    let b: Arc<dyn Board> = open_pci(function, spec, system, line.clone())?;
                    if i == 0 {
                        memory = b.memory().clone();
                    }
                    (b, None)
                }
                None => {
                    let dc = DeviceConfig {
                        mode: device_mode,
                        ..ac.device.clone()
                    };
                    let mem = if i == 0 {
                        memory.clone()
                    } else {
                        memory.sibling(ac.device.vram_size)
                    };
                    let device = Device::new(dc, mem, line.clone());
                    device.start();
                    (device.clone(), Some(device))
                }
            };
            // After a bug check nothing more reaches the device.
            let weak = Arc::downgrade(&board);
            state.on_halt(Box::new(move || {
                if let Some(d) = weak.upgrade() {
                    d.freeze();
                }
            }));
            adapters.push(AdapterShared::new(
                i,
                state.clone(),
                board,
                emulated,
                line,
                irq_wake,
                ac.clone(),
                OsConfig {
                    native_fence_feature: config.os.native_fence_feature && ac.native_fence_feature,
                    hwsch_feature: config.os.hwsch_feature && ac.hwsch_feature,
                    ..config.os.clone()
                },
                table.clone(),
                config.mode == Mode::Step,
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        if config.mode == Mode::Threaded {
            // One interrupt "CPU" and one DPC thread per adapter: Windows may run the ISRs
            // and DPCs of different adapters concurrently on different processors
            // (DxgkDdiDpcRoutine may run for several adapters at once), so cross-adapter races
            // in driver state must not be hidden by a shared thread.
            for a in &adapters {
                let bodies: [(&str, ThreadBody); 5] = [
                    ("interrupt", interrupt::interrupt_thread),
                    ("dpc", interrupt::dpc_thread),
                    // VidSch's PASSIVE worker (F1 transitions, UM-13).
                    ("worker", interrupt::worker_thread),
                    // VidMm's worker (queued paging, GPU VA updates).
                    ("vidmm", interrupt::vidmm_thread),
                    // Kernel timer DPCs on a processor of their own (adapter::ktimer).
                    ("timer", crate::adapter::ktimer::timer_thread),
                ];
                let mut spawned = true;
                for (role, body) in bodies {
                    let (a, s) = (a.clone(), stop.clone());
                    match std::thread::Builder::new()
                        .name(format!("simos-m{}-a{}-{role}", state.id(), a.index))
                        .spawn(move || body(a, s))
                    {
                        Ok(t) => threads.push(t),
                        Err(_) => spawned = false,
                    }
                }
                if !spawned {
                    state.raise_sim_error(
                        "could not spawn the interrupt, DPC, worker, VidMm and timer threads",
                    );
                }
            }
        }
        let registry_path =
            RegistryPath::new("\\Registry\\Machine\\System\\CurrentControlSet\\Services\\rvgpu");
        Ok(Self {
            state,
            config,
            memory,
            table,
            adapters,
            stop,
            threads,
            driver_object: Box::new([0; 4]),
            registry_path,
            loaded: false,
            handles: crate::ob::HandleTables::default(),
            _permits: permits,
        })
    }

    // -----------------------------------------------------------------------------------------
    // State.

    /// The machine's id (unique in the process).
    pub fn id(&self) -> u64 {
        self.state.id()
    }

    /// The machine's configuration.
    pub fn config(&self) -> &MachineConfig {
        &self.config
    }

    /// The OS switches.
    pub fn os_config(&self) -> &OsConfig {
        &self.config.os
    }

    /// Number of adapters.
    pub fn adapter_count(&self) -> usize {
        self.adapters.len()
    }

    /// Driver Verifier's low-resources simulation for the driver's pool allocations on this
    /// machine (docs/robustness.md); restarts the allocation numbering and counts.
    pub fn set_low_resources(&self, mode: crate::LowResources) {
        self.state.pool().set(mode);
    }

    /// The driver's pool allocations since [`Machine::set_low_resources`] was last called.
    pub fn pool_stats(&self) -> crate::PoolStats {
        self.state.pool().stats()
    }

    /// The bug check that halted the machine, if any.
    pub fn bugcheck(&self) -> Option<BugCheck> {
        self.state.bugcheck()
    }

    /// Whatever halted the machine (bug check or simulation error).
    pub fn fault(&self) -> Option<SimError> {
        self.state.fault().map(SimError::from)
    }

    /// The driver's debug output (and the simulation's own error lines).
    pub fn driver_log(&self) -> Vec<LogLine> {
        self.state.log()
    }

    /// Notifications the OS processed (through `DxgkCbNotifyDpc`) on adapter `i`, in order.
    pub fn notifications(&self, i: usize) -> Vec<Processed> {
        self.adapters
            .get(i)
            .map(|a| a.observer().notifications())
            .unwrap_or_default()
    }

    /// Notifications reported by the ISR but not yet processed by a DPC.
    pub fn pending_notifications(&self, i: usize) -> Vec<Processed> {
        self.adapters
            .get(i)
            .map(|a| lock(&a.irq.pending).clone())
            .unwrap_or_default()
    }

    /// Adapter `i`'s device (fault injection, snapshots).
    /// `None` for a PCI board (no fault injection or snapshots there).
    pub fn device(&self, i: usize) -> Option<&Arc<Device>> {
        self.adapters.get(i).and_then(|a| a.emulated.as_ref())
    }

    /// Whether adapter `i` is a PCI function outside this process (`pci`).
    pub fn is_pci(&self, i: usize) -> bool {
        self.config.pci.is_some() && i < self.adapters.len()
    }

    /// Adapter `i`'s board (registers, memory, configuration), whichever it is.
    pub fn board(&self, i: usize) -> Option<&Arc<dyn Board>> {
        self.adapters.get(i).map(|a| &a.device)
    }

    /// The machine's physical memory as adapter 0 sees it (system RAM is shared; another
    /// adapter's VRAM is through [`Machine::device`]'s memory).
    pub fn memory(&self) -> &Arc<Memory> {
        &self.memory
    }

    /// NF-10 bookkeeping of adapter `i`: (references the driver holds on the feature
    /// interface, feature IDs it asked IsFeatureEnabled about, times it obtained the
    /// native-fence feature interface).
    pub fn feature_usage(&self, i: usize) -> (i64, Vec<i32>, u64) {
        self.adapters.get(i).map_or((0, Vec::new(), 0), |a| {
            (
                a.feature_refs.load(Ordering::Acquire),
                a.observer().features_queried(),
                a.observer().native_fence_interface_queries(),
            )
        })
    }

    /// ISR and DPC call counts of adapter `i`.
    pub fn interrupt_counts(&self, i: usize) -> (u64, u64) {
        self.adapters
            .get(i)
            .map_or((0, 0), |a| a.observer().interrupt_counts())
    }

    /// Bus accesses per DDI of adapter `i` (docs/performance.md, "Bus cost"): the DDI's name,
    /// its (outermost) calls, and the register reads, register writes and doorbell writes the
    /// device counted during them. Empty for a board that cannot count.
    pub fn bus_costs(&self, i: usize) -> Vec<(String, u64, rvgpu_device::BusCounts)> {
        self.adapters
            .get(i)
            .map_or_else(Vec::new, |a| a.observer().bus_costs())
    }

    /// Everything adapter `i`'s device counted so far (user-mode doorbell rings included).
    pub fn bus_counts(&self, i: usize) -> Option<rvgpu_device::BusCounts> {
        self.adapters.get(i).and_then(|a| a.device.bus_counts())
    }

    /// The callback table handed to adapter `i`'s StartDevice.
    pub fn interface(&self, i: usize) -> Option<DXGKRNL_INTERFACE> {
        self.adapters
            .get(i)
            .and_then(|a| lock(&a.interface).map(|t| t.0))
    }

    /// The segments adapter `i`'s driver reported at start (`QUERYSEGMENT4`, segment 1 first).
    pub fn segments(&self, i: usize) -> Vec<rvgpu_ddi::memory::DXGK_SEGMENTDESCRIPTOR4> {
        self.adapters
            .get(i)
            .map_or(Vec::new(), |a| lock(&a.mm.memory_model).segments.clone())
    }

    /// The driver's DDI table as adapter `i` received it at load.
    pub fn driver_table(&self, i: usize) -> Option<rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA> {
        self.adapters.get(i).and_then(|a| a.table.get())
    }

    /// Live `(devices, contexts, hardware queues, doorbells, allocations)` of adapter `i` as
    /// the OS holds them.
    pub fn ums_live_counts(&self, i: usize) -> (usize, usize, usize, usize, usize) {
        self.adapters
            .get(i)
            .map_or((0, 0, 0, 0, 0), |a| crate::ums::live_counts(a))
    }

    /// What VidMm learnt of adapter `i`'s memory at start (segments, GPU MMU caps).
    pub fn memory_model(&self, i: usize) -> Option<crate::state::vidmm::model::MemoryModel> {
        self.adapters
            .get(i)
            .map(|a| lock(&a.mm.memory_model).clone())
    }

    /// Registers `handle` as a live native fence of adapter `i` (what CreateNativeFence will
    /// do when native fences land).
    pub fn add_native_fence_handle(&self, i: usize, handle: usize) {
        if let Some(a) = self.adapters.get(i) {
            lock(&a.native_fences).insert(handle);
        }
    }

    pub(crate) fn adapter_shared(&self, i: usize) -> Result<&Arc<AdapterShared>, SimError> {
        self.adapter(i)
    }

    /// One round of the step-mode machine (for blocking waits); whether anything happened.
    pub(crate) fn round_for_wait(&self) -> bool {
        self.round()
    }

    /// What a component's wait for the GPU needs of this machine: its rounds in step mode, the
    /// OS's wait timeout.
    pub(crate) fn waiter(&self) -> Waiter<'_> {
        Waiter {
            step: (self.config.mode == Mode::Step).then_some(self as &dyn Round),
            timeout: self.config.os.wait_timeout,
        }
    }

    /// [`Machine::round_for_wait`] for a wait that may still spend `budget_ms` of simulated
    /// time, of which a round that did something spends one millisecond. An idle round is not the end while a kernel timer is armed: a driver's timer
    /// (the interrupt watchdog recovering a lost delivery) is pending work, as it
    /// is on Windows, where the wait would sleep through to it. The step clock (a round is a
    /// millisecond) jumps to the next due timer if the wait's budget covers it, and that
    /// round runs it; false once nothing is pending within the budget.
    pub(crate) fn round_for_wait_within(&self, budget_ms: &mut u64) -> bool {
        if self.round() {
            *budget_ms = budget_ms.saturating_sub(1);
            return true;
        }
        let Some(due) = self
            .adapters
            .iter()
            .filter_map(|a| a.timers.next_due_step())
            .min()
        else {
            return false;
        };
        // The round below is one millisecond itself.
        let spent = due.max(1);
        if spent > *budget_ms {
            return false;
        }
        *budget_ms -= spent;
        for a in &self.adapters {
            a.timers.skip(spent - 1);
        }
        self.round();
        true
    }

    pub(crate) fn adapter(&self, i: usize) -> Result<&Arc<AdapterShared>, SimError> {
        if let Some(f) = self.state.fault() {
            return Err(f.into());
        }
        self.adapters.get(i).ok_or_else(|| SimError::NoAdapter(i))
    }

    pub(crate) fn table(&self) -> Result<DRIVER_INITIALIZATION_DATA, SimError> {
        self.table.get().ok_or(SimError::NoDriver)
    }

    pub(crate) fn misuse(&self, msg: String) -> SimError {
        SimError::Simulation(msg)
    }
}

impl Round for Machine {
    fn run_round(&self) -> bool {
        self.round_for_wait()
    }
}

impl Machine {
    /// Orderly teardown when a machine is dropped with its adapters still present: native
    /// fences destroyed, adapters stopped and removed, as Dxgkrnl does before a device goes
    /// away. Needed because the driver's adapter table is driver-wide (16 slots) and many
    /// machines share one test process; a machine that halted is left as it is.
    fn shutdown(&mut self) {
        if !self.loaded || self.state.fault().is_some() {
            return;
        }
        for i in (0..self.adapters.len()).rev() {
            let life = *lock(&self.adapters[i].life);
            if life == Life::Started && self.stop_adapter(i).is_err() {
                return;
            }
            let life = *lock(&self.adapters[i].life);
            if matches!(life, Life::Stopped | Life::Added) && self.remove_adapter(i).is_err() {
                return;
            }
        }
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        self.shutdown();
        // The image's statics are shared by every machine of the process, as the Linux build's
        // are: a machine that ends with adapters still registered in the driver's adapter table
        // (a bug check, a test that never removed them) leaves their memory in place, so that
        // the next machine's driver never walks into freed pool.
        #[cfg(target_os = "linux")]
        if let Some(pe) = self.state.pe() {
            let removed = self.adapters.iter().all(|a| *lock(&a.life) == Life::Absent);
            if self.state.fault().is_some() || !removed {
                pe.keep_pool();
            }
        }
        self.stop.store(true, Ordering::Release);
        for a in &self.adapters {
            a.irq.irq_wake.notify();
            a.irq.dpc_wake.notify();
            a.sch.wake.notify();
            a.mm.wake.notify();
            a.timers.wake.notify();
        }
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
        for a in &self.adapters {
            a.irq.connected.store(false, Ordering::Release);
            a.device.stop();
            for (va, n) in lock(&a.mm.mappings).drain() {
                for _ in 0..n {
                    kernel::unmap_window(va);
                }
            }
            for (va, _) in lock(&a.mm.contiguous).drain() {
                kernel::unregister_dma(va);
            }
        }
    }
}

/// The PCI functions a machine's adapters are, in order (Linux only).
#[cfg(target_os = "linux")]
fn pci_functions(spec: &PciSpec) -> Result<Vec<std::path::PathBuf>, SimError> {
    pci::resolve(spec)
        .map(|s| s.functions)
        .map_err(|e| SimError::setup_from("PCI board", e))
}

/// The PCI functions a machine's adapters are (Linux only).
#[cfg(not(target_os = "linux"))]
fn pci_functions(_spec: &PciSpec) -> Result<Vec<std::path::PathBuf>, SimError> {
    Err(SimError::setup(
        "a PCI board needs Linux (sysfs, /dev/mem, UIO)",
    ))
}

/// Opens a PCI board (Linux only).
#[cfg(target_os = "linux")]
fn open_pci(
    function: &std::path::Path,
    spec: &PciSpec,
    system: Option<&Arc<Memory>>,
    line: Arc<SimLine>,
) -> Result<Arc<pci::PciBoard>, SimError> {
    pci::PciBoard::open(function, spec, system, line, true)
        .map_err(|e| SimError::setup_from(format!("PCI board {}", function.display()), e))
}

/// Opens a PCI board (Linux only).
#[cfg(not(target_os = "linux"))]
fn open_pci(
    _function: &std::path::Path,
    _spec: &PciSpec,
    _system: Option<&Arc<Memory>>,
    _line: Arc<SimLine>,
) -> Result<Arc<dyn Board>, SimError> {
    Err(SimError::setup(
        "a PCI board needs Linux (sysfs, /dev/mem, UIO)",
    ))
}

/// Checks helpers for bug-check codes in tests.
pub fn is_bugcheck(e: &SimError, code: u32) -> bool {
    matches!(e, SimError::Bugcheck(b) if b.code == code)
}
