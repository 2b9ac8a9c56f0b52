//! The device and context DDIs (`DxgkDdiCreateDevice` … `DxgkDdiResumeContext`) over the
//! state of [`super`].

use rvgpu_ddi::submission::{
    DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_RESUMECONTEXT, DXGKARG_SUSPENDCONTEXT,
    DXGK_CONTEXTINFO, DXGK_CREATECONTEXTFLAGS, DXGK_CREATEDEVICEFLAGS,
};
use rvgpu_ddi::HANDLE;

use crate::adapter::Adapter;
use crate::handle::{Handle, Kind};
use crate::kmem::SortedMap;
use crate::platform::Platform;
use crate::runlist;
use crate::sched::ddi::with_adapter;
use crate::sched::Sched;
use crate::status::{self, Status};

use super::{Context, Device, LEGACY_DMA_BUFFER_SIZE, MAX_CONTEXTS, MAX_DEVICES};

/// DxgkDdiCreateDevice (PASSIVE).
pub fn create_device<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_CREATEDEVICE,
) -> Result<(), Status> {
    let live = a.started()?;
    let flags = crate::args::create_device_flags(args);
    let known = DXGK_CREATEDEVICEFLAGS::default()
        .with(DXGK_CREATEDEVICEFLAGS::SystemDevice, 1)
        .with(DXGK_CREATEDEVICEFLAGS::GdiDevice, 1);
    if flags.Value & !known.Value != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let h = a.new_handle(Kind::Device)?;
    let mut s = live.sched.lock();
    if s.devices.len() >= MAX_DEVICES {
        return Err(status::INSUFFICIENT_RESOURCES);
    }
    // WDDM 2.0: the process the device belongs to (null for a driver without GPU processes,
    // or a system device created before one exists).
    let process = if args.hKmdProcess.is_null() {
        None
    } else {
        let p = Handle::decode_on(args.hKmdProcess, Kind::Process, a.table_slot())?;
        if !s.processes.contains_key(&p) {
            return Err(status::INVALID_HANDLE);
        }
        Some(p)
    };
    let user_process = process
        .and_then(|p| s.processes.get(&p))
        .is_some_and(|p| !p.system);
    s.devices.try_insert::<P>(
        h,
        Device {
            os_handle: args.hDevice.addr(),
            system: flags.is_set(DXGK_CREATEDEVICEFLAGS::SystemDevice),
            in_error: false,
            process,
            user_process,
        },
    )?;
    drop(s);
    args.hDevice = h.as_handle();
    Ok(())
}

/// DxgkDdiDestroyDevice (PASSIVE): only once its contexts are gone.
pub fn destroy_device<P: Platform>(h_device: HANDLE) -> Result<(), Status> {
    destroy_unused::<P, _>(
        h_device,
        Kind::Device,
        |s| &mut s.devices,
        |s, h| s.contexts.values().any(|c| c.device == h),
    )
}

/// Destroys the object `raw` names (of `kind`, kept in the map `objects` picks) once nothing
/// refers to it: STATUS_INVALID_HANDLE for an unknown handle, STATUS_INVALID_DEVICE_STATE
/// while `in_use` (the OS destroys an object's children first).
fn destroy_unused<P: Platform, V>(
    raw: HANDLE,
    kind: Kind,
    objects: fn(&mut Sched) -> &mut SortedMap<Handle, V>,
    in_use: fn(&Sched, Handle) -> bool,
) -> Result<(), Status> {
    with_adapter::<P, _>(raw, kind, |_, live, h| {
        let mut s = live.sched.lock();
        if !objects(&mut s).contains_key(&h) {
            return Err(status::INVALID_HANDLE);
        }
        if in_use(&s, h) {
            return Err(status::INVALID_DEVICE_STATE);
        }
        objects(&mut s).remove(&h);
        Ok(())
    })
}

