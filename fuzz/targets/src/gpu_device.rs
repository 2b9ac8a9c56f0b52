//! `gpu_device`: the emulated GPU driven as a hostile driver or guest would drive it: arbitrary
//! register sequences (reads and writes anywhere in BAR0, resets, doorbell bindings), queue
//! descriptors with any fields on both engines (kernel- and user-mode, any root), page tables
//! the input writes entry by entry (valid chains, large pages, reserved bits, loops, tables
//! that point at data), rings of any command (INDIRECT_VM and TLB_INVALIDATE included), raw
//! doorbell writes and injected device faults. Step mode, no driver and no OS around it.
//!
//! Each input gets a fresh device and memory (64 KiB of VRAM, one 512 KiB system window at a
//! fixed bus address), so seeds can name places by their offset in the window.
//!
//! Input: up to [`MAX_OPS`] operations, each an op byte and its fields ([`Input`] reads zeros
//! past the end). Values that are addresses come tagged: raw, an offset in the window (bus
//! address), an offset in the user-mode VA range that [`Op::Map`] maps, an offset in VRAM, or a
//! page-table page.
//!
//! Invariants (a violation panics):
//! - the device never panics and the run is bounded (at most [`STEP_LIMIT`] device passes);
//! - the window registers never open system memory outside the window (the target keeps the
//!   input's window writes inside it, as the driver is the one that programs them), and with
//!   the identity root nothing outside a window is written: a canary page next to the window
//!   is unchanged whenever the device translated nothing (its TLB saw no lookup; with
//!   input-built tables the tables are the allow-list, hardware.md 12.4, and may name any
//!   existing page);
//! - after an adapter reset the device is present and usable: a kernel-mode queue on engine 0
//!   signals a fence; on engine 1 a user-mode queue rung through a doorbell, whose root reuses
//!   the input's first table page with new tables (after a TLB invalidation, as the driver
//!   does), signals a fence through its user mapping (no stale translation of the input's
//!   tables survives) and then faults on a page mapped without `USER`, which stays unchanged.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_device::{Device, Memory, SysAlloc};
use rvgpu_hw::addr::{BusAddr, GpuVa, PhysAddr, VRAM_BASE};
use rvgpu_hw::cmd::{Command, LogKind};
use rvgpu_hw::engine::ENGINE_CTRL_RESET;
use rvgpu_hw::event::FaultCode;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::{self, PageAttrs, Pte};
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl, NO_DOORBELL};
use rvgpu_hw::regs::{self, IntCause};

use crate::input::Input;
use crate::step_device::{assert_canary_intact, fresh, run_passes};

mod script;
pub use script::{seeds, Script};

/// Bytes of the system window.
pub const WINDOW: u64 = 512 << 10;
/// VRAM bytes.
const VRAM: u64 = 64 << 10;
/// Engines of the device (the default configuration).
const ENGINES: u32 = rvgpu_hw::defaults::ENGINES;
/// Doorbell pages of the device.
const DOORBELLS: u32 = rvgpu_hw::defaults::DOORBELLS;
/// Operations per input at most.
pub const MAX_OPS: usize = 64;
/// Device passes per input at most.
pub const STEP_LIMIT: usize = 4096;
/// Queues the input can describe (ring slots).
pub const QUEUES: u32 = 8;
/// Page-table pages the input can write.
pub const TABLE_PAGES: u64 = 32;
const EVENT_SLOTS: u32 = 64;

/// Offsets in the window.
pub mod at {
    /// The event ring (one page).
    pub const EVENT_RING: u64 = 0;
    /// The event write-back word's page.
    pub const EVENT_WB: u64 = 0x1000;
    /// Engine `e`'s runlist page at `RUNLISTS + e * 0x1000` (32 descriptors).
    pub const RUNLISTS: u64 = 0x2000;
    /// Queue `q`'s ring control at `CONTROLS + q * 0x100`, its progress fence 0x80 after.
    pub const CONTROLS: u64 = 0x8000;
    /// Queue `q`'s ring at `RINGS + q * RING_SLOT`.
    pub const RINGS: u64 = 0x1_0000;
    /// Bytes reserved per ring (the largest ring the input may describe).
    pub const RING_SLOT: u64 = 0x4000;
    /// Page-table page `k` at `TABLES + k * 0x1000`.
    pub const TABLES: u64 = 0x3_0000;
    /// Data pages (the rest of the window).
    pub const DATA: u64 = 0x5_0000;
}

