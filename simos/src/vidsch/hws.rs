//! VidSch in hardware-scheduling (HWS) mode: what Dxgkrnl does for nodes whose metadata has
//! `DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported`.
//!
//! **Node initialisation** (`initialize_nodes`, at the end of a successful adapter start,
//! before any work can be scheduled):
//! - BR-77 (\[D\] 22631 `dxgmms2/VidSchiInitializeNode`, called only from
//!   `VidSchInitializeAdapter`, so not again after an adapter-wide reset): per hardware-scheduled
//!   node `DxgkDdiSetupPriorityBands` with the defaults in 100 ns units (bands idle, normal,
//!   focus, realtime): `gracePeriodForBand` {0, 0, 10000, 0}, `processQuantumForBand`
//!   {50000, 50000, 10000, 20000}, `processGracePeriodForBand` {20000, 20000, 30000, 50000},
//!   `targetNormalBandPercentage` from VIDSCH_GLOBAL+208, which only `VidSchSetYieldPercentage`
//!   writes (its caller is not in the 22631 pseudocode): [`OsConfig::hws_normal_band_percentage`]
//!   stands in for it. `STATUS_NOT_IMPLEMENTED` is tolerated, any other failure fails the
//!   adapter with the driver's status; a NULL slot is treated as not implemented (\[D\] the
//!   DxgCoreInterface thunk; \[M\] DxgkDdiSetupPriorityBands page).
//! - BR-79 (\[D\] `VidSchCreateSchedulingLogs` from `VidMmInitializePagingProcess`, only for a
//!   driver version ≥ 2.5; `VidSchiCreateNodeSchedulingLog`): per hardware-scheduled node a log
//!   of 0x800 entries ([`OsConfig::sched_log_entries`] for tests), buffer `32 * (N + 1)` bytes
//!   rounded to pages, header `NumberOfEntries = N` (FirstFreeEntryIndex and WraparoundCount
//!   0), `InterruptEntry = (3 * N) >> 2`, then `DxgkDdiSetSchedulingLogBuffer`;
//!   `STATUS_NOT_IMPLEMENTED` tolerated, other failures fail the adapter. The entries are
//!   filled with 0xCD (a simulation choice: Windows' section memory is zero, but the DDI gives
//!   the GPU no right to assume so). `LogBufferGpuVa` is the buffer's address in the system
//!   (paging-process) GPU space the CMP uses: the bus address, as for the native-fence logs
//!   (`crate::sync::fencelog`).
//!
//! **Scheduling-log processing** (`read_log`): on `DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT`
//! (DPC time; \[D\] `VidSchDdiNotifyInterruptWorker` case 0xF queues the node's log work only on
//! an adapter with hardware scheduling, so on another adapter the report is ignored — recorded
//! in the triage log here), on [`Machine::scheduling_log`](crate::Machine::scheduling_log), before a context is destroyed and at
//! teardown. Everything the GPU wrote is untrusted: the header (acquire) must name an index
//! below `NumberOfEntries` and must not go backwards; each entry must be a
//! `CONTEXT_STATE_CHANGE` to IDLE, RUNNING or READY of a KMD context the OS created on that
//! node (alive, or destroyed after the entry could have been written), with a GPU timestamp
//! not below the previous one of the node. Entries the writer lapped before the OS read them
//! are counted as lost. Violations go to the adapter's triage log (`sched-log: …`) and the
//! offending entry is not returned.
//!
//! **Contexts** (`ums::check_context_flags`, `context_created`): BR-92 (\[D\]
//! `DXGCONTEXT::Initialize`, status `STATUS_UNSUCCESSFUL`), BR-94 (\[D\]
//! `DxgkCreateHwQueueInternal`, `STATUS_INVALID_PARAMETER`), BR-95 (\[D\]
//! `DXGHWQUEUE::InitializeForUserModeSubmission`, `STATUS_INVALID_PARAMETER`); after a context
//! on a hardware-scheduled node is created, `DxgkDdiSetContextSchedulingProperties` with the
//! normal band, `quantum` 20000, `gracePeriodSamePriority` 10000, `gracePeriodLowerPriority` 0
//! (\[D\] `VidSchiUpdateDdiHwContextPriority`, from `VidSchiCreateHwContextInternal`, which
//! ignores its status), and again on a priority change ([`Machine::set_context_priority`](crate::Machine::set_context_priority)).
//!
//! [`OsConfig::hws_normal_band_percentage`]: crate::OsConfig::hws_normal_band_percentage
//! [`OsConfig::sched_log_entries`]: crate::OsConfig::sched_log_entries

