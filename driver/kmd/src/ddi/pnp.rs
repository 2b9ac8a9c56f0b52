//! The PnP life cycle of the adapter (add, start, stop, remove, power, surprise removal), its
//! interrupt entry points, and the child and I/O DDIs a render-only adapter answers with "none".

use alloc::boxed::Box;

use rvgpu_ddi::adapter::{
    DXGK_CHILD_DESCRIPTOR, DXGK_CHILD_STATUS, DXGK_DEVICE_DESCRIPTOR, DXGK_EVENT_TYPE,
    DXGK_START_INFO, DXGK_SURPRISE_REMOVAL_TYPE, PVIDEO_REQUEST_PACKET,
};
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::{
    BOOLEAN, DEVICE_POWER_STATE, NTSTATUS, PDEVICE_OBJECT, POWER_ACTION, PVOID, UCHAR, ULONG,
};

use super::table::Filled;
use super::thunk::{generic_ddis, Call};
use crate::adapter::Adapter;
use crate::dxgk::Dxgk;
use crate::globals::ADAPTERS;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};

generic_ddis! {
    /// DxgkDdiStopDevice (PASSIVE).
    StopDevice: OnContext => Adapter::stop;
    /// DxgkDdiDpcRoutine (DISPATCH).
    DpcRoutine: OnContext -> () => Adapter::dpc;
    /// DxgkDdiResetDevice (any IRQL, before a bug check or soft reboot).
    ResetDevice: OnContext -> () => Adapter::reset_device;
    /// DxgkDdiNotifySurpriseRemoval (level zero: may overlap other DDIs).
    NotifySurpriseRemoval: OnContextWith<DXGK_SURPRISE_REMOVAL_TYPE> =>
        crate::removal::notify_surprise_removal;
}

/// DxgkDdiAddDevice (PASSIVE): allocate the adapter context.
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
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    // `context` was checked non-null above.
    call.put(context, raw.cast_mut().cast());
    status::SUCCESS
}

/// DxgkDdiStartDevice (PASSIVE).
pub(super) unsafe extern "system" fn start_device<P: Platform>(
    ctx: PVOID,
    start_info: *mut DXGK_START_INFO,
    interface: *mut DXGKRNL_INTERFACE,
    sources: *mut ULONG,
    children: *mut ULONG,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    // The interface is copied.
    let Some((a, iface)) = call.adapter_and::<P, _>(ctx, interface) else {
        return status::INVALID_PARAMETER.code();
    };
    if start_info.is_null() || sources.is_null() || children.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    let r = a.start(
        Dxgk::new(*iface),
        Filled::of(&super::initialization_data::<P>()),
    );
    if r.is_ok() {
        // Render-only: no video present sources, no child devices (both checked non-null).
        call.put(sources, 0);
        call.put(children, 0);
    }
    to_ntstatus(r)
}

/// DxgkDdiRemoveDevice (PASSIVE): frees the context.
pub(super) unsafe extern "system" fn remove_device<P: Platform>(ctx: PVOID) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    let Some(a) = call.adapter::<P>(ctx) else {
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
pub(super) unsafe extern "system" fn dispatch_io_request(
    ctx: PVOID,
    _source: ULONG,
    packet: PVIDEO_REQUEST_PACKET,
) -> NTSTATUS {
    // A null context is the only one that resolves to no adapter (super::thunk::adapter).
    if ctx.is_null() || packet.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    status::NOT_SUPPORTED.code()
}

/// DxgkDdiInterruptRoutine (device IRQL). A thunk of its own: scripts/callgrind-fences.sh
/// measures it by name.
pub(super) unsafe extern "system" fn interrupt_routine<P: Platform>(
    ctx: PVOID,
    _message: ULONG,
) -> BOOLEAN {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    match call.adapter::<P>(ctx) {
        Some(a) => BOOLEAN::from(a.interrupt()),
        None => 0,
    }
}

/// DxgkDdiQueryChildRelations (PASSIVE): a render-only adapter has no children; the array
/// Dxgkrnl passes (NumberOfChildren + 1 zeroed entries) is left as is.
pub(super) unsafe extern "system" fn query_child_relations(
    ctx: PVOID,
    relations: *mut DXGK_CHILD_DESCRIPTOR,
    size: ULONG,
) -> NTSTATUS {
    // A null context is the only one that resolves to no adapter (super::thunk::adapter).
    if ctx.is_null() || relations.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    let need = core::mem::size_of::<DXGK_CHILD_DESCRIPTOR>();
    if usize::try_from(size).map_or(true, |s| s < need) {
        return status::BUFFER_TOO_SMALL.code();
    }
    status::SUCCESS
}

/// DxgkDdiQueryChildStatus (PASSIVE): no child UID is valid on a render-only adapter.
pub(super) unsafe extern "system" fn query_child_status(
    ctx: PVOID,
    child: *mut DXGK_CHILD_STATUS,
    _non_destructive: BOOLEAN,
) -> NTSTATUS {
    // A null context is the only one that resolves to no adapter (super::thunk::adapter).
    if ctx.is_null() || child.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    status::INVALID_PARAMETER.code()
}

/// DxgkDdiQueryDeviceDescriptor (PASSIVE): no children, so no descriptors.
pub(super) unsafe extern "system" fn query_device_descriptor(
    ctx: PVOID,
    _child_uid: ULONG,
    descriptor: *mut DXGK_DEVICE_DESCRIPTOR,
) -> NTSTATUS {
    // A null context is the only one that resolves to no adapter (super::thunk::adapter).
    if ctx.is_null() || descriptor.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    status::GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED.code()
}

/// DxgkDdiSetPowerState (PASSIVE).
pub(super) unsafe extern "system" fn set_power_state<P: Platform>(
    ctx: PVOID,
    device_uid: ULONG,
    state: DEVICE_POWER_STATE,
    _action: POWER_ACTION,
) -> NTSTATUS {
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    match call.adapter::<P>(ctx) {
        Some(a) => to_ntstatus(a.set_power(device_uid, state)),
        None => status::INVALID_PARAMETER.code(),
    }
}

/// DxgkDdiNotifyAcpiEvent (PASSIVE): rvgpu has no ACPI methods or events of its own, so there
/// is nothing to evaluate; it reports no follow-up action.
pub(super) unsafe extern "system" fn notify_acpi_event(
    ctx: PVOID,
    _event_type: DXGK_EVENT_TYPE,
    _event: ULONG,
    _argument: PVOID,
    acpi_flags: *mut ULONG,
) -> NTSTATUS {
    // A null context is the only one that resolves to no adapter (super::thunk::adapter).
    if ctx.is_null() || acpi_flags.is_null() {
        return status::INVALID_PARAMETER.code();
    }
    // SAFETY: a DDI thunk resolving its call's pointers (super::thunk::Call::new).
    let call = unsafe { Call::new() };
    // Checked non-null above.
    call.put(acpi_flags, 0);
    status::SUCCESS
}

/// DxgkDdiUnload (PASSIVE): ends the ETW provider's registration (the only driver-wide state).
pub(super) unsafe extern "system" fn unload<P: Platform>() {
    crate::etw::unregister::<P>();
}

/// DxgkDdiControlEtwLogging (PASSIVE): Dxgkrnl's switch for the driver's ETW events
/// ([`crate::etw::control`]); no flags are defined.
pub(super) unsafe extern "system" fn control_etw_logging(
    enable: BOOLEAN,
    flags: ULONG,
    level: UCHAR,
) {
    crate::etw::control(enable != 0, flags, level);
}
