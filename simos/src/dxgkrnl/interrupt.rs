//! Interrupts and DPCs: the device's level-triggered line, the interrupt "CPU" and the DPC
//! thread, and the service functions both modes share.
//!
//! - The device drives a [`SimLine`]; asserting it only wakes the servicer (the device may
//!   drive the line from inside an MMIO access the driver makes, even from the ISR itself, so
//!   the ISR is never run synchronously from `set`).
//! - [`service_interrupt`]: while the adapter's interrupt is connected (after a successful
//!   StartDevice, until StopDevice) the servicer takes the adapter's interrupt lock, switches
//!   the thread to device IRQL and calls `DxgkDdiInterruptRoutine(ctx, 0)`. An ISR that keeps
//!   returning FALSE while the device keeps requesting (line asserted AND the device's
//!   `INT_STATUS & INT_ENABLE` non-zero), or claims it forever without clearing it, for at
//!   least [`STORM_MIN_DURATION`] (threaded) / [`STORM_MIN_STEPS`] device steps (step mode),
//!   is an interrupt storm: bug check 0xF2 `HARDWARE_INTERRUPT_STORM`.
//! - [`service_dpc`]: a DPC the ISR queued runs next, at DISPATCH_LEVEL, one at a time per
//!   adapter (DPCs of different adapters may run concurrently, as on Windows).
//!
//! Threaded mode runs these on an interrupt thread and a DPC thread per adapter; step mode
//! calls them inline from [`crate::Machine::run_steps`]. Same functions, same IRQL bookkeeping.
//!
//! [`SimLine`]: crate::base::line::SimLine
//! [`STORM_MIN_DURATION`]: crate::adapter::irq::STORM_MIN_DURATION
//! [`STORM_MIN_STEPS`]: crate::adapter::irq::STORM_MIN_STEPS

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, TryLockError};
use std::time::{Duration, Instant};

use rvgpu_kmd::platform::Irql;

use crate::adapter::context::MachineContext;
use crate::adapter::irq::Servant;
use crate::adapter::irql;
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{self, BugCheck};
use crate::base::error::Fault;
use crate::base::line::Wake;
use crate::base::lock::lock;
use crate::base::notify::Notification;
use crate::base::processor::{check_return_irql, current_irql, IrqlScope};

/// Bug check 0x119's subtype 0xD: the one 24H2 raises for a fault report it refuses (every
/// `DXGK_INTERRUPT_DMA_FAULTED`, page-fault flags it does not allow). Microsoft's table of
/// subtypes gives it no name.
pub(crate) const REFUSED_FAULT_REPORT: u64 = 0xD;
/// Subtype 0xC: a page-fault report with `rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_FATAL_HARDWARE_ERROR`.
const FATAL_HARDWARE_PAGE_FAULT: u64 = 0xC;

/// `M:VidSchiValidatePageFaultFlags` @0x14004B1BC, called for `DmaPageFaulted` at ISR time and
/// again for every hardware-queue page fault at DPC time: `FATAL_HARDWARE_ERROR` (0x10) is bug
/// check 0x119 subtype 0xC; both reset kinds at once (0xC), or a bit above 0x80, subtype 0xD.
/// Parameter 2 is the flags.
pub(crate) fn validate_page_fault_flags(flags: u32) -> Result<(), BugCheck> {
    let refuse = |sub| Err(BugCheck::video_scheduler(sub, u64::from(flags), 0, 0));
    let both_resets = rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_ADAPTER_RESET_REQUIRED
        | rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED;
    if flags & rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_FATAL_HARDWARE_ERROR as u32 != 0 {
        return refuse(FATAL_HARDWARE_PAGE_FAULT);
    }
    if flags & both_resets as u32 == both_resets as u32 || flags >= 0x100 {
        return refuse(REFUSED_FAULT_REPORT);
    }
    Ok(())
}

