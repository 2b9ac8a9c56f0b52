//! DDI-01: across a normal workload (start, paging, kernel-mode and user-mode submission, a
//! TDR) the simulated OS hands the driver every audited block as 24H2 fills it: each call site
//! that calls the driver through a closure checks its block against the hand-over audit's row
//! set, every set counts blocks, and none fills a field 24H2 leaves zero.

mod common;

use common::tdr::*;
use common::*;

use rvgpu_ddi::handover as h;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::{Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::submit::UserQueue;

/// Asserts that `sets` were each checked at least once and that no block filled a field the
/// audit says 24H2 leaves zero.
fn all_checked_none_filled(m: &Machine, sets: &[&str]) {
    for set in sets {
        let (blocks, _) = m.handover(0, set);
        assert!(blocks > 0, "no {set} block checked");
    }
    let (_, filled) = m.handover(0, sets[0]);
    assert!(
        filled.is_empty(),
        "fields 24H2 leaves zero, filled: {filled:?}"
    );
}

/// Software scheduling: StartDevice's start info (32 DMA queue entries), the feature
/// interface's QueryInterface (the adapter's DeviceUid, no specific data), the system
/// contexts, VidMm's FILL through a temporary aperture mapping, SubmitCommandVirtual, the
/// paging packets' physical SubmitCommand (no DmaBufferVirtualAddress), and a hang's
/// PreemptCommand and ResetEngine; then CalibrateGpuClock.
#[test]
fn ddi_01_a_software_scheduled_workload_is_handed_over_as_24h2_fills_it() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::W24H2;
    cfg.adapters[0].hwsch_feature = false;
    let m = started(cfg);
    enable_tdr(&m, fast());
    let (p, k) = user_process(&m);
    let c = okk(&m, k.create_context(0));
    let t = okk(&m, k.create_allocation(8192));
    ok(
        &m,
        m.page_in(&p, 0, rvgpu_hw::addr::GpuVa::new(t.gpu_va), 4096, 0),
    );
    ok(&m, m.submit_legacy(&p, c, &[fill(&t, 4096, 0x5A)]));
    run_until(&m, "the fill", |m| {
        m.legacy_fences(0, 0).1 >= m.legacy_fences(0, 0).0
    });
    let (h2, k2) = user_process(&m);
    let c2 = okk(&m, k2.create_context(0));
    ok(&m, m.submit_legacy(&h2, c2, &[Command::Hang]));
    run_until(&m, "the reset", |m| {
        m.handover(0, h::RESET_ENGINE.name).0 > 0
            && m.legacy_fences(0, 0).1 >= m.legacy_fences(0, 0).0
    });
    ok(&m, m.calibrate_gpu_clock(0, 0));
    all_checked_none_filled(
        &m,
        &[
            h::START_DEVICE.name,
            h::QUERY_INTERFACE_SET.name,
            h::CREATE_CONTEXT.name,
            h::FILL.name,
            h::MAP_APERTURE_SEGMENT.name,
            h::UNMAP_APERTURE_SEGMENT.name,
            h::SUBMIT_COMMAND.name,
            h::SUBMIT_COMMAND_VIRTUAL.name,
            h::PREEMPT_COMMAND.name,
            h::RESET_ENGINE.name,
            h::CALIBRATE_GPU_CLOCK.name,
        ],
    );
    assert_eq!(t.mem.load(4096), 0x5A);
}

/// Hardware scheduling: a user-mode queue's submission and a hang's engine reset.
#[test]
fn ddi_01_a_hardware_scheduled_workload_is_handed_over_as_24h2_fills_it() {
    let m = tdr_machine_reading(Mode::Step, rvgpu_simos::Windows::W24H2);
    let p = ok(&m, m.create_process(0));
    let mut q = okk(&m, UserQueue::new(m.kmt(&p), &config(0)));
    let v = okk(&m, q.submit(&[]));
    okk(&m, q.wait(v));
    drop(q);
    ok(&m, m.exit_process(&p));
    let _hung = hang_a_user_queue_until_resumed(&m);
    all_checked_none_filled(
        &m,
        &[
            h::START_DEVICE.name,
            h::QUERY_INTERFACE_SET.name,
            h::RESET_HW_ENGINE.name,
        ],
    );
}

