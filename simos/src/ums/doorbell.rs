//! Doorbells: create, connect (with the BAR2 and binding checks of UM-09), OS-initiated
//! disconnect, destroy, and the work-submission ping.

use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rvgpu_ddi::basic::{HANDLE, NTSTATUS};
use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT, D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
};
use rvgpu_ddi::ntstatus::{
    NT_SUCCESS, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED,
};
use rvgpu_ddi::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CONNECTDOORBELL_FLAGS, DXGKARG_CREATEDOORBELL,
    DXGKARG_CREATEDOORBELL_FLAGS, DXGKARG_DESTROYDOORBELL, DXGKARG_NOTIFYWORKSUBMISSION,
    DXGKARG_NOTIFYWORKSUBMISSION_FLAGS,
};

use super::allocation::release_alloc;
use crate::adapter::ddi::{self, check_status, must_succeed, not_supported, sim_err};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::{ConnectPower, RingHandles};
use crate::state::ums::mapping::PAGE;

use super::kmd::{check_kmd_handle, needed_ddi};
use super::locks::{dev_guard, device_lock, exclusive};
use super::power::{node_active, power_up_if_needed, resume_power_suspended};
use crate::state::ums::events::UmsEvent;
use crate::state::ums::mapping::{DoorbellCpuState, DummyPage, Mapping};
use crate::state::ums::{
    kernel_handle, new_handle, DoorbellInfo, DoorbellObj, DoorbellState, Power,
};

/// Whether BAR2 page `page` rings queue `id` as the device is programmed: a read of device
/// state by the simulation (no side effects), the hardware check behind the doorbell DDIs
/// (UM-15). Dedicated mode: `DOORBELL_BIND[page]` is the queue's id. Global mode: it is the
/// process id of the queue's descriptor and the queue is a user-mode one (hardware.md 5.5);
/// a queue in no runlist (suspended) cannot be checked there and passes.
pub(super) fn page_routes(a: &AdapterShared, page: u32, id: u32) -> Result<(), String> {
    let Some(reg) = rvgpu_hw::regs::doorbell_bind_reg(page) else {
        return Err(format!(
            "physical doorbell {page} has no DOORBELL_BIND register"
        ));
    };
    let bound = a.device.read32(reg);
    if !a.device.config().global_doorbell {
        if bound != id {
            return Err(format!(
                "DOORBELL_BIND[{page}] = {bound:#x}, not the queue's id {id}"
            ));
        }
        return Ok(());
    }
    // A PCI board cannot show its runlists (`Board::queue` is `None`): not checked there.
    let Some(Some(q)) = a.device.queue(id) else {
        return Ok(());
    };
    if !q.user_mode || q.process_id != bound {
        return Err(format!(
            "global doorbell page {page} is bound to process id {bound:#x}, but queue {id} \
             has process id {:#x} (user mode: {}), so the page does not ring it",
            q.process_id, q.user_mode
        ));
    }
    Ok(())
}

// A physical doorbell the KMD released (disconnect, destroy) may stay bound to its old queue
// until it is given to another doorbell: nothing can ring it any more (the only process mapping
// is the OS's, now the dummy page), so Windows cannot tell and the simulation does not check.

/// Translates the KMD's doorbell kernel VA into a BAR2 page (UM-09).
pub(super) fn doorbell_page(a: &AdapterShared, kva: usize) -> Result<u32, String> {
    let windows = lock(&a.doorbell_windows);
    let Some((&base, &len)) = windows.range(..=kva).next_back() else {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is not inside any live DxgkCbMapMemory mapping of \
             the doorbell BAR (BAR2)"
        ));
    };
    let off = kva - base;
    if off >= len {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is past the end of the BAR2 mapping at {base:#x} \
             ({len:#x} bytes)"
        ));
    }
    if !(off as u64).is_multiple_of(PAGE) {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is not page-aligned in the BAR2 mapping at \
             {base:#x} (offset {off:#x})"
        ));
    }
    let page = (off as u64 / PAGE) as u32;
    if page >= a.device.config().doorbells {
        return Err(format!(
            "KernelCpuVirtualAddress {kva:#x} is doorbell page {page}, the device has {}",
            a.device.config().doorbells
        ));
    }
    Ok(page)
}

