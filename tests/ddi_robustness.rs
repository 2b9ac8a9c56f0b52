//! "Every filled slot validates its arguments and returns an NTSTATUS" ("DDI table
//! completeness").
//!
//! Each filled slot of the driver's `DRIVER_INITIALIZATION_DATA` is called through the table, the
//! way Dxgkrnl calls it, with a NULL context and/or NULL argument pointers. NTSTATUS slots must
//! return a failure code (STATUS_INVALID_PARAMETER where the driver's thunks document it,
//! driver/kmd/src/thunk/contract.rs) and must not crash; void/BOOLEAN slots must simply return
//! (the ISR returning FALSE). A slot whose catalog row says it fails on NULL arguments is also
//! called with every argument 0 by a pass over the table, and again with a live adapter context
//! first (if it takes a context or handle there), which is its case (`table_passes`); a coverage check makes any
//! other newly filled slot fail here until it gets one.
//!
//! The lifecycle test uses the real AddDevice/RemoveDevice: an unstarted adapter refuses
//! StopDevice with STATUS_INVALID_DEVICE_STATE and RemoveDevice frees what AddDevice allocated
//! (checked with a per-thread allocation counter).
//!
//! Every raw call goes through a small safe wrapper whose `// SAFETY:` says why the arguments are
//! acceptable to the DDI: they are NULL or point to live locals for the duration of the call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::ffi::c_void;
use std::ptr;

use rvgpu_ddi::adapter::{
    DxgkAcpiEvent, DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_DRIVERCAPS, DXGK_CHILD_DESCRIPTOR,
    DXGK_QUERYADAPTERINFOFLAGS,
};
use rvgpu_ddi::catalog::{self, OnNull};
use rvgpu_ddi::fence::{
    DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE, DXGKARG_UPDATECURRENTVALUESFROMCPU,
    DXGKARG_UPDATEMONITOREDVALUES,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::{
    STATUS_BUFFER_TOO_SMALL, STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_HANDLE,
    STATUS_INVALID_PARAMETER, STATUS_NOT_IMPLEMENTED, STATUS_SUCCESS,
};
use rvgpu_ddi::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_CREATEDOORBELL,
    DXGKARG_CREATEHWQUEUE, DXGKARG_DESTROYDOORBELL, DXGKARG_DISCONNECTDOORBELL,
    DXGKARG_NOTIFYWORKSUBMISSION, DXGKARG_RESUMECONTEXT, DXGKARG_SUBMITCOMMANDTOHWQUEUE,
    DXGKARG_SUSPENDCONTEXT, DXGK_NODEMETADATA,
};
use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGKARG_QUERYDEPENDENTENGINEGROUP,
    DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE, DXGK_TDR_TYPE_ENGINE_TIMEOUT,
    VIDEO_ENGINE_TIMEOUT_DETECTED,
};
use rvgpu_ddi::{PowerDeviceD0, PowerDeviceMaximum, HANDLE, NTSTATUS, PDEVICE_OBJECT, PVOID};
use rvgpu_kmd::{Adapter, DISPLAY_ADAPTER_HW_ID};

// ---------------------------------------------------------------------------------------------
// Test platform and allocation accounting
// ---------------------------------------------------------------------------------------------

mod common;
use common::NullPlatform;

#[path = "ddi_robustness/table_passes.rs"]
mod table_passes;
use table_passes::slots_the_zero_pass_calls;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread (tests run on their own threads, so a
    /// test sees only its own allocations).
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

/// The system allocator, counting per thread.
struct Counting;

fn account(delta: isize) {
    // `try_with`: during thread teardown the slot may be gone; those frees are not ours.
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get().wrapping_add(delta)));
}

fn signed(size: usize) -> isize {
    isize::try_from(size).unwrap_or(isize::MAX)
}

// SAFETY: forwards to `System` unchanged; the bookkeeping neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as ours, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            account(signed(layout.size()));
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(signed(layout.size()).wrapping_neg());
        // SAFETY: same contract as ours, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live_bytes() -> isize {
    LIVE_BYTES.with(Cell::get)
}

// ---------------------------------------------------------------------------------------------
// Safe wrappers over the table
// ---------------------------------------------------------------------------------------------

/// The driver's table, as `DriverEntry` builds it, for the host test platform.
fn table() -> DRIVER_INITIALIZATION_DATA {
    rvgpu_kmd::initialization_data::<NullPlatform>()
}

/// `is NT_SUCCESS`.
fn nt_success(s: NTSTATUS) -> bool {
    s >= 0
}

fn show(s: NTSTATUS) -> String {
    format!("{:#010x}", s.cast_unsigned())
}

/// Asserts `s` is a failure NTSTATUS equal to `want`.
#[track_caller]
fn expect_status(slot: &str, case: &str, s: NTSTATUS, want: NTSTATUS) {
    assert!(
        !nt_success(s),
        "{slot} ({case}) returned success {} for bad arguments",
        show(s)
    );
    assert_eq!(
        s,
        want,
        "{slot} ({case}) returned {} instead of {}",
        show(s),
        show(want)
    );
}

/// Short names for the statuses the table's rows expect.
const BAD_PARAMETER: NTSTATUS = STATUS_INVALID_PARAMETER;
const BAD_HANDLE: NTSTATUS = STATUS_INVALID_HANDLE;
const BAD_STATE: NTSTATUS = STATUS_INVALID_DEVICE_STATE;

/// What a row of [`refused!`] expects: a status, or [`ON_NULL`].
#[derive(Clone, Copy)]
enum Want {
    Status(NTSTATUS),
    OnNull,
}

/// The failure the DDI catalog states for the slot's NULL arguments (`Ddi::on_null`).
const ON_NULL: Want = Want::OnNull;

impl From<NTSTATUS> for Want {
    fn from(s: NTSTATUS) -> Self {
        Self::Status(s)
    }
}

/// The status `want` names for `slot`.
#[track_caller]
fn wanted(slot: &str, want: impl Into<Want>) -> NTSTATUS {
    match want.into() {
        Want::Status(s) => s,
        Want::OnNull => {
            let answer = catalog::find(slot).map(|d| d.on_null);
            let status = match answer {
                Some(OnNull::Fails(s)) => Some(s),
                _ => None,
            };
            assert!(
                status.is_some(),
                "{slot}: the catalog states no failure for NULL arguments: {answer:?}"
            );
            status.unwrap_or(STATUS_SUCCESS)
        }
    }
}

/// The catalog states these answers to NULL arguments for the slots that return no status
/// (checked where the test calls them).
#[track_caller]
fn catalog_says(answers: &[(&str, OnNull)]) {
    for &(slot, answer) in answers {
        assert_eq!(
            catalog::find(slot).map(|r| r.on_null),
            Some(answer),
            "{slot}"
        );
    }
}

/// A NULL pointer of whatever type the slot's parameter has.
fn nil<T>() -> *mut T {
    ptr::null_mut()
}

/// Rows of the robustness table: each calls the filled slot `d.$slot` with the given
/// arguments and asserts it failed with `$want`, a status or [`ON_NULL`] (`$case` names the row
/// in the message).
///
/// The arguments of every row obey the one contract the expansion's `unsafe` relies on: each
/// is NULL, a plain value, an object handle (which the driver decodes and looks up, never
/// dereferences), the context of a live [`AdapterCtx`], or a pointer to a local that is alive,
/// aligned and sized for its type for the duration of the call.
macro_rules! refused {
    ($d:ident; $($slot:ident ( $($arg:expr),* $(,)? ) => $want:expr, $case:expr;)+) => {{
        $(
            let f = $d.$slot.expect(concat!(stringify!($slot), " filled"));
            // SAFETY: the row's arguments obey the macro's contract (above).
            let s = unsafe { f($($arg),*) };
            let want = wanted(stringify!($slot), $want);
            expect_status(stringify!($slot).trim_start_matches("DxgkDdi"), $case, s, want);
        )+
    }};
}

