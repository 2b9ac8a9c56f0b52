//! `wire_struct!`: a `#[repr(C)]` structure that travels as bytes (device memory, event
//! records, private driver data), with its layout stated next to its declaration.
//!
//! ```text
//! wire_struct! {
//!     /// docs
//!     #[size(16)]
//!     pub struct Name {
//!         /// docs
//!         pub a: u64,
//!         #[offset(8)]
//!         pub b: u64,
//!     }
//! }
//! ```
//!
//! declares `#[repr(C)] pub struct Name { .. }` deriving `Clone`, `Copy`, `Debug`, `Default`,
//! `PartialEq`, `Eq` and the zerocopy traits (`FromBytes`, `IntoBytes`, `Immutable`,
//! `KnownLayout`), and asserts at compile time that it is `#[size(..)]` bytes and that each
//! field marked `#[offset(..)]` starts there.

macro_rules! wire_struct {
    (
        $(#[doc = $doc:literal])*
        #[size($size:expr)]
        pub struct $name:ident {
            $(
                $(#[doc = $fdoc:literal])*
                $(#[offset($off:expr)])?
                $vis:vis $field:ident : $fty:ty,
            )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(
            Clone,
            Copy,
            Debug,
            Default,
            PartialEq,
            Eq,
            ::zerocopy::FromBytes,
            ::zerocopy::IntoBytes,
            ::zerocopy::Immutable,
            ::zerocopy::KnownLayout,
        )]
        #[repr(C)]
        pub struct $name {
            $( $(#[doc = $fdoc])* $vis $field: $fty, )*
        }

        const _: () = assert!(core::mem::size_of::<$name>() == $size);
        $($( const _: () = assert!(core::mem::offset_of!($name, $field) == $off); )?)*
    };
}
