//! What a thunk's catalog row is made of: its types, the `refusals!` macro that declares
//! its checks beside the kernel entry, and the statuses rows name. The index of rows is
//! [`super::catalog`]; this module is below every entry, so the entries and the index do not
//! import each other.

use rvgpu_ddi::ntstatus;

/// Declares a thunk's refusals once, in 24H2's order: an enum with one variant per check,
/// through which the entry refuses (`Enum::Variant.refuse()`), and the row's `checks` slice.
/// A check the entry does not make itself carries `elsewhere why` (made by the simulated
/// kernel beneath the entry, or not modelled): only those may go unconstructed. `why` is a
/// string literal, or a macro call that makes one where rows share a reason. The slice takes
/// the visibility written before its name (private if none), for a row declared in another
/// module than its checks.
macro_rules! refusals {
    (
        $(#[$m:meta])*
        $E:ident => $vis:vis $ARR:ident {
            $($V:ident: $what:expr => $status:expr $(, elsewhere $why:expr)?;)+
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $E {
            $(
                #[doc = $what]
                $(#[doc = ""] #[doc = $why] #[allow(dead_code)])?
                $V,
            )+
        }

        impl $E {
            /// The row's check.
            #[allow(dead_code)]
            pub(crate) const fn check(self) -> $crate::kmt::refusal::Check {
                match self {
                    $(Self::$V => $crate::kmt::refusal::check($what, $status),)+
                }
            }

            /// The refusal: the status 24H2 answers the check with.
            #[allow(dead_code)]
            pub(crate) fn refuse(self) -> rvgpu_umd::kmt::NtStatus {
                rvgpu_umd::kmt::NtStatus(self.check().status as i32)
            }
        }

        /// The row's checks, in 24H2's order.
        $vis const $ARR: &[$crate::kmt::refusal::Check] =
            &[$($crate::kmt::refusal::check($what, $status),)+];
    };
}
pub(crate) use refusals;

/// A refusal the simulation makes where 24H2 would not (its row's `gaps` says which): kept
/// apart from the row's checks so every other refusal of an entry is one of them.
pub(crate) fn gap(status: i32) -> rvgpu_umd::kmt::NtStatus {
    rvgpu_umd::kmt::NtStatus(status)
}

/// What a row beside its kernel entry writes with: the row's types, its constructors and the
/// statuses it names.
pub(crate) mod row {
    pub(crate) use crate::kmt::refusal::{
        gap, refusals, src, Pending, Thunk, ACCESS_DENIED, ACCESS_VIOLATION, BUFFER_TOO_SMALL,
        DATATYPE_MISALIGNMENT, DEVICE_REMOVED, GPU_EXCEPTION_ON_DEVICE,
        GRAPHICS_INVALID_DISPLAY_ADAPTER, INVALID_HANDLE, INVALID_PARAMETER, NOT_FOUND,
        NOT_SUPPORTED, NO_MEMORY, OBJECT_NAME_INVALID, OBJECT_TYPE_MISMATCH, UNSUCCESSFUL,
    };
}

// The statuses the rows name, as the catalog's `u32` words; the values are ntstatus.h's
// (`rvgpu_ddi::ntstatus`).
pub(crate) const INVALID_PARAMETER: u32 = ntstatus::STATUS_INVALID_PARAMETER as u32;
pub(crate) const UNSUCCESSFUL: u32 = ntstatus::STATUS_UNSUCCESSFUL as u32;
pub(crate) const NOT_SUPPORTED: u32 = ntstatus::STATUS_NOT_SUPPORTED as u32;
pub(crate) const ACCESS_VIOLATION: u32 = ntstatus::STATUS_ACCESS_VIOLATION as u32;
pub(crate) const NO_MEMORY: u32 = ntstatus::STATUS_NO_MEMORY as u32;
pub(crate) const ACCESS_DENIED: u32 = ntstatus::STATUS_ACCESS_DENIED as u32;
pub(crate) const INVALID_HANDLE: u32 = ntstatus::STATUS_INVALID_HANDLE as u32;
pub(crate) const OBJECT_TYPE_MISMATCH: u32 = ntstatus::STATUS_OBJECT_TYPE_MISMATCH as u32;
pub(crate) const DEVICE_REMOVED: u32 = ntstatus::STATUS_DEVICE_REMOVED as u32;
pub(crate) const BUFFER_TOO_SMALL: u32 = ntstatus::STATUS_BUFFER_TOO_SMALL as u32;
pub(crate) const DATATYPE_MISALIGNMENT: u32 = ntstatus::STATUS_DATATYPE_MISALIGNMENT as u32;
pub(crate) const OBJECT_NAME_INVALID: u32 = ntstatus::STATUS_OBJECT_NAME_INVALID as u32;
pub(crate) const GPU_EXCEPTION_ON_DEVICE: u32 =
    ntstatus::STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE as u32;
pub(crate) const NOT_FOUND: u32 = ntstatus::STATUS_NOT_FOUND as u32;
/// 24H2's answer to a BDD_PNP escape on an adapter that is not the basic display driver's:
/// ntstatus.h names 0xC01E0002 `STATUS_GRAPHICS_INVALID_DISPLAY_ADAPTER`.
pub(crate) const GRAPHICS_INVALID_DISPLAY_ADAPTER: u32 =
    ntstatus::STATUS_GRAPHICS_INVALID_DISPLAY_ADAPTER as u32;

/// A function of the decompiled 24H2 kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// Its name, as the pseudocode names it.
    pub function: &'static str,
    /// Its address.
    pub address: u64,
}

/// One refusal: what the caller passed, and the status 24H2 answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// The condition, in the structure's field names.
    pub what: &'static str,
    /// The NTSTATUS.
    pub status: u32,
}

/// Whether 24H2 answers STATUS_PENDING.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    /// Never.
    No,
    /// When the reason holds.
    When(&'static str),
    /// Not read.
    Unknown,
}

/// One thunk.
#[derive(Clone, Copy, Debug)]
pub struct Thunk {
    /// The gdi32 export, `D3DKMT…`.
    pub name: &'static str,
    /// The 24H2 function it enters, with the one its checks continue in, if any.
    pub source: Option<&'static [Source]>,
    /// 24H2's refusals, in order (empty for an unread thunk).
    pub checks: &'static [Check],
    /// The fields 24H2 writes back on success.
    pub written_back: &'static [&'static str],
    /// STATUS_PENDING.
    pub pending: Pending,
    /// The simulated kernel's entry, `crate::kmt::…`, where it has one of its own.
    pub entry: Option<&'static str>,
    /// What the simulation still answers otherwise than 24H2 (empty: nothing known).
    pub gaps: &'static str,
}

pub(crate) const fn check(what: &'static str, status: u32) -> Check {
    Check { what, status }
}

pub(crate) const fn src(function: &'static str, address: u64) -> Source {
    Source { function, address }
}
