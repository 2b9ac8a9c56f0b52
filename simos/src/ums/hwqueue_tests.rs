//! A destroy racing a kernel-mode submission that found its queue first.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_hw::cmd::Command;

use super::*;
use crate::testing::gpu::KernelGpuQueue;
use crate::{MachineConfig, Mode};

type Hook = Box<dyn FnOnce() + Send>;

/// One-shot actions run on a submitting thread just before it takes its queue's submit lock,
/// keyed by the adapter (tests in this process run side by side).
static BEFORE_SUBMIT_LOCK: Mutex<Vec<(usize, Hook)>> = Mutex::new(Vec::new());

fn key(a: &AdapterShared) -> usize {
    std::ptr::from_ref(a) as usize
}

pub(super) fn before_submit_lock(a: &AdapterShared) {
    let hook = {
        let mut hooks = lock(&BEFORE_SUBMIT_LOCK);
        let at = hooks.iter().position(|(k, _)| *k == key(a));
        at.map(|i| hooks.swap_remove(i).1)
    };
    if let Some(f) = hook {
        f();
    }
}

/// UM-01: a kernel-mode submission that found its queue before a destroy and reached the
/// queue's submit lock after it never hands the KMD the destroyed `hHwQueue`: it is refused as
/// a lookup after the destroy is (0xC000000D), the device stays out of error, and the KMD
/// sees no submission after its `DxgkDdiDestroyHwQueue`.
#[test]
fn um_01_a_submission_overtaken_by_its_queues_destroy_is_refused_before_the_kmd() {
    let mut m = crate::Machine::new(MachineConfig::single(Mode::Step));
    m.load_driver().expect("load");
    m.start_adapter(0).expect("start");
    let a = Arc::clone(m.adapter_shared(0).expect("adapter"));
    let mut q = KernelGpuQueue::new(&m, 0, 0).expect("queue");
    let (_, queue) = q.handles();
    q.push(Command::Nop { len: 1 }).expect("push");
    let (reached_tx, reached) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    lock(&BEFORE_SUBMIT_LOCK).push((
        key(&a),
        Box::new(move || {
            reached_tx.send(()).expect("reached");
            go_rx.recv().expect("go");
        }),
    ));
    let r = std::thread::scope(|s| {
        let submitter = s.spawn(|| q.kick(&m));
        reached.recv().expect("the submission passed its lookup");
        let before = lock(&a.ums).events.len();
        destroy_hw_queue(&m, &a, queue).expect("destroy");
        go.send(()).expect("go");
        let r = submitter.join().expect("submitter");
        (r, lock(&a.ums).events[before..].to_vec())
    });
    let (result, events) = r;
    assert!(
        matches!(result, Err(SimError::DdiFailed(s)) if s == STATUS_INVALID_PARAMETER),
        "{result:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, UmsEvent::Submit { .. } | UmsEvent::DeviceError { .. })),
        "{events:?}"
    );
}
