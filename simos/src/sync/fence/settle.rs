//! Releasing satisfied waits and re-arming MonitoredValue (NF-02, NF-07), also after a log
//! drain, and propagating a cross-adapter fence's value to the other adapters (NF-16).

use std::ffi::c_void;
use std::sync::Arc;

use super::event::VIA;
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::state::sync::trace::ReleaseVia;

use super::event::ViaScope;
use super::values::{notify_unnamed, update_current, update_monitored, CpuUpdate};
use crate::os::answers::ValueUpdates;
use crate::state::sync::fence::{FenceObj, ObjState, Resume, WaitOutcome, Waiter};
use crate::state::sync::storage::FenceOs;

impl FenceObj {
    /// The adapter the object is on, while it lives (the state keeps it untyped).
    pub(super) fn adapter(&self) -> Option<Arc<AdapterShared>> {
        self.adapter.upgrade()?.downcast::<AdapterShared>().ok()
    }
}

/// Releases satisfied waits and brings MonitoredValue to what the pending waits need,
/// calling `DxgkDdiUpdateMonitoredValues` whenever it changes and resampling CurrentValue
/// after each call (NF-02, NF-04, NF-07).
pub(super) fn settle(obj: &FenceObj) -> Result<(), SimError> {
    let Some(a) = obj.adapter() else {
        return Ok(());
    };
    let _s = lock(&obj.settle_lock);
    settle_locked(obj, &a)
}

/// [`settle`] with the fence's settle lock held.
fn settle_locked(obj: &FenceObj, a: &AdapterShared) -> Result<(), SimError> {
    loop {
        match resample(obj) {
            None => return Ok(()),
            Some(v) => update_monitored(a, &[(obj.global, v, obj.mv.kva())])?,
        }
    }
}

/// Queues a new CPU wait on `obj` and sets MonitoredValue as the reading does for a new wait
/// ([`crate::os::answers::MonitoredValue::on_new_wait`]; 24H2: `M:VidSchSubmitWaitFromCpu`
/// @0x14000DF30 decides before it links the waiter), then releases what is satisfied
/// (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8, [`settle`]).
pub(super) fn queue_wait(obj: &FenceObj, waiter: Waiter) -> Result<(), SimError> {
    let Some(a) = obj.adapter() else {
        return Err(SimError::Gone("the fence's adapter"));
    };
    let _s = lock(&obj.settle_lock);
    let update = {
        let mut st = lock(&obj.st);
        if st.destroyed {
            return Err(SimError::Gone("the fence"));
        }
        let w = waiter.value;
        st.waiters.push(waiter);
        let lowest = st.waiters.iter().map(|x| x.value).min().unwrap_or(w);
        let cv = obj.cv.load();
        let m = if st.hold_zero {
            0
        } else {
            obj.mv_rule
                .on_new_wait(st.mv_os, w, cv, st.last_cpu_signal, lowest)
        };
        if m == st.mv_os {
            None
        } else {
            if st.mv_os != u64::MAX && m > st.mv_os {
                raise_over(obj, &mut st, m, cv);
            }
            st.mv_os = m;
            note_scan(obj, &mut st);
            Some(m)
        }
    };
    if let Some(m) = update {
        update_monitored(&a, &[(obj.global, m, obj.mv.kva())])?;
    }
    settle_locked(obj, &a)
}

/// The D3DKMT handle and process a trace event names `obj` by: its first handle, else no
/// handle and the process that created it.
fn trace_names(obj: &FenceObj, st: &ObjState) -> (u32, ProcessId) {
    st.kmt_handles.first().copied().unwrap_or((0, obj.creator))
}

