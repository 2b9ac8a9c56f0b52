//! The one way the simulated Dxgkrnl calls a DDI of the driver's table, and the one place of
//! that direction's FFI.
//!
//! A call site names the DDI once: `slot!` (or `in_table!` on a copy of the table, or on
//! an interface the driver hands out) reads a slot and makes a [`Ddi`], the slot's pointer with
//! the [`Routine`] of the same name, whose rules every helper below applies. The call site never
//! holds the pointer: it passes Rust values to the safe callers ([`Ddi::call`], [`Ddi::passive`]
//! and their `_unaudited` forms, [`Ddi::call_driver_wide`]), one per DDI prototype shape
//! ([`Prototype`]), which hold the FFI call and state its contract once. So it cannot pair one
//! DDI's pointer with another's IRQL rule or bug-check parameters. (`DriverEntry` is not in a
//! table: the loader checks its rule itself.)
//!
//! [`call`] sets the IRQL the DDI runs at, marks the adapter whose DDI the thread is inside,
//! refuses on a halted machine, enforces the routine's IRQL rule on entry, calls, and checks the
//! IRQL on return (0xC8 on a mismatch; Windows' 0x113 for the DDIs behind Dxgkrnl's `Ddi*`
//! wrappers, [`Wrapper::IrqlChecked`] in the rule table, under
//! `OsConfig::ddi_irql_mismatch_is_0x113`). Where a missing slot is noticed and what it says
//! stays with the caller (`slot!` is the usual one); the status helpers below map what the DDI
//! returned. The rest of the OS->driver FFI lives here too: `DriverEntry` and `DxgkInitialize`'s
//! entry, the registry path DriverEntry reads, the thread's current machine, the two DDI shapes
//! the callers do not take (`DxgkDdiGetNodeMetadata` into an entry of the OS's node array,
//! `DxgkDdiPowerRuntimeControlRequest` with NULL buffers), an interface's dereference, the
//! arrays a block names as a test's driver stand-in reads them (`blocks`), and the byte-wise
//! handling of [`Plain`] blocks the OS pre-fills, zeroes and reads around a call.

use std::cell::Cell;
use std::sync::Arc;

use rvgpu_ddi::basic::{CType, Data, Opaque, HANDLE};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::NTSTATUS;
use rvgpu_kmd::platform::Irql;

use crate::adapter::irql::{self, Routine};
use crate::adapter::observer::Observer;
use crate::adapter::rules::Wrapper;
pub(crate) use crate::adapter::slot::in_table;
pub use crate::adapter::slot::{member_routine, Ddi, Of, SlotFn, SlotType};
use crate::adapter::state::MachineState;
use crate::adapter::AdapterShared;
use crate::base::bugcheck;
use crate::base::error::SimError;
use crate::base::processor;
use crate::base::processor::{current_irql, IrqlScope};

/// The IRQL the OS calls a DDI at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The calling thread's level: PnP DDIs on the test thread, where a test may call at the
    /// wrong level on purpose to see the entry check fire.
    Caller,
    /// The level Windows calls this DDI at from this call site.
    Level(Irql),
}

thread_local! {
    /// The adapter whose DDI this thread is inside (resolves ambiguous callback handles).
    static IN_DDI: Cell<usize> = const { Cell::new(0) };
    /// The DDI this thread is inside, innermost (callbacks with rules about where they may be
    /// called from).
    static IN_ROUTINE: Cell<Option<Routine>> = const { Cell::new(None) };
}

/// The DDI the calling thread is inside, innermost (`None`: none).
pub(crate) fn current_routine() -> Option<Routine> {
    IN_ROUTINE.with(Cell::get)
}

struct InRoutine(Option<Routine>);

impl InRoutine {
    fn enter(r: Routine) -> Self {
        Self(IN_ROUTINE.with(|c| c.replace(Some(r))))
    }
}

impl Drop for InRoutine {
    fn drop(&mut self) {
        IN_ROUTINE.with(|c| c.set(self.0));
    }
}

/// The adapter whose DDI the calling thread is inside, as an address (0: none).
pub(crate) fn inside() -> usize {
    IN_DDI.with(Cell::get)
}

struct InDdi(usize);

impl InDdi {
    fn enter(a: &AdapterShared) -> Self {
        Self(IN_DDI.with(|c| c.replace(a as *const AdapterShared as usize)))
    }
}

impl Drop for InDdi {
    fn drop(&mut self) {
        IN_DDI.with(|c| c.set(self.0));
    }
}

/// Slot `$slot` of adapter `$a`'s table as an `Option<`[`Ddi`]`>` (`None`: the slot is
/// empty), read in place: "no driver loaded" without a table. A call reads one pointer rather
/// than copying the whole table, which the submission path would pay per call.
macro_rules! table_slot {
    ($a:expr, $slot:ident) => {
        $a.table
            .slot(|t| $crate::adapter::ddi::in_table!(t, $slot))
            .ok_or_else(|| $crate::base::error::SimError::NoDriver)
    };
}
pub(crate) use table_slot;

/// Slot `$slot` of adapter `$a`'s table as a [`Ddi`], read in place: "no driver loaded"
/// without a table, [`missing`] when the slot is empty.
macro_rules! slot {
    ($a:expr, $slot:ident) => {
        $crate::adapter::ddi::table_slot!($a, $slot)
            .and_then(|f| f.ok_or_else(|| $crate::adapter::ddi::missing(stringify!($slot))))
    };
}
pub(crate) use slot;

