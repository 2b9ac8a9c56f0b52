//! Dxgkrnl's pointer contract, stated once, and the helpers every thunk reaches it through.
//!
//! The contract (the DDI reference pages of each `DxgkDdiXxx`, and the calling convention the
//! whole `DRIVER_INITIALIZATION_DATA` table is under):
//!
//! - the adapter context (`MiniportDeviceContext`, `hAdapter`, a feature interface's
//!   `Context`) is null or the one AddDevice returned ([`add_device`], here, as is
//!   [`remove_device`], which frees it), and Dxgkrnl calls nothing with it after RemoveDevice
//!   returns;
//! - an argument block, out pointer or argument array is null or valid, aligned and the
//!   driver's alone (nothing else reads or writes it) for the duration of the call: readable
//!   when the signature declares it `const`, readable and writable when it declares it `mut`;
//! - a private-data or output buffer described by a pointer and a byte count is null or holds
//!   that many bytes under the same terms.
//!
//! [`Call`] (`crate::args`, below both the thunks and the logic) is that contract as a value:
//! a thunk makes one (its `unsafe` block, the promise that the pointers it resolves are its
//! call's) and turns each pointer into a reference whose lifetime ends with the call, or
//! `None` for null, without further `unsafe`; it then checks
//! sizes and calls the module holding the logic. The OS's arrays and buffers that argument
//! blocks name are resolved through it too, into typed values the logic takes: slices
//! ([`Call::slice`], [`Call::array`]), the fence value words of the update DDIs
//! ([`Call::os_words`]), an MDL's pages ([`Call::mdl_pages`]), a paging DMA buffer
//! ([`Call::words_mut`]), page-table entries ([`Call::element`]), a log header
//! ([`Call::log_header`]), a QueryAdapterInfo request ([`Call::qai_request`]).
//! The common shapes are whole thunks here ([`on_adapter`], [`on_adapter_mut`], [`on_args`],
//! [`on_args_mut`], [`on_handle`], [`on_handle_mut`], [`on_context`], [`on_context_with`]): a
//! DDI of that shape names only its logic, through one of the traits ([`generic_ddis`] declares
//! such DDIs). A DDI the profiling scripts or a debugger session name keeps a thunk of its own
//! (scripts/callgrind-*.sh toggle on the symbol; a generic thunk's symbol does not name the DDI).

use core::ffi::c_void;

use alloc::boxed::Box;

use rvgpu_ddi::{HANDLE, NTSTATUS, PDEVICE_OBJECT, PVOID};

use crate::adapter::Adapter;
use crate::allocation::MAX_PER_CALL;
pub(crate) use crate::args::Call;
use crate::dma::{OsWord, OsWords};
use crate::globals::ADAPTERS;
use crate::log::HeaderView;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus, Status};
use rvgpu_ddi::fence::DXGK_NATIVE_FENCE_LOG_BUFFER;

