//! `NativeFence.*`: the OS side of native GPU fences with the driver and the GPU (NF-02 …
//! NF-17, MF-04). GPU work goes through the session's GPU queues, a stand-in for the
//! submission path.

use std::time::Duration;

use crate::backend::{
    Backend, Capability, EventRef, ExecMode, Failure, FenceRef, NewFence, QueueRef, Session,
    WaitResult,
};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::{no_fault, Form};

mod kmd;
mod setup;

use setup::{drained, fence_and_queue, session, session_with, SETTLE};

/// What either form of a case may use beyond what both need.
const EITHER: &[Capability] = &[
    Capability::OsTrace,
    Capability::StepMode,
    Capability::FenceInternals,
    Capability::KmdJournal,
    Capability::BugChecks,
];
/// What both forms of a cross-adapter case need.
const CROSS_BOTH: &[Capability] = &[
    Capability::Fences,
    Capability::CrossAdapterFences,
    Capability::NativeFences,
];
/// Native fences stepped, with the OS's trace and the fences' internals.
const STEPPED_INTERNALS: &[Capability] = &[
    Capability::Fences,
    Capability::OsTrace,
    Capability::StepMode,
    Capability::NativeFences,
    Capability::FenceInternals,
];
/// The OS form of `NativeFence.MonitoredValueTracksWaiters`.
const INTERNALS: &[Capability] = &[
    Capability::Fences,
    Capability::NativeFences,
    Capability::FenceInternals,
];
/// The OS form of `NativeFence.DestroyWithQueuedSignal`: the signal held queued by stepping.
const STEPPED: &[Capability] = &[
    Capability::Fences,
    Capability::StepMode,
    Capability::NativeFences,
];
/// Its Windows form: the signal held queued behind a GPU wait on a gate.
const THREADED: &[Capability] = &[Capability::Fences, Capability::NativeFences];
/// The OS form of `NativeFence.CrossAdapterNotificationOnly`.
const CROSS_STEPPED: &[Capability] = &[
    Capability::Fences,
    Capability::CrossAdapterFences,
    Capability::StepMode,
    Capability::NativeFences,
    Capability::FenceInternals,
];
/// The OS form of `NativeFence.CrossAdapterScenario1`.
const CROSS_TRACED: &[Capability] = &[
    Capability::Fences,
    Capability::CrossAdapterFences,
    Capability::OsTrace,
    Capability::StepMode,
    Capability::NativeFences,
    Capability::FenceInternals,
];
/// The OS form of `MonitoredFence.CpuWaitGpuSignal`: an adapter configured without native
/// fences, stepped, its interrupts from the OS's trace.
const MONITORED_STEPPED: &[Capability] = &[
    Capability::Fences,
    Capability::OsTrace,
    Capability::StepMode,
    Capability::ConfiguredMachine,
    Capability::MonitoredFences,
];
/// The seed's cross-adapter tables: two configured adapters, native and monitored fences, stepped.
const CROSS_ADAPTER: &[Capability] = &[
    Capability::Fences,
    Capability::CrossAdapterFences,
    Capability::StepMode,
    Capability::ConfiguredMachine,
    Capability::NativeFences,
    Capability::FenceInternals,
    Capability::MonitoredFences,
];

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "NativeFence.MonitoredValueTracksWaiters",
        requirements: &["NF-02"],
        summary: "MonitoredValue is u64::MAX with no waiter and armed for the lowest pending \
                  value with waiters (W - 1 by the pages, W on 24H2), u64::MAX again after \
                  the last",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: EITHER,
        run: monitored_value_tracks_waiters,
    },
    Case {
        name: "NativeFence.PackedStorage",
        requirements: &["NF-05", "NF-11"],
        summary: "non-shareable fences of one process share pages at the caps' stride; a \
                  shareable fence's values are on pages of their own",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: &[Capability::FenceInternals, Capability::BugChecks],
        run: packed_storage,
    },
    Case {
        name: "NativeFence.CpuWaitGpuSignal",
        requirements: &["NF-03", "NF-04", "NF-07"],
        summary: "a GPU signal crossing a CPU waiter's value raises one interrupt; the DPC \
                  releases the wait and re-arms MonitoredValue",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: EITHER,
        run: cpu_wait_gpu_signal,
    },
    Case {
        name: "NativeFence.NoWaiterNoInterrupt",
        requirements: &["NF-03"],
        summary: "100 GPU signals of a fence nobody waits on raise no interrupt",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: EITHER,
        run: no_waiter_no_interrupt,
    },
    Case {
        name: "NativeFence.HandleLifetimes",
        requirements: &["NF-13"],
        summary: "create + open A, open B, destroy A (close only), destroy B (close + destroy); \
                  out-of-order destroy refused",
        needs: &[
            Capability::Fences,
            Capability::DirectDdi,
            Capability::NativeFences,
            Capability::FenceInternals,
        ],
        optional: &[Capability::BugChecks],
        run: handle_lifetimes,
    },
    Case {
        name: "NativeFence.DestroyWithQueuedSignal",
        requirements: &["NF-14"],
        summary: "a fence destroyed with its GPU signal still queued is never reported: no bug \
                  check, the waiter is abandoned",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: &[Capability::StepMode, Capability::BugChecks],
        run: destroy_with_queued_signal,
    },
    Case {
        name: "NativeFence.CpuSignalReleasesGpuWait",
        requirements: &["NF-17"],
        summary: "a CPU signal unblocks a GPU FENCE_WAIT with no interrupt; the queue's later \
                  signal lands",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: EITHER,
        run: cpu_signal_releases_gpu_wait,
    },
    Case {
        name: "NativeFence.CrossAdapterNotificationOnly",
        requirements: &["NF-16"],
        summary: "a cross-adapter fence holds MonitoredValue at 0 on both adapters; a CPU \
                  signal on one unblocks a GPU wait on the other (NotificationOnly)",
        needs: CROSS_BOTH,
        optional: EITHER,
        run: cross_adapter,
    },
    Case {
        name: "NativeFence.CrossAdapterScenario1",
        requirements: &["NF-18", "NF-16"],
        summary: "seed table 1 (both GPUs native): iGPU GPU wait released by a dGPU GPU \
                  signal (interrupt, NotificationOnly propagation)",
        needs: CROSS_TRACED,
        optional: &[],
        run: scenario1,
    },
    Case {
        name: "NativeFence.CrossAdapterScenario2a",
        requirements: &["NF-18"],
        summary: "seed table 2a (iGPU without native fences): the fence opens as a monitored \
                  fence on the iGPU; an iGPU CPU wait is released by a dGPU GPU signal",
        needs: CROSS_ADAPTER,
        optional: &[],
        run: scenario2a,
    },
    Case {
        name: "NativeFence.CrossAdapterScenario2b",
        requirements: &["NF-18"],
        summary: "seed table 2b: an iGPU CPU signal of the monitored fence releases a dGPU GPU \
                  wait (NotificationOnly)",
        needs: CROSS_ADAPTER,
        optional: &[],
        run: scenario2b,
    },
    Case {
        name: "MonitoredFence.CpuWaitGpuSignal",
        requirements: &["MF-01", "MF-03", "MF-04"],
        summary: "adapter without native fences: legacy GPU signals always interrupt; the DPC \
                  scan releases CPU waits; a CPU signal goes through the OS",
        needs: &[Capability::Fences, Capability::MonitoredFences],
        optional: &[
            Capability::OsTrace,
            Capability::StepMode,
            Capability::ConfiguredMachine,
            Capability::KmdJournal,
            Capability::BugChecks,
        ],
        run: monitored_cpu_wait_gpu_signal,
    },
    Case {
        name: "NativeFence.CpuWaitsThreaded",
        requirements: &["MF-04", "NF-04", "NF-09"],
        summary: "threaded: 50 rounds of event and blocking CPU waits released by GPU \
                  signals; no wake-up lost",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: &[Capability::BugChecks, Capability::FenceInternals],
        run: cpu_waits_threaded,
    },
    Case {
        name: "NativeFence.CpuSignalReleasesGpuWaitThreaded",
        requirements: &["NF-17"],
        summary: "threaded, user-mode view: a queue blocked on FENCE_WAIT runs on after a CPU \
                  signal; its later GPU signal releases a CPU wait",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: &[Capability::BugChecks],
        run: cpu_signal_releases_gpu_wait_threaded,
    },
    Case {
        name: "NativeFence.DestroyAbandonsWaitThreaded",
        requirements: &["NF-14"],
        summary: "threaded, user-mode view: an event wait on a fence destroyed with its GPU \
                  signal still queued ends abandoned; the queue drains, no bug check",
        needs: &[Capability::Fences, Capability::NativeFences],
        optional: &[Capability::BugChecks],
        run: destroy_abandons_wait_threaded,
    },
    Case {
        name: "MonitoredFence.GpuSignalThreaded",
        requirements: &["MF-01", "MF-03", "MF-04"],
        summary: "threaded, adapter with native fences: a legacy monitored fence signalled \
                  by fence-write commands of a user-mode queue releases a CPU wait at its \
                  value only; a CPU signal releases a wait; the CPU mapping shows each value",
        needs: &[Capability::Fences, Capability::MonitoredFences],
        optional: &[Capability::BugChecks],
        run: monitored_gpu_signal_threaded,
    },
];