/// MonitoredValue goes from `st.mv_os` up to `to` with CurrentValue at `cv`: marks the pending
/// waits it passes over (not reached, below `to`), counts them and traces the raise.
fn raise_over(obj: &FenceObj, st: &mut ObjState, to: u64, cv: u64) {
    let mut below = 0u64;
    for w in st.waiters.iter_mut() {
        if !w.raised_over && w.value > cv && w.value < to {
            w.raised_over = true;
            below += 1;
        }
    }
    if below == 0 {
        return;
    }
    let Some(a) = obj.adapter() else {
        return;
    };
    let mut os = lock(&a.fence_os);
    os.late_wakes.raises += 1;
    os.late_wakes.raised_over += below;
    let Some(sink) = os.trace.0.clone() else {
        return;
    };
    drop(os);
    let (fence_kmt, process) = trace_names(obj, st);
    sink.event(
        &crate::state::sync::trace::TraceEvent::MonitoredValueRaised {
            adapter: obj.adapter_index,
            fence_kmt,
            process,
            from: st.mv_os,
            to,
            waits_below: u32::try_from(below).unwrap_or(u32::MAX),
            qpc: crate::base::clock::qpc(),
        },
    );
}

/// Counts and traces the late wakes among `done`, released with CurrentValue at `cv`.
fn note_late(obj: &FenceObj, st: &ObjState, done: &[Waiter], cv: u64) {
    let late: Vec<&Waiter> = done
        .iter()
        .filter(|w| w.raised_over && cv > w.value)
        .collect();
    if late.is_empty() {
        return;
    }
    let Some(a) = obj.adapter() else {
        return;
    };
    let mut os = lock(&a.fence_os);
    for w in &late {
        let by = cv - w.value;
        os.late_wakes.late += 1;
        os.late_wakes.late_values = os.late_wakes.late_values.saturating_add(by);
        os.late_wakes.late_max = os.late_wakes.late_max.max(by);
    }
    let Some(sink) = os.trace.0.clone() else {
        return;
    };
    drop(os);
    let (fence_kmt, process) = trace_names(obj, st);
    let now = crate::base::clock::qpc();
    for w in late {
        sink.event(&crate::state::sync::trace::TraceEvent::LateWake {
            adapter: obj.adapter_index,
            fence_kmt,
            process,
            value: w.value,
            reached: cv,
            qpc: now,
        });
    }
}

/// Takes the waits `value` satisfies out of `waiters` and signals their events; the one CPU
/// wait rule for native and monitored fences alike (MF-04: satisfied at `>=`).
pub(super) fn release_satisfied(waiters: &mut Vec<Waiter>, value: u64) -> Vec<Waiter> {
    let (done, pending): (Vec<Waiter>, Vec<Waiter>) = std::mem::take(waiters)
        .into_iter()
        .partition(|w| rvgpu_hw::fence::wait_satisfied(value, w.value));
    *waiters = pending;
    let via = VIA.with(|c| c.get());
    for w in &done {
        *lock(&w.event.0.via) = Some(via);
        w.event.set(WaitOutcome::Satisfied);
    }
    done
}

/// One resample of `obj` (its settle lock held): releases satisfied waits and returns the new
/// MonitoredValue the OS must give the driver, if it changed (recorded as given).
pub(super) fn resample(obj: &FenceObj) -> Option<u64> {
    let mut st = lock(&obj.st);
    if st.destroyed {
        return None;
    }
    let cv = obj.cv.load();
    let mut done = release_satisfied(&mut st.waiters, cv);
    if !done.is_empty() {
        trace_released(obj, &st, &done);
        note_late(obj, &st, &done, cv);
    }
    let resumes = take_resumes(&mut done);
    let lowest = st.waiters.iter().map(|w| w.value).min();
    // NF-02/NF-04 (the pages): the lowest pending wait − 1. 24H2
    // (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8): unchanged while waits remain,
    // u64::MAX once none does.
    let desired = if st.hold_zero {
        0
    } else {
        obj.mv_rule.after_release(st.mv_os, lowest)
    };
    let r = if desired == st.mv_os {
        None
    } else {
        st.mv_os = desired;
        Some(desired)
    };
    note_scan(obj, &mut st);
    drop(st);
    run_resumes(resumes);
    r
}

/// The resumes of released GPU waits (a hardware queue's, MF-03), to run once the fence's
/// state is unlocked: each only kicks its queue.
fn take_resumes(done: &mut [Waiter]) -> Vec<Resume> {
    done.iter_mut().filter_map(|w| w.resume.take()).collect()
}

