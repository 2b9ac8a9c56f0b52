//! The `DXGKRNL_INTERFACE` the simulated Dxgkrnl hands to `DxgkDdiStartDevice`.
//!
//! Every slot the bindings have is filled: the callbacks bring-up needs are simulated below;
//! every other slot points at a stub that halts the machine with "callback X not simulated"
//! (never a silent success). Each simulated callback first checks the caller's IRQL against
//! [`crate::adapter::irql`] and resolves `DeviceHandle` through the adapter registry; an unknown handle
//! is what Dxgkrnl would dereference as garbage: bug check 0x50.
//!
//! Callbacks never unwind into the driver: a violation records the bug check and the callback
//! returns an error status (or FALSE / nothing).

mod device;
mod feature;
pub(crate) mod ffi;
mod handle_data;
mod interrupt;
mod sync;

use self::ffi::view::{self, DriverMemory};
use self::ffi::*;
use crate::adapter::callback::enter;

use std::sync::Arc;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::init::DXGKDDI_INTERFACE_VERSION_WDDM3_2;
use rvgpu_ddi::ntstatus::*;

use crate::adapter::context::current_machine;
use crate::adapter::irql::Routine;
use crate::adapter::AdapterShared;
use crate::base::processor::current_irql;

// ---------------------------------------------------------------------------------------------
// Entry checks.

// ---------------------------------------------------------------------------------------------
// Stubs for callbacks the simulation does not implement.

/// What a stub returns to the driver.
pub trait FailValue {
    /// The failure value.
    fn fail() -> Self;
}
impl FailValue for () {
    fn fail() -> Self {}
}
impl FailValue for NTSTATUS {
    fn fail() -> Self {
        STATUS_NOT_IMPLEMENTED
    }
}
impl FailValue for BOOLEAN {
    fn fail() -> Self {
        0
    }
}
impl FailValue for u32 {
    fn fail() -> Self {
        0
    }
}
impl FailValue for u64 {
    fn fail() -> Self {
        0
    }
}
impl<T> FailValue for *mut T {
    fn fail() -> Self {
        std::ptr::null_mut()
    }
}

fn not_simulated(id: usize) {
    let name = DXGKRNL_INTERFACE::SLOT_NAMES
        .get(id)
        .copied()
        .unwrap_or("<unknown slot>");
    let msg = format!("callback {name} not simulated");
    match current_machine() {
        Some(m) => m.raise_sim_error(msg),
        None => eprintln!("rvgpu-simos: {msg} (no current machine)"),
    }
}

macro_rules! not_simulated_slots {
    ($iface:ident; $($field:ident),* $(,)?) => {
        $( $iface.$field = ffi::NotSimulated::stub::<{ rvgpu_ddi::slot_id!(DXGKRNL_INTERFACE::SLOT_NAMES, stringify!($field)) }>(); )*
    };
}

// ---------------------------------------------------------------------------------------------
// The table.

/// The callback table for adapter `a`, for the driver linked into this process.
pub fn interface_for(a: &Arc<AdapterShared>) -> DXGKRNL_INTERFACE {
    table::<Direct>(a.handle())
}

