//! "Every filled slot validates its arguments and returns an NTSTATUS" ("DDI table
//! completeness").
//!
//! Each filled slot of the driver's `DRIVER_INITIALIZATION_DATA` is called through the table, the
//! way Dxgkrnl calls it, with a NULL context and/or NULL argument pointers. NTSTATUS slots must
//! return a failure code (STATUS_INVALID_PARAMETER where the driver's thunks document it,
//! driver/kmd/src/ddi.rs) and must not crash; void/BOOLEAN slots must simply return (the ISR
//! returning FALSE). A coverage check makes a newly filled slot fail here until it gets a case.
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

/// Slots exercised by `null_arguments_fail_with_an_ntstatus_and_do_not_crash`. Every filled slot
/// must be here (checked), so a new DDI cannot skip robustness testing.
const COVERED: &[&str] = &[
    "DxgkDdiAddDevice",
    "DxgkDdiStartDevice",
    "DxgkDdiStopDevice",
    "DxgkDdiRemoveDevice",
    "DxgkDdiDispatchIoRequest",
    "DxgkDdiInterruptRoutine",
    "DxgkDdiDpcRoutine",
    "DxgkDdiQueryChildRelations",
    "DxgkDdiQueryChildStatus",
    "DxgkDdiQueryDeviceDescriptor",
    "DxgkDdiSetPowerState",
    "DxgkDdiNotifyAcpiEvent",
    "DxgkDdiResetDevice",
    // null_arguments_fail_with_an_ntstatus_and_do_not_crash and the unstarted-adapter case
    "DxgkDdiNotifySurpriseRemoval",
    "DxgkDdiUnload",
    "DxgkDdiQueryInterface",
    "DxgkDdiControlEtwLogging",
    "DxgkDdiQueryAdapterInfo",
    "DxgkDdiCreateNativeFence",
    "DxgkDdiDestroyNativeFence",
    "DxgkDdiOpenNativeFence",
    "DxgkDdiCloseNativeFence",
    "DxgkDdiUpdateMonitoredValues",
    "DxgkDdiUpdateCurrentValuesFromCpu",
    "DxgkDdiCreateDevice",
    "DxgkDdiDestroyDevice",
    "DxgkDdiCreateContext",
    "DxgkDdiDestroyContext",
    "DxgkDdiGetNodeMetadata",
    "DxgkDdiSuspendContext",
    "DxgkDdiResumeContext",
    "DxgkDdiCreateHwQueue",
    "DxgkDdiDestroyHwQueue",
    "DxgkDdiSubmitCommandToHwQueue",
    "DxgkDdiCreateDoorbell",
    "DxgkDdiConnectDoorbell",
    "DxgkDdiDisconnectDoorbell",
    "DxgkDdiDestroyDoorbell",
    "DxgkDdiNotifyWorkSubmission",
    "DxgkDdiQueryDependentEngineGroup",
    "DxgkDdiQueryEngineStatus",
    "DxgkDdiResetEngine",
    "DxgkDdiCollectDbgInfo",
    "DxgkDdiCollectDbgInfo2",
    "DxgkDdiResetFromTimeout",
    "DxgkDdiRestartFromTimeout",
    "DxgkDdiSubmitCommand",
    "DxgkDdiSubmitCommandVirtual",
    "DxgkDdiPreemptCommand",
    "DxgkDdiQueryCurrentFence",
    "DxgkDdiBuildPagingBuffer",
    "DxgkDdiSetNativeFenceLogBuffer",
    "DxgkDdiUpdateNativeFenceLogs",
    "DxgkDdiCalibrateGpuClock",
    "DxgkDdiSetStablePowerState",
    // hws_ddis_validate_their_arguments
    "DxgkDdiSetupPriorityBands",
    "DxgkDdiSetSchedulingLogBuffer",
    "DxgkDdiSetContextSchedulingProperties",
    "DxgkDdiResetHwEngine",
    "DxgkDdiResumeHwEngine",
    // gpummu_memory_ddis_validate_their_arguments
    "DxgkDdiCreateProcess",
    "DxgkDdiDestroyProcess",
    "DxgkDdiGetRootPageTableSize",
    "DxgkDdiSetRootPageTable",
    "DxgkDdiCreateAllocation",
    "DxgkDdiDestroyAllocation",
    "DxgkDdiDescribeAllocation",
    "DxgkDdiGetStandardAllocationDriverData",
    "DxgkDdiOpenAllocation",
    "DxgkDdiCloseAllocation",
    // render_core_present_and_control_interrupt_refuse_everything
    "DxgkDdiPresent",
    "DxgkDdiControlInterrupt",
    // um_13_runtime_power_ddis_validate_their_arguments
    "DxgkDdiSetPowerComponentFState",
    "DxgkDdiPowerRuntimeControlRequest",
    // the_slot_after_notify_work_submission_refuses_whatever_it_is_passed
    "Reserved4",
];

#[test]
fn every_filled_slot_has_a_robustness_case() {
    let d = table();
    let covered: BTreeSet<_> = COVERED.iter().copied().collect();
    let missing: Vec<_> = rvgpu_ddi::init::filled_slots(&d)
        .filter(|&(n, set)| set && !covered.contains(n))
        .map(|(n, _)| n)
        .collect();
    assert!(
        missing.is_empty(),
        "filled slots without a NULL-argument case in tests/ddi_robustness.rs: {missing:?}"
    );
}

