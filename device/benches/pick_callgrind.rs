//! Instructions the emulated device spends per packet with idle queues beside the busy one
//! (flat with scale): run under callgrind by `scripts/callgrind-device.sh`, not
//! timed. A step-mode device, engine 0 with one kernel-mode queue on doorbell 0 and
//! `RVGPU_CALLGRIND_IDLE` (default 0) other valid queues with empty rings. K times
//! (`RVGPU_CALLGRIND_OPS`, default 1000): one `PROGRESS(v)` into the busy ring, publish
//! `write_ptr`, ring the doorbell, step the device until the progress fence reads `v`. The
//! script runs it for K and 2K and divides the difference by K, so the setup (committing the
//! runlist of idle queues) cancels.

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_device::{Device, DeviceConfig, LatchLine, Memory};
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, NO_DOORBELL};
use rvgpu_hw::regs;

mod ring;

const RING: u32 = 4096;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let ops = env("RVGPU_CALLGRIND_OPS", 1000);
    let idle = env("RVGPU_CALLGRIND_IDLE", 0);
    let mem = Memory::new(16 << 20);
    let dev = Device::new(DeviceConfig::step(), Arc::clone(&mem), LatchLine::new());
    // A ring, a ring control and a progress word per queue, and the runlist.
    let per_queue = u64::from(RING) + 2 * 4096;
    let bytes = (idle + 1) * per_queue + (idle + 1) * 128 + 4096;
    let arena = mem
        .alloc_system(bytes.next_multiple_of(4096), 4096)
        .expect("arena");
    let (b, s) = regs::syswin_regs(0).expect("window");
    dev.write64(b, arena.bus_addr);
    dev.write64(s, arena.len);
    let mut next = arena.bus_addr;
    let mut alloc = |n: u64| {
        let a = next;
        next += n.next_multiple_of(4096);
        a
    };
    let mut descs = Vec::new();
    for id in 0..=idle {
        let (ring, control, progress) = (alloc(u64::from(RING)), alloc(4096), alloc(4096));
        descs.push(QueueDescriptor {
            queue_id: id as u32 + 1,
            flags: QueueFlags::VALID.bits(),
            ring_base: GpuVa::new(ring),
            ring_size: RING,
            doorbell: if id == 0 { 0 } else { NO_DOORBELL },
            ring_control: GpuVa::new(control),
            progress_fence: GpuVa::new(progress),
            ..Default::default()
        });
    }
    let runlist = alloc(descs.len() as u64 * 128);
    for (i, d) in descs.iter().enumerate() {
        mem.write_words(PhysAddr::new(runlist + i as u64 * 128), &d.to_words())
            .expect("runlist");
    }
    ring::commit_engine0(&dev, runlist, descs.len() as u32, 1);

    let busy = descs[0];
    let (ring, control, progress) = (
        busy.ring_base.get(),
        busy.ring_control.get(),
        busy.progress_fence.get(),
    );
    let mut wptr = 0u64;
    for v in 1..=ops {
        wptr = ring::queue_progress(&mem, ring, RING, control, wptr, v);
        dev.doorbell_write(0, wptr);
        while mem.load(PhysAddr::new(progress), Ordering::Acquire) != Some(v) {
            assert!(dev.step(), "the device stopped before PROGRESS({v})");
        }
    }
    println!("ops={ops} idle={idle}");
}
