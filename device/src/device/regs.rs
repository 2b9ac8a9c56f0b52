//! Register storage. Plain RW registers and the values the CMP publishes for the driver
//! (STATUS, CURRENT_QUEUE, COMPLETED_COMMANDS, RESET_*) live in atomics, so reading a
//! register never waits for the CMP, except `QUEUE_STATE`, which looks the selected queue up
//! in the CMP's runlist (rare: the ISR reads it per `Fault` record). Decoding offsets and
//! side effects are in `mmio`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rvgpu_hw::engine::{EngineState, EngineStatus, ResetResult, ENGINE_POWER_F0};
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::SYSWIN_COUNT;

use super::DeviceConfig;

/// One engine's register block.
pub(crate) struct EngineRegs {
    pub(crate) runlist_base: AtomicU64,
    pub(crate) runlist_count: AtomicU32,
    pub(crate) status: AtomicU32,
    pub(crate) reset_result: AtomicU32,
    pub(crate) reset_queue: AtomicU32,
    pub(crate) reset_rptr: AtomicU64,
    pub(crate) current_queue: AtomicU32,
    pub(crate) completed: AtomicU64,
    /// SCHED_LOG_BASE / SCHED_LOG_ENTRIES / SCHED_LOG_IRQ_ENTRY: plain storage, read by the
    /// CMP only when SCHED_LOG_CTRL adopts a log (`schedlog`). Kept across an adapter reset
    /// (docs/hardware.md 5.7), so `power_on` leaves them alone.
    pub(crate) sched_log_base: AtomicU64,
    pub(crate) sched_log_entries: AtomicU32,
    pub(crate) sched_log_irq_entry: AtomicU32,
    /// POWER: the engine's F-state as the CMP applied it (written under the CMP lock, read
    /// without it).
    pub(crate) power: AtomicU32,
    /// QUEUE_SELECT: plain storage, the queue `QUEUE_STATE` shows.
    pub(crate) queue_select: AtomicU32,
}

impl EngineRegs {
    fn new() -> Self {
        let r = Self {
            runlist_base: AtomicU64::new(0),
            runlist_count: AtomicU32::new(0),
            status: AtomicU32::new(0),
            reset_result: AtomicU32::new(0),
            reset_queue: AtomicU32::new(0),
            reset_rptr: AtomicU64::new(0),
            current_queue: AtomicU32::new(0),
            completed: AtomicU64::new(0),
            sched_log_base: AtomicU64::new(0),
            sched_log_entries: AtomicU32::new(0),
            sched_log_irq_entry: AtomicU32::new(0),
            power: AtomicU32::new(ENGINE_POWER_F0),
            queue_select: AtomicU32::new(NO_QUEUE),
        };
        r.power_on();
        r
    }

    /// Power-on values of everything an adapter reset resets (not the scheduling-log
    /// registers, which only `new` zeroes).
    pub(crate) fn power_on(&self) {
        self.runlist_base.store(0, Ordering::Relaxed);
        self.runlist_count.store(0, Ordering::Relaxed);
        let idle = EngineStatus {
            state: EngineState::Idle,
            has_work: false,
            held: false,
        };
        self.status.store(idle.to_reg(), Ordering::Relaxed);
        self.reset_result
            .store(ResetResult::None as u32, Ordering::Relaxed);
        self.reset_queue.store(NO_QUEUE, Ordering::Relaxed);
        self.reset_rptr.store(0, Ordering::Relaxed);
        self.current_queue.store(NO_QUEUE, Ordering::Relaxed);
        self.completed.store(0, Ordering::Relaxed);
        self.queue_select.store(NO_QUEUE, Ordering::Relaxed);
        // An adapter reset powers every engine up (F0), like every other register.
        self.power.store(ENGINE_POWER_F0, Ordering::Relaxed);
    }
}

/// The register file's storage.
pub(crate) struct Regs {
    pub(crate) scratch: AtomicU32,
    /// SYSTEM_PAGE_TABLE_BASE: root of the CMP's own address space (0 = identity).
    pub(crate) system_root: AtomicU64,
    /// FENCE_STORE_ADDR: the physical fence word the next FENCE_STORE writes.
    pub(crate) fence_store_addr: AtomicU64,
    pub(crate) device_status: AtomicU32,
    pub(crate) syswin_base: [AtomicU64; SYSWIN_COUNT],
    pub(crate) syswin_size: [AtomicU64; SYSWIN_COUNT],
    pub(crate) doorbell_bind: Vec<AtomicU32>,
    pub(crate) engines: Vec<EngineRegs>,
}

impl Regs {
    pub(crate) fn new(cfg: &DeviceConfig) -> Self {
        Self {
            scratch: AtomicU32::new(0),
            system_root: AtomicU64::new(0),
            fence_store_addr: AtomicU64::new(0),
            device_status: AtomicU32::new(0),
            syswin_base: std::array::from_fn(|_| AtomicU64::new(0)),
            syswin_size: std::array::from_fn(|_| AtomicU64::new(0)),
            doorbell_bind: (0..cfg.doorbells)
                .map(|_| AtomicU32::new(NO_QUEUE))
                .collect(),
            engines: (0..cfg.engines).map(|_| EngineRegs::new()).collect(),
        }
    }

    /// Power-on values (ADAPTER_RESET). DEVICE_STATUS is handled by the reset itself.
    pub(crate) fn power_on(&self) {
        self.scratch.store(0, Ordering::Relaxed);
        self.system_root.store(0, Ordering::Release);
        self.fence_store_addr.store(0, Ordering::Relaxed);
        for w in self.syswin_base.iter().chain(self.syswin_size.iter()) {
            w.store(0, Ordering::Relaxed);
        }
        for b in &self.doorbell_bind {
            b.store(NO_QUEUE, Ordering::Relaxed);
        }
        for e in &self.engines {
            e.power_on();
        }
    }

    pub(crate) fn engine(&self, e: u32) -> Option<&EngineRegs> {
        self.engines.get(usize::try_from(e).ok()?)
    }

    pub(crate) fn completed(&self, e: u32) -> u64 {
        self.engine(e)
            .map_or(0, |r| r.completed.load(Ordering::Acquire))
    }
}
