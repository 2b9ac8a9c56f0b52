//! CPU waits on native fences (MF-04) in event and blocking form, and CPU signals (NF-17).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::dxgkrnl::adapter::AdapterShared;
use crate::machine::{Machine, Mode};
use crate::sync::trace::ReleaseVia;

use super::dpc::no_cpu_access;
use super::event::{SimEvent, ViaScope, WaitOutcome};
use super::settle::{propagate, queue_wait, settle};
use super::state::{FenceObj, NativeFence, Waiter};
use super::storage::FenceOs;
use super::values::update_current;

impl Machine {
    /// The event form of a CPU wait (MF-04): registers a wait for CurrentValue >= `value`,
    /// lowers MonitoredValue if needed (NF-02, NF-07) and returns the event (already signalled
    /// when the value has been reached).
    pub fn wait_native_fence_event(
        &self,
        fence: &NativeFence,
        value: u64,
    ) -> Result<SimEvent, SimError> {
        if let Some(f) = self.state.fault() {
            return Err(f.into());
        }
        no_cpu_access(fence, "wait")?;
        let ev = SimEvent::default();
        {
            let st = lock(&fence.obj.st);
            if st.destroyed || !st.instances.contains_key(&fence.local) {
                return Err(SimError::Simulation(
                    "the fence instance is not open".into(),
                ));
            }
        }
        let waiter = Waiter {
            value,
            event: ev.clone(),
            resume: None,
            raised_over: false,
        };
        {
            let _via = ViaScope::enter(ReleaseVia::Immediate);
            queue_wait(&fence.obj, waiter)?;
        }
        Ok(ev)
    }

    /// Waits for `ev` to settle: threaded mode blocks on it, step mode drives the machine
    /// (device steps, interrupts, DPCs) until a round makes no progress and no kernel timer is due within `timeout`. Returns the outcome,
    /// or `None` when `timeout` passed or (step mode) nothing but the caller could still
    /// satisfy the wait; the caller then withdraws its wait.
    pub(crate) fn drive_wait(
        &self,
        ev: &SimEvent,
        timeout: Duration,
    ) -> Result<Option<WaitOutcome>, SimError> {
        let deadline = Instant::now() + timeout;
        // Step mode: the simulated time the wait may skip to reach armed timers.
        let mut budget_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        loop {
            if let Some(o) = ev.outcome() {
                return Ok(Some(o));
            }
            if let Some(f) = self.state.fault() {
                return Err(f.into());
            }
            let expired = Instant::now() >= deadline;
            let idle = match self.config().mode {
                Mode::Step => !self.round_for_wait_within(&mut budget_ms),
                Mode::Threaded => {
                    let _ = ev.wait(Duration::from_millis(5));
                    false
                }
            };
            if let Some(o) = ev.outcome() {
                return Ok(Some(o));
            }
            if expired || idle {
                return Ok(None);
            }
        }
    }