use std::sync::atomic::Ordering;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::hws::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS;
use rvgpu_hw::addr::BusAddr;

use crate::adapter::bringup;
use crate::adapter::ddi;
use crate::adapter::rules::Routine;
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;

use crate::state::vidsch::KnownContext;
pub use crate::state::vidsch::{
    ContextPriority, HwsCall, HwsOs, NodeLog, SchedLogEntry, SchedLogStats,
};

/// `processQuantumForBand` etc. of \[D\] `VidSchiInitializeNode` (100 ns units).
pub const DEFAULT_GRACE_PERIOD_FOR_BAND: [u64; 4] = [0, 0, 10_000, 0];
/// See [`DEFAULT_GRACE_PERIOD_FOR_BAND`].
pub const DEFAULT_PROCESS_QUANTUM_FOR_BAND: [u64; 4] = [50_000, 50_000, 10_000, 20_000];
/// See [`DEFAULT_GRACE_PERIOD_FOR_BAND`].
pub const DEFAULT_PROCESS_GRACE_PERIOD_FOR_BAND: [u64; 4] = [20_000, 20_000, 30_000, 50_000];
/// `quantum` of `DxgkDdiSetContextSchedulingProperties`
/// (\[D\] `VidSchiUpdateDdiHwContextPriority`).
pub const CONTEXT_QUANTUM: u64 = 20_000;
/// `gracePeriodSamePriority` (same source).
pub const CONTEXT_GRACE_SAME_PRIORITY: u64 = 10_000;

/// Is `node` of `a` hardware-scheduled (its metadata has `ContextSchedulingSupported`)?
/// For 24H2's engine-timeout payload: (context suspends outstanding on `node`, queues of the
/// node with work). The simulation completes a suspend within its call, so none is ever
/// outstanding.
pub(crate) fn node_queue_counts(a: &AdapterShared, node: u32) -> (u32, u32) {
    let ready = crate::ums::tdr_queues(a)
        .iter()
        .filter(|q| q.node == node && !q.suspended && q.known_work())
        .count();
    (0, u32::try_from(ready).unwrap_or(u32::MAX))
}

pub(crate) fn is_hw_node(a: &AdapterShared, node: u32) -> bool {
    lock(&a.sch.hws).is_hw_node(node)
}

/// VidMm's mapping of system memory into the paging process, which the scheduling logs need
/// (the CMP writes them in the system space). VidMm calls VidSch there (\[D\]
/// `InitPagingProcessVaSpace` → `VidSchRecommitSchedulingLogs`), so VidSch gets the mapping
/// from its caller rather than naming VidMm.
pub(crate) struct PagingSpace<'a> {
    /// Maps `bytes` of system memory at bus address `pa`.
    pub map: &'a dyn Fn(u64, u64) -> Result<(), SimError>,
    /// Unmaps them again.
    pub unmap: &'a dyn Fn(u64, u64) -> Result<(), SimError>,
}

/// The DDIs BR-77 and BR-79 name.
const BANDS: &str = Routine::DxgkDdiSetupPriorityBands.rules().name;
const LOG: &str = Routine::DxgkDdiSetSchedulingLogBuffer.rules().name;

