//! Unit tests of the submission core against a mock of the kernel thunks: in-memory
//! allocations, a mock device that consumes the ring when rung (or later, when "paused"), and
//! scripted doorbell statuses and thunk failures. Tests are named after the requirement IDs
//! (docs/usermode-submission.md, requirements UM-xx).

use super::batch::*;
use super::config::*;
use super::kernel::*;
use super::progress::*;
use super::user::*;
use crate::kmt::STATUS_INSUFFICIENT_RESOURCES;
use rvgpu_hw::queue::RingControl;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use rvgpu_hw::cmd::{decode, decode_header, Command};
use rvgpu_hw::pdd::{DoorbellPdd, DoorbellValue, HwQueuePdd, PDD_MAGIC};
use zerocopy::{FromBytes, IntoBytes};

use crate::kmt::{
    Allocation, AllocationCpu, Doorbell, DoorbellCpu, DoorbellStatus, FenceCpu, HwQueue, Kmt,
    KmtHandle, NtStatus, QueueProgress, STATUS_NO_MEMORY,
};

const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);
const STATUS_DEVICE_REMOVED: NtStatus = NtStatus(0xC000_02B6_u32 as i32);
/// The mock's answer to a wait that would block forever (nothing left to run).
const WOULD_BLOCK_FOREVER: NtStatus = NtStatus(-1);

/// What the UMD did, in order.
#[derive(Clone, Debug, PartialEq)]
enum Ev {
    CreateContext(KmtHandle),
    CreateHwQueue {
        handle: KmtHandle,
        user_mode: bool,
    },
    CreateAllocation(KmtHandle),
    CreateDoorbell(KmtHandle),
    Connect(KmtHandle),
    Notify(KmtHandle),
    DestroyDoorbell(KmtHandle),
    DestroyHwQueue(KmtHandle),
    DestroyAllocation(KmtHandle),
    DestroyContext(KmtHandle),
    DestroyNativeFence(KmtHandle),
    /// A store to the user-mode ring (word index, value).
    RingWord(u64, u64),
    LastQueued(u64),
    WritePtr(u64),
    Doorbell(u64),
    Status(DoorbellStatus),
    KmSubmit {
        queue: KmtHandle,
        value: u64,
        gpu: u64,
        bytes: u32,
    },
    Wait {
        fence: KmtHandle,
        value: u64,
    },
    /// `cpu_timestamp` was read and returned this.
    CpuTimestamp(u64),
    /// `D3DKMTSubmitWaitForSyncObjectsToHwQueue` (MF-03).
    GpuWait {
        queue: KmtHandle,
        fences: Vec<(KmtHandle, u64)>,
    },
    /// `D3DKMTSubmitSignalSyncObjectsToHwQueue` (MF-03).
    GpuSignal {
        queue: KmtHandle,
        fences: Vec<(KmtHandle, u64)>,
    },
}

#[derive(Debug)]
struct Alloc {
    gpu: u64,
    words: Vec<u64>,
}

#[derive(Debug)]
struct Queue {
    user_mode: bool,
    /// Its OS progress fence (`None`: the OS gave it none).
    fence: Option<KmtHandle>,
}

#[derive(Debug)]
struct World {
    next_handle: KmtHandle,
    next_gpu: u64,
    allocs: HashMap<KmtHandle, Alloc>,
    queues: HashMap<KmtHandle, Queue>,
    fences: HashMap<KmtHandle, u64>,
    /// Native fences created, by the GPU VA of their CurrentValue.
    native: HashMap<u64, KmtHandle>,
    /// Fail the next native fence creation.
    fail_create_native_fence: bool,
    /// User-mode queues get a progress fence from the OS (Microsoft's pages); `false`: none,
    /// as 24H2 gives them.
    os_progress: bool,
    log: Vec<Ev>,
    /// What the mock KMD answers in the doorbell's private data.
    ring_value: u32,
    queue_id: u32,
    next_queue_id: u32,
    // The user-mode queue (one per test) and its doorbell.
    user_queue: Option<KmtHandle>,
    ring: Option<(KmtHandle, KmtHandle, u32)>,
    doorbell: Option<KmtHandle>,
    /// The queue is in the runlist (doorbell created, not destroyed).
    in_runlist: bool,
    /// A physical doorbell is bound: rings reach the device.
    connected: bool,
    status: DoorbellStatus,
    /// Status after a successful connect.
    connect_status: DoorbellStatus,
    /// Popped at each ring *before* the device sees it (a disconnect that raced the ring).
    status_script: VecDeque<DoorbellStatus>,
    /// Popped at each connect (default: success).
    connect_script: VecDeque<Result<(), NtStatus>>,
    fail_notify: bool,
    fail_create_doorbell: bool,
    /// Kernel-mode submissions fail (device lost).
    fail_km_submit: bool,
    /// The KMD's kernel ring holds at most this many submissions not yet executed; one more
    /// is refused with `STATUS_INSUFFICIENT_RESOURCES` (ring full).
    km_ring_slots: Option<usize>,
    // The device.
    /// Consume the ring as soon as it is rung (else only when a wait lets time pass).
    auto: bool,
    /// At most this many packets per ring (partial consumption).
    consume_limit: Option<usize>,
    /// The write pointer the device has seen (loaded at a ring while connected, at connect).
    seen: u64,
    /// Ring words written and not yet consumed (never overwritten while set).
    unconsumed: Vec<bool>,
    overwrite_violation: bool,
    /// Kernel-mode submissions not executed yet (when `auto` is off).
    km_pending: VecDeque<(KmtHandle, u64, u64, u32)>,
    /// Executed packets other than PROGRESS: (on the user-mode ring?, command).
    executed: Vec<(bool, Command)>,
    fault: Option<&'static str>,
    /// The mock CPU clock (`cpu_timestamp`), advanced by 10 at each read.
    qpc: u64,
}

impl World {
    fn handle(&mut self) -> KmtHandle {
        self.next_handle += 1;
        self.next_handle
    }

    fn user_fence(&self) -> Option<KmtHandle> {
        self.user_queue.and_then(|q| self.queues[&q].fence)
    }

    fn control(&self) -> Option<KmtHandle> {
        self.ring.map(|(_, c, _)| c)
    }

    fn read_ptr(&self) -> u64 {
        self.allocs[&self.control().unwrap()].words[8]
    }

    fn write_ptr(&self) -> u64 {
        self.allocs[&self.control().unwrap()].words[0]
    }

    /// The CMP: executes ring packets from the read pointer up to the write pointer it saw.
    fn run_ring(&mut self, limit: Option<usize>) {
        let Some((ring, control, size)) = self.ring else {
            return;
        };
        if !self.in_runlist {
            return;
        }
        let words = u64::from(size) / 8;
        let mut read = self.read_ptr();
        let mut n = 0;
        while read < self.seen && limit.is_none_or(|l| n < l) {
            let at = |p: u64| self.allocs[&ring].words[((p / 8) % words) as usize];
            let h = decode_header(at(read)).expect("ring header");
            let packet: Vec<u64> = (0..u64::from(h.len)).map(|i| at(read + 8 * i)).collect();
            let cmd = decode(&packet).expect("ring packet");
            match cmd {
                Command::Progress { value, .. } => match self.user_fence() {
                    Some(f) => {
                        self.fences.insert(f, value);
                    }
                    // The device: a queue without a progress fence faults (BadArgument).
                    None => self.fault = Some("PROGRESS on a queue without a progress fence"),
                },
                Command::FenceSignal {
                    value_addr, value, ..
                } => {
                    if let Some(&f) = self.native.get(&value_addr) {
                        self.fences.insert(f, value);
                    }
                    self.executed.push((true, cmd));
                }
                other => self.executed.push((true, other)),
            }
            for i in 0..u64::from(h.len) {
                self.unconsumed[(((read / 8) + i) % words) as usize] = false;
            }
            read += 8 * u64::from(h.len);
            n += 1;
        }
        self.allocs.get_mut(&control).unwrap().words[8] = read;
    }

    fn find_alloc(&self, gpu: u64, bytes: u64) -> Option<(KmtHandle, usize)> {
        self.allocs.iter().find_map(|(h, a)| {
            let size = a.words.len() as u64 * 8;
            (gpu >= a.gpu && gpu + bytes <= a.gpu + size)
                .then(|| (*h, ((gpu - a.gpu) / 8) as usize))
        })
    }

    /// A kernel-mode submission: INDIRECT(buffer), PROGRESS(value).
    fn run_km(&mut self, queue: KmtHandle, value: u64, gpu: u64, bytes: u32) {
        let Some((h, start)) = self.find_alloc(gpu, u64::from(bytes)) else {
            self.fault = Some("kernel-mode buffer outside every allocation");
            return;
        };
        let words = self.allocs[&h].words[start..start + bytes as usize / 8].to_vec();
        let mut i = 0;
        while i < words.len() {
            let hd = decode_header(words[i]).expect("buffer header");
            let len = usize::from(hd.len);
            let cmd = decode(&words[i..i + len]).expect("buffer packet");
            if let Command::Indirect { .. } = cmd {
                self.fault = Some("nested INDIRECT");
            }
            if let Command::LogWrite { .. } = cmd {
                // Kernel-mode queues have no logs: the device faults the queue (NoLog).
                self.fault = Some("LOG_WRITE on a kernel-mode queue (NoLog)");
            }
            self.executed.push((false, cmd));
            i += len;
        }
        let f = self.queues[&queue]
            .fence
            .expect("a kernel-mode queue's progress fence");
        self.fences.insert(f, value);
    }

    /// Time passes: the device runs everything it has seen.
    fn run_all(&mut self) {
        self.run_ring(None);
        while let Some((q, v, g, b)) = self.km_pending.pop_front() {
            self.run_km(q, v, g, b);
        }
    }
}

/// The native fence the mock creates with handle `h`.
fn mock_native_fence(h: KmtHandle) -> NativeFence {
    let current = 0xE000_0000 + u64::from(h) * 16;
    NativeFence {
        kmt: h,
        gpu: crate::fence::GpuFence {
            current: rvgpu_hw::addr::GpuVa::new(current),
            monitored: rvgpu_hw::addr::GpuVa::new(current + 8),
            tag: u64::from(h),
        },
        current_value_cpu: 0,
    }
}

#[derive(Clone, Debug)]
struct Mock(Rc<RefCell<World>>);

impl Mock {
    fn new() -> Self {
        Mock(Rc::new(RefCell::new(World {
            next_handle: 0x100,
            next_gpu: 0x10_0000,
            allocs: HashMap::new(),
            queues: HashMap::new(),
            fences: HashMap::new(),
            native: HashMap::new(),
            fail_create_native_fence: false,
            os_progress: true,
            log: Vec::new(),
            ring_value: DoorbellValue::WritePtr as u32,
            queue_id: 0,
            next_queue_id: 7,
            user_queue: None,
            ring: None,
            doorbell: None,
            in_runlist: false,
            connected: false,
            status: DoorbellStatus::DisconnectedRetry,
            connect_status: DoorbellStatus::Connected,
            status_script: VecDeque::new(),
            connect_script: VecDeque::new(),
            fail_notify: false,
            fail_create_doorbell: false,
            fail_km_submit: false,
            km_ring_slots: None,
            auto: true,
            consume_limit: None,
            seen: 0,
            unconsumed: Vec::new(),
            overwrite_violation: false,
            km_pending: VecDeque::new(),
            executed: Vec::new(),
            fault: None,
            qpc: 1000,
        })))
    }