/// The callback table with adapter handle `handle`, whose callbacks reach the driver's memory
/// through `M` ([`DriverMemory`]): the PE bridge hands the image the table of its own kind.
pub(crate) fn table<M: DriverMemory>(handle: HANDLE) -> DXGKRNL_INTERFACE {
    let mut i = DXGKRNL_INTERFACE {
        Size: std::mem::size_of::<DXGKRNL_INTERFACE>() as ULONG,
        Version: DXGKDDI_INTERFACE_VERSION_WDDM3_2,
        DeviceHandle: handle,
        ..DXGKRNL_INTERFACE::default()
    };
    i.DxgkCbGetDeviceInformation = Some(get_device_information::<M>);
    i.DxgkCbMapMemory = Some(map_memory::<M>);
    i.DxgkCbUnmapMemory = Some(unmap_memory);
    i.DxgkCbQueueDpc = Some(queue_dpc);
    i.DxgkCbQueryServices = Some(query_services::<M>);
    i.DxgkCbSynchronizeExecution = Some(synchronize_execution::<M>);
    i.DxgkCbNotifyInterrupt = Some(notify_interrupt::<M>);
    i.DxgkCbNotifyDpc = Some(notify_dpc);
    i.DxgkCbLogEtwEvent = Some(log_etw_event);
    i.DxgkCbAllocateContiguousMemory = Some(allocate_contiguous_memory::<M>);
    i.DxgkCbFreeContiguousMemory = Some(free_contiguous_memory::<M>);
    not_simulated_slots!(i;
        DxgkCbEvalAcpiMethod, DxgkCbIndicateChildStatus, DxgkCbReadDeviceSpace,
        DxgkCbWriteDeviceSpace, DxgkCbIsDevicePresent,
        DxgkCbGetHandleParent, DxgkCbEnumHandleChildren, DxgkCbQueryVidPnInterface,
        DxgkCbQueryMonitorInterface, DxgkCbGetCaptureAddress, DxgkCbExcludeAdapterAccess,
        DxgkCbCreateContextAllocation, DxgkCbDestroyContextAllocation,
        DxgkCbAcquirePostDisplayOwnership, DxgkCbPowerRuntimeControlRequest,
        DxgkCbSetPowerComponentLatency, DxgkCbSetPowerComponentResidency,
        DxgkCbCompleteFStateTransition, DxgkCbCompletePStateTransition,
        DxgkCbMapContextAllocation, DxgkCbUpdateContextAllocation,
        DxgkCbReserveGpuVirtualAddressRange, DxgkCbAcquireHandleData, DxgkCbReleaseHandleData,
        DxgkCbHardwareContentProtectionTeardown, DxgkCbMultiPlaneOverlayDisabled,
        DxgkCbMitigatedRangeUpdate, DxgkCbInvalidateHwContext, DxgkCbIndicateConnectorChange,
        DxgkCbUnblockUEFIFrameBufferRanges, DxgkCbAcquirePostDisplayOwnership2,
        DxgkCbSetProtectedSessionStatus, DxgkCbAllocatePagesForMdl, DxgkCbFreePagesFromMdl,
        DxgkCbPinFrameBufferForSave, DxgkCbUnpinFrameBufferForSave,
        DxgkCbMapFrameBufferPointer, DxgkCbUnmapFrameBufferPointer, DxgkCbMapMdlToIoMmu,
        DxgkCbUnmapMdlFromIoMmu, DxgkCbReportDiagnostic, DxgkCbSignalEvent,
        DxgkCbIsFeatureEnabled, DxgkCbSaveMemoryForHotUpdate, DxgkCbNotifyCursorSupportChange,
        DxgkCbCreatePhysicalMemoryObject,
        DxgkCbDestroyPhysicalMemoryObject, DxgkCbMapPhysicalMemory, DxgkCbUnmapPhysicalMemory,
        DxgkCbAllocateAdl, DxgkCbFreeAdl, DxgkCbOpenPhysicalMemoryObject,
        DxgkCbClosePhysicalMemoryObject, DxgkCbPinFrameBufferForSave2,
    );
    i.DxgkCbQueryFeatureSupport = Some(query_feature_support::<M>);
    i.DxgkCbDisconnectDoorbell = Some(ffi::disconnect_doorbell::<M>);
    i.DxgkCbGetHandleData = Some(get_handle_data::<M>);
    i.DxgkCbSetPowerComponentActive = Some(ffi::set_power_component_active);
    i.DxgkCbSetPowerComponentIdle = Some(ffi::set_power_component_idle);
    // TDR: the guilty context of an engine reset (crate::vidsch::tdr), by Dxgkrnl's handle.
    i.DxgkCbInvalidateHwContext = Some(ffi::invalidate_hw_context::<M>);
    i
}

// ---------------------------------------------------------------------------------------------
// User-mode submission.

