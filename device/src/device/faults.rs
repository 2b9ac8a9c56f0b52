//! Fault injection: the ways real hardware misbehaves that the driver must survive.
//!
//! - hang an engine (`Core::inject_hang`): it stops executing until reset;
//! - fail the next reset of an engine;
//! - delay interrupt assertions ([`IrqDelay`]) or drop the next one (a lost MSI);
//! - lose the device (surprise removal);
//! - corrupt a queue's ring at its read pointer;
//! - post a forged event record (a faulty GPU's view of the event ring);
//! - anonymous fence events: FENCE_SIGNALED records carry `NO_QUEUE` although the device
//!   has `CAPS.OPTIMIZED_FENCE_IRQ` (docs/logs.md#kmd: the driver must then report
//!   NULL `hHWQueue`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use rvgpu_hw::mmu::Access;
use rvgpu_hw::regs::{DeviceStatus, IntCause};

use super::mmu::Privilege;

use super::{lock, Core};

/// How long to hold an interrupt assertion back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqDelay {
    /// For this many CMP passes (`step` calls in step mode).
    Steps(u64),
    /// For this long in real time.
    Duration(Duration),
}

pub(crate) struct Faults {
    fail_reset: Vec<AtomicBool>,
    irq_delay: Mutex<Option<IrqDelay>>,
    drop_next: AtomicBool,
    anonymous_fence_events: AtomicBool,
}

impl Faults {
    pub(crate) fn new(engines: u32) -> Self {
        Self {
            fail_reset: (0..engines).map(|_| AtomicBool::new(false)).collect(),
            irq_delay: Mutex::new(None),
            drop_next: AtomicBool::new(false),
            anonymous_fence_events: AtomicBool::new(false),
        }
    }

    pub(crate) fn fail_next_reset(&self, engine: u32) {
        if let Some(f) = usize::try_from(engine)
            .ok()
            .and_then(|e| self.fail_reset.get(e))
        {
            f.store(true, Ordering::Relaxed);
        }
    }

    /// Consumes a pending "fail the next reset" for `engine`.
    pub(crate) fn take_fail_reset(&self, engine: usize) -> bool {
        self.fail_reset
            .get(engine)
            .is_some_and(|f| f.swap(false, Ordering::Relaxed))
    }

    pub(crate) fn set_irq_delay(&self, d: Option<IrqDelay>) {
        *lock(&self.irq_delay) = d;
    }

    pub(crate) fn irq_delay(&self) -> Option<IrqDelay> {
        *lock(&self.irq_delay)
    }

    pub(crate) fn drop_next_irq(&self) {
        self.drop_next.store(true, Ordering::Relaxed);
    }

    pub(crate) fn take_drop_next(&self) -> bool {
        self.drop_next.swap(false, Ordering::Relaxed)
    }

    pub(crate) fn set_anonymous_fence_events(&self, on: bool) {
        self.anonymous_fence_events.store(on, Ordering::Relaxed);
    }

    pub(crate) fn anonymous_fence_events(&self) -> bool {
        self.anonymous_fence_events.load(Ordering::Relaxed)
    }

    /// Clears every injection (ADAPTER_RESET).
    pub(crate) fn clear(&self) {
        for f in &self.fail_reset {
            f.store(false, Ordering::Relaxed);
        }
        self.drop_next.store(false, Ordering::Relaxed);
    }
}

impl Core {
    pub(crate) fn is_lost(&self) -> bool {
        // Acquire: pairs with the Release in lose_device/adapter reset.
        DeviceStatus::from_bits_retain(self.regs.device_status.load(Ordering::Acquire))
            .contains(DeviceStatus::LOST)
    }

    pub(crate) fn lose_device(&self) {
        self.regs
            .device_status
            .fetch_or(DeviceStatus::LOST.bits(), Ordering::AcqRel);
        self.kick();
        self.flush_irq();
    }

    /// A faulty GPU posts `rec` as if it were its own event: written into the
    /// event ring the ordinary way, with `cause` raised and the line driven.
    pub(crate) fn forge_event(&self, rec: rvgpu_hw::event::EventRecord, cause: IntCause) {
        if self.is_lost() {
            return;
        }
        self.post_event(rec, cause);
        self.flush_irq();
    }

    pub(crate) fn inject_hang(&self, engine: u32) {
        let mut cmp = lock(&self.cmp);
        let now = self.clock.now();
        if let Some(eng) = usize::try_from(engine)
            .ok()
            .and_then(|e| cmp.engines.get_mut(e))
        {
            eng.injected_hang = Some(now);
        }
        drop(cmp);
        self.kick();
    }

    pub(crate) fn corrupt_ring(&self, queue_id: u32, garbage: u64) -> bool {
        let cmp = lock(&self.cmp);
        let Some(q) = cmp
            .engines
            .iter()
            .flat_map(|e| e.queues.iter())
            .find(|q| q.desc.queue_id == queue_id)
        else {
            return false;
        };
        let pos = q.rptr % u64::from(q.desc.ring_size.max(1));
        let Some(va) = q.desc.ring_base.checked_add(pos) else {
            return false;
        };
        // Through the plain bus, not the window check: corruption comes from outside. A
        // translated ring is found through its page tables (kernel view, no permission
        // beyond "mapped" is asked for).
        let root = q.desc.page_table_base.get();
        let pa = if root == 0 {
            va.identity_pa()
        } else {
            match self
                .mmu
                .translate_word(&self.mem, root, va, Access::Read, Privilege::Kernel)
            {
                Ok((pa, _)) => pa,
                Err(_) => return false,
            }
        };
        self.mem.store(pa, garbage, Ordering::Release).is_some()
    }
}
