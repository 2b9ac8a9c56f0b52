//! The OS's user-mode-submission objects and their adapter-wide table ([`UmsOs`]), D3DKMT
//! and OS kernel handles.

pub mod events;
pub mod mapping;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rvgpu_ddi::basic::POWER_ACTION;
use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS;
use rvgpu_ddi::init::PDXGKDDI_SUBMITCOMMANDTOHWQUEUE;
use rvgpu_ddi::submission::{
    DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS, DXGK_USERMODESUBMISSION_CAPS,
};

use crate::adapter::slot::Of;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::state::sync::fence::{MonitoredFence, NativeFence, SimEvent};
use crate::state::vidmm::AllocObj;

use self::events::UmsEvent;
use self::mapping::DoorbellCpuState;
use crate::ob::{HandleMap, KmtHandle};

/// `DISPLAY_ADAPTER_HW_ID`: the device UID SetPowerState uses for the adapter itself.
pub const DISPLAY_ADAPTER_HW_ID: u32 = 0xFFFF_FFFF;
/// `PowerActionNone`: runtime (not system-wide) power transitions.
pub const POWER_ACTION_NONE: POWER_ACTION = 0;

/// Processes.
pub(crate) static NEXT_PROCESS: AtomicU32 = AtomicU32::new(0x1000);

/// A new D3DKMT handle in `process`'s handle table ([`crate::ob::LocalHandles`]).
pub(crate) use crate::ob::new_kmt_handle as new_handle;

/// The table adapter handles of user-mode images come from: the PE bridge opens an adapter
/// before the process has a device, and the simulated OS's processes are its devices.
#[cfg(target_os = "linux")]
pub(crate) const ADAPTER_OPENERS: ProcessId = ProcessId(1);

/// A new adapter handle for a user-mode image (`D3DKMTOpenAdapterFromLuid`).
#[cfg(target_os = "linux")]
pub(crate) fn new_adapter_handle() -> Result<KmtHandle, crate::base::error::SimError> {
    new_handle(ADAPTER_OPENERS)
}

/// The OS kernel handle of the object with D3DKMT handle `h` (what the KMD gets as input).
pub fn kernel_handle(h: KmtHandle) -> usize {
    KERNEL_HANDLE_BASE | ((h as usize) << 4)
}

pub(crate) const KERNEL_HANDLE_BASE: usize = 0x7D00_0000_0000;

/// The D3DKMT handle whose [`kernel_handle`] is `k`, if `k` is one.
pub(crate) fn from_kernel_handle(k: usize) -> Option<KmtHandle> {
    let h = KmtHandle::try_from((k & !KERNEL_HANDLE_BASE) >> 4).ok()?;
    (kernel_handle(h) == k).then_some(h)
}

impl UmsOs {
    /// The live doorbells `handle` names, as the KMD's handle or the OS kernel handle, in
    /// D3DKMT handle order (an index lookup, not a scan of every doorbell).
    pub(crate) fn doorbells_named(&self, handle: usize) -> Vec<KmtHandle> {
        let mut v: Vec<KmtHandle> = self
            .doorbell_by_kmd
            .range((handle, KmtHandle::MIN)..=(handle, KmtHandle::MAX))
            .map(|&(_, h)| h)
            .collect();
        if let Some(h) = from_kernel_handle(handle).filter(|h| self.doorbells.contains_key(h)) {
            if !v.contains(&h) {
                v.push(h);
                v.sort_unstable();
            }
        }
        v
    }
}

/// Doorbell connection state as the OS sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellState {
    /// Created or disconnected (`DISCONNECTED_RETRY` on the status page).
    Disconnected,
    /// Connected to physical doorbell `page`.
    Connected {
        /// BAR2 page.
        page: u32,
    },
    /// Disconnected for good (`DISCONNECTED_ABORT`).
    Aborted,
}

#[derive(Debug)]
pub(crate) struct DeviceObj {
    pub(crate) kmd: usize,
    /// Serialises the thunks of this device (Dxgkrnl's per-device lock).
    pub(crate) lock: Arc<Mutex<()>>,
    pub(crate) process: ProcessId,
    /// Why VidSch put the device in error, the first reason only (`M:VidSchiMarkDeviceAsError`
    /// @0x14001FF30 keeps the first: a compare-exchange against 0); `None` while it is not.
    pub(crate) error: Option<DeviceError>,
    /// The DXGDEVICE's state (+608); VidSch's error does not touch it.
    pub(crate) state: DxgDeviceState,
}

