//! Buffer life (docs/logs.md#simulated-os), called from `crate::ums`: buffers created with a hardware queue,
//! retired at destroy and checked for writes after retirement.

use std::sync::atomic::Ordering;
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

use super::drain::{emit, release_log_buffers, set_log_buffer, sim};
use crate::os::answers::LogHandOver;
use crate::state::sync::fencelog::{DrainRequest, QueueLog, QueueLogs};
use crate::state::sync::logbuffer::{LogBuffer, LogState, POISON};
use crate::state::sync::maps::Retired;

/// A new log buffer of queue process `pid`, mapped into the system (paging) process at its
/// bus address, and into the queue's process where the reading says ([`LogHandOver`]): under
/// 24H2 a wait log only, under the pages both. The driver is told only the VAs the reading
/// hands over, so under 24H2 a wait log's system mapping is VidMm's own book-keeping (its
/// pages leave through the paging process like every log's), never an address the driver
/// learns. Mapping pages through the GPU, so the caller holds none of the thunk's or the
/// adapter's sequencing locks.
pub(super) fn alloc_log(
    vm: &dyn VidMmPages,
    a: &AdapterShared,
    pid: ProcessId,
    kind: LogKind,
    entries: u64,
) -> Result<LogBuffer, SimError> {
    let both = a.os.windows.reading().log_hand_over == LogHandOver::BothVas;
    let alloc = a
        .device
        .memory()
        .alloc_system(LOG_BUFFER_SIZE, rvgpu_hw::PAGE_SIZE)
        .ok_or(SimError::OutOfMemory("a fence log"))?;
    let bus = alloc.bus_addr;
    let b = LogBuffer::init(alloc, kind, entries);
    if let Err(e) = vm.map_system(a, bus, LOG_BUFFER_SIZE) {
        a.device.memory().free_system(BusAddr::new(bus));
        return Err(e);
    }
    if !(both || kind == LogKind::Wait) {
        return Ok(b);
    }
    // The process's view: VidMm's own page, with no allocation behind it, as a fence value's.
    match vm.map_fence_value(a, pid, bus) {
        Ok(va) if va != 0 => Ok(b.with_process_va(pid, rvgpu_hw::addr::GpuVa::new(va))),
        Ok(_) => {
            free_log(a, &b);
            Err(SimError::Gone("the queue's process address space"))
        }
        Err(e) => {
            free_log(a, &b);
            Err(e)
        }
    }
}

/// Gives a log buffer back: VidMm unmaps it from the paging process and frees it at its next
/// safe point (its `reap_system_pages`), since callers hold the locks paging needs; its
/// process mapping goes at VidMm's next reap of retired fence pages.
pub(super) fn free_log(a: &AdapterShared, b: &LogBuffer) {
    if let Some((pid, va)) = b.process_va() {
        let page = b.gpu();
        let mut os = lock(&a.fence_os);
        let maps = &mut os.maps;
        let last = maps.pages.get_mut(&(pid, page)).is_some_and(|m| {
            m.refs = m.refs.saturating_sub(1);
            m.refs == 0
        });
        if last {
            maps.pages.remove(&(pid, page));
            maps.retired.push(Retired {
                pid,
                page,
                va,
                queues: Vec::new(),
            });
        }
    }
    crate::sync::fence::pages::retire_system(a, b.gpu(), LOG_BUFFER_SIZE);
}