    fn w(&self) -> std::cell::RefMut<'_, World> {
        self.0.borrow_mut()
    }

    /// Logs a GPU wait or signal on kernel-mode `queue`; refused on a user-mode or unknown one.
    fn log_km_queue_op(&self, queue: KmtHandle, op: Ev) -> Result<(), NtStatus> {
        let mut w = self.w();
        if w.queues.get(&queue).is_none_or(|q| q.user_mode) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        w.log.push(op);
        Ok(())
    }

    fn log(&self) -> Vec<Ev> {
        self.0.borrow().log.clone()
    }

    fn clear_log(&self) {
        self.w().log.clear();
    }

    fn executed(&self) -> Vec<(bool, Command)> {
        self.0.borrow().executed.clone()
    }

    /// Checks the invariants every test must keep.
    fn check(&self) {
        let w = self.0.borrow();
        assert!(
            !w.overwrite_violation,
            "an unconsumed ring word was overwritten"
        );
        assert_eq!(w.fault, None, "device fault");
    }
}

#[derive(Clone, Debug)]
struct MockMem {
    w: Rc<RefCell<World>>,
    h: KmtHandle,
}

impl AllocationCpu for MockMem {
    fn store(&self, offset: u64, value: u64) {
        let mut w = self.w.borrow_mut();
        let i = (offset / 8) as usize;
        let is_ring = w.ring.is_some_and(|(r, _, _)| r == self.h);
        let is_control = w.control() == Some(self.h);
        if is_ring {
            if w.unconsumed[i] {
                w.overwrite_violation = true;
            }
            w.unconsumed[i] = true;
            w.log.push(Ev::RingWord(i as u64, value));
        }
        if is_control && offset == RingControl::WRITE_PTR {
            w.log.push(Ev::WritePtr(value));
        }
        if let Some(slot) = w.allocs.get_mut(&self.h).and_then(|a| a.words.get_mut(i)) {
            *slot = value;
        }
    }
    fn load(&self, offset: u64) -> u64 {
        let w = self.w.borrow();
        w.allocs[&self.h]
            .words
            .get((offset / 8) as usize)
            .copied()
            .unwrap_or(0)
    }
}

#[derive(Debug)]
struct MockDoorbell {
    w: Rc<RefCell<World>>,
}

impl DoorbellCpu for MockDoorbell {
    fn ring(&self, value: u64) {
        let mut w = self.w.borrow_mut();
        w.log.push(Ev::Doorbell(value));
        if let Some(s) = w.status_script.pop_front() {
            w.status = s;
            if matches!(
                s,
                DoorbellStatus::DisconnectedRetry | DoorbellStatus::DisconnectedAbort
            ) {
                // Disconnected before the ring: it hit the dummy page.
                w.connected = false;
            }
        }
        if w.connected {
            w.seen = w.write_ptr();
            // With CONNECTED_NOTIFY the mock KMD kicks the queue only at the notify.
            if w.auto && w.status == DoorbellStatus::Connected {
                let limit = w.consume_limit;
                w.run_ring(limit);
            }
        }
    }
    fn status(&self) -> DoorbellStatus {
        let mut w = self.w.borrow_mut();
        let s = w.status;
        w.log.push(Ev::Status(s));
        s
    }
    fn set_last_queued(&self, value: u64) {
        self.w.borrow_mut().log.push(Ev::LastQueued(value));
    }
}

#[derive(Debug)]
struct MockFence {
    w: Rc<RefCell<World>>,
    h: KmtHandle,
}

impl FenceCpu for MockFence {
    fn value(&self) -> u64 {
        self.w.borrow().fences[&self.h]
    }
}

impl Kmt for Mock {
    type Mem = MockMem;
    type Doorbell = MockDoorbell;
    type Fence = MockFence;

    // answers that show which implementation ran (pointer forwarding test).
    fn reserve_gpu_va(&self, r: &crate::kmt::ReserveGpuVa) -> Result<u64, NtStatus> {
        Ok(r.base + 1)
    }
    fn map_gpu_va(&self, r: &crate::kmt::MapGpuVa) -> Result<crate::kmt::MappedGpuVa, NtStatus> {
        Ok(crate::kmt::MappedGpuVa {
            va: r.base,
            paging_fence_value: 2,
        })
    }
    fn free_gpu_va(&self, _base: u64, _size: u64) -> Result<(), NtStatus> {
        Ok(())
    }
    fn destroy_paging_queue(&self, _queue: KmtHandle) -> Result<(), NtStatus> {
        Ok(())
    }
    fn update_gpu_va(
        &self,
        _u: &crate::kmt::UpdateGpuVa,
        ops: &[crate::kmt::UpdateGpuVaOp],
    ) -> Result<(), NtStatus> {
        if ops.is_empty() {
            Err(NtStatus(-1))
        } else {
            Ok(())
        }
    }

    fn create_context(&self, _node: u32) -> Result<KmtHandle, NtStatus> {
        let mut w = self.w();
        let h = w.handle();
        w.log.push(Ev::CreateContext(h));
        Ok(h)
    }
    fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus> {
        self.w().log.push(Ev::DestroyContext(context));
        Ok(())
    }
    fn create_hw_queue(
        &self,
        _context: KmtHandle,
        user_mode_submission: bool,
        private_data: &mut [u8],
    ) -> Result<HwQueue<MockFence>, NtStatus> {
        let mut w = self.w();
        let mut pdd =
            HwQueuePdd::read_from_bytes(private_data).map_err(|_| STATUS_INVALID_PARAMETER)?;
        assert_eq!(pdd.magic, PDD_MAGIC);
        pdd.queue_id = w.next_queue_id;
        w.next_queue_id += 1;
        private_data.copy_from_slice(pdd.as_bytes());
        let h = w.handle();
        let fence = (w.os_progress || !user_mode_submission).then(|| w.handle());
        if let Some(f) = fence {
            w.fences.insert(f, 0);
        }
        w.queues.insert(
            h,
            Queue {
                user_mode: user_mode_submission,
                fence,
            },
        );
        if user_mode_submission {
            w.user_queue = Some(h);
            w.queue_id = pdd.queue_id;
        }
        w.log.push(Ev::CreateHwQueue {
            handle: h,
            user_mode: user_mode_submission,
        });
        Ok(HwQueue {
            handle: h,
            progress: fence.map(|fence| QueueProgress {
                fence,
                cpu: MockFence {
                    w: self.0.clone(),
                    h: fence,
                },
                gpu: 0xF000_0000 + u64::from(fence) * 8,
            }),
        })
    }
    fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus> {
        self.w().log.push(Ev::DestroyHwQueue(queue));
        Ok(())
    }
    fn create_allocation_as(
        &self,
        size: u64,
        _kind: crate::kmt::AllocationKind,
    ) -> Result<Allocation<MockMem>, NtStatus> {
        let mut w = self.w();
        let h = w.handle();
        let gpu = w.next_gpu;
        w.next_gpu += size.next_multiple_of(0x1000);
        // Garbage, as a fresh allocation may hold.
        w.allocs.insert(
            h,
            Alloc {
                gpu,
                words: vec![0xDEAD_BEEF; (size / 8) as usize],
            },
        );
        w.log.push(Ev::CreateAllocation(h));
        Ok(Allocation {
            handle: h,
            gpu_va: gpu,
            size,
            mem: MockMem {
                w: self.0.clone(),
                h,
            },
        })
    }
    fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus> {
        self.w().log.push(Ev::DestroyAllocation(allocation));
        Ok(())
    }
    fn create_doorbell(
        &self,
        queue: KmtHandle,
        ring: KmtHandle,
        ring_control: KmtHandle,
        private_data: &mut [u8],
    ) -> Result<Doorbell<MockDoorbell>, NtStatus> {
        let mut w = self.w();
        if w.fail_create_doorbell {
            return Err(STATUS_INVALID_PARAMETER);
        }
        assert!(
            w.queues[&queue].user_mode,
            "doorbell on a kernel-mode queue"
        );
        let mut pdd =
            DoorbellPdd::read_from_bytes(private_data).map_err(|_| STATUS_INVALID_PARAMETER)?;
        assert_eq!(pdd.magic, PDD_MAGIC);
        // BR-96: at most 16 bytes; the ring is the allocation the call names.
        assert_eq!(private_data.len(), rvgpu_hw::pdd::DOORBELL_PDD_MAX_BYTES);
        assert!(w.allocs.contains_key(&ring_control), "control allocation");
        assert_eq!(
            pdd.ring_size().map(u64::from),
            Some(w.allocs[&ring].words.len() as u64 * 8)
        );
        pdd.ring_value = w.ring_value;
        pdd.queue_id = w.queue_id;
        private_data.copy_from_slice(pdd.as_bytes());
        let h = w.handle();
        let size = pdd.ring_size().ok_or(STATUS_INVALID_PARAMETER)?;
        w.ring = Some((ring, ring_control, size));
        w.unconsumed = vec![false; size as usize / 8];
        w.doorbell = Some(h);
        w.in_runlist = true;
        w.connected = false;
        w.status = DoorbellStatus::DisconnectedRetry;
        w.log.push(Ev::CreateDoorbell(h));
        Ok(Doorbell {
            handle: h,
            cpu: MockDoorbell { w: self.0.clone() },
        })
    }
    fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut w = self.w();
        w.log.push(Ev::Connect(doorbell));
        assert_eq!(w.doorbell, Some(doorbell));
        w.connect_script.pop_front().unwrap_or(Ok(()))?;
        w.connected = true;
        w.status = w.connect_status;
        // The KMD writes QUEUE_KICK after a connect: the CMP loads write_ptr.
        w.seen = w.write_ptr();
        if w.auto {
            let limit = w.consume_limit;
            w.run_ring(limit);
        }
        Ok(())
    }
    fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut w = self.w();
        w.log.push(Ev::DestroyDoorbell(doorbell));
        assert_eq!(w.doorbell, Some(doorbell));
        // The queue leaves the runlist at once: nothing more of its ring runs.
        w.in_runlist = false;
        w.connected = false;
        Ok(())
    }
    fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus> {
        let mut w = self.w();
        w.log.push(Ev::Notify(doorbell));
        if w.fail_notify {
            return Err(STATUS_DEVICE_REMOVED);
        }
        if w.connected {
            w.seen = w.write_ptr();
            if w.auto {
                let limit = w.consume_limit;
                w.run_ring(limit);
            }
        }
        Ok(())
    }
    fn submit_command_to_hw_queue(
        &self,
        queue: KmtHandle,
        progress_fence_value: u64,
        command_buffer_gpu: u64,
        command_bytes: u32,
    ) -> Result<(), NtStatus> {
        let mut w = self.w();
        w.log.push(Ev::KmSubmit {
            queue,
            value: progress_fence_value,
            gpu: command_buffer_gpu,
            bytes: command_bytes,
        });
        // UM-05: a user-mode queue refuses the kernel-mode path.
        if w.queues[&queue].user_mode {
            w.fault = Some("SubmitCommandToHwQueue on a user-mode queue (UM-05)");
            return Err(STATUS_INVALID_PARAMETER);
        }
        if w.fail_km_submit {
            return Err(STATUS_DEVICE_REMOVED);
        }
        if w.km_ring_slots.is_some_and(|n| w.km_pending.len() >= n) {
            return Err(STATUS_INSUFFICIENT_RESOURCES);
        }
        if w.auto {
            w.run_km(
                queue,
                progress_fence_value,
                command_buffer_gpu,
                command_bytes,
            );
        } else {
            w.km_pending.push_back((
                queue,
                progress_fence_value,
                command_buffer_gpu,
                command_bytes,
            ));
        }
        Ok(())
    }
    fn submit_wait_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        self.log_km_queue_op(
            queue,
            Ev::GpuWait {
                queue,
                fences: fences.to_vec(),
            },
        )
    }
    fn submit_signal_to_hw_queue(
        &self,
        queue: KmtHandle,
        fences: &[(KmtHandle, u64)],
    ) -> Result<(), NtStatus> {
        self.log_km_queue_op(
            queue,
            Ev::GpuSignal {
                queue,
                fences: fences.to_vec(),
            },
        )
    }
    fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        let mut w = self.w();
        w.log.push(Ev::Wait { fence, value });
        if w.fences[&fence] < value {
            w.run_all();
        }
        if w.fences[&fence] < value {
            return Err(WOULD_BLOCK_FOREVER);
        }
        Ok(())
    }
    fn create_native_fence(&self, initial_value: u64) -> Result<NativeFence, NtStatus> {
        let mut w = self.w();
        if std::mem::take(&mut w.fail_create_native_fence) {
            return Err(STATUS_NO_MEMORY);
        }
        let h = w.handle();
        w.fences.insert(h, initial_value);
        let f = mock_native_fence(h);
        w.native.insert(f.gpu.current.get(), h);
        Ok(f)
    }
    fn native_fence_cpu(&self, fence: &NativeFence) -> Result<MockFence, NtStatus> {
        if !self.0.borrow().fences.contains_key(&fence.kmt) {
            return Err(STATUS_INVALID_PARAMETER);
        }
        Ok(MockFence {
            w: self.0.clone(),
            h: fence.kmt,
        })
    }
    fn destroy_native_fence(&self, fence: KmtHandle) -> Result<(), NtStatus> {
        let mut w = self.w();
        w.native.retain(|_, h| *h != fence);
        w.log.push(Ev::DestroyNativeFence(fence));
        Ok(())
    }
    fn cpu_timestamp(&self) -> u64 {
        let mut w = self.w();
        w.qpc += 10;
        let t = w.qpc;
        w.log.push(Ev::CpuTimestamp(t));
        t
    }
    fn cpu_timestamp_frequency(&self) -> u64 {
        10_000_000
    }
}