/// A DXGDEVICE's state (+608), which `K:COREDEVICEACCESS::AcquireShared` @0x14000F550 reads
/// (anything but active is STATUS_DEVICE_REMOVED) and `K:DXGDEVICE::GetDeviceExecutionState`
/// @0x1402ABBB0 answers from before VidSch's reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DxgDeviceState {
    /// 1.
    Active,
    /// 2: reset with its adapter (`K:DXGDEVICE::Reset` @0x1401BB7FC, from
    /// `K:ADAPTER_RENDER::Reset` @0x1403F2C34); read back as RESET.
    Reset,
    /// 3: reset with its adapter while VidSch reported it hung; read back as HUNG.
    Hung,
    /// 4: stopped with its adapter (`K:DXGDEVICE::Stop` @0x1401BBA38); read back as STOPPED.
    Stopped,
}

/// A device's error reason as VidSch records it (`M:VidSchiMarkDeviceAsError` @0x14001FF30's
/// third argument), read back by `K:DXGDEVICE::GetDeviceExecutionState` @0x1402ABBB0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceError {
    /// 7: the device whose work hung the engine (`M:VidSchiMarkTdrFaultingDevice`
    /// @0x1400A8050, from `M:VidSchiReportHwHang` @0x140044F38).
    Hung,
    /// 9: a hardware queue's page fault (`M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0).
    PageFault,
    /// 14: flushed for good at its process's teardown (`M:VidSchFlushDevice` @0x1400B5320).
    Flushed,
    /// 19: a submission the driver refused (`M:SubmitRenderToHwQueue` @0x14000E8B0, whose call
    /// of `VidSchiMarkDeviceAsError` 24H2's pseudocode shows without its arguments; 19 is the
    /// 22631 build's, `SubmitRenderToHwQueue` @0x1C00410D0).
    SubmitRefused,
    /// Another VidSch reason that suspends nothing: 12, a `MustSucceed` MakeResident over budget
    /// (`M:VIDMM_GLOBAL::MakeResident` @0x1400B93C8); 0xB, an Evict naming a foreign handle
    /// (`K:DxgkEvictInternal` @0x14035E31C). Read back as out of memory.
    Other(u32),
    /// 22: reset with its adapter (`K:DXGDEVICE::Reset` @0x1401BB7FC marks a device VidSch
    /// does not report hung with 22; 26 when not called from a TDR).
    Reset,
    /// The adapter removed under the device: no VidSch reason; 24H2 stops the DXGDEVICE
    /// (`K:DXGDEVICE::Stop` @0x1401BBA38, from `K:ADAPTER_RENDER::Stop` @0x14019FC38, state 4),
    /// read back as STOPPED.
    Removed,
}

impl DeviceObj {
    /// The device goes to error for `why`; a device already in error keeps its first reason.
    pub(crate) fn mark_error(&mut self, why: DeviceError) {
        self.error.get_or_insert(why);
    }

