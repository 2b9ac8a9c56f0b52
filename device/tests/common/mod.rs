//! A test-side "mini driver": what a KMD does to bring the device up and feed it, without any
//! of the OS around it. Shared by the integration tests.
#![allow(dead_code)]

pub mod spaces;

use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::addr::{BusAddr, GpuVa};
use rvgpu_hw::mmu::{self, PageAttrs, Pte};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rvgpu_device::{Device, DeviceConfig, LatchLine, Memory, Mode, QueueSnapshot, SysAlloc};
use rvgpu_hw::cmd::{Command, LogKind};
use rvgpu_hw::engine::{EngineStatus, ENGINE_CTRL_RESET};
use rvgpu_hw::event::{EventKind, EventRecord};
use rvgpu_hw::log::{LogEntry, ENTRIES_PER_BUFFER, LOG_TYPE_SIGNALS, LOG_TYPE_WAITS};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl, NO_DOORBELL};
use rvgpu_hw::regs::{self, IntCause};

pub const EVENT_RING_SIZE: u32 = 64;

/// The process id of the rig's queues in global doorbell mode (page 0 is bound to it).
pub const RIG_PROCESS: u32 = 1;

pub struct Rig {
    pub mem: Arc<Memory>,
    pub dev: Arc<Device>,
    pub line: Arc<LatchLine>,
    pub arena: SysAlloc,
    next: u64,
    next_doorbell: u32,
    pub event_ring: u64,
    /// Root of an identity space over the arena with `USER` pages, built on first use: a
    /// user-mode queue needs a root (hardware.md B20).
    user_root: u64,
}

/// A queue as the mini driver tracks it.
#[derive(Clone, Debug)]
pub struct Q {
    pub engine: u32,
    pub desc: QueueDescriptor,
    /// Producer write pointer (bytes, free-running).
    pub wptr: u64,
    pub doorbell: Option<u32>,
}

impl Q {
    pub fn id(&self) -> u32 {
        self.desc.queue_id
    }

    /// This queue with no doorbell (its descriptor names none): it is kicked through
    /// `QUEUE_KICK` instead.
    pub fn without_doorbell(mut self) -> Self {
        self.doorbell = None;
        self.desc.doorbell = NO_DOORBELL;
        self
    }
}

/// A native fence: CurrentValue and MonitoredValue on their own page.
#[derive(Clone, Copy, Debug)]
pub struct Fence {
    pub cv: u64,
    pub mv: u64,
}

impl Rig {
    pub fn new(cfg: DeviceConfig) -> Self {
        let mem = Memory::new(cfg.vram_size);
        let line = LatchLine::new();
        let threaded = cfg.mode == Mode::Threaded;
        let dev = Device::new(cfg, Arc::clone(&mem), line.clone());
        let arena = mem.alloc_system(8 << 20, 4096).unwrap();
        let (b, s) = regs::syswin_regs(0).unwrap();
        dev.write64(b, arena.bus_addr);
        dev.write64(s, arena.len);
        let mut rig = Self {
            mem,
            dev,
            line,
            next: arena.bus_addr,
            arena,
            next_doorbell: 0,
            event_ring: 0,
            user_root: 0,
        };
        rig.event_ring = rig.alloc(u64::from(EVENT_RING_SIZE) * 32);
        rig.dev.write64(regs::EVENT_RING_BASE, rig.event_ring);
        rig.dev.write32(regs::EVENT_RING_SIZE, EVENT_RING_SIZE);
        rig.dev.write32(regs::EVENT_RING_CTRL, 1);
        rig.dev.write32(regs::INT_ENABLE, IntCause::all().bits());
        if threaded {
            rig.dev.start();
        }
        rig
    }

    pub fn step() -> Self {
        Self::new(DeviceConfig::step())
    }

    /// A step-mode rig whose configuration `f` adjusts first.
    pub fn step_with(f: impl FnOnce(&mut DeviceConfig)) -> Self {
        let mut cfg = DeviceConfig::step();
        f(&mut cfg);
        Self::new(cfg)
    }