/// A page-fault report that names no packet (`rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_FENCE_INVALID`) must name a
/// context (`HW_CONTEXT_VALID`) or ask for a reset, else bug check 0x119 subtype 0xD (flags, the
/// handle it names, the address): `M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0, which
/// `DmaPageFaulted` of that form also reaches (`M:VidSchDdiNotifyInterruptWorker` @0x140006B60
/// queues it as a hardware-queue fault).
pub(crate) fn check_unattributed_fault(flags: u32, handle: usize, va: u64) -> Result<(), BugCheck> {
    let resets = (rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_ADAPTER_RESET_REQUIRED
        | rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED) as u32;
    if flags & rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_FENCE_INVALID as u32 != 0
        && flags & rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_HW_CONTEXT_VALID as u32 == 0
        && flags & resets == 0
    {
        return Err(BugCheck::video_scheduler(
            REFUSED_FAULT_REPORT,
            u64::from(flags),
            handle as u64,
            va,
        ));
    }
    Ok(())
}

/// What one interrupt service did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serviced {
    /// Nothing to do (not connected, halted, line low and no forced interrupt).
    Idle,
    /// The ISR ran and returned this.
    Ran(bool),
}

/// Runs the ISR once if the adapter's interrupt is connected and the line is asserted (or
/// `forced`: a test raising one interrupt as on a shared line). Checks for storms.
pub fn service_interrupt(a: &AdapterShared, forced: bool) -> Serviced {
    if a.state.is_halted() || !a.irq.connected.load(Ordering::Acquire) {
        return Serviced::Idle;
    }
    if a.irq.msi {
        return service_message(a, forced);
    }
    // The line as a level: the latch the device's deliverer drives and, where the board can
    // tell, the device's request itself. The latch is a thread's copy of the level and lags
    // it for as long as that thread is held up (preempted, or inside a wake-up call); a real
    // line falls within nanoseconds of the ISR's acknowledge. Sampled the latch alone, the
    // ISR ran again and again after clearing its cause (about 300 unclaimed calls per
    // interrupt in the threaded wake bench). A request that rises again under a
    // latch still high wakes this servicer anyway (the device's `Drive::Remind`).
    let level = a.irq.line.asserted() && a.device.request_level() != Some(false);
    if !forced && !level {
        a.reset_storm_counters();
        return Serviced::Idle;
    }
    let Some(run) = run_isr(a) else {
        return Serviced::Idle;
    };
    if !forced && run.returned_ok {
        // The device's own level, not only the line: the line may lag the device by a
        // deliverer that has not run yet.
        let requesting = a.irq.line.asserted() && a.device.interrupt_pending();
        if let Some(count) = a.storm_check(run.claimed, requesting, a.device.gpu_clock()) {
            a.state.raise_bugcheck(BugCheck::new(
                bugcheck::HARDWARE_INTERRUPT_STORM,
                [run.isr, run.ctx, 0, count],
            ));
        }
    }
    Serviced::Ran(run.claimed)
}

/// A message-signalled interrupt: the ISR runs once per pending message, with
/// `MessageNumber` 0 (the function has one message). A message is never shared and carries
/// no level, so there is no storm to detect: an ISR that leaves its causes pending simply
/// hears nothing more until the device sends another message.
fn service_message(a: &AdapterShared, forced: bool) -> Serviced {
    if !a.irq.line.take_message() && !forced {
        return Serviced::Idle;
    }
    run_isr(a).map_or(Serviced::Idle, |r| Serviced::Ran(r.claimed))
}

/// What one ISR call did.
struct IsrRun {
    claimed: bool,
    /// It returned at the IRQL it was called at.
    returned_ok: bool,
    /// Its address and context (bug-check parameters).
    isr: u64,
    ctx: u64,
}

