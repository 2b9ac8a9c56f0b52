//! The adapter and device thunks the shipped `rvgpu_umd.dll` calls — `D3DKMTOpenAdapterFromLuid`,
//! `D3DKMTCloseAdapter`, `D3DKMTCreateDevice`, `D3DKMTDestroyDevice` — called raw in the DLL's
//! own process as 24H2 answers them (the catalog rows are the checklist), and the process they
//! build: one simulated process per DLL process, whose devices share one GPU VA space, one
//! handle table and one TDR history (24H2's `DXGPROCESS` with its per-adapter
//! `DXGPROCESS_RENDER_ADAPTER_INFO`, `K:DXGPROCESS_RENDER_ADAPTER_INFO::Initialize` @0x1403ACC00).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::conformance::{assert_covers, expected};
use common::dll::*;
use common::pe::{pe_machine, pe_machine_sw, umd};
use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::machine::answers::ProcessTdrBlock;
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::{Machine, TdrConfig, UmsProcess};
use rvgpu_umd::kmt::{AllocationCpu, Kmt, MapGpuVa, ReserveGpuVa};
use rvgpu_umd::submit::UserQueue;

const OPEN: &str = "D3DKMTOpenAdapterFromLuid";
const CLOSE: &str = "D3DKMTCloseAdapter";
const CREATE: &str = "D3DKMTCreateDevice";
const DESTROY: &str = "D3DKMTDestroyDevice";
const RESERVE: &str = "D3DKMTReserveGpuVirtualAddress";
/// A base the tests reserve at (64 KiB aligned, far from what VidMm hands out).
const CHOSEN: u64 = 0x7000_0000_0000;

/// `D3DKMTOpenAdapterFromLuid` of adapter 0's LUID: (status, the structure after).
fn open_raw(p: &Arc<UserProcess>, luid_low: u32) -> (u64, [u32; 4]) {
    let mut s = [luid_low, 0, 0xAAAA_AAAA, 0];
    let r = thunk(p, OPEN, s.as_mut_ptr() as u64);
    (r, s)
}

fn open(p: &Arc<UserProcess>) -> u32 {
    let (r, s) = open_raw(p, LUID_LOW as u32);
    assert_eq!(r, STATUS_SUCCESS, "{OPEN}: {r:#x}");
    s[2]
}

/// `D3DKMTCreateDevice` on `adapter` with `flags`: (status, the structure after).
fn create_raw(p: &Arc<UserProcess>, adapter: u32, flags: u32) -> (u64, [u32; 16]) {
    let mut s = [0u32; 16];
    s[0] = adapter;
    s[2] = flags;
    s[3] = 0x5555_5555;
    let r = thunk(p, CREATE, s.as_mut_ptr() as u64);
    (r, s)
}

fn create(p: &Arc<UserProcess>, adapter: u32) -> u32 {
    let (r, s) = create_raw(p, adapter, 0);
    assert_eq!(r, STATUS_SUCCESS, "{CREATE}: {r:#x}");
    s[3]
}

fn one_handle(p: &Arc<UserProcess>, name: &str, h: u32) -> u64 {
    let mut s = [h, 0];
    thunk(p, name, s.as_mut_ptr() as u64)
}

/// The simulated device behind `h` of `p`.
fn sim(p: &UserProcess, h: u32) -> UmsProcess {
    p.devices()
        .into_iter()
        .find(|d| d.device == h)
        .unwrap_or_else(|| panic!("no device {h:#x}"))
}

/// `D3DKMTReserveGpuVirtualAddress` through `adapter` at `base`: (status, the VA written).
fn reserve_raw(p: &Arc<UserProcess>, adapter: u32, base: u64, size: u64) -> (u64, u64) {
    let mut s = [0u64; 9];
    s[0] = u64::from(adapter);
    s[1] = base;
    s[4] = size;
    let r = thunk(p, RESERVE, s.as_mut_ptr() as u64);
    (r, s[7])
}