/// How long they watch for something that must not happen (it can only pass falsely when the
/// machine is slow, never fail falsely).
const WATCH: Duration = Duration::from_millis(200);

/// Fails naming `what` unless CPU wait `e` has been released with the value reached.
fn expect_released(s: &dyn Session, e: EventRef, what: &str) -> CaseResult {
    let r = s.fences_ref()?.event_result(e, Duration::ZERO);
    ensure!(r == Some(WaitResult::Satisfied), "{what} ({r:?})");
    Ok(())
}

/// Adapter 0's interrupts since its count was `base`.
fn interrupts_since(s: &dyn Session, base: u64) -> Result<u64, Failure> {
    Ok(s.os_trace_ref()?.interrupt_count(0) - base)
}

fn monitored_value_tracks_waiters(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, INTERNALS, kmd::JOURNALED)? == Form::Kmd {
        return kmd::monitored_value_tracks_waiters(b);
    }
    let mut s = session(b, ExecMode::Step, 1)?;
    let f = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    ensure!(
        s.fence_internals_ref()?.fence_values(f)?.monitored == u64::MAX,
        "MonitoredValue with no waiter"
    );
    let e10 = s.fences()?.cpu_wait_event(f, 10)?;
    let e5 = s.fences()?.cpu_wait_event(f, 5)?;
    // Windows writes the lowest awaited value minus one (Microsoft's pages, NF-02) or the
    // value itself (24H2, docs/windows-bringup.md §13): either is correct, and decides what
    // follows a partial release (re-armed for the next wait, or left as it is).
    let first = s.fence_internals_ref()?.fence_values(f)?.monitored;
    ensure!(
        first == 4 || first == 5,
        "MonitoredValue {first:#x} with waiters at 5 and 10, expected 4 (W - 1) or 5 (W)"
    );
    s.fences()?.cpu_signal(f, 5)?;
    ensure!(
        s.fences_ref()?.event_result(e5, Duration::ZERO) == Some(WaitResult::Satisfied),
        "wait for 5 not released"
    );
    let mv = s.fence_internals_ref()?.fence_values(f)?.monitored;
    let want = if first == 4 { 9 } else { 5 };
    ensure!(
        mv == want,
        "MonitoredValue {mv:#x} after releasing 5, expected {want}"
    );
    s.fences()?.cpu_signal(f, 10)?;
    ensure!(
        s.fences_ref()?.event_result(e10, Duration::ZERO) == Some(WaitResult::Satisfied),
        "wait for 10 not released"
    );
    ensure!(
        s.fence_internals_ref()?.fence_values(f)?.monitored == u64::MAX,
        "MonitoredValue after the last wait"
    );
    Ok(())
}

