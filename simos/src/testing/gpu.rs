//! GPU work for the fence tests, submitted through the driver: a minimal user-mode driver.
//!
//! Two fixtures: [`GpuQueue`], a user-mode hardware queue with a doorbell, and
//! [`KernelGpuQueue`], a kernel-mode hardware queue (`D3DKMTSubmitCommandToHwQueue`). The second
//! is what an adapter without native fences has: as on Windows 24H2, user-mode submission needs
//! `HWSCH` and `NATIVE_FENCE` and a node may advertise `UserModeSubmission` only with
//! `NativeGpuFence` (BR-73), so there the OS refuses a user-mode queue (BR-95).
//!
//! A [`GpuQueue`] is a hardware queue of its own simulated process, created the way a
//! UMD creates one (docs/usermode-submission.md) with the same thunks [`crate::kmt::SimKmt`]
//! calls: a process and D3D device ([`crate::Machine::create_process`]), a context on the
//! engine, a hardware queue with `UserModeSubmission` (the KMD picks its queue id and owns
//! the engine's runlist), a ring and a ring-control allocation, a doorbell, and a connect.
//! The test then writes packets into the ring with the [`rvgpu_hw::cmd`] encoder and submits
//! by publishing `write_ptr` (release) and ringing the doorbell, with the UM-19 status loop
//! (reconnect on `DISCONNECTED_RETRY`, `NotifyWorkSubmission` on `CONNECTED_NOTIFY`).
//!
//! Fences the queue names must be open in its process ([`GpuQueue::pid`]): on a GpuMmu
//! adapter their pages are mapped into that process only.
//!
//! Unlike the UMD's `UserQueue` it writes exactly the packets the test queues: no `PROGRESS`
//! packet ends a kick, so a kick raises no interrupt of its own and interrupt counts are the
//! fence signals' alone. The queue's progress fence therefore stays 0 and its last-queued
//! value 0: the OS sees no outstanding work on it (a normal exit does not wait for it, and
//! [`crate::Machine::power_down`] does not see its work). The process lives until the adapter
//! stops (the OS then tears it down) or the test ends it ([`GpuQueue::process`] with
//! [`crate::Machine::exit_process`]); dropping the queue does not destroy it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
};
use rvgpu_device::SysAlloc;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::{Command, SIGNAL_ALWAYS_IRQ, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_hw::pdd::{DoorbellPdd, DoorbellValue, HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use rvgpu_hw::queue::RingControl;
use rvgpu_umd::kmt::KmtHandle;
use zerocopy::IntoBytes;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::machine::Machine;
use crate::sync::fence::{MonitoredFence, NativeFence};
use crate::ums::{self, DoorbellCpuState, UmsProcess};
use crate::Irql;

/// Ring size in bytes.
pub const RING_BYTES: u32 = 4096;

/// How many times one kick reconnects after `DISCONNECTED_RETRY` before it gives up (the
/// UMD's bound, `rvgpu_umd::submit::MAX_RETRIES`).
const MAX_RETRIES: u32 = 1024;

fn sim(msg: &str) -> SimError {
    SimError::Simulation(format!("gpu fixture: {msg}"))
}

/// What rings the queue's doorbell: shared by [`GpuQueue`] and its [`Kicker`]s.
#[derive(Clone)]
struct Bell {
    adapter: Arc<AdapterShared>,
    device: KmtHandle,
    doorbell: KmtHandle,
    cpu: Arc<DoorbellCpuState>,
    control: SysAlloc,
    ring_value: DoorbellValue,
    queue_id: u32,
}

impl Bell {
    /// Publishes `write_ptr` (release; never backwards) and rings the doorbell with the
    /// value the doorbell's private data asked for. Then the UM-19 status loop, when
    /// `passive` (connect and notify are PASSIVE_LEVEL thunks); at raised IRQL a
    /// disconnected doorbell's work waits for the next [`GpuQueue::kick`], which
    /// reconnects (the KMD kicks the queue at connect, collecting it).
    fn ring(&self, write_ptr: u64, passive: bool) -> Result<(), SimError> {
        self.control
            .word(RingControl::WRITE_PTR)
            .ok_or_else(|| sim("ring control"))?
            .fetch_max(write_ptr, Ordering::Release);
        let word = match self.ring_value {
            DoorbellValue::WritePtr => write_ptr,
            DoorbellValue::QueueId => u64::from(self.queue_id),
        };
        let mut retries = 0u32;
        loop {
            self.cpu.ring(word);
            if !passive {
                return Ok(());
            }
            match self.cpu.status() {
                D3DDDI_DOORBELLSTATUS_CONNECTED => return Ok(()),
                D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD => {
                    return ums::notify_work_submission(&self.adapter, self.device, self.doorbell)
                }
                D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY if retries < MAX_RETRIES => {
                    ums::connect_doorbell(&self.adapter, self.device, self.doorbell)?;
                    retries += 1;
                }
                s => return Err(sim(&format!("doorbell unusable (status {s})"))),
            }
        }
    }
}

/// See [`GpuQueue::kicker`].
#[derive(Clone)]
pub struct Kicker {
    bell: Bell,
    write_ptr: u64,
}

impl std::fmt::Debug for Kicker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kicker")
            .field("queue_id", &self.bell.queue_id)
            .field("write_ptr", &self.write_ptr)
            .finish_non_exhaustive()
    }
}

