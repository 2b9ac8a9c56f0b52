//! Model of the doorbell protocol of user-mode submission (UM-09, UM-16, UM-19, UM-20): two
//! UMDs on one physical doorbell, each connecting (and so victimising the other) and submitting,
//! against the KMD and the OS.
//!
//! The claim: a submission is never lost. When the UMD stops, either the CMP has loaded
//! a write pointer covering the submission, or the last status the UMD read says
//! `DISCONNECTED_RETRY`, so it knows to reconnect and ring again.
//!
//! Steps, as docs/usermode-submission.md describes them:
//! - UMD submit: store `write_ptr` (Release), ring (write the doorbell VA), load the status; on
//!   `RETRY` connect and ring again (a bounded number of times here, to keep the model finite).
//! - Ring: the VA maps either the dummy page (nothing happens) or the physical doorbell, whose
//!   binding names the queue the CMP then loads `write_ptr` for (Acquire), before the write
//!   returns (hardware.md 5.5).
//! - Connect (KMD under its lock, with the OS): victimise the current owner (the OS sets its status
//!   to `RETRY` and points its VA at the dummy page; the KMD unbinds), bind the new queue, the OS
//!   maps the new owner's VA to the doorbell and sets `CONNECTED`, the KMD writes QUEUE_KICK.
//!
//! A VA remap is a TLB shootdown: once it returns, no CPU writes through the old translation,
//! and the interrupted CPU is serialised, so a ring and a remap never overlap. The model gives
//! both one mutex (`mmu`) for that. What the model checks is the *order* of the two OS steps of a
//! disconnect: status first, then the remap. The negative control swaps them and loom finds the
//! lost submission: the UMD rings the dummy page, then still reads `CONNECTED`.

use loom::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

const CONNECTED: i32 = 0;
const RETRY: i32 = 2;
const NO_QUEUE: u32 = u32::MAX;
/// Retries a UMD makes before it gives up in the model (it would keep retrying for real).
const MAX_RETRIES: usize = 2;

/// One user-mode queue and its OS-side doorbell.
struct Queue {
    /// Ring control `write_ptr` (the UMD's).
    write_ptr: AtomicU64,
    /// The highest `write_ptr` the CMP has loaded for this queue.
    cmp_seen: AtomicU64,
    /// The UMD-visible doorbell VA: true = physical doorbell page, false = dummy page.
    mapped: AtomicU32,
    /// `D3DDDI_DOORBELLSTATUS` on the status page.
    status: AtomicI32,
}

impl Queue {
    fn new(connected: bool) -> Self {
        Self {
            write_ptr: AtomicU64::new(0),
            cmp_seen: AtomicU64::new(0),
            mapped: AtomicU32::new(u32::from(connected)),
            status: AtomicI32::new(if connected { CONNECTED } else { RETRY }),
        }
    }
}

struct System {
    queues: [Queue; 2],
    /// `DOORBELL_BIND[0]`.
    bind: AtomicU32,
    /// Rings and VA remaps are mutually exclusive (see the module comment).
    mmu: Mutex<()>,
    /// The KMD's doorbell lock: one connect at a time.
    kmd: Mutex<()>,
    /// Disconnect order under test: status before remap (the design) or after (the bug).
    status_first: bool,
}

impl System {
    /// The CMP's side of a ring or a QUEUE_KICK of queue `q`: load its `write_ptr`.
    fn cmp_load(&self, q: usize) {
        let wp = self.queues[q].write_ptr.load(Ordering::Acquire);
        self.queues[q].cmp_seen.fetch_max(wp, Ordering::Relaxed);
    }

    /// UMD `q` writes its doorbell VA.
    fn ring(&self, q: usize) {
        let _tlb = self.mmu.lock().unwrap();
        if self.queues[q].mapped.load(Ordering::Relaxed) == 1 {
            let bound = self.bind.load(Ordering::SeqCst);
            if bound != NO_QUEUE {
                self.cmp_load(bound as usize);
            }
        }
    }

    /// OS side of `DxgkCbDisconnectDoorbell(victim, RETRY)`.
    fn os_disconnect(&self, victim: usize) {
        let remap = || {
            let _tlb = self.mmu.lock().unwrap();
            self.queues[victim].mapped.store(0, Ordering::Relaxed);
        };
        if self.status_first {
            self.queues[victim].status.store(RETRY, Ordering::SeqCst);
            remap();
        } else {
            remap();
            self.queues[victim].status.store(RETRY, Ordering::SeqCst);
        }
    }

    /// `D3DKMTConnectDoorbell` for queue `q`: OS + KMD, one physical doorbell.
    fn connect(&self, q: usize) {
        let _kmd = self.kmd.lock().unwrap();
        let owner = self.bind.load(Ordering::SeqCst);
        if owner == q as u32 {
            return;
        }
        if owner != NO_QUEUE {
            self.os_disconnect(owner as usize);
            self.bind.store(NO_QUEUE, Ordering::SeqCst);
        }
        self.bind.store(q as u32, Ordering::SeqCst);
        {
            let _tlb = self.mmu.lock().unwrap();
            self.queues[q].mapped.store(1, Ordering::Relaxed);
        }
        self.queues[q].status.store(CONNECTED, Ordering::SeqCst);
        // QUEUE_KICK: collect what was written while disconnected.
        self.cmp_load(q);
    }

    /// UMD `q` submits one batch (write pointer 8) and runs the UM-19 status loop. Returns the
    /// last status it read.
    fn submit(&self, q: usize) -> i32 {
        self.queues[q].write_ptr.store(8, Ordering::Release);
        self.ring(q);
        let mut status = self.queues[q].status.load(Ordering::SeqCst);
        let mut retries = 0;
        while status == RETRY && retries < MAX_RETRIES {
            self.connect(q);
            self.ring(q);
            status = self.queues[q].status.load(Ordering::SeqCst);
            retries += 1;
        }
        status
    }
}

/// Runs `f` under loom with a preemption bound of 3: every interleaving with at most three
/// forced switches (the lost submission needs two). Unbounded exploration of this model takes
/// minutes; bounded it takes seconds, which keeps it in every `cargo test`.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

fn execution(status_first: bool) {
    let sys = Arc::new(System {
        // Queue 0 starts connected to the one physical doorbell; queue 1 has never connected.
        queues: [Queue::new(true), Queue::new(false)],
        bind: AtomicU32::new(0),
        mmu: Mutex::new(()),
        kmd: Mutex::new(()),
        status_first,
    });
    let other = {
        let sys = sys.clone();
        thread::spawn(move || {
            sys.connect(1);
            sys.submit(1)
        })
    };
    let last0 = sys.submit(0);
    let last1 = other.join().unwrap();
    for (q, last) in [(0, last0), (1, last1)] {
        let reached = sys.queues[q].cmp_seen.load(Ordering::Relaxed) == 8;
        assert!(
            reached || last == RETRY,
            "lost submission: queue {q} was never loaded by the CMP and its UMD last read status {last}"
        );
    }
}

/// UM-19, UM-20, UM-09: with the OS writing the status before it remaps the VA, every
/// submission reaches the CMP or its UMD knows to retry.
#[test]
fn um_19_doorbell_victimisation_never_loses_a_submission() {
    model(|| execution(true));
}

/// Negative control: remap first, then status. A UMD can ring the dummy page and still read
/// `CONNECTED`; loom must find that interleaving.
#[test]
fn um_19_negative_control_remap_before_status_loses_a_submission() {
    rvgpu_models::expect_violation(
        || model(|| execution(false)),
        "lost submission with remap-before-status",
        "lost submission",
    );
}