/// One call of `DxgkDdiInterruptRoutine(ctx, 0)` as Windows makes it: under the adapter's
/// interrupt lock, at device IRQL, with the IRQL rules checked on entry and return. `None`:
/// not called (no ISR, the interrupt disconnected or the machine halted meanwhile, or the
/// entry check bug-checked).
fn run_isr(a: &AdapterShared) -> Option<IsrRun> {
    let Some(isr) = a
        .table
        .slot(|t| crate::adapter::ddi::in_table!(t, DxgkDdiInterruptRoutine))
        .flatten()
    else {
        a.state
            .raise_sim_error("interrupt connected but DxgkDdiInterruptRoutine is null");
        return None;
    };
    let ctx = a.context();
    let _m = MachineContext::enter(a.state.clone());
    let _guard = a.lock_interrupt();
    // Re-check under the lock: StopDevice disconnects the interrupt and then takes the lock
    // once, so an ISR that was waiting for it must not run after the disconnect
    // (IoDisconnectInterruptEx guarantees the ISR is not running and will not run again).
    if a.state.is_halted() || !a.irq.connected.load(Ordering::Acquire) {
        return None;
    }
    let _irql = IrqlScope::enter(Irql::Device);
    if let Err(b) = irql::check(isr.routine(), current_irql(), isr.address()) {
        a.state.raise_bugcheck(b);
        return None;
    }
    a.observer().isr_called();
    let before = a.device.bus_counts();
    // A PCI function (the guest test): the ISR's own register reads, reported by the harness.
    #[cfg(target_os = "linux")]
    let thread_reads = a.emulated.is_none().then(crate::hal::pci::thread_reads);
    // Under the interrupt lock at device IRQL, as Windows calls an ISR.
    let claimed = isr.call_bare((ctx, 0)) != 0;
    let after = a.device.bus_counts();
    #[cfg(target_os = "linux")]
    if let Some(before) = thread_reads {
        crate::hal::pci::note_isr(crate::hal::pci::thread_reads().wrapping_sub(before));
    }
    a.observer().charge_bus(isr.routine(), before, after);
    let returned = check_return_irql(
        Irql::Device,
        bugcheck::irql_unexpected::INTERRUPT_SERVICE_ROUTINE,
        isr.address() as u64,
        ctx as usize as u64,
        0,
    );
    if let Err(b) = returned {
        a.state.raise_bugcheck(b);
    }
    Some(IsrRun {
        claimed,
        returned_ok: returned.is_ok(),
        isr: isr.address() as u64,
        ctx: ctx as usize as u64,
    })
}

/// What the OS does with the notifications the ISR reported, at `DxgkCbNotifyDpc`: each goes
/// to the component that acts on it, then to the processed log, then VidSch does its DMA
/// fence bookkeeping. Returns how many notifications there were.
pub fn process_pending(a: &AdapterShared) -> usize {
    let n = a.drain_pending(|a, drained| {
        // VidSch's DPC-time fence work is recorded here and done when the driver's DPC
        // returns ([`crate::sync::fence::process_dpc_work`]).
        crate::sync::fence::note_notifications(a, drained.iter().map(|p| &p.notification));
        for p in drained {
            if let Notification::EngineStateChange {
                node, new_state, ..
            } = p.notification
            {
                crate::ums::note_engine_state(a, node, new_state);
            }
            if let Notification::HwQueuePageFaulted {
                queue, va, flags, ..
            } = p.notification
            {
                hw_queue_page_faulted(a, queue, va, flags);
            }
            if let Notification::SchedulingLogInterrupt { node, .. } = p.notification {
                crate::vidsch::hws::log_interrupt(a, node);
            }
        }
    });
    // VidSch's DMA fence bookkeeping (crate::vidsch::tdr).
    crate::vidsch::tdr::dpc_process(a);
    n
}

/// A `DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED` report at DPC time, as
/// `M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0 takes it: the flags validated again,
/// then by flag 0x2 (`FENCE_INVALID`): clear, `FaultedHwQueue` is Dxgkrnl's queue object, whose
/// device goes to error ([`crate::ums::note_page_fault`]); set, it names a context
/// (`HW_CONTEXT_VALID`) or nothing, and then a reset must be asked for. A reset it asks for is
/// VidSch's ([`crate::vidsch::tdr::isr_report`]).
fn hw_queue_page_faulted(a: &AdapterShared, queue: usize, va: u64, flags: u32) {
    if let Err(b) =
        validate_page_fault_flags(flags).and_then(|()| check_unattributed_fault(flags, queue, va))
    {
        a.state.raise_bugcheck(b);
        return;
    }
    if flags & rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_FENCE_INVALID as u32 == 0 {
        crate::ums::note_page_fault(a, queue, va);
    }
}

