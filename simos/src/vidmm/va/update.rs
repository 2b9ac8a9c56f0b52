//! `D3DKMTUpdateGpuVirtualAddress` in VidMm, as 24H2 runs it
//! (`M:VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress` @0x1400E34AC): the operations checked in
//! order, the targets' and the COPY sources' reserved ranges referenced, and the update
//! queued; it returns at once. 24H2 queues two packets on hContext's VidSch companion context
//! (`K:DXGCONTEXT::GetVidSchCompanionContext` @0x1402F8DA0): a wait for `hFenceObject`
//! reaching `FenceValue` (`M:VidSchWaitForSingleSyncObject` @0x140003F10, unless `DoNotWait`),
//! then a global command (`M:VidSchSubmitGlobalCommand` @0x1400E45A8) whose callback
//! (`M:VIDMM_GLOBAL::VidMmiUpdateGpuVirtualAddress` @0x1400DA5B0) hands the update to VidMm's
//! paging-queue worker (`QueueDeferredCommand`), which applies the operations in order through
//! the driver and signals the fence to `FenceValue + 1` (the command's signal value). So a
//! caller sees its mappings only once that value is reached.
//!
//! Here the wait is a VidSch-side waiter on the monitored fence, released by whatever moves
//! the fence: a CPU signal, a software signal packet, or the DPC-time scan after the GPU's
//! write. Its release marks the update ready and wakes VidMm's worker (`crate::vidmm::worker`:
//! the adapter's VidMm thread, or the step loop's round), which applies it
//! ([`gpu_va_worker`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rvgpu_umd::kmt::{
    GpuVaProtection, MapGpuVa, UpdateGpuVaOp, UPDATE_GPU_VA_COPY, UPDATE_GPU_VA_MAP,
    UPDATE_GPU_VA_MAP_PROTECT, UPDATE_GPU_VA_UNMAP,
};

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::vidmm::residency::State as Residency;
use crate::state::vidmm::va::{QueuedUpdate, UpdateStep, UserMap};
use crate::sync::fence::MonitoredFence;
use crate::vidmm::host::Host;

use super::base::{
    bad, device_pid, va_limit, PAGE, PROTECTION_NO_ACCESS, PROTECTION_SYSTEM_USE_ONLY,
    PROTECTION_ZERO,
};
use super::mapping::{va_clear, va_map_into, va_target};

/// A `D3DKMTUpdateGpuVirtualAddress` as Dxgkrnl hands it to VidMm: `hDevice`, `hContext`
/// and `hFenceObject` looked up and checked (`crate::kmt::gpu_va`), and the device of each
/// MAP / MAP_PROTECT's allocation (`None` for the other types) as Dxgkrnl referenced it.
pub(crate) struct UpdateCall<'o> {
    pub(crate) device: KmtHandle,
    pub(crate) context: KmtHandle,
    pub(crate) fence: MonitoredFence,
    pub(crate) fence_value: u64,
    pub(crate) do_not_wait: bool,
    pub(crate) ops: &'o [UpdateGpuVaOp],
    pub(crate) owners: &'o [Option<KmtHandle>],
}

/// The device's process, or STATUS_DEVICE_REMOVED for a device in error (Dxgkrnl's "device
/// not active" check, `K:DxgkUpdateGpuVirtualAddress` @0x1402F7A50).
pub(crate) fn update_device(a: &AdapterShared, device: KmtHandle) -> Result<ProcessId, SimError> {
    device_pid(a, device)
}

