//! A DDI as the OS holds it: the slot's pointer paired with the [`Routine`] of the same name
//! ([`Ddi`]), made only by `in_table!` from one slot name. The calls that apply its rules are
//! [`crate::adapter::ddi`]; the adapter's feature database keeps one.

use crate::adapter::irql::Routine;

/// A DDI of the driver's table (or of an interface it hands out) and the routine whose rules
/// apply to it, both from one slot name: only `crate::adapter::ddi::slot!` and `in_table!` make one, from
/// `t.$slot` and the routine of the catalog row for that slot.
#[derive(Clone, Copy, Debug)]
pub struct Ddi<F> {
    routine: Routine,
    address: usize,
    f: F,
}

impl<F: Copy> Ddi<F> {
    /// The constructor of [`in_table!`], which derives `routine` and `f` from one slot name;
    /// a call written by hand could pair them wrongly (a test checks nothing else calls it).
    #[doc(hidden)]
    pub const fn from_slot_name(routine: Routine, address: usize, f: F) -> Self {
        Self {
            routine,
            address,
            f,
        }
    }

    /// The routine whose rules apply to this DDI (the slot's name).
    pub fn routine(&self) -> Routine {
        self.routine
    }

    /// The DDI's code address (bug-check parameters).
    pub fn address(&self) -> usize {
        self.address
    }

    /// The pointer, for a caller that checks the rules itself (the ISR and the DPC, which run
    /// under their own locks and bug-check codes).
    pub(crate) fn pointer(&self) -> F {
        self.f
    }
}

#[cfg(test)]
impl Ddi<()> {
    /// The OS's own code run as though inside `routine` (no driver code: address 0), for
    /// tests of what the OS does when a DDI calls back into it.
    pub(crate) fn pretend(routine: Routine) -> Self {
        Self {
            routine,
            address: 0,
            f: (),
        }
    }
}

/// The routine of the DDI at member `member` of the driver's table or of an interface it
/// hands out, by the DDI catalog's row for it (used in a constant by [`in_table!`]: a member
/// without a rule row or without an IRQL rule in it, or one two rows name, does not compile,
/// so the OS calls no DDI whose rules it does not know).
#[doc(hidden)]
pub const fn member_routine(member: &str) -> Routine {
    let mut found = None;
    let mut i = 0;
    while i < Routine::ALL.len() {
        let r = Routine::ALL[i];
        if let Some(row) = rvgpu_ddi::catalog::find(r.rules().name) {
            if rvgpu_ddi::catalog::str_eq(row.member, member) {
                assert!(found.is_none(), "two DDIs at one member name");
                found = Some(r);
            }
        }
        i += 1;
    }
    match found {
        Some(r) if r.rules().irql.is_some() => r,
        Some(_) => panic!("a DDI the OS calls without an IRQL rule in its catalog row"),
        None => panic!("a DDI member without a routine row in the rule table"),
    }
}

/// Slot `$slot` of the table `$t` (a `DRIVER_INITIALIZATION_DATA`, or an interface the driver
/// hands out, or a reference to one) as an `Option<`[`Ddi`]`>`: `None` when the slot is empty.
macro_rules! in_table {
    ($t:expr, $slot:ident) => {
        $t.$slot.map(|f| {
            $crate::adapter::slot::Ddi::from_slot_name(
                const { $crate::adapter::slot::member_routine(stringify!($slot)) },
                f as usize,
                f,
            )
        })
    };
}
pub(crate) use in_table;

/// A slot type of the driver's table (`Option` of a prototype) as the [`Ddi`] `slot!` makes
/// of it: `Of<PDXGKDDI_RESETENGINE>`.
pub trait SlotType {
    /// The prototype.
    type F: Copy;
}

impl<F: Copy> SlotType for Option<F> {
    type F = F;
}

/// The prototype of slot type `P` (e.g. `SlotFn<PDXGKDDI_DPC_ROUTINE>`).
pub type SlotFn<P> = <P as SlotType>::F;

/// The [`Ddi`] of slot type `P` (e.g. `Of<rvgpu_ddi::tdr::PDXGKDDI_RESETENGINE>`).
pub type Of<P> = Ddi<<P as SlotType>::F>;

#[cfg(test)]
mod tests {
    /// Only [`in_table!`] pairs a pointer with a routine: no other code of the crate calls
    /// the constructor it uses, so no call site can pair one DDI's pointer with another's rule.
    #[test]
    fn only_in_table_makes_a_ddi() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let this = root.parent().map(|w| w.join(file!())).expect("workspace");
        let mut dirs = vec![root.join("src")];
        let mut users = Vec::new();
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs")
                    && p != this
                    && std::fs::read_to_string(&p)
                        .expect("read")
                        .contains(concat!("from_slot", "_name"))
                {
                    users.push(p);
                }
            }
        }
        assert!(this.is_file(), "{}", this.display());
        assert_eq!(users, Vec::<std::path::PathBuf>::new());
    }
}
