//! The hand-over audit: for each argument block the simulated OS hands the driver, one row per
//! field, saying which function of Windows 11 24H2 fills it and how, or that 24H2 leaves it
//! zero (decompiled `11-24H2` of `nohuto/decompiled-pseudocode`; K: dxgkrnl, M: dxgmms2,
//! cited `K:Function @0xADDR`).
//!
//! Under the 24H2 reading the simulated OS fills exactly what 24H2 fills: it checks every block
//! of an audited DDI against [`Ddi::filled_zero`] as it hands it over, and its tests fail when
//! a field marked [`Fill::Zero`] arrives non-zero. A field filled only in some cases is
//! [`Fill::Filled`] with the cases in its text.
//!
//! Audited: `DxgkDdiCreateProcess`, `DxgkDdiSetRootPageTable`; UPDATEPAGETABLE, maps and
//! invalidations apart; FLUSHTLB;
//! `DxgkDdiCreateAllocation` (device allocations) and its `DXGK_ALLOCATIONINFO` inputs;
//! `DxgkDdiCreateHwQueue`, kernel-mode and user-mode queues apart; `DxgkDdiCreateDoorbell`;
//! `DxgkDdiOpenAllocation` (the creating device's open) and its `DXGK_OPENALLOCATIONINFO`;
//! `DxgkDdiSubmitCommandToHwQueue` of a kernel-mode queue's buffers.
//!
//! Adding a DDI: a `pub const` [`Ddi`] of its block's type built with `filled_row!` and
//! `zero_row!` rows, and a call of the simulated OS's recorder where it hands the block over.

use crate::submission::DXGKARG_CREATEHWQUEUE_0;

/// Who fills a field, in 24H2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// 24H2 fills it: the function that does (`K:`/`M:` name @address) and how.
    Filled {
        /// The function.
        by: &'static str,
        /// What it writes, and when.
        how: &'static str,
    },
    /// 24H2 leaves it zero: the function that zeroes the block, and why nothing writes it.
    Zero {
        /// The function.
        by: &'static str,
        /// Why the field stays zero.
        why: &'static str,
    },
}

/// One field of an argument block.
#[derive(Clone, Copy, Debug)]
pub struct Row<T> {
    /// The field's name in the WDK header.
    pub field: &'static str,
    /// Whether rvgpu's KMD reads it.
    pub kmd_reads: bool,
    /// Who fills it.
    pub fill: Fill,
    /// Whether the field of a block is zero (for [`Fill::Zero`] rows).
    pub is_zero: Option<fn(&T) -> bool>,
}

/// The rows of one DDI's argument block.
#[derive(Clone, Copy, Debug)]
pub struct Ddi<T: 'static> {
    /// The DDI (`DxgkDdiXxx`), with the operation for a multi-operation DDI.
    pub name: &'static str,
    /// The block's type name in the WDK header.
    pub block: &'static str,
    /// Its fields.
    pub rows: &'static [Row<T>],
}

impl<T> Ddi<T> {
    /// The fields of `b` that 24H2 leaves zero but that are not.
    pub fn filled_zero<'a>(&'a self, b: &'a T) -> impl Iterator<Item = &'static str> + 'a {
        self.rows
            .iter()
            .filter(move |r| r.is_zero.is_some_and(|z| !z(b)))
            .map(|r| r.field)
    }

    /// The row of `field`.
    pub fn row(&self, field: &str) -> Option<&Row<T>> {
        self.rows.iter().find(|r| r.field == field)
    }
}

/// A value that is all zero bits, or not.
pub trait IsZero {
    /// Whether it is zero.
    fn is_zero(&self) -> bool;
}

impl IsZero for u32 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl IsZero for u64 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

/// Bit-field words: zero when their `Value` is.
macro_rules! word_is_zero {
    ($($t:ty),*) => {$(
        impl IsZero for $t {
            fn is_zero(&self) -> bool {
                self.Value == 0
            }
        }
    )*};
}

word_is_zero!(
    crate::allocation::DXGK_CREATEALLOCATIONFLAGS,
    crate::allocation::DXGK_SEGMENTBANKPREFERENCE,
    crate::allocation::DXGK_SEGMENTPREFERENCE,
    crate::allocation::DXGK_ALLOCATIONINFOFLAGS2
);

impl IsZero for crate::allocation::DXGK_ALLOCATIONINFO_0 {
    fn is_zero(&self) -> bool {
        // SAFETY: both arms are the same plain u32.
        (unsafe { self.PhysicalAdapterIndex }) == 0
    }
}

impl IsZero for crate::allocation::DXGK_ALLOCATIONINFO_1 {
    fn is_zero(&self) -> bool {
        // SAFETY: both arms are the same plain u32 flag word; any bit pattern is valid.
        unsafe { self.FlagsWddm2 }.Value == 0
    }
}

impl IsZero for DXGKARG_CREATEHWQUEUE_0 {
    fn is_zero(&self) -> bool {
        // SAFETY: both arms are plain data and the pointer-sized arm covers every byte of the
        // union, so any bit pattern read is a valid value.
        unsafe { self.hHwQueueNativeProgressFence }.is_null()
    }
}

impl IsZero for usize {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl<T> IsZero for *mut T {
    fn is_zero(&self) -> bool {
        self.is_null()
    }
}

/// A row 24H2 fills: `filled_row!(Block.Field, reads, "K:Function @0x…", "how")`.
#[macro_export]
macro_rules! filled_row {
    ($t:ident . $f:ident, $reads:expr, $by:expr, $how:expr) => {{
        // The field exists in the block.
        let _ = core::mem::offset_of!($t, $f);
        $crate::handover::Row::<$t> {
            field: stringify!($f),
            kmd_reads: $reads,
            fill: $crate::handover::Fill::Filled { by: $by, how: $how },
            is_zero: None,
        }
    }};
}

/// A row 24H2 leaves zero: `zero_row!(Block.Field, reads, "K:Function @0x…", "why")`.
#[macro_export]
macro_rules! zero_row {
    ($t:ident . $f:ident, $reads:expr, $by:expr, $why:expr) => {
        $crate::handover::Row::<$t> {
            field: stringify!($f),
            kmd_reads: $reads,
            fill: $crate::handover::Fill::Zero { by: $by, why: $why },
            is_zero: Some(|b: &$t| $crate::handover::IsZero::is_zero(&b.$f)),
        }
    };
}

// The audited blocks, by concept (after the macros, which they use).
mod allocation;
mod paging;
mod process;
mod queue;
pub mod callbacks;

pub use allocation::{ALLOCATION_INFO, CREATE_ALLOCATION, OPEN_ALLOCATION, OPEN_ALLOCATION_INFO};
pub use paging::{FLUSH_TLB, UPDATE_PAGE_TABLE, UPDATE_PAGE_TABLE_INVALIDATE};
pub use process::{CREATE_PROCESS, SET_ROOT_PAGE_TABLE};
pub use queue::{
    CREATE_DOORBELL, CREATE_HWQUEUE, CREATE_HWQUEUE_USER_MODE, SUBMIT_COMMAND_TO_HWQUEUE,
};

#[cfg(test)]
mod tests;
