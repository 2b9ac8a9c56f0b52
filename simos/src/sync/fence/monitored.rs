//! Legacy monitored fences (MF-01 … MF-04, WDDM 2.0), for an adapter without native fences and
//! across adapters with one.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use rvgpu_ddi::fence::D3DDDI_NATIVEFENCE_TYPE_DEFAULT;
use rvgpu_ddi::ntstatus::STATUS_NO_MEMORY;

use crate::adapter::state::MachineState;
use crate::adapter::{AdapterShared, Life};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;

use super::native::create_on;
use super::pages::VidMmPages;
use super::reclaim::retire_empty_pages;
use super::settle::{notify_natives, refresh_scan, release_satisfied, settle};
use crate::state::sync::fence::{
    next_handle, FenceObj, LegacyObj, LegacyState, MonitoredFence, NativeFence, NativeFenceDesc,
    Resume, SimEvent, WaitOutcome, Waiter, KIND_LEGACY,
};

impl LegacyObj {
    /// Reads the value and releases the satisfied waits (MF-04); resumes the software
    /// contexts whose GPU-side waits are satisfied.
    pub(super) fn release(&self) {
        let mut resumes = Vec::new();
        {
            let mut st = lock(&self.st);
            for w in release_satisfied(&mut st.waiters, self.slot.load()) {
                resumes.extend(w.resume);
            }
        }
        for r in resumes {
            (r.0)();
        }
    }

    /// The OS changed the value: release waits here and tell the native instances.
    pub(super) fn signalled(&self) -> Result<(), SimError> {
        self.release();
        let peers = lock(&self.st).native_peers.clone();
        notify_natives(&peers, self.slot.load())
    }
}

// MF-03, OS-scheduled hardware-queue packets (`crate::ums`): VidSch's PASSIVE worker signals
// and un-waits without the machine.
impl MonitoredFence {
    /// The OS writes `value` (never backwards) and releases satisfied waits: what
    /// [`signal_from_cpu`] does, for a software signal packet.
    pub(crate) fn os_signal(&self, value: u64) -> Result<(), SimError> {
        {
            let mut st = lock(&self.obj.st);
            if st.destroyed {
                return Err(SimError::Gone("the monitored fence"));
            }
            st.last_signalled = st.last_signalled.max(value);
        }
        if let Some(w) = self.obj.slot.alloc.word(self.obj.slot.off) {
            w.fetch_max(value, Ordering::SeqCst);
        }
        self.obj.signalled()
    }

    /// Drops a GPU-side wait ([`wait_from_gpu`]) that is still pending:
    /// its resume never runs and its event ends [`WaitOutcome::Abandoned`].
    pub(crate) fn cancel_gpu_wait(&self, ev: &SimEvent) {
        let removed = {
            let mut st = lock(&self.obj.st);
            let before = st.waiters.len();
            st.waiters.retain(|w| !w.event.same(ev));
            st.waiters.len() != before
        };
        if removed {
            ev.set(WaitOutcome::Abandoned);
        }
    }
}

/// Creates a legacy monitored fence on `a` (MF-01) with `flags`
/// (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`): with or without native fences on the adapter. The
/// value lives in system memory, packed per process.
pub(crate) fn create(
    a: &Arc<AdapterShared>,
    process: ProcessId,
    initial: u64,
    flags: u32,
    vm: &dyn VidMmPages,
) -> Result<MonitoredFence, SimError> {
    let i = a.index;
    if *lock(&a.life) != Life::Started {
        return Err(SimError::NotStarted(i));
    }
    let mut os = lock(&a.fence_os);
    let slot = os
        .alloc_slot(a.device.memory(), process, KIND_LEGACY, false)
        .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
    slot.store(initial);
    let obj = Arc::new(LegacyObj {
        adapter_index: i,
        handle: next_handle(),
        flags,
        slot,
        st: Mutex::new(LegacyState {
            last_signalled: initial,
            ..LegacyState::default()
        }),
    });
    os.legacy.insert(obj.handle, obj.clone());
    drop(os);
    // GpuMmu: the value's page is mapped into the creator's address space at its
    // system VA, read/write for the GPU (MF-01); a process's commands reach only what
    // its address space maps.
    // No allocation behind it: the leaves carry no handle.
    if let Err(e) = vm.map_os_page(a, process, obj.slot.gpu()) {
        lock(&a.fence_os).legacy.remove(&obj.handle);
        return Err(e);
    }
    Ok(MonitoredFence { obj })
}