/// BR-77 and BR-79 after a successful start (see the module doc).
pub(crate) fn initialize_nodes(
    paging: &PagingSpace,
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
) -> Result<(), SimError> {
    let nodes: Vec<u32> = {
        let os = lock(&a.ums);
        os.node_metadata
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.Flags
                    .is_set(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported)
            })
            .map(|(n, _)| n as u32)
            .collect()
    };
    {
        let mut h = lock(&a.sch.hws);
        release_logs(a, &mut h);
        *h = HwsOs {
            hw_nodes: nodes.clone(),
            ..HwsOs::default()
        };
    }
    if nodes.is_empty() {
        return Ok(());
    }
    // BR-77: VidSchInitializeAdapter → VidSchiInitializeNode, node by node.
    for &node in &nodes {
        let args = DXGKARG_SETUPPRIORITYBANDS {
            gracePeriodForBand: DEFAULT_GRACE_PERIOD_FOR_BAND,
            processQuantumForBand: DEFAULT_PROCESS_QUANTUM_FOR_BAND,
            processGracePeriodForBand: DEFAULT_PROCESS_GRACE_PERIOD_FOR_BAND,
            targetNormalBandPercentage: a.os.hws_normal_band_percentage,
        };
        let status = optional_ddi(a, ddi::in_table!(t, DxgkDdiSetupPriorityBands), &args)?;
        lock(&a.sch.hws)
            .calls
            .push(HwsCall::SetupPriorityBands { node, args, status });
        let rows = bringup::paging::PRIORITY_BAND_RULES;
        if let Some(v) = bringup::paging::check(rows, BANDS, Some(node), status) {
            return Err(v.into());
        }
    }
    // BR-79: VidMmInitializePagingProcess → VidSchCreateSchedulingLogs (driver version ≥ 2.5).
    let wddm = lock(&a.caps).map_or(0, |c| c.WDDMVersion as u32);
    if wddm < 0x2500 {
        return Ok(());
    }
    let n = a.os.sched_log_entries;
    for &node in &nodes {
        let bytes = 32 * (u64::from(n) + 1);
        let size = bytes.div_ceil(rvgpu_hw::PAGE_SIZE) * rvgpu_hw::PAGE_SIZE;
        let alloc = a
            .device
            .memory()
            .alloc_system(size, rvgpu_hw::PAGE_SIZE)
            .ok_or(SimError::OutOfMemory("a scheduling log"))?;
        for (i, w) in alloc.words().iter().enumerate() {
            let v = match i {
                0 | 2 | 3 => 0,
                1 => u64::from(n),
                _ => 0xCDCD_CDCD_CDCD_CDCD,
            };
            w.store(v, Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        // The CMP writes it in the system space: VidMm maps it into the paging process ([D]
        // InitPagingProcessVaSpace → VidSchRecommitSchedulingLogs).
        if let Err(e) = (paging.map)(alloc.bus_addr, size) {
            let _ = a.device.memory().free_system(BusAddr::new(alloc.bus_addr));
            return Err(e);
        }
        let interrupt_entry = (3 * n) >> 2;
        let args = DXGKARG_SETSCHEDULINGLOGBUFFER {
            NodeOrdinal: node,
            EngineOrdinal: 0,
            NumberOfEntries: n,
            LogBufferCpuVa: alloc.cpu_ptr().as_ptr().cast(),
            LogBufferGpuVa: alloc.bus_addr,
            InterruptEntry: interrupt_entry,
        };
        // The log buffer stays allocated until the adapter stops.
        let status = optional_ddi(a, ddi::in_table!(t, DxgkDdiSetSchedulingLogBuffer), &args)?;
        lock(&a.sch.hws)
            .calls
            .push(HwsCall::SetSchedulingLogBuffer {
                node,
                entries: n,
                interrupt_entry,
                cpu_va: args.LogBufferCpuVa as usize,
                gpu_va: args.LogBufferGpuVa,
                status,
            });
        if let Some(true) = status.map(|s| s >= 0) {
            let _ = lock(&a.sch.hws).logs.insert(
                node,
                NodeLog {
                    alloc,
                    entries: u64::from(n),
                    interrupt_entry,
                    last_ts: 0,
                    stats: SchedLogStats::default(),
                    accepted: Vec::new(),
                },
            );
            continue;
        }
        (paging.unmap)(alloc.bus_addr, size)?;
        let _ = a.device.memory().free_system(BusAddr::new(alloc.bus_addr));
        let rows = bringup::paging::SCHEDULING_LOG_RULES;
        if let Some(v) = bringup::paging::check(rows, LOG, Some(node), status) {
            return Err(v.into());
        }
    }
    Ok(())
}

fn release_logs(a: &AdapterShared, h: &mut HwsOs) {
    for (_, l) in std::mem::take(&mut h.logs) {
        a.device
            .memory()
            .free_system(BusAddr::new(l.alloc.bus_addr));
    }
}

/// After the adapter stopped: the logs are freed (the device no longer writes them).
pub(crate) fn release(a: &AdapterShared) {
    let mut h = lock(&a.sch.hws);
    release_logs(a, &mut h);
}

/// Teardown: every log is read one last time.
pub(crate) fn drain_all(a: &AdapterShared) {
    let nodes: Vec<u32> = lock(&a.sch.hws).logs.keys().copied().collect();
    for n in nodes {
        read_log(a, n);
    }
}

/// `DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT` for `node` (DPC time).
pub(crate) fn log_interrupt(a: &AdapterShared, node: u32) {
    let (hws_adapter, has_log) = {
        let mut h = lock(&a.sch.hws);
        let has = match h.logs.get_mut(&node) {
            Some(l) => {
                l.stats.interrupts += 1;
                true
            }
            None => false,
        };
        (!h.hw_nodes.is_empty(), has)
    };
    if !has_log {
        let why = if hws_adapter {
            "driver bug: DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT for a node without a scheduling log"
        } else {
            // [D] VidSchDdiNotifyInterruptWorker: case 0xF only on a hardware-scheduled adapter.
            "ignored: DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT on an adapter without hardware scheduling"
        };
        a.observer()
            .triage(format!("sched-log: node {node}: {why}"));
        return;
    }
    read_log(a, node);
}

/// Reads `node`'s log from the OS's position to the header's (see the module doc).
pub(crate) fn read_log(a: &AdapterShared, node: u32) {
    let mut violations = Vec::new();
    {
        let mut h = lock(&a.sch.hws);
        let HwsOs { logs, known, .. } = &mut *h;
        let Some(l) = logs.get_mut(&node) else {
            return;
        };
        let n = l.entries;
        let word = |off: u64| l.alloc.word(off).map_or(0, |w| w.load(Ordering::Acquire));
        let header = word(0);
        let (idx, wrap) = (header & 0xFFFF_FFFF, header >> 32);
        if idx >= n {
            violations.push(format!(
                "FirstFreeEntryIndex {idx} >= NumberOfEntries {n} (header {header:#x})"
            ));
        } else {
            let pos = wrap * n + idx;
            if pos < l.stats.read {
                violations.push(format!(
                    "header went backwards: wrap {wrap} index {idx} (position {pos}) < read \
                     position {}",
                    l.stats.read
                ));
            } else {
                let mut from = l.stats.read;
                if pos - from > n {
                    l.stats.lost += pos - from - n;
                    from = pos - n;
                }
                for i in from..pos {
                    let base = 32 + (i % n) * 32;
                    let ts = word(base);
                    let op_word = word(base + 8);
                    let kmd = word(base + 16) as usize;
                    let state = word(base + 24) as u32 as i32;
                    let op = op_word as u32;
                    let why = if op != DXGK_SCHEDULING_LOG_OPERATION_CONTEXT_STATE_CHANGE as u32 {
                        Some(format!("OperationType {op:#x}"))
                    } else if !(DXGK_SCHEDULING_LOG_CONTEXT_STATE_IDLE
                        ..=DXGK_SCHEDULING_LOG_CONTEXT_STATE_READY)
                        .contains(&state)
                    {
                        Some(format!("newContextState {state}"))
                    } else if !known
                        .get(&kmd)
                        .is_some_and(|k| k.node == node && !k.destroyed)
                    {
                        Some(format!(
                            "hKmdContext {kmd:#x} is no live KMD context of node {node}"
                        ))
                    } else if ts < l.last_ts {
                        Some(format!(
                            "GpuTimeStamp {ts} below the previous {} of the node",
                            l.last_ts
                        ))
                    } else {
                        None
                    };
                    match why {
                        Some(w) => {
                            l.stats.refused += 1;
                            violations.push(format!("entry {i}: {w}"));
                        }
                        None => {
                            l.last_ts = ts;
                            l.accepted.push(SchedLogEntry {
                                index: i,
                                timestamp: ts,
                                kmd_context: kmd,
                                context: known[&kmd].context,
                                state,
                            });
                        }
                    }
                }
                l.stats.read = pos;
            }
        }
    }
    if !violations.is_empty() {
        a.observer().triage_all(
            violations
                .into_iter()
                .map(|v| format!("sched-log: node {node}: {v}")),
        );
    }
}

/// After `DxgkDdiCreateContext` succeeded for a context on a hardware-scheduled node: the OS
/// knows its KMD handle (for the scheduling log) and tells the KMD its priority.
pub(crate) fn context_created(
    a: &AdapterShared,
    context: KmtHandle,
    kmd: usize,
    node: u32,
) -> Result<(), SimError> {
    if !is_hw_node(a, node) {
        return Ok(());
    }
    lock(&a.sch.hws).known.insert(
        kmd,
        KnownContext {
            context,
            node,
            destroyed: false,
        },
    );
    set_properties(a, context, kmd, ContextPriority::default())
}

/// Before `DxgkDdiDestroyContext`: the node's log is read (entries written so far name a live
/// context); afterwards the handle is dead for the log.
pub(crate) fn context_destroying(a: &AdapterShared, kmd: usize, node: u32) {
    if !is_hw_node(a, node) {
        return;
    }
    read_log(a, node);
    if let Some(k) = lock(&a.sch.hws).known.get_mut(&kmd) {
        k.destroyed = true;
    }
}

fn set_properties(
    a: &AdapterShared,
    context: KmtHandle,
    kmd: usize,
    p: ContextPriority,
) -> Result<(), SimError> {
    let args = DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES {
        hContext: kmd as HANDLE,
        priorityBand: p.band,
        realtimeBandPriorityLevel: p.realtime_level,
        inProcessPriority: p.in_process,
        quantum: CONTEXT_QUANTUM,
        gracePeriodSamePriority: CONTEXT_GRACE_SAME_PRIORITY,
        gracePeriodLowerPriority: 0,
    };
    let status = optional_ddi(
        a,
        ddi::table_slot!(a, DxgkDdiSetContextSchedulingProperties)?,
        &args,
    )?;
    // [D] VidSchiCreateHwContextInternal ignores the status; the caller of a priority change
    // gets it.
    lock(&a.sch.hws)
        .calls
        .push(HwsCall::SetContextSchedulingProperties {
            context,
            kmd,
            band: p.band,
            realtime_level: p.realtime_level,
            in_process_priority: p.in_process,
            quantum: CONTEXT_QUANTUM,
            grace_same: CONTEXT_GRACE_SAME_PRIORITY,
            grace_lower: 0,
            status,
        });
    Ok(())
}

/// Reads `node`'s scheduling log now; every entry the OS accepted so far.
pub(crate) fn scheduling_log(a: &AdapterShared, node: u32) -> Result<Vec<SchedLogEntry>, SimError> {
    read_log(a, node);
    let h = lock(&a.sch.hws);
    let l = h
        .logs
        .get(&node)
        .ok_or_else(|| SimError::Simulation(format!("node {node} has no scheduling log")))?;
    Ok(l.accepted.clone())
}

/// `node`'s log counters (without reading the log) and its `InterruptEntry`.
pub(crate) fn scheduling_log_stats(a: &AdapterShared, node: u32) -> Option<(SchedLogStats, u32)> {
    let h = lock(&a.sch.hws);
    h.logs.get(&node).map(|l| (l.stats, l.interrupt_entry))
}

/// A new band / priority for `context`, told to the KMD through
/// `DxgkDdiSetContextSchedulingProperties`
/// ([`crate::machine::Machine::set_context_priority`]).
pub(crate) fn set_context_priority(
    a: &AdapterShared,
    context: KmtHandle,
    p: ContextPriority,
) -> Result<(), SimError> {
    let (kmd, node) =
        crate::ums::context_kmd(a, context).ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
    if !is_hw_node(a, node)
        || !(DXGK_SCHEDULING_PRIORITY_BAND_IDLE..DXGK_SCHEDULING_PRIORITY_BAND_COUNT)
            .contains(&p.band)
    {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    if kmd == 0 {
        // A context the KMD never heard of: `M:VidSchiUpdateDdiHwContextPriority` @0x140101C64
        // returns before the DDI for a `NoKmdAccess` hardware context.
        return Ok(());
    }
    set_properties(a, context, kmd, p)?;
    match lock(&a.sch.hws).calls.last() {
        Some(HwsCall::SetContextSchedulingProperties {
            status: Some(s), ..
        }) if *s < 0 => Err(SimError::DdiFailed(*s)),
        _ => Ok(()),
    }
}

/// Calls an optional scheduling DDI that takes the adapter's context and an argument block, at
/// PASSIVE_LEVEL: its status, or `None` when the driver has no such DDI.
fn optional_ddi<T: ddi::Block>(
    a: &AdapterShared,
    f: Option<ddi::HandleRefFn<T>>,
    args: &T,
) -> Result<Option<NTSTATUS>, SimError> {
    let Some(f) = f else {
        return Ok(None);
    };
    // Audited: the block is checked against the DDI's row sets.
    f.passive(a, (a.context(), args)).map(Some)
}
