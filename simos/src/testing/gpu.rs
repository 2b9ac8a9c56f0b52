//! GPU work for the fence tests, submitted through the driver: a minimal user-mode driver.
//!
//! A [`GpuQueue`] is a hardware queue of its own simulated process, created the way a
//! UMD creates one (docs/usermode-submission.md) with the same thunks [`crate::kmt::SimKmt`]
//! calls: a process and D3D device ([`crate::Machine::create_process`]), a context on the
//! engine, a hardware queue with `UserModeSubmission` (the KMD picks its queue id and owns
//! the engine's runlist), a ring and a ring-control allocation, a doorbell, and a connect.
//! The test then writes packets into the ring with the [`rvgpu_hw::cmd`] encoder and submits
//! by publishing `write_ptr` (release) and ringing the doorbell, with the UM-19 status loop
//! (reconnect on `DISCONNECTED_RETRY`, `NotifyWorkSubmission` on `CONNECTED_NOTIFY`).
//!
//! Fences the queue names must be open in its process ([`GpuQueue::pid`]): on a GpuMmu
//! adapter their pages are mapped into that process only.
//!
//! Unlike the UMD's `UserQueue` it writes exactly the packets the test queues: no `PROGRESS`
//! packet ends a kick, so a kick raises no interrupt of its own and interrupt counts are the
//! fence signals' alone. The queue's progress fence therefore stays 0 and its last-queued
//! value 0: the OS sees no outstanding work on it (a normal exit does not wait for it, and
//! [`crate::Machine::power_down`] does not see its work). The process lives until the adapter
//! stops (the OS then tears it down) or the test ends it ([`GpuQueue::process`] with
//! [`crate::Machine::exit_process`]); dropping the queue does not destroy it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
};
use rvgpu_device::SysAlloc;
use rvgpu_hw::cmd::{Command, SIGNAL_ALWAYS_IRQ, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_hw::pdd::{
    DoorbellPdd, DoorbellValue, HwQueuePdd, DOORBELL_PDD_VERSION, HW_QUEUE_PDD_VERSION, PDD_MAGIC,
};
use rvgpu_hw::queue::RingControl;
use rvgpu_umd::kmt::KmtHandle;
use zerocopy::IntoBytes;

use crate::dxgkrnl::adapter::AdapterShared;
use crate::error::SimError;
use crate::machine::Machine;
use crate::sync::fence::{MonitoredFence, NativeFence};
use crate::ums::{self, DoorbellCpuState, UmsProcess};
use crate::Irql;

/// Ring size in bytes.
pub const RING_BYTES: u32 = 4096;

/// How many times one kick reconnects after `DISCONNECTED_RETRY` before it gives up (the
/// UMD's bound, `rvgpu_umd::submit::MAX_RETRIES`).
const MAX_RETRIES: u32 = 1024;

fn sim(msg: &str) -> SimError {
    SimError::Simulation(format!("gpu fixture: {msg}"))
}

/// What rings the queue's doorbell: shared by [`GpuQueue`] and its [`Kicker`]s.
#[derive(Clone)]
struct Bell {
    adapter: Arc<AdapterShared>,
    device: KmtHandle,
    doorbell: KmtHandle,
    cpu: Arc<DoorbellCpuState>,
    control: SysAlloc,
    ring_value: DoorbellValue,
    queue_id: u32,
}

impl Bell {
    /// Publishes `write_ptr` (release; never backwards) and rings the doorbell with the
    /// value the doorbell's private data asked for. Then the UM-19 status loop, when
    /// `passive` (connect and notify are PASSIVE_LEVEL thunks); at raised IRQL a
    /// disconnected doorbell's work waits for the next [`GpuQueue::kick`], which
    /// reconnects (the KMD kicks the queue at connect, collecting it).
    fn ring(&self, write_ptr: u64, passive: bool) -> Result<(), SimError> {
        self.control
            .word(RingControl::WRITE_PTR)
            .ok_or_else(|| sim("ring control"))?
            .fetch_max(write_ptr, Ordering::Release);
        let word = match self.ring_value {
            DoorbellValue::WritePtr => write_ptr,
            DoorbellValue::QueueId => u64::from(self.queue_id),
        };
        let mut retries = 0u32;
        loop {
            self.cpu.ring(word);
            if !passive {
                return Ok(());
            }
            match self.cpu.status() {
                D3DDDI_DOORBELLSTATUS_CONNECTED => return Ok(()),
                D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD => {
                    return ums::notify_work_submission(&self.adapter, self.device, self.doorbell)
                }
                D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY if retries < MAX_RETRIES => {
                    ums::connect_doorbell(&self.adapter, self.device, self.doorbell)?;
                    retries += 1;
                }
                s => return Err(sim(&format!("doorbell unusable (status {s})"))),
            }
        }
    }
}

/// See [`GpuQueue::kicker`].
#[derive(Clone)]
pub struct Kicker {
    bell: Bell,
    write_ptr: u64,
}

impl std::fmt::Debug for Kicker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kicker")
            .field("queue_id", &self.bell.queue_id)
            .field("write_ptr", &self.write_ptr)
            .finish_non_exhaustive()
    }
}

