//! The memory thunks the shipped `rvgpu_umd.dll` calls (paging queues, residency, locks,
//! cache invalidation, GPU VA; allocations are `pe_thunks_allocation`), called raw in the
//! DLL's own process as 24H2 answers them: each of the thunk catalog's checks
//! (`rvgpu_simos::kmt::catalog`) driven with its status, or said undrivable; a refusal writes
//! nothing back; a success writes back what 24H2 writes.

mod common;

use std::sync::Arc;

use common::conformance::{assert_covers, expected};
use common::dll::*;
use common::dll_world::*;
use rvgpu_simos::kmt::gpu_va::{
    D3DDDI_MAPGPUVIRTUALADDRESS, D3DDDI_RESERVEGPUVIRTUALADDRESS, D3DKMT_FREEGPUVIRTUALADDRESS,
};
use rvgpu_umd::kmt::Kmt as _;

const PENDING: u64 = rvgpu_ddi::ntstatus::STATUS_PENDING as u64;
/// `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE` bits.
const WRITE: u64 = 1;
const NO_ACCESS: u64 = 1 << 3;
const SYSTEM_USE_ONLY: u64 = 1 << 4;

fn reserve(h: u32, size: u64, reservation_type: i32) -> D3DDDI_RESERVEGPUVIRTUALADDRESS {
    D3DDDI_RESERVEGPUVIRTUALADDRESS {
        hPagingQueue: h,
        Size: size,
        ReservationType: reservation_type,
        VirtualAddress: UNTOUCHED,
        PagingFenceValue: UNTOUCHED,
        ..Default::default()
    }
}

/// DDI-03: `D3DKMTReserveGpuVirtualAddress` from the DLL's process refuses what 24H2 refuses
/// (`K:DxgkReserveGpuVirtualAddress` @0x140399110) and writes nothing then; a reservation
/// named by a paging queue of the process succeeds as one named by its adapter does
/// (24H2 opens the handle as either), writing `VirtualAddress` and leaving
/// `PagingFenceValue` as the caller wrote it. `D3DKMTFreeGpuVirtualAddress` frees it.
#[test]
fn ddi_03_d3dkmtreservegpuvirtualaddress_answers_as_24h2() {
    const T: &str = "D3DKMTReserveGpuVirtualAddress";
    // The second device makes the adapter name two VA spaces: drop it for the adapter cases.
    let w = world();
    let mut d = [w.other_device, 0];
    assert_eq!(
        w.call("D3DKMTDestroyDevice", &mut d),
        STATUS_SUCCESS,
        "the second device goes"
    );
    let cases: [(&str, u32, i32); 5] = [
        ("ReservationType above RESERVE_ZERO", w.adapter, 2),
        (
            "hPagingQueue neither a paging queue nor an adapter in the caller's handle table",
            BAD_HANDLE,
            0,
        ),
        (
            "hPagingQueue neither a paging queue nor an adapter in the caller's handle table",
            w.allocation,
            0,
        ),
        ("RESERVE_ZERO named by an adapter", w.adapter, 1),
        ("a negative ReservationType", w.adapter, -1),
    ];
    let mut driven = Vec::new();
    for (what, h, ty) in cases {
        let mut r = reserve(h, 0x1_0000, ty);
        assert_eq!(w.call(T, &mut r), expected(T, what), "{what}");
        assert_eq!(
            (r.VirtualAddress, r.PagingFenceValue),
            (UNTOUCHED, UNTOUCHED),
            "{what}: nothing written"
        );
        driven.push(what);
    }
    assert_covers(T, &driven, &[]);
    for h in [w.adapter, w.queue] {
        let mut r = reserve(h, 0x1_0000, 0);
        assert_eq!(w.call(T, &mut r), STATUS_SUCCESS, "named by {h:#x}");
        assert!(r.VirtualAddress != UNTOUCHED && r.VirtualAddress != 0);
        assert_eq!(r.VirtualAddress % 0x1_0000, 0);
        assert_eq!(r.PagingFenceValue, UNTOUCHED, "PagingFenceValue as written");
        let mut f = D3DKMT_FREEGPUVIRTUALADDRESS {
            hAdapter: w.adapter,
            BaseAddress: r.VirtualAddress,
            Size: 0x1_0000,
            ..Default::default()
        };
        assert_eq!(
            w.call("D3DKMTFreeGpuVirtualAddress", &mut f),
            STATUS_SUCCESS
        );
    }
    w.done();
}

/// DDI-03: `D3DKMTFreeGpuVirtualAddress` names the VA space by an adapter of the caller
/// (`K:DxgkFreeGpuVirtualAddress` @0x14039BD40): any other handle is refused and the range
/// stays reserved (a second free of it then succeeds).
#[test]
fn ddi_03_d3dkmtfreegpuvirtualaddress_answers_as_24h2() {
    const T: &str = "D3DKMTFreeGpuVirtualAddress";
    let w = world();
    let mut d = [w.other_device, 0];
    assert_eq!(w.call("D3DKMTDestroyDevice", &mut d), STATUS_SUCCESS);
    let mut r = reserve(w.adapter, 0x1_0000, 0);
    assert_eq!(
        w.call("D3DKMTReserveGpuVirtualAddress", &mut r),
        STATUS_SUCCESS
    );
    let what = "hAdapter not in the caller's handle table";
    for h in [BAD_HANDLE, w.queue, w.device] {
        let mut f = D3DKMT_FREEGPUVIRTUALADDRESS {
            hAdapter: h,
            BaseAddress: r.VirtualAddress,
            Size: 0x1_0000,
            ..Default::default()
        };
        assert_eq!(w.call(T, &mut f), expected(T, what), "{h:#x}");
    }
    assert_covers(T, &[what], &[]);
    let mut f = D3DKMT_FREEGPUVIRTUALADDRESS {
        hAdapter: w.adapter,
        BaseAddress: r.VirtualAddress,
        Size: 0x1_0000,
        ..Default::default()
    };
    assert_eq!(w.call(T, &mut f), STATUS_SUCCESS, "still reserved");
    w.done();
}