/// Destroys legacy monitored fence `f` of `a`; pending waits end [`WaitOutcome::Abandoned`].
pub(crate) fn destroy(a: &AdapterShared, f: &MonitoredFence) -> Result<(), SimError> {
    if lock(&a.fence_os).legacy.remove(&f.obj.handle).is_none() {
        return Err(SimError::Gone("the monitored fence"));
    }
    let (waiters, natives) = {
        let mut st = lock(&f.obj.st);
        st.destroyed = true;
        (
            std::mem::take(&mut st.waiters),
            std::mem::take(&mut st.native_peers),
        )
    };
    for n in natives {
        lock(&n.st).legacy_peers.retain(|l| !Arc::ptr_eq(l, &f.obj));
    }
    for w in waiters {
        w.event.set(WaitOutcome::Abandoned);
    }
    // Its value's page goes back once empty and unmapped (the creator's exit).
    lock(&a.fence_os).release_slot(&f.obj.slot);
    retire_empty_pages(a);
    Ok(())
}

/// `SignalSynchronizationObjectFromCpu` (MF-01): the OS writes the value (the process never
/// writes it) and releases satisfied waits. Values never go backwards. `state` is the
/// machine's: a halted machine refuses it.
pub(crate) fn signal_from_cpu(
    state: &MachineState,
    f: &MonitoredFence,
    value: u64,
) -> Result<(), SimError> {
    if let Some(e) = state.fault() {
        return Err(e.into());
    }
    f.os_signal(value)
}

/// `WaitForSynchronizationObjectFromGpu` (MF-03): VidSch holds the waiting context until
/// the value is reached, then resumes it (`resume`). Runs `resume` at once if the value is
/// already reached.
pub(crate) fn wait_from_gpu(
    state: &MachineState,
    f: &MonitoredFence,
    value: u64,
    resume: impl FnOnce() + Send + 'static,
) -> Result<SimEvent, SimError> {
    add_waiter(state, f, value, Some(Resume(Box::new(resume))))
}

/// What [`open_as_monitored`] requires before it looks at the other adapter: `fence` is a
/// shareable `D3DDDI_NATIVEFENCE_TYPE_DEFAULT` fence.
pub(crate) fn check_as_monitored(fence: &NativeFence) -> Result<(), SimError> {
    if !fence.obj.shareable || fence.obj.fence_type != D3DDDI_NATIVEFENCE_TYPE_DEFAULT {
        return Err(SimError::NotAllowed {
            rule: "NF-16",
            why: "only shareable TYPE_DEFAULT fences cross adapters".into(),
        });
    }
    Ok(())
}

