//! Dxgkrnl's pointer contract, stated once, and the helpers every thunk reaches it through.
//!
//! The contract (the DDI reference pages of each `DxgkDdiXxx`, and the calling convention the
//! whole `DRIVER_INITIALIZATION_DATA` table is under):
//!
//! - the adapter context (`MiniportDeviceContext`, `hAdapter`, a feature interface's
//!   `Context`) is null or the one [`super::adapter`]'s AddDevice returned, and Dxgkrnl calls
//!   nothing with it after RemoveDevice returns;
//! - an argument block, out pointer or argument array is null or valid, aligned and the
//!   driver's alone (nothing else reads or writes it) for the duration of the call: readable
//!   when the signature declares it `const`, readable and writable when it declares it `mut`;
//! - a private-data or output buffer described by a pointer and a byte count is null or holds
//!   that many bytes under the same terms.
//!
//! The helpers below turn such pointers into references whose lifetime ends with the call,
//! or `None` for null; each thunk then checks sizes and calls the module holding the logic.
//! The common shapes are whole thunks here ([`on_adapter`], [`on_adapter_mut`], [`on_args`],
//! [`on_context`] and their variants): a DDI of that shape names only its logic, through one of
//! the traits. A DDI the profiling scripts or a debugger session name keeps a thunk of its own
//! (scripts/callgrind-*.sh toggle on the symbol; a generic thunk's symbol does not name the DDI).

use core::ffi::c_void;

use rvgpu_ddi::{HANDLE, NTSTATUS};

use crate::adapter::Adapter;
use crate::allocation::MAX_PER_CALL;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus, Status};

/// The adapter behind a context, or `None` for null.
///
/// # Safety
/// `ctx` must obey the contract for adapter contexts (module docs).
pub(super) unsafe fn adapter<'a, P: Platform>(ctx: *const c_void) -> Option<&'a Adapter<P>> {
    // SAFETY: per the function contract.
    unsafe { ctx.cast::<Adapter<P>>().as_ref() }
}

/// The adapter and a read-only argument block, or `None` if either is null.
///
/// # Safety
/// `ctx` and `args` must obey the contract (module docs) for the call that passed them.
pub(super) unsafe fn adapter_and<'a, P: Platform, T>(
    ctx: *const c_void,
    args: *const T,
) -> Option<(&'a Adapter<P>, &'a T)> {
    // SAFETY: the function contract for `ctx`.
    let a = unsafe { adapter::<P>(ctx) }?;
    // SAFETY: the function contract for `args`.
    Some((a, unsafe { args.as_ref() }?))
}

/// The adapter and a writable argument block, or `None` if either is null.
///
/// # Safety
/// As for [`adapter_and`], with `args` writable.
pub(super) unsafe fn adapter_and_mut<'a, P: Platform, T>(
    ctx: *const c_void,
    args: *mut T,
) -> Option<(&'a Adapter<P>, &'a mut T)> {
    // SAFETY: the function contract for `ctx`.
    let a = unsafe { adapter::<P>(ctx) }?;
    // SAFETY: the function contract for `args`.
    Some((a, unsafe { args.as_mut() }?))
}