fn fill(pattern: u64) -> Command {
    Command::Fill {
        dst: 0x8000_0000,
        bytes: 8,
        pattern,
    }
}

/// The FILL patterns the device executed, in order, and on which path.
fn fills(m: &Mock) -> Vec<(bool, u64)> {
    m.executed()
        .into_iter()
        .filter_map(|(user, c)| match c {
            Command::Fill { pattern, .. } => Some((user, pattern)),
            _ => None,
        })
        .collect()
}

fn small(ring_size: u32) -> QueueConfig {
    QueueConfig {
        ring_size,
        ..Default::default()
    }
}

/// UM-16: the five stores of a submission, in order: the commands into the ring, PROGRESS(N+1)
/// into the ring (the OS gave a progress fence), N+1 at the last-queued address, write_ptr
/// (release), the doorbell.
#[test]
fn um_16_five_stores_in_order() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.path(), SubmissionPath::UserMode);
    for n in 1..=3u64 {
        m.clear_log();
        let v = q.submit(&[fill(n)]).unwrap();
        assert_eq!(v, n, "N+1");
        let stores: Vec<Ev> = m
            .log()
            .into_iter()
            .filter(|e| {
                matches!(
                    e,
                    Ev::RingWord(..) | Ev::LastQueued(_) | Ev::WritePtr(_) | Ev::Doorbell(_)
                )
            })
            .collect();
        let base = (n - 1) * 6; // 4 words of FILL + 2 of PROGRESS per batch
        let words: Vec<u64> = stores[..6]
            .iter()
            .enumerate()
            .map(|(k, e)| match e {
                Ev::RingWord(i, v) => {
                    assert_eq!(*i, base + k as u64, "consecutive ring words");
                    *v
                }
                other => panic!("expected ring stores first, got {other:?}"),
            })
            .collect();
        assert_eq!(decode(&words[..4]).unwrap(), fill(n), "1: the commands");
        assert_eq!(
            decode(&words[4..]).unwrap(),
            Command::Progress {
                irq: true,
                value: n
            },
            "2: PROGRESS(N+1) last"
        );
        assert_eq!(
            &stores[6..],
            &[
                Ev::LastQueued(n),
                Ev::WritePtr(n * 48),
                Ev::Doorbell(n * 48)
            ],
            "3: last-queued, 4: write_ptr, 5: doorbell (dedicated: the write pointer)"
        );
        q.wait(v).unwrap();
    }
    assert_eq!(fills(&m), vec![(true, 1), (true, 2), (true, 3)]);
    assert_eq!(q.completed(), 3);
    assert!(
        native_fences(&m).is_empty(),
        "the OS's progress fence (Microsoft's pages): no fence of its own"
    );
    m.check();
}

/// UM-16 / UM-21: with the global doorbell the UMD rings its queue id.
#[test]
fn um_16_global_doorbell_rings_the_queue_id() {
    let m = Mock::new();
    m.w().ring_value = DoorbellValue::QueueId as u32;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.ring_value(), DoorbellValue::QueueId);
    let id = m.0.borrow().queue_id;
    assert_eq!(q.queue_id(), id);
    m.clear_log();
    q.submit(&[fill(1)]).unwrap();
    assert!(m.log().contains(&Ev::Doorbell(u64::from(id))));
    assert_eq!(fills(&m), vec![(true, 1)]);
    m.check();
}

/// UM-19: CONNECTED_NOTIFY → D3DKMTNotifyWorkSubmission after the ring.
#[test]
fn um_19_connected_notify_calls_notify_work_submission() {
    let m = Mock::new();
    m.w().connect_status = DoorbellStatus::ConnectedNotify;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let db = m.0.borrow().doorbell.unwrap();
    m.clear_log();
    let v = q.submit(&[fill(1)]).unwrap();
    let log = m.log();
    let ring = log.iter().position(|e| *e == Ev::Doorbell(48)).unwrap();
    assert_eq!(
        &log[ring + 1..],
        &[Ev::Status(DoorbellStatus::ConnectedNotify), Ev::Notify(db)]
    );
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(true, 1)]);
    m.check();
}

/// UM-19: DISCONNECTED_RETRY → ConnectDoorbell and ring again, as long as it says so.
#[test]
fn um_19_disconnected_retry_reconnects_and_rings_again() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let db = m.0.borrow().doorbell.unwrap();
    m.w().status_script = [
        DoorbellStatus::DisconnectedRetry,
        DoorbellStatus::DisconnectedRetry,
    ]
    .into();
    m.clear_log();
    let v = q.submit(&[fill(1)]).unwrap();
    let tail: Vec<Ev> = m
        .log()
        .into_iter()
        .skip_while(|e| !matches!(e, Ev::Doorbell(_)))
        .collect();
    assert_eq!(
        tail,
        vec![
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::DisconnectedRetry),
            Ev::Connect(db),
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::DisconnectedRetry),
            Ev::Connect(db),
            Ev::Doorbell(48),
            Ev::Status(DoorbellStatus::Connected),
        ]
    );
    q.wait(v).unwrap();
    assert_eq!(q.path(), SubmissionPath::UserMode);
    assert_eq!(fills(&m), vec![(true, 1)], "ran once, on the ring");
    m.check();
}

/// UM-19: DISCONNECTED_ABORT → fall back to a (lazily created) kernel-mode queue; the batch
/// that hit the abort runs there, once; later batches go there too.
#[test]
fn um_19_abort_falls_back_to_kernel_mode() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    let creates = |m: &Mock| {
        m.log()
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Ev::CreateHwQueue {
                        user_mode: false,
                        ..
                    }
                )
            })
            .count()
    };
    assert_eq!(creates(&m), 0, "no kernel-mode queue before it is needed");
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    assert_eq!(q.submit(&[fill(2)]).unwrap(), 2);
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    assert_eq!(creates(&m), 1);
    let db = m.0.borrow().doorbell.unwrap();
    let log = m.log();
    let abort = log
        .iter()
        .position(|e| *e == Ev::Status(DoorbellStatus::DisconnectedAbort))
        .unwrap();
    assert_eq!(
        log[abort + 1],
        Ev::DestroyDoorbell(db),
        "quiesce the ring first"
    );
    assert!(matches!(log.last(), Some(Ev::KmSubmit { value: 1, .. })));
    assert_eq!(q.submit(&[fill(3)]).unwrap(), 3);
    q.wait(3).unwrap();
    q.wait(1).unwrap();
    assert_eq!(q.completed(), 3);
    assert_eq!(fills(&m), vec![(true, 1), (false, 2), (false, 3)]);
    m.check();
}

/// UM-19: a failed connect at creation → every submission takes the kernel-mode path.
#[test]
fn um_19_connect_failure_at_creation_falls_back() {
    let m = Mock::new();
    m.w().connect_script = [Err(STATUS_INVALID_PARAMETER)].into();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    m.clear_log();
    m.w().auto = false;
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    assert_eq!(q.submit(&[fill(2)]).unwrap(), 2);
    assert!(
        !m.log()
            .iter()
            .any(|e| matches!(e, Ev::RingWord(..) | Ev::Doorbell(_))),
        "nothing went through the ring"
    );
    let kernel_queue = m
        .log()
        .iter()
        .find_map(|e| match e {
            Ev::CreateHwQueue {
                handle,
                user_mode: false,
            } => Some(*handle),
            _ => None,
        })
        .unwrap();
    let kernel_fence = m.0.borrow().queues[&kernel_queue].fence.unwrap();
    assert_eq!(q.wait_target(2), Ok(Some((kernel_fence, 2))));
    assert_eq!(q.completed(), 0);
    q.wait(2).unwrap();
    assert_eq!(q.completed(), 2);
    assert_eq!(fills(&m), vec![(false, 1), (false, 2)]);
    m.check();
}

/// UM-19: RETRY, then the reconnect fails → fall back; the batch runs once.
#[test]
fn um_19_reconnect_failure_falls_back() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    m.w().status_script = [DoorbellStatus::DisconnectedRetry].into();
    m.w().connect_script = [Err(STATUS_DEVICE_REMOVED)].into();
    let v = q.submit(&[fill(1)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(false, 1)]);
    m.check();
}

