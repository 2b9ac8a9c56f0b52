//! The adapter core and the DDI gate: Dxgkrnl's lower half, below every component. One
//! simulated adapter ([`AdapterShared`]: the emulated device plus everything the OS keeps per
//! adapter, miniport context, native fence handles, the callback table handed to the driver,
//! and each component's state from that component's leaf: interrupts and DPCs
//! ([`irq::Interrupts`]), VidMm ([`crate::state::vidmm::VidMmState`]), VidSch
//! ([`crate::state::vidsch::VidSchState`]), fences and UMS), and what the components use of
//! Dxgkrnl: the one way to call a DDI ([`ddi`], [`slot`]), the IRQL check against the rule table
//! ([`irql`], [`rules`]), driver load ([`load`]) and bring-up checks ([`bringup`]), the machine's
//! health ([`state`]), the thread's machine ([`context`]), the host kernel the driver runs on
//! ([`kernel::SimKernel`]) with its timers ([`ktimer`]), the registry and resources the driver
//! reads. Nothing here imports a component's operations; the callbacks, the DPC fan-out and
//! power, which do, are [`crate::dxgkrnl`], above the components.
//!
//! The `DeviceHandle` the driver gets in `DXGKRNL_INTERFACE` is the address of the
//! [`AdapterShared`]; callbacks turn it back into the adapter through a process-wide registry
//! (never by dereferencing a handle the driver passes), so a bad handle is caught.

pub mod bringup;
pub mod callback;
pub mod context;
pub mod ddi;
pub mod featuredb;
pub mod irq;
pub mod irql;
pub mod kernel;
pub mod kmdver;
pub mod ktimer;
pub mod load;
pub mod observer;
pub mod registry;
pub mod resources;
pub mod rules;
pub mod slot;
pub mod state;
pub mod timers;
pub mod waiter;

use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rvgpu_ddi::adapter::DXGK_DRIVERCAPS;
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_device::Device;

use crate::hal::Board;

use crate::adapter::irq::{Interrupts, CLAIMED_STORM_LIMIT, UNCLAIMED_STORM_LIMIT};
use crate::adapter::observer::Observer;
use crate::adapter::state::MachineState;
use crate::base::line::{SimLine, Wake};
use crate::base::lock::lock;
use crate::base::notify::{Notification, Processed};
use crate::os::{AdapterConfig, OsConfig};
use crate::state::vidmm::VidMmState;
use crate::state::vidsch::VidSchState;

/// The driver's table as copied by the simulated `DxgkInitialize`, shared by the machine and
/// its adapters.
#[derive(Debug, Default)]
pub struct DriverTable {
    table: Mutex<Option<SendTable<DRIVER_INITIALIZATION_DATA>>>,
}

impl DriverTable {
    /// A copy of the table (function pointers are `Copy`), if a driver registered one.
    pub fn get(&self) -> Option<DRIVER_INITIALIZATION_DATA> {
        lock(&self.table).map(|t| t.0)
    }

    /// One entry of the table, read in place: the hot paths (ISR, DPC, UpdateMonitoredValues)
    /// need one function pointer, not a copy of the whole table (about 1 KiB copied
    /// per call).
    pub fn slot<T>(&self, f: impl FnOnce(&DRIVER_INITIALIZATION_DATA) -> T) -> Option<T> {
        lock(&self.table).as_ref().map(|t| f(&t.0))
    }

    /// Installs the table.
    pub fn set(&self, t: Option<DRIVER_INITIALIZATION_DATA>) {
        *lock(&self.table) = t.map(SendTable);
    }
}

/// Where an adapter is in its PnP life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    /// No AddDevice yet (or after RemoveDevice).
    Absent,
    /// AddDevice succeeded.
    Added,
    /// StartDevice succeeded.
    Started,
    /// StopDevice returned.
    Stopped,
}

pub use crate::adapter::ddi::SendTable;