/// `D3DKMTConnectDoorbell` (UM-09, UM-13, UM-14). In D3 the whole sequence (D0, connect,
/// resume) runs with the adapter lock exclusive; otherwise shared, with the device's lock.
pub(crate) fn connect_doorbell(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    loop {
        if lock(&a.ums).power == Power::D3 {
            let _x = exclusive(a);
            if lock(&a.ums).power != Power::D3 {
                continue;
            }
            return connect_locked(a, device, h);
        }
        let _g = dev_guard(a, &dl);
        if lock(&a.ums).power == Power::D3 {
            continue;
        }
        return connect_locked(a, device, h);
    }
}

pub(super) fn connect_locked(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let (kmd, node) = {
        let os = lock(&a.ums);
        // A device in error still connects: the thunk's core access refuses only a stopped
        // device (`K:DXGDOORBELLAPILOCKS` @0x140073C48).
        let d = os.doorbell_of(device, h)?;
        match d.state {
            // 24H2 `K:DxgkConnectDoorbellInternal` @0x1401D846C: an aborted doorbell (status
            // 3) is STATUS_INVALID_PARAMETER; a connected one succeeds with no DDI.
            DoorbellState::Aborted => return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER)),
            DoorbellState::Connected { .. } => return Ok(()),
            DoorbellState::Disconnected => {}
        }
        let node = os.queues.get(&d.queue).map_or(0, |q| q.node);
        (d.kmd, node)
    };
    if let Some(d) = lock(&a.ums).doorbells.get_mut(&h) {
        d.connecting = Some(None);
    }
    let r = connect_ddi(a, h, kmd, node);
    if let Some(d) = lock(&a.ums).doorbells.get_mut(&h) {
        d.connecting = None;
    }
    r
}

pub(super) fn connect_ddi(
    a: &AdapterShared,
    h: KmtHandle,
    kmd: usize,
    node: u32,
) -> Result<(), SimError> {
    let woke = lock(&a.ums).power == Power::D3;
    power_up_if_needed(a)?;
    // UM-13 (the pages): a connect brings the node to F0 first and holds it there through the
    // connect. 24H2 takes no power reference (`ConnectPower::DriverHolds`): the engine is the
    // driver's to power (`DxgkCbSetPowerComponentActive`).
    let _active = match a.os.windows.reading().connect_power {
        ConnectPower::OsBringsF0 => Some(node_active(a, node)?),
        ConnectPower::DriverHolds => None,
    };
    let f = needed_ddi!(a, DxgkDdiConnectDoorbell, "created a doorbell")?;
    let mut args = DXGKARG_CONNECTDOORBELL {
        hDoorbell: kmd as HANDLE,
        Flags: DXGKARG_CONNECTDOORBELL_FLAGS::default(),
        KernelCpuVirtualAddress: std::ptr::null_mut(),
        SecondaryKernelCpuVirtualAddress: std::ptr::null_mut(),
        // 24H2 zeroes the block (`K:DXGDOORBELL::Connect` @0x1401D7B90): a driver that
        // writes no status has answered CONNECTED.
        Status: 0,
    };
    let status = value_ddi(a, f, &mut args)?;
    let result = if NT_SUCCESS(status) {
        if args.Status != D3DDDI_DOORBELLSTATUS_CONNECTED
            && args.Status != D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD
        {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: DxgkDdiConnectDoorbell succeeded with Status = {} (only \
                     CONNECTED or CONNECTED_NOTIFY_KMD are allowed)",
                    args.Status
                ),
            ));
        }
        let page = doorbell_page(a, args.KernelCpuVirtualAddress as usize)
            .map_err(|m| sim_err(a, format!("driver bug: DxgkDdiConnectDoorbell: {m}")))?;
        // Checked and committed under the OS lock: a concurrent connect of another doorbell
        // that takes this page calls DxgkCbDisconnectDoorbell (which takes this lock) before it
        // rebinds the page, so either that callback is already recorded here or the page is
        // still bound to this queue.
        let mut os = lock(&a.ums);
        let (queue_id, superseded) = match os.doorbells.get(&h) {
            Some(d) => (
                os.queues.get(&d.queue).and_then(|q| q.queue_id),
                d.connecting.flatten(),
            ),
            None => (None, None),
        };
        if superseded.is_some() {
            // Victimised between the KMD's return and the OS's mapping: stays on the dummy
            // page with the callback's status; the UMD reads it and reconnects.
            os.events.push(UmsEvent::ConnectDoorbell {
                doorbell: h,
                page,
                status: args.Status,
            });
            drop(os);
            if woke {
                resume_power_suspended(a)?;
            }
            return Ok(());
        }
        if let Some(id) = queue_id {
            if let Err(m) = page_routes(a, page, id) {
                return Err(sim_err(
                    a,
                    format!(
                        "driver bug: DxgkDdiConnectDoorbell returned physical doorbell {page} \
                         but {m} (UM-15: connect wires doorbell and queue together)"
                    ),
                ));
            }
        }
        let bus = Arc::downgrade(&a.doorbell_bus);
        if let Some(d) = os.doorbells.get_mut(&h) {
            *lock(&d.cpu.mapping) = Mapping::Physical { page, bus };
            d.cpu.status.store(args.Status, Ordering::Release);
            d.state = DoorbellState::Connected { page };
        }
        os.events.push(UmsEvent::ConnectDoorbell {
            doorbell: h,
            page,
            status: args.Status,
        });
        Ok(())
    } else {
        lock(&a.ums).events.push(UmsEvent::ConnectFailed {
            doorbell: h,
            status,
        });
        Err(ddi::failed(f.routine(), status))
    };
    if woke {
        resume_power_suspended(a)?;
    }
    result
}

