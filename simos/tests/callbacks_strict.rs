//! Callback strictness: interrupt reports (lock, node, engine, state), NotifyInterrupt from
//! the wrong level, what UnmapMemory, QueryServices and AllocateContiguousMemory check,
//! ISR/SynchronizeExecution exclusion, and what stops the ISR and the DPC.

mod common;

use common::{dxgkrnl_interface, pe, started_with};

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rvgpu_ddi::dxgkrnl::DxgkServicesFeature;
use rvgpu_ddi::feature::{DXGK_FEATURE_INTERFACE, DXGK_FEATURE_INTERFACE_VERSION_1};
use rvgpu_ddi::interrupt::*;
use rvgpu_ddi::{BOOLEAN, PVOID};
use rvgpu_simos::base::bugcheck::{self, vidsch};
use rvgpu_simos::testing;
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

thread_local! {
    /// What `isr_reports` reports (step mode: the ISR runs on the test thread).
    static REPORT: Cell<Option<DXGKARGCB_NOTIFY_INTERRUPT_DATA>> = const { Cell::new(None) };
    /// The DeviceHandle `isr_reports` reports to (0: its own adapter's).
    static REPORT_TO: Cell<usize> = const { Cell::new(0) };
}

unsafe extern "system" fn isr_reports(ctx: PVOID, msg: u32) -> BOOLEAN {
    // SAFETY: our own arguments, passed on (the driver services the device).
    unsafe { testing::driver_isr(ctx, msg) };
    let Some(iface) = testing::interface_for_context(ctx) else {
        return 0;
    };
    let to = match REPORT_TO.with(Cell::get) {
        0 => iface.DeviceHandle,
        h => h as PVOID,
    };
    if let (Some(data), Some(notify)) = (REPORT.with(Cell::get), iface.DxgkCbNotifyInterrupt) {
        // SAFETY: the OS's callback with a handle it issued and a valid report.
        unsafe { notify(to, &data) };
    }
    1
}

fn step_machine(cfg: MachineConfig) -> Machine {
    let mut m = Machine::new(cfg);
    let up = m
        .load_driver_with(|t| t.DxgkDdiInterruptRoutine = Some(isr_reports))
        .and_then(|()| {
            for i in 0..m.adapter_count() {
                m.start_adapter(i)?;
            }
            Ok(())
        });
    if let Err(e) = up {
        panic!("bring-up: {e}");
    }
    m
}

fn report(data: DXGKARGCB_NOTIFY_INTERRUPT_DATA) -> Result<(), SimError> {
    let m = step_machine(MachineConfig::single(Mode::Step));
    REPORT.with(|r| r.set(Some(data)));
    let r = m.raise_interrupt(0);
    REPORT.with(|r| r.set(None));
    r
}

fn engine_state(node: u32, engine: u32, state: i32) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    DXGKARGCB_NOTIFY_INTERRUPT_DATA {
        InterruptType: DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE,
        Anonymous: DXGKARGCB_NOTIFY_INTERRUPT_DATA_0 {
            EngineStateChange: DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange {
                NodeOrdinal: node,
                EngineOrdinal: engine,
                NewState: state,
            },
        },
        ..Default::default()
    }
}

fn expect_0x119(r: Result<(), SimError>, subtype: u64, p2: u64, p3: u64) {
    match r {
        Err(SimError::Bugcheck(b)) => {
            assert_eq!(b.code, bugcheck::VIDEO_SCHEDULER_INTERNAL_ERROR, "{b}");
            assert_eq!(&b.params[..3], &[subtype, p2, p3], "{b}");
        }
        other => panic!("expected 0x119/{subtype:#x}, got {other:?}"),
    }
}

/// S7: a valid report is accepted (the checks are not "reject everything").
#[test]
fn valid_reports_are_accepted() {
    assert_eq!(
        report(engine_state(1, 0, DXGK_ENGINE_STATE_TRANSITION_TO_F1)),
        Ok(())
    );
    assert_eq!(
        report(DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_completed(1, 0, 0)),
        Ok(())
    );
}

