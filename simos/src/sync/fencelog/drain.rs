//! The log DDIs (`DxgkDdiUpdateNativeFenceLogs`, `DxgkDdiSetNativeFenceLogBuffer`,
//! `DxgkDdiCalibrateGpuClock`) and the drain that reads new entries at DPC time.

use std::collections::BTreeMap;
use std::sync::Arc;

use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::{
    DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS,
    DXGKARG_UPDATENATIVEFENCELOGS, DXGKARG_UPDATENATIVEFENCELOGS_FLAGS,
};
use rvgpu_ddi::NTSTATUS;
use rvgpu_hw::cmd::LogKind;
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{self, At};
use crate::adapter::AdapterShared;
use crate::base::clock::qpc;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::os::answers::{LogHandOver, LogReport};
use crate::state::sync::trace::TraceEvent;

use crate::state::sync::fencelog::{DrainRequest, Drained, LogCounters, QueueLog, SignalSeen};
use crate::state::sync::logbuffer::{LogBuffer, LogState};

/// `DxgkDdiUpdateNativeFenceLogs` for `handles` at DISPATCH_LEVEL; returns the driver's status.
pub fn update_logs(a: &AdapterShared, handles: &[usize]) -> Result<NTSTATUS, SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiUpdateNativeFenceLogs))
        .ok_or(SimError::NoDdi("DxgkDdiUpdateNativeFenceLogs"))?;
    let mut hs: Vec<HANDLE> = handles.iter().map(|h| *h as HANDLE).collect();
    let args = DXGKARG_UPDATENATIVEFENCELOGS {
        NumberOfQueues: hs.len() as u32,
        hHWQueue: hs.as_mut_ptr(),
        Flags: DXGKARG_UPDATENATIVEFENCELOGS_FLAGS::default(),
        Reserved: [0; 32],
    };
    f.call(a, At::Level(Irql::Dispatch), &args)
}

/// `DxgkDdiSetNativeFenceLogBuffer` for `buf` of queue `kmd`, with what the reading fills
/// ([`LogHandOver`]): under 24H2, at PASSIVE_LEVEL, `LogBufferGpuVa` is the one VA the log
/// has (the queue's process for a wait log, the system process, its bus address, for a signal
/// log) and `LogBufferSystemProcessGpuVa` stays zero; under the pages, at DISPATCH_LEVEL,
/// `LogBufferGpuVa` is the process VA and `LogBufferSystemProcessGpuVa` the system one.
pub fn set_log_buffer(
    a: &AdapterShared,
    kmd: usize,
    buf: &LogBuffer,
) -> Result<NTSTATUS, SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiSetNativeFenceLogBuffer))
        .ok_or(SimError::NoDdi("DxgkDdiSetNativeFenceLogBuffer"))?;
    let process_va = buf.process_va().map_or(buf.gpu(), |(_, va)| va);
    let (system_va, irql) = match a.os.windows.reading().log_hand_over {
        LogHandOver::HandleOnlyRelease => (0, Irql::Passive),
        LogHandOver::BothVas => (buf.gpu(), Irql::Dispatch),
    };
    let args = DXGKARG_SETNATIVEFENCELOGBUFFER {
        hHwQueue: kmd as HANDLE,
        NumberOfEntries: u32::try_from(buf.entries()).unwrap_or(u32::MAX),
        LogBufferCpuVa: buf.kva(),
        LogBufferGpuVa: process_va,
        LogBufferSystemProcessGpuVa: system_va,
        Flags: DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS::default(),
        Reserved: [0; 32],
    };
    f.call(a, At::Level(irql), &args)
}