/// Destroys a doorbell (`DxgkDdiDestroyDoorbell`) and drops its allocation references.
pub(super) fn destroy_doorbell(a: &AdapterShared, h: KmtHandle) -> Result<(), SimError> {
    let kmd = match lock(&a.ums).doorbells.get(&h) {
        Some(d) => d.kmd,
        None => return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE)),
    };
    let f = needed_ddi!(a, DxgkDdiDestroyDoorbell, "created a doorbell")?;
    let mut args = DXGKARG_DESTROYDOORBELL {
        hDoorbell: kmd as HANDLE,
    };
    let status = value_ddi(a, f, &mut args)?;
    must_succeed(a, f, status)?;
    // Once the doorbell is gone the OS drops its references on the ring and ring control (UM-07)
    // and the UMD may free them: a queue still in a runlist would have the CMP read freed
    // memory at its next kick or commit.
    let queue_id = {
        let os = lock(&a.ums);
        os.doorbells
            .get(&h)
            .and_then(|d| os.queues.get(&d.queue))
            .and_then(|q| Some((q.queue_id?, q.node)))
    };
    if let Some((id, node)) = queue_id {
        // A lost device reads no memory again (hardware.md 10.4; an adapter reset, the only
        // way back, empties every runlist): its stale runlist is no hazard. Nor is a held
        // engine's (hardware.md 10.1: after an engine reset it runs nothing until the driver's
        // next commit, which no longer lists the queue).
        // Not observable on a PCI board (`Board::queue` is `None`): checked in-process only.
        if !a.device.is_lost()
            && !engine_held(a, node)
            && a.device.queue(id).is_some_and(|q| q.is_some())
        {
            return Err(sim_err(
                a,
                format!(
                    "driver bug: queue id {id} is still in a committed runlist after \
                     DxgkDdiDestroyDoorbell returned (its ring may be freed now, UM-07)"
                ),
            ));
        }
    }
    let mut os = lock(&a.ums);
    let Some(d) = os.doorbells.remove(&h) else {
        return Ok(());
    };
    os.doorbell_by_kmd.remove(&(d.kmd, h));
    os.destroyed_doorbells.insert(d.kmd, h);
    os.destroyed_doorbells.insert(kernel_handle(h), h);
    d.cpu
        .status
        .store(D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT, Ordering::Release);
    d.cpu.to_dummy();
    if let Some(q) = os.queues.get_mut(&d.queue) {
        q.doorbell = None;
    }
    os.events.push(UmsEvent::DestroyDoorbell { doorbell: h });
    for alloc in [d.ring, d.control] {
        release_alloc(&mut os, alloc);
    }
    Ok(())
}

/// Whether `doorbell` is a doorbell of `device`.
pub(crate) fn device_has_doorbell(
    a: &AdapterShared,
    device: KmtHandle,
    doorbell: KmtHandle,
) -> bool {
    lock(&a.ums).doorbell_of(device, doorbell).is_ok()
}

