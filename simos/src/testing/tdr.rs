//! Test-only misbehaving TDR DDIs: table hooks for [`crate::Machine::load_driver_with`]
//! that wrap the driver's real routine and break its contract, to prove the simulated OS
//! catches it (docs/tdr.md#the-simulated-os), or that stretch a window the contract allows.
//! Kept apart from `testing.rs` (the `gpu` stand-in).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rvgpu_ddi::basic::*;
use rvgpu_ddi::hws::{DXGKARG_RESUMEHWENGINE, PDXGKDDI_RESUMEHWENGINE};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_ddi::tdr::{DXGKARG_PREEMPTCOMMAND, DXGKARG_RESETENGINE, PDXGKDDI_RESETENGINE};

use crate::adapter::ddi::{in_table, SlotType};
use crate::adapter::irq::Servant;
use crate::machine::{Machine, Mode};
use crate::testing::ffi::{self, Callbacks, HandleMutStandIn, HandleRefStandIn, Saved};

/// How the wrapped `DxgkDdiResetEngine` misreports `LastAbortedFenceId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misreport {
    /// The driver's value plus n (after a hang of the last packet: S + n).
    Plus(u32),
    /// The driver's value minus n (when it is the last completed ID: C - n).
    Minus(u32),
}

/// The driver's real routine (the same function for every machine of the process).
static REAL: Saved<<PDXGKDDI_RESETENGINE as SlotType>::F> = Saved::new();
/// The offset the wrapper applies. Process-wide: tests that use it run their machines one
/// after another inside one test function.
static DELTA: AtomicI64 = AtomicI64::new(0);

struct MisreportingResetEngine;
impl HandleMutStandIn for MisreportingResetEngine {
    type Block = DXGKARG_RESETENGINE;
    fn run(ctx: HANDLE, a: &mut DXGKARG_RESETENGINE) -> NTSTATUS {
        let Some(st) = REAL.call((ctx, &mut *a)) else {
            return rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
        };
        if st >= 0 {
            let d = DELTA.load(Ordering::Acquire);
            a.LastAbortedFenceId = (i64::from(a.LastAbortedFenceId) + d) as u32;
        }
        st
    }
}

/// Replaces `DxgkDdiResetEngine` with a wrapper that misreports `LastAbortedFenceId`.
pub fn misreport_aborted(t: &mut DRIVER_INITIALIZATION_DATA, how: Misreport) {
    if t.DxgkDdiResetEngine.is_some() {
        REAL.save(in_table!(t, DxgkDdiResetEngine));
    }
    DELTA.store(
        match how {
            Misreport::Plus(n) => i64::from(n),
            Misreport::Minus(n) => -i64::from(n),
        },
        Ordering::Release,
    );
    t.DxgkDdiResetEngine = Some(ffi::handle_mut::<MisreportingResetEngine>);
}

/// The driver's real `DxgkDdiResumeHwEngine`, and how long the wrapper stays in the DDI
/// after it returned (milliseconds). Process-wide, as above.
static REAL_RESUME: Saved<<PDXGKDDI_RESUMEHWENGINE as SlotType>::F> = Saved::new();
static RESUME_LINGER_MS: AtomicU64 = AtomicU64::new(0);
/// Step mode: the wrapper steps the device and services its interrupts instead of sleeping.
static RESUME_STEPS: AtomicBool = AtomicBool::new(false);

struct LingeringResume;
impl HandleMutStandIn for LingeringResume {
    type Block = DXGKARG_RESUMEHWENGINE;
    fn run(ctx: HANDLE, args: &mut DXGKARG_RESUMEHWENGINE) -> NTSTATUS {
        lingering_resume(ctx, args)
    }
}

fn lingering_resume(ctx: HANDLE, args: &mut DXGKARG_RESUMEHWENGINE) -> NTSTATUS {
    let Some(st) = REAL_RESUME.call((ctx, args)) else {
        return rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
    };
    let ms = RESUME_LINGER_MS.load(Ordering::Acquire);
    let stepped = RESUME_STEPS.load(Ordering::Acquire);
    match crate::adapter::AdapterShared::from_context(ctx) {
        // Step mode: what the device and the interrupt thread would do meanwhile.
        Some(a) if stepped => {
            let Some(dev) = a.emulated.clone() else {
                return st;
            };
            for _ in 0..ms.saturating_mul(100) {
                let stepped = dev.step();
                let serviced = matches!(
                    crate::dxgkrnl::interrupt::service_interrupt(&a, false),
                    crate::dxgkrnl::interrupt::Serviced::Ran(_)
                );
                if !stepped && !serviced {
                    break;
                }
            }
        }
        _ => std::thread::sleep(std::time::Duration::from_millis(ms)),
    }
    st
}

