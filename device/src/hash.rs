//! [`MulHash`]: the emulator's hash for its own integer keys (TLB tags, page numbers, the
//! simulated OS's handles).
//!
//! std's default (SipHash with a random key) is built against keys an attacker picks. These
//! keys are the emulator's own numbers; at worst a chosen one costs a longer probe, never a
//! wrong answer. SipHash cost about a hundred instructions per lookup, and its per-run key made
//! the emulated device's instruction counts differ from run to run. This is an
//! Fx-style hash: rotate, mix in the word, multiply by an odd constant.

use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hasher builder for integer keys.
pub type MulHash = BuildHasherDefault<MulHasher>;

/// The hasher [`MulHash`] builds.
#[derive(Clone, Copy, Debug, Default)]
pub struct MulHasher(u64);

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        // The product's well-mixed high half into the low bits, which pick the bucket:
        // page-aligned addresses have 12 zero low bits, which a multiply leaves in the low bits.
        self.0.rotate_left(32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517C_C1B7_2722_0A95);
    }
}