/// S7: NodeOrdinal must be below the node count the driver reported in its caps (2).
#[test]
fn report_with_unknown_node_is_0x119() {
    expect_0x119(
        report(DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_completed(1, 7, 0)),
        vidsch::SIM_INVALID_NODE_ORDINAL,
        7,
        2,
    );
}

/// S7: a single physical adapter has engine ordinal 0 only.
#[test]
fn report_with_nonzero_engine_ordinal_is_0x119() {
    expect_0x119(
        report(engine_state(0, 1, DXGK_ENGINE_STATE_ACTIVE)),
        vidsch::SIM_INVALID_ENGINE_ORDINAL,
        1,
        0,
    );
}

/// S7: NewState must be a DXGK_ENGINE_STATE.
#[test]
fn engine_state_change_out_of_range_is_0x119() {
    expect_0x119(
        report(engine_state(0, 0, 9)),
        vidsch::SIM_INVALID_ENGINE_STATE,
        9,
        0,
    );
}

/// S6: reporting on adapter 1 from adapter 0's ISR (device IRQL, but not adapter 1's
/// interrupt lock) is caught.
#[test]
fn notify_interrupt_under_another_adapters_lock_is_0x119() {
    let m = step_machine(MachineConfig::igpu_dgpu(Mode::Step));
    let Some(other) = m.interface(1) else {
        panic!("no interface 1")
    };
    REPORT.with(|r| {
        r.set(Some(DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_completed(
            1, 0, 0,
        )))
    });
    REPORT_TO.with(|r| r.set(other.DeviceHandle as usize));
    let r = m.raise_interrupt(0);
    REPORT_TO.with(|r| r.set(0));
    REPORT.with(|r| r.set(None));
    expect_0x119(
        r,
        vidsch::SIM_NOTIFY_OUTSIDE_INTERRUPT_LOCK,
        other.DeviceHandle as usize as u64,
        u64::from(DXGK_INTERRUPT_DMA_COMPLETED as u32),
    );
}

/// T3: DxgkCbNotifyInterrupt called from a PASSIVE thread (not from an ISR) through the real
/// callback is 0x9 IRQL_NOT_GREATER_OR_EQUAL (below the routine's minimum, device IRQL),
/// recorded on the adapter's machine.
#[test]
fn notify_interrupt_from_passive_is_0x9() {
    let m = step_machine(MachineConfig::single(Mode::Step));
    let iface = dxgkrnl_interface(&m);
    let Some(notify) = iface.DxgkCbNotifyInterrupt else {
        panic!("no NotifyInterrupt")
    };
    let data = DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_completed(1, 0, 0);
    // SAFETY: the OS's callback with its handle and a valid report, from the wrong level.
    unsafe { notify(iface.DeviceHandle, &data) };
    let b = m.bugcheck();
    assert_eq!(
        b.map(|b| (b.code, b.params[0], b.params[1])),
        Some((bugcheck::IRQL_NOT_GREATER_OR_EQUAL, 0, 5)),
        "{b:?}"
    );
    assert!(m.pending_notifications(0).is_empty());
}

