//! The process-wide registry of adapters' TDR state, by machine and adapter.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use crate::adapter::AdapterShared;
use crate::base::lock::lock;

use super::state::{TdrOs, TdrShared};

pub(super) type Key = (u64, usize);
/// Per (machine id, adapter index); an entry goes when its machine's state is gone (pruned
/// at the next registration), so the DMA buffers it holds do not outlive the machine.
pub(super) type Registry =
    HashMap<Key, (Weak<crate::adapter::state::MachineState>, Arc<TdrShared>)>;
pub(super) static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
/// Registered adapters (a DPC of a machine that never used TDR or kernel-mode submission
/// does not even take the registry lock).
pub(super) static REGISTERED: AtomicUsize = AtomicUsize::new(0);
pub(crate) static ENABLED: AtomicUsize = AtomicUsize::new(0);

/// Whether any adapter has TDR detection on (its worker then looks after every DPC).
pub(crate) fn enabled_anywhere() -> bool {
    ENABLED.load(Ordering::Acquire) != 0
}

pub(super) fn key(a: &AdapterShared) -> Key {
    (a.state.id(), a.index)
}

/// The TDR state of `a`, created on first use.
pub(crate) fn shared(a: &AdapterShared) -> Arc<TdrShared> {
    let k = key(a);
    let mut g = lock(&REGISTRY);
    let r = g.get_or_insert_with(HashMap::new);
    if let Some((_, s)) = r.get(&k) {
        return s.clone();
    }
    r.retain(|_, (w, _)| w.strong_count() > 0);
    let s = Arc::new(TdrShared {
        os: Mutex::new(TdrOs::new(a.emulated.as_ref().map(|d| d.run_clock()))),
        pause: Mutex::new(None),
        gate: RwLock::new(()),
        submit: Mutex::new(()),
        recovering: Mutex::new(()),
    });
    r.insert(k, (Arc::downgrade(&a.state), s.clone()));
    REGISTERED.store(r.len(), Ordering::Release);
    s
}

/// Whether VidSch has a DMA buffer of node `node` in flight (UM-13: such a node is not idle).
pub(crate) fn node_has_pending(a: &AdapterShared, node: u32) -> bool {
    existing(a).is_some_and(|sh| {
        lock(&sh.os)
            .nodes
            .get(node as usize)
            .is_some_and(|n| !n.pending.is_empty())
    })
}

pub(crate) fn existing(a: &AdapterShared) -> Option<Arc<TdrShared>> {
    if REGISTERED.load(Ordering::Acquire) == 0 {
        return None;
    }
    lock(&REGISTRY)
        .as_ref()
        .and_then(|r| r.get(&key(a)))
        .map(|(_, s)| s.clone())
}

/// Whether VidSch has retired fence `id` on `node` of `a` (completed, or dropped by a reset).
pub(crate) fn node_completed(a: &AdapterShared, node: u32, id: u32) -> bool {
    lock(&shared(a).os).node(node).c >= id
}
