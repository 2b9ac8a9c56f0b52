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
//! [`AUDIT`] holds one [`Audit`] per DDI of the catalog (`crate::catalog::CATALOG`): the row
//! sets of the blocks 24H2 hands it ([`Cover::Blocks`]; one set per operation of a
//! multi-operation DDI where rvgpu implements several), or why it has none: a DDI that takes
//! only handles and scalars ([`Cover::NoBlock`]), one 24H2 never calls on rvgpu's adapter
//! ([`Cover::NotCalled`]), one the simulated OS calls only under the pages' reading
//! ([`Cover::PagesOnly`]), one 24H2 reaches only from paths the simulated OS refuses
//! ([`Cover::NotReached`]), one rvgpu's table leaves empty ([`Cover::Unfilled`]); a DDI whose
//! sets are still to be written is [`Cover::Pending`], on a list the coverage test holds.
//!
//! The simulated OS checks a block where it hands it over: its DDI caller looks the DDI's sets
//! up in [`AUDIT`] by the block's type ([`Audited::check`]) for every call made through its
//! argument-passing helpers; a call site that calls the driver otherwise, or hands a block
//! inside another (an allocation info, a paging operation), names the set itself.
//!
//! Adding a DDI: a `pub const` [`Ddi`] of its block's type built with `filled_row!` and
//! `zero_row!` rows, and its entry in [`AUDIT`].

use core::any::TypeId;

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

    /// Whether every field of `b` that 24H2 leaves zero is zero: [`Self::filled_zero`] finding
    /// none, as a loop that folds to the zero fields' own compares where `self` is a constant
    /// (the submission's audit runs it once per packet).
    #[inline(always)]
    pub fn zero_fields_clear(&self, b: &T) -> bool {
        let mut clear = true;
        for r in self.rows {
            if let Some(is_zero) = r.is_zero {
                clear &= is_zero(b);
            }
        }
        clear
    }

    /// The row of `field`.
    pub fn row(&self, field: &str) -> Option<&Row<T>> {
        self.rows.iter().find(|r| r.field == field)
    }
}

/// One row of a set, without its block's type.
#[derive(Clone, Copy, Debug)]
pub struct RowView {
    /// The field's name in the WDK header.
    pub field: &'static str,
    /// Whether rvgpu's KMD reads it.
    pub kmd_reads: bool,
    /// Who fills it.
    pub fill: Fill,
    /// Whether a block's field is checked to be zero.
    pub checks_zero: bool,
}

/// A row set seen without its block's type: what the coverage test reads and what the
/// simulated OS checks a DDI's argument against where it hands it over.
pub trait Audited: Sync {
    /// The DDI, with the operation for a multi-operation DDI ([`Ddi::name`]).
    fn name(&self) -> &'static str;
    /// The type name of the block the rows describe.
    fn block(&self) -> &'static str;
    /// Row `i`, `None` past the last.
    fn row(&self, i: usize) -> Option<RowView>;
    /// The type of the argument the DDI receives a pointer to, which [`Audited::check`] reads.
    fn arg_type(&self) -> TypeId;
    /// Checks the argument at `arg`: `false` when the set does not apply to it (another
    /// operation, another kind of queue); else calls `found` with each field 24H2 leaves zero
    /// that is not.
    ///
    /// # Safety
    ///
    /// `arg` points to a live, initialised value of the type [`Audited::arg_type`] names.
    unsafe fn check(&self, arg: *const (), found: &mut dyn FnMut(&'static str)) -> bool;
}

impl dyn Audited {
    /// [`Audited::check`] of block `arg`: `false` as well when the set reads a block of
    /// another type than `T`.
    pub fn check_block<T: 'static>(&self, arg: &T, found: &mut dyn FnMut(&'static str)) -> bool {
        if self.arg_type() != TypeId::of::<T>() {
            return false;
        }
        // SAFETY: `arg` is a live `T`, the type the set reads (checked above).
        unsafe { self.check((arg as *const T).cast(), found) }
    }
}

impl<T: 'static> Audited for Ddi<T> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn block(&self) -> &'static str {
        self.block
    }

    fn row(&self, i: usize) -> Option<RowView> {
        self.rows.get(i).map(|r| RowView {
            field: r.field,
            kmd_reads: r.kmd_reads,
            fill: r.fill,
            checks_zero: r.is_zero.is_some(),
        })
    }

    fn arg_type(&self) -> TypeId {
        TypeId::of::<T>()
    }

    unsafe fn check(&self, arg: *const (), found: &mut dyn FnMut(&'static str)) -> bool {
        // SAFETY: the caller's contract: `arg` points to a live `T`.
        let b = unsafe { &*arg.cast::<T>() };
        self.filled_zero(b).for_each(found);
        true
    }
}