impl Kicker {
    /// Publishes the write pointer it was made with (release) and rings the doorbell, from
    /// any thread and IRQL. At PASSIVE_LEVEL a disconnected doorbell is reconnected (the
    /// status loop of [`GpuQueue::kick`]); at raised IRQL (an OS callback run by the DPC)
    /// it only rings, so work rung on a disconnected doorbell runs at the queue's next
    /// connect. A failure shows as the machine's fault.
    pub fn kick(&self) {
        let passive = crate::dxgkrnl::kernel::current_irql() == Irql::Passive;
        let _ = self.bell.ring(self.write_ptr, passive);
    }
}

/// One user-mode hardware queue on one engine, of its own process, fed by the test.
pub struct GpuQueue {
    process: UmsProcess,
    engine: u32,
    context: KmtHandle,
    queue: KmtHandle,
    ring: SysAlloc,
    bell: Bell,
    write_ptr: u64,
}

impl std::fmt::Debug for GpuQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuQueue")
            .field("process", &self.process)
            .field("engine", &self.engine)
            .field("queue_id", &self.bell.queue_id)
            .field("write_ptr", &self.write_ptr)
            .finish_non_exhaustive()
    }
}

impl GpuQueue {
    /// Creates a process on adapter `adapter` and, in it, a user-mode hardware queue on
    /// `engine` with a [`RING_BYTES`] ring and a connected doorbell (see the module
    /// documentation). The KMD chooses the queue id ([`GpuQueue::queue_id`]).
    pub fn new(m: &Machine, adapter: usize, engine: u32) -> Result<Self, SimError> {
        let process = m.create_process(adapter)?;
        match Self::build(m, process, engine) {
            Ok(q) => Ok(q),
            Err(e) => {
                // Destroys whatever was created (abnormal exit: nothing to wait for).
                let _ = m.kill_process(&process);
                Err(e)
            }
        }
    }

    /// A queue on `engine` in an existing `process` (several queues, and the fences they
    /// share, in one process). The process outlives the queue.
    pub fn new_in(m: &Machine, process: UmsProcess, engine: u32) -> Result<Self, SimError> {
        Self::build(m, process, engine)
    }

    fn build(m: &Machine, process: UmsProcess, engine: u32) -> Result<Self, SimError> {
        let a = m.adapter_shared(process.adapter)?.clone();
        let device = process.device;
        let context = ums::create_context(&a, device, engine)?;
        let mut qp = HwQueuePdd {
            magic: PDD_MAGIC,
            version: HW_QUEUE_PDD_VERSION,
            ..Default::default()
        };
        let q = ums::create_hw_queue(m, &a, device, context, true, qp.as_mut_bytes())?;
        use rvgpu_umd::kmt::{allocation_private_data, AllocationKind};
        let ring_pdd = allocation_private_data(u64::from(RING_BYTES), AllocationKind::Commands);
        let (ring_h, ring, ring_va) =
            m.create_allocation(&a, device, u64::from(RING_BYTES), ring_pdd.as_bytes())?;
        let control_pdd = allocation_private_data(RingControl::SIZE, AllocationKind::RingControl);
        let (control_h, control, control_va) =
            m.create_allocation(&a, device, RingControl::SIZE, control_pdd.as_bytes())?;
        for off in [RingControl::WRITE_PTR, RingControl::READ_PTR] {
            control
                .word(off)
                .ok_or_else(|| sim("ring control"))?
                .store(0, Ordering::Relaxed);
        }
        let mut dp = DoorbellPdd {
            magic: PDD_MAGIC,
            version: DOORBELL_PDD_VERSION,
            ring_gpu: ring_va,
            ring_control_gpu: control_va,
            ring_size: RING_BYTES,
            ..Default::default()
        };
        let db = ums::create_doorbell(&a, device, q.handle, ring_h, control_h, dp.as_mut_bytes())?;
        let ring_value =
            DoorbellValue::from_u32(dp.ring_value).ok_or_else(|| sim("doorbell pdd"))?;
        let queue_id = match ring_value {
            DoorbellValue::QueueId => dp.queue_id,
            DoorbellValue::WritePtr => qp.queue_id,
        };
        ums::connect_doorbell(&a, device, db.handle)?;
        Ok(Self {
            process,
            engine,
            context,
            queue: q.handle,
            ring,
            bell: Bell {
                adapter: a,
                device,
                doorbell: db.handle,
                cpu: db.cpu,
                control,
                ring_value,
                queue_id,
            },
            write_ptr: 0,
        })
    }

