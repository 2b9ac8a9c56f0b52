//! Hardware queues (`DxgkDdiCreateHwQueue`, `DxgkDdiDestroyHwQueue`).
//!
//! A queue belongs to a context and runs on its engine. The KMD chooses its device queue id
//! ([`QueueIds`]: unique on the adapter across engines, never `NO_QUEUE`, hardware.md B18),
//! takes the priority from [`HwQueuePdd`] and programs the progress fence's GPU VA as the
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

use rvgpu_ddi::submission::{D3DDDI_CREATEHWQUEUEFLAGS, DXGKARG_CREATEHWQUEUE};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::pdd::{HwQueuePdd, HW_QUEUE_PDD_VERSION, HW_QUEUE_PRIORITY_MAX, PDD_MAGIC};
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl, NO_QUEUE};
use zerocopy::{FromBytes, IntoBytes};

use crate::dma::DmaBuffer;
use crate::dxgk::Dxgk;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist::{self, RUNLIST_CAPACITY};
use crate::sched::ddi as sched;
use crate::status::{self, Status};

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
    /// (`submit::drain_backlog`): on Windows a failed `DxgkDdiSubmitCommandToHwQueue` puts the
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
    /// GPU VA of the progress fence value.
    pub progress_gpu: GpuVa,
    /// The OS's kernel CPU VA of the progress fence value (read only, valid while the queue
    /// lives; 0 if none was given): what the TDR dump reads as last completed.
    pub progress_cpu: usize,
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
        let ring = self.ring?;
        let mut flags = QueueFlags::VALID;
        if self.user_mode {
            flags |= QueueFlags::USER_MODE;
        }
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

/// Reads the UMD's [`HwQueuePdd`], if any: no private data means priority 0 and nothing to
/// return; otherwise it must be a valid rvgpu block.
fn read_pdd(data: Option<&[u8]>) -> Result<Option<HwQueuePdd>, Status> {
    let data = data.ok_or(status::INVALID_PARAMETER)?;
    if data.is_empty() {
        return Ok(None);
    }
    let bytes = data
        .get(..size_of::<HwQueuePdd>())
        .ok_or(status::INVALID_PARAMETER)?;
    let pdd = HwQueuePdd::read_from_bytes(bytes).map_err(|_| status::INVALID_PARAMETER)?;
    if pdd.magic != PDD_MAGIC || pdd.version != HW_QUEUE_PDD_VERSION || pdd.reserved != [0; 3] {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(Some(pdd))
}

/// Writes the outputs back into the UMD's private data.
fn write_pdd(data: Option<&mut [u8]>, pdd: &HwQueuePdd) {
    // `read_pdd` checked the buffer holds at least a whole `HwQueuePdd`; it is in/out.
    if let Some(out) = data.and_then(|d| d.get_mut(..size_of::<HwQueuePdd>())) {
        out.copy_from_slice(pdd.as_bytes());
    }
}

/// Allocates and zeroes a kernel-mode queue's ring and ring control (PASSIVE).
fn alloc_kernel_ring<P: Platform>(dxgk: &Dxgk) -> Result<KernelRing, Status> {
    let bytes = u64::from(KERNEL_RING_BYTES).saturating_add(rvgpu_hw::PAGE_SIZE);
    let buf = DmaBuffer::alloc::<P>(dxgk, bytes)?;
    Ok(KernelRing {
        buf,
        size: KERNEL_RING_BYTES,
        write_ptr: 0,
        backlog: crate::kmem::Backlog::default(),
    })
}

/// DxgkDdiCreateHwQueue (PASSIVE). `h_context` is the driver's context handle: Windows'
/// hardware context is the `DxgkDdiCreateContext` one (docs/hws.md §2).
///
/// Hardware queues exist only on hardware-scheduled nodes and user-mode ones only where the
/// nodes advertise user-mode submission (Windows checks both before calling, BR-94/95); the
/// driver refuses the rest itself rather than run a queue it told the OS it has no scheduler
/// for.
pub(crate) fn create<P: Platform>(
    h_context: HANDLE,
    args: &mut DXGKARG_CREATEHWQUEUE,
    data: Option<&mut [u8]>,
) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_context, Kind::Context, |a, live, context| {
        let known = D3DDDI_CREATEHWQUEUEFLAGS::mask(D3DDDI_CREATEHWQUEUEFLAGS::Reserved);
        if args.Flags.Value & known != 0 {
            return Err(status::INVALID_PARAMETER);
        }
        let user = args
            .Flags
            .is_set(D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission);
        if !crate::hws::ddi::active(live) || (user && !crate::hws::ddi::user_mode_submission(live))
        {
            return Err(status::INVALID_PARAMETER);
        }
        let user_mode = args
            .Flags
            .is_set(D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission);
        let native_progress = args
            .Flags
            .is_set(D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence);
        let progress_gpu = GpuVa::new(args.HwQueueProgressFenceGPUVirtualAddress);
        if progress_gpu.is_null() || !progress_gpu.is_aligned(rvgpu_hw::addr::ACCESS_ALIGN) {
            return Err(status::INVALID_PARAMETER);
        }
        let pdd = read_pdd(data.as_deref())?;
        let priority = pdd.map_or(0, |p| p.priority.min(HW_QUEUE_PRIORITY_MAX));
        let h = a.new_handle(Kind::Queue)?;
        // PASSIVE work first: the kernel ring is allocated before the lock is taken.
        let kernel = if user_mode {
            None
        } else {
            Some(alloc_kernel_ring::<P>(&live.dxgk)?)
        };
        let ring = kernel.as_ref().map(KernelRing::ring);
        let queue = HwQueue {
            os_handle: args.hHwQueue.addr(),
            context,
            // Engine and id are filled in under the lock, from the context and the allocator.
            engine: 0,
            id: NO_QUEUE,
            priority,
            user_mode,
            progress_gpu,
            progress_cpu: args.HwQueueProgressFenceCPUVirtualAddress as usize,
            last_submitted: 0,
            native_progress,
            ring,
            kernel,
            doorbell: None,
            logs: crate::log::QueueLogs::default(),
        };
        let result = insert(&mut live.sched.lock(), live, h, queue);
        let (id, engine) = match result {
            Ok(v) => v,
            Err((e, kernel)) => {
                if let Some(k) = kernel {
                    let _ = live.dxgk.free_contiguous(k.buf.handle());
                }
                return Err(e);
            }
        };
        if let Some(mut p) = pdd {
            p.queue_id = id;
            p.engine = engine;
            write_pdd(data, &p);
        }
        args.hHwQueue = h.as_handle();
        crate::etw::events::emit::<P, 3>(&crate::etw::events::HWQUEUE_CREATE, || {
            [h.as_handle().addr() as u64, id.into(), engine.into()]
        });
        Ok(())
    })
}

