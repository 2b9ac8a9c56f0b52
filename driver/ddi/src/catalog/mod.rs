//! The DDI catalog: one row per DDI the project states a fact about, holding every fact of that
//! DDI in one place:
//!
//! - **member and type**: the `DRIVER_INITIALIZATION_DATA` member (or the member of the
//!   interface the DDI is handed out in) and its function-pointer type, checked against the
//!   struct when the crate compiles;
//! - **page**: the Microsoft reference page (appended to [`MS`]);
//! - **IRQL**: the levels Windows calls the DDI at (the "IRQL" line of the page's Requirements
//!   table unless the comment above the row says where the rule comes from); `None` for a DDI
//!   the simulated OS never calls;
//! - **wrapper**: whether Windows calls it through one of Dxgkrnl's IRQL-comparing `Ddi*`
//!   wrappers ([`Wrapper`]);
//! - **slot rule**: the start-up rule of Windows that requires the slot ([`Slot`]), and the
//!   capability of the driver that obliges it ([`Group`]);
//! - **statuses**: the statuses the wrapper accepts; another one goes to the adapter's triage
//!   log ([`Statuses`]);
//! - **class**: whether a render-only WDDM 3.2 adapter with hardware scheduling, native fences
//!   and user-mode submission must fill the slot ([`Class`]), with the reason and its source,
//!   and the two cells docs/ddi-status.md shows for it;
//! - **NULL arguments**: what rvgpu's slot answers when called with a NULL context and NULL
//!   argument pointers ([`OnNull`]).
//!
//! The simulated OS's rule table (simos `adapter::rules`) takes its DDI rows from here; the
//! DDI-table tests, the robustness tests and docs/ddi-status.md are checked against it.
//! "\[D\]" cites a decompiled Windows function (docs/windows-bringup.md), "\[D24\]" one of the
//! 24H2 build.

use crate::basic::NTSTATUS;

/// The prefix of every [`Ddi::page`](field@Ddi::page).
pub const MS: &str = "https://learn.microsoft.com/windows-hardware/drivers/ddi/";

/// `STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST` is the one failure status Dxgkrnl's
/// `DdiSetPowerComponentFState` wrapper accepts besides success; `STATUS_BUFFER_OVERFLOW` is a
/// warning, not `NT_SUCCESS`.
pub use crate::ntstatus::{STATUS_BUFFER_OVERFLOW, STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST};

/// An interrupt request level as the reference pages name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `PASSIVE_LEVEL`.
    Passive,
    /// `DISPATCH_LEVEL`.
    Dispatch,
    /// A device IRQL (DIRQL).
    Device,
}

/// The levels a DDI may be called at, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqlRange {
    /// Lowest allowed level.
    pub min: Level,
    /// Highest allowed level.
    pub max: Level,
}

/// How Windows wraps a DDI call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapper {
    /// Through one of Dxgkrnl's `DXGADAPTER` / `ADAPTER_RENDER` `Ddi*` wrappers, which compare
    /// the IRQL before and after the call and write a Critical watchdog record 0x113 / 0x10 on a
    /// mismatch (BR-24, docs/windows-bringup.md §15 Q10). Each DDI marked so has such a wrapper
    /// in the 22631 pseudocode (\[D\]: 165 wrappers carry `WdLogSingleEntry5(0, 0x113, 0x10, …)`,
    /// among them `DdiQueryAdapterInfo`, `DdiCreateHwQueue`, `DdiBuildPagingBuffer`,
    /// `DdiCreateProcess`), `DxgkDdiCreateNativeFence` in the WDDM 3.2 builds (\[D24\]
    /// `ADAPTER_RENDER::DdiCreateNativeFence` @ 0x140425BF0).
    IrqlChecked,
    /// No IRQL comparison known: the PnP-layer wrappers (`DpiDxgkDdiAddDevice`,
    /// `DpiDxgkDdiStartDevice`, … `DpiDxgkDdiUnload`, `DpiDxgkDdiQueryInterface`) have none,
    /// DDIs not confirmed in either are left here, and callbacks have no DDI wrapper.
    Unchecked,
}

/// The start-up rule of Windows that requires a slot of the driver's table
/// (docs/windows-bringup.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// No list rule names the slot.
    None,
    /// BR-02 (\[D\] `DpiInitializeInternal`): `DxgkInitialize` requires it.
    Load,
    /// BR-02: `DxgkInitialize` requires one of the slots so marked.
    LoadOneOf,
    /// BR-56 (\[D\] `CreateRenderCore`): one of the DDIs whose presence makes a render core.
    RenderCore,
    /// BR-73: a node with user-mode submission needs it.
    Doorbell,
}

