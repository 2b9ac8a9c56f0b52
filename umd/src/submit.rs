//! The portable submission core: a user-mode hardware queue with its ring and
//! doorbell ([`UserQueue`]), and a kernel-mode hardware queue ([`KernelQueue`], UM-01), both
//! generic over the kernel thunks ([`Kmt`]), so the same code runs on Windows (D3DKMT,
//! `kmt_windows`) and in the simulation (`rvgpu_simos`).
//!
//! docs/usermode-submission.md is the contract. In short:
//!
//! - [`UserQueue::new`] creates a context on a node, a hardware queue with
//!   `UserModeSubmission` ([`HwQueuePdd`] in/out), the ring and ring-control allocations, a
//!   doorbell ([`DoorbellPdd`]: the ring size in, `ring_value` and `queue_id` out; the KMD takes
//!   the ring's addresses from the two allocations), and
//!   connects the doorbell.
//! - **Progress fence.** Microsoft's pages give every queue a monitored progress fence; 24H2
//!   gives a user-mode queue none. Then the queue creates a native fence of its own and closes
//!   each batch with that fence's conditional `FENCE_SIGNAL(N+1)` instead of `PROGRESS(N+1)`
//!   (an interrupt only when a CPU waits, NF-03); waits and completion read that fence.
//! - [`UserQueue::submit`] follows UM-16 exactly: pick `N+1`; append the commands and
//!   `PROGRESS(N+1)` to the ring (waiting on the progress fence while the ring is full, never
//!   overwriting unconsumed packets); store `N+1` at the last-queued address; publish
//!   `write_ptr` (Release); ring the doorbell with the write pointer or the queue id. Then the
//!   UM-19 status loop: `CONNECTED` → done; `CONNECTED_NOTIFY` → `NotifyWorkSubmission`;
//!   `DISCONNECTED_RETRY` → `ConnectDoorbell` and ring again; a failed connect (or notify) or
//!   `DISCONNECTED_ABORT` → fall back to the kernel-mode path.
//! - **Fallback without loss or duplication.** The doorbell is destroyed first, which takes the
//!   queue off the runlist atomically (docs/usermode-submission.md, "Runlists"), so the ring is
//!   quiescent: everything before the CMP's read pointer ran, nothing after it will. The
//!   unconsumed packets between the read and write pointers are decoded and resubmitted, batch
//!   by batch (a batch ends with its closing packet), through a second hardware queue created
//!   without `UserModeSubmission` ([`KernelQueue`]'s machinery). Progress values stay one
//!   sequence for the caller: a value the user-mode queue had completed is complete; a later
//!   one maps to the kernel-mode queue's own progress value for that batch.
//!   An INDIRECT the CMP had started is resubmitted whole (the read pointer stays on it until
//!   its buffer completes), which is what the hardware itself does when a queue re-enters a
//!   runlist; the packets the UMD writes for a caller's commands are otherwise not repeated.
//! - Device loss (UM-10): if the kernel-mode path fails too, or the progress fence reads a
//!   value the queue never wrote (the OS's device-removed value), the queue reports
//!   [`SubmitError::Lost`] from then on; the caller drops it and creates a new one.
//! - Teardown order: doorbell, hardware queues, allocations, context ([`UserQueue::close`]
//!   waits for the last submitted value first; dropping does not wait).
//! - **Native fence logs** (docs/logs.md#umd, `fencelog`): [`UserQueue::submit_ops`]
//!   expands native-fence signals and waits into their packet and a LOG_WRITE with the next
//!   index of the queue's wait or signal log, published in the same write-pointer update, and
//!   reports each operation's "queued" event to the caller's [`FenceTrace`]. Kernel-mode queues
//!   have no logs: [`KernelQueue::submit_ops`] emits no LOG_WRITE, and the fallback drops the
//!   LOG_WRITEs of what it resubmits and of everything submitted after it.

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::{
    decode, decode_header, header, Command, Opcode, FENCE_SIGNAL_VALUE_WORD, MAX_INDIRECT,
    PROGRESS_IRQ,
};
use rvgpu_hw::pdd::{DoorbellPdd, DoorbellValue, HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use rvgpu_hw::queue::{RingControl, RING_MAX, RING_MIN};
use zerocopy::{FromBytes, IntoBytes};

use crate::fence::NativeFence;
use crate::fencelog::{
    expand, has_log_writes, without_log_writes, Expanded, FenceTrace, LogCursor, Op,
};
use crate::kmt::{
    Allocation, AllocationCpu, Doorbell, DoorbellCpu, DoorbellStatus, FenceCpu, HwQueue, Kmt,
    KmtHandle, NtStatus, QueueProgress, RingView, STATUS_INSUFFICIENT_RESOURCES,
    STATUS_INVALID_PARAMETER,
};
use crate::packets::{Packets, Refused};
use crate::ring::{for_each_word, RingError, RingWriter};

/// Why a queue operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// A kernel thunk failed with this NTSTATUS.
    Kmt(NtStatus),
    /// Ring control is inconsistent, or the ring size is not usable.
    Ring(RingError),
    /// The batch cannot fit in an empty ring (user mode) or command buffer (kernel mode).
    TooLarge,
    /// The kernel driver's private data is not usable (wrong `ring_value`).
    BadPrivateData,
    /// The configuration is invalid (ring or command-buffer size).
    BadConfig,
    /// A command does not encode whole (a NOP of length 0, a WRITE_DATA).
    BadCommand,
    /// `wait` on a value that was never submitted (it would never complete).
    NotSubmitted,
    /// The queue is unusable (device lost and the kernel-mode path failed too, or the ring
    /// stalled): drop it and create a new one (UM-10).
    Lost,
}

impl From<NtStatus> for SubmitError {
    fn from(s: NtStatus) -> Self {
        Self::Kmt(s)
    }
}

impl From<RingError> for SubmitError {
    fn from(e: RingError) -> Self {
        Self::Ring(e)
    }
}

/// How a [`UserQueue`] currently submits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmissionPath {
    /// Its own ring and doorbell (UM-16).
    UserMode,
    /// `D3DKMTSubmitCommandToHwQueue` on a second, kernel-mode queue (UM-19 fallback).
    KernelMode,
}

/// What a queue is created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// Engine (node ordinal) of the context.
    pub node: u32,
    /// [`HwQueuePdd::priority`] (the KMD clamps it).
    pub priority: u32,
    /// User-mode ring size in bytes: a power of two in `RING_MIN..=RING_MAX`.
    pub ring_size: u32,
    /// Kernel-mode command buffer size in bytes (multiple of 8); one kernel-mode submission
    /// is at most `min(command_buffer_size, MAX_INDIRECT)` bytes.
    pub command_buffer_size: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            node: 0,
            priority: 0,
            ring_size: 64 << 10,
            command_buffer_size: 64 << 10,
        }
    }
}

