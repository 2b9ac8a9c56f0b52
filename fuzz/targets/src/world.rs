//! The simulated machine the OS-level targets share: built once per fuzz process (lazily),
//! with an innocent process that must be unaffected by every input.
//!
//! Per input a hostile process is created, does what the input says, and is killed (abnormal
//! exit, UM-18). Then [`World::check`] asserts the invariants: the machine has not halted (no
//! bug check, no simulation error), the innocent process's canary allocation is unchanged,
//! its user-mode queue still completes a submission, and the OS's object counts and the
//! machine's allocated system memory are back to the baseline taken before the input.

use std::sync::{Mutex, MutexGuard};

use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{Machine, MachineConfig, Mode, UmsProcess};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt};
use rvgpu_umd::submit::{QueueConfig, UserQueue};

const CANARY: u64 = 0x1AAC_E5A1_CA4A_4155;
const CANARY_BYTES: u64 = 4096;

/// What must be the same after every input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Baseline {
    /// (devices, contexts, hardware queues, doorbells, allocations) the OS holds.
    pub ums: (usize, usize, usize, usize, usize),
    /// (native fences, monitored fences, D3DKMT native-fence handles) the OS holds.
    pub fences: (usize, usize, usize),
    /// (paging queues, GPU VA ranges, mapped parts of them) processes made through the
    /// D3DKMT VA thunks.
    pub gpuva: (usize, usize, usize),
    /// Bytes of system memory allocated on the machine, fence pages excepted (the simulated
    /// OS keeps those for the machine's life).
    pub system_bytes: u64,
}

/// The shared machine and its innocent process.
pub struct World {
    /// The machine (leaked: it lives as long as the fuzz process).
    pub m: &'static Machine,
    /// The innocent process.
    pub innocent: UmsProcess,
    canary: Allocation<SimMem>,
    target: Allocation<SimMem>,
    queue: UserQueue<SimKmt<'static>>,
    round: u64,
    baseline: Baseline,
    /// Inputs run on this machine.
    inputs: u64,
}

/// Inputs per machine: the simulated OS keeps some records for the machine's life (processed
/// notifications, fence pages), so a long campaign replaces the machine now and then to keep
/// the fuzz process's memory bounded.
const INPUTS_PER_MACHINE: u64 = 2_000;

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World").field("round", &self.round).finish()
    }
}

static WORLD: Mutex<Option<World>> = Mutex::new(None);

/// A queue config small enough to be cheap.
pub fn queue_config(node: u32) -> QueueConfig {
    QueueConfig {
        node,
        ring_size: 4096,
        command_buffer_size: 4096,
        ..QueueConfig::default()
    }
}

impl World {
    fn build() -> Self {
        let mut cfg = MachineConfig::single(Mode::Step);
        cfg.adapters[0].device.doorbells = 8;
        let mut m = Machine::new(cfg);
        m.load_driver().expect("load driver");
        m.start_adapter(0).expect("start adapter");
        let m: &'static Machine = Box::leak(Box::new(m));
        let innocent = m.create_process(0).expect("innocent process");
        let k = m.kmt(&innocent);
        let canary = k.create_allocation(CANARY_BYTES).expect("canary");
        for off in (0..CANARY_BYTES).step_by(8) {
            canary.mem.store(off, CANARY);
        }
        let target = k.create_allocation(4096).expect("target");
        let queue = UserQueue::new(k, &queue_config(0)).expect("innocent queue");
        let mut w = Self {
            m,
            innocent,
            canary,
            target,
            queue,
            round: 0,
            inputs: 0,
            baseline: Baseline {
                ums: (0, 0, 0, 0, 0),
                fences: (0, 0, 0),
                gpuva: (0, 0, 0),
                system_bytes: 0,
            },
        };
        // One round trip first, so lazily created state is part of the baseline.
        w.innocent_completes();
        w.baseline = w.measure();
        w
    }

    /// The counts compared before and after an input.
    pub fn measure(&self) -> Baseline {
        let (fences, fence_pages) = self.m.fence_live_counts(0);
        Baseline {
            ums: self.m.ums_live_counts(0),
            fences,
            gpuva: self.m.gpuva_live_counts(0),
            system_bytes: self.m.memory().system_used().saturating_sub(fence_pages),
        }
    }

