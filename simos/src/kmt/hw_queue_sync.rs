//! `D3DKMTSubmitSignalSyncObjectsToHwQueue` and `D3DKMTSubmitWaitForSyncObjectsToHwQueue`'s
//! kernel entries, as 24H2 answers them: `K:DxgkSubmitSignalSyncObjectsToHwQueueInternal`
//! @0x14029D7B8 with `K:SubmitSignalSyncObjectsToHwQueue` @0x1403260EC, and
//! `K:DxgkSubmitWaitForSyncObjectsToHwQueueInternal` @0x1402AECE8 with
//! `K:SubmitWaitForSyncObjectsFromGpu` @0x1402AF2F0: the caller's structure as written, the
//! checks in their order with their statuses; VidSch then queues one packet per queue
//! (`M:VidSchSubmitSignalToHwQueue` @0x140031EF0, `M:VidSchSubmitWaitToHwQueue` @0x1400034F0),
//! which refuses neither a user-mode queue nor a queue's own progress fence, and takes a
//! device's native fences as it takes its monitored fences. Neither writes anything back.

use std::sync::Arc;

// `K:DxgkSubmitSignalSyncObjectsToHwQueueInternal` copies 0x28 bytes: the whole block.
pub use rvgpu_ddi::d3dkmt::{
    D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE, D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE,
};
use rvgpu_ddi::ntstatus::STATUS_NO_MEMORY;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use super::native_fence::{SYNC_NO_SIGNAL as NO_SIGNAL, SYNC_NO_WAIT as NO_WAIT};
use super::refusal::row::*;
use super::sync_from_cpu::{
    handles, objects_of, repeats, values, CallerProcess, HostArrays, SyncObject,
};
use crate::adapter::AdapterShared;
use crate::machine::Machine;
use crate::ums::{self, UmsProcess};

/// `D3DDDICB_SIGNALFLAGS` bits 3 to 30 (`Reserved`).
const SIGNAL_RESERVED: u32 = 0x7FFF_FFF8;
/// `D3DDDICB_SIGNALFLAGS` bit 31 (`DXGK_SIGNAL_FLAG_INTERNAL0`, the OS's own).
const SIGNAL_INTERNAL: u32 = 0x8000_0000;

/// `count` handles at `at`: none is `empty`; else captured as [`handles`] does, above the
/// pool's bound `no_pool`.
fn nonempty_handles(
    mem: &dyn CallerMemory,
    count: u32,
    at: u64,
    [empty, no_pool]: [NtStatus; 2],
) -> Result<Vec<KmtHandle>, NtStatus> {
    if count == 0 {
        return Err(empty);
    }
    handles(mem, count, at, no_pool)
}

/// The objects as VidSch's packets take them, each with its handle and value: a monitored
/// fence or a native fence of the device alike (24H2's lookups take both as device sync
/// objects, and VidSch's packets handle the native type, `ums::QueueFence`).
fn scheduled(
    handles: &[KmtHandle],
    objects: Vec<SyncObject>,
    values: &[u64],
) -> Vec<(ums::QueueFence, KmtHandle, u64)> {
    handles
        .iter()
        .zip(objects)
        .zip(values)
        .map(|((&h, o), &v)| {
            let f = match o {
                SyncObject::Monitored(f) => ums::QueueFence::Monitored(f),
                SyncObject::Native(f) => ums::QueueFence::Native(f),
            };
            (f, h, v)
        })
        .collect()
}

/// The caller's hardware queue `h`: the process and device it is of (`owner`), and that it
/// is a queue of that device; else STATUS_INVALID_PARAMETER.
fn queue_owner(
    m: &Machine,
    owner: &dyn Fn(KmtHandle) -> Option<UmsProcess>,
    h: KmtHandle,
    bad: NtStatus,
) -> Result<UmsProcess, NtStatus> {
    let p = owner(h).ok_or(bad)?;
    let a = m.adapter_shared(p.adapter).map_err(|_| bad)?;
    ums::device_queue_kind(a, p.device, h).ok_or(bad)?;
    Ok(p)
}

