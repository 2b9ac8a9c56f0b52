//! `D3DKMTSignalSynchronizationObjectFromCpu` and `D3DKMTWaitForSynchronizationObjectFromCpu`'s
//! kernel entries, as 24H2 answers them: `K:DxgkSignalSynchronizationObjectFromCpu` @0x1402B97E0
//! with `K:SignalSynchronizationObjectFromCpu` @0x1402BA4F8, and
//! `K:DxgkWaitForSynchronizationObjectFromCpuInternal` @0x1402AC610 with
//! `K:WaitForSynchronizationObjectFromCpu` @0x1402AD200: the caller's structure as written, the
//! checks in their order with their statuses. Neither writes anything back.

pub use rvgpu_ddi::d3dkmt::{
    D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU, D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU,
};
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use super::native_fence::{SYNC_NO_SIGNAL as NO_SIGNAL, SYNC_NO_WAIT as NO_WAIT};
use super::refusal::row::*;
use crate::machine::Machine;
use crate::sync::fence::{MonitoredFence, NativeFence};
use crate::ums::UmsProcess;

/// `D3DDDI_WAITFORSYNCHRONIZATIONOBJECTFROMCPU_FLAGS::WaitAny`, the one flag 24H2 takes.
pub const WAIT_ANY: u32 = 1 << 0;
/// The signal flags 24H2 takes (bits 0 to 2; any other is STATUS_INVALID_PARAMETER).
const SIGNAL_FLAGS: u32 = 0x7;
/// `D3DDDICB_SIGNALFLAGS::AllowFenceRewind` (bit 2).
pub const ALLOW_FENCE_REWIND: u32 = 1 << 2;
/// Most objects one call takes here: 24H2 takes what its pool gives (a failed allocation is
/// STATUS_NO_MEMORY); the simulated pool gives this many.
pub const MAX_OBJECTS: u32 = 4096;

/// A sync object of a device: a native fence (this process's instance) or a monitored fence
/// (progress and paging fences are monitored fences).
#[derive(Clone)]
pub enum SyncObject {
    /// A native fence.
    Native(NativeFence),
    /// A monitored fence.
    Monitored(MonitoredFence),
}

/// One entry of the caller's handle table: the device that owns it and how it was created
/// or opened (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`, of which 24H2 refuses `NoSignal` to a
/// signal and `NoWait` to a wait).
#[derive(Clone)]
pub struct CallerObject {
    /// The owning device (`hDevice`).
    pub device: KmtHandle,
    /// The object.
    pub object: SyncObject,
    /// The instance's flags.
    pub flags: u32,
}

/// The caller's process as the entries see it: its handle table.
pub trait CallerProcess {
    /// Device `h` of the caller.
    fn device(&self, h: KmtHandle) -> Option<UmsProcess>;
    /// Sync object `h` of the caller.
    fn object(&self, h: KmtHandle) -> Option<CallerObject>;
}

/// Sync object `h` of device `owner`: its native fence instance with that D3DKMT handle, or its
/// monitored fence.
pub fn sync_object_of(m: &Machine, owner: &UmsProcess, h: KmtHandle) -> Option<SyncObject> {
    if let Some(f) = m
        .native_fence_by_kmt(owner.adapter, h)
        .filter(|f| f.process() == owner.pid)
    {
        return Some(SyncObject::Native(f));
    }
    let a = m.adapter_shared(owner.adapter).ok()?;
    crate::ums::fence_of(a, owner.device, h).map(SyncObject::Monitored)
}

impl SyncObject {
    /// The flags a monitored fence was made with, as the OS keeps them on it
    /// ([`MonitoredFence::flags`]: what its creator asked, or what the OS gave it, a paging
    /// queue's fence `NoSignal | NoGPUAccess`); `None` for a native fence, whose flags are
    /// its instance's in the caller's handle table.
    pub fn monitored_flags(&self) -> Option<u32> {
        match self {
            Self::Monitored(f) => Some(f.flags()),
            Self::Native(_) => None,
        }
    }
}

/// `count` little-endian entries of `N` bytes at `at`, each read by `from` (above
/// [`MAX_OBJECTS`], what a failed pool allocation answers: `no_pool`; a fault, the probe's
/// status).
fn capture<const N: usize, T: Default>(
    mem: &dyn CallerMemory,
    count: u32,
    at: u64,
    no_pool: NtStatus,
    from: fn([u8; N]) -> T,
) -> Result<Vec<T>, NtStatus> {
    if count > MAX_OBJECTS {
        return Err(no_pool);
    }
    let size = u32::try_from(N).unwrap_or(u32::MAX);
    Ok(mem
        .read(at, count.saturating_mul(size))?
        .chunks_exact(N)
        .map(|c| <[u8; N]>::try_from(c).map_or_else(|_| T::default(), from))
        .collect())
}