/// `DxgkCbDisconnectDoorbell` (PASSIVE_LEVEL): the KMD takes a connected doorbell away from its
/// queue (victimisation, UM-09/UM-20). The OS points the doorbell's CPU VA at the dummy page
/// and writes the reason to its status page ([`crate::ums`]). No adapter handle: the doorbell
/// and queue handles identify it. `addr`: the callback's entry point.
fn disconnect_doorbell(args: Option<DXGKARGCB_DISCONNECTDOORBELL>, addr: usize) -> NTSTATUS {
    if let Err(b) =
        crate::adapter::irql::check(Routine::DxgkCbDisconnectDoorbell, current_irql(), addr)
    {
        crate::adapter::context::raise(b);
        return STATUS_UNSUCCESSFUL;
    }
    let Some(args) = args else {
        crate::adapter::context::raise(crate::BugCheck::new(
            crate::base::bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, addr as u64, 0],
        ));
        return STATUS_INVALID_PARAMETER;
    };
    crate::ums::cb_disconnect_doorbell(&args)
}

/// `DxgkCbSetPowerComponentActive` (PASSIVE_LEVEL): one more active reference on a power
/// component, which is in F0 when it returns ([`crate::ums::cb_component_active`]).
fn set_power_component_active(handle: HANDLE, component: u32) {
    let Some(a) = enter(
        Routine::DxgkCbSetPowerComponentActive,
        handle,
        ffi::set_power_component_active as *const () as usize,
    ) else {
        return;
    };
    crate::ums::cb_component_active(&a, component);
}

/// `DxgkCbSetPowerComponentIdle` (PASSIVE_LEVEL for an engine component): drops one active
/// reference ([`crate::ums::cb_component_idle`]).
fn set_power_component_idle(handle: HANDLE, component: u32) {
    let Some(a) = enter(
        Routine::DxgkCbSetPowerComponentIdle,
        handle,
        ffi::set_power_component_idle as *const () as usize,
    ) else {
        return;
    };
    crate::ums::cb_component_idle(&a, component);
}

// ---------------------------------------------------------------------------------------------
// TDR.

/// `DxgkCbInvalidateHwContext` (PASSIVE_LEVEL) as 24H2 `K:DxgkInvalidateHwContextCB`
/// @0x14006C2E0 reads it: `hHwContext` is Dxgkrnl's context handle block, the input `hContext`
/// of `DxgkDdiCreateContext`, and the callback follows its +8 to VidSch's hardware context.
/// - +8 zero (a context without a hardware context): success, nothing done.
/// - Anything but a live block of the adapter: 24H2 reads +8 of it all the same; the
///   simulation cannot read a foreign address, so it takes the read as the page fault it is
///   for a handle that is not kernel memory (bug check 0x50: the address read, a read, the
///   callback, 0). The driver's own context handle is such a value.
/// - A hardware context: VidSch invalidates it (`crate::vidsch::tdr`'s callback, with the
///   context found).
///
/// `Ok` is the answer; `Err` hands VidSch's callback the block to act on (none for a NULL one).
/// `addr`: the callback's entry point.
fn invalidate_hw_context(
    args: Option<DXGKARGCB_INVALIDATEHWCONTEXT>,
    addr: usize,
) -> Result<NTSTATUS, Option<DXGKARGCB_INVALIDATEHWCONTEXT>> {
    let Some(read) = args else {
        return Err(None);
    };
    let Some(a) = AdapterShared::from_handle(read.hAdapter) else {
        return Err(Some(read));
    };
    if let Err(b) =
        crate::adapter::irql::check(Routine::DxgkCbInvalidateHwContext, current_irql(), addr)
    {
        a.state.raise_bugcheck(b);
        return Ok(STATUS_UNSUCCESSFUL);
    }
    let named = read.hHwContext as usize;
    let found = crate::base::lock::lock(&a.ums)
        .contexts
        .values()
        .find(|c| c.dxg.addr() == named)
        .map(|c| c.dxg.follow());
    match found {
        None => {
            a.state.raise_bugcheck(crate::BugCheck::new(
                crate::base::bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
                [named.wrapping_add(8) as u64, 0, addr as u64, 0],
            ));
            Ok(STATUS_INVALID_PARAMETER)
        }
        Some(None) => Ok(STATUS_SUCCESS),
        Some(Some(context)) => Err(Some(DXGKARGCB_INVALIDATEHWCONTEXT {
            hHwContext: crate::state::ums::kernel_handle(context) as HANDLE,
            ..read
        })),
    }
}
