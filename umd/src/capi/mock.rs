//! The unit tests' mock of the thunks ([`MockKmt`]: allocations in host memory, fences the test
//! completes) and mock queue ([`MockQueue`]: records the commands, completes nothing until a
//! wait or the test lets it). On the host build these are the types behind the buffer and VA
//! handles (`ffi_buffer`, `ffi_va`).

use rvgpu_hw::cmd::Command;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;

use crate::kmt::{
    Allocation, AllocationKind, AllocationPdd, DestroyFlags, Kmt, KmtHandle, MapGpuVa, MappedGpu,
    MappedGpuVa, NtStatus, PagingQueue, ReserveGpuVa, STATUS_NOT_SUPPORTED,
};
use crate::mock_parts::{no_hw_queues, NoCpu, WordsMem};
use crate::submit::SubmitError;
use crate::usage::{Timeline, TimelineId, TrackedQueue};

/// What the buffer code asked of the thunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Ev {
    Create(KmtHandle),
    Destroy(KmtHandle, bool),
    Wait(KmtHandle, u64),
    Invalidate(KmtHandle),
    /// `rvgpu_va_*`: a reservation (base, size), a mapping (allocation, VA, first page,
    /// pages), a free (base, size), a paging queue made or destroyed.
    Reserve(u64, u64),
    Map(KmtHandle, u64, u64, u64),
    Free(u64, u64),
    PagingQueue(KmtHandle),
    PagingQueueGone(KmtHandle),
}

#[derive(Debug, Default)]
pub(super) struct World {
    pub(super) next: KmtHandle,
    pub(super) mem: HashMap<KmtHandle, (u64, Rc<[AtomicU64]>)>,
    /// Monitored fence values (the queues' progress fences).
    pub(super) fences: HashMap<KmtHandle, u64>,
    pub(super) log: Vec<Ev>,
    /// Executed commands (the mock queue "runs" them at once; completion is separate).
    pub(super) cmds: Vec<Command>,
    pub(super) coherent: bool,
}

#[derive(Clone, Debug)]
pub(super) struct MockKmt(pub(super) Rc<RefCell<World>>);

impl Kmt for MockKmt {
    type Mem = WordsMem;
    type Doorbell = NoCpu;
    type Fence = NoCpu;

    fn create_context(&self, _node: u32) -> Result<KmtHandle, NtStatus> {
        Err(STATUS_NOT_SUPPORTED)
    }
    fn destroy_context(&self, _context: KmtHandle) -> Result<(), NtStatus> {
        Err(STATUS_NOT_SUPPORTED)
    }
    no_hw_queues!();
    fn create_allocation_as(
        &self,
        _size: u64,
        _kind: AllocationKind,
    ) -> Result<Allocation<WordsMem>, NtStatus> {
        Err(STATUS_NOT_SUPPORTED)
    }
    fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        self.destroy_allocation2(allocation, DestroyFlags::default())
    }
    fn create_allocation_pdd(&self, pdd: &AllocationPdd) -> Result<MappedGpu, NtStatus> {
        let mut w = self.0.borrow_mut();
        w.next += 1;
        let h = w.next;
        let size = pdd.size.next_multiple_of(0x1000);
        let words: Rc<[AtomicU64]> = (0..size / 8).map(|_| AtomicU64::new(0)).collect();
        w.mem.insert(h, (size, words));
        w.log.push(Ev::Create(h));
        Ok(MappedGpu {
            handle: h,
            gpu_va: 0x1_0000_0000 + u64::from(h) * 0x10_0000,
            size,
        })
    }
    fn lock2(&self, allocation: KmtHandle) -> Result<WordsMem, NtStatus> {
        let w = self.0.borrow();
        let (_, words) = w.mem.get(&allocation).ok_or(STATUS_NOT_SUPPORTED)?;
        Ok(WordsMem(words.clone()))
    }
    fn unlock2(&self, _allocation: KmtHandle) -> Result<(), NtStatus> {
        Ok(())
    }
    fn destroy_allocation2(
        &self,
        allocation: KmtHandle,
        flags: DestroyFlags,
    ) -> Result<(), NtStatus> {
        let mut w = self.0.borrow_mut();
        w.mem.remove(&allocation);
        w.log.push(Ev::Destroy(allocation, flags.assume_not_in_use));
        Ok(())
    }
    fn invalidate_cache(
        &self,
        allocation: KmtHandle,
        _offset: u64,
        _length: u64,
    ) -> Result<(), NtStatus> {
        self.0.borrow_mut().log.push(Ev::Invalidate(allocation));
        Ok(())
    }
    fn io_coherent(&self) -> bool {
        self.0.borrow().coherent
    }
    /// The GPU finishes whatever the wait is for (a blocking wait always ends here).
    fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        let mut w = self.0.borrow_mut();
        w.log.push(Ev::Wait(fence, value));
        let v = w.fences.entry(fence).or_insert(0);
        *v = (*v).max(value);
        Ok(())
    }
    fn create_paging_queue(&self, _priority: i32) -> Result<PagingQueue<NoCpu>, NtStatus> {
        let mut w = self.0.borrow_mut();
        w.next += 2;
        let h = w.next - 1;
        w.log.push(Ev::PagingQueue(h));
        Ok(PagingQueue {
            handle: h,
            fence: h + 1,
            fence_cpu: NoCpu,
        })
    }
    fn destroy_paging_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        self.0.borrow_mut().log.push(Ev::PagingQueueGone(queue));
        Ok(())
    }
    fn reserve_gpu_va(&self, r: &ReserveGpuVa) -> Result<u64, NtStatus> {
        self.0.borrow_mut().log.push(Ev::Reserve(r.base, r.size));
        Ok(if r.base == 0 { MOCK_VA } else { r.base })
    }
    fn map_gpu_va(&self, r: &MapGpuVa) -> Result<MappedGpuVa, NtStatus> {
        self.0.borrow_mut().log.push(Ev::Map(
            r.allocation,
            r.base,
            r.offset_in_pages,
            r.size_in_pages,
        ));
        Ok(MappedGpuVa {
            va: r.base,
            paging_fence_value: MOCK_PAGING_VALUE,
        })
    }
    fn free_gpu_va(&self, base: u64, size: u64) -> Result<(), NtStatus> {
        self.0.borrow_mut().log.push(Ev::Free(base, size));
        Ok(())
    }
}

/// Where the mock's VidMm places a reservation it chooses.
pub(super) const MOCK_VA: u64 = 0x6000_0000_0000;
/// The paging fence value the mock's mappings report.
pub(super) const MOCK_PAGING_VALUE: u64 = 5;

/// A queue whose progress fence lives in the mock's world.
#[derive(Debug)]
pub(super) struct MockQueue {
    pub(super) w: Rc<RefCell<World>>,
    pub(super) id: TimelineId,
    pub(super) fence: KmtHandle,
    pub(super) last: u64,
}

impl Timeline for MockQueue {
    fn timeline_id(&self) -> TimelineId {
        self.id
    }
    fn completed(&self) -> u64 {
        self.w
            .borrow()
            .fences
            .get(&self.fence)
            .copied()
            .unwrap_or(0)
    }
    fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
        Ok((self.completed() < value).then_some((self.fence, value)))
    }
}

impl TrackedQueue for MockQueue {
    fn submit_commands(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
        self.last += 1;
        self.w.borrow_mut().cmds.extend_from_slice(cmds);
        Ok(self.last)
    }
}
