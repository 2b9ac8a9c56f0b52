//! Helper macros shared by the binding modules.
//!
//! `bitfield!` models a C "bitfield union" (`union { struct { UINT A : 1; ... }; UINT Value; }`)
//! as a `#[repr(transparent)]` wrapper around the storage integer. The storage member keeps the
//! C name `Value`. For every named C bitfield `X` the type gets an associated constant
//! `X: BitField` (position and width), and the accessors `get`, `set`, `with` and `is_set` take
//! such a constant:
//!
//! ```
//! use rvgpu_ddi::adapter::DXGK_VIDSCHCAPS;
//! let mut caps = DXGK_VIDSCHCAPS::default();
//! caps.set(DXGK_VIDSCHCAPS::NativeGpuFence, 1);
//! assert!(caps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence));
//! assert_eq!(caps.Value, 1 << 11);
//! ```
//!
//! Bit positions follow MSVC's rule for consecutive bitfields of one storage type: the first
//! declared field occupies the least significant bits. Positions are written out as literals
//! (from the header's declaration order), except in `flag_word!` words of one-bit flags, where
//! the order gives them; the unit tests check that the declared fields are contiguous, do not
//! overlap and fill the word.

/// Declares a bitfield wrapper; see the module documentation.
macro_rules! bitfield {
    (
        $(#[$meta:meta])*
        pub struct $name:ident : $ty:ty {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $shift:expr, $width:expr;
            )*
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
        pub struct $name {
            /// The whole bitfield word (the C `Value` member).
            pub Value: $ty,
        }

        impl $name {
            $(
                $(#[$fmeta])*
                pub const $field: $crate::basic::BitField =
                    $crate::basic::BitField { shift: $shift, width: $width };
            )*

            /// Every named bitfield (including `Reserved` ones) in declaration order.
            pub const FIELDS: &'static [(&'static str, $crate::basic::BitField)] =
                &[$((stringify!($field), $crate::basic::BitField { shift: $shift, width: $width })),*];

            /// Builds the wrapper from a raw word.
            pub const fn from_value(value: $ty) -> Self {
                Self { Value: value }
            }

            /// In-place mask of `field`.
            pub const fn mask(field: $crate::basic::BitField) -> $ty {
                <$ty>::MAX
                    .wrapping_shr(<$ty>::BITS.wrapping_sub(field.width))
                    .wrapping_shl(field.shift)
            }

            /// Value of `field`, shifted down to bit 0.
            pub const fn get(self, field: $crate::basic::BitField) -> $ty {
                (self.Value & Self::mask(field)).wrapping_shr(field.shift)
            }

            /// Whether `field` is non-zero.
            pub const fn is_set(self, field: $crate::basic::BitField) -> bool {
                self.get(field) != 0
            }

            /// Replaces `field` with `value`, truncated to the field width.
            pub const fn set(&mut self, field: $crate::basic::BitField, value: $ty) {
                let mask = Self::mask(field);
                self.Value = (self.Value & !mask) | (value.wrapping_shl(field.shift) & mask);
            }

            /// Builder form of [`Self::set`].
            #[must_use]
            pub const fn with(mut self, field: $crate::basic::BitField, value: $ty) -> Self {
                self.set(field, value);
                self
            }
        }
        $crate::macros::c_marker!(Data: $name);
    };
}

pub(crate) use bitfield;

