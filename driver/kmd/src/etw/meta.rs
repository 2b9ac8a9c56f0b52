//! TraceLogging metadata, built at compile time: the self-describing layout
//! TraceLoggingProvider.h's macros emit and ETW's decoders (TDH, WPA, the simulated OS's
//! `simos::etw`) read.
//!
//! - **Provider metadata**: `u16` total size (itself included), the provider name in UTF-8 with
//!   a NUL, then traits (none here).
//! - **Event metadata**: `u16` total size, the tag bytes (one `0`: no tags), the event name with
//!   a NUL, then per field its name with a NUL and its `TlgIn` type byte; a type byte with bit
//!   `0x80` set is followed by a `TlgOut` byte (how to show the value).
//!
//! Both travel in front of every event's fields as the first two data descriptors
//! (`EVENT_DATA_DESCRIPTOR_TYPE_PROVIDER_METADATA`, then `…_EVENT_METADATA`).
//!
//! Every function here runs in constant evaluation only (the blobs are statics): an index out
//! of range or an overflow fails the build, never a running kernel.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use super::abi::EventDescriptor;

/// The most fields an event has.
pub const MAX_FIELDS: usize = 5;

/// One event: its gate bit, descriptor, TraceLogging metadata and fields.
#[derive(Debug)]
pub struct Event {
    pub bit: u32,
    pub descriptor: EventDescriptor,
    pub meta: &'static [u8],
    pub fields: &'static [Field],
}

/// `TlgInUINT32`.
pub const IN_UINT32: u8 = 8;
/// `TlgInUINT64`.
pub const IN_UINT64: u8 = 10;
/// `TlgInINT32`.
pub const IN_INT32: u8 = 7;
/// `TlgInHEXINT64`.
pub const IN_HEXINT64: u8 = 21;
/// The chain bit of a type byte: an out-type byte follows.
pub const CHAIN: u8 = 0x80;
/// `TlgOutNTSTATUS`.
pub const OUT_NTSTATUS: u8 = 14;

/// A field's wire type: its `TlgIn` byte, its `TlgOut` byte (0: none) and its size in the
/// payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `UINT32`.
    U32,
    /// `UINT64`.
    U64,
    /// `HEXINT64` (handles, addresses).
    Hex64,
    /// `INT32` shown as an NTSTATUS.
    Status,
}

impl Ty {
    /// The value's size in the payload.
    pub const fn size(self) -> usize {
        match self {
            Ty::U32 | Ty::Status => 4,
            Ty::U64 | Ty::Hex64 => 8,
        }
    }

    /// The metadata bytes after the field name: the in-type, and the out-type if any.
    const fn type_bytes(self) -> (u8, Option<u8>) {
        match self {
            Ty::U32 => (IN_UINT32, None),
            Ty::U64 => (IN_UINT64, None),
            Ty::Hex64 => (IN_HEXINT64, None),
            Ty::Status => (IN_INT32 | CHAIN, Some(OUT_NTSTATUS)),
        }
    }
}

/// One field of an event: its name (ASCII, no NUL) and type.
pub type Field = (&'static str, Ty);

/// The length of the provider metadata for `name`.
pub const fn provider_len(name: &str) -> usize {
    2 + name.len() + 1
}

/// The provider metadata for `name` (`N` = [`provider_len`]).
pub const fn provider<const N: usize>(name: &str) -> [u8; N] {
    let mut w = Writer::<N>::new();
    w.cstr(name);
    w.finish()
}

/// The length of the event metadata of event `name` with `fields`.
pub const fn event_len(name: &str, fields: &[Field]) -> usize {
    let mut n = 2 + 1 + name.len() + 1;
    let mut i = 0;
    while i < fields.len() {
        let (f, ty) = fields[i];
        n += f.len() + 1 + 1;
        if ty.type_bytes().1.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The event metadata of event `name` with `fields` (`N` = [`event_len`]).
pub const fn event<const N: usize>(name: &str, fields: &[Field]) -> [u8; N] {
    let mut w = Writer::<N>::new();
    w.byte(0); // no tags
    w.cstr(name);
    let mut i = 0;
    while i < fields.len() {
        let (f, ty) = fields[i];
        w.cstr(f);
        let (t, out) = ty.type_bytes();
        w.byte(t);
        if let Some(o) = out {
            w.byte(o);
        }
        i += 1;
    }
    w.finish()
}

/// Fills a blob after its two size bytes; compile-time only (a wrong length fails the build).
struct Writer<const N: usize> {
    out: [u8; N],
    at: usize,
}

impl<const N: usize> Writer<N> {
    const fn new() -> Self {
        Self { out: [0; N], at: 2 }
    }
    const fn byte(&mut self, b: u8) {
        self.out[self.at] = b;
        self.at += 1;
    }
    const fn cstr(&mut self, s: &str) {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            assert!(b[i] != 0 && b[i].is_ascii(), "names are ASCII without NUL");
            self.byte(b[i]);
            i += 1;
        }
        self.byte(0);
    }
    const fn finish(mut self) -> [u8; N] {
        assert!(self.at == N && N <= u16::MAX as usize, "metadata length");
        #[allow(clippy::cast_possible_truncation)] // checked just above
        let size = N as u16;
        let le = size.to_le_bytes();
        self.out[0] = le[0];
        self.out[1] = le[1];
        self.out
    }
}