#[test]
fn null_arguments_fail_with_an_ntstatus_and_do_not_crash() {
    let d = table();
    let null = ptr::null_mut::<c_void>();

    // DxgkDdiAddDevice: NULL PDO and/or NULL out pointer.
    let f = d.DxgkDdiAddDevice.expect("AddDevice filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(ptr::null_mut(), ptr::null_mut()) };
    expect_status("AddDevice", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let mut out: PVOID = null;
    // SAFETY: NULL PDO, valid out pointer to a local.
    let s = unsafe { f(ptr::null_mut(), &mut out) };
    expect_status("AddDevice", "NULL PDO", s, STATUS_INVALID_PARAMETER);
    assert!(out.is_null(), "AddDevice wrote a context despite failing");
    let mut pdo_stand_in = 0u64;
    let pdo: PDEVICE_OBJECT = ptr::from_mut(&mut pdo_stand_in).cast();
    // SAFETY: non-null opaque PDO, NULL out pointer (the driver must not write through it).
    let s = unsafe { f(pdo, ptr::null_mut()) };
    expect_status("AddDevice", "NULL out", s, STATUS_INVALID_PARAMETER);

    // DxgkDdiStartDevice: NULL context and NULL out/in pointers.
    let f = d.DxgkDdiStartDevice.expect("StartDevice filled");
    // SAFETY: all-NULL arguments; the driver rejects a NULL context before touching anything.
    let s = unsafe {
        f(
            null,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    expect_status("StartDevice", "NULL ctx", s, STATUS_INVALID_PARAMETER);

    // DxgkDdiStopDevice / DxgkDdiRemoveDevice: NULL context.
    let f = d.DxgkDdiStopDevice.expect("StopDevice filled");
    // SAFETY: NULL context is the tested input.
    let s = unsafe { f(null) };
    expect_status("StopDevice", "NULL ctx", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiRemoveDevice.expect("RemoveDevice filled");
    // SAFETY: NULL context is the tested input.
    let s = unsafe { f(null) };
    expect_status("RemoveDevice", "NULL ctx", s, STATUS_INVALID_PARAMETER);

    // DxgkDdiDispatchIoRequest.
    let f = d
        .DxgkDdiDispatchIoRequest
        .expect("DispatchIoRequest filled");
    // SAFETY: NULL context and packet.
    let s = unsafe { f(null, 0, ptr::null_mut()) };
    expect_status("DispatchIoRequest", "NULL ctx", s, STATUS_INVALID_PARAMETER);

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
    let f = d
        .DxgkDdiQueryChildRelations
        .expect("QueryChildRelations filled");
    // SAFETY: NULL context and array.
    let s = unsafe { f(null, ptr::null_mut(), 0) };
    expect_status(
        "QueryChildRelations",
        "NULL ctx",
        s,
        STATUS_INVALID_PARAMETER,
    );

    // DxgkDdiQueryChildStatus.
    let f = d.DxgkDdiQueryChildStatus.expect("QueryChildStatus filled");
    // SAFETY: NULL context and status pointer.
    let s = unsafe { f(null, ptr::null_mut(), 0) };
    expect_status("QueryChildStatus", "NULL ctx", s, STATUS_INVALID_PARAMETER);

    // DxgkDdiQueryDeviceDescriptor.
    let f = d
        .DxgkDdiQueryDeviceDescriptor
        .expect("QueryDeviceDescriptor filled");
    // SAFETY: NULL context and descriptor.
    let s = unsafe { f(null, 0, ptr::null_mut()) };
    expect_status(
        "QueryDeviceDescriptor",
        "NULL ctx",
        s,
        STATUS_INVALID_PARAMETER,
    );

    // DxgkDdiSetPowerState.
    let f = d.DxgkDdiSetPowerState.expect("SetPowerState filled");
    // SAFETY: NULL context; the other arguments are plain values.
    let s = unsafe { f(null, DISPLAY_ADAPTER_HW_ID, PowerDeviceD0, 0) };
    expect_status("SetPowerState", "NULL ctx", s, STATUS_INVALID_PARAMETER);

    // DxgkDdiNotifyAcpiEvent.
    let f = d.DxgkDdiNotifyAcpiEvent.expect("NotifyAcpiEvent filled");
    // SAFETY: NULL context, argument and out pointer.
    let s = unsafe { f(null, DxgkAcpiEvent, 0, null, ptr::null_mut()) };
    expect_status("NotifyAcpiEvent", "NULL ctx", s, STATUS_INVALID_PARAMETER);

    // DxgkDdiNotifySurpriseRemoval: NULL context.
    let f = d
        .DxgkDdiNotifySurpriseRemoval
        .expect("NotifySurpriseRemoval filled");
    // SAFETY: NULL context is the tested input.
    let s = unsafe { f(null, rvgpu_ddi::adapter::DxgkRemovalPnPNotify) };
    expect_status(
        "NotifySurpriseRemoval",
        "NULL ctx",
        s,
        STATUS_INVALID_PARAMETER,
    );

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

    // DxgkDdiQueryInterface.
    let f = d.DxgkDdiQueryInterface.expect("QueryInterface filled");
    // SAFETY: NULL context and query.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("QueryInterface", "NULL ctx", s, STATUS_INVALID_PARAMETER);

    // DxgkDdiQueryAdapterInfo: NULL hAdapter and NULL argument block.
    let f = d.DxgkDdiQueryAdapterInfo.expect("QueryAdapterInfo filled");
    // SAFETY: NULL handle and arguments.
    let s = unsafe { f(null, ptr::null()) };
    expect_status(
        "QueryAdapterInfo",
        "NULL hAdapter",
        s,
        STATUS_INVALID_PARAMETER,
    );

    // Native-fence DDIs: NULL adapter and/or NULL argument blocks.
    let f = d
        .DxgkDdiCreateNativeFence
        .expect("CreateNativeFence filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status(
        "CreateNativeFence",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let f = d.DxgkDdiOpenNativeFence.expect("OpenNativeFence filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("OpenNativeFence", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiCloseNativeFence.expect("CloseNativeFence filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status(
        "CloseNativeFence",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let f = d
        .DxgkDdiDestroyNativeFence
        .expect("DestroyNativeFence filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(ptr::null_mut()) };
    expect_status("DestroyNativeFence", "NULL", s, STATUS_INVALID_PARAMETER);
    let f = d
        .DxgkDdiUpdateMonitoredValues
        .expect("UpdateMonitoredValues filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(ptr::null()) };
    expect_status("UpdateMonitoredValues", "NULL", s, STATUS_INVALID_PARAMETER);
    let f = d
        .DxgkDdiUpdateCurrentValuesFromCpu
        .expect("UpdateCurrentValuesFromCpu filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(ptr::null()) };
    expect_status(
        "UpdateCurrentValuesFromCpu",
        "NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );

    // TDR (TDR-01, TDR-09): NULL adapter and/or NULL argument blocks.
    let f = d
        .DxgkDdiQueryDependentEngineGroup
        .expect("QueryDependentEngineGroup filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status(
        "QueryDependentEngineGroup",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let f = d
        .DxgkDdiQueryEngineStatus
        .expect("QueryEngineStatus filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status(
        "QueryEngineStatus",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let f = d.DxgkDdiResetEngine.expect("ResetEngine filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("ResetEngine", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let mut reset = DXGKARG_RESETENGINE::default();
    // SAFETY: NULL adapter, a live local argument block.
    let s = unsafe { f(null, &mut reset) };
    expect_status("ResetEngine", "NULL hAdapter", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiCollectDbgInfo.expect("CollectDbgInfo filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null()) };
    expect_status("CollectDbgInfo", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiCollectDbgInfo2.expect("CollectDbgInfo2 filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("CollectDbgInfo2", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiResetFromTimeout.expect("ResetFromTimeout filled");
    // SAFETY: NULL context is the tested input.
    let s = unsafe { f(null) };
    expect_status("ResetFromTimeout", "NULL", s, STATUS_INVALID_PARAMETER);
    let f = d
        .DxgkDdiRestartFromTimeout
        .expect("RestartFromTimeout filled");
    // SAFETY: NULL context is the tested input.
    let s = unsafe { f(null) };
    expect_status("RestartFromTimeout", "NULL", s, STATUS_INVALID_PARAMETER);

    // Devices, contexts, hardware queues, doorbells: NULL adapter, NULL argument blocks, and
    // NULL object handles (which the driver decodes, never dereferences).
    let f = d.DxgkDdiCreateDevice.expect("CreateDevice filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("CreateDevice", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiDestroyDevice.expect("DestroyDevice filled");
    // SAFETY: a NULL handle is decoded, not dereferenced.
    let s = unsafe { f(null) };
    expect_status("DestroyDevice", "NULL", s, STATUS_INVALID_HANDLE);
    let f = d.DxgkDdiCreateContext.expect("CreateContext filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("CreateContext", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiDestroyContext.expect("DestroyContext filled");
    // SAFETY: a NULL handle is decoded, not dereferenced.
    let s = unsafe { f(null) };
    expect_status("DestroyContext", "NULL", s, STATUS_INVALID_HANDLE);
    let f = d.DxgkDdiGetNodeMetadata.expect("GetNodeMetadata filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(null, 0, ptr::null_mut()) };
    expect_status("GetNodeMetadata", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiSuspendContext.expect("SuspendContext filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(null, ptr::null()) };
    expect_status("SuspendContext", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiResumeContext.expect("ResumeContext filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(null, ptr::null()) };
    expect_status("ResumeContext", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let f = d.DxgkDdiCreateHwQueue.expect("CreateHwQueue filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("CreateHwQueue", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let mut queue = DXGKARG_CREATEHWQUEUE::default();
    // SAFETY: NULL context handle (decoded, not dereferenced), a live local argument block.
    let s = unsafe { f(null, &mut queue) };
    expect_status("CreateHwQueue", "NULL hHwContext", s, STATUS_INVALID_HANDLE);
    let f = d.DxgkDdiDestroyHwQueue.expect("DestroyHwQueue filled");
    // SAFETY: a NULL handle is decoded, not dereferenced.
    let s = unsafe { f(null) };
    expect_status("DestroyHwQueue", "NULL", s, STATUS_INVALID_HANDLE);
    let f = d
        .DxgkDdiSubmitCommandToHwQueue
        .expect("SubmitCommandToHwQueue filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(null, ptr::null()) };
    expect_status(
        "SubmitCommandToHwQueue",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let f = d.DxgkDdiCreateDoorbell.expect("CreateDoorbell filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(ptr::null_mut()) };
    expect_status("CreateDoorbell", "NULL", s, STATUS_INVALID_PARAMETER);
    let mut create = DXGKARG_CREATEDOORBELL::default();
    // SAFETY: a live local argument block naming a NULL queue.
    let s = unsafe { f(&mut create) };
    expect_status("CreateDoorbell", "NULL hHwQueue", s, STATUS_INVALID_HANDLE);
    let f = d.DxgkDdiConnectDoorbell.expect("ConnectDoorbell filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(ptr::null_mut()) };
    expect_status("ConnectDoorbell", "NULL", s, STATUS_INVALID_PARAMETER);
    let mut connect = DXGKARG_CONNECTDOORBELL::default();
    // SAFETY: a live local argument block naming a NULL doorbell.
    let s = unsafe { f(&mut connect) };
    expect_status(
        "ConnectDoorbell",
        "NULL hDoorbell",
        s,
        STATUS_INVALID_HANDLE,
    );
    assert!(
        connect.KernelCpuVirtualAddress.is_null(),
        "a refused connect returned an address"
    );
    let f = d
        .DxgkDdiDisconnectDoorbell
        .expect("DisconnectDoorbell filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(ptr::null_mut()) };
    expect_status("DisconnectDoorbell", "NULL", s, STATUS_INVALID_PARAMETER);
    let mut disconnect = DXGKARG_DISCONNECTDOORBELL::default();
    // SAFETY: a live local argument block naming a NULL doorbell.
    let s = unsafe { f(&mut disconnect) };
    expect_status(
        "DisconnectDoorbell",
        "NULL hDoorbell",
        s,
        STATUS_INVALID_HANDLE,
    );
    let f = d.DxgkDdiDestroyDoorbell.expect("DestroyDoorbell filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(ptr::null_mut()) };
    expect_status("DestroyDoorbell", "NULL", s, STATUS_INVALID_PARAMETER);
    let mut destroy = DXGKARG_DESTROYDOORBELL::default();
    // SAFETY: a live local argument block naming a NULL doorbell.
    let s = unsafe { f(&mut destroy) };
    expect_status(
        "DestroyDoorbell",
        "NULL hDoorbell",
        s,
        STATUS_INVALID_HANDLE,
    );
    let f = d
        .DxgkDdiNotifyWorkSubmission
        .expect("NotifyWorkSubmission filled");
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe { f(ptr::null_mut()) };
    expect_status("NotifyWorkSubmission", "NULL", s, STATUS_INVALID_PARAMETER);
    let mut notify = DXGKARG_NOTIFYWORKSUBMISSION::default();
    // SAFETY: a live local argument block naming a NULL queue.
    let s = unsafe { f(&mut notify) };
    expect_status(
        "NotifyWorkSubmission",
        "NULL hHwQueue",
        s,
        STATUS_INVALID_HANDLE,
    );
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
        let f = d.DxgkDdiDestroyDevice.expect("filled");
        // SAFETY: the handle is decoded, never dereferenced.
        expect_status(
            "DestroyDevice",
            &case,
            unsafe { f(h) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiDestroyContext.expect("filled");
        // SAFETY: as above.
        expect_status(
            "DestroyContext",
            &case,
            unsafe { f(h) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiDestroyHwQueue.expect("filled");
        // SAFETY: as above.
        expect_status(
            "DestroyHwQueue",
            &case,
            unsafe { f(h) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiCreateContext.expect("filled");
        let mut ctx = DXGKARG_CREATECONTEXT::default();
        // SAFETY: as above, with a live local argument block.
        expect_status(
            "CreateContext",
            &case,
            unsafe { f(h, &mut ctx) },
            STATUS_INVALID_HANDLE,
        );
        assert!(ctx.hContext.is_null(), "a refused create returned a handle");
        let f = d.DxgkDdiCreateHwQueue.expect("filled");
        let mut q = DXGKARG_CREATEHWQUEUE {
            HwQueueProgressFenceGPUVirtualAddress: 0x1_0000,
            ..Default::default()
        };
        // SAFETY: as above.
        expect_status(
            "CreateHwQueue",
            &case,
            unsafe { f(h, &mut q) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiCreateDoorbell.expect("filled");
        let mut c = DXGKARG_CREATEDOORBELL {
            hHwQueue: h,
            ..Default::default()
        };
        // SAFETY: as above.
        expect_status(
            "CreateDoorbell",
            &case,
            unsafe { f(&mut c) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiConnectDoorbell.expect("filled");
        let mut c = DXGKARG_CONNECTDOORBELL {
            hDoorbell: h,
            ..Default::default()
        };
        // SAFETY: as above.
        expect_status(
            "ConnectDoorbell",
            &case,
            unsafe { f(&mut c) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiDisconnectDoorbell.expect("filled");
        let mut c = DXGKARG_DISCONNECTDOORBELL {
            hDoorbell: h,
            ..Default::default()
        };
        // SAFETY: as above.
        expect_status(
            "DisconnectDoorbell",
            &case,
            unsafe { f(&mut c) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiDestroyDoorbell.expect("filled");
        let mut c = DXGKARG_DESTROYDOORBELL { hDoorbell: h };
        // SAFETY: as above.
        expect_status(
            "DestroyDoorbell",
            &case,
            unsafe { f(&mut c) },
            STATUS_INVALID_HANDLE,
        );
        let f = d.DxgkDdiNotifyWorkSubmission.expect("filled");
        let mut c = DXGKARG_NOTIFYWORKSUBMISSION {
            hHwQueue: h,
            ..Default::default()
        };
        // SAFETY: as above.
        expect_status(
            "NotifyWorkSubmission",
            &case,
            unsafe { f(&mut c) },
            STATUS_INVALID_HANDLE,
        );
    }
}

/// With a real (unstarted) adapter context, the NULL *argument* pointers are what must be
/// rejected, and bad values too.
#[test]
fn null_argument_pointers_with_a_live_context_fail() {
    let d = table();
    let mut pdo_stand_in = 0u64;
    let (s, a) = AdapterCtx::add(&d, &mut pdo_stand_in);
    assert_eq!(s, STATUS_SUCCESS, "AddDevice failed: {}", show(s));
    let a = a.expect("AddDevice returned a context");
    let ctx = a.ctx;

    let f = d.DxgkDdiStartDevice.expect("StartDevice filled");
    // SAFETY: live context, NULL argument pointers (rejected before any use).
    let s = unsafe {
        f(
            ctx,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    expect_status("StartDevice", "NULL args", s, STATUS_INVALID_PARAMETER);

    let f = d
        .DxgkDdiDispatchIoRequest
        .expect("DispatchIoRequest filled");
    // SAFETY: live context, NULL packet.
    let s = unsafe { f(ctx, 0, ptr::null_mut()) };
    expect_status(
        "DispatchIoRequest",
        "NULL packet",
        s,
        STATUS_INVALID_PARAMETER,
    );

    let f = d
        .DxgkDdiQueryChildRelations
        .expect("QueryChildRelations filled");
    // SAFETY: live context, NULL array.
    let s = unsafe { f(ctx, ptr::null_mut(), 0) };
    expect_status(
        "QueryChildRelations",
        "NULL array",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut one = std::mem::MaybeUninit::<DXGK_CHILD_DESCRIPTOR>::zeroed();
    // SAFETY: live context; a valid one-entry buffer whose declared size (0) is too small.
    let s = unsafe { f(ctx, one.as_mut_ptr(), 0) };
    expect_status("QueryChildRelations", "size 0", s, STATUS_BUFFER_TOO_SMALL);

    let f = d.DxgkDdiQueryChildStatus.expect("QueryChildStatus filled");
    // SAFETY: live context, NULL status pointer.
    let s = unsafe { f(ctx, ptr::null_mut(), 1) };
    expect_status(
        "QueryChildStatus",
        "NULL status",
        s,
        STATUS_INVALID_PARAMETER,
    );

    let f = d
        .DxgkDdiQueryDeviceDescriptor
        .expect("QueryDeviceDescriptor filled");
    // SAFETY: live context, NULL descriptor.
    let s = unsafe { f(ctx, 0, ptr::null_mut()) };
    expect_status(
        "QueryDeviceDescriptor",
        "NULL descriptor",
        s,
        STATUS_INVALID_PARAMETER,
    );

    let f = d.DxgkDdiSetPowerState.expect("SetPowerState filled");
    // SAFETY: live context; a child UID a render-only adapter does not have.
    let s = unsafe { f(ctx, 0, PowerDeviceD0, 0) };
    expect_status("SetPowerState", "child uid 0", s, STATUS_INVALID_PARAMETER);
    // SAFETY: live context; an out-of-range power state.
    let s = unsafe { f(ctx, DISPLAY_ADAPTER_HW_ID, PowerDeviceMaximum, 0) };
    expect_status(
        "SetPowerState",
        "PowerDeviceMaximum",
        s,
        STATUS_INVALID_PARAMETER,
    );

    let f = d.DxgkDdiNotifyAcpiEvent.expect("NotifyAcpiEvent filled");
    // SAFETY: live context, NULL out pointer.
    let s = unsafe { f(ctx, DxgkAcpiEvent, 0, ptr::null_mut(), ptr::null_mut()) };
    expect_status(
        "NotifyAcpiEvent",
        "NULL AcpiFlags",
        s,
        STATUS_INVALID_PARAMETER,
    );

    let f = d.DxgkDdiQueryInterface.expect("QueryInterface filled");
    // SAFETY: live context, NULL query.
    let s = unsafe { f(ctx, ptr::null_mut()) };
    expect_status("QueryInterface", "NULL query", s, STATUS_INVALID_PARAMETER);

    let f = d.DxgkDdiQueryAdapterInfo.expect("QueryAdapterInfo filled");
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f(ctx, ptr::null()) };
    expect_status("QueryAdapterInfo", "NULL args", s, STATUS_INVALID_PARAMETER);
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
    // SAFETY: live context; `args` and its output buffer are live locals for the call.
    let s = unsafe { f(ctx, &args) };
    expect_status(
        "QueryAdapterInfo",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );

    // Native fences on an unstarted adapter (no negotiated feature): refused, nothing kept.
    let f = d
        .DxgkDdiCreateNativeFence
        .expect("CreateNativeFence filled");
    let mut create = DXGKARG_CREATENATIVEFENCE {
        hGlobalNativeFence: 0x1000 as HANDLE,
        CurrentValueSystemProcessGpuVa: 0x1_0000,
        MonitoredValueSystemProcessGpuVa: 0x1_0008,
        ..Default::default()
    };
    // SAFETY: live context; `create` is a live local.
    let s = unsafe { f(ctx, &mut create) };
    expect_status(
        "CreateNativeFence",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    // An unknown global handle, and empty or oversized update batches.
    let f = d
        .DxgkDdiDestroyNativeFence
        .expect("DestroyNativeFence filled");
    let destroy = DXGKARG_DESTROYNATIVEFENCE {
        hGlobalNativeFence: 0x1000 as HANDLE,
        ..Default::default()
    };
    // SAFETY: a live local argument block.
    let s = unsafe { f(ptr::from_ref(&destroy).cast_mut()) };
    expect_status(
        "DestroyNativeFence",
        "unknown handle",
        s,
        STATUS_INVALID_HANDLE,
    );
    let f = d
        .DxgkDdiUpdateMonitoredValues
        .expect("UpdateMonitoredValues filled");
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
    // SAFETY: live locals; NumFences 0 is what is tested.
    let s = unsafe { f(&update) };
    expect_status(
        "UpdateMonitoredValues",
        "NumFences 0",
        s,
        STATUS_INVALID_PARAMETER,
    );
    update.NumFences = 1;
    // SAFETY: live locals naming one fence the driver never created.
    let s = unsafe { f(&update) };
    expect_status(
        "UpdateMonitoredValues",
        "unknown handle",
        s,
        STATUS_INVALID_HANDLE,
    );
    assert_eq!(slot, 0, "nothing may be written for a refused update");
    let f = d
        .DxgkDdiUpdateCurrentValuesFromCpu
        .expect("UpdateCurrentValuesFromCpu filled");
    let current = DXGKARG_UPDATECURRENTVALUESFROMCPU {
        NativeFenceArray: &mut handle,
        UpdatedValueArray: &mut value,
        CurrentValueKernelCpuVa: &mut va,
        NumFences: 1,
        ..Default::default()
    };
    // SAFETY: live locals naming one fence the driver never created.
    let s = unsafe { f(&current) };
    expect_status(
        "UpdateCurrentValuesFromCpu",
        "unknown handle",
        s,
        STATUS_INVALID_HANDLE,
    );
    assert_eq!(slot, 0, "nothing may be written for a refused update");

    // Devices, node metadata, suspend/resume and submission on an unstarted adapter: refused.
    let f = d.DxgkDdiCreateDevice.expect("CreateDevice filled");
    let mut dev = DXGKARG_CREATEDEVICE {
        hDevice: 0x2000 as HANDLE,
        ..Default::default()
    };
    // SAFETY: live context; `dev` is a live local.
    let s = unsafe { f(ctx, &mut dev) };
    expect_status(
        "CreateDevice",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    assert_eq!(
        dev.hDevice, 0x2000 as HANDLE,
        "refused create changed hDevice"
    );
    let f = d.DxgkDdiGetNodeMetadata.expect("GetNodeMetadata filled");
    // SAFETY: live context, NULL out pointer.
    let s = unsafe { f(ctx, 0, ptr::null_mut()) };
    expect_status("GetNodeMetadata", "NULL out", s, STATUS_INVALID_PARAMETER);
    let mut md = DXGK_NODEMETADATA::default();
    // SAFETY: live context; `md` is a live local.
    let s = unsafe { f(ctx, 0, &mut md) };
    expect_status(
        "GetNodeMetadata",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let f = d.DxgkDdiSuspendContext.expect("SuspendContext filled");
    let suspend = DXGKARG_SUSPENDCONTEXT {
        hContext: 0x1000 as HANDLE,
        contextSuspendFence: 1,
    };
    // SAFETY: live context; `suspend` is a live local naming a context that does not exist.
    let s = unsafe { f(ctx, &suspend) };
    expect_status(
        "SuspendContext",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let f = d.DxgkDdiResumeContext.expect("ResumeContext filled");
    let resume = DXGKARG_RESUMECONTEXT {
        hContext: 0x1000 as HANDLE,
    };
    // SAFETY: as above.
    let s = unsafe { f(ctx, &resume) };
    expect_status(
        "ResumeContext",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let f = d
        .DxgkDdiSubmitCommandToHwQueue
        .expect("SubmitCommandToHwQueue filled");
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f(ctx, ptr::null()) };
    expect_status(
        "SubmitCommandToHwQueue",
        "NULL args",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let submit = DXGKARG_SUBMITCOMMANDTOHWQUEUE {
        hHwQueue: 0x1000 as HANDLE,
        DmaBufferVirtualAddress: 0x10_0000,
        DmaBufferSize: 4096,
        ..Default::default()
    };
    // SAFETY: live context; `submit` is a live local naming a garbage queue handle.
    let s = unsafe { f(ctx, &submit) };
    expect_status(
        "SubmitCommandToHwQueue",
        "garbage hHwQueue",
        s,
        STATUS_INVALID_HANDLE,
    );

    // TDR DDIs on an unstarted adapter: NULL blocks refused, then "not started"; nothing
    // written to the outputs. CollectDbgInfo (level 0, any time) still answers, bounded.
    let f = d
        .DxgkDdiQueryDependentEngineGroup
        .expect("QueryDependentEngineGroup filled");
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f(ctx, ptr::null_mut()) };
    expect_status(
        "QueryDependentEngineGroup",
        "NULL args",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut group = DXGKARG_QUERYDEPENDENTENGINEGROUP::default();
    // SAFETY: live context; `group` is a live local.
    let s = unsafe { f(ctx, &mut group) };
    expect_status(
        "QueryDependentEngineGroup",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    assert_eq!(
        group.DependentNodeOrdinalMask, 0,
        "refused query wrote a mask"
    );
    let f = d
        .DxgkDdiQueryEngineStatus
        .expect("QueryEngineStatus filled");
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f(ctx, ptr::null_mut()) };
    expect_status(
        "QueryEngineStatus",
        "NULL args",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut status = DXGKARG_QUERYENGINESTATUS::default();
    // SAFETY: live context; `status` is a live local.
    let s = unsafe { f(ctx, &mut status) };
    expect_status(
        "QueryEngineStatus",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let f = d.DxgkDdiResetEngine.expect("ResetEngine filled");
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f(ctx, ptr::null_mut()) };
    expect_status("ResetEngine", "NULL args", s, STATUS_INVALID_PARAMETER);
    let mut reset = DXGKARG_RESETENGINE {
        NodeOrdinal: 0,
        EngineOrdinal: 0,
        LastAbortedFenceId: 0xDEAD,
    };
    // SAFETY: live context; `reset` is a live local.
    let s = unsafe { f(ctx, &mut reset) };
    expect_status(
        "ResetEngine",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    assert_eq!(
        reset.LastAbortedFenceId, 0xDEAD,
        "refused reset wrote an ID"
    );
    let f = d.DxgkDdiCollectDbgInfo.expect("CollectDbgInfo filled");
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f(ctx, ptr::null()) };
    expect_status("CollectDbgInfo", "NULL args", s, STATUS_INVALID_PARAMETER);
    let mut dbg = DXGKARG_COLLECTDBGINFO {
        Reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
        pBuffer: ptr::null_mut(),
        BufferSize: 64,
        pExtension: ptr::null_mut(),
    };
    // SAFETY: live context; a size without a buffer (refused before any write).
    let s = unsafe { f(ctx, &dbg) };
    expect_status(
        "CollectDbgInfo",
        "NULL pBuffer",
        s,
        STATUS_INVALID_PARAMETER,
    );
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
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f2(ctx, ptr::null_mut()) };
    expect_status("CollectDbgInfo2", "NULL args", s, STATUS_INVALID_PARAMETER);
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
    let f = d.DxgkDdiResetFromTimeout.expect("ResetFromTimeout filled");
    // SAFETY: live context.
    let s = unsafe { f(ctx) };
    expect_status(
        "ResetFromTimeout",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let f = d
        .DxgkDdiRestartFromTimeout
        .expect("RestartFromTimeout filled");
    // SAFETY: live context.
    let s = unsafe { f(ctx) };
    expect_status(
        "RestartFromTimeout",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );

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
    // SAFETY: live context; the type is a plain integer.
    let s = unsafe { f(ctx, 7) };
    expect_status(
        "NotifySurpriseRemoval",
        "bad type",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
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

/// The node-ring DDIs (docs/tdr.md §3.3; TDR-03/04/05): NULL adapter and NULL
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
    let submit = d.DxgkDdiSubmitCommand.expect("SubmitCommand filled");
    let virt = d
        .DxgkDdiSubmitCommandVirtual
        .expect("SubmitCommandVirtual filled");
    let preempt = d.DxgkDdiPreemptCommand.expect("PreemptCommand filled");
    let fence = d
        .DxgkDdiQueryCurrentFence
        .expect("QueryCurrentFence filled");
    let paging = d
        .DxgkDdiBuildPagingBuffer
        .expect("BuildPagingBuffer filled");

    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { submit(null, ptr::null()) };
    expect_status("SubmitCommand", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    // SAFETY: as above.
    let s = unsafe { virt(null, ptr::null()) };
    expect_status(
        "SubmitCommandVirtual",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
    let s = unsafe { preempt(null, ptr::null()) };
    expect_status("PreemptCommand", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    // SAFETY: as above.
    let s = unsafe { fence(null, ptr::null_mut()) };
    expect_status(
        "QueryCurrentFence",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
    let s = unsafe { paging(null, ptr::null_mut()) };
    expect_status(
        "BuildPagingBuffer",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut qcf = DXGKARG_QUERYCURRENTFENCE::default();
    // SAFETY: NULL adapter, a live local argument block.
    let s = unsafe { fence(null, &mut qcf) };
    expect_status(
        "QueryCurrentFence",
        "NULL hAdapter",
        s,
        STATUS_INVALID_PARAMETER,
    );

    let mut pdo_stand_in = 0u64;
    let (s, a) = AdapterCtx::add(&d, &mut pdo_stand_in);
    assert_eq!(s, STATUS_SUCCESS, "AddDevice failed: {}", show(s));
    let a = a.expect("AddDevice returned a context");
    let ctx = a.ctx;
    // SAFETY: live context, NULL argument blocks.
    let s = unsafe { submit(ctx, ptr::null()) };
    expect_status("SubmitCommand", "NULL args", s, STATUS_INVALID_PARAMETER);
    // SAFETY: as above.
    let s = unsafe { virt(ctx, ptr::null()) };
    expect_status(
        "SubmitCommandVirtual",
        "NULL args",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
    let s = unsafe { preempt(ctx, ptr::null()) };
    expect_status("PreemptCommand", "NULL args", s, STATUS_INVALID_PARAMETER);
    // SAFETY: as above.
    let s = unsafe { fence(ctx, ptr::null_mut()) };
    expect_status(
        "QueryCurrentFence",
        "NULL args",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
    let s = unsafe { paging(ctx, ptr::null_mut()) };
    expect_status(
        "BuildPagingBuffer",
        "NULL args",
        s,
        STATUS_INVALID_PARAMETER,
    );

    let sc = DXGKARG_SUBMITCOMMAND {
        SubmissionFenceId: 1,
        ..Default::default()
    };
    // SAFETY: live context; `sc` is a live local.
    let s = unsafe { submit(ctx, &sc) };
    expect_status(
        "SubmitCommand",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let sv = DXGKARG_SUBMITCOMMANDVIRTUAL {
        SubmissionFenceId: 1,
        ..Default::default()
    };
    // SAFETY: as above.
    let s = unsafe { virt(ctx, &sv) };
    expect_status(
        "SubmitCommandVirtual",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let pc = DXGKARG_PREEMPTCOMMAND::default();
    // SAFETY: as above.
    let s = unsafe { preempt(ctx, &pc) };
    expect_status(
        "PreemptCommand",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    let mut qcf = DXGKARG_QUERYCURRENTFENCE {
        CurrentFence: 0xDEAD,
        ..Default::default()
    };
    // SAFETY: as above.
    let s = unsafe { fence(ctx, &mut qcf) };
    expect_status(
        "QueryCurrentFence",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    assert_eq!(qcf.CurrentFence, 0xDEAD, "refused query wrote a fence");
    let mut words = [0u64; 8];
    let mut bp = DXGKARG_BUILDPAGINGBUFFER {
        pDmaBuffer: words.as_mut_ptr().cast(),
        DmaSize: 64,
        Operation: DXGK_OPERATION_FILL,
        ..Default::default()
    };
    // SAFETY: live context; `bp` and the buffer it names are live locals.
    let s = unsafe { paging(ctx, &mut bp) };
    expect_status(
        "BuildPagingBuffer",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    assert_eq!(words, [0u64; 8], "refused build wrote the buffer");
    drop(a);
}

/// Native fence logs and GPU clock calibration (docs/logs.md §3): NULL argument
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
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(ptr::null()) };
    expect_status(
        "SetNativeFenceLogBuffer",
        "NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
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
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(ptr::null()) };
    expect_status("UpdateNativeFenceLogs", "NULL", s, STATUS_INVALID_PARAMETER);
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
    // SAFETY: a live local whose NULL array is rejected unread.
    let s = unsafe { f(&null_array) };
    expect_status(
        "UpdateNativeFenceLogs",
        "NULL hHWQueue",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut queues = [junk, ptr::null_mut(), 0x1234usize as HANDLE];
    let garbage = DXGKARG_UPDATENATIVEFENCELOGS {
        NumberOfQueues: 3,
        hHWQueue: queues.as_mut_ptr(),
        ..Default::default()
    };
    // SAFETY: a live local naming three handles in a live local array.
    let s = unsafe { f(&garbage) };
    expect_status(
        "UpdateNativeFenceLogs",
        "garbage handles",
        s,
        STATUS_INVALID_HANDLE,
    );

    let f = d
        .DxgkDdiCalibrateGpuClock
        .expect("CalibrateGpuClock filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(ptr::null_mut(), 0, 0, ptr::null_mut()) };
    expect_status(
        "CalibrateGpuClock",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut pdo_stand_in = 0u64;
    let (s, a) = AdapterCtx::add(&d, &mut pdo_stand_in);
    assert_eq!(s, STATUS_SUCCESS, "AddDevice failed: {}", show(s));
    let a = a.expect("AddDevice returned a context");
    // SAFETY: live context, NULL out pointer.
    let s = unsafe { f(a.ctx, 0, 0, ptr::null_mut()) };
    expect_status("CalibrateGpuClock", "NULL out", s, STATUS_INVALID_PARAMETER);
    let mut out = DXGKARG_CALIBRATEGPUCLOCK::default();
    // SAFETY: live context; `out` is a live local.
    let s = unsafe { f(a.ctx, 0, 0, &mut out) };
    expect_status(
        "CalibrateGpuClock",
        "unstarted adapter",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
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
    use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
    let d = table();
    let null: HANDLE = ptr::null_mut();
    let junk: HANDLE = ptr::without_provenance_mut::<c_void>(0x1234);
    let create_process = d.DxgkDdiCreateProcess.expect("CreateProcess filled");
    let destroy_process = d.DxgkDdiDestroyProcess.expect("DestroyProcess filled");
    let root_size = d
        .DxgkDdiGetRootPageTableSize
        .expect("GetRootPageTableSize filled");
    let set_root = d.DxgkDdiSetRootPageTable.expect("SetRootPageTable filled");
    let create = d.DxgkDdiCreateAllocation.expect("CreateAllocation filled");
    let destroy = d
        .DxgkDdiDestroyAllocation
        .expect("DestroyAllocation filled");
    let describe = d
        .DxgkDdiDescribeAllocation
        .expect("DescribeAllocation filled");
    let standard = d
        .DxgkDdiGetStandardAllocationDriverData
        .expect("GetStandardAllocationDriverData filled");
    let open = d.DxgkDdiOpenAllocation.expect("OpenAllocation filled");
    let close = d.DxgkDdiCloseAllocation.expect("CloseAllocation filled");

    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { create_process(null, ptr::null_mut()) };
    expect_status("CreateProcess", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let mut cp = DXGKARG_CREATEPROCESS::default();
    // SAFETY: NULL adapter, a live local argument block.
    let s = unsafe { create_process(null, &mut cp) };
    expect_status("CreateProcess", "NULL adapter", s, STATUS_INVALID_PARAMETER);
    assert!(cp.hKmdProcess.is_null(), "nothing handed out");
    // SAFETY: as above.
    let s = unsafe { destroy_process(null, junk) };
    expect_status(
        "DestroyProcess",
        "NULL adapter",
        s,
        STATUS_INVALID_PARAMETER,
    );
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

    // SAFETY: as above.
    let s = unsafe { create(null, ptr::null_mut()) };
    expect_status(
        "CreateAllocation",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut ca = DXGKARG_CREATEALLOCATION::default();
    // SAFETY: NULL adapter, a live local block with no allocation array.
    let s = unsafe { create(null, &mut ca) };
    expect_status(
        "CreateAllocation",
        "NULL adapter",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
    let s = unsafe { destroy(null, ptr::null()) };
    expect_status(
        "DestroyAllocation",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let da = DXGKARG_DESTROYALLOCATION::default();
    // SAFETY: as above.
    let s = unsafe { destroy(null, &da) };
    expect_status(
        "DestroyAllocation",
        "NULL adapter",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // Render-only: no standard or display allocations at all.
    // SAFETY: the driver refuses without reading the block.
    let s = unsafe { describe(null, ptr::null_mut()) };
    expect_status("DescribeAllocation", "any", s, STATUS_NOT_SUPPORTED);
    // SAFETY: as above.
    let s = unsafe { standard(null, ptr::null_mut()) };
    expect_status(
        "GetStandardAllocationDriverData",
        "any",
        s,
        STATUS_NOT_SUPPORTED,
    );
    // SAFETY: as above.
    let s = unsafe { open(null, ptr::null()) };
    expect_status("OpenAllocation", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let oa = DXGKARG_OPENALLOCATION::default();
    // SAFETY: a live local block with no info array.
    let s = unsafe { open(junk, &oa) };
    expect_status("OpenAllocation", "no infos", s, STATUS_INVALID_PARAMETER);
    // SAFETY: as above.
    let s = unsafe { close(null, ptr::null()) };
    expect_status("CloseAllocation", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let list = [junk];
    let cl = DXGKARG_CLOSEALLOCATION {
        NumAllocations: 1,
        pOpenHandleList: list.as_ptr(),
    };
    // SAFETY: a live local block and list naming no allocation of no device.
    let s = unsafe { close(junk, &cl) };
    expect_status("CloseAllocation", "junk device", s, STATUS_INVALID_HANDLE);
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
    let (s, a) = AdapterCtx::add(&d, &mut pdo_stand_in);
    assert_eq!(s, STATUS_SUCCESS, "AddDevice failed: {}", show(s));
    let ctx = a.as_ref().expect("AddDevice returned a context").ctx;

    let bands = DXGKARG_SETUPPRIORITYBANDS::default();
    let f = d
        .DxgkDdiSetupPriorityBands
        .expect("SetupPriorityBands filled");
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { f(null, ptr::null()) };
    expect_status(
        "SetupPriorityBands",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: live context, NULL argument block.
    let s = unsafe { f(ctx, ptr::null()) };
    expect_status(
        "SetupPriorityBands",
        "NULL args",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: live context, a live local argument block.
    let s = unsafe { f(ctx, &bands) };
    expect_status(
        "SetupPriorityBands",
        "unstarted",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );

    let log = DXGKARG_SETSCHEDULINGLOGBUFFER {
        NumberOfEntries: 16,
        LogBufferGpuVa: 0x1000,
        ..Default::default()
    };
    let f = d
        .DxgkDdiSetSchedulingLogBuffer
        .expect("SetSchedulingLogBuffer filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null()) };
    expect_status(
        "SetSchedulingLogBuffer",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
    let s = unsafe { f(ctx, &log) };
    expect_status(
        "SetSchedulingLogBuffer",
        "unstarted",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );

    let props = DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES::default();
    let f = d
        .DxgkDdiSetContextSchedulingProperties
        .expect("SetContextSchedulingProperties filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null()) };
    expect_status(
        "SetContextSchedulingProperties",
        "NULL, NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    // SAFETY: as above.
    let s = unsafe { f(ctx, &props) };
    expect_status(
        "SetContextSchedulingProperties",
        "unstarted",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );

    let f = d.DxgkDdiResetHwEngine.expect("ResetHwEngine filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("ResetHwEngine", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let mut reset = DXGKARG_RESETHWENGINE::default();
    // SAFETY: as above.
    let s = unsafe { f(ctx, &mut reset) };
    expect_status("ResetHwEngine", "unstarted", s, STATUS_INVALID_DEVICE_STATE);

    let f = d.DxgkDdiResumeHwEngine.expect("ResumeHwEngine filled");
    // SAFETY: as above.
    let s = unsafe { f(null, ptr::null_mut()) };
    expect_status("ResumeHwEngine", "NULL, NULL", s, STATUS_INVALID_PARAMETER);
    let mut resume = DXGKARG_RESUMEHWENGINE::default();
    // SAFETY: as above.
    let s = unsafe { f(ctx, &mut resume) };
    expect_status(
        "ResumeHwEngine",
        "unstarted",
        s,
        STATUS_INVALID_DEVICE_STATE,
    );
    drop(a);
}

/// BR-47: the render core's `DxgkDdiPresent` and `DxgkDdiControlInterrupt`. rvgpu has nothing to
/// present with and no CRTC, so every call fails (with statuses Dxgkrnl's wrappers accept, BR-23:
/// simos/tests/bringup_rules.rs), and a present leaves the DMA buffer untouched.
#[test]
fn render_core_present_and_control_interrupt_refuse_everything() {
    use rvgpu_ddi::interrupt::{DXGK_INTERRUPT_CRTC_VSYNC, DXGK_INTERRUPT_DMA_COMPLETED};
    use rvgpu_ddi::ntstatus::{STATUS_ILLEGAL_INSTRUCTION, STATUS_UNSUCCESSFUL};
    use rvgpu_ddi::present::{DXGKARG_PRESENT, DXGK_PRESENTFLAGS};

    let d = table();
    let null: HANDLE = ptr::null_mut();
    let mut pdo_stand_in = 0u64;
    let (s, a) = AdapterCtx::add(&d, &mut pdo_stand_in);
    assert_eq!(s, STATUS_SUCCESS, "AddDevice failed: {}", show(s));
    let ctx = a.as_ref().expect("AddDevice returned a context").ctx;

    let present = d.DxgkDdiPresent.expect("Present filled");
    let mut dma = [0xA5u8; 64];
    let mut args = DXGKARG_PRESENT {
        pDmaBuffer: dma.as_mut_ptr().cast(),
        DmaSize: 64,
        Flags: DXGK_PRESENTFLAGS::default().with(DXGK_PRESENTFLAGS::Blt, 1),
        ..Default::default()
    };
    let start = args.pDmaBuffer;
    // SAFETY: NULL arguments are what is being tested; the driver checks them first.
    let s = unsafe { present(null, ptr::null_mut()) };
    expect_status("Present", "NULL, NULL", s, STATUS_INVALID_HANDLE);
    // A context handle is opaque to this DDI's refusal; any non-null value stands in for one.
    let h_context: HANDLE = ptr::from_mut(&mut pdo_stand_in).cast();
    // SAFETY: a live local argument block with a 64-byte DMA buffer.
    let s = unsafe { present(h_context, &mut args) };
    expect_status("Present", "a blt", s, STATUS_ILLEGAL_INSTRUCTION);
    assert_eq!(args.pDmaBuffer, start, "the DMA pointer moved");
    assert!(dma.iter().all(|&b| b == 0xA5), "the DMA buffer was written");

    let control = d.DxgkDdiControlInterrupt.expect("ControlInterrupt filled");
    // SAFETY: as above.
    let s = unsafe { control(null, DXGK_INTERRUPT_CRTC_VSYNC, 1) };
    expect_status("ControlInterrupt", "NULL adapter", s, STATUS_UNSUCCESSFUL);
    for (ty, enable) in [
        (DXGK_INTERRUPT_CRTC_VSYNC, 1),
        (DXGK_INTERRUPT_CRTC_VSYNC, 0),
        (DXGK_INTERRUPT_DMA_COMPLETED, 1),
        (-1, 7),
    ] {
        // SAFETY: a live adapter context; the type and flag are plain values.
        let s = unsafe { control(ctx, ty, enable) };
        expect_status("ControlInterrupt", "any type", s, STATUS_NOT_IMPLEMENTED);
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
    let (s, a) = AdapterCtx::add(&d, &mut pdo_stand_in);
    assert_eq!(s, STATUS_SUCCESS, "AddDevice failed: {}", show(s));
    let ctx = a.as_ref().expect("AddDevice returned a context").ctx;

    let f = d
        .DxgkDdiSetPowerComponentFState
        .expect("SetPowerComponentFState filled");
    // SAFETY: NULL context is what is being tested; the driver checks it first.
    let s = unsafe { f(null, 0, 0) };
    expect_status(
        "SetPowerComponentFState",
        "NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    for (component, fstate) in [(0, 0), (0, 1), (u32::MAX, u32::MAX), (0x1_0000, 0)] {
        // SAFETY: live context, plain integer arguments.
        let s = unsafe { f(ctx, component, fstate) };
        expect_status(
            "SetPowerComponentFState",
            "unstarted",
            s,
            STATUS_INVALID_DEVICE_STATE,
        );
    }

    let f = d
        .DxgkDdiPowerRuntimeControlRequest
        .expect("PowerRuntimeControlRequest filled");
    let mut ret = 55usize;
    // SAFETY: NULL arguments are what is being tested.
    let s = unsafe {
        f(
            null,
            ptr::null(),
            ptr::null_mut(),
            0,
            ptr::null_mut(),
            0,
            &mut ret,
        )
    };
    expect_status(
        "PowerRuntimeControlRequest",
        "NULL",
        s,
        STATUS_INVALID_PARAMETER,
    );
    assert_eq!(ret, 0, "BytesReturned cleared");
    // SAFETY: live context, NULL GUID.
    let s = unsafe {
        f(
            ctx,
            ptr::null(),
            ptr::null_mut(),
            0,
            ptr::null_mut(),
            0,
            ptr::null_mut(),
        )
    };
    expect_status(
        "PowerRuntimeControlRequest",
        "NULL GUID",
        s,
        STATUS_INVALID_PARAMETER,
    );
    let mut garbage = [0xA5u8; 32];
    for code in [GUID_DXGKDDI_POWER_MANAGEMENT_STARTED, GUID::default()] {
        // SAFETY: live context, a live GUID and a garbage buffer whose size is given.
        let s = unsafe {
            f(
                ctx,
                &code,
                garbage.as_mut_ptr().cast(),
                usize::MAX,
                garbage.as_mut_ptr().cast(),
                garbage.len(),
                ptr::null_mut(),
            )
        };
        expect_status(
            "PowerRuntimeControlRequest",
            "unstarted",
            s,
            STATUS_INVALID_DEVICE_STATE,
        );
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
