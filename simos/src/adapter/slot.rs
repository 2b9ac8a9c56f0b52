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
pub(crate) mod tests {
    use rvgpu_ddi::abi::{AbiSlot, Callee, SlotVisitor};
    use rvgpu_ddi::basic::HANDLE;
    use rvgpu_ddi::feature::{
        DXGKARG_QUERYFEATUREINTERFACE, DXGKARG_QUERYFEATURESUPPORT, DXGKDDI_FEATURE_INTERFACE,
    };
    use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
    use rvgpu_ddi::kmtest::{DXGKARG_BUILDTESTCOMMANDBUFFER, DXGKDDI_KERNELMODETESTINGINTERFACE};
    use rvgpu_ddi::NTSTATUS;

    use crate::adapter::irql::Routine;

    /// What the functions [`Numbered`] puts in the slots would run; they are never called.
    struct NeverCalled;

    impl Callee for NeverCalled {
        fn call(id: usize, _: &[u64]) -> u64 {
            panic!("slot {id} of a table filled for its addresses was called")
        }
    }

    /// Fills every slot of a table with a function of its own and keeps which slot each one
    /// went to, so an address tells the slot it was read from.
    #[derive(Default)]
    pub(crate) struct Numbered(Vec<(usize, usize)>);

    impl Numbered {
        /// The slot number `address` was put in.
        fn slot_of(&self, address: usize) -> Option<usize> {
            self.0
                .iter()
                .find(|(a, _)| *a == address)
                .map(|(_, id)| *id)
        }
    }

    impl SlotVisitor for Numbered {
        fn visit<const ID: usize, S: AbiSlot>(&mut self, slot: &mut S) {
            if S::CALLABLE {
                *slot = S::forwarder::<NeverCalled, ID>();
                self.0.push((slot.addr(), ID));
            }
        }
    }

    /// Every DDI of the table the OS calls (its row has an IRQL rule): the routine `in_table!`
    /// pairs with slot `X` (`member_routine("X")`) is the routine named `X`, and a slot read
    /// through `in_table!` carries that routine with the slot's own pointer. The routines are
    /// the rule table's, so a new DDI needs no entry here.
    #[test]
    fn ddi_02_a_ddi_carries_the_routine_of_the_slot_it_was_read_from() {
        let mut t = DRIVER_INITIALIZATION_DATA::default();
        let mut numbered = Numbered::default();
        t.visit_slots(&mut numbered);
        let slots = DRIVER_INITIALIZATION_DATA::SLOT_NAMES;
        let mut with_slot = 0;
        for r in Routine::ALL {
            let name = r.rules().name;
            if slots.contains(&name) && r.rules().irql.is_some() {
                assert_eq!(super::member_routine(name), *r, "{name}");
                with_slot += 1;
            }
        }
        assert!(with_slot > 60, "{with_slot} routines with a slot");
        macro_rules! read_through_in_table {
            ($($slot:ident),*) => {$(
                let d = in_table!(t, $slot).expect(stringify!($slot));
                let id = numbered.slot_of(d.address()).expect("an address of the table");
                assert_eq!(slots[id], d.routine().rules().name);
                assert_eq!(d.routine().rules().name, stringify!($slot));
            )*};
        }
        read_through_in_table!(
            DxgkDdiAddDevice,
            DxgkDdiInterruptRoutine,
            DxgkDdiCreateHwQueue,
            DxgkDdiCloseAllocation
        );
    }

    extern "system" fn support(_: HANDLE, _: *mut DXGKARG_QUERYFEATURESUPPORT) -> NTSTATUS {
        0
    }
    extern "system" fn interface(_: HANDLE, _: *mut DXGKARG_QUERYFEATUREINTERFACE) -> NTSTATUS {
        0
    }
    extern "system" fn build(_: HANDLE, _: *mut DXGKARG_BUILDTESTCOMMANDBUFFER) -> NTSTATUS {
        0
    }

    /// The DDIs the driver hands out in interfaces carry the routine of their catalog row.
    #[test]
    fn ddi_02_an_interface_ddi_carries_the_routine_of_its_member() {
        let feature = DXGKDDI_FEATURE_INTERFACE {
            QueryFeatureSupport: Some(support),
            QueryFeatureInterface: Some(interface),
            Size: 0,
            Version: 0,
            Context: std::ptr::null_mut(),
            InterfaceReference: None,
            InterfaceDereference: None,
        };
        let d = in_table!(feature, QueryFeatureSupport).expect("set");
        assert_eq!(d.routine(), Routine::DxgkDdiQueryFeatureSupport);
        assert_eq!(d.address(), support as *const () as usize);
        let d = in_table!(feature, QueryFeatureInterface).expect("set");
        assert_eq!(d.routine(), Routine::DxgkDdiQueryFeatureInterface);
        assert_eq!(d.address(), interface as *const () as usize);
        let testing = DXGKDDI_KERNELMODETESTINGINTERFACE {
            pfnBuildTestCommandBuffer: Some(build),
        };
        let d = in_table!(testing, pfnBuildTestCommandBuffer).expect("set");
        assert_eq!(d.routine(), Routine::DxgkDdiBuildTestCommandBuffer);
        assert_eq!(d.address(), build as *const () as usize);
    }

    /// Only [`in_table!`] pairs a pointer with a routine: no other code of the crate calls
    /// the constructor it uses, so no call site can pair one DDI's pointer with another's rule.
    #[test]
    fn ddi_02_only_in_table_makes_a_ddi() {
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
