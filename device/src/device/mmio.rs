//! BAR0 with trap semantics: each access is decoded and its side effects run synchronously in
//! the calling thread before the access returns (`rvgpu_hw::regs`).
//!
//! Width rules: a register is accessed at its own width. A 32-bit access to a 64-bit register
//! reads/writes its low half at the register's offset and its high half at offset + 4
//! (plain storage registers only; WAIT_RESCAN ignores 32-bit writes, since half an address
//! is not an address). A 64-bit access to a 32-bit register acts on the low 32 bits (reads
//! zero-extend). Unaligned (non-multiple-of-4) and unlisted offsets read zero and ignore
//! writes. While the device is lost every read returns all-ones except DEVICE_STATUS and
//! every write except ADAPTER_RESET is ignored.

use std::sync::atomic::Ordering;

use rvgpu_hw::engine::ENGINE_CTRL_RESET;
use rvgpu_hw::regs::{self, engine as er, Caps, Config};

use super::{lock, Core};

/// A decoded register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reg {
    Id,
    Version,
    Caps,
    Config,
    VramSize,
    ClockFreq,
    GpuClock,
    DeviceStatus,
    AdapterReset,
    Scratch,
    FenceSync,
    LogFlush,
    WaitRescan,
    IntStatus,
    IntEnable,
    IntAck,
    EventRingBase,
    EventRingSize,
    EventRingCtrl,
    EventRingWptr,
    EventRingRptr,
    SyswinBase(usize),
    SyswinSize(usize),
    DoorbellBind(usize),
    Engine(usize, EngReg),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EngReg {
    RunlistBase,
    RunlistCount,
    RunlistCommit,
    Status,
    Ctrl,
    ResetResult,
    ResetQueue,
    ResetRptr,
    CurrentQueue,
    QueueKick,
    CompletedCommands,
}

impl Reg {
    fn is64(self) -> bool {
        matches!(
            self,
            Reg::VramSize
                | Reg::GpuClock
                | Reg::WaitRescan
                | Reg::EventRingBase
                | Reg::SyswinBase(_)
                | Reg::SyswinSize(_)
                | Reg::Engine(
                    _,
                    EngReg::RunlistBase | EngReg::ResetRptr | EngReg::CompletedCommands
                )
        )
    }
}

impl Core {
    /// Decodes the register that starts at `off`, for this device's configuration.
    fn decode(&self, off: usize) -> Option<Reg> {
        Some(match off {
            regs::ID => Reg::Id,
            regs::VERSION => Reg::Version,
            regs::CAPS => Reg::Caps,
            regs::CONFIG => Reg::Config,
            regs::VRAM_SIZE => Reg::VramSize,
            regs::CLOCK_FREQ => Reg::ClockFreq,
            regs::GPU_CLOCK => Reg::GpuClock,
            regs::DEVICE_STATUS => Reg::DeviceStatus,
            regs::ADAPTER_RESET => Reg::AdapterReset,
            regs::SCRATCH => Reg::Scratch,
            regs::FENCE_SYNC => Reg::FenceSync,
            regs::LOG_FLUSH => Reg::LogFlush,
            regs::WAIT_RESCAN => Reg::WaitRescan,
            regs::INT_STATUS => Reg::IntStatus,
            regs::INT_ENABLE => Reg::IntEnable,
            regs::INT_ACK => Reg::IntAck,
            regs::EVENT_RING_BASE => Reg::EventRingBase,
            regs::EVENT_RING_SIZE => Reg::EventRingSize,
            regs::EVENT_RING_CTRL => Reg::EventRingCtrl,
            regs::EVENT_RING_WPTR => Reg::EventRingWptr,
            regs::EVENT_RING_RPTR => Reg::EventRingRptr,
            o if (regs::SYSWIN_BASE..regs::DOORBELL_BIND).contains(&o) => {
                let rel = o - regs::SYSWIN_BASE;
                let k = rel / regs::SYSWIN_STRIDE;
                if k >= regs::SYSWIN_COUNT {
                    return None;
                }
                match rel % regs::SYSWIN_STRIDE {
                    0 => Reg::SyswinBase(k),
                    8 => Reg::SyswinSize(k),
                    _ => return None,
                }
            }
            o if (regs::DOORBELL_BIND..regs::ENGINE_BASE).contains(&o) => {
                let rel = o - regs::DOORBELL_BIND;
                let i = rel / 4;
                if !rel.is_multiple_of(4) || i >= self.regs.doorbell_bind.len() {
                    return None;
                }
                Reg::DoorbellBind(i)
            }
            o if o >= regs::ENGINE_BASE => {
                let rel = o - regs::ENGINE_BASE;
                let e = rel / regs::ENGINE_STRIDE;
                if e >= self.regs.engines.len() {
                    return None;
                }
                let r = match rel % regs::ENGINE_STRIDE {
                    er::RUNLIST_BASE => EngReg::RunlistBase,
                    er::RUNLIST_COUNT => EngReg::RunlistCount,
                    er::RUNLIST_COMMIT => EngReg::RunlistCommit,
                    er::STATUS => EngReg::Status,
                    er::CTRL => EngReg::Ctrl,
                    er::RESET_RESULT => EngReg::ResetResult,
                    er::RESET_QUEUE => EngReg::ResetQueue,
                    er::RESET_RPTR => EngReg::ResetRptr,
                    er::CURRENT_QUEUE => EngReg::CurrentQueue,
                    er::QUEUE_KICK => EngReg::QueueKick,
                    er::COMPLETED_COMMANDS => EngReg::CompletedCommands,
                    _ => return None,
                };
                Reg::Engine(e, r)
            }
            _ => return None,
        })
    }