/// VidMm's checks of the operations, each STATUS_INVALID_PARAMETER, in 24H2's order per
/// operation:
/// - MAP / MAP_PROTECT: the VA range (`IsRangeValid`: wrapping or past the top of the
///   space); `AllocationOffsetInBytes` / `AllocationSizeInBytes` not 4 KiB aligned;
///   `AllocationSizeInBytes` (0: `SizeInBytes`) larger than `SizeInBytes` or not dividing it
///   (the allocation range repeats over the VA range); offset plus size wrapping or past the
///   allocation; then the range empty or not 4 KiB aligned at both ends. `Protection`
///   follows Map's rules here (`SystemUseOnly`, reserved bits and `Zero` refused, `NoAccess`
///   maps nothing), where 24H2 hands it on unchecked; `DriverProtection` goes to the driver
///   with the leaves' updates, unchecked, as in 24H2;
/// - UNMAP: the range as above; without `NoAccess` it asks for the zero state (VidMm's
///   range type 6), which this VidMm does not model (refused);
/// - COPY: the destination range (`IsRangeValid`); the source empty or wrapping, not 4 KiB
///   aligned, or overlapping the destination; then the destination empty or unaligned.
///
/// Then the targets (MAP, UNMAP ranges and COPY destinations) must lie in one range the
/// process made with Reserve, and the COPY sources in one such range
/// (`CVirtualAddressAllocator::ReferenceReservedZeroVad`: ranges Map made for itself do not
/// qualify). Nothing is applied here: the update is queued ([`gpu_va_updates_run`]).
pub(crate) fn gpu_va_update(a: &AdapterShared, c: UpdateCall<'_>) -> Result<(), SimError> {
    let pid = device_pid(a, c.device)?;
    let limit = va_limit(a, pid).ok_or_else(bad)?;
    let mut steps = Vec::new();
    let mut targets = Span::default();
    let mut sources = Span::default();
    for (i, op) in c.ops.iter().enumerate() {
        let owner = c.owners.get(i).copied().flatten();
        let (base, end) = match op.operation_type {
            UPDATE_GPU_VA_MAP | UPDATE_GPU_VA_MAP_PROTECT => {
                map_steps(a, pid, limit, op, owner, &mut steps)?
            }
            UPDATE_GPU_VA_UNMAP => {
                let (base, end) = range(op.base, op.size, limit)?;
                if op.protection.0 & PROTECTION_NO_ACCESS == 0 {
                    return Err(bad());
                }
                steps.push(UpdateStep::Unmap {
                    va: base,
                    pages: (end - base) / PAGE,
                });
                (base, end)
            }
            UPDATE_GPU_VA_COPY => {
                let (dst, dst_end) = range(op.dest, op.size, limit)?;
                let (src, src_end) = range(op.base, op.size, limit)?;
                if src < dst_end && dst < src_end {
                    return Err(bad());
                }
                sources.add(src, src_end);
                steps.push(UpdateStep::Copy {
                    src,
                    pages: (src_end - src) / PAGE,
                    dst,
                });
                (dst, dst_end)
            }
            _ => return Err(bad()),
        };
        targets.add(base, end);
    }
    let start = reserved(a, pid, targets).ok_or_else(bad)?;
    let src_start = match sources.is_empty() {
        true => None,
        false => Some(reserved(a, pid, sources).ok_or_else(bad)?),
    };
    let ready = Arc::new(AtomicBool::new(c.do_not_wait));
    let fence = c.fence.clone();
    let mut st = lock(&a.mm.gpuva);
    st.updates.push(QueuedUpdate {
        context: c.context,
        device: c.device,
        pid,
        fence: c.fence,
        wait: None,
        ready: ready.clone(),
        signal: c.fence_value.saturating_add(1),
        steps,
        start,
        src_start,
    });
    drop(st);
    // Queued before the wait is placed: a wait satisfied at once finds its update in the
    // queue when its release wakes the worker.
    if c.do_not_wait {
        wake_worker(a, &a.mm.updates_due);
        return Ok(());
    }
    let key = ready.clone();
    let due = a.mm.updates_due.clone();
    let wake = a.mm.wake.clone();
    let resume = move || {
        ready.store(true, Ordering::SeqCst);
        due.store(true, Ordering::SeqCst);
        wake.notify();
    };
    match crate::sync::fence::monitored::wait_from_gpu(&a.state, &fence, c.fence_value, resume) {
        Ok(ev) => {
            let mut st = lock(&a.mm.gpuva);
            if let Some(u) = st.updates.iter_mut().find(|u| Arc::ptr_eq(&u.ready, &key)) {
                u.wait = Some(ev);
            }
            Ok(())
        }
        Err(e) => {
            // A fence destroyed since Dxgkrnl looked it up: the call fails, nothing queued
            // (24H2 returns the wait's failure before it queues the command).
            lock(&a.mm.gpuva)
                .updates
                .retain(|u| !Arc::ptr_eq(&u.ready, &key));
            Err(e)
        }
    }
}