impl Kicker {
    /// Publishes the write pointer it was made with (release) and rings the doorbell, from
    /// any thread and IRQL. At PASSIVE_LEVEL a disconnected doorbell is reconnected (the
    /// status loop of [`GpuQueue::kick`]); at raised IRQL (an OS callback run by the DPC)
    /// it only rings, so work rung on a disconnected doorbell runs at the queue's next
    /// connect. A failure shows as the machine's fault.
    pub fn kick(&self) {
        let passive = crate::base::processor::current_irql() == Irql::Passive;
        let _ = self.bell.ring(self.write_ptr, passive);
    }
}

/// What a user-mode [`GpuQueue`] and a [`KernelGpuQueue`] share: building a fence signal
/// through the queue's own `push`, and naming the process and engine it runs in.
macro_rules! queue_common {
    () => {
        /// Queues a legacy monitored-fence signal (MF-03): FENCE_SIGNAL with SIGNAL_ALWAYS_IRQ
        /// (every signal interrupts, MF-04). Call `kick` to submit.
        pub fn signal_monitored(
            &mut self,
            fence: &MonitoredFence,
            value: u64,
        ) -> Result<(), SimError> {
            self.signal_raw(
                SIGNAL_ALWAYS_IRQ,
                GpuVa::new(fence.gpu_va()),
                value,
                GpuVa::NULL,
                0,
            )
        }

        /// Queues FENCE_SIGNAL with explicit arguments.
        pub fn signal_raw(
            &mut self,
            flags: u8,
            value_addr: GpuVa,
            value: u64,
            monitored_addr: GpuVa,
            report_tag: u64,
        ) -> Result<(), SimError> {
            self.push(Command::FenceSignal {
                flags,
                value_addr: value_addr.get(),
                value,
                monitored_addr: monitored_addr.get(),
                report_tag,
            })
        }

        /// The process that owns the queue.
        pub fn process(&self) -> UmsProcess {
            self.process
        }

        /// The process id of the queue's process (where fences the queue names are opened).
        pub fn pid(&self) -> crate::base::process_id::ProcessId {
            self.process.pid
        }

        /// The engine (node ordinal).
        pub fn engine(&self) -> u32 {
            self.engine
        }
    };
}

/// One user-mode hardware queue on one engine, of its own process, fed by the test.
pub struct GpuQueue {
    process: UmsProcess,
    engine: u32,
    context: KmtHandle,
    queue: KmtHandle,
    ring: SysAlloc,
    bell: Bell,
    write_ptr: u64,
}

impl std::fmt::Debug for GpuQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuQueue")
            .field("process", &self.process)
            .field("engine", &self.engine)
            .field("queue_id", &self.bell.queue_id)
            .field("write_ptr", &self.write_ptr)
            .finish_non_exhaustive()
    }
}

/// Runs `build` in a new process of adapter `adapter`; on failure the process is killed
/// (abnormal exit: whatever was created is destroyed, nothing to wait for).
fn in_new_process<T>(
    m: &Machine,
    adapter: usize,
    build: impl FnOnce(UmsProcess) -> Result<T, SimError>,
) -> Result<T, SimError> {
    let process = m.create_process(adapter)?;
    build(process).inspect_err(|_| {
        let _ = m.kill_process(&process);
    })
}

