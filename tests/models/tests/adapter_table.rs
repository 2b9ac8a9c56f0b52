//! Model of the driver's adapter table (`driver/kmd/src/globals.rs`): a reader at device IRQL
//! versus RemoveDevice.
//!
//! Reader: `readers += 1` (Relaxed); SeqCst fence; `p = ptr` (Acquire); use `*p` if non-null;
//! `readers -= 1` (Release). Remover: `ptr = null` (Relaxed); SeqCst fence; wait until
//! `readers == 0` (Acquire); free. The invariant: no reader uses the adapter after it is
//! freed. It is the store-buffering pattern, so the fences are what make it hold; the
//! negative control removes them and loom must find the use-after-free.
//!
//! The model mirrors the protocol step for step (the table itself uses core atomics, which
//! loom cannot instrument); keep the two in sync.

use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The published "pointer": 1 = the adapter, 0 = none.
struct Table {
    ptr: AtomicUsize,
    readers: AtomicU32,
    /// Set when the remover frees the adapter.
    freed: AtomicBool,
}

fn execution(fences: bool) {
    let t = Arc::new(Table {
        ptr: AtomicUsize::new(1),
        readers: AtomicU32::new(0),
        freed: AtomicBool::new(false),
    });
    let reader = {
        let t = t.clone();
        thread::spawn(move || {
            t.readers.fetch_add(1, Ordering::Relaxed);
            if fences {
                fence(Ordering::SeqCst);
            }
            if t.ptr.load(Ordering::Acquire) != 0 {
                // Using the adapter: it must not have been freed.
                assert!(
                    !t.freed.load(Ordering::Relaxed),
                    "use after free: a reader used the adapter after RemoveDevice freed it"
                );
            }
            t.readers.fetch_sub(1, Ordering::Release);
        })
    };
    t.ptr.store(0, Ordering::Relaxed);
    if fences {
        fence(Ordering::SeqCst);
    }
    while t.readers.load(Ordering::Acquire) != 0 {
        thread::yield_now();
    }
    t.freed.store(true, Ordering::Relaxed);
    reader.join().unwrap();
}

#[test]
fn adapter_table_reader_never_uses_a_freed_adapter() {
    loom::model(|| execution(true));
}

#[test]
fn adapter_table_negative_control_without_fences_finds_use_after_free() {
    rvgpu_models::expect_violation(
        || loom::model(|| execution(false)),
        "use-after-free without the fences",
        "use after free",
    );
}