fn run_resumes(resumes: Vec<Resume>) {
    for r in resumes {
        (r.0)();
    }
}

/// Whether a NULL native-fence report must resample the fence in state `st`: it has
/// CPU waits (or GPU waits the OS resumes, MF-03), its MonitoredValue is armed below
/// `u64::MAX`, or its value goes to other adapters (NF-16, NF-18). Every other fence has
/// nothing a resample could release or propagate.
pub(super) fn needs_scan(st: &ObjState) -> bool {
    !st.destroyed
        && (!st.waiters.is_empty()
            || st.mv_os != u64::MAX
            || st.hold_zero
            || !st.peers.is_empty()
            || !st.legacy_peers.is_empty())
}

/// Brings `obj`'s membership of its adapter's scan set in line with `st` (its locked state).
/// Called wherever MonitoredValue is decided (before the OS lowers it in the driver, so any
/// interrupt it causes finds the fence in the set) and where peers are linked. Takes the
/// adapter's fence lock inside the fence's state lock, the order `trace_released` uses.
pub(super) fn note_scan(obj: &FenceObj, st: &mut ObjState) {
    let want = needs_scan(st);
    if want == st.scanned {
        return;
    }
    let Some(a) = obj.adapter() else {
        return;
    };
    let mut os = lock(&a.fence_os);
    // Only a live fence joins (destroy removes it from `objs` and the set together).
    if want && !os.objs.contains_key(&obj.global) {
        return;
    }
    st.scanned = want;
    if want {
        os.scan.insert(obj.global);
    } else {
        os.scan.remove(&obj.global);
    }
}

/// [`note_scan`] with the fence's state locked here.
pub(super) fn refresh_scan(obj: &FenceObj) {
    let mut st = lock(&obj.st);
    note_scan(obj, &mut st);
}

/// The fences a NULL report resamples: the adapter's scan set.
pub(super) fn scan_set(os: &FenceOs) -> Vec<Arc<FenceObj>> {
    os.scan
        .iter()
        .filter_map(|h| os.objs.get(h).cloned())
        .collect()
}

/// Reports released waits to the adapter's trace sink.
pub(super) fn trace_released(obj: &FenceObj, st: &ObjState, done: &[Waiter]) {
    let Some(a) = obj.adapter() else {
        return;
    };
    let Some(sink) = lock(&a.fence_os).trace.0.clone() else {
        return;
    };
    let (fence_kmt, process) = trace_names(obj, st);
    let via = VIA.with(|c| c.get());
    let now = crate::base::clock::qpc();
    for w in done {
        sink.event(&crate::state::sync::trace::TraceEvent::WaitReleased {
            adapter: obj.adapter_index,
            fence_kmt,
            process,
            value: w.value,
            via,
            qpc: now,
        });
    }
}

/// A SIGNAL_EXECUTED log entry proves the fence reached `value` (fence values only
/// grow): releases the waits with target `<= value`, attributed to the entry.
pub(super) fn release_from_log(obj: &FenceObj, value: u64, via: ReleaseVia) {
    let _v = ViaScope::enter(via);
    let mut st = lock(&obj.st);
    if st.destroyed {
        return;
    }
    let mut done = release_satisfied(&mut st.waiters, value);
    if !done.is_empty() {
        trace_released(obj, &st, &done);
        note_late(obj, &st, &done, value);
    }
    let resumes = take_resumes(&mut done);
    drop(st);
    run_resumes(resumes);
}

/// [`settle`] for several fences of adapter `a` at once, as VidSch does at DPC time: one
/// `DxgkDdiUpdateMonitoredValues` call names every fence whose MonitoredValue changes, then
/// all are resampled again. Settle locks are taken in handle order (everyone else holds at
/// most one), so this cannot deadlock. A fence named twice (two drains of one log recreation
/// can both name it) is settled once: locking its settle lock twice would block this thread
/// on itself, and every later settle of that fence with it.
pub(super) fn settle_batch(
    a: &AdapterShared,
    objs: &mut Vec<Arc<FenceObj>>,
) -> Result<(), SimError> {
    objs.sort_by_key(|o| (o.global, Arc::as_ptr(o) as usize));
    objs.dedup_by(|x, y| Arc::ptr_eq(x, y));
    let _guards: Vec<_> = objs.iter().map(|o| lock(&o.settle_lock)).collect();
    // One buffer for every round (the DPC allocated afresh per round).
    let mut updates: Vec<(usize, u64, *mut c_void)> = Vec::new();
    loop {
        updates.clear();
        updates.extend(
            objs.iter()
                .filter_map(|o| resample(o).map(|v| (o.global, v, o.mv.kva()))),
        );
        if updates.is_empty() {
            return Ok(());
        }
        for chunk in updates.chunks(MAX_FENCES_PER_UPDATE) {
            update_monitored(a, chunk)?;
        }
    }
}

