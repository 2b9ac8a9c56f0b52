//! The interrupt reports as 24H2 takes them (`M:VidSchDdiNotifyInterruptWorker` and the DPCs
//! it queues to): a `DmaFaulted` report is a bug check, page-fault flags are validated, a
//! report naming a hardware queue names Dxgkrnl's queue object (the driver's own handle there
//! is a wild read), an engine-state report is dropped, and `DisableGpuTimeout` reaches a
//! user-mode queue's creation. A stand-in ISR (the driver's, then one report of the test's)
//! makes the reports; the real driver's own reports are the TDR and fault suites'.

mod common;

use common::{ok, okk, started_with, user_process};

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rvgpu_ddi::interrupt::*;
use rvgpu_ddi::submission::DXGKARG_CREATEHWQUEUE;
use rvgpu_ddi::{BOOLEAN, HANDLE, NTSTATUS, PVOID};
use rvgpu_simos::base::bugcheck::{self, BugCheck};
use rvgpu_simos::machine::answers::EngineStateReports;
use rvgpu_simos::testing;
use rvgpu_simos::{Machine, MachineConfig, Mode, Notification, SimError, UmsEvent};
use rvgpu_umd::kmt::Kmt;

thread_local! {
    /// What the stand-in ISR reports after the driver's (step mode: the ISR runs on the test
    /// thread).
    static REPORT: Cell<Option<DXGKARGCB_NOTIFY_INTERRUPT_DATA>> = const { Cell::new(None) };
}

unsafe extern "system" fn isr_reports(ctx: PVOID, msg: u32) -> BOOLEAN {
    // SAFETY: our own arguments, passed on (the driver services the device).
    unsafe { testing::driver_isr(ctx, msg) };
    let Some(iface) = testing::interface_for_context(ctx) else {
        return 0;
    };
    if let (Some(data), Some(notify), Some(dpc)) = (
        REPORT.with(Cell::get),
        iface.DxgkCbNotifyInterrupt,
        iface.DxgkCbQueueDpc,
    ) {
        // SAFETY: the OS's callbacks with the handle it issued and a valid report; the DPC
        // then processes it.
        unsafe {
            notify(iface.DeviceHandle, &data);
            dpc(iface.DeviceHandle);
        }
    }
    1
}

/// One test at a time: the machine's `DxgkDdiCreateHwQueue` and what it saw are globals.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The driver's `DxgkDdiCreateHwQueue`, called by [`create_hw_queue`].
static DRIVER_CREATE_HW_QUEUE: AtomicUsize = AtomicUsize::new(0);
/// Every creation the driver saw: (the input `hHwQueue`, the driver's handle out, the flags).
static CREATED: Mutex<Vec<(usize, usize, u32)>> = Mutex::new(Vec::new());

unsafe extern "system" fn create_hw_queue(
    ctx: HANDLE,
    args: *mut DXGKARG_CREATEHWQUEUE,
) -> NTSTATUS {
    type Ddi = unsafe extern "system" fn(HANDLE, *mut DXGKARG_CREATEHWQUEUE) -> NTSTATUS;
    // SAFETY: the OS's argument block for this call.
    let (input, flags) = unsafe { ((*args).hHwQueue as usize, (*args).Flags.Value) };
    let f = DRIVER_CREATE_HW_QUEUE.load(Ordering::Acquire);
    // SAFETY: the driver's own DDI, saved from its table before it was replaced.
    let f: Ddi = unsafe { std::mem::transmute::<usize, Ddi>(f) };
    // SAFETY: passed on as the OS called us.
    let status = unsafe { f(ctx, args) };
    // SAFETY: as above; the driver wrote its handle.
    let out = unsafe { (*args).hHwQueue as usize };
    CREATED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((input, out, flags));
    status
}

/// A started step-mode machine (`reading`) whose ISR makes the test's report after the
/// driver's and whose `DxgkDdiCreateHwQueue` records what the driver got.
fn machine(reading: rvgpu_simos::Windows) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = reading;
    started_with(cfg, |t| {
        t.DxgkDdiInterruptRoutine = Some(isr_reports);
        if let Some(f) = t.DxgkDdiCreateHwQueue {
            DRIVER_CREATE_HW_QUEUE.store(f as usize, Ordering::Release);
            t.DxgkDdiCreateHwQueue = Some(create_hw_queue);
        }
    })
}

/// Raises one interrupt whose ISR reports `data` (and runs the DPC).
fn report_on(m: &Machine, data: DXGKARGCB_NOTIFY_INTERRUPT_DATA) -> Result<(), SimError> {
    REPORT.with(|r| r.set(Some(data)));
    let r = m.raise_interrupt(0);
    REPORT.with(|r| r.set(None));
    r
}

fn report(data: DXGKARGCB_NOTIFY_INTERRUPT_DATA) -> Result<(), SimError> {
    report_on(&machine(rvgpu_simos::Windows::W24H2), data)
}