/// Runs the adapter's DPC if one is queued. Returns whether it ran.
///
/// The DPC runs under the adapter's DPC gate, so [`flush_dpcs`] can wait for a DPC that is
/// running, not only for one that is queued. A DPC still queued once the gate is closed (the
/// adapter stopped or removed) is never delivered to the driver: that is a simulation error.
pub fn service_dpc(a: &AdapterShared) -> bool {
    // Queued, then held: in this order (the queue sets them the other way round).
    if a.state.is_halted()
        || !a.irq.dpc_queued.load(Ordering::Acquire)
        || a.irq.dpc_held.load(Ordering::Acquire)
    {
        return false;
    }
    let gate = lock(&a.irq.dpc_gate);
    if !*gate {
        if a.irq.dpc_queued.swap(false, Ordering::AcqRel) {
            a.state.raise_sim_error(format!(
                "a DPC was queued on adapter {} after its DPCs were flushed at StopDevice \
                 (or before StartDevice); the simulation will not call the driver's DPC for a \
                 stopped adapter",
                a.index
            ));
        }
        return false;
    }
    if a.state.is_halted() || !a.irq.dpc_queued.swap(false, Ordering::AcqRel) {
        return false;
    }
    let Some(dpc) = a
        .table
        .slot(|t| crate::adapter::ddi::in_table!(t, DxgkDdiDpcRoutine))
        .flatten()
    else {
        a.state
            .raise_sim_error("DPC queued but DxgkDdiDpcRoutine is null");
        return false;
    };
    let ctx = a.context();
    let _m = MachineContext::enter(a.state.clone());
    let _irql = IrqlScope::enter(Irql::Dispatch);
    if let Err(b) = irql::check(dpc.routine(), current_irql(), dpc.address()) {
        a.state.raise_bugcheck(b);
        return false;
    }
    a.observer().dpc_called();
    let before = a.device.bus_counts();
    // At DISPATCH_LEVEL, one DPC at a time per adapter (under the DPC gate).
    dpc.call_bare(ctx);
    a.observer()
        .charge_bus(dpc.routine(), before, a.device.bus_counts());
    if let Err(b) = check_return_irql(
        Irql::Dispatch,
        bugcheck::irql_unexpected::SIM_DPC,
        dpc.address() as u64,
        ctx as usize as u64,
        0,
    ) {
        a.state.raise_bugcheck(b);
    }
    // VidSch's DPC-time work on what the DPC notified (native fences, NF-04), still at
    // DISPATCH_LEVEL and under the gate (so a DPC flush also waits for it). On 24H2 it ran
    // inside the driver's DxgkCbNotifyDpc already (callbacks::interrupt::notify_dpc).
    let after =
        a.os.windows.reading().dpc_fence_work == crate::os::answers::DpcFenceWork::AfterDpcReturns;
    if after && !a.state.is_halted() {
        crate::sync::fence::process_dpc_work(a);
    }
    drop(gate);
    true
}

