//! The DDI entry points: `extern "system"` functions in the `DRIVER_INITIALIZATION_DATA`.
//!
//! Each thunk does three things only: turn the raw context into `&Adapter`, check the raw
//! arguments (null pointers, sizes), and call the adapter. The logic lives in the modules the
//! adapter calls. Every thunk returns an NTSTATUS (or what its signature demands) and never
//! panics: a bad argument is STATUS_INVALID_PARAMETER.
//!
//! The table is monomorphised per platform: `initialization_data::<WinKernel>()` in the
//! Windows image, `initialization_data::<SimKernel>()` under the simulated OS.

use alloc::boxed::Box;
use core::ffi::c_void;

mod memory;

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGK_CHILD_DESCRIPTOR, DXGK_CHILD_STATUS, DXGK_DEVICE_DESCRIPTOR,
    DXGK_EVENT_TYPE, DXGK_START_INFO, PQUERY_INTERFACE, PVIDEO_REQUEST_PACKET,
};
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::fence::{
    DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE,
    DXGKARG_OPENNATIVEFENCE, DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES,
};
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, DXGKDDI_INTERFACE_VERSION};
use rvgpu_ddi::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_CREATEDOORBELL,
    DXGKARG_CREATEHWQUEUE, DXGKARG_DESTROYDOORBELL, DXGKARG_DISCONNECTDOORBELL,
    DXGKARG_GETNODEMETADATA, DXGKARG_NOTIFYWORKSUBMISSION, DXGKARG_RESUMECONTEXT,
    DXGKARG_SUBMITCOMMANDTOHWQUEUE, DXGKARG_SUSPENDCONTEXT,
};
use rvgpu_ddi::{
    BOOLEAN, DEVICE_POWER_STATE, HANDLE, NTSTATUS, PDEVICE_OBJECT, POWER_ACTION, PVOID, UCHAR,
    UINT, ULONG,
};

use crate::adapter::Adapter;
use crate::caps;
use crate::context;
use crate::doorbell;
use crate::dxgk::Dxgk;
use crate::fence;
use crate::globals::ADAPTERS;
use crate::hwqueue;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};
use crate::submit;

/// The slot after `DxgkDdiNotifyWorkSubmission` (byte 1368): `DxgkDdiFlushHwQueue` on
/// Microsoft's reference page and in pre-release headers, `Reserved4` in the 26100 WDK. The
/// 22631 kernel refuses a user-mode-submission node unless it is filled ([D]
/// `ADAPTER_RENDER::Initialize`, triage event 1290, `STATUS_INVALID_PARAMETER`) and never calls
/// it; its signature is not published. Filled so that the node starts under either reading
/// (docs/windows-bringup.md §10, question 2); if a kernel ever calls it, it refuses and reads
/// nothing (an x64 callee may ignore whatever it is passed).
unsafe extern "system" fn flush_hw_queue_slot() -> rvgpu_ddi::NTSTATUS {
    status::NOT_SUPPORTED.code()
}