fn cpu_wait_gpu_signal(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, STEPPED_INTERNALS, kmd::JOURNALED)? == Form::Kmd {
        return kmd::cpu_wait_gpu_signal(b);
    }
    let mut s = session(b, ExecMode::Step, 1)?;
    let (f, q) = fence_and_queue(&mut *s)?;
    // Creating the queue and the fence maps them (paging interrupts): count from here.
    s.step()?.run_until_idle()?;
    let base = s.os_trace_ref()?.interrupt_count(0);
    let e = s.fences()?.cpu_wait_event(f, 3)?;
    // 24H2 arms MonitoredValue at the awaited 3, Microsoft's pages at 2 (NF-02); the device
    // interrupts at `value >= MonitoredValue`, so the pages' arming adds the one early
    // interrupt NF-09 allows (docs/hardware.md, "Why `>=`").
    let armed = s.fence_internals_ref()?.fence_values(f)?.monitored;
    let expected = match armed {
        3 => 1,
        2 => 2,
        m => {
            return Err(CaseError::Fail(format!(
                "MonitoredValue {m} for a wait for 3"
            )))
        }
    };
    for v in 1..=5 {
        s.fences()?.gpu_signal(q, f, v)?;
    }
    s.fences()?.gpu_submit(q)?;
    s.step()?.run_until_idle()?;
    ensure!(
        s.fences_ref()?.event_result(e, Duration::ZERO) == Some(WaitResult::Satisfied),
        "CPU wait for 3 not released; values {:?}",
        s.fence_internals_ref()?.fence_values(f)
    );
    let n = interrupts_since(&*s, base)?;
    ensure!(
        n == expected,
        "{n} interrupts, expected exactly {expected} with MonitoredValue armed at {armed}"
    );
    let v = s.fence_internals_ref()?.fence_values(f)?;
    ensure!(v.current == 5 && v.monitored == u64::MAX, "values {v:?}");
    no_fault(&*s)
}

