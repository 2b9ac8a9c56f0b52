//! Where the events go: the gate word the emitters test, the registration handle and the
//! writer that hands an event to ETW. Below both the events ([`super::events`]) and the
//! switches that set the gate ([`super`]), so neither reaches up into the other.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::abi::{EventDataDescriptor, DATA_EVENT_METADATA, DATA_FIELD, DATA_PROVIDER_METADATA};
use super::meta::{self, Event, MAX_FIELDS};
use crate::platform::Platform;

/// The provider's name.
pub const PROVIDER_NAME: &str = "rvgpu.Kmd";

/// The provider metadata in front of every event.
pub static PROVIDER_META: [u8; meta::provider_len(PROVIDER_NAME)] = meta::provider(PROVIDER_NAME);

/// A bit per event of [`super::events`]: the event is written.
pub static GATE: AtomicU32 = AtomicU32::new(0);

/// The registration handle (0: none).
pub(super) static HANDLE: AtomicU64 = AtomicU64::new(0);

/// Writes event `e` with `values` (one per field, in order; a 32-bit field takes the low four
/// bytes). Out of line: only reached when the event's gate bit is set.
#[cold]
#[inline(never)]
pub(crate) fn write<P: Platform>(e: &Event, values: &[u64]) {
    let h = HANDLE.load(Ordering::Acquire);
    if h == 0 {
        return;
    }
    let mut data = [EventDataDescriptor {
        ptr: 0,
        size: 0,
        kind: DATA_FIELD,
        reserved1: 0,
        reserved2: 0,
    }; 2 + MAX_FIELDS];
    let blob = |b: &'static [u8], kind: u8| EventDataDescriptor {
        ptr: b.as_ptr() as u64,
        size: u32::try_from(b.len()).unwrap_or(0),
        kind,
        reserved1: 0,
        reserved2: 0,
    };
    let mut n = 0usize;
    let mut push = |d: EventDataDescriptor| {
        if let Some(slot) = data.get_mut(n) {
            *slot = d;
            n = n.saturating_add(1);
        }
    };
    push(blob(&PROVIDER_META, DATA_PROVIDER_METADATA));
    push(blob(e.meta, DATA_EVENT_METADATA));
    for ((_, ty), v) in e.fields.iter().zip(values) {
        push(EventDataDescriptor {
            ptr: core::ptr::from_ref(v) as u64,
            // x86-64 is little-endian: a 4-byte field is the value's first four bytes.
            size: u32::try_from(ty.size()).unwrap_or(0),
            kind: DATA_FIELD,
            reserved1: 0,
            reserved2: 0,
        });
    }
    if let Some(used) = data.get(..n) {
        P::etw_write(h, &e.descriptor, used);
    }
}