/// An allocation of `process` as its UMD makes one (`D3DKMTCreateAllocation2`, its GPU VA
/// mapped where the create gave none, `D3DKMTMakeResident`, the paging fence waited for,
/// `D3DKMTLock2`; [`crate::kmt::SimKmt`]): the handle, the memory and the GPU VA.
fn runtime_allocation(
    m: &Machine,
    process: UmsProcess,
    pdd: &rvgpu_umd::kmt::AllocationPdd,
) -> Result<(KmtHandle, rvgpu_device::SysAlloc, u64), SimError> {
    use rvgpu_umd::kmt::{AllocationKind, Kmt};
    let kind = AllocationKind::from_u32(pdd.kind).ok_or_else(|| sim("allocation kind"))?;
    let al = m
        .kmt(&process)
        .create_allocation_as(pdd.size, kind)
        .map_err(|e| SimError::DdiFailed(e.0))?;
    Ok((al.handle, al.mem.alloc().clone(), al.gpu_va))
}

/// A context on `engine` of `process`'s device and a hardware queue on it (user-mode
/// submission or not): the adapter, the context, the queue and the KMD's private data.
fn context_and_queue(
    m: &Machine,
    process: UmsProcess,
    engine: u32,
    user_mode: bool,
) -> Result<(Arc<AdapterShared>, KmtHandle, ums::CreatedQueue, HwQueuePdd), SimError> {
    let a = m.adapter_shared(process.adapter)?.clone();
    let context = ums::create_context(m, &a, process.device, engine)?;
    let mut qp = HwQueuePdd {
        magic: PDD_MAGIC,
        version: HW_QUEUE_PDD_VERSION,
        ..Default::default()
    };
    let flags = u32::from(user_mode) * ums::HWQUEUE_USER_MODE_SUBMISSION;
    let q = ums::create_hw_queue(m, &a, process.device, context, flags, qp.as_mut_bytes())?;
    Ok((a, context, q, qp))
}

impl GpuQueue {
    /// Creates a process on adapter `adapter` and, in it, a user-mode hardware queue on
    /// `engine` with a [`RING_BYTES`] ring and a connected doorbell (see the module
    /// documentation). The KMD chooses the queue id ([`GpuQueue::queue_id`]).
    pub fn new(m: &Machine, adapter: usize, engine: u32) -> Result<Self, SimError> {
        in_new_process(m, adapter, |p| Self::build(m, p, engine))
    }

    /// A queue on `engine` in an existing `process` (several queues, and the fences they
    /// share, in one process). The process outlives the queue.
    pub fn new_in(m: &Machine, process: UmsProcess, engine: u32) -> Result<Self, SimError> {
        Self::build(m, process, engine)
    }

    fn build(m: &Machine, process: UmsProcess, engine: u32) -> Result<Self, SimError> {
        let (a, context, q, qp) = context_and_queue(m, process, engine, true)?;
        let device = process.device;
        use rvgpu_umd::kmt::{allocation_private_data, AllocationKind};
        let ring_pdd = allocation_private_data(u64::from(RING_BYTES), AllocationKind::Commands);
        let (ring_h, ring, _ring_va) = runtime_allocation(m, process, &ring_pdd)?;
        let control_pdd = allocation_private_data(RingControl::SIZE, AllocationKind::RingControl);
        let (control_h, control, _control_va) = runtime_allocation(m, process, &control_pdd)?;
        for off in [RingControl::WRITE_PTR, RingControl::READ_PTR] {
            control
                .word(off)
                .ok_or_else(|| sim("ring control"))?
                .store(0, Ordering::Relaxed);
        }
        let mut dp = DoorbellPdd::for_ring(RING_BYTES);
        let db = ums::create_doorbell(
            &a,
            device,
            q.handle,
            ring_h,
            control_h,
            0,
            dp.as_mut_bytes(),
        )?;
        let ring_value =
            DoorbellValue::from_u32(dp.ring_value).ok_or_else(|| sim("doorbell pdd"))?;
        let queue_id = match ring_value {
            DoorbellValue::QueueId => dp.queue_id,
            DoorbellValue::WritePtr => qp.queue_id,
        };
        ums::connect_doorbell(&a, device, db.handle)?;
        Ok(Self {
            process,
            engine,
            context,
            queue: q.handle,
            ring,
            bell: Bell {
                adapter: a,
                device,
                doorbell: db.handle,
                cpu: db.cpu,
                control,
                ring_value,
                queue_id,
            },
            write_ptr: 0,
        })
    }