/// The two log buffers of a user-mode queue of process `pid` on an adapter with native
/// fences, made before `D3DKMTCreateHwQueue` takes its locks (`None` otherwise).
pub(crate) fn alloc_queue_logs(
    vm: &dyn VidMmPages,
    a: &AdapterShared,
    pid: ProcessId,
    user_mode: bool,
) -> Result<Option<(LogBuffer, LogBuffer)>, SimError> {
    let native = lock(&a.fence_os).caps.is_some();
    if !user_mode || !native {
        return Ok(None);
    }
    let entries = a.os.log_entries;
    let wait = alloc_log(vm, a, pid, LogKind::Wait, entries)?;
    match alloc_log(vm, a, pid, LogKind::Signal, entries) {
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
/// (`DxgkDdiSetNativeFenceLogBuffer` WAITS then SIGNALS, `M:VidSchiCreateNativeFenceLog`
/// @0x140024634). An error status of either call is returned (the caller destroys the
/// queue); the buffers are freed then, with no release block (24H2 records the logs in the
/// queue only after both calls succeeded).
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
        released: Mutex::new(Vec::new()),
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

/// Before `DxgkDdiDestroyHwQueue`: a final forced drain; then, under 24H2, the queue's last
/// reference goes (`M:VidSchTerminateHwQueue` @0x14001EF70 from
/// `K:DXGHWQUEUE::DestroyCoreState` @0x1402CDD74, before its `DxgkDdiDestroyHwQueue`) and
/// its logs are taken back ([`release_queue_logs`]).
pub(crate) fn queue_destroying(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let Some(q) = table.get(kmd) else {
        return Ok(());
    };
    if lock(&q.logs).is_none() {
        return Ok(());
    }
    let (objs, scan) =
        crate::sync::fence::dpc::log_drain(a, &DrainRequest::default(), std::slice::from_ref(&q))?;
    crate::sync::fence::settle::settle_after_drain(a, objs, scan)?;
    if a.os.windows.reading().log_hand_over == LogHandOver::HandleOnlyRelease {
        release_queue_logs(a, &q)?;
    }
    Ok(())
}

/// 24H2's release (`M:VidSchiDecrementHwQueueReference` @0x140020A74): the block holding only
/// `hHwQueue` at DISPATCH_LEVEL, its status ignored, then the logs freed. Here they are
/// poisoned and kept until the queue is gone ([`queue_destroyed`]): a changed word means the
/// driver left the device writing a log the OS had freed.
pub(crate) fn release_queue_logs(a: &AdapterShared, q: &QueueLog) -> Result<(), SimError> {
    let Some(l) = lock(&q.logs).take() else {
        return Ok(());
    };
    let _status = release_log_buffers(a, q.kmd)?;
    let mut released = lock(&q.released);
    for b in [l.wait.buf, l.signal.buf] {
        seal(&b);
        released.push(b);
    }
    drop(released);
    // Retired (recreated) buffers are poisoned already; they go with the queue.
    check_retired(a, q, &l.retired)?;
    for b in &l.retired {
        free_log(a, b);
    }
    Ok(())
}

/// Header words a released buffer keeps: `Type` and `NumberOfEntries`.
const KEPT_WORDS: [u64; 2] = [8, 16];

/// Poisons a released buffer but for its header's `Type` and `NumberOfEntries`, written as
/// the OS made them (not as found: a hostile GPU may have scribbled over them), so a device
/// still pointed at it would write it (a wholly poisoned header makes LOG_WRITE refuse the
/// buffer, hiding the driver's mistake); [`sealed_intact`] then sees any write.
fn seal(b: &LogBuffer) {
    b.poison();
    for (off, v) in KEPT_WORDS.iter().zip(sealed_header(b)) {
        if let Some(w) = b.alloc().word(*off) {
            w.store(v, Ordering::SeqCst);
        }
    }
}

/// The header words [`seal`] keeps, at [`KEPT_WORDS`].
fn sealed_header(b: &LogBuffer) -> [u64; 2] {
    [
        u64::from(crate::state::sync::logbuffer::log_type(b.kind())),
        b.entries(),
    ]
}

/// Whether a [`seal`]ed buffer is as it was sealed.
fn sealed_intact(b: &LogBuffer) -> bool {
    let header = sealed_header(b);
    (0..LOG_BUFFER_SIZE / 8).all(|i| {
        let off = i * 8;
        let want = match KEPT_WORDS.iter().position(|k| *k == off) {
            Some(j) => header[j],
            None => POISON,
        };
        b.alloc()
            .word(off)
            .is_some_and(|w| w.load(Ordering::SeqCst) == want)
    })
}

/// After `DxgkDdiDestroyHwQueue` returned: forgets the queue and frees its logs. A retired
/// (recreated) or released buffer whose poison changed means the device wrote a log after
/// the OS moved or freed it: a simulation error.
pub(crate) fn queue_destroyed(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    let table = lock(&a.fence_os).logs.clone();
    let Some(q) = table.remove(kmd) else {
        return Ok(());
    };
    let released = std::mem::take(&mut *lock(&q.released));
    let checked = check_released(a, &q, &released);
    for b in &released {
        free_log(a, b);
    }
    checked?;
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

fn check_released(a: &AdapterShared, q: &QueueLog, released: &[LogBuffer]) -> Result<(), SimError> {
    match released.iter().find(|b| !sealed_intact(b)) {
        None => Ok(()),
        Some(b) => Err(sim(
            a,
            q,
            format!(
                "LOG-01: the device wrote the {:?} log at {:#x} after the release block \
                 (DxgkDdiSetNativeFenceLogBuffer naming only the queue) freed it",
                b.kind(),
                b.gpu()
            ),
        )),
    }
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
    // The new buffer is mapped before the drain lock is taken: the mapping waits for paging
    // buffers, whose completion DPC drains logs under that lock.
    let new = alloc_log(vm, a, q.process, kind, entries)?;
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
        let released = lock(&q.released).clone();
        check_released(a, &q, &released)?;
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