fn machine_ok(m: &Machine) {
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-01: two devices a DLL process creates on one adapter are devices of one simulated
/// process with one GPU VA space: a range reserved through the adapter is occupied for a
/// reservation through either device; an allocation of device A mapped there is written by a
/// user-mode queue of device B; destroying device A leaves the process's range and device B.
#[test]
fn um_01_two_devices_of_one_dll_process_share_one_gpu_va_space() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let (ha, hb) = (create(&p, adapter), create(&p, adapter));
    let (a, b) = (sim(&p, ha), sim(&p, hb));
    assert_eq!(a.pid, b.pid, "one process");
    assert_eq!(p.nt_processes(), vec![a.pid]);
    let (r, va) = reserve_raw(&p, adapter, CHOSEN, 0x1_0000);
    assert_eq!(
        (r, va),
        (STATUS_SUCCESS, CHOSEN),
        "reserve through the adapter"
    );
    let (ka, kb) = (m.kmt(&a), m.kmt(&b));
    let at = |base| ReserveGpuVa {
        base,
        size: 0x1_0000,
        ..ReserveGpuVa::default()
    };
    assert!(ka.reserve_gpu_va(&at(CHOSEN)).is_err(), "occupied for A");
    assert!(kb.reserve_gpu_va(&at(CHOSEN)).is_err(), "occupied for B");
    let other = okk(&m, kb.reserve_gpu_va(&at(CHOSEN + 0x10_0000)));
    assert_eq!(other, CHOSEN + 0x10_0000);
    assert_ne!(
        reserve_raw(&p, adapter, other, 0x1_0000),
        (STATUS_SUCCESS, other),
        "B's range is occupied for the adapter"
    );
    // A's buffer mapped into the process's range; B's queue writes it.
    let buf = okk(&m, ka.create_allocation(4096));
    buf.mem.store(0, 0);
    let pq = okk(&m, ka.create_paging_queue(0));
    let mapped = okk(
        &m,
        ka.map_gpu_va(&MapGpuVa::read_write(pq.handle, CHOSEN, buf.handle, 0, 1)),
    );
    okk(&m, ka.wait_for_fence(pq.fence, mapped.paging_fence_value));
    let mut q = okk(&m, UserQueue::new(kb, &config(0)));
    submit_wait(
        &m,
        &mut q,
        &[Command::Fill {
            dst: CHOSEN,
            bytes: 8,
            pattern: 0x5EED,
        }],
    );
    assert_eq!(buf.mem.load(0), 0x5EED, "B's queue wrote A's mapping");
    okk(&m, q.close());
    // A goes; the process's ranges and B stay.
    drop(buf);
    assert_eq!(one_handle(&p, DESTROY, ha), STATUS_SUCCESS);
    assert!(kb.reserve_gpu_va(&at(other)).is_err(), "B's range stays");
    assert_eq!(
        reserve_raw(&p, adapter, CHOSEN + 0x20_0000, 0x1_0000).0,
        STATUS_SUCCESS,
        "the adapter reaches the space through B"
    );
    drop(p);
    machine_ok(&m);
}

/// UM-17: one handle table per process: handles of device A are names device B's process
/// knows (a device handle is destroyable whichever device made it, and no two objects of the
/// process share a number); another process names none of them.
#[test]
fn um_17_handles_are_the_processs_and_no_other_processs() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let q = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let (ha, hb) = (create(&p, adapter), create(&p, adapter));
    let ctx_a = raw_context_on(&p, ha);
    let ctx_b = raw_context_on(&p, hb);
    let mut all = vec![ha, hb, ctx_a, ctx_b];
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 4, "one table, distinct handles");
    let q_adapter = open(&q);
    let hq = create(&q, q_adapter);
    assert_ne!(sim(&q, hq).pid, sim(&p, ha).pid);
    // Another process's handles name nothing in q.
    assert_eq!(one_handle(&q, DESTROY, ha), STATUS_INVALID_PARAMETER);
    assert_eq!(one_handle(&q, CLOSE, adapter), STATUS_INVALID_PARAMETER);
    assert_eq!(
        one_handle(&q, "D3DKMTDestroyContext", ctx_a),
        STATUS_INVALID_PARAMETER
    );
    // Within p, B's context outlives A; A's went with A.
    assert_eq!(one_handle(&p, DESTROY, ha), STATUS_SUCCESS);
    assert_eq!(
        one_handle(&p, "D3DKMTDestroyContext", ctx_a),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        one_handle(&p, "D3DKMTDestroyContext", ctx_b),
        STATUS_SUCCESS
    );
    assert_eq!(one_handle(&p, DESTROY, hb), STATUS_SUCCESS);
    machine_ok(&m);
}

/// A context on node 0 of device `device` of `p`.
fn raw_context_on(p: &Arc<UserProcess>, device: u32) -> u32 {
    let mut c = [0u32; 10];
    c[0] = device;
    c[3] = HW_QUEUE_SUPPORTED;
    let r = thunk(p, "D3DKMTCreateContextVirtual", c.as_mut_ptr() as u64);
    if r != STATUS_SUCCESS {
        // A software-scheduled node takes no HwQueueSupported.
        c[3] = 0;
        assert_eq!(
            thunk(p, "D3DKMTCreateContextVirtual", c.as_mut_ptr() as u64),
            STATUS_SUCCESS
        );
    }
    c[8]
}

