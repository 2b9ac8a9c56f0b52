//! `DxgkCbQueryServices` and the feature interface behind it (NF-10).

use std::sync::atomic::Ordering;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::feature::*;
use rvgpu_ddi::ntstatus::*;

use super::view::{InterfaceView, Place};
use crate::adapter::callback::{enter, enter_status};
use crate::adapter::context::{self};
use crate::adapter::irql::{self, Routine};
use crate::base::lock::lock;
use crate::base::processor::current_irql;

/// `InterfaceReference` of the feature interface (`PINTERFACE_REFERENCE`, IRQL <=
/// DISPATCH_LEVEL): the context is the adapter handle. A context that is not a live adapter
/// handle is 0x50, like any callback with a bad handle.
pub(super) fn interface_reference(context: PVOID, entry: usize) {
    if let Some(a) = enter(Routine::InterfaceReference, context, entry) {
        a.feature_refs.fetch_add(1, Ordering::AcqRel);
    }
}

/// `InterfaceDereference` of the feature interface (IRQL <= DISPATCH_LEVEL). Dropping a
/// reference the driver does not hold would free the interface under its other users: the
/// count going negative is a simulation error (Windows has no bug check for it; the
/// interface would be released early).
pub(super) fn interface_dereference(context: PVOID, entry: usize) {
    if let Some(a) = enter(Routine::InterfaceDereference, context, entry) {
        if a.feature_refs.fetch_sub(1, Ordering::AcqRel) <= 0 {
            a.feature_refs.fetch_add(1, Ordering::AcqRel);
            a.state.raise_sim_error(format!(
                "adapter {}: InterfaceDereference of the feature interface without a reference \
                 (reference count would go negative)",
                a.index
            ));
        }
    }
}

/// The first `DXGKDDI_INTERFACE_VERSION` for which 24H2's `DxgkCbQueryServices` bug-checks a
/// call above PASSIVE_LEVEL (an older driver's call only fails).
const QUERY_SERVICES_FATAL_FROM: ULONG = 0x2003;

/// `VIDEO_DXGKRNL_FATAL_ERROR` parameter 1 of a `DxgkCbQueryServices` above PASSIVE_LEVEL.
const QUERY_SERVICES_AT_RAISED_IRQL: u64 = 0x15;

/// `DxgkCbQueryServices` as 24H2's `K:DpQueryServices` @0x140235390 answers it: a NULL handle or
/// interface is `STATUS_INVALID_PARAMETER`; above PASSIVE_LEVEL the call fails the same way and
/// is bug check 0x113 (0x15, the status) for a driver of interface 0x2003 or later. Then by
/// kind: the feature interface (7) when `Size` is exactly its own (its `Version` is not read);
/// AGP (0) fails `STATUS_UNSUCCESSFUL` on an adapter without AGP once its header checks; the
/// basic-display (4) and indirect-display (6) interfaces are `STATUS_INVALID_HANDLE` for a
/// render adapter; a kind past 7 is `STATUS_INVALID_PARAMETER`. The other kinds (debug report,
/// timed operation, SPB, firmware tables) are not simulated.
#[allow(
    non_upper_case_globals,
    reason = "the kinds are matched by their WDK names"
)]
pub(super) fn query_services(
    handle: HANDLE,
    services: DXGK_SERVICES,
    interface: Option<impl InterfaceView>,
    entry: usize,
) -> NTSTATUS {
    let Some(interface) = interface.filter(|_| !handle.is_null()) else {
        return STATUS_INVALID_PARAMETER;
    };
    if current_irql() > rvgpu_kmd::platform::Irql::Passive {
        if let Some(a) = crate::adapter::AdapterShared::from_handle(handle) {
            let version = a.table.get().map_or(0, |t| t.Version);
            if version >= QUERY_SERVICES_FATAL_FROM {
                a.state.raise_bugcheck(crate::BugCheck::new(
                    crate::base::bugcheck::VIDEO_DXGKRNL_FATAL_ERROR,
                    [
                        QUERY_SERVICES_AT_RAISED_IRQL,
                        i64::from(STATUS_INVALID_PARAMETER) as u64,
                        0,
                        0,
                    ],
                ));
            }
            return STATUS_INVALID_PARAMETER;
        }
    }
    let a = enter_status!(DxgkCbQueryServices, handle, entry);
    let header = match interface.header() {
        Ok(header) => header,
        Err(b) => {
            a.state.raise_bugcheck(b);
            return STATUS_UNSUCCESSFUL;
        }
    };
    match services {
        DxgkServicesFeature => {}
        DxgkServicesAgp if header.Version != 1 || header.Size != 56 => {
            return STATUS_INVALID_PARAMETER
        }
        DxgkServicesAgp => return STATUS_UNSUCCESSFUL,
        DxgkServicesBDD | DxgkServicesIDD => return STATUS_INVALID_HANDLE,
        DxgkServicesDebugReport
        | DxgkServicesTimedOperation
        | DxgkServicesSPB
        | DxgkServicesFirmwareTable => {
            a.state.raise_sim_error(format!(
                "DxgkCbQueryServices of services kind {services} is not simulated"
            ));
            return STATUS_NOT_IMPLEMENTED;
        }
        _ => return STATUS_INVALID_PARAMETER,
    }
    // 24H2 writes what follows the header; Size and Version stay the caller's. Written only
    // when `Size` is exactly the feature interface's.
    match interface.write_feature(a.handle()) {
        Ok(true) => {}
        Ok(false) => return STATUS_INVALID_PARAMETER,
        Err(b) => {
            a.state.raise_bugcheck(b);
            return STATUS_UNSUCCESSFUL;
        }
    }
    // As every WDM interface provider does, the interface is referenced for the caller, who
    // must dereference it when done.
    a.feature_refs.fetch_add(1, Ordering::AcqRel);
    STATUS_SUCCESS
}