/// The lowest and highest address a list of ranges covers.
#[derive(Clone, Copy, Debug)]
struct Span {
    lo: u64,
    hi: u64,
}

impl Default for Span {
    fn default() -> Self {
        Self {
            lo: u64::MAX,
            hi: 0,
        }
    }
}

impl Span {
    fn add(&mut self, lo: u64, hi: u64) {
        self.lo = self.lo.min(lo);
        self.hi = self.hi.max(hi);
    }

    fn is_empty(&self) -> bool {
        self.lo >= self.hi
    }
}

/// `[base, base + size)`: not wrapping, not empty, 4 KiB aligned at both ends, below `limit`.
fn range(base: u64, size: u64, limit: u64) -> Result<(u64, u64), SimError> {
    let end = base.checked_add(size).ok_or_else(bad)?;
    if end <= base || !base.is_multiple_of(PAGE) || !end.is_multiple_of(PAGE) || end > limit {
        return Err(bad());
    }
    Ok((base, end))
}

/// The start of the range `pid` reserved that holds all of `span` (`None`: none, or one Map
/// made for itself).
fn reserved(a: &AdapterShared, pid: ProcessId, span: Span) -> Option<u64> {
    let st = lock(&a.mm.gpuva);
    let start = st.vad_holding(pid, span.lo, span.hi.checked_sub(span.lo)?)?;
    let vad = st.vads.get(&pid)?.get(&start)?;
    (!vad.by_map).then_some(start)
}

/// A MAP / MAP_PROTECT's checks ([`gpu_va_update`]) and its steps; returns its VA range.
fn map_steps(
    a: &AdapterShared,
    pid: ProcessId,
    limit: u64,
    op: &UpdateGpuVaOp,
    owner: Option<KmtHandle>,
    steps: &mut Vec<UpdateStep>,
) -> Result<(u64, u64), SimError> {
    let (base, end) = range(op.base, op.size, limit)?;
    let protection = if op.operation_type == UPDATE_GPU_VA_MAP {
        GpuVaProtection::WRITE
    } else {
        let prot = op.protection.0;
        if prot & (PROTECTION_SYSTEM_USE_ONLY | PROTECTION_ZERO) != 0 || prot >= 1 << 5 {
            return Err(bad());
        }
        op.protection
    };
    // A MAP_PROTECT's DriverProtection goes to the driver unchecked; a MAP has none
    // (M:VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress @0x1400E34AC).
    let driver_protection = match op.operation_type {
        UPDATE_GPU_VA_MAP => 0,
        _ => op.driver_protection,
    };
    let device = owner.ok_or_else(bad)?;
    let bytes = allocation_bytes(a, pid, device, op.allocation).ok_or_else(bad)?;
    let asz = match op.allocation_size {
        0 => op.size,
        n => n,
    };
    if !asz.is_multiple_of(PAGE)
        || !op.allocation_offset.is_multiple_of(PAGE)
        || asz > op.size
        || !op.size.is_multiple_of(asz)
        || op
            .allocation_offset
            .checked_add(asz)
            .is_none_or(|e| e > bytes)
    {
        return Err(bad());
    }
    let no_access = protection.0 & PROTECTION_NO_ACCESS != 0;
    let pages = asz / PAGE;
    let mut va = base;
    while va < end {
        steps.push(if no_access {
            UpdateStep::Unmap { va, pages }
        } else {
            UpdateStep::Map {
                va,
                pages,
                device,
                allocation: op.allocation,
                offset: op.allocation_offset / PAGE,
                protection,
                driver_protection,
            }
        });
        va += asz;
    }
    Ok((base, end))
}

/// The size of live allocation `h` of `device`, a device of `pid`.
fn allocation_bytes(
    a: &AdapterShared,
    pid: ProcessId,
    device: KmtHandle,
    h: KmtHandle,
) -> Option<u64> {
    let os = lock(&a.ums);
    if os.devices.get(&device)?.process != pid {
        return None;
    }
    os.open_allocation(device, h).map(|al| al.alloc.len)
}

/// Marks VidMm's update worker due and wakes VidMm's worker, which runs it.
fn wake_worker(a: &AdapterShared, due: &AtomicBool) {
    due.store(true, Ordering::SeqCst);
    a.mm.wake.notify();
}