/// TDR-05 through the DLL: a DLL process that recreates its device after each engine timeout
/// is charged as one process; under 24H2 the fourth timeout within `TdrLimitTime` blocks it
/// (its next `D3DKMTCreateDevice` and `D3DKMTOpenAdapterFromLuid` are STATUS_ACCESS_DENIED,
/// nothing written), while another DLL process carries on. The pages block nothing.
#[test]
fn tdr_05_a_dll_process_recreating_its_device_is_charged_as_one_process() {
    let m = pe_machine_sw();
    ok(
        &m,
        m.enable_tdr(
            0,
            TdrConfig {
                timeout: Duration::from_millis(300),
                preempt_timeout: Duration::from_millis(50),
                ..TdrConfig::default()
            },
        ),
    );
    let blocks = m.os_config().reading.process_tdr_block == ProcessTdrBlock::Blocks;
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let mut pid = None;
    for n in 1..=4u64 {
        let h = create(&p, adapter);
        let d = sim(&p, h);
        assert_eq!(*pid.get_or_insert(d.pid), d.pid, "device {n}: one process");
        let k = m.kmt(&d);
        let ctx = okk(&m, k.create_context(0));
        ok(&m, m.submit_legacy(&d, ctx, &[Command::Hang]));
        let until = Instant::now() + Duration::from_secs(60);
        while m.tdr_counts(0).0 < n {
            assert!(Instant::now() < until, "engine reset {n}");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(one_handle(&p, DESTROY, h), STATUS_SUCCESS);
    }
    assert_eq!(p.nt_processes().len(), 1);
    let (r, s) = create_raw(&p, adapter, 0);
    let (ro, so) = open_raw(&p, LUID_LOW as u32);
    if blocks {
        let blocked = "the process blocked on the adapter for repeated engine timeouts";
        assert_eq!(r, expected(CREATE, blocked), "{r:#x}");
        assert_eq!(s[3], 0x5555_5555, "nothing written");
        assert_eq!(ro, expected(OPEN, blocked), "{ro:#x}");
        assert_eq!(so[2], 0xAAAA_AAAA, "nothing written");
    } else {
        assert_eq!((r, ro), (STATUS_SUCCESS, STATUS_SUCCESS));
    }
    let q = UserProcess::new(m.clone(), umd());
    let qa = open(&q);
    create(&q, qa);
    drop(q);
    drop(p);
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// The four rows' refusals, in 24H2's order, each returning the row's status and writing
/// nothing (`D3DKMTOpenAdapterFromLuid`'s `hAdapter`, `D3DKMTCreateDevice`'s `hDevice` stay
/// as the caller left them); the success paths write the handle; a closed adapter or destroyed
/// device names nothing any more.
#[test]
fn d3dkmt_adapter_and_device_thunks_answer_as_24h2() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    // OpenAdapterFromLuid.
    let what = "AdapterLuid no adapter's";
    let (r, s) = open_raw(&p, 0x4242);
    assert_eq!((r, s[2]), (expected(OPEN, what), 0xAAAA_AAAA), "{what}");
    let adapter = open(&p);
    assert_ne!(adapter, 0);
    // CreateDevice.
    let what = "hAdapter not in the caller's handle table";
    let (r, s) = create_raw(&p, 0x1234, 0);
    assert_eq!((r, s[3]), (expected(CREATE, what), 0x5555_5555), "{what}");
    let device = create(&p, adapter);
    assert_ne!(device, 0);
    let (r, s) = create_raw(&p, device, 0);
    assert_eq!(
        (r, s[3]),
        (expected(CREATE, what), 0x5555_5555),
        "a device handle"
    );
    // DestroyDevice.
    let what = "hDevice not a device handle in the caller's table";
    for h in [0, 0x1234, adapter] {
        assert_eq!(
            one_handle(&p, DESTROY, h),
            expected(DESTROY, what),
            "{h:#x}"
        );
    }
    assert_eq!(one_handle(&p, DESTROY, device), STATUS_SUCCESS);
    assert_eq!(one_handle(&p, DESTROY, device), expected(DESTROY, what));
    // CloseAdapter.
    let what = "hAdapter not an adapter handle in the caller's table";
    let second = create(&p, adapter);
    assert_eq!(one_handle(&p, CLOSE, second), expected(CLOSE, what));
    assert_eq!(one_handle(&p, CLOSE, adapter), STATUS_SUCCESS);
    assert_eq!(one_handle(&p, CLOSE, adapter), expected(CLOSE, what));
    // The device outlives its adapter handle.
    assert_eq!(one_handle(&p, DESTROY, second), STATUS_SUCCESS);
    let untestable = "this suite's machines run test-signed (the driver image needs it)";
    let internal = "no caller can exhaust the simulated process's handle table";
    assert_covers(
        OPEN,
        &[
            "AdapterLuid no adapter's",
            "the process blocked on the adapter for repeated engine timeouts",
        ],
        &[
            ("no process context", "every thunk runs in a DLL process"),
            (
                "the adapter being removed",
                "the simulated adapter has no surprise-removal state",
            ),
            (
                "the adapter not started",
                "the DLL's machines start their adapter before it loads",
            ),
            ("no handle left in the process's table", internal),
        ],
    );
    assert_covers(
        CLOSE,
        &["hAdapter not an adapter handle in the caller's table"],
        &[],
    );
    assert_covers(
        CREATE,
        &[
            "hAdapter not in the caller's handle table",
            "the process blocked on the adapter for repeated engine timeouts",
        ],
        &[
            ("Flags.TestDevice without test signing", untestable),
            ("no handle left in the process's table", internal),
        ],
    );
    assert_covers(
        DESTROY,
        &["hDevice not a device handle in the caller's table"],
        &[],
    );
    machine_ok(&m);
}
