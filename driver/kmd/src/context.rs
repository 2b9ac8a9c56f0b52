//! D3D devices and contexts (`DxgkDdiCreateDevice` … `DxgkDdiResumeContext`).
//!
//! A device is a process's D3D device; a context runs on one engine (`NodeOrdinal`) and owns
//! hardware queues (docs/usermode-submission.md, "Objects"). The driver keeps only what the
//! scheduler needs: which device a context belongs to, its engine, and whether it is
//! suspended. Suspending a context takes its queues off the engine's runlist (UM-11, UM-14,
//! UM-18): when `RUNLIST_COMMIT` returns, nothing of theirs executes any more. Doorbells stay
//! connected and rings stay written; resuming puts the queues back and the CMP loads their
//! write pointers, picking up what was written meanwhile (UM-12).
//!
//! Destruction follows Dxgkrnl's order (doorbells, queues, contexts, device): destroying an
//! object that still has children is refused with `STATUS_INVALID_DEVICE_STATE` rather than
//! leaving children that point at nothing.

use rvgpu_ddi::submission::{
    DXGKARG_CREATECONTEXT, DXGKARG_CREATEDEVICE, DXGKARG_RESUMECONTEXT, DXGKARG_SUSPENDCONTEXT,
    DXGK_CONTEXTINFO, DXGK_CREATECONTEXTFLAGS, DXGK_CREATEDEVICEFLAGS,
};
use rvgpu_ddi::HANDLE;

use crate::adapter::Adapter;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist;
use crate::sched;
use crate::status::{self, Status};

/// A D3D device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Device {
    /// Dxgkrnl's handle of the device.
    pub os_handle: usize,
    /// The system (paging) device.
    pub system: bool,
    /// Put in error by the KMD after one of its hardware queues hung an engine
    /// (`DxgkDdiResetEngine`, UM-10): none of its queues is in a runlist any more.
    pub in_error: bool,
    /// The GPU process (`DXGKARG_CREATEDEVICE::hKmdProcess`), if the OS named one.
    pub process: Option<Handle>,
}

/// A GPU context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    /// The owning device.
    pub device: Handle,
    /// Engine (node ordinal) its queues run on.
    pub engine: u32,
    /// Suspended contexts' queues are not in the runlist.
    pub suspended: bool,
    /// The input value of `DXGKARG_CREATECONTEXT::hContext` (0 if the OS passed none): what
    /// `DxgkCbInvalidateHwContext` names (docs/tdr.md Q2, UNVERIFIED).
    pub os_handle: usize,
    /// Device physical address of the root page table VidMm set for the context
    /// (`DxgkDdiSetRootPageTable`); 0 until then (the identity space, hardware.md §12.2).
    pub root: u64,
    /// Scheduling priority from `DxgkDdiSetContextSchedulingProperties` (hardware
    /// scheduling, [`crate::hws`]); normal band until the OS sets it.
    pub priority: crate::hws::ContextPriority,
}

/// DMA buffer size reported for the legacy (non-HW-queue) submission path. Contexts of this
/// driver submit through hardware queues; the value only has to be a sane page multiple.
pub const LEGACY_DMA_BUFFER_SIZE: u32 = 64 * 1024;

/// Most devices one adapter keeps (bounds the tables an untrusted caller can grow).
pub const MAX_DEVICES: usize = 4096;
/// Most contexts one adapter keeps.
pub const MAX_CONTEXTS: usize = 16_384;

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
    s.devices.try_insert::<P>(
        h,
        Device {
            os_handle: args.hDevice.addr(),
            system: flags.is_set(DXGK_CREATEDEVICEFLAGS::SystemDevice),
            in_error: false,
            process,
        },
    )?;
    drop(s);
    args.hDevice = h.as_handle();
    Ok(())
}

/// DxgkDdiDestroyDevice (PASSIVE): only once its contexts are gone.
pub fn destroy_device<P: Platform>(h_device: HANDLE) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_device, Kind::Device, |_, live, h| {
        let mut s = live.sched.lock();
        if !s.devices.contains_key(&h) {
            return Err(status::INVALID_HANDLE);
        }
        if s.contexts.values().any(|c| c.device == h) {
            return Err(status::INVALID_DEVICE_STATE);
        }
        s.devices.remove(&h);
        Ok(())
    })
}