    /// Queues any packet as is, as a hostile or hand-written ring would (a LOG_WRITE of the
    /// test's choosing included). Call [`GpuQueue::kick`] to submit.
    pub fn push(&mut self, c: Command) -> Result<(), SimError> {
        let mut words = [0u64; 8];
        let n = c.encode(&mut words).ok_or_else(|| sim("encode"))?;
        let size = u64::from(RING_BYTES);
        let read = self.read_ptr();
        if self.write_ptr + 8 * n as u64 - read > size {
            return Err(sim("ring full"));
        }
        for (i, w) in words.iter().take(n).enumerate() {
            let off = (self.write_ptr + 8 * i as u64) % size;
            self.ring
                .word(off)
                .ok_or_else(|| sim("ring offset"))?
                .store(*w, Ordering::Relaxed);
        }
        self.write_ptr += 8 * n as u64;
        Ok(())
    }

    /// A queue names only fences its process opened: on a GpuMmu adapter the fence's pages
    /// are mapped into the process when it creates or opens the fence, and nowhere else (a
    /// signal through an unmapped VA would page-fault). Caught here, with a clearer message.
    fn opened_here(&self, fence: &NativeFence) -> Result<(), SimError> {
        if fence.process() == self.process.pid && fence.adapter() == self.process.adapter {
            Ok(())
        } else {
            Err(sim(
                "the fence is not open in the queue's process on its adapter",
            ))
        }
    }

    /// Queues FENCE_SIGNAL with the conditional interrupt (NF-03) for `fence`: its
    /// CurrentValue and MonitoredValue VAs in the queue's process (where the OS mapped them
    /// for this instance) and its report tag (from the private data create
    /// returned). Call [`GpuQueue::kick`] to submit.
    pub fn signal(&mut self, fence: &NativeFence, value: u64) -> Result<(), SimError> {
        self.opened_here(fence)?;
        self.signal_raw(
            SIGNAL_CONDITIONAL_IRQ,
            GpuVa::new(fence.current_value_va()),
            value,
            GpuVa::new(fence.monitored_value_va()),
            fence.pdd().report_tag,
        )
    }

    /// Queues FENCE_WAIT until `fence`'s CurrentValue >= `value`.
    pub fn wait(&mut self, fence: &NativeFence, value: u64) -> Result<(), SimError> {
        self.opened_here(fence)?;
        self.push(Command::FenceWait {
            addr: fence.current_value_va(),
            value,
        })
    }

    /// Submits what was queued: publishes the write pointer (release) and rings the
    /// doorbell; `DISCONNECTED_RETRY` (victimised, F1, power) reconnects and rings again,
    /// `CONNECTED_NOTIFY` calls `NotifyWorkSubmission` (UM-19). Call at PASSIVE_LEVEL
    /// (the test's thread).
    pub fn kick(&self) -> Result<(), SimError> {
        self.bell.ring(self.write_ptr, true)
    }

    /// Publishes the write pointer (release) without ringing: the work waits for a ring
    /// (or a connect's kick).
    pub fn publish(&self) -> Result<(), SimError> {
        self.bell
            .control
            .word(RingControl::WRITE_PTR)
            .ok_or_else(|| sim("ring control"))?
            .fetch_max(self.write_ptr, Ordering::Release);
        Ok(())
    }

    /// Writes `value` through this queue's doorbell mapping, whatever it is: what a hostile
    /// UMD of this process can do (in global mode, another process's queue id).
    pub fn ring_raw(&self, value: u64) {
        self.bell.cpu.ring(value);
    }

    /// A handle that publishes the commands written so far and rings the doorbell later,
    /// from any thread (what an OS resuming a held software context does); see
    /// [`Kicker::kick`].
    pub fn kicker(&self) -> Kicker {
        Kicker {
            bell: self.bell.clone(),
            write_ptr: self.write_ptr,
        }
    }

