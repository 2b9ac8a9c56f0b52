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

use rvgpu_hw::addr::{GpuVa, PhysAddr};
use rvgpu_hw::engine::ENGINE_CTRL_RESET;
use rvgpu_hw::register::{RegDecl, Width};
use rvgpu_hw::regs::{self, Caps, Config, RegId};

use super::{lock, Core};

/// A decoded register: which declaration governs the offset, and which instance (the window,
/// doorbell or engine; 0 for a single register).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reg {
    id: RegId,
    index: usize,
    /// Width and access type come from the declaration in `rvgpu_hw::regs`.
    decl: RegDecl,
}

impl Reg {
    fn is64(self) -> bool {
        self.decl.width == Width::W64
    }
}

impl Core {
    /// Decodes the register that starts at `off`, for this device's configuration: the
    /// declared arrays are cut to the doorbells and engines this instance has.
    fn decode(&self, off: usize) -> Option<Reg> {
        let (id, index) = regs::lookup(off)?;
        let index = usize::try_from(index).ok()?;
        let decl = id.decl();
        let present = match id {
            RegId::DoorbellBind => self.regs.doorbell_bind.len(),
            _ if decl.offset >= regs::ENGINE_BASE => self.regs.engines.len(),
            _ => usize::MAX,
        };
        (index < present).then_some(Reg { id, index, decl })
    }

    fn caps(&self) -> Caps {
        let c = &self.cfg;
        let mut caps = Caps::NATIVE_FENCE | Caps::FENCE_LOG;
        caps.set(Caps::ATOMIC64, c.atomic64);
        caps.set(Caps::GLOBAL_DOORBELL, c.global_doorbell);
        caps.set(Caps::OPTIMIZED_FENCE_IRQ, c.optimized_fence_irq);
        caps.set(Caps::PER_ENGINE_RESET, c.per_engine_reset);
        caps.set(Caps::EXACT_FENCE_REPORT, c.exact_fence_report);
        caps.set(Caps::SCHED_LOG, c.sched_log);
        caps.set(Caps::IO_COHERENT, c.io_coherent);
        caps.set(Caps::ENGINE_POWER, c.engine_power);
        caps.set(Caps::RUNLIST_UPDATE, c.runlist_update);
        caps.set(Caps::QUEUE_STATE, c.queue_state);
        caps.set(Caps::EVENT_WB, c.event_wb);
        caps |= Caps::PAGE_TABLES;
        caps
    }