/// UM-19: a failed NotifyWorkSubmission is handled like a failed connect.
#[test]
fn um_19_notify_failure_falls_back() {
    let m = Mock::new();
    m.w().connect_status = DoorbellStatus::ConnectedNotify;
    m.w().fail_notify = true;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let v = q.submit(&[fill(1)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(false, 1)]);
    m.check();
}

/// UM-19: the abort comes after the CMP consumed part of the ring: only the unconsumed packets
/// are resubmitted (a batch cut in the middle continues where the CMP stopped), and progress
/// values stay one sequence.
#[test]
fn um_19_abort_resubmits_only_unconsumed_packets() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let a = q.submit(&[fill(1), fill(2)]).unwrap();
    let b = q.submit(&[fill(3), fill(4)]).unwrap();
    let c = q.submit(&[fill(5)]).unwrap();
    // The CMP runs FILL 1, FILL 2, PROGRESS(1), FILL 3, then the device is lost.
    m.w().run_ring(Some(4));
    assert_eq!(q.completed(), a);
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    m.w().auto = true;
    let d = q.submit(&[fill(6)]).unwrap();
    assert_eq!((a, b, c, d), (1, 2, 3, 4));
    let kernel_fence = m
        .log()
        .iter()
        .find_map(|e| match e {
            Ev::KmSubmit { queue, .. } => m.0.borrow().queues[queue].fence,
            _ => None,
        })
        .unwrap();
    assert_eq!(
        q.wait_target(a),
        Ok(None),
        "completed on the user-mode queue"
    );
    assert_eq!(q.wait_target(5), Err(SubmitError::NotSubmitted));
    // Batch 2 was resubmitted as an empty batch (its FILL 3 had run), batch 3 and 4 follow:
    // kernel-mode values 1, 2, 3, all complete (the mock runs them at once).
    assert_eq!(q.wait_target(d), Ok(None));
    assert!(m.0.borrow().fences[&kernel_fence] == 3);
    q.wait(b).unwrap();
    q.wait(d).unwrap();
    assert_eq!(q.completed(), 4);
    assert_eq!(
        fills(&m),
        vec![
            (true, 1),
            (true, 2),
            (true, 3),
            (false, 4),
            (false, 5),
            (false, 6)
        ],
        "each FILL exactly once, in order"
    );
    m.check();
}

/// UM-16: the ring wraps: packets straddle the end and the device decodes them.
#[test]
fn um_16_ring_wraps_around() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    let mut straddled = false;
    for n in 0..40u64 {
        let before = m.0.borrow().write_ptr();
        let v = q.submit(&[fill(n)]).unwrap();
        let after = m.0.borrow().write_ptr();
        straddled |= before / 256 != (after - 1) / 256;
        q.wait(v).unwrap();
    }
    assert!(straddled, "some batch crossed the ring's end");
    assert_eq!(
        fills(&m),
        (0..40).map(|n| (true, n)).collect::<Vec<_>>(),
        "all ran, in order"
    );
    m.check();
}

/// UM-16: a full ring waits on the progress fence (for the oldest batch whose consumption
/// frees enough) and never overwrites unconsumed commands: the OS's fence, or the queue's own
/// when the OS gave none (its handle in the wait and in `wait_target`).
#[test]
fn um_16_full_ring_waits_on_the_progress_fence() {
    // (which fence, the mock, batches of one FILL that fit the 256-byte ring)
    let cases = [
        ("the OS's", Mock::new(), 5),          // 5 x (32 + 16) = 240 bytes
        ("its own", without_os_progress(), 3), // 3 x (32 + 40) = 216 bytes
    ];
    for (which, m, fit) in cases {
        m.w().auto = false; // the device runs only when a wait lets time pass
        let mut q = UserQueue::new(&m, &small(256)).unwrap();
        let fence = q.progress_fence();
        for n in 1..=fit {
            assert_eq!(q.submit(&[fill(n)]).unwrap(), n, "{which}");
        }
        assert!(
            !m.log().iter().any(|e| matches!(e, Ev::Wait { .. })),
            "{which}"
        );
        assert_eq!(q.wait_target(2), Ok(Some((fence, 2))), "{which}");
        m.clear_log();
        let next = fit + 1;
        assert_eq!(q.submit(&[fill(next)]).unwrap(), next, "{which}");
        let log = m.log();
        let wait = log
            .iter()
            .position(|e| *e == Ev::Wait { fence, value: 1 })
            .unwrap_or_else(|| panic!("{which}: waited for batch 1"));
        let first_store = log
            .iter()
            .position(|e| matches!(e, Ev::RingWord(..)))
            .unwrap();
        assert!(wait < first_store, "{which}: waited before writing");
        // Too big for the ring even when empty.
        let big: Vec<Command> = (0..64).map(fill).collect();
        assert_eq!(q.submit(&big), Err(SubmitError::TooLarge), "{which}");
        m.w().run_all();
        q.wait(next).unwrap();
        assert_eq!(q.wait_target(next), Ok(None), "{which}");
        let all: Vec<_> = (1..=next).map(|n| (true, n)).collect();
        assert_eq!(fills(&m), all, "{which}");
        m.check();
    }
}

/// UM-16 back-pressure with a device that consumes a little at a time, over many wraps.
#[test]
fn um_16_back_pressure_with_partial_consumption() {
    let m = Mock::new();
    m.w().consume_limit = Some(1);
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    for n in 0..100u64 {
        q.submit(&[fill(n), fill(n + 1000)]).unwrap();
    }
    m.w().run_all();
    q.wait(100).unwrap();
    let expect: Vec<(bool, u64)> = (0..100)
        .flat_map(|n| [(true, n), (true, n + 1000)])
        .collect();
    assert_eq!(fills(&m), expect);
    m.check();
}

/// UM-19: no submission is lost or duplicated under a mix of statuses, partial consumption,
/// reconnects, a failed reconnect and the fallback.
#[test]
fn um_19_no_submission_lost_or_duplicated() {
    let mut fell_back = 0;
    for seed in 0..20u64 {
        let m = Mock::new();
        let mut q = UserQueue::new(&m, &small(512)).unwrap();
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut pattern = 0u64;
        let mut last = 0;
        for _ in 0..150 {
            let r = rnd();
            {
                let mut w = m.w();
                w.consume_limit = if r % 3 == 0 {
                    Some((r % 5) as usize)
                } else {
                    None
                };
                w.status_script = match r % 23 {
                    0 => [DoorbellStatus::DisconnectedRetry].into(),
                    1 => [DoorbellStatus::DisconnectedRetry; 3].into(),
                    2 => [DoorbellStatus::ConnectedNotify].into(),
                    3 if r % 7 == 0 => [DoorbellStatus::DisconnectedAbort].into(),
                    _ => VecDeque::new(),
                };
                if r % 101 == 4 {
                    w.status_script = [DoorbellStatus::DisconnectedRetry].into();
                    w.connect_script = [Err(STATUS_DEVICE_REMOVED)].into();
                }
            }
            let n = (r % 4) as usize;
            let batch: Vec<Command> = (0..n)
                .map(|_| {
                    pattern += 1;
                    fill(pattern)
                })
                .collect();
            let v = q.submit(&batch).unwrap();
            assert_eq!(v, last + 1);
            last = v;
        }
        m.w().run_all();
        q.wait(last).unwrap();
        assert_eq!(q.completed(), last);
        let got: Vec<u64> = fills(&m).into_iter().map(|(_, p)| p).collect();
        assert_eq!(got, (1..=pattern).collect::<Vec<_>>(), "seed {seed}");
        m.check();
        fell_back += usize::from(q.path() == SubmissionPath::KernelMode);
    }
    assert!(
        (1..20).contains(&fell_back),
        "both paths exercised: {fell_back}"
    );
}

/// UM-10: device lost: ABORT and the kernel-mode path fails too → the queue is lost; the
/// caller drops it and creates a new one, which works.
#[test]
fn um_10_device_lost_then_recreate() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit(&[fill(1)]).unwrap();
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    m.w().fail_km_submit = true;
    assert_eq!(
        q.submit(&[fill(2)]),
        Err(SubmitError::Kmt(STATUS_DEVICE_REMOVED))
    );
    assert!(q.is_lost());
    assert_eq!(q.submit(&[fill(3)]), Err(SubmitError::Lost));
    drop(q);
    // The device came back.
    m.w().fail_km_submit = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.path(), SubmissionPath::UserMode);
    let v = q.submit(&[fill(4)]).unwrap();
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(true, 1), (true, 4)]);
    m.check();
}

/// UM-10: after device removal the OS may report the progress fence as UINT64_MAX; the
/// fallback must not take that as "everything ran" and go on silently: the device is removed,
/// and the queue is lost.
#[test]
fn um_10_removed_fence_value_is_device_loss() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit(&[fill(1)]).unwrap();
    let f = q.progress_fence();
    m.w().fences.insert(f, u64::MAX);
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    assert_eq!(
        q.submit(&[fill(2)]),
        Err(SubmitError::Kmt(crate::kmt::STATUS_DEVICE_REMOVED))
    );
    assert!(q.is_lost());
    assert_eq!(q.submit(&[fill(3)]), Err(SubmitError::Lost));
    assert!(fills(&m).is_empty());
}

/// UM-17 (the UMD's part): close waits for the last value, then destroys doorbell, queues,
/// allocations, context in that order.
#[test]
fn um_17_close_waits_then_destroys_in_order() {
    let m = Mock::new();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let fence = q.progress_fence();
    q.submit(&[fill(1)]).unwrap();
    let created = m.log();
    let handle = |pred: &dyn Fn(&Ev) -> Option<KmtHandle>| -> Vec<KmtHandle> {
        created.iter().filter_map(pred).collect()
    };
    let ctx = handle(&|e| match e {
        Ev::CreateContext(h) => Some(*h),
        _ => None,
    })[0];
    let queue = handle(&|e| match e {
        Ev::CreateHwQueue { handle, .. } => Some(*handle),
        _ => None,
    })[0];
    let allocs = handle(&|e| match e {
        Ev::CreateAllocation(h) => Some(*h),
        _ => None,
    });
    let db = m.0.borrow().doorbell.unwrap();
    m.clear_log();
    q.close().unwrap();
    assert_eq!(
        m.log(),
        vec![
            Ev::Wait { fence, value: 1 },
            Ev::DestroyDoorbell(db),
            Ev::DestroyHwQueue(queue),
            Ev::DestroyAllocation(allocs[0]),
            Ev::DestroyAllocation(allocs[1]),
            Ev::DestroyContext(ctx),
        ]
    );
    assert_eq!(fills(&m), vec![(true, 1)], "the work ran before teardown");
    m.check();
}

