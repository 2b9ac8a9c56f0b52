//! Running a machine: forced interrupts, step-mode rounds (device steps, interrupts and DPCs
//! on the calling thread), and the thread context and IRQL helpers tests use.

use super::*;
use crate::adapter::context;
use crate::base::clock::MachineTime;

impl Machine {
    /// Raises one interrupt on adapter `i` regardless of the device (as another device on a
    /// shared line would): the ISR runs once. Step mode: inline (with any DPC it queues);
    /// threaded mode: on the interrupt thread.
    pub fn raise_interrupt(&self, i: usize) -> Result<(), SimError> {
        let a = self.adapter(i)?;
        if !a.irq.connected.load(Ordering::Acquire) {
            // Both modes: nothing can deliver an interrupt to a disconnected ISR.
            return Err(self.misuse(format!("adapter {i}'s interrupt is not connected")));
        }
        match self.config.mode {
            Mode::Step => {
                if let Serviced::Idle = interrupt::service_interrupt(a, true) {
                    if !self.state.is_halted() {
                        return Err(
                            self.misuse(format!("adapter {i}'s interrupt is not connected"))
                        );
                    }
                }
                self.service_dpcs();
            }
            Mode::Threaded => a.force_interrupt(),
        }
        match self.state.fault() {
            Some(f) => Err(f.into()),
            None => Ok(()),
        }
    }

    /// Fault injection: holds back adapter `i`'s kernel-timer DPCs (as a long DPC of another
    /// driver on the same processor would) until called again with `false`; timers that fell
    /// due meanwhile then run once ([`crate::adapter::ktimer`]).
    pub fn hold_timer_dpcs(&self, i: usize, on: bool) -> Result<(), SimError> {
        self.adapter(i)?.timers.hold(on);
        Ok(())
    }

    /// Register (BAR0) accesses the driver made to adapter `i` while its function was in D3hot
    /// (reads all-ones, writes dropped: [`crate::hal::bars::D3Hot`]).
    pub fn d3hot_accesses(&self, i: usize) -> Result<u64, SimError> {
        Ok(self.adapter(i)?.d3hot.strays())
    }

    /// Doorbell (BAR2) rings that reached adapter `i` in D3hot and were dropped.
    pub fn d3hot_doorbell_rings(&self, i: usize) -> Result<u64, SimError> {
        Ok(self.adapter(i)?.d3hot.rings())
    }

    fn service_dpcs(&self) -> bool {
        let mut ran = false;
        for a in &self.adapters {
            ran |= interrupt::service_dpc(a);
        }
        ran
    }

    /// One round: every device steps once, interrupts are serviced until the lines drop, DPCs
    /// run. Returns whether anything happened.
    pub(super) fn round(&self) -> bool {
        let mut progress = false;
        for a in &self.adapters {
            progress |= a.device.step();
        }
        for a in &self.adapters {
            let mut n = 0u32;
            while let Serviced::Ran(_) = interrupt::service_interrupt(a, false) {
                progress = true;
                n += 1;
                if self.state.is_halted() || n > 10_000 {
                    break;
                }
            }
        }
        // Kernel timers (a round is a millisecond), before DPCs: a DPC a timer routine
        // queues runs in this round.
        self.state.tdr_history.advance_round();
        for a in &self.adapters {
            a.timers.advance_round();
            progress |= crate::adapter::ktimer::service(a);
        }
        progress |= self.service_dpcs();
        // VidSch's PASSIVE work (this thread is back at PASSIVE_LEVEL).
        for a in &self.adapters {
            progress |=
                crate::ums::run_passive_work(a, &|n| crate::vidsch::tdr::node_has_pending(a, n));
            // VidMm's worker: queued paging and released GPU VA updates.
            progress |= crate::vidmm::worker::turn(self, a, true);
            // TDR detection and recovery (crate::vidsch::tdr; opt-in per adapter).
            progress |=
                crate::vidsch::tdr::run_passive(a, &crate::dxgkrnl::interrupt::InterruptPath);
        }
        progress
    }

    /// Step mode: runs `n` rounds (device step, interrupts, DPCs) whether or not anything
    /// happens (timers such as F1 requests need rounds without work).
    pub fn run_steps(&self, n: usize) -> Result<(), SimError> {
        self.require_step()?;
        for _ in 0..n {
            self.round();
            if let Some(f) = self.state.fault() {
                return Err(f.into());
            }
        }
        Ok(())
    }

    /// Step mode: runs rounds until one does nothing (at most 100 000).
    pub fn run_until_idle(&self) -> Result<(), SimError> {
        self.require_step()?;
        for _ in 0..100_000 {
            let progress = self.round();
            if let Some(f) = self.state.fault() {
                return Err(f.into());
            }
            if !progress {
                return Ok(());
            }
        }
        Err(SimError::Stuck(
            "machine did not go idle in 100000 rounds".into(),
        ))
    }

    /// Runs until `done(self)` holds: step mode steps up to `max_rounds`; threaded mode polls
    /// until every adapter's machine ran for `timeout` ([`MachineTime`]: what `done` waits for
    /// moves with the machine, which a host that starves its GPU thread holds still). Returns
    /// whether it held.
    pub fn run_until(
        &self,
        max_rounds: usize,
        timeout: Duration,
        mut done: impl FnMut(&Self) -> bool,
    ) -> Result<bool, SimError> {
        // Step mode counts rounds; a machine without adapters has only the host's clock.
        let boards: Vec<Option<&Device>> = match (self.config.mode, self.adapters.is_empty()) {
            (Mode::Step, _) => Vec::new(),
            (Mode::Threaded, true) => vec![None],
            (Mode::Threaded, false) => self
                .adapters
                .iter()
                .map(|a| a.emulated.as_deref())
                .collect(),
        };
        let clocks: Vec<(MachineTime, Duration)> = boards
            .into_iter()
            .map(|d| {
                let c = MachineTime::of(d);
                let end = c.now().saturating_add(timeout);
                (c, end)
            })
            .collect();
        let mut rounds = 0;
        loop {
            if let Some(f) = self.state.fault() {
                return Err(f.into());
            }
            if done(self) {
                return Ok(true);
            }
            match self.config.mode {
                Mode::Step => {
                    if rounds >= max_rounds {
                        return Ok(false);
                    }
                    rounds += 1;
                    self.round();
                }
                Mode::Threaded => {
                    if clocks.iter().all(|(c, end)| c.now() >= *end) {
                        return Ok(false);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    fn require_step(&self) -> Result<(), SimError> {
        if self.config.mode == Mode::Step {
            Ok(())
        } else {
            Err(self.misuse("only step-mode machines are stepped".into()))
        }
    }

    /// Makes this machine the calling thread's current machine until the guard drops (tests
    /// that call a callback from the `DXGKRNL_INTERFACE` as driver code would).
    pub fn enter_context(&self) -> context::MachineContext {
        context::MachineContext::enter(self.state.clone())
    }

    /// Runs `f` on the calling thread at `irql` (tests that check IRQL enforcement).
    pub fn at_irql<R>(&self, irql: Irql, f: impl FnOnce(&Self) -> R) -> R {
        let _g = IrqlScope::enter(irql);
        f(self)
    }
}