/// Per-adapter OS state. Shared between the machine, the interrupt/DPC threads and the
/// callbacks.
pub struct AdapterShared {
    /// Index in the machine.
    pub index: usize,
    /// The machine's health.
    pub state: Arc<MachineState>,
    /// The adapter's hardware: the emulated device in this process or a PCI function
    /// (`hal::Board`).
    pub device: Arc<dyn Board>,
    /// The same device when it is the in-process emulated one (fault injection, snapshots).
    pub emulated: Option<Arc<Device>>,
    /// Configuration.
    pub config: AdapterConfig,
    /// OS switches.
    pub os: OsConfig,
    /// The driver's table.
    pub table: Arc<DriverTable>,
    context: AtomicPtr<c_void>,
    /// PnP state.
    pub life: Mutex<Life>,
    /// Dxgkrnl's interrupt and DPC state ([`crate::adapter::irq`]).
    pub irq: Interrupts,
    /// VidMm's state ([`crate::state::vidmm`]).
    pub mm: VidMmState,
    /// VidSch's state ([`crate::state::vidsch`]).
    pub sch: VidSchState,
    /// The `DeviceHandle` is valid: from StartDevice until RemoveDevice. A callback with the
    /// handle of a removed adapter is a use of freed Dxgkrnl memory (0x50).
    pub handle_valid: AtomicBool,
    /// Native fence handles the OS handed out and has not destroyed (global handles, NF-13).
    pub native_fences: Mutex<HashSet<usize>>,
    /// The OS's native-fence objects, storage and DPC work of this adapter ([`crate::sync::fence`]).
    pub fence_os: Mutex<crate::state::sync::storage::FenceOs>,
    /// References the driver holds on the feature interface (DxgkCbQueryServices takes one,
    /// InterfaceReference/InterfaceDereference adjust it). Must be zero once stopped.
    pub feature_refs: AtomicI64,
    /// The callback table handed to StartDevice.
    pub interface: Mutex<Option<SendTable<DXGKRNL_INTERFACE>>>,
    /// Driver caps read at start.
    pub caps: Mutex<Option<DXGK_DRIVERCAPS>>,
    /// The feature database negotiated before StartDevice ([`crate::dxgkrnl::features`]).
    pub features: Mutex<crate::adapter::featuredb::FeatureDb>,
    /// What tests observe of the adapter (counters and logs the OS decides nothing on).
    observer: Observer,
    /// Kernel timers the driver set for this adapter ([`crate::adapter::timers`]).
    pub timers: crate::adapter::timers::Timers,
    /// Resources the driver gets pointers into (never moves).
    pub resources: Box<crate::adapter::resources::Resources>,
    /// BAR2 as an MMIO bus (doorbell writes), kept alive for trap windows onto it.
    pub doorbell_bus: Arc<dyn rvgpu_hw::mmio::MmioBus + Send + Sync>,
    /// BAR0 as an MMIO bus (the device's registers), kept alive for trap windows onto it.
    pub register_bus: Arc<dyn rvgpu_hw::mmio::MmioBus + Send + Sync>,
    /// The function is in D3hot: its BARs do not decode ([`crate::hal::bars::D3Hot`]).
    pub d3hot: Arc<crate::hal::bars::D3Hot>,
    /// Live `DxgkCbMapMemory` mappings of BAR2: base VA -> length (UM-09: a connected
    /// doorbell's kernel VA must lie in one).
    pub doorbell_windows: Mutex<std::collections::BTreeMap<usize, usize>>,
    /// The OS's user-mode submission objects ([`crate::ums`]).
    pub ums: Mutex<crate::state::ums::UmsOs>,
    /// The OS's user-mode submission lock: thunks of one process take it shared (plus their
    /// device's lock), adapter-wide sequences (power, F1, device loss) exclusively, so
    /// different processes reach the KMD concurrently as on Windows. Never held across a
    /// wait; the `DxgkCbDisconnectDoorbell` callback does not take it.
    pub ums_seq: std::sync::RwLock<()>,
    /// Serialises power-component F-state changes (one caller per component at a time).
    pub ums_fstate: Mutex<()>,
    /// The adapter's keys as the package's install wrote them (a PE machine's load,
    /// `crate::install`); `None` until then.
    pub(crate) installed_keys: Mutex<Option<crate::install::AdapterKeys>>,
}

impl std::fmt::Debug for AdapterShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterShared")
            .field("index", &self.index)
            .field("life", &*lock(&self.life))
            .finish_non_exhaustive()
    }
}

/// Live adapters by `DeviceHandle`.
static HANDLES: Mutex<Vec<(usize, Weak<AdapterShared>)>> = Mutex::new(Vec::new());
/// Adapters by MiniportDeviceContext (for test hooks standing in for driver code).
static CONTEXTS: Mutex<Vec<(usize, Weak<AdapterShared>)>> = Mutex::new(Vec::new());