fn map(queue: u32, allocation: u32, protection: u64) -> D3DDDI_MAPGPUVIRTUALADDRESS {
    D3DDDI_MAPGPUVIRTUALADDRESS {
        hPagingQueue: queue,
        hAllocation: allocation,
        SizeInPages: 1,
        Protection: protection,
        VirtualAddress: UNTOUCHED,
        PagingFenceValue: UNTOUCHED,
        ..Default::default()
    }
}

/// DDI-03: `D3DKMTMapGpuVirtualAddress` from the DLL's process refuses what 24H2 refuses
/// (`K:DxgkMapGpuVirtualAddress` @0x140321DB0, `M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddress`
/// @0x1400F4F90) and writes nothing then. A map succeeds (or is PENDING behind the queue's
/// paging work) with `VirtualAddress` and `PagingFenceValue` written, and an unaligned
/// `BaseAddress` inside a reserved range is rounded down to its 4 KiB page, as VidMm does.
#[test]
fn ddi_03_d3dkmtmapgpuvirtualaddress_answers_as_24h2() {
    const T: &str = "D3DKMTMapGpuVirtualAddress";
    let w = world();
    let cases: [(&str, u32, u32, u64); 7] = [
        (
            "hPagingQueue not in the caller's handle table",
            BAD_HANDLE,
            w.allocation,
            WRITE,
        ),
        (
            "hPagingQueue not in the caller's handle table",
            w.allocation,
            w.allocation,
            WRITE,
        ),
        (
            "Protection.SystemUseOnly or a reserved bit",
            w.queue,
            w.allocation,
            SYSTEM_USE_ONLY,
        ),
        (
            "Protection.SystemUseOnly or a reserved bit",
            w.queue,
            w.allocation,
            1 << 5,
        ),
        (
            "without Zero or NoAccess, hAllocation not in the caller's handle table",
            w.queue,
            w.queue,
            WRITE,
        ),
        (
            "hAllocation of another device than the paging queue's",
            w.other_queue,
            w.allocation,
            WRITE,
        ),
        (
            "NoAccess with Write, Execute or Zero",
            w.queue,
            0,
            NO_ACCESS | WRITE,
        ),
    ];
    let mut driven = Vec::new();
    for (what, queue, allocation, protection) in cases {
        let mut a = map(queue, allocation, protection);
        assert_eq!(w.call(T, &mut a), expected(T, what), "{what}");
        assert_eq!(
            (a.VirtualAddress, a.PagingFenceValue),
            (UNTOUCHED, UNTOUCHED),
            "{what}: nothing written"
        );
        driven.push(what);
    }
    assert_covers(
        T,
        &driven,
        &[
            (
                "the device not active",
                "a stopped device: um_10_d3dkmtmapgpuvirtualaddress_on_a_device_in_error_answers_as_24h2",
            ),
            (
                "hAllocation without a VidMm allocation",
                "only a paravirtualized device's allocations have none",
            ),
        ],
    );
    // A reserved range, and the allocation mapped at an unaligned address inside it.
    let mut d = [w.other_device, 0];
    assert_eq!(w.call("D3DKMTDestroyDevice", &mut d), STATUS_SUCCESS);
    let mut r = reserve(w.adapter, 0x1_0000, 0);
    assert_eq!(
        w.call("D3DKMTReserveGpuVirtualAddress", &mut r),
        STATUS_SUCCESS
    );
    let mut a = map(w.queue, w.allocation, WRITE);
    a.BaseAddress = r.VirtualAddress + 0x1234;
    let s = w.call(T, &mut a);
    assert!(s == STATUS_SUCCESS || s == PENDING, "{s:#x}");
    assert_eq!(a.VirtualAddress, r.VirtualAddress + 0x1000, "rounded down");
    assert_ne!(a.PagingFenceValue, UNTOUCHED);
    w.done();
}