/// `count` handles at `at`, captured as [`capture`] does.
pub(super) fn handles(
    mem: &dyn CallerMemory,
    count: u32,
    at: u64,
    no_pool: NtStatus,
) -> Result<Vec<KmtHandle>, NtStatus> {
    capture(mem, count, at, no_pool, u32::from_le_bytes)
}

/// `count` fence values at `at`, captured as [`capture`] does.
pub(super) fn values(
    mem: &dyn CallerMemory,
    count: u32,
    at: u64,
    no_pool: NtStatus,
) -> Result<Vec<u64>, NtStatus> {
    capture(mem, count, at, no_pool, u64::from_le_bytes)
}

/// Both arrays of `count` entries from the caller's memory, after the pool bound.
fn capture_both(
    mem: &dyn CallerMemory,
    count: u32,
    handles_at: u64,
    values_at: u64,
    no_pool: NtStatus,
) -> Result<(Vec<KmtHandle>, Vec<u64>), NtStatus> {
    let h = handles(mem, count, handles_at, no_pool)?;
    Ok((h, values(mem, count, values_at, no_pool)?))
}

/// Each handle's object, in order: not in the caller's table is STATUS_INVALID_PARAMETER, an
/// instance with the `refused` flag STATUS_ACCESS_DENIED, one of another device than
/// `device` STATUS_INVALID_PARAMETER.
pub(super) fn objects_of(
    caller: &dyn CallerProcess,
    device: KmtHandle,
    handles: &[KmtHandle],
    refused: u32,
    [unknown, denied, other_device]: [NtStatus; 3],
) -> Result<Vec<SyncObject>, NtStatus> {
    handles
        .iter()
        .map(|&h| {
            let o = caller.object(h).ok_or(unknown)?;
            if o.flags & refused != 0 {
                return Err(denied);
            }
            if o.device != device {
                return Err(other_device);
            }
            Ok(o.object)
        })
        .collect()
}

/// Whether an object stands twice among `objects` (24H2 orders the objects' locks and
/// refuses a repeat).
pub(super) fn repeats(objects: &[SyncObject]) -> bool {
    objects
        .iter()
        .enumerate()
        .any(|(i, o)| objects.iter().skip(i + 1).any(|p| same(o, p)))
}

/// Whether two entries name the same object.
fn same(a: &SyncObject, b: &SyncObject) -> bool {
    match (a, b) {
        (SyncObject::Native(x), SyncObject::Native(y)) => {
            x.adapter() == y.adapter() && x.global_handle() == y.global_handle()
        }
        (SyncObject::Monitored(x), SyncObject::Monitored(y)) => x.handle() == y.handle(),
        _ => false,
    }
}

refusals! {
    /// `D3DKMTSignalSynchronizationObjectFromCpu`'s refusals, in 24H2's order.
    SignalSynchronizationObjectFromCpuCheck => SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU_CHECKS {
        StructureUnreadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        ObjectCount: "ObjectCount 0" => INVALID_PARAMETER;
        NoPool: "no pool for ObjectCount handles and values" => NO_MEMORY;
        ArraysUnreadable: "ObjectHandleArray or FenceValueArray not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        Flags: "a Flags bit from 3 up" => INVALID_PARAMETER;
        Unknown: "a handle not a sync object in the caller's handle table" => INVALID_PARAMETER;
        NoSignal: "an object created or opened NoSignal" => ACCESS_DENIED;
        OtherDevice: "an object of another device" => INVALID_PARAMETER;
        Twice: "the same object twice" => INVALID_PARAMETER;
        StateDestroyed: "an object whose adapter state is destroyed" => INVALID_PARAMETER,
            elsewhere "not modelled: an object's adapter state lives as long as its handle";
        Rewind: "without Flags.AllowFenceRewind, a monitored fence's value below the last one \
            signalled to it (M:VidSchiSignalSyncObjectsFromCpu)" => INVALID_PARAMETER;
    }
}