/// Implements [`Kmt`] for a pointer to thunks by forwarding every call to the pointee. One list
/// for both pointer kinds, so a thunk added to the trait cannot be forwarded by one and silently
/// fall back to the trait's default in the other.
macro_rules! forward_kmt {
    ($(#[$doc:meta])* $ptr:ty) => {
        $(#[$doc])*
        impl<T: Kmt + ?Sized> Kmt for $ptr {
            type Mem = T::Mem;
            type Doorbell = T::Doorbell;
            type Fence = T::Fence;

            fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus> {
                (**self).create_context(node)
            }
            fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_context(context)
            }
            fn create_hw_queue(
                &self,
                context: KmtHandle,
                user_mode_submission: bool,
                private_data: &mut [u8],
            ) -> Result<HwQueue<Self::Fence>, NtStatus> {
                (**self).create_hw_queue(context, user_mode_submission, private_data)
            }
            fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_hw_queue(queue)
            }
            fn create_allocation_as(
                &self,
                size: u64,
                kind: crate::kmt::AllocationKind,
            ) -> Result<Allocation<Self::Mem>, NtStatus> {
                (**self).create_allocation_as(size, kind)
            }
            fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_allocation(allocation)
            }
            fn create_allocation_pdd(
                &self,
                pdd: &crate::kmt::AllocationPdd,
            ) -> Result<crate::kmt::MappedGpu, NtStatus> {
                (**self).create_allocation_pdd(pdd)
            }
            fn lock2(&self, allocation: KmtHandle) -> Result<Self::Mem, NtStatus> {
                (**self).lock2(allocation)
            }
            fn unlock2(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
                (**self).unlock2(allocation)
            }
            fn destroy_allocation2(
                &self,
                allocation: KmtHandle,
                flags: crate::kmt::DestroyFlags,
            ) -> Result<(), NtStatus> {
                (**self).destroy_allocation2(allocation, flags)
            }
            fn invalidate_cache(
                &self,
                allocation: KmtHandle,
                offset: u64,
                length: u64,
            ) -> Result<(), NtStatus> {
                (**self).invalidate_cache(allocation, offset, length)
            }
            fn io_coherent(&self) -> bool {
                (**self).io_coherent()
            }
            fn make_resident(
                &self,
                allocations: &[KmtHandle],
                flags: crate::kmt::MakeResidentFlags,
            ) -> Result<crate::kmt::PagingFence, crate::kmt::MakeResidentError> {
                (**self).make_resident(allocations, flags)
            }
            fn evict(
                &self,
                allocations: &[KmtHandle],
                flags: crate::kmt::EvictFlags,
            ) -> Result<u64, NtStatus> {
                (**self).evict(allocations, flags)
            }
            fn make_resident_on(
                &self,
                queue: &crate::kmt::PagingQueue<Self::Fence>,
                allocations: &[KmtHandle],
                flags: crate::kmt::MakeResidentFlags,
            ) -> Result<crate::kmt::PagingFence, crate::kmt::MakeResidentError> {
                (**self).make_resident_on(queue, allocations, flags)
            }
            fn create_paging_queue(
                &self,
                priority: i32,
            ) -> Result<crate::kmt::PagingQueue<Self::Fence>, NtStatus> {
                (**self).create_paging_queue(priority)
            }
            fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_paging_queue(queue)
            }
            fn reserve_gpu_va(&self, request: &crate::kmt::ReserveGpuVa) -> Result<u64, NtStatus> {
                (**self).reserve_gpu_va(request)
            }
            fn map_gpu_va(
                &self,
                request: &crate::kmt::MapGpuVa,
            ) -> Result<crate::kmt::MappedGpuVa, NtStatus> {
                (**self).map_gpu_va(request)
            }
            fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus> {
                (**self).free_gpu_va(base, size)
            }
            fn update_gpu_va(
                &self,
                update: &crate::kmt::UpdateGpuVa,
                ops: &[crate::kmt::UpdateGpuVaOp],
            ) -> Result<(), NtStatus> {
                (**self).update_gpu_va(update, ops)
            }
            fn create_doorbell(
                &self,
                queue: KmtHandle,
                ring: KmtHandle,
                ring_control: KmtHandle,
                private_data: &mut [u8],
            ) -> Result<Doorbell<Self::Doorbell>, NtStatus> {
                (**self).create_doorbell(queue, ring, ring_control, private_data)
            }
            fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
                (**self).connect_doorbell(doorbell)
            }
            fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_doorbell(doorbell)
            }
            fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
                (**self).notify_work_submission(doorbell)
            }
            fn submit_command_to_hw_queue(
                &self,
                queue: KmtHandle,
                progress_fence_value: u64,
                command_buffer_gpu: u64,
                command_bytes: u32,
            ) -> Result<(), NtStatus> {
                (**self).submit_command_to_hw_queue(
                    queue,
                    progress_fence_value,
                    command_buffer_gpu,
                    command_bytes,
                )
            }
            fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
                (**self).wait_for_fence(fence, value)
            }
            fn submit_command(
                &self,
                context: KmtHandle,
                command_buffer_gpu: u64,
                command_bytes: u32,
            ) -> Result<(), NtStatus> {
                (**self).submit_command(context, command_buffer_gpu, command_bytes)
            }
            fn submit_wait_to_hw_queue(
                &self,
                queue: KmtHandle,
                fences: &[(KmtHandle, u64)],
            ) -> Result<(), NtStatus> {
                (**self).submit_wait_to_hw_queue(queue, fences)
            }
            fn submit_signal_to_hw_queue(
                &self,
                queue: KmtHandle,
                fences: &[(KmtHandle, u64)],
            ) -> Result<(), NtStatus> {
                (**self).submit_signal_to_hw_queue(queue, fences)
            }
            fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
                (**self).create_native_fence(initial_value)
            }
            fn native_fence_cpu(&self, fence: &NativeFence) -> Result<Self::Fence, NtStatus> {
                (**self).native_fence_cpu(fence)
            }
            fn create_shareable_native_fence(
                &self,
                initial_value: u64,
            ) -> Result<NativeFence, NtStatus> {
                (**self).create_shareable_native_fence(initial_value)
            }
            fn share_native_fence(&self, fence: KmtHandle) -> Result<u64, NtStatus> {
                (**self).share_native_fence(fence)
            }
            fn close_nt_handle(&self, handle: u64) -> Result<(), NtStatus> {
                (**self).close_nt_handle(handle)
            }
            fn open_native_fence(&self, shared: u64) -> Result<NativeFence, NtStatus> {
                (**self).open_native_fence(shared)
            }
            fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
                (**self).destroy_native_fence(fence)
            }
            fn signal_native_from_cpu(
                &self,
                fence: KmtHandle,
                value: u64,
            ) -> Result<(), NtStatus> {
                (**self).signal_native_from_cpu(fence, value)
            }
            fn cpu_timestamp(&self) -> u64 {
                (**self).cpu_timestamp()
            }
            fn cpu_timestamp_frequency(&self) -> u64 {
                (**self).cpu_timestamp_frequency()
            }
        }
    };
}

forward_kmt!(
    /// A thunk trait object by reference is a thunk trait object (the harness can share one).
    &T
);
forward_kmt!(
    /// Shared ownership of the thunks (the C API's queues keep their adapter's thunks alive).
    alloc::sync::Arc<T>
);