/// Calls DDI `ddi` of adapter `a` at `at`: `f` gets the DDI's pointer and makes the call.
pub fn call<F: Copy, R>(
    a: &AdapterShared,
    ddi: Ddi<F>,
    at: At,
    f: impl FnOnce(F) -> R,
) -> Result<R, SimError> {
    call_in_line(a, ddi, at, f)
}

/// [`call`], always inlined: the kernel-mode submission's wrapper pays no call nor result copy.
#[inline(always)]
fn call_in_line<F: Copy, R>(
    a: &AdapterShared,
    ddi: Ddi<F>,
    at: At,
    f: impl FnOnce(F) -> R,
) -> Result<R, SimError> {
    let routine = ddi.routine();
    let _irql = match at {
        At::Caller => None,
        At::Level(l) => Some(IrqlScope::enter(l)),
    };
    let outermost = inside() == 0;
    let _inside = InDdi::enter(a);
    let before = if outermost { a.bus_counts() } else { None };
    let os_0x113 = a.os.ddi_irql_mismatch_is_0x113;
    let r = call_driver_checked(&a.state, routine, ddi.address(), os_0x113, || {
        f(ddi.pointer())
    });
    if outermost {
        a.observer().charge_bus(routine, before, a.bus_counts());
    }
    r
}

/// Calls DDI `ddi` of adapter `a` at PASSIVE_LEVEL: [`call`] with [`At::Level`]`(Irql::Passive)`.
pub fn passive<F: Copy, R>(
    a: &AdapterShared,
    ddi: Ddi<F>,
    f: impl FnOnce(F) -> R,
) -> Result<R, SimError> {
    call(a, ddi, At::Level(Irql::Passive), f)
}

/// The safe callers: a DDI called with Rust values, its one FFI call in this module.
///
/// The contract every call relies on, and where simos keeps it:
/// * the pointer has the prototype its slot's type names: a [`Ddi`] is made only by `in_table!`
///   from a slot of the driver's table or of an interface it handed out, whose Rust types are
///   the header's prototypes (rvgpu_ddi asserts the table's layout);
/// * a handle argument is one the driver gave the OS (its adapter context from
///   `DxgkDdiAddDevice`, or a handle it returned in an output block and the OS stored): the
///   OS's object tables hand out no other;
/// * an argument block is borrowed for the call, so it outlives it; a block is a [`Block`]
///   type, built by the OS, and every pointer it carries names memory its builder keeps alive
///   across the call (the rule of every builder in simos, as of Dxgkrnl's).
mod sealed {
    pub trait Param {}
    pub trait Prototype {}
    pub trait Plain {}
}

/// A DDI argument block the OS builds and hands to the driver by pointer (see the contract
/// above: the pointers inside it name memory kept alive across the call): any C type of the
/// bindings with a layout of its own. The bindings' declaring macros mark every type they
/// declare ([`CType`], sealed there), so a new block needs no line here and no other type is
/// one.
pub trait Block: CType<Kind = Data> {}

impl<T: CType<Kind = Data>> Block for T {}

