//! How registers are declared: the [`register!`](macro@crate::register) macro and the traits its
//! output implements.
//!
//! Each register is declared once, in [`crate::regs`], with its offset, width (the Rust type of
//! its value, `u32` or `u64`), access type and named bit fields. The macro turns a declaration
//! into
//! - a `usize` offset constant (the name the register map uses),
//! - a `#[repr(transparent)]` value type with `new`/`raw`, a getter and a `with_` setter per
//!   field, and
//! - an implementation of [`Register`] (plus [`Fixed`] or [`Indexed`], and [`Readable`] /
//!   [`Writable`] as its access type allows), so a driver accessor can pick the access width
//!   from the type and refuse to read a write-only register at compile time.
//!
//! It also builds `RegId` (one variant per register), `ALL` and `lookup`, which a device model
//! uses to decode an offset into the declaration that governs it.

/// Access width of a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// One 32-bit access.
    W32,
    /// One 64-bit access.
    W64,
}

impl Width {
    /// Bytes per access.
    pub const fn bytes(self) -> usize {
        match self {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }
}

/// Access type of a register (docs/hardware.md section 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only: writes are ignored.
    RO,
    /// Write-only: reads return 0.
    WO,
    /// Read/write.
    RW,
    /// Write 1 to clear: each 1 bit written clears that bit of the status it acknowledges;
    /// the register itself reads 0.
    W1C,
}

impl Access {
    /// Reads return the register's value (otherwise they return 0).
    pub const fn readable(self) -> bool {
        matches!(self, Access::RO | Access::RW)
    }

    /// Writes reach the register (otherwise they are ignored).
    pub const fn writable(self) -> bool {
        matches!(self, Access::WO | Access::RW | Access::W1C)
    }
}

/// A register's declaration as data: what a decoder needs to know about an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegDecl {
    /// Name in the register map.
    pub name: &'static str,
    /// Offset of instance 0 in BAR0.
    pub offset: usize,
    /// Access width.
    pub width: Width,
    /// Access type.
    pub access: Access,
    /// Number of instances (1 for a single register).
    pub count: u32,
    /// Bytes between instances (0 for a single register).
    pub stride: usize,
}

impl RegDecl {
    /// Offset of instance `i`, or `None` past the last instance.
    pub const fn offset_of(&self, i: u32) -> Option<usize> {
        if i >= self.count {
            return None;
        }
        // Bounded: count * stride stays inside the 64 KiB BAR (checked by the tests of
        // `regs`), so the product and the sum cannot wrap.
        Some(
            self.offset
                .wrapping_add((i as usize).wrapping_mul(self.stride)),
        )
    }

    /// The instance that starts exactly at `off`, if any.
    pub const fn index_of(&self, off: usize) -> Option<u32> {
        let Some(rel) = off.checked_sub(self.offset) else {
            return None;
        };
        if self.stride == 0 {
            return if rel == 0 { Some(0) } else { None };
        }
        // stride != 0 here, so neither operation fails.
        let (Some(0), Some(i)) = (rel.checked_rem(self.stride), rel.checked_div(self.stride))
        else {
            return None;
        };
        if i >= self.count as usize {
            return None;
        }
        // i < count, which is a u32.
        #[allow(clippy::cast_possible_truncation)]
        Some(i as u32)
    }
}

/// Slots a [`DecodeTable`] of `decls` needs: one per 4-byte offset, up to the last offset
/// any instance starts at.
// Evaluated at compile time only (by the macro's constants): an out-of-range index or an
// overflow is a build error, never a runtime fault.
#[allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
pub const fn decode_slots(decls: &[RegDecl]) -> usize {
    let mut slots = 0;
    let mut r = 0;
    while r < decls.len() {
        let d = &decls[r];
        let last = d.offset + (d.count.saturating_sub(1) as usize) * d.stride;
        if last / 4 + 1 > slots {
            slots = last / 4 + 1;
        }
        r += 1;
    }
    slots
}