/// The DDIs the audit marks pages-only: 24H2 never calls them.
fn pages_only() -> Vec<&'static str> {
    h::AUDIT
        .iter()
        .filter(|a| matches!(a.cover, h::Cover::PagesOnly { .. }))
        .map(|a| a.ddi)
        .collect()
}

/// The pages-only DDIs the OS called on adapter 0, with their counts (the OS's ledger of
/// outermost DDI calls, by routine).
fn pages_only_called(m: &Machine) -> Vec<(String, u64)> {
    let only = pages_only();
    m.bus_costs(0)
        .into_iter()
        .filter(|(name, calls, _)| *calls > 0 && only.contains(&name.as_str()))
        .map(|(name, calls, _)| (name, calls))
        .collect()
}

/// A TDR workload under `reading`, each part on its own machine: a software-scheduled engine
/// timeout, then one whose engine reset fails (the adapter-wide path); a hardware-scheduled
/// engine timeout, then one whose engine reset fails. Returns the pages-only DDIs called.
fn tdr_workload(reading: rvgpu_simos::Windows) -> Vec<(String, u64)> {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = reading;
    cfg.adapters[0].hwsch_feature = false;
    let m = started(cfg);
    enable_tdr(&m, fast());
    let (p, k) = user_process(&m);
    let c = okk(&m, k.create_context(0));
    ok(&m, m.submit_legacy(&p, c, &[Command::Hang]));
    run_until(&m, "the engine reset", |m| resets(m) == 1);
    let (p2, k2) = user_process(&m);
    let c2 = okk(&m, k2.create_context(0));
    m.device(0).unwrap().fail_next_reset(0);
    ok(&m, m.submit_legacy(&p2, c2, &[Command::Hang]));
    run_until(&m, "the adapter-wide reset", |m| adapter_resets(m) == 1);
    no_fault(&m);
    let mut called = pages_only_called(&m);
    let m = tdr_machine_reading(Mode::Step, reading);
    let _hung = hang_a_user_queue_until_resumed(&m);
    m.device(0).unwrap().fail_next_reset(0);
    let h2 = ok(&m, m.create_process(0));
    let mut uq = okk(&m, UserQueue::new(m.kmt(&h2), &config(0)));
    okk(&m, uq.submit(&[Command::Hang]));
    run_until(&m, "the adapter-wide reset", |m| adapter_resets(m) == 1);
    std::mem::forget(uq);
    no_fault(&m);
    called.extend(pages_only_called(&m));
    called
}

/// DDI-01, TDR-01, TDR-05: under 24H2's reading a TDR workload (engine timeouts and the
/// adapter-wide path, hardware-scheduled and not) calls none of the DDIs 24H2 never calls:
/// every report is `DxgkDdiCollectDbgInfo2`, no late fence is asked about and a reset
/// hardware-scheduled engine is resumed without `DxgkDdiQueryCurrentFence`.
#[test]
fn ddi_01_under_24h2_a_tdr_workload_calls_no_pages_only_ddi() {
    assert_eq!(tdr_workload(rvgpu_simos::Windows::W24H2), Vec::new());
}

/// DDI-01: the same workload under the pages' reading calls every pages-only DDI, so the
/// ledger the 24H2 test reads sees them.
#[test]
fn ddi_01_under_the_pages_the_tdr_workload_calls_the_pages_only_ddis() {
    let called = tdr_workload(rvgpu_simos::Windows::PAGES);
    for ddi in pages_only() {
        assert!(
            called.iter().any(|(n, _)| n == ddi),
            "{ddi} not called: {called:?}"
        );
    }
}

static REAL_START: std::sync::OnceLock<rvgpu_ddi::init::PDXGKDDI_START_DEVICE> =
    std::sync::OnceLock::new();
static REAL_QUERY: std::sync::OnceLock<rvgpu_ddi::init::PDXGKDDI_QUERY_INTERFACE> =
    std::sync::OnceLock::new();
/// `RequiredDmaQueueEntry` and `AdapterLuid` of each StartDevice.
static STARTS: std::sync::Mutex<Vec<(u32, u32, i32)>> = std::sync::Mutex::new(Vec::new());
/// `(Size, Version, DeviceUid, InterfaceSpecificData null)` of each feature-interface request.
static FEATURE_ASKS: std::sync::Mutex<Vec<(u16, u16, u32, bool)>> =
    std::sync::Mutex::new(Vec::new());

