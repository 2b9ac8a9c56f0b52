//! The allocation thunks the shipped `rvgpu_umd.dll` calls (`D3DKMTCreateAllocation2`,
//! `D3DKMTDestroyAllocation2`), called raw in the DLL's own process as 24H2 answers them:
//! each of the thunk catalog's checks (`rvgpu_simos::kmt::catalog`) driven with its status,
//! or said undrivable; a refusal writes nothing back; a success writes back what 24H2 writes.

mod common;

use common::conformance::{assert_covers, expected};
use common::dll::*;
use common::dll_world::*;
use common::pe::umd;
use rvgpu_simos::pe::umd::UserProcess;

/// AL-03: `D3DKMTDestroyAllocation2` refuses what 24H2 refuses before it destroys anything
/// (`K:DxgkDestroyAllocation2` @0x14032F7A0, `K:DxgkDestroyAllocationHelper` @0x14032FBB8);
/// a list naming one allocation that is not the device's destroys none of the others; the
/// device's allocation is destroyed once, and a second destroy of it is refused.
#[test]
fn al_03_d3dkmtdestroyallocation2_answers_as_24h2() {
    const T: &str = "D3DKMTDestroyAllocation2";
    let w = world();
    let one = [w.allocation];
    let at = one.as_ptr() as u64;
    let call = |device: u32, resource: u32, list: u64, count: u32, flags: u32| {
        let mut d = [0u64; 3];
        d[0] = u64::from(device) | (u64::from(resource) << 32);
        d[1] = list;
        d[2] = u64::from(count) | (u64::from(flags) << 32);
        w.call(T, &mut d)
    };
    let cases: [(&str, u32, u32, u32); 4] = [
        ("a Flags bit of 0x7FFFFFFC", w.device, 0, 1 << 2),
        ("a Flags bit of 0x7FFFFFFC", w.device, 0, 1 << 30),
        ("hResource with AllocationCount", w.device, BAD_HANDLE, 0),
        ("hDevice not in the caller's handle table", BAD_HANDLE, 0, 0),
    ];
    let mut driven = Vec::new();
    for (what, device, resource, flags) in cases {
        assert_eq!(
            call(device, resource, at, 1, flags),
            expected(T, what),
            "{what}"
        );
        driven.push(what);
    }
    assert_covers(T, &driven, &[]);
    let mixed = [w.allocation, BAD_HANDLE];
    assert_eq!(
        call(w.device, 0, mixed.as_ptr() as u64, 2, 0),
        STATUS_INVALID_PARAMETER
    );
    assert_eq!(
        lock2(&w, w.device, w.allocation).0,
        STATUS_SUCCESS,
        "the allocation is still there"
    );
    assert_eq!(unlock2(&w, w.device, w.allocation), STATUS_SUCCESS);
    assert_eq!(call(w.device, 0, at, 1, 0), STATUS_SUCCESS);
    assert_eq!(
        call(w.device, 0, at, 1, 0),
        STATUS_INVALID_PARAMETER,
        "gone"
    );
    w.done();
}

