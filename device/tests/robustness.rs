//! Guest-controlled input never panics the device: garbage rings, garbage descriptors,
//! garbage register writes. (A deterministic LCG stands in for a fuzzer.)
mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::addr::{BusAddr, GpuVa};
use rvgpu_hw::cmd::{self, Opcode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl};
use rvgpu_hw::regs;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 ^ (self.0 >> 29)
    }
}

#[test]
fn garbage_rings_fault_but_never_panic() {
    let mut rnd = Lcg(1);
    for round in 0..40 {
        let mut rig = Rig::new(rvgpu_device::DeviceConfig {
            vram_size: 1 << 20,
            ..rvgpu_device::DeviceConfig::step()
        });
        let f = rig.fence(0);
        let [mut q, mut good] = rig.queues_committed(0, [1, 2]);
        let words: Vec<u64> = (0..64)
            .map(|i| match rnd.next() % 4 {
                // Plausible headers with random arguments reach deeper into the executor.
                0 => cmd::header(
                    Opcode::from_u8((rnd.next() % 9) as u8).unwrap(),
                    (rnd.next() % 4) as u8,
                    (rnd.next() % 6) as u16,
                ),
                1 => rig.arena.bus_addr + (rnd.next() % (8 << 20)) / 8 * 8,
                2 => i,
                _ => rnd.next(),
            })
            .collect();
        rig.push_words(&mut q, &words);
        if round % 5 == 0 {
            // Inconsistent ring control.
            rig.mem
                .write_u64(
                    PhysAddr::new(q.desc.ring_control.get() + RingControl::WRITE_PTR),
                    rnd.next(),
                )
                .unwrap();
        }
        rig.ring(&q);
        rig.dev.run_until_idle(2000);
        rig.submit(&mut good, &[signal(f, 1, 0, 0)]);
        rig.dev.run_until_idle(2000);
        // The healthy queue ran, unless the garbage legitimately occupies the shared engine
        // (a HANG or a transfer in flight, which a real engine would not preempt either).
        let snap = rig.dev.engine_snapshot(0).unwrap();
        let garbage_alive = snap
            .queues
            .iter()
            .any(|q| q.queue_id == 1 && q.fault.is_none());
        assert!(
            garbage_alive || rig.mem.read_u64(PhysAddr::new(f.cv)) == Some(1),
            "round {round}"
        );
        rig.isr();
    }
}

#[test]
fn garbage_descriptors_never_panic() {
    let mut rnd = Lcg(7);
    let mut rig = Rig::step();
    for _ in 0..50 {
        let mut w = [0u64; 16];
        for x in w.iter_mut() {
            *x = rnd.next();
        }
        let mut d = QueueDescriptor::from_words(&w);
        d.flags |= QueueFlags::VALID.bits();
        d.ring_size = 4096;
        d.ring_base = GpuVa::new(d.ring_base.get() & !7);
        d.ring_control = GpuVa::new(u64::MAX - 7 - (rnd.next() % 64) * 8);
        d.progress_fence = GpuVa::new(d.progress_fence.get() & !7);
        d.page_table_base = BusAddr::NULL;
        rig.commit_descs(0, &[d]);
        rig.dev.doorbell_write(0, 0);
        rig.dev
            .write32(rig.engine_reg(0, regs::engine::QUEUE_KICK), d.queue_id);
        rig.dev.run_until_idle(100);
        rig.isr();
    }
}

#[test]
fn garbage_register_writes_never_panic() {
    let mut rnd = Lcg(3);
    let rig = Rig::step();
    for _ in 0..5_000 {
        let off = (rnd.next() % 0x2000) as usize & !3;
        if off == regs::ADAPTER_RESET {
            continue;
        }
        if rnd.next().is_multiple_of(2) {
            rig.dev.write32(off, rnd.next() as u32);
        } else {
            rig.dev.write64(off, rnd.next());
        }
        let _ = rig.dev.read32(off);
        let _ = rig.dev.read64(off + 4);
        rig.dev.doorbell_write((rnd.next() % 40) as u32, rnd.next());
        rig.dev.step();
    }
    rig.dev
        .write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
    assert_eq!(rig.dev.read32(regs::ID), regs::ID_VALUE);
}