/// The OS's view of a doorbell.
pub(crate) fn doorbell_info(a: &AdapterShared, doorbell: KmtHandle) -> Option<DoorbellInfo> {
    let os = lock(&a.ums);
    let d = os.doorbells.get(&doorbell)?;
    Some(DoorbellInfo {
        state: d.state,
        status: d.cpu.status(),
        mapped_page: d.cpu.mapped_page(),
        kmd_handle: d.kmd,
        os_handle: kernel_handle(d.handle),
        queue: d.queue,
        writes: d.cpu.write_counts(),
    })
}

/// The most private data `D3DKMTCreateDoorbell` takes (BR-96, \[D\] `DxgkCreateDoorbellInternal`
/// in 22631 and in later builds).
pub const DOORBELL_PRIVATE_DATA_MAX: usize = 16;

/// What `D3DKMTCreateDoorbell` returns.
pub(crate) struct CreatedDoorbell {
    pub handle: KmtHandle,
    pub cpu: Arc<DoorbellCpuState>,
}

pub(crate) fn create_doorbell(
    a: &AdapterShared,
    device: KmtHandle,
    queue: KmtHandle,
    ring: KmtHandle,
    control: KmtHandle,
    flags: u32,
    pdd: &mut [u8],
) -> Result<CreatedDoorbell, SimError> {
    // BR-96 ([D] `DxgkCreateDoorbellInternal`): at most 16 bytes of private data, checked
    // before the queue is looked up.
    if pdd.len() > DOORBELL_PRIVATE_DATA_MAX {
        a.observer().triage(format!(
            "BR-96: PrivateDriverDataSize {:#x} is greater than max permitted size {:#x}",
            pdd.len(),
            DOORBELL_PRIVATE_DATA_MAX
        ));
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let (kmd_queue, size, last_queued, kmd_ring, kmd_control, pid) = {
        let os = lock(&a.ums);
        let q = os.live_queue_of(device, queue)?;
        let pid = os.device(device)?.process;
        // UM-03, UM-04, UM-05.
        let Some(size) = os.doorbell_size() else {
            return Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED));
        };
        if !q.user_mode || !os.node_ums(q.node) {
            return Err(SimError::DdiFailed(STATUS_NOT_SUPPORTED));
        }
        if q.doorbell.is_some() {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        // 24H2 `K:DXGDOORBELL::Initialize` @0x1401D9E74: each must be an allocation of the
        // queue's device.
        for h in [ring, control] {
            if os.open_allocation(device, h).is_none() {
                return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
            }
        }
        // The driver's handles of the ring allocations (what DXGKARG_CREATEDOORBELL names):
        // the creating device's open of each ([`RingHandles`]).
        let kmd_alloc = |h: KmtHandle| {
            os.allocations
                .get(&h)
                .map_or(0, |al| match a.os.windows.reading().ring_handles {
                    RingHandles::DeviceSpecific => al.opened.map_or(0, |o| o.handle),
                    RingHandles::Created => al.mapped.map_or(0, |m| m.kmd),
                })
        };
        (
            q.kmd(),
            size,
            q.sched.last_queued.clone(),
            kmd_alloc(ring),
            kmd_alloc(control),
            pid,
        )
    };
    let f = ddi::table_slot!(a, DxgkDdiCreateDoorbell)?.map_or_else(not_supported, Ok)?;
    let h = new_handle(pid)?;
    let mut args = DXGKARG_CREATEDOORBELL {
        hHwQueue: kmd_queue as HANDLE,
        hDoorbell: kernel_handle(h) as HANDLE,
        PrivateDriverDataSize: pdd.len() as u32,
        PrivateDriverData: if pdd.is_empty() {
            std::ptr::null_mut()
        } else {
            pdd.as_mut_ptr().cast::<c_void>()
        },
        hRingBuffer: kmd_ring as HANDLE,
        hRingBufferControl: kmd_control as HANDLE,
        Flags: DXGKARG_CREATEDOORBELL_FLAGS::from_value(
            a.os.windows.reading().doorbell_flags.word(flags),
        ),
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::CREATE_DOORBELL, &args);
    let status = f.passive_unaudited(a, &mut args)?;
    check_status(f, status)?;
    let kmd = args.hDoorbell as usize;
    let mut os = lock(&a.ums);
    check_kmd_handle(
        a,
        "DxgkDdiCreateDoorbell",
        "hDoorbell",
        kmd,
        os.doorbells.values().map(|d| d.kmd),
    )?;
    let cpu = Arc::new(DoorbellCpuState {
        mapping: Mutex::new(Mapping::Dummy),
        dummy: DummyPage {
            words: (0..(size as usize).div_ceil(8))
                .map(|_| AtomicU64::new(0))
                .collect(),
        },
        status: AtomicI32::new(D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY),
        last_queued,
        dummy_writes: AtomicU64::new(0),
        physical_writes: AtomicU64::new(0),
    });
    for al in [ring, control] {
        if let Some(x) = os.allocations.get_mut(&al) {
            x.refs += 1;
        }
    }
    if let Some(q) = os.queues.get_mut(&queue) {
        q.doorbell = Some(h);
    }
    os.doorbell_by_kmd.insert((kmd, h));
    os.doorbells.insert(
        h,
        DoorbellObj {
            handle: h,
            kmd,
            device,
            queue,
            ring,
            control,
            state: DoorbellState::Disconnected,
            connecting: None,
            cpu: cpu.clone(),
        },
    );
    os.events.push(UmsEvent::CreateDoorbell { doorbell: h });
    Ok(CreatedDoorbell { handle: h, cpu })
}