/// DDI-03: `D3DKMTCreateAllocation2` refuses what 24H2 refuses (`K:DxgkCreateAllocationInternal`
/// @0x140304ED8, `K:DXGDEVICE::CreateAllocation` @0x140356E10) and writes no handle then; once
/// `DXGDEVICE::CreateAllocation` ran, whatever it answered, `hGlobalShare` comes back 0 with
/// `hResource` and `Flags` as 24H2 holds them, and not before. A success writes the entry's
/// handle, `hResource` 0 and `hGlobalShare` 0.
#[test]
fn ddi_03_d3dkmtcreateallocation2_refuses_what_24h2_refuses() {
    const T: &str = "D3DKMTCreateAllocation2";
    const CREATE_RESOURCE: u64 = 1;
    const CREATE_SHARED: u64 = 1 << 1;
    const CREATE_PROTECTED: u64 = 1 << 3;
    const EXISTING_SYS_MEM: u64 = 1 << 5;
    const CREATE_WRITE_COMBINED: u64 = 1 << 8;
    const CREATE_CACHED: u64 = 1 << 9;
    const CROSS_ADAPTER: u64 = 1 << 11;
    const OPEN_CROSS_ADAPTER: u64 = 1 << 12;
    const STANDARD_ALLOCATION: u64 = 1 << 16;
    const EXISTING_SECTION: u64 = 1 << 17;
    const NO_KMD_ACCESS: u64 = 1 << 20;
    let w = world();
    let case = |what, device, count, flags| CreateCase {
        what,
        device,
        count,
        flags,
        list: None,
        edit: |_| {},
        ran: false,
    };
    let entry = |what, edit: fn(&mut [u64; 12])| CreateCase {
        edit,
        ran: true,
        ..case(what, w.device, 1, 0)
    };
    let signing = w.m.os_config().test_signing;
    let privileged = "CreateProtected, CreateWriteCombined, CreateCached or OpenCrossAdapter \
                      from an unprivileged process";
    let mut cases = vec![
        case("hDevice not in the caller's handle table", BAD_HANDLE, 1, 0),
        case(
            "Flags.NoKmdAccess with Flags.StandardAllocation",
            w.device,
            1,
            NO_KMD_ACCESS | STANDARD_ALLOCATION,
        ),
        case("NumAllocations above 0x682AA", w.device, 0x682AB, 0),
        case(privileged, w.device, 1, CREATE_PROTECTED),
        case(
            privileged,
            w.device,
            1,
            CREATE_WRITE_COMBINED | CREATE_CACHED | OPEN_CROSS_ADAPTER,
        ),
        case(
            "ExistingSysMem without StandardAllocation from an unprivileged process",
            w.device,
            1,
            EXISTING_SYS_MEM,
        ),
        case(
            "ExistingSection without StandardAllocation",
            w.device,
            1,
            EXISTING_SECTION,
        ),
        case(
            "CreateShared without CreateResource",
            w.device,
            1,
            CREATE_SHARED,
        ),
        case("no hResource and NumAllocations 0", w.device, 0, 0),
        CreateCase {
            ran: true,
            ..case(
                "CrossAdapter on an adapter without cross-adapter resources, or without CreateShared",
                w.device,
                1,
                CROSS_ADAPTER,
            )
        },
        CreateCase {
            list: Some(UNMAPPED),
            ..entry("pAllocationInfo2 not readable", |_| {})
        },
        entry(
            "an entry's Flags.Stereo without Flags.Primary, or with CrossAdapter",
            |i| i[4] = 1 << 1,
        ),
        entry("an entry's PrivateDriverDataSize above 0x7FFFFFFF", |i| {
            i[3] = 0x8000_0000
        }),
        entry("no pool for an entry's private driver data", |i| {
            i[3] = (1 << 20) + 1
        }),
        entry("an entry's pPrivateDriverData not readable", |i| {
            i[2] = UNMAPPED
        }),
    ];
    let mut not_driven = vec![
        ("no pool for the handle list", "pool exhaustion"),
        (
            "StandardAllocation on a driver below WDDM 2.0",
            "driven by ddi_03_a_standard_allocation_needs_a_driver_of_wddm_2_or_later",
        ),
        ("the device not active", BY_MUST_SUCCEED),
    ];
    if signing {
        not_driven.push((
            "Flags.NoKmdAccess without test signing",
            "the machine runs with test signing on",
        ));
    } else {
        cases.push(case(
            "Flags.NoKmdAccess without test signing",
            w.device,
            1,
            NO_KMD_ACCESS,
        ));
    }
    let mut driven = vec!["the structure not readable"];
    assert_eq!(
        thunk(&w.p, T, UNMAPPED),
        expected(T, "the structure not readable")
    );
    for c in &cases {
        let (s, [resource, share, flags], info) = create_case(&w, c);
        assert_eq!((s, info[0]), (expected(T, c.what), UNTOUCHED), "{}", c.what);
        let share_after = if c.ran { 0 } else { SHARE_PRESET };
        assert_eq!(
            (resource, share, flags),
            (0, share_after, c.flags),
            "{}",
            c.what
        );
        driven.push(c.what);
    }
    // The list on a read-only page: the allocation is made, its handle cannot be written
    // back, and it is destroyed again.
    let what = "pAllocationInfo2 or the structure not writable (what was made is destroyed)";
    let (s, _, made) = create_case(&w, &case("", w.device, 1, 0));
    assert_eq!(s, STATUS_SUCCESS);
    // The process's next D3DKMT handle is 0x40 above its last.
    let next = (made[0] as u32).wrapping_add(0x40);
    let bytes = buffer_private_data();
    let list = read_only(&buffer_entry(&bytes));
    let c = CreateCase {
        list: Some(list),
        ..entry(what, |_| {})
    };
    assert_eq!(create_case(&w, &c).0, expected(T, what), "{what}");
    assert!(
        w.m.allocation_residency(0, next).is_none(),
        "{what}: left alive"
    );
    driven.push(what);
    assert_covers(T, &driven, &not_driven);
    // CreateResource alone passes 24H2's checks; resources are beyond the simulation.
    let (s, written, _) = create_case(&w, &case("", w.device, 1, CREATE_RESOURCE));
    assert_eq!(s, 0xC000_00BB, "STATUS_NOT_SUPPORTED");
    assert_eq!(written, [0, 0, CREATE_RESOURCE]);
    let (s, written, info) = create_case(&w, &case("", w.device, 1, 0));
    assert_eq!(s, STATUS_SUCCESS);
    assert!(info[0] != UNTOUCHED && info[0] != 0);
    assert_eq!(written, [0, 0, 0]);
    w.done();
}