/// Teardown after a fallback also destroys the kernel-mode queue and its command buffer;
/// dropping does not wait.
#[test]
fn um_17_drop_after_fallback_destroys_everything() {
    let m = Mock::new();
    m.w().connect_script = [Err(STATUS_INVALID_PARAMETER)].into();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit(&[fill(1)]).unwrap();
    m.clear_log();
    drop(q);
    let log = m.log();
    assert!(!log.iter().any(|e| matches!(e, Ev::Wait { .. })));
    let kinds: Vec<&str> = log
        .iter()
        .map(|e| match e {
            Ev::DestroyHwQueue(_) => "queue",
            Ev::DestroyAllocation(_) => "alloc",
            Ev::DestroyContext(_) => "context",
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    // The doorbell went at the fallback.
    assert_eq!(
        kinds,
        ["queue", "queue", "alloc", "alloc", "alloc", "context"]
    );
}

/// Creation failures undo what was created, in reverse order; bad private data is refused.
#[test]
fn creation_failure_cleans_up() {
    let m = Mock::new();
    m.w().fail_create_doorbell = true;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    let destroyed: Vec<Ev> = m
        .log()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Ev::DestroyHwQueue(_) | Ev::DestroyAllocation(_) | Ev::DestroyContext(_)
            )
        })
        .collect();
    assert_eq!(destroyed.len(), 4, "{destroyed:?}");
    assert!(matches!(destroyed[3], Ev::DestroyContext(_)));

    let m = Mock::new();
    m.w().ring_value = 9;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::BadPrivateData)
    );
    assert!(m.log().iter().any(|e| matches!(e, Ev::DestroyDoorbell(_))));
    assert_eq!(
        UserQueue::new(&m, &small(100)).err(),
        Some(SubmitError::BadConfig)
    );
}