    /// Page-aligned zeroed memory inside the registered window.
    pub fn alloc(&mut self, bytes: u64) -> u64 {
        let a = self.next;
        self.next += bytes.next_multiple_of(4096);
        assert!(
            self.next <= self.arena.bus_addr + self.arena.len,
            "arena full"
        );
        a
    }

    pub fn fence(&mut self, initial: u64) -> Fence {
        let p = self.alloc(16);
        let f = Fence { cv: p, mv: p + 8 };
        self.mem.write_u64(PhysAddr::new(f.cv), initial).unwrap();
        // No waiter: MonitoredValue = u64::MAX (NF-02).
        self.mem.write_u64(PhysAddr::new(f.mv), u64::MAX).unwrap();
        f
    }

    fn log_buffer(&mut self, log_type: u32, entries: u64) -> u64 {
        let a = self.alloc(4096);
        self.mem
            .write_u64(PhysAddr::new(a + 8), u64::from(log_type))
            .unwrap();
        self.mem.write_u64(PhysAddr::new(a + 16), entries).unwrap();
        a
    }

    /// Root of a page table that maps the arena onto itself (VA = bus address) with user,
    /// writable 2 MiB pages, so a user-mode queue sees the same addresses a kernel-mode one
    /// does.
    pub fn user_identity_root(&mut self) -> u64 {
        if self.user_root != 0 {
            return self.user_root;
        }
        let attrs = PageAttrs {
            writable: true,
            user: true,
            vram: false,
            coherent: true,
            no_execute: false,
        };
        let root = self.alloc(mmu::TABLE_SIZE);
        let start = self.arena.bus_addr & !(mmu::PAGE_2M - 1);
        let end = self.arena.bus_addr + self.arena.len;
        let mut va = start;
        while va < end {
            let e = self.table_entry(root, va, mmu::LARGE_LEVEL);
            self.mem
                .store(
                    PhysAddr::new(e),
                    Pte::page(va, attrs, true).unwrap().0,
                    Ordering::Release,
                )
                .unwrap();
            va += mmu::PAGE_2M;
        }
        self.user_root = root;
        root
    }

    /// Physical address of the entry for `va` at `level` in the page table rooted at `root`,
    /// creating the directory tables above it.
    pub fn table_entry(&mut self, root: u64, va: u64, level: u8) -> u64 {
        let mut table = root;
        for l in (level + 1..=mmu::ROOT_LEVEL).rev() {
            let e = mmu::entry_addr(table, GpuVa::new(va), l).unwrap();
            let pte = Pte(self.mem.read_u64(PhysAddr::new(e)).unwrap());
            table = if pte.valid() {
                pte.addr()
            } else {
                let t = self.alloc(mmu::TABLE_SIZE);
                self.mem
                    .store(
                        PhysAddr::new(e),
                        Pte::table(t, false).unwrap().0,
                        Ordering::Release,
                    )
                    .unwrap();
                t
            };
        }
        mmu::entry_addr(table, GpuVa::new(va), level).unwrap()
    }

    /// A DMA buffer as the UMD builds it, holding `words`: `(GPU address, bytes)`.
    pub fn buffer_words(&mut self, words: &[u64]) -> (u64, u64) {
        let bytes = words.len() as u64 * 8;
        let a = self.alloc(bytes);
        self.mem.write_words(PhysAddr::new(a), words).unwrap();
        (a, bytes)
    }

    /// A DMA buffer holding `cmds`.
    pub fn buffer(&mut self, cmds: &[Command]) -> (u64, u64) {
        self.buffer_words(&encode(cmds))
    }

    /// A queue on `engine` with a 4 KiB ring, logs, and (dedicated mode) a bound doorbell;
    /// in global mode a user-mode queue of process [`RIG_PROCESS`], whose page is 0.
    pub fn queue(&mut self, engine: u32, id: u32) -> Q {
        self.queue_with(engine, id, 0, 4096, ENTRIES_PER_BUFFER)
    }