/// 24H2's release block for queue `kmd` (`M:VidSchiDecrementHwQueueReference` @0x140020A74):
/// zeroed but for `hHwQueue`, at DISPATCH_LEVEL (inside a queued spin lock). Returns the
/// driver's status, which 24H2 does not look at.
pub fn release_log_buffers(a: &AdapterShared, kmd: usize) -> Result<NTSTATUS, SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiSetNativeFenceLogBuffer))
        .ok_or(SimError::NoDdi("DxgkDdiSetNativeFenceLogBuffer"))?;
    let args = DXGKARG_SETNATIVEFENCELOGBUFFER {
        hHwQueue: kmd as HANDLE,
        NumberOfEntries: 0,
        LogBufferCpuVa: std::ptr::null_mut(),
        LogBufferGpuVa: 0,
        LogBufferSystemProcessGpuVa: 0,
        Flags: DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS::default(),
        Reserved: [0; 32],
    };
    f.call(a, At::Level(Irql::Dispatch), &args)
}

pub(super) fn emit(a: &AdapterShared, e: TraceEvent) {
    let sink = lock(&a.fence_os).trace.0.clone();
    if let Some(s) = sink {
        s.event(&e);
    }
}

pub(super) fn bump(a: &AdapterShared, f: impl FnOnce(&mut LogCounters)) {
    f(&mut lock(&a.fence_os).log_counters);
}

/// The DPC-time drain (docs/logs.md#simulated-os) of adapter `a`. `forced` queues are read whatever the request
/// says (recreate, destroy). Returns the signals seen and whether a fallback scan is due.
pub fn drain(
    a: &AdapterShared,
    req: &DrainRequest,
    forced: &[Arc<QueueLog>],
) -> Result<Drained, SimError> {
    let (cands, named_missing) = candidates(a, req, forced);
    let mut out = Drained {
        scan_all: named_missing,
        ..Drained::default()
    };
    // Phase 1: headers.
    let (dirty, headers) = read_headers(a, req, &cands, &mut out);
    if headers == 0 && dirty.is_empty() {
        if out.scan_all {
            bump(a, |c| c.log_fallback_scans += 1);
        }
        return Ok(out);
    }
    bump(a, |c| {
        c.log_drains += 1;
        c.log_headers_read += headers;
    });
    if dirty.is_empty() {
        if out.scan_all {
            bump(a, |c| c.log_fallback_scans += 1);
        }
        return Ok(out);
    }
    // LOG-07: one flush naming every dirty queue, before any entry is read.
    let handles: Vec<usize> = dirty.iter().map(|d| d.0.kmd).collect();
    let status = update_logs(a, &handles)?;
    {
        let mut os = lock(&a.fence_os);
        os.log_counters.log_update_calls += 1;
        os.last_log_update = handles.clone();
    }
    if status != 0 {
        let m = format!(
            "DxgkDdiUpdateNativeFenceLogs({handles:#x?}) returned {status:#x} for live queues"
        );
        a.state.raise_sim_error(m.clone());
        return Err(SimError::Violation(m));
    }
    // Phase 2: entries up to the pre-flush counts.
    read_entries(a, dirty, &mut out);
    Ok(out)
}

/// A queue with a new wait or signal entry, and the counts its headers showed before the
/// flush.
type Dirty = (Arc<QueueLog>, Option<u64>, Option<u64>);

/// The queues the drain reads, by the driver's handle: those the request names, those of the
/// engines it names, and `forced`; and whether a named one has no log (a scan is due).
fn candidates(
    a: &AdapterShared,
    req: &DrainRequest,
    forced: &[Arc<QueueLog>],
) -> (BTreeMap<usize, Arc<QueueLog>>, bool) {
    let table = lock(&a.fence_os).logs.clone();
    let mut cands: BTreeMap<usize, Arc<QueueLog>> = BTreeMap::new();
    let mut named_missing = false;
    for h in &req.named {
        match table.get(*h) {
            Some(q) => {
                cands.insert(*h, q);
            }
            None => named_missing = true,
        }
    }
    if !req.engines.is_empty() {
        for q in table.all() {
            if req.engines.contains(&q.node) {
                cands.insert(q.kmd, q);
            }
        }
    }
    for q in forced {
        cands.insert(q.kmd, q.clone());
    }
    (cands, named_missing)
}