fn no_waiter_no_interrupt(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, STEPPED_INTERNALS, kmd::JOURNALED)? == Form::Kmd {
        return kmd::no_waiter_no_interrupt(b);
    }
    let mut s = session(b, ExecMode::Step, 1)?;
    let (f, q) = fence_and_queue(&mut *s)?;
    s.step()?.run_until_idle()?;
    let base = s.os_trace_ref()?.interrupt_count(0);
    for v in 1..=100 {
        s.fences()?.gpu_signal(q, f, v)?;
        if v % 50 == 0 {
            s.fences()?.gpu_submit(q)?;
            s.step()?.run_until_idle()?;
        }
    }
    ensure!(s.fences_ref()?.gpu_queue_drained(q), "queue not drained");
    ensure!(
        s.fence_internals_ref()?.fence_values(f)?.current == 100,
        "CurrentValue {:?}",
        s.fence_internals_ref()?.fence_values(f)
    );
    let n = interrupts_since(&*s, base)?;
    ensure!(n == 0, "{n} interrupts with no waiter");
    Ok(())
}

fn handle_lifetimes(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, 1)?;
    let a = s
        .fences()?
        .create_native_fence(NewFence::new(0, 1).shareable())?;
    let bb = s.fences()?.open_native_fence(a, 2)?;
    let st = s.direct_ddi()?.raw_destroy_native_fence(a)?;
    ensure!(st < 0, "Destroy with two open instances returned {st:#x}");
    s.fences()?.destroy_native_fence(a)?;
    ensure!(
        !s.fence_internals_ref()?.native_fence_destroyed(bb),
        "A's destroy must be Close(A) only"
    );
    let st = s.direct_ddi()?.raw_destroy_native_fence(bb)?;
    ensure!(st < 0, "Destroy while B has it open returned {st:#x}");
    let e = s.fences()?.cpu_wait_event(bb, 1)?;
    s.fences()?.cpu_signal(bb, 1)?;
    expect_released(&*s, e, "fence unusable through B after A's destroy")?;
    ensure!(
        s.fences()?.destroy_native_fence(a).is_err(),
        "A's instance destroyed twice"
    );
    s.fences()?.destroy_native_fence(bb)?;
    ensure!(
        s.fence_internals_ref()?.native_fence_destroyed(bb),
        "B's destroy must be Close(B) + Destroy"
    );
    no_fault(&*s)
}

