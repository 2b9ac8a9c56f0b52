//! Hardware queues: what a queue is (its ring, the KMD-owned ring of a kernel-mode queue, the
//! descriptor it contributes to its engine's runlist) and the adapter's queue ids. The DDIs
//! that create and destroy queues are in [`ddi`].
//!
//! A queue belongs to a context and runs on its engine. The KMD chooses its device queue id
//! ([`QueueIds`]: unique on the adapter across engines, never `NO_QUEUE`, hardware.md B18),
//! takes the priority from `HwQueuePdd` and programs the progress fence's GPU VA as the
//! descriptor's `progress_fence`, so `PROGRESS` in the ring writes it (UM-16).
//!
//! Two kinds (UM-01, UM-05):
//! - **kernel-mode** queues get a ring and ring control the KMD allocates
//!   (`DxgkCbAllocateContiguousMemory`, like the event ring) and are runnable from creation;
//!   `DxgkDdiSubmitCommandToHwQueue` feeds them ([`crate::submit`]).
//! - **user-mode** queues (`D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission`) have no ring until
//!   `DxgkDdiCreateDoorbell` hands over the UMD's ([`crate::doorbell`]); they refuse
//!   kernel-mode submission.
//!
//! The queue descriptor is rebuilt from this state at every runlist commit
//! ([`crate::runlist`]).

use core::sync::atomic::Ordering;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::pdd::HW_QUEUE_PRIORITY_MAX;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl};

use crate::dma::DmaBuffer;
use crate::handle::Handle;

pub mod ddi;
pub mod os_handles;

/// A ring as the device sees it (GPU addresses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    pub base: GpuVa,
    /// Bytes: a power of two in `RING_MIN..=RING_MAX`.
    pub size: u32,
    /// GPU address of the `RingControl` block (64-aligned).
    pub control: GpuVa,
}

/// The ring of a kernel-mode queue: one contiguous allocation, the ring first and the ring
/// control block right after it.
#[derive(Debug)]
pub struct KernelRing {
    pub buf: DmaBuffer,
    /// Ring bytes ([`KERNEL_RING_BYTES`]).
    pub size: u32,
    /// The producer's write pointer (free-running bytes); the copy in ring control is
    /// published from it.
    pub write_ptr: u64,
    /// Submissions that found the ring full, oldest first, appended as the CMP frees room
    /// (`submit::ddi::drain_backlog`): on Windows a failed `DxgkDdiSubmitCommandToHwQueue` puts the
    /// device in error, so a full ring must not fail the DDI.
    pub backlog: crate::kmem::Backlog,
}

/// Ring size of a kernel-mode queue: room for about 400 submissions of one INDIRECT and one
/// PROGRESS each.
pub const KERNEL_RING_BYTES: u32 = 16 * 1024;

impl KernelRing {
    /// The ring as the device sees it.
    pub fn ring(&self) -> Ring {
        Ring {
            base: self.buf.gpu(),
            size: self.size,
            // The control block follows the ring inside the same buffer (never past it).
            control: self.buf.gpu_at(u64::from(self.size)).unwrap_or(GpuVa::NULL),
        }
    }

    /// Word index of ring-control field `offset` in the buffer.
    pub fn control_word(&self, offset: u64) -> u64 {
        u64::from(self.size).saturating_add(offset) / 8
    }

    /// The CMP's read pointer (acquire: pairs with its release store after each packet).
    pub fn read_ptr(&self) -> Option<u64> {
        self.buf
            .load(self.control_word(RingControl::READ_PTR), Ordering::Acquire)
    }
}

/// A hardware queue.
#[derive(Debug)]
pub struct HwQueue {
    /// Dxgkrnl's handle of the queue (what `DxgkCbDisconnectDoorbell` names).
    pub os_handle: usize,
    pub context: Handle,
    pub engine: u32,
    /// Device queue id.
    pub id: u32,
    pub priority: u32,
    /// Created with `UserModeSubmission`.
    pub user_mode: bool,
    /// GPU VA of the progress fence value; null for a user-mode queue the OS gave none
    /// ([`ddi`]'s `progress_fence`): its descriptor then names none.
    pub progress_gpu: GpuVa,
    /// The OS's kernel CPU VA of the progress fence value (read only, valid while the queue
    /// lives; 0 if none was given): what the TDR dump reads as last completed.
    pub progress_cpu: crate::dma::OsWord,
    /// Kernel-mode queues: the progress fence value of the last accepted submission.
    pub last_submitted: u64,
    /// Created with `D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence`: the progress fence is a
    /// native fence, so a `PROGRESS` event may satisfy native-fence waits and needs a
    /// native-fence report besides the monitored-fence one (the ISR learns it from the queue
    /// table, [`crate::log::QueueIrqTable::progress_is_native`]).
    pub native_progress: bool,
    /// The ring the descriptor names; `None` for a user-mode queue without a doorbell.
    pub ring: Option<Ring>,
    /// The KMD-owned ring of a kernel-mode queue.
    pub kernel: Option<KernelRing>,
    /// The doorbell whose ring this queue runs (user-mode queues).
    pub doorbell: Option<Handle>,
    /// Native fence logs set by the OS (LOG-01); the descriptor carries their addresses.
    pub logs: crate::log::QueueLogs,
}