    pub fn queue_with(
        &mut self,
        engine: u32,
        id: u32,
        prio: u32,
        ring: u32,
        log_entries: u64,
    ) -> Q {
        let ring_base = self.alloc(u64::from(ring));
        let rc = self.alloc(RingControl::SIZE);
        let progress = self.alloc(8);
        let wait_log = self.log_buffer(LOG_TYPE_WAITS, log_entries);
        let signal_log = self.log_buffer(LOG_TYPE_SIGNALS, log_entries);
        let global = self.dev.config().global_doorbell;
        let user_root = if global { self.user_identity_root() } else { 0 };
        let doorbell = if global {
            // Page 0 is the rig's process page (hardware.md 5.5).
            self.dev
                .write32(regs::doorbell_bind_reg(0).unwrap(), RIG_PROCESS);
            Some(0)
        } else if self.next_doorbell < self.dev.config().doorbells {
            let d = self.next_doorbell;
            self.next_doorbell += 1;
            self.dev.write32(regs::doorbell_bind_reg(d).unwrap(), id);
            Some(d)
        } else {
            None
        };
        Q {
            engine,
            desc: QueueDescriptor {
                queue_id: id,
                // Global doorbell pages ring only user-mode queues of their process.
                flags: if global {
                    (QueueFlags::VALID | QueueFlags::USER_MODE).bits()
                } else {
                    QueueFlags::VALID.bits()
                },
                process_id: if global { RIG_PROCESS } else { 0 },
                page_table_base: BusAddr::new(if global { user_root } else { 0 }),
                ring_base: GpuVa::new(ring_base),
                ring_size: ring,
                doorbell: doorbell.unwrap_or(NO_DOORBELL),
                ring_control: GpuVa::new(rc),
                progress_fence: GpuVa::new(progress),
                wait_log: GpuVa::new(wait_log),
                signal_log: GpuVa::new(signal_log),
                priority: prio,
                ..Default::default()
            },
            wptr: 0,
            doorbell,
        }
    }

    /// Writes a runlist for `engine` with `descs` and commits it.
    pub fn commit_descs(&mut self, engine: u32, descs: &[QueueDescriptor]) {
        let rl = self.alloc((descs.len().max(1) * 128) as u64);
        for (i, d) in descs.iter().enumerate() {
            self.mem
                .write_words(PhysAddr::new(rl + (i as u64) * 128), &d.to_words())
                .unwrap();
        }
        let reg = |r| regs::engine_reg(engine, r).unwrap();
        self.dev.write64(reg(regs::engine::RUNLIST_BASE), rl);
        self.dev
            .write32(reg(regs::engine::RUNLIST_COUNT), descs.len() as u32);
        self.dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
    }

    /// A [`Rig::queue`] committed alone on `engine`'s runlist.
    pub fn queue_committed(&mut self, engine: u32, id: u32) -> Q {
        let q = self.queue(engine, id);
        self.commit(engine, &[&q]);
        q
    }

    /// [`Rig::queue`]s `ids` on `engine`, committed together in that order.
    pub fn queues_committed<const N: usize>(&mut self, engine: u32, ids: [u32; N]) -> [Q; N] {
        let qs = ids.map(|id| self.queue(engine, id));
        self.commit(engine, &qs.each_ref());
        qs
    }

    /// A COPY of `bytes` on queue 1, committed alone on engine 1, whose last source word is
    /// `last`: submitted, not yet run. Returns the queue and the destination.
    pub fn long_copy(&mut self, bytes: u64, last: u64) -> (Q, u64) {
        let src = self.alloc(bytes);
        let dst = self.alloc(bytes);
        self.mem
            .write_u64(PhysAddr::new(src + bytes - 8), last)
            .unwrap();
        let mut q = self.queue_committed(1, 1);
        self.submit(&mut q, &[copy(src, dst, bytes)]);
        (q, dst)
    }

