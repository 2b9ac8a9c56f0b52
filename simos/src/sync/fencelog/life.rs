//! Buffer life (docs/logs.md#simulated-os), called from `crate::ums`: buffers created with a hardware queue,
//! retired at destroy and checked for writes after retirement.

use std::sync::{Arc, Mutex};

use rvgpu_hw::addr::BusAddr;
use rvgpu_hw::cmd::LogKind;
use rvgpu_hw::log::LOG_BUFFER_SIZE;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::state::sync::trace::TraceEvent;
use crate::sync::fence::pages::VidMmPages;

use super::drain::{emit, set_log_buffer, sim};
use crate::state::sync::fencelog::{DrainRequest, QueueLog, QueueLogs};
use crate::state::sync::logbuffer::{LogBuffer, LogState};

/// A new log buffer, mapped into the paging process: the CMP writes it at its
/// `LogBufferSystemProcessGpuVa` (hardware.md 12.4). Mapping pages through the GPU, so the
/// caller holds none of the thunk's or the adapter's sequencing locks.
pub(super) fn alloc_log(
    vm: &dyn VidMmPages,
    a: &AdapterShared,
    kind: LogKind,
    entries: u64,
) -> Result<LogBuffer, SimError> {
    let alloc = a
        .device
        .memory()
        .alloc_system(LOG_BUFFER_SIZE, rvgpu_hw::PAGE_SIZE)
        .ok_or(SimError::OutOfMemory("a fence log"))?;
    let bus = alloc.bus_addr;
    if let Err(e) = vm.map_system(a, bus, LOG_BUFFER_SIZE) {
        a.device.memory().free_system(BusAddr::new(bus));
        return Err(e);
    }
    Ok(LogBuffer::init(alloc, kind, entries))
}

/// Gives a log buffer back: VidMm unmaps it from the paging process and frees it at its next
/// safe point (its `reap_system_pages`), since callers hold the locks paging needs.
pub(super) fn free_log(a: &AdapterShared, b: &LogBuffer) {
    crate::sync::fence::pages::retire_system(a, b.gpu(), LOG_BUFFER_SIZE);
}

/// The two log buffers of a user-mode queue on an adapter with native fences, made before
/// `D3DKMTCreateHwQueue` takes its locks (`None` otherwise).
pub(crate) fn alloc_queue_logs(
    vm: &dyn VidMmPages,
    a: &AdapterShared,
    user_mode: bool,
) -> Result<Option<(LogBuffer, LogBuffer)>, SimError> {
    let native = lock(&a.fence_os).caps.is_some();
    if !user_mode || !native {
        return Ok(None);
    }
    let entries = a.os.log_entries;
    let wait = alloc_log(vm, a, LogKind::Wait, entries)?;
    match alloc_log(vm, a, LogKind::Signal, entries) {
        Ok(signal) => Ok(Some((wait, signal))),
        Err(e) => {
            free_log(a, &wait);
            Err(e)
        }
    }
}

/// Gives back buffers [`alloc_queue_logs`] made for a queue that was not created.
pub(crate) fn free_queue_logs(a: &AdapterShared, logs: Option<(LogBuffer, LogBuffer)>) {
    if let Some((w, s)) = logs {
        free_log(a, &w);
        free_log(a, &s);
    }
}

/// Inside `D3DKMTCreateHwQueue`, after `DxgkDdiCreateHwQueue` succeeded (LOG-01, LOG-09):
/// registers the queue; a user-mode queue on an adapter with native fences gets both logs
/// (`DxgkDdiSetNativeFenceLogBuffer` WAITS then SIGNALS at DISPATCH_LEVEL). An error status of
/// either call is returned (the caller destroys the queue); the buffers are freed then.
pub(crate) fn queue_created(
    a: &AdapterShared,
    kmd: usize,
    queue_id: Option<u32>,
    node: u32,
    process: ProcessId,
    logs: Option<(LogBuffer, LogBuffer)>,
) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let q = Arc::new(QueueLog {
        kmd,
        queue_id: queue_id.unwrap_or(0),
        node,
        process,
        logs: Mutex::new(None),
    });
    table.insert(q.clone());
    let Some((wait, signal)) = logs else {
        return Ok(());
    };
    for b in [&wait, &signal] {
        let status = set_log_buffer(a, kmd, b);
        let failed = match status {
            Ok(0) => None,
            Ok(s) => Some(SimError::DdiFailed(s)),
            Err(e) => Some(e),
        };
        if let Some(e) = failed {
            free_log(a, &wait);
            free_log(a, &signal);
            return Err(e);
        }
    }
    *lock(&q.logs) = Some(QueueLogs {
        wait: LogState::new(wait),
        signal: LogState::new(signal),
        retired: Vec::new(),
    });
    emit(
        a,
        TraceEvent::QueueCreated {
            adapter: a.index,
            queue_id: q.queue_id,
            node,
            process,
            hw_queue: kmd,
        },
    );
    Ok(())
}

