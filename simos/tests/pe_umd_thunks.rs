//! The D3DKMT thunks the shipped `rvgpu_umd.dll` calls, called raw in the DLL's own process
//! as 24H2 answers them: each refusal in 24H2's order with its status, the fields written
//! back, and a catalog row (`rvgpu_simos::kmt::catalog`) for every thunk the DLL imports.

mod common;

use common::conformance::{assert_covers, expected};
use common::dll::*;
use common::pe::{pe_machine, pe_machine_sw, umd};
use rvgpu_simos::pe::umd::UserProcess;

/// Why a check refused only without test signing has no case: a machine without it refuses the
/// test-signed `rvgpu.sys` (Code 52), so every machine of these suites has it on.
const TEST_SIGNED: &str = "every machine that loads the test-signed rvgpu.sys has test signing on";

/// Every D3DKMT thunk the shipped DLL imports from gdi32.dll has a row in the thunk catalog
/// (`rvgpu_simos::kmt::catalog`), which says what 24H2 answers for it or that it is unread.
#[test]
fn every_thunk_the_dll_imports_has_a_catalog_row() {
    let missing: Vec<String> = umd()
        .imports()
        .iter()
        .filter_map(|i| i.strip_prefix("gdi32.dll!"))
        .filter(|name| rvgpu_simos::kmt::catalog::row(name).is_none())
        .map(str::to_owned)
        .collect();
    assert!(missing.is_empty(), "no catalog row: {missing:?}");
}