/// DDI-03: a `D3DKMTCreateAllocation2` list longer than 1 MiB (11,000 entries of 96 bytes,
/// within 24H2's 0x682AA) is captured whole, as 24H2 captures it: its last entry's
/// `Flags.Stereo` without `Flags.Primary` is what refuses it, with nothing made, not a fault
/// reading the list.
#[test]
fn ddi_03_d3dkmtcreateallocation2_captures_a_list_past_one_mib() {
    const COUNT: usize = 11_000;
    let w = world();
    let bytes = buffer_private_data();
    let mut list: Vec<[u64; 12]> = vec![buffer_entry(&bytes); COUNT];
    assert!(COUNT * std::mem::size_of::<[u64; 12]>() > 1 << 20);
    if let Some(last) = list.last_mut() {
        last[4] = 1 << 1;
    }
    let mut args = [0u64; 9];
    args[0] = u64::from(w.device);
    args[5] = (COUNT as u64) << 32;
    args[6] = list.as_mut_ptr() as u64;
    let s = w.call("D3DKMTCreateAllocation2", &mut args);
    let what = "an entry's Flags.Stereo without Flags.Primary, or with CrossAdapter";
    assert_eq!(s, expected("D3DKMTCreateAllocation2", what));
    assert!(
        list.iter().all(|e| e[0] == UNTOUCHED),
        "a handle was written"
    );
    w.done();
}

/// DDI-03, an attacker's `D3DKMTCreateAllocation2`: another process's device, a list far
/// longer than the memory behind it, a private-data size meant to exhaust the pool, and a list
/// whose second entry the KMD refuses after the first was made. Each is refused with 24H2's
/// status and leaves no allocation behind.
#[test]
fn ddi_03_d3dkmtcreateallocation2_leaves_nothing_to_an_attacker() {
    const T: &str = "D3DKMTCreateAllocation2";
    let w = world();
    let pdd = rvgpu_umd::kmt::allocation_private_data(4096, rvgpu_hw::pdd::AllocationKind::Buffer);
    let bytes = zerocopy::IntoBytes::as_bytes(&pdd).to_vec();
    let (s, _, made) = create_case(
        &w,
        &CreateCase {
            what: "",
            device: w.device,
            count: 1,
            flags: 0,
            list: None,
            edit: |_| {},
            ran: false,
        },
    );
    assert_eq!(s, STATUS_SUCCESS);
    let mut next = made[0] as u32;
    let mut gone = |w: &World, why: &str| {
        next = next.wrapping_add(0x40);
        assert!(
            w.m.allocation_residency(0, next).is_none(),
            "{why}: left alive"
        );
    };
    // Two entries, the second with private data the KMD's DxgkDdiCreateAllocation refuses.
    let mut infos = [0u64; 24];
    for e in 0..2 {
        infos[e * 12] = UNTOUCHED;
        infos[e * 12 + 2] = bytes.as_ptr() as u64;
        infos[e * 12 + 3] = bytes.len() as u64;
    }
    infos[12 + 3] = 8;
    let mut args = [0u64; 9];
    args[0] = u64::from(w.device);
    args[5] = 2 << 32;
    args[6] = infos.as_mut_ptr() as u64;
    assert_eq!(w.call(T, &mut args), STATUS_INVALID_PARAMETER);
    assert_eq!((infos[0], infos[12]), (UNTOUCHED, UNTOUCHED));
    gone(&w, "the first entry of a refused list");
    // 0x682AA entries claimed over one: the capture faults before anything is made.
    args[5] = 0x682AA << 32;
    args[6] = infos.as_mut_ptr() as u64;
    infos[12 + 3] = bytes.len() as u64;
    assert_eq!(w.call(T, &mut args), STATUS_ACCESS_VIOLATION);
    // A size the pool cannot give: refused before a byte is read.
    infos[3] = 0x7FFF_FFFF;
    args[5] = 1 << 32;
    assert_eq!(w.call(T, &mut args), 0xC000_0017, "STATUS_NO_MEMORY");
    // Another process names this one's device: not in its handle table.
    let b = UserProcess::new(w.m.clone(), umd());
    open_queue(&b);
    infos[3] = bytes.len() as u64;
    assert_eq!(thunk(&b, T, addr(&mut args)), STATUS_INVALID_PARAMETER);
    assert_eq!(infos[0], UNTOUCHED);
    w.done();
}