impl HwQueue {
    /// The runlist entry, with `doorbell` as the (informational) physical doorbell index,
    /// `root` the context's root page table (0: identity, hardware.md §12.2), `context` its
    /// scheduling priority (the queue's own priority is added below it) and `tag` what the
    /// scheduling log names the context by (its KMD handle, hardware.md 5.7).
    pub fn descriptor(
        &self,
        doorbell: u32,
        root: u64,
        context: crate::hws::ContextPriority,
        tag: u64,
    ) -> Option<QueueDescriptor> {
        if self.logs.released {
            return None;
        }
        let ring = self.ring?;
        let mut flags = QueueFlags::VALID;
        if self.user_mode {
            flags |= QueueFlags::USER_MODE;
        }
        flags |= self.logs.descriptor_flags();
        Some(QueueDescriptor {
            queue_id: self.id,
            flags: flags.bits(),
            ring_base: ring.base,
            ring_size: ring.size,
            doorbell,
            ring_control: ring.control,
            progress_fence: self.progress_gpu,
            wait_log: self.logs.descriptor_fields().0,
            signal_log: self.logs.descriptor_fields().1,
            // The queue's priority is at most HW_QUEUE_PRIORITY_MAX (< 256), below the
            // context's level byte.
            priority: context
                .word()
                .saturating_add(self.priority.min(HW_QUEUE_PRIORITY_MAX)),
            page_table_base: rvgpu_hw::addr::BusAddr::new(root),
            context_tag: tag,
            ..Default::default()
        })
    }
}

/// Queue ids of one adapter: unique across engines, never `NO_QUEUE`, handed out round-robin
/// so that a freed id is reused as late as possible (its descriptor left the runlist at the
/// commit before it was freed, and events naming it drain long before the ids wrap).
#[derive(Debug)]
pub struct QueueIds {
    next: u32,
    limit: u32,
    /// Bit `id` set: in use. A fixed bitmap, so taking an id never allocates.
    used: [u64; ID_WORDS],
    in_use: u32,
}

/// Words of the id bitmap.
const ID_WORDS: usize = QUEUE_ID_LIMIT as usize / 64;

/// Queue ids are below this: one engine's full runlist (node rings included), well under
/// `NO_QUEUE`. The id bitmap lives inside the scheduler state, which DDIs move and keep on
/// the kernel stack: 16,384 ids (a 2 KiB bitmap) pushed `DxgkDdiStopDevice`'s frame past a
/// page (a `__chkstk` probe, which a driver image does not link), so the adapter's queues
/// share these 4,096 ids.
pub const QUEUE_ID_LIMIT: u32 = rvgpu_hw::queue::RUNLIST_MAX;

impl Default for QueueIds {
    fn default() -> Self {
        Self::with_limit(QUEUE_ID_LIMIT)
    }
}

impl QueueIds {
    /// Ids in `0..limit`, `limit` at most [`QUEUE_ID_LIMIT`] (`NO_QUEUE` = `u32::MAX` is
    /// never in that range).
    pub fn with_limit(limit: u32) -> Self {
        Self {
            next: 0,
            limit: limit.min(QUEUE_ID_LIMIT),
            used: [0; ID_WORDS],
            in_use: 0,
        }
    }

    /// The word and bit of `id`, if it is below the limit.
    fn bit(&self, id: u32) -> Option<(usize, u64)> {
        if id >= self.limit {
            return None;
        }
        let word = usize::try_from(id / 64).ok()?;
        Some((word, 1u64 << (id % 64)))
    }

    /// The next free id after the last one handed out, or `None` if all are in use.
    pub fn alloc(&mut self) -> Option<u32> {
        if self.in_use >= self.limit {
            return None;
        }
        for _ in 0..self.limit {
            let id = self.next;
            self.next = id.checked_add(1).filter(|n| *n < self.limit).unwrap_or(0);
            let Some((w, b)) = self.bit(id) else { continue };
            if let Some(word) = self.used.get_mut(w) {
                if *word & b == 0 {
                    *word |= b;
                    self.in_use = self.in_use.saturating_add(1);
                    return Some(id);
                }
            }
        }
        None
    }

    /// Ids still free.
    pub fn free_count(&self) -> u32 {
        self.limit.saturating_sub(self.in_use)
    }

    /// Returns `id` (after its queue left the runlist).
    pub fn free(&mut self, id: u32) {
        let Some((w, b)) = self.bit(id) else { return };
        if let Some(word) = self.used.get_mut(w) {
            if *word & b != 0 {
                *word &= !b;
                self.in_use = self.in_use.saturating_sub(1);
            }
        }
    }