/// A context from the real AddDevice, removed (and freed) on drop.
struct AdapterCtx {
    ctx: PVOID,
    d: DRIVER_INITIALIZATION_DATA,
}

impl AdapterCtx {
    /// Calls DxgkDdiAddDevice with a fake PDO (the driver stores it, never dereferences it).
    fn add(d: &DRIVER_INITIALIZATION_DATA, pdo_stand_in: &mut u64) -> (NTSTATUS, Option<Self>) {
        let Some(f) = d.DxgkDdiAddDevice else {
            return (STATUS_NOT_IMPLEMENTED, None);
        };
        let pdo: PDEVICE_OBJECT = ptr::from_mut(pdo_stand_in).cast();
        let mut ctx: PVOID = ptr::null_mut();
        // SAFETY: `pdo` is non-null and opaque to the driver (stored only); `&mut ctx` is a valid
        // out pointer for the call.
        // SAFETY: NULL arguments are what is being tested; the driver checks them first.
        let s = unsafe { f(pdo, &mut ctx) };
        let a = (nt_success(s) && !ctx.is_null()).then_some(Self { ctx, d: *d });
        (s, a)
    }

    /// [`AdapterCtx::add`], which must succeed.
    #[allow(
        clippy::expect_used,
        reason = "a test fixture: a failed AddDevice fails the test"
    )]
    fn added(d: &DRIVER_INITIALIZATION_DATA, pdo_stand_in: &mut u64) -> Self {
        let (s, a) = Self::add(d, pdo_stand_in);
        assert_eq!(s, STATUS_SUCCESS, "AddDevice failed: {}", show(s));
        a.expect("AddDevice returned a context")
    }
}

