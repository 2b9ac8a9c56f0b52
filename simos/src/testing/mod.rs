//! Misbehaving-driver parts and driver stand-ins for tests, and a minimal user-mode driver
//! that feeds GPU work to the fence tests ([`gpu`]).
//!
//! A test proves the OS side catches what Windows catches by running the real driver with one
//! slot replaced ([`crate::Machine::load_driver_with`]) by a routine from here. These routines
//! are "driver code": they use only what a driver has (its context and the `DXGKRNL_INTERFACE`
//! the OS gave it, found here by context because a replaced slot has no driver state of its
//! own).

pub mod tdr;

use std::ffi::c_void;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::{
    DXGKARGCB_ALLOCATECONTIGUOUSMEMORY, DXGKARGCB_FREECONTIGUOUSMEMORY, DXGKRNL_INTERFACE,
};
use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;

use crate::dxgkrnl::adapter::AdapterShared;
use crate::dxgkrnl::state::lock;

/// A native fence handle the OS never hands out.
pub const BAD_FENCE_HANDLE: usize = 0x0BAD_F00D;

/// The callback table the OS gave the adapter whose MiniportDeviceContext is `ctx`.
pub fn interface_for_context(ctx: *mut c_void) -> Option<DXGKRNL_INTERFACE> {
    AdapterShared::from_context(ctx).and_then(|a| lock(&a.interface).map(|t| t.0))
}

/// An ISR that reports `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` naming [`BAD_FENCE_HANDLE`]
/// and claims the interrupt. Windows bug-checks 0x119 on it (NF-14).
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_reports_unknown_fence_handle(
    ctx: PVOID,
    _message_number: ULONG,
) -> BOOLEAN {
    let Some(iface) = interface_for_context(ctx) else {
        return 0;
    };
    let mut handles: [HANDLE; 1] = [BAD_FENCE_HANDLE as HANDLE];
    let data =
        DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(0, 0, 1, handles.as_mut_ptr());
    if let Some(notify) = iface.DxgkCbNotifyInterrupt {
        // SAFETY: the OS's callback with its own handle and a valid report.
        unsafe { notify(iface.DeviceHandle, &data) };
    }
    if let Some(queue) = iface.DxgkCbQueueDpc {
        // SAFETY: as above.
        unsafe { queue(iface.DeviceHandle) };
    }
    1
}

fn isr_null_report(ctx: PVOID, evaluate_legacy: bool) -> BOOLEAN {
    let Some(iface) = interface_for_context(ctx) else {
        return 0;
    };
    let mut data =
        DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(0, 0, 0, std::ptr::null_mut());
    if evaluate_legacy {
        data.Flags = rvgpu_ddi::interrupt::DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::from_value(
            rvgpu_ddi::interrupt::DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::mask(
                rvgpu_ddi::interrupt::DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences,
            ),
        );
    }
    if let Some(notify) = iface.DxgkCbNotifyInterrupt {
        // SAFETY: the OS's callback with its own handle and a valid report.
        unsafe { notify(iface.DeviceHandle, &data) };
    }
    if let Some(queue) = iface.DxgkCbQueueDpc {
        // SAFETY: as above.
        unsafe { queue(iface.DeviceHandle) };
    }
    1
}

/// An ISR for hardware that cannot tell legacy and native fence signals apart: it reports
/// `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` with a NULL array and
/// `EvaluateLegacyMonitoredFences = 1` (NF-14) and claims the interrupt.
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_reports_null_evaluate_legacy(
    ctx: PVOID,
    _message_number: ULONG,
) -> BOOLEAN {
    isr_null_report(ctx, true)
}

/// Like [`isr_reports_null_evaluate_legacy`] without the flag: only native waits are scanned.
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_reports_null(ctx: PVOID, _message_number: ULONG) -> BOOLEAN {
    isr_null_report(ctx, false)
}