/// DDI-03: `D3DKMTCreatePagingQueue` refuses what 24H2 refuses
/// (`K:DxgkCreatePagingQueueInternal` @0x1403967CC) and writes nothing then; a queue comes
/// back with its handle, fence and the fence's CPU address.
/// `D3DKMTDestroyPagingQueue` (`K:DxgkDestroyPagingQueueInternal` @0x1403B201C) takes only a
/// paging queue of the caller.
#[test]
fn ddi_03_paging_queue_create_and_destroy_answer_as_24h2() {
    let w = world();
    const C: &str = "D3DKMTCreatePagingQueue";
    let cases: [(&str, u32, u32); 3] = [
        ("hDevice not in the caller's handle table", BAD_HANDLE, 0),
        ("hDevice not in the caller's handle table", w.queue, 0),
        (
            "PhysicalAdapterIndex at or past the adapter's physical adapters",
            w.device,
            1,
        ),
    ];
    let mut driven = Vec::new();
    for (what, device, index) in cases {
        let (s, q) = paging_queue(&w.p, device, |q| {
            q[2] = 0xAAAA;
            q[3] = 0xBBBB;
            q[6] = index;
        });
        assert_eq!(s, expected(C, what), "{what}");
        assert_eq!((q[2], q[3], q[4], q[5]), (0xAAAA, 0xBBBB, 0, 0), "{what}");
        driven.push(what);
    }
    assert_covers(
        C,
        &driven,
        &[("the device not active", BY_DEVICE_LOSS_THUNKS)],
    );
    let (s, q) = paging_queue(&w.p, w.device, |_| {});
    assert_eq!(s, STATUS_SUCCESS);
    assert!(q[2] != 0 && q[3] != 0 && (q[4] != 0 || q[5] != 0), "{q:?}");
    const D: &str = "D3DKMTDestroyPagingQueue";
    let what = "hPagingQueue not a paging queue in the caller's handle table";
    for h in [BAD_HANDLE, w.device, w.allocation, q[3]] {
        let mut d = [h, 0];
        assert_eq!(w.call(D, &mut d), expected(D, what), "{h:#x}");
    }
    assert_covers(D, &[what], &[]);
    let mut d = [q[2], 0];
    assert_eq!(w.call(D, &mut d), STATUS_SUCCESS);
    assert_eq!(w.call(D, &mut d), expected(D, what), "gone");
    w.done();
}

/// `D3DDDI_MAKERESIDENT` of `count` handles at `list` on `queue` with `flags`: the status and
/// (`PagingFenceValue`, `NumBytesToTrim`).
fn make_resident(w: &World, queue: u32, count: u32, list: u64, flags: u32) -> (u64, u64, u64) {
    // hPagingQueue, NumAllocations, AllocationList, PriorityList, Flags, PagingFenceValue
    // (word 4), NumBytesToTrim (word 5).
    let mut r = [0u64; 6];
    r[0] = u64::from(queue) | (u64::from(count) << 32);
    r[1] = list;
    r[3] = u64::from(flags);
    r[4] = UNTOUCHED;
    r[5] = UNTOUCHED;
    let s = w.call("D3DKMTMakeResident", &mut r);
    (s, r[4], r[5])
}

/// DDI-03: `D3DKMTMakeResident` from the DLL's process checks its arguments in 24H2's order
/// (`K:DxgkMakeResidentInternal` @0x1402A7570) and writes neither output on a refusal; each
/// valid flag value is accepted, queued behind the paging queue's work (STATUS_PENDING with
/// the queue's next fence value).
#[test]
fn ddi_03_d3dkmtmakeresident_answers_as_24h2() {
    const T: &str = "D3DKMTMakeResident";
    let w = world();
    let list = [w.allocation];
    let at = list.as_ptr() as u64;
    let bad = [BAD_HANDLE];
    let cases: [(&str, u32, u32, u64, u32); 8] = [
        ("NumAllocations 0", w.queue, 0, at, 0),
        ("AllocationList NULL", w.queue, 1, 0, 0),
        ("Flags.Value 4 or more", w.queue, 1, at, 4),
        ("Flags.Value 4 or more", w.queue, 1, at, 0x8000_0000),
        ("Flags.Value 4 or more", 0, 1, at, 4),
        ("hPagingQueue not in the caller's handle table", 0, 1, at, 0),
        (
            "a listed handle not an allocation in the caller's handle table",
            w.queue,
            1,
            bad.as_ptr() as u64,
            0,
        ),
        (
            "an allocation of another device than the paging queue's",
            w.other_queue,
            1,
            at,
            0,
        ),
    ];
    let mut driven = Vec::new();
    for (what, queue, count, list, flags) in cases {
        let (s, fence, trim) = make_resident(&w, queue, count, list, flags);
        assert_eq!(s, expected(T, what), "{what}");
        assert_eq!(
            (fence, trim),
            (UNTOUCHED, UNTOUCHED),
            "{what}: nothing written"
        );
        driven.push(what);
    }
    assert_covers(
        T,
        &driven,
        &[
            ("no pool for more than 40 allocations", "pool exhaustion"),
            ("the device not active", BY_MUST_SUCCEED),
            (
                "a device created without user-mode residency",
                "not modelled: every device the simulation makes takes MakeResident",
            ),
            (
                "over the budget (with MustSucceed the device is put in error, VidSch code 12)",
                BY_MUST_SUCCEED,
            ),
        ],
    );
    let mut last = 0;
    for flags in 0..4 {
        let (s, fence, _) = make_resident(&w, w.queue, 1, at, flags);
        assert!(s == STATUS_SUCCESS || s == PENDING, "Flags {flags}: {s:#x}");
        assert!(fence != UNTOUCHED && fence > last, "Flags {flags}: {fence}");
        last = fence;
    }
    w.done();
}

