//! Exhaustive `loom` models of rvgpu's lock-free CPU/GPU protocols.
//!
//! The emulated device and the simulated OS are exercised by threaded tests, but a threaded
//! test only sees the interleavings the host scheduler and the host CPU happen to produce; on
//! x86 it can never show a store-buffering reordering a weaker GPU or a compiler may produce.
//! These models abstract a protocol down to its atomics, locks and fences and let `loom`
//! enumerate every interleaving and every value the C11 memory model lets each load return.
//!
//! `tests/nf_09_fence_protocol.rs`: the native-fence signal protocol
//! (`rvgpu_hw::fence`, `device/src/device/exec.rs` FENCE_SIGNAL, FENCE_SYNC in
//! `device/src/device/mmio.rs`) against the driver's `UpdateMonitoredValues` followed by the
//! OS's resample of CurrentValue. It proves NF-09 (no lost wake-up; spurious interrupts
//! allowed) with the device's barrier and FENCE_SYNC drain, with each of them alone, and
//! shows by a negative control that without both a wake-up is lost.
//!
//! What loom does and does not model (loom 0.7): loads may return any store the model allows
//! (so store buffering, the reordering that loses a wake-up here, is explored);
//! `fence(SeqCst)` is modelled; `Mutex` hand-over gives happens-before. SeqCst *accesses*
//! are treated as AcqRel (loom reports false alarms for them, pinned by a test), and
//! load-buffering executions are not explored (a shape these protocols do not have).
//!
//! `tests/nf_17_fence_store_pair.rs`: the KMD's `FENCE_STORE_ADDR` / `FENCE_STORE` pair from
//! writers at device IRQL and at DISPATCH_LEVEL never stores a value in another fence's word.
//!
//! `tests/mf_04_cpu_wait_rearm.rs`: the UMD's CPU-wait table (`rvgpu_umd::wait::Waits`)
//! against 24H2's MonitoredValue rules: no wait lost or released early, for threads of one
//! process and for two processes sharing the fence.
//!
//! `tests/mf_03_accepted_value.rs`: a hardware queue's accepted progress value, raised
//! without a lock by direct submissions: a signal never waits for a held submission queued
//! behind it.
//!
//! `tests/tdr_test_hook_journal.rs`: the KMD's test-hook journal (`driver/kmd/src/testhooks`),
//! written at any IRQL and read at PASSIVE without a lock: a record is read whole or not at
//! all.
//!
//! `tests/tdr_05_run_clock.rs`: the device's run clock (`device::RunClock`), a one-writer
//! sequence lock the OS's TDR threads read: a reader computes its time from a credit the CMP
//! thread published whole, and its times never run backwards.
//!
//! The models are the crate's integration tests; the library holds only what they share,
//! [`run_isolated`] and the negative controls' [`expect_violation`].
//! Run: `cargo test -p rvgpu-models`.

use std::panic::{self, AssertUnwindSafe};

/// Runs `model` on a thread of its own, so that a panic cannot leave loom's per-thread state
/// behind in the test's: what it returned, or the message it panicked with (a negative
/// control expects the latter).
pub fn run_isolated<T: Send + 'static>(
    model: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    std::thread::spawn(move || panic::catch_unwind(AssertUnwindSafe(model)))
        .join()
        .expect("model thread")
        .map_err(|payload| {
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|m| (*m).to_owned()))
                .unwrap_or_else(|| "<non-string panic payload>".to_owned())
        })
}

/// A negative control: `model` (loom over the protocol without its protection) must fail with
/// a message containing `needle`; `what` names the violation for the failure when it does not
/// (`loom found no {what}, but one exists`).
pub fn expect_violation(model: impl FnOnce() + Send + 'static, what: &str, needle: &str) {
    let Err(msg) = run_isolated(model) else {
        panic!("loom found no {what}, but one exists")
    };
    assert!(msg.contains(needle), "unexpected failure: {msg}");
}