/// The thunk's adapter for `p`, after the device's core access
/// (`lock::device_active`, inlined in `K:SubmitSignalSyncObjectsToHwQueue`
/// @0x1403260EC and `K:SubmitWaitForSyncObjectsFromGpu` @0x1402AF2F0): STATUS_DEVICE_REMOVED when `p`'s
/// device is not active (stopped with its adapter, or gone); one VidSch put in error goes on.
fn device_active(
    m: &Machine,
    p: &UmsProcess,
    refusal: NtStatus,
) -> Result<Arc<AdapterShared>, NtStatus> {
    let a = m.kmt(p).thunk()?;
    super::lock::device_active(&a, p.device, refusal)?;
    Ok(a)
}

refusals! {
    /// `D3DKMTSubmitSignalSyncObjectsToHwQueue`'s refusals, in 24H2's order.
    SubmitSignalSyncObjectsToHwQueueCheck => SUBMIT_SIGNAL_SYNC_OBJECTS_TO_HW_QUEUE_CHECKS {
        StructureUnreadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        ObjectCount: "ObjectCount 0" => INVALID_PARAMETER;
        HandlesPool: "no pool for ObjectCount handles" => NO_MEMORY;
        HandlesUnreadable: "ObjectHandleArray not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        QueueCount: "BroadcastHwQueueCount 0" => INVALID_PARAMETER;
        QueueHandlesPool: "no pool for BroadcastHwQueueCount handles" => NO_MEMORY;
        QueuesUnreadable: "BroadcastHwQueueArray not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        QueuesPool: "no pool for the queues" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        Queue: "BroadcastHwQueueArray[0] not a hardware queue in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        Flags: "a Flags bit from 3 to 30" => INVALID_PARAMETER;
        InternalFlag: "Flags bit 31 (the OS's internal flag)" => INVALID_PARAMETER;
        FurtherQueue: "a BroadcastHwQueueArray entry not a hardware queue of the caller's, or of another \
            device than the first's" => INVALID_PARAMETER;
        ObjectsPool: "no pool for the objects" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        Unknown: "a handle neither a device nor a global sync object in the caller's handle table" => INVALID_PARAMETER;
        NoSignal: "an object created or opened NoSignal" => ACCESS_DENIED;
        OtherDevice: "an object of another device than the first queue's" => INVALID_PARAMETER;
        ValuesPool: "no pool for the fence values" => NO_MEMORY;
        ValuesUnreadable: "FenceValueArray not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        Twice: "the same object twice" => INVALID_PARAMETER;
        OtherAdapter: "an object of another adapter, or whose adapter state is destroyed" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's submission (`ums::submit_signal_objects_to_hw_queues`) makes it";
    }
}

/// `D3DKMTSubmitSignalSyncObjectsToHwQueue`'s row of the thunk catalog ([`super::catalog`]).
pub const SUBMIT_SIGNAL_SYNC_OBJECTS_TO_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTSubmitSignalSyncObjectsToHwQueue",
    source: Some(&[
        src("DxgkSubmitSignalSyncObjectsToHwQueueInternal", 0x14029D7B8),
        src("SubmitSignalSyncObjectsToHwQueue", 0x1403260EC),
    ]),
    checks: SUBMIT_SIGNAL_SYNC_OBJECTS_TO_HW_QUEUE_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue_sync::dxgk_submit_signal_sync_objects_to_hw_queue_internal"),
    gaps: "the simulation's pool holds at most MAX_OBJECTS handles or queues (STATUS_NO_MEMORY \
           above), 24H2's what the system has; no global sync objects; VidSch's refusal of a \
           value below the object's last queued one (M:VidSchSubmitSignalToHwQueue \
           @0x140031EF0, a native fence's included, STATUS_INVALID_PARAMETER without \
           AllowFenceRewind) is not modelled",
};

