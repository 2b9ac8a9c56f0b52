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

use crate::fence::NativeFence;
use crate::fencelog::{LogKind, QueuedOp};
use std::sync::{Arc, Mutex};

use crate::nt::{STATUS_DEVICE_REMOVED, STATUS_INVALID_PARAMETER};
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
    /// The KMD disconnects the doorbell (DISCONNECTED_RETRY) just before the next notify
    /// reaches it, which 24H2 then refuses.
    disconnect_before_notify: bool,
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
    /// Counts down at each load of the ring's read pointer; at zero the device runs the ring
    /// to the write pointer it saw first (the CMP drained it between two CPU loads).
    drain_at_read_ptr_load: Option<u32>,
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

    /// The KMD's QUEUE_KICK: the CMP loads the write pointer and, when the device runs on its
    /// own, executes up to it (at most `consume_limit` packets).
    fn kick(&mut self) {
        self.seen = self.write_ptr();
        if self.auto {
            let limit = self.consume_limit;
            self.run_ring(limit);
        }
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
            disconnect_before_notify: false,
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
            drain_at_read_ptr_load: None,
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
        let mut w = self.w.borrow_mut();
        if w.control() == Some(self.h) && offset == RingControl::READ_PTR {
            match w.drain_at_read_ptr_load {
                Some(0) => {
                    w.drain_at_read_ptr_load = None;
                    w.run_ring(None);
                }
                Some(n) => w.drain_at_read_ptr_load = Some(n - 1),
                None => {}
            }
        }
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
        // The KMD writes QUEUE_KICK after a connect.
        w.kick();
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
        if std::mem::take(&mut w.disconnect_before_notify) {
            w.status = DoorbellStatus::DisconnectedRetry;
            w.connected = false;
            return Err(STATUS_INVALID_PARAMETER);
        }
        if w.connected {
            w.kick();
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

/// The words the UMD stored into the ring, in the order of `log`.
fn ring_words(log: &[Ev]) -> Vec<u64> {
    log.iter()
        .filter_map(|e| match e {
            Ev::RingWord(_, w) => Some(*w),
            _ => None,
        })
        .collect()
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

/// The CMP of a held device runs `packets` packets of the ring, which completes the queue up to
/// `completed`; then the device is lost (the next doorbell status is DISCONNECTED_ABORT) and
/// the device runs on its own again.
fn device_lost_after(m: &Mock, q: &UserQueue<&Mock>, packets: usize, completed: u64) {
    m.w().run_ring(Some(packets));
    assert_eq!(q.completed(), completed);
    m.w().status_script = [DoorbellStatus::DisconnectedAbort].into();
    m.w().auto = true;
}

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

mod kernel_mode;
mod logs;
mod monitored;
mod user_mode;