/// The adapter lookups and the views into the driver's own types (OS words, a log's header):
/// the thunks' alone, so that `Call` sits below the adapter and those types.
impl<'a> Call<'a> {
    /// The adapter behind a context, or `None` for null.
    pub(super) fn adapter<P: Platform>(self, ctx: *const c_void) -> Option<&'a Adapter<P>> {
        // SAFETY: null, or the context AddDevice returned, live for the call (`Call::new`).
        unsafe { ctx.cast::<Adapter<P>>().as_ref() }
    }

    /// The adapter and a read-only argument block, or `None` if either is null.
    pub(super) fn adapter_and<P: Platform, T>(
        self,
        ctx: *const c_void,
        args: *const T,
    ) -> Option<(&'a Adapter<P>, &'a T)> {
        Some((self.adapter(ctx)?, self.args(args)?))
    }

    /// The adapter and a writable argument block, or `None` if either is null.
    pub(super) fn adapter_and_mut<P: Platform, T>(
        self,
        ctx: *const c_void,
        args: *mut T,
    ) -> Option<(&'a Adapter<P>, &'a mut T)> {
        Some((self.adapter(ctx)?, self.args_mut(args)?))
    }

    /// An OS array of `n` `T`s as a slice (`None` for a null array, more than
    /// [`MAX_PER_CALL`] elements, or none).
    pub(super) fn array<T>(self, p: *mut T, n: u32) -> Option<&'a mut [T]> {
        if p.is_null() || n == 0 || n > MAX_PER_CALL {
            return None;
        }
        let n = usize::try_from(n).ok()?;
        // SAFETY: non-null, so `n` elements the driver's alone for the call (`Call::new`).
        Some(unsafe { core::slice::from_raw_parts_mut(p, n) })
    }

    /// An OS array of `n` kernel CPU addresses of 64-bit words the call lets the driver store
    /// to, as [`OsWords`] (`None` as for [`Call::slice`]).
    #[inline]
    pub(super) fn os_words(self, p: *const *mut c_void, n: u32, max: u32) -> Option<OsWords<'a>> {
        let vas = self.slice(p, n, max)?;
        // SAFETY: each address the OS passes is null or a word writable for the call (the
        // pages of the update DDIs; `Call::new`); OsWords checks null and alignment.
        Some(unsafe { OsWords::new(vas) })
    }

    /// Reads a native fence log's header through the OS's CPU VA of the buffer
    /// (`LogBufferCpuVa`, readable for the call): null or unaligned is INVALID_PARAMETER.
    pub(crate) fn log_header(
        self,
        p: *const DXGK_NATIVE_FENCE_LOG_BUFFER,
    ) -> Result<HeaderView, Status> {
        if p.is_null() || !p.addr().is_multiple_of(8) {
            return Err(status::INVALID_PARAMETER);
        }
        // SAFETY: non-null and aligned (checked), and pointing at a header (`Call::new`), so
        // the field projections stay inside it.
        let ty = unsafe { &raw const (*p).Header.Type };
        // SAFETY: as above.
        let n = unsafe { &raw const (*p).Header.NumberOfEntries };
        // SAFETY: readable for the call (`Call::new`). Volatile: the buffer is shared with the
        // OS and the device.
        let log_type = unsafe { core::ptr::read_volatile(ty) };
        // SAFETY: as above.
        let number_of_entries = unsafe { core::ptr::read_volatile(n) };
        Ok(HeaderView {
            log_type: u32::try_from(log_type).unwrap_or(u32::MAX),
            number_of_entries,
        })
    }

    /// The OS's mapping of a native fence log of `entries` entries at `p` (`LogBufferCpuVa`),
    /// kept with the log for the test hooks' copy ([`crate::log::LogView`]).
    pub(crate) fn log_view(
        self,
        p: *const DXGK_NATIVE_FENCE_LOG_BUFFER,
        entries: u32,
    ) -> crate::log::LogView {
        // SAFETY: the OS's kernel mapping of a log buffer of `NumberOfEntries` entries (a set
        // whose header says otherwise is refused and keeps no view), mapped until the OS
        // replaces it or takes it back through this DDI, which drops the view.
        unsafe { crate::log::LogView::new(p as usize, entries) }
    }

    /// The kernel CPU address of a word an object's creation names for the object's life (a
    /// hardware queue's progress fence value: Dxgkrnl keeps it mapped until the queue is
    /// destroyed, DXGKARG_CREATEHWQUEUE's page).
    pub(super) fn queue_word(self, va: *mut c_void) -> OsWord {
        // SAFETY: 0 or the OS's mapping of the word, readable while the queue lives (above).
        unsafe { OsWord::new(va as usize) }
    }
}

/// A DDI `(hAdapter, const ARGS*) -> NTSTATUS` whose thunk only resolves both.
pub(super) trait OnAdapter<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call (for the buffers the arguments name), its adapter and
    /// arguments.
    fn call(call: Call<'_>, a: &Adapter<P>, args: &Self::Args) -> Result<(), Status>;
}