impl core::fmt::Debug for dyn Audited {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A row set that applies to part of a DDI's argument, or to some of its calls: `of` picks
/// the block out of the argument (`None`: the set does not apply to this call).
pub struct Part<O: 'static, T: 'static> {
    /// The rows.
    pub set: &'static Ddi<T>,
    /// The block of an argument the rows describe, if they apply to it.
    pub of: fn(&O) -> Option<&T>,
}

impl<O: 'static, T: 'static> core::fmt::Debug for Part<O, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Part").field("set", &self.set.name).finish()
    }
}

impl<O: 'static, T: 'static> Audited for Part<O, T> {
    fn name(&self) -> &'static str {
        self.set.name
    }

    fn block(&self) -> &'static str {
        self.set.block
    }

    fn row(&self, i: usize) -> Option<RowView> {
        Audited::row(self.set, i)
    }

    fn arg_type(&self) -> TypeId {
        TypeId::of::<O>()
    }

    unsafe fn check(&self, arg: *const (), found: &mut dyn FnMut(&'static str)) -> bool {
        // SAFETY: the caller's contract: `arg` points to a live `O`.
        let o = unsafe { &*arg.cast::<O>() };
        match (self.of)(o) {
            Some(b) => {
                self.set.filled_zero(b).for_each(found);
                true
            }
            None => false,
        }
    }
}

/// What the audit holds for one DDI of the catalog.
#[derive(Clone, Copy, Debug)]
pub enum Cover {
    /// The blocks 24H2 hands it, one row set each (several for a multi-operation DDI).
    Blocks(&'static [&'static dyn Audited]),
    /// It takes only handles and scalars: `by` is the 24H2 function that calls it.
    NoBlock {
        /// The caller in 24H2 (`K:`/`M:` name @address).
        by: &'static str,
        /// What it passes.
        why: &'static str,
    },
    /// 24H2 never calls it on rvgpu's adapter, or the simulated OS does not: `by` is the
    /// 24H2 function (or the reference page) that says why.
    NotCalled {
        /// The source.
        by: &'static str,
        /// Why it is never called.
        why: &'static str,
    },
    /// 24H2 never calls it; the simulated OS calls it under the pages' reading only (under
    /// 24H2's, never: a test of a TDR workload holds it to that).
    PagesOnly {
        /// The 24H2 source that shows it is never called (`K:`/`M:` name @address).
        by: &'static str,
        /// The reference page that asks for the call.
        page: &'static str,
        /// What the page asks, and where the simulated OS follows it.
        why: &'static str,
    },
    /// 24H2 calls it on a render-only adapter only from paths the simulated OS refuses, so
    /// the simulated OS never hands it a block to check.
    NotReached {
        /// The 24H2 callers (`K:`/`M:` name @address).
        by: &'static str,
        /// The document that names the refused paths as gaps (a repository path with its
        /// anchor).
        gap: &'static str,
        /// Which paths reach it, and what they would hand it.
        why: &'static str,
    },
    /// rvgpu's table leaves the slot empty: nothing is handed over.
    Unfilled {
        /// Why rvgpu leaves it empty.
        why: &'static str,
    },
    /// Its row sets are not written yet: what 24H2 hands it. The coverage test holds the list
    /// of these, which may only shrink.
    Pending {
        /// The blocks and scalars it receives.
        what: &'static str,
    },
}

/// The audit of one DDI of the catalog.
#[derive(Clone, Copy, Debug)]
pub struct Audit {
    /// The catalog's name of the DDI (`crate::catalog::Ddi::name`).
    pub ddi: &'static str,
    /// What 24H2 hands it.
    pub cover: Cover,
}