/// An OS-provided buffer of `len` bytes (a DDI's in/out private driver data, an output
/// buffer) as a slice: `Some(&mut [])` when `len` is 0, `None` when the pointer is null with a
/// non-zero length.
///
/// # Safety
/// `p` and `len` must obey the contract for buffers (module docs).
pub(super) unsafe fn os_buffer<'a>(
    p: *mut c_void,
    len: impl TryInto<usize>,
) -> Option<&'a mut [u8]> {
    let len: usize = len.try_into().ok()?;
    if len == 0 {
        return Some(&mut []);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and valid for `len` bytes (the function contract).
    Some(unsafe { core::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// A private-data buffer of the call as read-only bytes (`None`: null or empty).
///
/// # Safety
/// `p` and `len` must obey the contract for buffers (module docs), readable only.
pub(super) unsafe fn read_only<'a>(p: *mut c_void, len: u32) -> Option<&'a [u8]> {
    if len == 0 {
        return None;
    }
    // SAFETY: the function contract.
    unsafe { os_buffer(p, len) }.map(|b| &*b)
}

/// An OS array of `n` `T`s as a slice (`None` for a null array, more than
/// [`MAX_PER_CALL`] elements, or none).
///
/// # Safety
/// `p` must obey the contract for argument arrays (module docs) with `n` elements.
pub(super) unsafe fn os_array<'a, T>(p: *mut T, n: u32) -> Option<&'a mut [T]> {
    if p.is_null() || n == 0 || n > MAX_PER_CALL {
        return None;
    }
    let n = usize::try_from(n).ok()?;
    // SAFETY: the function contract.
    Some(unsafe { core::slice::from_raw_parts_mut(p, n) })
}

/// A DDI `(hAdapter, const ARGS*) -> NTSTATUS` whose thunk only resolves both.
pub(super) trait OnAdapter<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call's adapter and arguments.
    fn call(a: &Adapter<P>, args: &Self::Args) -> Result<(), Status>;
}

/// A DDI `(hAdapter, ARGS*) -> NTSTATUS` whose thunk only resolves both.
pub(super) trait OnAdapterMut<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call's adapter and arguments.
    fn call(a: &Adapter<P>, args: &mut Self::Args) -> Result<(), Status>;
}

/// A DDI `(const ARGS*) -> NTSTATUS` without an adapter handle (the logic finds the adapter
/// from a handle inside the arguments).
pub(super) trait OnArgs<P: Platform> {
    /// The argument block the signature declares.
    type Args;
    /// The logic, with the call's arguments.
    fn call(args: &Self::Args) -> Result<(), Status>;
}

/// The thunk of an [`OnAdapter`] DDI: STATUS_INVALID_PARAMETER for a null pointer.
pub(super) unsafe extern "system" fn on_adapter<P: Platform, D: OnAdapter<P>>(
    h_adapter: HANDLE,
    args: *const D::Args,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's contract for the call's pointers (module docs).
    match unsafe { adapter_and::<P, _>(h_adapter, args) } {
        Some((a, args)) => to_ntstatus(D::call(a, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnAdapterMut`] DDI: STATUS_INVALID_PARAMETER for a null pointer.
pub(super) unsafe extern "system" fn on_adapter_mut<P: Platform, D: OnAdapterMut<P>>(
    h_adapter: HANDLE,
    args: *mut D::Args,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's contract for the call's pointers (module docs).
    match unsafe { adapter_and_mut::<P, _>(h_adapter, args) } {
        Some((a, args)) => to_ntstatus(D::call(a, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnArgs`] DDI: STATUS_INVALID_PARAMETER for a null pointer.
pub(super) unsafe extern "system" fn on_args<P: Platform, D: OnArgs<P>>(
    args: *const D::Args,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's contract for the call's argument block (module docs).
    match unsafe { args.as_ref() } {
        Some(args) => to_ntstatus(D::call(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// The thunk of an [`OnAdapter`] DDI whose signature declares the block `mut` although the
/// logic only reads it.
pub(super) unsafe extern "system" fn on_adapter_reading<P: Platform, D: OnAdapter<P>>(
    h_adapter: HANDLE,
    args: *mut D::Args,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's contract for the call's pointers (module docs); the block is only read.
    unsafe { on_adapter::<P, D>(h_adapter, args.cast_const()) }
}

/// The thunk of an [`OnArgs`] DDI whose signature declares the block `mut` although the logic
/// only reads it.
pub(super) unsafe extern "system" fn on_args_reading<P: Platform, D: OnArgs<P>>(
    args: *mut D::Args,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's contract for the call's argument block (module docs); only read.
    unsafe { on_args::<P, D>(args.cast_const()) }
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
    // SAFETY: Dxgkrnl's contract for the adapter context (module docs).
    match unsafe { adapter::<P>(ctx) } {
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
    // SAFETY: Dxgkrnl's contract for the adapter context (module docs).
    match unsafe { adapter::<P>(ctx) } {
        Some(a) => D::call(a, arg),
        None => D::NO_ADAPTER,
    }
}
