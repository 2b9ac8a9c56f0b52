//! Kernel timers for the driver: what `KeInitializeTimerEx`, `KeInitializeDpc`,
//! `KeSetTimerEx`, `KeCancelTimer` and `KeFlushQueuedDpcs` give a miniport on Windows
//! ([`Platform::timer_arm`](rvgpu_kmd::platform::Platform::timer_arm) and `timer_cancel`).
//!
//! - **Clock.** Step mode: one round of the machine is one millisecond (the round counter is
//!   the clock, as for VidSch's TDR timers); threaded mode: the host's monotonic clock. A
//!   periodic timer that falls behind fires once and is due again one period later, as a
//!   periodic KTIMER does not queue missed expirations.
//! - **Where the routine runs.** At DISPATCH_LEVEL in the machine's context: in step mode in
//!   the round, before DPCs (so a DPC the routine queues runs in the same round); in threaded
//!   mode on the adapter's own timer thread ([`timer_thread`]), a processor of its own, so a
//!   timer routine may overlap `DxgkDdiDpcRoutine`, the ISR and every PASSIVE DDI, VidSch's
//!   TDR calls (`DxgkDdiResetFromTimeout` is PASSIVE_LEVEL) included, as on Windows, where a
//!   timer's DPC runs at DISPATCH_LEVEL on whichever processor it is queued to.
//!   Returning at another IRQL is 0xC8.
//! - **Rules Windows enforces.**
//!   - `KeSetTimerEx` and `KeCancelTimer` above DISPATCH_LEVEL, and `KeFlushQueuedDpcs` above
//!     PASSIVE_LEVEL (its page requires PASSIVE_LEVEL): 0xA `IRQL_NOT_LESS_OR_EQUAL`.
//!     <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kesettimerex>,
//!     <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-keflushqueueddpcs>
//!   - A timer still set when the memory holding it is freed is 0xC7 `TIMER_OR_DPC_INVALID`.
//!     The driver frees its adapter in `DxgkDdiRemoveDevice`, so a timer the adapter armed and
//!     still had set when RemoveDevice returned is 0xC7 (parameter 1 = 0, a timer object).
//!     <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xc7--timer-or-dpc-invalid>
//! - Arming a timer that is still set breaks `Platform::timer_arm`'s contract (the Windows
//!   implementation re-initialises the KTIMER and KDPC): a simulation error.
//! - **Simulation limit.** A timer belongs to the adapter whose DDI armed it (the simulation
//!   services timers per adapter); arming one outside any DDI is not modelled and is a
//!   simulation error rather than a silent success.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rvgpu_kmd::platform::Irql;

use crate::adapter::context::{current_machine, irql_above, MachineContext};
pub use crate::adapter::timers::{Armed, TimerRun};
use crate::adapter::{all_adapters, AdapterShared};
use crate::base::bugcheck::{self, BugCheck};
use crate::base::lock::lock;
use crate::base::processor::{check_return_irql, IrqlScope};

/// The driver's timer storage (`Platform::Timer` of [`crate::adapter::kernel::SimKernel`]):
/// the set timer it stands for, if any.
#[derive(Debug, Default)]
pub struct SimTimer {
    set: Mutex<Option<(Weak<AdapterShared>, Arc<Armed>)>>,
}

fn adapter_of_current_ddi() -> Option<Arc<AdapterShared>> {
    let inside = crate::adapter::ddi::inside();
    if inside == 0 {
        return None;
    }
    all_adapters()
        .into_iter()
        .find(|a| Arc::as_ptr(a) as usize == inside)
}

/// `KeSetTimerEx` with a DPC: see the module documentation.
pub fn arm(timer: &SimTimer, period_ms: u32, routine: TimerRun) -> bool {
    if irql_above(Irql::Dispatch, arm as *const () as u64) {
        return false;
    }
    let Some(a) = adapter_of_current_ddi() else {
        if let Some(m) = current_machine() {
            m.raise_sim_error(
                "the driver set a kernel timer outside any DDI of an adapter; the simulation \
                 services timers per adapter and does not model that",
            );
        }
        return false;
    };
    // The platform contract (`Platform::timer_arm`): never on a set timer. The Windows
    // implementation initialises the KTIMER and KDPC before setting them, and initialising a
    // set timer or a queued DPC corrupts the kernel's lists.
    if lock(&timer.set).is_some() {
        a.state.raise_sim_error(
            "the driver armed a kernel timer that is still set (KeInitializeTimerEx on a set \
             KTIMER corrupts the kernel's timer list on Windows)",
        );
        return false;
    }
    let now = a.timers.now();
    let period = u64::from(period_ms.max(1));
    let armed = Arc::new(Armed {
        routine,
        period,
        due: AtomicU64::new(now.saturating_add(period)),
        cancelled: AtomicBool::new(false),
        running: Mutex::new(()),
        storage: std::ptr::from_ref(timer) as usize,
    });
    lock(&a.timers.set).push(armed.clone());
    *lock(&timer.set) = Some((Arc::downgrade(&a), armed));
    a.timers.wake.notify();
    true
}