/// Where [`Op::Map`] maps the whole window for user-mode queues (2 MiB aligned: one level-0
/// table covers it).
pub const VA_BASE: u64 = 0x4000_0000;

/// Operation codes (the op byte modulo their count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// `offset:u16`, `value:u32`: a 32-bit register write.
    Write32 = 0,
    /// `offset:u16`, value: a 64-bit register write.
    Write64,
    /// `offset:u16`, `wide:u8`: a register read.
    Read,
    /// `offset:u16` (words into the window), `count:u8` (mod 8), values: CPU writes.
    Memory,
    /// A queue descriptor into its engine's runlist, then a commit or a slot update.
    Queue,
    /// `first:u8`, `attrs:u8`: four table pages from `first` chained root to leaf, the leaf
    /// mapping the whole window at [`VA_BASE`].
    Map,
    /// `page:u8`, `index:u16`, entry: one page-table entry.
    Pte,
    /// `queue:u8`, `how:u8`, `count:u8` (mod 8), commands: appended to a queue's ring,
    /// published, then kicked or rung.
    Ring,
    /// `page:u16`, `value:u64`: a raw doorbell write.
    Doorbell,
    /// `page:u8`, `queue:u8`: binds a doorbell page to a queue's id (or a raw id).
    Bind,
    /// `passes:u8`: device passes, the ISR's acknowledge and drain every few.
    Step,
    /// `kind:u8`, `engine:u8`: an injected fault or a reset.
    Fault,
}

const OPS: u8 = 12;

impl Op {
    fn from(b: u8) -> Self {
        match b % OPS {
            0 => Self::Write32,
            1 => Self::Write64,
            2 => Self::Read,
            3 => Self::Memory,
            4 => Self::Queue,
            5 => Self::Map,
            6 => Self::Pte,
            7 => Self::Ring,
            8 => Self::Doorbell,
            9 => Self::Bind,
            10 => Self::Step,
            _ => Self::Fault,
        }
    }
}

/// Value tags (the tag byte modulo their count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Val {
    /// `u64` as is.
    Raw = 0,
    /// `offset:u32`: bus address of a word in the window.
    Window,
    /// `offset:u32`: the user-mode VA of a word in the window.
    Va,
    /// `offset:u16` (words): an address in VRAM.
    Vram,
    /// `page:u8`: bus address of a page-table page.
    Table,
    /// `u8`: a small number.
    Small,
}

const VALS: u8 = 6;

/// A queue the input described.
#[derive(Clone, Copy, Debug)]
struct Queue {
    engine: u32,
    desc: QueueDescriptor,
    /// Bus address of the ring (what the CPU writes; the descriptor may name it by VA).
    ring: u64,
    /// Bus address of the ring control.
    control: u64,
    wptr: u64,
}

struct Rig {
    mem: Arc<Memory>,
    dev: Arc<Device>,
    window: SysAlloc,
    canary: SysAlloc,
    /// The window registers as the target last wrote them (base, size).
    syswin: [(u64, u64); regs::SYSWIN_COUNT],
    queues: [Option<Queue>; QUEUES as usize],
    /// Per engine: which queue index sits in each runlist slot.
    runlists: Vec<Vec<Option<u32>>>,
    passes: usize,
}

impl Rig {
    fn new() -> Self {
        let (mem, dev, window, canary) = fresh(VRAM, WINDOW);
        let mut rig = Self {
            mem,
            dev,
            window,
            canary,
            syswin: [(0, 0); regs::SYSWIN_COUNT],
            queues: [None; QUEUES as usize],
            runlists: vec![Vec::new(); ENGINES as usize],
            passes: 0,
        };
        rig.program();
        rig
    }

    fn win(&self, off: u64) -> u64 {
        self.window.bus_addr + off
    }

