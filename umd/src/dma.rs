//! A kernel-mode DMA context: a context on one node whose work goes through the OS's scheduler
//! one DMA buffer at a time, as the D3D runtime submits on a context of a GPU-VA device. On a
//! node without context scheduling that is `D3DKMTSubmitCommand` (VidSch's fence IDs and TDR
//! path). On a hardware-scheduled node ([`crate::nodes`]) the context is created with
//! `HwQueueSupported`, which 24H2 requires there (`K:DXGCONTEXT::Initialize` @0x1402CFD80) and
//! which makes `D3DKMTSubmitCommand` refuse it (`K:DxgkSubmitCommandInternal` @0x1402A4B90):
//! the context gets one kernel-mode hardware queue and each DMA buffer goes to it
//! (`D3DKMTSubmitCommandToHwQueue`), its completion tracked by the queue's progress fence
//! ([`Tracking::Queue`]).
//!
//! [`DmaContext::new`] creates the context (`D3DKMTCreateContextVirtual`), its queue where the
//! node needs one, and its command buffer (an allocation of [`AllocationKind::Commands`]);
//! [`DmaContext::submit`] copies a packet list into the command buffer and submits that range
//! by its GPU VA; [`DmaContext::close`] destroys the queue, the context, then the buffer.
//!
//! A submission's words stay in the buffer until the GPU ran them (on Windows the GPU reads a
//! DMA buffer when it executes it, not when it is submitted), so the command buffer is a ring
//! with completion tracking: each submission ends with a GPU signal of a native fence the
//! context owns to the submission's number ([`Tracking::Fence`]); the context records each
//! submission's range and number, and before writing over a range waits (on the CPU,
//! `D3DKMTWaitForSynchronizationObjectFromCpu`) until the fence reached the number of the last
//! earlier submission overlapping it, never a later one. On an adapter whose OS or driver
//! offers no native fence ([`Tracking::Rotate`]) a range is never written twice: when the ring
//! is full the context makes a new command buffer and destroys the old one, which VidMm frees
//! only once the device's queued work is done.

use alloc::collections::VecDeque;
use rvgpu_hw::cmd::Command;

use crate::fence::NativeFence;
use crate::kmt::{Allocation, AllocationCpu, AllocationKind, Kmt, KmtHandle};
use crate::ring::for_each_word;
use crate::submit::SubmitError;

/// Bytes of packets one submission carries at most.
pub const COMMAND_BUFFER_SIZE: u64 = 64 * 1024;

/// Bytes of a context's command buffer: one largest submission and its fence signal fit.
pub const COMMAND_BUFFER_ALLOCATION: u64 = COMMAND_BUFFER_SIZE + 4096;

/// A packet a DMA buffer cannot carry: one that does not encode whole (a NOP of length 0, a
/// WRITE_DATA, whose data words a [`Command`] does not hold) or an INDIRECT (the KMD runs
/// every DMA buffer through one, and INDIRECTs do not nest).
fn refused(c: &Command) -> bool {
    matches!(
        c,
        Command::Nop { len: 0 } | Command::WriteData { .. } | Command::Indirect { .. }
    )
}

/// Bytes `cmds` encode to (saturating; the caller bounds it).
fn encoded_bytes(cmds: &[Command]) -> u64 {
    cmds.iter()
        .map(|c| u64::try_from(c.len()).unwrap_or(u64::MAX))
        .fold(0u64, u64::saturating_add)
        .saturating_mul(8)
}

/// One submission whose words may still be unread: `[start, end)` of the command buffer,
/// consumed once the fence reached `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
    value: u64,
}

/// How the context learns that the GPU consumed a submission's words.
#[derive(Debug)]
pub enum Tracking {
    /// A native fence of the context's device: submission `n` signals it to `n`.
    Fence(NativeFence),
    /// No fence: the ring is replaced instead of reused.
    Rotate,
    /// A hardware-scheduled node: the context's kernel-mode hardware queue, whose progress
    /// fence reaches `n` once submission `n` completed (the KMD ends each with it).
    Queue {
        /// The queue (`D3DKMTSubmitCommandToHwQueue`).
        queue: KmtHandle,
        /// Its progress fence (`hHwQueueProgressFence`).
        fence: KmtHandle,
    },
}