    fn caps(&self) -> Caps {
        let c = &self.cfg;
        let mut caps = Caps::NATIVE_FENCE | Caps::FENCE_LOG;
        caps.set(Caps::ATOMIC64, c.atomic64);
        caps.set(Caps::GLOBAL_DOORBELL, c.global_doorbell);
        caps.set(Caps::OPTIMIZED_FENCE_IRQ, c.optimized_fence_irq);
        caps.set(Caps::PER_ENGINE_RESET, c.per_engine_reset);
        caps.set(Caps::EXACT_FENCE_REPORT, c.exact_fence_report);
        caps
    }

    /// Full value of a register (reads have no side effects on this device).
    fn read_reg(&self, reg: Reg) -> u64 {
        let r = &self.regs;
        let ev = &self.events;
        match reg {
            Reg::Id => u64::from(regs::ID_VALUE),
            Reg::Version => u64::from(regs::VERSION_VALUE),
            Reg::Caps => u64::from(self.caps().bits()),
            Reg::Config => u64::from(
                Config {
                    engines: self.cfg.engines,
                    doorbells: self.cfg.doorbells,
                }
                .to_reg(),
            ),
            Reg::VramSize => self.mem.vram_size(),
            Reg::ClockFreq => u64::from(self.cfg.clock_hz),
            Reg::GpuClock => self.clock.now(),
            Reg::DeviceStatus => u64::from(r.device_status.load(Ordering::Acquire)),
            Reg::Scratch => u64::from(r.scratch.load(Ordering::Relaxed)),
            // Acquire: a driver that reads a cause bit sees the record published before it.
            Reg::IntStatus => u64::from(ev.status.load(Ordering::Acquire)),
            Reg::IntEnable => u64::from(ev.enable.load(Ordering::Relaxed)),
            Reg::EventRingBase => lock(&ev.ring).base,
            Reg::EventRingSize => u64::from(lock(&ev.ring).size),
            Reg::EventRingCtrl => u64::from(lock(&ev.ring).enabled),
            // Acquire: pairs with the Release publish in post_event (the ISR protocol).
            Reg::EventRingWptr => u64::from(ev.wptr.load(Ordering::Acquire)),
            Reg::EventRingRptr => u64::from(ev.rptr.load(Ordering::Acquire)),
            Reg::SyswinBase(k) => r
                .syswin_base
                .get(k)
                .map_or(0, |w| w.load(Ordering::Relaxed)),
            Reg::SyswinSize(k) => r
                .syswin_size
                .get(k)
                .map_or(0, |w| w.load(Ordering::Relaxed)),
            Reg::DoorbellBind(i) => r
                .doorbell_bind
                .get(i)
                .map_or(0, |b| u64::from(b.load(Ordering::Acquire))),
            Reg::Engine(e, er) => {
                let Some(x) = r.engines.get(e) else { return 0 };
                match er {
                    EngReg::RunlistBase => x.runlist_base.load(Ordering::Relaxed),
                    EngReg::RunlistCount => u64::from(x.runlist_count.load(Ordering::Relaxed)),
                    // Acquire on everything the CMP publishes: its memory effects are visible
                    // to a driver that saw the register change.
                    EngReg::Status => u64::from(x.status.load(Ordering::Acquire)),
                    EngReg::ResetResult => u64::from(x.reset_result.load(Ordering::Acquire)),
                    EngReg::ResetQueue => u64::from(x.reset_queue.load(Ordering::Acquire)),
                    EngReg::ResetRptr => x.reset_rptr.load(Ordering::Acquire),
                    EngReg::CurrentQueue => u64::from(x.current_queue.load(Ordering::Acquire)),
                    EngReg::CompletedCommands => x.completed.load(Ordering::Acquire),
                    EngReg::RunlistCommit | EngReg::Ctrl | EngReg::QueueKick => 0,
                }
            }
            Reg::AdapterReset | Reg::FenceSync | Reg::LogFlush | Reg::WaitRescan | Reg::IntAck => 0,
        }
    }