/// `DxgkSubmitSignalSyncObjectsToHwQueueInternal` for the caller's structure `a`, in 24H2's
/// order, every refusal STATUS_INVALID_PARAMETER unless said:
/// 1. `ObjectCount` 0; the handles captured (above
///    [`MAX_OBJECTS`](super::sync_from_cpu::MAX_OBJECTS), STATUS_NO_MEMORY; a fault, its
///    status);
/// 2. `BroadcastHwQueueCount` 0; the queue handles captured (the same);
/// 3. `BroadcastHwQueueArray[0]` not a hardware queue of the caller's (`owner`); its device
///    not active, STATUS_DEVICE_REMOVED;
/// 4. a `Flags` bit from 3 to 30, then bit 31;
/// 5. a further queue not the caller's or of another device than the first's;
/// 6. each object ([`CallerProcess::object`]): unknown; created or opened `NoSignal`,
///    STATUS_ACCESS_DENIED; another device's;
/// 7. the values captured; an object twice.
///
/// Then one signal packet on each queue (`ums::submit_signal_objects_to_hw_queues`): once
/// each queue's earlier work completed, each monitored fence is written and each native
/// fence goes to the driver as a CPU signal would (a value not above its CurrentValue is
/// not). A refusal queues nothing.
pub fn dxgk_submit_signal_sync_objects_to_hw_queue_internal(
    m: &Machine,
    a: &D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE,
    owner: &dyn Fn(KmtHandle) -> Option<UmsProcess>,
    caller: &dyn CallerProcess,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    type C = SubmitSignalSyncObjectsToHwQueueCheck;
    let objects = nonempty_handles(
        mem,
        a.ObjectCount,
        a.ObjectHandleArray,
        [C::ObjectCount, C::HandlesPool].map(C::refuse),
    )?;
    let queues = nonempty_handles(
        mem,
        a.BroadcastHwQueueCount,
        a.BroadcastHwQueueArray,
        [C::QueueCount, C::QueueHandlesPool].map(C::refuse),
    )?;
    let first = queues.first().copied().ok_or(C::QueueCount.refuse())?;
    let p = queue_owner(m, owner, first, C::Queue.refuse())?;
    let sh = device_active(m, &p, C::DeviceActive.refuse())?;
    if a.Flags & SIGNAL_RESERVED != 0 {
        return Err(C::Flags.refuse());
    }
    if a.Flags & SIGNAL_INTERNAL != 0 {
        return Err(C::InternalFlag.refuse());
    }
    for &q in queues.iter().skip(1) {
        let o = queue_owner(m, owner, q, C::FurtherQueue.refuse())?;
        if (o.adapter, o.device) != (p.adapter, p.device) {
            return Err(C::FurtherQueue.refuse());
        }
    }
    let refusals = [C::Unknown, C::NoSignal, C::OtherDevice].map(C::refuse);
    let found = objects_of(caller, p.device, &objects, NO_SIGNAL, refusals)?;
    let values = values(
        mem,
        a.ObjectCount,
        a.FenceValueArray,
        C::ValuesPool.refuse(),
    )?;
    if repeats(&found) {
        return Err(C::Twice.refuse());
    }
    let fences = scheduled(&objects, found, &values);
    ums::submit_signal_objects_to_hw_queues(m, &sh, p.device, &queues, fences)
        .map_err(super::process::status)
}