/// `D3DKMTSignalSynchronizationObjectFromCpu`'s row of the thunk catalog ([`super::catalog`]).
pub const SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU: Thunk = Thunk {
    name: "D3DKMTSignalSynchronizationObjectFromCpu",
    source: Some(&[
        src("DxgkSignalSynchronizationObjectFromCpu", 0x1402B97E0),
        src("SignalSynchronizationObjectFromCpu", 0x1402BA4F8),
        src("VidSchiSignalSyncObjectsFromCpu", 0x14000EF50),
    ]),
    checks: SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("sync_from_cpu::dxgk_signal_synchronization_object_from_cpu"),
    gaps: "Flags bits 0 to 2 are accepted; of them only AllowFenceRewind's absence is acted \
           on (with it, 24H2 writes a lower value, where the simulation's fence never goes \
           back); VidSch's same refusal for a native fence (against its last CPU-signalled \
           value) is not modelled; the simulation's pool holds at most MAX_OBJECTS handles \
           (STATUS_NO_MEMORY above), 24H2's what the system has",
};

/// `DxgkSignalSynchronizationObjectFromCpu` for the caller's structure `a`, in 24H2's order:
/// 1. `ObjectCount` 0: STATUS_INVALID_PARAMETER;
/// 2. the two arrays captured from `mem` (above [`MAX_OBJECTS`], STATUS_NO_MEMORY; a fault,
///    its status);
/// 3. `hDevice` not the caller's: STATUS_INVALID_PARAMETER;
/// 4. a `Flags` bit from 3 up: STATUS_INVALID_PARAMETER;
/// 5. each object ([`CallerProcess::object`]): unknown, STATUS_INVALID_PARAMETER; created or
///    opened `NoSignal`, STATUS_ACCESS_DENIED; another device's, STATUS_INVALID_PARAMETER;
/// 6. an object twice: STATUS_INVALID_PARAMETER;
/// 7. VidSch's check before it signals (`M:VidSchSignalSyncObjectsFromCpu` @0x14001F580,
///    `M:VidSchiSignalSyncObjectsFromCpu` @0x14000EF50): without `AllowFenceRewind`, a
///    monitored fence's value below the last one the OS signalled it to
///    ([`MonitoredFence::last_signalled`]): STATUS_INVALID_PARAMETER;
/// 8. every object signalled to its value (native fences through the KMD's
///    `DxgkDdiUpdateCurrentValuesFromCpu`, NF-17). A refusal signals nothing.
pub fn dxgk_signal_synchronization_object_from_cpu(
    m: &Machine,
    a: &D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU,
    caller: &dyn CallerProcess,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    type C = SignalSynchronizationObjectFromCpuCheck;
    if a.ObjectCount == 0 {
        return Err(C::ObjectCount.refuse());
    }
    let (handles, values) = capture_both(
        mem,
        a.ObjectCount,
        a.ObjectHandleArray,
        a.FenceValueArray,
        C::NoPool.refuse(),
    )?;
    let device = caller.device(a.hDevice).ok_or(C::Device.refuse())?;
    if a.Flags & !SIGNAL_FLAGS != 0 {
        return Err(C::Flags.refuse());
    }
    let refusals = [C::Unknown, C::NoSignal, C::OtherDevice].map(C::refuse);
    let objects = objects_of(caller, device.device, &handles, NO_SIGNAL, refusals)?;
    if repeats(&objects) {
        return Err(C::Twice.refuse());
    }
    if a.Flags & ALLOW_FENCE_REWIND == 0 {
        let rewinds = |(o, &v): (&SyncObject, &u64)| match o {
            SyncObject::Monitored(f) => v < f.last_signalled(),
            SyncObject::Native(_) => false,
        };
        if objects.iter().zip(&values).any(rewinds) {
            return Err(C::Rewind.refuse());
        }
    }
    for (o, v) in objects.iter().zip(values) {
        match o {
            SyncObject::Native(f) => m.signal_native_fence_from_cpu(f, v),
            SyncObject::Monitored(f) => m.signal_monitored_fence_from_cpu(f, v),
        }
        .map_err(super::process::status)?;
    }
    Ok(())
}

/// A CPU wait 24H2 accepted: each object with the value it waits for, and whether one
/// reaching its value is enough (`WaitAny`).
pub struct CpuWait {
    /// The objects with their values.
    pub objects: Vec<(SyncObject, u64)>,
    /// `WaitAny`.
    pub any: bool,
}