/// `DXGK_FEATURE_INTERFACE::IsFeatureEnabled` (PASSIVE).
pub(super) fn is_feature_enabled(
    handle: HANDLE,
    args: Option<&mut DXGKARGCB_ISFEATUREENABLED2>,
    entry: usize,
) -> NTSTATUS {
    let a = enter_status!(DxgkCbIsFeatureEnabled, handle, entry);
    let Some(args) = args else {
        return STATUS_INVALID_PARAMETER;
    };
    a.observer().feature_queried(args.FeatureId);
    // The answer is the adapter's feature database, built before StartDevice from the
    // driver's own interface and the OS's policy (`dxgkrnl::features`).
    let version = lock(&a.features).version(args.FeatureId);
    let known = crate::dxgkrnl::features::DRIVER_FEATURES.contains(&args.FeatureId);
    let mut flags = DXGK_ISFEATUREENABLED_RESULT_0::default();
    flags.set(
        DXGK_ISFEATUREENABLED_RESULT_0::Enabled,
        u16::from(version.is_some()),
    );
    flags.set(
        DXGK_ISFEATUREENABLED_RESULT_0::KnownFeature,
        u16::from(known),
    );
    args.Result = DXGK_ISFEATUREENABLED_RESULT {
        Version: version.unwrap_or(0),
        Anonymous: flags,
    };
    STATUS_SUCCESS
}

/// `DXGK_FEATURE_INTERFACE::QueryFeatureInterface` (PASSIVE): native fence version 1 only.
/// `Ok`: the native fence interface is to be written to the driver's buffer (checked here to
/// hold it); `Err` the failure.
pub(super) fn query_feature_interface(
    handle: HANDLE,
    args: Option<&mut DXGKARGCB_QUERYFEATUREINTERFACE>,
    entry: usize,
) -> Result<(), NTSTATUS> {
    let a = match enter(Routine::DxgkCbQueryFeatureInterface, handle, entry) {
        Some(a) => a,
        None => return Err(STATUS_UNSUCCESSFUL),
    };
    let Some(args) = args else {
        return Err(STATUS_INVALID_PARAMETER);
    };
    if args.FeatureId != DXGK_FEATURE_NATIVE_FENCE || !a.native_fence_enabled() {
        return Err(STATUS_NOT_SUPPORTED);
    }
    let size = std::mem::size_of::<DXGKCBINT_FEATURE_NATIVEFENCE_1>();
    if args.Version != 1 || usize::from(args.InterfaceSize) < size || args.Interface.is_null() {
        return Err(STATUS_INVALID_PARAMETER);
    }
    a.observer().native_fence_interface_queried();
    args.InterfaceSize = size as u16;
    Ok(())
}

/// `DXGKCBINT_FEATURE_NATIVEFENCE_1::GetOSCaps` (PASSIVE). The simulated OS keeps default
/// fences in system memory (`SupportOptimizedDefaultFenceType` = 0) and supports the intra-GPU
/// fence type, whose values it places in VRAM (NF-06), so `SupportIntraGpuFenceType` = 1.
pub(super) fn native_fence_get_os_caps(
    args: Option<impl Place<DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1>>,
    entry: usize,
) -> NTSTATUS {
    if let Err(b) = irql::check(Routine::NativeFenceGetOSCaps, current_irql(), entry) {
        context::raise(b);
        return STATUS_UNSUCCESSFUL;
    }
    let Some(args) = args else {
        return STATUS_INVALID_PARAMETER;
    };
    args.write(DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1::default().with(
        DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1::SupportIntraGpuFenceType,
        1,
    ));
    STATUS_SUCCESS
}

/// `DxgkCbQueryFeatureSupport` (BR-80..82; the page gives no IRQL, PASSIVE_LEVEL as its
/// siblings): the legacy way a driver asks whether it may enable a feature it supports. The
/// answer follows [`crate::dxgkrnl::features::legacy_decision`]; an enabled HWSCH,
/// HWFLIPQUEUE or USER_MODE_SUBMISSION is recorded in the adapter's feature database, where
/// the node rules (BR-72/73) and `IsFeatureEnabled` find it.
pub(super) fn query_feature_support(
    args: Option<&mut DXGKARGCB_QUERYFEATURESUPPORT>,
    address: usize,
) -> NTSTATUS {
    let Some(args) = args else {
        if let Err(b) = irql::check(Routine::DxgkCbQueryFeatureSupport, current_irql(), address) {
            context::raise(b);
        }
        return STATUS_INVALID_PARAMETER;
    };
    let Some(a) = enter(
        Routine::DxgkCbQueryFeatureSupport,
        args.DeviceHandle,
        address,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    args.Enabled = 0;
    let (id, state) = (args.FeatureId, args.DriverSupportState);
    let answer = crate::dxgkrnl::features::legacy_decision(&a, id, state);
    let mut db = lock(&a.features);
    db.legacy_queries.push((id, state, answer.ok()));
    match answer {
        Err(status) => status,
        Ok(enabled) => {
            let recorded = matches!(
                id,
                DXGK_FEATURE_HWSCH | DXGK_FEATURE_HWFLIPQUEUE | DXGK_FEATURE_USER_MODE_SUBMISSION
            );
            if enabled && recorded && db.version(id).is_none() {
                db.enabled.push((id, 1));
            }
            args.Enabled = u8::from(enabled);
            STATUS_SUCCESS
        }
    }
}
