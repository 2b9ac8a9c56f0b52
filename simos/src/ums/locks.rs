//! The locks a thunk takes: the adapter's `ums_seq` (shared, or exclusive for power, F1 and
//! device loss) and its device's lock.

use std::sync::{Arc, Mutex};

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;

/// The adapter-wide side of [`AdapterShared::ums_seq`] (power, F1, device loss).
pub(super) fn exclusive(a: &AdapterShared) -> std::sync::RwLockWriteGuard<'_, ()> {
    a.ums_seq.write().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn shared(a: &AdapterShared) -> std::sync::RwLockReadGuard<'_, ()> {
    a.ums_seq.read().unwrap_or_else(|p| p.into_inner())
}

/// A device's thunk lock (see [`DeviceObj::lock`]).
pub(crate) fn device_lock(
    a: &AdapterShared,
    device: KmtHandle,
) -> Result<Arc<Mutex<()>>, SimError> {
    lock(&a.ums).device(device).map(|d| d.lock.clone())
}

/// Held by a thunk: the adapter lock shared, then the device's lock.
pub(crate) struct DevGuard<'a> {
    pub(super) _device: crate::base::lock::Locked<'a, ()>,
    pub(super) _adapter: std::sync::RwLockReadGuard<'a, ()>,
}

pub(crate) fn dev_guard<'a>(a: &'a AdapterShared, dl: &'a Mutex<()>) -> DevGuard<'a> {
    let adapter = shared(a);
    DevGuard {
        _device: lock(dl),
        _adapter: adapter,
    }
}