refusals! {
    /// `D3DKMTWaitForSynchronizationObjectFromCpu`'s refusals, in 24H2's order.
    WaitForSynchronizationObjectFromCpuCheck => WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU_CHECKS {
        StructureUnreadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the thunk bridge copies the structure in before the entry";
        ObjectCount: "ObjectCount 0" => INVALID_PARAMETER;
        Flags: "a Flags bit other than WaitAny" => INVALID_PARAMETER;
        NoPool: "no pool for ObjectCount handles and values" => NO_MEMORY;
        ArraysUnreadable: "ObjectHandleArray or FenceValueArray not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        NotAnEvent: "hAsyncEvent not an event handle of the caller's process" => INVALID_HANDLE,
            elsewhere "the caller's event reference (`event`) answers it";
        Unknown: "a handle not a sync object in the caller's handle table" => INVALID_PARAMETER;
        NoWait: "an object created or opened NoWait" => ACCESS_DENIED;
        OtherDevice: "an object of another device" => INVALID_PARAMETER;
        StateDestroyed: "an object whose adapter state is destroyed" => INVALID_PARAMETER,
            elsewhere "not modelled: an object's adapter state lives as long as its handle";
    }
}

/// `D3DKMTWaitForSynchronizationObjectFromCpu`'s row of the thunk catalog ([`super::catalog`]).
pub const WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU: Thunk = Thunk {
    name: "D3DKMTWaitForSynchronizationObjectFromCpu",
    source: Some(&[
        src(
            "DxgkWaitForSynchronizationObjectFromCpuInternal",
            0x1402AC610,
        ),
        src("WaitForSynchronizationObjectFromCpu", 0x1402AD200),
    ]),
    checks: WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("sync_from_cpu::dxgk_wait_for_synchronization_object_from_cpu_internal"),
    gaps: "without hAsyncEvent 24H2 waits for as long as it takes (a terminating thread ends it \
           with STATUS_DEVICE_REMOVED); the simulation gives up with STATUS_IO_TIMEOUT once \
           every fence has stood still for its wait limit (a hang); the simulation's pool holds at most MAX_OBJECTS handles \
           (STATUS_NO_MEMORY above)",
};

/// `DxgkWaitForSynchronizationObjectFromCpuInternal`'s checks for the caller's structure `a`,
/// in 24H2's order:
/// 1. `ObjectCount` 0, then a `Flags` bit other than `WaitAny`: STATUS_INVALID_PARAMETER;
/// 2. the two arrays captured from `mem` (above [`MAX_OBJECTS`], STATUS_NO_MEMORY; a fault,
///    its status);
/// 3. `hDevice` not the caller's: STATUS_INVALID_PARAMETER;
/// 4. the device not active (`K:WaitForSynchronizationObjectFromCpu` @0x1402AD200 reads
///    DXGDEVICE +608 under the device's and the adapter's core access, before the event:
///    `lock::device_active`): STATUS_DEVICE_REMOVED;
/// 5. `hAsyncEvent`, when given, referenced by `event` (its status: not an event handle of
///    the caller's process is STATUS_INVALID_HANDLE);
/// 6. each object: unknown, STATUS_INVALID_PARAMETER; created or opened `NoWait`,
///    STATUS_ACCESS_DENIED; another device's, STATUS_INVALID_PARAMETER.
///
/// The wait itself is the caller's ([`CpuWait`]): the event form returns at once, the other
/// blocks until the condition holds.
pub fn dxgk_wait_for_synchronization_object_from_cpu_internal(
    m: &Machine,
    a: &D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU,
    caller: &dyn CallerProcess,
    mem: &dyn CallerMemory,
    event: &dyn Fn(u64) -> Result<(), NtStatus>,
) -> Result<CpuWait, NtStatus> {
    type C = WaitForSynchronizationObjectFromCpuCheck;
    if a.ObjectCount == 0 {
        return Err(C::ObjectCount.refuse());
    }
    if a.Flags & !WAIT_ANY != 0 {
        return Err(C::Flags.refuse());
    }
    let (handles, values) = capture_both(
        mem,
        a.ObjectCount,
        a.ObjectHandleArray,
        a.FenceValueArray,
        C::NoPool.refuse(),
    )?;
    let device = caller.device(a.hDevice).ok_or(C::Device.refuse())?;
    let sh = m
        .adapter_shared(device.adapter)
        .map_err(|_| C::DeviceActive.refuse())?;
    super::lock::device_active(sh, device.device, C::DeviceActive.refuse())?;
    if a.hAsyncEvent != 0 {
        event(a.hAsyncEvent)?;
    }
    let refusals = [C::Unknown, C::NoWait, C::OtherDevice].map(C::refuse);
    let objects = objects_of(caller, device.device, &handles, NO_WAIT, refusals)?;
    Ok(CpuWait {
        objects: objects.into_iter().zip(values).collect(),
        any: a.Flags & WAIT_ANY != 0,
    })
}

