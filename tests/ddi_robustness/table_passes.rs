//! The passes over the whole table: every slot whose catalog row says it fails on NULL
//! arguments, called with every argument 0, and again with a live adapter context first.

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::LazyLock;

use rvgpu_ddi::abi::{AbiSlot, SlotVisitor};
use rvgpu_ddi::catalog::{self, OnNull};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::NTSTATUS;

use super::{nt_success, show, table, AdapterCtx};

/// The filled slots holding a function whose catalog row says it fails on NULL arguments: the
/// zero-argument pass ([`ddi_01_a_failing_slot_called_with_zero_arguments_answers_its_catalog_row`])
/// calls each, so a new DDI of that kind needs no case here.
pub(crate) fn slots_the_zero_pass_calls(d: &DRIVER_INITIALIZATION_DATA) -> BTreeSet<String> {
    /// The names of the filled slots that hold a function (not a reserved `PVOID`).
    struct Callable(BTreeSet<String>);
    impl SlotVisitor for Callable {
        fn visit<const ID: usize, S: AbiSlot>(&mut self, slot: &mut S) {
            let name = DRIVER_INITIALIZATION_DATA::SLOT_NAMES.get(ID);
            let fails = name
                .and_then(|n| catalog::find(n))
                .is_some_and(|r| matches!(r.on_null, OnNull::Fails(_)));
            if let (true, true, Some(n)) = (S::CALLABLE && slot.addr() != 0, fails, name) {
                self.0.insert((*n).to_owned());
            }
        }
    }
    let mut v = Callable(BTreeSet::new());
    d.clone().visit_slots(&mut v);
    v.0
}

/// Calls each slot of [`slots_the_zero_pass_calls`] with every argument 0 and records what it
/// returned against its row; or (`live`: the table to add an adapter through) each of them that
/// takes a context or handle first, with a live adapter context there and every other argument
/// 0, and records a success where the row's failure was due.
struct ZeroPass {
    slots: BTreeSet<String>,
    live: Option<DRIVER_INITIALIZATION_DATA>,
    bad: Vec<String>,
    called: usize,
}

/// The slots the live pass leaves out. `DxgkDdiRemoveDevice` frees the context it is given,
/// which the pass's adapter would then remove a second time (its live case is the lifecycle
/// test).
const FREES_THE_CONTEXT: &str = "DxgkDdiRemoveDevice";

/// Slots for which a live context and zeros are a valid call that succeeds:
/// `DxgkDdiNotifySurpriseRemoval`'s type 0 is `DxgkRemovalHibernation`, and it takes no pointer.
const ZEROS_ARE_VALID: &[&str] = &["DxgkDdiNotifySurpriseRemoval"];

/// The catalog's DDIs whose prototype takes a context or handle (`HANDLE`, `PVOID`: a
/// `*mut c_void`) first: a DDI that takes its argument block first (the doorbell and most
/// native-fence DDIs) would read the adapter as that block.
static CONTEXT_FIRST: LazyLock<BTreeSet<&'static str>> = LazyLock::new(|| {
    #[allow(unused_imports)]
    use rvgpu_ddi::{feature::*, init::*, kmtest::*};
    // Asked of each row's concrete prototype: method resolution takes the by-value impl when
    // the first parameter is `*mut c_void`, else the one through a reference.
    struct Probe<P>(PhantomData<P>);
    trait ContextFirst {
        fn context_first(&self) -> bool {
            true
        }
    }
    macro_rules! context_first {
        ($($a:ident),*) => {
            impl<R $(, $a)*> ContextFirst
                for Probe<Option<unsafe extern "system" fn(*mut c_void $(, $a)*) -> R>> {}
        };
    }
    context_first!();
    context_first!(A1);
    context_first!(A1, A2);
    context_first!(A1, A2, A3);
    context_first!(A1, A2, A3, A4);
    context_first!(A1, A2, A3, A4, A5);
    context_first!(A1, A2, A3, A4, A5, A6);
    trait Other {
        fn context_first(&self) -> bool {
            false
        }
    }
    impl<P> Other for &Probe<P> {}
    macro_rules! rows {
        (rows [ $( ddi!( $name:ident $(= $i:ident . $m:ident)? : $ty:ident )
            $( . $f:ident $a:tt )* ),* $(,)? ]) => {
            [ $( (stringify!($name), rows!(@one $ty)) ),* ]
        };
        // A reserved slot: no prototype.
        (@one PVOID) => { false };
        (@one $ty:ident) => { (&Probe::<$ty>(PhantomData)).context_first() };
    }
    rvgpu_ddi::catalog_rows!(rows!)
        .into_iter()
        .filter_map(|(name, first)| first.then_some(name))
        .collect()
});

