//! `wire_enum!`: a C-like enum whose values travel in a register, an event record or a memory
//! structure, with its decoder. Each variant's value is written once; the decoder is generated
//! from the same list, so the two cannot drift apart.
//!
//! ```text
//! wire_enum! {
//!     /// docs
//!     pub enum Name: u32, from_u32 {
//!         /// docs
//!         A = 0,
//!         B = 1,
//!     }
//! }
//! ```
//!
//! declares `#[repr(u32)] pub enum Name { A = 0, B = 1 }`, deriving `Clone`, `Copy`, `Debug`,
//! `PartialEq` and `Eq` (further attributes pass through), and `Name::from_u32(v) ->
//! Option<Name>`, `None` for a value no variant has.

macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $repr:ident, $from:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr($repr)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $value, )*
        }

        impl $name {
            /// Decodes the wire value: `None` for a value no variant has.
            pub const fn $from(v: $repr) -> Option<Self> {
                match v {
                    $( $value => Some(Self::$variant), )*
                    _ => None,
                }
            }
        }
    };
}