/// Most fences the OS names in one `DxgkDdiUpdateMonitoredValues` call.
pub const MAX_FENCES_PER_UPDATE: usize = 256;

/// Tells the other adapters of a cross-adapter fence that its CurrentValue changed
/// (`NotificationOnly`, NF-16), then settles their waits.
pub(super) fn propagate(obj: &FenceObj) -> Result<(), SimError> {
    let Some((peers, cv)) = peers_to_tell(obj) else {
        return Ok(());
    };
    notify_natives(&peers, cv)
}

/// The native peers of `obj` to tell of its new CurrentValue and that value, once per value;
/// its legacy peers (adapters without native fences) observe the value and scan their
/// monitored-fence waits here (NF-18 scenario 2a).
fn peers_to_tell(obj: &FenceObj) -> Option<(Vec<Arc<FenceObj>>, u64)> {
    let (peers, legacy, cv) = {
        let mut st = lock(&obj.st);
        let cv = obj.cv.load();
        let alone = st.peers.is_empty() && st.legacy_peers.is_empty();
        if alone || st.destroyed || cv == st.last_propagated {
            return None;
        }
        st.last_propagated = cv;
        (st.peers.clone(), st.legacy_peers.clone(), cv)
    };
    for l in legacy {
        l.release();
    }
    Some((peers, cv))
}

/// `NotificationOnly` to each native instance in `peers`, then settles its waits (NF-16).
/// 24H2 names the fence and passes 0 for its value
/// (`M:VidSchiProcessCrossAdapterSignaledSyncObjects` @0x14001FBBC): the driver may not store
/// it.
pub(super) fn notify_natives(peers: &[Arc<FenceObj>], cv: u64) -> Result<(), SimError> {
    for p in peers {
        let Some(b) = p.adapter() else {
            continue;
        };
        {
            let _s = lock(&p.settle_lock);
            let mut st = lock(&p.st);
            if st.destroyed {
                continue;
            }
            st.last_propagated = cv;
            drop(st);
            update_current(
                &b,
                &[(p.global, 0, p.cv.kva())],
                CpuUpdate::NotificationOnly,
            )?;
        }
        settle(p)?;
    }
    Ok(())
}

/// [`propagate`] for a fence whose device was put in error (signalled to `u64::MAX`, 24H2
/// `_VIDSCH_SYNC_OBJECT::SetToAlwaysSignaled` @0x14003B954 marks the shared object always
/// signalled and posts it to the other adapters). Each native peer, in
/// `M:VidSchiProcessCrossAdapterSignaledSyncObjects` @0x14001FBBC, is itself set always
/// signalled (flags 0, `u64::MAX`, once) and then told so: `AlwaysSignaled` with 0xFFFFFFFF,
/// the value the flag's page gives.
pub(super) fn propagate_always_signaled(obj: &FenceObj) -> Result<(), SimError> {
    let Some((peers, _)) = peers_to_tell(obj) else {
        return Ok(());
    };
    for p in &peers {
        let Some(b) = p.adapter() else {
            continue;
        };
        {
            let _s = lock(&p.settle_lock);
            let mut st = lock(&p.st);
            if st.destroyed {
                continue;
            }
            st.last_propagated = u64::MAX;
            drop(st);
            let kva = p.cv.kva();
            update_current(&b, &[(p.global, u64::MAX, kva)], CpuUpdate::Store)?;
            update_current(
                &b,
                &[(p.global, 0xFFFF_FFFF, kva)],
                CpuUpdate::AlwaysSignaled,
            )?;
        }
        settle(p)?;
    }
    Ok(())
}