/// Whether VidMm's update worker has updates made ready since it last looked.
pub(crate) fn gpu_va_updates_due(a: &AdapterShared) -> bool {
    a.mm.updates_due.load(Ordering::SeqCst)
}

/// VidMm's worker's turn for the GPU VA updates ([`gpu_va_updates_run`]); whether
/// it applied anything. `step`: the turn is a step-mode round, which may run inside a VidMm
/// operation that steps the machine while it holds VidMm's residency lock (its paging
/// waits); VidMm's worker would wait for that operation, a round cannot, so the updates
/// stay due for a later round. A failure is the machine's (a halted or faulted machine ends
/// the worker's turn quietly).
pub(crate) fn gpu_va_worker(host: &dyn Host, a: &AdapterShared, step: bool) -> bool {
    if !gpu_va_updates_due(a) {
        return false;
    }
    if step
        && matches!(
            a.mm.residency.try_lock(),
            Err(std::sync::TryLockError::WouldBlock)
        )
    {
        return false;
    }
    match gpu_va_updates_run(host, a) {
        Ok(did) => did,
        Err(e) => {
            if a.state.fault().is_none() && !a.state.is_halted() {
                a.state.raise_sim_error(format!(
                    "VidMm's GPU VA update worker on adapter {}: {e}",
                    a.index
                ));
            }
            false
        }
    }
}

/// VidMm's update worker: applies, in order, every queued update whose wait was satisfied
/// (or that does not wait), each after the earlier updates of its context, and signals its
/// fence to `FenceValue + 1`; whether it applied anything. A caller that finds the worker
/// running leaves the work to it.
///
/// No wake-up is lost between "the worker finds nothing ready" and "a wait is satisfied": a
/// release stores the update's `ready`, then `updates_due`, then wakes VidMm's worker
/// (all SeqCst). The worker clears `updates_due` before each scan of the queue and ends its
/// turn only under the queue's lock, after a scan that found nothing ready and a second
/// clear that found `updates_due` still clear. A release whose `ready` the scan missed sets
/// `updates_due` after that scan: either the second clear sees it (the worker scans again),
/// or it lands after the turn ended and its wake-up starts a new turn (VidMm's worker
/// compares the wake generation it read before its turn, `dxgkrnl::interrupt::serve`). A
/// caller that found the worker running left `updates_due` set for that worker's second
/// clear.
pub(crate) fn gpu_va_updates_run(host: &dyn Host, a: &AdapterShared) -> Result<bool, SimError> {
    {
        let mut st = lock(&a.mm.gpuva);
        if st.updates_running || !a.mm.updates_due.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        st.updates_running = true;
    }
    let r = updates_drain(host, a);
    if r.is_err() {
        lock(&a.mm.gpuva).updates_running = false;
    }
    r
}

/// [`gpu_va_updates_run`]'s loop.
fn updates_drain(host: &dyn Host, a: &AdapterShared) -> Result<bool, SimError> {
    let mut did = false;
    loop {
        let next = {
            let mut st = lock(&a.mm.gpuva);
            match next_due(&st.updates) {
                Some(i) => st.updates.remove(i),
                None if a.mm.updates_due.swap(false, Ordering::SeqCst) => continue,
                None => {
                    st.updates_running = false;
                    return Ok(did);
                }
            }
        };
        did = true;
        if !update_apply(host, a, &next)? {
            continue;
        }
        // A fence the process destroyed meanwhile has no one to tell; a halted machine is
        // reported.
        if let Err(e) = host.signal_fence_from_cpu(&next.fence, next.signal) {
            if a.state.fault().is_some() {
                return Err(e);
            }
        }
    }
}

/// The first queued update that may run: its wait satisfied, no earlier update of its
/// context still waiting.
fn next_due(updates: &[QueuedUpdate]) -> Option<usize> {
    let mut held: Vec<KmtHandle> = Vec::new();
    for (i, u) in updates.iter().enumerate() {
        if held.contains(&u.context) {
            continue;
        }
        if u.ready.load(Ordering::SeqCst) {
            return Some(i);
        }
        held.push(u.context);
    }
    None
}