refusals! {
    /// `D3DKMTSubmitWaitForSyncObjectsToHwQueue`'s refusals, in 24H2's order.
    SubmitWaitForSyncObjectsToHwQueueCheck => SUBMIT_WAIT_FOR_SYNC_OBJECTS_TO_HW_QUEUE_CHECKS {
        StructureUnreadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        ObjectCount: "ObjectCount 0" => INVALID_PARAMETER;
        HandlesPool: "no pool for ObjectCount handles" => NO_MEMORY;
        HandlesUnreadable: "ObjectHandleArray not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        Queue: "hHwQueue not a hardware queue in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        ValuesPool: "no pool for ObjectCount fence values" => NO_MEMORY;
        ValuesUnreadable: "FenceValueArray not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        ObjectsPool: "no pool for the objects" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        OtherDevice: "a device sync object of another device than the queue's" => INVALID_PARAMETER;
        NoWait: "a device sync object created or opened NoWait" => ACCESS_DENIED;
        Unknown: "a handle neither a device nor a global sync object in the caller's handle table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTSubmitWaitForSyncObjectsToHwQueue`'s row of the thunk catalog ([`super::catalog`]).
pub const SUBMIT_WAIT_FOR_SYNC_OBJECTS_TO_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTSubmitWaitForSyncObjectsToHwQueue",
    source: Some(&[
        src("DxgkSubmitWaitForSyncObjectsToHwQueueInternal", 0x1402AECE8),
        src("SubmitWaitForSyncObjectsFromGpu", 0x1402AF2F0),
    ]),
    checks: SUBMIT_WAIT_FOR_SYNC_OBJECTS_TO_HW_QUEUE_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue_sync::dxgk_submit_wait_for_sync_objects_to_hw_queue_internal"),
    gaps: "the simulation's pool holds at most MAX_OBJECTS handles (STATUS_NO_MEMORY above), \
           24H2's what the system has; no global sync objects",
};

/// `DxgkSubmitWaitForSyncObjectsToHwQueueInternal` for the caller's structure `a`, in 24H2's
/// order, every refusal STATUS_INVALID_PARAMETER unless said:
/// 1. `ObjectCount` 0; the handles captured (above
///    [`MAX_OBJECTS`](super::sync_from_cpu::MAX_OBJECTS), STATUS_NO_MEMORY; a fault, its
///    status);
/// 2. `hHwQueue` not a hardware queue of the caller's (`owner`); its device not active,
///    STATUS_DEVICE_REMOVED;
/// 3. the values captured;
/// 4. each object: another device's; created or opened `NoWait`, STATUS_ACCESS_DENIED;
///    unknown.
///
/// Then one wait packet per object on the queue (`ums::submit_wait_objects_to_hw_queue`),
/// holding the queue's later work until the object reaches its value (a native fence's
/// CurrentValue, its MonitoredValue armed for the wait as for a CPU wait). A refusal queues
/// nothing.
pub fn dxgk_submit_wait_for_sync_objects_to_hw_queue_internal(
    m: &Machine,
    a: &D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE,
    owner: &dyn Fn(KmtHandle) -> Option<UmsProcess>,
    caller: &dyn CallerProcess,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    type C = SubmitWaitForSyncObjectsToHwQueueCheck;
    let objects = nonempty_handles(
        mem,
        a.ObjectCount,
        a.ObjectHandleArray,
        [C::ObjectCount, C::HandlesPool].map(C::refuse),
    )?;
    let p = queue_owner(m, owner, a.hHwQueue, C::Queue.refuse())?;
    let sh = device_active(m, &p, C::DeviceActive.refuse())?;
    let values = values(
        mem,
        a.ObjectCount,
        a.FenceValueArray,
        C::ValuesPool.refuse(),
    )?;
    let found = objects
        .iter()
        .map(|&h| {
            let o = caller.object(h).ok_or(C::Unknown.refuse())?;
            if o.device != p.device {
                return Err(C::OtherDevice.refuse());
            }
            if o.flags & NO_WAIT != 0 {
                return Err(C::NoWait.refuse());
            }
            Ok(o.object)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let fences = scheduled(&objects, found, &values);
    ums::submit_wait_objects_to_hw_queue(m, &sh, p.device, a.hHwQueue, fences)
        .map_err(super::process::status)
}

impl super::process::SimKmt<'_> {
    /// `D3DKMTSubmitWaitForSyncObjectsToHwQueue` on `queue` with the structure the UMD's
    /// Windows thunk fills, through the thunk's kernel entry.
    pub(super) fn submit_wait_through_entry(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        let n = u32::try_from(fences.len()).map_err(|_| NtStatus(STATUS_NO_MEMORY))?;
        let a = D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE {
            hHwQueue: queue,
            ObjectCount: n,
            ObjectHandleArray: HostArrays::HANDLES,
            FenceValueArray: HostArrays::VALUES,
        };
        let p = self.process();
        dxgk_submit_wait_for_sync_objects_to_hw_queue_internal(
            self.machine(),
            &a,
            &|_| Some(p),
            self,
            &HostArrays::of(&[queue], fences),
        )
    }

    /// `D3DKMTSubmitSignalSyncObjectsToHwQueue` on `queue` alone (a `BroadcastHwQueueArray`
    /// of one, no flags), through the thunk's kernel entry.
    pub(super) fn submit_signal_through_entry(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        let n = u32::try_from(fences.len()).map_err(|_| NtStatus(STATUS_NO_MEMORY))?;
        let a = D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE {
            BroadcastHwQueueCount: 1,
            BroadcastHwQueueArray: HostArrays::QUEUES,
            ObjectCount: n,
            ObjectHandleArray: HostArrays::HANDLES,
            FenceValueArray: HostArrays::VALUES,
            ..Default::default()
        };
        let p = self.process();
        dxgk_submit_signal_sync_objects_to_hw_queue_internal(
            self.machine(),
            &a,
            &|_| Some(p),
            self,
            &HostArrays::of(&[queue], fences),
        )
    }
}