/// DxgkDdiCreateContext (PASSIVE): `NodeOrdinal` is the engine.
pub fn create_context<P: Platform>(
    h_device: HANDLE,
    args: &mut DXGKARG_CREATECONTEXT,
) -> Result<(), Status> {
    with_adapter::<P, _>(h_device, Kind::Device, |a, live, device| {
        let known = DXGK_CREATECONTEXTFLAGS::default()
            .with(DXGK_CREATECONTEXTFLAGS::SystemContext, 1)
            .with(DXGK_CREATECONTEXTFLAGS::GdiContext, 1)
            .with(DXGK_CREATECONTEXTFLAGS::VirtualAddressing, 1)
            .with(DXGK_CREATECONTEXTFLAGS::SystemProtectedContext, 1)
            .with(DXGK_CREATECONTEXTFLAGS::HwQueueSupported, 1)
            .with(DXGK_CREATECONTEXTFLAGS::TestContext, 1);
        if args.Flags.Value & !known.Value != 0 {
            return Err(status::INVALID_PARAMETER);
        }
        if args.NodeOrdinal >= live.identity.config.engines {
            return Err(status::INVALID_PARAMETER);
        }
        // One physical adapter: the only engine within a node is EngineOrdinal 0, affinity
        // bit 0 (docs/hardware.md 4.1). 0 is accepted as "unspecified".
        if args.EngineAffinity > 1 {
            return Err(status::INVALID_PARAMETER);
        }
        // No context private data is defined; a size without a buffer is a broken call.
        if args.PrivateDriverDataSize != 0 && args.pPrivateDriverData.is_null() {
            return Err(status::INVALID_PARAMETER);
        }
        let h = a.new_handle(Kind::Context)?;
        let mut s = live.sched.lock();
        if !s.devices.contains_key(&device) {
            return Err(status::INVALID_HANDLE);
        }
        if s.contexts.len() >= MAX_CONTEXTS {
            return Err(status::INSUFFICIENT_RESOURCES);
        }
        // The last contexts are for processes that hold few (crate::quota);
        // STATUS_NO_MEMORY is what Dxgkrnl accepts from DxgkDdiCreateContext.
        let owner = s.process_of_device(device);
        let free = MAX_CONTEXTS.saturating_sub(s.contexts.len());
        let held = &*s;
        live.quotas
            .contexts
            .admit(free, owner.map(|p| move || held.contexts_of_process(p)))?;
        s.contexts.try_insert::<P>(
            h,
            Context {
                device,
                engine: args.NodeOrdinal,
                suspended: false,
                os_handle: args.hContext.addr(),
                root: 0,
                priority: crate::hws::ContextPriority::DEFAULT,
            },
        )?;
        drop(s);
        args.hContext = h.as_handle();
        // DMA buffers Dxgkrnl allocates for the context (its privileged pool: the session's CDD
        // contexts, and every context without GPU VA) come from the aperture segment. With no
        // segment a GPU-VA context's pool is contiguous memory VidMm cannot map, and Windows
        // bug-checks (docs/windows-bringup.md BR-65, BR-67).
        let dma_segments = if crate::gpummu::supported(live.mmu()) {
            1 << (crate::gpummu::SEGMENT_APERTURE - 1)
        } else {
            0
        };
        args.ContextInfo = DXGK_CONTEXTINFO {
            DmaBufferSize: LEGACY_DMA_BUFFER_SIZE,
            DmaBufferSegmentSet: dma_segments,
            ..Default::default()
        };
        Ok(())
    })
}

/// DxgkDdiDestroyContext (PASSIVE): only once its hardware queues are gone.
pub fn destroy_context<P: Platform>(h_context: HANDLE) -> Result<(), Status> {
    destroy_unused::<P, _>(
        h_context,
        Kind::Context,
        |s| &mut s.contexts,
        |s, h| s.queues.values().any(|q| q.context == h),
    )
}

/// Sets a context's suspended state and recommits its engine's runlist if that changed.
fn set_suspended<P: Platform>(
    a: &Adapter<P>,
    h_context: HANDLE,
    suspended: bool,
) -> Result<(), Status> {
    let live = a.started()?;
    let h = Handle::decode_on(h_context, Kind::Context, a.table_slot())?;
    let mut s = live.sched.lock();
    let Some(engine) = s.set_context(h, |c| &mut c.suspended, suspended)? else {
        return Ok(());
    };
    let r = runlist::commit_context(&live.regs, &s, engine, h);
    if suspended {
        // Taking work off a device that is gone succeeds: it runs nothing any more.
        crate::removal::gone_is_done(r)
    } else {
        r
    }
}

/// DxgkDdiSuspendContext (PASSIVE): the context's queues leave the runlist; when this returns
/// none of them executes (UM-11). Doorbells stay connected. The runlist commit is synchronous
/// (hardware.md 5.2), so the context is suspended when this returns: `STATUS_SUCCESS`, never
/// `STATUS_PENDING`, and no "context suspended" interrupt with `contextSuspendFence` is owed.
pub fn suspend_context<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_SUSPENDCONTEXT,
) -> Result<(), Status> {
    set_suspended(a, args.hContext, true)
}

/// DxgkDdiResumeContext (PASSIVE): the queues re-enter the runlist and the CMP reloads their
/// write pointers (UM-12).
pub fn resume_context<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_RESUMECONTEXT,
) -> Result<(), Status> {
    set_suspended(a, args.hContext, false)
}