    /// What a driver programs at start: window 0 over the whole window, the event ring, the
    /// write-back word, every interrupt.
    fn program(&mut self) {
        self.set_window(0, Some(self.window.bus_addr), Some(WINDOW));
        self.dev
            .write64(regs::EVENT_RING_BASE, self.win(at::EVENT_RING));
        self.dev.write32(regs::EVENT_RING_SIZE, EVENT_SLOTS);
        self.dev.write32(regs::EVENT_RING_CTRL, 1);
        self.dev
            .write64(regs::EVENT_WB_ADDR, self.win(at::EVENT_WB));
        self.dev.write32(regs::INT_ENABLE, IntCause::all().bits());
    }

    /// Writes window `k`'s registers, kept inside the window: a base is moved into it and a
    /// size cut to what is left after the base.
    fn set_window(&mut self, k: usize, base: Option<u64>, size: Option<u64>) {
        let Some(slot) = self.syswin.get_mut(k) else {
            return;
        };
        if let Some(b) = base {
            slot.0 = self.window.bus_addr + (b % WINDOW) / 8 * 8;
        }
        if let Some(s) = size {
            slot.1 = s;
        }
        let room = self.window.bus_addr + WINDOW - slot.0;
        slot.1 = slot.1.min(room);
        let (b, s) = regs::syswin_regs(k).expect("window registers");
        let (base, size) = *slot;
        // Size first, so the pair never spans past the window in between.
        self.dev.write64(s, 0);
        self.dev.write64(b, base);
        self.dev.write64(s, size);
    }

    /// A register write from the input; window registers go through [`Rig::set_window`].
    fn reg_write(&mut self, off: usize, value: u64, wide: bool) {
        let (first, _) = regs::syswin_regs(0).expect("window registers");
        let end = first + regs::SYSWIN_COUNT * regs::SYSWIN_STRIDE;
        if (first..end).contains(&off) {
            let k = (off - first) / regs::SYSWIN_STRIDE;
            if (off - first) % regs::SYSWIN_STRIDE < 8 {
                self.set_window(k, Some(value.wrapping_sub(self.window.bus_addr)), None);
            } else {
                self.set_window(k, None, Some(value));
            }
            return;
        }
        if wide {
            self.dev.write64(off, value);
        } else {
            self.dev.write32(off, value as u32);
        }
    }

    /// Up to `n` passes within the input's budget, stopping after a few idle ones.
    fn run(&mut self, n: usize) {
        let passes = &mut self.passes;
        run_passes(&self.dev, n, || {
            let granted = *passes < STEP_LIMIT;
            *passes += usize::from(granted);
            granted
        });
    }

    fn value(&self, inp: &mut Input) -> u64 {
        match inp.u8() % VALS {
            0 => inp.u64(),
            1 => self.win(u64::from(inp.u32()) % WINDOW / 8 * 8),
            2 => VA_BASE + u64::from(inp.u32()) % WINDOW / 8 * 8,
            3 => VRAM_BASE + (u64::from(inp.u16()) * 8) % VRAM,
            4 => self.table(u64::from(inp.u8())),
            _ => u64::from(inp.u8()),
        }
    }

    fn table(&self, k: u64) -> u64 {
        self.win(at::TABLES + (k % TABLE_PAGES) * 4096)
    }

    /// Four table pages from `first` chained root to leaf, the leaf mapping the window's pages
    /// at [`VA_BASE`] with `attrs`. Returns the root.
    fn map(&self, first: u64, attrs: PageAttrs) -> u64 {
        let t = |i: u64| self.table(first + i);
        let va = VA_BASE;
        let dir = |level: u8, table: u64, next: u64| {
            let e = mmu::entry_addr(table, GpuVa::new(va), level).expect("entry");
            let pte = Pte::table(next, false).expect("table entry");
            self.mem.write_u64(PhysAddr::new(e), pte.0).expect("table");
        };
        dir(3, t(0), t(1));
        dir(2, t(1), t(2));
        dir(1, t(2), t(3));
        for p in 0..WINDOW / 4096 {
            let e = mmu::entry_addr(t(3), GpuVa::new(va + p * 4096), 0).expect("entry");
            let pte = Pte::page(self.win(p * 4096), attrs, false).expect("leaf");
            self.mem.write_u64(PhysAddr::new(e), pte.0).expect("table");
        }
        t(0)
    }

