//! The packet that closes each user-mode batch and the fence its progress is read from, and the
//! creation of a hardware queue.

use rvgpu_hw::cmd::{Command, FENCE_SIGNAL_VALUE_WORD};
use rvgpu_hw::pdd::{HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use zerocopy::{FromBytes, IntoBytes};

use super::batch::{progress_words, SIGNAL_WORDS};
use super::config::SubmitError;
use crate::fence::NativeFence;
use crate::kmt::{FenceCpu, HwQueue, Kmt, KmtHandle, QueueProgress};

/// The packet that closes each user-mode batch, encoded once: per batch only its value word
/// changes (the submission hot path).
#[derive(Clone, Copy, Debug)]
pub(super) enum ClosingPacket {
    /// `PROGRESS(value)` on the OS's progress fence.
    Progress([u64; 2]),
    /// The conditional FENCE_SIGNAL of the queue's own fence.
    Signal([u64; SIGNAL_WORDS]),
}

impl ClosingPacket {
    /// `PROGRESS(value)` on the OS's progress fence.
    pub(super) fn progress() -> Self {
        Self::Progress(progress_words(0))
    }

    /// The conditional FENCE_SIGNAL of `fence`.
    pub(super) fn signal(fence: &NativeFence) -> Result<Self, SubmitError> {
        let mut words = [0u64; SIGNAL_WORDS];
        match fence.signal(0).encode(&mut words) {
            Some(SIGNAL_WORDS) => Ok(Self::Signal(words)),
            _ => Err(SubmitError::BadCommand),
        }
    }

    /// Its length in bytes.
    #[inline]
    pub(super) fn bytes(&self) -> u64 {
        match self {
            Self::Progress(w) => size_of_val(w) as u64,
            Self::Signal(w) => size_of_val(w) as u64,
        }
    }

    /// Makes it close the batch of progress value `value`.
    #[inline]
    pub(super) fn set_value(&mut self, value: u64) {
        match self {
            Self::Progress(w) => w[1] = value,
            Self::Signal(w) => w[FENCE_SIGNAL_VALUE_WORD] = value,
        }
    }

    /// Its words.
    #[inline]
    pub(super) fn words(&self) -> &[u64] {
        match self {
            Self::Progress(w) => w,
            Self::Signal(w) => w,
        }
    }
}

/// Where a user-mode queue's batches report their completion.
pub(super) enum Progress<F> {
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
    pub(super) fn closing_packet(&self) -> Result<ClosingPacket, SubmitError> {
        match self {
            Self::Os(_) => Ok(ClosingPacket::progress()),
            Self::Own { fence, .. } => ClosingPacket::signal(fence),
        }
    }

    /// The fence's D3DKMT handle (what CPU waits name).
    pub(super) fn fence(&self) -> KmtHandle {
        match self {
            Self::Os(p) => p.fence,
            Self::Own { fence, .. } => fence.kmt,
        }
    }

    /// The fence's current value.
    #[inline]
    pub(super) fn value(&self) -> u64 {
        match self {
            Self::Os(p) => p.cpu.value(),
            Self::Own { cpu, .. } => cpu.value(),
        }
    }

    /// The progress value `cmd` reports if it is the packet that closes a batch.
    pub(super) fn closes(&self, cmd: &Command) -> Option<u64> {
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
pub(super) fn create_hw_queue<K: Kmt>(
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

/// A kernel-mode hardware queue of `context` and its progress fence, which such a queue must
/// have: it completes only through it (a queue the OS gave none is destroyed again and
/// `STATUS_INVALID_PARAMETER` returned). Also the queue id the KMD wrote back.
pub(crate) fn kernel_hw_queue<K: Kmt>(
    kmt: &K,
    context: KmtHandle,
    priority: u32,
) -> Result<(KmtHandle, QueueProgress<K::Fence>, u32), SubmitError> {
    let (HwQueue { handle, progress }, queue_id) = create_hw_queue(kmt, context, false, priority)?;
    match progress {
        Some(p) => Ok((handle, p, queue_id)),
        None => {
            let _ = kmt.destroy_hw_queue(handle);
            Err(crate::kmt::STATUS_INVALID_PARAMETER.into())
        }
    }
}
