//! The feature interface (crate::features) Dxgkrnl queries through DxgkDdiQueryInterface, and
//! the kernel-mode testing interface (crate::kmtest) reached through it.

use super::contract::{generic_ddis, on_adapter_mut, own_thunks, Call};
use crate::adapter::Adapter;
use crate::platform::Platform;
use crate::status::{self, Status};
use rvgpu_ddi::adapter::PQUERY_INTERFACE;
use rvgpu_ddi::feature::{
    DXGKARG_QUERYFEATUREINTERFACE, DXGKARG_QUERYFEATURESUPPORT, DXGKDDI_FEATURE_INTERFACE,
    DXGKDDI_FEATURE_INTERFACE_VERSION_1, GUID_WDDM_INTERFACE_FEATURE,
};
use rvgpu_ddi::kmtest::{DXGKARG_BUILDTESTCOMMANDBUFFER, DXGKDDI_KERNELMODETESTINGINTERFACE};
use rvgpu_ddi::{NTSTATUS, PVOID};

generic_ddis! {
    /// DxgkDdiQueryFeatureSupport (PASSIVE): which versions of a feature the driver implements.
    /// The interface's context is our own adapter context.
    QueryFeatureSupport: OnAdapterMut<DXGKARG_QUERYFEATURESUPPORT> => query_feature_support;
    /// DxgkDdiQueryFeatureInterface (PASSIVE): the kernel-mode testing interface
    /// ([`crate::kmtest`]) is rvgpu's one driver-side feature interface (native fences use DDIs
    /// of the main table).
    QueryFeatureInterface: OnAdapterMut<DXGKARG_QUERYFEATUREINTERFACE> =>
        |call, _, q| query_feature_interface::<P>(call, q);
    /// `pfnBuildTestCommandBuffer` of the kernel-mode testing interface (PASSIVE):
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_buildtestcommandbuffer>.
    BuildTestCommandBuffer: OnAdapterMut<DXGKARG_BUILDTESTCOMMANDBUFFER> => |call, a, args| {
        // The DMA buffer and its size obey the contract for buffers (super::contract).
        let out = call.buffer(args.pDmaBuffer, args.DmaBufferSize);
        crate::kmtest::build_into(a, args, out)
    };
}

own_thunks! {
    /// DxgkDdiQueryInterface (PASSIVE): rvgpu exports one interface, the WDDM 3.2 feature interface
    /// (`GUID_WDDM_INTERFACE_FEATURE`, version 1) through which Dxgkrnl learns which features the
    /// driver supports (`crate::features::driver_support`). Any other request is NOT_SUPPORTED, as is
    /// version 2, which 24H2 asks for first before falling back to version 1.
    fn query_interface<P: Platform>(
        call,
        ctx: PVOID,
        query: PQUERY_INTERFACE,
    ) -> NTSTATUS {
        // A null context is the only one that resolves to no adapter (super::contract::adapter).
        if ctx.is_null() {
            return status::INVALID_PARAMETER.code();
        }
        // Dxgkrnl's request block, valid for the call when non-null.
        let Some(q) = call.args(query) else {
            return status::INVALID_PARAMETER.code();
        };
        // The GUID the request names, valid for the call when non-null.
        let Some(guid) = call.args(q.InterfaceType) else {
            return status::INVALID_PARAMETER.code();
        };
        if *guid != GUID_WDDM_INTERFACE_FEATURE {
            return status::NOT_SUPPORTED.code();
        }
        let size = core::mem::size_of::<DXGKDDI_FEATURE_INTERFACE>();
        if q.Version != DXGKDDI_FEATURE_INTERFACE_VERSION_1
            || usize::from(q.Size) < size
            || q.Interface.is_null()
        {
            return status::NOT_SUPPORTED.code();
        }
        let out = DXGKDDI_FEATURE_INTERFACE {
            Size: q.Size.min(u16::try_from(size).unwrap_or(u16::MAX)),
            Version: DXGKDDI_FEATURE_INTERFACE_VERSION_1,
            Context: ctx,
            InterfaceReference: Some(feature_interface_reference),
            InterfaceDereference: Some(feature_interface_reference),
            QueryFeatureSupport: Some(on_adapter_mut::<P, QueryFeatureSupport>),
            QueryFeatureInterface: Some(on_adapter_mut::<P, QueryFeatureInterface>),
        };
        // Dxgkrnl provides `Size` (>= the interface's size, checked) writable bytes at `Interface`.
        call.write(q.Interface.cast(), usize::from(q.Size), out);
        status::SUCCESS
    }
}

own_thunks! {
    /// `InterfaceReference`/`InterfaceDereference` of the feature interface. The interface has no
    /// state of its own: its context is the adapter, which outlives every use Dxgkrnl makes of it
    /// (it drops the interface before RemoveDevice), so there is nothing to count.
    fn feature_interface_reference(
        _,
        _context: PVOID,
    ) {}
}

/// DxgkDdiQueryFeatureSupport's logic.
fn query_feature_support<P: Platform>(
    _: &Adapter<P>,
    args: &mut DXGKARG_QUERYFEATURESUPPORT,
) -> Result<(), Status> {
    let (min, max, supported) = match crate::features::driver_support(args.FeatureId) {
        Some((min, max)) => (min, max, 1),
        None => (0, 0, 0),
    };
    args.MinSupportedVersion = min;
    args.MaxSupportedVersion = max;
    args.SupportedByDriver = supported;
    args.SupportedOnCurrentConfig = supported;
    Ok(())
}

/// DxgkDdiQueryFeatureInterface's logic.
fn query_feature_interface<P: Platform>(
    call: Call<'_>,
    q: &mut DXGKARG_QUERYFEATUREINTERFACE,
) -> Result<(), Status> {
    if q.FeatureId != rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING {
        return Err(status::NOT_SUPPORTED);
    }
    let size = crate::kmtest::interface_request(q)?;
    let iface = DXGKDDI_KERNELMODETESTINGINTERFACE {
        pfnBuildTestCommandBuffer: Some(on_adapter_mut::<P, BuildTestCommandBuffer>),
    };
    // Dxgkrnl provides `InterfaceSize` writable bytes at `Interface` (checked non-null and >=
    // the interface's size by `interface_request`).
    call.write(q.Interface, usize::from(q.InterfaceSize), iface);
    q.InterfaceSize = size;
    Ok(())
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiQueryInterface = Some(query_interface::<P>);
}