    fn attrs(b: u8) -> PageAttrs {
        PageAttrs {
            writable: b & 1 == 0,
            user: b & 2 == 0,
            vram: false,
            coherent: b & 4 != 0,
            no_execute: b & 8 != 0,
        }
    }

    fn pte(&self, inp: &mut Input) -> u64 {
        match inp.u8() % 4 {
            0 => inp.u64(),
            1 => Pte::table(self.table(u64::from(inp.u8())), false).map_or(0, |p| p.0),
            2 => {
                let page = u64::from(inp.u8()) % (WINDOW / 4096);
                let a = Self::attrs(inp.u8());
                Pte::page(self.win(page * 4096), a, false).map_or(0, |p| p.0)
            }
            _ => {
                let off = (u64::from(inp.u8()) * 4096) % VRAM;
                let a = PageAttrs {
                    vram: true,
                    ..Self::attrs(inp.u8())
                };
                let large = inp.u8() & 1 != 0;
                Pte::page(off, a, large).map_or(0, |p| p.0)
            }
        }
    }

    fn queue(&mut self, inp: &mut Input) {
        let q = u32::from(inp.u8()) % QUEUES;
        let engine = u32::from(inp.u8()) % ENGINES;
        let flags = inp.u8();
        let user = flags & 1 != 0;
        let update = flags & 2 != 0;
        let remove = flags & 4 != 0;
        let raw_size = flags & 8 != 0;
        let size_log = 8 + u32::from(inp.u8()) % 7;
        let root = match inp.u8() % 4 {
            0 => 0,
            1 | 2 => self.table(u64::from(inp.u8())),
            _ => inp.u64(),
        };
        let priority = u32::from(inp.u8() % 4);
        let doorbell = match inp.u8() {
            0xFF => NO_DOORBELL,
            d => u32::from(d) % DOORBELLS,
        };
        let logs = inp.u8();
        let id = match inp.u8() {
            0xFF => inp.u32(),
            _ => q + 1,
        };
        let ring = self.win(at::RINGS + u64::from(q) * at::RING_SLOT);
        let control = self.win(at::CONTROLS + u64::from(q) * 0x100);
        // A user-mode queue names its memory by VA, a kernel-mode one by bus address.
        let name = |bus: u64| {
            if user && root != 0 {
                bus - self.window.bus_addr + VA_BASE
            } else {
                bus
            }
        };
        let log = |on: bool, off: u64| if on { name(self.win(off)) } else { 0 };
        let desc = QueueDescriptor {
            queue_id: id,
            flags: if user {
                (QueueFlags::VALID | QueueFlags::USER_MODE).bits()
            } else {
                QueueFlags::VALID.bits()
            },
            ring_base: GpuVa::new(name(ring)),
            ring_size: if raw_size { inp.u32() } else { 1 << size_log },
            doorbell,
            ring_control: GpuVa::new(name(control)),
            progress_fence: GpuVa::new(name(control + 0x80)),
            wait_log: GpuVa::new(log(logs & 1 != 0, at::DATA + 0x1000)),
            signal_log: GpuVa::new(log(logs & 2 != 0, at::DATA + 0x2000)),
            priority,
            process_id: u32::from(logs >> 4),
            page_table_base: BusAddr::new(root),
            context_tag: u64::from(logs & 4),
            reserved: [0; 6],
        };
        // A queue that enters afresh starts at its ring control's pointers.
        self.mem
            .write_words(PhysAddr::new(control), &[0; 32])
            .expect("ring control");
        let list = &mut self.runlists[engine as usize];
        let slot = match list.iter().position(|s| *s == Some(q)) {
            Some(s) => s,
            None => list.iter().position(Option::is_none).unwrap_or_else(|| {
                list.push(None);
                list.len() - 1
            }),
        };
        // The same queue index leaves any other engine's runlist.
        for (e, l) in self.runlists.iter_mut().enumerate() {
            if e != engine as usize {
                for s in l.iter_mut() {
                    if *s == Some(q) {
                        *s = None;
                    }
                }
            }
        }
        if slot >= 32 {
            return;
        }
        let list = &mut self.runlists[engine as usize];
        list[slot] = if remove { None } else { Some(q) };
        let count = list.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        self.queues[q as usize] = (!remove).then_some(Queue {
            engine,
            desc,
            ring,
            control,
            wptr: 0,
        });
        let base = self.win(at::RUNLISTS + u64::from(engine) * 0x1000);
        let words = if remove { [0u64; 16] } else { desc.to_words() };
        self.mem
            .write_words(PhysAddr::new(base + slot as u64 * 128), &words)
            .expect("runlist");
        let reg = |r| regs::engine_reg(engine, r).expect("engine register");
        self.dev.write64(reg(regs::engine::RUNLIST_BASE), base);
        self.dev
            .write32(reg(regs::engine::RUNLIST_COUNT), count as u32);
        if update {
            self.dev
                .write32(reg(regs::engine::RUNLIST_UPDATE), slot as u32);
        } else {
            self.dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
        }
    }