impl Drop for AdapterCtx {
    fn drop(&mut self) {
        if let Some(f) = self.d.DxgkDdiRemoveDevice {
            // SAFETY: `ctx` came from AddDevice and is removed exactly once, here.
            let _ = unsafe { f(self.ctx) };
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// The slots this file's cases call: a `refused!` row (`DxgkDdiX(…) => …`) or a slot read
/// from the table (`d.DxgkDdiX`), in code rather than comments. The cases are the list: a new
/// DDI needs no entry elsewhere, and a filled slot no case calls fails
/// `every_filled_slot_has_a_robustness_case`.
fn slots_the_cases_call() -> BTreeSet<String> {
    let slots = DRIVER_INITIALIZATION_DATA::SLOT_NAMES;
    let mut called = BTreeSet::new();
    for line in include_str!("ddi_robustness.rs").lines() {
        let code = line.split("//").next().unwrap_or("");
        let (mut word, mut before, mut prev) = (String::new(), ' ', ' ');
        for c in code.chars().chain([' ']) {
            if c.is_ascii_alphanumeric() || c == '_' {
                if word.is_empty() {
                    before = prev;
                }
                word.push(c);
            } else if !word.is_empty() {
                // A call (`DxgkDdiX(`) or a read of the slot (`d.DxgkDdiX`).
                if slots.contains(&word.as_str()) && (c == '(' || before == '.') {
                    called.insert(word.clone());
                }
                word.clear();
            }
            prev = c;
        }
    }
    called
}

#[test]
fn every_filled_slot_has_a_robustness_case() {
    let d = table();
    let covered = slots_the_cases_call();
    assert!(covered.len() > 60, "{covered:?}");
    let zero_pass = slots_the_zero_pass_calls(&d);
    let missing: Vec<_> = rvgpu_ddi::init::filled_slots(&d)
        .filter(|&(n, set)| set && !covered.contains(n) && !zero_pass.contains(n))
        .map(|(n, _)| n)
        .collect();
    assert!(
        missing.is_empty(),
        "filled slots without a NULL-argument case in tests/ddi_robustness.rs: {missing:?}"
    );
    let unstated: Vec<_> = rvgpu_ddi::init::filled_slots(&d)
        .filter(|&(n, set)| set && catalog::find(n).is_none_or(|r| r.on_null == OnNull::Unstated))
        .map(|(n, _)| n)
        .collect();
    assert!(
        unstated.is_empty(),
        "filled slots whose answer to NULL arguments the catalog does not state: {unstated:?}"
    );
}

#[test]
fn null_arguments_fail_with_an_ntstatus_and_do_not_crash() {
    let d = table();
    let null = ptr::null_mut::<c_void>();

    // DxgkDdiAddDevice: NULL PDO and/or NULL out pointer.
    refused! { d;
        DxgkDdiAddDevice(nil(), nil()) => ON_NULL, "NULL, NULL";
    }
    let mut out: PVOID = null;
    refused! { d;
        DxgkDdiAddDevice(nil(), &mut out) => BAD_PARAMETER, "NULL PDO";
    }
    assert!(out.is_null(), "AddDevice wrote a context despite failing");
    let mut pdo_stand_in = 0u64;
    let pdo: PDEVICE_OBJECT = ptr::from_mut(&mut pdo_stand_in).cast();
    refused! { d;
        DxgkDdiAddDevice(pdo, nil()) => BAD_PARAMETER, "NULL out";
    }

    // DxgkDdiStartDevice: NULL context and NULL out/in pointers.
    refused! { d;
        DxgkDdiStartDevice(null, nil(), nil(), nil(), nil()) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiStopDevice / DxgkDdiRemoveDevice: NULL context.
    refused! { d;
        DxgkDdiStopDevice(null) => ON_NULL, "NULL ctx";
        DxgkDdiRemoveDevice(null) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiDispatchIoRequest.
    refused! { d;
        DxgkDdiDispatchIoRequest(null, 0, nil()) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiInterruptRoutine (BOOLEAN): a NULL context is not our interrupt.
    let f = d.DxgkDdiInterruptRoutine.expect("InterruptRoutine filled");
    // SAFETY: NULL context is the tested input.
    let claimed = unsafe { f(null, 0) };
    assert_eq!(claimed, 0, "ISR claimed an interrupt for a NULL context");

    // DxgkDdiDpcRoutine (void): must return.
    let f = d.DxgkDdiDpcRoutine.expect("DpcRoutine filled");
    // SAFETY: NULL context is the tested input.
    unsafe { f(null) };

    // DxgkDdiQueryChildRelations.
    refused! { d;
        DxgkDdiQueryChildRelations(null, nil(), 0) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiQueryChildStatus.
    refused! { d;
        DxgkDdiQueryChildStatus(null, nil(), 0) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiQueryDeviceDescriptor.
    refused! { d;
        DxgkDdiQueryDeviceDescriptor(null, 0, nil()) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiSetPowerState.
    refused! { d;
        DxgkDdiSetPowerState(null, DISPLAY_ADAPTER_HW_ID, PowerDeviceD0, 0)
            => ON_NULL, "NULL ctx";
    }

    // DxgkDdiNotifyAcpiEvent.
    refused! { d;
        DxgkDdiNotifyAcpiEvent(null, DxgkAcpiEvent, 0, null, nil()) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiNotifySurpriseRemoval: NULL context.
    refused! { d;
        DxgkDdiNotifySurpriseRemoval(null, rvgpu_ddi::adapter::DxgkRemovalPnPNotify)
            => ON_NULL, "NULL ctx";
    }

    // DxgkDdiResetDevice (void), DxgkDdiUnload (void), DxgkDdiControlEtwLogging (void).
    let f = d.DxgkDdiResetDevice.expect("ResetDevice filled");
    // SAFETY: NULL context is the tested input.
    unsafe { f(null) };
    let f = d.DxgkDdiUnload.expect("Unload filled");
    // SAFETY: takes no arguments; rvgpu keeps no global state to free.
    unsafe { f() };
    let f = d
        .DxgkDdiControlEtwLogging
        .expect("ControlEtwLogging filled");
    // SAFETY: plain values.
    unsafe { f(0, 0, 0) };
    // SAFETY: plain values.
    unsafe { f(1, u32::MAX, u8::MAX) };

    catalog_says(&[
        ("DxgkDdiInterruptRoutine", OnNull::NotClaimed),
        ("DxgkDdiDpcRoutine", OnNull::Returns),
        ("DxgkDdiResetDevice", OnNull::Returns),
        ("DxgkDdiUnload", OnNull::Returns),
        ("DxgkDdiControlEtwLogging", OnNull::Returns),
    ]);

    // DxgkDdiQueryInterface.
    refused! { d;
        DxgkDdiQueryInterface(null, nil()) => ON_NULL, "NULL ctx";
    }

    // DxgkDdiQueryAdapterInfo: NULL hAdapter and NULL argument block.
    refused! { d;
        DxgkDdiQueryAdapterInfo(null, nil()) => ON_NULL, "NULL hAdapter";
    }

    // Native-fence DDIs: NULL adapter and/or NULL argument blocks.
    refused! { d;
        DxgkDdiCreateNativeFence(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiOpenNativeFence(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiCloseNativeFence(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiEscape(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiDestroyNativeFence(nil()) => ON_NULL, "NULL";
        DxgkDdiUpdateMonitoredValues(nil()) => ON_NULL, "NULL";
        DxgkDdiUpdateCurrentValuesFromCpu(nil()) => ON_NULL, "NULL";
    }

    // TDR (TDR-01, TDR-09): NULL adapter and/or NULL argument blocks.
    refused! { d;
        DxgkDdiQueryDependentEngineGroup(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiQueryEngineStatus(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiResetEngine(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut reset = DXGKARG_RESETENGINE::default();
    refused! { d;
        DxgkDdiResetEngine(null, &mut reset) => BAD_PARAMETER, "NULL hAdapter";
        DxgkDdiCollectDbgInfo(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiCollectDbgInfo2(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiResetFromTimeout(null) => ON_NULL, "NULL";
        DxgkDdiRestartFromTimeout(null) => ON_NULL, "NULL";
    }

    // Devices, contexts, hardware queues, doorbells: NULL adapter, NULL argument blocks, and
    // NULL object handles (which the driver decodes, never dereferences).
    refused! { d;
        DxgkDdiCreateDevice(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiDestroyDevice(null) => ON_NULL, "NULL";
        DxgkDdiCreateContext(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiDestroyContext(null) => ON_NULL, "NULL";
        DxgkDdiGetNodeMetadata(null, 0, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiSuspendContext(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiResumeContext(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiCreateHwQueue(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut queue = DXGKARG_CREATEHWQUEUE::default();
    refused! { d;
        DxgkDdiCreateHwQueue(null, &mut queue) => BAD_HANDLE, "NULL hHwContext";
        DxgkDdiDestroyHwQueue(null) => ON_NULL, "NULL";
        DxgkDdiSubmitCommandToHwQueue(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiCreateDoorbell(nil()) => ON_NULL, "NULL";
    }
    let mut create = DXGKARG_CREATEDOORBELL::default();
    refused! { d;
        DxgkDdiCreateDoorbell(&mut create) => BAD_HANDLE, "NULL hHwQueue";
        DxgkDdiConnectDoorbell(nil()) => ON_NULL, "NULL";
    }
    let mut connect = DXGKARG_CONNECTDOORBELL::default();
    refused! { d;
        DxgkDdiConnectDoorbell(&mut connect) => BAD_HANDLE, "NULL hDoorbell";
    }
    assert!(
        connect.KernelCpuVirtualAddress.is_null(),
        "a refused connect returned an address"
    );
    refused! { d;
        DxgkDdiDisconnectDoorbell(nil()) => ON_NULL, "NULL";
    }
    let mut disconnect = DXGKARG_DISCONNECTDOORBELL::default();
    refused! { d;
        DxgkDdiDisconnectDoorbell(&mut disconnect) => BAD_HANDLE, "NULL hDoorbell";
        DxgkDdiDestroyDoorbell(nil()) => ON_NULL, "NULL";
    }
    let mut destroy = DXGKARG_DESTROYDOORBELL::default();
    refused! { d;
        DxgkDdiDestroyDoorbell(&mut destroy) => BAD_HANDLE, "NULL hDoorbell";
        DxgkDdiNotifyWorkSubmission(nil()) => ON_NULL, "NULL";
    }
    let mut notify = DXGKARG_NOTIFYWORKSUBMISSION::default();
    refused! { d;
        DxgkDdiNotifyWorkSubmission(&mut notify) => BAD_HANDLE, "NULL hHwQueue";
    }
}

/// Handles that look plausible but name nothing (garbage values, other kinds, handles built
/// for adapter slots that hold no started adapter) are refused with STATUS_INVALID_HANDLE by
/// every object-handle DDI: handles are decoded and looked up, never dereferenced.
#[test]
fn garbage_object_handles_are_invalid_handles() {
    let d = table();
    let junk: Vec<HANDLE> = [
        1usize,
        0x1000,
        0xDEAD_BEEF,
        usize::MAX,
        // Adapter slot 0, kind 1..=4, sequence 1: well-formed, but no started adapter.
        (1usize << 56) | (1 << 52) | 1,
        (1usize << 56) | (2 << 52) | 1,
        (1usize << 56) | (3 << 52) | 1,
        (1usize << 56) | (4 << 52) | 1,
        (16usize << 56) | (3 << 52) | 7,
    ]
    .into_iter()
    .map(ptr::without_provenance_mut::<c_void>)
    .collect();
    for &h in &junk {
        let case = format!("{h:p}");
        let mut ctx = DXGKARG_CREATECONTEXT::default();
        let mut q = DXGKARG_CREATEHWQUEUE {
            HwQueueProgressFenceGPUVirtualAddress: 0x1_0000,
            ..Default::default()
        };
        let mut create = DXGKARG_CREATEDOORBELL {
            hHwQueue: h,
            ..Default::default()
        };
        let mut connect = DXGKARG_CONNECTDOORBELL {
            hDoorbell: h,
            ..Default::default()
        };
        let mut disconnect = DXGKARG_DISCONNECTDOORBELL {
            hDoorbell: h,
            ..Default::default()
        };
        let mut destroy = DXGKARG_DESTROYDOORBELL { hDoorbell: h };
        let mut notify = DXGKARG_NOTIFYWORKSUBMISSION {
            hHwQueue: h,
            ..Default::default()
        };
        refused! { d;
            DxgkDdiDestroyDevice(h) => BAD_HANDLE, &case;
            DxgkDdiDestroyContext(h) => BAD_HANDLE, &case;
            DxgkDdiDestroyHwQueue(h) => BAD_HANDLE, &case;
            DxgkDdiCreateContext(h, &mut ctx) => BAD_HANDLE, &case;
            DxgkDdiCreateHwQueue(h, &mut q) => BAD_HANDLE, &case;
            DxgkDdiCreateDoorbell(&mut create) => BAD_HANDLE, &case;
            DxgkDdiConnectDoorbell(&mut connect) => BAD_HANDLE, &case;
            DxgkDdiDisconnectDoorbell(&mut disconnect) => BAD_HANDLE, &case;
            DxgkDdiDestroyDoorbell(&mut destroy) => BAD_HANDLE, &case;
            DxgkDdiNotifyWorkSubmission(&mut notify) => BAD_HANDLE, &case;
        }
        assert!(ctx.hContext.is_null(), "a refused create returned a handle");
    }
}

/// With a real (unstarted) adapter context, the NULL *argument* pointers are what must be
/// rejected, and bad values too.
#[test]
fn null_argument_pointers_with_a_live_context_fail() {
    let d = table();
    let mut pdo_stand_in = 0u64;
    let a = AdapterCtx::added(&d, &mut pdo_stand_in);
    let ctx = a.ctx;

    refused! { d;
        DxgkDdiStartDevice(ctx, nil(), nil(), nil(), nil()) => BAD_PARAMETER, "NULL args";
    }

    refused! { d;
        DxgkDdiDispatchIoRequest(ctx, 0, nil()) => BAD_PARAMETER, "NULL packet";
    }

    refused! { d;
        DxgkDdiQueryChildRelations(ctx, nil(), 0) => BAD_PARAMETER, "NULL array";
    }
    let mut one = std::mem::MaybeUninit::<DXGK_CHILD_DESCRIPTOR>::zeroed();
    refused! { d;
        DxgkDdiQueryChildRelations(ctx, one.as_mut_ptr(), 0) => STATUS_BUFFER_TOO_SMALL, "size 0";
    }

    refused! { d;
        DxgkDdiQueryChildStatus(ctx, nil(), 1) => BAD_PARAMETER, "NULL status";
    }

    refused! { d;
        DxgkDdiQueryDeviceDescriptor(ctx, 0, nil()) => BAD_PARAMETER, "NULL descriptor";
    }

    refused! { d;
        DxgkDdiSetPowerState(ctx, 0, PowerDeviceD0, 0) => BAD_PARAMETER, "child uid 0";
        DxgkDdiSetPowerState(ctx, DISPLAY_ADAPTER_HW_ID, PowerDeviceMaximum, 0)
            => BAD_PARAMETER, "PowerDeviceMaximum";
    }

    refused! { d;
        DxgkDdiNotifyAcpiEvent(ctx, DxgkAcpiEvent, 0, nil(), nil())
            => BAD_PARAMETER, "NULL AcpiFlags";
    }

    refused! { d;
        DxgkDdiQueryInterface(ctx, nil()) => BAD_PARAMETER, "NULL query";
    }

    refused! { d;
        DxgkDdiQueryAdapterInfo(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }
    let mut out = [0u8; 64];
    let out_len = u32::try_from(out.len()).expect("small");
    let args = DXGKARG_QUERYADAPTERINFO {
        Type: DXGKQAITYPE_DRIVERCAPS,
        pInputData: ptr::null_mut(),
        InputDataSize: 0,
        pOutputData: out.as_mut_ptr().cast(),
        OutputDataSize: out_len,
        Flags: DXGK_QUERYADAPTERINFOFLAGS::from_value(0),
        hKmdProcessHandle: ptr::null_mut(),
    };
    refused! { d;
        DxgkDdiQueryAdapterInfo(ctx, &args) => BAD_STATE, "unstarted adapter";
    }

    // Native fences on an unstarted adapter (no negotiated feature): refused, nothing kept.
    let mut create = DXGKARG_CREATENATIVEFENCE {
        hGlobalNativeFence: 0x1000 as HANDLE,
        CurrentValueSystemProcessGpuVa: 0x1_0000,
        MonitoredValueSystemProcessGpuVa: 0x1_0008,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiCreateNativeFence(ctx, &mut create) => BAD_STATE, "unstarted adapter";
    }
    // An unknown global handle, and empty or oversized update batches.
    let destroy = DXGKARG_DESTROYNATIVEFENCE {
        hGlobalNativeFence: 0x1000 as HANDLE,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiDestroyNativeFence(ptr::from_ref(&destroy).cast_mut())
            => BAD_HANDLE, "unknown handle";
    }
    let mut handle: HANDLE = 0x1000 as HANDLE;
    let mut value = 5u64;
    let mut slot = 0u64;
    let mut va: PVOID = ptr::from_mut(&mut slot).cast();
    let mut update = DXGKARG_UPDATEMONITOREDVALUES {
        NativeFenceArray: &mut handle,
        UpdatedValueArray: &mut value,
        MonitoredValueKernelCpuVa: &mut va,
        NumFences: 0,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiUpdateMonitoredValues(&update) => BAD_PARAMETER, "NumFences 0";
    }
    update.NumFences = 1;
    refused! { d;
        DxgkDdiUpdateMonitoredValues(&update) => BAD_HANDLE, "unknown handle";
    }
    assert_eq!(slot, 0, "nothing may be written for a refused update");
    let current = DXGKARG_UPDATECURRENTVALUESFROMCPU {
        NativeFenceArray: &mut handle,
        UpdatedValueArray: &mut value,
        CurrentValueKernelCpuVa: &mut va,
        NumFences: 1,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiUpdateCurrentValuesFromCpu(&current) => BAD_HANDLE, "unknown handle";
    }
    assert_eq!(slot, 0, "nothing may be written for a refused update");

    // Devices, node metadata, suspend/resume and submission on an unstarted adapter: refused.
    let mut dev = DXGKARG_CREATEDEVICE {
        hDevice: 0x2000 as HANDLE,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiCreateDevice(ctx, &mut dev) => BAD_STATE, "unstarted adapter";
    }
    assert_eq!(
        dev.hDevice, 0x2000 as HANDLE,
        "refused create changed hDevice"
    );
    refused! { d;
        DxgkDdiGetNodeMetadata(ctx, 0, nil()) => BAD_PARAMETER, "NULL out";
    }
    let mut md = DXGK_NODEMETADATA::default();
    refused! { d;
        DxgkDdiGetNodeMetadata(ctx, 0, &mut md) => BAD_STATE, "unstarted adapter";
    }
    let suspend = DXGKARG_SUSPENDCONTEXT {
        hContext: 0x1000 as HANDLE,
        contextSuspendFence: 1,
    };
    refused! { d;
        DxgkDdiSuspendContext(ctx, &suspend) => BAD_STATE, "unstarted adapter";
    }
    let resume = DXGKARG_RESUMECONTEXT {
        hContext: 0x1000 as HANDLE,
    };
    refused! { d;
        DxgkDdiResumeContext(ctx, &resume) => BAD_STATE, "unstarted adapter";
        DxgkDdiSubmitCommandToHwQueue(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }
    let submit = DXGKARG_SUBMITCOMMANDTOHWQUEUE {
        hHwQueue: 0x1000 as HANDLE,
        DmaBufferVirtualAddress: 0x10_0000,
        DmaBufferSize: 4096,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiSubmitCommandToHwQueue(ctx, &submit) => BAD_HANDLE, "garbage hHwQueue";
    }

    // TDR DDIs on an unstarted adapter: NULL blocks refused, then "not started"; nothing
    // written to the outputs. CollectDbgInfo (level 0, any time) still answers, bounded.
    refused! { d;
        DxgkDdiQueryDependentEngineGroup(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }
    let mut group = DXGKARG_QUERYDEPENDENTENGINEGROUP::default();
    refused! { d;
        DxgkDdiQueryDependentEngineGroup(ctx, &mut group) => BAD_STATE, "unstarted adapter";
    }
    assert_eq!(
        group.DependentNodeOrdinalMask, 0,
        "refused query wrote a mask"
    );
    refused! { d;
        DxgkDdiQueryEngineStatus(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }
    let mut status = DXGKARG_QUERYENGINESTATUS::default();
    refused! { d;
        DxgkDdiQueryEngineStatus(ctx, &mut status) => BAD_STATE, "unstarted adapter";
        DxgkDdiResetEngine(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }
    let mut reset = DXGKARG_RESETENGINE {
        NodeOrdinal: 0,
        EngineOrdinal: 0,
        LastAbortedFenceId: 0xDEAD,
    };
    refused! { d;
        DxgkDdiResetEngine(ctx, &mut reset) => BAD_STATE, "unstarted adapter";
    }
    assert_eq!(
        reset.LastAbortedFenceId, 0xDEAD,
        "refused reset wrote an ID"
    );
    let f = d.DxgkDdiCollectDbgInfo.expect("CollectDbgInfo filled");
    refused! { d;
        DxgkDdiCollectDbgInfo(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }
    let mut dbg = DXGKARG_COLLECTDBGINFO {
        Reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
        pBuffer: ptr::null_mut(),
        BufferSize: 64,
        pExtension: ptr::null_mut(),
    };
    refused! { d;
        DxgkDdiCollectDbgInfo(ctx, &dbg) => BAD_PARAMETER, "NULL pBuffer";
    }
    let mut text = [0xAAu8; 24];
    dbg.pBuffer = text.as_mut_ptr().cast();
    dbg.BufferSize = 16;
    // SAFETY: live context; 16 writable bytes of a 24-byte local.
    let s = unsafe { f(ctx, &dbg) };
    assert_eq!(
        s,
        STATUS_SUCCESS,
        "CollectDbgInfo on an unstarted adapter: {}",
        show(s)
    );
    assert!(
        text[..16].contains(&0),
        "the report is NUL-terminated inside BufferSize"
    );
    assert!(
        text[16..].iter().all(|b| *b == 0xAA),
        "wrote past BufferSize"
    );
    dbg.BufferSize = 0;
    dbg.pBuffer = ptr::null_mut();
    // SAFETY: live context; nothing may be written.
    let s = unsafe { f(ctx, &dbg) };
    assert_eq!(
        s,
        STATUS_SUCCESS,
        "CollectDbgInfo with BufferSize 0: {}",
        show(s)
    );
    // CollectDbgInfo2: the dump record (rvgpu_hw::tdrdump); a NULL, short or misaligned
    // payload is survived (the page allows NULL) and the record still bounded: a header
    // without engines on an unstarted adapter.
    let f2 = d.DxgkDdiCollectDbgInfo2.expect("CollectDbgInfo2 filled");
    refused! { d;
        DxgkDdiCollectDbgInfo2(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }
    let mut payload = [0u64; 6];
    for (size, at) in [(0u32, 0usize), (40, 0), (39, 0), (40, 1)] {
        let mut text = [0xAAu8; 200];
        let p: *mut u8 = payload.as_mut_ptr().cast();
        let mut dbg2 = DXGKARG_COLLECTDBGINFO2 {
            Reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
            pBuffer: text.as_mut_ptr().cast(),
            BufferSize: 160,
            pExtension: ptr::null_mut(),
            TdrType: DXGK_TDR_TYPE_ENGINE_TIMEOUT,
            TdrPayloadSize: size,
            TdrPayload: if size == 0 {
                ptr::null_mut()
            } else {
                p.wrapping_add(at).cast()
            },
        };
        // SAFETY: live context; 160 writable bytes of a 200-byte local; a payload of `size`
        // bytes inside a 48-byte local (or NULL).
        let s = unsafe { f2(ctx, &mut dbg2) };
        assert_eq!(
            s,
            STATUS_SUCCESS,
            "CollectDbgInfo2 payload {size}@{at}: {}",
            show(s)
        );
        let h = rvgpu_hw::tdrdump::header(&text[..160]).expect("a dump header");
        assert_eq!((h.engine_count, h.records), (0, 0));
        assert!(
            text[160..].iter().all(|b| *b == 0xAA),
            "wrote past BufferSize"
        );
    }
    refused! { d;
        DxgkDdiResetFromTimeout(ctx) => BAD_STATE, "unstarted adapter";
        DxgkDdiRestartFromTimeout(ctx) => BAD_STATE, "unstarted adapter";
    }

    // ISR and DPC on an unstarted adapter: not our interrupt, DPC returns.
    let f = d.DxgkDdiInterruptRoutine.expect("InterruptRoutine filled");
    // SAFETY: live context.
    let claimed = unsafe { f(ctx, 0) };
    assert_eq!(
        claimed, 0,
        "ISR claimed an interrupt on an unstarted adapter"
    );
    let f = d.DxgkDdiDpcRoutine.expect("DpcRoutine filled");
    // SAFETY: live context.
    unsafe { f(ctx) };
    let f = d.DxgkDdiResetDevice.expect("ResetDevice filled");
    // SAFETY: live context.
    unsafe { f(ctx) };
    // Surprise removal: an unknown removal type is refused; a real one on an adapter that
    // never started has nothing to cut off and succeeds.
    let f = d
        .DxgkDdiNotifySurpriseRemoval
        .expect("NotifySurpriseRemoval filled");
    refused! { d;
        DxgkDdiNotifySurpriseRemoval(ctx, 7) => BAD_PARAMETER, "bad type";
    }
    // SAFETY: the live context and a plain value.
    let s = unsafe { f(ctx, rvgpu_ddi::adapter::DxgkRemovalHibernation) };
    assert_eq!(
        s, STATUS_SUCCESS,
        "NotifySurpriseRemoval on an unstarted adapter"
    );
    drop(a);
}

/// AddDevice allocates the adapter context; StopDevice on an adapter that never started is
/// STATUS_INVALID_DEVICE_STATE; RemoveDevice succeeds and frees the context.
#[test]
fn add_device_then_remove_device_frees_the_adapter() {
    let d = table();
    let before = live_bytes();
    let mut pdo_stand_in = 0u64;

    let add = d.DxgkDdiAddDevice.expect("AddDevice filled");
    let mut ctx: PVOID = ptr::null_mut();
    let pdo: PDEVICE_OBJECT = ptr::from_mut(&mut pdo_stand_in).cast();
    // SAFETY: non-null opaque PDO (stored, never dereferenced); valid out pointer.
    let s = unsafe { add(pdo, &mut ctx) };
    assert_eq!(s, STATUS_SUCCESS, "AddDevice: {}", show(s));
    assert!(!ctx.is_null(), "AddDevice returned a NULL context");
    let grown = live_bytes().wrapping_sub(before);
    let adapter_size = signed(size_of::<Adapter<NullPlatform>>());
    assert!(
        grown >= adapter_size,
        "AddDevice allocated {grown} bytes, less than an adapter ({adapter_size})"
    );

    let stop = d.DxgkDdiStopDevice.expect("StopDevice filled");
    // SAFETY: context from AddDevice, not removed.
    let s = unsafe { stop(ctx) };
    assert_eq!(
        s,
        STATUS_INVALID_DEVICE_STATE,
        "StopDevice on an unstarted adapter returned {}",
        show(s)
    );

    let remove = d.DxgkDdiRemoveDevice.expect("RemoveDevice filled");
    // SAFETY: context from AddDevice; removed once and not used afterwards.
    let s = unsafe { remove(ctx) };
    assert_eq!(s, STATUS_SUCCESS, "RemoveDevice: {}", show(s));
    assert_eq!(
        live_bytes(),
        before,
        "RemoveDevice left {} bytes of the adapter allocated",
        live_bytes().wrapping_sub(before)
    );
}

/// The node-ring DDIs (docs/tdr.md; TDR-03/04/05): NULL adapter and NULL
/// argument blocks are STATUS_INVALID_PARAMETER; on a live but unstarted adapter a well-formed
/// block is STATUS_INVALID_DEVICE_STATE and no output is written. (SubmitCommand and
/// PreemptCommand errors are bug check 0x119/0x2 on Windows; the OS never sends these.)
#[test]
fn node_ring_ddis_validate_their_arguments() {
    use rvgpu_ddi::tdr::{
        DXGKARG_BUILDPAGINGBUFFER, DXGKARG_PREEMPTCOMMAND, DXGKARG_QUERYCURRENTFENCE,
        DXGKARG_SUBMITCOMMAND, DXGKARG_SUBMITCOMMANDVIRTUAL, DXGK_OPERATION_FILL,
    };
    let d = table();
    let null: HANDLE = ptr::null_mut();

    refused! { d;
        DxgkDdiSubmitCommand(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiSubmitCommandVirtual(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiPreemptCommand(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiQueryCurrentFence(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiBuildPagingBuffer(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut qcf = DXGKARG_QUERYCURRENTFENCE::default();
    refused! { d;
        DxgkDdiQueryCurrentFence(null, &mut qcf) => BAD_PARAMETER, "NULL hAdapter";
    }

    let mut pdo_stand_in = 0u64;
    let a = AdapterCtx::added(&d, &mut pdo_stand_in);
    let ctx = a.ctx;
    refused! { d;
        DxgkDdiSubmitCommand(ctx, nil()) => BAD_PARAMETER, "NULL args";
        DxgkDdiSubmitCommandVirtual(ctx, nil()) => BAD_PARAMETER, "NULL args";
        DxgkDdiPreemptCommand(ctx, nil()) => BAD_PARAMETER, "NULL args";
        DxgkDdiQueryCurrentFence(ctx, nil()) => BAD_PARAMETER, "NULL args";
        DxgkDdiBuildPagingBuffer(ctx, nil()) => BAD_PARAMETER, "NULL args";
    }

    let sc = DXGKARG_SUBMITCOMMAND {
        SubmissionFenceId: 1,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiSubmitCommand(ctx, &sc) => BAD_STATE, "unstarted adapter";
    }
    let sv = DXGKARG_SUBMITCOMMANDVIRTUAL {
        SubmissionFenceId: 1,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiSubmitCommandVirtual(ctx, &sv) => BAD_STATE, "unstarted adapter";
    }
    let pc = DXGKARG_PREEMPTCOMMAND::default();
    refused! { d;
        DxgkDdiPreemptCommand(ctx, &pc) => BAD_STATE, "unstarted adapter";
    }
    let mut qcf = DXGKARG_QUERYCURRENTFENCE {
        CurrentFence: 0xDEAD,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiQueryCurrentFence(ctx, &mut qcf) => BAD_STATE, "unstarted adapter";
    }
    assert_eq!(qcf.CurrentFence, 0xDEAD, "refused query wrote a fence");
    let mut words = [0u64; 8];
    let mut bp = DXGKARG_BUILDPAGINGBUFFER {
        pDmaBuffer: words.as_mut_ptr().cast(),
        DmaSize: 64,
        Operation: DXGK_OPERATION_FILL,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiBuildPagingBuffer(ctx, &mut bp) => BAD_STATE, "unstarted adapter";
    }
    assert_eq!(words, [0u64; 8], "refused build wrote the buffer");
    drop(a);
}

/// Native fence logs and GPU clock calibration (docs/logs.md): NULL argument
/// blocks, NULL/unaligned log CPU VAs, bad headers and entry counts (LOG-01), empty and NULL
/// queue arrays (LOG-07), garbage queue handles, and calibration of a NULL or unstarted
/// adapter. Handles are decoded and looked up, never dereferenced; the log header is read only
/// after its pointer passed the null/alignment checks.
#[test]
fn log_01_log_07_native_fence_log_and_clock_arguments() {
    use rvgpu_ddi::adapter::DXGKARG_CALIBRATEGPUCLOCK;
    use rvgpu_ddi::fence::{
        DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATENATIVEFENCELOGS,
        DXGK_NATIVE_FENCE_LOG_BUFFER,
    };
    let d = table();
    let junk = 0x0300_0000_0000_0001usize as HANDLE; // adapter slot 2, queue kind, seq 1

    let f = d
        .DxgkDdiSetNativeFenceLogBuffer
        .expect("SetNativeFenceLogBuffer filled");
    refused! { d;
        DxgkDdiSetNativeFenceLogBuffer(nil()) => ON_NULL, "NULL";
    }
    // A whole 4 KiB log buffer with the header the OS writes (Type = SIGNALS, 84 entries).
    let mut buf = vec![0u64; 512];
    buf[1] = 2;
    buf[2] = 84;
    let cpu = buf.as_mut_ptr().cast::<DXGK_NATIVE_FENCE_LOG_BUFFER>();
    let base = DXGKARG_SETNATIVEFENCELOGBUFFER {
        hHwQueue: junk,
        NumberOfEntries: 84,
        LogBufferCpuVa: cpu,
        LogBufferGpuVa: 0x10_0000,
        LogBufferSystemProcessGpuVa: 0x10_0000,
        ..Default::default()
    };
    let cases = [
        (
            "NULL LogBufferCpuVa",
            DXGKARG_SETNATIVEFENCELOGBUFFER {
                LogBufferCpuVa: ptr::null_mut(),
                ..base
            },
            STATUS_INVALID_PARAMETER,
        ),
        (
            "unaligned LogBufferCpuVa",
            DXGKARG_SETNATIVEFENCELOGBUFFER {
                LogBufferCpuVa: cpu.cast::<u8>().wrapping_add(4).cast(),
                ..base
            },
            STATUS_INVALID_PARAMETER,
        ),
        ("garbage hHwQueue", base, STATUS_INVALID_HANDLE),
        (
            "NULL hHwQueue",
            DXGKARG_SETNATIVEFENCELOGBUFFER {
                hHwQueue: ptr::null_mut(),
                ..base
            },
            STATUS_INVALID_HANDLE,
        ),
    ];
    for (case, args, want) in cases {
        // SAFETY: `args` is a live local; its CPU VA is NULL, unaligned (rejected unread) or
        // `buf`, alive for the call.
        let s = unsafe { f(&args) };
        expect_status("SetNativeFenceLogBuffer", case, s, want);
    }
    assert_eq!(buf[0], 0, "a refused call wrote the log header");

    let f = d
        .DxgkDdiUpdateNativeFenceLogs
        .expect("UpdateNativeFenceLogs filled");
    refused! { d;
        DxgkDdiUpdateNativeFenceLogs(nil()) => ON_NULL, "NULL";
    }
    let none = DXGKARG_UPDATENATIVEFENCELOGS::default();
    // SAFETY: a live local naming no queue.
    let s = unsafe { f(&none) };
    assert_eq!(
        s, STATUS_SUCCESS,
        "UpdateNativeFenceLogs with 0 queues: nothing to flush"
    );
    let null_array = DXGKARG_UPDATENATIVEFENCELOGS {
        NumberOfQueues: 1,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiUpdateNativeFenceLogs(&null_array) => BAD_PARAMETER, "NULL hHWQueue";
    }
    let mut queues = [junk, ptr::null_mut(), 0x1234usize as HANDLE];
    let garbage = DXGKARG_UPDATENATIVEFENCELOGS {
        NumberOfQueues: 3,
        hHWQueue: queues.as_mut_ptr(),
        ..Default::default()
    };
    refused! { d;
        DxgkDdiUpdateNativeFenceLogs(&garbage) => BAD_HANDLE, "garbage handles";
    }

    refused! { d;
        DxgkDdiCalibrateGpuClock(nil(), 0, 0, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut pdo_stand_in = 0u64;
    let a = AdapterCtx::added(&d, &mut pdo_stand_in);
    refused! { d;
        DxgkDdiCalibrateGpuClock(a.ctx, 0, 0, nil()) => BAD_PARAMETER, "NULL out";
    }
    let mut out = DXGKARG_CALIBRATEGPUCLOCK::default();
    refused! { d;
        DxgkDdiCalibrateGpuClock(a.ctx, 0, 0, &mut out) => BAD_STATE, "unstarted adapter";
    }
    assert_eq!(
        out,
        DXGKARG_CALIBRATEGPUCLOCK::default(),
        "refused call wrote its output"
    );

    // DxgkDdiSetStablePowerState returns nothing: NULL handle and NULL arguments must simply
    // be survived (nothing to report, nothing touched).
    let f = d
        .DxgkDdiSetStablePowerState
        .expect("SetStablePowerState filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    unsafe { f(ptr::null_mut(), ptr::null()) };
    let on = rvgpu_ddi::adapter::DXGKARG_SETSTABLEPOWERSTATE { Enabled: 1 };
    // SAFETY: NULL handle with a live argument block.
    unsafe { f(ptr::null_mut(), &on) };
    // SAFETY: live (unstarted) context, NULL argument block.
    unsafe { f(a.ctx, ptr::null()) };
}

/// the GpuMmu memory-model DDIs refuse NULL contexts, NULL argument blocks and
/// handles that name nothing, without touching anything.
#[test]
fn gpummu_memory_ddis_validate_their_arguments() {
    use rvgpu_ddi::allocation::{
        DXGKARG_CLOSEALLOCATION, DXGKARG_CREATEALLOCATION, DXGKARG_CREATEPROCESS,
        DXGKARG_DESTROYALLOCATION, DXGKARG_GETROOTPAGETABLESIZE, DXGKARG_OPENALLOCATION,
        DXGKARG_SETROOTPAGETABLE,
    };
    let d = table();
    let null: HANDLE = ptr::null_mut();
    let junk: HANDLE = ptr::without_provenance_mut::<c_void>(0x1234);
    let root_size = d
        .DxgkDdiGetRootPageTableSize
        .expect("GetRootPageTableSize filled");
    let set_root = d.DxgkDdiSetRootPageTable.expect("SetRootPageTable filled");

    refused! { d;
        DxgkDdiCreateProcess(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut cp = DXGKARG_CREATEPROCESS::default();
    refused! { d;
        DxgkDdiCreateProcess(null, &mut cp) => BAD_PARAMETER, "NULL adapter";
    }
    assert!(cp.hKmdProcess.is_null(), "nothing handed out");
    refused! { d;
        DxgkDdiDestroyProcess(null, junk) => ON_NULL, "NULL adapter";
    }
    let mut rs = DXGKARG_GETROOTPAGETABLESIZE::default();
    // SAFETY: NULL adapter, a live local argument block.
    let size = unsafe { root_size(null, &mut rs) };
    assert_eq!(size, 0, "GetRootPageTableSize NULL adapter");
    // SAFETY: as above.
    assert_eq!(unsafe { root_size(null, ptr::null_mut()) }, 0);
    // SAFETY: as above; the DDI has no status, it must simply return.
    unsafe { set_root(null, ptr::null()) };
    let sr = DXGKARG_SETROOTPAGETABLE {
        hContext: junk,
        ..Default::default()
    };
    // SAFETY: a live local argument block naming no context.
    unsafe { set_root(null, &sr) };
    catalog_says(&[
        ("DxgkDdiGetRootPageTableSize", OnNull::Zero),
        ("DxgkDdiSetRootPageTable", OnNull::Returns),
    ]);

    refused! { d;
        DxgkDdiCreateAllocation(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut ca = DXGKARG_CREATEALLOCATION::default();
    refused! { d;
        DxgkDdiCreateAllocation(null, &mut ca) => BAD_PARAMETER, "NULL adapter";
        DxgkDdiDestroyAllocation(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let da = DXGKARG_DESTROYALLOCATION::default();
    refused! { d;
        DxgkDdiDestroyAllocation(null, &da) => BAD_PARAMETER, "NULL adapter";
        // Render-only: no standard or display allocations at all.
        DxgkDdiDescribeAllocation(null, nil()) => ON_NULL, "any";
        DxgkDdiGetStandardAllocationDriverData(null, nil()) => ON_NULL, "any";
        DxgkDdiOpenAllocation(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let oa = DXGKARG_OPENALLOCATION::default();
    refused! { d;
        DxgkDdiOpenAllocation(junk, &oa) => BAD_PARAMETER, "no infos";
        DxgkDdiCloseAllocation(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let list = [junk];
    let cl = DXGKARG_CLOSEALLOCATION {
        NumAllocations: 1,
        pOpenHandleList: list.as_ptr(),
    };
    refused! { d;
        DxgkDdiCloseAllocation(junk, &cl) => BAD_HANDLE, "junk device";
    }
}

/// The hardware-scheduling DDIs: NULL adapter or argument block is
/// `STATUS_INVALID_PARAMETER`; a live but unstarted adapter is `STATUS_INVALID_DEVICE_STATE`
/// and nothing reaches the device.
#[test]
fn hws_ddis_validate_their_arguments() {
    use rvgpu_ddi::hws::{
        DXGKARG_RESETHWENGINE, DXGKARG_RESUMEHWENGINE, DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES,
        DXGKARG_SETSCHEDULINGLOGBUFFER, DXGKARG_SETUPPRIORITYBANDS,
    };
    let d = table();
    let null: HANDLE = ptr::null_mut();
    let mut pdo_stand_in = 0u64;
    let a = AdapterCtx::added(&d, &mut pdo_stand_in);
    let ctx = a.ctx;

    let bands = DXGKARG_SETUPPRIORITYBANDS::default();
    refused! { d;
        DxgkDdiSetupPriorityBands(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiSetupPriorityBands(ctx, nil()) => BAD_PARAMETER, "NULL args";
        DxgkDdiSetupPriorityBands(ctx, &bands) => BAD_STATE, "unstarted";
    }

    let log = DXGKARG_SETSCHEDULINGLOGBUFFER {
        NumberOfEntries: 16,
        LogBufferGpuVa: 0x1000,
        ..Default::default()
    };
    refused! { d;
        DxgkDdiSetSchedulingLogBuffer(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiSetSchedulingLogBuffer(ctx, &log) => BAD_STATE, "unstarted";
    }

    let props = DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES::default();
    refused! { d;
        DxgkDdiSetContextSchedulingProperties(null, nil()) => ON_NULL, "NULL, NULL";
        DxgkDdiSetContextSchedulingProperties(ctx, &props) => BAD_STATE, "unstarted";
    }

    refused! { d;
        DxgkDdiResetHwEngine(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut reset = DXGKARG_RESETHWENGINE::default();
    refused! { d;
        DxgkDdiResetHwEngine(ctx, &mut reset) => BAD_STATE, "unstarted";
    }

    refused! { d;
        DxgkDdiResumeHwEngine(null, nil()) => ON_NULL, "NULL, NULL";
    }
    let mut resume = DXGKARG_RESUMEHWENGINE::default();
    refused! { d;
        DxgkDdiResumeHwEngine(ctx, &mut resume) => BAD_STATE, "unstarted";
    }
    drop(a);
}

/// BR-47: the render core's `DxgkDdiPresent` and `DxgkDdiControlInterrupt`. rvgpu has nothing to
/// present with and no CRTC, so every call fails (with statuses Dxgkrnl's wrappers accept, BR-23:
/// simos/tests/bringup_rules/), and a present leaves the DMA buffer untouched.
#[test]
fn render_core_present_and_control_interrupt_refuse_everything() {
    use rvgpu_ddi::interrupt::{DXGK_INTERRUPT_CRTC_VSYNC, DXGK_INTERRUPT_DMA_COMPLETED};
    use rvgpu_ddi::ntstatus::STATUS_ILLEGAL_INSTRUCTION;
    use rvgpu_ddi::present::{DXGKARG_PRESENT, DXGK_PRESENTFLAGS};

    let d = table();
    let null: HANDLE = ptr::null_mut();
    let mut pdo_stand_in = 0u64;
    let a = AdapterCtx::added(&d, &mut pdo_stand_in);
    let ctx = a.ctx;

    let mut dma = [0xA5u8; 64];
    let mut args = DXGKARG_PRESENT {
        pDmaBuffer: dma.as_mut_ptr().cast(),
        DmaSize: 64,
        Flags: DXGK_PRESENTFLAGS::default().with(DXGK_PRESENTFLAGS::Blt, 1),
        ..Default::default()
    };
    let start = args.pDmaBuffer;
    refused! { d;
        DxgkDdiPresent(null, nil()) => ON_NULL, "NULL, NULL";
    }
    // A context handle is opaque to this DDI's refusal; any non-null value stands in for one.
    let h_context: HANDLE = ptr::from_mut(&mut pdo_stand_in).cast();
    refused! { d;
        DxgkDdiPresent(h_context, &mut args) => STATUS_ILLEGAL_INSTRUCTION, "a blt";
    }
    assert_eq!(args.pDmaBuffer, start, "the DMA pointer moved");
    assert!(dma.iter().all(|&b| b == 0xA5), "the DMA buffer was written");

    refused! { d;
        DxgkDdiControlInterrupt(null, DXGK_INTERRUPT_CRTC_VSYNC, 1)
            => ON_NULL, "NULL adapter";
    }
    for (ty, enable) in [
        (DXGK_INTERRUPT_CRTC_VSYNC, 1),
        (DXGK_INTERRUPT_CRTC_VSYNC, 0),
        (DXGK_INTERRUPT_DMA_COMPLETED, 1),
        (-1, 7),
    ] {
        refused! { d;
            DxgkDdiControlInterrupt(ctx, ty, enable) => STATUS_NOT_IMPLEMENTED, "any type";
        }
    }
}

/// UM-13: the runtime-power DDIs and QueryAdapterInfo types with NULL or garbage arguments,
/// on no adapter and on an unstarted one: an error status (INVALID_PARAMETER, or
/// INVALID_DEVICE_STATE where the arguments are fine but the adapter is not started), never a
/// crash, and an optional `BytesReturned` is set to 0. (Garbage indexes and F-states on a
/// started adapter: `simos/tests/runtime_power.rs`.)
#[test]
fn um_13_runtime_power_ddis_validate_their_arguments() {
    use rvgpu_ddi::adapter::{DXGKQAITYPE_NUMPOWERCOMPONENTS, DXGKQAITYPE_POWERCOMPONENTINFO};
    use rvgpu_ddi::power::GUID_DXGKDDI_POWER_MANAGEMENT_STARTED;
    use rvgpu_ddi::GUID;
    let d = table();
    let null: HANDLE = ptr::null_mut();
    let mut pdo_stand_in = 0u64;
    let a = AdapterCtx::added(&d, &mut pdo_stand_in);
    let ctx = a.ctx;

    refused! { d;
        DxgkDdiSetPowerComponentFState(null, 0, 0) => ON_NULL, "NULL";
    }
    for (component, fstate) in [(0, 0), (0, 1), (u32::MAX, u32::MAX), (0x1_0000, 0)] {
        refused! { d;
            DxgkDdiSetPowerComponentFState(ctx, component, fstate) => BAD_STATE, "unstarted";
        }
    }

    let mut ret = 55usize;
    refused! { d;
        DxgkDdiPowerRuntimeControlRequest(null, nil(), nil(), 0, nil(), 0, &mut ret)
            => ON_NULL, "NULL";
    }
    assert_eq!(ret, 0, "BytesReturned cleared");
    refused! { d;
        DxgkDdiPowerRuntimeControlRequest(ctx, nil(), nil(), 0, nil(), 0, nil())
            => BAD_PARAMETER, "NULL GUID";
    }
    let mut garbage = [0xA5u8; 32];
    for code in [GUID_DXGKDDI_POWER_MANAGEMENT_STARTED, GUID::default()] {
        refused! { d;
            DxgkDdiPowerRuntimeControlRequest(
                ctx,
                &code,
                garbage.as_mut_ptr().cast(),
                usize::MAX,
                garbage.as_mut_ptr().cast(),
                garbage.len(),
                nil(),
            ) => BAD_STATE, "unstarted";
        }
    }
    assert!(garbage.iter().all(|&b| b == 0xA5), "buffers untouched");

    let f = d.DxgkDdiQueryAdapterInfo.expect("QueryAdapterInfo filled");
    for ty in [
        DXGKQAITYPE_NUMPOWERCOMPONENTS,
        DXGKQAITYPE_POWERCOMPONENTINFO,
    ] {
        for (input, output) in [(true, true), (false, true), (true, false), (false, false)] {
            let mut index = u32::MAX;
            let mut out = [0u8; 8];
            let args = DXGKARG_QUERYADAPTERINFO {
                Type: ty,
                pInputData: if input {
                    ptr::from_mut(&mut index).cast()
                } else {
                    ptr::null_mut()
                },
                InputDataSize: if input { 4 } else { 0 },
                pOutputData: if output {
                    out.as_mut_ptr().cast()
                } else {
                    ptr::null_mut()
                },
                OutputDataSize: 8,
                Flags: DXGK_QUERYADAPTERINFOFLAGS::from_value(0),
                hKmdProcessHandle: ptr::null_mut(),
            };
            // SAFETY: live context; `args` and its buffers are live locals for the call.
            let s = unsafe { f(ctx, &args) };
            assert!(
                !nt_success(s),
                "QAI type {ty} on an unstarted adapter: {}",
                show(s)
            );
        }
    }
}

/// the slot after `DxgkDdiNotifyWorkSubmission` (byte 1368, `DxgkDdiFlushHwQueue` /
/// `Reserved4`) has no published signature: whatever a kernel passes (NULL or garbage, in any
/// of the argument registers), the driver's function refuses with `STATUS_NOT_SUPPORTED`.
#[test]
fn the_slot_after_notify_work_submission_refuses_whatever_it_is_passed() {
    use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
    let d = table();
    assert!(!d.Reserved4.is_null(), "the slot is filled");
    type Guess = unsafe extern "system" fn(PVOID, PVOID, PVOID, PVOID) -> NTSTATUS;
    // SAFETY: the driver's function takes no argument it reads and returns an NTSTATUS; on
    // x64 a callee ignores argument registers it does not use.
    let f: Guess = unsafe { std::mem::transmute::<PVOID, Guess>(d.Reserved4) };
    let junk = 0xDEAD_BEEF_usize as PVOID;
    for args in [
        [ptr::null_mut(); 4],
        [junk; 4],
        [ptr::null_mut(), junk, ptr::null_mut(), junk],
    ] {
        // SAFETY: as above.
        let s = unsafe { f(args[0], args[1], args[2], args[3]) };
        expect_status("Reserved4", "any arguments", s, STATUS_NOT_SUPPORTED);
    }
}