/// Encoded length of `cmds` in bytes.
fn batch_bytes(cmds: &[Command]) -> u64 {
    let words: u64 = cmds
        .iter()
        .map(|c| u64::try_from(c.len()).unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    words.saturating_mul(8)
}

/// Words of the FENCE_SIGNAL that closes a user-mode batch on the queue's own native fence.
const SIGNAL_WORDS: usize = match Opcode::FenceSignal.fixed_len() {
    Some(n) => n as usize,
    None => 0,
};

/// Whether `c` encodes as a whole packet: not a NOP of length 0, nor a WRITE_DATA (a
/// [`Command`] does not carry its data words; page-table writes are the kernel's).
#[inline]
fn encodes_whole(c: &Command) -> bool {
    !matches!(c, Command::Nop { len: 0 } | Command::WriteData { .. })
}

/// Refuses a batch with a command that does not encode.
fn check_commands(cmds: &[Command]) -> Result<(), SubmitError> {
    if !cmds.iter().all(encodes_whole) {
        return Err(SubmitError::BadCommand);
    }
    Ok(())
}

/// The words of the progress packet that ends a user-mode batch, `PROGRESS(value)` with
/// `PROGRESS_IRQ` (so that the OS rescans its monitored fences and CPU waits on the progress
/// fence wake): a pre-encoded header and the value.
fn progress_words(value: u64) -> [u64; 2] {
    const HEADER: u64 = header(Opcode::Progress, PROGRESS_IRQ, 2);
    [HEADER, value]
}

/// The CPU timestamp of a batch's "queued" events: read only when someone listens.
fn trace_timestamp<K: Kmt>(kmt: &K, trace: Option<&Arc<dyn FenceTrace>>) -> u64 {
    if trace.is_some() {
        kmt.cpu_timestamp()
    } else {
        0
    }
}

/// [`expand`] with the queue's errors.
fn expand_ops(
    ops: &[Op<'_>],
    cursor: LogCursor,
    logged: bool,
    queue_id: u32,
    qpc: u64,
) -> Result<Expanded, SubmitError> {
    expand(ops, cursor, logged, queue_id, qpc).map_err(|_| SubmitError::BadCommand)
}

/// Sends the "queued" events of a submitted batch, in order.
fn report(trace: Option<&Arc<dyn FenceTrace>>, ops: &[crate::fencelog::QueuedOp]) {
    if let Some(t) = trace {
        for op in ops {
            t.queued(op);
        }
    }
}

/// The packet that closes each user-mode batch, encoded once: per batch only its value word
/// changes (the submission hot path).
#[derive(Clone, Copy, Debug)]
enum ClosingPacket {
    /// `PROGRESS(value)` on the OS's progress fence.
    Progress([u64; 2]),
    /// The conditional FENCE_SIGNAL of the queue's own fence.
    Signal([u64; SIGNAL_WORDS]),
}

impl ClosingPacket {
    /// `PROGRESS(value)` on the OS's progress fence.
    fn progress() -> Self {
        Self::Progress(progress_words(0))
    }

    /// The conditional FENCE_SIGNAL of `fence`.
    fn signal(fence: &NativeFence) -> Result<Self, SubmitError> {
        let mut words = [0u64; SIGNAL_WORDS];
        match fence.signal(0).encode(&mut words) {
            Some(SIGNAL_WORDS) => Ok(Self::Signal(words)),
            _ => Err(SubmitError::BadCommand),
        }
    }

    /// Its length in bytes.
    #[inline]
    fn bytes(&self) -> u64 {
        match self {
            Self::Progress(w) => size_of_val(w) as u64,
            Self::Signal(w) => size_of_val(w) as u64,
        }
    }

    /// Makes it close the batch of progress value `value`.
    #[inline]
    fn set_value(&mut self, value: u64) {
        match self {
            Self::Progress(w) => w[1] = value,
            Self::Signal(w) => w[FENCE_SIGNAL_VALUE_WORD] = value,
        }
    }

    /// Its words.
    #[inline]
    fn words(&self) -> &[u64] {
        match self {
            Self::Progress(w) => w,
            Self::Signal(w) => w,
        }
    }
}

/// Where a user-mode queue's batches report their completion.
enum Progress<F> {
    /// The OS's progress fence (Microsoft's pages give every queue one): each batch ends with
    /// an interrupting `PROGRESS`.
    Os(QueueProgress<F>),
    /// The queue's own native fence, when the OS gave the queue no progress fence (24H2:
    /// `DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C zeroes the three progress
    /// fence arguments of a user-mode queue before `DdiCreateHwQueue`). Each batch ends with
    /// its FENCE_SIGNAL, whose conditional interrupt fires only when a CPU waiter raised
    /// MonitoredValue (NF-03): no interrupt per batch.
    Own { fence: NativeFence, cpu: F },
}

impl<F: FenceCpu> Progress<F> {
    /// The packet that closes each batch.
    fn closing_packet(&self) -> Result<ClosingPacket, SubmitError> {
        match self {
            Self::Os(_) => Ok(ClosingPacket::progress()),
            Self::Own { fence, .. } => ClosingPacket::signal(fence),
        }
    }

    /// The fence's D3DKMT handle (what CPU waits name).
    fn fence(&self) -> KmtHandle {
        match self {
            Self::Os(p) => p.fence,
            Self::Own { fence, .. } => fence.kmt,
        }
    }

    /// The fence's current value.
    #[inline]
    fn value(&self) -> u64 {
        match self {
            Self::Os(p) => p.cpu.value(),
            Self::Own { cpu, .. } => cpu.value(),
        }
    }

    /// The progress value `cmd` reports if it is the packet that closes a batch.
    fn closes(&self, cmd: &Command) -> Option<u64> {
        match (self, cmd) {
            (Self::Os(_), Command::Progress { value, .. }) => Some(*value),
            (Self::Own { fence, .. }, Command::FenceSignal { value, .. })
                if *cmd == fence.signal(*value) =>
            {
                Some(*value)
            }
            _ => None,
        }
    }
}

/// Creates a hardware queue with rvgpu's private data; returns it with the queue id.
fn create_hw_queue<K: Kmt>(
    kmt: &K,
    context: KmtHandle,
    user_mode: bool,
    priority: u32,
) -> Result<(HwQueue<K::Fence>, u32), SubmitError> {
    let mut pdd = HwQueuePdd {
        magic: PDD_MAGIC,
        version: HW_QUEUE_PDD_VERSION,
        priority,
        ..Default::default()
    };
    let q = kmt.create_hw_queue(context, user_mode, pdd.as_mut_bytes())?;
    let queue_id = HwQueuePdd::read_from_bytes(pdd.as_bytes()).map_or(0, |p| p.queue_id);
    Ok((q, queue_id))
}

// ---------------------------------------------------------------------------------------------
// Kernel-mode path
// ---------------------------------------------------------------------------------------------

/// Most command buffers a kernel-mode path keeps. A full buffer is replaced by the next one in
/// the ring if the GPU is done with it, else by a new one while there are fewer than this:
/// work queued behind a wait the caller itself will signal later (a CPU-signalled fence) does
/// not block the caller's next submissions until that many buffers are in flight.
const MAX_COMMAND_BUFFERS: usize = 8;

/// One command buffer of a [`KernelPath`] and the last progress value whose commands are in it.
struct CommandBuffer<M> {
    alloc: Allocation<M>,
    last_use: u64,
}

/// A kernel-mode hardware queue and its command buffers, without the thunks (its owner passes
/// them): shared by [`KernelQueue`] and the fallback of [`UserQueue`].
struct KernelPath<K: Kmt> {
    /// The kernel-mode hardware queue.
    queue: KmtHandle,
    /// Its progress fence (the OS gives every kernel-mode queue one).
    progress: QueueProgress<K::Fence>,
    queue_id: u32,
    /// A ring of equally sized buffers (never empty), filled in turn.
    cbs: Vec<CommandBuffer<K::Mem>>,
    /// The buffer being filled.
    cur: usize,
    /// Next free byte of the current buffer. Everything in `[0, head)` may still be read by
    /// the GPU; a buffer is reused from 0 only after its last submission completed.
    head: u64,
    /// The last progress value submitted on this queue.
    last: u64,
}

impl<K: Kmt> core::fmt::Debug for KernelPath<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelPath")
            .field("queue", &self.queue)
            .field("queue_id", &self.queue_id)
            .field("command_buffers", &self.cbs.len())
            .field("cur", &self.cur)
            .field("head", &self.head)
            .field("last", &self.last)
            .finish()
    }
}

impl<K: Kmt> KernelPath<K> {
    fn create(kmt: &K, context: KmtHandle, cfg: &QueueConfig) -> Result<Self, SubmitError> {
        if cfg.command_buffer_size < 8 || !cfg.command_buffer_size.is_multiple_of(8) {
            return Err(SubmitError::BadConfig);
        }
        let (HwQueue { handle, progress }, queue_id) =
            create_hw_queue(kmt, context, false, cfg.priority)?;
        let Some(progress) = progress else {
            // A kernel-mode queue completes only through its progress fence.
            let _ = kmt.destroy_hw_queue(handle);
            return Err(STATUS_INVALID_PARAMETER.into());
        };
        match kmt.create_allocation_as(
            cfg.command_buffer_size,
            crate::kmt::AllocationKind::Commands,
        ) {
            Ok(alloc) => Ok(Self {
                queue: handle,
                progress,
                queue_id,
                cbs: alloc::vec![CommandBuffer { alloc, last_use: 0 }],
                cur: 0,
                head: 0,
                last: 0,
            }),
            Err(e) => {
                let _ = kmt.destroy_hw_queue(handle);
                Err(e.into())
            }
        }
    }

    /// Largest command buffer of one submission.
    fn max_bytes(&self) -> u64 {
        self.cb_size().min(MAX_INDIRECT)
    }

    /// Size of every command buffer (the first one's; the others are made alike).
    fn cb_size(&self) -> u64 {
        self.cbs.first().map_or(0, |c| c.alloc.size)
    }

    /// Moves to a buffer the GPU is done with: the next in the ring, a new one (up to
    /// [`MAX_COMMAND_BUFFERS`]), or, with every buffer busy, the next after its last
    /// submission completes (the oldest work, not all of the queue's).
    fn next_buffer(&mut self, kmt: &K) -> Result<(), SubmitError> {
        let done = self.completed();
        let next = self.cur.saturating_add(1) % self.cbs.len().max(1);
        let busy = self.cbs.get(next).map_or(0, |c| c.last_use);
        if busy <= done {
            self.cur = next;
        } else if self.cbs.len() < MAX_COMMAND_BUFFERS {
            match kmt.create_allocation_as(self.cb_size(), crate::kmt::AllocationKind::Commands) {
                Ok(alloc) => {
                    // Inserted after the current one, so the ring stays in submission order.
                    let at = self.cur.saturating_add(1);
                    self.cbs.insert(at, CommandBuffer { alloc, last_use: 0 });
                    self.cur = at;
                }
                // No memory for another: wait for the oldest, as with every buffer busy.
                Err(_) => {
                    kmt.wait_for_fence(self.progress.fence, busy)?;
                    self.cur = next;
                }
            }
        } else {
            kmt.wait_for_fence(self.progress.fence, busy)?;
            self.cur = next;
        }
        self.head = 0;
        Ok(())
    }

    fn completed(&self) -> u64 {
        self.progress.cpu.value()
    }