/// Phase 1 of the drain: each candidate's headers. Returns the dirty queues and the number of
/// headers read.
fn read_headers(
    a: &AdapterShared,
    req: &DrainRequest,
    cands: &BTreeMap<usize, Arc<QueueLog>>,
    out: &mut Drained,
) -> (Vec<Dirty>, u64) {
    let mut dirty: Vec<Dirty> = Vec::new();
    let mut headers = 0u64;
    for q in cands.values() {
        let mut g = lock(&q.logs);
        let Some(l) = g.as_mut() else {
            continue;
        };
        headers += 2;
        // Log contents are untrusted (user-mode LOG_WRITE, a faulty device): a header that
        // breaks LOG-05 costs a scan and a resynchronised cursor, never a halt.
        let mut peek = |log: &mut LogState| match log.peek() {
            Ok(c) => c,
            Err(m) => {
                distrust(a, q, &m);
                log.resync();
                out.scan_all = true;
                None
            }
        };
        let w = peek(&mut l.wait);
        let s = peek(&mut l.signal);
        if s.is_none()
            && req.named.contains(&q.kmd)
            && a.os.windows.reading().log_report == LogReport::ScanWhenLogSaysNothing
        {
            // A named queue without a new signal entry: 24H2 scans the node
            // ([`LogReport::ScanWhenLogSaysNothing`]); under the pages nothing is released.
            out.scan_all = true;
        }
        if w.is_some() || s.is_some() {
            dirty.push((q.clone(), w, s));
        }
    }
    (dirty, headers)
}

/// Phase 2 of the drain: the entries of each dirty queue up to its pre-flush counts, the
/// signals into `out`, the counters and trace events after.
fn read_entries(a: &AdapterShared, dirty: Vec<Dirty>, out: &mut Drained) {
    let mut counters = LogCounters::default();
    let mut events = Vec::new();
    for (q, w, s) in dirty {
        let mut g = lock(&q.logs);
        let Some(l) = g.as_mut() else {
            continue;
        };
        for (kind, c0) in [(LogKind::Wait, w), (LogKind::Signal, s)] {
            let Some(c0) = c0 else {
                continue;
            };
            let log = l.get_mut(kind);
            let r = match log.read(c0) {
                Ok(r) => r,
                Err(m) => {
                    // Untrusted contents (LOG-05/06 broken): scan instead of trusting any of
                    // this read, and start again from the header as it is now.
                    distrust(a, &q, &m);
                    log.resync();
                    out.scan_all = true;
                    continue;
                }
            };
            if let Some((from, to)) = r.lost {
                counters.log_overflows += 1;
                counters.log_entries_lost += to - from;
                out.scan_all = true;
                events.push(TraceEvent::LogLost {
                    adapter: a.index,
                    queue_id: q.queue_id,
                    kind,
                    from,
                    to,
                });
            }
            if !r.bad.is_empty() {
                counters.log_bad_entries += r.bad.len() as u64;
                out.scan_all = true;
            }
            counters.log_entries_read += r.entries.len() as u64;
            for (index, entry) in r.entries {
                events.push(TraceEvent::LogEntry {
                    adapter: a.index,
                    queue_id: q.queue_id,
                    kind,
                    index,
                    entry,
                });
                if kind == LogKind::Signal {
                    out.signals.push(SignalSeen {
                        process: q.process,
                        handle: entry.h_native_fence,
                        value: entry.fence_value,
                        queue_id: q.queue_id,
                        index,
                    });
                }
            }
        }
    }
    if out.scan_all {
        counters.log_fallback_scans += 1;
    }
    bump(a, |c| {
        c.log_entries_read += counters.log_entries_read;
        c.log_overflows += counters.log_overflows;
        c.log_entries_lost += counters.log_entries_lost;
        c.log_bad_entries += counters.log_bad_entries;
        c.log_fallback_scans += counters.log_fallback_scans;
    });
    for e in events {
        emit(a, e);
    }
}