/// One kernel-mode DMA context and its command buffer.
pub struct DmaContext<K: Kmt> {
    kmt: K,
    context: KmtHandle,
    node: u32,
    cb: Allocation<K::Mem>,
    tracking: Tracking,
    /// Submissions whose fence value was not yet seen reached, oldest first.
    in_flight: VecDeque<Span>,
    /// The highest fence value seen reached.
    done: u64,
    /// Where the next submission's words go.
    head: u64,
    /// Submissions made (the last fence value signalled).
    submitted: u64,
    closed: bool,
}

impl<K: Kmt> core::fmt::Debug for DmaContext<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DmaContext")
            .field("context", &self.context)
            .field("node", &self.node)
            .field("tracking", &self.tracking)
            .field("head", &self.head)
            .field("submitted", &self.submitted)
            .field("done", &self.done)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl<K: Kmt> DmaContext<K> {
    /// A context on `node`, its command buffer and how it tracks completion: the context's
    /// hardware queue on a hardware-scheduled node ([`Tracking::Queue`]), else a native fence
    /// ([`Tracking::Rotate`] when the OS creates none); nothing is left behind on failure.
    pub fn new(kmt: K, node: u32) -> Result<Self, SubmitError> {
        let hw_scheduled = kmt.node_hw_scheduled(node)?;
        let context = kmt.create_context(node)?;
        let queue = if hw_scheduled {
            match crate::submit::kernel_hw_queue(&kmt, context, 0) {
                Ok((queue, progress, _)) => Some((queue, progress.fence)),
                Err(e) => {
                    let _ = kmt.destroy_context(context);
                    return Err(e);
                }
            }
        } else {
            None
        };
        let cb = match kmt.create_allocation_as(COMMAND_BUFFER_ALLOCATION, AllocationKind::Commands)
        {
            Ok(cb) => cb,
            Err(e) => {
                if let Some((q, _)) = queue {
                    let _ = kmt.destroy_hw_queue(q);
                }
                let _ = kmt.destroy_context(context);
                return Err(e.into());
            }
        };
        let tracking = match queue {
            Some((queue, fence)) => Tracking::Queue { queue, fence },
            None => kmt
                .create_native_fence(0)
                .map_or(Tracking::Rotate, Tracking::Fence),
        };
        Ok(Self {
            kmt,
            context,
            node,
            cb,
            tracking,
            in_flight: VecDeque::new(),
            done: 0,
            head: 0,
            submitted: 0,
            closed: false,
        })
    }

    /// The context's D3DKMT handle.
    pub fn handle(&self) -> KmtHandle {
        self.context
    }

    /// The node it was created on.
    pub fn node(&self) -> u32 {
        self.node
    }

    /// Submissions made so far.
    pub fn submitted(&self) -> u64 {
        self.submitted
    }

    /// How it tracks completion.
    pub fn tracking(&self) -> &Tracking {
        &self.tracking
    }

    /// Submits `cmds` as one DMA buffer. Refused before anything is written: an empty list
    /// or a packet `refused` (`BadCommand`), more than [`COMMAND_BUFFER_SIZE`] bytes
    /// (`TooLarge`), a closed context (`Lost`). When the words would go over an earlier
    /// submission's the GPU may not have read yet, first waits for it; a failed wait or
    /// thunk is `Kmt(status)` (`STATUS_DEVICE_REMOVED` once the context's device is in
    /// error), or `Lost` for a submission the scheduler refused for the device in error, and
    /// changes nothing, so the call may be repeated.
    pub fn submit(&mut self, cmds: &[Command]) -> Result<(), SubmitError> {
        if self.closed {
            return Err(SubmitError::Lost);
        }
        if cmds.is_empty() || cmds.iter().any(refused) {
            return Err(SubmitError::BadCommand);
        }
        let bytes = encoded_bytes(cmds);
        if bytes > COMMAND_BUFFER_SIZE {
            return Err(SubmitError::TooLarge);
        }
        let value = self.submitted.checked_add(1).ok_or(SubmitError::Lost)?;
        let signal = match &self.tracking {
            Tracking::Fence(f) => Some(f.signal(value)),
            Tracking::Rotate | Tracking::Queue { .. } => None,
        };
        let total = bytes.saturating_add(signal.as_ref().map_or(0, |s| encoded_bytes(&[*s])));
        if total > self.cb.size {
            return Err(SubmitError::TooLarge);
        }
        let len = u32::try_from(total).map_err(|_| SubmitError::TooLarge)?;
        let start = self.place(total)?;
        let mut off = start;
        for c in cmds.iter().chain(signal.as_ref()) {
            let whole = for_each_word(c, |w| {
                self.cb.mem.store(off, w);
                off = off.saturating_add(8);
            });
            if !whole {
                return Err(SubmitError::BadCommand);
            }
        }
        let at = self
            .cb
            .gpu_va
            .checked_add(start)
            .ok_or(SubmitError::TooLarge)?;
        let tracked = match &self.tracking {
            Tracking::Queue { queue, .. } => {
                self.kmt
                    .submit_command_to_hw_queue(*queue, value, at, len)?;
                true
            }
            _ => {
                self.kmt.submit_command(self.context, at, len)?;
                signal.is_some()
            }
        };
        self.head = off;
        self.submitted = value;
        if tracked {
            self.in_flight.push_back(Span {
                start,
                end: off,
                value,
            });
        }
        Ok(())
    }

    /// Where `total` bytes go, once no unread earlier submission is there: after the last
    /// submission, or at the start when they do not fit.
    fn place(&mut self, total: u64) -> Result<u64, SubmitError> {
        let wraps = self.head.saturating_add(total) > self.cb.size;
        let fence = match &self.tracking {
            Tracking::Fence(f) => f.kmt,
            Tracking::Queue { fence, .. } => *fence,
            Tracking::Rotate => {
                if wraps {
                    self.replace_buffer()?;
                }
                return Ok(self.head);
            }
        };
        let start = if wraps { 0 } else { self.head };
        let end = start.saturating_add(total);
        // Submissions complete in order, so the last overlapping one covers the rest.
        let need = self
            .in_flight
            .iter()
            .filter(|s| s.start < end && start < s.end)
            .map(|s| s.value)
            .max();
        if let Some(v) = need {
            if v > self.done {
                self.kmt.wait_for_fence(fence, v)?;
                self.done = v;
            }
        }
        let done = self.done;
        self.in_flight.retain(|s| s.value > done);
        Ok(start)
    }

    /// [`Tracking::Rotate`]: a new command buffer in place of the full one. The old one is
    /// destroyed without `AssumeNotInUse`, so VidMm frees it once the work reading it is done;
    /// when no new one can be made the old one stays and the status is returned.
    fn replace_buffer(&mut self) -> Result<(), SubmitError> {
        let fresh = self
            .kmt
            .create_allocation_as(COMMAND_BUFFER_ALLOCATION, AllocationKind::Commands)?;
        let old = core::mem::replace(&mut self.cb, fresh);
        self.head = 0;
        // A failure leaves the old buffer to the device's destruction; this one is usable.
        let _ = self.kmt.destroy_allocation(old.handle);
        Ok(())
    }

    /// Destroys the context, then its fence and its command buffer. The context goes first:
    /// destroying it blocks until its queued work is finished (the runtime's
    /// `pfnDestroyContextCb`, <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dumddi/nc-d3dumddi-pfnd3dddi_destroycontextcb>),
    /// so no fence signal of it is left to run, and VidMm keeps the buffer's memory until the
    /// queued work is done. A context with a hardware queue ([`Tracking::Queue`]) first waits
    /// for the queue's last submission, as a kernel-mode queue closes
    /// ([`crate::submit::KernelQueue::close`]), and destroys the queue before the context. The
    /// first failure is returned, the rest still done; a second close does nothing.
    pub fn close(&mut self) -> Result<(), SubmitError> {
        if core::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        let (w, q) = match &self.tracking {
            Tracking::Queue { queue, fence } => {
                let w = match self.submitted {
                    0 => Ok(()),
                    last => self.kmt.wait_for_fence(*fence, last),
                };
                (w, self.kmt.destroy_hw_queue(*queue))
            }
            _ => (Ok(()), Ok(())),
        };
        let c = self.kmt.destroy_context(self.context);
        let f = match &self.tracking {
            Tracking::Fence(f) => self.kmt.destroy_native_fence(f.kmt),
            Tracking::Rotate | Tracking::Queue { .. } => Ok(()),
        };
        let a = self.kmt.destroy_allocation(self.cb.handle);
        self.in_flight.clear();
        w?;
        q?;
        c?;
        f?;
        a?;
        Ok(())
    }
}

