//! The D3DKMT thunks the shipped `rvgpu_umd.dll` calls, called raw in the DLL's own process
//! as 24H2 answers them: each refusal in 24H2's order with its status, the fields written
//! back, and a catalog row (`rvgpu_simos::kmt::catalog`) for every thunk the DLL imports.

mod common;

use common::dll::*;
use common::pe::{pe_machine, pe_machine_sw, umd};
use rvgpu_simos::pe::umd::UserProcess;

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

/// `D3DKMTSubmitCommand` on a software-scheduled node given what Windows refuses returns its
/// status and submits nothing (no fence ID is taken): no or too many broadcast contexts, a
/// further broadcast context that names none, primaries on a render-only adapter, private
/// data the KMD did not ask for, a context of no process or of another process, a length not
/// a multiple of the 8-byte word or past the DMA buffer size, an unmapped VA; what the UMD does
/// not use is STATUS_NOT_SUPPORTED. A length of 0 succeeds and submits nothing, as 24H2 does.
#[test]
fn um_01_d3dkmtsubmitcommand_refuses_what_windows_refuses() {
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
    let inval = STATUS_INVALID_PARAMETER;
    type Edit = fn(&mut [u64; 48]);
    let cases: [(&str, u32, u64, u32, Edit, u64); 13] = [
        (
            "no broadcast context",
            ctx,
            va,
            8,
            |s| set_u32(s, 24, 0),
            inval,
        ),
        (
            "65 broadcast contexts",
            ctx,
            va,
            8,
            |s| set_u32(s, 24, 65),
            inval,
        ),
        (
            "two broadcast contexts, the second none",
            ctx,
            va,
            8,
            |s| set_u32(s, 24, 2),
            inval,
        ),
        ("a primary", ctx, va, 8, |s| set_u32(s, 300, 1), inval),
        ("private data", ctx, va, 8, |s| set_u32(s, 296, 8), inval),
        (
            "NullRendering",
            ctx,
            va,
            8,
            |s| set_u32(s, 12, 1),
            NOT_SUPPORTED,
        ),
        (
            "a history buffer",
            ctx,
            va,
            8,
            |s| set_u32(s, 368, 1),
            NOT_SUPPORTED,
        ),
        ("no such context", 0x1234, va, 8, |_| {}, inval),
        ("another process's context", other, va, 8, |_| {}, inval),
        ("a length of 12", ctx, va, 12, |_| {}, inval),
        ("past 64 KiB", ctx, va, 64 * 1024 + 8, |_| {}, inval),
        ("an unaligned VA", ctx, va + 4, 8, |_| {}, inval),
        ("an unmapped VA", ctx, 0x1000, 8, |_| {}, inval),
    ];
    for (what, c, at, len, edit, want) in cases {
        let mut s = submit_command(c, at, len);
        edit(&mut s);
        let r = thunk(&p, "D3DKMTSubmitCommand", s.as_mut_ptr() as u64);
        assert_eq!(r, want, "{what}: {r:#x}");
    }
    let mut s = submit_command(ctx, va, 8);
    set_u32(&mut s, 24, 2);
    set_u32(&mut s, 32, ctx);
    assert_eq!(
        thunk(&p, "D3DKMTSubmitCommand", s.as_mut_ptr() as u64),
        NOT_SUPPORTED,
        "two broadcast contexts"
    );
    let mut s = submit_command(ctx, va, 0);
    assert_eq!(
        thunk(&p, "D3DKMTSubmitCommand", s.as_mut_ptr() as u64),
        STATUS_SUCCESS,
        "a length of 0"
    );
    assert_eq!(m.legacy_fences(0, 0), before, "something was submitted");
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
            STATUS_INVALID_PARAMETER,
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

/// A `D3DKMT_CREATECONTEXTVIRTUAL` (40 bytes) for `device`: node 0, the rest as `edit` sets it.
fn context_virtual(device: u32, edit: impl FnOnce(&mut [u32; 10])) -> [u32; 10] {
    let mut c = [0u32; 10];
    c[0] = device;
    edit(&mut c);
    c
}

/// `D3DKMTCreateContextVirtual` refuses what 24H2's `DxgkCreateContextVirtualImpl` refuses, as
/// a raw thunk call in the DLL's process, and writes nothing back then: an engine-affinity bit
/// past the one physical adapter, two bits, a node past the adapter's, a flag bit from 7 up,
/// private data given half (a pointer with size 0, a size with no pointer), all
/// STATUS_INVALID_PARAMETER; private data at an unmapped address is the probe's
/// STATUS_ACCESS_VIOLATION. Engine 0 or 1 is accepted and `hContext` written.
#[test]
fn um_03_d3dkmtcreatecontextvirtual_refuses_what_24h2_refuses() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    open_queue(&p);
    let device = p.devices()[0].device;
    let mut pdd = [0u8; 16];
    let pdd_at = pdd.as_mut_ptr() as u64;
    type Edit = Box<dyn Fn(&mut [u32; 10])>;
    let cases: Vec<(&str, Edit, u64)> = vec![
        (
            "engine bit 1",
            Box::new(|c| c[2] = 2),
            STATUS_INVALID_PARAMETER,
        ),
        (
            "engine bits 0 and 1",
            Box::new(|c| c[2] = 3),
            STATUS_INVALID_PARAMETER,
        ),
        (
            "node past the adapter's",
            Box::new(|c| c[1] = 64),
            STATUS_INVALID_PARAMETER,
        ),
        (
            "flag bit 7",
            Box::new(|c| c[3] = 1 << 7),
            STATUS_INVALID_PARAMETER,
        ),
        (
            "flag bit 31",
            Box::new(|c| c[3] = 1 << 31),
            STATUS_INVALID_PARAMETER,
        ),
        (
            "private data pointer, size 0",
            Box::new(move |c| {
                c[4] = pdd_at as u32;
                c[5] = (pdd_at >> 32) as u32;
            }),
            STATUS_INVALID_PARAMETER,
        ),
        (
            "private data size, no pointer",
            Box::new(|c| c[6] = 16),
            STATUS_INVALID_PARAMETER,
        ),
        (
            "private data unmapped",
            Box::new(|c| {
                c[4] = 0x10;
                c[6] = 16;
            }),
            STATUS_ACCESS_VIOLATION,
        ),
        (
            "a device handle never given",
            Box::new(|c| c[0] = 0x7777_7777),
            STATUS_INVALID_PARAMETER,
        ),
    ];
    for (what, edit, want) in &cases {
        let mut c = context_virtual(device, edit);
        assert_eq!(
            thunk(&p, "D3DKMTCreateContextVirtual", c.as_mut_ptr() as u64),
            *want,
            "{what}"
        );
        assert_eq!(c[8], 0, "{what}: hContext written on a refusal");
    }
    for engine in [0, 1] {
        // `HwQueueSupported`: node 0 is hardware-scheduled.
        let mut c = context_virtual(device, |c| {
            c[2] = engine;
            c[3] = HW_QUEUE_SUPPORTED;
        });
        assert_eq!(
            thunk(&p, "D3DKMTCreateContextVirtual", c.as_mut_ptr() as u64),
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
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// UM-03: `D3DKMTQueryAdapterInfo(KMTQAITYPE_NODEMETADATA)` is how a runtime learns that a node
/// is hardware-scheduled: the driver's `DXGK_NODEMETADATA` comes back unchanged, its
/// `ContextSchedulingSupported` bit included. What 24H2's `DxgkQueryAdapterInfoImpl` refuses is
/// refused, as raw thunk calls in the DLL's process: no buffer, size 0, a size other than 78,
/// an adapter handle never given, a physical adapter index past the one, a node past the
/// adapter's (STATUS_INVALID_PARAMETER each); a buffer at an unmapped address is the probe's
/// STATUS_ACCESS_VIOLATION.
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
    let query = |h: u32, at: u64, size: u32| {
        let mut q = [0u32; 6];
        q[0] = h;
        q[1] = 25; // KMTQAITYPE_NODEMETADATA
        q[2] = at as u32;
        q[3] = (at >> 32) as u32;
        q[4] = size;
        thunk(&p, "D3DKMTQueryAdapterInfo", q.as_mut_ptr() as u64)
    };
    let at = md.as_mut_ptr() as u64;
    assert_eq!(query(adapter, 0, 78), STATUS_INVALID_PARAMETER, "no buffer");
    assert_eq!(query(adapter, at, 0), STATUS_INVALID_PARAMETER, "size 0");
    assert_eq!(query(adapter, at, 77), STATUS_INVALID_PARAMETER, "size 77");
    assert_eq!(
        query(0x7777_7777, at, 78),
        STATUS_INVALID_PARAMETER,
        "adapter"
    );
    assert_eq!(
        query(adapter, 0x10, 78),
        STATUS_ACCESS_VIOLATION,
        "unmapped"
    );
    md[..4].copy_from_slice(&(1u32 << 16).to_le_bytes());
    assert_eq!(
        query(adapter, at, 78),
        STATUS_INVALID_PARAMETER,
        "adapter 1"
    );
    md[..4].copy_from_slice(&64u32.to_le_bytes());
    assert_eq!(query(adapter, at, 78), STATUS_INVALID_PARAMETER, "node 64");
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
    type Edit = fn(&mut [u8; 216]);
    let cases: [(&str, Edit); 12] = [
        ("type 1", |f| put_u32(f, 84, 1)),
        ("outer Flags", |f| put_u32(f, 184, 1)),
        ("Info.Flags bit 11", |f| put_u32(f, 88, 1 << 11)),
        ("Info.Flags bit 30", |f| put_u32(f, 88, 1 << 30)),
        ("Shared alone", |f| put_u32(f, 88, 1)),
        ("NtSecuritySharing alone", |f| put_u32(f, 88, 2)),
        ("NoSignal with NoWait", |f| put_u32(f, 88, 0x30)),
        ("Reserved", |f| f[215] = 1),
        ("Info.Reserved", |f| f[152] = 1),
        ("mapping reserved", |f| f[120] = 1),
        ("device never given", |f| put_u32(f, 0, 0x7777_7777)),
        ("Shared alone, bad device", |f| {
            put_u32(f, 0, 0x7777_7777);
            put_u32(f, 88, 1);
        }),
    ];
    for (what, edit) in cases {
        let mut f = create_native_fence(device, edit);
        assert_eq!(
            thunk(&p, "D3DKMTCreateNativeFence", f.as_mut_ptr() as u64),
            STATUS_INVALID_PARAMETER,
            "{what}"
        );
        assert_eq!(f[4..8], [0; 4], "{what}: hSyncObject written on a refusal");
    }
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
    let at_create = m.os_config().reading.allocation_va
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
