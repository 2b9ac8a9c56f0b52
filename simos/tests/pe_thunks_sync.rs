//! The sync-object thunks the shipped `rvgpu_umd.dll` calls, called raw in the DLL's own process
//! as 24H2 answers them, table-driven from the thunk catalog (`rvgpu_simos::kmt::catalog`):
//! `D3DKMTOpenNativeFenceFromNtHandle`, `D3DKMTShareObjects`,
//! `D3DKMTSignalSynchronizationObjectFromCpu`, `D3DKMTWaitForSynchronizationObjectFromCpu`,
//! `D3DKMTDestroySynchronizationObject` and the hardware-queue wait and signal thunks. Each refusal is labelled with its catalog check and
//! answers the catalog's status; a refusal writes nothing back and changes nothing.

mod common;

use std::sync::Arc;

use common::conformance::{assert_covers, expected};
use common::dll::*;
use common::pe::{pe_machine, umd};
use rvgpu_simos::machine::answers::OpenFencePdd;
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::Machine;
use rvgpu_umd::kmt::Kmt as _;

/// An address nothing is mapped at in the DLL's process.
const UNMAPPED: u64 = 0x10;
/// A handle no table of the process holds.
const NEVER_GIVEN: u32 = 0x7777_7777;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`: `Shared | NtSecuritySharing`, `NoSignal`, `NoWait`.
const SHAREABLE: u32 = 0x3;
const NO_SIGNAL: u32 = 1 << 4;
const NO_WAIT: u32 = 1 << 5;
/// More objects than the simulated pool gives one call (`sync_from_cpu::MAX_OBJECTS` + 1).
const TOO_MANY: u32 = rvgpu_simos::kmt::sync_from_cpu::MAX_OBJECTS + 1;

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn get64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A native fence on `device` through `D3DKMTCreateNativeFence` with `Info.Flags` `flags`: its
/// D3DKMT handle and its private driver data.
fn native_fence(p: &Arc<UserProcess>, device: u32, flags: u32) -> (u32, [u8; 64]) {
    let mut f = [0u8; 216];
    put32(&mut f, 0, device);
    put32(&mut f, 88, flags);
    assert_eq!(
        thunk(p, "D3DKMTCreateNativeFence", f.as_mut_ptr() as u64),
        STATUS_SUCCESS,
        "Info.Flags {flags:#x}"
    );
    let mut pdd = [0u8; 64];
    pdd.copy_from_slice(&f[8..72]);
    (get32(&f, 4), pdd)
}

/// An `OBJECT_ATTRIBUTES` that names nothing (48 bytes, `Length` first).
fn attributes() -> [u64; 6] {
    [48, 0, 0, 0, 0, 0]
}

/// `D3DKMTShareObjects(count, handles, attributes, GENERIC_ALL, out)`: its status.
fn share(p: &Arc<UserProcess>, count: u64, handles: u64, attrs: u64, out: &mut u64) -> u64 {
    const GENERIC_ALL: u64 = 0x1000_0000;
    share_with(p, [count, handles, attrs, GENERIC_ALL], out)
}

/// `D3DKMTShareObjects(count, handles, attributes, access, out)`: its status.
fn share_with(p: &Arc<UserProcess>, a: [u64; 4], out: &mut u64) -> u64 {
    let r = p.call_import("D3DKMTShareObjects", &[a[0], a[1], a[2], a[3], addr(out)]);
    r.expect("D3DKMTShareObjects") as u32 as u64
}

/// The shared sync object's wait and signal rights and `READ_CONTROL` (`dwDesiredAccess`).
const WAIT: u64 = 0x1;
const SIGNAL: u64 = 0x2;
const READ_CONTROL: u64 = 0x2_0000;

/// A second device of `p` on adapter 0 (`D3DKMTOpenAdapterFromLuid`, `D3DKMTCreateDevice`).
fn second_device(p: &Arc<UserProcess>) -> u32 {
    let mut open = [0u32; 3];
    open[0] = LUID_LOW as u32;
    assert_eq!(
        thunk(p, "D3DKMTOpenAdapterFromLuid", open.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    let mut c = [0u32; 16];
    c[0] = open[2];
    assert_eq!(
        thunk(p, "D3DKMTCreateDevice", c.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    c[3]
}

/// Fence `h`'s CurrentValue as the OS holds it.
fn current(m: &Machine, h: u32) -> u64 {
    m.native_fence_by_kmt(0, h)
        .expect("a live fence")
        .current_value()
}

/// NF-13: `D3DKMTOpenNativeFenceFromNtHandle` refuses what 24H2's
/// `NtDxgkOpenNativeFenceFromNtHandleInternal` refuses, each with the catalog's status, and then
/// leaves the caller's 176 bytes as they were. The open writes back the new handle, this
/// process's mapping, `Flags` without the `NoSignal` and `NoWait` it asked for (the NT handle
/// grants both signal and wait) and the rest as written.
#[test]
fn nf_13_d3dkmtopennativefencefromnthandle_answers_as_24h2() {
    const T: &str = "D3DKMTOpenNativeFenceFromNtHandle";
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let (fence, pdd) = native_fence(&p, device, SHAREABLE);
    let list = [fence];
    let attrs = attributes();
    let mut nt = 0u64;
    let at = attrs.as_ptr() as u64;
    assert_eq!(share(&p, 1, list.as_ptr() as u64, at, &mut nt), 0);
    let open = |edit: &dyn Fn(&mut [u8; 176])| {
        let mut o = [0u8; 176];
        put64(&mut o, 0, nt);
        put32(&mut o, 8, device);
        put64(&mut o, 48, 0x5A5A); // the mapping's ReservedInt: not checked, copied back
        edit(&mut o);
        o
    };
    type Edit = Box<dyn Fn(&mut [u8; 176])>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "a Flags bit of 0x7FFFF800",
            Box::new(|o| put32(o, 16, 1 << 11)),
        ),
        ("a non-zero byte of Reserved", Box::new(|o| o[175] = 1)),
        (
            "hDevice not in the caller's handle table",
            Box::new(|o| put32(o, 8, NEVER_GIVEN)),
        ),
        (
            "hNtHandle not a handle of the caller's process",
            Box::new(|o| put64(o, 0, 0x9999_0000)),
        ),
        (
            "Flags.NoGPUAccess other than at the fence's creation",
            Box::new(|o| put32(o, 16, 1 << 7)),
        ),
    ];
    let mut driven = vec!["the structure not readable"];
    assert_eq!(
        thunk(&p, T, UNMAPPED),
        expected(T, "the structure not readable")
    );
    // A handle made without READ_CONTROL (dwDesiredAccess honoured): refused, nothing written.
    let mut bare = 0u64;
    let handles = list.as_ptr() as u64;
    assert_eq!(
        share_with(&p, [1, handles, at, WAIT | SIGNAL], &mut bare),
        0
    );
    let what = "hNtHandle without READ_CONTROL access";
    let mut o = open(&|o| put64(o, 0, bare));
    let before = o;
    assert_eq!(thunk(&p, T, o.as_mut_ptr() as u64), expected(T, what));
    assert_eq!(o, before, "{what}: written on a refusal");
    driven.push(what);
    // A handle that grants waiting only: the open says NoSignal, whatever was asked.
    let mut wait_only = 0u64;
    assert_eq!(
        share_with(&p, [1, handles, at, READ_CONTROL | WAIT], &mut wait_only),
        0
    );
    let mut o = open(&|o| put64(o, 0, wait_only));
    assert_eq!(thunk(&p, T, o.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_eq!(
        get32(&o, 16),
        NO_SIGNAL,
        "Flags: the handle withholds signal"
    );
    for (what, edit) in &cases {
        let mut o = open(edit.as_ref());
        let before = o;
        assert_eq!(
            thunk(&p, T, o.as_mut_ptr() as u64),
            expected(T, what),
            "{what}"
        );
        assert_eq!(o, before, "{what}: written on a refusal");
        driven.push(what);
    }
    // Private data of the caller's own: 24H2 copies it back untouched.
    let mut o = open(&|o| {
        put32(o, 16, NO_SIGNAL | NO_WAIT);
        o[80..144].fill(0xA5);
    });
    let before = o;
    assert_eq!(thunk(&p, T, o.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_ne!(get32(&o, 20), 0, "hSyncObject");
    assert_eq!(
        get32(&o, 16),
        0,
        "Flags: the handle's access clears NoSignal and NoWait"
    );
    assert_ne!(get64(&o, 32), 0, "CurrentValueGpuVa");
    assert_ne!(get64(&o, 40), 0, "MonitoredValueGpuVa");
    assert_eq!(
        o[..16],
        before[..16],
        "hNtHandle, hDevice, EngineAffinity as written"
    );
    assert_eq!(o[48..80], before[48..80], "ReservedInt as written");
    let reading = *rvgpu_simos::Windows::from_env().reading();
    let private = match reading.open_fence_pdd {
        OpenFencePdd::CallersBytes => before[80..144].to_vec(),
        // The KMD writes no private data at DxgkDdiOpenNativeFence.
        OpenFencePdd::DriversOpen => vec![0; 64],
    };
    assert_eq!(
        o[80..144],
        private[..],
        "PrivateDriverData ({})",
        reading.name
    );
    assert_ne!(o[80..144], pdd, "never the creator's private data");
    assert_eq!(o[144..], before[144..], "Reserved as written");
    assert_covers(
        T,
        &driven,
        &[
            (
                "the adapter without native fences",
                "every adapter the DLL's suites start advertises native fences",
            ),
            (
                "hNtHandle a handle to an object of another type",
                "the simulated object manager holds only native fences",
            ),
            (
                "the object neither a monitored nor a native fence",
                "the simulated object manager holds only native fences",
            ),
            (
                "no pool for the device's instance",
                "pool exhaustion: no caller can cause it",
            ),
        ],
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// NF-05: `D3DKMTShareObjects` refuses what 24H2's `DxgkShareObjectsInternal` refuses, NULL
/// object attributes included, and writes no handle then; one native fence with attributes that
/// name nothing is shared.
#[test]
fn nf_05_d3dkmtshareobjects_answers_as_24h2() {
    const T: &str = "D3DKMTShareObjects";
    const UNTOUCHED: u64 = 0xDEAD;
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let (fence, _) = native_fence(&p, device, SHAREABLE);
    let attrs = attributes();
    let at = attrs.as_ptr() as u64;
    let one = [fence, fence];
    let zero = [0u32];
    let never = [NEVER_GIVEN];
    let list = one.as_ptr() as u64;
    let (private, _) = native_fence(&p, device, 0);
    let private = [private];
    let misaligned = at + 4;
    let short = [47u64, 0, 0, 0, 0, 0];
    let attribute = [48u64, 0, 0, 1, 0, 0];
    let rooted = [48u64, 0x40, 0, 0, 0, 0];
    let cases: [(&str, u64, u64, u64); 13] = [
        ("cObjects 0 or above 3", 0, list, at),
        ("cObjects 0 or above 3", 4, list, at),
        ("hObjects not readable", 1, UNMAPPED, at),
        ("pObjectAttributes NULL", 1, list, 0),
        ("hObjects[0] 0", 1, zero.as_ptr() as u64, at),
        ("a sync object with cObjects other than 1", 2, list, at),
        (
            "hObjects[0] neither a resource, a sync object nor a protected session of the caller's",
            1,
            never.as_ptr() as u64,
            at,
        ),
        (
            "a sync object made without NtSecuritySharing",
            1,
            private.as_ptr() as u64,
            at,
        ),
        ("pObjectAttributes not 8-byte aligned", 1, list, misaligned),
        ("pObjectAttributes not readable", 1, list, UNMAPPED),
        ("Length not 48", 1, list, short.as_ptr() as u64),
        (
            "an Attributes bit of 0xFFFEE00D",
            1,
            list,
            attribute.as_ptr() as u64,
        ),
        (
            "RootDirectory without ObjectName",
            1,
            list,
            rooted.as_ptr() as u64,
        ),
    ];
    let pid = p.devices()[0].pid;
    let held = m.nt_handle_count(pid);
    let mut driven = Vec::new();
    for (what, count, handles, attrs) in cases {
        let mut nt = UNTOUCHED;
        assert_eq!(
            share(&p, count, handles, attrs, &mut nt),
            expected(T, what),
            "{what}"
        );
        assert_eq!(nt, UNTOUCHED, "{what}: a handle written on a refusal");
        driven.push(what);
    }
    // The output on a read-only page: the handle made is closed again.
    let what = "phSharedNtHandle not writable (the new handle is closed again)";
    let out = read_only(&[UNTOUCHED]);
    let r = p.call_import("D3DKMTShareObjects", &[1, list, at, 0x1000_0000, out]);
    assert_eq!(r.expect(T) as u32 as u64, expected(T, what), "{what}");
    driven.push(what);
    assert_eq!(m.nt_handle_count(pid), held, "a refusal leaves a handle");
    let mut nt = UNTOUCHED;
    assert_eq!(share(&p, 1, list, at, &mut nt), STATUS_SUCCESS);
    assert!(nt != UNTOUCHED && nt != 0, "{nt:#x}");
    assert_eq!(m.nt_handle_count(pid), held + 1);
    assert_covers(T, &driven, &[]);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// NF-05, an attacker's `D3DKMTShareObjects`: another process names this one's shareable
/// fence (the handle is not in its table) and is refused with no NT handle made in either
/// table; the owner still shares it.
#[test]
fn nf_05_d3dkmtshareobjects_shares_nothing_to_another_process() {
    const T: &str = "D3DKMTShareObjects";
    let m = pe_machine();
    let a = UserProcess::new(m.clone(), umd());
    open_queue(&a);
    let device = a.devices()[0].device;
    let (fence, _) = native_fence(&a, device, SHAREABLE);
    let b = UserProcess::new(m.clone(), umd());
    open_queue(&b);
    let (pa, pb) = (a.devices()[0].pid, b.devices()[0].pid);
    let (ha, hb) = (m.nt_handle_count(pa), m.nt_handle_count(pb));
    let attrs = attributes();
    let theirs = [fence];
    let mut nt = 0xDEAD;
    assert_eq!(
        share(
            &b,
            1,
            theirs.as_ptr() as u64,
            attrs.as_ptr() as u64,
            &mut nt
        ),
        expected(
            T,
            "hObjects[0] neither a resource, a sync object nor a protected session of the caller's"
        )
    );
    assert_eq!(nt, 0xDEAD);
    assert_eq!((m.nt_handle_count(pa), m.nt_handle_count(pb)), (ha, hb));
    assert_eq!(
        share(
            &a,
            1,
            theirs.as_ptr() as u64,
            attrs.as_ptr() as u64,
            &mut nt
        ),
        STATUS_SUCCESS
    );
    assert_eq!(m.nt_handle_count(pa), ha + 1);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// A `D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU` or `..._WAITFOR...` (both start alike):
/// `hDevice`, `ObjectCount`, the two arrays; `Flags` at 24 (signal) or 32 (wait).
fn from_cpu(device: u32, count: u32, handles: u64, values: u64) -> [u64; 5] {
    [
        u64::from(device) | (u64::from(count) << 32),
        handles,
        values,
        0,
        0,
    ]
}

/// The objects of a CPU signal or wait suite: a process with two devices, on the first a
/// fence, one created `flags`, and on the second one more.
struct Objects {
    m: Arc<Machine>,
    p: Arc<UserProcess>,
    device: u32,
    fence: u32,
    refused: u32,
    other: u32,
}

fn objects(flags: u32) -> Objects {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let (fence, _) = native_fence(&p, device, 0);
    let (refused, _) = native_fence(&p, device, flags);
    let second = second_device(&p);
    let (other, _) = native_fence(&p, second, 0);
    Objects {
        m,
        p,
        device,
        fence,
        refused,
        other,
    }
}

/// NF-17: `D3DKMTSignalSynchronizationObjectFromCpu` refuses what 24H2's
/// `DxgkSignalSynchronizationObjectFromCpu` refuses, each with the catalog's status, and
/// signals nothing then (not even the objects before the refused one); accepted, every object
/// reaches its value.
#[test]
fn nf_17_d3dkmtsignalsynchronizationobjectfromcpu_answers_as_24h2() {
    const T: &str = "D3DKMTSignalSynchronizationObjectFromCpu";
    let o = objects(NO_SIGNAL);
    let (p, f) = (&o.p, o.fence);
    let values = [5u64, 6];
    let vals = values.as_ptr() as u64;
    let arrays = |h: [u32; 2]| h;
    let with = [
        ("ObjectCount 0", arrays([f, f]), 0, o.device, 0u32),
        (
            "no pool for ObjectCount handles and values",
            arrays([f, f]),
            TOO_MANY,
            o.device,
            0,
        ),
        (
            "hDevice not in the caller's handle table",
            arrays([f, f]),
            1,
            NEVER_GIVEN,
            0,
        ),
        ("a Flags bit from 3 up", arrays([f, f]), 1, o.device, 1 << 3),
        (
            "a handle not a sync object in the caller's handle table",
            arrays([f, NEVER_GIVEN]),
            2,
            o.device,
            0,
        ),
        (
            "an object created or opened NoSignal",
            arrays([f, o.refused]),
            2,
            o.device,
            0,
        ),
        (
            "an object of another device",
            arrays([f, o.other]),
            2,
            o.device,
            0,
        ),
        ("the same object twice", arrays([f, f]), 2, o.device, 0),
    ];
    let mut driven = vec![
        "the structure not readable",
        "ObjectHandleArray or FenceValueArray not readable",
    ];
    assert_eq!(
        thunk(p, T, UNMAPPED),
        expected(T, "the structure not readable")
    );
    let mut s = from_cpu(o.device, 1, UNMAPPED, vals);
    assert_eq!(
        thunk(p, T, s.as_mut_ptr() as u64),
        expected(T, "ObjectHandleArray or FenceValueArray not readable")
    );
    for (what, handles, count, device, flags) in with {
        let mut s = from_cpu(device, count, handles.as_ptr() as u64, vals);
        s[3] = u64::from(flags);
        assert_eq!(
            thunk(p, T, s.as_mut_ptr() as u64),
            expected(T, what),
            "{what}"
        );
        assert_eq!(current(&o.m, f), 0, "{what}: signalled on a refusal");
        driven.push(what);
    }
    let both = [f, o.other];
    let mut s = from_cpu(o.device, 1, both.as_ptr() as u64, vals);
    assert_eq!(thunk(p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_eq!(current(&o.m, f), 5);
    assert_eq!(current(&o.m, o.other), 0, "only ObjectCount objects");
    assert_covers(
        T,
        &driven,
        &[
            (
                "an object whose adapter state is destroyed",
                "an object's adapter state goes only with its adapter, which no DLL suite stops",
            ),
            (
                "without Flags.AllowFenceRewind, a monitored fence's value below the last one \
                 signalled to it (M:VidSchiSignalSyncObjectsFromCpu)",
                "driven by mf_01_a_cpu_signal_below_the_last_one_is_refused",
            ),
        ],
    );
    assert!(o.m.fault().is_none(), "{:?}", o.m.fault());
}

/// MF-04: `D3DKMTWaitForSynchronizationObjectFromCpu` refuses what 24H2's
/// `DxgkWaitForSynchronizationObjectFromCpuInternal` refuses, each with the catalog's status,
/// and registers no wait then (the event stays unsignalled); accepted, a wait already satisfied
/// returns at once, blocking or with the event, which is then signalled.
#[test]
fn mf_04_d3dkmtwaitforsynchronizationobjectfromcpu_answers_as_24h2() {
    const T: &str = "D3DKMTWaitForSynchronizationObjectFromCpu";
    let o = objects(NO_WAIT);
    let (p, f) = (&o.p, o.fence);
    let event = p
        .call_import("CreateEventW", &[0, 1, 0, 0])
        .expect("CreateEventW");
    assert_ne!(event, 0);
    let values = [0u64, 0];
    let vals = values.as_ptr() as u64;
    let with = [
        ("ObjectCount 0", [f, f], 0, o.device, 0, 0),
        ("a Flags bit other than WaitAny", [f, f], 1, o.device, 0, 2),
        (
            "no pool for ObjectCount handles and values",
            [f, f],
            TOO_MANY,
            o.device,
            0,
            0,
        ),
        (
            "hDevice not in the caller's handle table",
            [f, f],
            1,
            NEVER_GIVEN,
            0,
            0,
        ),
        (
            "hAsyncEvent not an event handle of the caller's process",
            [f, f],
            1,
            o.device,
            0x5555_0000,
            0,
        ),
        (
            "a handle not a sync object in the caller's handle table",
            [f, NEVER_GIVEN],
            2,
            o.device,
            event,
            0,
        ),
        (
            "an object created or opened NoWait",
            [f, o.refused],
            2,
            o.device,
            event,
            0,
        ),
        (
            "an object of another device",
            [f, o.other],
            2,
            o.device,
            event,
            0,
        ),
    ];
    let mut driven = vec![
        "the structure not readable",
        "ObjectHandleArray or FenceValueArray not readable",
    ];
    assert_eq!(
        thunk(p, T, UNMAPPED),
        expected(T, "the structure not readable")
    );
    let mut s = from_cpu(o.device, 1, [f].as_ptr() as u64, UNMAPPED);
    assert_eq!(
        thunk(p, T, s.as_mut_ptr() as u64),
        expected(T, "ObjectHandleArray or FenceValueArray not readable")
    );
    const WAIT_OBJECT_0: u64 = 0;
    const WAIT_TIMEOUT: u64 = 0x102;
    let signalled = |ms: u64| {
        p.call_import("WaitForSingleObject", &[event, ms])
            .expect("WaitForSingleObject")
            & 0xFFFF_FFFF
    };
    for (what, handles, count, device, ev, flags) in with {
        let mut s = from_cpu(device, count, handles.as_ptr() as u64, vals);
        s[3] = ev;
        s[4] = flags;
        assert_eq!(
            thunk(p, T, s.as_mut_ptr() as u64),
            expected(T, what),
            "{what}"
        );
        assert_eq!(signalled(0), WAIT_TIMEOUT, "{what}: a wait registered");
        driven.push(what);
    }
    let one = [f];
    let mut s = from_cpu(o.device, 1, one.as_ptr() as u64, vals);
    assert_eq!(
        thunk(p, T, s.as_mut_ptr() as u64),
        STATUS_SUCCESS,
        "blocking"
    );
    s[3] = event;
    assert_eq!(thunk(p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS, "event");
    assert_eq!(
        signalled(1000),
        WAIT_OBJECT_0,
        "the event of a satisfied wait"
    );
    assert_covers(
        T,
        &driven,
        &[
            (
                "the device not active",
                "the DLL's device is active until its process ends, and its handle with it",
            ),
            (
                "an object whose adapter state is destroyed",
                "an object's adapter state goes only with its adapter, which no DLL suite stops",
            ),
        ],
    );
    assert!(o.m.fault().is_none(), "{:?}", o.m.fault());
}

/// NF-13: `D3DKMTDestroySynchronizationObject` refuses a handle that names no sync object of
/// the caller (never given, or destroyed before) and the fence the OS made for a paging queue
/// with 24H2's statuses, and destroys the fence once.
#[test]
fn nf_13_d3dkmtdestroysynchronizationobject_answers_as_24h2() {
    const T: &str = "D3DKMTDestroySynchronizationObject";
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let (fence, _) = native_fence(&p, device, 0);
    let unknown =
        "hSyncObject neither a device nor a global sync object in the caller's handle table";
    assert_eq!(
        thunk(&p, T, UNMAPPED),
        expected(T, "the structure not readable")
    );
    let mut never = [NEVER_GIVEN, 0];
    assert_eq!(
        thunk(&p, T, never.as_mut_ptr() as u64),
        expected(T, unknown)
    );
    // A paging queue's fence is the OS's (its destroy goes with the queue's).
    let refused = "hSyncObject a device sync object its flags mark not the caller's to destroy";
    let mut pq = [0u32; 8];
    pq[0] = device;
    assert_eq!(
        thunk(&p, "D3DKMTCreatePagingQueue", pq.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    let mut d = [pq[3], 0];
    assert_eq!(
        thunk(&p, T, d.as_mut_ptr() as u64),
        expected(T, refused),
        "{refused}"
    );
    let mut q = [pq[2], 0];
    assert_eq!(
        thunk(&p, "D3DKMTDestroyPagingQueue", q.as_mut_ptr() as u64),
        STATUS_SUCCESS,
        "the queue and its fence go together"
    );
    let mut d = [fence, 0];
    assert_eq!(thunk(&p, T, d.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert!(m.native_fence_by_kmt(0, fence).is_none(), "destroyed");
    assert_eq!(
        thunk(&p, T, d.as_mut_ptr() as u64),
        expected(T, unknown),
        "destroyed before"
    );
    assert_covers(T, &["the structure not readable", refused, unknown], &[]);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// MF-01: the OS makes a paging queue's fence `NoSignal` (`K:DXGPAGINGQUEUE::Initialize`
/// @0x140396FF0): a CPU signal of it is refused with the catalog's status, from the DLL's
/// process and from the Rust UMD's, while a CPU wait on it is answered.
#[test]
fn mf_01_a_paging_queue_s_fence_refuses_a_cpu_signal() {
    const T: &str = "D3DKMTSignalSynchronizationObjectFromCpu";
    let no_signal = "an object created or opened NoSignal";
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let mut pq = [0u32; 8];
    pq[0] = device;
    assert_eq!(
        thunk(&p, "D3DKMTCreatePagingQueue", pq.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    let (handles, values) = ([pq[3]], [1u64]);
    let mut s = from_cpu(device, 1, handles.as_ptr() as u64, values.as_ptr() as u64);
    assert_eq!(thunk(&p, T, s.as_mut_ptr() as u64), expected(T, no_signal));
    let mut w = from_cpu(device, 1, handles.as_ptr() as u64, [0u64].as_ptr() as u64);
    assert_eq!(
        thunk(
            &p,
            "D3DKMTWaitForSynchronizationObjectFromCpu",
            w.as_mut_ptr() as u64
        ),
        STATUS_SUCCESS,
        "a wait is the paging fence's use"
    );

    let (_, k) = common::user_process(&m);
    let q = rvgpu_umd::kmt::Kmt::create_paging_queue(&k, 0).expect("a paging queue");
    assert_eq!(
        k.signal_fence_from_cpu(q.fence, 1)
            .map_err(|e| u64::from(e.0 as u32)),
        Err(expected(T, no_signal))
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// MF-04: a monitored fence created `NoWait` keeps the flag on the OS's object: a CPU wait on
/// it is refused with the catalog's status, from the DLL's process (its
/// `D3DKMTCreateSynchronizationObject2` and wait thunks) and from the Rust UMD's, while a CPU
/// signal of it is answered.
#[test]
fn mf_04_a_nowait_monitored_fence_refuses_a_cpu_wait() {
    const W: &str = "D3DKMTWaitForSynchronizationObjectFromCpu";
    const S: &str = "D3DKMTSignalSynchronizationObjectFromCpu";
    let no_wait = "an object created or opened NoWait";
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let handles = [monitored_fence(&p, device, NO_WAIT, 7)];
    let mut w = from_cpu(device, 1, handles.as_ptr() as u64, [0u64].as_ptr() as u64);
    assert_eq!(thunk(&p, W, w.as_mut_ptr() as u64), expected(W, no_wait));
    let mut s = from_cpu(device, 1, handles.as_ptr() as u64, [9u64].as_ptr() as u64);
    assert_eq!(thunk(&p, S, s.as_mut_ptr() as u64), STATUS_SUCCESS);

    let (_, k) = common::user_process(&m);
    let (h, f) = k.create_monitored_fence_with(0, NO_WAIT).expect("a fence");
    assert_eq!(
        rvgpu_umd::kmt::Kmt::wait_for_fence(&k, h, 0).map_err(|e| u64::from(e.0 as u32)),
        Err(expected(W, no_wait))
    );
    k.signal_fence_from_cpu(h, 4)
        .expect("a CPU signal of a NoWait fence");
    assert_eq!(f.value(), 4);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// MF-01: without `AllowFenceRewind` a CPU signal of a monitored fence below the last value
/// the OS signalled it to is refused with the catalog's status and signals nothing (VidSch
/// checks every object before it writes one), from the DLL's process and from the Rust UMD's;
/// the same value again, or with `AllowFenceRewind`, is answered.
#[test]
fn mf_01_a_cpu_signal_below_the_last_one_is_refused() {
    const S: &str = "D3DKMTSignalSynchronizationObjectFromCpu";
    const REWIND: u64 = 1 << 2;
    let below = "without Flags.AllowFenceRewind, a monitored fence's value below the last one \
                 signalled to it (M:VidSchiSignalSyncObjectsFromCpu)";
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let (f, g) = (
        monitored_fence(&p, device, 0, 0),
        monitored_fence(&p, device, 0, 7),
    );
    let signal = |handles: &[u32], values: &[u64], flags: u64| {
        let n = handles.len() as u32;
        let mut s = from_cpu(device, n, handles.as_ptr() as u64, values.as_ptr() as u64);
        s[3] = flags;
        thunk(&p, S, s.as_mut_ptr() as u64)
    };
    assert_eq!(signal(&[f], &[5], 0), STATUS_SUCCESS);
    assert_eq!(
        signal(&[f], &[5], 0),
        STATUS_SUCCESS,
        "the same value again"
    );
    assert_eq!(signal(&[g, f], &[9, 3], 0), expected(S, below), "below 5");
    assert_eq!(
        signal(&[g], &[6], 0),
        expected(S, below),
        "below the initial 7"
    );
    assert_eq!(
        signal(&[g], &[8], 0),
        STATUS_SUCCESS,
        "the refusal signalled nothing: 8 is not below g's last"
    );
    assert_eq!(
        signal(&[f], &[3], REWIND),
        STATUS_SUCCESS,
        "AllowFenceRewind"
    );

    let (_, k) = common::user_process(&m);
    let (h, fence) = k.create_monitored_fence(0).expect("a fence");
    k.signal_fence_from_cpu(h, 4).expect("a CPU signal");
    assert_eq!(
        k.signal_fence_from_cpu(h, 2)
            .map_err(|e| u64::from(e.0 as u32)),
        Err(expected(S, below))
    );
    assert_eq!(fence.value(), 4);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// A kernel-submission hardware queue on a new `HwQueueSupported` context of `device`,
/// created raw: (queue, its progress fence).
fn kernel_queue(p: &Arc<UserProcess>, device: u32) -> (u32, u32) {
    use rvgpu_hw::pdd::{HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
    let mut c = [0u32; 10];
    c[0] = device;
    c[3] = HW_QUEUE_SUPPORTED;
    assert_eq!(
        thunk(p, "D3DKMTCreateContextVirtual", c.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    let ctx = c[8];
    let mut pdd = HwQueuePdd {
        magic: PDD_MAGIC,
        version: HW_QUEUE_PDD_VERSION,
        ..Default::default()
    };
    let mut s = [0u8; 48];
    put32(&mut s, 0, ctx);
    put32(&mut s, 8, size_of::<HwQueuePdd>() as u32);
    put64(&mut s, 16, addr(&mut pdd));
    assert_eq!(
        thunk(p, "D3DKMTCreateHwQueue", s.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    (get32(&s, 24), get32(&s, 28))
}

/// An edit of a structure of `N` bytes.
type Edit<'a, const N: usize> = Box<dyn Fn(&mut [u8; N]) + 'a>;

/// Runs `name` on each case's structure (`edit` of `base`): the catalog's status, and the
/// fence `watch` of queue `queue` left at `before`. The labels driven.
fn hw_queue_refusals<const N: usize>(
    o: &Objects,
    name: &str,
    base: [u8; N],
    cases: Vec<(&'static str, Edit<'_, N>)>,
    queue: u32,
) -> Vec<&'static str> {
    let before = o.m.hw_queue_progress(0, queue);
    cases
        .into_iter()
        .map(|(what, edit)| {
            let mut s = base;
            edit(&mut s);
            let r = thunk(&o.p, name, s.as_mut_ptr() as u64);
            assert_eq!(r, expected(name, what), "{name}: {what}: {r:#x}");
            assert_eq!(o.m.hw_queue_progress(0, queue), before, "{name}: {what}");
            what
        })
        .collect()
}

/// MF-03: `D3DKMTSubmitSignalSyncObjectsToHwQueue` refuses what 24H2's
/// `DxgkSubmitSignalSyncObjectsToHwQueueInternal` and `SubmitSignalSyncObjectsToHwQueue`
/// refuse, in their order (`ObjectCount` before the queues), and signals nothing then;
/// accepted, a broadcast to two idle queues signals another queue's progress fence (24H2
/// refuses no fence for being one).
#[test]
fn mf_03_d3dkmtsubmitsignalsyncobjectstohwqueue_answers_as_24h2() {
    const T: &str = "D3DKMTSubmitSignalSyncObjectsToHwQueue";
    let o = objects(NO_SIGNAL);
    let (qa, _) = kernel_queue(&o.p, o.device);
    let (qb, _) = kernel_queue(&o.p, o.device);
    let (qc, fc) = kernel_queue(&o.p, o.device);
    let queues = [qa, qb];
    let bad_queues = [qa, NEVER_GIVEN];
    let twice = [fc, fc];
    let (fence, refused, other) = ([fc], [o.refused], [o.other]);
    let (never, values) = ([NEVER_GIVEN], [7u64, 7]);
    let mut base = [0u8; 40];
    put32(&mut base, 4, 2);
    put64(&mut base, 8, queues.as_ptr() as u64);
    put32(&mut base, 16, 1);
    put64(&mut base, 24, fence.as_ptr() as u64);
    put64(&mut base, 32, values.as_ptr() as u64);
    let at = |off: usize, v: u64| -> Edit<'static, 40> { Box::new(move |s| put64(s, off, v)) };
    let n32 = |off: usize, v: u32| -> Edit<'static, 40> { Box::new(move |s| put32(s, off, v)) };
    let driven =
        hw_queue_refusals(
            &o,
            T,
            base,
            vec![
            ("ObjectCount 0", n32(16, 0)),
            ("no pool for ObjectCount handles", n32(16, TOO_MANY)),
            ("ObjectHandleArray not readable", at(24, UNMAPPED)),
            ("BroadcastHwQueueCount 0", n32(4, 0)),
            ("no pool for BroadcastHwQueueCount handles", n32(4, TOO_MANY)),
            ("BroadcastHwQueueArray not readable", at(8, UNMAPPED)),
            (
                "BroadcastHwQueueArray[0] not a hardware queue in the caller's handle table",
                at(8, never.as_ptr() as u64),
            ),
            ("a Flags bit from 3 to 30", n32(0, 1 << 3)),
            ("Flags bit 31 (the OS's internal flag)", n32(0, 1 << 31)),
            (
                "a BroadcastHwQueueArray entry not a hardware queue of the caller's, or of \
                 another device than the first's",
                at(8, bad_queues.as_ptr() as u64),
            ),
            (
                "a handle neither a device nor a global sync object in the caller's handle table",
                at(24, never.as_ptr() as u64),
            ),
            (
                "an object created or opened NoSignal",
                at(24, refused.as_ptr() as u64),
            ),
            (
                "an object of another device than the first queue's",
                at(24, other.as_ptr() as u64),
            ),
            ("FenceValueArray not readable", at(32, UNMAPPED)),
            ("the same object twice", {
                let t = twice.as_ptr() as u64;
                Box::new(move |s| {
                    put32(s, 16, 2);
                    put64(s, 24, t);
                })
            }),
        ],
            qc,
        );
    let pool = "the simulated pool's one bound is met at the capture";
    let what = "the structure not readable";
    assert_eq!(thunk(&o.p, T, UNMAPPED), expected(T, what));
    let driven = [&driven[..], &[what]].concat();
    assert_covers(
        T,
        &driven,
        &[
            ("no pool for the queues", pool),
            ("no pool for the objects", pool),
            ("no pool for the fence values", pool),
            (
                "the device not active",
                "driven by um_10_d3dkmtsubmitsyncobjectstohwqueue_on_a_device_in_error_answers_as_24h2",
            ),
            (
                "an object of another adapter, or whose adapter state is destroyed",
                "one adapter; its objects are of its own devices",
            ),
        ],
    );
    let mut s = base;
    assert_eq!(thunk(&o.p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_eq!(o.m.hw_queue_progress(0, qc).map(|p| p.1), Some(7));
    assert!(o.m.fault().is_none(), "{:?}", o.m.fault());
}

/// MF-03: `D3DKMTSubmitWaitForSyncObjectsToHwQueue` refuses what 24H2's
/// `DxgkSubmitWaitForSyncObjectsToHwQueueInternal` and `SubmitWaitForSyncObjectsFromGpu`
/// refuse, in their order, each with the catalog's status; a wait on a satisfied progress
/// fence of another queue is accepted.
#[test]
fn mf_03_d3dkmtsubmitwaitforsyncobjectstohwqueue_answers_as_24h2() {
    const T: &str = "D3DKMTSubmitWaitForSyncObjectsToHwQueue";
    let o = objects(NO_WAIT);
    let (qa, _) = kernel_queue(&o.p, o.device);
    let (qc, fc) = kernel_queue(&o.p, o.device);
    let (fence, refused, other) = ([fc], [o.refused], [o.other]);
    let (never, values) = ([NEVER_GIVEN], [0u64]);
    let mut base = [0u8; 24];
    put32(&mut base, 0, qa);
    put32(&mut base, 4, 1);
    put64(&mut base, 8, fence.as_ptr() as u64);
    put64(&mut base, 16, values.as_ptr() as u64);
    let at = |off: usize, v: u64| -> Edit<'static, 24> { Box::new(move |s| put64(s, off, v)) };
    let driven = hw_queue_refusals(
        &o,
        T,
        base,
        vec![
            ("ObjectCount 0", Box::new(|s| put32(s, 4, 0))),
            (
                "no pool for ObjectCount handles",
                Box::new(|s| put32(s, 4, TOO_MANY)),
            ),
            ("ObjectHandleArray not readable", at(8, UNMAPPED)),
            (
                "hHwQueue not a hardware queue in the caller's handle table",
                Box::new(|s| put32(s, 0, NEVER_GIVEN)),
            ),
            ("FenceValueArray not readable", at(16, UNMAPPED)),
            (
                "a device sync object of another device than the queue's",
                at(8, other.as_ptr() as u64),
            ),
            (
                "a device sync object created or opened NoWait",
                at(8, refused.as_ptr() as u64),
            ),
            (
                "a handle neither a device nor a global sync object in the caller's handle table",
                at(8, never.as_ptr() as u64),
            ),
        ],
        qc,
    );
    let pool = "the simulated pool's one bound is met at the capture";
    let what = "the structure not readable";
    assert_eq!(thunk(&o.p, T, UNMAPPED), expected(T, what));
    let driven = [&driven[..], &[what]].concat();
    assert_covers(
        T,
        &driven,
        &[
            ("no pool for ObjectCount fence values", pool),
            ("no pool for the objects", pool),
            (
                "the device not active",
                "driven by um_10_d3dkmtsubmitsyncobjectstohwqueue_on_a_device_in_error_answers_as_24h2",
            ),
        ],
    );
    let mut s = base;
    assert_eq!(thunk(&o.p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert!(o.m.fault().is_none(), "{:?}", o.m.fault());
}

/// A `D3DKMT_SUBMITSIGNALSYNCOBJECTSTOHWQUEUE` signalling `objects` to `values` on `queues`.
fn signal_on(queues: &[u32], objects: &[u32], values: &[u64]) -> [u8; 40] {
    let mut s = [0u8; 40];
    put32(&mut s, 4, queues.len() as u32);
    put64(&mut s, 8, queues.as_ptr() as u64);
    put32(&mut s, 16, objects.len() as u32);
    put64(&mut s, 24, objects.as_ptr() as u64);
    put64(&mut s, 32, values.as_ptr() as u64);
    s
}

/// A `D3DKMT_SUBMITWAITFORSYNCOBJECTSTOHWQUEUE` on `queue` for `objects` to reach `values`.
fn wait_on(queue: u32, objects: &[u32], values: &[u64]) -> [u8; 24] {
    let mut s = [0u8; 24];
    put32(&mut s, 0, queue);
    put32(&mut s, 4, objects.len() as u32);
    put64(&mut s, 8, objects.as_ptr() as u64);
    put64(&mut s, 16, values.as_ptr() as u64);
    s
}

/// A blocking `D3DKMTWaitForSynchronizationObjectFromCpu` of `device` for fence `h` to reach
/// `value`: its status.
fn cpu_wait(o: &Objects, h: u32, value: u64) -> u64 {
    let (hs, vs) = ([h], [value]);
    let mut s = from_cpu(o.device, 1, hs.as_ptr() as u64, vs.as_ptr() as u64);
    thunk(
        &o.p,
        "D3DKMTWaitForSynchronizationObjectFromCpu",
        s.as_mut_ptr() as u64,
    )
}

/// MF-03 with native fences: 24H2 takes a device's native fences in both arrays as it takes
/// its monitored fences (`SubmitSignalSyncObjectsToHwQueue` and
/// `SubmitWaitForSyncObjectsFromGpu` look both up as device sync objects; VidSch's packets
/// handle the native type). A wait holds the queue's later work until the fence's
/// CurrentValue reaches the value (a CPU signal releases it); a signal packet then gives the
/// native fence its value; a value not above CurrentValue leaves it. A native fence destroyed
/// while a queue waits on it holds the queue no more.
#[test]
fn mf_03_native_fences_are_waited_on_and_signalled_by_hw_queue_packets() {
    let o = objects(0);
    let (qa, _) = kernel_queue(&o.p, o.device);
    let (waited, signalled) = (o.fence, o.refused);
    let wait = |q: u32, h: u32, v: u64| {
        let (hs, vs) = ([h], [v]);
        let mut s = wait_on(q, &hs, &vs);
        thunk(
            &o.p,
            "D3DKMTSubmitWaitForSyncObjectsToHwQueue",
            s.as_mut_ptr() as u64,
        )
    };
    let signal = |q: u32, h: u32, v: u64| {
        let (qs, hs, vs) = ([q], [h], [v]);
        let mut s = signal_on(&qs, &hs, &vs);
        thunk(
            &o.p,
            "D3DKMTSubmitSignalSyncObjectsToHwQueue",
            s.as_mut_ptr() as u64,
        )
    };
    assert_eq!(
        wait(qa, waited, 5),
        STATUS_SUCCESS,
        "a native fence waited on"
    );
    assert_eq!(
        signal(qa, signalled, 9),
        STATUS_SUCCESS,
        "a native fence signalled"
    );
    let held = o.m.hw_queue_held(0, qa).expect("queue");
    assert_eq!(
        (held.waits, held.signals),
        (1, 1),
        "the signal behind the wait"
    );
    assert_eq!(
        current(&o.m, signalled),
        0,
        "not before the wait is satisfied"
    );
    let (hs, vs) = ([waited], [5u64]);
    let mut s = from_cpu(o.device, 1, hs.as_ptr() as u64, vs.as_ptr() as u64);
    assert_eq!(
        thunk(
            &o.p,
            "D3DKMTSignalSynchronizationObjectFromCpu",
            s.as_mut_ptr() as u64
        ),
        STATUS_SUCCESS
    );
    assert_eq!(
        cpu_wait(&o, signalled, 9),
        STATUS_SUCCESS,
        "the packet's signal"
    );
    assert_eq!(current(&o.m, signalled), 9);
    assert_eq!(signal(qa, signalled, 3), STATUS_SUCCESS);
    assert_eq!(
        current(&o.m, signalled),
        9,
        "a lower value leaves CurrentValue"
    );
    // A wait no signal will end, then its fence destroyed: the queue goes on.
    let (qb, _) = kernel_queue(&o.p, o.device);
    let (doomed, _) = native_fence(&o.p, o.device, 0);
    assert_eq!(wait(qb, doomed, 100), STATUS_SUCCESS);
    assert_eq!(signal(qb, signalled, 10), STATUS_SUCCESS);
    assert_eq!(current(&o.m, signalled), 9, "held behind the wait");
    let mut d = [doomed, 0];
    assert_eq!(
        thunk(
            &o.p,
            "D3DKMTDestroySynchronizationObject",
            d.as_mut_ptr() as u64
        ),
        STATUS_SUCCESS
    );
    assert_eq!(
        cpu_wait(&o, signalled, 10),
        STATUS_SUCCESS,
        "the queue went on"
    );
    assert!(o.m.fault().is_none(), "{:?}", o.m.fault());
}

/// `D3DDDI_MONITORED_FENCE`, and `D3DDDI_FENCE` (a type the simulation does not make).
const MONITORED_FENCE: u32 = 5;
const LEGACY_FENCE: u32 = 3;
/// A byte pattern in what 24H2 reads but does not write back.
const UNTOUCHED_BYTE: u8 = 0xA5;
/// `STATUS_NOT_SUPPORTED`, `STATUS_ACCESS_DENIED`.
const STATUS_NOT_SUPPORTED: u64 = 0xC000_00BB;
const STATUS_ACCESS_DENIED: u64 = 0xC000_0022;

/// A `D3DKMT_CREATESYNCHRONIZATIONOBJECT2` (96 bytes) of type `ty` with `Info.Flags` `flags`
/// on `device`, `InitialFenceValue` 7 and `EngineAffinity` 1; the union's padding and rest,
/// `SharedHandle` and the structure's padding hold [`UNTOUCHED_BYTE`].
fn create2(device: u32, ty: u32, flags: u32) -> [u8; 96] {
    let mut s = [UNTOUCHED_BYTE; 96];
    put32(&mut s, 0, device);
    put32(&mut s, 8, ty);
    put32(&mut s, 12, flags);
    put64(&mut s, 16, 7);
    put64(&mut s, 24, 0);
    put64(&mut s, 32, 0);
    put32(&mut s, 40, 1);
    put32(&mut s, 88, 0);
    s
}

/// A monitored fence of `device` with `flags` and `initial`, made through the thunk: its handle.
fn monitored_fence(p: &Arc<UserProcess>, device: u32, flags: u32, initial: u64) -> u32 {
    let mut c = create2(device, MONITORED_FENCE, flags);
    put64(&mut c, 16, initial);
    assert_eq!(
        thunk(
            p,
            "D3DKMTCreateSynchronizationObject2",
            c.as_mut_ptr() as u64
        ),
        STATUS_SUCCESS
    );
    get32(&c, 88)
}

/// MF-01: `D3DKMTCreateSynchronizationObject2` refuses what 24H2's
/// `DxgkCreateSynchronizationObjectImpl` and `CreateSynchronizationObjectInternal` refuse, in
/// their order and with the catalog's statuses, writing nothing back; accepted, a monitored
/// fence gets `hSyncObject` and its two addresses and nothing else of the caller's bytes
/// changes (`SharedHandle` included: a fence is never shared by global handle). The flags it
/// was created with hold (`NoSignal` refuses a CPU signal), a shareable one is made, and
/// `D3DKMTDestroySynchronizationObject` destroys it once.
#[test]
fn mf_01_d3dkmtcreatesynchronizationobject2_answers_as_24h2() {
    const T: &str = "D3DKMTCreateSynchronizationObject2";
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    assert_eq!(
        thunk(&p, T, UNMAPPED),
        expected(T, "the structure not readable")
    );
    let cases: [(&str, u32, u32, u32); 7] = [
        (
            "an Info.Flags bit of 0x7FFFF800",
            device,
            MONITORED_FENCE,
            1 << 11,
        ),
        (
            "NtSecuritySharing without Shared",
            device,
            MONITORED_FENCE,
            0x2,
        ),
        (
            "a monitored or periodic monitored fence Shared without NtSecuritySharing",
            device,
            MONITORED_FENCE,
            0x1,
        ),
        (
            "a monitored or periodic monitored fence NoSignal with NoWait",
            device,
            MONITORED_FENCE,
            NO_SIGNAL | NO_WAIT,
        ),
        (
            "Info.Flags bit 7 on a type other than the two fences",
            device,
            LEGACY_FENCE,
            1 << 7,
        ),
        (
            "hDevice not in the caller's handle table",
            NEVER_GIVEN,
            MONITORED_FENCE,
            0,
        ),
        (
            "SignalByKmd on a type other than D3DDDI_CPU_NOTIFICATION, or with Shared or \
             CrossAdapter",
            device,
            MONITORED_FENCE,
            1 << 8,
        ),
    ];
    let mut driven = vec!["the structure not readable"];
    for (what, dev, ty, flags) in cases {
        let before = create2(dev, ty, flags);
        let mut s = before;
        assert_eq!(
            thunk(&p, T, s.as_mut_ptr() as u64),
            expected(T, what),
            "{what}"
        );
        assert_eq!(s, before, "{what}: a refusal writes nothing back");
        driven.push(what);
    }
    // A type the simulation does not make passes 24H2's checks and is refused apart.
    let before = create2(device, LEGACY_FENCE, 0);
    let mut s = before;
    assert_eq!(thunk(&p, T, s.as_mut_ptr() as u64), STATUS_NOT_SUPPORTED);
    assert_eq!(s, before);

    let before = create2(device, MONITORED_FENCE, 0);
    let mut s = before;
    assert_eq!(thunk(&p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    let h = get32(&s, 88);
    assert!(h != 0 && h & 0x3F == 0, "hSyncObject {h:#x}");
    let (cpu, gpu) = (get64(&s, 24), get64(&s, 32));
    assert!(
        cpu != 0 && cpu % 8 == 0,
        "FenceValueCPUVirtualAddress {cpu:#x}"
    );
    assert!(
        gpu != 0 && gpu % 8 == 0,
        "FenceValueGPUVirtualAddress {gpu:#x}"
    );
    let mut rest = s;
    rest[24..40].copy_from_slice(&before[24..40]);
    rest[88..92].copy_from_slice(&before[88..92]);
    assert_eq!(
        rest, before,
        "only hSyncObject and the two addresses are written"
    );

    // Created NoSignal: a CPU signal through the handle is refused.
    let mut ns = create2(device, MONITORED_FENCE, NO_SIGNAL);
    assert_eq!(thunk(&p, T, ns.as_mut_ptr() as u64), STATUS_SUCCESS);
    let (handles, values) = ([get32(&ns, 88)], [9u64]);
    let mut sig = from_cpu(device, 1, handles.as_ptr() as u64, values.as_ptr() as u64);
    assert_eq!(
        thunk(
            &p,
            "D3DKMTSignalSynchronizationObjectFromCpu",
            sig.as_mut_ptr() as u64
        ),
        STATUS_ACCESS_DENIED
    );
    // Shared with NtSecuritySharing: made, no global handle written.
    let mut sh = create2(device, MONITORED_FENCE, SHAREABLE);
    assert_eq!(thunk(&p, T, sh.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_eq!(sh[80..84], [UNTOUCHED_BYTE; 4], "SharedHandle");
    // D3DKMTShareObjects: a fence made without NtSecuritySharing is refused as 24H2 refuses
    // it; one made with it the simulation does not share (the row's gap).
    let (mut nt, oa) = (0u64, attributes());
    let (private, shareable) = ([h], [get32(&sh, 88)]);
    let at = oa.as_ptr() as u64;
    assert_eq!(
        share(&p, 1, private.as_ptr() as u64, at, &mut nt),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        share(&p, 1, shareable.as_ptr() as u64, at, &mut nt),
        STATUS_NOT_SUPPORTED
    );
    assert_eq!(nt, 0, "a refused share writes no handle");

    const D: &str = "D3DKMTDestroySynchronizationObject";
    let mut d = [h, 0];
    assert_eq!(thunk(&p, D, d.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_eq!(
        thunk(&p, D, d.as_mut_ptr() as u64),
        expected(
            D,
            "hSyncObject neither a device nor a global sync object in the caller's handle table"
        ),
        "destroyed before"
    );
    assert_covers(
        T,
        &driven,
        &[
            (
                "a fence: the device not active (other types: the adapter not active)",
                "driven by um_10_d3dkmtcreatesynchronizationobject2_on_a_device_in_error_answers_as_24h2",
            ),
            (
                "a fence: the adapter not on dxgmms2",
                "driven by mf_01_a_monitored_fence_needs_a_driver_of_wddm_2_or_later",
            ),
        ],
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// [`objects`]' device with two kernel-submission queues (their handles returned), then put
/// in error by VidSch: a FILL through an address no process maps, submitted raw on a third
/// queue, faults (its execution state no longer ACTIVE); its DXGDEVICE stays active.
fn objects_of_a_faulted_device() -> (Objects, [u32; 2]) {
    let o = objects(0);
    let d = o.p.devices()[0];
    let (qa, _) = kernel_queue(&o.p, o.device);
    let (qb, _) = kernel_queue(&o.p, o.device);
    let (kq, _) = kernel_queue(&o.p, o.device);
    device_in_error(&o.m, &o.p, kq);
    assert_ne!(
        o.m.kmt(&d).device_execution_state(),
        Ok(rvgpu_umd::kmt::DeviceExecutionState::ACTIVE)
    );
    (o, [qa, qb])
}

/// UM-10: `K:SubmitSignalSyncObjectsToHwQueue` @0x1403260EC and
/// `K:SubmitWaitForSyncObjectsFromGpu` @0x1402AF2F0 check the device's access
/// (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550): only a DXGDEVICE whose state (+608) is
/// not active is refused, and VidSch's error (here a page fault) leaves it active, so a
/// device in error's signal and wait packets are queued; once the adapter is removed (the
/// device stopped) both are STATUS_DEVICE_REMOVED.
#[test]
fn um_10_d3dkmtsubmitsyncobjectstohwqueue_on_a_device_in_error_answers_as_24h2() {
    const SIGNAL: &str = "D3DKMTSubmitSignalSyncObjectsToHwQueue";
    const WAIT: &str = "D3DKMTSubmitWaitForSyncObjectsToHwQueue";
    let (o, [qa, qb]) = objects_of_a_faulted_device();
    let (queues, objects, values) = ([qa], [o.fence], [7u64]);
    let mut s = signal_on(&queues, &objects, &values);
    let r = thunk(&o.p, SIGNAL, s.as_mut_ptr() as u64);
    assert_eq!(r, STATUS_SUCCESS, "{SIGNAL} of the device in error: {r:#x}");
    let waited = [o.refused];
    let mut w = wait_on(qb, &waited, &values);
    let r = thunk(&o.p, WAIT, w.as_mut_ptr() as u64);
    assert_eq!(r, STATUS_SUCCESS, "{WAIT} of the device in error: {r:#x}");
    assert!(o.m.device_removed(0).is_ok(), "{:?}", o.m.fault());
    let what = "the device not active";
    let mut s = signal_on(&queues, &objects, &values);
    let r = thunk(&o.p, SIGNAL, s.as_mut_ptr() as u64);
    assert_eq!(r, expected(SIGNAL, what), "{SIGNAL}: {what}: {r:#x}");
    let mut w = wait_on(qb, &waited, &values);
    let r = thunk(&o.p, WAIT, w.as_mut_ptr() as u64);
    assert_eq!(r, expected(WAIT, what), "{WAIT}: {what}: {r:#x}");
    assert!(o.m.bugcheck().is_none(), "{:?}", o.m.bugcheck());
}

/// UM-10: `K:DxgkCreateSynchronizationObjectImpl` @0x1403708E8 checks a fence's device access
/// (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550, DXGDEVICE +608): a device VidSch put in
/// error (here by a page fault) is active and gets its monitored fence; once the adapter is
/// removed (the device stopped) the call is STATUS_DEVICE_REMOVED and writes nothing back.
#[test]
fn um_10_d3dkmtcreatesynchronizationobject2_on_a_device_in_error_answers_as_24h2() {
    const T: &str = "D3DKMTCreateSynchronizationObject2";
    let (o, _) = objects_of_a_faulted_device();
    let mut s = create2(o.device, MONITORED_FENCE, 0);
    let r = thunk(&o.p, T, s.as_mut_ptr() as u64);
    assert_eq!(r, STATUS_SUCCESS, "a fence of the device in error: {r:#x}");
    let h = get32(&s, 88);
    assert!(h != 0 && h & 0x3F == 0, "hSyncObject {h:#x}");
    assert!(o.m.device_removed(0).is_ok(), "{:?}", o.m.fault());
    let what = "a fence: the device not active (other types: the adapter not active)";
    let mut s = create2(o.device, MONITORED_FENCE, 0);
    let before = s;
    let r = thunk(&o.p, T, s.as_mut_ptr() as u64);
    assert_eq!(r, expected(T, what), "{what}: {r:#x}");
    assert_eq!(s, before, "{what}: written back");
    assert!(o.m.bugcheck().is_none(), "{:?}", o.m.bugcheck());
}