    /// Full value of a register (reads have no side effects on this device). A register its
    /// declaration does not make readable (WO, W1C) reads 0.
    fn read_reg(&self, reg: Reg) -> u64 {
        if !reg.decl.access.readable() {
            return 0;
        }
        let r = &self.regs;
        let ev = &self.events;
        let i = reg.index;
        match reg.id {
            RegId::Id => u64::from(regs::ID_VALUE),
            RegId::Version => u64::from(regs::VERSION_VALUE),
            RegId::CapsReg => u64::from(self.caps().bits()),
            RegId::ConfigReg => u64::from(
                Config {
                    engines: self.cfg.engines,
                    doorbells: self.cfg.doorbells,
                }
                .to_reg(),
            ),
            RegId::VramSize => self.mem.vram_size(),
            RegId::VramVisible => {
                let size = self.mem.vram_size();
                let v = self.cfg.vram_visible.min(size);
                v - v % rvgpu_hw::PAGE_SIZE
            }
            // Acquire: pairs with the Release store below (a reader sees what was written).
            RegId::SystemPageTableBase => r.system_root.load(Ordering::Acquire),
            RegId::ClockFreq => u64::from(self.cfg.clock_hz),
            RegId::GpuClock => self.clock.now(),
            RegId::DeviceStatusReg => u64::from(r.device_status.load(Ordering::Acquire)),
            RegId::Scratch => u64::from(r.scratch.load(Ordering::Relaxed)),
            // Acquire: a driver that reads a cause bit sees the record published before it.
            RegId::IntStatus => u64::from(ev.status.load(Ordering::Acquire)),
            RegId::IntEnable => u64::from(ev.enable.load(Ordering::Relaxed)),
            RegId::EventRingBase => lock(&ev.ring).base,
            RegId::EventRingSize => u64::from(lock(&ev.ring).size),
            RegId::EventRingCtrl => u64::from(lock(&ev.ring).enabled),
            // Acquire: pairs with the Release publish in post_event (the ISR protocol).
            RegId::EventRingWptr => u64::from(ev.wptr.load(Ordering::Acquire)),
            RegId::EventRingRptr => u64::from(ev.rptr.load(Ordering::Acquire)),
            RegId::EventWbAddr => ev.wb.load(Ordering::Relaxed),
            RegId::SyswinBase => r
                .syswin_base
                .get(i)
                .map_or(0, |w| w.load(Ordering::Relaxed)),
            RegId::SyswinSize => r
                .syswin_size
                .get(i)
                .map_or(0, |w| w.load(Ordering::Relaxed)),
            RegId::DoorbellBind => r
                .doorbell_bind
                .get(i)
                .map_or(0, |b| u64::from(b.load(Ordering::Acquire))),
            id => {
                let Some(x) = r.engines.get(i) else { return 0 };
                match id {
                    RegId::RunlistBase => x.runlist_base.load(Ordering::Relaxed),
                    RegId::RunlistCount => u64::from(x.runlist_count.load(Ordering::Relaxed)),
                    // Acquire on everything the CMP publishes: its memory effects are visible
                    // to a driver that saw the register change.
                    RegId::EngineStatusReg => u64::from(x.status.load(Ordering::Acquire)),
                    RegId::ResetResultReg => u64::from(x.reset_result.load(Ordering::Acquire)),
                    RegId::ResetQueue => u64::from(x.reset_queue.load(Ordering::Acquire)),
                    RegId::ResetRptr => x.reset_rptr.load(Ordering::Acquire),
                    RegId::CurrentQueue => u64::from(x.current_queue.load(Ordering::Acquire)),
                    RegId::CompletedCommands => x.completed.load(Ordering::Acquire),
                    // Without CAPS.SCHED_LOG the scheduling-log registers are inert (read 0).
                    // Relaxed: plain storage, nothing is published through them.
                    RegId::SchedLogBase if self.cfg.sched_log => {
                        x.sched_log_base.load(Ordering::Relaxed)
                    }
                    RegId::SchedLogEntries if self.cfg.sched_log => {
                        u64::from(x.sched_log_entries.load(Ordering::Relaxed))
                    }
                    RegId::SchedLogIrqEntry if self.cfg.sched_log => {
                        u64::from(x.sched_log_irq_entry.load(Ordering::Relaxed))
                    }
                    // Acquire: a driver that reads F1 sees the engine stopped.
                    RegId::EnginePower if self.cfg.engine_power => {
                        u64::from(x.power.load(Ordering::Acquire))
                    }
                    RegId::QueueSelect if self.cfg.queue_state => {
                        u64::from(x.queue_select.load(Ordering::Relaxed))
                    }
                    RegId::QueueStateReg if self.cfg.queue_state => {
                        u64::from(self.queue_state(i, x.queue_select.load(Ordering::Relaxed)))
                    }
                    // Not readable (filtered above) or not an engine register.
                    _ => 0,
                }
            }
        }
    }

