//! The hardware-queue DDIs (`DxgkDdiCreateHwQueue`, `DxgkDdiDestroyHwQueue`): queue state in
//! [`super`].

use rvgpu_hw::addr::GpuVa;

use rvgpu_ddi::submission::{D3DDDI_CREATEHWQUEUEFLAGS, DXGKARG_CREATEHWQUEUE};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::pdd::{HwQueuePdd, HW_QUEUE_PDD_VERSION, HW_QUEUE_PRIORITY_MAX, PDD_MAGIC};
use rvgpu_hw::queue::NO_QUEUE;
use zerocopy::{FromBytes, IntoBytes};

use super::{HwQueue, KernelRing, KERNEL_RING_BYTES, QUEUE_ID_LIMIT};
use crate::dma::DmaBuffer;
use crate::dma::OsWord;
use crate::dxgk::Dxgk;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist::{self, RUNLIST_CAPACITY};
use crate::sched;
use crate::status::{self, Status};

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

/// The queue's progress fence from the create arguments: the GPU VA its PROGRESS packets write
/// and the OS's kernel CPU VA of the value, or `None` for a queue without one.
///
/// Microsoft's pages give every queue a progress fence. 24H2 gives a user-mode-submission
/// queue none: `DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C zeroes the fence
/// union and both VAs (24 bytes) before `DdiCreateHwQueue`. Such a queue is accepted with all
/// three zero (its descriptor names no progress fence; the UMD completes its batches on a fence
/// of its own); a kernel-mode queue completes only through its progress fence and must have
/// one. A GPU VA that is given must be 8-aligned.
fn progress_fence(
    args: &DXGKARG_CREATEHWQUEUE,
    user_mode: bool,
) -> Result<Option<(GpuVa, usize)>, Status> {
    let gpu = GpuVa::new(args.HwQueueProgressFenceGPUVirtualAddress);
    let cpu = args.HwQueueProgressFenceCPUVirtualAddress as usize;
    let handle = crate::args::hw_queue_native_progress_fence(args);
    if gpu.is_null() {
        return if user_mode && cpu == 0 && handle.is_null() {
            Ok(None)
        } else {
            Err(status::INVALID_PARAMETER)
        };
    }
    if !gpu.is_aligned(rvgpu_hw::addr::ACCESS_ALIGN) {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(Some((gpu, cpu)))
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
/// `progress_word`: the OS's kernel mapping of the progress fence value
/// (`HwQueueProgressFenceCPUVirtualAddress`, as the thunk resolved it).
pub(crate) fn create<P: Platform>(
    h_context: HANDLE,
    args: &mut DXGKARG_CREATEHWQUEUE,
    data: Option<&mut [u8]>,
    progress_word: OsWord,
) -> Result<(), Status> {
    sched::ddi::with_adapter::<P, _>(h_context, Kind::Context, |a, live, context| {
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
        let (progress_gpu, progress_cpu) = progress_fence(args, user_mode)?
            .map_or((GpuVa::NULL, OsWord::NONE), |(gpu, _)| (gpu, progress_word));
        let pdd = read_pdd(data.as_deref())?;
        let priority = pdd.map_or(0, |p| p.priority.min(HW_QUEUE_PRIORITY_MAX));
        // Room for fence-page records (`fence::pages`): the next queue's progress fence is
        // mapped before its create reaches the driver.
        live.fences
            .lock()
            .pages
            .try_reserve_spare::<P>()
            .map_err(|_| status::NO_MEMORY)?;
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
            progress_cpu,
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
    s: &mut sched::Sched,
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
    let queue_os_handle = queue.os_handle;
    let runnable = queue.ring.is_some();
    if let Err(queue) = s.queues.insert_reserved(h, queue) {
        // Cannot happen after the reservation; never lose the kernel ring if it did.
        s.ids.free(id);
        return Err((status::NO_MEMORY, queue.kernel));
    }
    // The ISR may name the queue from now on (LOG-08); no logs yet. Dxgkrnl's object first:
    // an ISR that finds the queue in `queue_irq` finds it too.
    live.os_queues.set(id, queue_os_handle);
    live.queue_irq
        .insert(id, crate::log::seq_of(h), engine, queue_native_progress);
    if runnable {
        if let Err(e) = runlist::commit_slot(&live.regs, s, engine, id, Some(h)) {
            let kernel = s.queues.remove(&h).and_then(|q| q.kernel);
            // Never committed, so no event can name it: a plain clear is enough.
            live.queue_irq.remove(id, engine);
            live.os_queues.clear(id);
            let _ = runlist::commit_slot(&live.regs, s, engine, id, None);
            s.ids.free(id);
            return Err((e, kernel));
        }
    }
    Ok((id, engine))
}

/// DxgkDdiDestroyHwQueue (PASSIVE): never refused for a queue of ours (Windows frees its queue
/// whatever the driver answers: 24H2 `K:ADAPTER_RENDER::DdiDestroyHwQueue`@0x1403B4F34 only
/// logs a failure). Doorbells still naming it are detached first
/// ([`crate::doorbell::ddi::detach_queue`]). The queue leaves the runlist before its ring is
/// freed.
pub fn destroy<P: Platform>(h_queue: HANDLE) -> Result<(), Status> {
    sched::ddi::with_adapter::<P, _>(h_queue, Kind::Queue, |_, live, h| {
        let (kernel, id, engine, held) = {
            let mut s = live.sched.lock();
            if !s.queues.contains_key(&h) {
                return Err(status::INVALID_HANDLE);
            }
            let held = crate::doorbell::ddi::detach_queue(live, &mut s, h);
            let q = s.queues.get(&h).ok_or(status::INVALID_HANDLE)?;
            let was_runnable = s.runnable(q);
            let Some(q) = s.queues.remove(&h) else {
                return Err(status::INVALID_HANDLE);
            };
            if was_runnable {
                // Commit failure cannot happen with a removed entry (the list only shrinks);
                // the id is freed after the queue has left the device either way.
                let _ = runlist::commit_slot(&live.regs, &s, q.engine, q.id, None);
            }
            (q.kernel, q.id, q.engine, held)
        };
        crate::doorbell::ddi::release_detached(live, held);
        // LOG-08: the ISR's table entry is cleared under the interrupt lock, so no ISR still
        // holds this queue's handle when we return (and the OS frees the queue); the id is
        // reused only after that.
        live.os_queues.clear(id);
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

    fn args(handle: usize, cpu: usize, gpu: u64) -> DXGKARG_CREATEHWQUEUE {
        let mut a = DXGKARG_CREATEHWQUEUE {
            HwQueueProgressFenceCPUVirtualAddress: core::ptr::without_provenance_mut(cpu),
            HwQueueProgressFenceGPUVirtualAddress: gpu,
            ..Default::default()
        };
        a.Anonymous.hHwQueueNativeProgressFence = core::ptr::without_provenance_mut(handle);
        a
    }

    /// UM-05: the progress fence arguments of DxgkDdiCreateHwQueue. A user-mode queue
    /// may have none (all three zero, as 24H2 creates it), a kernel-mode queue may not; a
    /// half-given fence or a misaligned GPU VA is refused.
    #[test]
    fn um_05_progress_fence_required_only_for_kernel_mode_queues() {
        let bad = Err(status::INVALID_PARAMETER);
        let given = Ok(Some((GpuVa::new(0x8000), 0x1000)));
        let cases = [
            ("user mode, none (24H2)", true, (0, 0, 0), Ok(None)),
            ("kernel mode, none", false, (0, 0, 0), bad),
            ("user mode, given (pages)", true, (5, 0x1000, 0x8000), given),
            ("kernel mode, given", false, (5, 0x1000, 0x8000), given),
            (
                "user mode, misaligned GPU VA",
                true,
                (5, 0x1000, 0x8004),
                bad,
            ),
            (
                "kernel mode, misaligned GPU VA",
                false,
                (5, 0x1000, 0x8001),
                bad,
            ),
            ("user mode, handle without VAs", true, (5, 0, 0), bad),
            (
                "user mode, CPU VA without a GPU VA",
                true,
                (0, 0x1000, 0),
                bad,
            ),
        ];
        for (what, user, (h, cpu, gpu), want) in cases {
            assert_eq!(progress_fence(&args(h, cpu, gpu), user), want, "{what}");
        }
    }
}
