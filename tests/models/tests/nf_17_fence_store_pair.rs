//! NF-07, NF-17: the KMD's `FENCE_STORE_ADDR` / `FENCE_STORE` pair (hardware.md 8.3,
//! `driver/kmd/src/fence/ddi.rs` `fence_store`), checked exhaustively with `loom`.
//!
//! The device latches the address (`FENCE_STORE_ADDR`) and stores each `FENCE_STORE` value at
//! the latched address (`device/src/device/mmio.rs`). Writers of the pair:
//! - the OS's synchronised calls (`DxgkDdiUpdateMonitoredValues`, and on 24H2
//!   `DxgkDdiUpdateCurrentValuesFromCpu`), at device IRQL holding the interrupt lock: they
//!   write the pair directly;
//! - `DxgkDdiUpdateCurrentValuesFromCpu` at DISPATCH_LEVEL (the pages), on any processor: the
//!   driver runs its pair through `DxgkCbSynchronizeExecution`, i.e. under the same lock.
//!
//! The invariant: every writer's value lands in its own fence's word, never another's. The
//! model has one synchronised writer and two DISPATCH writers (another processor, or the same
//! one interrupted between its two writes: to loom both are an interleaving). The negative
//! control lets the DISPATCH writers skip the lock, and loom must find the torn store.
//!
//! The model mirrors the driver and the device step for step (both use core atomics and the
//! OS's lock, which loom cannot instrument); keep them in sync.

use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// The panic message of a violation; the negative control looks for it.
const TORN: &str = "torn FENCE_STORE pair";

/// The device's store path and the adapter's interrupt lock.
struct Adapter {
    /// FENCE_STORE_ADDR's latch: the index of the word the next FENCE_STORE writes.
    latch: AtomicUsize,
    /// Three fences' words (CurrentValue or MonitoredValue), 0 at first.
    words: [AtomicU64; 3],
    /// The interrupt lock (`KeSynchronizeExecution`'s spin lock at device IRQL).
    interrupt_lock: Mutex<()>,
}

impl Adapter {
    /// The pair as the driver writes it: two MMIO writes, each one device access.
    fn pair(&self, word: usize, value: u64) {
        self.latch.store(word, Ordering::Relaxed);
        let at = self.latch.load(Ordering::Relaxed);
        self.words[at].store(value, Ordering::Relaxed);
    }
}

/// Writer `word` stores `value(word)`; the synchronised writer is word 0.
fn value(word: usize) -> u64 {
    10 + word as u64
}

fn execution(dispatch_takes_lock: bool) {
    let a = Arc::new(Adapter {
        latch: AtomicUsize::new(0),
        words: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
        interrupt_lock: Mutex::new(()),
    });
    // The OS's synchronised call: holds the interrupt lock, writes directly.
    let synchronised = {
        let a = a.clone();
        thread::spawn(move || {
            let _held = a.interrupt_lock.lock().unwrap();
            a.pair(0, value(0));
        })
    };
    // A DISPATCH_LEVEL caller: through DxgkCbSynchronizeExecution (or not, the control).
    let dispatch = move |a: &Adapter, word: usize| {
        if dispatch_takes_lock {
            let _held = a.interrupt_lock.lock().unwrap();
            a.pair(word, value(word));
        } else {
            a.pair(word, value(word));
        }
    };
    let other_cpu = {
        let a = a.clone();
        thread::spawn(move || dispatch(&a, 1))
    };
    dispatch(&a, 2);
    synchronised.join().unwrap();
    other_cpu.join().unwrap();
    for (i, w) in a.words.iter().enumerate() {
        let v = w.load(Ordering::Relaxed);
        assert!(v == value(i), "{TORN}: fence {i}'s word holds {v}");
    }
}

#[test]
fn nf_07_nf_17_fence_store_pairs_never_interleave() {
    loom::model(|| execution(true));
}

#[test]
fn nf_07_nf_17_negative_control_unlocked_dispatch_pairs_tear() {
    rvgpu_models::expect_violation(
        || loom::model(|| execution(false)),
        "torn store without the lock",
        TORN,
    );
}