/// rvgpu's StartDevice, recording the start info it is handed.
unsafe extern "system" fn start_recording(
    ctx: *mut std::ffi::c_void,
    info: *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    iface: *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    sources: *mut u32,
    children: *mut u32,
) -> rvgpu_ddi::NTSTATUS {
    // SAFETY: the OS's start info, live for the call.
    if let Some(i) = unsafe { info.as_ref() } {
        STARTS.lock().unwrap().push((
            i.RequiredDmaQueueEntry,
            i.AdapterLuid.LowPart,
            i.AdapterLuid.HighPart,
        ));
    }
    let Some(Some(real)) = REAL_START.get().copied() else {
        return rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
    };
    // SAFETY: forwarded unchanged.
    unsafe { real(ctx, info, iface, sources, children) }
}

/// rvgpu's QueryInterface, recording each request for the feature interface.
unsafe extern "system" fn query_recording(
    ctx: *mut std::ffi::c_void,
    q: *mut rvgpu_ddi::adapter::QUERY_INTERFACE,
) -> rvgpu_ddi::NTSTATUS {
    // SAFETY: the OS's request block; its GUID pointer is valid for the call.
    if let Some(r) = unsafe { q.as_ref() } {
        // SAFETY: as above.
        let guid = unsafe { r.InterfaceType.as_ref() };
        if guid == Some(&rvgpu_ddi::feature::GUID_WDDM_INTERFACE_FEATURE) {
            FEATURE_ASKS.lock().unwrap().push((
                r.Size,
                r.Version,
                r.DeviceUid,
                r.InterfaceSpecificData.is_null(),
            ));
        }
    }
    let Some(Some(real)) = REAL_QUERY.get().copied() else {
        return rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
    };
    // SAFETY: forwarded unchanged.
    unsafe { real(ctx, q) }
}

/// DDI-01: StartDevice gets the start info `K:DpiFdoStartAdapter` @0x140245688 builds (32 DMA
/// queue entries and the adapter's LUID), and the feature interface is asked for once, at
/// version 1 in 48 bytes (`K:DpiFeatureStartDevice` @0x14024DEF8), in a request naming the
/// adapter itself and no specific data (`K:DpiQueryMiniportInterface` @0x14018AFAC).
#[test]
fn ddi_01_start_device_and_the_feature_interface_request_are_as_24h2_builds_them() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    load_hooked(&mut m, |t| {
        let _ = REAL_START.set(t.DxgkDdiStartDevice);
        t.DxgkDdiStartDevice = Some(start_recording);
        let _ = REAL_QUERY.set(t.DxgkDdiQueryInterface);
        t.DxgkDdiQueryInterface = Some(query_recording);
    });
    let started = m.start_adapter(0).map(|_| ());
    ok(&m, started);
    let starts = STARTS.lock().unwrap().clone();
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0].0, 32, "RequiredDmaQueueEntry");
    assert_ne!((starts[0].1, starts[0].2), (0, 0), "AdapterLuid");
    let asks = FEATURE_ASKS.lock().unwrap().clone();
    assert_eq!(
        asks,
        vec![(
            48,
            rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE_VERSION_1,
            0xFFFF_FFFF,
            true
        )]
    );
    no_fault(&m);
}

/// Residency: an evicted allocation's contents leave VRAM and come back through VidMm's
/// TRANSFERs, each handed over as 24H2 fills it (MdlOffset 0: the MDL describes the moved
/// range from its start, `M:VIDMM_GLOBAL::MemoryTransferInternal` @0x1400E5F04).
#[test]
fn ddi_01_residency_transfers_are_handed_over_as_24h2_fills_them() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::W24H2;
    let m = started(cfg);
    let (_p, k) = user_process(&m);
    let a = common::residency::gpu_only(&m, &k, 64 * 1024);
    okk(
        &m,
        k.evict(&[a.handle], rvgpu_umd::kmt::EvictFlags::default()),
    );
    common::residency::make_resident(&m, &k, &a);
    all_checked_none_filled(&m, &[h::TRANSFER.name]);
    no_fault(&m);
}

against_the_pe_image!();

/// Every test of this suite again under Microsoft's pages, on both builds (the workload tests
/// pin the 24H2 reading: the audit describes 24H2).
#[test]
fn under_the_pages() {
    pe::rerun_under_the_pages(&[], true);
}