/// Before `DxgkDdiDestroyHwQueue` (the queue is off the runlist): a final forced drain.
pub(crate) fn queue_destroying(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let Some(q) = table.get(kmd) else {
        return Ok(());
    };
    if lock(&q.logs).is_none() {
        return Ok(());
    }
    let (objs, scan) = crate::sync::fence::dpc::log_drain(a, &DrainRequest::default(), &[q])?;
    crate::sync::fence::settle::settle_after_drain(a, objs, scan)
}

/// After `DxgkDdiDestroyHwQueue` returned: forgets the queue and frees its logs. A retired
/// (recreated) buffer whose poison changed means the device wrote a log after the OS moved
/// it: a simulation error.
pub(crate) fn queue_destroyed(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let Some(q) = table.remove(kmd) else {
        return Ok(());
    };
    let logs = lock(&q.logs).take();
    let Some(l) = logs else {
        return Ok(());
    };
    free_log(a, &l.wait.buf);
    free_log(a, &l.signal.buf);
    check_retired(a, &q, &l.retired)
}

pub(super) fn check_retired(
    a: &AdapterShared,
    q: &QueueLog,
    retired: &[LogBuffer],
) -> Result<(), SimError> {
    for b in retired {
        if !b.poison_intact() {
            return Err(sim(
                a,
                q,
                format!(
                    "LOG-01: the device wrote the retired {:?} log at {:#x} after \
                     DxgkDdiSetNativeFenceLogBuffer moved it",
                    b.kind(),
                    b.gpu()
                ),
            ));
        }
    }
    Ok(())
}

/// `Machine::recreate_hw_queue_log` (docs/logs.md#simulated-os, the stand-in for Dxgkrnl moving a log): drain,
/// new buffer, `DxgkDdiSetNativeFenceLogBuffer`, drain the old buffer once more, carry the
/// cursor and last timestamp, poison and keep the old buffer.
pub(crate) fn recreate(
    vm: &dyn VidMmPages,
    a: &AdapterShared,
    kmd: usize,
    kind: LogKind,
    entries: u64,
) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let q = table.get(kmd).ok_or(SimError::Gone("the hardware queue"))?;
    if lock(&q.logs).is_none() {
        return Err(SimError::Simulation("the queue has no logs".into()));
    }
    // The new buffer is mapped into the paging process before the drain lock is taken: the
    // mapping waits for paging buffers, whose completion DPC drains logs under that lock.
    let new = alloc_log(vm, a, kind, entries)?;
    let serial = lock(&table.drain_lock);
    let forced = [q.clone()];
    let drained = crate::sync::fence::dpc::log_drain_locked(a, &DrainRequest::default(), &forced)
        .and_then(|d| match set_log_buffer(a, kmd, &new) {
            Ok(0) => Ok(d),
            Ok(s) => Err(SimError::DdiFailed(s)),
            Err(e) => Err(e),
        });
    let (objs, scan) = match drained {
        Ok(d) => d,
        Err(e) => {
            drop(serial);
            free_log(a, &new);
            return Err(e);
        }
    };
    let (objs2, scan2) =
        crate::sync::fence::dpc::log_drain_locked(a, &DrainRequest::default(), &forced)?;
    let at = {
        let mut g = lock(&q.logs);
        let l = g.as_mut().ok_or(SimError::Gone("the queue's logs"))?;
        let old = l.get_mut(kind);
        let next = LogState {
            buf: new,
            cursor: old.cursor,
            last_end: old.last_end,
            gen: old.gen + 1,
        };
        let prev = std::mem::replace(old, next);
        prev.buf.poison();
        let at = prev.cursor;
        l.retired.push(prev.buf);
        at
    };
    drop(serial);
    emit(
        a,
        TraceEvent::LogRecreated {
            adapter: a.index,
            queue_id: q.queue_id,
            kind,
            at,
            entries,
        },
    );
    let mut all = objs;
    all.extend(objs2);
    crate::sync::fence::settle::settle_after_drain(a, all, scan || scan2)
}

/// Checks every retired log buffer of adapter `a` (machine end, tests).
pub(crate) fn check_all_retired(a: &AdapterShared) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    for q in table.all() {
        let retired: Vec<LogBuffer> = lock(&q.logs)
            .as_ref()
            .map(|l| l.retired.clone())
            .unwrap_or_default();
        check_retired(a, &q, &retired)?;
    }
    Ok(())
}

/// Read-only view of one log for tests: `(gpu, entries, cursor, last_end, gen)`.
pub fn log_view(q: &QueueLog, kind: LogKind) -> Option<(u64, u64, u64, u64, u32)> {
    let mut g = lock(&q.logs);
    let l = g.as_mut()?;
    let s = l.get_mut(kind);
    Some((s.buf.gpu(), s.buf.entries(), s.cursor, s.last_end, s.gen))
}