fn expect(r: Result<(), SimError>, code: u32, params: &[u64]) -> BugCheck {
    match r {
        Err(SimError::Bugcheck(b)) => {
            assert_eq!(b.code, code, "{b}");
            assert_eq!(&b.params[..params.len()], params, "{b}");
            b
        }
        other => panic!("expected bug check {code:#x} {params:x?}, got {other:?}"),
    }
}

fn page_fault(fence: u32, node: u32, flags: i32, va: u64) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_page_faulted(
        DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted {
            FaultedFenceId: fence,
            FaultedPrimitiveAPISequenceNumber: DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
            FaultedPipelineStage: DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
            FaultedBindTableEntry: DXGK_BIND_TABLE_ENTRY_UNKNOWN,
            PageFaultFlags: flags,
            FaultedVirtualAddress: va,
            NodeOrdinal: node,
            EngineOrdinal: 0,
            PageTableLevel: 0,
            FaultErrorCode: DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_PAGE_FAULT),
            FaultedProcessHandle: std::ptr::null_mut(),
        },
    )
}

fn queue_page_fault(queue: usize, node: u32, flags: i32) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    let mut d = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
        InterruptType: DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED,
        ..Default::default()
    };
    d.Anonymous.HwQueuePageFaulted = DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted {
        FaultedFenceId: 0,
        FaultedVirtualAddress: 0x7000_0000,
        FaultedPrimitiveAPISequenceNumber: DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
        FaultedHwQueue: queue as HANDLE,
        NodeOrdinal: node,
        EngineOrdinal: 0,
        FaultedPipelineStage: DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
        FaultedBindTableEntry: DXGK_BIND_TABLE_ENTRY_UNKNOWN,
        PageFaultFlags: flags,
        PageTableLevel: 0,
        FaultErrorCode: DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_PAGE_FAULT),
    };
    d
}

/// A user-mode queue on node 0 of a new process: (its device, Dxgkrnl's object the driver got
/// as `hHwQueue`, the driver's handle).
fn user_queue(m: &Machine) -> (u32, usize, usize) {
    let (p, k) = user_process(m);
    let before = CREATED.lock().unwrap_or_else(|p| p.into_inner()).len();
    let ctx = okk(m, k.create_context(0));
    let q = okk(m, k.create_hw_queue(ctx, true, &mut []));
    let (input, out, _) = CREATED.lock().unwrap_or_else(|p| p.into_inner())[before..]
        .last()
        .copied()
        .expect("the driver's DxgkDdiCreateHwQueue ran");
    assert_eq!(m.hw_queue_kmd_handle(0, q.handle), Some(out));
    std::mem::forget(q);
    (p.device, input, out)
}

/// TDR-04 (24H2): `M:VidSchDdiNotifyInterruptWorker` @0x140006B60 sends every
/// `DXGK_INTERRUPT_DMA_FAULTED` to bug check 0x119 subtype 0xD with the node, the engine and
/// the fence, whatever the report names.
#[test]
fn tdr_04_a_dma_faulted_report_is_bug_check_0x119_0xd() {
    let _one = serial();
    let status = 0xC000_001D_u32 as i32;
    expect(
        report(DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_faulted(
            5, status, 1, 0,
        )),
        bugcheck::VIDEO_SCHEDULER_INTERNAL_ERROR,
        &[0xD, 1, 0, 5],
    );
}

/// TDR-04 (24H2): `M:VidSchiValidatePageFaultFlags` @0x14004B1BC refuses a fatal hardware
/// error (subtype 0xC), both resets at once and unknown bits (0xD); a fault naming no packet
/// must name a context or ask for a reset (`M:VidSchiProcessHwQueuePageFaultedDpc`, 0xD).
#[test]
fn tdr_04_page_fault_flags_24h2_refuses_are_bug_checks() {
    let _one = serial();
    for (flags, subtype) in [
        (DXGK_PAGE_FAULT_FATAL_HARDWARE_ERROR, 0xC),
        (
            DXGK_PAGE_FAULT_ADAPTER_RESET_REQUIRED | DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED,
            0xD,
        ),
        (0x100, 0xD),
        (DXGK_PAGE_FAULT_FENCE_INVALID, 0xD),
    ] {
        expect(
            report(page_fault(0, 0, flags, 0x1000)),
            bugcheck::VIDEO_SCHEDULER_INTERNAL_ERROR,
            &[subtype, flags as u64],
        );
    }
    // The form the driver uses, naming no packet here (none is pending): a fence the OS never
    // submitted is refused as a completion's would be; with FENCE_INVALID and a reset asked
    // for, the report is accepted.
    let engine_reset = DXGK_PAGE_FAULT_FENCE_INVALID | DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED;
    assert_eq!(report(page_fault(0, 0, engine_reset, 0)), Ok(()));
}