/// The row sets of `ddi` (none for a DDI without blocks or not in the audit).
pub fn sets_of(ddi: &str) -> &'static [&'static dyn Audited] {
    match AUDIT.iter().find(|a| a.ddi == ddi).map(|a| a.cover) {
        Some(Cover::Blocks(sets)) => sets,
        _ => &[],
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
    crate::allocation::DXGK_DESTROYALLOCATIONFLAGS,
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

impl IsZero for u8 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl IsZero for u16 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl IsZero for i32 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl<const N: usize> IsZero for [u8; N] {
    fn is_zero(&self) -> bool {
        self.iter().all(|b| *b == 0)
    }
}

/// Plain structs whose default is all zero: zero when equal to it.
macro_rules! default_is_zero {
    ($($t:ty),*) => {$(
        impl IsZero for $t {
            fn is_zero(&self) -> bool {
                *self == <$t>::default()
            }
        }
    )*};
}

default_is_zero!(crate::submission::DXGK_CONTEXTINFO);

word_is_zero!(
    crate::fence::DXGKARG_SETNATIVEFENCELOGBUFFER_FLAGS,
    crate::fence::DXGKARG_CREATENATIVEFENCE_FLAGS,
    crate::fence::DXGK_OPENNATIVEFENCE_FLAGS,
    crate::fence::DXGK_CLOSENATIVEFENCE_FLAGS,
    crate::fence::DXGK_DESTROYNATIVEFENCE_FLAGS,
    crate::fence::DXGKARG_UPDATENATIVEFENCELOGS_FLAGS,
    crate::fence::DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS,
    crate::fence::DXGKARG_UPDATEMONITOREDVALUES_FLAGS,
    crate::submission::DXGKARG_DISCONNECTDOORBELL_FLAGS,
    crate::submission::DXGKARG_NOTIFYWORKSUBMISSION_FLAGS,
    crate::submission::DXGKARG_CONNECTDOORBELL_FLAGS,
    crate::tdr::DXGK_ENGINESTATUS,
    crate::tdr::DXGK_PREEMPTCOMMANDFLAGS,
    crate::adapter::DXGK_QUERYADAPTERINFOFLAGS
);

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
mod adapter;
mod allocation;
pub mod callbacks;
mod device;
mod escape;
mod feature;
mod fence;
mod hws;
mod index;
mod paging;
mod pnp;
mod process;
mod queue;
mod tdr;

pub use adapter::{CALIBRATE_GPU_CLOCK, QUERY_ADAPTER_INFO, QUERY_ADAPTER_INFO_UMD};
pub use device::{CREATE_CONTEXT, CREATE_DEVICE};
pub use escape::{BUILD_TEST_COMMAND_BUFFER, ESCAPE};
pub use feature::{QUERY_FEATURE_INTERFACE, QUERY_FEATURE_SUPPORT};
pub use fence::{
    CLOSE_NATIVE_FENCE, CREATE_NATIVE_FENCE, DESTROY_NATIVE_FENCE, OPEN_NATIVE_FENCE,
    SET_NATIVE_FENCE_LOG_BUFFER, SET_NATIVE_FENCE_LOG_BUFFER_RELEASE,
    UPDATE_CURRENT_VALUES_FROM_CPU, UPDATE_MONITORED_VALUES, UPDATE_NATIVE_FENCE_LOGS,
};
pub use hws::{
    RESUME_CONTEXT, SETUP_PRIORITY_BANDS, SET_CONTEXT_SCHEDULING_PROPERTIES,
    SET_SCHEDULING_LOG_BUFFER, SUSPEND_CONTEXT,
};
pub use index::AUDIT;
pub use tdr::{
    COLLECT_DBG_INFO2, PREEMPT_COMMAND, QUERY_DEPENDENT_ENGINE_GROUP, QUERY_ENGINE_STATUS,
    RESET_ENGINE, RESET_HW_ENGINE, RESUME_HW_ENGINE, SUBMIT_COMMAND, SUBMIT_COMMAND_VIRTUAL,
};

pub use allocation::{
    ALLOCATION_INFO, CLOSE_ALLOCATION, CREATE_ALLOCATION, DESTROY_ALLOCATION, OPEN_ALLOCATION,
    OPEN_ALLOCATION_INFO,
};
pub use paging::{
    FILL, FLUSH_TLB, MAP_APERTURE_SEGMENT, TRANSFER, UNMAP_APERTURE_SEGMENT, UPDATE_PAGE_TABLE,
    UPDATE_PAGE_TABLE_INVALIDATE,
};
pub use pnp::{QUERY_CHILD_RELATIONS, QUERY_INTERFACE_SET, START_DEVICE};
pub use process::{CREATE_PROCESS, GET_ROOT_PAGE_TABLE_SIZE, SET_ROOT_PAGE_TABLE};
pub use queue::{
    CONNECT_DOORBELL, CREATE_DOORBELL, CREATE_HWQUEUE, CREATE_HWQUEUE_USER_MODE, DESTROY_DOORBELL,
    DISCONNECT_DOORBELL, NOTIFY_WORK_SUBMISSION, SUBMIT_COMMAND_TO_HWQUEUE,
};

#[cfg(test)]
mod tests;