/// Declares a 32-bit flag word whose C bitfields are one-bit flags followed by `Reserved`, which
/// fills the rest of the word (`union { struct { UINT A : 1; UINT B : 1; UINT Reserved : 30; };
/// UINT Value; }`): the flags are listed in the header's order, the first is bit 0, as MSVC
/// lays them out. Expands to a [`bitfield!`] with those positions and its 4-byte layout
/// assertion.
macro_rules! flag_word {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $flag:ident, )+
        }
    ) => {
        $crate::macros::flag_word!(@munch [$(#[$meta])*] $name [] (0); $( $(#[$fmeta])* $flag, )+);
    };
    (@munch [$($meta:tt)*] $name:ident [$($done:tt)*] ($bit:expr); $(#[$fmeta:meta])* $flag:ident, $($rest:tt)*) => {
        $crate::macros::flag_word!(@munch [$($meta)*] $name [$($done)* $(#[$fmeta])* $flag: $bit, 1;] ($bit + 1); $($rest)*);
    };
    (@munch [$($meta:tt)*] $name:ident [$($done:tt)*] ($bit:expr);) => {
        $crate::macros::bitfield! {
            $($meta)*
            pub struct $name: u32 {
                $($done)*
                /// Reserved, zero.
                Reserved: $bit, 32 - ($bit);
            }
        }
        $crate::macros::layout!($name, size = 4);
    };
}

pub(crate) use flag_word;

/// Declares flag words whose bits are all reserved (`union { struct { UINT Reserved : 32; };
/// UINT Value; }`): for each, a [`bitfield!`] with the one field `Reserved` and its 4-byte
/// layout assertion.
macro_rules! reserved_flags {
    ($( $(#[$meta:meta])* $name:ident; )*) => {
        $(
            $crate::macros::bitfield! {
                $(#[$meta])*
                pub struct $name: u32 {
                    /// Reserved.
                    Reserved: 0, 32;
                }
            }
            $crate::macros::layout!($name, size = 4);
        )*
    };
}

pub(crate) use reserved_flags;

/// The size arithmetic of a log buffer (`DXGK_NATIVE_FENCE_LOG_BUFFER`,
/// `DXGK_SCHEDULING_LOG_BUFFER`): a header followed by `NumberOfEntries` entries, declared with
/// a one-element array so that `size_of` covers one entry only.
macro_rules! log_buffer_sizes {
    ($buffer:ident, $header:ty, $entry:ty) => {
        impl $buffer {
            /// Size in bytes of the header.
            pub const HEADER_SIZE: u64 = core::mem::size_of::<$header>() as u64;
            /// Size in bytes of one entry.
            pub const ENTRY_SIZE: u64 = core::mem::size_of::<$entry>() as u64;

            /// Bytes occupied by a log buffer holding `entries` entries (header plus entries),
            /// or `None` on overflow.
            pub const fn size_for_entries(entries: u64) -> Option<u64> {
                Self::entry_offset(entries)
            }

            /// Byte offset of entry `index` from the start of the buffer, or `None` on
            /// overflow.
            pub const fn entry_offset(index: u64) -> Option<u64> {
                match index.checked_mul(Self::ENTRY_SIZE) {
                    Some(bytes) => bytes.checked_add(Self::HEADER_SIZE),
                    None => None,
                }
            }
        }
    };
}

pub(crate) use log_buffer_sizes;

/// Marks types as [`CType`](crate::basic::CType)s of kind `$kind` (`Data` or `Opaque`): every
/// declaring macro below marks what it declares.
macro_rules! c_marker {
    ($kind:ident: $($t:ty),+ $(,)?) => {$(
        impl $crate::basic::sealed::Sealed for $t {}
        impl $crate::basic::CType for $t {
            type Kind = $crate::basic::$kind;
        }
    )+};
}

pub(crate) use c_marker;

/// Asserts (at compile time, x86_64 only) the size of a type and the offsets of named fields.
macro_rules! layout {
    ($ty:ty, size = $size:literal $(, $field:ident = $off:literal)* $(,)?) => {
        #[cfg(target_pointer_width = "64")]
        const _: () = {
            assert!(::core::mem::size_of::<$ty>() == $size);
            $( assert!(::core::mem::offset_of!($ty, $field) == $off); )*
        };
    };
}

pub(crate) use layout;

/// Declares a `#[repr(C)]` struct or union together with its layout assertions (see
/// [`layout!`]): `#[size(N)]`, right after the doc comment, is the type's size and
/// `#[offset(N)]`, right before a field, that field's byte offset, both on x86_64. Each field is
/// named once; the other attributes pass through unchanged. The type is a [`crate::basic::Data`]
/// [`crate::basic::CType`], or an [`crate::basic::Element`] one with `#[element]` before
/// `#[size(N)]`.
///
/// ```text
/// c_type! {
///     /// `PAIR`: two counters.
///     #[size(16)]
///     #[repr(C)]
///     #[derive(Clone, Copy, Debug)]
///     pub struct PAIR {
///         /// First.
///         #[offset(0)]
///         pub A: UINT64,
///         /// Second.
///         #[offset(8)]
///         pub B: UINT64,
///     }
/// }
/// ```
macro_rules! c_type {
    // `#[element]` first: a type a DDI takes only as an array ([`crate::basic::Element`]).
    (
        $(#[doc = $doc:literal])*
        #[element]
        $($rest:tt)*
    ) => {
        $crate::macros::c_type!(@kind Element $(#[doc = $doc])* $($rest)*);
    };
    (
        $(#[doc = $doc:literal])*
        #[size($size:literal)]
        $($rest:tt)*
    ) => {
        $crate::macros::c_type!(@kind Data $(#[doc = $doc])* #[size($size)] $($rest)*);
    };
    (
        @kind $ckind:ident
        $(#[doc = $doc:literal])*
        #[size($size:literal)]
        $(#[$meta:meta])*
        pub $kind:tt $name:ident {
            $(
                $(#[doc = $fdoc:literal])*
                $(#[offset($off:literal)])?
                $vis:vis $field:ident : $fty:ty,
            )*
        }
    ) => {
        $(#[doc = $doc])*
        $(#[$meta])*
        pub $kind $name {
            $( $(#[doc = $fdoc])* $vis $field: $fty, )*
        }
        $crate::macros::layout!($name, size = $size $($(, $field = $off)?)*);
        $crate::macros::c_marker!($ckind: $name);
    };
}

pub(crate) use c_type;

/// Declares a query-interface table: a [`c_type!`] struct that begins with the members of the
/// WDM `INTERFACE` header (`Size`, `Version`, `Context`, `InterfaceReference`,
/// `InterfaceDereference`, at 0, 2, 8, 16 and 24 on x86_64), followed by the listed fields.
/// build/layout_gen.rs knows the header's members to compare them with the WDK's.
macro_rules! interface_table {
    (
        $(#[doc = $doc:literal])*
        #[size($size:literal)]
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[doc = $fdoc:literal])* #[offset($off:literal)] pub $field:ident : $fty:ty, )*
        }
    ) => {
        $crate::macros::c_type! {
            $(#[doc = $doc])*
            #[size($size)]
            $(#[$meta])*
            pub struct $name {
                /// Size of the whole structure in bytes.
                #[offset(0)]
                pub Size: $crate::basic::USHORT,
                /// Interface version.
                #[offset(2)]
                pub Version: $crate::basic::USHORT,
                /// Context passed to every function of the table.
                #[offset(8)]
                pub Context: $crate::basic::PVOID,
                /// Reference function.
                #[offset(16)]
                pub InterfaceReference: $crate::basic::PINTERFACE_REFERENCE,
                /// Dereference function.
                #[offset(24)]
                pub InterfaceDereference: $crate::basic::PINTERFACE_DEREFERENCE,
                $( $(#[doc = $fdoc])* #[offset($off)] pub $field: $fty, )*
            }
        }
    };
}

pub(crate) use interface_table;

/// Declares a DDI function table (`DRIVER_INITIALIZATION_DATA`, `DXGKRNL_INTERFACE`): a
/// `#[repr(C)]` struct of header fields followed by pointer-sized slots, plus
/// `SLOT_NAMES` (slot names in declaration order), `SLOT_CHECKS` (one "is non-null" predicate
/// per slot, same order), `SLOT_CLEARS` (one setter per slot that empties it) and a `Default`
/// with every slot null. Names and struct come from one
/// list so they cannot drift apart.
macro_rules! ddi_table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            header {
                $( $(#[$hmeta:meta])* $hfield:ident : $hty:ty = $hdef:expr, )*
            }
            slots {
                $( $(#[$fmeta:meta])* $field:ident : $fty:ty, )*
            }
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            $( $(#[$hmeta])* pub $hfield: $hty, )*
            $( $(#[$fmeta])* pub $field: $fty, )*
        }

        impl $name {
            /// Slot names in header order.
            pub const SLOT_NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            /// Number of pointer slots.
            pub const SLOT_COUNT: usize = $name::SLOT_NAMES.len();

            /// One predicate per slot (header order): whether the slot is non-null.
            pub const SLOT_CHECKS: &'static [fn(&$name) -> bool] =
                &[$(|t: &$name| $crate::basic::DdiSlot::is_filled(&t.$field)),*];

            /// One setter per slot (header order) that empties it (tests that take one slot
            /// out of a table).
            pub const SLOT_CLEARS: &'static [fn(&mut $name)] =
                &[$(|t: &mut $name| t.$field = $crate::basic::DdiSlot::NULL),*];

            /// `(slot name, is non-null)` for every slot, in header order.
            pub fn slots(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
                $name::SLOT_NAMES
                    .iter()
                    .zip($name::SLOT_CHECKS.iter())
                    .map(move |(name, check)| (*name, check(self)))
            }
        }

        #[cfg(feature = "abi-bridge")]
        impl $name {
            /// Hands every slot, with its index in header order, to `v` (host tools that carry
            /// a table across an emulator boundary; see [`crate::abi`]).
            pub fn visit_slots<V: $crate::abi::SlotVisitor>(&mut self, v: &mut V) {
                $( v.visit::<{ $crate::slot_id!($name::SLOT_NAMES, stringify!($field)) }, _>(&mut self.$field); )*
            }
        }

        $crate::macros::c_marker!(Data: $name);

        impl Default for $name {
            /// Header fields at their defaults, every slot null.
            fn default() -> Self {
                Self {
                    $( $hfield: $hdef, )*
                    $( $field: $crate::basic::DdiSlot::NULL, )*
                }
            }
        }
    };
}

pub(crate) use ddi_table;

/// Declares C function-pointer typedefs as Rust spells them: `extern_fn! { pub type X =
/// fn(A: T, ..) -> R; }` is `pub type X = Option<unsafe extern "system" fn(A: T, ..) -> R>;`
/// (`None` is the null pointer), one item per typedef as in the header; one invocation may
/// hold several.
macro_rules! extern_fn {
    ($($(#[$meta:meta])* pub type $name:ident = fn($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)?;)+) => {
        $(
            $(#[$meta])*
            pub type $name = Option<unsafe extern "system" fn($($arg: $ty),*) $(-> $ret)?>;
        )+
    };
}

pub(crate) use extern_fn;

/// Declares C enums as Rust spells them: `pub type E = i32 { A, B = 4, C, }` is `pub type E =
/// i32;` and one `pub const` of type `E` per enumerator, each with its doc comment. As in C, an
/// enumerator without `= value` is its predecessor plus one, and the first is 0. One invocation
/// may hold several enums. build/layout_gen.rs reads these blocks in this form (one enumerator
/// a line) to compare every value with the WDK headers; a `// wdk-layout-check: skip: <why>`
/// line above an enumerator leaves it out.
macro_rules! c_enum {
    (@values $ty:ident, $next:expr;) => {};
    (@values $ty:ident, $next:expr; $(#[$meta:meta])* $name:ident = $value:expr, $($rest:tt)*) => {
        $(#[$meta])*
        pub const $name: $ty = $value;
        $crate::macros::c_enum!(@values $ty, $name + 1; $($rest)*);
    };
    (@values $ty:ident, $next:expr; $(#[$meta:meta])* $name:ident, $($rest:tt)*) => {
        $(#[$meta])*
        pub const $name: $ty = $next;
        $crate::macros::c_enum!(@values $ty, $name + 1; $($rest)*);
    };
    ($( $(#[$meta:meta])* pub type $ty:ident = $repr:ty { $($body:tt)* } )+) => {
        $(
            $(#[$meta])*
            pub type $ty = $repr;
            $crate::macros::c_enum!(@values $ty, 0; $($body)*);
        )+
    };
}

pub(crate) use c_enum;

/// Declares a DDI or callback pointer type whose signature is not bound yet.
macro_rules! unbound_fn {
    ($name:ident, $page:literal) => {
        #[doc = concat!("`", stringify!($name), "`: signature not yet bound (placeholder type; do not call).")]
        #[doc = ""]
        #[doc = concat!("<", $page, ">")]
        pub type $name = $crate::basic::PFN_UNBOUND;
    };
}

pub(crate) use unbound_fn;

/// Implements `Default` as all-zero bytes (null pointers, zero integers, empty flag words).
macro_rules! zeroed_default {
    ($($ty:ty),* $(,)?) => {
        $(
            impl Default for $ty {
                fn default() -> Self {
                    // SAFETY: every field of this `#[repr(C)]` type is an integer, an integer
                    // array, a flag word, a raw pointer or a union of those; all-zero bytes is a
                    // valid value for each (zero / null).
                    unsafe { core::mem::zeroed() }
                }
            }
        )*
    };
}

pub(crate) use zeroed_default;

/// Implements `Debug` for C unions, which cannot know their valid arm: `union_debug!(U)` prints
/// `U { .. }`; `union_debug!(U => Arm)` prints `U { Arm: <value>, .. }`, reading `Arm`, which
/// must be plain data (integers, raw pointers, flag words) over bytes that are always
/// initialised, so that any bit pattern is a valid value of it. A comment above each `=>` use
/// says why its arm is.
macro_rules! union_debug {
    ($union:ident) => {
        impl core::fmt::Debug for $union {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(concat!(stringify!($union), " { .. }"))
            }
        }
    };
    ($union:ident => $arm:ident) => {
        impl core::fmt::Debug for $union {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                // SAFETY: `$arm` is plain data over initialised bytes (the invocation says why),
                // so every bit pattern read is a valid value.
                let arm = unsafe { self.$arm };
                f.debug_struct(stringify!($union))
                    .field(stringify!($arm), &arm)
                    .finish_non_exhaustive()
            }
        }
    };
}

pub(crate) use union_debug;

/// Declares types the driver only points at (`struct { _opaque: [u8; 0] }`): no fields, no
/// layout of their own, not constructible outside this crate.
macro_rules! opaque_types {
    ($( $(#[$meta:meta])* $name:ident; )+) => {
        $(
            $(#[$meta])*
            #[repr(C)]
            #[derive(Debug)]
            pub struct $name {
                _opaque: [u8; 0],
            }
            $crate::macros::c_marker!(Opaque: $name);
        )+
    };
}

pub(crate) use opaque_types;

/// A log header's leading union (`union { struct { UINT FirstFreeEntryIndex; UINT
/// WraparoundCount; }; ULARGE_INTEGER AtomicWraparoundAndEntryIndex; }`, as both
/// `DXGK_NATIVE_FENCE_LOG_HEADER` and `DXGK_SCHEDULING_LOG_HEADER` begin):
/// `index_word_union!(UNION, PARTS, HEADER, "page")` declares the split-view struct `PARTS`
/// (the anonymous struct) and `UNION` with their layout assertions, constructors from the two
/// halves or the 64-bit word, both views, and `Default`, `Debug`, `PartialEq`/`Eq` through the
/// word. `AtomicWraparoundAndEntryIndex` is bound as the `ULARGE_INTEGER`'s `QuadPart` (`u64`,
/// same size and 8-byte alignment). build/layout_gen.rs knows the two types' fields to compare
/// them with the WDK's.
macro_rules! index_word_union {
    ($union:ident, $parts:ident, $header:ident, $page:literal $(,)?) => {
        #[doc = concat!("The split view of [`", stringify!($union), "`] (anonymous struct in C).")]
        #[doc = ""]
        #[doc = concat!("<", $page, ">")]
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $parts {
            /// Index of the next entry the writer fills (low half of the 64-bit word).
            pub FirstFreeEntryIndex: u32,
            /// How many times the writer wrapped around to entry 0 (high half).
            pub WraparoundCount: u32,
        }
        $crate::macros::layout!(
            $parts,
            size = 8,
            FirstFreeEntryIndex = 0,
            WraparoundCount = 4
        );

        #[doc = concat!("The anonymous union at the start of [`", stringify!($header), "`]: the \
            write index and wraparound count, or both as one 64-bit word so the writer can \
            advance them in one atomic store and a reader can snapshot them consistently.")]
        #[doc = ""]
        #[doc = concat!("<", $page, ">")]
        #[repr(C)]
        #[derive(Clone, Copy)]
        pub union $union {
            /// Split view.
            pub Anonymous: $parts,
            /// Both halves as one word (`ULARGE_INTEGER::QuadPart`).
            pub AtomicWraparoundAndEntryIndex: u64,
        }
        // A union's fields all start at 0: its size is the one thing to assert.
        $crate::macros::layout!($union, size = 8);
        $crate::macros::c_marker!(Data: $parts, $union);

        impl $union {
            /// Builds the union from its two halves.
            pub const fn from_parts(first_free_entry_index: u32, wraparound_count: u32) -> Self {
                Self {
                    Anonymous: $parts {
                        FirstFreeEntryIndex: first_free_entry_index,
                        WraparoundCount: wraparound_count,
                    },
                }
            }

            /// Builds the union from the 64-bit word.
            pub const fn from_u64(value: u64) -> Self {
                Self {
                    AtomicWraparoundAndEntryIndex: value,
                }
            }

            /// The 64-bit word.
            pub const fn get(self) -> u64 {
                // SAFETY: both arms cover all 8 bytes with plain integers and have no padding,
                // so the union is always fully initialised and every bit pattern is a valid
                // u64.
                unsafe { self.AtomicWraparoundAndEntryIndex }
            }

            /// The split view (as C's overlay defines it).
            pub const fn parts(self) -> $parts {
                // SAFETY: as in `get`: fully initialised, every bit pattern valid for two u32.
                unsafe { self.Anonymous }
            }
        }

        impl Default for $union {
            fn default() -> Self {
                Self::from_u64(0)
            }
        }

        impl core::fmt::Debug for $union {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let p = self.parts();
                f.debug_struct(stringify!($union))
                    .field("FirstFreeEntryIndex", &p.FirstFreeEntryIndex)
                    .field("WraparoundCount", &p.WraparoundCount)
                    .finish()
            }
        }

        impl PartialEq for $union {
            fn eq(&self, other: &Self) -> bool {
                self.get() == other.get()
            }
        }

        impl Eq for $union {}
    };
}

pub(crate) use index_word_union;

/// Test helper: the declared bitfields start at bit 0, follow each other without gap or
/// overlap, none is empty, and together they cover `bits` bits.
#[cfg(test)]
pub(crate) fn check_fields(name: &str, bits: u32, fields: &[(&str, crate::basic::BitField)]) {
    let mut next = 0u32;
    for (field, f) in fields {
        assert_eq!(
            f.shift, next,
            "{name}::{field} does not follow its predecessor"
        );
        assert!(f.width > 0, "{name}::{field} has zero width");
        next += f.width;
    }
    assert_eq!(next, bits, "{name}: fields do not fill the word");
}

/// Test helper: [`check_fields`] over the whole word, for each listed `bitfield!` type.
#[cfg(test)]
macro_rules! assert_fields_fill_word {
    ($($ty:ty),* $(,)?) => {
        $(
            $crate::macros::check_fields(
                stringify!($ty),
                u32::try_from(::core::mem::size_of::<$ty>() * 8).unwrap(),
                <$ty>::FIELDS,
            );
        )*
    };
}

#[cfg(test)]
pub(crate) use assert_fields_fill_word;

#[cfg(test)]
mod tests {
    c_enum! {
        /// Sample.
        pub type SAMPLE = i32 {
            /// 0.
            SAMPLE_A,
            SAMPLE_B,
            SAMPLE_C = 0x10,
            SAMPLE_D,
        }

        /// A second enum in the same block starts again at 0.
        pub type OTHER = u32 {
            OTHER_A,
            OTHER_B = 7,
        }
    }

    #[test]
    fn c_enum_counts_on_from_the_last_explicit_value() {
        assert_eq!([SAMPLE_A, SAMPLE_B, SAMPLE_C, SAMPLE_D], [0, 1, 0x10, 0x11]);
        assert_eq!([OTHER_A, OTHER_B], [0, 7]);
        // Real lists: after a jump (33), across a comment (41), after a jump to 31 (37).
        assert_eq!(crate::adapter::DXGKQAITYPE_SCANOUT_CAPS, 33);
        assert_eq!(crate::adapter::DXGKQAITYPE_SCATTER_RESERVE, 41);
        assert_eq!(crate::feature::DXGK_FEATURE_NATIVE_FENCE, 37);
    }
}
