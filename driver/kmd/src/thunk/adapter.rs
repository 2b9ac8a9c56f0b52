//! The adapter's life cycle: PnP start, stop and power state, surprise removal, its interrupt
//! entry points (crate::adapter), the ETW switch, and the child and I/O DDIs a render-only
//! adapter answers with "none". AddDevice and RemoveDevice, which make and free the adapter
//! context, are in [`super::contract`], with the rest of the context's contract.

use super::contract::{generic_ddis, own_thunks};
use crate::adapter::Adapter;
use crate::ddi_groups::Filled;
use crate::dxgk::Dxgk;
use crate::platform::Platform;
use crate::status::{self, to_ntstatus};
use rvgpu_ddi::adapter::{
    DXGK_CHILD_DESCRIPTOR, DXGK_CHILD_STATUS, DXGK_DEVICE_DESCRIPTOR, DXGK_EVENT_TYPE,
    DXGK_START_INFO, DXGK_SURPRISE_REMOVAL_TYPE, PVIDEO_REQUEST_PACKET,
};
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::{BOOLEAN, DEVICE_POWER_STATE, NTSTATUS, POWER_ACTION, PVOID, UCHAR, ULONG};

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

/// The groups the driver's own table for platform `P` fills. Not inlined: the table is built
/// in this frame, not in StartDevice's, which stays under a page (the Windows image has no
/// `__chkstk`).
#[inline(never)]
fn filled_by_driver<P: Platform>() -> Filled {
    Filled::of(&super::initialization_data::<P>())
}

own_thunks! {
    /// DxgkDdiStartDevice (PASSIVE).
    fn start_device<P: Platform>(
        call,
        ctx: PVOID,
        start_info: *mut DXGK_START_INFO,
        interface: *mut DXGKRNL_INTERFACE,
        sources: *mut ULONG,
        children: *mut ULONG,
    ) -> NTSTATUS {
        // The interface is copied.
        let Some((a, iface)) = call.adapter_and::<P, _>(ctx, interface) else {
            return status::INVALID_PARAMETER.code();
        };
        if start_info.is_null() || sources.is_null() || children.is_null() {
            return status::INVALID_PARAMETER.code();
        }
        let r = a.start(Dxgk::new(*iface), filled_by_driver::<P>());
        if r.is_ok() {
            // Render-only: no video present sources, no child devices (both checked non-null).
            call.put(sources, 0);
            call.put(children, 0);
        }
        to_ntstatus(r)
    }
}

own_thunks! {
    /// DxgkDdiDispatchIoRequest (PASSIVE): rvgpu defines no video IOCTLs.
    fn dispatch_io_request(
        _,
        ctx: PVOID,
        _source: ULONG,
        packet: PVIDEO_REQUEST_PACKET,
    ) -> NTSTATUS {
        // A null context is the only one that resolves to no adapter (super::contract::adapter).
        if ctx.is_null() || packet.is_null() {
            return status::INVALID_PARAMETER.code();
        }
        status::NOT_SUPPORTED.code()
    }
}

own_thunks! {
    /// DxgkDdiInterruptRoutine (device IRQL). A thunk of its own: scripts/callgrind-fences.sh
    /// measures it by name.
    fn interrupt_routine<P: Platform>(
        call,
        ctx: PVOID,
        _message: ULONG,
    ) -> BOOLEAN {
        match call.adapter::<P>(ctx) {
            Some(a) => BOOLEAN::from(a.interrupt()),
            None => 0,
        }
    }
}

own_thunks! {
    /// DxgkDdiQueryChildRelations (PASSIVE): a render-only adapter has no children; the array
    /// Dxgkrnl passes (NumberOfChildren + 1 zeroed entries) is left as is.
    fn query_child_relations(
        _,
        ctx: PVOID,
        relations: *mut DXGK_CHILD_DESCRIPTOR,
        size: ULONG,
    ) -> NTSTATUS {
        // A null context is the only one that resolves to no adapter (super::contract::adapter).
        if ctx.is_null() || relations.is_null() {
            return status::INVALID_PARAMETER.code();
        }
        let need = core::mem::size_of::<DXGK_CHILD_DESCRIPTOR>();
        if usize::try_from(size).map_or(true, |s| s < need) {
            return status::BUFFER_TOO_SMALL.code();
        }
        status::SUCCESS
    }
}