    pub fn commit(&mut self, engine: u32, qs: &[&Q]) {
        let descs: Vec<_> = qs.iter().map(|q| q.desc).collect();
        self.commit_descs(engine, &descs);
    }

    /// Writes raw words at the producer pointer (wrapping), then publishes write_ptr.
    pub fn push_words(&self, q: &mut Q, words: &[u64]) {
        for w in words {
            let off = q.wptr % u64::from(q.desc.ring_size);
            self.mem
                .store(
                    PhysAddr::new(q.desc.ring_base.get() + off),
                    *w,
                    Ordering::Relaxed,
                )
                .unwrap();
            q.wptr += 8;
        }
        // Release: publishes the packets (ring-control protocol).
        self.mem
            .store(
                PhysAddr::new(q.desc.ring_control.get() + RingControl::WRITE_PTR),
                q.wptr,
                Ordering::Release,
            )
            .unwrap();
    }

    pub fn push(&self, q: &mut Q, cmds: &[Command]) {
        self.push_words(q, &encode(cmds));
    }

    /// Rings the queue's doorbell (or kicks it through the engine register).
    pub fn ring(&self, q: &Q) {
        match q.doorbell {
            Some(p) if self.dev.config().global_doorbell => {
                self.dev.doorbell_write(p, u64::from(q.id()))
            }
            Some(p) => self.dev.doorbell_write(p, q.wptr),
            None => self.kick(q),
        }
    }

    pub fn kick(&self, q: &Q) {
        self.dev.write32(
            regs::engine_reg(q.engine, regs::engine::QUEUE_KICK).unwrap(),
            q.id(),
        );
    }

    pub fn submit(&self, q: &mut Q, cmds: &[Command]) {
        self.push(q, cmds);
        self.ring(q);
    }

    pub fn run(&self) -> usize {
        self.dev.run_until_idle(100_000)
    }

    /// The 64-bit word at bus address `addr` (a fence value, a progress fence, data).
    pub fn value(&self, addr: u64) -> u64 {
        self.mem.read_u64(PhysAddr::new(addr)).unwrap()
    }

    /// Moves the queue's ring-control read pointer, as a driver skipping packets does.
    pub fn set_read_ptr(&self, q: &Q, v: u64) {
        self.mem
            .write_u64(
                PhysAddr::new(q.desc.ring_control.get() + RingControl::READ_PTR),
                v,
            )
            .unwrap();
    }

    /// Engine `e`'s 32-bit register `r`.
    pub fn engine_read32(&self, e: u32, r: usize) -> u32 {
        self.dev.read32(self.engine_reg(e, r))
    }

    /// Engine `e`'s 64-bit register `r`.
    pub fn engine_read64(&self, e: u32, r: usize) -> u64 {
        self.dev.read64(self.engine_reg(e, r))
    }

    pub fn read_ptr(&self, q: &Q) -> u64 {
        self.mem
            .read_u64(PhysAddr::new(
                q.desc.ring_control.get() + RingControl::READ_PTR,
            ))
            .unwrap()
    }

    /// The ISR protocol: read INT_STATUS, acknowledge those bits BEFORE draining, read WPTR,
    /// consume records up to it, write RPTR. Returns (status bits, records).
    pub fn isr(&self) -> (IntCause, Vec<EventRecord>) {
        let status = self.dev.read32(regs::INT_STATUS);
        self.dev.write32(regs::INT_ACK, status);
        (IntCause::from_bits_retain(status), self.drain())
    }

    /// Consumes event records up to WPTR without touching INT_STATUS.
    pub fn drain(&self) -> Vec<EventRecord> {
        let w = self.dev.read32(regs::EVENT_RING_WPTR);
        let mut r = self.dev.read32(regs::EVENT_RING_RPTR);
        let mut out = Vec::new();
        while r != w {
            let slot = self.event_ring + u64::from(r % EVENT_RING_SIZE) * 32;
            let words = self.mem.read_words(PhysAddr::new(slot), 4).unwrap();
            out.push(EventRecord::from_words(words.try_into().unwrap()));
            r = r.wrapping_add(1);
        }
        self.dev.write32(regs::EVENT_RING_RPTR, r);
        out
    }