/// Updates of `device` that VidMm has not run go with it: their fence waits are withdrawn.
pub(crate) fn gpu_va_updates_drop(a: &AdapterShared, device: KmtHandle) {
    let gone: Vec<QueuedUpdate> = {
        let mut st = lock(&a.mm.gpuva);
        let (gone, keep) = std::mem::take(&mut st.updates)
            .into_iter()
            .partition(|u| u.device == device);
        st.updates = keep;
        gone
    };
    for u in gone {
        if let Some(ev) = &u.wait {
            u.fence.cancel_gpu_wait(ev);
        }
    }
}

/// Applies `u`'s steps in order through the driver. Returns false (nothing applied, nothing
/// to signal) when its device is gone or in error, or its reserved range was freed.
fn update_apply(host: &dyn Host, a: &AdapterShared, u: &QueuedUpdate) -> Result<bool, SimError> {
    if device_pid(a, u.device).is_err() {
        return Ok(false);
    }
    // Held for the whole update: where allocations are, and the ranges, cannot change
    // meanwhile (Free takes it too).
    let res = lock(&a.mm.residency);
    let alive = |start: u64| {
        lock(&a.mm.gpuva)
            .vads
            .get(&u.pid)
            .is_some_and(|v| v.contains_key(&start))
    };
    if !alive(u.start) || u.src_start.is_some_and(|s| !alive(s)) {
        return Ok(false);
    }
    for step in &u.steps {
        match *step {
            UpdateStep::Map {
                va,
                pages,
                device,
                allocation,
                offset,
                protection,
                driver_protection,
            } => {
                // An allocation destroyed since the call maps nothing.
                let Ok(target) = va_target(a, &res, device, allocation) else {
                    va_clear(host, a, u.pid, u.start, va, pages)?;
                    continue;
                };
                let r = MapGpuVa {
                    allocation,
                    offset_in_pages: offset,
                    protection,
                    driver_protection,
                    ..MapGpuVa::default()
                };
                va_map_into(host, a, u.pid, u.start, va, pages, r, Some(target), false)?;
            }
            UpdateStep::Unmap { va, pages } => va_clear(host, a, u.pid, u.start, va, pages)?,
            UpdateStep::Copy { src, pages, dst } => {
                let src_start = u.src_start.ok_or_else(bad)?;
                update_copy(host, a, &res, u, src_start, (src, pages, dst))?;
            }
        }
    }
    Ok(true)
}

/// A COPY step: what `pages` pages at `src` (in range `src_start`) map now, each piece made
/// again at its place from `dst`, after `dst`'s own mappings went.
fn update_copy(
    host: &dyn Host,
    a: &AdapterShared,
    res: &Residency,
    u: &QueuedUpdate,
    src_start: u64,
    (src, pages, dst): (u64, u64, u64),
) -> Result<(), SimError> {
    let end = src + pages * PAGE;
    let pieces: Vec<(u64, UserMap)> = {
        let st = lock(&a.mm.gpuva);
        st.vads
            .get(&u.pid)
            .and_then(|v| v.get(&src_start))
            .map(|vad| {
                vad.maps
                    .range(..end)
                    .filter(|(m_va, m)| **m_va + m.pages * PAGE > src)
                    .map(|(m_va, m)| {
                        let (c_lo, c_hi) = ((*m_va).max(src), (*m_va + m.pages * PAGE).min(end));
                        let piece = UserMap {
                            pages: (c_hi - c_lo) / PAGE,
                            offset: m.offset + (c_lo - m_va) / PAGE,
                            ..*m
                        };
                        (dst + (c_lo - src), piece)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    va_clear(host, a, u.pid, u.start, dst, pages)?;
    for (va, m) in pieces {
        let owner = lock(&a.ums)
            .allocations
            .get(&m.allocation)
            .map(|al| al.device);
        let Some(Ok(target)) = owner.map(|d| va_target(a, res, d, m.allocation)) else {
            continue;
        };
        let mut prot = GpuVaProtection::READ;
        if !m.attrs.read_only {
            prot = prot | GpuVaProtection::WRITE;
        }
        if !m.attrs.no_execute {
            prot = prot | GpuVaProtection::EXECUTE;
        }
        let r = MapGpuVa {
            allocation: m.allocation,
            offset_in_pages: m.offset,
            protection: prot,
            driver_protection: m.driver_protection,
            ..MapGpuVa::default()
        };
        va_map_into(host, a, u.pid, u.start, va, m.pages, r, Some(target), false)?;
    }
    Ok(())
}