fn destroy_with_queued_signal(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, STEPPED, THREADED)? == Form::Kmd {
        return destroy_abandons_wait_threaded(b);
    }
    let mut s = session(b, ExecMode::Step, 1)?;
    let (f, q) = fence_and_queue(&mut *s)?;
    let e = s.fences()?.cpu_wait_event(f, 1)?;
    s.fences()?.gpu_signal(q, f, 1)?;
    s.fences()?.gpu_submit(q)?;
    s.fences()?.destroy_native_fence(f)?;
    ensure!(
        s.fences_ref()?.event_result(e, Duration::ZERO) == Some(WaitResult::Abandoned),
        "waiter of a destroyed fence not abandoned"
    );
    s.step()?.run_until_idle()?;
    ensure!(s.fences_ref()?.gpu_queue_drained(q), "queue not drained");
    no_fault(&*s)
}

fn cpu_signal_releases_gpu_wait(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, STEPPED_INTERNALS, kmd::JOURNALED)? == Form::Kmd {
        return kmd::cpu_signal_releases_gpu_wait(b);
    }
    let mut s = session(b, ExecMode::Step, 1)?;
    let f = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let g = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let q = s.fences()?.gpu_queue(0, 0, 1)?;
    s.step()?.run_until_idle()?;
    let base = s.os_trace_ref()?.interrupt_count(0);
    s.fences()?.gpu_wait(q, f, 5)?;
    s.fences()?.gpu_signal(q, g, 1)?;
    s.fences()?.gpu_submit(q)?;
    s.step()?.run_until_idle()?;
    ensure!(
        !s.fences_ref()?.gpu_queue_drained(q),
        "the queue did not block on FENCE_WAIT"
    );
    s.fences()?.cpu_signal(f, 5)?;
    s.step()?.run_until_idle()?;
    ensure_released(&*s, q, g, "the CPU signal did not release the GPU wait")?;
    let n = interrupts_since(&*s, base)?;
    ensure!(n == 0, "{n} interrupts: the release took a CPU round trip");
    Ok(())
}

fn cross_adapter(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, CROSS_STEPPED, kmd::CROSS)? == Form::Kmd {
        return kmd::cross_adapter(b);
    }
    let mut s = session(b, ExecMode::Step, 2)?;
    let f0 = s
        .fences()?
        .create_native_fence(NewFence::new(0, 1).shareable())?;
    let f1 = s.cross_adapter()?.open_native_fence_on(f0, 1, 2)?;
    for (f, i) in [(f0, 0), (f1, 1)] {
        let mv = s.fence_internals_ref()?.fence_values(f)?.monitored;
        ensure!(
            mv == 0,
            "MonitoredValue {mv:#x} on adapter {i}, expected 0 (held)"
        );
    }
    let (q, done) = blocked_queue(&mut s, (1, 2), f1, 2, "adapter 1's queue")?;
    s.fences()?.cpu_signal(f0, 2)?;
    s.step()?.run_until_idle()?;
    ensure_released(
        &*s,
        q,
        done,
        "NotificationOnly did not release adapter 1's GPU wait",
    )
}

