//! `gpu_ring`: the emulated GPU executing an arbitrary ring and an arbitrary INDIRECT buffer
//! (device model + command decoder), in step mode, with no driver and no OS around it.
//!
//! Each input gets a fresh device and memory (cheap: 64 KiB of VRAM, one 256 KiB system window),
//! so addresses are the same for every input and seeds can name the indirect buffer.
//!
//! Input: `flags:u8`, `steps:u8`, `ring_words:u16`, then `ring_words` ring words (u64 LE,
//! at most a ring's worth), then the indirect buffer's words (the rest, at most 4 KiB).
//!
//! Invariants (a violation panics):
//! - the device never panics and the run is bounded (at most `STEP_LIMIT` device steps);
//! - nothing outside the registered system window changes (a canary page next to it);
//! - once the hostile queue is off the runlist, a queue created afterwards on the other
//!   engine still completes a fence signal.

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_device::{Device, Memory, SysAlloc};
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl, NO_DOORBELL};
use rvgpu_hw::regs::{self, IntCause};

use crate::commands::encode;
use crate::input::{Input, Writer};
use crate::step_device::{assert_canary_intact, fresh, run_passes};

/// Bytes of the system window the device may reach.
const WINDOW: u64 = 256 << 10;
/// The hostile ring's size.
pub const RING_BYTES: u64 = 4096;
/// The indirect buffer's size.
pub const IB_BYTES: u64 = 4096;
/// Device steps per input at most (`steps` byte × 16, and the innocent check's own budget).
const STEP_LIMIT: usize = 255 * 16;
/// Event ring slots.
const EVENT_SLOTS: u32 = 64;

/// Where things are in a fresh rig (the same for every input).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Bus address of the hostile ring.
    pub ring: u64,
    /// Bus address of the indirect buffer.
    pub ib: u64,
    /// Bus address of a scratch page the seeds write to.
    pub scratch: u64,
}

struct Rig {
    mem: Arc<Memory>,
    dev: Arc<Device>,
    window: SysAlloc,
    canary: SysAlloc,
    next: u64,
    event_ring: u64,
}

impl Rig {
    fn new() -> Self {
        let (mem, dev, window, canary) = fresh(64 << 10, WINDOW);
        let (b, s) = regs::syswin_regs(0).expect("syswin 0");
        dev.write64(b, window.bus_addr);
        dev.write64(s, window.len);
        let mut rig = Self {
            next: window.bus_addr,
            mem,
            dev,
            window,
            canary,
            event_ring: 0,
        };
        rig.event_ring = rig.alloc(u64::from(EVENT_SLOTS) * 32);
        rig.dev.write64(regs::EVENT_RING_BASE, rig.event_ring);
        rig.dev.write32(regs::EVENT_RING_SIZE, EVENT_SLOTS);
        rig.dev.write32(regs::EVENT_RING_CTRL, 1);
        rig.dev.write32(regs::INT_ENABLE, IntCause::all().bits());
        rig
    }

    /// Zeroed pages from the window (zeroed again: the hostile ring may have written there).
    fn alloc(&mut self, bytes: u64) -> u64 {
        let a = self.next;
        let len = bytes.next_multiple_of(4096);
        self.next += len;
        assert!(self.next <= self.window.bus_addr + self.window.len);
        let zeros = vec![0u64; (len / 8) as usize];
        self.mem
            .write_words(PhysAddr::new(a), &zeros)
            .expect("window memory");
        a
    }

    fn queue(&mut self, id: u32, ring: u64, ring_bytes: u32) -> QueueDescriptor {
        let rc = self.alloc(RingControl::SIZE);
        let progress = self.alloc(8);
        QueueDescriptor {
            queue_id: id,
            flags: QueueFlags::VALID.bits(),
            ring_base: GpuVa::new(ring),
            ring_size: ring_bytes,
            doorbell: NO_DOORBELL,
            ring_control: GpuVa::new(rc),
            progress_fence: GpuVa::new(progress),
            ..Default::default()
        }
    }

    fn commit(&mut self, engine: u32, d: &QueueDescriptor) {
        let rl = self.alloc(128);
        self.mem
            .write_words(PhysAddr::new(rl), &d.to_words())
            .expect("runlist");
        let reg = |r| regs::engine_reg(engine, r).expect("engine register");
        self.dev.write64(reg(regs::engine::RUNLIST_BASE), rl);
        self.dev.write32(reg(regs::engine::RUNLIST_COUNT), 1);
        self.dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
    }

    fn publish(&self, engine: u32, d: &QueueDescriptor, wptr: u64) {
        self.mem
            .store(
                PhysAddr::new(d.ring_control.get() + RingControl::WRITE_PTR),
                wptr,
                Ordering::Release,
            )
            .expect("ring control");
        let kick = regs::engine_reg(engine, regs::engine::QUEUE_KICK).expect("kick");
        self.dev.write32(kick, d.queue_id);
    }

    /// Steps until `steps` passes ran or the device did nothing for a few passes in a row.
    fn run(&self, steps: usize) {
        run_passes(&self.dev, steps, || true);
    }
}