/// UM-01: a full command buffer does not make a kernel-mode submission wait for the queue's
/// earlier work (which may be held behind a fence the caller signals later): the path moves on
/// to a new buffer, up to eight, and with all eight busy waits only for the oldest one.
#[test]
fn um_01_kernel_mode_command_buffers_rotate_before_waiting() {
    let m = Mock::new();
    m.w().auto = false; // the device runs only when a wait lets time pass
    let cfg = QueueConfig {
        command_buffer_size: 64,
        ..Default::default()
    };
    let mut q = KernelQueue::new(&m, &cfg).unwrap();
    let fence = q.progress_fence();
    m.clear_log();
    // Two 32-byte batches per buffer: 16 batches fill eight buffers.
    for n in 1..=16u64 {
        assert_eq!(q.submit(&[fill(n)]).unwrap(), n);
    }
    let log = m.log();
    assert!(!log.iter().any(|e| matches!(e, Ev::Wait { .. })), "{log:?}");
    let created = log
        .iter()
        .filter(|e| matches!(e, Ev::CreateAllocation(_)))
        .count();
    assert_eq!(created, 7, "seven more buffers");
    let starts: std::collections::BTreeSet<u64> = log
        .iter()
        .filter_map(|e| match e {
            Ev::KmSubmit { gpu, .. } => Some(*gpu),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 16, "no command bytes reused while in flight");
    m.clear_log();
    // The seventeenth waits for the oldest buffer's last batch (2), not for all 16.
    assert_eq!(q.submit(&[fill(17)]).unwrap(), 17);
    assert!(
        m.log().contains(&Ev::Wait { fence, value: 2 }),
        "{:?}",
        m.log()
    );
    m.w().run_all();
    q.wait(17).unwrap();
    assert_eq!(fills(&m), (1..=17).map(|n| (false, n)).collect::<Vec<_>>());
    q.close().unwrap();
    m.check();
}

/// UM-01: when the KMD's kernel ring is full (`STATUS_INSUFFICIENT_RESOURCES`), the UMD waits
/// for the oldest outstanding submission only, then retries; any other refusal is returned at
/// once, with nothing waited for.
#[test]
fn um_01_kernel_ring_full_waits_for_the_oldest_only() {
    let m = Mock::new();
    m.w().auto = false;
    m.w().km_ring_slots = Some(3);
    let cfg = QueueConfig {
        command_buffer_size: 4096,
        ..Default::default()
    };
    let mut q = KernelQueue::new(&m, &cfg).unwrap();
    let fence = q.progress_fence();
    for n in 1..=3u64 {
        assert_eq!(q.submit(&[fill(n)]).unwrap(), n);
    }
    m.clear_log();
    assert_eq!(q.submit(&[fill(4)]).unwrap(), 4);
    let waits: Vec<_> = m
        .log()
        .into_iter()
        .filter(|e| matches!(e, Ev::Wait { .. }))
        .collect();
    assert_eq!(waits, vec![Ev::Wait { fence, value: 1 }], "{:?}", m.log());
    // A refusal that is not for room: returned, no wait.
    m.w().fail_km_submit = true;
    m.clear_log();
    assert_eq!(
        q.submit(&[fill(5)]),
        Err(SubmitError::Kmt(STATUS_DEVICE_REMOVED))
    );
    assert!(!m.log().iter().any(|e| matches!(e, Ev::Wait { .. })));
    m.w().fail_km_submit = false;
    m.w().run_all();
    q.wait(4).unwrap();
    assert_eq!(fills(&m), (1..=4).map(|n| (false, n)).collect::<Vec<_>>());
    q.close().unwrap();
    m.check();
}

/// UM-01: a kernel-mode queue on its own: commands copied into the command buffer, one
/// SubmitCommandToHwQueue per batch with progress values 1, 2, ...; an INDIRECT becomes its
/// own submission (INDIRECTs do not nest); the command buffer is reused after the GPU is done.
#[test]
fn um_01_kernel_mode_queue() {
    let m = Mock::new();
    let cfg = QueueConfig {
        command_buffer_size: 64,
        ..Default::default()
    };
    let mut q = KernelQueue::new(&m, &cfg).unwrap();
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    let Some(Ev::KmSubmit {
        value: 1,
        bytes: 32,
        gpu: cb_start,
        ..
    }) = m.log().last().cloned()
    else {
        panic!("one submission of 32 bytes with value 1");
    };
    // A caller-owned buffer with one FILL, called through INDIRECT.
    let buf = m.create_allocation(32).unwrap();
    let mut words = [0u64; 4];
    fill(100).encode(&mut words).unwrap();
    for (i, w) in words.iter().enumerate() {
        buf.mem.store(i as u64 * 8, *w);
    }
    m.clear_log();
    let v = q
        .submit(&[
            fill(2),
            Command::Indirect {
                addr: buf.gpu_va,
                bytes: 32,
            },
            fill(3),
        ])
        .unwrap();
    assert_eq!(v, 4, "three submissions");
    let subs: Vec<(u64, u64, u32)> = m
        .log()
        .into_iter()
        .filter_map(|e| match e {
            Ev::KmSubmit {
                value, gpu, bytes, ..
            } => Some((value, gpu, bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(subs.len(), 3);
    assert_eq!(subs[1], (3, buf.gpu_va, 32), "the INDIRECT's own buffer");
    assert_eq!(subs[0], (2, cb_start + 32, 32));
    assert_eq!(
        subs[2],
        (4, cb_start, 32),
        "the 64-byte buffer wrapped to its start"
    );
    q.wait(v).unwrap();
    assert_eq!(q.completed(), 4);
    assert_eq!(
        fills(&m),
        vec![(false, 1), (false, 2), (false, 100), (false, 3)]
    );
    assert_eq!(
        q.submit(&[Command::Nop { len: 0 }]),
        Err(SubmitError::BadCommand)
    );
    let too_big: Vec<Command> = (0..3).map(fill).collect();
    assert_eq!(q.submit(&too_big), Err(SubmitError::TooLarge));
    assert_eq!(q.wait(99), Err(SubmitError::NotSubmitted));
    m.clear_log();
    q.close().unwrap();
    let kinds: Vec<&str> = m
        .log()
        .iter()
        .filter_map(|e| match e {
            Ev::DestroyHwQueue(_) => Some("queue"),
            Ev::DestroyAllocation(_) => Some("alloc"),
            Ev::DestroyContext(_) => Some("context"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["queue", "alloc", "context"]);
    m.check();
}

/// UM-05: the UMD never uses the kernel-mode path on its user-mode queue (the mock faults if
/// it does), also across a fallback.
#[test]
fn um_05_user_mode_queue_never_takes_the_kernel_path() {
    let m = Mock::new();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let user = m.0.borrow().user_queue.unwrap();
    q.submit(&[fill(1)]).unwrap();
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    q.submit(&[fill(2)]).unwrap();
    q.submit(&[fill(3)]).unwrap();
    assert!(!m
        .log()
        .iter()
        .any(|e| matches!(e, Ev::KmSubmit { queue, .. } if *queue == user)));
    m.check();
}

/// The thunks can be shared through `Arc` (the C API does).
#[test]
#[allow(clippy::arc_with_non_send_sync)] // single-threaded test of the blanket impl
fn thunks_shared_through_arc() {
    let m = std::sync::Arc::new(Mock::new());
    let mut q = UserQueue::new(m.clone(), &QueueConfig::default()).unwrap();
    let v = q.submit(&[fill(1)]).unwrap();
    q.wait(v).unwrap();
    assert_eq!(fills(&m), vec![(true, 1)]);
}

// ---------------------------------------------------------------------------------------------
// Native fence logs (docs/logs.md#umd): LOG-02, LOG-04 on the UMD side
// ---------------------------------------------------------------------------------------------

use crate::fence::NativeFence;
use crate::fencelog::{FenceTrace, LogCursor, LogKind, Op, QueuedOp};
use std::sync::{Arc, Mutex};

/// Collects the "queued" events.
#[derive(Default)]
struct Collector(Mutex<Vec<QueuedOp>>);

impl FenceTrace for Collector {
    fn queued(&self, op: &QueuedOp) {
        self.0.lock().unwrap().push(*op);
    }
}

impl Collector {
    fn take(&self) -> Vec<QueuedOp> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn collector() -> (Arc<Collector>, Option<Arc<dyn FenceTrace>>) {
    let c = Arc::new(Collector::default());
    let t: Arc<dyn FenceTrace> = c.clone();
    (c, Some(t))
}

/// The LOG_WRITEs the device executed: (on the user-mode ring?, log, index, handle, value).
fn log_writes(m: &Mock) -> Vec<(bool, LogKind, u32, u32, u64)> {
    m.executed()
        .into_iter()
        .filter_map(|(user, c)| match c {
            Command::LogWrite {
                log,
                index,
                fence_handle,
                fence_value,
            } => Some((user, log, index, fence_handle, fence_value)),
            _ => None,
        })
        .collect()
}

/// LOG-02: indices start at 0 and go up by one per log, per queue, across batches, in
/// execution order; each operation's LOG_WRITE names its fence handle and value.
#[test]
fn log_02_indices_start_at_zero_and_step_by_one_per_log() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let g = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    assert_eq!(q.log_cursor(), LogCursor::new());
    let mut value = 0u64;
    for round in 0..5u64 {
        let mut ops = Vec::new();
        for k in 0..=round {
            value += 1;
            ops.push(Op::Signal(if k % 2 == 0 { &f } else { &g }, value));
            if k % 3 == 0 {
                ops.push(Op::Wait(&g, value));
                ops.push(Op::Cmd(fill(value)));
            }
        }
        let v = q.submit_ops(&ops).unwrap();
        q.wait(v).unwrap();
    }
    let lw = log_writes(&m);
    assert!(lw.iter().all(|e| e.0), "all on the user-mode ring");
    for kind in [LogKind::Wait, LogKind::Signal] {
        let idx: Vec<u32> = lw.iter().filter(|e| e.1 == kind).map(|e| e.2).collect();
        assert_eq!(idx, (0..idx.len() as u32).collect::<Vec<_>>(), "{kind:?}");
    }
    let signals = lw.iter().filter(|e| e.1 == LogKind::Signal).count() as u32;
    let waits = lw.iter().filter(|e| e.1 == LogKind::Wait).count() as u32;
    assert_eq!((signals, waits), (15, 7));
    assert_eq!(
        q.log_cursor(),
        LogCursor {
            next_wait: waits,
            next_signal: signals
        }
    );
    // Every signal-log entry names the fence and the value it follows.
    let exec = m.executed();
    for (i, (_, c)) in exec.iter().enumerate() {
        if let Command::LogWrite {
            log,
            fence_handle,
            fence_value,
            ..
        } = *c
        {
            let h = if fence_handle == f.kmt { f } else { g };
            let expect = match log {
                LogKind::Signal => h.signal(fence_value),
                LogKind::Wait => h.wait(fence_value),
            };
            assert_eq!(exec[i - 1].1, expect, "the operation right before");
        }
    }
    m.check();
}

/// LOG-02 / LOG-04: a signal's LOG_WRITE directly follows it in the ring, and the whole batch
/// (every pair and the PROGRESS) is published with one write-pointer store and one doorbell.
#[test]
fn log_02_signal_and_log_write_adjacent_in_one_publication() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    // A small ring, so that some pairs straddle its end.
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    for n in 0..12u64 {
        m.clear_log();
        let before = m.0.borrow().write_ptr();
        q.submit_ops(&[
            Op::Signal(&f, 2 * n + 1),
            Op::Wait(&f, 2 * n + 1),
            Op::Signal(&f, 2 * n + 2),
        ])
        .unwrap();
        let log = m.log();
        let words: Vec<u64> = log
            .iter()
            .filter_map(|e| match e {
                Ev::RingWord(_, v) => Some(*v),
                _ => None,
            })
            .collect();
        // 5 + 3 (signal, log) + 3 + 3 (wait, log) + 5 + 3 + 2 (progress) words.
        assert_eq!(words.len(), 24);
        let mut cmds = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let len = usize::from(decode_header(words[i]).unwrap().len);
            cmds.push(decode(&words[i..i + len]).unwrap());
            i += len;
        }
        let sig = |v, idx| {
            [
                f.signal(v),
                Command::LogWrite {
                    log: LogKind::Signal,
                    index: idx,
                    fence_handle: f.kmt,
                    fence_value: v,
                },
            ]
        };
        let n32 = n as u32;
        assert_eq!(&cmds[0..2], &sig(2 * n + 1, 2 * n32));
        assert_eq!(
            &cmds[2..4],
            &[
                f.wait(2 * n + 1),
                Command::LogWrite {
                    log: LogKind::Wait,
                    index: n32,
                    fence_handle: f.kmt,
                    fence_value: 2 * n + 1,
                }
            ]
        );
        assert_eq!(&cmds[4..6], &sig(2 * n + 2, 2 * n32 + 1));
        assert!(matches!(cmds[6], Command::Progress { .. }));
        let publications: Vec<&Ev> = log
            .iter()
            .filter(|e| matches!(e, Ev::WritePtr(_) | Ev::Doorbell(_)))
            .collect();
        assert_eq!(
            publications,
            [
                &Ev::WritePtr(before + 24 * 8),
                &Ev::Doorbell(before + 24 * 8)
            ],
            "one write-pointer update covering the whole batch"
        );
        let last_ring = log
            .iter()
            .rposition(|e| matches!(e, Ev::RingWord(..)))
            .unwrap();
        let wp = log
            .iter()
            .position(|e| matches!(e, Ev::WritePtr(_)))
            .unwrap();
        assert!(last_ring < wp, "every word before the publication");
    }
    m.check();
}

/// LOG-02: a batch that cannot be submitted uses no index and reports no event; the next batch
/// continues where the last submitted one ended.
#[test]
fn log_02_too_large_batch_burns_no_index() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    let (c, t) = collector();
    q.set_fence_trace(t);
    q.submit_ops(&[Op::Signal(&f, 1), Op::Wait(&f, 1)]).unwrap();
    let after_first = q.log_cursor();
    assert_eq!(
        after_first,
        LogCursor {
            next_wait: 1,
            next_signal: 1
        }
    );
    // 32 pairs of 8 words do not fit a 256-byte ring.
    let big: Vec<Op<'_>> = (2..34).map(|v| Op::Signal(&f, v)).collect();
    assert_eq!(q.submit_ops(&big), Err(SubmitError::TooLarge));
    assert_eq!(q.log_cursor(), after_first, "no index used");
    // A caller's own LOG_WRITE is refused, before anything is written.
    let own = Command::LogWrite {
        log: LogKind::Signal,
        index: 1,
        fence_handle: f.kmt,
        fence_value: 2,
    };
    assert_eq!(
        q.submit_ops(&[Op::Signal(&f, 2), Op::Cmd(own)]),
        Err(SubmitError::BadCommand)
    );
    assert_eq!(
        q.submit_ops(&[Op::Signal(&f, 2), Op::Cmd(Command::Nop { len: 0 })]),
        Err(SubmitError::BadCommand)
    );
    assert_eq!(q.log_cursor(), after_first);
    q.submit_ops(&[Op::Signal(&f, 2)]).unwrap();
    let idx: Vec<(LogKind, u32, u64)> = log_writes(&m).iter().map(|e| (e.1, e.2, e.4)).collect();
    assert_eq!(
        idx,
        vec![
            (LogKind::Signal, 0, 1),
            (LogKind::Wait, 0, 1),
            (LogKind::Signal, 1, 2)
        ]
    );
    let ev: Vec<(LogKind, u32, u64)> = c
        .take()
        .iter()
        .map(|o| (o.kind, o.index, o.value))
        .collect();
    assert_eq!(ev, idx, "only submitted operations are reported");
    m.check();
}

/// LOG-02: at `u32::MAX` the free-running index wraps to 0 (hardware.md B7), per log.
#[test]
fn log_02_index_wraps_at_u32_max() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.set_log_cursor(LogCursor {
        next_wait: 7,
        next_signal: u32::MAX - 1,
    });
    q.submit_ops(&[Op::Signal(&f, 1), Op::Signal(&f, 2)])
        .unwrap();
    q.submit_ops(&[Op::Signal(&f, 3), Op::Wait(&f, 3)]).unwrap();
    let idx: Vec<(LogKind, u32)> = log_writes(&m).iter().map(|e| (e.1, e.2)).collect();
    assert_eq!(
        idx,
        vec![
            (LogKind::Signal, u32::MAX - 1),
            (LogKind::Signal, u32::MAX),
            (LogKind::Signal, 0),
            (LogKind::Wait, 7)
        ]
    );
    assert_eq!(
        q.log_cursor(),
        LogCursor {
            next_wait: 8,
            next_signal: 1
        }
    );
    m.check();
}

/// LOG-02 (fallback): kernel-mode queues have no logs. The unconsumed batches resubmitted at
/// the fallback lose their LOG_WRITEs (the mock device faults a LOG_WRITE on a kernel-mode
/// queue), every fence operation still runs exactly once, and later `submit_ops` emit no
/// LOG_WRITE and report `logged: false` with the kernel-mode queue's id.
#[test]
fn log_02_fallback_strips_log_writes() {
    let m = Mock::new();
    m.w().auto = false;
    let f = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let user_id = q.queue_id();
    let (c, t) = collector();
    q.set_fence_trace(t);
    q.submit_ops(&[Op::Signal(&f, 1), Op::Cmd(fill(1))])
        .unwrap();
    q.submit_ops(&[Op::Wait(&f, 1), Op::Signal(&f, 2)]).unwrap();
    q.submit_ops(&[Op::Signal(&f, 3)]).unwrap();
    // The CMP runs the first batch (signal, its LOG_WRITE, FILL, PROGRESS) and the wait of the
    // second, but not the wait's LOG_WRITE; then the doorbell is aborted.
    m.w().run_ring(Some(5));
    m.w().auto = true;
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    q.submit_ops(&[Op::Signal(&f, 4)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    q.submit_ops(&[Op::Wait(&f, 4), Op::Signal(&f, 5)]).unwrap();
    q.wait(q.last_submitted()).unwrap();
    m.check(); // no LOG_WRITE reached the kernel-mode queue

    let exec = m.executed();
    let fence_ops: Vec<(bool, Command)> = exec
        .iter()
        .filter(|(_, c)| matches!(c, Command::FenceSignal { .. } | Command::FenceWait { .. }))
        .copied()
        .collect();
    assert_eq!(
        fence_ops,
        vec![
            (true, f.signal(1)),
            (true, f.wait(1)),
            (false, f.signal(2)),
            (false, f.signal(3)),
            (false, f.signal(4)),
            (false, f.wait(4)),
            (false, f.signal(5)),
        ],
        "each operation exactly once, in order"
    );
    let lw: Vec<(bool, LogKind, u32)> = log_writes(&m).iter().map(|e| (e.0, e.1, e.2)).collect();
    assert_eq!(
        lw,
        vec![(true, LogKind::Signal, 0)],
        "only the LOG_WRITE the CMP ran before the fallback (the wait's entry is lost)"
    );
    let ev = c.take();
    let kernel_id = ev.last().unwrap().queue_id;
    assert_ne!(kernel_id, user_id);
    let summary: Vec<(u32, LogKind, u32, u64, bool)> = ev
        .iter()
        .map(|o| (o.queue_id, o.kind, o.index, o.value, o.logged))
        .collect();
    assert_eq!(
        summary,
        vec![
            (user_id, LogKind::Signal, 0, 1, true),
            (user_id, LogKind::Wait, 0, 1, true),
            (user_id, LogKind::Signal, 1, 2, true),
            (user_id, LogKind::Signal, 2, 3, true),
            // Written to the user-mode ring with its LOG_WRITE, then the ring of this very
            // submission was refused and the fallback resubmitted it without: `logged` says
            // what was encoded, the entry never appears (as for indices 0 (wait), 1 and 2).
            (user_id, LogKind::Signal, 3, 4, true),
            (kernel_id, LogKind::Wait, 0, 4, false),
            (kernel_id, LogKind::Signal, 0, 5, false),
        ]
    );
}

/// LOG-02 (fallback before the ring write): a batch that waits for ring space and falls back
/// then goes to the kernel-mode queue without LOG_WRITEs, uses no index, and says so.
#[test]
fn log_02_fallback_while_waiting_for_space_uses_no_index() {
    let m = Mock::new();
    m.w().auto = false;
    let f = m.create_native_fence(0).unwrap();
    let mut q = UserQueue::new(&m, &small(256)).unwrap();
    let (c, t) = collector();
    q.set_fence_trace(t);
    for v in 1..=3u64 {
        q.submit_ops(&[Op::Signal(&f, v)]).unwrap(); // 10 words each: 240 of 256 bytes
    }
    let cursor = q.log_cursor();
    assert_eq!(cursor.next_signal, 3);
    assert!(
        !m.log().iter().any(|e| matches!(e, Ev::Wait { .. })),
        "no wait yet"
    );
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    q.submit_ops(&[Op::Signal(&f, 5), Op::Wait(&f, 5)]).unwrap();
    assert_eq!(q.path(), SubmissionPath::KernelMode);
    assert_eq!(q.log_cursor(), cursor, "no index used");
    m.w().run_all();
    m.check();
    let ev = c.take();
    assert_eq!(ev.len(), 5);
    assert!(ev[..3].iter().all(|o| o.logged));
    assert!(ev[3..].iter().all(|o| !o.logged && o.index == 0));
    assert!(log_writes(&m).iter().all(|e| !matches!(e, (false, ..))));
}

/// Kernel-mode queues have no logs: `KernelQueue::submit_ops` emits no LOG_WRITE and reports
/// its operations with `logged: false`.
#[test]
fn log_02_kernel_queue_ops_have_no_log_writes() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    let (c, t) = collector();
    q.set_fence_trace(t);
    let v = q
        .submit_ops(&[Op::Wait(&f, 1), Op::Cmd(fill(1)), Op::Signal(&f, 2)])
        .unwrap();
    q.wait(v).unwrap();
    m.check();
    let cmds: Vec<Command> = m.executed().into_iter().map(|(_, c)| c).collect();
    assert_eq!(cmds, vec![f.wait(1), fill(1), f.signal(2)]);
    let ev = c.take();
    assert_eq!(ev.len(), 2);
    assert!(ev.iter().all(|o| !o.logged && o.queue_id == q.queue_id()));
}

/// The "queued" events: one per signal and wait, in batch order, after the submission; the CPU
/// timestamp is read once per batch, before the batch's first ring store (so before the GPU
/// can run it), and never when no one listens.
#[test]
fn log_02_queued_events_order_and_timestamps() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let g = m.create_native_fence(5).unwrap();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    q.submit_ops(&[Op::Signal(&f, 1)]).unwrap();
    assert!(
        !m.log().iter().any(|e| matches!(e, Ev::CpuTimestamp(_))),
        "no clock read without a listener"
    );
    let (c, t) = collector();
    q.set_fence_trace(t);
    let mut stamps = Vec::new();
    for n in 0..3u64 {
        m.clear_log();
        q.submit_ops(&[
            Op::Wait(&g, 5 + n),
            Op::Cmd(fill(n)),
            Op::Signal(&f, 2 + n),
            Op::Signal(&g, 6 + n),
        ])
        .unwrap();
        let log = m.log();
        let reads: Vec<(usize, u64)> = log
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                Ev::CpuTimestamp(t) => Some((i, *t)),
                _ => None,
            })
            .collect();
        assert_eq!(reads.len(), 1, "one read per batch");
        let first_store = log
            .iter()
            .position(|e| matches!(e, Ev::RingWord(..)))
            .unwrap();
        assert!(reads[0].0 < first_store, "read before the batch is written");
        stamps.push(reads[0].1);
    }
    let ev = c.take();
    let id = q.queue_id();
    let expect: Vec<QueuedOp> = (0..3u64)
        .flat_map(|n| {
            let n32 = n as u32;
            let op = |kind, index, fence: &NativeFence, value| QueuedOp {
                queue_id: id,
                kind,
                index,
                fence: fence.kmt,
                value,
                qpc: stamps[n as usize],
                logged: true,
            };
            [
                op(LogKind::Wait, n32, &g, 5 + n),
                op(LogKind::Signal, 1 + 2 * n32, &f, 2 + n),
                op(LogKind::Signal, 2 + 2 * n32, &g, 6 + n),
            ]
        })
        .collect();
    assert_eq!(ev, expect);
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]));
    // Removing the listener stops events and clock reads.
    q.set_fence_trace(None);
    m.clear_log();
    q.submit_ops(&[Op::Signal(&f, 9)]).unwrap();
    assert!(c.take().is_empty());
    assert!(!m.log().iter().any(|e| matches!(e, Ev::CpuTimestamp(_))));
    m.check();
}

