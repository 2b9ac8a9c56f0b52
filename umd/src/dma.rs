//! A kernel-mode DMA context: a context on one node without hardware queues, whose work goes
//! through the OS's scheduler one DMA buffer at a time (`D3DKMTSubmitCommand`, VidSch's
//! fence IDs and TDR path), as the D3D runtime submits on a context of a GPU-VA device.
//!
//! [`DmaContext::new`] creates the context (`D3DKMTCreateContextVirtual`) and its command
//! buffer (an allocation of [`AllocationKind::Commands`]); [`DmaContext::submit`] copies a
//! packet list into the command buffer and submits that range by its GPU VA;
//! [`DmaContext::close`] destroys the context, then the buffer.
//!
//! The context has no progress fence the UMD can read, so the command buffer is used as a
//! ring of [`COMMAND_BUFFER_SIZE`] bytes: a submission goes after the previous one, and back
//! to the start when it does not fit. A submission's words stay untouched until about that
//! many bytes were submitted after it; an application keeps less than that in flight on one
//! context (the simulated OS copies the words at submission, so there this never matters).

use rvgpu_hw::cmd::Command;

use crate::kmt::{Allocation, AllocationCpu, AllocationKind, Kmt, KmtHandle};
use crate::ring::for_each_word;
use crate::submit::SubmitError;

/// Bytes of a context's command buffer, and so of one submission at most.
pub const COMMAND_BUFFER_SIZE: u64 = 64 * 1024;

/// A packet a DMA buffer cannot carry: one that does not encode whole (a NOP of length 0, a
/// WRITE_DATA, whose data words a [`Command`] does not hold) or an INDIRECT (the KMD runs
/// every DMA buffer through one, and INDIRECTs do not nest).
fn refused(c: &Command) -> bool {
    matches!(
        c,
        Command::Nop { len: 0 } | Command::WriteData { .. } | Command::Indirect { .. }
    )
}

/// One kernel-mode DMA context and its command buffer.
pub struct DmaContext<K: Kmt> {
    kmt: K,
    context: KmtHandle,
    node: u32,
    cb: Allocation<K::Mem>,
    /// Where the next submission's words go.
    head: u64,
    /// Submissions made.
    submitted: u64,
    closed: bool,
}

