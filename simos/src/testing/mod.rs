//! Misbehaving-driver parts and driver stand-ins for tests, and a minimal user-mode driver
//! that feeds GPU work to the fence tests ([`gpu`]).
//!
//! A test proves the OS side catches what Windows catches by running the real driver with one
//! slot replaced ([`crate::Machine::load_driver_with`]) by a routine from here. These routines
//! are "driver code": they use only what a driver has (its context and the `DXGKRNL_INTERFACE`
//! the OS gave it, found here by context because a replaced slot has no driver state of its
//! own).

pub mod bad_alloc;
pub mod bad_caps;
pub mod gpu;
pub mod kill_in_recovery;
pub mod spy;
pub mod tdr;
pub mod ums_caps;

use std::ffi::c_void;
use std::sync::OnceLock;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::{
    DXGKARGCB_ALLOCATECONTIGUOUSMEMORY, DXGKARGCB_FREECONTIGUOUSMEMORY, DXGKRNL_INTERFACE,
};
use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;

use crate::adapter::load::{DRIVER_DPC, DRIVER_ISR};
use crate::adapter::AdapterShared;
use crate::base::lock::lock;

/// A native fence handle the OS never hands out.
pub const BAD_FENCE_HANDLE: usize = 0x0BAD_F00D;

/// The driver's real `(HANDLE, A)` DDI that a table hook saved in `real`, called with the
/// arguments the OS passed the hook; `None` when the hook saved none.
///
/// # Safety
///
/// `h` and `args` are what the OS passed the hook that stands in for that DDI.
pub(crate) unsafe fn call_real<A>(
    real: &OnceLock<DDI_FN<A>>,
    h: HANDLE,
    args: A,
) -> Option<NTSTATUS> {
    let f = real.get().copied().flatten()?;
    // SAFETY: the driver's own DDI with the OS's arguments (the caller's contract).
    Some(unsafe { f(h, args) })
}

/// Runs the driver's own DPC routine (what [`driver_isr`] is for the ISR).
///
/// # Safety
/// Called from a `DxgkDdiDpcRoutine` stand-in with the argument the OS passed it.
pub unsafe fn driver_dpc(ctx: PVOID) {
    if let Some(f) = DRIVER_DPC.get() {
        // SAFETY: the driver's DPC with the OS's own argument, at DISPATCH_LEVEL.
        unsafe { f(ctx) }
    }
}

/// Runs the driver's own ISR. A stand-in ISR calls it first so the device is still serviced:
/// the GPU interrupts from adapter start on (VidMm pages the paging process's tables in through
/// the GPU), long before the step a test is about. Returns whether the driver claimed it.
///
/// # Safety
/// Called from a `DxgkDdiInterruptRoutine` stand-in with the arguments the OS passed it.
pub unsafe fn driver_isr(ctx: PVOID, message_number: ULONG) -> BOOLEAN {
    match DRIVER_ISR.get() {
        // SAFETY: the driver's ISR with the OS's own arguments, at the IRQL the OS called us.
        Some(f) => unsafe { f(ctx, message_number) },
        None => 0,
    }
}

/// Whether the adapter whose MiniportDeviceContext is `ctx` has finished starting (stand-ins
/// misbehave from then on, so the start itself runs as with the real driver).
pub fn adapter_started(ctx: PVOID) -> bool {
    AdapterShared::from_context(ctx)
        .is_some_and(|a| *lock(&a.life) == crate::adapter::Life::Started)
}

/// The callback table the OS gave the adapter whose MiniportDeviceContext is `ctx`.
pub fn interface_for_context(ctx: *mut c_void) -> Option<DXGKRNL_INTERFACE> {
    AdapterShared::from_context(ctx).and_then(|a| lock(&a.interface).map(|t| t.0))
}

/// How every misbehaving ISR starts: the driver's own ISR runs first. Until the adapter has
/// started that is all (`Err` with its result); after, the adapter's callback table (`Err(0)`
/// when it has none).
///
/// # Safety
/// As [`driver_isr`].
unsafe fn driver_isr_first(
    ctx: PVOID,
    message_number: ULONG,
) -> Result<DXGKRNL_INTERFACE, BOOLEAN> {
    // SAFETY: the caller's arguments, passed on under its contract.
    let claimed = unsafe { driver_isr(ctx, message_number) };
    if !adapter_started(ctx) {
        return Err(claimed);
    }
    interface_for_context(ctx).ok_or(0)
}

/// An ISR that reports `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` naming [`BAD_FENCE_HANDLE`]
/// and claims the interrupt. Windows bug-checks 0x119 on it (NF-14).
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_reports_unknown_fence_handle(
    ctx: PVOID,
    message_number: ULONG,
) -> BOOLEAN {
    let mut handles: [HANDLE; 1] = [BAD_FENCE_HANDLE as HANDLE];
    let data =
        DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(0, 0, 1, handles.as_mut_ptr());
    // SAFETY: our own arguments, passed on; `handles` outlives the call.
    unsafe { isr_then_report(ctx, message_number, &data) }
}