    /// Whether VidSch put the device in error (it has a reason).
    pub(crate) fn in_error(&self) -> bool {
        self.error.is_some()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Suspended {
    No,
    /// By a power-down (resumed at power-up).
    Power,
    /// By [`Machine::suspend_context`] (resumed by [`Machine::resume_context`]).
    Os,
    /// By an abnormal exit (never resumed).
    Exit,
}

#[derive(Debug)]
pub(crate) struct ContextObj {
    pub(crate) handle: KmtHandle,
    /// The KMD's handle; 0 for a context the KMD never heard of: 24H2
    /// `K:DXGCONTEXT::Initialize` @0x1402CFD80 calls no `DxgkDdiCreateContext` for a
    /// `NoKmdAccess` or `SynchronizationOnly` one, and every DDI that would name it is skipped.
    pub(crate) kmd: usize,
    pub(crate) device: KmtHandle,
    pub(crate) node: u32,
    pub(crate) suspended: Suspended,
    pub(crate) suspend_fence: u64,
    /// The last suspend fence known complete: `suspend_fence` once `DxgkDdiSuspendContext`
    /// succeeded (24H2 keeps the pair in the hardware context; a `DxgkDdiResetHwEngine` that
    /// leaves them apart is bug check 0x119 / 0xA000, `crate::vidsch::tdr`'s hwsched).
    pub(crate) suspend_done: u64,
    /// Created with `HwQueueSupported` (BR-92/94).
    pub(crate) hw_queue: bool,
    /// Created with `SynchronizationOnly` (24H2 `K:DxgkSubmitCommandInternal` @0x1402A4B90
    /// refuses to submit on it).
    pub(crate) sync_only: bool,
    /// Created with `NoKmdAccess` (test signing only): VidSch marks its hardware context so
    /// (`DXGCONTEXT::Initialize` passes the flag on) and calls no DDI for it.
    pub(crate) no_kmd_access: bool,
    /// Created with `DisableGpuTimeout` (`K:DXGHWQUEUE::Initialize` @0x1402BBA30 hands it on
    /// to the context's kernel-submission queues).
    pub(crate) disable_gpu_timeout: bool,
    /// The KMD's `DXGK_CONTEXTINFO::DmaBufferPrivateDataSize`: the most private data a
    /// submission on the context may carry (24H2 `K:DXGHWQUEUE::SubmitCommand` @0x1402C6610).
    pub(crate) dma_private_data: u32,
    /// The root last given by `DxgkDdiSetRootPageTable` (segment, offset); `None` until
    /// then (24H2 keeps it in the context and resends only a different one,
    /// `M:VidSchiEnsureRootPageTableUpdated` @0x1400EAF40).
    pub(crate) root_sent: Option<(u32, u64)>,
    /// VidMm's root generation when `root_sent` was last found current (`u64::MAX`: never):
    /// while it matches, no process root changed and VidSch's root step is a compare.
    pub(crate) root_seen: u64,
    /// Dxgkrnl's context handle block, the driver's input `hContext` (`crate::ums`'s context
    /// module).
    pub(crate) dxg: DxgContext,
}

/// Dxgkrnl's context handle block (`m_pDxgkrnlContextHandle`, 16 bytes): +0 the
/// `DXGCONTEXT`, +8 VidSch's hardware context, which only a `HwQueueSupported` context has
/// (0 otherwise: the block is allocated zeroed). 24H2 `K:DXGCONTEXT::Initialize` @0x1402CFD80
/// passes its address as `DXGKARG_CREATECONTEXT::hContext`; `K:DxgkInvalidateHwContextCB`
/// @0x14006C2E0 reads +8 of the handle the driver gives back.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct DxgContextBlock {
    /// +0.
    pub(crate) dxgcontext: AtomicU64,
    /// +8.
    pub(crate) hw_context: AtomicU64,
}

const _: () = assert!(std::mem::offset_of!(DxgContextBlock, hw_context) == 8);
const _: () = assert!(std::mem::size_of::<DxgContextBlock>() == 16);

/// The part of VidSch's hardware context the invalidation reaches: the context it schedules.
#[derive(Debug)]
pub(crate) struct VidSchHwContext {
    /// The D3DKMT context.
    pub(crate) context: KmtHandle,
}

/// A context's handle block with the objects it points at, on the heap: their addresses stay
/// put while the context lives.
#[derive(Debug)]
pub(crate) struct DxgContext {
    block: Box<DxgContextBlock>,
    /// The `DXGCONTEXT` +0 points at (the D3DKMT context stands in for it).
    _object: Box<KmtHandle>,
    hw: Option<Box<VidSchHwContext>>,
}

impl DxgContext {
    /// The block of context `context`; +8 set when it has a hardware context.
    pub(crate) fn new(context: KmtHandle, hw_context: bool) -> Self {
        let object = Box::new(context);
        let hw = hw_context.then(|| Box::new(VidSchHwContext { context }));
        let block = Box::new(DxgContextBlock {
            dxgcontext: AtomicU64::new(&*object as *const KmtHandle as usize as u64),
            hw_context: AtomicU64::new(
                hw.as_deref()
                    .map_or(0, |h| h as *const VidSchHwContext as usize as u64),
            ),
        });
        Self {
            block,
            _object: object,
            hw,
        }
    }

    /// Its address: the driver's input `hContext`.
    pub(crate) fn addr(&self) -> usize {
        &*self.block as *const DxgContextBlock as usize
    }