/// The live adapter registered under `key` in `table`.
fn live_entry(
    table: &Mutex<Vec<(usize, Weak<AdapterShared>)>>,
    key: *mut c_void,
) -> Option<Arc<AdapterShared>> {
    let key = key as usize;
    lock(table)
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, w)| w.upgrade())
}

thread_local! {
    /// Adapter whose interrupt lock this thread holds (address), 0 if none.
    static IN_INTERRUPT_LOCK: Cell<usize> = const { Cell::new(0) };
}

/// The LUID Dxgkrnl gives adapter `i` (`DXGK_START_INFO::AdapterLuid`), which user mode opens
/// it by (`D3DKMTOpenAdapterFromLuid`).
pub fn adapter_luid(i: usize) -> rvgpu_ddi::basic::LUID {
    rvgpu_ddi::basic::LUID {
        LowPart: 0x1000 + i as u32,
        HighPart: 0,
    }
}

/// Every live adapter of every machine in the process.
pub fn all_adapters() -> Vec<Arc<AdapterShared>> {
    lock(&HANDLES)
        .iter()
        .filter_map(|(_, w)| w.upgrade())
        .collect()
}

/// Whether the calling thread holds some adapter's interrupt lock (ISR, synchronised routine
/// or an OS call synchronised with the ISR).
pub fn holds_any_interrupt_lock() -> bool {
    IN_INTERRUPT_LOCK.with(|c| c.get() != 0)
}

/// The adapter's interrupt lock, held, and the thread marked as holding it
/// (`IN_INTERRUPT_LOCK`). On release, a DPC queued under it is let go: the hold is cleared
/// while the lock is still held (so no later holder's hold is cleared by this one), and the
/// DPC thread is woken once it is released.
#[derive(Debug)]
pub struct InterruptLockGuard<'a> {
    a: &'a AdapterShared,
    guard: Option<crate::base::lock::Locked<'a, ()>>,
    /// [`IN_INTERRUPT_LOCK`] before.
    previous: usize,
}

impl Drop for InterruptLockGuard<'_> {
    fn drop(&mut self) {
        IN_INTERRUPT_LOCK.with(|c| c.set(self.previous));
        let release = self.a.irq.dpc_held.swap(false, Ordering::AcqRel);
        drop(self.guard.take());
        if release {
            self.a.irq.dpc_wake.notify();
        }
    }
}

impl Drop for AdapterShared {
    fn drop(&mut self) {
        crate::adapter::registry::withdraw_software_key(self.resources.pdo() as usize);
    }
}

impl AdapterShared {
    /// What tests observe of the adapter: the OS records into it, tests read it through
    /// `Machine`; nothing the OS decides reads it.
    pub fn observer(&self) -> &Observer {
        &self.observer
    }

    /// The host accesses the device counted so far (`Board::bus_counts`), read directly
    /// rather than through the board's dynamic call when the device is the in-process one:
    /// every outermost DDI call reads them twice for the bus ledger.
    #[inline]
    pub(crate) fn bus_counts(&self) -> Option<rvgpu_device::BusCounts> {
        match &self.emulated {
            Some(d) => Some(d.bus_counts()),
            None => self.device.bus_counts(),
        }
    }

    /// The adapter's keys as Dxgkrnl reads them from the registry (BR-14, BR-35, the feature
    /// database): what the install wrote, with the configuration's edits on top
    /// ([`crate::install::AdapterKeys::with_edits`]).
    pub fn registry_keys(&self) -> crate::install::AdapterKeys {
        let configured = crate::install::AdapterKeys {
            software_key: self.config.software_key.clone(),
            driver_version: self.config.driver_version.clone(),
            user_mode_driver_name: self.config.user_mode_driver_name.clone(),
        };
        crate::install::AdapterKeys::with_edits(lock(&self.installed_keys).as_ref(), configured)
    }