    /// Writes a register (full-width value) and runs its side effects.
    fn write_reg(&self, reg: Reg, v: u64) {
        let r = &self.regs;
        let ev = &self.events;
        let v32 = v as u32;
        if self.is_lost() && reg != Reg::AdapterReset {
            return;
        }
        match reg {
            Reg::AdapterReset if v32 == regs::ADAPTER_RESET_KEY => self.adapter_reset(),
            Reg::Scratch => r.scratch.store(v32, Ordering::Relaxed),
            Reg::FenceSync | Reg::LogFlush => {
                // Drain: every signal decision / log write that holds the lock now finishes
                // before we get it; later ones see whatever the CPU stored before this write
                // (the lock hand-over orders them).
                drop(lock(&self.signal_lock));
            }
            Reg::WaitRescan => self.wait_rescan(v),
            Reg::IntEnable => ev.enable.store(v32, Ordering::SeqCst),
            Reg::IntAck => {
                // AcqRel: synchronises with the posting fetch_or (see post_event).
                ev.status.fetch_and(!v32, Ordering::AcqRel);
            }
            Reg::EventRingBase => lock(&ev.ring).base = v,
            Reg::EventRingSize => lock(&ev.ring).size = v32,
            Reg::EventRingCtrl => {
                let enabled = {
                    let mut ring = lock(&ev.ring);
                    ring.enabled = v32 & 1 != 0;
                    if ring.enabled {
                        ev.wptr.store(0, Ordering::Release);
                        ev.rptr.store(0, Ordering::Release);
                    }
                    ring.enabled
                };
                if enabled {
                    self.repost_engine_states();
                }
            }
            // Release: the driver's reads of consumed records happen before we reuse slots.
            Reg::EventRingRptr => ev.rptr.store(v32, Ordering::Release),
            Reg::SyswinBase(k) => {
                if let Some(w) = r.syswin_base.get(k) {
                    w.store(v, Ordering::Relaxed);
                }
            }
            Reg::SyswinSize(k) => {
                if let Some(w) = r.syswin_size.get(k) {
                    w.store(v, Ordering::Relaxed);
                }
            }
            Reg::DoorbellBind(i) => {
                if let Some(b) = r.doorbell_bind.get(i) {
                    b.store(v32, Ordering::Release);
                }
            }
            Reg::Engine(e, er) => {
                let Some(x) = r.engines.get(e) else { return };
                match er {
                    EngReg::RunlistBase => x.runlist_base.store(v, Ordering::Relaxed),
                    EngReg::RunlistCount => x.runlist_count.store(v32, Ordering::Relaxed),
                    EngReg::RunlistCommit if v32 == 1 => self.commit_runlist(e),
                    EngReg::Ctrl if v32 == ENGINE_CTRL_RESET => self.reset_engine(e),
                    EngReg::QueueKick => {
                        self.rescan_queue(Some(e), v32);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    pub(crate) fn read32(&self, off: usize) -> u32 {
        if !off.is_multiple_of(4) {
            return 0;
        }
        if self.is_lost() && off != regs::DEVICE_STATUS {
            return u32::MAX;
        }
        if let Some(reg) = self.decode(off) {
            return self.read_reg(reg) as u32;
        }
        // High half of a 64-bit register?
        match off.checked_sub(4).and_then(|o| self.decode(o)) {
            Some(reg) if reg.is64() => (self.read_reg(reg) >> 32) as u32,
            _ => 0,
        }
    }

    pub(crate) fn read64(&self, off: usize) -> u64 {
        if !off.is_multiple_of(4) {
            return 0;
        }
        if self.is_lost() && off != regs::DEVICE_STATUS {
            return u64::MAX;
        }
        match self.decode(off) {
            Some(reg) if reg.is64() => self.read_reg(reg),
            Some(reg) => u64::from(self.read_reg(reg) as u32),
            None => 0,
        }
    }

    pub(crate) fn write32(&self, off: usize, value: u32) {
        if off.is_multiple_of(4) {
            match self.decode(off) {
                Some(Reg::WaitRescan) => {}
                Some(reg) if reg.is64() => {
                    let old = self.read_reg(reg);
                    self.write_reg(reg, (old & !0xFFFF_FFFF) | u64::from(value));
                }
                Some(reg) => self.write_reg(reg, u64::from(value)),
                None => match off.checked_sub(4).and_then(|o| self.decode(o)) {
                    Some(reg) if reg.is64() && reg != Reg::WaitRescan => {
                        let old = self.read_reg(reg);
                        self.write_reg(reg, (old & 0xFFFF_FFFF) | (u64::from(value) << 32));
                    }
                    _ => {}
                },
            }
        }
        self.flush_irq();
    }

    pub(crate) fn write64(&self, off: usize, value: u64) {
        if off.is_multiple_of(4) {
            match self.decode(off) {
                Some(reg) if reg.is64() => self.write_reg(reg, value),
                Some(reg) => self.write_reg(reg, value & 0xFFFF_FFFF),
                None => {}
            }
        }
        self.flush_irq();
    }
}