fn isr_null_report(ctx: PVOID, message_number: ULONG, evaluate_legacy: bool) -> BOOLEAN {
    let mut data =
        DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(0, 0, 0, std::ptr::null_mut());
    if evaluate_legacy {
        data.Flags = rvgpu_ddi::interrupt::DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::from_value(
            rvgpu_ddi::interrupt::DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::mask(
                rvgpu_ddi::interrupt::DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences,
            ),
        );
    }
    // SAFETY: our own arguments, passed on.
    unsafe { isr_then_report(ctx, message_number, &data) }
}

/// The driver's ISR, then (once the adapter has started) `data` reported through
/// `DxgkCbNotifyInterrupt` and a DPC queued; claims the interrupt.
///
/// # Safety
/// As [`driver_isr`]; every pointer in `data` is valid for the call.
unsafe fn isr_then_report(
    ctx: PVOID,
    message_number: ULONG,
    data: &DXGKARGCB_NOTIFY_INTERRUPT_DATA,
) -> BOOLEAN {
    // SAFETY: the caller's arguments, passed on under its contract.
    let iface = match unsafe { driver_isr_first(ctx, message_number) } {
        Ok(iface) => iface,
        Err(claimed) => return claimed,
    };
    if let Some(notify) = iface.DxgkCbNotifyInterrupt {
        // SAFETY: the OS's callback with its own handle and a valid report.
        unsafe { notify(iface.DeviceHandle, data) };
    }
    if let Some(queue) = iface.DxgkCbQueueDpc {
        // SAFETY: as above.
        unsafe { queue(iface.DeviceHandle) };
    }
    1
}

/// An ISR for hardware that cannot tell legacy and native fence signals apart: it reports
/// `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` with a NULL array and
/// `EvaluateLegacyMonitoredFences = 1` (NF-14) and claims the interrupt.
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_reports_null_evaluate_legacy(
    ctx: PVOID,
    message_number: ULONG,
) -> BOOLEAN {
    isr_null_report(ctx, message_number, true)
}

/// Like [`isr_reports_null_evaluate_legacy`] without the flag: only native waits are scanned.
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_reports_null(ctx: PVOID, message_number: ULONG) -> BOOLEAN {
    isr_null_report(ctx, message_number, false)
}

/// An ISR that calls a PASSIVE_LEVEL callback (`DxgkCbGetDeviceInformation`) at device IRQL.
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_calls_passive_callback(
    ctx: PVOID,
    message_number: ULONG,
) -> BOOLEAN {
    // SAFETY: our own arguments, passed on.
    let iface = match unsafe { driver_isr_first(ctx, message_number) } {
        Ok(iface) => iface,
        Err(claimed) => return claimed,
    };
    if let Some(get) = iface.DxgkCbGetDeviceInformation {
        let mut info = rvgpu_ddi::adapter::DXGK_DEVICE_INFO::default();
        // SAFETY: the OS's callback with its own handle and a valid out-structure.
        unsafe { get(iface.DeviceHandle, &mut info) };
    }
    1
}

/// Calls `DxgkCbAllocateContiguousMemory` as a driver would; returns (status, handle, memory).
///
/// # Safety
/// `iface` must be a table the simulation handed out.
pub unsafe fn allocate_contiguous(
    iface: &DXGKRNL_INTERFACE,
    bytes: usize,
) -> (NTSTATUS, HANDLE, PVOID) {
    let Some(f) = iface.DxgkCbAllocateContiguousMemory else {
        return (
            STATUS_NOT_IMPLEMENTED,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
    };
    let mut args = DXGKARGCB_ALLOCATECONTIGUOUSMEMORY {
        NumberOfBytes: bytes,
        LowestAcceptableAddress: LARGE_INTEGER::from_i64(0),
        HighestAcceptableAddress: LARGE_INTEGER::from_i64(-1),
        BoundaryAddressMultiple: LARGE_INTEGER::from_i64(0),
        CacheType: MmCached,
        hMemoryHandle: std::ptr::null_mut(),
        pMemory: std::ptr::null_mut(),
    };
    // SAFETY: the OS's callback with its handle and a valid argument block.
    let s = unsafe { f(iface.DeviceHandle, &mut args) };
    (s, args.hMemoryHandle, args.pMemory)
}

/// Calls `DxgkCbFreeContiguousMemory` as a driver would.
///
/// # Safety
/// `iface` must be a table the simulation handed out.
pub unsafe fn free_contiguous(
    iface: &DXGKRNL_INTERFACE,
    handle: HANDLE,
    memory: PVOID,
) -> NTSTATUS {
    let Some(f) = iface.DxgkCbFreeContiguousMemory else {
        return STATUS_NOT_IMPLEMENTED;
    };
    let _ = memory;
    let args = DXGKARGCB_FREECONTIGUOUSMEMORY {
        hMemoryHandle: handle,
    };
    // SAFETY: the OS's callback with its handle and a valid argument block.
    unsafe { f(iface.DeviceHandle, &args) }
}