/// The new thunks reach the implementation through `&T` and `Arc<T>` (the defaults would
/// silently answer "not supported" / 0 otherwise).
#[test]
#[allow(clippy::arc_with_non_send_sync)] // single-threaded test of the blanket impl
fn log_thunks_forward_through_references() {
    let m = Mock::new();
    let by_ref: &Mock = &m;
    assert!(Kmt::create_native_fence(&by_ref, 3).is_ok());
    assert_ne!(Kmt::cpu_timestamp(&by_ref), 0);
    let arc = Arc::new(m.clone());
    assert_eq!(Kmt::cpu_timestamp_frequency(&arc), 10_000_000);
    assert!(Kmt::create_native_fence(&arc, 0).is_ok());
    let f = Kmt::create_native_fence(&arc, 4).unwrap();
    assert_eq!(Kmt::native_fence_cpu(&arc, &f).unwrap().value(), 4);
    assert_eq!(Kmt::native_fence_cpu(&by_ref, &f).unwrap().value(), 4);
    assert_eq!(
        Kmt::share_native_fence(&arc, 1),
        Err(crate::kmt::STATUS_NOT_SUPPORTED),
        "the default body"
    );
}

/// UM-16: the list of batches the CMP may not have consumed stays bounded by what the ring
/// holds, even when the ring never fills (the device consumes each batch when rung): the hot
/// path does not load the read pointer, so the list is pruned when the remembered one says
/// the ring is full.
#[test]
fn um_16_in_flight_stays_bounded_when_the_ring_never_fills() {
    let m = Mock::new();
    let cfg = QueueConfig::default();
    let mut q = UserQueue::new(&m, &cfg).unwrap();
    let batch = 8 * (fill(1).len() as u64) + ClosingPacket::progress().bytes();
    let holds = u64::from(cfg.ring_size) / batch;
    let mut most = 0;
    for n in 1..=5 * holds {
        q.submit(&[fill(n)]).unwrap();
        most = most.max(q.in_flight.len() as u64);
    }
    assert!(
        most <= holds,
        "in_flight grew to {most}, more than the {holds} batches the ring holds"
    );
}

// ---------------------------------------------------------------------------------------------
// MF-03: OS-scheduled GPU waits and signal packets on a kernel-mode queue.

/// MF-03: a GPU wait and a software signal packet are one thunk each, in submission order on
/// the queue's handle; the "flush" before the wait is no call at all (every earlier batch was
/// already handed to the OS by its own `submit`), and neither blocks the CPU (no CPU wait).
#[test]
fn mf_03_kernel_queue_gpu_wait_and_signal_are_thunks_in_order() {
    let m = Mock::new();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    let qh = q.queue_handle();
    m.clear_log();
    assert_eq!(q.submit(&[fill(1)]).unwrap(), 1);
    q.gpu_wait_monitored(0x77, 5).unwrap();
    assert_eq!(q.submit(&[fill(2)]).unwrap(), 2);
    q.gpu_signal_monitored_os(0x78, 9).unwrap();
    let log: Vec<Ev> = m
        .log()
        .into_iter()
        .map(|e| match e {
            Ev::KmSubmit { queue, value, .. } => Ev::KmSubmit {
                queue,
                value,
                gpu: 0,
                bytes: 0,
            },
            e => e,
        })
        .collect();
    let km = |value| Ev::KmSubmit {
        queue: qh,
        value,
        gpu: 0,
        bytes: 0,
    };
    assert_eq!(
        log,
        vec![
            km(1),
            Ev::GpuWait {
                queue: qh,
                fences: vec![(0x77, 5)]
            },
            km(2),
            Ev::GpuSignal {
                queue: qh,
                fences: vec![(0x78, 9)]
            },
        ]
    );
    // Another queue can wait on this queue's progress fence.
    assert_ne!(q.progress_fence(), 0);
    q.close().unwrap();
    m.check();
}

