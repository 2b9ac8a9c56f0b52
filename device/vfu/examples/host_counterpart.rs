//! The in-process counterpart of `guest_smoke`'s measurements: the same
//! three costs with the emulated GPU in the measuring process instead of behind QEMU's PCIe.
//!
//! - a register read (`SCRATCH`) through the device's MMIO bus, as the simulated kernel's trap
//!   window makes it;
//! - a doorbell ring with no new work;
//! - a doorbell that makes the device run `PROGRESS` with an interrupt, to a thread blocked on
//!   the interrupt line waking up.
//!
//! `device/vfu/vm/run-guest-smoke.sh` runs it on the host right after the guest, so the README's
//! guest-vs-in-process table comes from one run on one machine. Wall-clock figures: they vary
//! with the machine's load and are printed, never asserted.

use rvgpu_hw::addr::PhysAddr;
use std::hint::spin_loop;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rvgpu_device::{Device, DeviceConfig, LatchLine, Memory, Mode};
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl};
use rvgpu_hw::regs::{self, IntCause};

const RING: u32 = 4096;
const QUEUE_ID: u32 = 3;
const EVENT_RING_SIZE: u32 = 64;

fn main() {
    let cfg = DeviceConfig {
        mode: Mode::Threaded,
        ..DeviceConfig::default()
    };
    let mem = Memory::new(cfg.vram_size);
    let line = LatchLine::new();
    let dev = Device::new(cfg, Arc::clone(&mem), line.clone());
    let arena = mem.alloc_system(1 << 20, 4096).expect("arena");
    let base = arena.bus_addr;
    let (ev, ring, rc, progress, runlist) = (
        base,
        base + 0x1000,
        base + 0x2000,
        base + 0x3000,
        base + 0x4000,
    );
    let (b, s) = regs::syswin_regs(0).expect("window");
    dev.write64(b, arena.bus_addr);
    dev.write64(s, arena.len);
    dev.write64(regs::EVENT_RING_BASE, ev);
    dev.write32(regs::EVENT_RING_SIZE, EVENT_RING_SIZE);
    dev.write32(regs::EVENT_RING_CTRL, 1);
    dev.write32(regs::INT_ACK, u32::MAX);
    dev.write32(regs::INT_ENABLE, IntCause::all().bits());
    let d = QueueDescriptor {
        queue_id: QUEUE_ID,
        flags: QueueFlags::VALID.bits(),
        ring_base: GpuVa::new(ring),
        ring_size: RING,
        doorbell: 0,
        ring_control: GpuVa::new(rc),
        progress_fence: GpuVa::new(progress),
        ..Default::default()
    };
    mem.write_words(PhysAddr::new(runlist), &d.to_words())
        .expect("runlist");
    let e = |r| regs::engine_reg(0, r).expect("engine 0");
    dev.write64(e(regs::engine::RUNLIST_BASE), runlist);
    dev.write32(e(regs::engine::RUNLIST_COUNT), 1);
    dev.write32(e(regs::engine::RUNLIST_COMMIT), 1);
    dev.write32(regs::doorbell_bind_reg(0).expect("doorbell 0"), QUEUE_ID);
    dev.start();

    let mut wptr = 0u64;
    let mut push = |value: u64, irq: bool| {
        let mut words = [0u64; 2];
        let n = Command::Progress { irq, value }
            .encode(&mut words)
            .expect("encode");
        for w in words.iter().take(n) {
            mem.store(
                PhysAddr::new(ring + wptr % u64::from(RING)),
                *w,
                Ordering::Relaxed,
            )
            .expect("ring");
            wptr += 8;
        }
        mem.store(
            PhysAddr::new(rc + RingControl::WRITE_PTR),
            wptr,
            Ordering::Release,
        )
        .expect("write_ptr");
        wptr
    };
    // The ISR's work, as guest_smoke does it: acknowledge, consume the event ring.
    let mut rptr = 0u32;
    let mut isr = || {
        let status = dev.read32(regs::INT_STATUS);
        dev.write32(regs::INT_ACK, status);
        rptr = dev.read32(regs::EVENT_RING_WPTR);
        dev.write32(regs::EVENT_RING_RPTR, rptr);
    };

    let n = 500u32;
    let t = Instant::now();
    let mut x = 0u32;
    for _ in 0..n {
        x ^= dev.read32(regs::SCRATCH);
    }
    let read = t.elapsed() / n;
    println!("in-process: one register read {read:?} (mean of {n}; {x})");

    let last = push(0x2FFF, false);
    while mem.load(PhysAddr::new(progress), Ordering::Acquire) != Some(0x2FFF) {
        dev.doorbell_write(0, last);
        spin_loop();
    }
    let t = Instant::now();
    for _ in 0..n {
        dev.doorbell_write(0, last);
    }
    let ring_cost = t.elapsed() / n;
    println!("in-process: one doorbell ring {ring_cost:?} (mean of {n}; no new work)");

    isr();
    let mut lat = Vec::new();
    for i in 0..20u64 {
        // Let the device's thread go back to sleep, as the guest's idle device does.
        std::thread::sleep(Duration::from_millis(2));
        let seen = line.rises();
        let w = push(0x3000 + i, true);
        let waiter = {
            let line = Arc::clone(&line);
            std::thread::spawn(move || {
                let n = line.wait_rises_above(seen, Duration::from_secs(5));
                (n > seen).then(Instant::now)
            })
        };
        // The waiter must be blocked before the ring (it is, well within 2 ms).
        std::thread::sleep(Duration::from_millis(2));
        let t0 = Instant::now();
        dev.doorbell_write(0, w);
        match waiter.join().ok().flatten() {
            Some(t1) => lat.push(t1.duration_since(t0)),
            None => {
                println!(
                    "in-process: FAIL no interrupt for PROGRESS {:#x}",
                    0x3000 + i
                );
                break;
            }
        }
        isr();
    }
    lat.sort();
    if let Some(m) = lat.get(lat.len() / 2) {
        println!(
            "in-process: doorbell -> GPU PROGRESS -> interrupt wake-up of a blocked thread, \
             median of {}: {m:?}",
            lat.len()
        );
    }
    dev.stop();
}