fn cpu_waits_threaded(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, 1)?;
    let (f, q) = fence_and_queue(&mut *s)?;
    for v in 1..=50u64 {
        let e = s.fences()?.cpu_wait_event(f, 2 * v)?;
        s.fences()?.gpu_signal(q, f, 2 * v - 1)?;
        s.fences()?.gpu_signal(q, f, 2 * v)?;
        s.fences()?.gpu_submit(q)?;
        if v % 2 == 1 {
            let r = s.fences()?.cpu_wait(f, 2 * v, Duration::from_secs(10))?;
            ensure!(
                r == WaitResult::Satisfied,
                "blocking wait for {}: {r:?}",
                2 * v
            );
        }
        let r = s.fences_ref()?.event_result(e, Duration::from_secs(10));
        ensure!(
            r == Some(WaitResult::Satisfied),
            "event wait for {}: {r:?}; values {:?}",
            2 * v,
            s.fence_internals_ref().and_then(|x| x.fence_values(f))
        );
    }
    no_fault(&*s)
}

fn scenario1(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, 2)?;
    let d = s
        .fences()?
        .create_native_fence(NewFence::new(1, 1).shareable())?;
    let i = s.cross_adapter()?.open_native_fence_on(d, 0, 1)?;
    let (iq, after) = blocked_queue(&mut s, (0, 1), i, 10, "the iGPU queue")?;
    let dq = s.fences()?.gpu_queue(1, 0, 1)?;
    s.fences()?.gpu_signal(dq, d, 10)?;
    s.fences()?.gpu_submit(dq)?;
    s.step()?.run_until_idle()?;
    ensure!(
        s.os_trace_ref()?.interrupt_count(1) >= 1,
        "the dGPU signal did not interrupt (MV held at 0)"
    );
    ensure_released(&*s, iq, after, "the iGPU GPU wait was not released")
}

fn scenario2a(b: &dyn Backend) -> CaseResult {
    let mut s = session_with(b, ExecMode::Step, 2, |c| c.legacy_igpu = true)?;
    let d = s
        .fences()?
        .create_native_fence(NewFence::new(1, 1).shareable())?;
    ensure!(
        s.cross_adapter()?.open_native_fence_on(d, 0, 1).is_err(),
        "opened as a native fence on an adapter without native fences"
    );
    let i = s.cross_adapter()?.open_native_fence_as_monitored(d, 0, 1)?;
    let e = s.monitored()?.monitored_wait_event(i, 10)?;
    let dq = s.fences()?.gpu_queue(1, 0, 1)?;
    s.fences()?.gpu_signal(dq, d, 10)?;
    s.fences()?.gpu_submit(dq)?;
    s.step()?.run_until_idle()?;
    ensure!(
        s.fences_ref()?.event_result(e, Duration::ZERO) == Some(WaitResult::Satisfied),
        "the iGPU CPU wait was not released; value {:?}",
        s.monitored_ref()?.monitored_value(i)
    );
    Ok(())
}

fn scenario2b(b: &dyn Backend) -> CaseResult {
    let mut s = session_with(b, ExecMode::Step, 2, |c| c.legacy_igpu = true)?;
    let d = s
        .fences()?
        .create_native_fence(NewFence::new(1, 1).shareable())?;
    let i = s.cross_adapter()?.open_native_fence_as_monitored(d, 0, 1)?;
    let (dq, after) = blocked_queue(&mut s, (1, 1), d, 10, "the dGPU queue")?;
    s.monitored()?.monitored_signal_cpu(i, 10)?;
    s.step()?.run_until_idle()?;
    ensure_released(&*s, dq, after, "the dGPU GPU wait was not released")
}

