//! KMD handles: what the driver hands Dxgkrnl for its devices, contexts, queues, doorbells,
//! processes and allocations, and how they are minted and decoded.
//!
//! Most submission DDIs carry no adapter handle (`DxgkDdiDestroyDevice`,
//! `DxgkDdiCreateContext`, `DxgkDdiSubmitCommandToHwQueue`, the five doorbell DDIs ...), and a
//! handle is untrusted input: a stale or garbage value must come back as an NTSTATUS, never be
//! dereferenced. So a KMD handle is not a pointer but a number that names its adapter:
//!
//! | bits  | field                                                        |
//! |-------|--------------------------------------------------------------|
//! | 63:56 | adapter slot in [`crate::globals::ADAPTERS`] + 1 (never 0)    |
//! | 55:52 | [`Kind`]                                                     |
//! | 51:0  | sequence number, from a per-adapter counter (never reused)   |
//!
//! A DDI decodes the slot, finds the adapter through the adapter table (lock-free, bounded),
//! takes its scheduler lock and looks the whole handle up in the table of that kind. Anything
//! that does not resolve is `STATUS_INVALID_HANDLE`.
//!
//! Minting is per adapter ([`Minter`]): a sequence counter, so a handle is never reused while
//! the adapter lives, even after its object is destroyed.

use core::ffi::c_void;
use core::sync::atomic::{AtomicU64, Ordering};

use rvgpu_ddi::HANDLE;

use crate::status::{self, Status};

/// What a KMD handle names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Device = 1,
    Context = 2,
    Queue = 3,
    Doorbell = 4,
    Process = 5,
    Allocation = 6,
}

impl Kind {
    const fn from_bits(v: u64) -> Option<Self> {
        match v {
            1 => Some(Self::Device),
            2 => Some(Self::Context),
            3 => Some(Self::Queue),
            4 => Some(Self::Doorbell),
            5 => Some(Self::Process),
            6 => Some(Self::Allocation),
            _ => None,
        }
    }
}

const SLOT_SHIFT: u32 = 56;
const KIND_SHIFT: u32 = 52;
const SEQ_MASK: u64 = (1 << KIND_SHIFT) - 1;

/// A decoded KMD handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Handle(u64);

impl Handle {
    /// The handle of the `seq`-th object of `kind` on the adapter in `slot`; `None` if `seq`
    /// is 0 or does not fit.
    pub fn new(slot: u8, kind: Kind, seq: u64) -> Option<Self> {
        if seq == 0 || seq > SEQ_MASK || slot == u8::MAX {
            return None;
        }
        let slot = u64::from(slot).checked_add(1)?;
        Some(Self(
            (slot << SLOT_SHIFT) | ((kind as u64) << KIND_SHIFT) | seq,
        ))
    }

    /// Decodes a raw handle of the expected kind; `None` for anything else.
    pub fn decode(raw: HANDLE, kind: Kind) -> Option<Self> {
        let v = u64::try_from(raw.addr()).ok()?;
        let slot = v >> SLOT_SHIFT;
        let k = Kind::from_bits((v >> KIND_SHIFT) & 0xF)?;
        (slot != 0 && k == kind && v & SEQ_MASK != 0).then_some(Self(v))
    }

    /// Decodes a raw handle of the expected kind that names the adapter in `slot`; anything
    /// else is `STATUS_INVALID_HANDLE` (for DDIs that already know their adapter).
    pub fn decode_on(raw: HANDLE, kind: Kind, slot: u8) -> Result<Self, Status> {
        Self::decode(raw, kind)
            .filter(|h| h.slot() == slot)
            .ok_or(status::INVALID_HANDLE)
    }

    /// The adapter-table slot the handle names.
    pub fn slot(self) -> u8 {
        u8::try_from((self.0 >> SLOT_SHIFT).saturating_sub(1)).unwrap_or(u8::MAX)
    }

    /// The raw value.
    pub fn raw(self) -> u64 {
        self.0
    }

    /// As the `HANDLE` Dxgkrnl stores (an opaque number, never dereferenced).
    pub fn as_handle(self) -> HANDLE {
        core::ptr::without_provenance_mut::<c_void>(usize::try_from(self.0).unwrap_or(0))
    }
}

/// The per-adapter source of handles: sequence numbers from 1, never reused.
#[derive(Debug)]
pub struct Minter(AtomicU64);

impl Default for Minter {
    fn default() -> Self {
        Self(AtomicU64::new(1))
    }
}

impl Minter {
    /// A new handle of `kind` for an object of the adapter in `slot`;
    /// `STATUS_INSUFFICIENT_RESOURCES` once the sequence numbers are spent.
    pub fn mint(&self, slot: u8, kind: Kind) -> Result<Handle, Status> {
        let seq = self.0.fetch_add(1, Ordering::Relaxed);
        Handle::new(slot, kind, seq).ok_or(status::INSUFFICIENT_RESOURCES)
    }
}

/// Handles for host unit tests: objects on the adapter in slot 0.
#[cfg(test)]
pub mod fixtures {
    use super::{Handle, Kind};

    /// The `seq`-th object of `kind`.
    pub fn h(kind: Kind, seq: u64) -> Handle {
        Handle::new(0, kind, seq).expect("a valid test handle")
    }

    /// The `seq`-th process.
    pub fn process(seq: u64) -> Handle {
        h(Kind::Process, seq)
    }

    /// The `seq`-th doorbell.
    pub fn doorbell(seq: u64) -> Handle {
        h(Kind::Doorbell, seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_reject_other_kinds() {
        let h = Handle::new(3, Kind::Queue, 42).unwrap();
        assert_eq!(h.slot(), 3);
        assert_eq!(Handle::decode(h.as_handle(), Kind::Queue), Some(h));
        assert_eq!(Handle::decode(h.as_handle(), Kind::Doorbell), None);
        assert_eq!(Handle::decode(core::ptr::null_mut(), Kind::Queue), None);
        let junk = core::ptr::without_provenance_mut::<c_void>(0x1234);
        assert_eq!(
            Handle::decode(junk, Kind::Device),
            None,
            "slot 0 is never used"
        );
        assert_eq!(Handle::new(0, Kind::Device, 0), None);
        assert_eq!(Handle::new(0, Kind::Device, SEQ_MASK + 1), None);
        let max = Handle::new(u8::MAX - 1, Kind::Doorbell, SEQ_MASK).unwrap();
        assert_eq!(max.slot(), u8::MAX - 1);
        assert_eq!(Handle::decode(max.as_handle(), Kind::Doorbell), Some(max));
    }

    #[test]
    fn minted_handles_are_distinct_name_their_adapter_and_kind() {
        let m = Minter::default();
        let a = m.mint(2, Kind::Context).unwrap();
        let b = m.mint(2, Kind::Context).unwrap();
        assert_ne!(a, b, "never reused");
        assert_eq!(a.slot(), 2);
        assert_eq!(Handle::decode_on(b.as_handle(), Kind::Context, 2), Ok(b));
        assert_eq!(
            Handle::decode_on(b.as_handle(), Kind::Context, 3),
            Err(status::INVALID_HANDLE),
            "another adapter's handle"
        );
        assert_eq!(
            m.mint(u8::MAX, Kind::Device),
            Err(status::INSUFFICIENT_RESOURCES),
            "no slot to name"
        );
    }
}