/// DxgkDdiCreateContext (PASSIVE): `NodeOrdinal` is the engine.
pub fn create_context<P: Platform>(
    h_device: HANDLE,
    args: &mut DXGKARG_CREATECONTEXT,
) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_device, Kind::Device, |a, live, device| {
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
        if !crate::quota::CONTEXTS.grants(free, owner.map(|p| move || held.contexts_of_process(p)))
        {
            return Err(status::NO_MEMORY);
        }
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
        let dma_segments = if crate::gpummu::supported(live) {
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
    sched::with_adapter::<P, _>(h_context, Kind::Context, |_, live, h| {
        let mut s = live.sched.lock();
        if !s.contexts.contains_key(&h) {
            return Err(status::INVALID_HANDLE);
        }
        if s.queues.values().any(|q| q.context == h) {
            return Err(status::INVALID_DEVICE_STATE);
        }
        s.contexts.remove(&h);
        Ok(())
    })
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
    let ctx = s.contexts.get_mut(&h).ok_or(status::INVALID_HANDLE)?;
    if ctx.suspended == suspended {
        return Ok(());
    }
    ctx.suspended = suspended;
    let engine = ctx.engine;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::Kind;
    use crate::hwqueue::{HwQueue, Ring};
    use crate::process::Process;
    use crate::sched::Sched;

    fn h(kind: Kind, n: u64) -> Handle {
        Handle::new(0, kind, n).unwrap()
    }

    /// One device (of process 1 when `process`), one context on engine 0, one queue with a
    /// ring.
    fn state(system_process: bool) -> Sched {
        let mut s = Sched::new(1, false, alloc::vec::Vec::new());
        s.processes.insert(
            h(Kind::Process, 1),
            Process {
                os_handle: 0x10,
                system: system_process,
                id: 1,
            },
        );
        s.devices.insert(
            h(Kind::Device, 2),
            Device {
                os_handle: 0x20,
                system: false,
                in_error: false,
                process: Some(h(Kind::Process, 1)),
            },
        );
        s.contexts.insert(
            h(Kind::Context, 3),
            Context {
                device: h(Kind::Device, 2),
                engine: 0,
                suspended: false,
                os_handle: 0x30,
                root: 0,
                priority: crate::hws::ContextPriority::DEFAULT,
            },
        );
        s.queues.insert(
            h(Kind::Queue, 4),
            HwQueue {
                os_handle: 0x40,
                context: h(Kind::Context, 3),
                engine: 0,
                id: 5,
                priority: 0,
                user_mode: false,
                progress_gpu: rvgpu_hw::addr::GpuVa::new(0x9000),
                native_progress: false,
                ring: Some(Ring {
                    base: rvgpu_hw::addr::GpuVa::new(0x10_0000),
                    size: 4096,
                    control: rvgpu_hw::addr::GpuVa::new(0x20_0000),
                }),
                kernel: None,
                doorbell: None,
                logs: crate::log::QueueLogs::default(),
            },
        );
        s
    }

    fn runnable(s: &Sched) -> bool {
        s.runnable(s.queues.get(&h(Kind::Queue, 4)).unwrap())
    }

    /// UM-11/UM-10 and the root rule: a context's queue runs while the context is not
    /// suspended, its device is not in error and, in a process other than the system one,
    /// VidMm has set the context's root page table.
    #[test]
    fn um_11_a_contexts_queue_runs_only_when_suspension_error_and_root_allow() {
        let mut s = state(false);
        assert!(!runnable(&s), "no root yet in a user process");
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().root = 0x4000;
        assert!(runnable(&s));
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().suspended = true;
        assert!(!runnable(&s), "suspended");
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().suspended = false;
        s.devices.get_mut(&h(Kind::Device, 2)).unwrap().in_error = true;
        assert!(!runnable(&s), "device in error");
        let s = state(true);
        assert!(
            runnable(&s),
            "the system process runs in the identity space"
        );
    }

    /// Only queues of the asked engine that may run are runlist entries.
    #[test]
    fn runlist_entries_are_the_runnable_queues_of_the_engine() {
        let mut s = state(true);
        assert_eq!(s.runlist_entries(0).count(), 1);
        assert_eq!(s.runlist_entries(1).count(), 0);
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().suspended = true;
        assert_eq!(s.runlist_entries(0).count(), 0);
    }
}