fn monitored_cpu_wait_gpu_signal(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, MONITORED_STEPPED, kmd::MONITORED_JOURNALED)? == Form::Kmd {
        return kmd::monitored_cpu_wait_gpu_signal(b);
    }
    let mut s = session_with(b, ExecMode::Step, 1, |c| c.native_fence_feature = false)?;
    ensure!(
        s.fences()?
            .create_native_fence(NewFence::new(0, 1))
            .is_err(),
        "native fence created with the feature disabled"
    );
    let f = s.monitored()?.create_monitored_fence(0, 1, 0)?;
    let q = s.fences()?.gpu_queue(0, 0, 1)?;
    let e = s.monitored()?.monitored_wait_event(f, 2)?;
    s.monitored()?.gpu_signal_monitored(q, f, 1)?;
    s.fences()?.gpu_submit(q)?;
    s.step()?.run_until_idle()?;
    let n = s.os_trace_ref()?.interrupt_count(0);
    ensure!(n >= 1, "a legacy signal did not interrupt");
    ensure!(
        s.fences_ref()?.event_result(e, Duration::ZERO).is_none(),
        "released at 1 < 2"
    );
    s.monitored()?.gpu_signal_monitored(q, f, 2)?;
    s.fences()?.gpu_submit(q)?;
    s.step()?.run_until_idle()?;
    expect_released(&*s, e, "wait for 2 not released")?;
    let e = s.monitored()?.monitored_wait_event(f, 5)?;
    s.monitored()?.monitored_signal_cpu(f, 5)?;
    expect_released(&*s, e, "CPU signal did not release the wait")?;
    ensure!(
        s.monitored_ref()?.monitored_value(f)? == 5,
        "value {:?}",
        s.monitored_ref()?.monitored_value(f)
    );
    Ok(())
}

fn packed_storage(b: &dyn Backend) -> CaseResult {
    if kmd::form(b, INTERNALS, THREADED)? == Form::Kmd {
        return kmd::packed_storage(b);
    }
    let mut s = session(b, ExecMode::Step, 1)?;
    let f1 = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let f2 = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let sh = s
        .fences()?
        .create_native_fence(NewFence::new(0, 1).shareable())?;
    let (c1, m1, stride) = s.fence_internals_ref()?.fence_addresses(f1)?;
    let (c2, m2, _) = s.fence_internals_ref()?.fence_addresses(f2)?;
    let (cs, ms, _) = s.fence_internals_ref()?.fence_addresses(sh)?;
    let page = |a: u64| a & !0xFFF;
    ensure!(stride != 0 && stride % 8 == 0, "stride {stride}");
    ensure!(
        c2 - c1 == u64::from(stride),
        "CurrentValues {c1:#x} {c2:#x} not at the stride"
    );
    ensure!(
        m2 - m1 == u64::from(stride),
        "MonitoredValues {m1:#x} {m2:#x} not at the stride"
    );
    let private = [page(c1), page(m1), page(c2), page(m2)];
    ensure!(
        !private.contains(&page(cs)) && !private.contains(&page(ms)) && page(cs) != page(ms),
        "a shareable fence shares a page: {cs:#x} {ms:#x} vs {private:x?}"
    );
    Ok(())
}

/// Queues on `at` = (adapter, process) a GPU wait for `gate` to reach `value` and behind it
/// a signal of a fresh fence to 1, runs the GPU and checks that `queue` stopped at the wait.
/// Returns the queue and the fence signalled behind the wait.
fn blocked_queue(
    s: &mut Box<dyn Session>,
    at: (usize, u32),
    gate: FenceRef,
    value: u64,
    queue: &str,
) -> Result<(QueueRef, FenceRef), CaseError> {
    let (adapter, process) = at;
    let after = s
        .fences()?
        .create_native_fence(NewFence::new(adapter, process))?;
    let q = s.fences()?.gpu_queue(adapter, 0, process)?;
    s.fences()?.gpu_wait(q, gate, value)?;
    s.fences()?.gpu_signal(q, after, 1)?;
    s.fences()?.gpu_submit(q)?;
    s.step()?.run_until_idle()?;
    ensure!(
        !s.fences_ref()?.gpu_queue_drained(q),
        "{queue} did not block"
    );
    Ok((q, after))
}

/// Checks that the GPU wait holding queue `q` was released (`what` says why not): the queue
/// drained and the signal of `after` behind the wait landed.
fn ensure_released(s: &dyn Session, q: QueueRef, after: FenceRef, what: &str) -> CaseResult {
    ensure!(s.fences_ref()?.gpu_queue_drained(q), "{what}");
    ensure!(
        s.fence_internals_ref()?.fence_values(after)?.current == 1,
        "the later signal did not land"
    );
    Ok(())
}

