//! Doorbell write → CMP pickup latency, criterion, threaded device,
//! against a bare cross-thread wake (`Mutex` + `Condvar`) measured in the same run.
//!
//! - `doorbell`: one queue bound to a dedicated doorbell on an idle threaded device. Its ring
//!   already holds `PROGRESS(v)` and `write_ptr` is published; `t0` is taken just before the
//!   doorbell write, `t1` when the bench thread, spinning, sees `v` in the progress fence. So the
//!   figure is: the doorbell write (which loads `write_ptr` and wakes the CMP), the CMP thread
//!   waking, picking the queue, decoding and executing one packet.
//! - `bare_condvar`: a thread blocked on a `Condvar`; `t0` just before the flag is set and
//!   `notify_one` called, `t1` when the bench thread sees the value that thread then stores.
//!
//! Both sides wait 200 µs before each wake so the other thread is asleep (not measured). After
//! criterion's report the bench prints medians and the ratio doorbell / bare. Run with
//! `cargo bench -p rvgpu-device --bench doorbell_pickup`.

use rvgpu_hw::addr::PhysAddr;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rvgpu_device::{Device, DeviceConfig, LatchLine, Memory, Mode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags};
use rvgpu_hw::regs;

mod ring;
mod support;

const SETTLE: Duration = Duration::from_micros(200);
const RING: u32 = 4096;

struct Samples(Vec<Duration>);

impl Samples {
    /// Runs `one` `iters` times, keeping each duration it measured; returns their sum.
    fn run(&mut self, iters: u64, mut one: impl FnMut() -> Duration) -> Duration {
        (0..iters)
            .map(|_| {
                let d = one();
                self.0.push(d);
                d
            })
            .sum()
    }

    fn median_us(&self) -> f64 {
        let mut v = self.0.clone();
        v.sort_unstable();
        v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e6)
    }
}

/// A threaded device with one queue on engine 0 bound to doorbell page 0.
struct Bench {
    dev: Arc<Device>,
    mem: Arc<Memory>,
    ring: u64,
    control: u64,
    progress: u64,
    wptr: u64,
}

impl Bench {
    fn new() -> Self {
        let cfg = DeviceConfig {
            mode: Mode::Threaded,
            ..DeviceConfig::default()
        };
        let mem = Memory::new(cfg.vram_size);
        let dev = Device::new(cfg, Arc::clone(&mem), LatchLine::new());
        let arena = mem.alloc_system(1 << 20, 4096).expect("arena");
        let (b, s) = regs::syswin_regs(0).expect("window");
        dev.write64(b, arena.bus_addr);
        dev.write64(s, arena.len);
        let ring = arena.bus_addr;
        let control = ring + u64::from(RING);
        let progress = control + 4096;
        let runlist = progress + 4096;
        let d = QueueDescriptor {
            queue_id: 7,
            // Kernel-mode: a user-mode queue needs page tables (hardware.md B20), and a
            // dedicated doorbell rings either kind the same way.
            flags: QueueFlags::VALID.bits(),
            ring_base: rvgpu_hw::addr::GpuVa::new(ring),
            ring_size: RING,
            doorbell: 0,
            ring_control: rvgpu_hw::addr::GpuVa::new(control),
            progress_fence: rvgpu_hw::addr::GpuVa::new(progress),
            ..Default::default()
        };
        mem.write_words(PhysAddr::new(runlist), &d.to_words())
            .expect("runlist");
        ring::commit_engine0(&dev, runlist, 1, 7);
        dev.start();
        Self {
            dev,
            mem,
            ring,
            control,
            progress,
            wptr: 0,
        }
    }

    /// Writes `PROGRESS(v)` and publishes `write_ptr` (no ring yet).
    fn queue_progress(&mut self, v: u64) {
        self.wptr = ring::queue_progress(&self.mem, self.ring, RING, self.control, self.wptr, v);
    }

    /// Rings and returns the time until the progress fence reads `v`.
    fn ring_and_wait(&self, v: u64) -> Duration {
        let t0 = Instant::now();
        self.dev.doorbell_write(0, self.wptr);
        while self
            .mem
            .load(PhysAddr::new(self.progress), Ordering::Acquire)
            != Some(v)
        {
            spin_loop();
        }
        t0.elapsed()
    }
}

fn main() {
    let mut c = support::criterion(Duration::from_millis(300), Duration::from_secs(3));

    let mut doorbell = Samples(Vec::new());
    let mut bare = Samples(Vec::new());

    {
        let mut b = Bench::new();
        let mut v = 0u64;
        c.bench_function("doorbell_pickup/doorbell", |bn| {
            bn.iter_custom(|iters| {
                doorbell.run(iters, || {
                    v += 1;
                    b.queue_progress(v);
                    thread::sleep(SETTLE);
                    b.ring_and_wait(v)
                })
            });
        });
        b.dev.stop();
    }

    {
        let shared = Arc::new((Mutex::new(0u64), Condvar::new(), AtomicU64::new(0)));
        let worker = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                let (lock, cv, out) = &*shared;
                let mut seen = 0u64;
                loop {
                    let g = lock.lock().expect("lock");
                    let g = cv.wait_while(g, |v| *v == seen).expect("wait");
                    seen = *g;
                    drop(g);
                    if seen == u64::MAX {
                        return;
                    }
                    out.store(seen, Ordering::Release);
                }
            })
        };
        let mut v = 0u64;
        c.bench_function("doorbell_pickup/bare_condvar", |bn| {
            bn.iter_custom(|iters| {
                bare.run(iters, || {
                    v += 1;
                    thread::sleep(SETTLE);
                    let (lock, cv, out) = &*shared;
                    let t0 = Instant::now();
                    *lock.lock().expect("lock") = v;
                    cv.notify_one();
                    while out.load(Ordering::Acquire) != v {
                        spin_loop();
                    }
                    t0.elapsed()
                })
            });
        });
        *shared.0.lock().expect("lock") = u64::MAX;
        shared.1.notify_one();
        worker.join().expect("worker");
    }

    c.final_summary();
    let (d, b) = (doorbell.median_us(), bare.median_us());
    println!(
        "doorbell_pickup: median doorbell → CMP executed {d:.1} µs ({} samples), bare condvar wake \
         {b:.1} µs ({} samples), ratio {:.2}x",
        doorbell.0.len(),
        bare.0.len(),
        if b > 0.0 { d / b } else { 0.0 }
    );
}