/// A DDI `(hAdapter, ARGS*) -> NTSTATUS` whose thunk only resolves both.
pub(super) trait OnAdapterMut<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call, its adapter and arguments.
    fn call(call: Call<'_>, a: &Adapter<P>, args: &mut Self::Args) -> Result<(), Status>;
}

/// A DDI `(const ARGS*) -> NTSTATUS` without an adapter handle (the logic finds the adapter
/// from a handle inside the arguments).
pub(super) trait OnArgs<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call and its arguments.
    fn call(call: Call<'_>, args: &Self::Args) -> Result<(), Status>;
}

/// A DDI `(ARGS*) -> NTSTATUS` without an adapter handle, whose block the logic writes.
pub(super) trait OnArgsMut<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call and its arguments.
    fn call(call: Call<'_>, args: &mut Self::Args) -> Result<(), Status>;
}

/// A DDI `(handle, const ARGS*) -> NTSTATUS` whose first argument is a KMD handle other than
/// the adapter (a device, a context), passed on for the logic to decode.
pub(super) trait OnHandle<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call, its handle and arguments.
    fn call(call: Call<'_>, h: HANDLE, args: &Self::Args) -> Result<(), Status>;
}

/// A DDI `(handle, ARGS*) -> NTSTATUS`: as [`OnHandle`], with a block the logic writes.
pub(super) trait OnHandleMut<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call, its handle and arguments.
    fn call(call: Call<'_>, h: HANDLE, args: &mut Self::Args) -> Result<(), Status>;
}