    /// Writes a register (full-width value) and runs its side effects. A write to a register
    /// its declaration does not make writable (RO) is dropped.
    fn write_reg(&self, reg: Reg, v: u64) {
        let r = &self.regs;
        let ev = &self.events;
        let v32 = v as u32;
        if self.is_lost() && reg.id != RegId::AdapterReset {
            return;
        }
        if !reg.decl.access.writable() {
            return;
        }
        let i = reg.index;
        match reg.id {
            RegId::AdapterReset if v32 == regs::ADAPTER_RESET_KEY => self.adapter_reset(),
            RegId::Scratch => r.scratch.store(v32, Ordering::Relaxed),
            RegId::FenceSync | RegId::LogFlush => {
                // Drain: every signal decision / log write that holds the lock now finishes
                // before we get it; later ones see whatever the CPU stored before this write
                // (the lock hand-over orders them).
                drop(lock(&self.signal_lock));
            }
            RegId::WaitRescan => self.wait_rescan(GpuVa::new(v)),
            // Relaxed: the latch is read by the FENCE_STORE write that follows on the same
            // path (the driver serialises its pairs under its interrupt lock).
            RegId::FenceStoreAddr => r.fence_store_addr.store(v, Ordering::Relaxed),
            RegId::FenceStore => {
                self.fence_store(PhysAddr::new(r.fence_store_addr.load(Ordering::Relaxed)), v)
            }
            // Release: the page tables the driver wrote before this are visible to walks
            // that read the new root.
            RegId::SystemPageTableBase => r.system_root.store(v, Ordering::Release),
            RegId::TlbInvalidate => self.tlb_invalidate(v),
            RegId::IntEnable => ev.enable.store(v32, Ordering::SeqCst),
            RegId::IntAck => {
                // W1C: the written 1 bits clear those causes in INT_STATUS. AcqRel:
                // synchronises with the posting fetch_or (see post_event).
                ev.status.fetch_and(!v32, Ordering::AcqRel);
                self.write_back();
            }
            RegId::EventRingBase => lock(&ev.ring).base = v,
            RegId::EventRingSize => lock(&ev.ring).size = v32,
            RegId::EventRingCtrl => {
                let enabled = {
                    let mut ring = lock(&ev.ring);
                    ring.enabled = v32 & 1 != 0;
                    if ring.enabled {
                        ev.wptr.store(0, Ordering::Release);
                        ev.rptr.store(0, Ordering::Release);
                    }
                    ring.enabled
                };
                self.write_back();
                if enabled {
                    self.repost_engine_states();
                }
            }
            // Release: the driver's reads of consumed records happen before we reuse slots.
            RegId::EventRingRptr => {
                ev.rptr.store(v32, Ordering::Release);
                self.rptr_written(v32);
            }
            RegId::EventWbAddr if self.cfg.event_wb => {
                ev.wb.store(v, Ordering::Relaxed);
                self.write_back();
            }
            RegId::SyswinBase => {
                if let Some(w) = r.syswin_base.get(i) {
                    w.store(v, Ordering::Relaxed);
                }
            }
            RegId::SyswinSize => {
                if let Some(w) = r.syswin_size.get(i) {
                    w.store(v, Ordering::Relaxed);
                }
            }
            RegId::DoorbellBind => {
                if let Some(b) = r.doorbell_bind.get(i) {
                    b.store(v32, Ordering::Release);
                }
            }
            id => {
                let Some(x) = r.engines.get(i) else { return };
                match id {
                    RegId::RunlistBase => x.runlist_base.store(v, Ordering::Relaxed),
                    RegId::RunlistCount => x.runlist_count.store(v32, Ordering::Relaxed),
                    RegId::RunlistCommit if v32 == 1 => self.commit_runlist(i),
                    RegId::RunlistUpdate if self.cfg.runlist_update => self.update_runlist(i, v32),
                    RegId::EngineCtrl if v32 == ENGINE_CTRL_RESET => self.reset_engine(i),
                    RegId::QueueKick => {
                        self.rescan_queue(Some(i), v32, None);
                    }
                    // Without CAPS.SCHED_LOG these ignore writes. Relaxed: the CTRL write that
                    // adopts the log runs on the same thread or after a synchronising write,
                    // like RUNLIST_BASE/COUNT before a commit.
                    RegId::SchedLogBase if self.cfg.sched_log => {
                        x.sched_log_base.store(v, Ordering::Relaxed)
                    }
                    RegId::SchedLogEntries if self.cfg.sched_log => {
                        x.sched_log_entries.store(v32, Ordering::Relaxed)
                    }
                    RegId::SchedLogIrqEntry if self.cfg.sched_log => {
                        x.sched_log_irq_entry.store(v32, Ordering::Relaxed)
                    }
                    RegId::SchedLogCtrl => self.sched_log_ctrl(i, v32),
                    RegId::EnginePower if self.cfg.engine_power => self.set_engine_power(i, v32),
                    // Relaxed: read back by the same thread (the ISR) right after.
                    RegId::QueueSelect if self.cfg.queue_state => {
                        x.queue_select.store(v32, Ordering::Relaxed)
                    }
                    _ => {}
                }
            }
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
                Some(Reg {
                    id: RegId::WaitRescan,
                    ..
                }) => {}
                Some(reg) if reg.is64() => {
                    let old = self.read_reg(reg);
                    self.write_reg(reg, (old & !0xFFFF_FFFF) | u64::from(value));
                }
                Some(reg) => self.write_reg(reg, u64::from(value)),
                None => match off.checked_sub(4).and_then(|o| self.decode(o)) {
                    Some(reg) if reg.is64() && reg.id != RegId::WaitRescan => {
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