    /// Ids in use.
    pub fn in_use(&self) -> usize {
        usize::try_from(self.in_use).unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::Kind;
    use rvgpu_hw::queue::{NO_DOORBELL, NO_QUEUE};

    #[test]
    fn ids_are_unique_never_no_queue_and_reused_late() {
        let mut ids = QueueIds::with_limit(4);
        let a: Vec<u32> = (0..4).map(|_| ids.alloc().unwrap()).collect();
        assert_eq!(a, vec![0, 1, 2, 3]);
        assert_eq!(ids.alloc(), None, "exhausted");
        ids.free(1);
        assert_eq!(ids.alloc(), Some(1), "the only free id");
        ids.free(2);
        ids.free(0);
        // Round-robin: after 1 comes 2, not the lower 0.
        assert_eq!(ids.alloc(), Some(2));
        assert_eq!(ids.alloc(), Some(0));
        assert_eq!(ids.in_use(), 4);
    }

    #[test]
    fn ids_skip_ones_in_use_after_wrapping() {
        let mut ids = QueueIds::with_limit(3);
        assert_eq!(ids.alloc(), Some(0));
        assert_eq!(ids.alloc(), Some(1));
        ids.free(0);
        assert_eq!(ids.alloc(), Some(2));
        assert_eq!(ids.alloc(), Some(0), "wraps to the freed id");
        assert_eq!(ids.alloc(), None);
    }

    #[test]
    fn no_queue_is_never_handed_out() {
        // The id bitmap is fixed (no allocation when a queue is created): any limit
        // is capped at QUEUE_ID_LIMIT, far below NO_QUEUE.
        let mut ids = QueueIds::with_limit(u32::MAX);
        assert_eq!(ids.limit, QUEUE_ID_LIMIT);
        ids.next = QUEUE_ID_LIMIT - 1;
        assert_eq!(ids.alloc(), Some(QUEUE_ID_LIMIT - 1));
        assert_eq!(ids.alloc(), Some(0), "wraps at the limit");
        ids.free(NO_QUEUE);
        assert_eq!(ids.in_use(), 2, "freeing NO_QUEUE is a no-op");
        assert_eq!(QueueIds::default().limit, QUEUE_ID_LIMIT);
    }

    #[test]
    fn descriptor_of_a_ringless_queue_is_none() {
        let mut q = HwQueue {
            os_handle: 1,
            context: Handle::new(0, Kind::Context, 1).unwrap(),
            engine: 1,
            id: 7,
            priority: 3,
            user_mode: true,
            progress_gpu: rvgpu_hw::addr::GpuVa::new(0x8000),
            progress_cpu: crate::dma::OsWord::NONE,
            last_submitted: 0,
            native_progress: false,
            ring: None,
            kernel: None,
            doorbell: None,
            logs: crate::log::QueueLogs::default(),
        };
        assert_eq!(
            q.descriptor(NO_DOORBELL, 0, crate::hws::ContextPriority::DEFAULT, 0x55),
            None
        );
        q.ring = Some(Ring {
            base: rvgpu_hw::addr::GpuVa::new(0x1_0000),
            size: 4096,
            control: rvgpu_hw::addr::GpuVa::new(0x2_0000),
        });
        // A user-mode queue runs under its process's root (hardware.md B20).
        let d = q
            .descriptor(2, 0x40_0000, crate::hws::ContextPriority::DEFAULT, 0x55)
            .unwrap();
        assert_eq!(d.validate(), Ok(()));
        assert_eq!(d.queue_id, 7);
        assert_eq!(d.flags, (QueueFlags::VALID | QueueFlags::USER_MODE).bits());
        assert_eq!(d.progress_fence.get(), 0x8000);
        // The queue's own priority under its context's (hws::ContextPriority).
        assert_eq!(d.priority, crate::hws::ContextPriority::DEFAULT.word() + 3);
        assert_eq!(d.context_tag, 0x55);
        assert_eq!(d.doorbell, 2);
        assert_eq!(
            (d.wait_log.get(), d.signal_log.get()),
            (0, 0),
            "no logs set"
        );
        // LOG-01: the logs the OS set are in the descriptor the next commit writes.
        q.logs.wait = Some(crate::log::LogBuf {
            gpu: rvgpu_hw::addr::GpuVa::new(0x3_0000),
            entries: 84,
        });
        q.logs.signal = Some(crate::log::LogBuf {
            gpu: rvgpu_hw::addr::GpuVa::new(0x4_0000),
            entries: 84,
        });
        let d = q
            .descriptor(2, 0x40_0000, crate::hws::ContextPriority::DEFAULT, 0x55)
            .unwrap();
        assert_eq!((d.wait_log.get(), d.signal_log.get()), (0x3_0000, 0x4_0000));
        assert_eq!(d.validate(), Ok(()));
    }
}
