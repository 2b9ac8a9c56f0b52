//! A start-up rule as a row: its ID, source, what it checks, what the start fails with and the
//! check over its phase's facts; the loop that applies a phase's rows; what a broken rule is.

use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
use rvgpu_ddi::NTSTATUS;

pub use rvgpu_ddi::ntstatus::{
    STATUS_DEVICE_CONFIGURATION_ERROR, STATUS_OBJECT_NAME_NOT_FOUND, STATUS_REVISION_MISMATCH,
};

/// A broken start-up rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule (`BR-nn`).
    pub rule: &'static str,
    /// What Windows fails the start with.
    pub status: NTSTATUS,
    /// What was wrong.
    pub why: String,
}

impl Violation {
    pub(crate) fn new(rule: &'static str, status: NTSTATUS, why: impl Into<String>) -> Self {
        Self {
            rule,
            status,
            why: why.into(),
        }
    }
}

impl From<Violation> for crate::SimError {
    fn from(v: Violation) -> Self {
        Self::StartRefused {
            rule: v.rule,
            status: v.status,
            why: v.why,
        }
    }
}

/// What a start fails with when a row fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Windows refuses the start with this status.
    Refuse(NTSTATUS),
    /// Windows refuses the start with the status the driver's answer failed with.
    DriverStatus,
}

/// What a phase's rows read, gathered once before its loop.
pub trait Facts {
    /// The failure status of the driver answer an [`Outcome::DriverStatus`] row checks.
    fn driver_status(&self) -> Option<NTSTATUS> {
        None
    }
}

/// One start-up rule: a row of its phase's table, and of docs/windows-bringup.md's.
pub struct Rule<F> {
    /// The rule (`BR-nn`; a rule Windows checks in two places has two rows).
    pub id: &'static str,
    /// Where Windows checks it.
    pub source: &'static str,
    /// What it checks, in a line.
    pub checks: &'static str,
    /// What the start fails with.
    pub outcome: Outcome,
    /// No later row of the phase runs once this one fired (BR-56: no render core to check).
    pub ends: bool,
    /// Why the rule fired, or `None`.
    pub check: fn(&F) -> Option<String>,
}

impl<F> Rule<F> {
    /// A rule that refuses the start with `status`.
    pub const fn refuse(
        id: &'static str,
        source: &'static str,
        checks: &'static str,
        status: NTSTATUS,
        check: fn(&F) -> Option<String>,
    ) -> Self {
        Self {
            id,
            source,
            checks,
            outcome: Outcome::Refuse(status),
            ends: false,
            check,
        }
    }

    /// A rule that refuses the start with the driver's failure status.
    pub const fn driver_status(
        id: &'static str,
        source: &'static str,
        checks: &'static str,
        check: fn(&F) -> Option<String>,
    ) -> Self {
        Self {
            outcome: Outcome::DriverStatus,
            ..Self::refuse(id, source, checks, 0, check)
        }
    }

    /// The row as the page shows it.
    pub fn doc(&self) -> RowDoc {
        RowDoc {
            id: self.id,
            source: self.source,
            checks: self.checks,
            outcome: self.outcome,
            ends: self.ends,
        }
    }
}

/// A slot of the driver's table as a row names it: its name and whether a table fills it, both
/// from the field (`slot!`), so a renamed slot does not compile instead of leaving a rule
/// that never fires.
#[derive(Clone, Copy)]
pub struct TableSlot {
    /// The field's name.
    pub name: &'static str,
    filled: fn(&DRIVER_INITIALIZATION_DATA) -> bool,
}

impl TableSlot {
    #[doc(hidden)]
    pub const fn new(name: &'static str, filled: fn(&DRIVER_INITIALIZATION_DATA) -> bool) -> Self {
        Self { name, filled }
    }

    /// Whether `t` fills the slot.
    pub fn filled(self, t: &DRIVER_INITIALIZATION_DATA) -> bool {
        (self.filled)(t)
    }
}

/// The [`TableSlot`] of field `$field` of `DRIVER_INITIALIZATION_DATA`.
macro_rules! slot {
    ($field:ident) => {
        $crate::adapter::bringup::rule::TableSlot::new(stringify!($field), |t| t.$field.is_some())
    };
}
pub(crate) use slot;

/// Whether `t` fills the slot the rule table names `name` (slot lists the rule table derives
/// from the DDI catalog, [`crate::adapter::rules::slots`]).
pub(crate) fn filled_by_name(t: &DRIVER_INITIALIZATION_DATA, name: &str) -> bool {
    t.slots().any(|(n, f)| n == name && f)
}

/// `Some(why)` when `cond` holds.
pub(crate) fn when(cond: bool, why: &str) -> Option<String> {
    cond.then(|| why.to_owned())
}

/// The phase's loop: every row of `rows` that fires over `facts`, in order, up to the first
/// that ends the phase; the first is what the start fails with.
pub fn apply<F: Facts>(rows: &[Rule<F>], facts: &F) -> Vec<Violation> {
    let mut v = Vec::new();
    for rule in rows {
        let Some(why) = (rule.check)(facts) else {
            continue;
        };
        let status = match rule.outcome {
            Outcome::Refuse(s) => s,
            // A driver-status row fires only on a failed answer.
            Outcome::DriverStatus => facts.driver_status().unwrap_or(STATUS_UNSUCCESSFUL),
        };
        v.push(Violation::new(rule.id, status, why));
        if rule.ends {
            break;
        }
    }
    v
}

/// The first row of `rows` that fires over `facts`.
pub fn first<F: Facts>(rows: &[Rule<F>], facts: &F) -> Option<Violation> {
    apply(rows, facts).into_iter().next()
}

/// One answer a row checks: what the OS asked (a DDI, with the node it asked it for, or a step
/// of its own set-up) and its status (`None`: the DDI is not in the table).
pub struct Answer {
    /// What was asked.
    pub what: &'static str,
    /// The node it was asked for.
    pub node: Option<u32>,
    /// Its status.
    pub status: Option<NTSTATUS>,
}

impl Answer {
    pub(crate) fn failed(&self) -> Option<NTSTATUS> {
        self.status.filter(|s| *s < 0)
    }

    pub(crate) fn why(&self, status: NTSTATUS) -> String {
        match self.node {
            Some(n) => format!("{} on node {n} failed ({:#010x})", self.what, status as u32),
            None => format!("{} failed ({:#010x})", self.what, status as u32),
        }
    }
}

impl Facts for Answer {
    fn driver_status(&self) -> Option<NTSTATUS> {
        self.failed()
    }
}

/// A row as docs/windows-bringup.md shows it.
#[derive(Clone, Copy, Debug)]
pub struct RowDoc {
    /// The rule.
    pub id: &'static str,
    /// Where Windows checks it.
    pub source: &'static str,
    /// What it checks.
    pub checks: &'static str,
    /// What the start fails with.
    pub outcome: Outcome,
    /// Whether it ends its phase.
    pub ends: bool,
}