    /// One `SubmitCommandToHwQueue` with the next progress value. While the KMD refuses it for
    /// room (`STATUS_INSUFFICIENT_RESOURCES`: its ring is full) and earlier work is outstanding,
    /// waits for the *oldest* outstanding submission and retries: waiting for all of them could
    /// block on work that itself waits for something this thread has yet to do. Each round
    /// retires at least one submission, so the rounds are bounded by the work in flight.
    fn submit_one(&mut self, kmt: &K, gpu: GpuVa, bytes: u64) -> Result<u64, SubmitError> {
        let len = u32::try_from(bytes).map_err(|_| SubmitError::TooLarge)?;
        // The D3DKMT layer takes the raw address.
        let gpu = gpu.get();
        let value = self.last.checked_add(1).ok_or(SubmitError::Lost)?;
        let mut rounds = self.last.saturating_sub(self.completed());
        loop {
            match kmt.submit_command_to_hw_queue(self.queue, value, gpu, len) {
                Ok(()) => break,
                Err(e) if e == STATUS_INSUFFICIENT_RESOURCES && rounds > 0 => {
                    let done = self.completed();
                    if done >= self.last {
                        return Err(e.into());
                    }
                    rounds -= 1;
                    kmt.wait_for_fence(self.progress.fence, done.saturating_add(1))?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.last = value;
        Ok(value)
    }

    /// Copies `cmds` (no INDIRECT among them) into the command buffer and submits them.
    fn submit_copied(&mut self, kmt: &K, cmds: &[Command]) -> Result<u64, SubmitError> {
        let bytes = batch_bytes(cmds);
        if bytes == 0 || bytes > self.max_bytes() {
            return Err(SubmitError::TooLarge);
        }
        if self.head.saturating_add(bytes) > self.cb_size() {
            self.next_buffer(kmt)?;
        }
        let cur = self.cur;
        let cb = &mut self.cbs.get_mut(cur).ok_or(SubmitError::Lost)?.alloc;
        let start = self.head;
        let mut off = start;
        for c in cmds {
            let ok = for_each_word(c, |w| {
                cb.mem.store(off, w);
                off = off.saturating_add(8);
            });
            if !ok {
                return Err(SubmitError::TooLarge);
            }
        }
        // The command buffer's own address plus an offset inside it.
        let at = GpuVa::new(cb.gpu_va)
            .checked_add(start)
            .ok_or(SubmitError::TooLarge)?;
        self.head = off;
        let value = self.submit_one(kmt, at, bytes)?;
        if let Some(c) = self.cbs.get_mut(cur) {
            c.last_use = value;
        }
        Ok(value)
    }

    /// Submits a batch: runs of plain packets are copied into the command buffer; an INDIRECT
    /// becomes its own submission of the buffer it names (the KMD wraps every submission in an
    /// INDIRECT, and INDIRECTs do not nest). Returns the progress value of the last
    /// submission; an empty batch is one NOP.
    fn submit(&mut self, kmt: &K, cmds: &[Command]) -> Result<u64, SubmitError> {
        check_commands(cmds)?;
        if cmds.is_empty() {
            return self.submit_copied(kmt, &[Command::Nop { len: 1 }]);
        }
        // Check sizes before anything is submitted, so a refused batch submits nothing.
        let mut run: u64 = 0;
        for c in cmds {
            match c {
                Command::Indirect { bytes, .. } => {
                    if *bytes == 0 || !bytes.is_multiple_of(8) || *bytes > MAX_INDIRECT {
                        return Err(SubmitError::TooLarge);
                    }
                    run = 0;
                }
                other => {
                    run = run.saturating_add(batch_bytes(core::slice::from_ref(other)));
                    if run > self.max_bytes() {
                        return Err(SubmitError::TooLarge);
                    }
                }
            }
        }
        let mut last = self.last;
        let mut start = 0usize;
        for (i, c) in cmds.iter().enumerate() {
            if let Command::Indirect { addr, bytes } = c {
                if let Some(run) = cmds.get(start..i).filter(|r| !r.is_empty()) {
                    self.submit_copied(kmt, run)?;
                }
                last = self.submit_one(kmt, GpuVa::new(*addr), *bytes)?;
                start = i.saturating_add(1);
            }
        }
        if let Some(run) = cmds.get(start..).filter(|r| !r.is_empty()) {
            last = self.submit_copied(kmt, run)?;
        }
        Ok(last)
    }

    fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        if value > self.last {
            return Err(SubmitError::NotSubmitted);
        }
        if self.completed() >= value {
            return Ok(None);
        }
        Ok(Some((self.progress.fence, value)))
    }

    fn wait(&self, kmt: &K, value: u64) -> Result<(), SubmitError> {
        if let Some((fence, v)) = self.wait_target(value)? {
            kmt.wait_for_fence(fence, v)?;
        }
        Ok(())
    }

    /// Queue first, then its command buffers.
    fn destroy(&self, kmt: &K) -> Result<(), SubmitError> {
        let q = kmt.destroy_hw_queue(self.queue);
        let a = self.destroy_buffers(kmt);
        q?;
        a?;
        Ok(())
    }

    /// Destroys every command buffer; the first failure is returned, the rest still destroyed.
    fn destroy_buffers(&self, kmt: &K) -> Result<(), NtStatus> {
        let mut first = Ok(());
        for c in &self.cbs {
            let r = kmt.destroy_allocation(c.alloc.handle);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// A kernel-mode hardware queue (UM-01): commands are copied into a command buffer and
/// submitted with `SubmitCommandToHwQueue`; the KMD appends `PROGRESS(value)` itself. Progress
/// values are `1, 2, ...`; a batch with INDIRECT packets takes one value per submission it
/// needs, and [`submit`](Self::submit) returns the last.
pub struct KernelQueue<K: Kmt> {
    kmt: K,
    /// Its progress sequence, for usage tracking ([`crate::usage`]).
    timeline: crate::usage::TimelineId,
    /// Set when the queue is destroyed ([`crate::usage::Timeline::retired_flag`]).
    retired: alloc::sync::Arc<core::sync::atomic::AtomicBool>,
    context: KmtHandle,
    path: KernelPath<K>,
    trace: Option<Arc<dyn FenceTrace>>,
    closed: bool,
}

impl<K: Kmt> core::fmt::Debug for KernelQueue<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelQueue")
            .field("context", &self.context)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl<K: Kmt> KernelQueue<K> {
    /// Creates a context on `config.node`, a hardware queue without `UserModeSubmission` and
    /// a command buffer of `config.command_buffer_size` bytes.
    pub fn new(kmt: K, config: &QueueConfig) -> Result<Self, SubmitError> {
        let context = kmt.create_context(config.node)?;
        match KernelPath::create(&kmt, context, config) {
            Ok(path) => Ok(Self {
                kmt,
                timeline: crate::usage::TimelineId::fresh(),
                retired: alloc::sync::Arc::new(core::sync::atomic::AtomicBool::new(false)),
                context,
                path,
                trace: None,
                closed: false,
            }),
            Err(e) => {
                let _ = kmt.destroy_context(context);
                Err(e)
            }
        }
    }

    /// Submits `cmds`; returns the progress value that marks their completion. The commands
    /// go to the GPU as they are: a LOG_WRITE among them faults the queue (`NoLog`: kernel-mode
    /// queues have no logs).
    pub fn submit(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        self.path.submit(&self.kmt, cmds)
    }

    /// Submits native-fence operations and packets (docs/logs.md#umd). A kernel-mode queue has
    /// no logs, so no LOG_WRITE is emitted; each signal and wait is still reported to the
    /// [`FenceTrace`] (with `logged: false`) once the batch is submitted.
    pub fn submit_ops(&mut self, ops: &[Op<'_>]) -> Result<u64, SubmitError> {
        let qpc = trace_timestamp(&self.kmt, self.trace.as_ref());
        let e = expand_ops(ops, LogCursor::new(), false, self.path.queue_id, qpc)?;
        let value = self.path.submit(&self.kmt, &e.cmds)?;
        report(self.trace.as_ref(), &e.ops);
        Ok(value)
    }

    /// Installs (or with `None` removes) the receiver of the "queued" events.
    pub fn set_fence_trace(&mut self, trace: Option<Arc<dyn FenceTrace>>) {
        self.trace = trace;
    }

    /// Blocks until the progress fence reaches `value`.
    pub fn wait(&self, value: u64) -> Result<(), SubmitError> {
        self.path.wait(&self.kmt, value)
    }

    /// What to wait on for `value`: `None` if it completed, else the progress fence and the
    /// value it must reach (for callers that wait with a timeout themselves).
    pub fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        self.path.wait_target(value)
    }

    /// The progress fence's current value.
    pub fn completed(&self) -> u64 {
        self.path.completed()
    }

    /// Its progress sequence's id ([`crate::usage::Timeline`]).
    pub fn timeline(&self) -> crate::usage::TimelineId {
        self.timeline
    }

    /// Set once the queue is destroyed (its work is over then).
    pub fn retired_flag(&self) -> alloc::sync::Arc<core::sync::atomic::AtomicBool> {
        alloc::sync::Arc::clone(&self.retired)
    }

    /// The last progress value submitted.
    pub fn last_submitted(&self) -> u64 {
        self.path.last
    }

    /// MF-03 GPU wait, OS-scheduled: every batch submitted after this call waits until
    /// `fence` (a monitored fence's D3DKMT handle) reaches `value`
    /// (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`, the hardware-queue form of
    /// `WaitForSynchronizationObjectFromGpu`). Returns at once.
    ///
    /// MF-03 asks the UMD to flush its pending work first. This queue has none: every
    /// [`submit`](Self::submit) hands its batch to the OS before it returns (a command buffer is
    /// never kept back), so the batches before the wait are already ahead of it in the OS's
    /// list and the flush is the thunk alone. The wait holds only later work of this queue; the
    /// GPU is not blocked, and a CPU [`wait`](Self::wait) on a value submitted behind an
    /// unsatisfied GPU wait blocks until it is satisfied (as does a command-buffer wrap, which
    /// waits for the queue's last submission).
    pub fn gpu_wait_monitored(&mut self, fence: KmtHandle, value: u64) -> Result<(), SubmitError> {
        self.kmt
            .submit_wait_to_hw_queue(self.path.queue, &[(fence, value)])?;
        Ok(())
    }

    /// MF-03 GPU signal for an engine that cannot write the fence through its VA: a software
    /// signal packet (`D3DKMTSubmitSignalSyncObjectsToHwQueue`, the hardware-queue form of
    /// `SignalSynchronizationObjectFromGpu`): the OS sets `fence` to `value` once every batch
    /// submitted before this call completed. Returns at once. An engine that can write the
    /// fence signals it in the stream instead: `Command::FenceSignal` to the fence's GPU VA in a
    /// [`submit`](Self::submit) batch (the fence-write command).
    pub fn gpu_signal_monitored_os(
        &mut self,
        fence: KmtHandle,
        value: u64,
    ) -> Result<(), SubmitError> {
        self.kmt
            .submit_signal_to_hw_queue(self.path.queue, &[(fence, value)])?;
        Ok(())
    }

    /// The kernel-mode hardware queue's D3DKMT handle.
    pub fn queue_handle(&self) -> KmtHandle {
        self.path.queue
    }

    /// The queue's progress fence (a monitored fence's D3DKMT handle: another queue may wait
    /// on it with [`gpu_wait_monitored`](Self::gpu_wait_monitored)).
    pub fn progress_fence(&self) -> KmtHandle {
        self.path.progress.fence
    }

    /// The device's queue id (from [`HwQueuePdd`]).
    pub fn queue_id(&self) -> u32 {
        self.path.queue_id
    }

    /// The thunks.
    pub fn kmt(&self) -> &K {
        &self.kmt
    }

    /// Waits for the last submission, then destroys queue, command buffer and context.
    pub fn close(mut self) -> Result<(), SubmitError> {
        let waited = self.wait(self.path.last);
        let destroyed = self.teardown();
        waited?;
        destroyed
    }

    fn teardown(&mut self) -> Result<(), SubmitError> {
        if core::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        let p = self.path.destroy(&self.kmt);
        if p.is_ok() {
            // As for a user-mode queue: a destroyed queue no longer runs.
            self.retired
                .store(true, core::sync::atomic::Ordering::Release);
        }
        let c = self.kmt.destroy_context(self.context);
        p?;
        c?;
        Ok(())
    }
}

impl<K: Kmt> Drop for KernelQueue<K> {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

// ---------------------------------------------------------------------------------------------
// User-mode queue
// ---------------------------------------------------------------------------------------------

/// How many times one submission rings again after `DISCONNECTED_RETRY` and a successful
/// reconnect before it gives up on the doorbell and falls back (UM-19 says "repeat"; the bound
/// only stops a livelock of two queues victimising each other forever).
pub const MAX_RETRIES: u32 = 1024;

/// How many times the back-pressure wait polls the read pointer after the progress fence
/// showed the space free (the CMP stores `read_ptr` right after the packet's effects).
const READ_PTR_POLLS: u32 = 1 << 20;

/// The kernel-mode side after a fallback.
struct Fallback<K: Kmt> {
    path: KernelPath<K>,
    /// The user-mode progress fence's value when the ring became quiescent: every value up to
    /// it completed on the user-mode queue.
    user_completed: u64,
    /// `(caller's value, kernel-mode queue's value)` of batches not yet seen complete, in
    /// submission order.
    pending: VecDeque<(u64, u64)>,
}

impl<K: Kmt> Fallback<K> {
    /// Drops the pending batches that completed.
    fn prune(&mut self) {
        let done = self.path.completed();
        while self.pending.front().is_some_and(|&(_, phys)| phys <= done) {
            self.pending.pop_front();
        }
    }
}

/// A user-mode hardware queue: its own ring, ring control and doorbell (UM-16, UM-19), with
/// the kernel-mode fallback. See the module documentation for the protocol.
pub struct UserQueue<K: Kmt> {
    kmt: K,
    /// Its progress sequence (one across a fallback), for usage tracking ([`crate::usage`]).
    timeline: crate::usage::TimelineId,
    /// Set when the queue is destroyed ([`crate::usage::Timeline::retired_flag`]).
    retired: alloc::sync::Arc<core::sync::atomic::AtomicBool>,
    /// Allocations destroyed while this queue's work (which the OS cannot see) still used
    /// them ([`UserQueue::retain_until`]).
    retained: crate::retain::RetainList,
    config: QueueConfig,
    context: KmtHandle,
    /// The user-mode hardware queue.
    queue: KmtHandle,
    /// What its batches complete on.
    progress: Progress<K::Fence>,
    /// The packet that closes each batch.
    closing: ClosingPacket,
    queue_id: u32,
    ring: Allocation<K::Mem>,
    control: Allocation<K::Mem>,
    /// `None` once destroyed by a fallback.
    doorbell: Option<Doorbell<K::Doorbell>>,
    ring_value: DoorbellValue,
    writer: RingWriter<RingView<K::Mem>>,
    /// The last progress value picked (N).
    last: u64,
    /// `(progress value, write pointer after its closing packet)` of batches in the ring that
    /// the CMP may not have consumed yet.
    in_flight: VecDeque<(u64, u64)>,
    /// The doorbell could not be connected at creation: fall back at the first submission.
    connect_failed: bool,
    fallback: Option<Fallback<K>>,
    /// The next index of the user-mode queue's wait and signal logs (LOG-02).
    cursor: LogCursor,
    /// Receiver of the "queued" events.
    trace: Option<Arc<dyn FenceTrace>>,
    lost: bool,
    closed: bool,
}

/// What [`UserQueue::new`] created so far, destroyed in reverse if a later step fails.
struct Partial<'a, K: Kmt> {
    kmt: &'a K,
    context: Option<KmtHandle>,
    queue: Option<KmtHandle>,
    /// The queue's own progress fence (when the OS gave it none).
    fence: Option<KmtHandle>,
    allocations: [Option<KmtHandle>; 2],
    doorbell: Option<KmtHandle>,
}

impl<K: Kmt> Partial<'_, K> {
    fn disarm(&mut self) {
        self.context = None;
        self.queue = None;
        self.fence = None;
        self.allocations = [None, None];
        self.doorbell = None;
    }
}

impl<K: Kmt> Drop for Partial<'_, K> {
    fn drop(&mut self) {
        if let Some(d) = self.doorbell {
            let _ = self.kmt.destroy_doorbell(d);
        }
        if let Some(q) = self.queue {
            let _ = self.kmt.destroy_hw_queue(q);
        }
        if let Some(f) = self.fence {
            let _ = self.kmt.destroy_native_fence(f);
        }
        for a in self.allocations.iter().flatten() {
            let _ = self.kmt.destroy_allocation(*a);
        }
        if let Some(c) = self.context {
            let _ = self.kmt.destroy_context(c);
        }
    }
}

impl<K: Kmt> core::fmt::Debug for UserQueue<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UserQueue")
            .field("context", &self.context)
            .field("queue", &self.queue)
            .field("progress_fence", &self.progress.fence())
            .field("queue_id", &self.queue_id)
            .field("doorbell", &self.doorbell.as_ref().map(|d| d.handle))
            .field("ring_value", &self.ring_value)
            .field("write_ptr", &self.writer.write_ptr())
            .field("last", &self.last)
            .field("path", &self.path())
            .field("kernel_path", &self.fallback.as_ref().map(|f| &f.path))
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

impl<K: Kmt> UserQueue<K> {
    /// Creates context, user-mode hardware queue (and, if the OS gave it no progress fence, a
    /// native fence of its own for that), ring and ring control, and doorbell, and connects
    /// the doorbell. A failed connect (or a doorbell that reads
    /// `DISCONNECTED_ABORT`) is not an error: the queue then submits through the kernel-mode
    /// path from its first submission on (UM-19).
    pub fn new(kmt: K, config: &QueueConfig) -> Result<Self, SubmitError> {
        let size = config.ring_size;
        if !size.is_power_of_two() || !(RING_MIN..=RING_MAX).contains(&size) {
            return Err(SubmitError::BadConfig);
        }
        let mut partial = Partial {
            kmt: &kmt,
            context: None,
            queue: None,
            fence: None,
            allocations: [None, None],
            doorbell: None,
        };
        let context = kmt.create_context(config.node)?;
        partial.context = Some(context);
        let (
            HwQueue {
                handle: queue,
                progress,
            },
            queue_id,
        ) = create_hw_queue(&kmt, context, true, config.priority)?;
        partial.queue = Some(queue);
        let progress = match progress {
            Some(p) => Progress::Os(p),
            None => {
                let fence = kmt.create_native_fence(0)?;
                partial.fence = Some(fence.kmt);
                Progress::Own {
                    cpu: kmt.native_fence_cpu(&fence)?,
                    fence,
                }
            }
        };
        let closing = progress.closing_packet()?;
        let ring =
            kmt.create_allocation_as(u64::from(size), crate::kmt::AllocationKind::Commands)?;
        partial.allocations[0] = Some(ring.handle);
        let control =
            kmt.create_allocation_as(RingControl::SIZE, crate::kmt::AllocationKind::RingControl)?;
        partial.allocations[1] = Some(control.handle);
        // Fresh ring control: both pointers at 0 (the allocation need not be zeroed).
        control.mem.store(RingControl::WRITE_PTR, 0);
        control.mem.store(RingControl::READ_PTR, 0);

        // The KMD takes the ring and its control block from the allocations; the private data
        // says how much of the ring allocation is ring (16 bytes at most, BR-96).
        let mut pdd = DoorbellPdd::for_ring(size);
        let doorbell =
            kmt.create_doorbell(queue, ring.handle, control.handle, pdd.as_mut_bytes())?;
        partial.doorbell = Some(doorbell.handle);
        let ring_value =
            DoorbellValue::from_u32(pdd.ring_value).ok_or(SubmitError::BadPrivateData)?;
        // The global doorbell is rung with the id the doorbell's private data names.
        let queue_id = match ring_value {
            DoorbellValue::QueueId => pdd.queue_id,
            DoorbellValue::WritePtr => queue_id,
        };
        let view = RingView {
            ring: ring.mem.clone(),
            control: control.mem.clone(),
        };
        let writer = RingWriter::new(view, size, 0)?;

        let connect_failed = kmt.connect_doorbell(doorbell.handle).is_err()
            || matches!(
                doorbell.cpu.status(),
                DoorbellStatus::DisconnectedAbort | DoorbellStatus::Unknown(_)
            );
        partial.disarm();
        drop(partial);
        Ok(Self {
            kmt,
            timeline: crate::usage::TimelineId::fresh(),
            retired: alloc::sync::Arc::new(core::sync::atomic::AtomicBool::new(false)),
            config: *config,
            context,
            queue,
            progress,
            closing,
            queue_id,
            ring,
            control,
            doorbell: Some(doorbell),
            ring_value,
            writer,
            last: 0,
            in_flight: VecDeque::new(),
            connect_failed,
            fallback: None,
            cursor: LogCursor::new(),
            trace: None,
            lost: false,
            closed: false,
            retained: crate::retain::RetainList::default(),
        })
    }

    /// Whether the OS sees this queue's work: it gave the queue its progress fence (the
    /// pages), so VidMm defers destroying memory the work uses (AL-03). 24H2 gives a
    /// user-mode queue none; after a fallback the later work is the kernel-mode queue's, but
    /// earlier batches stay unseen.
    pub fn os_sees_work(&self) -> bool {
        matches!(self.progress, Progress::Os(_))
    }

    /// AL-03 done by the UMD for work the OS cannot see ([`crate::retain`]): holds `r` until
    /// this queue completes `value` (or is destroyed). Never blocks but in the rare case that
    /// there is no room to hold it (then it waits for `value` and lets go at once).
    pub fn retain_until(&self, r: alloc::sync::Arc<crate::retain::Retained>, value: u64) {
        if let Err(r) = self.retained.push(r, value) {
            let _ = self.wait(value);
            let _ = r.release(&self.kmt);
        }
        self.reap_retained();
    }

    /// Lets go of the retained allocations whose work completed.
    pub fn reap_retained(&self) {
        self.retained.reap(&self.kmt, self.completed(), self.closed);
    }

    /// Submits `cmds` (UM-16, UM-19); returns the progress value that marks their completion.
    ///
    /// The commands are written as they are; the caller then owns any LOG_WRITE among them
    /// (use [`submit_ops`](Self::submit_ops) to have the queue log native-fence operations).
    /// After a fallback to the kernel-mode path, LOG_WRITEs are dropped (that queue has no
    /// logs).
    pub fn submit(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        self.submit_batch(cmds).map(|(value, _)| value)
    }

    /// Submits native-fence operations and packets as one batch (docs/logs.md#umd, LOG-02,
    /// LOG-04); returns the progress value that marks their completion.
    ///
    /// On the user-mode path each [`Op::Signal`] becomes `FENCE_SIGNAL` (conditional
    /// interrupt) immediately followed by the signal-log `LOG_WRITE` with the log's next index,
    /// each [`Op::Wait`] `FENCE_WAIT` followed by the wait-log `LOG_WRITE`; the batch is
    /// published with one write-pointer update. The indices are committed only if the batch
    /// went into the ring: a refused batch (`TooLarge`, `BadCommand`, a lost queue) uses none.
    /// After the fallback to the kernel-mode path no LOG_WRITE is emitted and the events say
    /// `logged: false`. Each signal and wait is reported to the [`FenceTrace`], in order, after
    /// the submission returned.
    pub fn submit_ops(&mut self, ops: &[Op<'_>]) -> Result<u64, SubmitError> {
        if self.lost {
            return Err(SubmitError::Lost);
        }
        if self.connect_failed && self.fallback.is_none() {
            self.fall_back()?;
        }
        let qpc = trace_timestamp(&self.kmt, self.trace.as_ref());
        let user_mode = self.fallback.is_none();
        let queue_id = self.carrier_queue_id();
        let mut e = expand_ops(ops, self.cursor, user_mode, queue_id, qpc)?;
        let (value, path) = self.submit_batch(&e.cmds[..])?;
        if path == SubmissionPath::UserMode {
            self.cursor = e.cursor;
        } else if user_mode {
            // Fell back before the batch reached the ring: it went to the kernel-mode queue
            // without its LOG_WRITEs.
            let id = self.carrier_queue_id();
            for op in &mut e.ops {
                *op = crate::fencelog::QueuedOp {
                    queue_id: id,
                    index: 0,
                    logged: false,
                    ..*op
                };
            }
        }
        report(self.trace.as_ref(), &e.ops);
        Ok(value)
    }

    /// Installs (or with `None` removes) the receiver of the "queued" events.
    pub fn set_fence_trace(&mut self, trace: Option<Arc<dyn FenceTrace>>) {
        self.trace = trace;
    }

    /// The next indices of the user-mode queue's logs.
    pub fn log_cursor(&self) -> LogCursor {
        self.cursor
    }

    /// Test hook: start the logs elsewhere (index wrap tests).
    #[cfg(test)]
    pub(crate) fn set_log_cursor(&mut self, cursor: LogCursor) {
        self.cursor = cursor;
    }

    /// The device queue id of the queue that currently carries submissions.
    fn carrier_queue_id(&self) -> u32 {
        self.fallback
            .as_ref()
            .map_or(self.queue_id, |fb| fb.path.queue_id)
    }

    /// Submits the packets of `batch` as they are checked on their way into the ring (the
    /// C API's dwords, [`crate::packets::Dwords`]); returns the progress value that marks
    /// their completion. As [`submit`](Self::submit) otherwise.
    pub fn submit_packets<P: Packets + ?Sized>(&mut self, batch: &P) -> Result<u64, SubmitError> {
        self.submit_batch(batch).map(|(value, _)| value)
    }

    /// [`submit`](Self::submit), also saying which path carried the batch. The hot path (a
    /// connected queue, room for the batch by the read pointer last loaded, nothing
    /// retained): one pass checks the packets and stores them with the closing packet, then
    /// the batch is published; anything else takes
    /// [`submit_batch_slow`](Self::submit_batch_slow). Nothing is stored before the room is
    /// known to be there.
    #[inline]
    fn submit_batch<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        let usual = !self.lost && !self.connect_failed && self.fallback.is_none();
        if usual && !self.retained.holds_any() {
            let fits = batch.size().and_then(|words| {
                let bytes = words.saturating_mul(8).saturating_add(self.closing.bytes());
                (bytes <= self.writer.known_free()).then_some(bytes)
            });
            if let (Some(bytes), Some(value)) = (fits, self.last.checked_add(1)) {
                self.closing.set_value(value);
                match self.writer.push_packets(batch, self.closing.words(), bytes) {
                    Ok(()) => return self.publish(value),
                    Err(Refused::Bad) => return Err(SubmitError::BadCommand),
                    // Not the length it said: refused below.
                    Err(Refused::Room) => {}
                }
            }
        }
        self.submit_batch_slow(batch)
    }

    /// The batch of `value`, in the ring up to the write pointer: UM-16 steps 3 to 5.
    #[inline(always)]
    fn publish(&mut self, value: u64) -> Result<(u64, SubmissionPath), SubmitError> {
        // UM-16 1: N+1 (picked by the caller). 2: the commands and the packet that writes
        // N+1 to the progress fence went into the ring.
        self.last = value;
        let end = self.writer.write_ptr();
        // Drop batches before the read pointer last loaded, so the list stays bounded by what
        // the ring holds (an application that waits with `wait()` never makes the ring fill).
        self.prune_in_flight();
        self.in_flight.push_back((value, end));
        let doorbell = self.doorbell.as_ref().ok_or(SubmitError::Lost)?;
        // 3: the last-queued value where the OS reads it.
        doorbell.cpu.set_last_queued(value);
        // 4: write_ptr (Release). 5 and the status loop: ring_and_check.
        self.writer.publish();
        self.ring_and_check()?;
        Ok((value, SubmissionPath::UserMode))
    }

    /// Every other case of [`submit_batch`](Self::submit_batch): a lost queue, retained
    /// allocations to reap, a fallback, a ring too full by the read pointer last loaded.
    #[cold]
    fn submit_batch_slow<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        if self.lost {
            return Err(SubmitError::Lost);
        }
        if self.retained.holds_any() {
            self.reap_retained();
        }
        // Refuse what does not encode, and its length.
        let cmd_bytes = batch
            .words()
            .map_err(|_| SubmitError::BadCommand)?
            .saturating_mul(8);
        if self.connect_failed && self.fallback.is_none() {
            self.fall_back()?;
        }
        if self.fallback.is_some() {
            return self.submit_kernel_packets(batch);
        }
        let value = self.last.checked_add(1).ok_or(SubmitError::Lost)?;
        let bytes = cmd_bytes.saturating_add(self.closing.bytes());
        if bytes > u64::from(self.config.ring_size) {
            return Err(SubmitError::TooLarge);
        }
        // Back-pressure: never overwrite unconsumed packets. `reserve` checks the room
        // against the read pointer the writer last loaded (the CMP only moves it forward, so
        // that room is always there) and loads ring control only when that says "full".
        self.closing.set_value(value);
        while !self.writer.reserve(bytes)? {
            self.wait_for_space(bytes)?;
            if self.fallback.is_some() {
                return self.submit_kernel_packets(batch);
            }
        }
        if self
            .writer
            .push_packets(batch, self.closing.words(), bytes)
            .is_err()
        {
            // Longer than the room it reserved, or refused after it was measured: cannot
            // be, the length came from the same packets.
            self.lost = true;
            return Err(RingError::Full.into());
        }
        self.publish(value)
    }

    /// The kernel-mode path of a batch (after a fallback).
    fn submit_kernel_packets<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        let cmds = batch.commands().map_err(|_| SubmitError::BadCommand)?;
        self.submit_kernel_path(&cmds)
    }

    fn submit_kernel_path(
        &mut self,
        cmds: &[Command],
    ) -> Result<(u64, SubmissionPath), SubmitError> {
        self.submit_kernel(cmds)
            .map(|value| (value, SubmissionPath::KernelMode))
    }

    /// The doorbell value of this queue's ring.
    fn ring_word(&self) -> u64 {
        match self.ring_value {
            DoorbellValue::WritePtr => self.writer.write_ptr(),
            DoorbellValue::QueueId => u64::from(self.queue_id),
        }
    }

    /// UM-16 step 5 and the UM-19 status loop; falls back when the doorbell cannot be used.
    #[inline(always)]
    fn ring_and_check(&mut self) -> Result<(), SubmitError> {
        let word = self.ring_word();
        let Some(db) = self.doorbell.as_ref() else {
            return Err(SubmitError::Lost);
        };
        db.cpu.ring(word);
        match db.cpu.status() {
            DoorbellStatus::Connected => Ok(()),
            status => self.handle_status(word, status),
        }
    }

    /// The UM-19 status loop after a ring read anything but `CONNECTED`.
    #[cold]
    fn handle_status(&mut self, word: u64, first: DoorbellStatus) -> Result<(), SubmitError> {
        let mut status = first;
        let mut retries = 0u32;
        let usable = loop {
            let Some(db) = self.doorbell.as_ref() else {
                return Err(SubmitError::Lost);
            };
            match status {
                DoorbellStatus::Connected => break true,
                DoorbellStatus::ConnectedNotify => {
                    break self.kmt.notify_work_submission(db.handle).is_ok()
                }
                DoorbellStatus::DisconnectedRetry => {
                    if retries >= MAX_RETRIES || self.kmt.connect_doorbell(db.handle).is_err() {
                        break false;
                    }
                    retries = retries.saturating_add(1);
                    db.cpu.ring(word);
                    status = db.cpu.status();
                }
                DoorbellStatus::DisconnectedAbort | DoorbellStatus::Unknown(_) => break false,
            }
        };
        if usable {
            Ok(())
        } else {
            self.fall_back()
        }
    }

    /// The ring lacks `bytes`: make sure the CMP knows about the work in it (ring again through
    /// the status loop), wait on the progress fence for the oldest batch whose consumption
    /// frees enough, and let the read pointer catch up.
    fn wait_for_space(&mut self, bytes: u64) -> Result<(), SubmitError> {
        self.writer.free()?;
        self.prune_in_flight();
        let need_read = self
            .writer
            .write_ptr()
            .saturating_add(bytes)
            .saturating_sub(u64::from(self.config.ring_size));
        let Some(&(target, _)) = self.in_flight.iter().find(|(_, end)| *end >= need_read) else {
            return Err(SubmitError::Ring(RingError::Corrupt));
        };
        self.ring_and_check()?;
        if self.fallback.is_some() {
            return Ok(());
        }
        if self.progress.value() < target {
            self.kmt.wait_for_fence(self.progress.fence(), target)?;
        }
        for _ in 0..READ_PTR_POLLS {
            if self.writer.free()? >= bytes {
                self.prune_in_flight();
                return Ok(());
            }
            core::hint::spin_loop();
        }
        // The fence says the space is free but the read pointer never got there.
        self.lost = true;
        Err(SubmitError::Lost)
    }

    /// Drops the batches before the read pointer the writer last loaded (no load of its own).
    #[inline(always)]
    fn prune_in_flight(&mut self) {
        let read = self.writer.seen_read_ptr();
        while self.in_flight.front().is_some_and(|&(_, end)| end <= read) {
            self.in_flight.pop_front();
        }
    }

    fn writer_read_ptr(&self) -> u64 {
        self.control.mem.load(RingControl::READ_PTR)
    }

    /// UM-19 fallback: destroy the doorbell (the queue leaves the runlist: the ring is
    /// quiescent), then resubmit every unconsumed batch through a kernel-mode queue.
    fn fall_back(&mut self) -> Result<(), SubmitError> {
        if self.fallback.is_some() {
            return Ok(());
        }
        if let Some(db) = self.doorbell.take() {
            if self.kmt.destroy_doorbell(db.handle).is_err() {
                // The queue may still be in the runlist: resubmitting could run work twice.
                self.lost = true;
                return Err(SubmitError::Lost);
            }
        }
        let user_completed = self.progress.value();
        if user_completed > self.last {
            // Not a value this queue wrote: the OS reports the device removed this way (as
            // D3D12 fences read UINT64_MAX then). What ran is unknown: recreate (UM-10).
            self.lost = true;
            return Err(SubmitError::Kmt(crate::kmt::STATUS_DEVICE_REMOVED));
        }
        let batches = match self.unconsumed_batches() {
            Ok(b) => b,
            Err(e) => {
                self.lost = true;
                return Err(e);
            }
        };
        let path = match KernelPath::create(&self.kmt, self.context, &self.config) {
            Ok(p) => p,
            Err(e) => {
                self.lost = true;
                return Err(e);
            }
        };
        let mut fb = Fallback {
            path,
            user_completed,
            pending: VecDeque::new(),
        };
        let mut result = Ok(());
        for (value, cmds) in &batches {
            // The kernel-mode queue has no logs: the LOG_WRITEs stay behind (their entries
            // are simply never written; the OS's cursor does not need them).
            let cmds = without_log_writes(cmds);
            match fb.path.submit(&self.kmt, &cmds) {
                Ok(phys) => fb.pending.push_back((*value, phys)),
                Err(e) => {
                    self.lost = true;
                    result = Err(e);
                    break;
                }
            }
        }
        self.in_flight.clear();
        self.fallback = Some(fb);
        result
    }

    /// Decodes the packets between the read and write pointers of the (quiescent) ring into
    /// batches, each with the progress value of its closing packet (PROGRESS, or the own
    /// fence's FENCE_SIGNAL).
    #[allow(clippy::type_complexity)]
    fn unconsumed_batches(&self) -> Result<Vec<(u64, Vec<Command>)>, SubmitError> {
        let corrupt = SubmitError::Ring(RingError::Corrupt);
        let size = u64::from(self.config.ring_size);
        let words = size / 8;
        let mut ptr = self.writer_read_ptr();
        let end = self.writer.write_ptr();
        if ptr > end || end - ptr > size || !ptr.is_multiple_of(8) {
            return Err(corrupt);
        }
        let ring = &self.ring.mem;
        let word_at = |p: u64| ring.load(((p / 8) % words) * 8);
        let mut batches = Vec::new();
        let mut current = Vec::new();
        while ptr < end {
            let h = decode_header(word_at(ptr)).map_err(|_| corrupt)?;
            let len = u64::from(h.len);
            let mut packet = Vec::with_capacity(usize::from(h.len));
            for i in 0..len {
                packet.push(word_at(ptr.saturating_add(i.saturating_mul(8))));
            }
            let cmd = decode(&packet).map_err(|_| corrupt)?;
            ptr = ptr.saturating_add(len.saturating_mul(8));
            match self.progress.closes(&cmd) {
                Some(value) => batches.push((value, core::mem::take(&mut current))),
                None => current.push(cmd),
            }
        }
        if ptr != end || !current.is_empty() {
            return Err(corrupt);
        }
        Ok(batches)
    }

    fn submit_kernel(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        let value = self.last.checked_add(1).ok_or(SubmitError::Lost)?;
        let Some(fb) = self.fallback.as_mut() else {
            return Err(SubmitError::Lost);
        };
        fb.prune();
        let stripped;
        let cmds = if has_log_writes(cmds) {
            stripped = without_log_writes(cmds);
            &stripped[..]
        } else {
            cmds
        };
        let phys = match fb.path.submit(&self.kmt, cmds) {
            Ok(p) => p,
            Err(SubmitError::TooLarge) => return Err(SubmitError::TooLarge),
            Err(e) => {
                // UM-10: the kernel-mode path failed as well; the caller recreates the queue.
                self.lost = true;
                return Err(e);
            }
        };
        fb.pending.push_back((value, phys));
        self.last = value;
        Ok(value)
    }

    /// Blocks until the work of progress value `value` (from [`submit`](Self::submit)) has
    /// completed.
    pub fn wait(&self, value: u64) -> Result<(), SubmitError> {
        if let Some((fence, v)) = self.wait_target(value)? {
            self.kmt.wait_for_fence(fence, v)?;
        }
        if !self.retained.is_empty() {
            self.reap_retained();
        }
        Ok(())
    }

    /// What to wait on for progress value `value`: `None` if it completed, else the fence
    /// (the user-mode queue's, or after a fallback the kernel-mode queue's) and the value it
    /// must reach. For callers that wait with a timeout themselves (the C API).
    pub fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        if value > self.last {
            return Err(SubmitError::NotSubmitted);
        }
        match &self.fallback {
            None => Ok((self.progress.value() < value).then_some((self.progress.fence(), value))),
            Some(fb) => {
                if value <= fb.user_completed {
                    return Ok(None);
                }
                // The first pending batch at or after `value` completes after it; none left:
                // pruned, so complete.
                match fb.pending.iter().find(|(logical, _)| *logical >= value) {
                    Some(&(_, phys)) => fb.path.wait_target(phys),
                    None => Ok(None),
                }
            }
        }
    }