    /// The CMP's read pointer (bytes consumed).
    pub fn read_ptr(&self) -> u64 {
        self.bell
            .control
            .word(RingControl::READ_PTR)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Bytes queued so far.
    pub fn write_ptr(&self) -> u64 {
        self.write_ptr
    }

    /// Whether the CMP consumed everything queued.
    pub fn drained(&self) -> bool {
        self.read_ptr() == self.write_ptr
    }

    /// The queue id the KMD chose (from the private data of `CreateHwQueue`).
    pub fn queue_id(&self) -> u32 {
        self.bell.queue_id
    }

    queue_common!();

    /// D3DKMT handles of (context, hardware queue, doorbell) in [`GpuQueue::process`].
    pub fn handles(&self) -> (KmtHandle, KmtHandle, KmtHandle) {
        (self.context, self.queue, self.bell.doorbell)
    }
}

/// Command-buffer size of a [`KernelGpuQueue`] in bytes.
pub const COMMAND_BUFFER_BYTES: u32 = 16 * 1024;

/// One kernel-mode hardware queue on one engine, of its own process, fed by the test: the
/// submission path of an adapter without user-mode submission.
///
/// Windows 24H2 enables `USER_MODE_SUBMISSION` only with `HWSCH` and `NATIVE_FENCE`, and a node
/// may advertise `UserModeSubmission` only with `NativeGpuFence` (BR-73): on an adapter where
/// the OS turned native fences off a [`GpuQueue`] is refused (BR-95). Work there goes through
/// the kernel, as the UMD's `KernelQueue` sends it: a context, a hardware queue without
/// `UserModeSubmission` (the OS creates its progress fence, a legacy monitored fence), and a
/// command buffer; each [`kick`](Self::kick) copies the queued packets into the command buffer
/// and hands them to the OS (`D3DKMTSubmitCommandToHwQueue`, which calls
/// `DxgkDdiSubmitCommandToHwQueue` unless earlier work of the queue is held). The KMD appends
/// the `PROGRESS` packet of each submission itself, so unlike a [`GpuQueue`] every kick also
/// signals the progress fence (and interrupts).
///
/// GPU waits are OS-scheduled ([`gpu_wait_monitored`](Self::gpu_wait_monitored),
/// `D3DKMTSubmitWaitForSyncObjectsToHwQueue`, MF-03): VidSch holds every later submission of
/// the queue until the fence reaches the value ([`crate::Machine::hw_queue_held`]). GPU signals
/// are in-stream fence writes ([`signal_monitored`](Self::signal_monitored)).
///
/// Like [`GpuQueue`] the process lives until the adapter stops or the test ends it; dropping
/// the queue does not destroy it.
pub struct KernelGpuQueue {
    adapter: Arc<AdapterShared>,
    process: UmsProcess,
    engine: u32,
    context: KmtHandle,
    queue: KmtHandle,
    progress: MonitoredFence,
    cb: SysAlloc,
    cb_va: u64,
    /// Next free byte of the command buffer; reused from 0 once the last submission completed.
    head: u64,
    /// Packets queued since the last kick.
    pending: Vec<Command>,
    /// The last progress value submitted.
    last: u64,
}

impl std::fmt::Debug for KernelGpuQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelGpuQueue")
            .field("process", &self.process)
            .field("engine", &self.engine)
            .field("queue", &self.queue)
            .field("last", &self.last)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl KernelGpuQueue {
    /// Creates a process on adapter `adapter` and, in it, a kernel-mode hardware queue on
    /// `engine` with a [`COMMAND_BUFFER_BYTES`] command buffer (see the type's documentation).
    pub fn new(m: &Machine, adapter: usize, engine: u32) -> Result<Self, SimError> {
        in_new_process(m, adapter, |p| Self::build(m, p, engine))
    }

    /// A kernel-mode queue on `engine` in an existing `process` (which outlives it).
    pub fn new_in(m: &Machine, process: UmsProcess, engine: u32) -> Result<Self, SimError> {
        Self::build(m, process, engine)
    }

    fn build(m: &Machine, process: UmsProcess, engine: u32) -> Result<Self, SimError> {
        let (a, context, q, _) = context_and_queue(m, process, engine, false)?;
        use rvgpu_umd::kmt::{allocation_private_data, AllocationKind};
        let bytes = u64::from(COMMAND_BUFFER_BYTES);
        let pdd = allocation_private_data(bytes, AllocationKind::Commands);
        let (_, cb, cb_va) = runtime_allocation(m, process, &pdd)?;
        Ok(Self {
            adapter: a,
            process,
            engine,
            context,
            queue: q.handle,
            // A kernel-mode queue always has a progress fence.
            progress: q.progress.ok_or(SimError::DdiFailed(
                rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED,
            ))?,
            cb,
            cb_va,
            head: 0,
            pending: Vec::new(),
            last: 0,
        })
    }

    /// Queues any packet (a kernel-mode queue's packets must not include LOG_WRITE).
    pub fn push(&mut self, c: Command) -> Result<(), SimError> {
        let mut words = [0u64; 8];
        c.encode(&mut words).ok_or_else(|| sim("encode"))?;
        self.pending.push(c);
        Ok(())
    }

    /// Submits what was queued since the last kick as one command buffer with the next
    /// progress value (`D3DKMTSubmitCommandToHwQueue`). Nothing queued: nothing submitted.
    /// Call at PASSIVE_LEVEL (the test's thread).
    pub fn kick(&mut self, m: &Machine) -> Result<(), SimError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut words = Vec::new();
        for c in &self.pending {
            let mut w = [0u64; 8];
            let n = c.encode(&mut w).ok_or_else(|| sim("encode"))?;
            words.extend_from_slice(&w[..n]);
        }
        let bytes = 8 * words.len() as u64;
        if bytes > u64::from(COMMAND_BUFFER_BYTES) {
            return Err(sim("batch larger than the command buffer"));
        }
        if self.head + bytes > u64::from(COMMAND_BUFFER_BYTES) {
            // Reused from its start only once the GPU is done with all of it.
            if self.progress.value() < self.last {
                return Err(sim("command buffer full: wait for the queue's work first"));
            }
            self.head = 0;
        }
        let start = self.head;
        for (i, w) in words.iter().enumerate() {
            self.cb
                .word(start + 8 * i as u64)
                .ok_or_else(|| sim("command buffer offset"))?
                .store(*w, Ordering::Release);
        }
        let value = self.last + 1;
        ums::submit_command(
            m,
            &self.adapter,
            self.process.device,
            self.queue,
            value,
            self.cb_va + start,
            u32::try_from(bytes).map_err(|_| sim("batch size"))?,
        )?;
        self.head = start + bytes;
        self.last = value;
        self.pending.clear();
        Ok(())
    }