/// `D3DKMTSubmitCommand` on a software-scheduled node given what 24H2's
/// `DxgkSubmitCommandInternal` refuses returns the catalog's status and submits nothing (no fence
/// ID is taken): no or too many broadcast contexts, more
/// than 16 primaries, a further broadcast context that names none, a context of no process or of
/// another process. Past the catalog's checks, as the bridge and the KMD answer: primaries on a
/// render-only adapter, private data the KMD did not ask for, a length not a multiple of the
/// 8-byte word or past the DMA buffer size, an unmapped VA; what the UMD does not use is
/// STATUS_NOT_SUPPORTED. A length of 0 succeeds and submits nothing, as 24H2 does.
#[test]
fn um_01_d3dkmtsubmitcommand_refuses_what_windows_refuses() {
    const T: &str = "D3DKMTSubmitCommand";
    const NOT_SUPPORTED: u64 = 0xC000_00BB;
    let m = pe_machine_sw();
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open_adapter(&p);
    let (_, va) = buffer_4k(&p, adapter);
    let ctx = raw_context(&p, 0);
    let q = UserProcess::new(m.clone(), umd());
    open_adapter(&q);
    let other = raw_context(&q, 0);
    let before = m.legacy_fences(0, 0);
    type Edit = fn(&mut [u64; 48]);
    // The catalog's checks, labelled with its `what`.
    let checks: [(&str, u32, Edit); 6] = [
        (
            "BroadcastContext[0] not in the caller's handle table",
            0x1234,
            |_| {},
        ),
        (
            "BroadcastContext[0] not in the caller's handle table",
            other,
            |_| {},
        ),
        ("BroadcastContextCount 0 or above 64", ctx, |s| {
            set_u32(s, 24, 0)
        }),
        ("BroadcastContextCount 0 or above 64", ctx, |s| {
            set_u32(s, 24, 65)
        }),
        ("NumPrimaries above 16", ctx, |s| set_u32(s, 300, 17)),
        (
            "a further broadcast context unknown, synchronisation-only or of another device",
            ctx,
            |s| set_u32(s, 24, 2),
        ),
    ];
    let mut driven = Vec::new();
    for (what, c, edit) in checks {
        let mut s = submit_command(c, va, 8);
        edit(&mut s);
        let r = thunk(&p, T, s.as_mut_ptr() as u64);
        assert_eq!(r, expected(T, what), "{what}: {r:#x}");
        driven.push(what);
    }
    let inval = STATUS_INVALID_PARAMETER;
    let beyond: [(&str, u64, u32, Edit, u64); 8] = [
        ("a primary", va, 8, |s| set_u32(s, 300, 1), inval),
        ("private data", va, 8, |s| set_u32(s, 296, 8), inval),
        ("NullRendering", va, 8, |s| set_u32(s, 12, 1), NOT_SUPPORTED),
        (
            "a history buffer",
            va,
            8,
            |s| set_u32(s, 368, 1),
            NOT_SUPPORTED,
        ),
        ("a length of 12", va, 12, |_| {}, inval),
        ("past 64 KiB", va, 64 * 1024 + 8, |_| {}, inval),
        ("an unaligned VA", va + 4, 8, |_| {}, inval),
        ("an unmapped VA", 0x1000, 8, |_| {}, inval),
    ];
    for (what, at, len, edit, want) in beyond {
        let mut s = submit_command(ctx, at, len);
        edit(&mut s);
        let r = thunk(&p, T, s.as_mut_ptr() as u64);
        assert_eq!(r, want, "{what}: {r:#x}");
    }
    let mut s = submit_command(ctx, va, 8);
    set_u32(&mut s, 24, 2);
    set_u32(&mut s, 32, ctx);
    assert_eq!(
        thunk(&p, T, s.as_mut_ptr() as u64),
        NOT_SUPPORTED,
        "two broadcast contexts"
    );
    let mut s = submit_command(ctx, va, 0);
    assert_eq!(
        thunk(&p, T, s.as_mut_ptr() as u64),
        STATUS_SUCCESS,
        "a length of 0"
    );
    assert_eq!(m.legacy_fences(0, 0), before, "something was submitted");
    assert_covers(
        T,
        &driven,
        &[
            ("Flags.NoKmdAccess without test signing", TEST_SIGNED),
            (
                "Flags.PresentRedirected from a virtual machine",
                "the simulated machine is no virtual machine",
            ),
            (
                "BroadcastContext[0] created with HwQueueSupported",
                "driven in um_01_d3dkmtsubmitcommand_refuses_a_hw_queue_context",
            ),
            (
                "BroadcastContext[0] SynchronizationOnly",
                "driven in pe_thunks_queues.rs",
            ),
            (
                "a further broadcast context created with HwQueueSupported",
                "BroadcastContext[0] must be a context without it, which BR-92 allows only on a \
                 software-scheduled node, and this suite's adapter schedules no node in hardware",
            ),
            (
                "the context not virtual",
                "the DLL creates virtual contexts only (D3DKMTCreateContext is not bridged)",
            ),
        ],
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-01: `D3DKMTSubmitCommand` refuses a context created with `HwQueueSupported`
/// (STATUS_INVALID_PARAMETER, 24H2 `K:DxgkSubmitCommandInternal` @0x1402A4B90, before the
/// length is looked at: a length of 0 is refused too) and submits nothing, as a raw thunk call
/// in the DLL's process on a hardware-scheduled node.
#[test]
fn um_01_d3dkmtsubmitcommand_refuses_a_hw_queue_context() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open_adapter(&p);
    let (_, va) = buffer_4k(&p, adapter);
    let ctx = raw_context(&p, HW_QUEUE_SUPPORTED);
    let before = m.legacy_fences(0, 0);
    for len in [8, 0] {
        let mut s = submit_command(ctx, va, len);
        assert_eq!(
            thunk(&p, "D3DKMTSubmitCommand", s.as_mut_ptr() as u64),
            expected(
                "D3DKMTSubmitCommand",
                "BroadcastContext[0] created with HwQueueSupported"
            ),
            "a length of {len}"
        );
    }
    assert_eq!(m.legacy_fences(0, 0), before, "something was submitted");
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// BR-92 through the DLL's process: 24H2 `K:DXGCONTEXT::Initialize` @0x1402CFD80 refuses a
/// context without `HwQueueSupported` on a hardware-scheduled node and one with it on a
/// software-scheduled node (STATUS_UNSUCCESSFUL both, `hContext` not written); the simulated
/// kernel supplies nothing. The other way round each is created.
#[test]
fn br_92_d3dkmtcreatecontextvirtual_hw_queue_supported_exactly_on_hws_nodes() {
    for (m, hws) in [(pe_machine(), true), (pe_machine_sw(), false)] {
        let p = UserProcess::new(m.clone(), umd());
        open_adapter(&p);
        let device = p.devices()[0].device;
        for flags in [0, HW_QUEUE_SUPPORTED] {
            let mut c = context_virtual(device, |c| c[3] = flags);
            let r = thunk(&p, "D3DKMTCreateContextVirtual", c.as_mut_ptr() as u64);
            if (flags != 0) == hws {
                assert_eq!(r, STATUS_SUCCESS, "hws {hws}, flags {flags:#x}");
                assert_ne!(c[8], 0);
            } else {
                assert_eq!(r, STATUS_UNSUCCESSFUL, "hws {hws}, flags {flags:#x}");
                assert_eq!(c[8], 0, "hContext written on a refusal");
            }
        }
        assert!(m.fault().is_none(), "{:?}", m.fault());
    }
}

/// `D3DDDI_CREATECONTEXTFLAGS::NoKmdAccess`.
const NO_KMD_CONTEXT: u32 = 1 << 5;

/// A `D3DKMT_CREATECONTEXTVIRTUAL` (40 bytes) for `device`: node 0, the rest as `edit` sets it.
fn context_virtual(device: u32, edit: impl FnOnce(&mut [u32; 10])) -> [u32; 10] {
    let mut c = [0u32; 10];
    c[0] = device;
    edit(&mut c);
    c
}

/// `D3DKMTCreateContextVirtual` refuses what 24H2's `DxgkCreateContextVirtualImpl` refuses, each
/// with the catalog's status, as a raw thunk call in the DLL's process, and writes nothing back
/// then: an engine-affinity bit past the one physical adapter (alone or with bit 0), a node past
/// the adapter's, a flag bit from 7 up, private data given half (a pointer with size 0, a size
/// with no pointer), private data at an unmapped address (the probe's status) or larger than
/// the pool gives, a device handle never given, no `HwQueueSupported` on a hardware-scheduled
/// node, a `NoKmdAccess` context's private data `CheckNoKmdAccessPrivateData` refuses. Engine 0
/// or 1 is accepted and `hContext` written, as for a `NoKmdAccess` context.
#[test]
fn um_03_d3dkmtcreatecontextvirtual_refuses_what_24h2_refuses() {
    const T: &str = "D3DKMTCreateContextVirtual";
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let mut pdd = [0u8; 16];
    let pdd_at = pdd.as_mut_ptr() as u64;
    type Edit = Box<dyn Fn(&mut [u32; 10])>;
    let past = "EngineAffinity's highest bit at or past the physical adapters";
    let half = "pPrivateDriverData without size, or a size without pointer";
    let flags = "a Flags bit from 7 up";
    let cases: Vec<(&str, Edit)> = vec![
        (past, Box::new(|c| c[2] = 2)),
        (past, Box::new(|c| c[2] = 3)),
        (
            "NodeOrdinal at or past the physical adapter's nodes",
            Box::new(|c| c[1] = 64),
        ),
        (flags, Box::new(|c| c[3] = 1 << 7)),
        (flags, Box::new(|c| c[3] = 1 << 31)),
        (
            half,
            Box::new(move |c| {
                c[4] = pdd_at as u32;
                c[5] = (pdd_at >> 32) as u32;
            }),
        ),
        (half, Box::new(|c| c[6] = 16)),
        (
            "the private data not readable",
            Box::new(|c| {
                c[4] = 0x10;
                c[6] = 16;
            }),
        ),
        (
            "no pool for the private data",
            Box::new(move |c| {
                c[3] = HW_QUEUE_SUPPORTED;
                c[4] = pdd_at as u32;
                c[5] = (pdd_at >> 32) as u32;
                c[6] = 1 << 20;
            }),
        ),
        (
            "hDevice not in the caller's handle table",
            Box::new(|c| c[0] = 0x7777_7777),
        ),
        (
            "no HwQueueSupported on a node with context scheduling",
            Box::new(|c| c[3] = 0),
        ),
        (
            "NoKmdAccess with private data below 264 bytes or without its two tags",
            Box::new(move |c| {
                c[3] = HW_QUEUE_SUPPORTED | NO_KMD_CONTEXT;
                c[4] = pdd_at as u32;
                c[5] = (pdd_at >> 32) as u32;
                c[6] = 16;
            }),
        ),
    ];
    let mut driven = Vec::new();
    for (what, edit) in &cases {
        let mut c = context_virtual(device, edit);
        assert_eq!(
            thunk(&p, T, c.as_mut_ptr() as u64),
            expected(T, what),
            "{what}"
        );
        assert_eq!(c[8], 0, "{what}: hContext written on a refusal");
        driven.push(*what);
    }
    // `HwQueueSupported`: node 0 is hardware-scheduled; a `NoKmdAccess` context (no private
    // data) too, which the KMD never hears of.
    for (engine, flags) in [
        (0, HW_QUEUE_SUPPORTED),
        (1, HW_QUEUE_SUPPORTED),
        (0, HW_QUEUE_SUPPORTED | NO_KMD_CONTEXT),
    ] {
        let mut c = context_virtual(device, |c| {
            c[2] = engine;
            c[3] = flags;
        });
        assert_eq!(
            thunk(&p, T, c.as_mut_ptr() as u64),
            STATUS_SUCCESS,
            "engine affinity {engine}"
        );
        assert_ne!(c[8], 0);
        let mut d = [c[8], 0];
        assert_eq!(
            thunk(&p, "D3DKMTDestroyContext", d.as_mut_ptr() as u64),
            STATUS_SUCCESS
        );
    }
    assert_covers(
        T,
        &driven,
        &[
            (
                "NoKmdAccess or TestContext without test signing",
                TEST_SIGNED,
            ),
            (
                "more than one EngineAffinity bit",
                "one physical adapter: a second bit is past it, refused before",
            ),
            (
                "not SynchronizationOnly, on an adapter or node without GPU VA",
                "every node of the simulated adapter has GPU VA",
            ),
            (
                "HwQueueSupported with a driver below WDDM 2.5",
                "the KMD is a WDDM 3.2 driver",
            ),
            (
                "HwQueueSupported on a node without context scheduling",
                "driven on a software-scheduled adapter in \
                 br_92_d3dkmtcreatecontextvirtual_hw_queue_supported_exactly_on_hws_nodes",
            ),
        ],
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-03: `D3DKMTQueryAdapterInfo(KMTQAITYPE_NODEMETADATA)` is how a runtime learns that a node
/// is hardware-scheduled: the driver's `DXGK_NODEMETADATA` comes back unchanged, its
/// `ContextSchedulingSupported` bit included. What 24H2's `DxgkQueryAdapterInfoImpl` refuses is
/// refused, as raw thunk calls in the DLL's process: no buffer, size 0, a size other than 78,
/// an adapter handle never given, a physical adapter index past the one, a node past the
/// adapter's, a size overflowing when rounded up (each with the catalog's status); a buffer at
/// an unmapped address is the probe's STATUS_ACCESS_VIOLATION. TDR-01: `KMTQAITYPE_WDDM_1_2_CAPS`
/// (12 bytes, any other size refused) answers the driver's `SupportPerEngineTDR` and
/// `PreemptionCaps`, with `SupportCCD` set.
#[test]
fn um_03_d3dkmtqueryadapterinfo_node_metadata_tells_hardware_scheduling() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let mut open = [0u32; 3];
    open[0] = LUID_LOW as u32;
    assert_eq!(
        thunk(&p, "D3DKMTOpenAdapterFromLuid", open.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    let adapter = open[2];
    let mut md = [0u8; 78];
    let query_as = |ty: u32, h: u32, at: u64, size: u32| {
        let mut q = [0u32; 6];
        q[0] = h;
        q[1] = ty;
        q[2] = at as u32;
        q[3] = (at >> 32) as u32;
        q[4] = size;
        thunk(&p, "D3DKMTQueryAdapterInfo", q.as_mut_ptr() as u64)
    };
    // KMTQAITYPE_NODEMETADATA, KMTQAITYPE_WDDM_1_2_CAPS.
    let query = |h: u32, at: u64, size: u32| query_as(25, h, at, size);
    let mut caps = [0u32; 4];
    let caps_at = caps.as_mut_ptr() as u64;
    const T: &str = "D3DKMTQueryAdapterInfo";
    let at = md.as_mut_ptr() as u64;
    let mut driven = Vec::new();
    let mut case = |what: &'static str, h: u32, at: u64, size: u32| {
        assert_eq!(query(h, at, size), expected(T, what), "{what}");
        driven.push(what);
    };
    case("pPrivateDriverData NULL", adapter, 0, 78);
    let size = "PrivateDriverDataSize 0, or overflowing when rounded up to 8";
    case(size, adapter, at, 0);
    case(size, adapter, at, u32::MAX);
    case(
        "KMTQAITYPE_NODEMETADATA: PrivateDriverDataSize not 78",
        adapter,
        at,
        77,
    );
    case(
        "hAdapter not in the caller's handle table",
        0x7777_7777,
        at,
        78,
    );
    case(
        "KMTQAITYPE_NODEMETADATA's input not readable",
        adapter,
        0x10,
        78,
    );
    md[..4].copy_from_slice(&(1u32 << 16).to_le_bytes());
    case(
        "KMTQAITYPE_NODEMETADATA: adapter index past the physical adapters",
        adapter,
        at,
        78,
    );
    md[..4].copy_from_slice(&64u32.to_le_bytes());
    case(
        "KMTQAITYPE_NODEMETADATA: node past the adapter's",
        adapter,
        at,
        78,
    );
    let small = "KMTQAITYPE_WDDM_1_2_CAPS: PrivateDriverDataSize not 12";
    assert_eq!(query_as(17, adapter, caps_at, 16), expected(T, small));
    driven.push(small);
    assert_covers(
        T,
        &driven,
        &[
            (
                "KMTQAITYPE_NODEMETADATA: no node metadata",
                "the KMD gives metadata for every node",
            ),
            (
                "KMTQAITYPE_WDDM_1_2_CAPS: no render adapter (no caps reported)",
                "the adapter the DLL opens is started, its caps reported",
            ),
        ],
    );
    assert_eq!(query_as(17, adapter, caps_at, 12), STATUS_SUCCESS);
    let reported = m.query_driver_caps(0).expect("the started adapter's caps");
    let preemption = reported.PreemptionCaps;
    assert_eq!(
        [caps[0] as i32, caps[1] as i32],
        [
            preemption.GraphicsPreemptionGranularity,
            preemption.ComputePreemptionGranularity
        ],
        "the driver's PreemptionCaps"
    );
    assert_eq!(
        reported.SupportPerEngineTDR, 1,
        "rvgpu claims per-engine reset"
    );
    assert_eq!(
        caps[2] & 0x14,
        0x14,
        "SupportPerEngineTDR and SupportCCD: {caps:?}"
    );
    assert_eq!(caps[3], 0, "nothing past the 12 bytes written");
    let nodes = m.node_metadata(0);
    assert!(!nodes.is_empty());
    for (node, want) in nodes.iter().enumerate() {
        md = [0u8; 78];
        md[..4].copy_from_slice(&(node as u32).to_le_bytes());
        let at = md.as_mut_ptr() as u64;
        assert_eq!(query(adapter, at, 78), STATUS_SUCCESS, "node {node}");
        let flags = u32::from_le_bytes(md[72..76].try_into().expect("4 bytes"));
        let want_flags = { want.Flags }.Value;
        assert_eq!(flags, want_flags, "node {node}'s flags");
        let engine = i32::from_le_bytes(md[4..8].try_into().expect("4 bytes"));
        assert_eq!(engine, { want.EngineType }, "node {node}'s engine type");
        assert_eq!(md[76], want.GpuMmuSupported, "node {node}");
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// A `D3DKMT_CREATENATIVEFENCE` (216 bytes) for `device`, the rest as `edit` sets it.
fn create_native_fence(device: u32, edit: impl FnOnce(&mut [u8; 216])) -> [u8; 216] {
    let mut f = [0u8; 216];
    f[..4].copy_from_slice(&device.to_le_bytes());
    edit(&mut f);
    f
}

fn put_u32(f: &mut [u8; 216], at: usize, v: u32) {
    f[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// NF-12: `D3DKMTCreateNativeFence` refuses what 24H2's `NtDxgkCreateNativeFenceInternal`
/// refuses, STATUS_INVALID_PARAMETER each, as a raw thunk call in the DLL's process, and creates
/// nothing (no handle written): a type other than default, a non-zero outer `Flags`, an
/// `Info.Flags` bit from 11 to 30, `Shared` without `NtSecuritySharing` and the reverse,
/// `NoSignal` with `NoWait`, a non-zero byte in `Reserved`, `Info.Reserved` or the mapping's
/// reserved words; a device handle never given. `Shared` with `NtSecuritySharing` is created.
#[test]
fn nf_12_d3dkmtcreatenativefence_refuses_what_24h2_refuses() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    const T: &str = "D3DKMTCreateNativeFence";
    let flags = "Flags non-zero, or an Info.Flags bit of 0x7FFFF800";
    let shared = "Shared without NtSecuritySharing";
    let reserved = "a non-zero byte of Reserved, Info.Reserved or the mapping's";
    let device_never = "hDevice not in the caller's handle table";
    type Edit = fn(&mut [u8; 216]);
    let cases: [(&str, Edit); 12] = [
        ("Info.Type not D3DDDI_NATIVEFENCE_TYPE_DEFAULT", |f| {
            put_u32(f, 84, 1)
        }),
        (flags, |f| put_u32(f, 184, 1)),
        (flags, |f| put_u32(f, 88, 1 << 11)),
        (flags, |f| put_u32(f, 88, 1 << 30)),
        (shared, |f| put_u32(f, 88, 1)),
        ("NtSecuritySharing without Shared", |f| put_u32(f, 88, 2)),
        ("NoSignal with NoWait", |f| put_u32(f, 88, 0x30)),
        (reserved, |f| f[215] = 1),
        (reserved, |f| f[152] = 1),
        (reserved, |f| f[120] = 1),
        (device_never, |f| put_u32(f, 0, 0x7777_7777)),
        // Before the handle is looked up.
        (shared, |f| {
            put_u32(f, 0, 0x7777_7777);
            put_u32(f, 88, 1);
        }),
    ];
    let mut driven = Vec::new();
    for (what, edit) in cases {
        let mut f = create_native_fence(device, edit);
        assert_eq!(
            thunk(&p, T, f.as_mut_ptr() as u64),
            expected(T, what),
            "{what}"
        );
        assert_eq!(f[4..8], [0; 4], "{what}: hSyncObject written on a refusal");
        driven.push(what);
    }
    assert_covers(
        T,
        &driven,
        &[(
            "the adapter not on dxgmms2, or without native fences",
            "every adapter the DLL's suites start runs on dxgmms2 with native fences",
        )],
    );
    for flags in [0u32, 3, 0x10, 0x20] {
        let mut f = create_native_fence(device, |f| put_u32(f, 88, flags));
        assert_eq!(
            thunk(&p, "D3DKMTCreateNativeFence", f.as_mut_ptr() as u64),
            STATUS_SUCCESS,
            "Info.Flags {flags:#x}"
        );
        assert_ne!(f[4..8], [0; 4]);
        // The mapping's GPU addresses came back.
        assert_ne!(f[104..112], [0; 8]);
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// DDI-03: `D3DKMTCreateAllocation2` from the DLL's process writes each entry's handle and,
/// under 24H2, no GPU VA (`DXGDEVICE::CreateAllocation` @0x140356E10): the caller's
/// `GpuVirtualAddress` stays as it wrote it, and the DLL maps each of its allocations itself
/// (`D3DKMTMapGpuVirtualAddress`). Under the pages' reading a VA comes back and the DLL maps
/// none.
#[test]
fn ddi_03_create_allocation2_gives_a_va_only_under_the_pages_reading() {
    const UNTOUCHED: u64 = 0xDEAD_0000;
    let m = pe_machine();
    let at_create = m.os_config().windows.reading().allocation_va
        == rvgpu_simos::machine::answers::AllocationVa::AtCreate;
    let p = UserProcess::new(m.clone(), umd());
    let (adapter, _) = open_queue(&p);
    let (_, va) = buffer_4k(&p, adapter);
    assert_ne!(va, 0, "the buffer has a VA either way");
    let maps = p.calls("D3DKMTMapGpuVirtualAddress");
    if at_create {
        assert_eq!(maps, 0, "the create gave every VA");
    } else {
        assert!(maps >= 3, "ring, ring control and buffer mapped: {maps}");
    }
    let pdd = rvgpu_umd::kmt::allocation_private_data(4096, rvgpu_hw::pdd::AllocationKind::Buffer);
    let bytes = zerocopy::IntoBytes::as_bytes(&pdd).to_vec();
    // D3DDDI_ALLOCATIONINFO2: hAllocation, pSystemMem, pPrivateDriverData,
    // PrivateDriverDataSize, VidPnSourceId, Flags, GpuVirtualAddress (word 5), ...
    let mut info = [0u64; 12];
    info[2] = bytes.as_ptr() as u64;
    info[3] = bytes.len() as u64;
    info[5] = UNTOUCHED;
    // D3DKMT_CREATEALLOCATION: hDevice, ..., NumAllocations (high half of word 5),
    // pAllocationInfo2 (word 6).
    let mut args = [0u64; 9];
    args[0] = u64::from(p.devices()[0].device);
    args[5] = 1 << 32;
    args[6] = info.as_mut_ptr() as u64;
    assert_eq!(
        thunk(&p, "D3DKMTCreateAllocation2", args.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    assert_ne!(info[0] as u32, 0, "a handle");
    if at_create {
        assert!(info[5] != UNTOUCHED && info[5] != 0, "{:#x}", info[5]);
    } else {
        assert_eq!(info[5], UNTOUCHED, "24H2 writes no VA back");
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
}