/// The Rust UMD's arrays as a caller's memory: the hardware queues at [`HostArrays::QUEUES`],
/// the handles at [`HostArrays::HANDLES`], the values at [`HostArrays::VALUES`] (the addresses
/// the structure it builds names).
pub struct HostArrays {
    queues: Vec<u8>,
    handles: Vec<u8>,
    values: Vec<u8>,
}

impl HostArrays {
    /// Where the handles are.
    pub const HANDLES: u64 = 0x1000;
    /// Where the values are.
    pub const VALUES: u64 = 0x2000;
    /// Where the hardware queues are.
    pub const QUEUES: u64 = 0x3000;

    /// One object's handle and value.
    pub fn one(h: KmtHandle, value: u64) -> Self {
        Self::of(&[], &[(h, value)])
    }

    /// `queues`, and each object's handle and value.
    pub fn of(queues: &[KmtHandle], fences: &[(KmtHandle, u64)]) -> Self {
        Self {
            queues: queues.iter().flat_map(|q| q.to_le_bytes()).collect(),
            handles: fences.iter().flat_map(|(h, _)| h.to_le_bytes()).collect(),
            values: fences.iter().flat_map(|(_, v)| v.to_le_bytes()).collect(),
        }
    }
}

impl CallerMemory for HostArrays {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let bytes = match at {
            Self::QUEUES => &self.queues,
            Self::HANDLES => &self.handles,
            Self::VALUES => &self.values,
            _ => return Err(NtStatus(STATUS_INVALID_PARAMETER)),
        };
        bytes
            .get(..size as usize)
            .map(<[u8]>::to_vec)
            .ok_or(NtStatus(STATUS_INVALID_PARAMETER))
    }
    fn write(&self, _at: u64, _bytes: &[u8]) -> Result<(), NtStatus> {
        Err(NtStatus(STATUS_INVALID_PARAMETER))
    }
}

/// The Rust UMD's process: its one device and that device's sync objects, each monitored
/// fence with the flags the OS keeps on it (the UMD opens no native fence with `NoSignal` or
/// `NoWait`).
impl CallerProcess for super::process::SimKmt<'_> {
    fn device(&self, h: KmtHandle) -> Option<UmsProcess> {
        self.own_device(h)
    }
    fn object(&self, h: KmtHandle) -> Option<CallerObject> {
        let p = self.process();
        sync_object_of(self.machine(), &p, h).map(|object| CallerObject {
            device: p.device,
            flags: object.monitored_flags().unwrap_or(0),
            object,
        })
    }
}

impl super::process::SimKmt<'_> {
    /// `D3DKMTSignalSynchronizationObjectFromCpu` of one sync object of this device, through
    /// the thunk's kernel entry with the structure the UMD's Windows thunk fills.
    pub fn signal_fence_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        self.thunk()?;
        let a = D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU {
            hDevice: self.process().device,
            ObjectCount: 1,
            ObjectHandleArray: HostArrays::HANDLES,
            FenceValueArray: HostArrays::VALUES,
            ..Default::default()
        };
        let mem = HostArrays::one(fence, value);
        dxgk_signal_synchronization_object_from_cpu(self.machine(), &a, self, &mem)
    }

    /// The checks of `D3DKMTWaitForSynchronizationObjectFromCpu` for one object of this device
    /// (no event: the UMD's blocking wait), through the thunk's kernel entry.
    pub(super) fn check_cpu_wait(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        let a = D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
            hDevice: self.process().device,
            ObjectCount: 1,
            ObjectHandleArray: HostArrays::HANDLES,
            FenceValueArray: HostArrays::VALUES,
            ..Default::default()
        };
        let mem = HostArrays::one(fence, value);
        let no_event = |_| Err(NtStatus(STATUS_INVALID_PARAMETER));
        dxgk_wait_for_synchronization_object_from_cpu_internal(
            self.machine(),
            &a,
            self,
            &mem,
            &no_event,
        )
        .map(|_| ())
    }
}