impl<K: Kmt> Drop for DmaContext<K> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! A mock of the thunks a DMA context uses (also the type behind the C API's context
    //! handles in the host unit tests, `capi_context`).

    use super::*;
    use crate::kmt::NtStatus;
    use crate::kmt::{HwQueue, QueueProgress};
    use crate::mock_parts::{NoCpu, WordsMem};
    use alloc::rc::Rc;
    use alloc::vec::Vec;
    use core::cell::RefCell;
    use core::sync::atomic::{AtomicU64, Ordering};

    /// What the code under test asked of the thunks.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub(crate) enum Ev {
        Context(u32),
        ContextGone(KmtHandle),
        Alloc(u64),
        AllocGone(KmtHandle),
        /// (context, GPU VA, bytes, the words there at the call)
        Submit(KmtHandle, u64, u32, Vec<u64>),
        Fence,
        FenceGone(KmtHandle),
        /// (fence, value) of a CPU wait
        Wait(KmtHandle, u64),
        /// A kernel-mode hardware queue of the context.
        Queue(KmtHandle),
        QueueGone(KmtHandle),
        /// (queue, progress value, GPU VA, bytes) of `D3DKMTSubmitCommandToHwQueue`
        QueueSubmit(KmtHandle, u64, u64, u32),
    }

    #[derive(Debug, Default)]
    pub(crate) struct World {
        pub(crate) log: Vec<Ev>,
        mem: Option<Rc<[AtomicU64]>>,
        /// The status the next thunk of each kind fails with.
        pub(crate) fail_context: Option<NtStatus>,
        pub(crate) fail_alloc: Option<NtStatus>,
        pub(crate) fail_submit: Option<NtStatus>,
        pub(crate) fail_wait: Option<NtStatus>,
        /// The OS creates no native fence.
        pub(crate) no_native_fence: bool,
        /// Every node is hardware-scheduled.
        pub(crate) hw_nodes: bool,
        /// Allocations made (the next one's handle is `CB` plus this).
        allocs: u32,
    }

    /// The mock: contexts are handle 0x40, the first command buffer 0x80 (the next 0x81, ...)
    /// at GPU VA 0x10_0000, the native fence 0xC0.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct Mock(pub(crate) Rc<RefCell<World>>);

    pub(crate) const CTX: KmtHandle = 0x40;
    pub(crate) const CB: KmtHandle = 0x80;
    pub(crate) const CB_VA: u64 = 0x10_0000;
    pub(crate) const FENCE: KmtHandle = 0xC0;
    /// The hardware queue and its progress fence.
    pub(crate) const QUEUE: KmtHandle = 0xD0;
    pub(crate) const PROGRESS: KmtHandle = 0xD1;

    /// The mock's native fence.
    pub(crate) fn fence() -> NativeFence {
        NativeFence {
            kmt: FENCE,
            gpu: crate::fence::GpuFence {
                current: rvgpu_hw::addr::GpuVa::new(0x20_0000),
                monitored: rvgpu_hw::addr::GpuVa::new(0x20_0008),
                tag: 7,
            },
            current_value_cpu: 0,
        }
    }

    const NO: NtStatus = crate::kmt::STATUS_NOT_SUPPORTED;

    impl Kmt for Mock {
        type Mem = WordsMem;
        type Doorbell = NoCpu;
        type Fence = NoCpu;

        fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus> {
            let mut w = self.0.borrow_mut();
            if let Some(s) = w.fail_context.take() {
                return Err(s);
            }
            w.log.push(Ev::Context(node));
            Ok(CTX)
        }
        fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus> {
            self.0.borrow_mut().log.push(Ev::ContextGone(context));
            Ok(())
        }
        fn node_hw_scheduled(&self, _node: u32) -> Result<bool, NtStatus> {
            Ok(self.0.borrow().hw_nodes)
        }
        fn create_hw_queue(
            &self,
            context: KmtHandle,
            user_mode_submission: bool,
            _private_data: &mut [u8],
        ) -> Result<HwQueue<NoCpu>, NtStatus> {
            assert!(!user_mode_submission);
            self.0.borrow_mut().log.push(Ev::Queue(context));
            Ok(HwQueue {
                handle: QUEUE,
                progress: Some(QueueProgress {
                    fence: PROGRESS,
                    cpu: NoCpu,
                    gpu: 0x30_0000,
                }),
            })
        }
        fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
            self.0.borrow_mut().log.push(Ev::QueueGone(queue));
            Ok(())
        }
        fn submit_command_to_hw_queue(
            &self,
            queue: KmtHandle,
            progress_fence_value: u64,
            command_buffer_gpu: u64,
            command_bytes: u32,
        ) -> Result<(), NtStatus> {
            if let Some(s) = self.0.borrow_mut().fail_submit.take() {
                return Err(s);
            }
            self.0.borrow_mut().log.push(Ev::QueueSubmit(
                queue,
                progress_fence_value,
                command_buffer_gpu,
                command_bytes,
            ));
            Ok(())
        }
        fn create_doorbell(
            &self,
            _queue: KmtHandle,
            _ring: KmtHandle,
            _ring_control: KmtHandle,
            _private_data: &mut [u8],
        ) -> Result<crate::kmt::Doorbell<NoCpu>, NtStatus> {
            Err(NO)
        }
        fn connect_doorbell(&self, _doorbell: KmtHandle) -> Result<(), NtStatus> {
            Err(NO)
        }
        fn destroy_doorbell(&self, _doorbell: KmtHandle) -> Result<(), NtStatus> {
            Err(NO)
        }
        fn notify_work_submission(&self, _doorbell: KmtHandle) -> Result<(), NtStatus> {
            Err(NO)
        }
        fn create_allocation_as(
            &self,
            size: u64,
            kind: AllocationKind,
        ) -> Result<Allocation<WordsMem>, NtStatus> {
            assert_eq!(kind, AllocationKind::Commands);
            let mut w = self.0.borrow_mut();
            if let Some(s) = w.fail_alloc.take() {
                return Err(s);
            }
            w.log.push(Ev::Alloc(size));
            let words: Rc<[AtomicU64]> = (0..size / 8).map(|_| AtomicU64::new(0)).collect();
            w.mem = Some(words.clone());
            let n = w.allocs;
            w.allocs += 1;
            Ok(Allocation {
                handle: CB + n,
                gpu_va: CB_VA,
                size,
                mem: WordsMem(words),
            })
        }
        fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
            self.0.borrow_mut().log.push(Ev::AllocGone(allocation));
            Ok(())
        }
        fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
            let mut w = self.0.borrow_mut();
            w.log.push(Ev::Wait(fence, value));
            w.fail_wait.take().map_or(Ok(()), Err)
        }
        fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
            assert_eq!(initial_value, 0);
            let mut w = self.0.borrow_mut();
            if w.no_native_fence {
                return Err(NO);
            }
            w.log.push(Ev::Fence);
            Ok(fence())
        }
        fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
            self.0.borrow_mut().log.push(Ev::FenceGone(fence));
            Ok(())
        }
        fn submit_command(
            &self,
            context: KmtHandle,
            command_buffer_gpu: u64,
            command_bytes: u32,
        ) -> Result<(), NtStatus> {
            let mut w = self.0.borrow_mut();
            if let Some(s) = w.fail_submit.take() {
                return Err(s);
            }
            let first = (command_buffer_gpu - CB_VA) / 8;
            let words = w
                .mem
                .as_ref()
                .map(|m| {
                    (first..first + u64::from(command_bytes) / 8)
                        .map(|i| m[i as usize].load(Ordering::Acquire))
                        .collect()
                })
                .unwrap_or_default();
            w.log.push(Ev::Submit(
                context,
                command_buffer_gpu,
                command_bytes,
                words,
            ));
            Ok(())
        }
    }

    fn fill(v: u64) -> Command {
        Command::Fill {
            dst: 0x2000,
            bytes: 8,
            pattern: v,
        }
    }

    fn words(cmds: &[Command]) -> Vec<u64> {
        let mut out = Vec::new();
        for c in cmds {
            assert!(for_each_word(c, |w| out.push(w)));
        }
        out
    }

    /// The words of the fence signal the mock's context ends submission `value` with.
    fn signal(value: u64) -> Vec<u64> {
        words(&[fence().signal(value)])
    }

    /// Every `Submit` (without its words) and `Wait` of the log, in order.
    fn submits_and_waits(m: &Mock) -> Vec<Ev> {
        m.0.borrow()
            .log
            .iter()
            .filter(|e| matches!(e, Ev::Submit(..) | Ev::Wait(..)))
            .map(|e| match e {
                Ev::Submit(c, va, n, _) => Ev::Submit(*c, *va, *n, Vec::new()),
                other => other.clone(),
            })
            .collect()
    }

    fn sub(va: u64, bytes: u64) -> Ev {
        Ev::Submit(CTX, va, bytes as u32, Vec::new())
    }

    /// A NOP list of `bytes` bytes.
    fn nop(bytes: u64) -> Command {
        Command::Nop {
            len: u16::try_from(bytes / 8).unwrap_or(u16::MAX),
        }
    }

    /// UM-01, classic kernel-mode submission: a context copies each packet list into its command
    /// buffer, ends it with a GPU signal of its fence to the submission's number and submits
    /// that range by GPU VA; the next list goes after it; close destroys the context, its
    /// fence, then the buffer, once.
    #[test]
    fn um_01_a_dma_context_submits_its_packets_by_gpu_va() {
        let m = Mock::default();
        let mut c = DmaContext::new(m.clone(), 1).expect("context");
        assert_eq!(c.node(), 1);
        assert!(matches!(c.tracking(), Tracking::Fence(_)));
        let a = [fill(1), Command::Hang];
        c.submit(&a).expect("first");
        let b = [fill(2)];
        c.submit(&b).expect("second");
        assert_eq!(c.submitted(), 2);
        let with = |cmds: &[Command], v: u64| {
            let mut w = words(cmds);
            w.extend(signal(v));
            w
        };
        let (wa, wb) = (with(&a, 1), with(&b, 2));
        let first = 8 * wa.len() as u64;
        c.close().expect("close");
        c.close().expect("a second close does nothing");
        drop(c);
        assert_eq!(
            m.0.borrow().log,
            [
                Ev::Context(1),
                Ev::Alloc(COMMAND_BUFFER_ALLOCATION),
                Ev::Fence,
                Ev::Submit(CTX, CB_VA, first as u32, wa),
                Ev::Submit(CTX, CB_VA + first, 8 * wb.len() as u32, wb),
                Ev::ContextGone(CTX),
                Ev::FenceGone(FENCE),
                Ev::AllocGone(CB),
            ]
        );
    }

    /// Attacker's input to `submit`: nothing, a NOP of length 0, an INDIRECT, more than the
    /// command buffer; each refused before any thunk, and the context still works after
    /// (with a list of exactly the largest size).
    #[test]
    fn um_01_a_dma_context_refuses_what_a_dma_buffer_cannot_carry() {
        let m = Mock::default();
        let mut c = DmaContext::new(m.clone(), 0).expect("context");
        let big = nop(COMMAND_BUFFER_SIZE);
        for (what, cmds, want) in [
            ("empty", alloc::vec![], SubmitError::BadCommand),
            (
                "NOP 0",
                alloc::vec![Command::Nop { len: 0 }],
                SubmitError::BadCommand,
            ),
            (
                "INDIRECT",
                alloc::vec![Command::Indirect {
                    addr: CB_VA,
                    bytes: 8
                }],
                SubmitError::BadCommand,
            ),
            (
                "too large",
                alloc::vec![big, fill(1)],
                SubmitError::TooLarge,
            ),
        ] {
            assert_eq!(c.submit(&cmds), Err(want), "{what}");
        }
        assert!(!m.0.borrow().log.iter().any(|e| matches!(e, Ev::Submit(..))));
        c.submit(&[big]).expect("the largest list, with its signal");
        c.close().expect("close");
        assert_eq!(c.submit(&[fill(4)]), Err(SubmitError::Lost));
    }

    /// A list that does not fit after the last one goes back to the start of the buffer, but
    /// only once the fence reached the number of the earlier submission it overlaps, not of a
    /// later one; the next waits for the one after. Lists that overlap nothing unread wait
    /// for nothing. Without a native fence the context never writes over a submission: when
    /// the buffer is full it makes a new one and destroys the old (VidMm frees it after the
    /// queued work); no new buffer is the OS's status, and the next call tries again.
    #[test]
    fn um_01_a_dma_context_reuses_only_what_the_gpu_consumed() {
        let m = Mock::default();
        let mut c = DmaContext::new(m.clone(), 0).expect("context");
        let half = nop(COMMAND_BUFFER_SIZE / 2);
        let s = COMMAND_BUFFER_SIZE / 2 + 8 * signal(1).len() as u64;
        for _ in 0..4 {
            c.submit(&[half]).expect("submit");
        }
        assert_eq!(
            submits_and_waits(&m),
            [
                sub(CB_VA, s),
                sub(CB_VA + s, s),
                Ev::Wait(FENCE, 1),
                sub(CB_VA, s),
                Ev::Wait(FENCE, 2),
                sub(CB_VA + s, s),
            ]
        );
        let small = Mock::default();
        let mut c = DmaContext::new(small.clone(), 0).expect("context");
        for v in 0..100 {
            c.submit(&[fill(v)]).expect("submit");
        }
        assert!(!small
            .0
            .borrow()
            .log
            .iter()
            .any(|e| matches!(e, Ev::Wait(..))));
        {
            let m = Mock::default();
            m.0.borrow_mut().no_native_fence = true;
            let mut c = DmaContext::new(m.clone(), 0).expect("context");
            assert!(matches!(c.tracking(), Tracking::Rotate));
            let half = nop(COMMAND_BUFFER_SIZE / 2);
            c.submit(&[half]).expect("first");
            c.submit(&[half]).expect("second");
            m.0.borrow_mut().fail_alloc = Some(crate::kmt::STATUS_NO_MEMORY);
            assert_eq!(
                c.submit(&[half]),
                Err(SubmitError::Kmt(crate::kmt::STATUS_NO_MEMORY))
            );
            c.submit(&[half]).expect("third");
            c.close().expect("close");
            let h = COMMAND_BUFFER_SIZE / 2;
            let log: Vec<Ev> =
                m.0.borrow()
                    .log
                    .iter()
                    .map(|e| match e {
                        Ev::Submit(c, va, n, _) => Ev::Submit(*c, *va, *n, Vec::new()),
                        other => other.clone(),
                    })
                    .collect();
            assert_eq!(
                log,
                [
                    Ev::Context(0),
                    Ev::Alloc(COMMAND_BUFFER_ALLOCATION),
                    sub(CB_VA, h),
                    sub(CB_VA + h, h),
                    Ev::Alloc(COMMAND_BUFFER_ALLOCATION),
                    Ev::AllocGone(CB),
                    sub(CB_VA, h),
                    Ev::ContextGone(CTX),
                    Ev::AllocGone(CB + 1),
                ]
            );
        }
    }

    /// A failed thunk leaves nothing behind: no context without its buffer; a refused
    /// submission is the OS's status and does not advance the buffer; a failed wait for
    /// command-buffer space (a timeout, or the device removed) is the OS's status, nothing is
    /// written or submitted, and the context stays usable: the next call waits again.
    #[test]
    fn um_01_a_failed_thunk_leaves_nothing_behind() {
        let m = Mock::default();
        m.0.borrow_mut().fail_alloc = Some(crate::kmt::STATUS_NO_MEMORY);
        assert_eq!(
            DmaContext::new(m.clone(), 0).map(|_| ()),
            Err(SubmitError::Kmt(crate::kmt::STATUS_NO_MEMORY))
        );
        assert_eq!(m.0.borrow().log, [Ev::Context(0), Ev::ContextGone(CTX)]);
        let removed = NtStatus(0xC000_02B6_u32 as i32);
        m.0.borrow_mut().fail_submit = Some(removed);
        let mut c = DmaContext::new(m.clone(), 0).expect("context");
        assert_eq!(c.submit(&[fill(1)]), Err(SubmitError::Kmt(removed)));
        c.submit(&[fill(2)]).expect("submit");
        let last = m.0.borrow().log.last().cloned();
        assert!(
            matches!(last, Some(Ev::Submit(_, CB_VA, 72, _))),
            "{last:?}"
        );
        {
            let m = Mock::default();
            let mut c = DmaContext::new(m.clone(), 0).expect("context");
            let half = nop(COMMAND_BUFFER_SIZE / 2);
            c.submit(&[half]).expect("first");
            c.submit(&[half]).expect("second");
            m.0.borrow_mut().fail_wait = Some(removed);
            let before = submits_and_waits(&m).len();
            assert_eq!(c.submit(&[half]), Err(SubmitError::Kmt(removed)));
            assert_eq!(
                crate::capi::status_from_submit(SubmitError::Kmt(removed)),
                crate::capi::RvgpuStatus::DeviceLost
            );
            let log = submits_and_waits(&m);
            assert_eq!(log[before..], [Ev::Wait(FENCE, 1)], "no submission");
            assert_eq!(c.submitted(), 2);
            c.submit(&[half]).expect("after the failed wait");
            let s = COMMAND_BUFFER_SIZE / 2 + 8 * signal(1).len() as u64;
            assert_eq!(
                submits_and_waits(&m)[before + 1..],
                [Ev::Wait(FENCE, 1), sub(CB_VA, s)]
            );
        }
    }

    /// UM-10: the scheduler's refusal of a kernel-mode submission for the device in error
    /// (`STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE`) is the device lost, for the Rust API and the
    /// C API alike; nothing was submitted and the buffer did not advance.
    #[test]
    fn um_10_a_submission_refused_for_the_device_in_error_is_the_device_lost() {
        let m = Mock::default();
        m.0.borrow_mut().hw_nodes = true;
        let mut c = DmaContext::new(m.clone(), 0).expect("context");
        let exception = crate::kmt::STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE;
        m.0.borrow_mut().fail_submit = Some(exception);
        assert_eq!(c.submit(&[fill(1)]), Err(SubmitError::Lost));
        assert_eq!(c.submitted(), 0);
        assert_eq!(
            crate::capi::status_from_submit(SubmitError::Lost),
            crate::capi::RvgpuStatus::DeviceLost
        );
        assert_eq!(
            crate::capi::status_from_nt(exception),
            crate::capi::RvgpuStatus::DeviceLost
        );
        assert!(
            !m.0.borrow()
                .log
                .iter()
                .any(|e| matches!(e, Ev::QueueSubmit(..))),
            "nothing submitted"
        );
    }

    /// UM-01 on a hardware-scheduled node: the context gets one kernel-mode hardware queue and
    /// no native fence; each packet list goes to the queue (`D3DKMTSubmitCommandToHwQueue`,
    /// never `D3DKMTSubmitCommand`) with the submission's number as its progress value; close
    /// waits for the last on the queue's progress fence, then destroys the queue, the context
    /// and the buffer.
    #[test]
    fn um_01_a_dma_context_on_a_hws_node_submits_through_its_hardware_queue() {
        let m = Mock::default();
        m.0.borrow_mut().hw_nodes = true;
        let mut c = DmaContext::new(m.clone(), 0).expect("context");
        assert!(matches!(
            c.tracking(),
            Tracking::Queue {
                queue: QUEUE,
                fence: PROGRESS
            }
        ));
        let (a, b) = ([fill(1)], [fill(2), Command::Hang]);
        c.submit(&a).expect("first");
        c.submit(&b).expect("second");
        let (na, nb) = (8 * words(&a).len() as u64, 8 * words(&b).len() as u64);
        c.close().expect("close");
        assert_eq!(
            m.0.borrow().log,
            [
                Ev::Context(0),
                Ev::Queue(CTX),
                Ev::Alloc(COMMAND_BUFFER_ALLOCATION),
                Ev::QueueSubmit(QUEUE, 1, CB_VA, na as u32),
                Ev::QueueSubmit(QUEUE, 2, CB_VA + na, nb as u32),
                Ev::Wait(PROGRESS, 2),
                Ev::QueueGone(QUEUE),
                Ev::ContextGone(CTX),
                Ev::AllocGone(CB),
            ]
        );
    }
}