    /// The blocking form of a CPU wait (MF-04). Threaded mode: blocks up to `timeout`. Step
    /// mode: drives the machine (device steps, interrupts, DPCs) until the wait is satisfied
    /// or a round makes no progress (nothing but the caller could signal the fence then:
    /// [`WaitOutcome::TimedOut`]), `timeout` bounding the real time spent. A timed-out wait is
    /// withdrawn (MonitoredValue rises again).
    pub fn wait_native_fence(
        &self,
        fence: &NativeFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitOutcome, SimError> {
        let ev = self.wait_native_fence_event(fence, value)?;
        // A wait that is not satisfied yet on an adapter that is gone could never end: it ends
        // as removed at once ([`abandon_cpu_waits`]).
        if ev.outcome().is_none() && self.fence_adapter(fence.adapter())?.device.is_lost() {
            lock(&fence.obj.st).waiters.retain(|w| !w.event.same(&ev));
            return Ok(WaitOutcome::Abandoned);
        }
        if let Some(o) = self.drive_wait(&ev, timeout)? {
            return Ok(o);
        }
        // Withdraw the wait.
        lock(&fence.obj.st).waiters.retain(|w| !w.event.same(&ev));
        ev.set(WaitOutcome::TimedOut);
        settle(&fence.obj)?;
        Ok(ev.outcome().unwrap_or(WaitOutcome::TimedOut))
    }

    /// CPU signal (NF-17): `DxgkDdiUpdateCurrentValuesFromCpu(fence, value)` at DISPATCH_LEVEL
    /// (the driver writes the value and unblocks GPU waiters), then satisfied CPU waits are
    /// released; the other adapters of a cross-adapter fence are notified
    /// (`NotificationOnly`, NF-16).
    pub fn signal_native_fence_from_cpu(
        &self,
        fence: &NativeFence,
        value: u64,
    ) -> Result<(), SimError> {
        no_cpu_access(fence, "signal")?;
        let a = self.fence_adapter(fence.adapter())?;
        {
            let _s = lock(&fence.obj.settle_lock);
            let mut st = lock(&fence.obj.st);
            if st.destroyed || !st.instances.contains_key(&fence.local) {
                return Err(SimError::Simulation(
                    "the fence instance is not open".into(),
                ));
            }
            // What 24H2's new-wait rule compares against (`M:VidSchSubmitWaitFromCpu`).
            st.last_cpu_signal = value;
            drop(st);
            update_current(&a, &[(fence.obj.global, value, fence.obj.cv.kva())], false)?;
        }
        {
            let _via = ViaScope::enter(ReleaseVia::CpuSignal);
            settle(&fence.obj)?;
        }
        propagate(&fence.obj)
    }
}

/// The adapter is gone (surprise removal): every pending CPU wait on its native fences ends
/// [`WaitOutcome::Abandoned`] (the thunk's `STATUS_DEVICE_REMOVED`), as a destroy would end it.
/// UNVERIFIED for `D3DKMTWaitForSynchronizationObjectFromCpu`, whose page lists no such
/// status; the page of `D3DKMTWaitForSynchronizationObject` gives `STATUS_DEVICE_REMOVED` for
/// a stopped adapter.
pub(crate) fn abandon_cpu_waits(fence_os: &Mutex<FenceOs>) {
    let objs: Vec<Arc<FenceObj>> = lock(fence_os).objs.values().cloned().collect();
    for obj in objs {
        let waiters = std::mem::take(&mut lock(&obj.st).waiters);
        for w in waiters {
            w.event.set(WaitOutcome::Abandoned);
        }
    }
}

/// Device error (24H2 `M:VidSchiMarkDeviceAsError` @0x14001FF30 →
/// `VidSchiSignalRegisteredSyncObjects` → `SetToAlwaysSignaled`): every native fence a device of
/// `process` has open on `a` is signalled to `u64::MAX` through
/// `DxgkDdiUpdateCurrentValuesFromCpu` (flags 0; the OS stores nothing itself), so its waiters,
/// CPU and GPU, are released. Errors are returned after trying them all.
pub(crate) fn signal_process_fences_to_max(
    a: &AdapterShared,
    process: ProcessId,
) -> Result<(), SimError> {
    // A fence's state is locked before the adapter's fence table, never under it (a settle
    // holds the state and reads the table's trace sink): the table is copied first.
    let objs: Vec<Arc<FenceObj>> = lock(&a.fence_os).objs.values().cloned().collect();
    let objs = objs
        .into_iter()
        .filter(|o| lock(&o.st).instances.values().any(|p| *p == process));
    let mut result = Ok(());
    for obj in objs {
        let r = (|| {
            {
                let _s = lock(&obj.settle_lock);
                if lock(&obj.st).destroyed {
                    return Ok(());
                }
                update_current(a, &[(obj.global, u64::MAX, obj.cv.kva())], false)?;
            }
            {
                let _via = ViaScope::enter(ReleaseVia::CpuSignal);
                settle(&obj)?;
            }
            propagate(&obj)
        })();
        if r.is_err() {
            result = r;
        }
    }
    result
}