/// Offset to declaration, for a register map, built at compile time by
/// [`register!`](macro@crate::register): an MMIO decode is one table load and one check of the
/// declaration found, instead of a search through every declaration (the device model
/// decodes every trapped access).
#[derive(Debug)]
pub struct DecodeTable<const N: usize> {
    /// Slot `off / 4`: 1 + the index (in the map) of the declaration with an instance
    /// starting at `off`; 0 where none starts.
    slots: [u8; N],
    /// Every instance starts 4-byte aligned, no two start at one offset, and the map has at
    /// most 255 declarations (the macro asserts this at compile time).
    pub valid: bool,
}

impl<const N: usize> DecodeTable<N> {
    /// The table of `decls` (`N` from [`decode_slots`]).
    // Compile-time only, as `decode_slots`; `r + 1` fits a u8 while `valid`.
    #[allow(
        clippy::arithmetic_side_effects,
        clippy::indexing_slicing,
        clippy::cast_possible_truncation
    )]
    pub const fn build(decls: &[RegDecl]) -> Self {
        let mut slots = [0u8; N];
        let mut valid = decls.len() < 256;
        let mut r = 0;
        while valid && r < decls.len() {
            let d = &decls[r];
            let mut i = 0;
            while i < d.count {
                let off = d.offset + (i as usize) * d.stride;
                if !off.is_multiple_of(4) || off / 4 >= N || slots[off / 4] != 0 {
                    valid = false;
                } else {
                    slots[off / 4] = (r + 1) as u8;
                }
                i += 1;
            }
            r += 1;
        }
        Self { slots, valid }
    }

    /// The index in `decls` (the list the table was built from) and the instance of the
    /// register that starts exactly at `off`, if any.
    pub fn find(&self, decls: &[RegDecl], off: usize) -> Option<(usize, u32)> {
        if !off.is_multiple_of(4) {
            return None;
        }
        let r = usize::from(*self.slots.get(off / 4)?).checked_sub(1)?;
        let i = decls.get(r)?.index_of(off)?;
        Some((r, i))
    }
}

/// The raw value types a register can have: `u32` (32-bit) or `u64` (64-bit).
pub trait RegRaw: Copy + core::fmt::Debug {
    /// Width of a register with this value type.
    const WIDTH: Width;
    /// All bits set: what a read of an unmapped or lost register returns.
    const ONES: Self;
    /// The low `WIDTH` bits of `v`.
    fn from_u64(v: u64) -> Self;
    /// Zero-extended to 64 bits.
    fn to_u64(self) -> u64;
}

impl RegRaw for u32 {
    const WIDTH: Width = Width::W32;
    const ONES: Self = u32::MAX;
    fn from_u64(v: u64) -> Self {
        // Truncation is the point: a 32-bit register keeps the low half.
        #[allow(clippy::cast_possible_truncation)]
        let low = v as u32;
        low
    }
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
}

impl RegRaw for u64 {
    const WIDTH: Width = Width::W64;
    const ONES: Self = u64::MAX;
    fn from_u64(v: u64) -> Self {
        v
    }
    fn to_u64(self) -> u64 {
        self
    }
}

/// A declared register's value type.
pub trait Register: Copy {
    /// `u32` or `u64`; fixes the access width.
    type Raw: RegRaw;
    /// The declaration.
    const DECL: RegDecl;
    /// Wraps a raw value.
    fn from_raw(raw: Self::Raw) -> Self;
    /// The raw value.
    fn into_raw(self) -> Self::Raw;
}

/// A register with one instance, at [`RegDecl::offset`].
pub trait Fixed: Register {}
/// A register array: instance `i` at [`RegDecl::offset_of`].
pub trait Indexed: Register {}
/// A register whose reads return its value (RO, RW).
pub trait Readable: Register {}
/// A register whose writes have an effect (WO, RW, W1C).
pub trait Writable: Register {}