pub(crate) fn destroy_doorbell_thunk(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    lock(&a.ums).doorbell_of(device, h)?;
    // `K:DXGDOORBELL::DestroyCoreState` @0x1401D804C, which `D3DKMTDestroyDoorbell` reaches
    // as a queue's destruction does: `DxgkDdiDisconnectDoorbell` first while the status page
    // says connected, then `DxgkDdiDestroyDoorbell`; the status page ends ABORT.
    super::disconnect::os_disconnect(
        a,
        h,
        rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT,
    )?;
    destroy_doorbell(a, h)
}

pub(crate) fn notify_work_submission(
    a: &AdapterShared,
    device: KmtHandle,
    h: KmtHandle,
) -> Result<(), SimError> {
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    // 24H2 `K:DxgkNotifyWorkSubmissionInternal` @0x1401D98CC: only a doorbell whose status
    // reads CONNECTED_NOTIFY_KMD reaches the driver; any other status (CONNECTED among them)
    // is STATUS_INVALID_PARAMETER, and a `NoKmdAccess` context's queue succeeds with no DDI.
    let kmd_queue = {
        let os = lock(&a.ums);
        let d = os.doorbell_of(device, h)?;
        if d.cpu.status.load(Ordering::Acquire) != D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        let Some(q) = os.queues.get(&d.queue) else {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        };
        if os.contexts.get(&q.context).is_some_and(|c| c.no_kmd_access) {
            return Ok(());
        }
        q.kmd()
    };
    let f = ddi::table_slot!(a, DxgkDdiNotifyWorkSubmission)?.map_or_else(not_supported, Ok)?;
    let mut args = DXGKARG_NOTIFYWORKSUBMISSION {
        hHwQueue: kmd_queue as HANDLE,
        Flags: DXGKARG_NOTIFYWORKSUBMISSION_FLAGS::default(),
    };
    let status = value_ddi(a, f, &mut args)?;
    must_succeed(a, f, status)?;
    lock(&a.ums)
        .events
        .push(UmsEvent::NotifyWorkSubmission { doorbell: h });
    Ok(())
}

/// Whether the device holds `engine` after an engine reset (hardware.md 10.1): it runs nothing,
/// and reads none of its runlisted queues' rings, until the driver's next commit.
pub(super) fn engine_held(a: &AdapterShared, engine: u32) -> bool {
    a.device.engine_snapshot(engine).is_some_and(|e| e.held)
}

/// Calls a doorbell DDI whose argument block holds only handles, flags and values (connect,
/// disconnect, destroy, notify) at PASSIVE_LEVEL; returns the driver's status.
fn value_ddi<T: ddi::Block>(
    a: &AdapterShared,
    f: ddi::MutFn<T>,
    args: &mut T,
) -> Result<NTSTATUS, SimError> {
    f.passive(a, args)
}