    /// What Dxgkrnl reads at +8 and VidSch then finds there: the context of the hardware
    /// context, or `None` for a block whose +8 is 0.
    pub(crate) fn follow(&self) -> Option<KmtHandle> {
        let at = self.block.hw_context.load(Ordering::Acquire) as usize;
        let hw = self.hw.as_deref()?;
        debug_assert_eq!(at, hw as *const VidSchHwContext as usize);
        (at != 0).then_some(hw.context)
    }
}

#[derive(Debug)]
pub(crate) struct QueueObj {
    pub(crate) handle: KmtHandle,
    /// Dxgkrnl's queue object: its address is the `hHwQueue` the driver got at creation.
    pub(crate) dxg: DxgHwQueue,
    pub(crate) device: KmtHandle,
    pub(crate) context: KmtHandle,
    pub(crate) node: u32,
    pub(crate) user_mode: bool,
    /// The progress fence's handle; `None` for a user-mode queue on an OS that gives it none
    /// ([`crate::os::answers::UmsProgress::None`]). The fence is [`HwqSched::progress`].
    pub(crate) fence: Option<KmtHandle>,
    /// The native fence the OS made the progress fence
    /// ([`crate::os::answers::ProgressFence`]): over `progress`'s value, whose monitored
    /// view keeps the OS's own waits.
    pub(crate) native_progress: Option<NativeFence>,
    pub(crate) doorbell: Option<KmtHandle>,
    pub(crate) queue_id: Option<u32>,
    /// MF-03: the OS-side list of this kernel-mode queue (GPU waits, held submissions, signal
    /// packets), with what a submission needs of the queue: its driver handle, progress fence
    /// and last-queued cell.
    pub(crate) sched: Arc<HwqSched>,
    /// Its place among the adapter's queues by creation ([`UmsOs::queues_created`] then).
    pub(crate) created: u64,
}

impl QueueObj {
    /// The driver's handle of the queue ([`HwqSched::kmd`]).
    pub(crate) fn kmd(&self) -> usize {
        self.sched.kmd
    }

    /// The progress fence, if the OS gave the queue one ([`HwqSched::progress`]).
    pub(crate) fn progress(&self) -> Option<&MonitoredFence> {
        self.sched.progress.as_ref()
    }

    /// The last-queued cell ([`HwqSched::last_queued`]).
    pub(crate) fn last_queued(&self) -> &AtomicU64 {
        &self.sched.last_queued
    }

    /// The progress fence's value, if the OS gave the queue one.
    pub(crate) fn completed(&self) -> Option<u64> {
        self.progress().map(MonitoredFence::value)
    }

    /// UM-16: whether the OS can see work outstanding on the queue (never, without a progress
    /// fence).
    pub(crate) fn known_work(&self) -> bool {
        self.completed()
            .is_some_and(|c| self.last_queued().load(Ordering::Acquire) > c)
    }
}

/// The part of VidSch's queue (`VIDSCH_HW_QUEUE`) a report reaches through Dxgkrnl's queue.
#[derive(Debug)]
pub(crate) struct VidSchHwQueue {
    /// The D3DKMT queue it schedules.
    pub(crate) queue: KmtHandle,
}

/// The head of Dxgkrnl's `DXGHWQUEUE` as VidSch's DPCs follow it from an interrupt report:
/// +32 the driver's handle (written when `DxgkDdiCreateHwQueue` returns), +40 VidSch's queue
/// (`K:DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C and `K:DXGHWQUEUE::Initialize`
/// @0x1402BBA30 pass `this` as the DDI's `hHwQueue`, then store those two).
#[repr(C)]
#[derive(Debug)]
pub(crate) struct DxgHwQueueHead {
    _before: [usize; 4],
    /// +32.
    pub(crate) driver: AtomicU64,
    /// +40: the address of the VidSch queue below.
    pub(crate) vidsch: AtomicU64,
}

const _: () = assert!(std::mem::offset_of!(DxgHwQueueHead, driver) == 32);
const _: () = assert!(std::mem::offset_of!(DxgHwQueueHead, vidsch) == 40);

/// Dxgkrnl's queue object and the VidSch queue it references, on the heap: their addresses stay
/// put while the queue lives (and after, see [`UmsOs::retired_dxg_queues`]).
#[derive(Debug)]
pub(crate) struct DxgHwQueue {
    head: Box<DxgHwQueueHead>,
    vidsch: Box<VidSchHwQueue>,
}

impl DxgHwQueue {
    /// A new object for queue `queue`, its driver handle not known yet.
    pub(crate) fn new(queue: KmtHandle) -> Self {
        let vidsch = Box::new(VidSchHwQueue { queue });
        let head = Box::new(DxgHwQueueHead {
            _before: [0; 4],
            driver: AtomicU64::new(0),
            vidsch: AtomicU64::new(&*vidsch as *const VidSchHwQueue as usize as u64),
        });
        Self { head, vidsch }
    }

    /// Its address: what the driver gets as the input `hHwQueue`.
    pub(crate) fn addr(&self) -> usize {
        &*self.head as *const DxgHwQueueHead as usize
    }

    /// Stores the driver's handle at +32.
    pub(crate) fn set_driver(&self, kmd: usize) {
        self.head.driver.store(kmd as u64, Ordering::Release);
    }