    fn command(&self, inp: &mut Input) -> Vec<u64> {
        let c = match inp.u8() % 13 {
            0 => Command::Nop {
                len: 1 + u16::from(inp.u8() % 4),
            },
            1 => Command::FenceSignal {
                flags: inp.u8(),
                value_addr: self.value(inp),
                value: self.value(inp),
                monitored_addr: self.value(inp),
                report_tag: self.value(inp),
            },
            2 => Command::FenceWait {
                addr: self.value(inp),
                value: self.value(inp),
            },
            3 => Command::LogWrite {
                log: if inp.u8() & 1 != 0 {
                    LogKind::Signal
                } else {
                    LogKind::Wait
                },
                index: inp.u32(),
                fence_handle: inp.u32(),
                fence_value: inp.u64(),
            },
            4 => Command::Timestamp {
                addr: self.value(inp),
            },
            5 => Command::Progress {
                irq: inp.u8() & 1 != 0,
                value: inp.u64(),
            },
            6 => Command::Copy {
                src: self.value(inp),
                dst: self.value(inp),
                bytes: self.value(inp),
            },
            7 => Command::Fill {
                dst: self.value(inp),
                bytes: self.value(inp),
                pattern: inp.u64(),
            },
            8 => Command::Hang,
            9 => Command::Indirect {
                addr: self.value(inp),
                bytes: self.value(inp),
            },
            10 => Command::IndirectVm {
                addr: self.value(inp),
                bytes: self.value(inp),
                root: self.value(inp),
            },
            11 => Command::TlbInvalidate {
                root: self.value(inp),
            },
            _ => {
                let count = 1 + u16::from(inp.u8() % 4);
                let dst = self.value(inp);
                let mut w = vec![0u64; 2 + usize::from(count)];
                Command::WriteData { dst, count }.encode(&mut w);
                for x in w.iter_mut().skip(2) {
                    *x = self.value(inp);
                }
                return w;
            }
        };
        let mut w = vec![0u64; c.len()];
        match c.encode(&mut w) {
            Some(_) => w,
            None => vec![inp.u64()],
        }
    }

    fn ring(&mut self, inp: &mut Input) {
        let q = u32::from(inp.u8()) % QUEUES;
        let how = inp.u8();
        let count = usize::from(inp.u8() % 8);
        let mut words = Vec::new();
        for _ in 0..count {
            if inp.u8() & 0xF == 0 {
                words.push(inp.u64());
            } else {
                words.extend(self.command(inp));
            }
        }
        let Some(queue) = self.queues[q as usize].as_mut() else {
            return;
        };
        let size = u64::from(queue.desc.ring_size)
            .clamp(8, at::RING_SLOT)
            .next_power_of_two();
        for w in &words {
            let pos = queue.wptr % size;
            self.mem
                .write_u64(PhysAddr::new(queue.ring + pos), *w)
                .expect("ring memory");
            queue.wptr = queue.wptr.wrapping_add(8);
        }
        // Now and then a write pointer past what was written (the CMP must bound it).
        let wptr = if how & 4 != 0 {
            queue.wptr.wrapping_add(u64::from(inp.u16()) * 8)
        } else {
            queue.wptr
        };
        self.mem
            .store(
                PhysAddr::new(queue.control + RingControl::WRITE_PTR),
                wptr,
                Ordering::Release,
            )
            .expect("ring control");
        let (engine, desc) = (queue.engine, queue.desc);
        if how & 1 != 0 && desc.doorbell != NO_DOORBELL {
            if let Some(r) = regs::doorbell_bind_reg(desc.doorbell) {
                if how & 2 != 0 {
                    self.dev.write32(r, desc.queue_id);
                }
            }
            self.dev.doorbell_write(desc.doorbell, 1);
        } else {
            let kick = regs::engine_reg(engine, regs::engine::QUEUE_KICK).expect("kick");
            self.dev.write32(kick, desc.queue_id);
        }
    }