/// The miniport's entry-point table for platform `P`.
pub fn initialization_data<P: Platform>() -> DRIVER_INITIALIZATION_DATA {
    DRIVER_INITIALIZATION_DATA {
        Version: DXGKDDI_INTERFACE_VERSION,
        DxgkDdiAddDevice: Some(add_device::<P>),
        DxgkDdiStartDevice: Some(start_device::<P>),
        DxgkDdiStopDevice: Some(stop_device::<P>),
        DxgkDdiRemoveDevice: Some(remove_device::<P>),
        DxgkDdiDispatchIoRequest: Some(dispatch_io_request::<P>),
        DxgkDdiInterruptRoutine: Some(interrupt_routine::<P>),
        DxgkDdiDpcRoutine: Some(dpc_routine::<P>),
        DxgkDdiQueryChildRelations: Some(query_child_relations::<P>),
        DxgkDdiQueryChildStatus: Some(query_child_status::<P>),
        DxgkDdiQueryDeviceDescriptor: Some(query_device_descriptor::<P>),
        DxgkDdiSetPowerState: Some(set_power_state::<P>),
        DxgkDdiNotifyAcpiEvent: Some(notify_acpi_event::<P>),
        DxgkDdiResetDevice: Some(reset_device::<P>),
        DxgkDdiNotifySurpriseRemoval: Some(notify_surprise_removal::<P>),
        DxgkDdiUnload: Some(unload),
        DxgkDdiQueryInterface: Some(query_interface::<P>),
        DxgkDdiControlEtwLogging: Some(control_etw_logging),
        DxgkDdiQueryAdapterInfo: Some(query_adapter_info::<P>),
        DxgkDdiCreateNativeFence: Some(create_native_fence::<P>),
        DxgkDdiDestroyNativeFence: Some(destroy_native_fence::<P>),
        DxgkDdiOpenNativeFence: Some(open_native_fence::<P>),
        DxgkDdiCloseNativeFence: Some(close_native_fence::<P>),
        DxgkDdiUpdateMonitoredValues: Some(update_monitored_values::<P>),
        DxgkDdiUpdateCurrentValuesFromCpu: Some(update_current_values_from_cpu::<P>),
        DxgkDdiCreateDevice: Some(create_device::<P>),
        DxgkDdiDestroyDevice: Some(destroy_device::<P>),
        DxgkDdiCreateContext: Some(create_context::<P>),
        DxgkDdiDestroyContext: Some(destroy_context::<P>),
        DxgkDdiGetNodeMetadata: Some(get_node_metadata::<P>),
        DxgkDdiSuspendContext: Some(suspend_context::<P>),
        DxgkDdiResumeContext: Some(resume_context::<P>),
        DxgkDdiCreateHwQueue: Some(create_hw_queue::<P>),
        DxgkDdiDestroyHwQueue: Some(destroy_hw_queue::<P>),
        DxgkDdiSubmitCommandToHwQueue: Some(submit_command_to_hw_queue::<P>),
        DxgkDdiCreateDoorbell: Some(create_doorbell::<P>),
        DxgkDdiConnectDoorbell: Some(connect_doorbell::<P>),
        DxgkDdiDisconnectDoorbell: Some(disconnect_doorbell::<P>),
        DxgkDdiDestroyDoorbell: Some(destroy_doorbell::<P>),
        DxgkDdiNotifyWorkSubmission: Some(notify_work_submission::<P>),
        Reserved4: flush_hw_queue_slot as *const () as *mut c_void,
        DxgkDdiQueryDependentEngineGroup: Some(query_dependent_engine_group::<P>),
        DxgkDdiQueryEngineStatus: Some(query_engine_status::<P>),
        DxgkDdiResetEngine: Some(reset_engine::<P>),
        // Hardware scheduling (crate::hws). CreateHwContext, DestroyHwContext,
        // SwitchToHwContextList and UpdateHwContextState stay NULL: Windows' VidSch never
        // calls them (its hardware contexts are the CreateContext ones, docs/hws.md §2).
        DxgkDdiSetupPriorityBands: Some(setup_priority_bands::<P>),
        DxgkDdiSetSchedulingLogBuffer: Some(set_scheduling_log_buffer::<P>),
        DxgkDdiSetContextSchedulingProperties: Some(set_context_scheduling_properties::<P>),
        DxgkDdiResetHwEngine: Some(reset_hw_engine::<P>),
        DxgkDdiResumeHwEngine: Some(resume_hw_engine::<P>),
        DxgkDdiCollectDbgInfo: Some(collect_dbg_info::<P>),
        DxgkDdiCollectDbgInfo2: Some(collect_dbg_info2::<P>),
        DxgkDdiResetFromTimeout: Some(reset_from_timeout::<P>),
        DxgkDdiRestartFromTimeout: Some(restart_from_timeout::<P>),
        DxgkDdiSetNativeFenceLogBuffer: Some(set_native_fence_log_buffer::<P>),
        DxgkDdiUpdateNativeFenceLogs: Some(update_native_fence_logs::<P>),
        DxgkDdiCalibrateGpuClock: Some(calibrate_gpu_clock::<P>),
        DxgkDdiSetStablePowerState: Some(set_stable_power_state::<P>),
        // Runtime power management (UM-13, crate::power).
        DxgkDdiSetPowerComponentFState: Some(set_power_component_fstate::<P>),
        DxgkDdiPowerRuntimeControlRequest: Some(power_runtime_control_request::<P>),
        DxgkDdiSubmitCommand: Some(submit_command::<P>),
        DxgkDdiSubmitCommandVirtual: Some(submit_command_virtual::<P>),
        DxgkDdiPreemptCommand: Some(preempt_command::<P>),
        DxgkDdiQueryCurrentFence: Some(query_current_fence::<P>),
        DxgkDdiBuildPagingBuffer: Some(build_paging_buffer::<P>),
        DxgkDdiPresent: Some(present),
        DxgkDdiControlInterrupt: Some(control_interrupt::<P>),
        DxgkDdiCreateProcess: Some(memory::create_process::<P>),
        DxgkDdiDestroyProcess: Some(memory::destroy_process::<P>),
        DxgkDdiGetRootPageTableSize: Some(memory::get_root_page_table_size::<P>),
        DxgkDdiSetRootPageTable: Some(memory::set_root_page_table::<P>),
        DxgkDdiCreateAllocation: Some(memory::create_allocation::<P>),
        DxgkDdiDestroyAllocation: Some(memory::destroy_allocation::<P>),
        DxgkDdiDescribeAllocation: Some(memory::describe_allocation),
        DxgkDdiGetStandardAllocationDriverData: Some(memory::get_standard_allocation_driver_data),
        DxgkDdiOpenAllocation: Some(memory::open_allocation::<P>),
        DxgkDdiCloseAllocation: Some(memory::close_allocation::<P>),
        ..Default::default()
    }
}

/// `MiniportDeviceContext` / `hAdapter` → adapter, or `None` for null.
///
/// # Safety
/// `ctx` must be null or a context returned by [`add_device`] and not yet removed (Dxgkrnl
/// only passes contexts we gave it).
unsafe fn adapter<'a, P: Platform>(ctx: *const c_void) -> Option<&'a Adapter<P>> {
    // SAFETY: per the function contract.
    unsafe { ctx.cast::<Adapter<P>>().as_ref() }
}

/// A DDI's in/out private driver data as bytes: `Some(&mut [])` when the size is 0, `None`
/// when the pointer is null with a non-zero size.
///
/// # Safety
/// A non-null `p` must be valid for reads and writes of `len` bytes for `'a` (Dxgkrnl's
/// contract for the private data of a call), and nothing else may access it meanwhile.
unsafe fn private_data<'a>(p: *mut c_void, len: UINT) -> Option<&'a mut [u8]> {
    let len = usize::try_from(len).ok()?;
    // SAFETY: the function contract.
    unsafe { os_buffer(p, len) }
}