/// How a pointer parameter is passed, by the kind of C type it points to: a [`Block`] as a
/// borrow, audited; an opaque object (a handle's `c_void`, a `DEVICE_OBJECT`) as the pointer
/// itself, never read through.
pub trait Pointee<T: CType> {
    /// What the caller passes for a `*mut T`.
    type Mut<'a>;
    /// What the caller passes for a `*const T`.
    type Const<'a>;
    /// The pointer a `*mut T` argument is.
    fn raw_mut(s: Self::Mut<'_>) -> *mut T;
    /// The pointer a `*const T` argument is.
    fn raw_const(s: Self::Const<'_>) -> *const T;
    /// Checks the block a `*mut T` argument names against the audit of DDI `ddi`.
    fn audit_mut(s: &Self::Mut<'_>, o: &Observer, ddi: &str);
    /// Checks the block a `*const T` argument names against the audit of DDI `ddi`.
    fn audit_const(s: &Self::Const<'_>, o: &Observer, ddi: &str);
}

impl<T: Block> Pointee<T> for Data {
    type Mut<'a> = &'a mut T;
    type Const<'a> = &'a T;
    #[inline(always)]
    fn raw_mut(s: &mut T) -> *mut T {
        s
    }
    #[inline(always)]
    fn raw_const(s: &T) -> *const T {
        s
    }
    fn audit_mut(s: &&mut T, o: &Observer, ddi: &str) {
        o.handed_at(ddi, &**s);
    }
    fn audit_const(s: &&T, o: &Observer, ddi: &str) {
        o.handed_at(ddi, *s);
    }
}

impl<T: CType<Kind = Opaque>> Pointee<T> for Opaque {
    type Mut<'a> = *mut T;
    type Const<'a> = *const T;
    #[inline(always)]
    fn raw_mut(s: *mut T) -> *mut T {
        s
    }
    #[inline(always)]
    fn raw_const(s: *const T) -> *const T {
        s
    }
    fn audit_mut(_: &*mut T, _: &Observer, _: &str) {}
    fn audit_const(_: &*const T, _: &Observer, _: &str) {}
}

/// One parameter of a DDI prototype and what a caller passes for it: a block pointer is a
/// borrow of the block, a scalar (a handle, an index, a state) itself.
pub trait Param: sealed::Param + Copy {
    /// What the caller passes.
    type Safe<'a>;
    /// The value the prototype takes (the borrow as a pointer, for the call only).
    fn raw(s: Self::Safe<'_>) -> Self;
    /// Checks the block it names against the audit of DDI `ddi` (nothing for a scalar).
    fn audit(s: &Self::Safe<'_>, o: &Observer, ddi: &str);
}

impl<T: CType> sealed::Param for *mut T where T::Kind: Pointee<T> {}
impl<T: CType> Param for *mut T
where
    T::Kind: Pointee<T>,
{
    type Safe<'a> = <T::Kind as Pointee<T>>::Mut<'a>;
    #[inline(always)]
    fn raw(s: Self::Safe<'_>) -> Self {
        <T::Kind as Pointee<T>>::raw_mut(s)
    }
    fn audit(s: &Self::Safe<'_>, o: &Observer, ddi: &str) {
        <T::Kind as Pointee<T>>::audit_mut(s, o, ddi);
    }
}

impl<T: CType> sealed::Param for *const T where T::Kind: Pointee<T> {}
impl<T: CType> Param for *const T
where
    T::Kind: Pointee<T>,
{
    type Safe<'a> = <T::Kind as Pointee<T>>::Const<'a>;
    #[inline(always)]
    fn raw(s: Self::Safe<'_>) -> Self {
        <T::Kind as Pointee<T>>::raw_const(s)
    }
    fn audit(s: &Self::Safe<'_>, o: &Observer, ddi: &str) {
        <T::Kind as Pointee<T>>::audit_const(s, o, ddi);
    }
}

/// Scalar parameters: indices, states, sizes.
macro_rules! scalar_param {
    ($($t:ty),*) => {$(
        impl sealed::Param for $t {}
        impl Param for $t {
            type Safe<'a> = $t;
            #[inline(always)]
            fn raw(s: $t) -> Self {
                s
            }
            fn audit(_: &$t, _: &Observer, _: &str) {}
        }
    )*};
}

scalar_param!(u8, i32, u32, u64, usize);

/// A DDI prototype with a safe caller: `Args` is what a caller passes (one parameter as
/// itself, several as a tuple).
pub trait Prototype: sealed::Prototype + Copy {
    /// The arguments as the caller passes them.
    type Args<'a>;
    /// What the DDI returns.
    type Ret;
    /// Checks each block the arguments name against the audit of DDI `ddi`.
    fn audit(args: &Self::Args<'_>, o: &Observer, ddi: &str);
    /// Calls the pointer.
    ///
    /// # Safety
    ///
    /// The pointer is a driver's DDI of this prototype and the arguments keep the contract of
    /// this module's callers.
    unsafe fn invoke(self, args: Self::Args<'_>) -> Self::Ret;
}

impl<R> sealed::Prototype for unsafe extern "system" fn() -> R {}
impl<R> Prototype for unsafe extern "system" fn() -> R {
    type Args<'a> = ();
    type Ret = R;
    fn audit(_: &(), _: &Observer, _: &str) {}
    #[inline(always)]
    unsafe fn invoke(self, _: ()) -> R {
        // SAFETY: the caller's contract.
        unsafe { self() }
    }
}

impl<R, A: Param> sealed::Prototype for unsafe extern "system" fn(A) -> R {}
impl<R, A: Param> Prototype for unsafe extern "system" fn(A) -> R {
    type Args<'a> = A::Safe<'a>;
    type Ret = R;
    fn audit(args: &A::Safe<'_>, o: &Observer, ddi: &str) {
        A::audit(args, o, ddi);
    }
    #[inline(always)]
    unsafe fn invoke(self, args: A::Safe<'_>) -> R {
        // SAFETY: the caller's contract.
        unsafe { self(A::raw(args)) }
    }
}

/// Prototypes of two or more parameters: the caller passes a tuple.
macro_rules! prototype {
    ($($p:ident $v:ident),+) => {
        impl<R, $($p: Param),+> sealed::Prototype for unsafe extern "system" fn($($p),+) -> R {}
        impl<R, $($p: Param),+> Prototype for unsafe extern "system" fn($($p),+) -> R {
            type Args<'a> = ($($p::Safe<'a>,)+);
            type Ret = R;
            fn audit(args: &Self::Args<'_>, o: &Observer, ddi: &str) {
                let ($($v,)+) = args;
                $($p::audit($v, o, ddi);)+
            }
            #[inline(always)]
            unsafe fn invoke(self, args: Self::Args<'_>) -> R {
                let ($($v,)+) = args;
                // SAFETY: the caller's contract.
                unsafe { self($($p::raw($v)),+) }
            }
        }
    };
}

prototype!(A a, B b);
prototype!(A a, B b, C c);
prototype!(A a, B b, C c, D d);
prototype!(A a, B b, C c, D d, E e);
prototype!(A a, B b, C c, D d, E e, G g);
prototype!(A a, B b, C c, D d, E e, G g, H h);

/// The common shapes by name, for a helper generic over the block type (a call site with one
/// DDI names its slot type: [`Of`]).
pub type HandleFn = Ddi<unsafe extern "system" fn(HANDLE) -> NTSTATUS>;
/// `fn(HANDLE, *mut T) -> NTSTATUS`.
pub type HandleMutFn<T> = Ddi<unsafe extern "system" fn(HANDLE, *mut T) -> NTSTATUS>;
/// `fn(HANDLE, *const T) -> NTSTATUS`.
pub type HandleRefFn<T> = Ddi<unsafe extern "system" fn(HANDLE, *const T) -> NTSTATUS>;
/// `fn(*mut T) -> NTSTATUS`.
pub type MutFn<T> = Ddi<unsafe extern "system" fn(*mut T) -> NTSTATUS>;
/// `fn(*const T) -> NTSTATUS`.
pub type RefFn<T> = Ddi<unsafe extern "system" fn(*const T) -> NTSTATUS>;

impl<F: Prototype> Ddi<F> {
    /// Calls the DDI of adapter `a` at `at` with `args` ([`call`]'s rules), after the
    /// hand-over audit of the blocks it names.
    #[inline(always)]
    pub fn call(self, a: &AdapterShared, at: At, args: F::Args<'_>) -> Result<F::Ret, SimError> {
        F::audit(&args, a.observer(), self.routine().rules().name);
        // SAFETY: the module's contract, as in `call_unaudited`.
        call(a, self, at, |f| unsafe { f.invoke(args) })
    }

    /// [`Ddi::call`] at PASSIVE_LEVEL.
    #[inline(always)]
    pub fn passive(self, a: &AdapterShared, args: F::Args<'_>) -> Result<F::Ret, SimError> {
        self.call(a, At::Level(Irql::Passive), args)
    }

    /// [`Ddi::call`] without the central hand-over audit: for a call site that checks its
    /// block itself (`Observer::handed`), or whose DDI the audit does not cover, on paths that
    /// should not pay the audit's look-up (submission).
    #[inline(always)]
    pub fn call_unaudited(
        self,
        a: &AdapterShared,
        at: At,
        args: F::Args<'_>,
    ) -> Result<F::Ret, SimError> {
        // SAFETY: the module's contract (see `Block`): the pointer is the slot's, of the
        // prototype its type names; handles are the driver's; blocks are borrowed for the call.
        call_in_line(a, self, at, |f| unsafe { f.invoke(args) })
    }

    /// [`Ddi::call_unaudited`] at PASSIVE_LEVEL.
    #[inline(always)]
    pub fn passive_unaudited(
        self,
        a: &AdapterShared,
        args: F::Args<'_>,
    ) -> Result<F::Ret, SimError> {
        self.call_unaudited(a, At::Level(Irql::Passive), args)
    }

    /// Calls a driver-wide DDI (no adapter: `DxgkDdiUnload`, `DxgkDdiControlEtwLogging`) with
    /// [`call_driver`]'s rules.
    #[inline(always)]
    pub fn call_driver_wide(
        self,
        state: &Arc<MachineState>,
        args: F::Args<'_>,
    ) -> Result<F::Ret, SimError> {
        // SAFETY: the module's contract, as in `call_unaudited`.
        call_driver(state, self, |f| unsafe { f.invoke(args) })
    }

    /// Calls the DDI with none of [`call`]'s rules: for the ISR and the DPC, which run under
    /// their own locks and check the IRQL with their own bug-check codes, and for a test's
    /// stand-in calling the DDI it replaced, inside the OS's call that applied them.
    #[inline(always)]
    pub(crate) fn call_bare(self, args: F::Args<'_>) -> F::Ret {
        // SAFETY: the module's contract, as in `call_unaudited`.
        unsafe { self.pointer().invoke(args) }
    }
}

/// Plain DDI structures: integers, arrays and unions of them, raw and optional function
/// pointers, so every byte pattern, padding included, is a value. The OS pre-fills, zeroes
/// and reads such blocks byte-wise around a driver's call.
pub trait Plain: sealed::Plain + Copy + 'static {}

macro_rules! plain {
    ($($t:ty),* $(,)?) => {$(
        impl sealed::Plain for $t {}
        impl Plain for $t {}
    )*};
}

plain!(
    u32,
    [u8; 4],
    rvgpu_ddi::adapter::DXGK_DRIVERCAPS,
    rvgpu_ddi::adapter::DXGK_PHYSICALADAPTERCAPS,
    rvgpu_ddi::power::DXGK_POWER_RUNTIME_COMPONENT,
    rvgpu_ddi::power::DXGK_POWER_P_COMPONENT,
    rvgpu_ddi::memory::DXGK_SEGMENTDESCRIPTOR4,
    rvgpu_ddi::memory::DXGK_QUERYSEGMENTOUT4,
    rvgpu_ddi::memory::DXGK_GPUMMUCAPS,
    rvgpu_ddi::memory::DXGK_QUERYPAGETABLELEVELDESCIN,
    rvgpu_ddi::memory::DXGK_PAGE_TABLE_LEVEL_DESC,
    rvgpu_ddi::submission::DXGK_NODEMETADATA,
    rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE,
    DRIVER_INITIALIZATION_DATA,
);

/// A plain value with every byte `fill` (the OS's pre-fill of an output block, so a field the
/// driver leaves unset is visible).
pub fn filled<T: Plain>(fill: u8) -> T {
    let mut v = std::mem::MaybeUninit::<T>::uninit();
    // SAFETY: writes all `size_of::<T>()` bytes of the storage; every byte pattern is a `T`.
    unsafe {
        v.as_mut_ptr().write_bytes(fill, 1);
        v.assume_init()
    }
}

/// The plain value at the start of `bytes` (unaligned), or `None` when `bytes` is shorter.
pub fn read_plain<T: Plain>(bytes: &[u8]) -> Option<T> {
    let src = bytes.get(..std::mem::size_of::<T>())?;
    // SAFETY: `src` is `size_of::<T>()` initialised bytes, read unaligned; every byte pattern
    // is a `T`.
    Some(unsafe { src.as_ptr().cast::<T>().read_unaligned() })
}

/// Zeroes the bytes of `v` from offset `at` on (nothing when `at` is past its end).
pub fn zero_from<T: Plain>(v: &mut T, at: usize) {
    let Some(n) = std::mem::size_of::<T>().checked_sub(at) else {
        return;
    };
    // SAFETY: `at + n` is `size_of::<T>()`, so the write stays inside `v`, which the borrow
    // holds exclusively; every byte pattern is a `T`.
    unsafe { (v as *mut T).cast::<u8>().add(at).write_bytes(0, n) }
}

/// The index a power component's mapping names (a node, a source, a target, a segment).
pub fn mapping_index(m: &rvgpu_ddi::power::DXGK_POWER_COMPONENT_MAPPING_0) -> u32 {
    // SAFETY: every member of the union is one UINT, so reading one reads the union's value.
    unsafe { m.EngineDesc.NodeIndex }
}

/// `DxgkDdiGetNodeMetadata` into one entry of the OS's node array: `entries` starts at the
/// entry and runs on over the OS's memory after it (the next entries and guard bytes), so a
/// driver writing past its entry writes into memory the OS owns and checks afterwards. The
/// driver may write only the first `size_of::<DXGK_NODEMETADATA>()` bytes; `Err` when
/// `entries` is shorter than one entry.
pub(crate) fn get_node_metadata(
    a: &AdapterShared,
    get: Of<rvgpu_ddi::submission::PDXGKDDI_GETNODEMETADATA>,
    node: u32,
    entries: &mut [u8],
) -> Result<NTSTATUS, SimError> {
    if entries.len() < std::mem::size_of::<rvgpu_ddi::submission::DXGK_NODEMETADATA>() {
        return Err(SimError::Internal("node array shorter than its entry"));
    }
    let ctx = a.context();
    let entry = entries.as_mut_ptr().cast();
    passive(a, get, |get| {
        // SAFETY: the driver's DDI with its context, a node index and an entry of at least
        // one DXGK_NODEMETADATA of writable bytes borrowed for the call (the packed struct
        // has alignment 1).
        unsafe { get(ctx, node, entry) }
    })
}

/// `DxgkDdiPowerRuntimeControlRequest` as Dxgkrnl's notifications make it: a GUID that
/// outlives the call and no buffers (both NULL with size 0, `BytesReturned` NULL).
pub(crate) fn power_runtime_notify(
    a: &AdapterShared,
    f: Of<rvgpu_ddi::power::PDXGKDDIPOWERRUNTIMECONTROLREQUEST>,
    code: &rvgpu_ddi::basic::GUID,
) -> Result<NTSTATUS, SimError> {
    let ctx = a.context();
    passive(a, f, |f| {
        // SAFETY: the driver's DDI with its context, a borrowed GUID and no buffers.
        unsafe {
            f(
                ctx as HANDLE,
                code,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            )
        }
    })
}

/// The driver's `InterfaceDereference` of an interface it handed the OS, with that
/// interface's context (the OS is done with the interface); nothing when the slot is NULL.
pub(crate) fn interface_dereference(
    f: rvgpu_ddi::basic::PINTERFACE_DEREFERENCE,
    context: rvgpu_ddi::basic::PVOID,
) {
    if let Some(f) = f {
        // SAFETY: the driver's own routine from an interface it returned, with the context
        // it returned beside it.
        unsafe { f(context) }
    }
}

/// Arrays and buffers the OS's argument blocks point to, as a driver stand-in
/// ([`crate::testing`]) sees them: by the [`Block`] contract they are alive for the call the
/// block is borrowed for, so each reader borrows them with the block. A block made anywhere
/// else may carry any pointer, so the readers stay inside the crate, whose stand-ins read only
/// the blocks the OS handed them.
pub(crate) mod blocks {
    use rvgpu_ddi::adapter::DXGKARG_QUERYADAPTERINFO;
    use rvgpu_ddi::allocation::{DXGKARG_CREATEALLOCATION, DXGK_ALLOCATIONINFO};
    use rvgpu_ddi::fence::DXGKARG_UPDATEMONITOREDVALUES;
    use rvgpu_ddi::HANDLE;

    /// The allocation infos of a `DxgkDdiCreateAllocation` block (`NumAllocations` of them).
    pub fn allocation_infos(args: &mut DXGKARG_CREATEALLOCATION) -> &mut [DXGK_ALLOCATIONINFO] {
        if args.pAllocationInfo.is_null() {
            return &mut [];
        }
        // SAFETY: the OS's array of `NumAllocations` infos, writable by the driver.
        unsafe {
            std::slice::from_raw_parts_mut(args.pAllocationInfo, args.NumAllocations as usize)
        }
    }

    /// The output buffer of a `DxgkDdiQueryAdapterInfo` block as a `T`, when it is non-null,
    /// at least that large and aligned for it.
    #[allow(
        clippy::mut_from_ref,
        reason = "the output buffer is the OS's memory for the driver's answer, not the block"
    )]
    pub fn adapter_info_output<T>(args: &DXGKARG_QUERYADAPTERINFO) -> Option<&mut T> {
        let p = args.pOutputData.cast::<T>();
        let fits = (args.OutputDataSize as usize) >= std::mem::size_of::<T>();
        if p.is_null() || !fits || !p.is_aligned() {
            return None;
        }
        // SAFETY: the OS's output buffer of `OutputDataSize` bytes (checked to hold a `T`),
        // aligned, which the driver writes its answer to.
        Some(unsafe { &mut *p })
    }

    /// The (handle, value) pairs of a `DxgkDdiUpdateMonitoredValues` block.
    pub fn monitored_values(args: &DXGKARG_UPDATEMONITOREDVALUES) -> Vec<(usize, u64)> {
        let n = args.NumFences as usize;
        if n == 0 || args.NativeFenceArray.is_null() || args.UpdatedValueArray.is_null() {
            return Vec::new();
        }
        // SAFETY: the OS's two arrays of `NumFences` entries each.
        let (handles, values): (&[HANDLE], &[u64]) = unsafe {
            (
                std::slice::from_raw_parts(args.NativeFenceArray, n),
                std::slice::from_raw_parts(args.UpdatedValueArray, n),
            )
        };
        handles
            .iter()
            .map(|h| *h as usize)
            .zip(values.iter().copied())
            .collect()
    }
}

/// A table of raw pointers (function pointers and the adapter handle) that the simulation
/// shares between its threads. The pointers are process-global addresses, valid on any
/// thread; nothing in the table is thread-affine.
#[derive(Clone, Copy, Debug)]
pub struct SendTable<T>(pub T);
// SAFETY: see the type's documentation: plain addresses, no thread-affine state.
unsafe impl<T> Send for SendTable<T> {}
// SAFETY: as above; readers only copy the table.
unsafe impl<T> Sync for SendTable<T> {}

/// The registry path the OS hands `DriverEntry`: a `UNICODE_STRING` whose buffer points into
/// the `Vec` beside it (boxed, so the string's address stays put).
pub(crate) struct RegistryPath(pub(crate) rvgpu_ddi::basic::UNICODE_STRING, Vec<u16>);

impl RegistryPath {
    /// The path `path`.
    pub(crate) fn new(path: &str) -> Box<Self> {
        let path: Vec<u16> = path.encode_utf16().collect();
        let bytes = u16::try_from(path.len() * 2).unwrap_or(u16::MAX);
        let mut r = Box::new(Self(
            rvgpu_ddi::basic::UNICODE_STRING {
                Length: bytes,
                MaximumLength: bytes,
                Buffer: std::ptr::null_mut(),
            },
            path,
        ));
        r.0.Buffer = r.1.as_mut_ptr();
        r
    }
}

// SAFETY: the raw buffer pointer points into the owned, never-resized `Vec` of the same value
// (moving the `Vec` keeps its heap buffer) and is only read (by DriverEntry); sharing or moving
// the pair across threads is sound. This lets threads of a test share a `Machine`, whose other
// state is already `Arc`/`Mutex`/atomics.
unsafe impl Send for RegistryPath {}
// SAFETY: as above.
unsafe impl Sync for RegistryPath {}

thread_local! {
    // The current machine as a raw `Arc` pointer (null: none) that owns one strong count: a
    // plain pointer needs no destructor registration, which every DDI call's enter and leave
    // would otherwise check. The count moves between the cell and the guards' `previous`, so
    // every non-null pointer held by either keeps its machine alive, in whatever order guards
    // drop.
    static CURRENT: Cell<*const MachineState> = const { Cell::new(std::ptr::null()) };
}

/// Makes a machine the calling thread's current machine for the lifetime of the guard, so
/// kernel services and callbacks called without (or with a bad) adapter handle know whom to
/// bug-check.
#[derive(Debug)]
pub struct MachineContext {
    /// The machine current before (null: none), with the strong count the cell held for it.
    previous: *const MachineState,
}

impl MachineContext {
    /// Enters `state`'s context.
    #[inline]
    pub fn enter(state: Arc<MachineState>) -> Self {
        let previous = CURRENT.with(|c| c.replace(Arc::into_raw(state)));
        Self { previous }
    }
}

impl Drop for MachineContext {
    #[inline]
    fn drop(&mut self) {
        let left = CURRENT.with(|c| c.replace(self.previous));
        if !left.is_null() {
            // SAFETY: a non-null pointer in the cell came from `Arc::into_raw` and carries one
            // strong count, which the cell gave up by the replace above.
            drop(unsafe { Arc::from_raw(left) });
        }
    }
}

/// The calling thread's current machine.
pub fn current_machine() -> Option<Arc<MachineState>> {
    let m = CURRENT.with(Cell::get);
    if m.is_null() {
        return None;
    }
    // SAFETY: the cell's pointer came from `Arc::into_raw` and its strong count is held while
    // it is in the cell, so the machine is alive; the new count is the returned `Arc`'s.
    unsafe {
        Arc::increment_strong_count(m);
        Some(Arc::from_raw(m))
    }
}

/// Whether the calling thread's current machine has halted.
pub fn current_machine_halted() -> bool {
    let m = CURRENT.with(Cell::get);
    // SAFETY: as in `current_machine`: the cell's strong count keeps the machine alive.
    !m.is_null() && unsafe { (*m).is_halted() }
}

/// Calls a driver-wide DDI (no adapter: `DxgkDdiUnload`) at the caller's IRQL: refuses on a
/// halted machine, enforces the IRQL rule of its routine, runs `f` with its pointer in the
/// machine's context and reports a halt that happened during the call.
pub fn call_driver<F: Copy, R>(
    state: &Arc<MachineState>,
    ddi: Ddi<F>,
    f: impl FnOnce(F) -> R,
) -> Result<R, SimError> {
    call_driver_checked(state, ddi.routine(), ddi.address(), false, || {
        f(ddi.pointer())
    })
}

/// [`call_driver`]; with `os_0x113` (`OsConfig::ddi_irql_mismatch_is_0x113`) a return at
/// another IRQL from a DDI behind Dxgkrnl's `Ddi*` wrappers ([`Wrapper::IrqlChecked`]) raises
/// Windows' 0x113 / 0x10 (parameters: sub-code, the DDI's address in place of the adapter
/// object, IRQL at the call, IRQL at the return) instead of the simulation's 0xC8. The
/// routine's wrapper is read only on a mismatch; inlined into [`call`]'s hot path.
#[inline(always)]
fn call_driver_checked<R>(
    state: &Arc<MachineState>,
    routine: Routine,
    address: usize,
    os_0x113: bool,
    f: impl FnOnce() -> R,
) -> Result<R, SimError> {
    if let Some(fault) = state.fault() {
        return Err(fault.into());
    }
    let _ctx = MachineContext::enter(state.clone());
    let entry = current_irql();
    if let Err(b) = irql::check(routine, entry, address) {
        state.raise_bugcheck(b);
        return Err(SimError::Bugcheck(b));
    }
    let _routine = InRoutine::enter(routine);
    let r = f();
    let returned = current_irql();
    // The check reads the level again: only a mismatch needs it.
    if returned != entry {
        if let Err(b) = processor::check_return_irql(
            entry,
            bugcheck::irql_unexpected::SIM_DDI,
            address as u64,
            0,
            routine.id(),
        ) {
            let fatal_0x113 = os_0x113 && routine.rules().wrapper == Wrapper::IrqlChecked;
            state.raise_bugcheck(if fatal_0x113 {
                bugcheck::BugCheck::new(
                    bugcheck::VIDEO_DXGKRNL_FATAL_ERROR,
                    [
                        bugcheck::dxgkrnl_fatal::DDI_IRQL_MISMATCH,
                        address as u64,
                        bugcheck::kirql(entry),
                        bugcheck::kirql(returned),
                    ],
                )
            } else {
                b
            });
        }
    }
    match state.fault() {
        Some(fault) => Err(fault.into()),
        None => Ok(r),
    }
}

mod outcome;
pub use self::outcome::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::slot::tests::Numbered;
    use rvgpu_ddi::ntstatus::*;

    /// DDI-01: every DDI the catalog names, bound or still a placeholder, has a safe caller:
    /// each pointer it takes is to a C type of the bindings (a block, or an opaque object) and
    /// the rest are scalars, with no list of blocks to extend when a DDI is bound. The one
    /// exception is a DDI whose pointer names an array another parameter sizes
    /// ([`rvgpu_ddi::basic::Element`]): a borrow of one value cannot stand for it, so it has
    /// no generic caller, and the OS calls it through one that takes a slice.
    #[test]
    fn ddi_01_every_catalogued_ddi_but_an_array_one_has_a_safe_caller() {
        #[allow(unused_imports)]
        use rvgpu_ddi::{feature::*, init::*, kmtest::*};
        use std::marker::PhantomData;
        // Whether `SlotFn<P>` is a `Prototype`, asked of concrete types (method resolution
        // takes the by-value impl when the bound holds, else the one through a reference).
        struct Probe<P>(PhantomData<P>);
        trait HasCaller {
            fn has_caller(&self) -> bool {
                true
            }
        }
        impl<P: SlotType> HasCaller for Probe<P> where SlotFn<P>: Prototype {}
        trait NoCaller {
            fn has_caller(&self) -> bool {
                false
            }
        }
        impl<P> NoCaller for &Probe<P> {}
        // The prototypes whose pointer names an array of `Element`s.
        const ARRAY_DDIS: [&str; 1] = ["PDXGKDDI_QUERY_CHILD_RELATIONS"];
        macro_rules! callers {
            (rows [ $( ddi!( $name:ident $(= $i:ident . $m:ident)? : $ty:ident )
                $( . $f:ident $a:tt )* ),* $(,)? ]) => {
                [ $( (stringify!($ty), callers!(@one $ty)) ),* ]
            };
            // A reserved slot: no prototype.
            (@one PVOID) => { None };
            (@one $ty:ident) => { Some((&Probe::<$ty>(PhantomData)).has_caller()) };
        }
        let rows = rvgpu_ddi::catalog_rows!(callers!);
        assert_eq!(rows.len(), rvgpu_ddi::catalog::CATALOG.len());
        let wrong: Vec<_> = rows
            .iter()
            .filter_map(|&(ty, caller)| Some((ty, caller?)))
            .filter(|&(ty, caller)| caller == ARRAY_DDIS.contains(&ty))
            .collect();
        assert!(
            wrong.is_empty(),
            "(prototype, has a generic caller): {wrong:?}"
        );
    }

    /// DDI-01: a DDI's failure reaches the OS's caller named by the routine of the slot it
    /// was read from, with the status kept; an error that wraps another chains to it through
    /// `source()`.
    #[test]
    fn ddi_01_a_failed_ddi_is_named_keeps_its_status_and_chains_its_source() {
        use std::error::Error;
        let mut t = DRIVER_INITIALIZATION_DATA::default();
        t.visit_slots(&mut Numbered::default());
        let start = in_table!(t, DxgkDdiStartDevice).expect("set");
        assert_eq!(check_status(start, 0), Ok(()));
        let e = check_status(start, STATUS_DEVICE_HARDWARE_ERROR).expect_err("a failure");
        assert_eq!(
            e,
            SimError::Ddi {
                ddi: "DxgkDdiStartDevice",
                status: STATUS_DEVICE_HARDWARE_ERROR
            }
        );
        assert_eq!(e.status(), Some(STATUS_DEVICE_HARDWARE_ERROR));
        assert_eq!(
            e.to_string(),
            "DxgkDdiStartDevice failed: NTSTATUS 0xc0000483"
        );
        assert!(e.source().is_none(), "a status is where the chain ends");
        // An OS refusal carried as a status answers the same accessor; other errors have none.
        assert_eq!(
            SimError::DdiFailed(STATUS_NOT_SUPPORTED).status(),
            Some(STATUS_NOT_SUPPORTED)
        );
        assert_eq!(SimError::NoDriver.status(), None);

        fn chain(e: &SimError) -> Vec<String> {
            std::iter::successors(Some(e as &dyn Error), |e| (*e).source())
                .map(|e| e.to_string())
                .collect()
        }
        // A PCI board that cannot be opened: the I/O error is the source.
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no uio_pci_generic");
        let board = SimError::setup_from("PCI board", io);
        assert_eq!(
            chain(&board),
            [
                "setup failed: PCI board: no uio_pci_generic",
                "no uio_pci_generic"
            ]
        );
        let cause = board
            .source()
            .and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            cause.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
        // A nested simulation error: the DDI's failure, status and all, is found down the chain.
        let nested = SimError::setup_from("bringing the board up", e.clone());
        assert_eq!(
            chain(&nested),
            [
                "setup failed: bringing the board up: DxgkDdiStartDevice failed: NTSTATUS 0xc0000483",
                "DxgkDdiStartDevice failed: NTSTATUS 0xc0000483"
            ]
        );
        let inner = nested.source().and_then(|c| c.downcast_ref::<SimError>());
        assert_eq!(inner, Some(&e));
        assert_eq!(nested.status(), None, "the status is the inner error's");
    }

    /// The simulated OS's files outside `pe/` that hold `unsafe`: the FFI to the driver in
    /// each direction (the test stand-ins are driver code, so theirs too) and the mapping of
    /// a real board's BARs. Sorted.
    const UNSAFE_FILES: &[&str] = &["adapter/ddi.rs", "dxgkrnl/callbacks/ffi.rs", "hal/pci.rs"];

    /// Whether a line of Rust holds the keyword `unsafe` outside a `//` comment.
    fn has_unsafe(line: &str) -> bool {
        let code = line.split("//").next().unwrap_or("");
        code.match_indices("unsafe").any(|(i, _)| {
            let word = |c: char| c.is_alphanumeric() || c == '_';
            let before = code[..i].chars().next_back().is_none_or(|c| !word(c));
            let after = code[i + "unsafe".len()..]
                .chars()
                .next()
                .is_none_or(|c| !word(c));
            before && after
        })
    }

    /// DDI-01: the OS calls the driver's table through the typed callers here, so `unsafe`
    /// stays in the files of [`UNSAFE_FILES`]: a call site, a union read or a raw pointer
    /// elsewhere in the simulated OS fails this test.
    #[test]
    fn ddi_01_unsafe_stays_in_the_listed_ffi_files() {
        assert!(has_unsafe("    unsafe { f() }") && has_unsafe("pub unsafe fn f()"));
        assert!(!has_unsafe("#![deny(unsafe_code)]") && !has_unsafe("x // unsafe"));
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut dirs = vec![src.clone()];
        let mut found = Vec::new();
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
                let p = e.path();
                let rel = p
                    .strip_prefix(&src)
                    .expect("under src")
                    .to_string_lossy()
                    .replace('\\', "/");
                if p.is_dir() {
                    if rel != "pe" {
                        dirs.push(p);
                    }
                } else if rel.ends_with(".rs")
                    && std::fs::read_to_string(&p)
                        .expect("read")
                        .lines()
                        .any(has_unsafe)
                {
                    found.push(rel);
                }
            }
        }
        found.sort();
        let joined: Vec<&String> = found
            .iter()
            .filter(|f| !UNSAFE_FILES.contains(&f.as_str()))
            .collect();
        assert!(
            joined.is_empty(),
            "files with unsafe outside the list: {joined:?}"
        );
        assert_eq!(
            found, UNSAFE_FILES,
            "a listed file without unsafe leaves the list"
        );
    }
}
