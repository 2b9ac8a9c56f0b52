//! The machine's health: running, or halted by a bug check or a simulation error.
//!
//! Shared by every thread of one simulated machine (test threads, the interrupt "CPU", the DPC
//! thread) and reachable from kernel services through the thread's current context
//! ([`crate::adapter::context::MachineContext`]). Once halted, a machine stays halted: the first fault is
//! the one reported, later ones are only logged, because on Windows nothing runs after
//! `KeBugCheckEx`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use rvgpu_kmd::platform::Level;

use crate::base::bugcheck::BugCheck;
pub use crate::base::error::Fault;
pub(crate) use crate::base::lock::lock;

/// One line of the driver's debug output (DbgPrintEx).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Severity.
    pub level: Level,
    /// The message.
    pub text: String,
}

/// The driver image a machine runs in the emulator (`crate::pe::PeImage`) as the OS below the
/// PE loader sees it: what Dxgkrnl asks of it. The loader gets its own type back with
/// [`DriverImage::into_any`].
#[cfg(target_os = "linux")]
pub trait DriverImage: Send + Sync {
    /// The image's path.
    fn path(&self) -> &std::path::Path;
    /// Pool the image holds: (bytes, blocks).
    fn pool_in_use(&self) -> (usize, usize);
    /// Leaves the driver's pool allocated when this instance goes.
    fn keep_pool(&self);
    /// The feature interface the image returned, with forwarders to its code.
    fn translate_feature_interface(
        &self,
        f: rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE,
    ) -> rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE;
    /// The image's `pfnBuildTestCommandBuffer` as a forwarder the OS can call.
    fn translate_build_test_command_buffer(
        &self,
        f: rvgpu_ddi::kmtest::PDXGKDDI_BUILDTESTCOMMANDBUFFER,
    ) -> rvgpu_ddi::kmtest::PDXGKDDI_BUILDTESTCOMMANDBUFFER;
    /// A register window for the image: address space the emulator routes to the device.
    fn window_range(&self, len: usize) -> Option<std::ptr::NonNull<u8>>;
    /// The image as its own type.
    fn into_any(self: std::sync::Arc<Self>) -> std::sync::Arc<dyn std::any::Any + Send + Sync>;
}

/// Health and debug output of one machine.
pub struct MachineState {
    id: u64,
    halted: AtomicBool,
    fault: Mutex<Option<Fault>>,
    log: Mutex<Vec<LogLine>>,
    /// Run once when the machine halts (freezing the devices). Must not block or call back
    /// into the state.
    on_halt: Mutex<Vec<HaltHook>>,
    /// Verifier's low-resources simulation for the driver's pool.
    pool: crate::base::lowres::PoolInjector,
    /// The machine's ETW session ([`crate::base::etw`]).
    etw: crate::base::etw::session::Session,
    /// The machine's history of recovered TDRs, one for every adapter as on Windows.
    pub(crate) tdr_history: crate::state::vidsch::TdrHistory,
    /// The driver image this machine runs, when it runs `rvgpu.sys` in the emulator rather
    /// than the Linux build ([`crate::pe`]).
    #[cfg(target_os = "linux")]
    pe: std::sync::OnceLock<std::sync::Arc<dyn DriverImage>>,
}

/// What runs when a machine halts.
pub type HaltHook = Box<dyn Fn() + Send + Sync>;