/// Opens a shareable TYPE_DEFAULT native fence for `process` on adapter `b` without native
/// fences ([`check_as_monitored`] passed): it is a regular monitored fence there (NF-18),
/// sharing the CurrentValue storage; the native instances hold MonitoredValue at 0 so every
/// signal reaches the OS, which propagates it.
pub(crate) fn open_as_monitored(
    fence: &NativeFence,
    b: &Arc<AdapterShared>,
    process: ProcessId,
    vm: &dyn VidMmPages,
) -> Result<MonitoredFence, SimError> {
    let adapter = b.index;
    if *lock(&b.life) != Life::Started {
        return Err(SimError::NotStarted(adapter));
    }
    if adapter == fence.adapter() || lock(&b.fence_os).caps.is_some() {
        return Err(SimError::Simulation(format!(
            "adapter {adapter} has native fences: open the fence as a native fence there"
        )));
    }
    let slot = fence
        .obj
        .cv
        .system("a fence opened on another adapter")?
        .clone();
    // Used on the other adapter too: the page stays while this one runs.
    if let Some(a) = fence.obj.adapter() {
        lock(&a.fence_os).pin(&slot);
    }
    let natives: Vec<Arc<FenceObj>> = {
        let st = lock(&fence.obj.st);
        let mut v = st.peers.clone();
        v.push(fence.obj.clone());
        v
    };
    let obj = Arc::new(LegacyObj {
        adapter_index: adapter,
        handle: next_handle(),
        flags: 0,
        slot,
        st: Mutex::new(LegacyState {
            native_peers: natives.clone(),
            ..LegacyState::default()
        }),
    });
    lock(&b.fence_os).legacy.insert(obj.handle, obj.clone());
    let cv = fence.obj.cv.load();
    for n in &natives {
        let mut st = lock(&n.st);
        st.legacy_peers.push(obj.clone());
        st.hold_zero = true;
        st.last_propagated = cv;
    }
    for n in &natives {
        settle(n)?;
    }
    // Mapped into the opening process there, as a monitored fence it created would be.
    vm.map_os_page(b, process, obj.slot.gpu())?;
    Ok(MonitoredFence { obj })
}

/// Opens legacy monitored fence `f` (of adapter `home`, when it is still there) as a native
/// fence on adapter `b`, which has native fences (NF-18, the reverse direction): the OS
/// creates the native fence there over the same value storage, with MonitoredValue held at 0.
pub(crate) fn open_as_native(
    f: &MonitoredFence,
    b: &Arc<AdapterShared>,
    home: Option<&AdapterShared>,
    process: ProcessId,
    vm: &dyn VidMmPages,
) -> Result<NativeFence, SimError> {
    if let Some(a) = home {
        lock(&a.fence_os).pin(&f.obj.slot);
    }
    let n = create_on(
        b,
        process,
        None,
        NativeFenceDesc::CROSS_ADAPTER_PEER,
        Some(f.obj.slot.clone()),
        vm,
    )?;
    {
        let mut st = lock(&n.obj.st);
        st.legacy_peers.push(f.obj.clone());
        st.last_propagated = f.value();
    }
    lock(&f.obj.st).native_peers.push(n.obj.clone());
    // Its value goes to the legacy fence on every scan (NF-18).
    refresh_scan(&n.obj);
    Ok(n)
}

/// Event form of a CPU wait on a legacy monitored fence (MF-04): released by the DPC-time
/// scan after a `DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED`, or at once if reached.
pub(crate) fn wait_event(
    state: &MachineState,
    f: &MonitoredFence,
    value: u64,
) -> Result<SimEvent, SimError> {
    add_waiter(state, f, value, None)
}

/// Queues a waiter for `value` on `f` (resumed with `resume`, if any, when it is reached)
/// and releases the waiters already satisfied: its event.
fn add_waiter(
    state: &MachineState,
    f: &MonitoredFence,
    value: u64,
    resume: Option<Resume>,
) -> Result<SimEvent, SimError> {
    if let Some(e) = state.fault() {
        return Err(e.into());
    }
    let ev = SimEvent::default();
    {
        let mut st = lock(&f.obj.st);
        if st.destroyed {
            return Err(SimError::Gone("the monitored fence"));
        }
        st.waiters.push(Waiter {
            value,
            event: ev.clone(),
            resume,
            raised_over: false,
        });
    }
    f.obj.release();
    Ok(ev)
}

/// A wait `ev` on `f` that timed out is withdrawn; its outcome, [`WaitOutcome::TimedOut`]
/// unless it was released meanwhile.
pub(crate) fn withdraw_wait(f: &MonitoredFence, ev: &SimEvent) -> WaitOutcome {
    lock(&f.obj.st).waiters.retain(|w| !w.event.same(ev));
    ev.set(WaitOutcome::TimedOut);
    ev.outcome().unwrap_or(WaitOutcome::TimedOut)
}