/// Declares DDIs whose whole thunk is one of this module's generic ones: for each, the marker
/// type the DDI table instantiates the thunk with (named after the DDI, as the PDB shows it)
/// and its logic. The forms, by trait:
///
/// - `Name: OnAdapter<ARGS> => logic;` (likewise `OnAdapterMut`, `OnArgs`, `OnHandleMut`):
///   `logic` takes what the trait's `call` takes but the [`Call`], and returns
///   `Result<(), Status>`;
/// - `Name: OnAdapter<ARGS> => |call, a, args| body;` (any trait with an argument block): the
///   trait's `call` written out, for logic that resolves the buffers the arguments name
///   through the [`Call`];
/// - `Name: OnContext => logic;` and `Name: OnContextWith<ARG> => logic;`: an NTSTATUS DDI,
///   STATUS_INVALID_PARAMETER for a null context, `logic` returning `Result<(), Status>`;
/// - `Name: OnContext -> () => logic;`: a DDI without a result, nothing done for a null context.
///
/// Inside `logic` and `body`, `P` names the platform.
macro_rules! generic_ddis {
    () => {};
    ($(#[$d:meta])* $name:ident: OnAdapter<$t:ty> =>
        |$c:tt, $a:tt, $x:tt| $body:expr; $($rest:tt)*) => {
        generic_ddis!(@one OnAdapter $(#[$d])* $name<$t>
            |$c, $a: &$crate::adapter::Adapter<P>, $x: &$t| $body);
        generic_ddis! { $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnAdapter<$t:ty> => $f:path; $($rest:tt)*) => {
        generic_ddis! { $(#[$d])* $name: OnAdapter<$t> => |_, a, args| $f(a, args); $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnAdapterMut<$t:ty> =>
        |$c:tt, $a:tt, $x:tt| $body:expr; $($rest:tt)*) => {
        generic_ddis!(@one OnAdapterMut $(#[$d])* $name<$t>
            |$c, $a: &$crate::adapter::Adapter<P>, $x: &mut $t| $body);
        generic_ddis! { $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnAdapterMut<$t:ty> => $f:path; $($rest:tt)*) => {
        generic_ddis! { $(#[$d])* $name: OnAdapterMut<$t> => |_, a, args| $f(a, args); $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnArgs<$t:ty> =>
        |$c:tt, $x:tt| $body:expr; $($rest:tt)*) => {
        generic_ddis!(@one OnArgs $(#[$d])* $name<$t> |$c, $x: &$t| $body);
        generic_ddis! { $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnArgs<$t:ty> => $f:path; $($rest:tt)*) => {
        generic_ddis! { $(#[$d])* $name: OnArgs<$t> => |_, args| $f(args); $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnArgsMut<$t:ty> =>
        |$c:tt, $x:tt| $body:expr; $($rest:tt)*) => {
        generic_ddis!(@one OnArgsMut $(#[$d])* $name<$t> |$c, $x: &mut $t| $body);
        generic_ddis! { $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnHandle<$t:ty> =>
        |$c:tt, $h:tt, $x:tt| $body:expr; $($rest:tt)*) => {
        generic_ddis!(@one OnHandle $(#[$d])* $name<$t>
            |$c, $h: rvgpu_ddi::HANDLE, $x: &$t| $body);
        generic_ddis! { $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnHandleMut<$t:ty> =>
        |$c:tt, $h:tt, $x:tt| $body:expr; $($rest:tt)*) => {
        generic_ddis!(@one OnHandleMut $(#[$d])* $name<$t>
            |$c, $h: rvgpu_ddi::HANDLE, $x: &mut $t| $body);
        generic_ddis! { $($rest)* }
    };
    ($(#[$d:meta])* $name:ident: OnHandleMut<$t:ty> => $f:path; $($rest:tt)*) => {
        generic_ddis! { $(#[$d])* $name: OnHandleMut<$t> => |_, h, args| $f(h, args); $($rest)* }
    };
    (@one $tr:ident $(#[$d:meta])* $name:ident<$t:ty>
        |$c:tt, $($p:tt: $pt:ty),*| $body:expr) => {
        $(#[$d])*
        pub(super) enum $name {}
        impl<P: $crate::platform::Platform> $crate::thunk::contract::$tr<P> for $name {
            type Args = $t;
            fn call(
                $c: $crate::thunk::contract::Call<'_>,
                $($p: $pt),*
            ) -> Result<(), $crate::status::Status> {
                $body
            }
        }
    };
    ($(#[$doc:meta])* $name:ident: OnContext => $logic:path; $($rest:tt)*) => {
        $(#[$doc])*
        pub(super) enum $name {}
        impl<P: $crate::platform::Platform> $crate::thunk::contract::OnContext<P> for $name {
            type Out = rvgpu_ddi::NTSTATUS;
            const NO_ADAPTER: rvgpu_ddi::NTSTATUS = $crate::status::INVALID_PARAMETER.code();
            fn call(a: &$crate::adapter::Adapter<P>) -> rvgpu_ddi::NTSTATUS {
                $crate::status::to_ntstatus($logic(a))
            }
        }
        generic_ddis! { $($rest)* }
    };
    ($(#[$doc:meta])* $name:ident: OnContext -> () => $logic:path; $($rest:tt)*) => {
        $(#[$doc])*
        pub(super) enum $name {}
        impl<P: $crate::platform::Platform> $crate::thunk::contract::OnContext<P> for $name {
            type Out = ();
            const NO_ADAPTER: () = ();
            fn call(a: &$crate::adapter::Adapter<P>) {
                $logic(a)
            }
        }
        generic_ddis! { $($rest)* }
    };
    ($(#[$doc:meta])* $name:ident: OnContextWith<$arg:ty> => $logic:path; $($rest:tt)*) => {
        $(#[$doc])*
        pub(super) enum $name {}
        impl<P: $crate::platform::Platform> $crate::thunk::contract::OnContextWith<P> for $name {
            type Arg = $arg;
            type Out = rvgpu_ddi::NTSTATUS;
            const NO_ADAPTER: rvgpu_ddi::NTSTATUS = $crate::status::INVALID_PARAMETER.code();
            fn call(a: &$crate::adapter::Adapter<P>, arg: $arg) -> rvgpu_ddi::NTSTATUS {
                $crate::status::to_ntstatus($logic(a, arg))
            }
        }
        generic_ddis! { $($rest)* }
    };
}
pub(super) use generic_ddis;

/// Declares DDIs with a thunk of their own (a signature no generic thunk has, or a symbol the
/// profiling scripts and debugger sessions name): each `fn name<G: Bound>(call, arg: T, ..) ->
/// R { body }` becomes `unsafe extern "system" fn name(arg: T, ..) -> R` whose body runs with
/// `call`, the [`Call`] of its call (`_` when the body resolves no pointer). The one `unsafe`
/// of every such thunk is here: a DDI thunk resolving its call's pointers is what [`Call::new`]
/// asks of its caller.
macro_rules! own_thunks {
    () => {};
    ($(#[$d:meta])* fn $name:ident $(<$($g:ident: $b:path),+>)?
        ($call:tt $(, $a:tt: $t:ty)* $(,)?) $(-> $r:ty)? $body:block $($rest:tt)*) => {
        $(#[$d])*
        #[allow(unsafe_code)]
        pub(super) unsafe extern "system" fn $name $(<$($g: $b),+>)? ($($a: $t),*) $(-> $r)? {
            // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
            let $call = unsafe { $crate::thunk::contract::Call::new() };
            $body
        }
        own_thunks! { $($rest)* }
    };
}
pub(super) use own_thunks;

/// A pointer to an argument block the logic only reads, whether the DDI's signature declares
/// it `const` or `mut` (some declare `mut` a block the driver never writes).
pub(super) trait ReadArgs<T>: Copy {
    /// The pointer as a read-only one.
    fn read_only(self) -> *const T;
}

impl<T> ReadArgs<T> for *const T {
    fn read_only(self) -> *const T {
        self
    }
}

impl<T> ReadArgs<T> for *mut T {
    fn read_only(self) -> *const T {
        self.cast_const()
    }
}

/// The thunk of an [`OnAdapter`] DDI: STATUS_INVALID_PARAMETER for a null pointer.
pub(super) unsafe extern "system" fn on_adapter<P, D, A>(h_adapter: HANDLE, args: A) -> NTSTATUS
where
    P: Platform,
    D: OnAdapter<P>,
    A: ReadArgs<D::Args>,
{
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.adapter_and::<P, _>(h_adapter, args.read_only()) {
        Some((a, args)) => to_ntstatus(D::call(call, a, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnAdapterMut`] DDI: STATUS_INVALID_PARAMETER for a null pointer.
pub(super) unsafe extern "system" fn on_adapter_mut<P: Platform, D: OnAdapterMut<P>>(
    h_adapter: HANDLE,
    args: *mut D::Args,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.adapter_and_mut::<P, _>(h_adapter, args) {
        Some((a, args)) => to_ntstatus(D::call(call, a, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnArgs`] DDI: STATUS_INVALID_PARAMETER for a null pointer.
pub(super) unsafe extern "system" fn on_args<P, D, A>(args: A) -> NTSTATUS
where
    P: Platform,
    D: OnArgs<P>,
    A: ReadArgs<D::Args>,
{
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.args(args.read_only()) {
        Some(args) => to_ntstatus(D::call(call, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnArgsMut`] DDI: STATUS_INVALID_PARAMETER for a null pointer.
pub(super) unsafe extern "system" fn on_args_mut<P: Platform, D: OnArgsMut<P>>(
    args: *mut D::Args,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.args_mut(args) {
        Some(args) => to_ntstatus(D::call(call, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnHandle`] DDI: STATUS_INVALID_PARAMETER for a null block.
pub(super) unsafe extern "system" fn on_handle<P, D, A>(h: HANDLE, args: A) -> NTSTATUS
where
    P: Platform,
    D: OnHandle<P>,
    A: ReadArgs<D::Args>,
{
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.args(args.read_only()) {
        Some(args) => to_ntstatus(D::call(call, h, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnHandleMut`] DDI: STATUS_INVALID_PARAMETER for a null block.
pub(super) unsafe extern "system" fn on_handle_mut<P: Platform, D: OnHandleMut<P>>(
    h: HANDLE,
    args: *mut D::Args,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.args_mut(args) {
        Some(args) => to_ntstatus(D::call(call, h, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// A DDI `(context) -> Out` that needs only the adapter.
pub(super) trait OnContext<P: Platform> {
    /// What the DDI returns.
    type Out;
    /// What it returns for a null context.
    const NO_ADAPTER: Self::Out;
    /// The logic, with the call's adapter.
    fn call(a: &Adapter<P>) -> Self::Out;
}

/// The thunk of an [`OnContext`] DDI.
pub(super) unsafe extern "system" fn on_context<P: Platform, D: OnContext<P>>(
    ctx: *mut c_void,
) -> D::Out {
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.adapter::<P>(ctx) {
        Some(a) => D::call(a),
        None => D::NO_ADAPTER,
    }
}

/// A DDI `(context, Arg) -> Out` that needs the adapter and one value argument.
pub(super) trait OnContextWith<P: Platform> {
    /// The value argument.
    type Arg;
    /// What the DDI returns.
    type Out;
    /// What it returns for a null context.
    const NO_ADAPTER: Self::Out;
    /// The logic, with the call's adapter and argument.
    fn call(a: &Adapter<P>, arg: Self::Arg) -> Self::Out;
}

/// The thunk of an [`OnContextWith`] DDI.
pub(super) unsafe extern "system" fn on_context_with<P: Platform, D: OnContextWith<P>>(
    ctx: *mut c_void,
    arg: D::Arg,
) -> D::Out {
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    match call.adapter::<P>(ctx) {
        Some(a) => D::call(a, arg),
        None => D::NO_ADAPTER,
    }
}

/// DxgkDdiAddDevice (PASSIVE): makes the adapter context, the first term of the contract (the
/// context's lifetime is this module's, from here to [`remove_device`]).
#[allow(unsafe_code)]
pub(super) unsafe extern "system" fn add_device<P: Platform>(
    pdo: PDEVICE_OBJECT,
    context: *mut PVOID,
) -> NTSTATUS {
    if pdo.is_null() || context.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    // Pool exhaustion fails AddDevice cleanly: PnP start-up convention,
    // STATUS_INSUFFICIENT_RESOURCES, as for a full adapter table below.
    let Ok(adapter) = Adapter::<P>::try_new(pdo.cast()) else {
        return status::INSUFFICIENT_RESOURCES.code();
    };
    let Ok(boxed) = crate::kmem::try_box::<P, _>(adapter) else {
        return status::INSUFFICIENT_RESOURCES.code();
    };
    // Owned by Dxgkrnl's context from here until RemoveDevice frees it.
    let adapter: &Adapter<P> = Box::leak(boxed);
    let raw = core::ptr::from_ref(adapter);
    let Some(slot) = ADAPTERS.register(raw) else {
        // SAFETY: `raw` came from Box::leak above and was published nowhere.
        drop(unsafe { Box::from_raw(raw.cast_mut()) });
        return status::INSUFFICIENT_RESOURCES.code();
    };
    adapter.set_table_slot(slot);
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    // `context` was checked non-null above.
    call.put(context, raw.cast_mut().cast());
    status::SUCCESS
}

/// DxgkDdiRemoveDevice (PASSIVE): frees the context [`add_device`] made.
#[allow(unsafe_code)]
pub(super) unsafe extern "system" fn remove_device<P: Platform>(ctx: PVOID) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (Call::new).
    let call = unsafe { Call::new() };
    let Some(a) = call.adapter::<P>(ctx) else {
        return status::INVALID_PARAMETER.code();
    };
    if let Err(e) = a.remove() {
        return e.code();
    }
    // No reader can reach the adapter through the table once this returns.
    ADAPTERS.unregister(a.table_slot());
    // SAFETY: `ctx` came from Box::leak in add_device; Dxgkrnl calls nothing with it after
    // RemoveDevice, and `remove` checked the adapter is stopped.
    drop(unsafe { Box::from_raw(ctx.cast::<Adapter<P>>()) });
    status::SUCCESS
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiAddDevice = Some(add_device::<P>);
    t.DxgkDdiRemoveDevice = Some(remove_device::<P>);
}