/// Declares the register map. One entry per register:
///
/// ```text
/// /// docs
/// CONST [count; stride] => Type(u32 | u64, RO | WO | RW | W1C) { field, with_field: hi:lo, .. } @ offset;
/// ```
///
/// `[count; stride]` makes a register array; the field block is optional. See the module
/// documentation for what it generates.
#[macro_export]
macro_rules! register {
    (
        $(
            $(#[$meta:meta])*
            $konst:ident $( [ $count:expr ; $stride:expr ] )?
                => $name:ident ( $raw:ty , $acc:ident )
                $( {
                    $( $(#[$fmeta:meta])* $get:ident , $set:ident : $hi:literal : $lo:literal ),*
                    $(,)?
                } )?
                @ $off:expr ;
        )*
    ) => {
        $(
            $(#[$meta])*
            pub const $konst: usize = $off;

            $(#[$meta])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
            #[repr(transparent)]
            pub struct $name($raw);

            impl $name {
                /// Wraps a raw register value.
                pub const fn new(raw: $raw) -> Self {
                    Self(raw)
                }

                /// The raw register value.
                pub const fn raw(self) -> $raw {
                    self.0
                }

                $( $(
                    $(#[$fmeta])*
                    pub const fn $get(self) -> $raw {
                        const _: () = assert!($hi >= $lo && $hi < <$raw>::BITS);
                        let mask = <$raw>::MAX
                            .wrapping_shr(<$raw>::BITS.wrapping_sub(1).wrapping_sub($hi - $lo));
                        self.0.wrapping_shr($lo) & mask
                    }

                    /// Sets the field of the same name (excess bits of `v` are dropped).
                    pub const fn $set(self, v: $raw) -> Self {
                        let mask = <$raw>::MAX
                            .wrapping_shr(<$raw>::BITS.wrapping_sub(1).wrapping_sub($hi - $lo))
                            .wrapping_shl($lo);
                        Self((self.0 & !mask) | (v.wrapping_shl($lo) & mask))
                    }
                )* )?
            }

            impl $crate::register::Register for $name {
                type Raw = $raw;
                const DECL: $crate::register::RegDecl = $crate::register::RegDecl {
                    name: stringify!($konst),
                    offset: $konst,
                    width: <$raw as $crate::register::RegRaw>::WIDTH,
                    access: $crate::register::Access::$acc,
                    count: $crate::register!(@count $($count)?),
                    stride: $crate::register!(@stride $($stride)?),
                };
                fn from_raw(raw: $raw) -> Self {
                    Self(raw)
                }
                fn into_raw(self) -> $raw {
                    self.0
                }
            }

            $crate::register!(@kind $name $($count)?);
            $crate::register!(@access $name $acc);
        )*

        /// Every declared register, one variant each (for decoders).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum RegId {
            $(
                #[doc = concat!("[`", stringify!($konst), "`]")]
                $name,
            )*
        }

        impl RegId {
            /// The declaration of this register.
            pub const fn decl(self) -> $crate::register::RegDecl {
                match self {
                    $( RegId::$name => <$name as $crate::register::Register>::DECL, )*
                }
            }
        }

        /// Every declared register.
        pub const ALL: &[RegId] = &[ $( RegId::$name, )* ];

        /// Every declaration, in `RegId` order.
        pub const DECLS: &[$crate::register::RegDecl] =
            &[ $( <$name as $crate::register::Register>::DECL, )* ];

        /// The decode table, a static so that a lookup reads it in place.
        static DECODE: $crate::register::DecodeTable<
            { $crate::register::decode_slots(DECLS) },
        > = $crate::register::DecodeTable::build(DECLS);
        const _: () = assert!(
            DECODE.valid,
            "register map: an unaligned start, two registers at one offset, or > 255 registers"
        );

        /// The register (and instance) that starts exactly at `off`, if one is declared.
        pub fn lookup(off: usize) -> Option<(RegId, u32)> {
            let (r, i) = DECODE.find(DECLS, off)?;
            Some((*ALL.get(r)?, i))
        }
    };

    (@count) => { 1 };
    (@count $count:expr) => { $count };
    (@stride) => { 0 };
    (@stride $stride:expr) => { $stride };
    (@kind $name:ident) => { impl $crate::register::Fixed for $name {} };
    (@kind $name:ident $count:expr) => { impl $crate::register::Indexed for $name {} };
    (@access $name:ident RO) => { impl $crate::register::Readable for $name {} };
    (@access $name:ident WO) => { impl $crate::register::Writable for $name {} };
    (@access $name:ident W1C) => { impl $crate::register::Writable for $name {} };
    (@access $name:ident RW) => {
        impl $crate::register::Readable for $name {}
        impl $crate::register::Writable for $name {}
    };
}