    /// What a VidSch DPC reads through the object: the driver's handle (+32) and, through
    /// +40, the queue VidSch schedules.
    pub(crate) fn follow(&self) -> (usize, KmtHandle) {
        let driver = self.head.driver.load(Ordering::Acquire) as usize;
        debug_assert_eq!(
            self.head.vidsch.load(Ordering::Acquire) as usize,
            &*self.vidsch as *const VidSchHwQueue as usize
        );
        (driver, self.vidsch.queue)
    }
}

/// One entry of a kernel-mode queue's OS-side list (MF-03).
#[derive(Debug)]
pub(crate) enum Pending {
    /// A `SubmitCommandToHwQueue` the OS holds behind an earlier GPU wait.
    Submit { value: u64, gpu: u64, bytes: u32 },
    /// A GPU wait (`SubmitWaitForSyncObjectsToHwQueue`, one entry per object): holds every later
    /// entry until `fence` reaches `value`. `event` is the VidSch-side waiter on the fence
    /// (its resume queues [`pump`] on VidSch's worker).
    Wait {
        fence: QueueFence,
        handle: KmtHandle,
        value: u64,
        event: SimEvent,
    },
    /// A signal packet (`SubmitSignalSyncObjectsToHwQueue`).
    Signal(Signal),
}

/// A sync object a hardware queue's wait or signal packet names: 24H2 takes a device's
/// monitored fences and its native fences alike (`K:SubmitSignalSyncObjectsToHwQueue`
/// @0x1403260EC and `K:SubmitWaitForSyncObjectsFromGpu` @0x1402AF2F0 look both up as device
/// sync objects; VidSch's packets handle its native type, `M:VidSchiSignalSyncObject`
/// @0x140032A90 and `M:VidSchiCompleteSignalSyncObject` @0x14000F8C0).
#[derive(Clone, Debug)]
pub(crate) enum QueueFence {
    /// A legacy monitored fence (a queue's progress fence among them).
    Monitored(MonitoredFence),
    /// A native fence instance of the device's process.
    Native(NativeFence),
}

/// A signal packet: signals `fences` once the queue's progress fence reaches `after` (the last
/// progress value accepted before it: every earlier submission completed).
#[derive(Debug)]
pub(crate) struct Signal {
    pub(crate) fences: Vec<(QueueFence, KmtHandle, u64)>,
    pub(crate) after: u64,
    /// The waiter on the progress fence for `after` (if it had not been reached).
    pub(crate) event: Option<SimEvent>,
    /// A broadcast to several queues: how many of its packets have not yet fired; the last
    /// one signals the fences (`M:VidSchSubmitSignalToHwQueue` @0x140031EF0 puts one packet
    /// on each queue).
    pub(crate) rest: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

/// The OS-side scheduling state of one kernel-mode queue (MF-03).
#[derive(Debug, Default)]
pub(crate) struct HwqSched {
    /// Serialises [`pump`] runs (the thunk's thread and VidSch's worker): entries reach the KMD
    /// in order.
    pub(crate) pump: Mutex<()>,
    /// A GPU wait or a signal's predecessors were satisfied: VidSch's worker pumps the queue.
    pub(crate) kicked: std::sync::atomic::AtomicBool,
    pub(crate) st: Mutex<HwqSchedState>,
    /// Held across each `DxgkDdiSubmitCommandToHwQueue` on the queue, and by its destroy
    /// across `DxgkDdiDestroyHwQueue`; `true` from just before that DDI, so that a submission
    /// which found the queue before the destroy and waited here never hands the KMD the
    /// destroyed `hHwQueue`.
    pub(crate) submit: Mutex<bool>,
    /// The last progress value the OS accepted for the queue (submitted or held): raised
    /// with `fetch_max` (AcqRel), a held submission's under [`Self::st`] together with its
    /// entry, a direct one's without the lock once the KMD took it; a signal reads it
    /// (Acquire), then queues under [`Self::st`], behind any held entry whose value it read
    /// (`tests/models/tests/mf_03_accepted_value.rs`).
    pub(crate) accepted: std::sync::atomic::AtomicU64,
    /// The adapter's "some queue may be due" hint ([`UmsOs::hwq_due`]), set with every kick
    /// and ring-full retry, so the worker looks at the queues only when one may need it.
    pub(crate) due_hint: Arc<std::sync::atomic::AtomicBool>,
    /// The queue's driver handle (`hHwQueue` of `DxgkDdiCreateHwQueue`'s output). It lives
    /// here, with the progress fence and the last-queued cell, so that a submission holds all
    /// it needs of the queue with one count.
    pub(crate) kmd: usize,
    /// The queue's progress fence (`None`: a user-mode queue the OS gave none), held by a
    /// submission until the DDI returns: a destroy meanwhile does not free it.
    pub(crate) progress: Option<MonitoredFence>,
    /// User-mode queues: the UMD's `HwQueueProgressFenceLastQueuedValue` cell; kernel-mode
    /// queues: the last value the OS submitted.
    pub(crate) last_queued: Arc<AtomicU64>,
    /// `DxgkDdiSubmitCommandToHwQueue` as the driver's table held it when the queue was
    /// created (`None`: an empty slot). A queue lives within one load of the driver (an
    /// adapter is stopped with its queues destroyed before it is removed, and the driver is
    /// unloaded only once every adapter is removed), so the table does not change under it
    /// and a submission reads the pointer here instead of locking the table.
    pub(crate) submit_ddi: Option<Of<PDXGKDDI_SUBMITCOMMANDTOHWQUEUE>>,
}

impl HwqSched {
    /// Kicks the queue: VidSch's worker pumps it at its next run.
    pub(crate) fn kick(&self) {
        self.kicked.store(true, Ordering::Release);
        self.due_hint.store(true, Ordering::Release);
    }

