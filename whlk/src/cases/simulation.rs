//! `Simulation.*`: the simulated OS is as strict as Windows. These run a misbehaving driver
//! (or call it the way Windows never would) and expect the bug check Windows raises; a real
//! backend reports them unsupported.

use crate::backend::{Backend, Capability, ExecMode, Failure, Misbehaviour};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::session;

/// 0x119 `VIDEO_SCHEDULER_INTERNAL_ERROR`.
const VIDEO_SCHEDULER_INTERNAL_ERROR: u32 = 0x119;
/// 0xA `IRQL_NOT_LESS_OR_EQUAL`.
const IRQL_NOT_LESS_OR_EQUAL: u32 = 0xA;
/// `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED`.
const NATIVE_FENCE_SIGNALED: u64 = 19;

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "Simulation.BugcheckOnBadFenceHandle",
        requirements: &["NF-14"],
        summary:
            "an ISR reporting an unknown native fence handle halts with 0x119 (1, handle, 19, 0)",
        needs: &[
            Capability::FaultInjection,
            Capability::BugChecks,
            Capability::KmdCaps,
        ],
        optional: &[],
        run: bad_fence_handle,
    },
    Case {
        name: "Simulation.IrqlEnforcedDdi",
        requirements: &["DDI-02"],
        summary: "QueryAdapterInfo entered at DISPATCH_LEVEL halts with 0xA",
        needs: &[Capability::DirectDdi, Capability::BugChecks],
        optional: &[],
        run: irql_ddi,
    },
    Case {
        name: "Simulation.IrqlEnforcedCallback",
        requirements: &["DDI-02"],
        summary: "a PASSIVE callback called from the ISR halts with 0xA",
        needs: &[Capability::FaultInjection, Capability::BugChecks],
        optional: &[],
        run: irql_callback,
    },
];

fn expect_bugcheck(r: Result<(), Failure>, code: u32) -> Result<[u64; 4], CaseError> {
    match r {
        Err(Failure::BugCheck(b)) if b.code == code => Ok(b.params),
        Err(Failure::BugCheck(b)) => Err(CaseError::Fail(format!("expected {code:#x}, got {b}"))),
        Err(Failure::Unsupported(m)) => Err(CaseError::Skip(m)),
        Err(other) => Err(CaseError::Fail(format!("expected {code:#x}, got {other}"))),
        Ok(()) => Err(CaseError::Fail(format!(
            "expected bug check {code:#x}, the call succeeded"
        ))),
    }
}

fn bad_fence_handle(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |cfg| {
        cfg.misbehaviour = Some(Misbehaviour::IsrReportsUnknownFenceHandle);
        // The bad handle travels in `pSignaledNativeFenceArray`, which the OS reads only on an
        // adapter without `OptimizedNativeFenceSignaledInterrupt` (LOG-08: with it the OS
        // reads `hHWQueue` and ignores the array). Adapter 0 of the two-adapter session is the
        // iGPU, whose device has no `CAPS.OPTIMIZED_FENCE_IRQ`.
        cfg.adapters = 2;
    })?;
    let p = expect_bugcheck(
        s.faults()?.raise_interrupt(0),
        VIDEO_SCHEDULER_INTERNAL_ERROR,
    )?;
    ensure!(
        p[0] == 1,
        "subtype {:#x}, expected 0x1 (invalid fence ID)",
        p[0]
    );
    ensure!(
        p[2] == NATIVE_FENCE_SIGNALED,
        "interrupt type parameter {:#x}",
        p[2]
    );
    // A halted machine refuses everything with the same bug check.
    let after = s.kmd_caps()?.driver_caps(0).map(|_| ());
    expect_bugcheck(after, VIDEO_SCHEDULER_INTERNAL_ERROR)?;
    Ok(())
}

fn irql_ddi(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |_| {})?;
    let p = expect_bugcheck(
        s.direct_ddi()?.driver_caps_at_dispatch(0).map(|_| ()),
        IRQL_NOT_LESS_OR_EQUAL,
    )?;
    ensure!(
        p[1] == 2,
        "IRQL parameter {} (expected DISPATCH_LEVEL = 2)",
        p[1]
    );
    Ok(())
}

fn irql_callback(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |cfg| {
        cfg.misbehaviour = Some(Misbehaviour::IsrCallsPassiveCallback);
    })?;
    expect_bugcheck(s.faults()?.raise_interrupt(0), IRQL_NOT_LESS_OR_EQUAL)?;
    Ok(())
}