    /// The highest progress value known complete (non-blocking).
    pub fn completed(&self) -> u64 {
        match &self.fallback {
            None => self.progress.value().min(self.last),
            Some(fb) => {
                let done = fb.path.completed();
                let mut known = fb.user_completed.min(self.last);
                for &(logical, phys) in &fb.pending {
                    if phys > done {
                        return known;
                    }
                    known = logical;
                }
                self.last
            }
        }
    }

    /// The last progress value submitted.
    pub fn last_submitted(&self) -> u64 {
        self.last
    }

    /// Its progress sequence's id ([`crate::usage::Timeline`]).
    pub fn timeline(&self) -> crate::usage::TimelineId {
        self.timeline
    }

    /// Set once the queue is destroyed (its work is over then).
    pub fn retired_flag(&self) -> alloc::sync::Arc<core::sync::atomic::AtomicBool> {
        alloc::sync::Arc::clone(&self.retired)
    }

    /// Which path submissions currently take.
    pub fn path(&self) -> SubmissionPath {
        if self.fallback.is_some() || self.connect_failed {
            SubmissionPath::KernelMode
        } else {
            SubmissionPath::UserMode
        }
    }

    /// What the doorbell's status page says now (`None`: the queue has no doorbell any more).
    pub fn doorbell_status(&self) -> Option<DoorbellStatus> {
        self.doorbell.as_ref().map(|d| d.cpu.status())
    }