/// The (hDevice, hAllocation) pairs the thunks taking a device and one of its allocations
/// refuse, each with the check of the catalog it drives.
fn device_allocation_refusals(w: &World) -> [(&'static str, u32, u32); 4] {
    [
        (
            "hDevice not in the caller's handle table",
            BAD_HANDLE,
            w.allocation,
        ),
        (
            "hAllocation not an allocation in the caller's handle table",
            w.device,
            BAD_HANDLE,
        ),
        (
            "hAllocation not an allocation in the caller's handle table",
            w.device,
            w.queue,
        ),
        (
            "hAllocation of another device",
            w.other_device,
            w.allocation,
        ),
    ]
}

/// AL-02: `D3DKMTLock2` and `D3DKMTUnlock2` from the DLL's process refuse what 24H2 refuses
/// (`K:DxgkLock2` @0x1402A3430 / `K:DxgkLock2Internal` @0x1402A3F00, `K:DxgkUnlock2`
/// @0x1402A21C0 / `K:DxgkUnlock2Internal` @0x1402A2B20), `pData` untouched then; a lock of
/// the device's allocation writes its CPU address and the unlock takes it back.
#[test]
fn al_02_d3dkmtlock2_and_unlock2_answer_as_24h2() {
    let w = world();
    let cases = device_allocation_refusals(&w);
    let not_driven = [
        ("the device not active", BY_MUST_SUCCEED),
        (
            "hAllocation on another adapter",
            "the machine has one adapter",
        ),
        (
            "hAllocation without a VidMm allocation",
            "only a paravirtualized device's allocations have none",
        ),
    ];
    let mut driven = Vec::new();
    for (what, device, allocation) in cases {
        assert_eq!(
            lock2(&w, device, allocation),
            (expected("D3DKMTLock2", what), UNTOUCHED),
            "Lock2: {what}"
        );
        assert_eq!(
            unlock2(&w, device, allocation),
            expected("D3DKMTUnlock2", what),
            "Unlock2: {what}"
        );
        driven.push(what);
    }
    assert_covers("D3DKMTLock2", &driven, &not_driven);
    assert_covers("D3DKMTUnlock2", &driven, &not_driven);
    let (s, data) = lock2(&w, w.device, w.allocation);
    assert_eq!(s, STATUS_SUCCESS);
    assert!(data != UNTOUCHED && data != 0);
    assert_eq!(unlock2(&w, w.device, w.allocation), STATUS_SUCCESS);
    w.done();
}

/// AL-06: `D3DKMTInvalidateCache` refuses what 24H2's Dxgkrnl refuses before VidMm
/// (`K:DxgkInvalidateCache` @0x1401B35A0); the device's own allocation is accepted.
#[test]
fn al_06_d3dkmtinvalidatecache_answers_as_24h2() {
    const T: &str = "D3DKMTInvalidateCache";
    let w = world();
    let cases = device_allocation_refusals(&w);
    let mut driven = Vec::new();
    for (what, device, allocation) in cases {
        let mut c = [u64::from(device) | (u64::from(allocation) << 32), 0, 0];
        assert_eq!(w.call(T, &mut c), expected(T, what), "{what}");
        driven.push(what);
    }
    let coherent = "the machine is I/O-coherent, where VidMm succeeds before its range rules \
                    (cache_coherency drives them on a machine that is not)";
    assert_covers(
        T,
        &driven,
        &[
            ("the device not active", BY_MUST_SUCCEED),
            (
                "hAllocation without a VidMm allocation",
                "only a paravirtualized device's allocations have none",
            ),
            (
                "on an adapter needing CPU cache maintenance, Offset at or past the \
                 allocation's end",
                coherent,
            ),
            (
                "on an adapter needing CPU cache maintenance, Length (0: to the end) past the \
                 allocation's end",
                coherent,
            ),
        ],
    );
    let own = u64::from(w.device) | (u64::from(w.allocation) << 32);
    // The whole allocation, and (I/O-coherent: `M:VIDMM_GLOBAL::InvalidateCache` @0x1400956F8
    // returns before its range rules) a range past its end.
    for (offset, length) in [(0, 0), (0, 4096), (4096, 1), (0, u64::MAX)] {
        let mut c = [own, offset, length];
        assert_eq!(w.call(T, &mut c), STATUS_SUCCESS, "{offset:#x}+{length:#x}");
    }
    w.done();
}

/// `D3DKMT_EVICT` of `count` handles at `list` on `device` with `flags`: the status and
/// `NumBytesToTrim`.
fn evict(w: &World, device: u32, count: u32, list: u64, flags: u32) -> (u64, u64) {
    // hDevice, NumAllocations, AllocationList, Flags, NumBytesToTrim (word 3).
    let mut e = [0u64; 4];
    e[0] = u64::from(device) | (u64::from(count) << 32);
    e[1] = list;
    e[2] = u64::from(flags);
    e[3] = UNTOUCHED;
    let s = w.call("D3DKMTEvict", &mut e);
    (s, e[3])
}

/// `D3DKMTInvalidateCache` of the whole of `allocation` on `device`: the status.
fn invalidate(w: &World, device: u32, allocation: u32) -> u64 {
    let mut c = [u64::from(device) | (u64::from(allocation) << 32), 0, 0];
    w.call("D3DKMTInvalidateCache", &mut c)
}

/// DDI-03: `D3DKMTEvict` from the DLL's process checks its arguments in 24H2's order
/// (`K:DxgkEvictInternal` @0x14035E31C) and writes nothing back on a refusal; a listed
/// handle that is not `hDevice`'s allocation also puts `hDevice` in error (VidSch's error: its
/// DXGDEVICE stays active and its Lock2 goes on). An Evict writes
/// `NumBytesToTrim`, whatever VidMm made of each allocation (an Evict past its MakeResident
/// count included: 24H2 does not look at VidMm's answer).
#[test]
fn ddi_03_d3dkmtevict_answers_as_24h2() {
    const T: &str = "D3DKMTEvict";
    let w = world();
    let list = [w.allocation];
    let at = list.as_ptr() as u64;
    let bad = [w.allocation, BAD_HANDLE];
    let cases: [(&str, u32, u32, u64, u32); 8] = [
        ("NumAllocations 0", w.device, 0, at, 0),
        ("AllocationList NULL", w.device, 1, 0, 0),
        ("Flags.Value 4 or more", w.device, 1, at, 4),
        ("Flags.Value 4 or more", BAD_HANDLE, 1, at, 0x8000_0000),
        (
            "hDevice not a device in the caller's handle table",
            BAD_HANDLE,
            1,
            at,
            0,
        ),
        (
            "AllocationList plus NumAllocations wrapping the address space",
            w.device,
            2,
            u64::MAX - 3,
            0,
        ),
        // The last two put their device in error.
        (
            "an allocation of another device than hDevice (the device is marked in error, \
             VidSch code 0xB)",
            w.other_device,
            1,
            at,
            0,
        ),
        (
            "a listed handle not an allocation in the caller's handle table (the device \
             is marked in error, VidSch code 0xB)",
            w.device,
            2,
            bad.as_ptr() as u64,
            0,
        ),
    ];
    // Before the device goes in error: each flag value evicts, writing NumBytesToTrim.
    for flags in 0..4 {
        let (s, _, _) = make_resident(&w, w.queue, 1, at, 0);
        assert!(s == STATUS_SUCCESS || s == PENDING, "MakeResident: {s:#x}");
        let (s, trim) = evict(&w, w.device, 1, at, flags);
        assert_eq!((s, trim), (STATUS_SUCCESS, 0), "Flags {flags}");
    }
    assert_eq!(
        evict(&w, w.device, 1, at, 0),
        (STATUS_SUCCESS, 0),
        "past the MakeResident count: VidMm's answer is not looked at"
    );
    let mut driven = Vec::new();
    for (what, device, count, list, flags) in cases {
        assert_eq!(
            evict(&w, device, count, list, flags),
            (expected(T, what), UNTOUCHED),
            "{what}: nothing written"
        );
        driven.push(what);
    }
    assert_covers(
        T,
        &driven,
        &[
            (
                "no process context",
                "every call comes from the DLL's process",
            ),
            ("the device not active", BY_MUST_SUCCEED),
        ],
    );
    // The device is in error (VidSch code 0xB); its DXGDEVICE stays active
    // (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550), so its Lock2 goes on.
    let d = w.p.devices()[0];
    assert_ne!(
        w.m.kmt(&d).device_execution_state(),
        Ok(rvgpu_umd::kmt::DeviceExecutionState::ACTIVE),
        "the device is in error"
    );
    assert_eq!(lock2(&w, w.device, w.allocation).0, STATUS_SUCCESS);
    w.done();
}

/// A GPU-only allocation of `bytes` on `device` (raw `D3DKMTCreateAllocation2`, private data
/// without `ALLOCATION_CPU_VISIBLE`): its handle.
fn gpu_only(w: &World, device: u32, bytes: u64) -> u32 {
    let mut pdd =
        rvgpu_umd::kmt::allocation_private_data(bytes, rvgpu_hw::pdd::AllocationKind::Buffer);
    pdd.flags = 0;
    let data = zerocopy::IntoBytes::as_bytes(&pdd).to_vec();
    // D3DDDI_ALLOCATIONINFO2 and D3DKMT_CREATEALLOCATION as in the CreateAllocation2 cases.
    let mut info = [0u64; 12];
    info[2] = data.as_ptr() as u64;
    info[3] = data.len() as u64;
    let mut args = [0u64; 9];
    args[0] = u64::from(device);
    args[5] = 1 << 32;
    args[6] = info.as_mut_ptr() as u64;
    assert_eq!(w.call("D3DKMTCreateAllocation2", &mut args), STATUS_SUCCESS);
    info[0] as u32
}

/// A world whose VRAM budget is 1 MiB with `w.device` put in error by VidMm: a MustSucceed
/// `D3DKMTMakeResident` of two 1 MiB allocations (returned) over the budget.
fn in_error_by_must_succeed() -> (World, [u32; 2]) {
    const BYTES: u64 = 1 << 20;
    const MUST_SUCCEED: u32 = 1 << 1;
    const NO_MEMORY: u64 = 0xC000_0017;
    let mut cfg = rvgpu_simos::MachineConfig::single(rvgpu_simos::Mode::Threaded);
    cfg.driver = rvgpu_simos::pe::DriverBuild::Pe(None);
    cfg.os.vram_budget = Some(BYTES);
    let w = world_on(Arc::new(common::started(cfg)));
    let big = [gpu_only(&w, w.device, BYTES), gpu_only(&w, w.device, BYTES)];
    let at = big.as_ptr() as u64;
    for flags in [0, MUST_SUCCEED] {
        let (s, fence, trim) = make_resident(&w, w.queue, 2, at, flags);
        assert_eq!((s, fence), (NO_MEMORY, UNTOUCHED), "Flags {flags}");
        assert!(
            trim != UNTOUCHED && trim >= BYTES,
            "NumBytesToTrim {trim:#x}"
        );
    }
    let d = w.p.devices()[0];
    assert_ne!(
        w.m.kmt(&d).device_execution_state(),
        Ok(rvgpu_umd::kmt::DeviceExecutionState::ACTIVE),
        "the device in error"
    );
    (w, big)
}

/// DDI-03: `D3DKMTMakeResident` past the process's VRAM budget is STATUS_NO_MEMORY with
/// `NumBytesToTrim`; with `MustSucceed` VidMm also puts the device in error
/// (`M:VIDMM_GLOBAL::MakeResident` @0x1400B93C8, code 12; the `D3DDDI_MAKERESIDENT_FLAGS`
/// page says the same), which its execution state shows. The DXGDEVICE stays active
/// (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550 reads only its state, +608), so its
/// memory thunks go on; once the adapter is removed (the device stopped) each answers
/// STATUS_DEVICE_REMOVED and writes nothing back.
#[test]
fn ddi_03_makeresident_mustsucceed_over_budget_puts_the_device_in_error() {
    const REMOVED: u64 = rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED as u32 as u64;
    let (w, big) = in_error_by_must_succeed();
    let at = big.as_ptr() as u64;
    assert_eq!(
        invalidate(&w, w.device, big[0]),
        STATUS_SUCCESS,
        "InvalidateCache"
    );
    assert_eq!(evict(&w, w.device, 1, at, 0).0, STATUS_SUCCESS, "Evict");
    // The adapter removed: its DXGDEVICEs stopped (`K:DXGDEVICE::Stop` @0x1401BBA38).
    assert!(w.m.device_removed(0).is_ok(), "{:?}", w.m.fault());
    let what = "the device not active";
    assert_eq!(expected("D3DKMTLock2", what), REMOVED);
    assert_eq!(
        invalidate(&w, w.device, w.allocation),
        expected("D3DKMTInvalidateCache", what)
    );
    assert_eq!(
        evict(&w, w.device, 1, at, 0),
        (expected("D3DKMTEvict", what), UNTOUCHED),
        "Evict"
    );
    assert_eq!(
        make_resident(&w, w.queue, 1, at, 0),
        (expected("D3DKMTMakeResident", what), UNTOUCHED, UNTOUCHED),
        "MakeResident"
    );
    w.done();
}

/// UM-10: a device VidSch put in error (VidMm's MustSucceed, code 12) stays an active
/// DXGDEVICE: `K:DxgkLock2` @0x1402A3430 refuses only a device whose state (+608) is not
/// active (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550, inlined; only the adapter's reset,
/// `K:DXGDEVICE::Reset` @0x1401BB7FC, and stop change it), so its Lock2 maps the allocation and
/// its Unlock2 succeeds; once the adapter is removed both are STATUS_DEVICE_REMOVED and
/// `pData` is left as it was.
#[test]
fn um_10_d3dkmtlock2_on_a_device_in_error_answers_as_24h2() {
    let (w, _) = in_error_by_must_succeed();
    let (s, data) = lock2(&w, w.device, w.allocation);
    assert_eq!(s, STATUS_SUCCESS, "Lock2 of the device in error");
    assert!(data != UNTOUCHED && data != 0, "pData {data:#x}");
    assert_eq!(unlock2(&w, w.device, w.allocation), STATUS_SUCCESS);
    // The adapter removed: its DXGDEVICEs stopped (`K:DXGDEVICE::Stop` @0x1401BBA38).
    assert!(w.m.device_removed(0).is_ok(), "{:?}", w.m.fault());
    let what = "the device not active";
    assert_eq!(
        lock2(&w, w.device, w.allocation),
        (expected("D3DKMTLock2", what), UNTOUCHED),
        "Lock2 of a stopped device"
    );
    assert_eq!(
        unlock2(&w, w.device, w.allocation),
        expected("D3DKMTUnlock2", what),
        "Unlock2 of a stopped device"
    );
    w.done();
}

/// UM-10: `K:DxgkMapGpuVirtualAddress` @0x140321DB0 checks the paging queue's device only
/// through its core access (DXGDEVICE +608 active, `K:COREDEVICEACCESS::AcquireShared`
/// @0x14000F550), and VidMm's map (`M:VIDMM_GLOBAL::VidMmMapGpuVirtualAddressInternal`
/// @0x1400F5180) looks at no device state: a device VidSch put in error (VidMm's MustSucceed,
/// code 12) maps, with `VirtualAddress` and `PagingFenceValue` written; once the adapter is
/// removed the map is STATUS_DEVICE_REMOVED and writes nothing.
#[test]
fn um_10_d3dkmtmapgpuvirtualaddress_on_a_device_in_error_answers_as_24h2() {
    const T: &str = "D3DKMTMapGpuVirtualAddress";
    let (w, _) = in_error_by_must_succeed();
    let mut a = map(w.queue, w.allocation, WRITE);
    let s = w.call(T, &mut a);
    assert!(
        s == STATUS_SUCCESS || s == PENDING,
        "Map of the device in error: {s:#x}"
    );
    assert!(
        a.VirtualAddress != UNTOUCHED && a.VirtualAddress != 0,
        "VirtualAddress {:#x}",
        a.VirtualAddress
    );
    assert_ne!(a.PagingFenceValue, UNTOUCHED);
    // The adapter removed: its DXGDEVICEs stopped (`K:DXGDEVICE::Stop` @0x1401BBA38).
    assert!(w.m.device_removed(0).is_ok(), "{:?}", w.m.fault());
    let what = "the device not active";
    let mut a = map(w.queue, w.allocation, WRITE);
    assert_eq!(
        w.call(T, &mut a),
        expected(T, what),
        "Map of a stopped device"
    );
    assert_eq!(
        (a.VirtualAddress, a.PagingFenceValue),
        (UNTOUCHED, UNTOUCHED),
        "nothing written"
    );
    w.done();
}

/// UM-10: `K:DxgkCreateAllocationInternal` @0x140304ED8's device access
/// (`K:COREDEVICEACCESS::AcquireShared` @0x14000F550) refuses only a device that is not
/// active (+608); a device VidSch put in error (VidMm's MustSucceed, code 12) gets its
/// allocation, written back as for any device, and once the adapter is removed the call is
/// STATUS_DEVICE_REMOVED before `DXGDEVICE::CreateAllocation` (no handle, `hGlobalShare` as
/// the caller left it).
#[test]
fn um_10_d3dkmtcreateallocation2_on_a_device_in_error_answers_as_24h2() {
    let (w, _) = in_error_by_must_succeed();
    let c = CreateCase {
        what: "the device in error",
        device: w.device,
        count: 1,
        flags: 0,
        list: None,
        edit: |_| {},
        ran: true,
    };
    let (s, written, info) = create_case(&w, &c);
    assert_eq!(
        (s, written),
        (STATUS_SUCCESS, [0, 0, 0]),
        "CreateAllocation2 of the device in error"
    );
    assert!(info[0] != UNTOUCHED && info[0] != 0, "hAllocation");
    // The adapter removed: its DXGDEVICEs stopped (`K:DXGDEVICE::Stop` @0x1401BBA38).
    assert!(w.m.device_removed(0).is_ok(), "{:?}", w.m.fault());
    let c = CreateCase {
        what: "the device not active",
        ran: false,
        ..c
    };
    let (s, written, info) = create_case(&w, &c);
    assert_eq!(
        (s, written, info[0]),
        (
            expected("D3DKMTCreateAllocation2", c.what),
            [0, SHARE_PRESET, 0],
            UNTOUCHED
        ),
        "CreateAllocation2 of a stopped device"
    );
    w.done();
}

/// `D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION` words: OperationType, BaseAddress (or
/// SourceAddress), SizeInBytes, hAllocation (or Unmap.Protection, Copy.DestAddress),
/// AllocationOffsetInBytes, AllocationSizeInBytes, Protection, DriverProtection.
fn update_op(ty: u64, base: u64, size: u64, third: u64, offset: u64, asize: u64) -> [u64; 8] {
    [ty, base, size, third, offset, asize, 0, 0]
}

/// One refusal case: the check, hDevice, hContext, hFenceObject, NumOperations and the
/// operations (`None`: two good ones).
type UpdateCase = (&'static str, u32, u32, u32, u32, Option<[[u64; 8]; 2]>);

/// DDI-03: `D3DKMTUpdateGpuVirtualAddress` from the DLL's process refuses what 24H2 refuses
/// (`K:DxgkUpdateGpuVirtualAddress` @0x1402F7A50, then
/// `M:VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress` @0x1400E34AC) and applies nothing then.
/// Accepted, it returns with the update queued, not applied (the VA still unmapped); once the
/// fence reaches `FenceValue` and the caller waits for `FenceValue + 1` VidMm has applied it.
#[test]
fn ddi_03_d3dkmtupdategpuvirtualaddress_answers_as_24h2() {
    use rvgpu_hw::mmu::{Access, FaultReason};
    const T: &str = "D3DKMTUpdateGpuVirtualAddress";
    const UNMAPPED: u64 = 0x10;
    const PAGE: u64 = 4096;
    let w = world();
    // D3DKMT_CREATECONTEXTVIRTUAL: hDevice, ..., Flags (word 3), hContext out (word 8).
    let context_of = |device: u32| {
        let mut c = [0u32; 10];
        c[0] = device;
        c[3] = HW_QUEUE_SUPPORTED;
        assert_eq!(w.call("D3DKMTCreateContextVirtual", &mut c), STATUS_SUCCESS);
        c[8]
    };
    let (context, other_context) = (context_of(w.device), context_of(w.other_device));
    // A monitored fence of the device (a paging queue's the OS makes NoSignal): the 96-byte
    // D3DKMT_CREATESYNCHRONIZATIONOBJECT2, hDevice, Info.Type at byte 8, EngineAffinity at
    // 40, hSyncObject out at 88.
    let mut c = [0u32; 24];
    (c[0], c[2], c[10]) = (w.device, 5, 1);
    assert_eq!(
        w.call("D3DKMTCreateSynchronizationObject2", &mut c),
        STATUS_SUCCESS
    );
    let fence = c[22];
    let (s, oq) = paging_queue(&w.p, w.other_device, |_| {});
    assert_eq!(s, STATUS_SUCCESS);
    let mut r = reserve(w.queue, 0x1_0000, 0);
    assert_eq!(
        w.call("D3DKMTReserveGpuVirtualAddress", &mut r),
        STATUS_SUCCESS
    );
    let va = r.VirtualAddress;
    let h = u64::from(w.allocation);
    let good = update_op(0, va, PAGE, h, 0, 0);
    // D3DKMT_UPDATEGPUVIRTUALADDRESS: hDevice, hContext, hFenceObject, NumOperations,
    // Operations (word 2), Reserved0, Reserved1, FenceValue (word 5), Flags (word 6).
    let call = |device: u32, ctx: u32, f: u32, n: u32, ops: u64| {
        let mut a = [0u64; 7];
        a[0] = u64::from(device) | (u64::from(ctx) << 32);
        a[1] = u64::from(f) | (u64::from(n) << 32);
        a[2] = ops;
        w.call(T, &mut a)
    };
    let pid = w.p.devices()[0].pid;
    let mapped = || {
        w.m.gpu_va_translate(0, pid, rvgpu_hw::addr::GpuVa::new(va), Access::Read)
            .expect("GpuMmu")
    };
    assert_eq!(thunk(&w.p, T, UNMAPPED), STATUS_ACCESS_VIOLATION);
    let mut driven = vec!["the structure not readable"];
    let list = |second: [u64; 8]| [good, second];
    let cases: Vec<UpdateCase> = vec![
        ("NumOperations 0", w.device, context, fence, 0, None),
        (
            "hDevice not in the caller's handle table",
            BAD_HANDLE,
            context,
            fence,
            1,
            None,
        ),
        (
            "hContext not in the caller's handle table",
            w.device,
            BAD_HANDLE,
            fence,
            1,
            None,
        ),
        (
            "hContext of another device than hDevice",
            w.device,
            other_context,
            fence,
            1,
            None,
        ),
        (
            "NumOperations times 64 bytes above 4 GiB",
            w.device,
            context,
            fence,
            0x0400_0001,
            None,
        ),
        ("Operations not readable", w.device, context, fence, 1, None),
        (
            "an operation's Type above MAP_PROTECT",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(4, va, PAGE, h, 0, 0))),
        ),
        (
            "a MAP or MAP_PROTECT with hAllocation 0",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(0, va, PAGE, 0, 0, 0))),
        ),
        (
            "an hAllocation not in the caller's handle table",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(0, va, PAGE, u64::from(BAD_HANDLE), 0, 0))),
        ),
        (
            "hFenceObject not a device sync object in the caller's handle table",
            w.device,
            context,
            w.allocation,
            1,
            None,
        ),
        (
            "hFenceObject of another device than hDevice",
            w.device,
            context,
            oq[3],
            1,
            None,
        ),
        (
            "an operation's range wrapping, empty, not 4 KiB aligned or past the top of the \
             space",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(0, va + 8, PAGE, h, 0, 0))),
        ),
        (
            "a MAP's AllocationOffsetInBytes or AllocationSizeInBytes not 4 KiB aligned, \
             above SizeInBytes or not dividing it",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(0, va, PAGE, h, 0, 2 * PAGE))),
        ),
        (
            "a MAP's allocation range past the allocation's end",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(0, va, PAGE, h, PAGE, 0))),
        ),
        (
            "a COPY whose source overlaps its destination",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(3, va, 2 * PAGE, va + PAGE, 0, 0))),
        ),
        (
            "the targets or the COPY sources not in one range the process reserved",
            w.device,
            context,
            fence,
            2,
            Some(list(update_op(0, va + 0x1_0000, PAGE, h, 0, 0))),
        ),
    ];
    for (what, device, ctx, f, n, ops) in cases {
        let mut ops = ops.unwrap_or([good, good]);
        let at = match what {
            "Operations not readable" => UNMAPPED,
            _ => ops.as_mut_ptr() as u64,
        };
        assert_eq!(call(device, ctx, f, n, at), expected(T, what), "{what}");
        let now = mapped().map(|_| ()).map_err(|f| f.reason);
        assert_eq!(now, Err(FaultReason::NotPresent), "{what}: nothing applied");
        driven.push(what);
    }
    let undrivable = "every device, adapter and context of this suite is whole, and the \
                      kernel pool never runs out here";
    assert_covers(
        T,
        &driven,
        &[
            ("the device not active", undrivable),
            ("the adapter without GPU virtual addressing", undrivable),
            (
                "the context without a VidSch or a VidMm context",
                undrivable,
            ),
            ("no pool for the operations", undrivable),
            ("no pool for the allocation references", undrivable),
            (
                "an hAllocation of another adapter than hDevice's",
                "the machine has one adapter",
            ),
        ],
    );
    // FenceValue 1, not reached yet: with it reached VidMm's worker may run the update before
    // the caller looks.
    let mut ops = [good];
    let mut a = [0u64; 7];
    a[0] = u64::from(w.device) | (u64::from(context) << 32);
    a[1] = u64::from(fence) | (1 << 32);
    a[2] = ops.as_mut_ptr() as u64;
    a[5] = 1;
    assert_eq!(w.call(T, &mut a), STATUS_SUCCESS);
    assert!(mapped().is_err(), "queued, not applied, at return");
    // D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU / D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU:
    // hDevice, ObjectCount, the handle and value arrays, no event (blocking), no flags.
    let (handles, signal, values) = ([fence], [1u64], [2u64]);
    let mut s = [
        u64::from(w.device) | (1 << 32),
        handles.as_ptr() as u64,
        signal.as_ptr() as u64,
        0,
        0,
    ];
    assert_eq!(
        w.call("D3DKMTSignalSynchronizationObjectFromCpu", &mut s),
        STATUS_SUCCESS
    );
    let mut wait = [
        u64::from(w.device) | (1 << 32),
        handles.as_ptr() as u64,
        values.as_ptr() as u64,
        0,
        0,
    ];
    assert_eq!(
        w.call("D3DKMTWaitForSynchronizationObjectFromCpu", &mut wait),
        STATUS_SUCCESS,
        "FenceValue + 1 reached"
    );
    assert!(mapped().is_ok(), "applied once the fence says so");
    w.done();
}
