//! The hardware-queue and doorbell thunks called raw in the shipped `rvgpu_umd.dll`'s process,
//! as 24H2 answers them: each refusal of the thunk catalog's row
//! (`rvgpu_simos::kmt::catalog`) with the row's status and nothing written back, and the fields
//! a success writes. The driver is the one `RVGPU_DRIVER` names.

mod common;

use std::sync::Arc;

use common::conformance::{assert_covers, expected};
use common::dll::*;
use common::pe::umd;
use rvgpu_hw::pdd::{DoorbellPdd, HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::pe::DriverBuild;
use rvgpu_simos::{Machine, MachineConfig, Mode, UmsEvent};
use rvgpu_umd::kmt::{AllocationKind, Kmt};
use zerocopy::IntoBytes;

/// `D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission`.
const UMS: u32 = 1 << 4;
/// `D3DDDI_CREATEHWQUEUEFLAGS::NoKmdAccess`.
const NO_KMD_ACCESS: u32 = 1 << 3;
/// `D3DDDI_CREATECONTEXTFLAGS::NoKmdAccess`.
const NO_KMD_CONTEXT: u32 = 1 << 5;
/// `D3DDDI_CREATECONTEXTFLAGS::SynchronizationOnly`.
const SYNCHRONIZATION_ONLY: u32 = 1 << 3;
/// An address no process maps.
const UNMAPPED: u64 = 0x10;

/// A started threaded machine with the `RVGPU_DRIVER` build; `hws`: hardware scheduling on.
fn machine(hws: bool, test_signing: bool) -> Arc<Machine> {
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.os.hwsch_feature = hws;
    cfg.os.test_signing = test_signing;
    if !test_signing {
        // The test-signed image does not load without test signing.
        cfg.driver = DriverBuild::Linux;
    }
    Arc::new(common::started(cfg))
}

/// A process of the DLL with its adapter and device open: (process, device, the DLL's
/// adapter).
fn process(m: &Arc<Machine>) -> (Arc<UserProcess>, u32, u64) {
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open_adapter(&p);
    let device = p.devices()[0].device;
    (p, device, adapter)
}

/// The u32 at byte `at` of a structure built as words.
fn get32(s: &[u64], at: usize) -> u32 {
    (s[at / 8] >> ((at % 8) * 8)) as u32
}

/// Sets the u32 at byte `at` of a structure built as words.
fn put32(s: &mut [u64], at: usize, v: u32) {
    let (w, shift) = (at / 8, (at % 8) * 8);
    s[w] = (s[w] & !(0xFFFF_FFFFu64 << shift)) | (u64::from(v) << shift);
}

/// A `D3DKMT_CREATEHWQUEUE` (48 bytes) on `context` with `flags` and the private data `pdd`.
fn create_hw_queue_args(context: u32, flags: u32, pdd: &mut HwQueuePdd) -> [u64; 6] {
    let mut s = [0u64; 6];
    put32(&mut s, 0, context);
    put32(&mut s, 4, flags);
    put32(&mut s, 8, size_of::<HwQueuePdd>() as u32);
    s[2] = addr(pdd);
    s
}

fn queue_pdd() -> HwQueuePdd {
    HwQueuePdd {
        magic: PDD_MAGIC,
        version: HW_QUEUE_PDD_VERSION,
        ..Default::default()
    }
}

/// A hardware queue on `context` with `flags`, created raw: its handle.
fn hw_queue(p: &Arc<UserProcess>, context: u32, flags: u32) -> u32 {
    let mut pdd = queue_pdd();
    let mut s = create_hw_queue_args(context, flags, &mut pdd);
    let r = thunk(p, "D3DKMTCreateHwQueue", s.as_mut_ptr() as u64);
    assert_eq!(r, STATUS_SUCCESS, "D3DKMTCreateHwQueue: {r:#x}");
    get32(&s, 24)
}

/// A mapped, resident allocation of 4 KiB of `kind` on `p`'s device, made through the
/// simulated thunks the Rust UMD calls (the ring the DLL would map): its handle.
fn allocation(p: &Arc<UserProcess>, kind: AllocationKind) -> u32 {
    let m = p.machine();
    let k = m.kmt(&p.devices()[0]);
    match k.create_allocation_as(4096, kind) {
        Ok(a) => a.handle,
        Err(e) => panic!("an allocation: {e:?}"),
    }
}

/// A `D3DKMT_CREATE_DOORBELL` (72 bytes) for `queue` with its ring allocations and `pdd`.
fn create_doorbell_args(queue: u32, ring: u32, control: u32, pdd: &mut DoorbellPdd) -> [u64; 9] {
    let mut s = [0u64; 9];
    put32(&mut s, 0, queue);
    put32(&mut s, 4, ring);
    put32(&mut s, 8, control);
    put32(&mut s, 16, size_of::<DoorbellPdd>() as u32);
    s[3] = pdd.as_mut_bytes().as_mut_ptr() as u64;
    s
}

/// A user-mode queue with its two ring allocations: (context, queue, ring, control).
fn ums_queue(p: &Arc<UserProcess>) -> (u32, u32, u32, u32) {
    let ctx = raw_context(p, HW_QUEUE_SUPPORTED);
    let q = hw_queue(p, ctx, UMS);
    let ring = allocation(p, AllocationKind::Commands);
    let control = allocation(p, AllocationKind::RingControl);
    (ctx, q, ring, control)
}

/// A doorbell on user-mode queue `q`, created raw: its handle.
fn doorbell(p: &Arc<UserProcess>, q: u32, ring: u32, control: u32) -> u32 {
    let mut pdd = DoorbellPdd::for_ring(4096);
    let mut s = create_doorbell_args(q, ring, control, &mut pdd);
    let r = thunk(p, "D3DKMTCreateDoorbell", s.as_mut_ptr() as u64);
    assert_eq!(r, STATUS_SUCCESS, "D3DKMTCreateDoorbell: {r:#x}");
    get32(&s, 64)
}

/// A refusal case: the row's check and the edit of the structure that makes it.
type Case<const N: usize> = (&'static str, Box<dyn Fn(&mut [u64; N])>);

/// Runs `thunk` on each case's structure (`base` edited by the case) and checks the row's
/// status and that nothing was written back: the labels driven.
fn refusals<const N: usize>(
    p: &Arc<UserProcess>,
    name: &str,
    base: [u64; N],
    cases: Vec<Case<N>>,
) -> Vec<&'static str> {
    let mut driven = Vec::new();
    for (what, edit) in cases {
        let mut s = base;
        edit(&mut s);
        let before = s;
        let r = thunk(p, name, s.as_mut_ptr() as u64);
        assert_eq!(r, expected(name, what), "{name}: {what}: {r:#x}");
        assert_eq!(s, before, "{name}: {what}: written back on a refusal");
        driven.push(what);
    }
    driven
}

/// UM-05: `D3DKMTCreateHwQueue` refuses what 24H2's `DxgkCreateHwQueueInternal` and
/// `DXGHWQUEUE::Initialize` refuse, each with its status and nothing written back; a
/// kernel-submission queue gets its handle and progress fence written back, a user-mode one
/// its handle and, under 24H2, no progress fence.
#[test]
fn um_05_d3dkmtcreatehwqueue_answers_as_24h2() {
    const T: &str = "D3DKMTCreateHwQueue";
    let m = machine(true, true);
    let (p, _, _) = process(&m);
    let ctx = raw_context(&p, HW_QUEUE_SUPPORTED);
    let (q2, _, _) = process(&m);
    let other = raw_context(&q2, HW_QUEUE_SUPPORTED);
    let mut pdd = queue_pdd();
    let base = create_hw_queue_args(ctx, UMS, &mut pdd);
    type Edit = Box<dyn Fn(&mut [u64; 6])>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "pPrivateDriverData without size, or a size without pointer",
            Box::new(|s| put32(s, 8, 0)),
        ),
        (
            "pPrivateDriverData without size, or a size without pointer",
            Box::new(|s| s[2] = 0),
        ),
        (
            "the private data not readable",
            Box::new(|s| s[2] = UNMAPPED),
        ),
        (
            "hHwContext not a context in the caller's handle table",
            Box::new(|s| put32(s, 0, 0x1234)),
        ),
        (
            "hHwContext not a context in the caller's handle table",
            Box::new(move |s| put32(s, 0, other)),
        ),
        (
            "Flags.NoKmdAccess on a context without NoKmdAccess",
            Box::new(|s| put32(s, 4, NO_KMD_ACCESS)),
        ),
        (
            "Flags.NoKmdAccess on a context without NoKmdAccess",
            Box::new(|s| put32(s, 4, UMS | NO_KMD_ACCESS)),
        ),
    ];
    let mut driven = refusals(&p, T, base, cases);
    // A `NoKmdAccess` context (test signing is on): a `NoKmdAccess` queue's private data must
    // be at least 264 bytes with its two tags (this one's is the driver's short one).
    let no_kmd = raw_context(&p, HW_QUEUE_SUPPORTED | NO_KMD_CONTEXT);
    let mut npdd = queue_pdd();
    let nbase = create_hw_queue_args(no_kmd, UMS | NO_KMD_ACCESS, &mut npdd);
    let ncases: Vec<(&str, Edit)> = vec![
        (
            "Flags.NoKmdAccess with private data below 264 bytes or without its two tags",
            Box::new(|_| {}),
        ),
        (
            "Flags.NoKmdAccess with private data below 264 bytes or without its two tags",
            Box::new(|s| put32(s, 4, NO_KMD_ACCESS)),
        ),
    ];
    driven.extend(refusals(&p, T, nbase, ncases));
    // Without test signing (a machine running the Linux build: the test-signed image does not
    // load there).
    let unsigned = machine(true, false);
    let (u, _, _) = process(&unsigned);
    let uctx = raw_context(&u, HW_QUEUE_SUPPORTED);
    let mut upqq = queue_pdd();
    let ubase = create_hw_queue_args(uctx, UMS, &mut upqq);
    let ucases: Vec<(&str, Edit)> = vec![(
        "Flags.NoKmdAccess without test signing",
        Box::new(|s| put32(s, 4, UMS | NO_KMD_ACCESS)),
    )];
    driven.extend(refusals(&u, T, ubase, ucases));
    // A context without HwQueueSupported, on a software-scheduled node (a hardware-scheduled
    // one refuses to create it, BR-92).
    let sw = machine(false, true);
    let (w, _, _) = process(&sw);
    let plain = raw_context(&w, 0);
    let mut wpdd = queue_pdd();
    let wbase = create_hw_queue_args(plain, 0, &mut wpdd);
    let wcases: Vec<(&str, Edit)> = vec![(
        "hHwContext created without HwQueueSupported",
        Box::new(|_| {}),
    )];
    driven.extend(refusals(&w, T, wbase, wcases));
    assert_covers(
        T,
        &driven,
        &[
            (
                "no pool for the private data",
                "a pool allocation failure no caller can cause",
            ),
            (
                "UserModeSubmission on a node without user-mode submission",
                "every hardware-scheduled node of this adapter reports user-mode submission",
            ),
        ],
    );
    // Success: a user-mode queue (24H2: no progress fence written) and a kernel one.
    let mut s = base;
    s[3] = 0xAAAA_AAAA_AAAA_AAAA;
    assert_eq!(thunk(&p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_ne!(get32(&s, 24), 0, "hHwQueue");
    if m.os_config().windows.reading().name == "24h2" {
        assert_eq!(
            get32(&s, 28),
            0xAAAA_AAAA,
            "a user-mode queue's progress fence"
        );
        assert_eq!(
            (s[4], s[5]),
            (0, 0),
            "a user-mode queue's progress fence VAs"
        );
    }
    let mut pdd = queue_pdd();
    let mut k = create_hw_queue_args(ctx, 0, &mut pdd);
    assert_eq!(thunk(&p, T, k.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_ne!(get32(&k, 24), 0, "hHwQueue");
    assert_ne!(get32(&k, 28), 0, "hHwQueueProgressFence");
    assert!(k[4] != 0 && k[5] != 0, "the progress fence's VAs: {k:x?}");
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// A `D3DKMT_SUBMITCOMMANDTOHWQUEUE` (56 bytes) of `len` bytes at `va` on `queue`.
fn submit_args(queue: u32, value: u64, va: u64, len: u32) -> [u64; 7] {
    let mut s = [0u64; 7];
    put32(&mut s, 0, queue);
    s[1] = value;
    s[2] = va;
    put32(&mut s, 24, len);
    s
}

/// UM-01: `D3DKMTSubmitCommandToHwQueue` refuses what 24H2's
/// `DxgkSubmitCommandToHwQueueInternal` and `DXGHWQUEUE::SubmitCommand` refuse, each with its
/// status, and queues nothing.
#[test]
fn um_01_d3dkmtsubmitcommandtohwqueue_refuses_what_24h2_refuses() {
    const T: &str = "D3DKMTSubmitCommandToHwQueue";
    let m = machine(true, true);
    let (p, _, adapter) = process(&m);
    let (_, va) = buffer_4k(&p, adapter);
    let ctx = raw_context(&p, HW_QUEUE_SUPPORTED);
    let kq = hw_queue(&p, ctx, 0);
    let uq = hw_queue(&p, ctx, UMS);
    let mut pdd = [0u8; 8];
    let pdd_at = pdd.as_mut_ptr() as u64;
    let base = submit_args(kq, 1, va, 8);
    type Edit = Box<dyn Fn(&mut [u64; 7])>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "hHwQueue not a queue in the caller's handle table",
            Box::new(|s| put32(s, 0, 0x1234)),
        ),
        (
            "hHwQueue not a queue in the caller's handle table",
            Box::new(move |s| put32(s, 0, ctx)),
        ),
        (
            "hHwQueue created for user-mode submission",
            Box::new(move |s| put32(s, 0, uq)),
        ),
        ("NumPrimaries above 16", Box::new(|s| put32(s, 40, 17))),
        (
            "pPrivateDriverData without size, or a size without pointer",
            Box::new(|s| put32(s, 28, 8)),
        ),
        (
            "pPrivateDriverData without size, or a size without pointer",
            Box::new(move |s| s[4] = pdd_at),
        ),
        (
            "PrivateDriverDataSize above the context's DmaBufferPrivateDataSize",
            Box::new(move |s| {
                put32(s, 28, 8);
                s[4] = pdd_at;
            }),
        ),
        (
            "WrittenPrimaries not readable",
            Box::new(|s| {
                put32(s, 40, 1);
                s[6] = UNMAPPED;
            }),
        ),
    ];
    let mut driven = refusals(&p, T, base, cases);
    let queued = m.hw_queue_progress(0, kq).map(|(last, _)| last);
    assert_eq!(queued, Some(0), "a refusal queued work");
    // UM-10: a page fault puts the device in error; VidSch, not Dxgkrnl, then refuses the
    // queue's submissions, with its own status; once the adapter is removed Dxgkrnl refuses
    // them first.
    device_in_error(&m, &p, kq);
    let mut s = submit_args(kq, 2, va, 8);
    let before = s;
    let r = thunk(&p, T, s.as_mut_ptr() as u64);
    let what = "the device in error";
    assert_eq!(r, expected(T, what), "{T}: {what}: {r:#x}");
    assert_eq!(s, before, "{T}: {what}: written back on a refusal");
    driven.push(what);
    // UM-10: the adapter removed, Dxgkrnl refuses first.
    assert!(m.device_removed(0).is_ok());
    let mut s = submit_args(kq, 2, va, 8);
    let r = thunk(&p, T, s.as_mut_ptr() as u64);
    let what = "the adapter stopped or removed";
    assert_eq!(r, expected(T, what), "{T}: {what}: {r:#x}");
    assert_eq!(s, before, "{T}: {what}: written back on a refusal");
    driven.push(what);
    let queued = m.hw_queue_progress(0, kq).map(|(last, _)| last);
    assert_eq!(queued, Some(1), "a refused submission queued work");
    assert_covers(
        T,
        &driven,
        &[(
            "no pool for the submission",
            "a pool allocation failure no caller can cause",
        )],
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-03, UM-07: `D3DKMTCreateDoorbell` refuses what 24H2's `DxgkCreateDoorbellInternal`,
/// `DXGHWQUEUE::CreateDoorbell` and `DXGDOORBELL::Initialize` refuse, each with its status and
/// nothing written back; a success writes the doorbell's and status page's addresses (no
/// secondary one) and `hDoorbell`, and under 24H2 no last-queued address.
#[test]
fn um_03_d3dkmtcreatedoorbell_answers_as_24h2() {
    const T: &str = "D3DKMTCreateDoorbell";
    let m = machine(true, true);
    let (p, _, _) = process(&m);
    let (ctx, q, ring, control) = ums_queue(&p);
    let kq = hw_queue(&p, ctx, 0);
    let (q2, _, _) = process(&m);
    let other_ring = allocation(&q2, AllocationKind::Commands);
    let mut pdd = DoorbellPdd::for_ring(4096);
    let base = create_doorbell_args(q, ring, control, &mut pdd);
    let pdd_at = base[3];
    type Edit = Box<dyn Fn(&mut [u64; 9])>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "PrivateDriverData without size, or a size without pointer",
            Box::new(|s| put32(s, 16, 0)),
        ),
        (
            "PrivateDriverData without size, or a size without pointer",
            Box::new(|s| s[3] = 0),
        ),
        (
            "PrivateDriverDataSize above 16",
            Box::new(|s| put32(s, 16, 17)),
        ),
        (
            "the private data not readable",
            Box::new(|s| s[3] = UNMAPPED),
        ),
        ("a Flags bit from 2 up", Box::new(|s| put32(s, 12, 4))),
        (
            "hHwQueue not a user-mode-submission queue in the caller's handle table",
            Box::new(|s| put32(s, 0, 0x1234)),
        ),
        (
            "hHwQueue not a user-mode-submission queue in the caller's handle table",
            Box::new(move |s| put32(s, 0, kq)),
        ),
        (
            "RequireSecondaryCpuVA on an adapter without secondary doorbells",
            Box::new(|s| put32(s, 12, 1)),
        ),
        (
            "hRingBuffer not an allocation of the queue's device",
            Box::new(move |s| put32(s, 4, other_ring)),
        ),
        (
            "hRingBufferControl not an allocation of the queue's device",
            Box::new(|s| put32(s, 8, 0x1234)),
        ),
    ];
    let mut driven = refusals(&p, T, base, cases);
    let mut s = base;
    s[7] = 0xAAAA;
    assert_eq!(thunk(&p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert!(s[4] != 0 && s[6] != 0, "the doorbell's addresses: {s:x?}");
    assert_eq!(s[5], 0, "DoorbellSecondaryCPUVirtualAddress");
    assert_ne!(get32(&s, 64), 0, "hDoorbell");
    assert_eq!(s[3], pdd_at, "PrivateDriverData");
    if m.os_config().windows.reading().name == "24h2" {
        assert_eq!(s[7], 0xAAAA, "a last-queued address 24H2 does not write");
    }
    driven.extend(refusals(
        &p,
        T,
        base,
        vec![(
            "a doorbell already on the queue",
            Box::new(|_: &mut [u64; 9]| {}) as Box<dyn Fn(&mut [u64; 9])>,
        )],
    ));
    assert_covers(
        T,
        &driven,
        &[
            (
                "no pool for the private data",
                "a pool allocation failure no caller can cause",
            ),
            (
                "the device not active",
                common::dll_world::BY_DEVICE_LOSS_THUNKS,
            ),
        ],
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-09, UM-19: `D3DKMTConnectDoorbell` and `D3DKMTNotifyWorkSubmission` refuse reserved
/// flags and a handle that names no doorbell of the caller's; a connect succeeds, and again
/// (connected: no DDI); a notification on a doorbell whose status page does not read
/// CONNECTED_NOTIFY_KMD is STATUS_INVALID_PARAMETER.
#[test]
fn um_09_d3dkmtconnectdoorbell_and_notify_answer_as_24h2() {
    const C: &str = "D3DKMTConnectDoorbell";
    const N: &str = "D3DKMTNotifyWorkSubmission";
    let m = machine(true, true);
    let (p, _, _) = process(&m);
    let (_, q, ring, control) = ums_queue(&p);
    let db = doorbell(&p, q, ring, control);
    let base = [u64::from(db)];
    type Edit = Box<dyn Fn(&mut [u64; 1])>;
    let cases = || -> Vec<(&str, Edit)> {
        vec![
            ("Flags non-zero", Box::new(|s| put32(s, 4, 1))),
            (
                "hDoorbell not a doorbell in the caller's handle table",
                Box::new(|s| put32(s, 0, 0x1234)),
            ),
            (
                "hDoorbell not a doorbell in the caller's handle table",
                Box::new(move |s| put32(s, 0, q)),
            ),
        ]
    };
    // Before the connect the status is DISCONNECTED_RETRY.
    let mut n = cases();
    n.push((
        "the doorbell's status not CONNECTED_NOTIFY_KMD",
        Box::new(|_| {}),
    ));
    let n_driven = refusals(&p, N, base, n);
    let c_driven = refusals(&p, C, base, cases());
    for _ in 0..2 {
        let mut s = base;
        assert_eq!(thunk(&p, C, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    }
    let status = m.doorbell_info(0, db).map(|d| d.status);
    let mut s = base;
    let r = thunk(&p, N, s.as_mut_ptr() as u64);
    if status == Some(1) {
        assert_eq!(r, STATUS_SUCCESS, "CONNECTED_NOTIFY_KMD");
    } else {
        assert_eq!(r, STATUS_INVALID_PARAMETER, "status {status:?}");
    }
    let race = "a race with D3DKMTDestroyHwQueue on another thread";
    assert_covers(
        C,
        &c_driven,
        &[
            ("the doorbell's queue being destroyed", race),
            (
                "the device not active",
                common::dll_world::BY_DEVICE_LOSS_THUNKS,
            ),
            (
                "the doorbell's status DISCONNECTED_ABORT",
                "only after the device is lost (UM-14's suites)",
            ),
        ],
    );
    assert_covers(
        N,
        &n_driven,
        &[
            ("the doorbell's queue being destroyed", race),
            (
                "the device not active",
                common::dll_world::BY_DEVICE_LOSS_THUNKS,
            ),
        ],
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-07: the destroy thunks refuse a handle that names no object of theirs in the caller's
/// table (STATUS_INVALID_PARAMETER) and destroy what they name: a doorbell, then its queue,
/// then the queue's context; each a second time is refused.
#[test]
fn um_07_destroy_thunks_answer_as_24h2() {
    let m = machine(true, true);
    let (p, _, _) = process(&m);
    let (ctx, q, ring, control) = ums_queue(&p);
    let db = doorbell(&p, q, ring, control);
    let steps: [(&str, &str, u32, u32); 3] = [
        (
            "D3DKMTDestroyDoorbell",
            "hDoorbell not a doorbell in the caller's handle table",
            db,
            q,
        ),
        (
            "D3DKMTDestroyHwQueue",
            "hHwQueue not a queue in the caller's handle table",
            q,
            ctx,
        ),
        (
            "D3DKMTDestroyContext",
            "hContext not a context in the caller's handle table",
            ctx,
            0x1234,
        ),
    ];
    for (name, what, h, wrong) in steps {
        for bad in [0x1234, wrong] {
            let mut s = [u64::from(bad)];
            let r = thunk(&p, name, s.as_mut_ptr() as u64);
            assert_eq!(r, expected(name, what), "{name}: {bad:#x}");
        }
        let mut s = [u64::from(h)];
        assert_eq!(
            thunk(&p, name, s.as_mut_ptr() as u64),
            STATUS_SUCCESS,
            "{name}"
        );
        assert_eq!(
            thunk(&p, name, s.as_mut_ptr() as u64),
            expected(name, what),
            "{name} twice"
        );
        let not_driven: &[(&str, &str)] = if name == "D3DKMTDestroyDoorbell" {
            &[
                (
                    "the doorbell's queue being destroyed",
                    "a race with D3DKMTDestroyHwQueue on another thread",
                ),
                (
                    "the device not active",
                    common::dll_world::BY_DEVICE_LOSS_THUNKS,
                ),
            ]
        } else {
            &[]
        };
        assert_covers(name, &[what], not_driven);
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-01: `D3DKMTSubmitCommand` refuses a context created `SynchronizationOnly`
/// (STATUS_INVALID_PARAMETER, 24H2 `K:DxgkSubmitCommandInternal` @0x1402A4B90 tests the
/// context's flag) and submits nothing.
#[test]
fn um_01_d3dkmtsubmitcommand_refuses_a_synchronization_only_context() {
    let m = machine(false, true);
    let (p, _, adapter) = process(&m);
    let (_, va) = buffer_4k(&p, adapter);
    let ctx = raw_context(&p, SYNCHRONIZATION_ONLY);
    let before = m.legacy_fences(0, 0);
    let mut s = submit_command(ctx, va, 8);
    assert_eq!(
        thunk(&p, "D3DKMTSubmitCommand", s.as_mut_ptr() as u64),
        expected(
            "D3DKMTSubmitCommand",
            "BroadcastContext[0] SynchronizationOnly"
        )
    );
    assert_eq!(m.legacy_fences(0, 0), before, "something was submitted");
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-07: `D3DKMTDestroyContext` on a context whose queues are live takes them along, newest
/// first, each with its doorbell (24H2 `K:DXGCONTEXT::DestroyAllHwQueues` @0x1403A0E60), and
/// `D3DKMTDestroyHwQueue` takes the queue's doorbell along (`K:DXGHWQUEUE::DestroyCoreState`
/// @0x1402CDD74); `D3DKMTDestroyDoorbell` disconnects a connected doorbell before destroying
/// it (`K:DXGDOORBELL::DestroyCoreState` @0x1401D804C): the attacker's order, a connected doorbell and a kernel queue with work
/// submitted, with no fault in the driver or the OS; the handles destroyed along name nothing
/// after.
#[test]
fn um_07_destroy_takes_queues_and_doorbells_along() {
    let m = machine(true, true);
    let (p, _, adapter) = process(&m);
    let (_, va) = buffer_4k(&p, adapter);
    let destroy = |name: &str, h: u32| {
        let mut s = [u64::from(h)];
        thunk(&p, name, s.as_mut_ptr() as u64)
    };
    // A connected doorbell destroyed on its own: disconnected first, as
    // `K:DXGDOORBELL::DestroyCoreState` does, then destroyed.
    let (_, q, ring, control) = ums_queue(&p);
    let db = doorbell(&p, q, ring, control);
    assert_eq!(destroy("D3DKMTConnectDoorbell", db), STATUS_SUCCESS);
    let before = m.ums_events(0).len();
    assert_eq!(destroy("D3DKMTDestroyDoorbell", db), STATUS_SUCCESS);
    let ev = m.ums_events(0);
    let at = |f: &dyn Fn(&UmsEvent) -> bool| ev[before..].iter().position(f);
    let disconnected =
        at(&|e| matches!(e, UmsEvent::DisconnectDoorbell { doorbell, .. } if *doorbell == db));
    let destroyed = at(&|e| matches!(e, UmsEvent::DestroyDoorbell { doorbell } if *doorbell == db));
    assert!(
        matches!((disconnected, destroyed), (Some(a), Some(b)) if a < b),
        "disconnect, then destroy: {:?}",
        &ev[before..]
    );
    assert_eq!(destroy("D3DKMTDestroyHwQueue", q), STATUS_SUCCESS);
    // A queue destroyed with its connected doorbell.
    let (_, q, ring, control) = ums_queue(&p);
    let db = doorbell(&p, q, ring, control);
    assert_eq!(destroy("D3DKMTConnectDoorbell", db), STATUS_SUCCESS);
    assert_eq!(destroy("D3DKMTDestroyHwQueue", q), STATUS_SUCCESS);
    assert_eq!(
        destroy("D3DKMTDestroyDoorbell", db),
        STATUS_INVALID_PARAMETER
    );
    // A context destroyed with a kernel queue running work and a user-mode queue whose
    // doorbell is connected.
    let (ctx, uq, ring, control) = ums_queue(&p);
    let db = doorbell(&p, uq, ring, control);
    assert_eq!(destroy("D3DKMTConnectDoorbell", db), STATUS_SUCCESS);
    let kq = hw_queue(&p, ctx, 0);
    let mut s = submit_args(kq, 1, va, 8);
    let r = thunk(&p, "D3DKMTSubmitCommandToHwQueue", s.as_mut_ptr() as u64);
    assert_eq!(r, STATUS_SUCCESS, "the submission");
    let before = m.ums_events(0).len();
    assert_eq!(destroy("D3DKMTDestroyContext", ctx), STATUS_SUCCESS);
    // 24H2 walks the context's list, where each new queue went in at the head: newest first.
    let gone: Vec<u32> = m.ums_events(0)[before..]
        .iter()
        .filter_map(|e| match e {
            UmsEvent::DestroyHwQueue { queue } => Some(*queue),
            _ => None,
        })
        .collect();
    assert_eq!(gone, [kq, uq], "the context's queues, newest first");
    for (name, h) in [
        ("D3DKMTDestroyDoorbell", db),
        ("D3DKMTDestroyHwQueue", uq),
        ("D3DKMTDestroyHwQueue", kq),
        ("D3DKMTDestroyContext", ctx),
    ] {
        assert_eq!(destroy(name, h), STATUS_INVALID_PARAMETER, "{name} after");
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-01: `D3DKMTSubmitCommand` refuses what 24H2's `K:DxgkSubmitCommandInternal`
/// @0x1402A4B90 refuses, in its order, each with the catalog's status, nothing written back
/// and nothing submitted; past them an empty buffer on one legacy context succeeds.
#[test]
fn um_01_d3dkmtsubmitcommand_answers_as_24h2() {
    const T: &str = "D3DKMTSubmitCommand";
    type Edit = Box<dyn Fn(&mut [u64; 48])>;
    // Without test signing, on hardware-scheduled nodes.
    let m = machine(true, false);
    let (p, _, adapter) = process(&m);
    let (_, va) = buffer_4k(&p, adapter);
    let hwq = raw_context(&p, HW_QUEUE_SUPPORTED);
    let mut driven = refusals(
        &p,
        T,
        submit_command(hwq, va, 8),
        vec![
            (
                "Flags.NoKmdAccess without test signing",
                Box::new(|s: &mut [u64; 48]| set_u32(s, 12, 1 << 2)) as Edit,
            ),
            (
                "BroadcastContext[0] created with HwQueueSupported",
                Box::new(|_: &mut [u64; 48]| {}),
            ),
        ],
    );
    // On contexts the OS schedules.
    let m = machine(false, true);
    let (p, _, adapter) = process(&m);
    let (_, va) = buffer_4k(&p, adapter);
    let ctx = raw_context(&p, 0);
    let sync = raw_context(&p, SYNCHRONIZATION_ONLY);
    let before = m.legacy_fences(0, 0);
    driven.extend(refusals(
        &p,
        T,
        submit_command(ctx, va, 8),
        vec![
            (
                "BroadcastContext[0] not in the caller's handle table",
                Box::new(|s: &mut [u64; 48]| set_u32(s, 28, 0x1234)) as Edit,
            ),
            (
                "BroadcastContext[0] SynchronizationOnly",
                Box::new(move |s: &mut [u64; 48]| set_u32(s, 28, sync)),
            ),
            (
                "BroadcastContextCount 0 or above 64",
                Box::new(|s: &mut [u64; 48]| set_u32(s, 24, 0)),
            ),
            (
                "BroadcastContextCount 0 or above 64",
                Box::new(|s: &mut [u64; 48]| set_u32(s, 24, 65)),
            ),
            (
                "NumPrimaries above 16",
                Box::new(|s: &mut [u64; 48]| set_u32(s, 300, 17)),
            ),
            (
                "a further broadcast context unknown, synchronisation-only or of another device",
                Box::new(|s: &mut [u64; 48]| {
                    set_u32(s, 24, 2);
                    set_u32(s, 32, 0x1234);
                }),
            ),
            (
                "a further broadcast context unknown, synchronisation-only or of another device",
                Box::new(move |s: &mut [u64; 48]| {
                    set_u32(s, 24, 2);
                    set_u32(s, 32, sync);
                }),
            ),
        ],
    ));
    assert_eq!(m.legacy_fences(0, 0), before, "a refusal submitted");
    assert_covers(
        T,
        &driven,
        &[
            (
                "Flags.PresentRedirected from a virtual machine",
                "the simulated OS is no guest",
            ),
            (
                "a further broadcast context created with HwQueueSupported",
                "a device has contexts of one kind: its adapter's nodes are all scheduled alike",
            ),
            (
                "the context not virtual",
                "every context a process makes is virtual (D3DKMTCreateContextVirtual)",
            ),
        ],
    );
    // Past the checks: a CommandLength of 0 submits nothing and succeeds.
    let mut s = submit_command(ctx, va, 0);
    assert_eq!(thunk(&p, T, s.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}