/// Removes a set timer from its adapter's list; returns it.
fn cancel_set(timer: &SimTimer) -> Option<Arc<Armed>> {
    let (adapter, armed) = lock(&timer.set).take()?;
    armed.cancelled.store(true, Ordering::Release);
    if let Some(a) = adapter.upgrade() {
        lock(&a.timers.set).retain(|t| !Arc::ptr_eq(t, &armed));
    }
    Some(armed)
}

/// `KeCancelTimer` alone (the PE image's import, which may run at DISPATCH_LEVEL): removes a
/// set timer and returns it, so that `KeFlushQueuedDpcs` can wait for a run in progress.
#[cfg(target_os = "linux")]
pub(crate) fn cancel_keep(timer: &SimTimer) -> Option<Arc<Armed>> {
    cancel_set(timer)
}

/// `KeFlushQueuedDpcs` for one cancelled timer: waits for a run in progress.
#[cfg(target_os = "linux")]
pub(crate) fn wait_not_running(armed: &Armed) {
    drop(lock(&armed.running));
}

/// `KeCancelTimer` then `KeFlushQueuedDpcs`: see the module documentation.
pub fn cancel(timer: &SimTimer) {
    if irql_above(Irql::Passive, cancel as *const () as u64) {
        return;
    }
    if let Some(armed) = cancel_set(timer) {
        // Waits for a run in progress on another thread (threaded mode's timer thread).
        drop(lock(&armed.running));
    }
}

/// Runs the routines of `a`'s timers that are due. Returns whether any ran.
pub fn service(a: &AdapterShared) -> bool {
    if a.state.is_halted() || a.timers.held.load(Ordering::Acquire) {
        return false;
    }
    let now = a.timers.now();
    let due: Vec<Arc<Armed>> = lock(&a.timers.set)
        .iter()
        .filter(|t| t.due.load(Ordering::Acquire) <= now)
        .cloned()
        .collect();
    let mut ran = false;
    // One caller per adapter (the round in step mode, the timer thread in threaded mode), so a
    // timer found due above is still due here; `cancelled` is re-checked under `running`.
    for t in due {
        let _running = lock(&t.running);
        if t.cancelled.load(Ordering::Acquire) || a.state.is_halted() {
            continue;
        }
        t.due.store(now.saturating_add(t.period), Ordering::Release);
        let _m = MachineContext::enter(a.state.clone());
        let _irql = IrqlScope::enter(Irql::Dispatch);
        // The driver keeps its routine and context valid until its cancel returns, which waits
        // for this run (`running`).
        (t.routine.run)();
        if let Err(b) = check_return_irql(
            Irql::Dispatch,
            bugcheck::irql_unexpected::SIM_TIMER_DPC,
            t.routine.address,
            t.routine.context,
            0,
        ) {
            a.state.raise_bugcheck(b);
        }
        ran = true;
    }
    ran
}

/// The timer "processor" of one adapter of a threaded machine: runs its due timer routines.
pub fn timer_thread(a: Arc<AdapterShared>, stop: Arc<std::sync::atomic::AtomicBool>) {
    let mut seen = a.timers.wake.generation();
    while !stop.load(Ordering::Acquire) {
        if service(&a) {
            continue;
        }
        // Looks again when the next timer is due, or within 20 ms for one set meanwhile (the
        // set wakes it too); Windows' own timer resolution is about 15.6 ms. Held timers or a
        // halted machine run nothing, so a due timer must not make this a busy loop
        // (releasing the hold wakes it).
        let idle = a.timers.held.load(Ordering::Acquire) || a.state.is_halted();
        let until = if idle {
            20
        } else {
            a.timers.next_due_in().unwrap_or(20).clamp(1, 20)
        };
        seen = a
            .timers
            .wake
            .wait(seen, std::time::Duration::from_millis(until));
    }
}

