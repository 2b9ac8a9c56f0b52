//! `Neutral.*`: cases that use only what the OS offers any WDDM 3.2 driver with the kernel-mode
//! testing interface (`backend::testing`): the driver's own command buffers for COPY, FILL and
//! the two loops from the escape, kernel-mode hardware queues and monitored fences. Nothing
//! here knows rvgpu's command format, so `rvgpu-whlk --filter Neutral.` could run them against
//! another driver. A driver without the interface makes each case fail saying so.

use std::time::Duration;

use crate::backend::testing::{TestBuffer, TestCommand, TestQueue};
use crate::backend::{Backend, Capability, ExecMode, Failure, Session, WaitResult};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::{no_fault, observe, session};
use rvgpu_ddi::ntstatus::{STATUS_BUFFER_OVERFLOW, STATUS_INVALID_PARAMETER};

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "Neutral.BuildRefusals",
        requirements: &["UM-01"],
        summary: "the interface is offered; unknown operations, sizes not a multiple of 4 and \
                  ranges outside the GPU VA space are STATUS_INVALID_PARAMETER, a too-small \
                  buffer STATUS_BUFFER_OVERFLOW",
        needs: &[Capability::KernelModeTesting],
        optional: &[Capability::BugChecks],
        run: build_refusals,
    },
    Case {
        name: "Neutral.FillCopyReadBack",
        requirements: &["UM-01"],
        summary: "the driver's FILL then COPY on a kernel-mode hardware queue: the pattern \
                  read back in both ranges, nothing past them",
        needs: &[Capability::KernelModeTesting],
        optional: &[Capability::BugChecks],
        run: fill_copy_read_back,
    },
    Case {
        name: "Neutral.FenceOrderAcrossQueues",
        requirements: &["MF-03", "MF-04"],
        summary: "queue B's COPY waits (GPU wait) for queue A's FILL through a monitored fence \
                  A signals; held back until the CPU releases A; the CPU wait on B's signal ends \
                  with the copied pattern",
        needs: &[Capability::KernelModeTesting],
        optional: &[Capability::BugChecks],
        run: fence_order_across_queues,
    },
    Case {
        name: "Neutral.HangRecoveredGuiltyOnly",
        requirements: &["TDR-05", "UM-10"],
        summary: "INFINITE_LOOP on one process's queue: TDR recovers, another process's queue \
                  on the same node completes its FILL, the guilty queue never completes",
        needs: &[Capability::KernelModeTesting],
        optional: &[Capability::BugChecks, Capability::TdrTrace],
        run: hang_recovered_guilty_only,
    },
    Case {
        name: "Neutral.PreemptibleLoopYields",
        requirements: &["TDR-05"],
        summary: "INFINITE_PREEMPTABLE_LOOP on a queue of node 0: later work of another queue on \
                  the same node runs to completion while the loop still runs",
        needs: &[Capability::KernelModeTesting],
        optional: &[Capability::BugChecks],
        run: preemptible_loop_yields,
    },
];

/// How long a case waits for work that should complete.
const DONE: Duration = Duration::from_secs(10);
/// How long a case waits to see that work does not complete.
const HELD: Duration = Duration::from_millis(200);
/// The largest DMA buffer the escape takes.
const DMA: u32 = 4096;

/// A threaded session with adapter 0 started whose driver offers the interface.
fn open(b: &dyn Backend) -> Result<Box<dyn Session>, CaseError> {
    let mut s = session(b, ExecMode::Threaded, |_| {})?;
    ensure!(
        s.kmtest()?.interface_offered(0)?,
        "the driver does not offer the kernel-mode testing interface \
         (DXGK_FEATURE_KERNEL_MODE_TESTING not enabled)"
    );
    Ok(s)
}

/// Builds `cmd` for `q` and submits it; returns the progress value.
fn run(s: &mut dyn Session, q: TestQueue, cmd: TestCommand) -> Result<u64, CaseError> {
    let bytes = s.kmtest()?.build(q, cmd, DMA)?;
    Ok(s.kmtest()?.submit(q, &bytes)?)
}

fn done(s: &mut dyn Session, q: TestQueue, v: u64, what: &str) -> CaseResult {
    let r = s.kmtest()?.wait(q, v, DONE)?;
    ensure!(r == WaitResult::Satisfied, "{what}: waiting ended {r:?}");
    Ok(())
}

fn status_of(r: Result<Vec<u8>, Failure>) -> Result<Option<i32>, CaseError> {
    match r {
        Ok(_) => Ok(None),
        Err(Failure::DdiFailed(st)) => Ok(Some(st)),
        Err(other) => Err(other.into()),
    }
}