own_thunks! {
    /// DxgkDdiQueryChildStatus (PASSIVE): no child UID is valid on a render-only adapter.
    fn query_child_status(
        _,
        ctx: PVOID,
        child: *mut DXGK_CHILD_STATUS,
        _non_destructive: BOOLEAN,
    ) -> NTSTATUS {
        // A null context is the only one that resolves to no adapter (super::contract::adapter).
        if ctx.is_null() || child.is_null() {
            return status::INVALID_PARAMETER.code();
        }
        status::INVALID_PARAMETER.code()
    }
}

own_thunks! {
    /// DxgkDdiQueryDeviceDescriptor (PASSIVE): no children, so no descriptors.
    fn query_device_descriptor(
        _,
        ctx: PVOID,
        _child_uid: ULONG,
        descriptor: *mut DXGK_DEVICE_DESCRIPTOR,
    ) -> NTSTATUS {
        // A null context is the only one that resolves to no adapter (super::contract::adapter).
        if ctx.is_null() || descriptor.is_null() {
            return status::INVALID_PARAMETER.code();
        }
        status::GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED.code()
    }
}

own_thunks! {
    /// DxgkDdiSetPowerState (PASSIVE).
    fn set_power_state<P: Platform>(
        call,
        ctx: PVOID,
        device_uid: ULONG,
        state: DEVICE_POWER_STATE,
        _action: POWER_ACTION,
    ) -> NTSTATUS {
        match call.adapter::<P>(ctx) {
            Some(a) => to_ntstatus(a.set_power(device_uid, state)),
            None => status::INVALID_PARAMETER.code(),
        }
    }
}

own_thunks! {
    /// DxgkDdiNotifyAcpiEvent (PASSIVE): rvgpu has no ACPI methods or events of its own, so there
    /// is nothing to evaluate; it reports no follow-up action.
    fn notify_acpi_event(
        call,
        ctx: PVOID,
        _event_type: DXGK_EVENT_TYPE,
        _event: ULONG,
        _argument: PVOID,
        acpi_flags: *mut ULONG,
    ) -> NTSTATUS {
        // A null context is the only one that resolves to no adapter (super::contract::adapter).
        if ctx.is_null() || acpi_flags.is_null() {
            return status::INVALID_PARAMETER.code();
        }
        // Checked non-null above.
        call.put(acpi_flags, 0);
        status::SUCCESS
    }
}

own_thunks! {
    /// DxgkDdiUnload (PASSIVE): ends the ETW provider's registration (the only driver-wide state).
    fn unload<P: Platform>(
        _,
    ) {
        crate::etw::unregister::<P>();
    }
}

own_thunks! {
    /// DxgkDdiControlEtwLogging (PASSIVE): Dxgkrnl's switch for the driver's ETW events
    /// ([`crate::etw::control`]); no flags are defined.
    fn control_etw_logging(
        _,
        enable: BOOLEAN,
        flags: ULONG,
        level: UCHAR,
    ) {
        crate::etw::control(enable != 0, flags, level);
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiStartDevice = Some(start_device::<P>);
    t.DxgkDdiStopDevice = Some(super::contract::on_context::<P, StopDevice>);
    t.DxgkDdiDispatchIoRequest = Some(dispatch_io_request);
    t.DxgkDdiInterruptRoutine = Some(interrupt_routine::<P>);
    t.DxgkDdiDpcRoutine = Some(super::contract::on_context::<P, DpcRoutine>);
    t.DxgkDdiQueryChildRelations = Some(query_child_relations);
    t.DxgkDdiQueryChildStatus = Some(query_child_status);
    t.DxgkDdiQueryDeviceDescriptor = Some(query_device_descriptor);
    t.DxgkDdiSetPowerState = Some(set_power_state::<P>);
    t.DxgkDdiNotifyAcpiEvent = Some(notify_acpi_event);
    t.DxgkDdiResetDevice = Some(super::contract::on_context::<P, ResetDevice>);
    t.DxgkDdiNotifySurpriseRemoval =
        Some(super::contract::on_context_with::<P, NotifySurpriseRemoval>);
    t.DxgkDdiUnload = Some(unload::<P>);
    t.DxgkDdiControlEtwLogging = Some(control_etw_logging);
}