    fn fault(&mut self, inp: &mut Input) {
        let kind = inp.u8();
        let engine = u32::from(inp.u8()) % (ENGINES + 1);
        match kind % 9 {
            0 => self.dev.inject_hang(engine),
            1 => self.dev.fail_next_reset(engine),
            2 => self.dev.drop_next_interrupt(),
            3 => self.dev.set_anonymous_fence_events(kind & 0x10 != 0),
            4 => {
                if let Some(r) = regs::engine_reg(engine, regs::engine::CTRL) {
                    self.dev.write32(r, ENGINE_CTRL_RESET);
                }
            }
            5 => {
                self.dev
                    .write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
                self.syswin = [(0, 0); regs::SYSWIN_COUNT];
                if kind & 0x10 == 0 {
                    self.program();
                }
            }
            6 => self.dev.write64(regs::TLB_INVALIDATE, self.value(inp)),
            7 => self.dev.write64(regs::WAIT_RESCAN, self.value(inp)),
            _ => {
                let addr = self.value(inp);
                self.dev.write64(regs::FENCE_STORE_ADDR, addr);
                self.dev.write64(regs::FENCE_STORE, inp.u64());
            }
        }
    }

    fn op(&mut self, inp: &mut Input) {
        match Op::from(inp.u8()) {
            Op::Write32 => {
                let off = usize::from(inp.u16()) & 0x1FFC;
                let v = inp.u32();
                self.reg_write(off, u64::from(v), false);
            }
            Op::Write64 => {
                let off = usize::from(inp.u16()) & 0x1FF8;
                let v = self.value(inp);
                self.reg_write(off, v, true);
            }
            Op::Read => {
                let off = usize::from(inp.u16()) & 0x1FFC;
                if inp.u8() & 1 != 0 {
                    self.dev.read64(off & !7);
                } else {
                    self.dev.read32(off);
                }
            }
            Op::Memory => {
                let off = (u64::from(inp.u16()) * 8) % WINDOW;
                let n = inp.u8() % 8;
                for i in 0..u64::from(n) {
                    let v = self.value(inp);
                    let a = self.win((off + i * 8) % WINDOW);
                    self.mem.write_u64(PhysAddr::new(a), v).expect("window");
                }
            }
            Op::Queue => self.queue(inp),
            Op::Map => {
                let first = u64::from(inp.u8());
                let a = Self::attrs(inp.u8());
                self.map(first, a);
            }
            Op::Pte => {
                let page = self.table(u64::from(inp.u8()));
                let index = u64::from(inp.u16()) % mmu::ENTRIES_PER_TABLE;
                let v = self.pte(inp);
                self.mem
                    .write_u64(PhysAddr::new(page + index * mmu::ENTRY_SIZE), v)
                    .expect("table");
            }
            Op::Ring => self.ring(inp),
            Op::Doorbell => {
                let page = u32::from(inp.u16()) % (DOORBELLS + 4);
                let v = inp.u64();
                self.dev.doorbell_write(page, v);
            }
            Op::Bind => {
                let page = u32::from(inp.u8()) % (DOORBELLS + 2);
                let q = inp.u8();
                let id = match self.queues.get(usize::from(q)).copied().flatten() {
                    Some(queue) => queue.desc.queue_id,
                    None => u32::from(q),
                };
                if let Some(r) = regs::doorbell_bind_reg(page) {
                    self.dev.write32(r, id);
                }
            }
            Op::Step => {
                let n = usize::from(inp.u8()) + 1;
                self.run(n);
            }
            Op::Fault => self.fault(inp),
        }
    }

