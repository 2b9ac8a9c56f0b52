//! What the device benches that drive one kernel-mode queue through its ring share: committing
//! engine 0's runlist with doorbell page 0 bound, and writing `PROGRESS(v)` into a ring.

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;

use rvgpu_device::{Device, Memory};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::RingControl;
use rvgpu_hw::regs;

/// Commits the `count` descriptors at `runlist` as engine 0's runlist and binds doorbell
/// page 0 to queue `queue_id`.
pub fn commit_engine0(dev: &Device, runlist: u64, count: u32, queue_id: u32) {
    let reg = |r| regs::engine_reg(0, r).expect("engine 0");
    dev.write64(reg(regs::engine::RUNLIST_BASE), runlist);
    dev.write32(reg(regs::engine::RUNLIST_COUNT), count);
    dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
    dev.write32(regs::doorbell_bind_reg(0).expect("doorbell 0"), queue_id);
}

/// Writes `PROGRESS(v)` at `wptr` of the ring of `ring_size` bytes at `ring` and publishes
/// the new write pointer in the ring control at `control` (no doorbell yet); returns it.
pub fn queue_progress(
    mem: &Memory,
    ring: u64,
    ring_size: u32,
    control: u64,
    wptr: u64,
    v: u64,
) -> u64 {
    let mut words = [0u64; 2];
    let n = Command::Progress {
        irq: false,
        value: v,
    }
    .encode(&mut words)
    .expect("encode");
    let mut wptr = wptr;
    for w in words.iter().take(n) {
        mem.store(
            PhysAddr::new(ring + wptr % u64::from(ring_size)),
            *w,
            Ordering::Relaxed,
        )
        .expect("ring");
        wptr += 8;
    }
    mem.store(
        PhysAddr::new(control + RingControl::WRITE_PTR),
        wptr,
        Ordering::Release,
    )
    .expect("write_ptr");
    wptr
}