    /// A new adapter (registered under its handle).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: usize,
        state: Arc<MachineState>,
        device: Arc<dyn Board>,
        emulated: Option<Arc<Device>>,
        line: Arc<SimLine>,
        irq_wake: Arc<Wake>,
        config: AdapterConfig,
        os: OsConfig,
        table: Arc<DriverTable>,
        step: bool,
    ) -> Arc<Self> {
        // A PCI function's interrupt is what its UIO driver delivers (INTx through
        // uio_pci_generic, MSI through the guest test's module); the in-process device
        // offers both.
        let msi = device.message_signalled().unwrap_or(config.msi);
        let resources = crate::adapter::resources::Resources::new(
            index,
            device.config().doorbells,
            device.memory().vram_size(),
            msi,
        );
        crate::adapter::registry::publish_software_key(
            resources.pdo() as usize,
            config.software_key.clone(),
        );
        let storm_min_ticks = crate::adapter::irq::storm_min_ticks(device.config());
        let d3hot = Arc::new(crate::hal::bars::D3Hot::default());
        let doorbell_bus: Arc<dyn rvgpu_hw::mmio::MmioBus + Send + Sync> =
            Arc::new(crate::hal::bars::DoorbellBus {
                board: Arc::downgrade(&device),
                d3hot: d3hot.clone(),
            });
        let register_bus: Arc<dyn rvgpu_hw::mmio::MmioBus + Send + Sync> =
            Arc::new(crate::hal::bars::RegisterBus {
                board: device.clone(),
                d3hot: d3hot.clone(),
            });
        let a = Arc::new(Self {
            index,
            state,
            device,
            emulated,
            config,
            os,
            table,
            context: AtomicPtr::new(std::ptr::null_mut()),
            life: Mutex::new(Life::Absent),
            irq: Interrupts::new(line, msi, irq_wake, storm_min_ticks),
            mm: VidMmState::default(),
            sch: VidSchState::default(),
            handle_valid: AtomicBool::new(false),
            native_fences: Mutex::new(HashSet::new()),
            fence_os: Mutex::new(crate::state::sync::storage::FenceOs::default()),
            feature_refs: AtomicI64::new(0),
            interface: Mutex::new(None),
            caps: Mutex::new(None),
            features: Mutex::new(Default::default()),
            observer: Observer::default(),
            timers: crate::adapter::timers::Timers::new(step),
            resources,
            doorbell_bus,
            register_bus,
            d3hot,
            doorbell_windows: Mutex::new(std::collections::BTreeMap::new()),
            ums: Mutex::new(crate::state::ums::UmsOs::default()),
            ums_seq: std::sync::RwLock::new(()),
            ums_fstate: Mutex::new(()),
            installed_keys: Mutex::new(None),
        });
        // A halted machine completes nothing more: VidMm's paging waiters wake to see the fault.
        let completion = Arc::downgrade(&a.sch.completion);
        a.state.on_halt(Box::new(move || {
            if let Some(c) = completion.upgrade() {
                c.set();
            }
        }));
        let mut h = lock(&HANDLES);
        h.retain(|(_, w)| w.strong_count() > 0);
        h.push((a.handle() as usize, Arc::downgrade(&a)));
        a
    }

    /// The `DeviceHandle` given to the driver.
    pub fn handle(self: &Arc<Self>) -> *mut c_void {
        Arc::as_ptr(self).cast_mut().cast()
    }

    /// The adapter behind a `DeviceHandle`, if it is a live one.
    pub fn from_handle(h: *mut c_void) -> Option<Arc<Self>> {
        live_entry(&HANDLES, h)
    }

    /// The adapter whose miniport context is `ctx`.
    pub fn from_context(ctx: *mut c_void) -> Option<Arc<Self>> {
        live_entry(&CONTEXTS, ctx)
    }

    /// MiniportDeviceContext from AddDevice.
    pub fn context(&self) -> *mut c_void {
        self.context.load(Ordering::Acquire)
    }

    /// Records the MiniportDeviceContext.
    pub fn set_context(self: &Arc<Self>, ctx: *mut c_void) {
        self.context.store(ctx, Ordering::Release);
        let mut c = lock(&CONTEXTS);
        c.retain(|(_, w)| w.strong_count() > 0);
        if !ctx.is_null() {
            c.push((ctx as usize, Arc::downgrade(self)));
        }
    }

    /// Takes the interrupt lock (the ISR, synchronised routines, UpdateMonitoredValues) and
    /// marks the thread as holding it; a DPC queued under it runs once it is released
    /// ([`Interrupts::dpc_held`]).
    pub fn lock_interrupt(&self) -> InterruptLockGuard<'_> {
        let guard = Some(lock(&self.irq.interrupt_lock));
        let me = self as *const Self as usize;
        InterruptLockGuard {
            a: self,
            guard,
            previous: IN_INTERRUPT_LOCK.with(|c| c.replace(me)),
        }
    }

    /// Whether the calling thread holds this adapter's interrupt lock (ISR or synchronised
    /// routine).
    pub fn holds_interrupt_lock(&self) -> bool {
        IN_INTERRUPT_LOCK.with(|c| c.get() == self as *const Self as usize)
    }

    /// Whether the OS enabled `DXGK_FEATURE_NATIVE_FENCE` for this adapter (NF-10): the
    /// negotiated state, not just the OS's policy.
    pub fn native_fence_enabled(&self) -> bool {
        lock(&self.features)
            .version(rvgpu_ddi::feature::DXGK_FEATURE_NATIVE_FENCE)
            .is_some()
    }

    /// Asks the interrupt servicer for one ISR call regardless of the line.
    pub fn force_interrupt(&self) {
        self.irq.forced_interrupt.store(true, Ordering::Release);
        self.irq.irq_wake.notify();
    }

    /// Takes a pending forced interrupt.
    pub fn take_forced_interrupt(&self) -> bool {
        self.irq.forced_interrupt.swap(false, Ordering::AcqRel)
    }

    /// Storm bookkeeping after an ISR call: `requesting` is whether the device still requests
    /// the interrupt after the ISR returned (its line AND its own `INT_STATUS & INT_ENABLE`,
    /// so a line that is merely about to drop does not count), `now` the GPU clock. A storm
    /// needs both enough consecutive calls ([`UNCLAIMED_STORM_LIMIT`] unclaimed, or
    /// [`CLAIMED_STORM_LIMIT`] claimed) and a minimum duration of the run; `Some(count)` then.
    pub fn storm_check(&self, claimed: bool, requesting: bool, now: u64) -> Option<u64> {
        if !requesting {
            self.reset_storm_counters();
            return None;
        }
        let since = match self.irq.storm_since.load(Ordering::Relaxed) {
            u64::MAX => {
                self.irq.storm_since.store(now, Ordering::Relaxed);
                now
            }
            t => t,
        };
        let long_enough = now.saturating_sub(since) >= self.irq.storm_min_ticks;
        if claimed {
            self.irq.unclaimed_run.store(0, Ordering::Relaxed);
            let n = self.irq.claimed_run.fetch_add(1, Ordering::Relaxed) + 1;
            (n >= CLAIMED_STORM_LIMIT && long_enough).then_some(n)
        } else {
            let n = self.irq.unclaimed_run.fetch_add(1, Ordering::Relaxed) + 1;
            (n >= UNCLAIMED_STORM_LIMIT && long_enough).then_some(n)
        }
    }

    /// The device stopped requesting: no storm in progress.
    pub fn reset_storm_counters(&self) {
        self.irq.unclaimed_run.store(0, Ordering::Relaxed);
        self.irq.claimed_run.store(0, Ordering::Relaxed);
        self.irq.storm_since.store(u64::MAX, Ordering::Relaxed);
    }

    /// Queues a validated notification for the next `DxgkCbNotifyDpc`.
    pub fn push_pending(&self, n: Notification) {
        let seq = self.irq.next_seq.fetch_add(1, Ordering::Relaxed);
        lock(&self.irq.pending).push(Processed {
            seq,
            notification: n,
        });
    }

    /// Moves every pending notification to the processed log (what VidSch does at DPC time),
    /// after `dispatch` handed each to the component that acts on it
    /// ([`crate::dxgkrnl::interrupt::process_pending`]). Returns how many there were.
    pub fn drain_pending(&self, dispatch: impl FnOnce(&Self, &[Processed])) -> usize {
        let mut drained: Vec<Processed> = std::mem::take(&mut *lock(&self.irq.pending));
        let n = drained.len();
        dispatch(self, &drained);
        self.observer.processed(drained.drain(..));
        // The emptied buffer goes back (unless the ISR already started a new one), so the next
        // ISR's push does not allocate at DIRQL (one allocation per interrupt).
        let mut pending = lock(&self.irq.pending);
        if pending.is_empty() {
            std::mem::swap(&mut *pending, &mut drained);
        }
        drop(pending);
        n
    }
}
