//! Decodes a TraceLogging event from what the provider handed `EtwWriteTransfer`: the event
//! descriptor and the data descriptors' bytes. Names and types come from the metadata blobs
//! the event carries, as TDH decodes them on Windows; nothing here knows the driver's events.
//!
//! The layout (TraceLoggingProvider.h; the `tracelogging` crate's documentation):
//! - a descriptor of type `PROVIDER_METADATA` (2): `u16` size (itself included), the provider
//!   name (UTF-8, NUL), then traits, each `u16` size (itself included), `u8` type, data;
//! - a descriptor of type `EVENT_METADATA` (1): `u16` size, tag bytes (each with bit 0x80
//!   when another follows, at most four), the event name (NUL), then per field its name (NUL),
//!   a `TlgIn` byte and, when that has bit 0x80, a `TlgOut` byte, which with bit 0x80 is
//!   followed by field tag bytes (chained as the event's);
//! - the fields' bytes in the other descriptors (type 0), in field order.
//!
//! Every byte is the driver's: a malformed blob is an [`DecodeError`], never a panic.

use std::fmt;

/// `WINEVENT_CHANNEL_TRACELOGGING`.
pub const CHANNEL_TRACELOGGING: u8 = 11;
/// `EVENT_DATA_DESCRIPTOR_TYPE_NONE`, `…_EVENT_METADATA`, `…_PROVIDER_METADATA`.
pub const DATA_FIELD: u8 = 0;
pub const DATA_EVENT_METADATA: u8 = 1;
pub const DATA_PROVIDER_METADATA: u8 = 2;

/// `TlgIn` types this decoder reads (the low five bits of the in-type byte).
mod tlg_in {
    pub const UNICODESTRING: u8 = 1;
    pub const ANSISTRING: u8 = 2;
    pub const INT8: u8 = 3;
    pub const UINT8: u8 = 4;
    pub const INT16: u8 = 5;
    pub const UINT16: u8 = 6;
    pub const INT32: u8 = 7;
    pub const UINT32: u8 = 8;
    pub const INT64: u8 = 9;
    pub const UINT64: u8 = 10;
    pub const BOOL32: u8 = 13;
    pub const HEXINT32: u8 = 20;
    pub const HEXINT64: u8 = 21;
}
/// The in-type bits that make a field an array (constant or variable count, custom).
const IN_ARRAY_FLAGS: u8 = 0x60;
/// The chain bit of type and tag bytes.
const CHAIN: u8 = 0x80;
/// `TlgOutNTSTATUS`.
const OUT_NTSTATUS: u8 = 14;
/// `TlgOutHEX`.
const OUT_HEX: u8 = 4;

/// A decoded field value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Any unsigned integer type.
    Unsigned(u64),
    /// Any signed integer type.
    Signed(i64),
    /// `HEXINT32`/`HEXINT64`, or an integer with the `HEX` out-type.
    Hex(u64),
    /// An `INT32`/`UINT32` with the `NTSTATUS` out-type.
    Status(u32),
    /// `BOOL32`.
    Bool(bool),
    /// `ANSISTRING` (UTF-8) or `UNICODESTRING`.
    Str(String),
}