/// Replaces `DxgkDdiResumeHwEngine` with a wrapper that returns `ms` milliseconds after the
/// engine resumed (a driver may take its time; the contract allows it): the engine runs, and
/// interrupts, before the OS gets the status back. `step`: a step-mode machine, where the
/// wrapper steps the device and services its interrupts itself (up to `ms` × 100 passes).
pub fn linger_after_resume(t: &mut DRIVER_INITIALIZATION_DATA, ms: u64, step: bool) {
    RESUME_STEPS.store(step, Ordering::Release);
    if t.DxgkDdiResumeHwEngine.is_some() {
        REAL_RESUME.save(in_table!(t, DxgkDdiResumeHwEngine));
    }
    RESUME_LINGER_MS.store(ms, Ordering::Release);
    t.DxgkDdiResumeHwEngine = Some(ffi::handle_mut::<LingeringResume>);
}

/// The fence ID [`claim_on_preempt`]'s stand-in names as last completed.
static CLAIMED: AtomicU32 = AtomicU32::new(0);

struct ClaimingPreempt;
impl HandleRefStandIn for ClaimingPreempt {
    type Block = DXGKARG_PREEMPTCOMMAND;
    fn run(ctx: HANDLE, a: &DXGKARG_PREEMPTCOMMAND) -> NTSTATUS {
        let Some(iface) = Callbacks::for_context(ctx) else {
            return rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
        };
        let data = DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_preempted(
            a.PreemptionFenceId,
            CLAIMED.load(Ordering::Acquire),
            a.NodeOrdinal,
            a.EngineOrdinal,
        );
        // Reported from a routine synchronised with the ISR, then the DPC queued.
        iface.synchronize(&mut || {
            iface.notify_interrupt(&data, &mut []);
            1
        });
        iface.queue_dpc();
        rvgpu_ddi::ntstatus::STATUS_SUCCESS
    }
}

/// Replaces `DxgkDdiPreemptCommand` with a stand-in that reports the preemption at once, naming
/// the fence ID [`preempt_claims`] set as the last completed one, with no `DmaCompleted`
/// before it: what a driver does whose completion interrupt was lost and whose ring drained.
pub fn claim_on_preempt(t: &mut DRIVER_INITIALIZATION_DATA) {
    t.DxgkDdiPreemptCommand = Some(ffi::handle_ref::<ClaimingPreempt>);
}

/// The last completed fence ID [`claim_on_preempt`]'s stand-in reports.
pub fn preempt_claims(last: u32) {
    CLAIMED.store(last, Ordering::Release);
}

/// Test hook (threaded mode): adapter `i`'s interrupt and DPC threads stop for `d` of host
/// time at their next look, as processors the host does not schedule; returns once both have
/// stopped, with whether both did (`false` in step mode, which has no such threads, or for a
/// machine whose threads have stopped). An interrupt raised meanwhile stays raised, a DPC
/// queued stays queued, for whoever services them first.
#[must_use]
pub fn starve_interrupt_threads(m: &Machine, i: usize, d: Duration) -> bool {
    let Ok(a) = m.adapter_shared(i) else {
        return false;
    };
    if m.config().mode != Mode::Threaded {
        return false;
    }
    a.irq.starve(Servant::Isr, d);
    a.irq.starve(Servant::Dpc, d);
    a.irq.irq_wake.notify();
    a.irq.dpc_wake.notify();
    // Each thread takes the request at the top of its next look, within one wait of 20 ms
    // (bounded, for a machine whose threads have stopped).
    let end = Instant::now() + Duration::from_secs(5);
    let pending = || a.irq.starving(Servant::Isr) || a.irq.starving(Servant::Dpc);
    while pending() && Instant::now() < end {
        std::thread::sleep(Duration::from_micros(200));
    }
    !pending()
}