/// MF-03: a thunk failure is the caller's error, and nothing is submitted for it.
#[test]
fn mf_03_gpu_wait_failure_is_reported() {
    let m = Mock::new();
    let mut q = KernelQueue::new(&m, &QueueConfig::default()).unwrap();
    m.w().queues.get_mut(&q.queue_handle()).unwrap().user_mode = true;
    assert_eq!(
        q.gpu_wait_monitored(1, 1),
        Err(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    assert_eq!(
        q.gpu_signal_monitored_os(1, 1),
        Err(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    m.w().queues.get_mut(&q.queue_handle()).unwrap().user_mode = false;
}

/// Thunks that implement only the required methods: the MF-03 defaults.
struct NoMf03(Mock);

/// Each listed thunk, forwarded to the mock.
macro_rules! to_mock {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&self $(, $arg: $ty)*) -> $ret {
                self.0.$name($($arg),*)
            }
        )*
    };
}

impl Kmt for NoMf03 {
    type Mem = MockMem;
    type Doorbell = MockDoorbell;
    type Fence = MockFence;
    to_mock! {
        fn create_context(&self, node: u32) -> Result<KmtHandle, NtStatus>;
        fn destroy_context(&self, context: KmtHandle) -> Result<(), NtStatus>;
        fn create_hw_queue(&self, context: KmtHandle, user_mode_submission: bool, private_data: &mut [u8]) -> Result<HwQueue<MockFence>, NtStatus>;
        fn destroy_hw_queue(&self, queue: KmtHandle) -> Result<(), NtStatus>;
        fn create_allocation_as(&self, size: u64, kind: crate::kmt::AllocationKind) -> Result<Allocation<MockMem>, NtStatus>;
        fn destroy_allocation(&self, allocation: KmtHandle) -> Result<(), NtStatus>;
        fn create_doorbell(&self, queue: KmtHandle, ring: KmtHandle, ring_control: KmtHandle, private_data: &mut [u8]) -> Result<Doorbell<MockDoorbell>, NtStatus>;
        fn connect_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn destroy_doorbell(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn notify_work_submission(&self, doorbell: KmtHandle) -> Result<(), NtStatus>;
        fn submit_command_to_hw_queue(&self, queue: KmtHandle, progress_fence_value: u64, command_buffer_gpu: u64, command_bytes: u32) -> Result<(), NtStatus>;
        fn wait_for_fence(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;
    }
}

/// MF-03: thunks without the hardware-queue sync calls report `STATUS_NOT_SUPPORTED`, through a
/// reference and an `Arc` as well (the forwarding impls forward them).
#[test]
fn mf_03_default_thunks_are_not_supported() {
    let k = NoMf03(Mock::new());
    let mut q = KernelQueue::new(&k, &QueueConfig::default()).unwrap();
    let ns = Err(SubmitError::Kmt(crate::kmt::STATUS_NOT_SUPPORTED));
    assert_eq!(q.gpu_wait_monitored(1, 1), ns);
    assert_eq!(q.gpu_signal_monitored_os(1, 1), ns);
    q.close().unwrap();
    let m = Mock::new();
    // The test is single-threaded; the Arc is only the forwarding impl under test.
    #[allow(clippy::arc_with_non_send_sync)]
    let a = Arc::new(m.clone());
    let mut q = KernelQueue::new(a, &QueueConfig::default()).unwrap();
    q.gpu_wait_monitored(1, 1).unwrap();
    assert!(matches!(m.log().last(), Some(Ev::GpuWait { .. })));
}

/// UMD hot path: the closing PROGRESS's length the hot path adds without encoding
/// it is the packet's real length, so the room it reserves is exactly what it writes.
#[test]
fn user_mode_batch_reserves_the_closing_progress_packet_length() {
    let mut closing = ClosingPacket::progress();
    assert_eq!(closing.bytes(), 8 * progress_words(u64::MAX).len() as u64);
    for value in [1, u64::MAX] {
        let mut encoded = [0u64; 2];
        let packet = Command::Progress { irq: true, value };
        assert_eq!(packet.encode(&mut encoded), Some(2));
        assert_eq!(progress_words(value), encoded, "the pre-encoded PROGRESS");
        closing.set_value(value);
        assert_eq!(closing.words(), encoded, "the closing packet");
    }
    use crate::packets::{Packets, Refused};
    assert_eq!(
        [fill(1), Command::Nop { len: 3 }][..].words(),
        Ok(fill(1).len() as u64 + 3)
    );
    assert_eq!(
        [fill(1), Command::Nop { len: 0 }][..].words(),
        Err(Refused::Bad)
    );
    // A WRITE_DATA would go out without its data words: refused on both paths.
    let write = Command::WriteData {
        dst: 0x1000,
        count: 1,
    };
    assert_eq!([fill(1), write][..].words(), Err(Refused::Bad));
    assert_eq!(check_commands(&[write]), Err(SubmitError::BadCommand));
}

/// thunks behind a reference or an `Arc` forward the paging-queue and GPU VA thunks
/// (not the trait's `STATUS_NOT_SUPPORTED` defaults), as the harness and the C API hold them.
#[test]
fn pointer_thunks_forward_the_gpu_va_thunks() {
    fn check<K: Kmt>(k: &K) {
        let r = crate::kmt::ReserveGpuVa {
            base: 0x7000_0000_0000,
            size: 0x1_0000,
            ..Default::default()
        };
        assert_eq!(k.reserve_gpu_va(&r), Ok(0x7000_0000_0001));
        let m = crate::kmt::MapGpuVa {
            base: 0x7000_0000_0000,
            ..Default::default()
        };
        assert_eq!(k.map_gpu_va(&m).map(|x| x.paging_fence_value), Ok(2));
        assert_eq!(k.free_gpu_va(0x7000_0000_0000, 0), Ok(()));
        assert_eq!(k.destroy_paging_queue(1), Ok(()));
        let u = crate::kmt::UpdateGpuVa::default();
        let op = crate::kmt::UpdateGpuVaOp::unmap(0x7000_0000_0000, 4096);
        assert_eq!(k.update_gpu_va(&u, &[op]), Ok(()));
    }
    let m = Mock::new();
    check(&&m);
    // One thread: the mock's `Rc` world never crosses threads; the `Arc` is the pointer kind
    // under test (the C API's queues hold their thunks that way).
    #[allow(clippy::arc_with_non_send_sync)]
    let shared = alloc::sync::Arc::new(Mock(m.0.clone()));
    check(&shared);
}

// ---------------------------------------------------------------------------------------------
// A user-mode queue the OS gave no progress fence (24H2)
// ---------------------------------------------------------------------------------------------

/// A mock OS that gives user-mode queues no progress fence, as 24H2 does.
fn without_os_progress() -> Mock {
    let m = Mock::new();
    m.w().os_progress = false;
    m
}

/// The native fences the queue created, by handle.
fn native_fences(m: &Mock) -> Vec<KmtHandle> {
    m.0.borrow().native.values().copied().collect()
}

/// UM-16 without an OS progress fence: the queue creates one native fence and closes each
/// batch with its conditional FENCE_SIGNAL(N+1) (no interrupt unless a CPU waits), never
/// PROGRESS; N+1 still goes to the last-queued address before the write pointer and the
/// doorbell; waits and completion read the fence.
#[test]
fn um_16_without_an_os_progress_fence_batches_close_with_an_own_native_fence_signal() {
    let m = without_os_progress();
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let own = native_fences(&m);
    assert_eq!(
        own,
        vec![q.progress_fence()],
        "exactly one fence of its own"
    );
    let fence = mock_native_fence(own[0]);
    for n in 1..=3u64 {
        m.clear_log();
        let v = q.submit(&[fill(n)]).unwrap();
        assert_eq!(v, n);
        let log = m.log();
        let words: Vec<u64> = log
            .iter()
            .filter_map(|e| match e {
                Ev::RingWord(_, w) => Some(*w),
                _ => None,
            })
            .collect();
        assert_eq!(words.len(), 4 + 5, "FILL, then the 5-word FENCE_SIGNAL");
        assert_eq!(decode(&words[..4]).unwrap(), fill(n));
        assert_eq!(
            decode(&words[4..]).unwrap(),
            fence.signal(n),
            "batch {n}: the fence's conditional signal of N+1"
        );
        let tail: Vec<&Ev> = log
            .iter()
            .filter(|e| matches!(e, Ev::LastQueued(_) | Ev::WritePtr(_) | Ev::Doorbell(_)))
            .collect();
        assert_eq!(
            tail,
            [
                &Ev::LastQueued(n),
                &Ev::WritePtr(n * 72),
                &Ev::Doorbell(n * 72)
            ],
            "UM-16: last-queued, write pointer, doorbell"
        );
        q.wait(v).unwrap();
        assert_eq!(q.completed(), n, "read from the own fence");
    }
    assert!(
        !m.executed()
            .iter()
            .any(|(_, c)| matches!(c, Command::Progress { .. })),
        "no PROGRESS in the ring"
    );
    assert_eq!(fills(&m), vec![(true, 1), (true, 2), (true, 3)]);
    m.check();
}

/// UM-19 with the own fence: the fallback finds the batch ends by the own fence's closing
/// FENCE_SIGNAL and resubmits only what the CMP had not consumed, without those signals.
#[test]
fn um_19_abort_resubmits_batches_closed_by_the_own_fence() {
    let m = without_os_progress();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let a = q.submit(&[fill(1), fill(2)]).unwrap();
    let b = q.submit(&[fill(3)]).unwrap();
    // The CMP runs FILL 1, FILL 2 and the closing signal of batch 1, then the device is lost.
    m.w().run_ring(Some(3));
    assert_eq!(q.completed(), a);
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    m.w().auto = true;
    let c = q.submit(&[fill(4)]).unwrap();
    assert_eq!((a, b, c), (1, 2, 3));
    q.wait(c).unwrap();
    assert_eq!(q.completed(), 3);
    assert_eq!(
        fills(&m),
        vec![(true, 1), (true, 2), (false, 3), (false, 4)],
        "each FILL once, in order"
    );
    assert!(
        !m.executed()
            .iter()
            .any(|(user, c)| !user && matches!(c, Command::FenceSignal { .. })),
        "the closing signals stay behind"
    );
    m.check();
}

/// UM-17 with the own fence: close waits on it, then destroys it after the hardware queue.
#[test]
fn um_17_close_destroys_the_own_progress_fence_after_the_queue() {
    let m = without_os_progress();
    m.w().auto = false;
    let mut q = UserQueue::new(&m, &QueueConfig::default()).unwrap();
    let fence = q.progress_fence();
    q.submit(&[fill(1)]).unwrap();
    m.clear_log();
    q.close().unwrap();
    let log = m.log();
    assert_eq!(log[0], Ev::Wait { fence, value: 1 });
    let at = |pred: &dyn Fn(&Ev) -> bool| log.iter().position(pred).unwrap();
    let queue = at(&|e| matches!(e, Ev::DestroyHwQueue(_)));
    let own = at(&|e| *e == Ev::DestroyNativeFence(fence));
    let context = at(&|e| matches!(e, Ev::DestroyContext(_)));
    assert!(queue < own && own < context, "{log:?}");
    assert_eq!(
        log.iter()
            .filter(|e| matches!(e, Ev::DestroyNativeFence(_)))
            .count(),
        1
    );
    assert!(native_fences(&m).is_empty());
    m.check();
}

/// UM-05 creation without an OS progress fence: a step failing after the own fence was
/// created destroys it (after the queue); a failed fence creation undoes the queue and the
/// context and leaves no fence.
#[test]
fn um_05_creation_failure_undoes_the_own_progress_fence() {
    let m = without_os_progress();
    m.w().fail_create_doorbell = true;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::Kmt(STATUS_INVALID_PARAMETER))
    );
    let log = m.log();
    let queue = log
        .iter()
        .position(|e| matches!(e, Ev::DestroyHwQueue(_)))
        .unwrap();
    let own = log
        .iter()
        .position(|e| matches!(e, Ev::DestroyNativeFence(_)))
        .expect("the own fence destroyed");
    assert!(queue < own);
    assert!(native_fences(&m).is_empty());

    let m = without_os_progress();
    m.w().fail_create_native_fence = true;
    assert_eq!(
        UserQueue::new(&m, &QueueConfig::default()).err(),
        Some(SubmitError::Kmt(STATUS_NO_MEMORY))
    );
    let undone: Vec<&str> = m
        .log()
        .iter()
        .filter_map(|e| match e {
            Ev::DestroyHwQueue(_) => Some("queue"),
            Ev::DestroyContext(_) => Some("context"),
            Ev::DestroyNativeFence(_) | Ev::DestroyAllocation(_) => Some("other"),
            _ => None,
        })
        .collect();
    assert_eq!(undone, ["queue", "context"]);
}

/// UM-16: the closing FENCE_SIGNAL encoded once and patched per batch is exactly the fence's
/// conditional signal of that value, and only it closes a batch.
#[test]
fn um_16_pre_encoded_closing_signal_is_the_fences_signal() {
    let m = Mock::new();
    let f = m.create_native_fence(0).unwrap();
    let p = Progress::Own {
        fence: f,
        cpu: m.native_fence_cpu(&f).unwrap(),
    };
    let mut c = p.closing_packet().unwrap();
    assert_eq!(c.bytes(), 40);
    for value in [1, 0x1234_5678_9ABC, u64::MAX] {
        c.set_value(value);
        assert_eq!(decode(c.words()).unwrap(), f.signal(value));
        assert_eq!(p.closes(&f.signal(value)), Some(value));
    }
    let other = m.create_native_fence(0).unwrap();
    assert_eq!(p.closes(&other.signal(1)), None, "another fence's signal");
    assert_eq!(
        p.closes(&Command::Progress {
            irq: true,
            value: 1
        }),
        None
    );
}