/// The capability whose advertisement obliges the DDI: rvgpu advertises it only when its table
/// fills every DDI of the group (the KMD's `ddi_groups::Filled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// No capability obliges it.
    None,
    /// Native fences (`DXGK_NATIVE_FENCE_CAPS`, NF-10/NF-12).
    NativeFence,
    /// Native fence logs, which native fences oblige (LOG-09).
    FenceLogs,
    /// `SupportPerEngineTDR` (TDR-01).
    PerEngineTdr,
    /// Hardware scheduling: the DDIs the OS calls on a hardware-scheduled node.
    Hws,
}

/// The statuses a DDI's wrapper accepts, and the rule that says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statuses {
    /// The rule (`BR-nn`).
    pub rule: &'static str,
    /// The accepted statuses; another is logged to the triage log (not refused).
    pub allowed: &'static [NTSTATUS],
}

/// Whether a render-only WDDM 3.2 adapter with hardware scheduling, native fences and user-mode
/// submission must fill the slot (tests/ddi_table.rs, docs/ddi-status.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// No decision recorded (a DDI catalogued for its other facts).
    Unclassified,
    /// Must be filled.
    Mandatory,
    /// Not mandatory, filled by rvgpu.
    Optional,
    /// Considered and left out of the mandatory list.
    LeftOut,
}

/// What rvgpu's slot answers when called with a NULL context and NULL argument pointers
/// (tests/ddi_robustness.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnNull {
    /// Not stated (a slot rvgpu leaves empty, or one whose robustness case passes a live
    /// context).
    Unstated,
    /// Fails with this status.
    Fails(NTSTATUS),
    /// Returns nothing (a void DDI), without touching anything.
    Returns,
    /// The ISR: returns FALSE (not the device's interrupt).
    NotClaimed,
    /// Returns 0 (a DDI that returns a size).
    Zero,
}

/// Every fact of one DDI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ddi {
    /// The Microsoft name: the `DRIVER_INITIALIZATION_DATA` member's name for a slot, the
    /// name Windows' documentation uses for an interface's function otherwise.
    pub name: &'static str,
    /// The table the DDI is handed to Windows in (`DRIVER_INITIALIZATION_DATA`, or the
    /// interface returned by `DxgkDdiQueryInterface` / `DxgkDdiQueryFeatureInterface`).
    pub table: &'static str,
    /// The member of [`Ddi::table`].
    pub member: &'static str,
    /// The member's type (the header's typedef).
    pub ty: &'static str,
    /// The Microsoft reference page, appended to [`MS`].
    pub page: &'static str,
    /// The levels Windows calls the DDI at; `None` for a DDI the simulated OS never calls.
    pub irql: Option<IrqlRange>,
    /// How Windows wraps the call.
    pub wrapper: Wrapper,
    /// The start-up rule of Windows that requires the slot.
    pub slot: Slot,
    /// The capability that obliges the DDI.
    pub group: Group,
    /// The statuses the wrapper accepts (`None`: all).
    pub statuses: Option<Statuses>,
    /// The class of the slot.
    pub class: Class,
    /// Why the slot is in its class, with the source that says so where that is not
    /// [`Ddi::page`](field@Ddi::page).
    pub reason: &'static str,
    /// The cells docs/ddi-status.md shows after the slot's name: requirements and source for a
    /// mandatory slot, what rvgpu does and why for an optional one, why not for one left out.
    pub doc: (&'static str, &'static str),
    /// What rvgpu's slot answers to NULL arguments.
    pub on_null: OnNull,
}

/// `P`, `D`, `DIRQL`: the levels, short, for the rows.
const P: Level = Level::Passive;
const D: Level = Level::Dispatch;
const DIRQL: Level = Level::Device;

impl Ddi {
    /// A row with nothing stated but its table, member and type (use [`ddi!`]).
    const fn new(
        name: &'static str,
        table: &'static str,
        member: &'static str,
        ty: &'static str,
    ) -> Self {
        Self {
            name,
            table,
            member,
            ty,
            page: "",
            irql: None,
            wrapper: Wrapper::Unchecked,
            slot: Slot::None,
            group: Group::None,
            statuses: None,
            class: Class::Unclassified,
            reason: "",
            doc: ("", ""),
            on_null: OnNull::Unstated,
        }
    }

