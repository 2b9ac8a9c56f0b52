//! VidSch's system device and system contexts (BR-66).
//!
//! During adapter start, `VIDMM_GLOBAL::VidMmInitializePagingProcess` has VidSch create a
//! system device and one system context per node through the driver's own DDIs
//! (\[D\] `VidSchCreateSystemDevices`, `VidSchiCreateDeviceInternal`): `DxgkDdiCreateDevice`
//! with `Flags.SystemDevice`, then `DxgkDdiCreateContext` with `Flags.SystemContext` on each
//! node. A failure of either fails the adapter with the driver's status (helios saw a
//! `NOT_IMPLEMENTED` system context keep a 26100 adapter at Code 43). The OS's own DMA buffers
//! (paging, system-context submissions) are then submitted with these contexts' driver
//! handles, never a null `hContext`. They live until the adapter stops.

use rvgpu_ddi::submission::{
    DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_CREATEDEVICE_0, DXGK_CONTEXTINFO,
    DXGK_CREATECONTEXTFLAGS, DXGK_CREATEDEVICEFLAGS,
};
use rvgpu_ddi::{HANDLE, NTSTATUS};

use crate::adapter::bringup::{self, Violation};
use crate::adapter::ddi::{self};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;

pub use crate::state::vidsch::SystemObjects;

/// The OS's handle of the system device (what the driver may call back with).
const SYSTEM_DEVICE_OS_HANDLE: usize = 0x7D5E_0000_0000;

/// BR-66 (`bringup::paging`) for `what` (on `node`) answering `status`.
fn check(what: &'static str, node: Option<u32>, status: NTSTATUS) -> Option<Violation> {
    bringup::paging::check(
        bringup::paging::PAGING_PROCESS_RULES,
        what,
        node,
        Some(status),
    )
}

/// Creates the system device and one system context per node. `Ok(Err(v))`: the start fails
/// with `v` (whatever was created is destroyed again).
pub(crate) fn create(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    nodes: u32,
) -> Result<Result<(), Violation>, SimError> {
    let (Some(create_device), Some(create_context)) = (
        ddi::in_table!(t, DxgkDdiCreateDevice),
        ddi::in_table!(t, DxgkDdiCreateContext),
    ) else {
        // No render core (BR-47 would have refused a partial one): nothing to schedule.
        return Ok(Ok(()));
    };
    let mut args = DXGKARG_CREATEDEVICE {
        hDevice: SYSTEM_DEVICE_OS_HANDLE as HANDLE,
        Anonymous: DXGKARG_CREATEDEVICE_0 {
            Flags: DXGK_CREATEDEVICEFLAGS::default().with(DXGK_CREATEDEVICEFLAGS::SystemDevice, 1),
        },
        Pasid: 0,
        // The system device belongs to the paging process ([D]
        // VIDMM_PAGING_PROCESS::InitPagingProcess) on a GpuMmu adapter.
        hKmdProcess: crate::vidmm::mmu::paging_process_kmd(a).unwrap_or(0) as HANDLE,
    };
    let ctx = a.context();
    let status = create_device.passive(a, (ctx, &mut args))?;
    if let Some(v) = check(create_device.routine().rules().name, None, status) {
        return Ok(Err(v));
    }
    let device = args.hDevice as usize;
    crate::ums::check_kmd_handle(
        a,
        "DxgkDdiCreateDevice (system device)",
        "hDevice",
        device,
        std::iter::empty(),
    )?;
    lock(&a.sch.system).device = device;
    for node in 0..nodes {
        let mut args = DXGKARG_CREATECONTEXT {
            hContext: std::ptr::null_mut(),
            NodeOrdinal: node,
            EngineAffinity: 1,
            Flags: DXGK_CREATECONTEXTFLAGS::default()
                .with(DXGK_CREATECONTEXTFLAGS::SystemContext, 1),
            pPrivateDriverData: std::ptr::null_mut(),
            PrivateDriverDataSize: 0,
            ContextInfo: DXGK_CONTEXTINFO::default(),
        };
        a.observer()
            .handed(&rvgpu_ddi::handover::CREATE_CONTEXT, &args);
        let status = create_context.passive_unaudited(a, (device as HANDLE, &mut args))?;
        if let Some(v) = check(create_context.routine().rules().name, Some(node), status) {
            destroy(a, t)?;
            return Ok(Err(v));
        }
        let h = args.hContext as usize;
        let mut sys = lock(&a.sch.system);
        crate::ums::check_kmd_handle(
            a,
            "DxgkDdiCreateContext (system context)",
            "hContext",
            h,
            sys.contexts.iter().copied(),
        )?;
        sys.contexts.push(h);
    }
    Ok(Ok(()))
}

/// The driver's handle of node `node`'s system context (0 before start or after stop, when
/// nothing may be submitted anyway).
pub(crate) fn context(a: &AdapterShared, node: u32) -> usize {
    lock(&a.sch.system)
        .contexts
        .get(node as usize)
        .copied()
        .unwrap_or(0)
}

/// Destroys the system contexts, then the system device (adapter stop; destruction in
/// Dxgkrnl's order, children first).
pub(crate) fn destroy(a: &AdapterShared, t: &DRIVER_INITIALIZATION_DATA) -> Result<(), SimError> {
    let objects = std::mem::take(&mut *lock(&a.sch.system));
    for h in objects.contexts {
        crate::ums::destroy_kmd!(a, t, DxgkDdiDestroyContext, "system context", h)?;
    }
    if objects.device != 0 {
        crate::ums::destroy_kmd!(a, t, DxgkDdiDestroyDevice, "system device", objects.device)?;
    }
    Ok(())
}