/// The locked part of create: checks the context and the engine's capacity, takes an id,
/// inserts the queue and (kernel-mode) commits its engine's runlist. On failure the kernel
/// ring is handed back for freeing (outside the lock).
fn insert<P: Platform>(
    s: &mut crate::sched::Sched,
    live: &crate::adapter::Live<P>,
    h: Handle,
    mut queue: HwQueue,
) -> Result<(u32, u32), (Status, Option<KernelRing>)> {
    let Some(engine) = s.contexts.get(&queue.context).map(|c| c.engine) else {
        return Err((status::INVALID_HANDLE, queue.kernel));
    };
    // No count of the engine's queues (it was a scan of every queue per creation): a queue
    // sits in its id's runlist slot, and the adapter's ids (node rings included) are no
    // more than the slots, so an engine never has more than RUNLIST_CAPACITY queues; when
    // the ids run out, creation fails below.
    const _: () = assert!(QUEUE_ID_LIMIT <= RUNLIST_CAPACITY + 1);
    // Room in the map first: after the id is taken nothing may fail before the insert.
    if s.queues.try_reserve::<P>().is_err() {
        return Err((status::NO_MEMORY, queue.kernel));
    }
    // The last ids are for processes that hold few (crate::quota). The status is
    // the one Dxgkrnl accepts from DxgkDdiCreateHwQueue for a lack of resources.
    let owner = s
        .contexts
        .get(&queue.context)
        .and_then(|c| s.process_of_device(c.device));
    let free = usize::try_from(s.ids.free_count()).unwrap_or(0);
    let held = &*s;
    if !live
        .quotas
        .queues
        .grants(free, owner.map(|p| move || held.queues_of_process(p)))
    {
        return Err((status::NO_MEMORY, queue.kernel));
    }
    let Some(id) = s.ids.alloc() else {
        return Err((status::INSUFFICIENT_RESOURCES, queue.kernel));
    };
    queue.engine = engine;
    queue.id = id;
    let queue_native_progress = queue.native_progress;
    let runnable = queue.ring.is_some();
    if let Err(queue) = s.queues.insert_reserved(h, queue) {
        // Cannot happen after the reservation; never lose the kernel ring if it did.
        s.ids.free(id);
        return Err((status::NO_MEMORY, queue.kernel));
    }
    // The ISR may name the queue from now on (LOG-08); no logs yet.
    live.queue_irq
        .insert(id, crate::log::seq_of(h), engine, queue_native_progress);
    if runnable {
        if let Err(e) = runlist::commit_slot(&live.regs, s, engine, id, Some(h)) {
            let kernel = s.queues.remove(&h).and_then(|q| q.kernel);
            // Never committed, so no event can name it: a plain clear is enough.
            live.queue_irq.remove(id, engine);
            let _ = runlist::commit_slot(&live.regs, s, engine, id, None);
            s.ids.free(id);
            return Err((e, kernel));
        }
    }
    Ok((id, engine))
}

/// DxgkDdiDestroyHwQueue (PASSIVE): only once its doorbell is gone. The queue leaves the
/// runlist before its ring is freed.
pub fn destroy<P: Platform>(h_queue: HANDLE) -> Result<(), Status> {
    sched::with_adapter::<P, _>(h_queue, Kind::Queue, |_, live, h| {
        let (kernel, id, engine) = {
            let mut s = live.sched.lock();
            let q = s.queues.get(&h).ok_or(status::INVALID_HANDLE)?;
            if q.doorbell.is_some() {
                return Err(status::INVALID_DEVICE_STATE);
            }
            let was_runnable = s.runnable(q);
            let Some(q) = s.queues.remove(&h) else {
                return Err(status::INVALID_HANDLE);
            };
            if was_runnable {
                // Commit failure cannot happen with a removed entry (the list only shrinks);
                // the id is freed after the queue has left the device either way.
                let _ = runlist::commit_slot(&live.regs, &s, q.engine, q.id, None);
            }
            (q.kernel, q.id, q.engine)
        };
        // LOG-08: the ISR's table entry is cleared under the interrupt lock, so no ISR still
        // holds this queue's handle when we return (and the OS frees the queue); the id is
        // reused only after that.
        crate::log::ddi::clear_queue_irq(live, id, engine);
        live.sched.lock().ids.free(id);
        crate::etw::events::emit::<P, 2>(&crate::etw::events::HWQUEUE_DESTROY, || {
            [h.as_handle().addr() as u64, id.into()]
        });
        if let Some(k) = kernel {
            let _ = live.dxgk.free_contiguous(k.buf.handle());
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_hw::queue::NO_DOORBELL;

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
            progress_cpu: 0,
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