/// An ISR that calls a PASSIVE_LEVEL callback (`DxgkCbGetDeviceInformation`) at device IRQL.
///
/// # Safety
/// Called by the simulation as `DxgkDdiInterruptRoutine`.
pub unsafe extern "system" fn isr_calls_passive_callback(
    ctx: PVOID,
    _message_number: ULONG,
) -> BOOLEAN {
    let Some(iface) = interface_for_context(ctx) else {
        return 0;
    };
    if let Some(get) = iface.DxgkCbGetDeviceInformation {
        let mut info = rvgpu_ddi::adapter::DXGK_DEVICE_INFO::default();
        // SAFETY: the OS's callback with its own handle and a valid out-structure.
        unsafe { get(iface.DeviceHandle, &mut info) };
    }
    1
}

/// Calls `DxgkCbAllocateContiguousMemory` as a driver would; returns (status, handle, memory).
///
/// # Safety
/// `iface` must be a table the simulation handed out.
pub unsafe fn allocate_contiguous(
    iface: &DXGKRNL_INTERFACE,
    bytes: usize,
) -> (NTSTATUS, HANDLE, PVOID) {
    let Some(f) = iface.DxgkCbAllocateContiguousMemory else {
        return (
            STATUS_NOT_IMPLEMENTED,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
    };
    let mut args = DXGKARGCB_ALLOCATECONTIGUOUSMEMORY {
        NumberOfBytes: bytes,
        LowestAcceptableAddress: LARGE_INTEGER::from_i64(0),
        HighestAcceptableAddress: LARGE_INTEGER::from_i64(-1),
        BoundaryAddressMultiple: LARGE_INTEGER::from_i64(0),
        CacheType: MmCached,
        hMemoryHandle: std::ptr::null_mut(),
        pMemory: std::ptr::null_mut(),
    };
    // SAFETY: the OS's callback with its handle and a valid argument block.
    let s = unsafe { f(iface.DeviceHandle, &mut args) };
    (s, args.hMemoryHandle, args.pMemory)
}

/// Calls `DxgkCbFreeContiguousMemory` as a driver would.
///
/// # Safety
/// `iface` must be a table the simulation handed out.
pub unsafe fn free_contiguous(
    iface: &DXGKRNL_INTERFACE,
    handle: HANDLE,
    memory: PVOID,
) -> NTSTATUS {
    let Some(f) = iface.DxgkCbFreeContiguousMemory else {
        return STATUS_NOT_IMPLEMENTED;
    };
    let _ = memory;
    let args = DXGKARGCB_FREECONTIGUOUSMEMORY {
        hMemoryHandle: handle,
    };
    // SAFETY: the OS's callback with its handle and a valid argument block.
    unsafe { f(iface.DeviceHandle, &args) }
}

/// GPU work for the fence tests, submitted through the driver: a minimal user-mode driver.
///
/// A [`gpu::GpuQueue`] is a hardware queue of its own simulated process, created the way a
/// UMD creates one (docs/usermode-submission.md) with the same thunks [`crate::kmt::SimKmt`]
/// calls: a process and D3D device ([`crate::Machine::create_process`]), a context on the
/// engine, a hardware queue with `UserModeSubmission` (the KMD picks its queue id and owns
/// the engine's runlist), a ring and a ring-control allocation, a doorbell, and a connect.
/// The test then writes packets into the ring with the [`rvgpu_hw::cmd`] encoder and submits
/// by publishing `write_ptr` (release) and ringing the doorbell, with the UM-19 status loop
/// (reconnect on `DISCONNECTED_RETRY`, `NotifyWorkSubmission` on `CONNECTED_NOTIFY`).
///
/// Unlike the UMD's `UserQueue` it writes exactly the packets the test queues: no `PROGRESS`
/// packet ends a kick, so a kick raises no interrupt of its own and interrupt counts are the
/// fence signals' alone. The queue's progress fence therefore stays 0 and its last-queued
/// value 0: the OS sees no outstanding work on it (a normal exit does not wait for it, and
/// [`crate::Machine::power_down`] does not see its work). The process lives until the adapter
/// stops (the OS then tears it down) or the test ends it ([`gpu::GpuQueue::process`] with
/// [`crate::Machine::exit_process`]); dropping the queue does not destroy it.
pub mod gpu {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use rvgpu_ddi::dxgkrnl::{
        D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
    };
    use rvgpu_device::SysAlloc;
    use rvgpu_hw::cmd::{Command, SIGNAL_ALWAYS_IRQ, SIGNAL_CONDITIONAL_IRQ};
    use rvgpu_hw::pdd::{
        DoorbellPdd, DoorbellValue, HwQueuePdd, DOORBELL_PDD_VERSION, HW_QUEUE_PDD_VERSION,
        PDD_MAGIC,
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
                        return ums::notify_work_submission(
                            &self.adapter,
                            self.device,
                            self.doorbell,
                        )
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
            let (ring_h, ring) = ums::create_allocation(&a, device, u64::from(RING_BYTES))?;
            let (control_h, control) = ums::create_allocation(&a, device, RingControl::SIZE)?;
            for off in [RingControl::WRITE_PTR, RingControl::READ_PTR] {
                control
                    .word(off)
                    .ok_or_else(|| sim("ring control"))?
                    .store(0, Ordering::Relaxed);
            }
            let mut dp = DoorbellPdd {
                magic: PDD_MAGIC,
                version: DOORBELL_PDD_VERSION,
                ring_gpu: ring.bus_addr,
                ring_control_gpu: control.bus_addr,
                ring_size: RING_BYTES,
                ..Default::default()
            };
            let db =
                ums::create_doorbell(&a, device, q.handle, ring_h, control_h, dp.as_mut_bytes())?;
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

        /// Queues FENCE_SIGNAL with the conditional interrupt (NF-03) for `fence`: its
        /// CurrentValue and MonitoredValue GPU addresses and its report tag (from the private
        /// data create returned). Call [`GpuQueue::kick`] to submit.
        pub fn signal(&mut self, fence: &NativeFence, value: u64) -> Result<(), SimError> {
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
        pub fn signal_monitored(
            &mut self,
            fence: &MonitoredFence,
            value: u64,
        ) -> Result<(), SimError> {
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

        /// The engine (node ordinal).
        pub fn engine(&self) -> u32 {
            self.engine
        }

        /// D3DKMT handles of (context, hardware queue, doorbell) in [`GpuQueue::process`].
        pub fn handles(&self) -> (KmtHandle, KmtHandle, KmtHandle) {
            (self.context, self.queue, self.bell.doorbell)
        }
    }
}

/// A spy in front of the driver's `DxgkDdiUpdateMonitoredValues` (NF-07 tests): records the
/// IRQL and whether the caller holds an interrupt lock, runs a test's one-shot "race" action
/// (say, a GPU write of CurrentValue landing just before the new MonitoredValue is visible),
/// then calls the real DDI. Install with [`crate::Machine::load_driver_with`] and
/// [`spy::install_update_monitored_spy`]; records and actions are per machine.
pub mod spy {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    use rvgpu_ddi::fence::{DXGKARG_UPDATEMONITOREDVALUES, PDXGKDDI_UPDATEMONITOREDVALUES};
    use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
    use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
    use rvgpu_ddi::NTSTATUS;
    use rvgpu_kmd::platform::Irql;

    use crate::dxgkrnl::state::lock;

    /// One observed call.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct UpdateMonitoredCall {
        /// IRQL at entry.
        pub irql: Irql,
        /// Whether the caller held an interrupt lock.
        pub interrupt_lock: bool,
        /// (handle, value) pairs.
        pub fences: Vec<(usize, u64)>,
    }

    type Action = Box<dyn FnOnce() + Send>;

    static REAL: OnceLock<PDXGKDDI_UPDATEMONITOREDVALUES> = OnceLock::new();
    static CALLS: Mutex<Vec<(u64, UpdateMonitoredCall)>> = Mutex::new(Vec::new());
    static ACTIONS: Mutex<Option<HashMap<u64, Action>>> = Mutex::new(None);

    /// Table hook: puts the spy in front of the real DDI.
    pub fn install_update_monitored_spy(t: &mut DRIVER_INITIALIZATION_DATA) {
        let _ = REAL.set(t.DxgkDdiUpdateMonitoredValues);
        t.DxgkDdiUpdateMonitoredValues = Some(spy_update_monitored);
    }

    /// Calls seen on machine `id`.
    pub fn calls(id: u64) -> Vec<UpdateMonitoredCall> {
        lock(&CALLS)
            .iter()
            .filter(|(m, _)| *m == id)
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// Runs `f` once, inside the next UpdateMonitoredValues call on machine `id`, before the
    /// real DDI.
    pub fn on_next_call(id: u64, f: impl FnOnce() + Send + 'static) {
        lock(&ACTIONS)
            .get_or_insert_with(HashMap::new)
            .insert(id, Box::new(f));
    }

    unsafe extern "system" fn spy_update_monitored(
        args: *const DXGKARG_UPDATEMONITOREDVALUES,
    ) -> NTSTATUS {
        let id = crate::dxgkrnl::kernel::current_machine().map_or(u64::MAX, |s| s.id());
        let mut fences = Vec::new();
        // SAFETY: the OS's argument block (or null) with NumFences-entry arrays.
        if let Some(a) = unsafe { args.as_ref() } {
            for i in 0..a.NumFences as usize {
                // SAFETY: as above.
                let (h, v) = unsafe {
                    (
                        a.NativeFenceArray.add(i).read() as usize,
                        a.UpdatedValueArray.add(i).read(),
                    )
                };
                fences.push((h, v));
            }
        }
        lock(&CALLS).push((
            id,
            UpdateMonitoredCall {
                irql: crate::dxgkrnl::kernel::current_irql(),
                interrupt_lock: crate::dxgkrnl::adapter::holds_any_interrupt_lock(),
                fences,
            },
        ));
        let action = lock(&ACTIONS).as_mut().and_then(|m| m.remove(&id));
        if let Some(f) = action {
            f();
        }
        match REAL.get().copied().flatten() {
            // SAFETY: the driver's own DDI with the OS's arguments.
            Some(real) => unsafe { real(args) },
            None => STATUS_NOT_IMPLEMENTED,
        }
    }
}

/// A QueryAdapterInfo that answers `DXGKQAITYPE_NATIVE_FENCE_CAPS` with a stride of 12 (not a
/// multiple of 8) and without `MapToGpuSystemProcess`, and forwards everything else to the
/// real driver: the OS must refuse the start (NF-11). Install with
/// [`bad_caps::install_bad_native_fence_caps`].
pub mod bad_caps {
    use std::sync::OnceLock;

    use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_NATIVE_FENCE_CAPS};
    use rvgpu_ddi::basic::HANDLE;
    use rvgpu_ddi::fence::DXGK_NATIVE_FENCE_CAPS;
    use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_QUERYADAPTERINFO};
    use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
    use rvgpu_ddi::NTSTATUS;

    static REAL: OnceLock<PDXGKDDI_QUERYADAPTERINFO> = OnceLock::new();

    /// Table hook.
    pub fn install_bad_native_fence_caps(t: &mut DRIVER_INITIALIZATION_DATA) {
        let _ = REAL.set(t.DxgkDdiQueryAdapterInfo);
        t.DxgkDdiQueryAdapterInfo = Some(query);
    }

    unsafe extern "system" fn query(h: HANDLE, args: *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
        let Some(real) = REAL.get().copied().flatten() else {
            return STATUS_NOT_IMPLEMENTED;
        };
        // SAFETY: the driver's own DDI with the OS's arguments.
        let status = unsafe { real(h, args) };
        // SAFETY: the OS's argument block (or null).
        if let Some(a) = unsafe { args.as_ref() } {
            if a.Type == DXGKQAITYPE_NATIVE_FENCE_CAPS && !a.pOutputData.is_null() {
                let caps = a.pOutputData.cast::<DXGK_NATIVE_FENCE_CAPS>();
                // SAFETY: the OS's output buffer of at least this size for this query.
                unsafe {
                    (*caps).MonitoredValueStride = 12;
                    (*caps).MapToGpuSystemProcess = 0;
                }
            }
        }
        status
    }
}

/// Stand-ins around the driver's user-mode submission discovery (UM-03, UM-04): a
/// `DxgkDdiGetNodeMetadata` that clears `UserModeSubmission` on node 1, and a
/// `DxgkDdiQueryAdapterInfo` that fails `DXGKQAITYPE_USERMODESUBMISSION_CAPS`. Everything else
/// goes to the real driver. Install with [`crate::Machine::load_driver_with`].
pub mod ums_caps {
    use std::sync::OnceLock;

    use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_USERMODESUBMISSION_CAPS};
    use rvgpu_ddi::basic::{HANDLE, UINT};
    use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_QUERYADAPTERINFO};
    use rvgpu_ddi::ntstatus::{STATUS_NOT_IMPLEMENTED, STATUS_NOT_SUPPORTED};
    use rvgpu_ddi::submission::{
        DXGKARG_GETNODEMETADATA, DXGK_NODEMETADATA_FLAGS, PDXGKDDI_GETNODEMETADATA,
    };
    use rvgpu_ddi::NTSTATUS;

    static REAL_MD: OnceLock<PDXGKDDI_GETNODEMETADATA> = OnceLock::new();
    static REAL_QAI: OnceLock<PDXGKDDI_QUERYADAPTERINFO> = OnceLock::new();

    /// Table hook: node 1 reports no user-mode submission.
    pub fn install_node1_without_ums(t: &mut DRIVER_INITIALIZATION_DATA) {
        let _ = REAL_MD.set(t.DxgkDdiGetNodeMetadata);
        t.DxgkDdiGetNodeMetadata = Some(metadata);
    }

    /// Table hook: `DXGKQAITYPE_USERMODESUBMISSION_CAPS` fails.
    pub fn install_failing_ums_caps(t: &mut DRIVER_INITIALIZATION_DATA) {
        let _ = REAL_QAI.set(t.DxgkDdiQueryAdapterInfo);
        t.DxgkDdiQueryAdapterInfo = Some(query);
    }

    unsafe extern "system" fn metadata(
        h: HANDLE,
        node: UINT,
        out: *mut DXGKARG_GETNODEMETADATA,
    ) -> NTSTATUS {
        let Some(real) = REAL_MD.get().copied().flatten() else {
            return STATUS_NOT_IMPLEMENTED;
        };
        // SAFETY: the driver's own DDI with the OS's arguments.
        let s = unsafe { real(h, node, out) };
        if node == 1 {
            // SAFETY: the OS's output buffer (or null).
            if let Some(md) = unsafe { out.as_mut() } {
                md.Flags.set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission, 0);
            }
        }
        s
    }

    unsafe extern "system" fn query(h: HANDLE, args: *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
        // SAFETY: the OS's argument block (or null).
        if unsafe { args.as_ref() }.is_some_and(|a| a.Type == DXGKQAITYPE_USERMODESUBMISSION_CAPS) {
            return STATUS_NOT_SUPPORTED;
        }
        match REAL_QAI.get().copied().flatten() {
            // SAFETY: the driver's own DDI with the OS's arguments.
            Some(real) => unsafe { real(h, args) },
            None => STATUS_NOT_IMPLEMENTED,
        }
    }
}