    /// Adapter reset, then what a driver's restart does; panics if the device is no longer
    /// usable (see the module docs).
    fn check_recovery(&mut self) {
        self.dev.set_anonymous_fence_events(false);
        self.dev
            .write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
        assert!(
            !self.dev.is_lost(),
            "the device is lost after an adapter reset"
        );
        assert_eq!(
            self.dev.read32(regs::DEVICE_STATUS),
            0,
            "DEVICE_STATUS after an adapter reset"
        );
        // Everything the input wrote goes: the driver starts from fresh memory.
        let zeros = vec![0u64; (WINDOW / 8) as usize];
        self.mem
            .write_words(PhysAddr::new(self.window.bus_addr), &zeros)
            .expect("window");
        self.syswin = [(0, 0); regs::SYSWIN_COUNT];
        self.program();
        self.dev.write64(regs::TLB_INVALIDATE, 0);

        // Tables at the input's first table pages: the whole window user-mapped, then one
        // data page mapped without USER.
        let root = self.map(0, Self::attrs(0));
        let kernel_page = at::DATA + 0x8000;
        let leaf = self.table(3);
        let e = mmu::entry_addr(leaf, GpuVa::new(VA_BASE + kernel_page), 0).expect("entry");
        let pte = Pte::page(self.win(kernel_page), Self::attrs(2), false).expect("leaf");
        self.mem.write_u64(PhysAddr::new(e), pte.0).expect("table");

        let fence = self.win(at::DATA);
        let user_fence = at::DATA + 0x100;
        let kernel = QueueDescriptor {
            queue_id: 100,
            flags: QueueFlags::VALID.bits(),
            ring_base: GpuVa::new(self.win(at::RINGS)),
            ring_size: 4096,
            doorbell: NO_DOORBELL,
            ring_control: GpuVa::new(self.win(at::CONTROLS)),
            progress_fence: GpuVa::new(self.win(at::CONTROLS + 0x80)),
            ..Default::default()
        };
        let va = |off: u64| VA_BASE + off;
        let user = QueueDescriptor {
            queue_id: 101,
            flags: (QueueFlags::VALID | QueueFlags::USER_MODE).bits(),
            ring_base: GpuVa::new(va(at::RINGS + at::RING_SLOT)),
            ring_size: 4096,
            doorbell: 0,
            ring_control: GpuVa::new(va(at::CONTROLS + 0x100)),
            progress_fence: GpuVa::new(va(at::CONTROLS + 0x180)),
            process_id: 1,
            page_table_base: BusAddr::new(root),
            ..Default::default()
        };
        let signal = |addr: u64, value: u64| Command::FenceSignal {
            flags: 0,
            value_addr: addr,
            value,
            monitored_addr: addr + 8,
            report_tag: 0,
        };
        let enc = |cmds: &[Command]| -> Vec<u64> {
            let mut out = Vec::new();
            for c in cmds {
                let mut b = vec![0u64; c.len()];
                c.encode(&mut b).expect("encode");
                out.extend(b);
            }
            out
        };
        self.mem
            .write_u64(PhysAddr::new(fence + 8), u64::MAX)
            .expect("fence");
        self.mem
            .write_u64(PhysAddr::new(self.win(user_fence) + 8), u64::MAX)
            .expect("fence");
        let k = enc(&[signal(fence, 7)]);
        let mut u = enc(&[signal(va(user_fence), 9)]);
        let mut wd = vec![0u64; 3];
        Command::WriteData {
            dst: va(kernel_page),
            count: 1,
        }
        .encode(&mut wd)
        .expect("encode");
        wd[2] = 0x5EC2E7;
        u.extend(wd);
        self.mem
            .write_words(PhysAddr::new(self.win(at::RINGS)), &k)
            .expect("ring");
        self.mem
            .write_words(PhysAddr::new(self.win(at::RINGS + at::RING_SLOT)), &u)
            .expect("ring");
        self.mem
            .store(
                PhysAddr::new(self.win(at::CONTROLS)),
                k.len() as u64 * 8,
                Ordering::Release,
            )
            .expect("control");
        self.mem
            .store(
                PhysAddr::new(self.win(at::CONTROLS + 0x100)),
                u.len() as u64 * 8,
                Ordering::Release,
            )
            .expect("control");
        for (engine, d) in [(0u32, kernel), (1, user)] {
            let rl = self.win(at::RUNLISTS + u64::from(engine) * 0x1000);
            self.mem
                .write_words(PhysAddr::new(rl), &d.to_words())
                .expect("runlist");
            let reg = |r| regs::engine_reg(engine, r).expect("engine register");
            self.dev.write64(reg(regs::engine::RUNLIST_BASE), rl);
            self.dev.write32(reg(regs::engine::RUNLIST_COUNT), 1);
            self.dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
        }
        let bind = regs::doorbell_bind_reg(0).expect("doorbell 0");
        self.dev.write32(bind, 101);
        self.dev.doorbell_write(0, 1);
        let kick = regs::engine_reg(0, regs::engine::QUEUE_KICK).expect("kick");
        self.dev.write32(kick, 100);
        self.passes = 0;
        self.run(400);
        assert_eq!(
            self.mem.read_u64(PhysAddr::new(fence)),
            Some(7),
            "a kernel-mode queue did not complete after the input"
        );
        assert_eq!(
            self.mem.read_u64(PhysAddr::new(self.win(user_fence))),
            Some(9),
            "a user-mode queue did not complete through fresh tables after the input"
        );
        assert_eq!(
            self.mem.read_u64(PhysAddr::new(self.win(kernel_page))),
            Some(0),
            "a user-mode queue wrote a page mapped without USER"
        );
        assert_eq!(
            self.dev.queue(101).and_then(|q| q.fault),
            Some(FaultCode::PageFault),
            "the user-mode queue's write to a kernel page did not fault"
        );
    }
}

