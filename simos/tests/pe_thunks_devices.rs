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
    let blocks = m.os_config().windows.reading().process_tdr_block == ProcessTdrBlock::Blocks;
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
        &[("no process context", "every thunk runs in a DLL process")],
    );
    machine_ok(&m);
}

const ENUM: &str = "D3DKMTEnumAdapters2";
const ESCAPE: &str = "D3DKMTEscape";
const FEATURE: &str = "D3DKMTIsFeatureEnabled";
const NOT_SUPPORTED: u64 = 0xC000_00BB;
const UNTOUCHED: u32 = 0xAAAA_AAAA;

/// `D3DKMTEnumAdapters2` with `NumAdapters` `n` and a list of `len` entries (`None`: a NULL
/// `pAdapters`): (status, `NumAdapters` after, the list after as dwords, 5 per entry).
fn enum_raw(p: &Arc<UserProcess>, n: u32, len: Option<usize>) -> (u64, u32, Vec<u32>) {
    let mut list = vec![UNTOUCHED; 5 * len.unwrap_or(0)];
    let mut s = [u64::from(n), 0];
    if len.is_some() {
        s[1] = list.as_mut_ptr() as u64;
    }
    let r = thunk(p, ENUM, s.as_mut_ptr() as u64);
    (r, s[0] as u32, list)
}

/// `D3DKMTEnumAdapters2` as 24H2 answers it: the count-only call is the session's maximum
/// (adapters + 2); a list too short for the adapters is STATUS_BUFFER_TOO_SMALL with nothing
/// written; a list long enough gets one new adapter handle per started adapter, its LUID, no
/// sources, and `NumAdapters` the number listed; a `NumAdapters` above the maximum is lowered;
/// a list that faults gets its status after `NumAdapters` was written.
#[test]
fn d3dkmt_enum_adapters2_answers_as_24h2() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let what = "the D3DKMT_ENUMADAPTERS2 pointer NULL";
    assert_eq!(thunk(&p, ENUM, 0), expected(ENUM, what), "{what}");
    let max = m.adapter_count() as u32 + 2;
    let (r, n, _) = enum_raw(&p, 0x77, None);
    assert_eq!((r, n), (STATUS_SUCCESS, max), "count only");
    let what = "more adapters to list than NumAdapters (after NumAdapters is lowered to the \
                session's maximum adapter count): the handles opened are closed";
    let (r, n, list) = enum_raw(&p, 0, Some(2));
    assert_eq!((r, n), (expected(ENUM, what), 0), "{what}");
    assert!(list.iter().all(|&w| w == UNTOUCHED), "nothing written");
    for asked in [max, 5000] {
        let (r, n, list) = enum_raw(&p, asked, Some(max as usize));
        assert_eq!((r, n), (STATUS_SUCCESS, 1), "NumAdapters {asked}");
        assert_eq!(&list[1..5], &[LUID_LOW as u32, 0, 0, 0], "LUID, no sources");
        assert!(list[5..].iter().all(|&w| w == UNTOUCHED), "one entry");
        let h = list[0];
        let device = create(&p, h);
        assert_eq!(one_handle(&p, DESTROY, device), STATUS_SUCCESS);
        assert_eq!(
            one_handle(&p, CLOSE, h),
            STATUS_SUCCESS,
            "a handle of its own"
        );
    }
    // A list the caller cannot write: NumAdapters is written first, then the copy faults.
    let mut s = [u64::from(max), 0x10];
    let r = thunk(&p, ENUM, s.as_mut_ptr() as u64);
    assert_eq!(
        (r, s[0] as u32),
        (STATUS_ACCESS_VIOLATION, 1),
        "a list that faults"
    );
    assert_covers(
        ENUM,
        &[
            "the D3DKMT_ENUMADAPTERS2 pointer NULL",
            "more adapters to list than NumAdapters (after NumAdapters is lowered to the \
             session's maximum adapter count): the handles opened are closed",
        ],
        &[
            (
                "no pool for the adapter list",
                "the simulated pool never fails",
            ),
            ("no process context", "every thunk runs in a DLL process"),
        ],
    );
    machine_ok(&m);
}

/// A process with two devices on a TDR-watched adapter whose first device's DMA buffer hung
/// the engine (VidSch put it in error, reason 7): (machine, process, adapter, guilty device,
/// a context of it).
fn hung_device() -> (Arc<Machine>, Arc<UserProcess>, u32, u32, u32) {
    let m = pe_machine_sw();
    let tdr = TdrConfig {
        timeout: Duration::from_millis(300),
        preempt_timeout: Duration::from_millis(50),
        ..TdrConfig::default()
    };
    ok(&m, m.enable_tdr(0, tdr));
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let guilty = create(&p, adapter);
    let ctx = raw_context_on(&p, guilty);
    let d = sim(&p, guilty);
    let hang_ctx = okk(&m, m.kmt(&d).create_context(0));
    ok(&m, m.submit_legacy(&d, hang_ctx, &[Command::Hang]));
    let until = Instant::now() + Duration::from_secs(60);
    while m.tdr_counts(0).0 < 1 {
        assert!(Instant::now() < until, "engine reset");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        m.kmt(&d).device_execution_state(),
        Ok(rvgpu_umd::kmt::DeviceExecutionState::HUNG)
    );
    (m, p, adapter, guilty, ctx)
}

