//! The hand-over audit in the other direction: for each Dxgkrnl callback rvgpu's KMD calls
//! (`DxgkCbXxx` of `DXGKRNL_INTERFACE`), what Windows 11 24H2 does with each argument, at
//! which IRQL it expects the call and what it does otherwise, when it bug-checks, and what it
//! returns (decompiled `11-24H2` of `nohuto/decompiled-pseudocode`; K: dxgkrnl, M: dxgmms2,
//! cited `K:Function @0xADDR`).
//!
//! `DxgkCbNotifyInterrupt` has one [`Callback`] for its entry and one per interrupt type the KMD
//! reports ([`Callback::case`]): 24H2 dispatches on `InterruptType` and reads a different arm
//! of the union for each.
//!
//! The simulated OS's callbacks check what these rows say 24H2 checks; the tests of this
//! module fail when a callback the KMD names, or an interrupt type it reports, has no rows.

mod device;
mod interrupt;
mod memory;
mod power;

#[cfg(test)]
mod tests;

/// A bug check: code and, for Dxgkrnl's and VidSch's own codes, the subcode (parameter 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop {
    /// The bug-check code (0x113 `VIDEO_DXGKRNL_FATAL_ERROR`, 0x119
    /// `VIDEO_SCHEDULER_INTERNAL_ERROR`, ...).
    pub code: u32,
    /// Parameter 1, where it names the failed check.
    pub subcode: u64,
}

/// What 24H2 does when a callback is called at an IRQL it does not expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Otherwise {
    /// Nothing looks at the IRQL.
    Unchecked,
    /// A log or triage entry; the call goes on.
    Logged,
    /// The call fails with this status.
    Fails(i32),
    /// A bug check, with the condition beyond the IRQL (empty when none).
    BugCheck(Stop, &'static str),
}

/// The IRQL rule of a callback.
#[derive(Clone, Copy, Debug)]
pub struct Irql {
    /// The level 24H2 expects (as its check or its assertion states it; where it states none,
    /// the level of Microsoft's page).
    pub expects: &'static str,
    /// What it does at another level.
    pub otherwise: Otherwise,
}

/// One argument (a parameter, or a field of the argument block) and what 24H2 does with it.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The parameter or field name of the WDK header.
    pub arg: &'static str,
    /// What 24H2 reads from it, whose object it follows, and what it refuses.
    pub does: &'static str,
    /// The bug check this argument can cause, and when.
    pub stop: Option<(Stop, &'static str)>,
}

/// How rvgpu's KMD uses a callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// It calls it (reads the slot of `DXGKRNL_INTERFACE`).
    Calls,
    /// It names it (a design note) but never calls it.
    Names,
}

/// One callback, or one interrupt type of `DxgkCbNotifyInterrupt`.
#[derive(Clone, Copy, Debug)]
pub struct Callback {
    /// The slot name in `DXGKRNL_INTERFACE`.
    pub name: &'static str,
    /// For `DxgkCbNotifyInterrupt`, the `DXGK_INTERRUPT_TYPE` of these rows (`None`: the
    /// entry common to every type).
    pub case: Option<&'static str>,
    /// The 24H2 function(s) that implement it: `K:Fn @0x…` (`M:` for dxgmms2).
    pub by: &'static str,
    /// The IRQL it expects.
    pub irql: Irql,
    /// Locks it takes (empty: none the caller can observe).
    pub locks: &'static str,
    /// Its arguments.
    pub rows: &'static [Row],
    /// What it returns.
    pub returns: &'static str,
    /// How the KMD uses it.
    pub kmd: Use,
}

/// `VIDEO_DXGKRNL_FATAL_ERROR` with subcode `sub`.
pub const fn dxgkrnl_fatal(sub: u64) -> Stop {
    Stop {
        code: 0x113,
        subcode: sub,
    }
}

/// `VIDEO_SCHEDULER_INTERNAL_ERROR` with subcode `sub`.
pub const fn scheduler_error(sub: u64) -> Stop {
    Stop {
        code: 0x119,
        subcode: sub,
    }
}

/// The name of field `F` of block `T`, checked to exist: `field!(T.F)`.
macro_rules! field {
    ($t:ident . $f:ident) => {{
        let _ = core::mem::offset_of!($t, $f);
        stringify!($f)
    }};
}
use field;

/// A row: `row!(arg, "does")` or `row!(arg, "does", stop, "when")`.
macro_rules! row {
    ($arg:expr, $does:expr) => {
        $crate::handover::callbacks::Row {
            arg: $arg,
            does: $does,
            stop: None,
        }
    };
    ($arg:expr, $does:expr, $stop:expr, $when:expr) => {
        $crate::handover::callbacks::Row {
            arg: $arg,
            does: $does,
            stop: Some(($stop, $when)),
        }
    };
}
use row;

/// Every callback the audit covers, by concept.
pub const CALLBACKS: &[&[Callback]] = &[
    device::DEVICE,
    memory::MEMORY,
    interrupt::INTERRUPT,
    power::POWER,
];

/// Every [`Callback`] of [`CALLBACKS`].
pub fn callbacks() -> impl Iterator<Item = &'static Callback> {
    CALLBACKS.iter().flat_map(|c| c.iter())
}

/// The rows of callback `name` (for `DxgkCbNotifyInterrupt`, of interrupt type `case`).
pub fn callback(name: &str, case: Option<&str>) -> Option<&'static Callback> {
    callbacks().find(|c| c.name == name && c.case == case)
}