    /// A D3DKMT handle in the queue's process for `fence`, a monitored fence of the queue's
    /// adapter the process created or opened (`D3DKMTOpenSyncObjectFromNtHandle2`), for
    /// [`gpu_wait_monitored`](Self::gpu_wait_monitored).
    pub fn open_fence(&self, fence: &MonitoredFence) -> Result<KmtHandle, SimError> {
        ums::open_sync_fence(&self.adapter, self.process.device, fence)
    }

    /// MF-03 GPU wait, OS-scheduled (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`, the
    /// hardware-queue form of `WaitForSynchronizationObjectFromGpu`): packets queued so far are
    /// submitted first (the UMD's flush), then every later submission of the queue is held by
    /// VidSch until `fence` (a handle from [`open_fence`](Self::open_fence)) reaches `value`.
    pub fn gpu_wait_monitored(
        &mut self,
        m: &Machine,
        fence: KmtHandle,
        value: u64,
    ) -> Result<(), SimError> {
        self.kick(m)?;
        ums::submit_wait_to_hw_queue(
            m,
            &self.adapter,
            self.process.device,
            self.queue,
            &[(fence, value)],
        )
    }

    /// Whether everything queued was submitted and completed (the progress fence reached the
    /// last value submitted; a held submission has not).
    pub fn drained(&self) -> bool {
        self.pending.is_empty() && self.progress.value() >= self.last
    }

    /// The last progress value submitted.
    pub fn last_submitted(&self) -> u64 {
        self.last
    }

    /// The queue's progress fence (the OS's monitored fence).
    pub fn progress(&self) -> &MonitoredFence {
        &self.progress
    }

    queue_common!();

    /// D3DKMT handles of (context, hardware queue) in [`KernelGpuQueue::process`].
    pub fn handles(&self) -> (KmtHandle, KmtHandle) {
        (self.context, self.queue)
    }
}