/// A device or driver bug the OS cannot survive (a retired log written after it moved):
/// halts the machine with a simulation error naming the queue.
pub(super) fn sim(a: &AdapterShared, q: &QueueLog, m: String) -> SimError {
    let m = format!(
        "adapter {} queue id {} ({:#x}): {m}",
        a.index, q.queue_id, q.kmd
    );
    a.state.raise_sim_error(m.clone());
    SimError::Violation(m)
}

/// Records log contents that break the device's contract: counted, logged, never a halt.
pub(super) fn distrust(a: &AdapterShared, q: &QueueLog, m: &str) {
    bump(a, |c| c.log_untrusted += 1);
    a.state.push_log(
        rvgpu_kmd::platform::Level::Warning,
        format!(
            "adapter {} queue id {} ({:#x}): untrusted log contents, scanning: {m}",
            a.index, q.queue_id, q.kmd
        ),
    );
}

/// One `DxgkDdiCalibrateGpuClock(node, 0)` at DISPATCH_LEVEL with the OS's checks (docs/logs.md#simulated-os):
/// `q_before ≤ CpuClockCounter ≤ q_after`, `GpuFrequency` = the device's `CLOCK_FREQ`, the
/// GPU counter never below the adapter's previous answer. Emits [`TraceEvent::Calibration`].
/// Returns `(gpu_hz, gpu, cpu, bracket)`.
pub fn calibrate(a: &AdapterShared, node: u32) -> Result<(u64, u64, u64, u64), SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiCalibrateGpuClock))
        .ok_or(SimError::NoDdi("DxgkDdiCalibrateGpuClock"))?;
    let mut args = rvgpu_ddi::adapter::DXGKARG_CALIBRATEGPUCLOCK {
        GpuFrequency: 0,
        GpuClockCounter: 0,
        CpuClockCounter: 0,
        Flags: Default::default(),
    };
    let ctx = a.context();
    a.observer()
        .handed(&rvgpu_ddi::handover::CALIBRATE_GPU_CLOCK, &args);
    let q0 = qpc();
    let status = { f.call_unaudited(a, At::Level(Irql::Dispatch), (ctx, node, 0, &mut args))? };
    let q1 = qpc();
    crate::adapter::ddi::check_status(f, status)?;
    let hz = u64::from(a.device.config().clock_hz);
    // DXGK_GPUCLOCKDATA is packed: copy the fields out before formatting them.
    let (gpu_frequency, gpu_counter, cpu_counter) = (
        args.GpuFrequency,
        args.GpuClockCounter,
        args.CpuClockCounter,
    );
    let err = if gpu_frequency != hz {
        Some(format!(
            "CalibrateGpuClock: GpuFrequency {gpu_frequency} but CLOCK_FREQ is {hz}"
        ))
    } else if !(q0..=q1).contains(&cpu_counter) {
        Some(format!(
            "CalibrateGpuClock: CpuClockCounter {cpu_counter} outside the call [{q0}, {q1}]"
        ))
    } else {
        let mut os = lock(&a.fence_os);
        if gpu_counter < os.last_gpu_clock {
            Some(format!(
                "CalibrateGpuClock: GPU counter went backwards ({gpu_counter} < {})",
                os.last_gpu_clock
            ))
        } else {
            os.last_gpu_clock = gpu_counter;
            os.last_calibration = Some(std::time::Instant::now());
            None
        }
    };
    if let Some(m) = err {
        a.state.raise_sim_error(m.clone());
        return Err(SimError::Violation(m));
    }
    emit(
        a,
        TraceEvent::Calibration {
            adapter: a.index,
            node,
            gpu_hz: args.GpuFrequency,
            gpu: args.GpuClockCounter,
            cpu: args.CpuClockCounter,
            bracket: q1 - q0,
        },
    );
    Ok((
        args.GpuFrequency,
        args.GpuClockCounter,
        args.CpuClockCounter,
        q1 - q0,
    ))
}