/// UM-10 (24H2): `FaultedHwQueue` is Dxgkrnl's queue object, which
/// `M:VidSchiProcessHwQueuePageFaultedDpc` @0x1400493D0 follows (+40) to the device it puts
/// in error. Named so, the device goes to error; named by the driver's own handle, the DPC
/// reads through a wild pointer at DISPATCH_LEVEL: bug check 0xD1 at the handle + 40.
#[test]
fn um_10_a_queue_page_fault_names_dxgkrnl_s_queue_object() {
    let _one = serial();
    let m = machine(rvgpu_simos::Windows::W24H2);
    let (device, dxg, _) = user_queue(&m);
    assert_eq!(report_on(&m, queue_page_fault(dxg, 0, 0)), Ok(()));
    ok(&m, m.run_steps(50));
    assert!(
        m.ums_events(0)
            .iter()
            .any(|e| matches!(e, UmsEvent::DeviceError { device: d } if *d == device)),
        "{:#?}",
        m.ums_events(0)
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());

    let m = machine(rvgpu_simos::Windows::W24H2);
    let (_, _, kmd) = user_queue(&m);
    expect(
        report_on(&m, queue_page_fault(kmd, 0, 0)),
        bugcheck::DRIVER_IRQL_NOT_LESS_OR_EQUAL,
        &[(kmd as u64).wrapping_add(40), 2, 0],
    );
}

/// LOG-08 (24H2): the optimized native-fence report's `hHWQueue` is Dxgkrnl's queue object
/// too (`M:VidSchiProcessNativeFenceSignaledDpc` @0x140044BE0 reads its +32 and +40); the
/// driver's own handle there is a wild read (bug check 0xD1 at the handle + 32).
#[test]
fn log_08_an_optimized_report_names_dxgkrnl_s_queue_object() {
    let _one = serial();
    let m = machine(rvgpu_simos::Windows::W24H2);
    assert!(
        m.optimized_fence_irq(0),
        "the default adapter has the optimized form"
    );
    let (_, dxg, _) = user_queue(&m);
    let named =
        |h: usize| DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled_queue(0, 0, h as HANDLE);
    assert_eq!(report_on(&m, named(dxg)), Ok(()));
    assert!(m.fault().is_none(), "{:?}", m.fault());

    let m = machine(rvgpu_simos::Windows::W24H2);
    let (_, _, kmd) = user_queue(&m);
    expect(
        report_on(&m, named(kmd)),
        bugcheck::DRIVER_IRQL_NOT_LESS_OR_EQUAL,
        &[(kmd as u64).wrapping_add(32), 2, 0],
    );
}

/// UM-13 (24H2): `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE` has no case in
/// `M:VidSchDdiNotifyInterruptWorker` @0x140006B60: the report is received (and logged) and
/// nothing follows from it, no F1; the pages' reading takes the engine to F1.
#[test]
fn um_13_an_engine_state_report_is_dropped_on_24h2() {
    let _one = serial();
    let f1 = DXGKARGCB_NOTIFY_INTERRUPT_DATA::engine_state_change(
        1,
        0,
        DXGK_ENGINE_STATE_TRANSITION_TO_F1,
    );
    for (reading, acted) in [
        (rvgpu_simos::Windows::W24H2, false),
        (
            rvgpu_simos::Windows::W24H2.answering(|r| {
                r.engine_state = EngineStateReports::Acted;
            }),
            true,
        ),
    ] {
        let m = machine(reading);
        assert_eq!(report_on(&m, f1), Ok(()));
        ok(&m, m.run_steps(5));
        assert!(m.notifications(0).iter().any(|p| matches!(
            p.notification,
            Notification::EngineStateChange { node: 1, .. }
        )));
        let heard = m
            .ums_events(0)
            .iter()
            .any(|e| matches!(e, UmsEvent::EngineState { node: 1, state: 1 }));
        assert_eq!(heard, acted, "{reading:?}: {:#?}", m.ums_events(0));
    }
}

/// UM-05 (24H2): `K:DXGHWQUEUE::InitializeForUserModeSubmission` @0x1401DA74C, like
/// `K:DXGHWQUEUE::Initialize` @0x1402BBA30 for a kernel-submission queue, sets
/// `DisableGpuTimeout` (bit 0) in the DDI's flags for a queue of a context created with it,
/// and passes its `DXGHWQUEUE` as `hHwQueue`.
#[test]
fn um_05_a_user_mode_queue_of_a_no_timeout_context_gets_disable_gpu_timeout() {
    let _one = serial();
    let m = machine(rvgpu_simos::Windows::W24H2);
    let (p, k) = user_process(&m);
    // HwQueueSupported | DisableGpuTimeout.
    let ctx = ok(&m, m.create_context_raw(&p, 0, (1 << 4) | (1 << 2), true));
    let before = CREATED.lock().unwrap_or_else(|p| p.into_inner()).len();
    let q = okk(&m, k.create_hw_queue(ctx, true, &mut []));
    let (input, out, flags) = CREATED.lock().unwrap_or_else(|p| p.into_inner())[before..]
        .last()
        .copied()
        .expect("the driver's DxgkDdiCreateHwQueue ran");
    assert_eq!(flags & 1, 1, "DisableGpuTimeout: {flags:#x}");
    assert_eq!(flags & (1 << 4), 1 << 4, "UserModeSubmission: {flags:#x}");
    assert_ne!(
        input, out,
        "hHwQueue in is Dxgkrnl's object, not the driver's handle"
    );
    okk(&m, k.destroy_hw_queue(q.handle));
}

against_the_pe_image!();