/// The fixed layout of a fresh rig: its window is the memory's first system allocation, at
/// `SYSMEM_START`; the event ring is the window's first page.
pub fn layout() -> Layout {
    let ring = rvgpu_device::SYSMEM_START.next_multiple_of(4096) + 4096;
    let ib = ring + RING_BYTES;
    Layout {
        ring,
        ib,
        scratch: ib + IB_BYTES,
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut inp = Input::new(data);
    let flags = inp.u8();
    let steps = (usize::from(inp.u8()) + 1) * 16;
    let ring_words = usize::from(inp.u16()).min((RING_BYTES / 8) as usize);
    let mut rig = Rig::new();
    let ring = rig.alloc(RING_BYTES);
    let ib = rig.alloc(IB_BYTES);
    let scratch = rig.alloc(4096);
    let l = layout();
    assert_eq!((ring, ib, scratch), (l.ring, l.ib, l.scratch), "rig layout");
    let mut words = Vec::with_capacity(ring_words);
    for _ in 0..ring_words {
        words.push(inp.u64());
    }
    rig.mem
        .write_words(PhysAddr::new(ring), &words)
        .expect("ring");
    let rest = inp.rest();
    let ib_words: Vec<u64> = rest
        .chunks(8)
        .take((IB_BYTES / 8) as usize)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect();
    rig.mem
        .write_words(PhysAddr::new(ib), &ib_words)
        .expect("ib");

    // Ring size: the whole ring, or (flag bit 0) a smaller one the write pointer wraps in.
    let ring_bytes = if flags & 1 != 0 {
        1024
    } else {
        RING_BYTES as u32
    };
    let hostile = rig.queue(1, ring, ring_bytes);
    rig.commit(0, &hostile);
    // Write pointer: every word written, or (flag bit 1) past the ring (wrap-around).
    let wptr = if flags & 2 != 0 {
        (words.len() as u64 * 8) + u64::from(ring_bytes)
    } else {
        words.len() as u64 * 8
    };
    rig.publish(0, &hostile, wptr);
    rig.run(steps.min(STEP_LIMIT));

    // Nothing outside the window was written.
    assert_canary_intact(&rig.canary);

    // Off the runlist, as a driver takes a queue away: the hostile ring may otherwise go on
    // writing anywhere in the window, the fence below included.
    let empty = rig.alloc(128);
    let reg = |r| regs::engine_reg(0, r).expect("engine register");
    rig.dev.write64(reg(regs::engine::RUNLIST_BASE), empty);
    rig.dev.write32(reg(regs::engine::RUNLIST_COUNT), 0);
    rig.dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
    rig.run(64);

    // The other engine still works: a fresh queue signals a fence.
    let ring2 = rig.alloc(4096);
    let fence = rig.alloc(16);
    let innocent = rig.queue(2, ring2, 4096);
    let cmd = Command::FenceSignal {
        flags: 0,
        value_addr: fence,
        value: 7,
        monitored_addr: fence + 8,
        report_tag: 0,
    };
    rig.mem
        .write_u64(PhysAddr::new(fence + 8), u64::MAX)
        .expect("fence");
    let mut buf = vec![0u64; cmd.len()];
    cmd.encode(&mut buf).expect("encode");
    rig.mem
        .write_words(PhysAddr::new(ring2), &buf)
        .expect("ring2");
    rig.commit(1, &innocent);
    rig.publish(1, &innocent, buf.len() as u64 * 8);
    rig.run(200);
    assert_eq!(
        rig.mem.read_u64(PhysAddr::new(fence)),
        Some(7),
        "the other engine's queue did not complete after the hostile ring"
    );
}

/// Seed inputs: valid rings of every command, and an INDIRECT into a valid buffer.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let l = layout();
    let s = l.scratch;
    let all = vec![
        Command::Nop { len: 2 },
        Command::Fill {
            dst: s,
            bytes: 64,
            pattern: 0x55,
        },
        Command::Copy {
            src: s,
            dst: s + 512,
            bytes: 256,
        },
        Command::Timestamp { addr: s + 1024 },
        Command::Progress {
            irq: true,
            value: 1,
        },
        Command::FenceSignal {
            flags: 1,
            value_addr: s + 2048,
            value: 3,
            monitored_addr: s + 2056,
            report_tag: 5,
        },
        Command::FenceWait {
            addr: s + 2048,
            value: 3,
        },
        Command::WriteData {
            dst: s + 3000,
            count: 1,
        },
        Command::TlbInvalidate { root: 0 },
    ];
    let input = |flags: u8, ring: &[u64], ib: &[u64]| {
        let mut w = Writer::new();
        w.u8(flags).u8(8).u16(ring.len() as u16);
        for x in ring {
            w.u64(*x);
        }
        for x in ib {
            w.u64(*x);
        }
        w.finish()
    };
    let mut out = Vec::new();
    for (i, c) in all.iter().enumerate() {
        out.push((
            format!("cmd-{i:02}"),
            input(0, &encode(std::slice::from_ref(c)), &[]),
        ));
    }
    out.push(("all-commands".into(), input(0, &encode(&all), &[])));
    let ib = encode(&all);
    let ind = Command::Indirect {
        addr: l.ib,
        bytes: ib.len() as u64 * 8,
    };
    out.push((
        "indirect-all".into(),
        input(
            0,
            &encode(&[
                ind,
                Command::Progress {
                    irq: true,
                    value: 2,
                },
            ]),
            &ib,
        ),
    ));
    out.push((
        "indirect-nested".into(),
        input(
            0,
            &encode(&[ind]),
            &encode(&[Command::Indirect {
                addr: l.ib,
                bytes: 16,
            }]),
        ),
    ));
    out.push(("hang".into(), input(0, &encode(&[Command::Hang]), &[])));
    out.push((
        "wrap".into(),
        input(3, &encode(&[Command::Nop { len: 1 }; 4]), &[]),
    ));
    out
}