    fn push(&mut self, c: Command) -> Result<(), SimError> {
        let mut words = [0u64; 8];
        let n = c.encode(&mut words).ok_or_else(|| sim("encode"))?;
        let size = u64::from(RING_BYTES);
        let read = self.read_ptr();
        if self.write_ptr + 8 * n as u64 - read > size {
            return Err(sim("ring full"));
        }
        for (i, w) in words.iter().take(n).enumerate() {
            let off = (self.write_ptr + 8 * i as u64) % size;
            self.ring
                .word(off)
                .ok_or_else(|| sim("ring offset"))?
                .store(*w, Ordering::Relaxed);
        }
        self.write_ptr += 8 * n as u64;
        Ok(())
    }

    /// A queue names only fences its process opened: on a GpuMmu adapter the fence's pages
    /// are mapped into the process when it creates or opens the fence, and nowhere else (a
    /// signal through an unmapped VA would page-fault). Caught here, with a clearer message.
    fn opened_here(&self, fence: &NativeFence) -> Result<(), SimError> {
        if fence.process() == self.process.pid && fence.adapter() == self.process.adapter {
            Ok(())
        } else {
            Err(sim(
                "the fence is not open in the queue's process on its adapter",
            ))
        }
    }

    /// Queues FENCE_SIGNAL with the conditional interrupt (NF-03) for `fence`: its
    /// CurrentValue and MonitoredValue GPU addresses and its report tag (from the private
    /// data create returned). Call [`GpuQueue::kick`] to submit.
    pub fn signal(&mut self, fence: &NativeFence, value: u64) -> Result<(), SimError> {
        self.opened_here(fence)?;
        let p = fence.pdd();
        self.signal_raw(
            SIGNAL_CONDITIONAL_IRQ,
            p.current_value_gpu,
            value,
            p.monitored_value_gpu,
            p.report_tag,
        )
    }

    /// Queues a legacy monitored-fence signal (MF-03): FENCE_SIGNAL with
    /// SIGNAL_ALWAYS_IRQ (every signal interrupts, MF-04).
    pub fn signal_monitored(&mut self, fence: &MonitoredFence, value: u64) -> Result<(), SimError> {
        self.signal_raw(SIGNAL_ALWAYS_IRQ, fence.gpu_va(), value, 0, 0)
    }

    /// Queues FENCE_SIGNAL with explicit arguments.
    pub fn signal_raw(
        &mut self,
        flags: u8,
        value_addr: u64,
        value: u64,
        monitored_addr: u64,
        report_tag: u64,
    ) -> Result<(), SimError> {
        self.push(Command::FenceSignal {
            flags,
            value_addr,
            value,
            monitored_addr,
            report_tag,
        })
    }

    /// Queues FENCE_WAIT until `fence`'s CurrentValue >= `value`.
    pub fn wait(&mut self, fence: &NativeFence, value: u64) -> Result<(), SimError> {
        self.opened_here(fence)?;
        self.push(Command::FenceWait {
            addr: fence.current_value_gpu(),
            value,
        })
    }

    /// Submits what was queued: publishes the write pointer (release) and rings the
    /// doorbell; `DISCONNECTED_RETRY` (victimised, F1, power) reconnects and rings again,
    /// `CONNECTED_NOTIFY` calls `NotifyWorkSubmission` (UM-19). Call at PASSIVE_LEVEL
    /// (the test's thread).
    pub fn kick(&self) -> Result<(), SimError> {
        self.bell.ring(self.write_ptr, true)
    }

    /// A handle that publishes the commands written so far and rings the doorbell later,
    /// from any thread (what an OS resuming a held software context does); see
    /// [`Kicker::kick`].
    pub fn kicker(&self) -> Kicker {
        Kicker {
            bell: self.bell.clone(),
            write_ptr: self.write_ptr,
        }
    }

    /// The CMP's read pointer (bytes consumed).
    pub fn read_ptr(&self) -> u64 {
        self.bell
            .control
            .word(RingControl::READ_PTR)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Bytes queued so far.
    pub fn write_ptr(&self) -> u64 {
        self.write_ptr
    }

    /// Whether the CMP consumed everything queued.
    pub fn drained(&self) -> bool {
        self.read_ptr() == self.write_ptr
    }

    /// The queue id the KMD chose (from the private data of `CreateHwQueue`).
    pub fn queue_id(&self) -> u32 {
        self.bell.queue_id
    }

    /// The process that owns the queue.
    pub fn process(&self) -> UmsProcess {
        self.process
    }

    /// The process id of [`GpuQueue::process`] (where fences the queue names are opened).
    pub fn pid(&self) -> crate::sync::fence::ProcessId {
        self.process.pid
    }

    /// The engine (node ordinal).
    pub fn engine(&self) -> u32 {
        self.engine
    }

    /// D3DKMT handles of (context, hardware queue, doorbell) in [`GpuQueue::process`].
    pub fn handles(&self) -> (KmtHandle, KmtHandle, KmtHandle) {
        (self.context, self.queue, self.bell.doorbell)
    }
}