    /// Threaded mode: waits (bounded) until `cond` holds.
    pub fn wait_until(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    pub fn engine_reg(&self, engine: u32, r: usize) -> usize {
        regs::engine_reg(engine, r).unwrap()
    }
}

/// Entry `slot` of the fence log whose header is at `log`.
pub fn log_entry(rig: &Rig, log: u64, slot: u64) -> LogEntry {
    let w = rig
        .mem
        .read_words(PhysAddr::new(log + 40 + slot * 48), 6)
        .unwrap();
    LogEntry::from_words(w.try_into().unwrap())
}

/// `n` device passes (step mode), whether or not they find work.
pub fn steps(rig: &Rig, n: usize) {
    for _ in 0..n {
        rig.dev.step();
    }
}

/// Engine `e`'s STATUS register, decoded.
pub fn status(rig: &Rig, e: u32) -> EngineStatus {
    EngineStatus::from_reg(rig.engine_read32(e, regs::engine::STATUS)).unwrap()
}

/// Writes CTRL = RESET to engine `e` and returns `(RESET_RESULT, RESET_QUEUE, RESET_RPTR)`.
pub fn reset(rig: &Rig, e: u32) -> (u32, u32, u64) {
    rig.dev
        .write32(rig.engine_reg(e, regs::engine::CTRL), ENGINE_CTRL_RESET);
    (
        rig.engine_read32(e, regs::engine::RESET_RESULT),
        rig.engine_read32(e, regs::engine::RESET_QUEUE),
        rig.engine_read64(e, regs::engine::RESET_RPTR),
    )
}

/// The device's view of queue `id`, if a runlist holds it.
pub fn snap(rig: &Rig, id: u32) -> Option<QueueSnapshot> {
    rig.dev.queues().into_iter().find(|q| q.queue_id == id)
}

/// The records of `evs` of kind `k`.
pub fn of_kind(evs: &[EventRecord], k: EventKind) -> Vec<EventRecord> {
    evs.iter().copied().filter(|e| e.kind == k as u8).collect()
}

/// A PROGRESS that interrupts (DMA completed) with `value`.
pub fn progress_irq(value: u64) -> Command {
    Command::Progress { irq: true, value }
}

/// The words of `cmds`, encoded one after another.
pub fn encode(cmds: &[Command]) -> Vec<u64> {
    let mut words = Vec::new();
    for c in cmds {
        let mut buf = vec![0u64; c.len()];
        c.encode(&mut buf).unwrap();
        words.extend(buf);
    }
    words
}

/// A FENCE_WAIT until `f`'s CurrentValue reaches `value`.
pub fn fence_wait(f: Fence, value: u64) -> Command {
    Command::FenceWait { addr: f.cv, value }
}

/// An INDIRECT of a buffer `(GPU address, bytes)` as [`Rig::buffer`] returns it.
pub fn indirect((addr, bytes): (u64, u64)) -> Command {
    Command::Indirect { addr, bytes }
}

/// A COPY of `bytes` from `src` to `dst`.
pub fn copy(src: u64, dst: u64, bytes: u64) -> Command {
    Command::Copy { src, dst, bytes }
}

/// A LOG_WRITE of entry `index` of the queue's `log`, for fence `handle` at `value`.
pub fn log_write(log: LogKind, index: u32, handle: u32, value: u64) -> Command {
    Command::LogWrite {
        log,
        index,
        fence_handle: handle,
        fence_value: value,
    }
}

pub fn signal(f: Fence, value: u64, flags: u8, tag: u64) -> Command {
    Command::FenceSignal {
        flags,
        value_addr: f.cv,
        value,
        monitored_addr: f.mv,
        report_tag: tag,
    }
}
