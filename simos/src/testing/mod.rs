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
pub mod ffi;
pub mod gpu;
pub mod kill_in_recovery;
pub mod spy;
pub mod tdr;
pub mod ums_caps;

use std::ffi::c_void;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::interrupt::{DXGKARGCB_NOTIFY_INTERRUPT_DATA, DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS};

use self::ffi::{Callbacks, DeviceContext, IsrFn, IsrStandIn};
use crate::adapter::AdapterShared;
use crate::base::lock::lock;

pub use self::ffi::{allocate_contiguous, driver_dpc, driver_isr, free_contiguous};

/// A native fence handle the OS never hands out.
pub const BAD_FENCE_HANDLE: usize = 0x0BAD_F00D;

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
fn driver_isr_first(ctx: &DeviceContext, message_number: ULONG) -> Result<Callbacks, BOOLEAN> {
    let claimed = ctx.driver_isr(message_number);
    if !adapter_started(ctx.raw()) {
        return Err(claimed);
    }
    Callbacks::for_context(ctx.raw()).ok_or(0)
}

/// The driver's ISR, then (once the adapter has started) a native-fence report listing
/// `fences` through `DxgkCbNotifyInterrupt` and a DPC queued; claims the interrupt.
fn isr_then_report(
    ctx: &DeviceContext,
    message_number: ULONG,
    fences: &mut [HANDLE],
    evaluate_legacy: bool,
) -> BOOLEAN {
    let iface = match driver_isr_first(ctx, message_number) {
        Ok(iface) => iface,
        Err(claimed) => return claimed,
    };
    let mut data =
        DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(0, 0, 0, std::ptr::null_mut());
    if evaluate_legacy {
        data.Flags = DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::from_value(
            DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::mask(
                DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences,
            ),
        );
    }
    iface.notify_interrupt(&data, fences);
    iface.queue_dpc();
    1
}

/// See [`isr_reports_unknown_fence_handle`].
struct UnknownFenceHandle;
impl IsrStandIn for UnknownFenceHandle {
    fn run(ctx: &DeviceContext, message_number: ULONG) -> BOOLEAN {
        let mut handles: [HANDLE; 1] = [BAD_FENCE_HANDLE as HANDLE];
        isr_then_report(ctx, message_number, &mut handles, false)
    }
}

/// An ISR that reports `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` naming [`BAD_FENCE_HANDLE`]
/// and claims the interrupt. Windows bug-checks 0x119 on it (NF-14).
#[allow(non_upper_case_globals, reason = "used as the function it stands for")]
pub const isr_reports_unknown_fence_handle: IsrFn = ffi::isr::<UnknownFenceHandle>;

/// See [`isr_reports_null_evaluate_legacy`].
struct NullEvaluateLegacy;
impl IsrStandIn for NullEvaluateLegacy {
    fn run(ctx: &DeviceContext, message_number: ULONG) -> BOOLEAN {
        isr_then_report(ctx, message_number, &mut [], true)
    }
}

/// An ISR for hardware that cannot tell legacy and native fence signals apart: it reports
/// `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` with a NULL array and
/// `EvaluateLegacyMonitoredFences = 1` (NF-14) and claims the interrupt.
#[allow(non_upper_case_globals, reason = "used as the function it stands for")]
pub const isr_reports_null_evaluate_legacy: IsrFn = ffi::isr::<NullEvaluateLegacy>;

/// See [`isr_reports_null`].
struct Null;
impl IsrStandIn for Null {
    fn run(ctx: &DeviceContext, message_number: ULONG) -> BOOLEAN {
        isr_then_report(ctx, message_number, &mut [], false)
    }
}

/// Like [`isr_reports_null_evaluate_legacy`] without the flag: only native waits are scanned.
#[allow(non_upper_case_globals, reason = "used as the function it stands for")]
pub const isr_reports_null: IsrFn = ffi::isr::<Null>;

/// See [`isr_calls_passive_callback`].
struct CallsPassiveCallback;
impl IsrStandIn for CallsPassiveCallback {
    fn run(ctx: &DeviceContext, message_number: ULONG) -> BOOLEAN {
        let iface = match driver_isr_first(ctx, message_number) {
            Ok(iface) => iface,
            Err(claimed) => return claimed,
        };
        iface.get_device_information();
        1
    }
}

/// An ISR that calls a PASSIVE_LEVEL callback (`DxgkCbGetDeviceInformation`) at device IRQL.
#[allow(non_upper_case_globals, reason = "used as the function it stands for")]
pub const isr_calls_passive_callback: IsrFn = ffi::isr::<CallsPassiveCallback>;
