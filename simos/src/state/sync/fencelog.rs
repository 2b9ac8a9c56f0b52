//! The log machinery's state: every hardware queue of an adapter with its logs
//! ([`LogTable`]), the drain's counters, what a DPC asks the drain to read and what it found.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use rvgpu_hw::cmd::LogKind;

use crate::base::lock::lock;
use crate::base::process_id::ProcessId;

use super::logbuffer::{LogBuffer, LogState};

/// Both logs of a queue, and the buffers it retired.
#[derive(Debug)]
pub struct QueueLogs {
    pub wait: LogState,
    pub signal: LogState,
    /// Retired (recreated) buffers, poisoned, kept until the machine ends.
    pub retired: Vec<LogBuffer>,
}

impl QueueLogs {
    /// The state of `kind`'s log.
    pub fn get_mut(&mut self, kind: LogKind) -> &mut LogState {
        match kind {
            LogKind::Wait => &mut self.wait,
            LogKind::Signal => &mut self.signal,
        }
    }
}

/// One hardware queue as the log machinery knows it (every queue of the adapter is registered,
/// log-less kernel-mode queues too, so the ISR check can tell "unknown" from "no logs").
#[derive(Debug)]
pub struct QueueLog {
    /// The KMD's queue handle (`hHWQueue`).
    pub kmd: usize,
    /// Device queue id (0 if the KMD's private data had none).
    pub queue_id: u32,
    pub node: u32,
    pub process: ProcessId,
    /// `None` for a kernel-mode queue.
    pub logs: Mutex<Option<QueueLogs>>,
    /// Buffers the OS took back from the driver while the queue lives (24H2's release
    /// block), poisoned until the queue is gone.
    pub released: Mutex<Vec<LogBuffer>>,
}

/// Counters of the drain (docs/logs.md#simulated-os).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogCounters {
    /// Drains that read at least one header.
    pub log_drains: u64,
    /// Entries read and kept.
    pub log_entries_read: u64,
    /// `DxgkDdiUpdateNativeFenceLogs` calls.
    pub log_update_calls: u64,
    /// Reads that found lost entries (overflow or overwritten while read).
    pub log_overflows: u64,
    /// Entries lost.
    pub log_entries_lost: u64,
    /// Entries with the wrong operation type.
    pub log_bad_entries: u64,
    /// Fallback scans of every native fence caused by the logs.
    pub log_fallback_scans: u64,
    /// Log contents that break the device's contract (LOG-04 value after entry, LOG-05 header
    /// going backwards, LOG-06 timestamps going backwards): a hostile queue's LOG_WRITE or a
    /// faulty device. The log is untrusted, so the OS falls back to a scan and resynchronises
    /// its cursor; it never halts on them. Honest traffic keeps this at 0.
    pub log_untrusted: u64,
    /// Headers read.
    pub log_headers_read: u64,
}

/// Every hardware queue of an adapter by KMD handle, with its logs. Its own lock, so the ISR
/// check takes only this leaf lock.
#[derive(Debug, Default)]
pub struct LogTable {
    queues: Mutex<BTreeMap<usize, Arc<QueueLog>>>,
    /// Dxgkrnl's queue object (what an optimized report names) → the KMD's handle, which 24H2
    /// reads at the object's +32 (`M:VidSchiProcessNativeFenceSignaledDpc` @0x140044BE0).
    names: Mutex<BTreeMap<usize, usize>>,
    /// Serialises drains of the adapter (DPC, recreate, destroy): a log is read by one drain
    /// at a time.
    pub(crate) drain_lock: Mutex<()>,
}

/// The outcome of [`LogTable::check_isr_queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsrQueue {
    /// A live queue on the node: its KMD handle.
    Ok(usize),
    /// Not one of Dxgkrnl's live queue objects.
    Unknown,
    WrongNode(u32),
}

impl LogTable {
    /// Registers a queue (after `DxgkDdiCreateHwQueue` returned).
    pub fn insert(&self, q: Arc<QueueLog>) {
        lock(&self.queues).insert(q.kmd, q);
    }

    /// Forgets a queue (after `DxgkDdiDestroyHwQueue` returned).
    pub fn remove(&self, kmd: usize) -> Option<Arc<QueueLog>> {
        lock(&self.queues).remove(&kmd)
    }

    /// The queue with KMD handle `kmd`.
    pub fn get(&self, kmd: usize) -> Option<Arc<QueueLog>> {
        lock(&self.queues).get(&kmd).cloned()
    }

    /// Every queue.
    pub fn all(&self) -> Vec<Arc<QueueLog>> {
        lock(&self.queues).values().cloned().collect()
    }

    /// Names queue `kmd` by Dxgkrnl's object at `dxg` (after its creation).
    pub fn name_queue(&self, dxg: usize, kmd: usize) {
        lock(&self.names).insert(dxg, kmd);
    }

    /// Dxgkrnl's object naming queue `kmd`, if it has one.
    pub fn name_of(&self, kmd: usize) -> Option<usize> {
        lock(&self.names)
            .iter()
            .find_map(|(&dxg, &k)| (k == kmd).then_some(dxg))
    }

    /// Forgets the name `dxg` (at the queue's destruction).
    pub fn forget_name(&self, dxg: usize) {
        lock(&self.names).remove(&dxg);
    }

    /// LOG-08 at ISR time: a named `hHWQueue` must be Dxgkrnl's object of a live queue on the
    /// reported node. The driver's own handle is not such an object.
    pub fn check_isr_queue(&self, dxg: usize, node: u32) -> IsrQueue {
        let Some(kmd) = lock(&self.names).get(&dxg).copied() else {
            return IsrQueue::Unknown;
        };
        match lock(&self.queues).get(&kmd) {
            None => IsrQueue::Unknown,
            Some(q) if q.node != node => IsrQueue::WrongNode(q.node),
            Some(_) => IsrQueue::Ok(kmd),
        }
    }
}

/// What a DPC asks the drain to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainRequest {
    /// Named `hHWQueue`s (optimized interrupt).
    pub named: BTreeSet<usize>,
    /// Engines whose every log-bearing queue is read (NULL `hHWQueue`, or any report without
    /// the optimized cap).
    pub engines: BTreeSet<u32>,
}

impl DrainRequest {
    /// Nothing to read.
    pub fn is_empty(&self) -> bool {
        self.named.is_empty() && self.engines.is_empty()
    }
}

/// A SIGNAL_EXECUTED entry the drain kept: releases the waits of fence `handle` of `process`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalSeen {
    pub process: ProcessId,
    pub handle: u32,
    pub value: u64,
    pub queue_id: u32,
    pub index: u64,
}

/// The drain's result for the fence code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    pub signals: Vec<SignalSeen>,
    /// A log fallback applies: resample every native fence of the adapter.
    pub scan_all: bool,
}
