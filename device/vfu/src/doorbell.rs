//! BAR2 as memory the client maps: a guest's doorbell ring that does not trap.
//!
//! Through QEMU every BAR write the server sees is a trap: a VM exit and a round trip over the
//! socket (26.6 µs per ring measured in the guest). With dedicated doorbells the value a queue
//! writes is its ring's write pointer, and the device only needs to know that a page was
//! written, not each write: rings that arrive before the CMP looks at the queue merge anyway
//! (docs/hardware.md 5.5). So BAR2 can be plain shared memory: the client maps the doorbell
//! memfd into the guest, a ring is one store to memory, and this poller takes each page's word
//! with an atomic swap to 0 and rings the device's page with what it took. A page written
//! between two scans rings once; no write is lost while the words differ from 0, and a write
//! of 0 is never new work (a write pointer is 0 only before the first submission).
//!
//! Global doorbells (`CAPS.GLOBAL_DOORBELL`) are not offered this way: there the value is a
//! queue id, and two queues of one process ringing between two scans would merge into one.
//!
//! The poller scans every 20 µs while rings come, and every 200 µs after 10 ms without one.
//! A ring's latency grows by up to one scan interval; the store itself costs the guest what a
//! store to RAM costs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rvgpu_device::{Device, RamBacking};
use rvgpu_hw::PAGE_SIZE;

use crate::shm::Mapping;

/// Scan interval while rings come.
const BUSY: Duration = Duration::from_micros(20);
/// Scan interval once idle.
const IDLE: Duration = Duration::from_micros(200);
/// How long without a ring before the poller slows down.
const IDLE_AFTER: Duration = Duration::from_millis(10);

/// The thread that turns stores into BAR2's shared memory into doorbell rings.
#[derive(Debug)]
pub struct Poller {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Poller {
    /// Scans the first `pages` doorbell pages of `words` (one word at each page's offset 0),
    /// ringing `device`'s page while `decoding` (the function in D0: in D3hot the BARs do not
    /// decode, so a word found then is dropped as the trapped path drops the write).
    /// `rings` counts what it delivers.
    pub fn start(
        words: Arc<Mapping>,
        pages: u32,
        device: Arc<Mutex<Arc<Device>>>,
        decoding: Arc<AtomicBool>,
        rings: Arc<AtomicU64>,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, r) = (stop.clone(), rings.clone());
        let thread = std::thread::Builder::new()
            .name("rvgpu-vfu-doorbells".into())
            .spawn(move || run(&words, pages, &device, &decoding, &s, &r))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    words: &Mapping,
    pages: u32,
    device: &Mutex<Arc<Device>>,
    decoding: &AtomicBool,
    stop: &AtomicBool,
    rings: &AtomicU64,
) {
    // A sleep of 20 µs would otherwise round up to the default 50 µs timer slack.
    // SAFETY: FFI call with plain integer arguments; it changes only this thread's slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000u64, 0u64, 0u64, 0u64) };
    let stride = usize::try_from(PAGE_SIZE / 8).unwrap_or(usize::MAX);
    let mut last_ring = Instant::now();
    while !stop.load(Ordering::Acquire) {
        let mut rang = false;
        for page in 0..pages {
            let Some(word) = usize::try_from(page)
                .ok()
                .and_then(|p| p.checked_mul(stride))
                .and_then(|i| words.words().get(i))
            else {
                break;
            };
            if word.load(Ordering::Relaxed) == 0 {
                continue;
            }
            // Acquire: the ring's contents and write pointer the guest stored before its
            // doorbell store are visible to the device's loads that follow.
            let value = word.swap(0, Ordering::AcqRel);
            if value == 0 || !decoding.load(Ordering::Acquire) {
                continue;
            }
            let dev = Arc::clone(&device.lock().unwrap_or_else(|e| e.into_inner()));
            dev.doorbell_write(page, value);
            rings.fetch_add(1, Ordering::Relaxed);
            rang = true;
        }
        if rang {
            last_ring = Instant::now();
        }
        std::thread::sleep(if last_ring.elapsed() < IDLE_AFTER {
            BUSY
        } else {
            IDLE
        });
    }
}