    /// A ring-full retry is pending (the worker polls the progress fence for it).
    pub(crate) fn retry_pending(&self) -> bool {
        lock(&self.st).retry_at.is_some()
    }

    /// Whether VidSch's worker has something to do for this queue (`take`: clears the kick).
    pub(crate) fn due(&self, progress: Option<&MonitoredFence>, take: bool) -> bool {
        let kicked = if take {
            self.kicked.swap(false, Ordering::AcqRel)
        } else {
            self.kicked.load(Ordering::Acquire)
        };
        kicked
            || lock(&self.st)
                .retry_at
                .is_some_and(|v| progress.is_some_and(|p| p.value() >= v))
    }
}

#[derive(Debug, Default)]
pub(crate) struct HwqSchedState {
    pub(crate) list: VecDeque<Pending>,
    /// Signals at the head of the list whose earlier submissions are with the KMD but not
    /// complete; they do not hold later work.
    pub(crate) armed: Vec<Signal>,
    /// A held submission the KMD refused (its ring was full) is retried once the queue's
    /// progress fence reaches this value (the worker polls it).
    pub(crate) retry_at: Option<u64>,
    /// The queue is being destroyed: nothing more goes to the KMD.
    pub(crate) dead: bool,
}

#[derive(Debug)]
pub(crate) struct DoorbellObj {
    pub(crate) handle: KmtHandle,
    pub(crate) kmd: usize,
    pub(crate) device: KmtHandle,
    pub(crate) queue: KmtHandle,
    pub(crate) ring: KmtHandle,
    pub(crate) control: KmtHandle,
    pub(crate) state: DoorbellState,
    /// A `DxgkDdiConnectDoorbell` is in flight: `Some(None)`; the KMD disconnected the
    /// doorbell (callback) before the OS committed that connect: `Some(Some(reason))`.
    pub(crate) connecting: Option<Option<D3DDDI_DOORBELLSTATUS>>,
    pub(crate) cpu: Arc<DoorbellCpuState>,
}

/// Power state of the adapter as the OS drives it (UM-14).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    /// D0.
    D0,
    /// D3 (after [`Machine::power_down`](crate::Machine::power_down)).
    D3,
}

/// A node's power component as PoFx holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeFState {
    /// Its F-state (0 = F0).
    pub(crate) now: u32,
    /// A change is under way: set in the look that decides it, cleared in the one that
    /// records it. An active reference taken without the F-state lock
    /// ([`crate::ums::power`]'s fast path) needs F0 with no change in flight.
    pub(crate) changing: bool,
}

impl NodeFState {
    /// F0 with no change under way.
    pub(crate) const F0: Self = Self {
        now: 0,
        changing: false,
    };
}