/// After RemoveDevice returned: a timer the adapter still has set lives in freed memory (0xC7).
pub fn check_removed(a: &AdapterShared) -> Result<(), BugCheck> {
    match a.timers.still_set().first() {
        Some(&storage) => Err(BugCheck::new(
            bugcheck::TIMER_OR_DPC_INVALID,
            [0, storage as u64, 0, 0],
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::ddi::{self, At};
    use crate::adapter::irql::Routine;
    use crate::{MachineConfig, Mode, SimError};

    static RUNS: AtomicU64 = AtomicU64::new(0);

    fn count() {
        RUNS.fetch_add(1, Ordering::Relaxed);
    }

    fn nothing() {}

    /// `f` as a timer routine (no driver code: address and context 0).
    fn run(f: fn()) -> TimerRun {
        TimerRun {
            address: 0,
            context: 0,
            run: Arc::new(f),
        }
    }

    /// The OS's timer code run as though the driver called it from a PASSIVE_LEVEL DDI (no
    /// driver code runs: address 0 in the bug-check parameters).
    fn inside_a_ddi() -> ddi::Ddi<()> {
        ddi::Ddi::pretend(Routine::DxgkDdiQueryAdapterInfo)
    }

    /// Arms `timer` from inside a DDI of adapter 0, as the driver does from StartDevice.
    fn arm_in_ddi(m: &crate::Machine, timer: &SimTimer, period: u32, r: fn()) -> bool {
        let a = Arc::clone(m.adapter_shared(0).expect("adapter"));
        ddi::passive(&a, inside_a_ddi(), |()| arm(timer, period, run(r))).expect("ddi")
    }

    /// KeSetTimerEx above DISPATCH_LEVEL is 0xA; arming a timer that is still set is a
    /// simulation error (the Windows implementation would re-initialise a set KTIMER); a
    /// routine returning at another IRQL than DISPATCH_LEVEL is 0xC8.
    #[test]
    fn timer_irql_and_contract_rules() {
        // Above DISPATCH_LEVEL.
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        let a = Arc::clone(m.adapter_shared(0).expect("adapter"));
        let t = SimTimer::default();
        let armed = ddi::call(&a, inside_a_ddi(), At::Level(Irql::Device), |()| {
            arm(&t, 10, run(nothing))
        });
        assert!(matches!(armed, Ok(false) | Err(_)), "{armed:?}");
        assert_eq!(
            m.state.bugcheck().map(|b| b.code),
            Some(bugcheck::IRQL_NOT_LESS_OR_EQUAL)
        );
        drop(a);
        drop(m);
        // Armed twice.
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        let t: &'static SimTimer = Box::leak(Box::default());
        assert!(arm_in_ddi(&m, t, 10, nothing));
        let a = Arc::clone(m.adapter_shared(0).expect("adapter"));
        let again = ddi::passive(&a, inside_a_ddi(), |()| arm(t, 10, run(nothing)));
        assert!(
            matches!(again, Err(SimError::Violation(_))),
            "a set timer armed again: {again:?}"
        );
        drop(a);
        drop(m);
        // A routine that returns at PASSIVE_LEVEL.
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        fn leaks_irql() {
            // As a routine that lowered the IRQL and did not restore it.
            std::mem::forget(IrqlScope::enter(Irql::Passive));
        }
        let t: &'static SimTimer = Box::leak(Box::default());
        assert!(arm_in_ddi(&m, t, 5, leaks_irql));
        let _ = m.run_steps(6);
        let b = m.state.bugcheck().expect("0xC8");
        assert_eq!(b.code, bugcheck::IRQL_UNEXPECTED_VALUE);
        assert_eq!(b.params[0] & 0xFF, bugcheck::irql_unexpected::SIM_TIMER_DPC);
    }

    /// A timer the driver left set when RemoveDevice returned is in freed memory: 0xC7, as
    /// Windows raises when memory holding a set timer is freed.
    #[test]
    fn a_timer_still_set_at_remove_device_is_bug_check_0xc7() {
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        let leaked: &'static SimTimer = Box::leak(Box::default());
        assert!(arm_in_ddi(&m, leaked, 50, nothing));
        m.stop_adapter(0).expect("stop");
        match m.remove_adapter(0) {
            Err(SimError::Bugcheck(b)) => {
                assert_eq!(b.code, bugcheck::TIMER_OR_DPC_INVALID);
                assert_eq!(b.params[1], std::ptr::from_ref(leaked) as u64);
            }
            other => panic!("RemoveDevice with a set timer: {other:?}"),
        }
    }

    /// Step mode: a round is a millisecond; the routine runs every period at DISPATCH_LEVEL,
    /// not while held back, and never after the cancel; a cancel above PASSIVE_LEVEL is 0xA.
    #[test]
    fn timers_fire_each_period_until_cancelled_and_cancel_needs_passive() {
        let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
        m.load_driver().expect("load");
        m.start_adapter(0).expect("start");
        let t = SimTimer::default();
        let before = RUNS.load(Ordering::Relaxed);
        assert!(arm_in_ddi(&m, &t, 10, count));
        m.run_steps(9).expect("steps");
        assert_eq!(RUNS.load(Ordering::Relaxed), before, "not due yet");
        m.run_steps(1).expect("steps");
        assert_eq!(
            RUNS.load(Ordering::Relaxed),
            before + 1,
            "due after one period"
        );
        m.hold_timer_dpcs(0, true).expect("hold");
        m.run_steps(35).expect("steps");
        assert_eq!(RUNS.load(Ordering::Relaxed), before + 1, "held back");
        m.hold_timer_dpcs(0, false).expect("release");
        m.run_steps(1).expect("steps");
        assert_eq!(
            RUNS.load(Ordering::Relaxed),
            before + 2,
            "missed periods fire once"
        );
        cancel(&t);
        m.run_steps(30).expect("steps");
        assert_eq!(RUNS.load(Ordering::Relaxed), before + 2, "cancelled");
        // Armed again, then cancelled at DISPATCH_LEVEL: KeFlushQueuedDpcs needs PASSIVE.
        assert!(arm_in_ddi(&m, &t, 10, count));
        let state = m.state.clone();
        {
            let _ctx = MachineContext::enter(state.clone());
            let _irql = IrqlScope::enter(Irql::Dispatch);
            cancel(&t);
        }
        assert_eq!(
            state.bugcheck().map(|b| b.code),
            Some(bugcheck::IRQL_NOT_LESS_OR_EQUAL)
        );
    }
}
