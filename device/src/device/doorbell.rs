//! BAR2: doorbells (UM-02).
//!
//! Dedicated mode: page `i` (< CONFIG.doorbells) is bound to a queue by DOORBELL_BIND[i]; a
//! write to it (any value) makes the CMP load that queue's RingControl.write_ptr (Acquire),
//! synchronously, then wakes the CMP. Global mode: page `i` is bound to a *process* by
//! DOORBELL_BIND[i] and the value written is the queue id; the page rings only user-mode
//! queues whose descriptor carries that process id, so a process can ring its own queues
//! through its page and nobody else's. Writes to unbound or out-of-range pages,
//! unknown or foreign queue ids, and any write while the device is lost are ignored but
//! counted.

use std::sync::atomic::{AtomicU64, Ordering};

use rvgpu_hw::queue::NO_QUEUE;

use super::Core;

/// Doorbell counters (test introspection).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DoorbellStats {
    /// Writes that rescanned a queue.
    pub accepted: u64,
    /// Writes ignored (unbound/out-of-range page, unknown or (global mode) foreign queue,
    /// device lost).
    pub ignored: u64,
    /// Accepted writes per page.
    pub per_page: Vec<u64>,
}

pub(crate) struct Doorbells {
    accepted: AtomicU64,
    ignored: AtomicU64,
    per_page: Vec<AtomicU64>,
}

impl Doorbells {
    pub(crate) fn new(pages: u32) -> Self {
        Self {
            accepted: AtomicU64::new(0),
            ignored: AtomicU64::new(0),
            per_page: (0..pages).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub(crate) fn stats(&self) -> DoorbellStats {
        DoorbellStats {
            accepted: self.accepted.load(Ordering::Relaxed),
            ignored: self.ignored.load(Ordering::Relaxed),
            per_page: self
                .per_page
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        }
    }

    fn ignore(&self) {
        self.ignored.fetch_add(1, Ordering::Relaxed);
    }
}

impl Core {
    pub(crate) fn doorbell_write(&self, page: u32, value: u64) {
        let db = &self.doorbells;
        if self.is_lost() {
            db.ignore();
            return;
        }
        let Some(bind) = usize::try_from(page)
            .ok()
            .and_then(|p| self.regs.doorbell_bind.get(p))
        else {
            return db.ignore();
        };
        // Acquire: pairs with the Release store of the DOORBELL_BIND write.
        let bound = match bind.load(Ordering::Acquire) {
            NO_QUEUE => return db.ignore(),
            v => v,
        };
        let (queue_id, owner) = if self.cfg.global_doorbell {
            match u32::try_from(value) {
                Ok(id) if id != NO_QUEUE => (id, Some(bound)),
                _ => return db.ignore(),
            }
        } else {
            (bound, None)
        };
        if self.rescan_queue(None, queue_id, owner) {
            db.accepted.fetch_add(1, Ordering::Relaxed);
            if let Some(c) = usize::try_from(page).ok().and_then(|p| db.per_page.get(p)) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            db.ignore();
        }
        self.flush_irq();
    }
}
