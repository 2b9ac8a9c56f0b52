//! Interrupts and DPCs: the device's level-triggered line, the interrupt "CPU" and the DPC
//! thread, and the service functions both modes share.
//!
//! - The device drives a [`SimLine`]; asserting it only wakes the servicer (the device may
//!   drive the line from inside an MMIO access the driver makes, even from the ISR itself, so
//!   the ISR is never run synchronously from `set`).
//! - [`service_interrupt`]: while the adapter's interrupt is connected (after a successful
//!   StartDevice, until StopDevice) the servicer takes the adapter's interrupt lock, switches
//!   the thread to device IRQL and calls `DxgkDdiInterruptRoutine(ctx, 0)`. An ISR that keeps
//!   returning FALSE while the line stays asserted, or claims it forever without clearing it,
//!   is an interrupt storm: bug check 0xF2 `HARDWARE_INTERRUPT_STORM`.
//! - [`service_dpc`]: a DPC the ISR queued runs next, at DISPATCH_LEVEL, one at a time per
//!   machine.
//!
//! Threaded mode runs these on an interrupt thread and a DPC thread per machine; step mode
//! calls them inline from [`crate::Machine::run_steps`]. Same functions, same IRQL bookkeeping.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rvgpu_device::InterruptLine;
use rvgpu_kmd::platform::Irql;

use crate::adapter::AdapterShared;
use crate::bugcheck::{self, BugCheck};
use crate::irql::{self, Routine};
use crate::kernel::{current_irql, IrqlScope, MachineContext};
use crate::state::lock;

/// Consecutive unclaimed ISR calls with the line still asserted before 0xF2.
pub const UNCLAIMED_STORM_LIMIT: u64 = 1_000;
/// Consecutive claimed ISR calls without the line ever dropping before 0xF2 (a livelock: the
/// ISR says "mine" but never clears the cause).
pub const CLAIMED_STORM_LIMIT: u64 = 100_000;

/// A generation counter with a condvar: "something happened, look again".
#[derive(Debug, Default)]
pub struct Wake {
    generation: Mutex<u64>,
    cv: Condvar,
}

impl Wake {
    /// Bumps the generation and wakes every waiter.
    pub fn notify(&self) {
        *lock(&self.generation) += 1;
        self.cv.notify_all();
    }

    /// Current generation.
    pub fn generation(&self) -> u64 {
        *lock(&self.generation)
    }

    /// Waits until the generation differs from `seen` or `timeout` passes.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let g = lock(&self.generation);
        let (g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |g| *g == seen)
            .unwrap_or_else(|p| p.into_inner());
        *g
    }
}

/// The adapter's interrupt line as the device drives it.
#[derive(Debug)]
pub struct SimLine {
    asserted: AtomicBool,
    wake: Arc<Wake>,
}

impl SimLine {
    /// A deasserted line that wakes `wake` when asserted.
    pub fn new(wake: Arc<Wake>) -> Self {
        Self {
            asserted: AtomicBool::new(false),
            wake,
        }
    }

    /// Current level.
    pub fn asserted(&self) -> bool {
        self.asserted.load(Ordering::Acquire)
    }
}

impl InterruptLine for SimLine {
    fn set(&self, asserted: bool) {
        self.asserted.store(asserted, Ordering::Release);
        if asserted {
            self.wake.notify();
        }
    }
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
    if a.state.is_halted() || !a.connected.load(Ordering::Acquire) {
        return Serviced::Idle;
    }
    if !forced && !a.line.asserted() {
        a.reset_storm_counters();
        return Serviced::Idle;
    }
    let Some(isr) = a.table.get().and_then(|t| t.DxgkDdiInterruptRoutine) else {
        a.state
            .raise_sim_error("interrupt connected but DxgkDdiInterruptRoutine is null");
        return Serviced::Idle;
    };
    let ctx = a.context();
    let _m = MachineContext::enter(a.state.clone());
    let claimed = {
        let _guard = lock(&a.interrupt_lock);
        let _irql = IrqlScope::enter(Irql::Device);
        let _inside = a.enter_interrupt_lock();
        if let Err(b) = irql::check(
            Routine::DxgkDdiInterruptRoutine,
            current_irql(),
            isr as usize,
        ) {
            a.state.raise_bugcheck(b);
            return Serviced::Idle;
        }
        a.stats.isr_calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `isr` is the driver's DxgkDdiInterruptRoutine from its validated table;
        // `ctx` is the MiniportDeviceContext its AddDevice returned; we hold the interrupt lock
        // at device IRQL, as Windows calls an ISR.
        unsafe { isr(ctx, 0) != 0 }
    };
    if !forced {
        let still = a.line.asserted();
        if let Some(count) = a.storm_check(claimed, still) {
            a.state.raise_bugcheck(BugCheck::new(
                bugcheck::HARDWARE_INTERRUPT_STORM,
                [isr as usize as u64, ctx as usize as u64, 0, count],
            ));
        }
    }
    Serviced::Ran(claimed)
}

/// Runs the adapter's DPC if one is queued. Returns whether it ran.
pub fn service_dpc(a: &AdapterShared) -> bool {
    if a.state.is_halted() || !a.dpc_queued.swap(false, Ordering::AcqRel) {
        return false;
    }
    let Some(dpc) = a.table.get().and_then(|t| t.DxgkDdiDpcRoutine) else {
        a.state
            .raise_sim_error("DPC queued but DxgkDdiDpcRoutine is null");
        return false;
    };
    let ctx = a.context();
    let _m = MachineContext::enter(a.state.clone());
    let _irql = IrqlScope::enter(Irql::Dispatch);
    if let Err(b) = irql::check(Routine::DxgkDdiDpcRoutine, current_irql(), dpc as usize) {
        a.state.raise_bugcheck(b);
        return false;
    }
    a.stats.dpc_calls.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the driver's DxgkDdiDpcRoutine from its validated table, with its context, at
    // DISPATCH_LEVEL, one DPC at a time (callers serialise per machine).
    unsafe { dpc(ctx) };
    true
}

/// The interrupt "CPU" of a threaded machine: services every adapter whose line is asserted.
pub fn interrupt_thread(adapters: Vec<Arc<AdapterShared>>, wake: Arc<Wake>, stop: Arc<AtomicBool>) {
    let mut seen = wake.generation();
    while !stop.load(Ordering::Acquire) {
        let mut busy = false;
        for a in &adapters {
            let forced = a.take_forced_interrupt();
            if let Serviced::Ran(_) = service_interrupt(a, forced) {
                busy = true;
            }
        }
        if !busy {
            seen = wake.wait(seen, Duration::from_millis(20));
        }
    }
}

/// The DPC thread of a threaded machine: runs queued DPCs one at a time.
pub fn dpc_thread(adapters: Vec<Arc<AdapterShared>>, wake: Arc<Wake>, stop: Arc<AtomicBool>) {
    let mut seen = wake.generation();
    while !stop.load(Ordering::Acquire) {
        let mut busy = false;
        for a in &adapters {
            busy |= service_dpc(a);
        }
        if !busy {
            seen = wake.wait(seen, Duration::from_millis(20));
        }
    }
}