/// Per-adapter user-mode submission state of the OS.
#[derive(Debug)]
pub struct UmsOs {
    /// `DxgkDdiGetNodeMetadata` per node, from adapter start (empty without the DDI).
    pub node_metadata: Vec<DXGK_NODEMETADATA>,
    /// `DXGKQAITYPE_USERMODESUBMISSION_CAPS` from adapter start, if answered.
    pub caps: Option<DXGK_USERMODESUBMISSION_CAPS>,
    /// Runtime power management started (`dxgkrnl::power`: the cap set, at least one
    /// component registered, `PREPARE_TO_START`/`STARTED` sent).
    pub(crate) runtime_pm: bool,
    pub(crate) power: Power,
    /// Each node's power component as PoFx holds it; every node starts in F0.
    pub(crate) fstate: Vec<NodeFState>,
    /// Node → the `DXGK_POWER_COMPONENT_INDEX` of its engine component, if the driver
    /// registered one (`dxgkrnl::power`).
    pub(crate) node_component: Vec<Option<u32>>,
    /// Active references per node (PoFx `SetPowerComponentActive`): kernel-path submissions
    /// and doorbell connects in progress hold the node in F0 ([`node_active`]).
    pub(crate) node_active: Vec<u32>,
    /// Active references the driver holds per node (`DxgkCbSetPowerComponentActive` minus
    /// `Idle` on the node's component): with one held the node stays F0 and the adapter D0.
    pub(crate) driver_active: Vec<u32>,
    /// Nodes whose F1 request found them busy: F1 follows once the OS sees them idle (PoFx
    /// idles a component when its last active reference goes), unless new work arrives
    /// first (the engine then asks again when it next idles).
    pub(crate) f1_deferred: Vec<u32>,
    /// The power components the driver registered at start.
    pub(crate) power_components: Vec<rvgpu_ddi::power::DXGK_POWER_RUNTIME_COMPONENT>,
    pub(crate) devices: BTreeMap<KmtHandle, DeviceObj>,
    pub(crate) contexts: BTreeMap<KmtHandle, ContextObj>,
    pub(crate) queues: HandleMap<QueueObj>,
    /// Queues created so far: the next one's [`QueueObj::created`].
    pub(crate) queues_created: u64,
    /// The adapter removed (UM-10, `ums::device_removed`): Dxgkrnl's `COREDEVICEACCESS`
    /// finds it not active, and a kernel-mode submission is `STATUS_DEVICE_REMOVED` before
    /// VidSch sees it.
    /// Not PnP's `Life`: it has no removed state, and UM-10's removal comes without a PnP event.
    pub(crate) removed: bool,
    pub(crate) allocations: BTreeMap<KmtHandle, AllocObj>,
    /// Allocation handles already in their process's table whose objects are still being
    /// built: handle → (process, the driver's handle). 24H2 gives an allocation its handle
    /// (`K:DXGDEVICE::CreateAllocationObjects` @0x1403321F0) before
    /// `DxgkDdiCreateAllocation` and the creator's `DxgkDdiOpenAllocation` run
    /// (`K:DXGDEVICE::CreateAllocation` @0x140356E10), so `DxgkCbGetHandleData` resolves it
    /// from inside that open.
    pub(crate) creating: BTreeMap<KmtHandle, (ProcessId, usize)>,
    /// Allocations no one references any more, waiting for VidMm to unmap and free them
    /// ([`crate::machine::Machine::reap_allocations`]).
    pub(crate) reaped: Vec<AllocObj>,
    /// Held by whoever is releasing what `reaped` held, for the whole loop: a reap that
    /// returns has seen every allocation freed before it called released, also those another
    /// thread took first. A process exit counts on that before it unmaps what its space still
    /// maps and drops the space.
    pub(crate) reap_serial: Arc<Mutex<()>>,
    pub(crate) doorbells: HandleMap<DoorbellObj>,
    /// The live doorbells by the KMD's handle, `(kmd handle, D3DKMT handle)`, so
    /// that `DxgkCbDisconnectDoorbell` finds its doorbell without scanning every doorbell
    /// (a victimising connect cost grew with the queues). Ordered like `doorbells`, so two
    /// doorbells the driver gave one handle resolve as a scan would (the lower handle).
    pub(crate) doorbell_by_kmd: std::collections::BTreeSet<(usize, KmtHandle)>,
    pub(crate) fences: BTreeMap<KmtHandle, MonitoredFence>,
    /// Some kernel-mode queue may be due for VidSch's worker (kicked, or a ring-full retry
    /// pending): without it the worker and the idle check skip the queues, which they
    /// scanned at every run (setting up N queues cost O(N²)).
    pub(crate) hwq_due: Arc<std::sync::atomic::AtomicBool>,
    /// The process each fence handle belongs to: D3DKMT handles are per process, so another
    /// process naming the same number names nothing (B signalled and waited A's
    /// fences by guessing handles).
    pub(crate) fence_owner: BTreeMap<KmtHandle, ProcessId>,
    /// The device each created or opened monitored-fence handle registered with, whose error
    /// signals it (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC registers with the
    /// creating or opening device's VidSch device). Progress fences go by their queue's device.
    pub(crate) fence_device: BTreeMap<KmtHandle, KmtHandle>,
    pub(crate) events: Vec<UmsEvent>,
    /// Handles (the KMD's and the OS kernel handle) of destroyed doorbells -> D3DKMT handle,
    /// for the callback's diagnostics (a handle used after its destroy returned).
    pub(crate) destroyed_doorbells: std::collections::HashMap<usize, KmtHandle>,
    /// Dxgkrnl's objects of destroyed queues, by address (a late page-fault report may name
    /// one). Kept, not freed: a new queue never gets a destroyed one's address.
    pub(crate) retired_dxg_queues: std::collections::HashMap<usize, DxgHwQueue>,
    /// Native progress fences of destroyed queues, destroyed once the thunk's locks are
    /// released (their pages leave the process by paging, [`hwqueue::reap_progress_fences`]).
    pub(crate) retired_progress: Vec<NativeFence>,
    /// PASSIVE work the DPC queued (engine F1 requests).
    pub(crate) work: VecDeque<u32>,
    /// Page faults reported at DPC time, for PASSIVE: (the queue, VA).
    pub(crate) faulted: VecDeque<(KmtHandle, u64)>,
    /// Processes whose user-mode process holds them open on this adapter: their adapter
    /// state (GPU VA space, VidSch process with its TDR history, handle table) outlives their
    /// last device until the process ends (`ums::process::end_process`), as 24H2's
    /// `DXGPROCESS_RENDER_ADAPTER_INFO` lives while the process has the adapter open
    /// (`K:DXGPROCESS::OpenAdapter` @0x14036620C counts the opens).
    pub(crate) held: std::collections::BTreeSet<ProcessId>,
    /// What each process's UMD learnt of this adapter's nodes through
    /// `D3DKMTQueryAdapterInfo` (`crate::kmt::SimKmt`, made afresh for every call, cannot
    /// hold it): user-mode memory of the process, which the simulated OS never reads and
    /// which goes with the process.
    pub(crate) umd_nodes: BTreeMap<ProcessId, Arc<rvgpu_umd::nodes::NodeScheduling>>,
}