/// An OS-provided buffer of `len` bytes as a slice: `Some(&mut [])` when `len` is 0, `None`
/// when the pointer is null with a non-zero length.
///
/// # Safety
/// As for [`private_data`].
unsafe fn os_buffer<'a>(p: *mut c_void, len: usize) -> Option<&'a mut [u8]> {
    if len == 0 {
        return Some(&mut []);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and valid for `len` bytes (the function contract).
    Some(unsafe { core::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// DxgkDdiAddDevice (PASSIVE): allocate the adapter context.
unsafe extern "system" fn add_device<P: Platform>(
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
    let raw = Box::into_raw(boxed);
    let Some(slot) = ADAPTERS.register(raw.cast_const()) else {
        // SAFETY: `raw` came from Box::into_raw above and was published nowhere.
        drop(unsafe { Box::from_raw(raw) });
        return status::INSUFFICIENT_RESOURCES.code();
    };
    // SAFETY: `raw` is the live adapter just allocated.
    unsafe { (*raw).set_table_slot(slot) };
    // SAFETY: `context` is a valid out pointer (checked non-null; Dxgkrnl's contract).
    unsafe { context.write(raw.cast()) };
    status::SUCCESS
}

/// DxgkDdiStartDevice (PASSIVE).
unsafe extern "system" fn start_device<P: Platform>(
    ctx: PVOID,
    start_info: *mut DXGK_START_INFO,
    interface: *mut DXGKRNL_INTERFACE,
    sources: *mut ULONG,
    children: *mut ULONG,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    let Some(a) = (unsafe { adapter::<P>(ctx) }) else {
        return status::INVALID_PARAMETER.code();
    };
    if start_info.is_null() || interface.is_null() || sources.is_null() || children.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    // SAFETY: non-null and provided by Dxgkrnl for the duration of the call; copied.
    let iface = unsafe { interface.read() };
    let r = a.start(Dxgk::new(iface));
    if r.is_ok() {
        // Render-only: no video present sources, no child devices.
        // SAFETY: a valid out pointer (checked non-null).
        unsafe { sources.write(0) };
        // SAFETY: as above.
        unsafe { children.write(0) };
    }
    to_ntstatus(r)
}

/// DxgkDdiStopDevice (PASSIVE).
unsafe extern "system" fn stop_device<P: Platform>(ctx: PVOID) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    match unsafe { adapter::<P>(ctx) } {
        Some(a) => to_ntstatus(a.stop()),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiRemoveDevice (PASSIVE): frees the context.
unsafe extern "system" fn remove_device<P: Platform>(ctx: PVOID) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    let Some(a) = (unsafe { adapter::<P>(ctx) }) else {
        return status::INVALID_PARAMETER.code();
    };
    if let Err(e) = a.remove() {
        return e.code();
    }
    // No reader can reach the adapter through the table once this returns.
    ADAPTERS.unregister(a.table_slot());
    // SAFETY: `ctx` came from Box::into_raw in add_device; Dxgkrnl calls nothing with it after
    // RemoveDevice, and `remove` checked the adapter is stopped.
    drop(unsafe { Box::from_raw(ctx.cast::<Adapter<P>>()) });
    status::SUCCESS
}

/// DxgkDdiDispatchIoRequest (PASSIVE): rvgpu defines no video IOCTLs.
unsafe extern "system" fn dispatch_io_request<P: Platform>(
    ctx: PVOID,
    _source: ULONG,
    packet: PVIDEO_REQUEST_PACKET,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    if unsafe { adapter::<P>(ctx) }.is_none() || packet.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    status::NOT_SUPPORTED.code()
}

/// DxgkDdiInterruptRoutine (device IRQL).
unsafe extern "system" fn interrupt_routine<P: Platform>(ctx: PVOID, _message: ULONG) -> BOOLEAN {
    // SAFETY: Dxgkrnl passes our own context.
    match unsafe { adapter::<P>(ctx) } {
        Some(a) => BOOLEAN::from(a.interrupt()),
        None => 0,
    }
}

/// DxgkDdiDpcRoutine (DISPATCH).
unsafe extern "system" fn dpc_routine<P: Platform>(ctx: PVOID) {
    // SAFETY: Dxgkrnl passes our own context.
    if let Some(a) = unsafe { adapter::<P>(ctx) } {
        a.dpc();
    }
}

/// DxgkDdiQueryChildRelations (PASSIVE): a render-only adapter has no children; the array
/// Dxgkrnl passes (NumberOfChildren + 1 zeroed entries) is left as is.
unsafe extern "system" fn query_child_relations<P: Platform>(
    ctx: PVOID,
    relations: *mut DXGK_CHILD_DESCRIPTOR,
    size: ULONG,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    if unsafe { adapter::<P>(ctx) }.is_none() || relations.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    let need = core::mem::size_of::<DXGK_CHILD_DESCRIPTOR>();
    if usize::try_from(size).map_or(true, |s| s < need) {
        return status::BUFFER_TOO_SMALL.code();
    }
    status::SUCCESS
}

/// DxgkDdiQueryChildStatus (PASSIVE): no child UID is valid on a render-only adapter.
unsafe extern "system" fn query_child_status<P: Platform>(
    ctx: PVOID,
    child: *mut DXGK_CHILD_STATUS,
    _non_destructive: BOOLEAN,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    if unsafe { adapter::<P>(ctx) }.is_none() || child.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    status::INVALID_PARAMETER.code()
}

/// DxgkDdiQueryDeviceDescriptor (PASSIVE): no children, so no descriptors.
unsafe extern "system" fn query_device_descriptor<P: Platform>(
    ctx: PVOID,
    _child_uid: ULONG,
    descriptor: *mut DXGK_DEVICE_DESCRIPTOR,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    if unsafe { adapter::<P>(ctx) }.is_none() || descriptor.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    status::GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED.code()
}

/// DxgkDdiSetPowerState (PASSIVE).
unsafe extern "system" fn set_power_state<P: Platform>(
    ctx: PVOID,
    device_uid: ULONG,
    state: DEVICE_POWER_STATE,
    _action: POWER_ACTION,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    match unsafe { adapter::<P>(ctx) } {
        Some(a) => to_ntstatus(a.set_power(device_uid, state)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiNotifyAcpiEvent (PASSIVE): rvgpu has no ACPI methods or events of its own, so there
/// is nothing to evaluate; it reports no follow-up action.
unsafe extern "system" fn notify_acpi_event<P: Platform>(
    ctx: PVOID,
    _event_type: DXGK_EVENT_TYPE,
    _event: ULONG,
    _argument: PVOID,
    acpi_flags: *mut ULONG,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    if unsafe { adapter::<P>(ctx) }.is_none() || acpi_flags.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    // SAFETY: valid out pointer (checked non-null).
    unsafe { acpi_flags.write(0) };
    status::SUCCESS
}

/// DxgkDdiResetDevice (any IRQL, before a bug check or soft reboot).
unsafe extern "system" fn reset_device<P: Platform>(ctx: PVOID) {
    // SAFETY: Dxgkrnl passes our own context.
    if let Some(a) = unsafe { adapter::<P>(ctx) } {
        a.reset_device();
    }
}

/// DxgkDdiNotifySurpriseRemoval (level zero: may overlap other DDIs).
unsafe extern "system" fn notify_surprise_removal<P: Platform>(
    ctx: PVOID,
    kind: rvgpu_ddi::adapter::DXGK_SURPRISE_REMOVAL_TYPE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    match unsafe { adapter::<P>(ctx) } {
        Some(a) => to_ntstatus(crate::removal::notify_surprise_removal(a, kind)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiUnload (PASSIVE): the driver keeps no global state, so there is nothing to free.
unsafe extern "system" fn unload() {}

/// DxgkDdiQueryInterface (PASSIVE): rvgpu exports one interface, the WDDM 3.2 feature interface
/// (`GUID_WDDM_INTERFACE_FEATURE`, version 1) through which Dxgkrnl learns which features the
/// driver supports (`crate::features::driver_support`). Any other request is NOT_SUPPORTED, as is
/// version 2, which 24H2 asks for first before falling back to version 1.
unsafe extern "system" fn query_interface<P: Platform>(
    ctx: PVOID,
    query: PQUERY_INTERFACE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    if unsafe { adapter::<P>(ctx) }.is_none() {
        return status::INVALID_PARAMETER.code();
    }
    // SAFETY: Dxgkrnl's request block, valid for the call when non-null.
    let Some(q) = (unsafe { query.as_ref() }) else {
        return status::INVALID_PARAMETER.code();
    };
    // SAFETY: the GUID the request names, valid for the call when non-null.
    let Some(guid) = (unsafe { q.InterfaceType.as_ref() }) else {
        return status::INVALID_PARAMETER.code();
    };
    if *guid != rvgpu_ddi::feature::GUID_WDDM_INTERFACE_FEATURE {
        return status::NOT_SUPPORTED.code();
    }
    let size = core::mem::size_of::<rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE>();
    if q.Version != rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE_VERSION_1
        || usize::from(q.Size) < size
        || q.Interface.is_null()
    {
        return status::NOT_SUPPORTED.code();
    }
    let out = rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE {
        Size: q.Size.min(u16::try_from(size).unwrap_or(u16::MAX)),
        Version: rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE_VERSION_1,
        Context: ctx,
        InterfaceReference: Some(feature_interface_reference),
        InterfaceDereference: Some(feature_interface_reference),
        QueryFeatureSupport: Some(query_feature_support::<P>),
        QueryFeatureInterface: Some(query_feature_interface::<P>),
    };
    // SAFETY: Dxgkrnl provides `Size` (>= the interface's size, checked) writable bytes at
    // `Interface`; unaligned write as its alignment is not promised.
    unsafe {
        q.Interface
            .cast::<rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE>()
            .write_unaligned(out)
    };
    status::SUCCESS
}

/// `InterfaceReference`/`InterfaceDereference` of the feature interface. The interface has no
/// state of its own: its context is the adapter, which outlives every use Dxgkrnl makes of it
/// (it drops the interface before RemoveDevice), so there is nothing to count.
unsafe extern "system" fn feature_interface_reference(_context: PVOID) {}

/// DxgkDdiQueryFeatureSupport (PASSIVE): which versions of a feature the driver implements.
unsafe extern "system" fn query_feature_support<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::feature::DXGKARG_QUERYFEATURESUPPORT,
) -> NTSTATUS {
    // SAFETY: the interface's context, which is our own adapter context.
    if unsafe { adapter::<P>(h_adapter) }.is_none() {
        return status::INVALID_PARAMETER.code();
    }
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let Some(args) = (unsafe { args.as_mut() }) else {
        return status::INVALID_PARAMETER.code();
    };
    let (min, max, supported) = match crate::features::driver_support(args.FeatureId) {
        Some((min, max)) => (min, max, 1),
        None => (0, 0, 0),
    };
    args.MinSupportedVersion = min;
    args.MaxSupportedVersion = max;
    args.SupportedByDriver = supported;
    args.SupportedOnCurrentConfig = supported;
    status::SUCCESS
}

/// DxgkDdiQueryFeatureInterface (PASSIVE): the kernel-mode testing interface
/// ([`crate::kmtest`]) is rvgpu's one driver-side feature interface (native fences use DDIs of
/// the main table).
unsafe extern "system" fn query_feature_interface<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::feature::DXGKARG_QUERYFEATUREINTERFACE,
) -> NTSTATUS {
    // SAFETY: the interface's context, which is our own adapter context.
    if unsafe { adapter::<P>(h_adapter) }.is_none() || args.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    // SAFETY: Dxgkrnl's argument block, valid for the call (non-null, checked).
    match unsafe { args.as_mut() } {
        Some(q) if q.FeatureId == rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING => {
            to_ntstatus(crate::kmtest::query_interface::<P>(q))
        }
        _ => status::NOT_SUPPORTED.code(),
    }
}

/// DxgkDdiControlEtwLogging (PASSIVE): rvgpu logs through DbgPrintEx only for now.
unsafe extern "system" fn control_etw_logging(_enable: BOOLEAN, _flags: ULONG, _level: UCHAR) {}

/// DxgkDdiQueryAdapterInfo (PASSIVE).
unsafe extern "system" fn query_adapter_info<P: Platform>(
    h_adapter: HANDLE,
    args: *const DXGKARG_QUERYADAPTERINFO,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let Some(a) = (unsafe { adapter::<P>(h_adapter) }) else {
        return status::INVALID_PARAMETER.code();
    };
    // SAFETY: Dxgkrnl's argument structure, valid for the call when non-null.
    let Some(args) = (unsafe { args.as_ref() }) else {
        return status::INVALID_PARAMETER.code();
    };
    match a.live() {
        Some(live) => to_ntstatus(caps::query(live, args)),
        // Before StartDevice only the types Dxgkrnl sends at that stage have an answer.
        None => match caps::query_pre_start(args) {
            Some(answer) => to_ntstatus(answer),
            None => status::INVALID_DEVICE_STATE.code(),
        },
    }
}

/// DxgkDdiCreateNativeFence (PASSIVE).
unsafe extern "system" fn create_native_fence<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_CREATENATIVEFENCE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(fence::create(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiOpenNativeFence (PASSIVE).
unsafe extern "system" fn open_native_fence<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_OPENNATIVEFENCE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(fence::open(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiCloseNativeFence (PASSIVE).
unsafe extern "system" fn close_native_fence<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_CLOSENATIVEFENCE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(fence::close(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiDestroyNativeFence (PASSIVE).
unsafe extern "system" fn destroy_native_fence<P: Platform>(
    args: *mut DXGKARG_DESTROYNATIVEFENCE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_ref() } {
        Some(args) => to_ntstatus(fence::destroy::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiUpdateMonitoredValues (device IRQL).
unsafe extern "system" fn update_monitored_values<P: Platform>(
    args: *const DXGKARG_UPDATEMONITOREDVALUES,
) -> NTSTATUS {
    // SAFETY: as for destroy.
    match unsafe { args.as_ref() } {
        Some(args) => {
            // SAFETY: the OS passes three arrays of NumFences entries, valid for the call.
            let arrays = unsafe {
                fence::FenceArrays::new(
                    args.NativeFenceArray,
                    args.UpdatedValueArray,
                    args.MonitoredValueKernelCpuVa,
                    args.NumFences,
                )
            };
            to_ntstatus(fence::update_monitored::<P>(args, &arrays))
        }
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiUpdateCurrentValuesFromCpu (DISPATCH).
unsafe extern "system" fn update_current_values_from_cpu<P: Platform>(
    args: *const DXGKARG_UPDATECURRENTVALUESFROMCPU,
) -> NTSTATUS {
    // SAFETY: as for destroy.
    match unsafe { args.as_ref() } {
        Some(args) => {
            // SAFETY: the OS passes three arrays of NumFences entries, valid for the call.
            let arrays = unsafe {
                fence::FenceArrays::new(
                    args.NativeFenceArray,
                    args.UpdatedValueArray,
                    args.CurrentValueKernelCpuVa,
                    args.NumFences,
                )
            };
            to_ntstatus(fence::update_current::<P>(args, &arrays))
        }
        None => status::INVALID_PARAMETER.code(),
    }
}

// ---------------------------------------------------------------------------------------------
// Devices, contexts, hardware queues and doorbells. Handles other than hAdapter are
// numbers the driver decodes and looks up (crate::sched), so a bad one is an NTSTATUS.
// ---------------------------------------------------------------------------------------------

/// DxgkDdiCreateDevice (PASSIVE).
unsafe extern "system" fn create_device<P: Platform>(
    h_adapter: HANDLE,
    args: *mut DXGKARG_CREATEDEVICE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(context::create_device(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiDestroyDevice (PASSIVE).
unsafe extern "system" fn destroy_device<P: Platform>(h_device: HANDLE) -> NTSTATUS {
    to_ntstatus(context::destroy_device::<P>(h_device))
}

/// DxgkDdiCreateContext (PASSIVE).
unsafe extern "system" fn create_context<P: Platform>(
    h_device: HANDLE,
    args: *mut DXGKARG_CREATECONTEXT,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_mut() } {
        Some(args) => to_ntstatus(context::create_context::<P>(h_device, args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiDestroyContext (PASSIVE).
unsafe extern "system" fn destroy_context<P: Platform>(h_context: HANDLE) -> NTSTATUS {
    to_ntstatus(context::destroy_context::<P>(h_context))
}

/// DxgkDdiGetNodeMetadata (PASSIVE).
unsafe extern "system" fn get_node_metadata<P: Platform>(
    h_adapter: HANDLE,
    node_and_adapter: UINT,
    out: *mut DXGKARG_GETNODEMETADATA,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's out block, valid for the call when non-null.
    let out = unsafe { out.as_mut() };
    let (Some(a), Some(out)) = (a, out) else {
        return status::INVALID_PARAMETER.code();
    };
    let Some(live) = a.live() else {
        return status::INVALID_DEVICE_STATE.code();
    };
    match caps::node_metadata(live, node_and_adapter) {
        Ok(md) => {
            *out = md;
            status::SUCCESS
        }
        Err(e) => e.code(),
    }
}

/// DxgkDdiSuspendContext (PASSIVE).
unsafe extern "system" fn suspend_context<P: Platform>(
    h_adapter: HANDLE,
    args: *const DXGKARG_SUSPENDCONTEXT,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(context::suspend_context(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiResumeContext (PASSIVE).
unsafe extern "system" fn resume_context<P: Platform>(
    h_adapter: HANDLE,
    args: *const DXGKARG_RESUMECONTEXT,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(context::resume_context(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiCreateHwQueue (PASSIVE): `h_context` is our context handle.
unsafe extern "system" fn create_hw_queue<P: Platform>(
    h_context: HANDLE,
    args: *mut DXGKARG_CREATEHWQUEUE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_mut() } {
        Some(args) => {
            // SAFETY: Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at
            // `pPrivateDriverData` (a kernel copy of the UMD's buffer) for the call.
            let data = unsafe { private_data(args.pPrivateDriverData, args.PrivateDriverDataSize) };
            to_ntstatus(hwqueue::create::<P>(h_context, args, data))
        }
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiDestroyHwQueue (PASSIVE).
unsafe extern "system" fn destroy_hw_queue<P: Platform>(h_queue: HANDLE) -> NTSTATUS {
    to_ntstatus(hwqueue::destroy::<P>(h_queue))
}

/// DxgkDdiSubmitCommandToHwQueue (PASSIVE).
unsafe extern "system" fn submit_command_to_hw_queue<P: Platform>(
    h_adapter: HANDLE,
    args: *const DXGKARG_SUBMITCOMMANDTOHWQUEUE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(submit::submit(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiCreateDoorbell (PASSIVE).
unsafe extern "system" fn create_doorbell<P: Platform>(
    args: *mut DXGKARG_CREATEDOORBELL,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_mut() } {
        Some(args) => {
            // SAFETY: Dxgkrnl passes `PrivateDriverDataSize` in/out bytes at
            // `PrivateDriverData` for the call.
            let data = unsafe { private_data(args.PrivateDriverData, args.PrivateDriverDataSize) };
            to_ntstatus(doorbell::create::<P>(args, data))
        }
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiConnectDoorbell (PASSIVE).
unsafe extern "system" fn connect_doorbell<P: Platform>(
    args: *mut DXGKARG_CONNECTDOORBELL,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_mut() } {
        Some(args) => to_ntstatus(doorbell::connect::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiDisconnectDoorbell (PASSIVE).
unsafe extern "system" fn disconnect_doorbell<P: Platform>(
    args: *mut DXGKARG_DISCONNECTDOORBELL,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_ref() } {
        Some(args) => to_ntstatus(doorbell::disconnect::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiDestroyDoorbell (PASSIVE).
unsafe extern "system" fn destroy_doorbell<P: Platform>(
    args: *mut DXGKARG_DESTROYDOORBELL,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_ref() } {
        Some(args) => to_ntstatus(doorbell::destroy::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiNotifyWorkSubmission (PASSIVE).
unsafe extern "system" fn notify_work_submission<P: Platform>(
    args: *mut DXGKARG_NOTIFYWORKSUBMISSION,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_ref() } {
        Some(args) => to_ntstatus(doorbell::notify_work_submission::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

// ---------------------------------------------------------------------------------------------
// Node rings: OS-scheduled submission, preemption, paging (docs/tdr.md §3.3;
// crate::node, crate::paging). IRQLs from each DDI's Microsoft page, cited there.
// ---------------------------------------------------------------------------------------------

/// DxgkDdiSubmitCommand (DISPATCH_LEVEL; an error status is bug check 0x119 / 0x2).
unsafe extern "system" fn submit_command<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::tdr::DXGKARG_SUBMITCOMMAND,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::node::submit_command(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiSubmitCommandVirtual (IRQL not on the page; DISPATCH-safe).
unsafe extern "system" fn submit_command_virtual<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::tdr::DXGKARG_SUBMITCOMMANDVIRTUAL,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::node::submit_command_virtual(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiPreemptCommand (DISPATCH_LEVEL; an error status is bug check 0x119 / 0x2).
unsafe extern "system" fn preempt_command<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::tdr::DXGKARG_PREEMPTCOMMAND,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::node::preempt_command(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiQueryCurrentFence (IRQL not on the page; DISPATCH-safe).
unsafe extern "system" fn query_current_fence<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_QUERYCURRENTFENCE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::node::query_current_fence(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiPresent (PASSIVE): refused, rvgpu has nothing to present with (`crate::present`).
unsafe extern "system" fn present(
    h_context: HANDLE,
    args: *mut rvgpu_ddi::present::DXGKARG_PRESENT,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match args {
        // The context is not looked at: no present is carried out on any of them.
        Some(args) if !h_context.is_null() => to_ntstatus(crate::present::present(args)),
        // INVALID_HANDLE is in the wrapper's allow-list; INVALID_PARAMETER is not.
        _ => status::INVALID_HANDLE.code(),
    }
}

/// DxgkDdiControlInterrupt (PASSIVE): no interrupt type is under its control on rvgpu.
unsafe extern "system" fn control_interrupt<P: Platform>(
    h_adapter: HANDLE,
    ty: rvgpu_ddi::interrupt::DXGK_INTERRUPT_TYPE,
    enable: BOOLEAN,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    match unsafe { adapter::<P>(h_adapter) } {
        Some(_) => to_ntstatus(crate::present::control_interrupt(ty, enable != 0)),
        // UNSUCCESSFUL is in the wrapper's allow-list (SUCCESS, UNSUCCESSFUL, NOT_IMPLEMENTED).
        None => status::UNSUCCESSFUL.code(),
    }
}

/// DxgkDdiBuildPagingBuffer (PASSIVE per the public headers).
unsafe extern "system" fn build_paging_buffer<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => crate::paging::build_paging_buffer(a, args),
        _ => status::INVALID_PARAMETER.code(),
    }
}

// ---------------------------------------------------------------------------------------------
// Native fence logs and GPU clock calibration (docs/logs.md §3).
// ---------------------------------------------------------------------------------------------

/// DxgkDdiSetNativeFenceLogBuffer (DISPATCH_LEVEL, LOG-01).
unsafe extern "system" fn set_native_fence_log_buffer<P: Platform>(
    args: *const rvgpu_ddi::fence::DXGKARG_SETNATIVEFENCELOGBUFFER,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_ref() } {
        Some(args) => to_ntstatus(crate::log::set_log_buffer::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiUpdateNativeFenceLogs (DISPATCH_LEVEL, LOG-07).
unsafe extern "system" fn update_native_fence_logs<P: Platform>(
    args: *const rvgpu_ddi::fence::DXGKARG_UPDATENATIVEFENCELOGS,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    match unsafe { args.as_ref() } {
        Some(args) => to_ntstatus(crate::log::update_logs::<P>(args)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiCalibrateGpuClock (DISPATCH_LEVEL).
unsafe extern "system" fn calibrate_gpu_clock<P: Platform>(
    h_adapter: HANDLE,
    node: UINT,
    engine: UINT,
    out: *mut rvgpu_ddi::adapter::DXGKARG_CALIBRATEGPUCLOCK,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let out = unsafe { out.as_mut() };
    match (a, out) {
        (Some(a), Some(out)) => to_ntstatus(crate::clock::calibrate(a, node, engine, out)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiSetStablePowerState (PASSIVE). Dxgkrnl requires it beside CalibrateGpuClock from
/// interface 0x5008 on (docs/windows-bringup.md BR-54). The emulated GPU has one clock and no
/// power states to vary, so its power state is always stable: the request is recorded for
/// debugging and nothing changes.
unsafe extern "system" fn set_stable_power_state<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::adapter::DXGKARG_SETSTABLEPOWERSTATE,
) {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    if let (Some(_), Some(args)) = (a, args) {
        crate::klog!(
            P,
            Info,
            "rvgpu: SetStablePowerState({}): the device has one fixed clock",
            args.Enabled != 0
        );
    }
}

// ---------------------------------------------------------------------------------------------
// TDR (docs/tdr.md §3.4; crate::reset, crate::dbginfo). IRQL and synchronisation
// levels are on each function's Microsoft page, cited in crate::reset.
// ---------------------------------------------------------------------------------------------

/// DxgkDdiQueryDependentEngineGroup (PASSIVE, first level).
unsafe extern "system" fn query_dependent_engine_group<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_QUERYDEPENDENTENGINEGROUP,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::reset::query_dependent_engine_group(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiQueryEngineStatus (PASSIVE, first level).
unsafe extern "system" fn query_engine_status<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_QUERYENGINESTATUS,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::reset::query_engine_status(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiResetEngine (PASSIVE, first level).
unsafe extern "system" fn reset_engine<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_RESETENGINE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_mut() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::reset::reset_engine(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiSetupPriorityBands (PASSIVE).
unsafe extern "system" fn setup_priority_bands<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::hws::DXGKARG_SETUPPRIORITYBANDS,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::hws::setup_priority_bands(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiSetSchedulingLogBuffer (PASSIVE).
unsafe extern "system" fn set_scheduling_log_buffer<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::hws::DXGKARG_SETSCHEDULINGLOGBUFFER,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::hws::set_scheduling_log_buffer(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiSetContextSchedulingProperties (PASSIVE).
unsafe extern "system" fn set_context_scheduling_properties<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::hws::DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => {
            to_ntstatus(crate::hws::set_context_scheduling_properties(a, args))
        }
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiResetHwEngine (PASSIVE).
unsafe extern "system" fn reset_hw_engine<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::hws::DXGKARG_RESETHWENGINE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::reset::reset_hw_engine(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiResumeHwEngine (PASSIVE).
unsafe extern "system" fn resume_hw_engine<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::hws::DXGKARG_RESUMEHWENGINE,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => to_ntstatus(crate::reset::resume_hw_engine(a, args)),
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiCollectDbgInfo (level 0; PASSIVE for the TDR reasons, any IRQL otherwise).
unsafe extern "system" fn collect_dbg_info<P: Platform>(
    h_adapter: HANDLE,
    args: *const rvgpu_ddi::tdr::DXGKARG_COLLECTDBGINFO,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => {
            // SAFETY: Dxgkrnl provides `BufferSize` writable bytes at `pBuffer` for the call
            // (DXGKARG_COLLECTDBGINFO: "the maximum size, in bytes, to copy to the buffer").
            let buf = unsafe { os_buffer(args.pBuffer, args.BufferSize) };
            to_ntstatus(crate::dbginfo::collect(a, args, buf))
        }
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiCollectDbgInfo2 (level 0, as DxgkDdiCollectDbgInfo; WDDM 3.2, preferred by 24H2).
unsafe extern "system" fn collect_dbg_info2<P: Platform>(
    h_adapter: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_COLLECTDBGINFO2,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    let a = unsafe { adapter::<P>(h_adapter) };
    // SAFETY: Dxgkrnl's argument block, valid for the call when non-null.
    let args = unsafe { args.as_ref() };
    match (a, args) {
        (Some(a), Some(args)) => {
            // SAFETY: as for collect_dbg_info: `BufferSize` writable bytes at `pBuffer`.
            let buf = unsafe { os_buffer(args.pBuffer, args.BufferSize) };
            let size = core::mem::size_of::<rvgpu_ddi::tdr::DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>();
            let whole = usize::try_from(args.TdrPayloadSize).is_ok_and(|n| n >= size);
            let payload = (whole && (args.TdrPayload as usize).is_multiple_of(8))
                // SAFETY: the OS's payload of `TdrPayloadSize` bytes (checked to hold the
                // structure, and aligned), valid for the call when non-null.
                .then(|| unsafe {
                    args.TdrPayload
                        .cast::<rvgpu_ddi::tdr::DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>()
                        .as_ref()
                })
                .flatten();
            to_ntstatus(crate::dbginfo::collect2(a, args, buf, payload))
        }
        _ => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiResetFromTimeout (PASSIVE; no other DDI except the F-state power DDIs runs).
unsafe extern "system" fn reset_from_timeout<P: Platform>(h_adapter: HANDLE) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    match unsafe { adapter::<P>(h_adapter) } {
        Some(a) => to_ntstatus(crate::reset::reset_from_timeout(a)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiRestartFromTimeout (PASSIVE).
unsafe extern "system" fn restart_from_timeout<P: Platform>(h_adapter: HANDLE) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context as hAdapter.
    match unsafe { adapter::<P>(h_adapter) } {
        Some(a) => to_ntstatus(crate::reset::restart_from_timeout(a)),
        None => status::INVALID_PARAMETER.code(),
    }
}

// ---------------------------------------------------------------------------------------------
// Runtime power management (UM-13; crate::power). Both at IRQL <= DISPATCH_LEVEL, zero-level
// synchronisation (their Microsoft pages, cited in crate::power).
// ---------------------------------------------------------------------------------------------

/// DxgkDdiSetPowerComponentFState (<= DISPATCH_LEVEL).
unsafe extern "system" fn set_power_component_fstate<P: Platform>(
    ctx: HANDLE,
    component: UINT,
    fstate: UINT,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    match unsafe { adapter::<P>(ctx) } {
        Some(a) => to_ntstatus(crate::power::set_fstate(a, component, fstate)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiPowerRuntimeControlRequest (<= DISPATCH_LEVEL). No control code of rvgpu's returns
/// data, so `BytesReturned` (when given) is set to 0 and the buffers are not touched.
unsafe extern "system" fn power_runtime_control_request<P: Platform>(
    ctx: HANDLE,
    code: *const rvgpu_ddi::GUID,
    _in_buffer: PVOID,
    _in_size: rvgpu_ddi::SIZE_T,
    _out_buffer: PVOID,
    _out_size: rvgpu_ddi::SIZE_T,
    bytes_returned: *mut rvgpu_ddi::SIZE_T,
) -> NTSTATUS {
    // SAFETY: Dxgkrnl passes our own context.
    let a = unsafe { adapter::<P>(ctx) };
    // SAFETY: the OS's control-code GUID, valid for the call when non-null; read unaligned as
    // its alignment is not promised.
    let code = (!code.is_null()).then(|| unsafe { code.read_unaligned() });
    if !bytes_returned.is_null() {
        // SAFETY: an optional out pointer the OS provides for the call (checked non-null);
        // unaligned write as its alignment is not promised.
        unsafe { bytes_returned.write_unaligned(0) };
    }
    match (a, code) {
        (Some(a), Some(code)) => to_ntstatus(crate::power::control_request(a, &code)),
        _ => status::INVALID_PARAMETER.code(),
    }
}