impl Value {
    /// The value as an unsigned number, if it is one (statuses and booleans included).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Unsigned(v) | Value::Hex(v) => Some(v),
            Value::Status(v) => Some(u64::from(v)),
            Value::Bool(b) => Some(u64::from(b)),
            Value::Signed(v) => u64::try_from(v).ok(),
            Value::Str(_) => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Unsigned(v) => write!(f, "{v}"),
            Value::Signed(v) => write!(f, "{v}"),
            Value::Hex(v) => write!(f, "{v:#x}"),
            Value::Status(v) => write!(f, "{v:#010x}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// One decoded event (without the session's timestamp).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The provider's name from its metadata.
    pub provider: String,
    /// The event's name from its metadata.
    pub name: String,
    /// Level and keyword from the event descriptor.
    pub level: u8,
    pub keyword: u64,
    /// Fields by name, in order.
    pub fields: Vec<(String, Value)>,
}

impl Decoded {
    /// The field `name`'s value.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// Why an event could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The event descriptor's channel is not TraceLogging's (11).
    NotTraceLogging(u8),
    /// No, or more than one, metadata descriptor of this type.
    Metadata(&'static str),
    /// A data descriptor of a type this decoder does not know.
    DescriptorType(u8),
    /// A blob is shorter than it says, or its size field is wrong.
    Size(&'static str),
    /// A name runs past its blob or is not UTF-8.
    Name(&'static str),
    /// A field type this decoder does not read (in-type byte).
    FieldType(u8),
    /// The payload ends inside the field.
    Truncated(String),
    /// Bytes left over after the last field.
    Trailing(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotTraceLogging(c) => write!(f, "channel {c} is not TraceLogging's (11)"),
            Self::Metadata(what) => write!(f, "needs exactly one {what} descriptor"),
            Self::DescriptorType(t) => write!(f, "data descriptor type {t} unknown"),
            Self::Size(what) => write!(f, "{what}: size field does not match the blob"),
            Self::Name(what) => write!(f, "{what}: name unterminated or not UTF-8"),
            Self::FieldType(t) => write!(f, "field in-type {t:#x} not supported"),
            Self::Truncated(n) => write!(f, "payload ends inside field {n:?}"),
            Self::Trailing(n) => write!(f, "{n} payload bytes after the last field"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A bounds-checked reader over one blob.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(b)
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Some(a)
    }
    /// A NUL-terminated UTF-8 name.
    fn cstr(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let end = self
            .rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(DecodeError::Name(what))?;
        let s = self.take(end).ok_or(DecodeError::Name(what))?;
        self.byte();
        std::str::from_utf8(s).map_err(|_| DecodeError::Name(what))
    }
    /// Chained tag bytes (at most four).
    fn tags(&mut self, what: &'static str) -> Result<(), DecodeError> {
        for _ in 0..4 {
            let b = self.byte().ok_or(DecodeError::Size(what))?;
            if b & CHAIN == 0 {
                return Ok(());
            }
        }
        Err(DecodeError::Size(what))
    }
}

/// The blob without its `u16` size prefix, which must equal the blob's length.
fn sized<'a>(blob: &'a [u8], what: &'static str) -> Result<Cursor<'a>, DecodeError> {
    let (size, rest) = blob
        .split_first_chunk::<2>()
        .ok_or(DecodeError::Size(what))?;
    if usize::from(u16::from_le_bytes(*size)) != blob.len() {
        return Err(DecodeError::Size(what));
    }
    Ok(Cursor { rest })
}

/// The provider name from provider metadata; the traits are checked for size only.
pub fn provider_name(blob: &[u8]) -> Result<String, DecodeError> {
    let mut c = sized(blob, "provider metadata")?;
    let name = c.cstr("provider")?.to_string();
    while !c.rest.is_empty() {
        let size = c
            .take(2)
            .and_then(|s| s.try_into().ok())
            .map(u16::from_le_bytes)
            .ok_or(DecodeError::Size("provider trait"))?;
        // The size counts itself and the type byte.
        let body = usize::from(size)
            .checked_sub(2)
            .filter(|&n| n >= 1)
            .ok_or(DecodeError::Size("provider trait"))?;
        c.take(body).ok_or(DecodeError::Size("provider trait"))?;
    }
    Ok(name)
}

/// One field's declared type.
struct FieldMeta<'a> {
    name: &'a str,
    in_type: u8,
    out_type: u8,
}

/// The event name and fields from event metadata.
fn event_meta(blob: &[u8]) -> Result<(&str, Vec<FieldMeta<'_>>), DecodeError> {
    let mut c = sized(blob, "event metadata")?;
    c.tags("event tags")?;
    let name = c.cstr("event")?;
    let mut fields = Vec::new();
    while !c.rest.is_empty() {
        let fname = c.cstr("field")?;
        let in_byte = c.byte().ok_or(DecodeError::Size("field type"))?;
        let mut out_type = 0;
        if in_byte & CHAIN != 0 {
            let out = c.byte().ok_or(DecodeError::Size("field out-type"))?;
            out_type = out & !CHAIN;
            if out & CHAIN != 0 {
                c.tags("field tags")?;
            }
        }
        if in_byte & IN_ARRAY_FLAGS != 0 {
            return Err(DecodeError::FieldType(in_byte));
        }
        fields.push(FieldMeta {
            name: fname,
            in_type: in_byte & 0x1F,
            out_type,
        });
    }
    Ok((name, fields))
}

/// Reads one value of `f`'s type off the payload.
fn value(f: &FieldMeta<'_>, p: &mut Cursor<'_>) -> Result<Value, DecodeError> {
    let short = || DecodeError::Truncated(f.name.to_string());
    let mut int = |n: usize| -> Result<u64, DecodeError> {
        let b = p.take(n).ok_or_else(short)?;
        let mut le = [0u8; 8];
        le.get_mut(..n).ok_or_else(short)?.copy_from_slice(b);
        Ok(u64::from_le_bytes(le))
    };
    use tlg_in::*;
    let v = match f.in_type {
        INT8 => Value::Signed(i64::from(int(1)? as u8 as i8)),
        UINT8 => Value::Unsigned(int(1)?),
        INT16 => Value::Signed(i64::from(int(2)? as u16 as i16)),
        UINT16 => Value::Unsigned(int(2)?),
        INT32 | UINT32 if f.out_type == OUT_NTSTATUS => Value::Status(int(4)? as u32),
        INT32 => Value::Signed(i64::from(int(4)? as u32 as i32)),
        UINT32 if f.out_type == OUT_HEX => Value::Hex(int(4)?),
        UINT32 => Value::Unsigned(int(4)?),
        INT64 => Value::Signed(int(8)? as i64),
        UINT64 if f.out_type == OUT_HEX => Value::Hex(int(8)?),
        UINT64 => Value::Unsigned(int(8)?),
        HEXINT32 => Value::Hex(int(4)?),
        HEXINT64 => Value::Hex(int(8)?),
        BOOL32 => Value::Bool(int(4)? != 0),
        ANSISTRING => {
            let end = p.rest.iter().position(|&b| b == 0).ok_or_else(short)?;
            let s = p.take(end).ok_or_else(short)?;
            p.byte();
            Value::Str(String::from_utf8_lossy(s).into_owned())
        }
        UNICODESTRING => {
            let mut units = Vec::new();
            loop {
                let u = int(2)? as u16;
                if u == 0 {
                    break;
                }
                units.push(u);
            }
            Value::Str(String::from_utf16_lossy(&units))
        }
        t => return Err(DecodeError::FieldType(t)),
    };
    Ok(v)
}

/// Decodes one event: `channel`, `level` and `keyword` from its descriptor, `data` the
/// (type, bytes) of each data descriptor in order.
pub fn decode(
    channel: u8,
    level: u8,
    keyword: u64,
    data: &[(u8, &[u8])],
) -> Result<Decoded, DecodeError> {
    if channel != CHANNEL_TRACELOGGING {
        return Err(DecodeError::NotTraceLogging(channel));
    }
    let one = |kind: u8, what: &'static str| -> Result<&[u8], DecodeError> {
        let mut it = data.iter().filter(|(k, _)| *k == kind);
        match (it.next(), it.next()) {
            (Some((_, b)), None) => Ok(*b),
            _ => Err(DecodeError::Metadata(what)),
        }
    };
    if let Some((k, _)) = data.iter().find(|(k, _)| *k > DATA_PROVIDER_METADATA) {
        return Err(DecodeError::DescriptorType(*k));
    }
    let provider = provider_name(one(DATA_PROVIDER_METADATA, "provider metadata")?)?;
    let (name, metas) = event_meta(one(DATA_EVENT_METADATA, "event metadata")?)?;
    let payload: Vec<u8> = data
        .iter()
        .filter(|(k, _)| *k == DATA_FIELD)
        .flat_map(|(_, b)| b.iter().copied())
        .collect();
    let mut p = Cursor { rest: &payload };
    let mut fields = Vec::with_capacity(metas.len());
    for f in &metas {
        fields.push((f.name.to_string(), value(f, &mut p)?));
    }
    if !p.rest.is_empty() {
        return Err(DecodeError::Trailing(p.rest.len()));
    }
    Ok(Decoded {
        provider,
        name: name.to_string(),
        level,
        keyword,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(parts: &[&[u8]]) -> Vec<u8> {
        let body: Vec<u8> = parts.concat();
        let mut v = ((body.len() + 2) as u16).to_le_bytes().to_vec();
        v.extend(body);
        v
    }

    fn good() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let prov = blob(&[b"P\0"]);
        let ev = blob(&[
            &[0],
            b"E\0",
            b"A\0",
            &[tlg_in::UINT32],
            b"S\0",
            &[0x87, OUT_NTSTATUS],
        ]);
        let payload = [7u32.to_le_bytes(), 0xC000_000Du32.to_le_bytes()].concat();
        (prov, ev, payload)
    }

    #[test]
    fn ddi_04_decodes_names_and_typed_fields() {
        let (p, e, d) = good();
        let ev = decode(11, 4, 1, &[(2, &p), (1, &e), (0, &d)]).unwrap();
        assert_eq!((ev.provider.as_str(), ev.name.as_str()), ("P", "E"));
        assert_eq!(ev.field("A"), Some(&Value::Unsigned(7)));
        assert_eq!(ev.field("S"), Some(&Value::Status(0xC000_000D)));
    }

    #[test]
    fn ddi_04_hostile_blobs_are_errors_never_panics() {
        let (p, e, d) = good();
        // Every truncation and every single-byte corruption of either blob and the payload.
        for cut in 0..e.len() {
            let _ = decode(11, 4, 0, &[(2, &p), (1, &e[..cut]), (0, &d)]);
            assert!(decode(11, 4, 0, &[(2, &p), (1, &e[..cut]), (0, &d)]).is_err());
        }
        for cut in 0..p.len() {
            assert!(decode(11, 4, 0, &[(2, &p[..cut]), (1, &e), (0, &d)]).is_err());
        }
        for cut in 0..d.len() {
            assert!(decode(11, 4, 0, &[(2, &p), (1, &e), (0, &d[..cut])]).is_err());
        }
        for i in 0..e.len() {
            for b in [0u8, 0x7F, 0x80, 0xFF] {
                let mut m = e.clone();
                m[i] = b;
                let _ = decode(11, 4, 0, &[(2, &p), (1, &m), (0, &d)]);
            }
        }
        for i in 0..p.len() {
            for b in [0u8, 0x80, 0xFF] {
                let mut m = p.clone();
                m[i] = b;
                let _ = decode(11, 4, 0, &[(2, &m), (1, &e), (0, &d)]);
            }
        }
    }

    #[test]
    fn ddi_04_structural_errors_are_named() {
        let (p, e, d) = good();
        assert_eq!(
            decode(0, 4, 0, &[(2, &p), (1, &e), (0, &d)]),
            Err(DecodeError::NotTraceLogging(0))
        );
        assert_eq!(
            decode(11, 4, 0, &[(1, &e), (0, &d)]),
            Err(DecodeError::Metadata("provider metadata"))
        );
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &e), (1, &e), (0, &d)]),
            Err(DecodeError::Metadata("event metadata"))
        );
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &e), (3, &d)]),
            Err(DecodeError::DescriptorType(3))
        );
        let mut long = d.clone();
        long.push(0);
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &e), (0, &long)]),
            Err(DecodeError::Trailing(1))
        );
        // A size field larger than the blob, an unterminated name, an array field, an
        // endless tag chain, a trait whose size is below its header.
        let mut big = e.clone();
        big[0] = big[0].wrapping_add(1);
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &big), (0, &d)]),
            Err(DecodeError::Size("event metadata"))
        );
        let unterminated = blob(&[&[0], b"E"]);
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &unterminated)]),
            Err(DecodeError::Name("event"))
        );
        let array = blob(&[&[0], b"E\0", b"A\0", &[tlg_in::UINT32 | 0x40]]);
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &array), (0, &d)]),
            Err(DecodeError::FieldType(tlg_in::UINT32 | 0x40))
        );
        let tags = blob(&[&[0x80, 0x80, 0x80, 0x80, 0x80], b"E\0"]);
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &tags)]),
            Err(DecodeError::Size("event tags"))
        );
        let trait_small = blob(&[b"P\0", &[2, 0, 1]]);
        assert_eq!(
            decode(11, 4, 0, &[(2, &trait_small), (1, &e), (0, &d)]),
            Err(DecodeError::Size("provider trait"))
        );
        let unknown_type = blob(&[&[0], b"E\0", b"A\0", &[16]]);
        assert_eq!(
            decode(11, 4, 0, &[(2, &p), (1, &unknown_type), (0, &d)]),
            Err(DecodeError::FieldType(16))
        );
    }
}