/// How long [`flush_dpcs`] waits for a queued or running DPC before it declares the
/// simulation stuck.
pub const DPC_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// `KeFlushQueuedDpcs` for one adapter, then closes its DPC gate: returns once no DPC of the
/// adapter is queued or running. `threaded`: the DPC thread delivers queued DPCs and this
/// waits (a DPC that does not finish within [`DPC_FLUSH_TIMEOUT`] is a simulation error);
/// otherwise queued DPCs run here, inline.
pub fn flush_dpcs(a: &AdapterShared, threaded: bool) -> Result<(), Fault> {
    if !threaded {
        for _ in 0..10_000 {
            if !service_dpc(a) {
                break;
            }
        }
        if let Some(f) = a.state.fault() {
            return Err(f);
        }
        let mut gate = lock(&a.irq.dpc_gate);
        if a.irq.dpc_queued.load(Ordering::Acquire) {
            drop(gate);
            let msg = format!("adapter {}: the DPC keeps queueing itself", a.index);
            a.state.raise_sim_error(msg.clone());
            return Err(Fault::Violation(msg));
        }
        *gate = false;
        return Ok(());
    }
    let deadline = Instant::now().checked_add(DPC_FLUSH_TIMEOUT);
    loop {
        if let Some(f) = a.state.fault() {
            return Err(f);
        }
        if !a.irq.dpc_queued.load(Ordering::Acquire) {
            let gate = match a.irq.dpc_gate.try_lock() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            // Holding the gate: no DPC of this adapter is running; none is queued either.
            if let Some(mut g) = gate {
                if !a.irq.dpc_queued.load(Ordering::Acquire) {
                    *g = false;
                    return Ok(());
                }
            }
        }
        if deadline.is_none_or(|d| Instant::now() >= d) {
            let msg = format!(
                "adapter {}: KeFlushQueuedDpcs at StopDevice did not return within {:?} (a DPC \
                 is still queued or running)",
                a.index, DPC_FLUSH_TIMEOUT
            );
            a.state.raise_sim_error(msg.clone());
            return Err(Fault::Violation(msg));
        }
        a.irq.dpc_wake.notify();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A simulation thread's loop: runs `step` until `stop`, at once again when it did something,
/// else when `wake` is notified (or after 20 ms).
fn serve(stop: &AtomicBool, wake: &Wake, mut step: impl FnMut() -> bool) {
    let mut seen = wake.generation();
    while !stop.load(Ordering::Acquire) {
        if !step() {
            seen = wake.wait(seen, Duration::from_millis(20));
        }
    }
}

/// The interrupt "CPU" of one adapter of a threaded machine: services its line.
pub fn interrupt_thread(a: Arc<AdapterShared>, stop: Arc<AtomicBool>) {
    serve(&stop, &a.irq.irq_wake, || {
        a.irq.starved(Servant::Isr);
        let forced = a.take_forced_interrupt();
        let Serviced::Ran(_) = service_interrupt(&a, forced) else {
            return false;
        };
        // A PCI board re-arms its masked INTx here (nothing for the in-process line).
        a.device.end_of_interrupt();
        true
    });
}

/// The DPC thread of one adapter of a threaded machine: runs its queued DPCs one at a time.
pub fn dpc_thread(a: Arc<AdapterShared>, stop: Arc<AtomicBool>) {
    serve(&stop, &a.irq.dpc_wake, || {
        a.irq.starved(Servant::Dpc);
        if !service_dpc(&a) {
            return false;
        }
        // After the DPC, not with the interrupt: the waiters it released run first. And only
        // when the worker has something to look at (work the DPC left, or TDR detection, which
        // follows the fences the DPC reported): a wake-up it does not need is a system call
        // here and a thread competing with the released waiter.
        if crate::vidsch::tdr::enabled_anywhere() || crate::ums::has_work(&a) {
            a.sch.wake.notify();
        }
        true
    });
}

/// VidSch's PASSIVE worker of one adapter of a threaded machine: runs the work the DPC queued
/// (engine F1 transitions, UM-13) at PASSIVE_LEVEL.
pub fn worker_thread(a: Arc<AdapterShared>, stop: Arc<AtomicBool>) {
    serve(&stop, &a.sch.wake, || {
        if crate::ums::has_work(&a) {
            let _m = MachineContext::enter(a.state.clone());
            if crate::ums::run_passive_work(&a, &|n| crate::vidsch::tdr::node_has_pending(&a, n)) {
                return true;
            }
        }
        // TDR detection and recovery (crate::vidsch::tdr; opt-in per adapter).
        crate::vidsch::tdr::run_passive(&a, &InterruptPath)
    });
}

/// VidMm's worker thread of one adapter of a threaded machine (`crate::vidmm::worker`): queued
/// paging and released GPU VA updates, done on their own, at PASSIVE_LEVEL.
pub fn vidmm_thread(a: Arc<AdapterShared>, stop: Arc<AtomicBool>) {
    serve(&stop, &a.mm.wake, || {
        if !crate::vidmm::worker::has_work(&a) {
            return false;
        }
        let _m = MachineContext::enter(a.state.clone());
        crate::vidsch::passive::run_vidmm_worker(&a)
    });
}

/// Dxgkrnl's interrupt path as VidSch's TDR runs it inline in step mode
/// ([`crate::vidsch::tdr::Interrupts`]).
pub(crate) struct InterruptPath;

impl crate::vidsch::tdr::Interrupts for InterruptPath {
    fn service_interrupt(&self, a: &AdapterShared) -> bool {
        matches!(service_interrupt(a, false), Serviced::Ran(_))
    }

    fn service_dpc(&self, a: &AdapterShared) -> bool {
        service_dpc(a)
    }
}