/// After a report that named no fence (a scan of every fence of adapter `a`): 24H2 does not
/// tell the other adapters which cross-adapter fences changed
/// (`M:VidSchiPropagateCrossAdapterSignal` @0x14003BB2C with no object sets each peer
/// adapter's scan-all flag), and each peer adapter with native fences gets one
/// `DxgkDdiUpdateCurrentValuesFromCpu` naming none ([`notify_unnamed`]), then scans its waits.
/// The pages notify each changed fence ([`propagate`]).
fn propagate_unnamed(a: &AdapterShared, objs: &[Arc<FenceObj>]) -> Result<(), SimError> {
    if a.os.windows.reading().value_updates == ValueUpdates::BatchedWithCpuVa {
        return objs.iter().try_for_each(|o| propagate(o));
    }
    let mut peers: Vec<Arc<FenceObj>> = Vec::new();
    for o in objs {
        if let Some((ps, cv)) = peers_to_tell(o) {
            for p in ps {
                lock(&p.st).last_propagated = cv;
                peers.push(p);
            }
        }
    }
    let mut adapters: Vec<Arc<AdapterShared>> = Vec::new();
    for p in &peers {
        if let Some(b) = p.adapter() {
            if !adapters.iter().any(|x| Arc::ptr_eq(x, &b)) {
                adapters.push(b);
            }
        }
    }
    for b in &adapters {
        notify_unnamed(b)?;
    }
    peers.iter().try_for_each(|p| settle(p))
}

/// Settles `objs` after a log drain (re-arm MonitoredValue, resample), attributing the releases
/// of the resample to `Scan` when `scan` (every fence of the adapter's scan set is then
/// settled).
pub(crate) fn settle_after_drain(
    a: &AdapterShared,
    objs: Vec<Arc<FenceObj>>,
    scan: bool,
) -> Result<(), SimError> {
    let all = if scan {
        scan_set(&lock(&a.fence_os))
    } else {
        Vec::new()
    };
    settle_merged(a, objs, all, scan)
}

/// Settles `objs` and those of `more` not among them, then propagates them; the releases count
/// as a `Scan`'s when `scan`, else as a `Resample`'s.
pub(super) fn settle_merged(
    a: &AdapterShared,
    mut objs: Vec<Arc<FenceObj>>,
    more: Vec<Arc<FenceObj>>,
    scan: bool,
) -> Result<(), SimError> {
    for o in more {
        if !objs.iter().any(|x| Arc::ptr_eq(x, &o)) {
            objs.push(o);
        }
    }
    let _via = ViaScope::enter(if scan {
        ReleaseVia::Scan
    } else {
        ReleaseVia::Resample
    });
    settle_batch(a, &mut objs)?;
    if scan {
        return propagate_unnamed(a, &objs);
    }
    objs.iter().try_for_each(|o| propagate(o))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::sync::fence::NativeFenceDesc;
    use crate::{MachineConfig, Mode};

    /// A fence named twice in one batch (two drains of one log recreation can both name it) is
    /// settled once. Locking its settle lock twice blocked the settling thread on itself, and
    /// the DPC with it: `fence_logs` hung in CI once.
    #[test]
    fn settle_batch_with_a_fence_named_twice_returns() {
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        let p = m.create_process(0).expect("process");
        let f = m
            .create_native_fence(0, p.pid, NativeFenceDesc::default())
            .expect("fence");
        let a = Arc::clone(m.adapter_shared(0).expect("adapter"));
        let obj = Arc::clone(&f.obj);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut objs = vec![Arc::clone(&obj), obj];
            let _ = tx.send(settle_batch(&a, &mut objs));
        });
        let Ok(r) = rx.recv_timeout(std::time::Duration::from_secs(20)) else {
            // Tearing the machine down would wait on the stuck fence too.
            std::mem::forget((f, p, m));
            panic!("settle_batch did not return: a duplicate fence deadlocked it");
        };
        r.expect("settled");
    }
}