    /// True once the queue is unusable (UM-10): drop it and create a new one.
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// The device's queue id of the user-mode queue.
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// What a ring of this queue's doorbell writes.
    pub fn ring_value(&self) -> DoorbellValue {
        self.ring_value
    }

    /// The handle of the fence the user-mode queue's batches complete on: the OS's progress
    /// fence, or the queue's own native fence when the OS gave it none.
    pub fn progress_fence(&self) -> KmtHandle {
        self.progress.fence()
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// The thunks.
    pub fn kmt(&self) -> &K {
        &self.kmt
    }

    /// Normal close (UM-17 from the UMD's side): waits for the last submitted value (unless
    /// the queue is lost), then destroys doorbell, queues, allocations and context.
    pub fn close(mut self) -> Result<(), SubmitError> {
        let waited = if self.lost || self.last == 0 {
            Ok(())
        } else {
            self.wait(self.last)
        };
        let destroyed = self.teardown();
        waited?;
        destroyed
    }

    /// Doorbell, hardware queues, the queue's own progress fence, allocations, context; every
    /// step is attempted, the first failure is reported.
    fn teardown(&mut self) -> Result<(), SubmitError> {
        if core::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        let mut first: Result<(), SubmitError> = Ok(());
        let mut note = |r: Result<(), NtStatus>| {
            if let (Err(e), Ok(())) = (r, &first) {
                first = Err(SubmitError::Kmt(e));
            }
        };
        if let Some(db) = self.doorbell.take() {
            note(self.kmt.destroy_doorbell(db.handle));
        }
        let q = self.kmt.destroy_hw_queue(self.queue);
        let fq = self
            .fallback
            .as_ref()
            .map_or(Ok(()), |fb| self.kmt.destroy_hw_queue(fb.path.queue));
        // Once destroyed, the queue is off the hardware (its work completed or never runs):
        // uses recorded on it are over.
        if q.is_ok() && fq.is_ok() {
            self.retired
                .store(true, core::sync::atomic::Ordering::Release);
        }
        note(q);
        note(fq);
        // The queue is off the hardware: what it retained is free (`closed` is set).
        self.reap_retained();
        // After the queue: no batch of it can signal the fence any more.
        if let Progress::Own { fence, .. } = &self.progress {
            note(self.kmt.destroy_native_fence(fence.kmt));
        }
        note(self.kmt.destroy_allocation(self.ring.handle));
        note(self.kmt.destroy_allocation(self.control.handle));
        if let Some(fb) = &self.fallback {
            note(fb.path.destroy_buffers(&self.kmt));
        }
        note(self.kmt.destroy_context(self.context));
        first
    }
}

impl<K: Kmt> Drop for UserQueue<K> {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
#[path = "submit_tests.rs"]
mod tests;