impl SlotVisitor for ZeroPass {
    fn visit<const ID: usize, S: AbiSlot>(&mut self, slot: &mut S) {
        let Some(name) = DRIVER_INITIALIZATION_DATA::SLOT_NAMES.get(ID) else {
            return;
        };
        let want = match catalog::find(name).map(|r| r.on_null) {
            Some(OnNull::Fails(s)) if self.slots.contains(*name) => s,
            _ => return,
        };
        let Some(d) = &self.live else {
            // SAFETY: the slot is one of the driver's NTSTATUS DDIs; every argument 0 is a NULL
            // context, NULL pointers and zero scalars, which its thunk refuses before reading
            // anything (what this pass checks).
            let got = unsafe { slot.call_words(&[]) }.map(status_of);
            self.called = self.called.saturating_add(1);
            if got != Some(want) {
                self.bad.push(format!(
                    "{name}: {:?}, its row says {}",
                    got.map(show),
                    show(want)
                ));
            }
            return;
        };
        if *name == FREES_THE_CONTEXT || !CONTEXT_FIRST.contains(*name) {
            return;
        }
        let mut pdo_stand_in = 0u64;
        let a = AdapterCtx::added(d, &mut pdo_stand_in);
        // SAFETY: the first argument is the context AddDevice returned, live until `a` drops
        // after the call (a handle of another object is a number the driver looks up, never
        // dereferences); every other argument is 0: NULL pointers and zero scalars.
        let got = unsafe { slot.call_words(&[a.ctx as u64]) }.map(status_of);
        self.called = self.called.saturating_add(1);
        let refused = got.is_some_and(|s| !nt_success(s));
        if refused == ZEROS_ARE_VALID.contains(name) {
            self.bad.push(format!("{name}: {:?}", got.map(show)));
        }
    }
}

/// An NTSTATUS returned as a word: its 32 bits, widened.
fn status_of(w: u64) -> NTSTATUS {
    let low = u32::try_from(w & 0xFFFF_FFFF).unwrap_or(u32::MAX);
    i32::from_ne_bytes(low.to_ne_bytes())
}

/// Every slot whose catalog row says it fails on NULL arguments, called through the table with
/// every argument 0 (a NULL context, NULL blocks), fails with the row's status.
#[test]
fn ddi_01_a_failing_slot_called_with_zero_arguments_answers_its_catalog_row() {
    let mut d = table();
    let mut pass = ZeroPass {
        slots: slots_the_zero_pass_calls(&d),
        live: None,
        bad: Vec::new(),
        called: 0,
    };
    d.visit_slots(&mut pass);
    assert!(pass.called > 40, "{} slots called", pass.called);
    assert!(pass.bad.is_empty(), "{:#?}", pass.bad);
}

/// The same slots that take a context or handle first, called with a live adapter context (an
/// added, unstarted adapter) and every other argument 0: past the context check each still
/// fails (a NULL block, a zero handle, or the unstarted adapter) and nothing crashes; only a
/// slot whose zeros are a valid request succeeds. A NULL context stops a call at the first
/// check, so the pass with zeros alone never reaches the checks behind it.
#[test]
fn ddi_01_a_failing_slot_called_with_a_live_context_and_zero_arguments_fails() {
    let mut d = table();
    let mut pass = ZeroPass {
        slots: slots_the_zero_pass_calls(&d),
        live: Some(d),
        bad: Vec::new(),
        called: 0,
    };
    d.visit_slots(&mut pass);
    assert!(pass.called > 40, "{} slots called", pass.called);
    assert!(pass.bad.is_empty(), "{:#?}", pass.bad);
}
