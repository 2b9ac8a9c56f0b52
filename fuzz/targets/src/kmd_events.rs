//! `kmd_events`: the KMD's event-ring and fence-log parsing fed arbitrary memory contents, as
//! a faulty or hostile GPU could write them. Memory the GPU writes is untrusted.
//!
//! Per input a hostile process sets up a user-mode queue through the thunks and submits real
//! work (so the device raises real interrupts). Before each round of the machine, records the
//! device has published in the event ring but the ISR has not yet consumed are overwritten
//! from the input (a plausible record with chosen fields, or raw bytes), and words of the
//! queue's native-fence wait and signal logs are overwritten too; then the ISR and DPC run.
//!
//! Input: `log_writes:u8` × (`kind:u8`, `word:u16`, `value:u64`), `work:u8` (which commands
//! the queue submits), then per pending event record: `mode:u8` and its fields.
//!
//! Invariants: those of [`crate::world::World::check`].

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;

use rvgpu_hw::cmd::{Command, LogKind};
use rvgpu_hw::event::EventRecord;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::pdd::{DoorbellPdd, DoorbellValue, HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use rvgpu_hw::queue::RingControl;
use rvgpu_hw::regs;
use rvgpu_umd::kmt::{AllocationCpu, AllocationKind, DoorbellCpu, Kmt};
use zerocopy::IntoBytes;

use crate::commands::encode;
use crate::input::{Input, Writer};
use crate::world::with_world;

/// Rounds of the machine per input at most.
const ROUNDS: usize = 48;

/// A record from the input: mode 0 leaves the device's record, 1 changes one field of it,
/// 2 builds a plausible record, 3 writes raw words.
fn forge(inp: &mut Input<'_>, real: [u64; 4], hostile_id: u32) -> Option<[u64; 4]> {
    let mode = inp.u8();
    let mut r = EventRecord::from_words(real);
    match mode % 4 {
        0 => return None,
        1 => match inp.u8() % 7 {
            0 => r.kind = inp.u8() % 8,
            1 => r.engine = inp.u8() % 4,
            2 => r.flags = inp.u16(),
            3 => r.queue_id = inp.u32(),
            4 => r.arg0 = inp.u64(),
            5 => r.arg1 = inp.u64(),
            _ => r.arg2 = inp.u64(),
        },
        2 => {
            r.kind = inp.u8() % 8;
            r.engine = inp.u8() % 4;
            r.flags = u16::from(inp.u8() % 4);
            r.queue_id = match inp.u8() % 4 {
                0 => hostile_id,
                1 => u32::from(inp.u8()),
                2 => u32::MAX,
                _ => inp.u32(),
            };
            r.arg0 = u64::from(inp.u8());
            r.arg1 = inp.u64();
            r.arg2 = inp.u64();
        }
        _ => return Some([inp.u64(), inp.u64(), inp.u64(), inp.u64()]),
    }
    Some(r.to_words())
}

/// Runs one input.
pub fn run(data: &[u8]) {
    with_world(|w| {
        let m = w.m;
        let p = w.hostile();
        let k = m.kmt(&p);
        let mut inp = Input::new(data);
        // A user-mode queue, built as the UMD does.
        let context = k.create_context(0).expect("context");
        let mut qp = HwQueuePdd {
            magic: PDD_MAGIC,
            version: HW_QUEUE_PDD_VERSION,
            ..Default::default()
        };
        let queue = k
            .create_hw_queue(context, true, qp.as_mut_bytes())
            .expect("queue");
        let ring = k
            .create_allocation_as(4096, AllocationKind::Commands)
            .expect("ring");
        let control = k
            .create_allocation_as(RingControl::SIZE, AllocationKind::RingControl)
            .expect("ring control");
        let mut dp = DoorbellPdd::for_ring(4096);
        let doorbell = k
            .create_doorbell(queue.handle, ring.handle, control.handle, dp.as_mut_bytes())
            .expect("doorbell");
        k.connect_doorbell(doorbell.handle).expect("connect");
        let hostile_id = m.hw_queue_id(0, queue.handle).unwrap_or(0);

        // Fence-log contents.
        let writes = inp.u8() % 16;
        for _ in 0..writes {
            let kind = if inp.u8() & 1 == 0 {
                LogKind::Wait
            } else {
                LogKind::Signal
            };
            let word = u64::from(inp.u16() % 512);
            let value = inp.u64();
            if let Some(b) = m.hw_queue_log_buffer(0, queue.handle, kind) {
                if let Some(x) = b.alloc().word(word * 8) {
                    x.store(value, Ordering::Release);
                }
            }
        }

        // Real work, so the device raises real interrupts.
        let work = inp.u8();
        let scratch = ring.gpu_va + 2048;
        let mut cmds = vec![Command::Progress {
            irq: true,
            value: 1,
        }];
        if work & 1 != 0 {
            cmds.push(Command::FenceSignal {
                flags: rvgpu_hw::cmd::SIGNAL_CONDITIONAL_IRQ,
                value_addr: scratch,
                value: 1,
                monitored_addr: scratch + 8,
                report_tag: 0,
            });
        }
        if work & 2 != 0 {
            // A fault: FILL outside the process's memory.
            cmds.push(Command::Fill {
                dst: 0x10_0000,
                bytes: 8,
                pattern: 1,
            });
        }
        if work & 4 != 0 {
            cmds.push(Command::Hang);
        }
        cmds.push(Command::Progress {
            irq: true,
            value: 2,
        });
        let words = encode(&cmds);
        for (i, x) in words.iter().enumerate() {
            ring.mem.store(i as u64 * 8, *x);
        }
        let wptr = words.len() as u64 * 8;
        control.mem.store(RingControl::WRITE_PTR, wptr);
        doorbell.cpu.set_last_queued(2);
        let value = match DoorbellValue::from_u32(dp.ring_value) {
            Some(DoorbellValue::QueueId) => u64::from(dp.queue_id),
            _ => wptr,
        };
        doorbell.cpu.ring(value);

        // Rounds: the device publishes records, the input rewrites the unread ones, the ISR
        // and DPC consume them.
        let dev = m.device(0).expect("device").clone();
        let base = dev.read64(regs::EVENT_RING_BASE);
        let size = dev.read32(regs::EVENT_RING_SIZE).max(1);
        let mem = m.memory().clone();
        for _ in 0..ROUNDS {
            dev.step();
            let wp = dev.read32(regs::EVENT_RING_WPTR);
            let mut rp = dev.read32(regs::EVENT_RING_RPTR);
            while rp != wp && !inp.is_empty() {
                let slot = base + u64::from(rp % size) * 32;
                let real = mem
                    .read_words(PhysAddr::new(slot), 4)
                    .and_then(|v| <[u64; 4]>::try_from(v).ok())
                    .unwrap_or([0; 4]);
                if let Some(f) = forge(&mut inp, real, hostile_id) {
                    let _ = mem.write_words(PhysAddr::new(slot), &f);
                }
                rp = rp.wrapping_add(1);
            }
            if m.run_steps(1).is_err() {
                break;
            }
        }
        w.no_fault("after the forged records");
        drop((ring, control, doorbell));
        w.kill(&p);
        w.check();
    });
}

/// Seeds: every kind of record, real and forged, with plausible fields.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for work in 0..8u8 {
        let mut w = Writer::new();
        w.u8(0).u8(work);
        for _ in 0..8 {
            w.u8(0);
        }
        out.push((format!("real-work-{work}"), w.finish()));
    }
    for kind in 0..8u8 {
        for qsel in 0..4u8 {
            let mut w = Writer::new();
            w.u8(0).u8(1);
            for engine in 0..2u8 {
                w.u8(2).u8(kind).u8(engine).u8(0).u8(qsel);
                match qsel {
                    1 => {
                        w.u8(1);
                    }
                    3 => {
                        w.u32(2);
                    }
                    _ => {}
                }
                w.u8(1).u64(1).u64(0);
            }
            out.push((format!("forged-kind{kind}-q{qsel}"), w.finish()));
        }
    }
    // Fence-log contents: a header going backwards (indices 1 then 0) and garbage entries.
    let mut w = Writer::new();
    w.u8(3);
    w.u8(0).u16(0).u64(1);
    w.u8(1).u16(0).u64(0);
    w.u8(1).u16(5).u64(u64::MAX);
    w.u8(1);
    out.push(("log-garbage".to_string(), w.finish()));
    out
}