fn cpu_signal_releases_gpu_wait_threaded(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, 1)?;
    let f = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let g = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let q = s.fences()?.gpu_queue(0, 0, 1)?;
    s.fences()?.gpu_wait(q, f, 5)?;
    s.fences()?.gpu_signal(q, g, 1)?;
    s.fences()?.gpu_submit(q)?;
    let r = s.fences()?.cpu_wait(g, 1, WATCH)?;
    ensure!(
        r == WaitResult::TimedOut,
        "the signal behind FENCE_WAIT(5) landed before the CPU signal: {r:?}"
    );
    ensure!(
        !s.fences_ref()?.gpu_queue_drained(q),
        "the queue did not block on FENCE_WAIT"
    );
    s.fences()?.cpu_signal(f, 5)?;
    let r = s.fences()?.cpu_wait(g, 1, SETTLE)?;
    ensure!(
        r == WaitResult::Satisfied,
        "the CPU signal did not release the GPU wait: {r:?}"
    );
    ensure!(
        drained(&mut s, q)?,
        "the queue did not drain after the release"
    );
    no_fault(&*s)
}

fn destroy_abandons_wait_threaded(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, 1)?;
    let gate = s.fences()?.create_native_fence(NewFence::new(0, 1))?;
    let (f, q) = fence_and_queue(&mut *s)?;
    let e = s.fences()?.cpu_wait_event(f, 1)?;
    // The signal stays queued behind the gate until the fence is gone.
    s.fences()?.gpu_wait(q, gate, 1)?;
    s.fences()?.gpu_signal(q, f, 1)?;
    s.fences()?.gpu_submit(q)?;
    s.fences()?.destroy_native_fence(f)?;
    let r = s.fences_ref()?.event_result(e, SETTLE);
    ensure!(
        r == Some(WaitResult::Abandoned),
        "waiter of a destroyed fence: {r:?}"
    );
    s.fences()?.cpu_signal(gate, 1)?;
    ensure!(drained(&mut s, q)?, "queue not drained");
    no_fault(&*s)
}

fn monitored_gpu_signal_threaded(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Threaded, 1)?;
    let f = s.monitored()?.create_monitored_fence(0, 1, 0)?;
    let q = s.fences()?.gpu_queue(0, 0, 1)?;
    let e = s.monitored()?.monitored_wait_event(f, 2)?;
    s.monitored()?.gpu_signal_monitored(q, f, 1)?;
    s.fences()?.gpu_submit(q)?;
    ensure!(
        drained(&mut s, q)?,
        "the first signal's queue did not drain"
    );
    let v = s.monitored_ref()?.monitored_value(f)?;
    ensure!(v == 1, "value {v} after the GPU signal of 1");
    ensure!(
        s.fences_ref()?.event_result(e, WATCH).is_none(),
        "the wait for 2 was released at 1"
    );
    s.monitored()?.gpu_signal_monitored(q, f, 2)?;
    s.fences()?.gpu_submit(q)?;
    ensure!(
        s.fences_ref()?.event_result(e, SETTLE) == Some(WaitResult::Satisfied),
        "the wait for 2 was not released by the GPU signal of 2"
    );
    ensure!(
        drained(&mut s, q)?,
        "the second signal's queue did not drain"
    );
    let v = s.monitored_ref()?.monitored_value(f)?;
    ensure!(v == 2, "value {v} after the GPU signal of 2");
    let e = s.monitored()?.monitored_wait_event(f, 5)?;
    s.monitored()?.monitored_signal_cpu(f, 5)?;
    ensure!(
        s.fences_ref()?.event_result(e, SETTLE) == Some(WaitResult::Satisfied),
        "the CPU signal did not release the wait for 5"
    );
    let v = s.monitored_ref()?.monitored_value(f)?;
    ensure!(v == 5, "value {v} after the CPU signal of 5");
    no_fault(&*s)
}