impl Default for UmsOs {
    fn default() -> Self {
        Self {
            node_metadata: Vec::new(),
            caps: None,
            runtime_pm: false,
            power: Power::D0,
            fstate: Vec::new(),
            node_component: Vec::new(),
            node_active: Vec::new(),
            driver_active: Vec::new(),
            f1_deferred: Vec::new(),
            power_components: Vec::new(),
            devices: BTreeMap::new(),
            contexts: BTreeMap::new(),
            queues: HandleMap::default(),
            queues_created: 0,
            removed: false,
            allocations: BTreeMap::new(),
            creating: BTreeMap::new(),
            reaped: Vec::new(),
            reap_serial: Arc::new(Mutex::new(())),
            doorbells: HandleMap::default(),
            doorbell_by_kmd: std::collections::BTreeSet::new(),
            fences: BTreeMap::new(),
            hwq_due: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            fence_owner: BTreeMap::new(),
            fence_device: BTreeMap::new(),
            events: Vec::new(),
            destroyed_doorbells: std::collections::HashMap::new(),
            retired_dxg_queues: std::collections::HashMap::new(),
            retired_progress: Vec::new(),
            work: VecDeque::new(),
            faulted: VecDeque::new(),
            held: std::collections::BTreeSet::new(),
            umd_nodes: BTreeMap::new(),
        }
    }
}

impl UmsOs {
    /// Allocation `h` if it is `device`'s and not closed: the allocations a thunk of that
    /// device may name.
    pub(crate) fn open_allocation(&self, device: KmtHandle, h: KmtHandle) -> Option<&AllocObj> {
        self.allocations.get(&h).filter(|al| al.is_open_to(device))
    }

    pub(crate) fn node_ums(&self, node: u32) -> bool {
        self.node_metadata
            .get(node as usize)
            .is_some_and(|m| m.Flags.is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission))
    }

    pub(crate) fn doorbell_size(&self) -> Option<u32> {
        self.caps.map(|c| c.DoorbellSizeInBytes).filter(|s| *s != 0)
    }
}

/// A simulated process with its D3D device on one adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UmsProcess {
    /// Adapter index.
    pub adapter: usize,
    /// Process id.
    pub pid: ProcessId,
    /// The D3D device's D3DKMT handle.
    pub device: KmtHandle,
}

/// What the OS knows of a doorbell (tests).
#[derive(Clone, Debug)]
pub struct DoorbellInfo {
    /// State.
    pub state: DoorbellState,
    /// The status page.
    pub status: D3DDDI_DOORBELLSTATUS,
    /// Physical page the process mapping points at (`None`: dummy page).
    pub mapped_page: Option<u32>,
    /// The KMD's handle.
    pub kmd_handle: usize,
    /// The OS kernel handle.
    pub os_handle: usize,
    /// Its queue.
    pub queue: KmtHandle,
    /// (stores to the dummy page, stores to a physical doorbell).
    pub writes: (u64, u64),
}