    /// Its reference page, for a DDI the simulated OS never calls.
    const fn page(self, page: &'static str) -> Self {
        Self { page, ..self }
    }

    /// Its reference page and the levels Windows calls it at.
    const fn at(self, min: Level, max: Level, page: &'static str) -> Self {
        Self {
            page,
            irql: Some(IrqlRange { min, max }),
            ..self
        }
    }

    const fn ddi_wrapper(self) -> Self {
        Self {
            wrapper: Wrapper::IrqlChecked,
            ..self
        }
    }

    const fn slot(self, slot: Slot) -> Self {
        Self { slot, ..self }
    }

    const fn group(self, group: Group) -> Self {
        Self { group, ..self }
    }

    const fn statuses(self, rule: &'static str, allowed: &'static [NTSTATUS]) -> Self {
        Self {
            statuses: Some(Statuses { rule, allowed }),
            ..self
        }
    }

    const fn class(self, class: Class, reason: &'static str) -> Self {
        Self {
            class,
            reason,
            ..self
        }
    }

    const fn mandatory(self, reason: &'static str) -> Self {
        self.class(Class::Mandatory, reason)
    }

    const fn optional(self, reason: &'static str) -> Self {
        self.class(Class::Optional, reason)
    }

    const fn left_out(self, reason: &'static str) -> Self {
        self.class(Class::LeftOut, reason)
    }

    const fn doc(self, first: &'static str, second: &'static str) -> Self {
        Self {
            doc: (first, second),
            ..self
        }
    }

    const fn on_null(self, on_null: OnNull) -> Self {
        Self { on_null, ..self }
    }

    /// Whether the DDI is a slot of `DRIVER_INITIALIZATION_DATA`.
    pub const fn is_slot(&self) -> bool {
        str_eq(self.table, "DRIVER_INITIALIZATION_DATA")
    }
}

/// A row for slot `$name: $ty` of `DRIVER_INITIALIZATION_DATA`, or for `$name` handed out as
/// `$table.$member: $ty`; a member that does not exist or has another type does not compile.
macro_rules! ddi {
    ($name:ident : $ty:ty) => {{
        const _: fn(&$crate::init::DRIVER_INITIALIZATION_DATA) -> &$ty = |t| &t.$name;
        Ddi::new(
            stringify!($name),
            "DRIVER_INITIALIZATION_DATA",
            stringify!($name),
            stringify!($ty),
        )
    }};
    ($name:ident = $table:ident . $member:ident : $ty:ty) => {{
        const _: fn(&$table) -> &$ty = |t| &t.$member;
        Ddi::new(
            stringify!($name),
            stringify!($table),
            stringify!($member),
            stringify!($ty),
        )
    }};
}

mod rows;

pub use rows::CATALOG;

/// `a == b`, in a constant (`str`'s `==` is not `const`).
pub const fn str_eq(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a, b) {
            ([], []) => return true,
            ([x, rest_a @ ..], [y, rest_b @ ..]) if *x == *y => (a, b) = (rest_a, rest_b),
            _ => return false,
        }
    }
}

/// The row of `rows` called `name`, in a constant.
const fn find_in(rows: &'static [Ddi], name: &str) -> Option<&'static Ddi> {
    let mut rest = rows;
    while let [d, tail @ ..] = rest {
        if str_eq(d.name, name) {
            return Some(d);
        }
        rest = tail;
    }
    None
}

/// The row of the DDI called `name`, in a constant.
pub const fn find(name: &str) -> Option<&'static Ddi> {
    find_in(CATALOG, name)
}

/// The rows of `class`, in catalog order.
pub fn of_class(class: Class) -> impl Iterator<Item = &'static Ddi> {
    CATALOG.iter().filter(move |d| d.class == class)
}

/// The rows `group` obliges, in catalog order.
pub fn of_group(group: Group) -> impl Iterator<Item = &'static Ddi> {
    CATALOG.iter().filter(move |d| d.group == group)
}

/// Names are unique (checked when the crate compiles, so [`find`] finds the one row).
const _: () = {
    let mut rest = CATALOG;
    while let [d, tail @ ..] = rest {
        assert!(find_in(tail, d.name).is_none());
        rest = tail;
    }
};

#[cfg(test)]
mod tests;