    /// The machine has not halted; panics with its log otherwise.
    pub fn no_fault(&self, what: &str) {
        if let Some(f) = self.m.fault() {
            let log = self.m.driver_log();
            let tail: Vec<_> = log.iter().rev().take(20).collect();
            panic!("{what}: machine fault {f}; last log lines {tail:#?}");
        }
    }

    fn innocent_completes(&mut self) {
        self.round = self.round.wrapping_add(1);
        let pattern = self.round;
        let done = self
            .queue
            .submit(&[Command::Fill {
                dst: self.target.gpu_va,
                bytes: 8,
                pattern,
            }])
            .unwrap_or_else(|e| {
                let log = self.m.driver_log();
                let tail: Vec<_> = log.iter().rev().take(20).collect();
                panic!(
                    "innocent submit failed: {e:?}; OS events {:#?}; last log lines {tail:#?}",
                    self.m.ums_events(0)
                )
            });
        self.queue
            .wait(done)
            .unwrap_or_else(|e| panic!("innocent queue did not complete: {e:?}"));
        assert_eq!(
            self.target.mem.load(0),
            pattern,
            "innocent queue's write missing"
        );
    }

    /// The invariants after a hostile process was torn down.
    pub fn check(&mut self) {
        self.no_fault("after the hostile process");
        for off in (0..CANARY_BYTES).step_by(8) {
            assert_eq!(
                self.canary.mem.load(off),
                CANARY,
                "innocent canary word {off:#x} changed"
            );
        }
        self.innocent_completes();
        self.no_fault("after the innocent submission");
        let now = self.measure();
        assert_eq!(now, self.baseline, "objects or memory leaked");
    }

    /// Creates the hostile process.
    pub fn hostile(&mut self) -> UmsProcess {
        self.inputs += 1;
        // Per-input records the invariants do not use.
        self.m.clear_ums_events(0);
        self.no_fault("before the input");
        self.m
            .create_process(0)
            .unwrap_or_else(|e| panic!("hostile process: {e}"))
    }

    /// Kills the hostile process (abnormal exit) and lets the machine settle.
    pub fn kill(&self, p: &UmsProcess) {
        if let Err(e) = self.m.kill_process(p) {
            panic!("kill_process: {e}");
        }
        if let Err(e) = self.m.run_steps(4) {
            panic!("after kill: {e}");
        }
    }
}

/// Runs `f` on the shared world (built on first use, replaced every `INPUTS_PER_MACHINE`
/// inputs), one input at a time.
pub fn with_world<R>(f: impl FnOnce(&mut World) -> R) -> R {
    let mut g: MutexGuard<'_, Option<World>> = WORLD.lock().unwrap_or_else(|p| p.into_inner());
    if g.as_ref().is_some_and(|w| w.inputs >= INPUTS_PER_MACHINE) {
        if let Some(old) = g.take() {
            old.retire();
        }
    }
    let w = g.get_or_insert_with(World::build);
    f(w)
}

impl World {
    /// Drops everything that borrows the machine, then the machine.
    fn retire(self) {
        let World {
            m,
            queue,
            canary,
            target,
            ..
        } = self;
        drop(queue);
        drop(canary);
        drop(target);
        let raw = std::ptr::from_ref(m).cast_mut();
        // SAFETY: `m` came from `Box::leak` in `build`, and every borrower of it (the queue and
        // its thunks, the allocations' views, the hostile processes of finished inputs) is
        // gone, so this is the only reference and the box is freed once.
        drop(unsafe { Box::from_raw(raw) });
    }
}

#[cfg(test)]
mod tests {
    /// A long campaign replaces the shared machine: the old one is torn down (its adapter
    /// stopped and removed) and inputs keep passing on the new one.
    #[test]
    fn shared_machine_is_replaced_and_inputs_keep_passing() {
        let seeds = crate::ddi::seeds();
        let (_, first) = &seeds[0];
        crate::ddi::run(first);
        let before = super::with_world(|w| {
            w.inputs = super::INPUTS_PER_MACHINE;
            w.m.id()
        });
        crate::ddi::run(first);
        let after = super::with_world(|w| w.m.id());
        assert_ne!(before, after, "the machine was not replaced");
    }
}