/// DDI-02 (`K:DpUnmapMemory` @0x1403F0330): unmapping an address that is not a mapping of the
/// adapter does nothing and succeeds; a NULL address is `STATUS_INVALID_PARAMETER`. Neither
/// stops the machine.
#[test]
fn ddi_02_unmap_of_an_address_never_mapped_succeeds_and_does_nothing() {
    let m = step_machine(MachineConfig::single(Mode::Step));
    let (handle, _, unmap) = map_callbacks(&m);
    // SAFETY: the OS's callback with its handle, at PASSIVE.
    let (bogus, null) = unsafe {
        (
            unmap(handle, 0x7777_0000usize as PVOID),
            unmap(handle, std::ptr::null_mut()),
        )
    };
    assert_eq!((bogus, null), (0, STATUS_INVALID_PARAMETER));
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// Halts `m` the way 24H2 does for a driver that asks Dxgkrnl for services at DISPATCH_LEVEL:
/// bug check 0x113 (0x15).
fn halt_with_query_services_at_dispatch(m: &Machine) {
    let iface = dxgkrnl_interface(m);
    let mut fi = feature_header(std::mem::size_of::<DXGK_FEATURE_INTERFACE>());
    let s = m.at_irql(rvgpu_simos::Irql::Dispatch, |_| {
        query(&iface, DxgkServicesFeature, &mut fi)
    });
    assert_eq!(s, STATUS_INVALID_PARAMETER);
}

/// `STATUS_INVALID_PARAMETER`.
const STATUS_INVALID_PARAMETER: i32 = 0xC000_000D_u32 as i32;

/// A feature interface whose header declares `size` bytes and version 1.
fn feature_header(size: usize) -> DXGK_FEATURE_INTERFACE {
    DXGK_FEATURE_INTERFACE {
        Size: size as u16,
        Version: DXGK_FEATURE_INTERFACE_VERSION_1,
        ..Default::default()
    }
}

/// `DxgkCbQueryServices` of adapter `iface` for `kind` into `fi`.
fn query(
    iface: &rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    kind: rvgpu_ddi::dxgkrnl::DXGK_SERVICES,
    fi: &mut DXGK_FEATURE_INTERFACE,
) -> i32 {
    let Some(qs) = iface.DxgkCbQueryServices else {
        panic!("no QueryServices")
    };
    // SAFETY: the OS's callback with its handle and a buffer at least as large as declared.
    unsafe {
        qs(
            iface.DeviceHandle,
            kind,
            (fi as *mut DXGK_FEATURE_INTERFACE).cast(),
        )
    }
}

/// DDI-02 (`K:DpQueryServices` @0x140235390): above PASSIVE_LEVEL the call fails and, for a
/// driver of interface 0x2003 or later, is bug check 0x113 with parameter 1 0x15 (not the 0xA of
/// a pageable routine).
#[test]
fn ddi_02_query_services_at_dispatch_is_0x113_0x15() {
    let m = step_machine(MachineConfig::single(Mode::Step));
    halt_with_query_services_at_dispatch(&m);
    let b = m.bugcheck();
    assert_eq!(
        b.map(|b| (b.code, b.params[0], b.params[1])),
        Some((
            bugcheck::VIDEO_DXGKRNL_FATAL_ERROR,
            0x15,
            i64::from(STATUS_INVALID_PARAMETER) as u64
        )),
        "{b:?}"
    );
}

/// DDI-02 (`K:DpQueryServices` @0x140235390): the feature interface's `Size` must be exactly its
/// own and its `Version` is not read (nor rewritten); a kind past `DxgkServicesFeature` is
/// `STATUS_INVALID_PARAMETER`, a basic- or indirect-display interface `STATUS_INVALID_HANDLE`.
#[test]
fn ddi_02_query_services_checks_what_24h2_checks() {
    use rvgpu_ddi::dxgkrnl::{DxgkServicesBDD, DxgkServicesIDD};
    let m = step_machine(MachineConfig::single(Mode::Step));
    let iface = dxgkrnl_interface(&m);
    let size = std::mem::size_of::<DXGK_FEATURE_INTERFACE>();
    let mut larger = feature_header(size + 8);
    assert_eq!(
        query(&iface, DxgkServicesFeature, &mut larger),
        STATUS_INVALID_PARAMETER,
        "a larger Size"
    );
    let mut v2 = DXGK_FEATURE_INTERFACE {
        Version: 2,
        ..feature_header(size)
    };
    assert_eq!(query(&iface, DxgkServicesFeature, &mut v2), 0, "Version 2");
    assert_eq!((v2.Version, v2.Size as usize), (2, size));
    assert!(v2.IsFeatureEnabled.is_some());
    if let Some(deref) = v2.InterfaceDereference {
        // SAFETY: the interface's own function with its own context, releasing this query's
        // reference.
        unsafe { deref(v2.Context) };
    }
    let mut fi = feature_header(size);
    assert_eq!(
        query(&iface, 8, &mut fi),
        STATUS_INVALID_PARAMETER,
        "kind 8"
    );
    assert_eq!(
        query(&iface, DxgkServicesBDD, &mut fi),
        STATUS_INVALID_HANDLE
    );
    assert_eq!(
        query(&iface, DxgkServicesIDD, &mut fi),
        STATUS_INVALID_HANDLE
    );
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// `STATUS_INVALID_HANDLE`.
const STATUS_INVALID_HANDLE: i32 = 0xC000_0008_u32 as i32;

/// DDI-02 (`K:DxgkAllocateContiguousMemoryCB` @0x14001ED70): a `CacheType` above
/// `MmWriteCombined` is `STATUS_INVALID_PARAMETER` and allocates nothing; an odd size is rounded
/// up to whole pages.
#[test]
fn ddi_02_contiguous_memory_refuses_an_unknown_cache_type() {
    use rvgpu_ddi::dxgkrnl::{DXGKARGCB_ALLOCATECONTIGUOUSMEMORY, DXGKARGCB_FREECONTIGUOUSMEMORY};
    let m = step_machine(MachineConfig::single(Mode::Step));
    let iface = dxgkrnl_interface(&m);
    let (Some(alloc), Some(free)) = (
        iface.DxgkCbAllocateContiguousMemory,
        iface.DxgkCbFreeContiguousMemory,
    ) else {
        panic!("no contiguous memory callbacks")
    };
    let before = m.contiguous_allocations(0);
    let mut args = DXGKARGCB_ALLOCATECONTIGUOUSMEMORY {
        NumberOfBytes: 100,
        CacheType: 3,
        ..Default::default()
    };
    // SAFETY: the OS's callback with its handle and a valid argument block.
    let s = unsafe { alloc(iface.DeviceHandle, &mut args) };
    assert_eq!(s, STATUS_INVALID_PARAMETER);
    assert!(args.pMemory.is_null() && args.hMemoryHandle.is_null());
    assert_eq!(m.contiguous_allocations(0), before);
    args.CacheType = rvgpu_ddi::basic::MmCached;
    // SAFETY: as above.
    let s = unsafe { alloc(iface.DeviceHandle, &mut args) };
    assert_eq!(s, 0);
    let Some(va) = std::ptr::NonNull::new(args.pMemory.cast::<u8>()) else {
        panic!("no memory")
    };
    // SAFETY: the allocation is a whole page: its last byte is writable.
    unsafe { va.as_ptr().add(4095).write(0x5A) };
    let f = DXGKARGCB_FREECONTIGUOUSMEMORY {
        hMemoryHandle: args.hMemoryHandle,
    };
    // SAFETY: the handle this adapter's allocation returned.
    assert_eq!(unsafe { free(iface.DeviceHandle, &f) }, 0);
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// The driver's DxgkDdiOpenAllocation, which `open_asks_at_dispatch` wraps.
static OPEN: std::sync::OnceLock<rvgpu_ddi::allocation::PDXGKDDI_OPENALLOCATIONINFO> =
    std::sync::OnceLock::new();
/// The adapter's DxgkCbGetHandleData, set once it has started.
static GET_HANDLE_DATA: std::sync::Mutex<rvgpu_ddi::dxgkrnl::DXGKCB_GETHANDLEDATA> =
    std::sync::Mutex::new(None);
/// What DxgkCbGetHandleData answered at DISPATCH_LEVEL for a handle nothing names.
static UNKNOWN_ANSWER: AtomicUsize = AtomicUsize::new(usize::MAX);

/// A DxgkDdiOpenAllocation that first asks DxgkCbGetHandleData at DISPATCH_LEVEL, for a handle
/// nothing names and then for the allocation being opened; then opens it as the driver does.
unsafe extern "system" fn open_asks_at_dispatch(
    device: PVOID,
    args: *const rvgpu_ddi::allocation::DXGKARG_OPENALLOCATION,
) -> rvgpu_ddi::NTSTATUS {
    use rvgpu_ddi::dxgkrnl::{DXGKARGCB_GETHANDLEDATA, DXGK_HANDLE_ALLOCATION};
    let get = GET_HANDLE_DATA.lock().map(|g| *g).unwrap_or(None);
    // SAFETY: the OS's argument block, read-only; its array has NumAllocations entries.
    let first = unsafe { args.as_ref() }
        .filter(|a| a.NumAllocations > 0 && !a.pOpenAllocation.is_null())
        // SAFETY: as above.
        .map(|a| unsafe { a.pOpenAllocation.read() }.hAllocation);
    if let (Some(get), Some(h)) = (get, first) {
        let _irql = rvgpu_simos::base::processor::IrqlScope::enter(rvgpu_simos::Irql::Dispatch);
        for (object, unknown) in [(0x3FFF_FFC0, true), (h, false)] {
            let q = DXGKARGCB_GETHANDLEDATA {
                hObject: object,
                Type: DXGK_HANDLE_ALLOCATION,
                ..Default::default()
            };
            // SAFETY: the OS's callback with a valid argument block.
            let answer = unsafe { get(&q) };
            if unknown {
                UNKNOWN_ANSWER.store(answer as usize, Ordering::SeqCst);
            }
        }
    }
    match OPEN.get().copied().flatten() {
        // SAFETY: the driver's own DDI with the OS's arguments.
        Some(open) => unsafe { open(device, args) },
        None => 0xC000_0001_u32 as i32,
    }
}

/// DDI-02 (`K:DxgGetHandleDataCB` @0x1404111E0): at DISPATCH_LEVEL a handle that names nothing
/// answers NULL, and one that names an allocation of the calling process is bug check 0x113
/// with parameter 1 0x14 (not the 0xA of a pageable routine).
#[test]
fn ddi_02_get_handle_data_at_dispatch_is_0x113_0x14_for_a_live_object() {
    let m = started_with(MachineConfig::single(Mode::Step), |t| {
        let _ = OPEN.set(t.DxgkDdiOpenAllocation);
        t.DxgkDdiOpenAllocation = Some(open_asks_at_dispatch);
    });
    if let Ok(mut g) = GET_HANDLE_DATA.lock() {
        *g = dxgkrnl_interface(&m).DxgkCbGetHandleData;
    }
    let p = m.create_process(0).expect("process");
    let k = m.kmt(&p);
    let r = rvgpu_umd::kmt::Kmt::create_allocation(&k, 4096);
    assert!(r.is_err(), "the allocation's open bug-checks");
    assert_eq!(
        UNKNOWN_ANSWER.load(Ordering::SeqCst),
        0,
        "NULL for a handle naming nothing"
    );
    let b = m.bugcheck();
    assert_eq!(
        b.map(|b| (b.code, b.params[0])),
        Some((bugcheck::VIDEO_DXGKRNL_FATAL_ERROR, 0x14)),
        "{b:?}"
    );
}

/// Runs of `sync_counts`.
static SYNC_RAN: AtomicUsize = AtomicUsize::new(0);

unsafe extern "system" fn sync_counts(_ctx: PVOID) -> BOOLEAN {
    SYNC_RAN.fetch_add(1, Ordering::SeqCst);
    1
}

/// DDI-02 (`K:DpSynchronizeExecution` @0x140026180): a NULL `ReturnValue` is
/// `STATUS_INVALID_PARAMETER` before the routine runs; `MessageNumber` is not read for a
/// line-based interrupt.
#[test]
fn ddi_02_synchronize_execution_checks_what_24h2_checks() {
    let m = step_machine(MachineConfig::single(Mode::Step));
    let iface = dxgkrnl_interface(&m);
    let Some(sync) = iface.DxgkCbSynchronizeExecution else {
        panic!("no SynchronizeExecution")
    };
    let before = SYNC_RAN.load(Ordering::SeqCst);
    // SAFETY: the OS's callback with its handle and a routine that touches no context.
    let s = unsafe {
        sync(
            iface.DeviceHandle,
            Some(sync_counts),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(s, STATUS_INVALID_PARAMETER);
    assert_eq!(SYNC_RAN.load(Ordering::SeqCst), before, "the routine ran");
    let mut ret: BOOLEAN = 0;
    // SAFETY: as above, with a valid out-parameter.
    let s = unsafe {
        sync(
            iface.DeviceHandle,
            Some(sync_counts),
            std::ptr::null_mut(),
            3,
            &mut ret,
        )
    };
    assert_eq!(
        (s, ret),
        (0, 1),
        "message number 3 on a line-based interrupt"
    );
    assert_eq!(SYNC_RAN.load(Ordering::SeqCst), before + 1);
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

static IN_SYNC: AtomicBool = AtomicBool::new(false);
static SYNC_OVERLAPS: AtomicU64 = AtomicU64::new(0);
static EXCL_ISR_CALLS: AtomicU64 = AtomicU64::new(0);

unsafe extern "system" fn isr_checks_exclusion(ctx: PVOID, msg: u32) -> BOOLEAN {
    // SAFETY: our own arguments, passed on (the driver services the device).
    unsafe { testing::driver_isr(ctx, msg) };
    EXCL_ISR_CALLS.fetch_add(1, Ordering::SeqCst);
    if IN_SYNC.load(Ordering::SeqCst) {
        SYNC_OVERLAPS.fetch_add(1, Ordering::SeqCst);
    }
    1
}

unsafe extern "system" fn sync_sets_flag(_ctx: PVOID) -> BOOLEAN {
    IN_SYNC.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(2));
    IN_SYNC.store(false, Ordering::SeqCst);
    1
}

/// T3: the ISR and DxgkCbSynchronizeExecution routines are mutually exclusive (threaded: the
/// ISR is forced repeatedly while a thread keeps running synchronized routines).
#[test]
fn isr_and_synchronized_routines_are_mutually_exclusive() {
    let m = started_with(MachineConfig::single(Mode::Threaded), |t| {
        t.DxgkDdiInterruptRoutine = Some(isr_checks_exclusion)
    });
    let iface = dxgkrnl_interface(&m);
    let Some(sync) = iface.DxgkCbSynchronizeExecution else {
        panic!("no SynchronizeExecution")
    };
    let handle = iface.DeviceHandle as usize;
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let syncer = std::thread::spawn(move || {
        for _ in 0..100 {
            let mut ret: BOOLEAN = 0;
            // SAFETY: the OS's callback with its handle, at PASSIVE.
            let s = unsafe {
                sync(
                    handle as PVOID,
                    Some(sync_sets_flag),
                    std::ptr::null_mut(),
                    0,
                    &mut ret,
                )
            };
            assert_eq!(s, 0);
        }
        d.store(true, Ordering::SeqCst);
    });
    while !done.load(Ordering::SeqCst) {
        if let Err(e) = m.raise_interrupt(0) {
            panic!("raise: {e}");
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let _ = syncer.join();
    assert!(
        EXCL_ISR_CALLS.load(Ordering::SeqCst) > 0,
        "the ISR never ran"
    );
    assert_eq!(SYNC_OVERLAPS.load(Ordering::SeqCst), 0);
}

static COUNT_ISR: AtomicUsize = AtomicUsize::new(0);
static COUNT_DPC: AtomicUsize = AtomicUsize::new(0);

unsafe extern "system" fn counting_isr(ctx: PVOID, msg: u32) -> BOOLEAN {
    COUNT_ISR.fetch_add(1, Ordering::SeqCst);
    // SAFETY: our own arguments, passed on (the driver services the device).
    unsafe { testing::driver_isr(ctx, msg) };
    if let Some(i) = testing::interface_for_context(ctx) {
        if let Some(q) = i.DxgkCbQueueDpc {
            // SAFETY: the OS's callback with its handle.
            unsafe { q(i.DeviceHandle) };
        }
    }
    1
}

unsafe extern "system" fn counting_dpc(ctx: PVOID) {
    COUNT_DPC.fetch_add(1, Ordering::SeqCst);
    // SAFETY: our own argument, passed on.
    unsafe { testing::driver_dpc(ctx) };
}

fn settle(m: &Machine) {
    let _ = m.run_until(0, Duration::from_millis(50), |_| false);
}

/// T3: stop, remove and a halt each stop the ISR and the DPC (threaded), and raising an
/// interrupt on a disconnected adapter fails the same way in both modes.
#[test]
fn stop_remove_and_halt_stop_isr_and_dpc() {
    for mode in [Mode::Step, Mode::Threaded] {
        let mut m = started_with(MachineConfig::single(mode), |t| {
            t.DxgkDdiInterruptRoutine = Some(counting_isr);
            t.DxgkDdiDpcRoutine = Some(counting_dpc);
        });
        let iface = dxgkrnl_interface(&m);
        assert_eq!(m.raise_interrupt(0), Ok(()));
        let deadline = Instant::now() + Duration::from_secs(5);
        while m.interrupt_counts(0).1 == 0 && Instant::now() < deadline {
            settle(&m);
        }
        assert!(m.interrupt_counts(0).1 >= 1, "{mode:?}: no DPC ran");
        if let Err(e) = m.stop_adapter(0) {
            panic!("stop: {e}");
        }
        let before = m.interrupt_counts(0);
        let r = m.raise_interrupt(0);
        assert!(matches!(r, Err(SimError::Simulation(_))), "{mode:?}: {r:?}");
        settle(&m);
        assert_eq!(
            m.interrupt_counts(0),
            before,
            "{mode:?}: ISR/DPC after stop"
        );
        if let Err(e) = m.remove_adapter(0) {
            panic!("remove: {e}");
        }
        assert!(m.raise_interrupt(0).is_err());
        settle(&m);
        assert_eq!(
            m.interrupt_counts(0),
            before,
            "{mode:?}: ISR/DPC after remove"
        );

        // Halt: start again, bug-check, and nothing runs any more.
        if let Err(e) = m.start_adapter(0) {
            panic!("restart: {e}");
        }
        let iface2 = dxgkrnl_interface(&m);
        halt_with_query_services_at_dispatch(&m);
        assert!(m.bugcheck().is_some());
        let before = m.interrupt_counts(0);
        if let Some(q) = iface2.DxgkCbQueueDpc {
            // SAFETY: the OS's callback; the machine is halted.
            unsafe { q(iface2.DeviceHandle) };
        }
        assert!(matches!(m.raise_interrupt(0), Err(SimError::Bugcheck(_))));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            m.interrupt_counts(0),
            before,
            "{mode:?}: ISR/DPC after halt"
        );
        let _ = iface;
    }
}

type MapFn = unsafe extern "system" fn(
    rvgpu_ddi::HANDLE,
    rvgpu_ddi::PHYSICAL_ADDRESS,
    u32,
    u8,
    u8,
    rvgpu_ddi::basic::MEMORY_CACHING_TYPE,
    *mut PVOID,
) -> rvgpu_ddi::NTSTATUS;

/// Adapter 0's DxgkCbMapMemory and DxgkCbUnmapMemory, and the device handle they take.
fn map_callbacks(m: &Machine) -> (PVOID, MapFn, UnmapFn) {
    let iface = dxgkrnl_interface(m);
    let (Some(map), Some(unmap)) = (iface.DxgkCbMapMemory, iface.DxgkCbUnmapMemory) else {
        panic!("no map/unmap")
    };
    (iface.DeviceHandle, map, unmap)
}

type UnmapFn = unsafe extern "system" fn(rvgpu_ddi::HANDLE, PVOID) -> rvgpu_ddi::NTSTATUS;

fn map(f: MapFn, handle: PVOID, addr: u64, len: u32) -> (rvgpu_ddi::NTSTATUS, PVOID) {
    let mut va: PVOID = std::ptr::null_mut();
    // SAFETY: the OS's DxgkCbMapMemory with its handle and a valid out-pointer, at PASSIVE.
    let s = unsafe {
        f(
            handle,
            rvgpu_ddi::PHYSICAL_ADDRESS {
                QuadPart: addr as i64,
            },
            len,
            0,
            0,
            rvgpu_ddi::basic::MmNonCached,
            &mut va,
        )
    };
    (s, va)
}

/// S8: two mappings of the same VRAM range share a VA and are reference-counted: each unmap
/// releases one, and an unmap beyond them is ignored (`K:DpUnmapMemory` @0x1403F0330).
#[test]
fn bar_mappings_of_the_same_range_are_reference_counted() {
    let m = step_machine(MachineConfig::single(Mode::Step));
    let (handle, mapf, unmap) = map_callbacks(&m);
    let vram = rvgpu_simos::adapter::resources::bar_base(0, rvgpu_hw::pci::BAR_VRAM);
    let (s1, va1) = map(mapf, handle, vram + 0x1000, 0x1000);
    let (s2, va2) = map(mapf, handle, vram + 0x1000, 0x2000);
    assert_eq!((s1, s2), (0, 0));
    assert_eq!(va1, va2, "same range, same VA");
    // SAFETY: the OS's callback with mappings it handed out.
    unsafe {
        assert_eq!(unmap(handle, va1), 0);
        assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
        assert!(
            rvgpu_simos::adapter::kernel::is_mapped(va1 as usize),
            "one mapping left"
        );
        assert_eq!(unmap(handle, va2), 0);
        assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
        assert!(!rvgpu_simos::adapter::kernel::is_mapped(va1 as usize));
        assert_eq!(unmap(handle, va1), 0);
    }
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// S10: after a bug check nothing more reaches the device: it is frozen (register reads
/// all-ones even through a live mapping, no CMP work), and accesses through the platform do
/// not raise again.
#[test]
fn nothing_reaches_the_device_after_a_bugcheck() {
    use rvgpu_kmd::platform::Platform;
    let m = step_machine(MachineConfig::single(Mode::Step));
    let (handle, mapf, _) = map_callbacks(&m);
    let bar0 = rvgpu_simos::adapter::resources::bar_base(0, rvgpu_hw::pci::BAR_MMIO);
    let (s, va) = map(mapf, handle, bar0, 0x1000);
    assert_eq!(s, 0);
    let Some(base) = std::ptr::NonNull::new(va.cast::<u8>()) else {
        panic!("null mapping")
    };
    // SAFETY: a live BAR0 mapping.
    let id = unsafe { rvgpu_simos::SimKernel::mmio_read32(base, rvgpu_hw::regs::ID) };
    assert_eq!(id, rvgpu_hw::regs::ID_VALUE);
    halt_with_query_services_at_dispatch(&m);
    let first = m.bugcheck();
    assert!(first.is_some());
    let Some(dev) = m.device(0) else {
        panic!("no device")
    };
    assert!(
        dev.is_frozen(),
        "the device must be frozen at the bug check"
    );
    // SAFETY: the mapping is still registered; the frozen device answers all-ones.
    let id = unsafe { rvgpu_simos::SimKernel::mmio_read32(base, rvgpu_hw::regs::ID) };
    assert_eq!(id, u32::MAX);
    assert!(!dev.step());
    assert_eq!(m.bugcheck(), first, "no second bug check");
}

/// Every test of this file again, against `rvgpu.sys` in the x86-64 emulator.
#[test]
fn against_the_pe_image() {
    pe::rerun_against_the_pe_image(&[]);
}