impl<K: Kmt> core::fmt::Debug for DmaContext<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DmaContext")
            .field("context", &self.context)
            .field("node", &self.node)
            .field("head", &self.head)
            .field("submitted", &self.submitted)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl<K: Kmt> DmaContext<K> {
    /// A context on `node` and its command buffer; nothing is left behind on failure.
    pub fn new(kmt: K, node: u32) -> Result<Self, SubmitError> {
        let context = kmt.create_context(node)?;
        match kmt.create_allocation_as(COMMAND_BUFFER_SIZE, AllocationKind::Commands) {
            Ok(cb) => Ok(Self {
                kmt,
                context,
                node,
                cb,
                head: 0,
                submitted: 0,
                closed: false,
            }),
            Err(e) => {
                let _ = kmt.destroy_context(context);
                Err(e.into())
            }
        }
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

    /// Submits `cmds` as one DMA buffer. Refused before anything is written: an empty list
    /// or a packet [`refused`] (`BadCommand`), more than [`COMMAND_BUFFER_SIZE`] bytes
    /// (`TooLarge`), a closed context (`Lost`). A failed thunk is `Kmt(status)`
    /// (`STATUS_DEVICE_REMOVED` once the context's device is in error).
    pub fn submit(&mut self, cmds: &[Command]) -> Result<(), SubmitError> {
        if self.closed {
            return Err(SubmitError::Lost);
        }
        if cmds.is_empty() || cmds.iter().any(refused) {
            return Err(SubmitError::BadCommand);
        }
        let bytes = cmds
            .iter()
            .map(|c| u64::try_from(c.len()).unwrap_or(u64::MAX))
            .fold(0u64, u64::saturating_add)
            .saturating_mul(8);
        if bytes > self.cb.size.min(COMMAND_BUFFER_SIZE) {
            return Err(SubmitError::TooLarge);
        }
        let len = u32::try_from(bytes).map_err(|_| SubmitError::TooLarge)?;
        if self.head.saturating_add(bytes) > self.cb.size {
            self.head = 0;
        }
        let start = self.head;
        let mut off = start;
        for c in cmds {
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
        self.kmt.submit_command(self.context, at, len)?;
        self.head = off;
        self.submitted = self.submitted.saturating_add(1);
        Ok(())
    }

    /// Destroys the context, then its command buffer (VidMm keeps the memory until the
    /// context's queued work is done). The first failure is returned, the rest still done;
    /// a second close does nothing.
    pub fn close(&mut self) -> Result<(), SubmitError> {
        if core::mem::replace(&mut self.closed, true) {
            return Ok(());
        }
        let c = self.kmt.destroy_context(self.context);
        let a = self.kmt.destroy_allocation(self.cb.handle);
        c?;
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
    use crate::kmt::{Doorbell, DoorbellCpu, DoorbellStatus, FenceCpu, HwQueue, NtStatus};
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
    }

    #[derive(Debug, Default)]
    pub(crate) struct World {
        pub(crate) log: Vec<Ev>,
        mem: Option<Rc<[AtomicU64]>>,
        /// The status the next thunk of each kind fails with.
        pub(crate) fail_context: Option<NtStatus>,
        pub(crate) fail_alloc: Option<NtStatus>,
        pub(crate) fail_submit: Option<NtStatus>,
    }

    /// The mock: contexts are handle 0x40, the command buffer 0x80 at GPU VA 0x10_0000.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct Mock(pub(crate) Rc<RefCell<World>>);

    pub(crate) const CTX: KmtHandle = 0x40;
    pub(crate) const CB: KmtHandle = 0x80;
    pub(crate) const CB_VA: u64 = 0x10_0000;

    #[derive(Clone, Debug)]
    pub(crate) struct Mem(Rc<[AtomicU64]>);

    impl AllocationCpu for Mem {
        fn store(&self, offset: u64, value: u64) {
            if let Some(w) = self.0.get((offset / 8) as usize) {
                w.store(value, Ordering::Release);
            }
        }
        fn load(&self, offset: u64) -> u64 {
            self.0
                .get((offset / 8) as usize)
                .map_or(0, |w| w.load(Ordering::Acquire))
        }
    }

    #[derive(Debug)]
    pub(crate) struct Nothing;
    impl DoorbellCpu for Nothing {
        fn ring(&self, _value: u64) {}
        fn status(&self) -> DoorbellStatus {
            DoorbellStatus::DisconnectedAbort
        }
        fn set_last_queued(&self, _value: u64) {}
    }
    impl FenceCpu for Nothing {
        fn value(&self) -> u64 {
            0
        }
    }

    const NO: NtStatus = crate::kmt::STATUS_NOT_SUPPORTED;

    impl Kmt for Mock {
        type Mem = Mem;
        type Doorbell = Nothing;
        type Fence = Nothing;

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
        fn create_hw_queue(
            &self,
            _context: KmtHandle,
            _user_mode_submission: bool,
            _private_data: &mut [u8],
        ) -> Result<HwQueue<Nothing>, NtStatus> {
            Err(NO)
        }
        fn destroy_hw_queue(&self, _queue: KmtHandle) -> Result<(), NtStatus> {
            Err(NO)
        }
        fn create_allocation_as(
            &self,
            size: u64,
            kind: AllocationKind,
        ) -> Result<Allocation<Mem>, NtStatus> {
            assert_eq!(kind, AllocationKind::Commands);
            let mut w = self.0.borrow_mut();
            if let Some(s) = w.fail_alloc.take() {
                return Err(s);
            }
            w.log.push(Ev::Alloc(size));
            let words: Rc<[AtomicU64]> = (0..size / 8).map(|_| AtomicU64::new(0)).collect();
            w.mem = Some(words.clone());
            Ok(Allocation {
                handle: CB,
                gpu_va: CB_VA,
                size,
                mem: Mem(words),
            })
        }
        fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
            self.0.borrow_mut().log.push(Ev::AllocGone(allocation));
            Ok(())
        }
        fn create_doorbell(
            &self,
            _queue: KmtHandle,
            _ring: KmtHandle,
            _ring_control: KmtHandle,
            _private_data: &mut [u8],
        ) -> Result<Doorbell<Nothing>, NtStatus> {
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
        fn submit_command_to_hw_queue(
            &self,
            _queue: KmtHandle,
            _progress_fence_value: u64,
            _command_buffer_gpu: u64,
            _command_bytes: u32,
        ) -> Result<(), NtStatus> {
            Err(NO)
        }
        fn wait_for_fence(&self, _fence: KmtHandle, _value: u64) -> Result<(), NtStatus> {
            Err(NO)
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

    /// UM-01, classic kernel-mode submission: a context copies each packet list into its command
    /// buffer and submits that range by GPU VA; the next list goes after it; close destroys
    /// the context, then the buffer, once.
    #[test]
    fn um_01_a_dma_context_submits_its_packets_by_gpu_va() {
        let m = Mock::default();
        let mut c = DmaContext::new(m.clone(), 1).expect("context");
        assert_eq!(c.node(), 1);
        let a = [fill(1), Command::Hang];
        c.submit(&a).expect("first");
        let b = [fill(2)];
        c.submit(&b).expect("second");
        assert_eq!(c.submitted(), 2);
        let first = 8 * words(&a).len() as u64;
        c.close().expect("close");
        c.close().expect("a second close does nothing");
        drop(c);
        assert_eq!(
            m.0.borrow().log,
            [
                Ev::Context(1),
                Ev::Alloc(COMMAND_BUFFER_SIZE),
                Ev::Submit(CTX, CB_VA, first as u32, words(&a)),
                Ev::Submit(CTX, CB_VA + first, 8 * words(&b).len() as u32, words(&b)),
                Ev::ContextGone(CTX),
                Ev::AllocGone(CB),
            ]
        );
    }

    /// Attacker's input to `submit`: nothing, a NOP of length 0, an INDIRECT, more than the
    /// command buffer; each refused before any thunk, and the context still works after.
    #[test]
    fn um_01_a_dma_context_refuses_what_a_dma_buffer_cannot_carry() {
        let m = Mock::default();
        let mut c = DmaContext::new(m.clone(), 0).expect("context");
        let big = Command::Nop {
            len: u16::try_from(COMMAND_BUFFER_SIZE / 8).unwrap_or(u16::MAX),
        };
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
        c.submit(&[fill(3)]).expect("still works");
        c.close().expect("close");
        assert_eq!(c.submit(&[fill(4)]), Err(SubmitError::Lost));
    }

    /// A list that does not fit after the last one goes back to the start of the buffer.
    #[test]
    fn um_01_a_dma_context_reuses_its_command_buffer_in_turn() {
        let m = Mock::default();
        let mut c = DmaContext::new(m.clone(), 0).expect("context");
        let half = Command::Nop {
            len: u16::try_from(COMMAND_BUFFER_SIZE / 16).unwrap_or(u16::MAX),
        };
        for _ in 0..3 {
            c.submit(&[half]).expect("submit");
        }
        let vas: Vec<u64> =
            m.0.borrow()
                .log
                .iter()
                .filter_map(|e| match e {
                    Ev::Submit(_, va, ..) => Some(*va),
                    _ => None,
                })
                .collect();
        assert_eq!(vas, [CB_VA, CB_VA + COMMAND_BUFFER_SIZE / 2, CB_VA]);
    }

    /// A failed thunk leaves nothing behind: no context without its buffer; a refused
    /// submission is the OS's status and does not advance the buffer.
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
            matches!(last, Some(Ev::Submit(_, CB_VA, 32, _))),
            "{last:?}"
        );
    }
}