/// The input's operations on a fresh rig.
fn play(data: &[u8]) -> Rig {
    let mut inp = Input::new(data);
    let mut rig = Rig::new();
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        rig.op(&mut inp);
    }
    let rest = STEP_LIMIT.saturating_sub(rig.passes).min(256);
    rig.run(rest);
    rig
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut rig = play(data);
    // No lookup in the device's TLB: every access used the identity root.
    let tlb = rig.dev.tlb_stats();
    if tlb.hits == 0 && tlb.misses == 0 {
        assert_canary_intact(&rig.canary);
    }
    rig.check_recovery();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_run_clean() {
        for (name, s) in seeds() {
            let r = std::panic::catch_unwind(|| run(&s));
            assert!(r.is_ok(), "seed {name}");
        }
    }

    fn seed(name: &str) -> Vec<u8> {
        seeds()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b)
            .expect("seed")
    }

    /// The seeds reach what they are named after (so the fuzzer starts from working queues).
    #[test]
    fn seeds_drive_working_queues_and_mmu_refusals() {
        let data = at::DATA;
        let rig = play(&seed("kernel-fence"));
        assert_eq!(rig.mem.read_u64(PhysAddr::new(rig.win(data))), Some(3));
        let rig = play(&seed("user-fence-doorbell"));
        assert_eq!(rig.mem.read_u64(PhysAddr::new(rig.win(data))), Some(5));
        assert!(rig.dev.tlb_stats().misses > 0);
        let rig = play(&seed("user-privileged-page"));
        assert_eq!(rig.mem.read_u64(PhysAddr::new(rig.win(data))), Some(0));
        assert_eq!(
            rig.dev.queue(3).and_then(|q| q.fault),
            Some(FaultCode::PageFault)
        );
        let rig = play(&seed("hang-engine-reset"));
        assert_eq!(rig.mem.read_u64(PhysAddr::new(rig.win(data))), Some(2));
    }

    #[test]
    fn empty_and_short_inputs_run_clean() {
        run(&[]);
        run(&[0]);
        run(&[4, 0, 0, 1, 4]);
    }
}