impl std::fmt::Debug for MachineState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MachineState")
            .field("id", &self.id)
            .field("halted", &self.is_halted())
            .finish_non_exhaustive()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl MachineState {
    /// A running machine.
    pub fn new() -> Self {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Self {
            id,
            etw: crate::base::etw::session::Session::new(id),
            halted: AtomicBool::new(false),
            fault: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            on_halt: Mutex::new(Vec::new()),
            pool: crate::base::lowres::PoolInjector::default(),
            tdr_history: crate::state::vidsch::TdrHistory::default(),
            #[cfg(target_os = "linux")]
            pe: std::sync::OnceLock::new(),
        }
    }

    /// The PE image this machine runs, if it runs one.
    #[cfg(target_os = "linux")]
    pub fn pe(&self) -> Option<&std::sync::Arc<dyn DriverImage>> {
        self.pe.get()
    }

    /// Makes this machine run `image` (once, before the driver loads).
    #[cfg(target_os = "linux")]
    pub(crate) fn set_pe(&self, image: std::sync::Arc<dyn DriverImage>) {
        let _ = self.pe.set(image);
    }

    /// Whether the driver this machine runs is the PE image.
    pub fn runs_pe(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.pe.get().is_some()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Registers `hook` to run when the machine halts (at once if it already has).
    pub fn on_halt(&self, hook: HaltHook) {
        if self.is_halted() {
            hook();
        } else {
            lock(&self.on_halt).push(hook);
        }
    }

    /// The driver's pool: Verifier's low-resources simulation and the allocation count.
    pub fn pool(&self) -> &crate::base::lowres::PoolInjector {
        &self.pool
    }

    /// The machine's ETW session.
    pub fn etw(&self) -> &crate::base::etw::session::Session {
        &self.etw
    }

    /// Process-unique id (for messages).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the machine has halted. Acquire: a thread that sees `true` also sees the fault.
    pub fn is_halted(&self) -> bool {
        self.halted.load(Ordering::Acquire)
    }

    /// The fault that halted the machine, if any.
    #[inline]
    pub fn fault(&self) -> Option<Fault> {
        // Every DDI call asks twice: one load while the machine runs, inlined into the caller
        // (`halt` sets the flag with the fault in place).
        if !self.halted.load(Ordering::Acquire) {
            return None;
        }
        self.halted_fault()
    }

    /// The fault of a halted machine, out of the callers' line.
    #[cold]
    #[inline(never)]
    fn halted_fault(&self) -> Option<Fault> {
        lock(&self.fault).clone()
    }

    /// The bug check that halted the machine, if it was one.
    pub fn bugcheck(&self) -> Option<BugCheck> {
        match self.fault() {
            Some(Fault::BugCheck(b)) => Some(b),
            _ => None,
        }
    }

    /// Records a bug check and halts (the first fault wins).
    pub fn raise_bugcheck(&self, b: BugCheck) {
        self.halt(Fault::BugCheck(b));
    }

    /// Records a simulation error and halts (the first fault wins).
    pub fn raise_sim_error(&self, msg: impl Into<String>) {
        self.halt(Fault::Violation(msg.into()));
    }

    fn halt(&self, fault: Fault) {
        let mut slot = lock(&self.fault);
        let text = match &fault {
            Fault::BugCheck(b) => format!("*** STOP: {b}"),
            Fault::Violation(m) => format!("*** SIMULATION ERROR: {m}"),
        };
        if slot.is_none() {
            *slot = Some(fault);
            self.halted.store(true, Ordering::Release);
            drop(slot);
            self.push_log(Level::Error, text);
            // Nothing reaches the hardware after KeBugCheckEx.
            for hook in std::mem::take(&mut *lock(&self.on_halt)) {
                hook();
            }
        } else {
            self.push_log(Level::Error, format!("(after halt) {text}"));
        }
    }

    /// Appends a line to the captured debug output (and to stderr with `RVGPU_SIM_LOG` set).
    pub fn push_log(&self, level: Level, text: String) {
        if std::env::var_os("RVGPU_SIM_LOG").is_some() {
            eprintln!("[m{} {:?}] {}", self.id, level, text);
        }
        lock(&self.log).push(LogLine { level, text });
    }

    /// Everything logged so far.
    pub fn log(&self) -> Vec<LogLine> {
        lock(&self.log).clone()
    }
}

impl Default for MachineState {
    fn default() -> Self {
        Self::new()
    }
}
