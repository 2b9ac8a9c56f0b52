//! The adapter's interrupt and DPC state ([`Interrupts`]) and the interrupt-storm limits: what
//! the adapter holds; the ISR, the DPC and the threads that run them are
//! [`crate::dxgkrnl::interrupt`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::base::line::{SimLine, Wake};
use crate::base::notify::Processed;

/// Consecutive unclaimed ISR calls with the device still requesting before 0xF2.
pub const UNCLAIMED_STORM_LIMIT: u64 = 1_000;
/// Consecutive claimed ISR calls without the request ever dropping before 0xF2 (a livelock:
/// the ISR says "mine" but never clears the cause).
pub const CLAIMED_STORM_LIMIT: u64 = 100_000;
/// Threaded mode: shortest storm, in real time (a preempted device thread that has not yet
/// lowered a line it was told to lower is not a storm).
pub const STORM_MIN_DURATION: Duration = Duration::from_millis(100);
/// Step mode: shortest storm, in device steps (the request survived this many steps of the
/// device, so it is not a transient of one step).
pub const STORM_MIN_STEPS: u64 = 3;

/// Shortest storm in GPU clock ticks for a device with `cfg`.
pub fn storm_min_ticks(cfg: &rvgpu_device::DeviceConfig) -> u64 {
    match cfg.mode {
        rvgpu_device::Mode::Step => STORM_MIN_STEPS.saturating_mul(rvgpu_device::STEP_TICKS),
        rvgpu_device::Mode::Threaded => {
            u64::from(cfg.clock_hz).saturating_mul(STORM_MIN_DURATION.as_millis() as u64) / 1000
        }
    }
}

/// The adapter's interrupt and DPC state as Dxgkrnl keeps it: the line and how it signals, the
/// connection, the interrupt spin lock, the queued DPC and its gate, the notifications the ISR
/// reported for the next DPC, and the storm bookkeeping. Held by the adapter
/// ([`crate::adapter::AdapterShared::irq`]); the ISR, the DPC and the callbacks they make share it.
#[derive(Debug)]
pub struct Interrupts {
    /// Its interrupt line.
    pub line: Arc<SimLine>,
    /// The interrupt is message-signalled (`AdapterConfig::msi`): one ISR call per message.
    pub msi: bool,
    /// Wakes the interrupt thread (the line rose, an interrupt was forced or connected).
    pub irq_wake: Arc<Wake>,
    /// Wakes the DPC thread (a DPC was queued, a flush waits for one).
    pub dpc_wake: Arc<Wake>,
    /// Interrupt connected (after StartDevice, until StopDevice).
    pub connected: AtomicBool,
    /// The interrupt spin lock the ISR and SynchronizeExecution routines run under.
    pub interrupt_lock: Mutex<()>,
    /// A DPC is queued.
    pub dpc_queued: AtomicBool,
    /// A DPC was queued under the interrupt lock and is held until the lock is released
    /// ([`crate::adapter::InterruptLockGuard`] then wakes the DPC thread). A DPC
    /// queued from an ISR or a synchronised routine goes to the current processor's queue and
    /// runs when that processor's IRQL drops below DISPATCH_LEVEL ("Organization of DPC
    /// Queues", the kernel-mode architecture guide), so it never starts while the code that
    /// queued it still holds the interrupt lock. Woken at once, the DPC thread started it on
    /// the other CPU during the ISR, and met the ISR's locks on the way.
    pub dpc_held: AtomicBool,
    /// The ISR captured a DMA-fence node report for VidSch's DPC-time bookkeeping
    /// (`vidsch::tdr`); a DPC without one skips the TDR registry (a registry lock
    /// and lookup on every DPC on the way to a CPU waiter).
    pub tdr_reports: AtomicBool,
    /// The DPC gate: held while the driver's DPC routine runs (so a flush can wait for a
    /// running DPC, as `KeFlushQueuedDpcs` does); the value says whether DPCs may run at all
    /// (false before StartDevice and once StopDevice flushed them).
    pub dpc_gate: Mutex<bool>,
    /// A test asked for one interrupt as on a shared line.
    pub(super) forced_interrupt: AtomicBool,
    /// Reported by the ISR, waiting for `DxgkCbNotifyDpc`.
    pub pending: Mutex<Vec<Processed>>,
    pub(super) next_seq: AtomicU64,
    pub(super) unclaimed_run: AtomicU64,
    pub(super) claimed_run: AtomicU64,
    /// GPU clock when the current run of ISR calls with the device still requesting began
    /// (`u64::MAX`: no run).
    pub(super) storm_since: AtomicU64,
    /// Shortest run (GPU ticks) that counts as a storm (see [`crate::dxgkrnl::interrupt`]).
    pub(super) storm_min_ticks: u64,
    /// Test hook ([`crate::testing::tdr::starve_interrupt_threads`]): the interrupt and the
    /// DPC thread each stop this long at their next look, as processors the host does not
    /// schedule (microseconds; 0: none).
    starve: [AtomicU64; 2],
}

/// The threads of a threaded machine that serve an adapter's interrupt path.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Servant {
    Isr = 0,
    Dpc = 1,
}

impl Interrupts {
    /// A disconnected interrupt on `line`, woken through `irq_wake`, with no DPC queued and
    /// DPCs gated off.
    pub fn new(line: Arc<SimLine>, msi: bool, irq_wake: Arc<Wake>, storm_min_ticks: u64) -> Self {
        Self {
            line,
            msi,
            irq_wake,
            dpc_wake: Arc::new(Wake::default()),
            connected: AtomicBool::new(false),
            interrupt_lock: Mutex::new(()),
            dpc_queued: AtomicBool::new(false),
            dpc_held: AtomicBool::new(false),
            tdr_reports: AtomicBool::new(false),
            dpc_gate: Mutex::new(false),
            forced_interrupt: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
            next_seq: AtomicU64::new(0),
            unclaimed_run: AtomicU64::new(0),
            claimed_run: AtomicU64::new(0),
            storm_since: AtomicU64::new(u64::MAX),
            storm_min_ticks,
            starve: Default::default(),
        }
    }

    /// Test hook: `thread` stops for `d` at its next look ([`Self::starved`]).
    pub(crate) fn starve(&self, thread: Servant, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1);
        self.starve[thread as usize].store(us, Ordering::Release);
    }

    /// Whether a stop asked of `thread` is still to be taken.
    pub(crate) fn starving(&self, thread: Servant) -> bool {
        self.starve[thread as usize].load(Ordering::Acquire) != 0
    }

    /// `thread`'s look for work begins: it stops for what a test asked, if anything (a plain
    /// load when nothing was: this is on every look).
    pub(crate) fn starved(&self, thread: Servant) {
        let cell = &self.starve[thread as usize];
        if cell.load(Ordering::Relaxed) != 0 {
            let us = cell.swap(0, Ordering::AcqRel);
            std::thread::sleep(Duration::from_micros(us));
        }
    }
}