fn build_refusals(b: &dyn Backend) -> CaseResult {
    let mut s = open(b)?;
    let p = s.kmtest()?.open(0)?;
    let q = s.kmtest()?.create_queue(p, 0)?;
    let t = s.kmtest()?.create_buffer(p, 4096)?;
    let refused = [
        ("operation 0", TestCommand::Op(0)),
        ("operation MAX", TestCommand::Op(5)),
        (
            "6 bytes",
            TestCommand::Fill {
                dst: t.gpu_va,
                bytes: 6,
                pattern: 1,
            },
        ),
        (
            "a wrapping range",
            TestCommand::Copy {
                src: u64::MAX - 7,
                dst: t.gpu_va,
                bytes: 64,
            },
        ),
        (
            "beyond any GPU VA space",
            TestCommand::Fill {
                dst: 1 << 63,
                bytes: 64,
                pattern: 1,
            },
        ),
    ];
    for (what, cmd) in refused {
        let st = status_of(s.kmtest()?.build(q, cmd, DMA))?;
        ensure!(
            st == Some(STATUS_INVALID_PARAMETER),
            "{what}: the escape returned {st:x?}, not STATUS_INVALID_PARAMETER"
        );
    }
    let fill = TestCommand::Fill {
        dst: t.gpu_va,
        bytes: 64,
        pattern: 1,
    };
    let st = status_of(s.kmtest()?.build(q, fill, 4))?;
    ensure!(
        st == Some(STATUS_BUFFER_OVERFLOW),
        "a 4-byte DMA buffer: {st:x?}, not STATUS_BUFFER_OVERFLOW"
    );
    ensure!(
        status_of(s.kmtest()?.build(q, fill, DMA))?.is_none(),
        "the same FILL with 4 KiB was refused"
    );
    no_fault(&*s)
}

fn fill_copy_read_back(b: &dyn Backend) -> CaseResult {
    let mut s = open(b)?;
    let p = s.kmtest()?.open(0)?;
    let q = s.kmtest()?.create_queue(p, 0)?;
    let t = s.kmtest()?.create_buffer(p, 3 * 4096)?;
    let v = run(
        &mut *s,
        q,
        TestCommand::Fill {
            dst: t.gpu_va,
            bytes: 4096,
            pattern: 0x5EED_1234,
        },
    )?;
    let v2 = run(
        &mut *s,
        q,
        TestCommand::Copy {
            src: t.gpu_va,
            dst: t.gpu_va + 8192,
            bytes: 4096,
        },
    )?;
    ensure!(v2 > v, "progress values {v} then {v2}");
    done(&mut *s, q, v2, "FILL then COPY")?;
    let k = s.kmtest()?;
    for off in [0, 4088, 8192, 8192 + 4088] {
        let got = k.read(t, off)?;
        ensure!(
            got == 0x5EED_1234_5EED_1234,
            "offset {off} reads {got:#x} after FILL and COPY"
        );
    }
    for off in [4096, 8192 + 4096] {
        let got = k.read(t, off)?;
        ensure!(got == 0, "offset {off}, past the range, reads {got:#x}");
    }
    no_fault(&*s)
}

fn fence_order_across_queues(b: &dyn Backend) -> CaseResult {
    let mut s = open(b)?;
    let k = s.kmtest()?;
    let p = k.open(0)?;
    let a = k.create_queue(p, 0)?;
    let bq = k.create_queue(p, 1)?;
    let t = k.create_buffer(p, 2 * 4096)?;
    let gate = k.create_fence(p)?;
    let a_done = k.create_fence(p)?;
    let b_done = k.create_fence(p)?;
    // A: wait for the CPU's gate, FILL, signal. B: wait for A's signal, COPY, signal.
    k.gpu_wait(a, gate, 1)?;
    let fill = k.build(
        a,
        TestCommand::Fill {
            dst: t.gpu_va,
            bytes: 4096,
            pattern: 0xA11C_E5ED,
        },
        DMA,
    )?;
    k.submit(a, &fill)?;
    k.gpu_signal(a, a_done, 1)?;
    k.gpu_wait(bq, a_done, 1)?;
    let copy = k.build(
        bq,
        TestCommand::Copy {
            src: t.gpu_va,
            dst: t.gpu_va + 4096,
            bytes: 4096,
        },
        DMA,
    )?;
    k.submit(bq, &copy)?;
    k.gpu_signal(bq, b_done, 1)?;
    let r = k.cpu_wait(b_done, 1, HELD)?;
    ensure!(
        r == WaitResult::TimedOut,
        "B's COPY finished ({r:?}) before A was released"
    );
    ensure!(
        k.read(t, 4096)? == 0,
        "B copied before A's FILL was released"
    );
    k.cpu_signal(gate, 1)?;
    let r = k.cpu_wait(b_done, 1, DONE)?;
    ensure!(
        r == WaitResult::Satisfied,
        "B's signal after the release: {r:?}"
    );
    for off in [4096, 8184] {
        let got = k.read(t, off)?;
        ensure!(
            got == 0xA11C_E5ED_A11C_E5ED,
            "B's copy at {off} reads {got:#x}: it ran before A's FILL"
        );
    }
    no_fault(&*s)
}

