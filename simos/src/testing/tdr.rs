//! Test-only misbehaving TDR DDIs: table hooks for [`crate::Machine::load_driver_with`]
//! that wrap the driver's real routine and break its contract, to prove the simulated OS
//! catches it (docs/tdr.md#the-simulated-os), or that stretch a window the contract allows.
//! Kept apart from `testing.rs` (the `gpu` stand-in).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::hws::DXGKARG_RESUMEHWENGINE;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_ddi::tdr::{DXGKARG_PREEMPTCOMMAND, DXGKARG_RESETENGINE};

/// How the wrapped `DxgkDdiResetEngine` misreports `LastAbortedFenceId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misreport {
    /// The driver's value plus n (after a hang of the last packet: S + n).
    Plus(u32),
    /// The driver's value minus n (when it is the last completed ID: C - n).
    Minus(u32),
}

/// Calls the real DDI a wrapper saved in `real` with the OS's `(ctx, args)`: `None` when none is
/// saved or `args` is null.
///
/// # Safety
///
/// `real` holds 0 or the address of the driver's DDI of type `(HANDLE, *mut T) -> NTSTATUS`,
/// saved from its validated table; `ctx` and `args` are what the OS passed the wrapper.
unsafe fn call_saved<T>(real: &AtomicUsize, ctx: HANDLE, args: *mut T) -> Option<NTSTATUS> {
    type Ddi<T> = unsafe extern "system" fn(HANDLE, *mut T) -> NTSTATUS;
    let real = real.load(Ordering::Acquire);
    if real == 0 || args.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: a DDI of this type.
    let f = unsafe { std::mem::transmute::<usize, Ddi<T>>(real) };
    // SAFETY: the OS's context and argument block, passed through.
    Some(unsafe { f(ctx, args) })
}

/// The driver's real routine (the same function for every machine of the process).
static REAL: AtomicUsize = AtomicUsize::new(0);
/// The offset the wrapper applies. Process-wide: tests that use it run their machines one
/// after another inside one test function.
static DELTA: AtomicI64 = AtomicI64::new(0);

unsafe extern "system" fn misreporting_reset_engine(
    ctx: HANDLE,
    args: *mut DXGKARG_RESETENGINE,
) -> NTSTATUS {
    // SAFETY: `REAL` holds the driver's DxgkDdiResetEngine; the OS's context and arguments.
    let Some(st) = (unsafe { call_saved(&REAL, ctx, args) }) else {
        return rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
    };
    if st >= 0 {
        // SAFETY: non-null argument block owned by the caller for the call.
        let a = unsafe { &mut *args };
        let d = DELTA.load(Ordering::Acquire);
        a.LastAbortedFenceId = (i64::from(a.LastAbortedFenceId) + d) as u32;
    }
    st
}

/// Replaces `DxgkDdiResetEngine` with a wrapper that misreports `LastAbortedFenceId`.
pub fn misreport_aborted(t: &mut DRIVER_INITIALIZATION_DATA, how: Misreport) {
    if let Some(f) = t.DxgkDdiResetEngine {
        REAL.store(f as usize, Ordering::Release);
    }
    DELTA.store(
        match how {
            Misreport::Plus(n) => i64::from(n),
            Misreport::Minus(n) => -i64::from(n),
        },
        Ordering::Release,
    );
    t.DxgkDdiResetEngine = Some(misreporting_reset_engine);
}

/// The driver's real `DxgkDdiResumeHwEngine`, and how long the wrapper stays in the DDI
/// after it returned (milliseconds). Process-wide, as above.
static REAL_RESUME: AtomicUsize = AtomicUsize::new(0);
static RESUME_LINGER_MS: AtomicU64 = AtomicU64::new(0);
/// Step mode: the wrapper steps the device and services its interrupts instead of sleeping.
static RESUME_STEPS: AtomicBool = AtomicBool::new(false);

unsafe extern "system" fn lingering_resume(
    ctx: HANDLE,
    args: *mut DXGKARG_RESUMEHWENGINE,
) -> NTSTATUS {
    // SAFETY: `REAL_RESUME` holds the driver's DxgkDdiResumeHwEngine; the OS's context and
    // arguments.
    let Some(st) = (unsafe { call_saved(&REAL_RESUME, ctx, args) }) else {
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
    if let Some(f) = t.DxgkDdiResumeHwEngine {
        REAL_RESUME.store(f as usize, Ordering::Release);
    }
    RESUME_LINGER_MS.store(ms, Ordering::Release);
    t.DxgkDdiResumeHwEngine = Some(lingering_resume);
}

/// The fence ID [`claim_on_preempt`]'s stand-in names as last completed.
static CLAIMED: AtomicU32 = AtomicU32::new(0);

/// What the stand-in's synchronised routine reports, and through which interface.
struct PreemptReport {
    iface: DXGKRNL_INTERFACE,
    data: DXGKARGCB_NOTIFY_INTERRUPT_DATA,
}

/// # Safety
/// `ctx` is a live [`PreemptReport`] (the stand-in's, for the synchronised call).
unsafe extern "system" fn report_preempted(ctx: PVOID) -> BOOLEAN {
    // SAFETY: the caller's contract.
    let r = unsafe { &*ctx.cast::<PreemptReport>() };
    if let Some(notify) = r.iface.DxgkCbNotifyInterrupt {
        // SAFETY: the OS's callback with its own handle and a valid report, from a routine
        // synchronised with the ISR.
        unsafe { notify(r.iface.DeviceHandle, &r.data) };
    }
    1
}

unsafe extern "system" fn claiming_preempt(
    ctx: HANDLE,
    args: *const DXGKARG_PREEMPTCOMMAND,
) -> NTSTATUS {
    // SAFETY: the OS's argument block (or null), alive for the call.
    let (Some(a), Some(iface)) = (unsafe { args.as_ref() }, super::interface_for_context(ctx))
    else {
        return rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
    };
    let mut report = PreemptReport {
        iface,
        data: DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_preempted(
            a.PreemptionFenceId,
            CLAIMED.load(Ordering::Acquire),
            a.NodeOrdinal,
            a.EngineOrdinal,
        ),
    };
    let (Some(sync), Some(queue)) = (iface.DxgkCbSynchronizeExecution, iface.DxgkCbQueueDpc) else {
        return rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
    };
    let mut ret: BOOLEAN = 0;
    // SAFETY: the OS's callbacks with its own handle; the routine's context is `report`,
    // alive for the synchronous call.
    unsafe {
        sync(
            iface.DeviceHandle,
            Some(report_preempted),
            (&mut report as *mut PreemptReport).cast(),
            0,
            &mut ret,
        );
        queue(iface.DeviceHandle);
    }
    rvgpu_ddi::ntstatus::STATUS_SUCCESS
}

/// Replaces `DxgkDdiPreemptCommand` with a stand-in that reports the preemption at once, naming
/// the fence ID [`preempt_claims`] set as the last completed one, with no `DmaCompleted`
/// before it: what a driver does whose completion interrupt was lost and whose ring drained.
pub fn claim_on_preempt(t: &mut DRIVER_INITIALIZATION_DATA) {
    t.DxgkDdiPreemptCommand = Some(claiming_preempt);
}

/// The last completed fence ID [`claim_on_preempt`]'s stand-in reports.
pub fn preempt_claims(last: u32) {
    CLAIMED.store(last, Ordering::Release);
}