/// The driver-known BUILDTESTCOMMANDBUFFER escape on `device`'s context `ctx`: its status,
/// and whether the driver's command came back.
fn known_escape(p: &Arc<UserProcess>, adapter: u32, device: u32, ctx: u32) -> (u64, bool) {
    use rvgpu_simos::dxgkrnl::kmtest::escape_data;
    let mut dma = vec![0u8; 4096];
    let mut private = vec![0u8; 64];
    let cmd = rvgpu_ddi::kmtest::D3DDDI_TESTCOMMANDBUFFER::fill(0x10_0000, 64, 1);
    let mut known = escape_data(ctx, false, cmd, &mut dma, &mut private);
    let e = Escape {
        adapter,
        device,
        flags: KNOWN,
        data: known.as_mut_ptr() as u64,
        size: known.len() as u32,
        context: ctx,
        ..Escape::default()
    };
    let r = e.call(p);
    (r, dma.iter().any(|&b| b != 0))
}

/// UM-10: a device VidSch put in error stays an active DXGDEVICE (`K:DxgkEscape` @0x140419AB0
/// refuses only a device whose state is not active, +608), so `D3DKMTEscape` naming it goes
/// past the OS's checks: the driver-known escape on its context builds the driver's command
/// and brings it back, as `D3DKMTGetDeviceState` answers HUNG for it rather than a removal.
#[test]
fn um_10_d3dkmtescape_on_a_device_in_error_reaches_the_driver() {
    let (m, p, adapter, guilty, ctx) = hung_device();
    assert_eq!(
        known_escape(&p, adapter, guilty, ctx),
        (STATUS_SUCCESS, true),
        "the device in error's escape"
    );
    drop(p);
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// UM-10: once the adapter is removed `D3DKMTEscape` is refused with the catalog's status
/// before the driver, with a device (stopped with its adapter) or without one
/// (`K:COREADAPTERACCESS::AcquireShared` @0x14000F940 finds the adapter not active), and
/// nothing is written back.
#[test]
fn um_10_d3dkmtescape_on_a_removed_adapter_is_refused() {
    let (m, p, adapter, guilty, _) = hung_device();
    ok(&m, m.device_removed(0));
    let gone = "the adapter not active: not started, or removed (COREADAPTERACCESS::AcquireShared \
                reads DXGADAPTER +200)";
    let common = "DRIVERPRIVATE without adapter access (Flags.DriverCommonEscape, \
                  Flags.NoAdapterSynchronization from DDI version 0x5023, or a hybrid discrete \
                  adapter): the adapter not active";
    let mut data = vec![0x5Au8; 16];
    for (device, flags, what) in [(guilty, 0, gone), (0, 0, gone), (guilty, 1 << 7, common)] {
        let e = Escape {
            adapter,
            device,
            flags,
            data: data.as_mut_ptr() as u64,
            size: 16,
            ..Escape::default()
        };
        assert_eq!(
            e.call(&p),
            expected(ESCAPE, what),
            "hDevice {device:#x}: {what}"
        );
        assert!(data.iter().all(|&b| b == 0x5A), "nothing written");
    }
    drop(p);
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// `D3DKMT_ESCAPE` as the DLL lays it out.
#[derive(Clone, Copy, Default)]
struct Escape {
    adapter: u32,
    device: u32,
    ty: u32,
    flags: u32,
    data: u64,
    size: u32,
    context: u32,
}

impl Escape {
    fn call(self, p: &Arc<UserProcess>) -> u64 {
        let mut s = [0u32; 8];
        s[..4].copy_from_slice(&[self.adapter, self.device, self.ty, self.flags]);
        s[4] = self.data as u32;
        s[5] = (self.data >> 32) as u32;
        s[6] = self.size;
        s[7] = self.context;
        thunk(p, ESCAPE, s.as_mut_ptr() as u64)
    }
}

const KNOWN: u32 = 1 << 6;

/// Private data beginning with `words`, the rest a pattern.
fn escape_data_of(words: &[u32]) -> Vec<u8> {
    let mut buf = vec![0x5Au8; 0x1000];
    for (i, w) in words.iter().enumerate() {
        buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    buf
}

/// `e` with [`escape_data_of`]`(words)`: (status, the data after).
fn escape_with(p: &Arc<UserProcess>, e: Escape, words: &[u32]) -> (u64, Vec<u8>) {
    let mut buf = escape_data_of(words);
    let e = Escape {
        data: buf.as_mut_ptr() as u64,
        ..e
    };
    (e.call(p), buf)
}

/// The escape types other than DRIVERPRIVATE on the render-only adapter: each refusal with its
/// catalog status and nothing written back, sizes and fields at and past their limits (the
/// caller's data is untrusted); what 24H2 answers without the driver. Returns the labels
/// driven.
fn other_escape_types(p: &Arc<UserProcess>, adapter: u32, device: u32) -> Vec<&'static str> {
    const HW: u32 = 1;
    let e = |ty: u32, size: u32| Escape {
        adapter,
        device,
        ty,
        size,
        ..Escape::default()
    };
    let drt = "Type DRT_TEST: PrivateDriverDataSize under 12 or under its second dword, or the \
               first dword not the DRT signature";
    let diag = "Type DIAGNOSTICS or GET_EXTERNAL_DIAGNOSTICS: PrivateDriverDataSize under 4 or \
                not its first dword + 4";
    let daig = "Type LOG_USERMODE_DAIG_PACKET: PrivateDriverDataSize under 0x30 or under its \
                second dword, or that dword 0x400 or more";
    let tdr = "Type TDRDBGCTRL: PrivateDriverDataSize under 4 with data, a command above 8, or \
               command 8 with PrivateDriverDataSize under 8";
    let vidsch = "Type VIDSCH: command 2, or command 3 without Flags.HardwareAccess";
    let device_ty = "Type DEVICE: PrivateDriverDataSize under 12 or hDevice 0";
    let display = "Type DMM, OUTPUTDUPL_SNAPSHOT, OUTPUTDUPL_DIAGNOSTICS or MODES_PRUNED_OUT \
                   (also through ACTIVATE_SPECIFIC_DIAG) on an adapter without a display core";
    let activate = "Type ACTIVATE_SPECIFIC_DIAG: PrivateDriverDataSize not 8, or the first dword \
                    neither 0 nor MODES_PRUNED_OUT";
    let bright = "Type BRIGHTNESS without Flags.HardwareAccess or with PrivateDriverDataSize \
                  under 0x60C";
    let history = "Type HISTORY_BUFFER_STATUS: PrivateDriverDataSize under 8 or hDevice 0";
    let verifier = "Type PROCESS_VERIFIER_OPTION or ADAPTER_VERIFIER_OPTION: under 0x20 bytes, \
                    or a field out of its range";
    let no_core = "Type DOD_SET_DIRTYRECT_MODE to an adapter with a render core, or \
                   GET_DISPLAY_CONFIGURATIONS to one without a display core";
    let iommu = "Type QUERY_IOMMU_STATUS or QUERY_DMA_REMAPPING_STATUS: PrivateDriverDataSize 0";
    let unknown = "a Type below 1024 that 24H2 does not know (7, 19, 22, 26, 35, 40 and up)";
    let cases: Vec<(&'static str, Escape, Vec<u32>)> = vec![
        (drt, e(8, 8), vec![0x5874_7244, 8]),
        (drt, e(8, 16), vec![0, 16]),
        (drt, e(8, 16), vec![0x5874_7244, 17]),
        (diag, e(9, 3), vec![]),
        (diag, e(9, 16), vec![4]),
        (diag, e(34, 8), vec![u32::MAX]),
        (
            "Type FORCE_BDDFALLBACK_HEADLESS: PrivateDriverDataSize not 1",
            e(24, 2),
            vec![],
        ),
        (
            "Type REQUEST_MACHINE_CRASH: PrivateDriverDataSize not 24",
            e(25, 16),
            vec![],
        ),
        (
            "Type REQUEST_MACHINE_CRASH (no crash on request)",
            e(25, 24),
            vec![],
        ),
        (
            "Type SOFTGPU_ENABLE_DISABLE_HMD: PrivateDriverDataSize not 200",
            e(27, 16),
            vec![],
        ),
        (
            "Type LOG_CODEPOINT_PACKET: PrivateDriverDataSize not 16",
            e(32, 15),
            vec![],
        ),
        (daig, e(33, 0x2F), vec![0, 0x2F]),
        (daig, e(33, 0x30), vec![0, 0x31]),
        (daig, e(33, 0x800), vec![0, 0x400]),
        (
            "Type CCD_DATABASE: PrivateDriverDataSize under 4",
            e(38, 3),
            vec![],
        ),
        (
            "Type BDD_FALLBACK with no basic display adapter to fall back to",
            Escape {
                adapter: 0,
                ..e(13, 16)
            },
            vec![],
        ),
        (
            "Type VIDMM command 9 (suspend) without its fifth dword and without DRT",
            e(1, 0x840),
            vec![9, 0, 0, 0, 0],
        ),
        (tdr, e(2, 2), vec![]),
        (tdr, e(2, 4), vec![9]),
        (tdr, e(2, 4), vec![8]),
        (
            "Type TDRDBGCTRL: commands 3 to 8 without TdrTestMode in the registry",
            e(2, 4),
            vec![3],
        ),
        (vidsch, e(3, 16), vec![2]),
        (vidsch, e(3, 16), vec![3, 10]),
        (device_ty, e(4, 8), vec![]),
        (
            device_ty,
            Escape {
                device: 0,
                ..e(4, 16)
            },
            vec![],
        ),
        (display, e(5, 0x80), vec![]),
        (display, e(10, 0x18), vec![0x18]),
        (display, e(11, 8), vec![]),
        (display, e(15, 8), vec![]),
        (display, e(14, 8), vec![15, 1]),
        (
            "Type DEBUG_SNAPSHOT: PrivateDriverDataSize under 8",
            e(6, 4),
            vec![],
        ),
        (
            "Type BDD_PNP to an adapter that is not the basic display driver's",
            e(12, 16),
            vec![],
        ),
        (activate, e(14, 4), vec![0]),
        (activate, e(14, 8), vec![3]),
        (
            "Type WHQL_INFO: PrivateDriverDataSize under 4",
            e(16, 2),
            vec![],
        ),
        (bright, e(17, 0x60C), vec![]),
        (
            bright,
            Escape {
                flags: HW,
                ..e(17, 0x60B)
            },
            vec![],
        ),
        (
            "Type EDID_CACHE: PrivateDriverDataSize under 4 or not its first dword + 4",
            e(18, 8),
            vec![0],
        ),
        (history, e(21, 4), vec![]),
        (
            history,
            Escape {
                device: 0,
                ..e(21, 8)
            },
            vec![],
        ),
        (
            "Type MIRACAST_ADAPTER_DIAG_INFO: PrivateDriverDataSize not 32",
            e(23, 16),
            vec![],
        ),
        (verifier, e(28, 16), vec![]),
        (verifier, e(28, 32), vec![0, 0, 5, 0]),
        (verifier, e(29, 32), vec![1000, 2]),
        (no_core, e(31, 4), vec![1]),
        (no_core, e(36, 64), vec![]),
        (iommu, e(37, 0), vec![]),
        (iommu, e(39, 0), vec![]),
        (unknown, e(7, 16), vec![]),
        (unknown, e(35, 16), vec![]),
        (unknown, e(40, 16), vec![]),
        (unknown, e(1023, 16), vec![]),
    ];
    let mut driven = Vec::new();
    for (what, esc, words) in cases {
        let (r, after) = escape_with(p, esc, &words);
        assert_eq!(r, expected(ESCAPE, what), "{what}: type {}", esc.ty);
        assert!(
            after == escape_data_of(&words),
            "{what}: type {}: nothing written",
            esc.ty
        );
        driven.push(what);
    }
    // What 24H2 answers without the driver.
    for (esc, words) in [
        (e(24, 1), vec![]),
        (e(32, 16), vec![]),
        (e(33, 0x30), vec![0, 0x30]),
        (e(14, 8), vec![0, 1]),
        (
            Escape {
                flags: HW,
                ..e(3, 16)
            },
            vec![3, 10],
        ),
    ] {
        let (r, after) = escape_with(p, esc, &words);
        assert_eq!(r, STATUS_SUCCESS, "type {}", esc.ty);
        assert!(
            after[words.len() * 4..].iter().all(|&b| b == 0x5A),
            "type {}: as captured",
            esc.ty
        );
    }
    let (r, after) = escape_with(p, e(21, 8), &[]);
    assert_eq!(r, STATUS_SUCCESS, "HISTORY_BUFFER_STATUS");
    assert_eq!(
        &after[..8],
        &[0, 0x5A, 0x5A, 0x5A, 0, 0, 0, 0],
        "no history tracing"
    );
    for ty in [37, 39] {
        let (r, after) = escape_with(p, e(ty, 4), &[]);
        assert_eq!(r, STATUS_SUCCESS, "type {ty}");
        assert_eq!(
            &after[..5],
            &[0, 0x5A, 0x5A, 0x5A, 0x5A],
            "type {ty}: no IOMMU"
        );
    }
    driven
}

/// `D3DKMTEscape` through `DxgkEscape`'s own checks in 24H2's order, each refusal leaving the
/// private data as it was; the driver-known BUILDTESTCOMMANDBUFFER escape with the adapter,
/// device and context the harness's Windows backend names passes them, and the driver's
/// command comes back.
#[test]
fn d3dkmt_escape_answers_as_24h2() {
    use rvgpu_simos::dxgkrnl::kmtest::{escape_data, escape_sizes};
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let device = create(&p, adapter);
    let ctx = raw_context_on(&p, device);
    let other = create(&p, adapter);
    let other_ctx = raw_context_on(&p, other);
    let mut data = vec![0x5Au8; 16];
    let ok = Escape {
        adapter,
        device,
        data: data.as_mut_ptr() as u64,
        size: 16,
        context: ctx,
        ..Escape::default()
    };
    let cases: &[(&str, Escape)] = &[
        (
            "Type VIDMM: PrivateDriverDataSize under 0x840",
            Escape { ty: 1, ..ok },
        ),
        (
            "PrivateDriverDataSize over 0x200 and no pool for the kernel copy",
            Escape {
                size: 64 * 1024 + 1,
                ..ok
            },
        ),
        (
            "pPrivateDriverData not readable for PrivateDriverDataSize bytes (copied before \
             any handle is looked at)",
            Escape {
                adapter: 0x1234,
                data: 0x10,
                ..ok
            },
        ),
        (
            "Flags.DriverKnownEscape with a Type other than DRIVERPRIVATE, hAdapter 0 or \
             Flags.HardwareAccess",
            Escape {
                flags: KNOWN,
                ty: 4,
                ..ok
            },
        ),
        (
            "Flags.DriverKnownEscape with a Type other than DRIVERPRIVATE, hAdapter 0 or \
             Flags.HardwareAccess",
            Escape {
                flags: KNOWN,
                adapter: 0,
                ..ok
            },
        ),
        (
            "Flags.DriverKnownEscape with a Type other than DRIVERPRIVATE, hAdapter 0 or \
             Flags.HardwareAccess",
            Escape {
                flags: KNOWN | 1,
                ..ok
            },
        ),
        (
            "hAdapter not an adapter handle in the caller's table, 0 included (the types \
             the kernel answers without an adapter end before this)",
            Escape { adapter: 0, ..ok },
        ),
        (
            "hAdapter not an adapter handle in the caller's table, 0 included (the types \
             the kernel answers without an adapter end before this)",
            Escape {
                adapter: device,
                ..ok
            },
        ),
        (
            "hDevice not 0 and not a device of hAdapter's adapter in the caller's table",
            Escape {
                device: 0x1234,
                ..ok
            },
        ),
        (
            "hDevice not 0 and not a device of hAdapter's adapter in the caller's table",
            Escape {
                device: adapter,
                ..ok
            },
        ),
        (
            "hContext not 0 and not a context of hDevice",
            Escape {
                context: other_ctx,
                ..ok
            },
        ),
        (
            "hContext not 0 and not a context of hDevice",
            Escape { device: 0, ..ok },
        ),
        (
            "an adapter of DDI version 0x5023 or later: Flags.Reserved or Flags bits 8..31 \
             set",
            Escape {
                flags: 1 << 4,
                ..ok
            },
        ),
        (
            "an adapter of DDI version 0x5023 or later: Flags.Reserved or Flags bits 8..31 \
             set",
            Escape {
                flags: 1 << 8,
                ..ok
            },
        ),
        (
            "an adapter of DDI version 0x5023 or later: Flags.VirtualMachineData set",
            Escape {
                flags: 1 << 5,
                ..ok
            },
        ),
        (
            "DRIVERPRIVATE: PrivateDriverDataSize 0 or pPrivateDriverData NULL",
            Escape { size: 0, ..ok },
        ),
        (
            "DRIVERPRIVATE with Flags.DriverCommonEscape",
            Escape {
                flags: 1 << 7,
                ..ok
            },
        ),
    ];
    for (what, e) in cases {
        assert_eq!(e.call(&p), expected(ESCAPE, what), "{what}");
        assert!(data.iter().all(|&b| b == 0x5A), "{what}: nothing written");
    }
    // Past every check, the driver's own DxgkDdiEscape answers: rvgpu's refuses a request it
    // does not know, and a refusal copies nothing back.
    assert_eq!(ok.call(&p), STATUS_INVALID_PARAMETER, "the KMD's answer");
    assert!(
        data.iter().all(|&b| b == 0x5A),
        "a refused escape writes nothing"
    );
    // The known escape as the harness's Windows backend makes it.
    let mut dma = vec![0u8; 4096];
    let mut private = vec![0u8; 64];
    let cmd = rvgpu_ddi::kmtest::D3DDDI_TESTCOMMANDBUFFER::fill(0x10_0000, 64, 1);
    let mut known = escape_data(ctx, false, cmd, &mut dma, &mut private);
    let e = Escape {
        flags: KNOWN,
        data: known.as_mut_ptr() as u64,
        size: known.len() as u32,
        ..ok
    };
    assert_eq!(e.call(&p), STATUS_SUCCESS);
    let (n, _) = escape_sizes(&known).expect("sizes");
    assert!(n > 0 && n <= 4096, "the driver's command: {n} bytes");
    assert!(dma[..n as usize].iter().any(|&b| b != 0), "copied back");
    let untestable = "this suite's machines run test-signed (the driver image needs it)";
    let mut driven: Vec<&str> = cases.iter().map(|(w, _)| *w).collect();
    driven.extend(other_escape_types(&p, adapter, device));
    assert_covers(
        ESCAPE,
        &driven,
        &[
            ("no process context", "every thunk runs in a DLL process"),
            (
                "Type VIDMM, VIDSCH, 28 or 29 without test signing or DRT",
                untestable,
            ),
            (
                "Type DRT_TEST without test signing or DRT (InternalEscapeEnabled)",
                untestable,
            ),
            (
                "Type FORCE_BDDFALLBACK_HEADLESS or SOFTGPU_ENABLE_DISABLE_HMD without test signing",
                untestable,
            ),
            (
                "DRIVERPRIVATE without adapter access (Flags.DriverCommonEscape, \
                 Flags.NoAdapterSynchronization from DDI version 0x5023, or a hybrid discrete \
                 adapter): the adapter not active",
                "driven by um_10_d3dkmtescape_on_a_removed_adapter_is_refused",
            ),
            (
                "the adapter not active: not started, or removed (COREADAPTERACCESS::AcquireShared \
                 reads DXGADAPTER +200)",
                "driven by um_10_d3dkmtescape_on_a_removed_adapter_is_refused",
            ),
            (
                "hDevice not 0 and the device not active (DXGDEVICE +608: stopped with its \
                 adapter; a device VidSch put in error is active)",
                "a DXGDEVICE stops only with its adapter (K:ADAPTER_RENDER::Stop), whose own \
                 check comes first",
            ),
            (
                "Flags.DriverKnownEscape and no render adapter paired with hAdapter",
                "the render-only adapter is its own render adapter",
            ),
            (
                "DRIVERPRIVATE: the driver has no DxgkDdiEscape",
                "rvgpu's KMD implements DxgkDdiEscape",
            ),
            (
                "DRIVERPRIVATE to a vendor 0x1002 adapter without adapter flag 8: \
                 PrivateDriverDataSize under 12, or the third dword, its low byte \
                 cleared, 0x01000C00, 0x01000D00 or 0x01000E00",
                "the adapter is not vendor 0x1002's; driven by \
                 nf_13_a_vendor_1002_adapter_screens_driver_private_escapes_before_the_driver",
            ),
        ],
    );
    machine_ok(&m);
}

/// `D3DKMTIsFeatureEnabled`, which GetProcAddress answers on 24H2 (a Windows before 24H2 answers
/// NULL and the DLL reports STATUS_NOT_SUPPORTED): `hAdapter` 0 asks the global database,
/// which enables nothing here; an adapter handle its feature database (the version the OS
/// negotiated); a handle that is no adapter of the caller is STATUS_INVALID_PARAMETER with
/// `Result` untouched.
#[test]
fn d3dkmt_is_feature_enabled_answers_as_24h2() {
    use rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING as KMT;
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let ask = |h: u32| {
        let mut s = [h, KMT as u32, UNTOUCHED];
        let r = thunk(&p, FEATURE, s.as_mut_ptr() as u64);
        (r, s[2])
    };
    let known = 1 << 17;
    assert_eq!(ask(0), (STATUS_SUCCESS, known), "the global database");
    let version = m.feature_db(0).version(KMT).expect("negotiated");
    assert_eq!(
        ask(adapter),
        (STATUS_SUCCESS, known | (1 << 16) | u32::from(version)),
        "the adapter's database"
    );
    let what = "hAdapter not 0 and not an adapter handle in the caller's table";
    let device = create(&p, adapter);
    for h in [0x1234, device] {
        assert_eq!(ask(h), (expected(FEATURE, what), UNTOUCHED), "{what}");
    }
    assert_ne!(expected(FEATURE, what), NOT_SUPPORTED);
    assert_covers(
        FEATURE,
        &[what],
        &[
            (
                "hAdapter not 0: no process context",
                "every thunk runs in a DLL process",
            ),
            (
                "the paired render adapter's device extension without the port's 'Dprt' \
                 signature or of another version than 2",
                "the simulated port's device extension is the port's own",
            ),
        ],
    );
    machine_ok(&m);
}

/// `D3DKMTDestroyDevice` in 24H2's order: the device's contexts go before its allocations,
/// then the device; without the process exit's flush (the device is not put in error, its
/// contexts not suspended). The pages' reading destroys it as a normal exit does (allocations
/// before contexts).
#[test]
fn d3dkmt_destroy_device_destroys_in_24h2_order_without_the_exit_flush() {
    use rvgpu_simos::machine::answers::Teardown;
    use rvgpu_simos::UmsEvent;
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let h = create(&p, adapter);
    let ctx = raw_context_on(&p, h);
    let d = sim(&p, h);
    let buf = okk(&m, m.kmt(&d).create_allocation(4096));
    let before = m.ums_events(0).len();
    assert_eq!(one_handle(&p, DESTROY, h), STATUS_SUCCESS);
    drop(buf);
    let after = m.ums_events(0);
    let at = |f: &dyn Fn(&UmsEvent) -> bool| after[before..].iter().position(f);
    let context = at(&|e| matches!(e, UmsEvent::DestroyContext { context } if *context == ctx));
    let freed = at(&|e| matches!(e, UmsEvent::FreeAllocation { .. }));
    let gone = at(&|e| matches!(e, UmsEvent::DestroyDevice { device } if *device == h));
    let (context, freed, gone) = (
        context.expect("context"),
        freed.expect("allocation"),
        gone.expect("device"),
    );
    assert!(context < gone && freed < gone, "the device last");
    if m.os_config().windows.reading().teardown == Teardown::AllocationsFirst {
        assert!(
            context < freed,
            "24H2: contexts before the device's allocations"
        );
    } else {
        assert!(freed < context, "the pages: the exit's order");
    }
    assert!(
        !after[before..].iter().any(|e| matches!(
            e,
            UmsEvent::DeviceError { .. } | UmsEvent::SuspendContext { .. }
        )),
        "no flush: {:?}",
        &after[before..]
    );
    machine_ok(&m);
}

const STATE: &str = "D3DKMTGetDeviceState";

/// `D3DKMTGetDeviceState` of `device` with `StateType` `ty`, the union's words set to a
/// pattern: (status, the structure after as dwords).
fn state_raw(p: &Arc<UserProcess>, device: u32, ty: u32) -> (u64, [u32; 14]) {
    let mut s = [UNTOUCHED; 14];
    s[0] = device;
    s[1] = ty;
    let r = thunk(p, STATE, s.as_mut_ptr() as u64);
    (r, s)
}

/// `D3DKMTGetDeviceState` as 24H2 answers it, table-driven: a state type out of range or a
/// handle that is no device of the caller is STATUS_INVALID_PARAMETER with nothing written;
/// RESET looks no device up and writes `ResetState` alone (no desktop switch: 0); EXECUTION
/// copies the whole structure back with `ExecutionState` ACTIVE for a live device and HUNG
/// for the device whose DMA buffer hung the engine (VidSch's reason 7), while the other
/// device of the process stays ACTIVE (UM-10). The present family on a render-only adapter:
/// PRESENT and PRESENT_DWM find no display adapter, PRESENT_QUEUE no VidPn source
/// (STATUS_INVALID_PARAMETER), PAGE_FAULT answers VidSch's record; once the adapter is removed
/// its devices are STOPPED and the present family STATUS_DEVICE_REMOVED.
#[test]
fn d3dkmt_get_device_state_answers_as_24h2() {
    const EXECUTION: u32 = 1;
    const PRESENT: u32 = 2;
    const RESET: u32 = 3;
    const PRESENT_DWM: u32 = 4;
    const PAGE_FAULT: u32 = 5;
    const QUEUE: u32 = 6;
    const ACTIVE: u32 = 1;
    const HUNG: u32 = 3;
    const STOPPED: u32 = 4;
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
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open(&p);
    let (guilty, innocent) = (create(&p, adapter), create(&p, adapter));
    let bad_type = "StateType 0, or above PRESENT_QUEUE (7 and up)";
    let no_device = "StateType not RESET and hDevice not a device handle in the caller's table";
    let refusals: &[(u32, u32, &str)] = &[
        (guilty, 0, bad_type),
        (guilty, 7, bad_type),
        (guilty, 0xFFFF_FFFF, bad_type),
        (0, EXECUTION, no_device),
        (0x1234, EXECUTION, no_device),
        (adapter, EXECUTION, no_device),
    ];
    for &(h, ty, what) in refusals {
        let (r, s) = state_raw(&p, h, ty);
        assert_eq!(
            r,
            expected(STATE, what),
            "{what}: hDevice {h:#x}, type {ty}"
        );
        assert!(
            s[2..].iter().all(|&w| w == UNTOUCHED),
            "{what}: nothing written"
        );
    }
    // RESET: no device looked up, ResetState alone written.
    for h in [0, 0x1234, guilty] {
        let (r, s) = state_raw(&p, h, RESET);
        assert_eq!((r, s[2]), (STATUS_SUCCESS, 0), "RESET, hDevice {h:#x}");
        assert!(s[3..].iter().all(|&w| w == UNTOUCHED), "ResetState alone");
    }
    let execution = |h: u32| {
        let (r, s) = state_raw(&p, h, EXECUTION);
        assert_eq!(r, STATUS_SUCCESS, "EXECUTION of {h:#x}");
        assert_eq!(&s[..2], &[h, EXECUTION], "the structure copied back");
        assert!(s[3..].iter().all(|&w| w == UNTOUCHED), "as captured");
        s[2]
    };
    assert_eq!((execution(guilty), execution(innocent)), (ACTIVE, ACTIVE));
    let d = sim(&p, guilty);
    let ctx = okk(&m, m.kmt(&d).create_context(0));
    ok(&m, m.submit_legacy(&d, ctx, &[Command::Hang]));
    let until = Instant::now() + Duration::from_secs(60);
    while m.tdr_counts(0).0 < 1 {
        assert!(Instant::now() < until, "engine reset");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(execution(guilty), HUNG, "the guilty device");
    assert_eq!(execution(innocent), ACTIVE, "the other device");
    // The present family on a render-only adapter's devices, the guilty one's included (its
    // DXGDEVICE stays active in VidSch's error).
    let no_display = "StateType PRESENT or PRESENT_DWM: the device has no display adapter (a \
                      render-only adapter's device)";
    let no_source = "StateType PRESENT_QUEUE: PresentState.VidPnSourceId not below the adapter's \
                     source count (M:VidSchWaitForQueuedPresentLimit @0x1400F0C50; none on a \
                     render-only adapter)";
    for h in [guilty, innocent] {
        for (ty, what) in [
            (PRESENT, no_display),
            (PRESENT_DWM, no_display),
            (QUEUE, no_source),
        ] {
            let (r, s) = state_raw(&p, h, ty);
            assert_eq!(r, expected(STATE, what), "{what}: type {ty}");
            assert!(
                s[2..].iter().all(|&w| w == UNTOUCHED),
                "{what}: nothing written"
            );
        }
        // PAGE_FAULT: VidSch's record (none kept: zeros), the rest as captured.
        let (r, s) = state_raw(&p, h, PAGE_FAULT);
        assert_eq!(r, STATUS_SUCCESS, "PAGE_FAULT of {h:#x}");
        assert_eq!(&s[..2], &[h, PAGE_FAULT]);
        assert_eq!(&s[2..10], &[0; 8], "PageFaultState");
        assert!(s[10..].iter().all(|&w| w == UNTOUCHED), "as captured");
    }
    assert_eq!(
        m.kmt(&d).device_execution_state(),
        Ok(rvgpu_umd::kmt::DeviceExecutionState::HUNG),
        "SimKmt through the same entry"
    );
    assert_eq!(one_handle(&p, DESTROY, guilty), STATUS_SUCCESS);
    let (r, _) = state_raw(&p, guilty, EXECUTION);
    assert_eq!(r, expected(STATE, no_device), "a destroyed device");
    // The adapter removed: its devices are stopped with it (`K:DXGDEVICE::Stop`).
    ok(&m, m.device_removed(0));
    assert_eq!(execution(innocent), STOPPED, "a removed adapter's device");
    let gone_adapter = "StateType PRESENT or PRESENT_DWM on an adapter not active";
    let gone_device = "StateType PAGE_FAULT or PRESENT_QUEUE on a device not active (stopped with \
                       its adapter)";
    for (ty, what) in [
        (PRESENT, gone_adapter),
        (PRESENT_DWM, gone_adapter),
        (PAGE_FAULT, gone_device),
        (QUEUE, gone_device),
    ] {
        let (r, s) = state_raw(&p, innocent, ty);
        assert_eq!(r, expected(STATE, what), "{what}: type {ty}");
        assert!(
            s[2..].iter().all(|&w| w == UNTOUCHED),
            "{what}: nothing written"
        );
    }
    assert_covers(
        STATE,
        &[
            bad_type,
            no_device,
            no_display,
            no_source,
            gone_adapter,
            gone_device,
        ],
        &[
            ("no process context", "every thunk runs in a DLL process"),
            (
                "StateType PRESENT or PRESENT_DWM: PresentState.VidPnSourceId not below the \
                 device's display adapter's source count",
                "a render-only adapter's devices have no display adapter",
            ),
            (
                "StateType PRESENT_QUEUE: the device in error (M:VidSchWaitForQueuedPresentLimit)",
                "the source check before it refuses every VidPnSourceId on a render-only adapter",
            ),
        ],
    );
    drop(p);
    assert!(m.bugcheck().is_none(), "{:?}", m.bugcheck());
}

/// A caller with no adapter open, no process on any adapter and no handle left.
struct FullTable;

impl rvgpu_simos::kmt::adapter::AdapterTable for FullTable {
    fn adapter(&self, _: rvgpu_umd::kmt::KmtHandle) -> Option<usize> {
        None
    }
    fn process(&self, _: usize) -> Option<rvgpu_simos::ProcessId> {
        None
    }
    fn open(&self, _: usize) -> Result<rvgpu_umd::kmt::KmtHandle, rvgpu_umd::kmt::NtStatus> {
        Err(rvgpu_umd::kmt::NtStatus(
            rvgpu_ddi::ntstatus::STATUS_NO_MEMORY,
        ))
    }
    fn close(&self, _: rvgpu_umd::kmt::KmtHandle) -> bool {
        false
    }
}

/// UM-17: a started adapter's LUID with a full handle table is the table's STATUS_NO_MEMORY
/// and `hAdapter` 0 whatever the caller left there; an unknown LUID is refused before the
/// adapter is looked at and leaves `hAdapter` as it was.
#[test]
fn um_17_open_adapter_from_luid_with_a_full_handle_table_writes_back_the_zero_handle() {
    let m = machine_with(rvgpu_simos::Mode::Step, |_| {});
    let mut a = rvgpu_ddi::d3dkmt::D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: rvgpu_simos::adapter::adapter_luid(0),
        hAdapter: 0x7777,
    };
    let r = rvgpu_simos::kmt::adapter::dxgk_open_adapter_from_luid_impl(&m, &mut a, &FullTable);
    assert_eq!(
        r,
        Err(rvgpu_umd::kmt::NtStatus(
            rvgpu_ddi::ntstatus::STATUS_NO_MEMORY
        ))
    );
    assert_eq!({ a.hAdapter }, 0, "the zero handle goes back");

    let mut unknown = rvgpu_ddi::d3dkmt::D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: rvgpu_simos::adapter::adapter_luid(9),
        hAdapter: 0x7777,
    };
    let r =
        rvgpu_simos::kmt::adapter::dxgk_open_adapter_from_luid_impl(&m, &mut unknown, &FullTable);
    assert_eq!(
        r,
        Err(rvgpu_umd::kmt::NtStatus(
            rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER
        ))
    );
    assert_eq!({ unknown.hAdapter }, 0x7777, "nothing goes back");
    no_fault(&m);
}