/// What [`fill_behind`] set up: the blocking queue and its progress value, and the other
/// process's queue and buffer.
struct Behind {
    blocked: TestQueue,
    blocked_v: u64,
    q: TestQueue,
    t: TestBuffer,
}

/// Two processes with a queue each on node 0: the first's runs `blocker`, then the second's
/// FILLs the first `bytes` of a new 4 KiB buffer with `pattern`; fails (`what` naming that
/// FILL) unless it completes and lands.
fn fill_behind(
    s: &mut dyn Session,
    blocker: TestCommand,
    bytes: u32,
    pattern: u32,
    what: &str,
) -> Result<Behind, CaseError> {
    let k = s.kmtest()?;
    let bp = k.open(0)?;
    let wp = k.open(0)?;
    let blocked = k.create_queue(bp, 0)?;
    let q = k.create_queue(wp, 0)?;
    let t = k.create_buffer(wp, 4096)?;
    let block = k.build(blocked, blocker, DMA)?;
    let blocked_v = k.submit(blocked, &block)?;
    let fill = k.build(
        q,
        TestCommand::Fill {
            dst: t.gpu_va,
            bytes,
            pattern,
        },
        DMA,
    )?;
    let v = k.submit(q, &fill)?;
    let r = k.wait(q, v, DONE)?;
    ensure!(r == WaitResult::Satisfied, "{what}: waiting ended {r:?}");
    let want = u64::from(pattern) * 0x1_0000_0001;
    for off in [0, u64::from(bytes) - 8] {
        let got = k.read(t, off)?;
        ensure!(
            got == want,
            "{what} did not land: offset {off} reads {got:#x}"
        );
    }
    Ok(Behind {
        blocked,
        blocked_v,
        q,
        t,
    })
}

fn hang_recovered_guilty_only(b: &dyn Backend) -> CaseResult {
    let mut s = open(b)?;
    s.kmtest()?.arm_tdr(0)?;
    let Behind {
        blocked: gq,
        blocked_v: hv,
        q: iq,
        t,
    } = fill_behind(
        &mut *s,
        TestCommand::InfiniteLoop,
        64,
        0x1DD0_C3E7,
        "the innocent queue's FILL behind the hang (no recovery?)",
    )?;
    // Windows either leaves the hung submission's fence where it was or, putting the guilty
    // device in error, writes u64::MAX into each of its monitored fences and releases their
    // waits (24H2 `SetToAlwaysSignaled`, what D3D12 reports as a removed device's completed
    // value). Either way the fence never reads the hung submission's own value.
    let r = s.kmtest()?.wait(gq, hv, HELD)?;
    let reads = s.kmtest()?.done_value(gq)?;
    ensure!(
        r != WaitResult::Satisfied || reads == u64::MAX,
        "the hung submission reports completion: its fence reads {reads:#x}"
    );
    ensure!(
        reads < hv || reads == u64::MAX,
        "the hung submission's fence reads {reads:#x}, at or past its value {hv:#x}"
    );
    if let Some(rec) = observe(s.tdr_trace_ref().and_then(|x| x.tdr_recoveries(0)))? {
        ensure!(
            rec.0 > 0,
            "the innocent work completed without a recovery: {rec:?}"
        );
    }
    // The innocent process goes on.
    let v = run(
        &mut *s,
        iq,
        TestCommand::Fill {
            dst: t.gpu_va + 64,
            bytes: 64,
            pattern: 2,
        },
    )?;
    done(&mut *s, iq, v, "innocent work after the recovery")?;
    no_fault(&*s)
}

fn preemptible_loop_yields(b: &dyn Backend) -> CaseResult {
    let mut s = open(b)?;
    let Behind {
        blocked: lq,
        blocked_v: lv,
        ..
    } = fill_behind(
        &mut *s,
        TestCommand::PreemptibleLoop,
        4096,
        0xFEED_0001,
        "the FILL behind the preemptible loop on the same node",
    )?;
    let k = s.kmtest()?;
    let r = k.wait(lq, lv, HELD)?;
    ensure!(r == WaitResult::TimedOut, "the infinite loop ended: {r:?}");
    // Ending the loop: destroying its queue takes it off the engine.
    k.destroy_queue(lq)?;
    no_fault(&*s)
}
