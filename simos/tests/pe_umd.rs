//! `rvgpu_umd.dll` itself under the simulated OS, next to `rvgpu.sys` — the DLL's
//! C API (umd/include/rvgpu_umd.h) run in the x86-64 emulator, its gdi32/kernel32/advapi32
//! imports landing in the simulated OS's thunks (`rvgpu_simos::pe::umd`), the driver image
//! behind them. What the DLL does here is what it does on Windows: `D3DKMT*` structures,
//! user-mode submission through the ring and the doorbell page, native fences.

mod common;

use std::sync::Arc;

use common::dll::*;
use common::pe::{call, log_of, pe_machine, pe_machine_sw, threaded_machine, umd};
use common::*;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::pe::cpu::Stop;
use rvgpu_simos::pe::umd::{UmdImage, UserProcess};
use rvgpu_simos::pe::{build_umd, DriverBuild};
use rvgpu_simos::Machine;

#[test]
fn the_dll_binds_its_imports_to_the_simulated_os() {
    let img = umd();
    let imports = img.imports();
    let gdi = imports
        .iter()
        .filter(|i| i.starts_with("gdi32.dll!"))
        .count();
    assert_eq!(gdi, 28, "{imports:?}");
    for needed in [
        "gdi32.dll!D3DKMTOpenAdapterFromLuid",
        "gdi32.dll!D3DKMTSubmitCommandToHwQueue",
        "gdi32.dll!D3DKMTWaitForSynchronizationObjectFromCpu",
        "kernel32.dll!GetProcAddress",
        "kernel32.dll!HeapAlloc",
        "kernel32.dll!AcquireSRWLockExclusive",
        "advapi32.dll!EventRegister",
        "ntdll.dll!memcpy",
    ] {
        assert!(imports.iter().any(|i| i == needed), "{needed}: {imports:?}");
    }
    let exports = img.exports();
    for e in ["rvgpu_open_adapter", "rvgpu_submit", "rvgpu_fence_wait"] {
        assert!(exports.iter().any(|x| x == e), "{e}: {exports:?}");
    }
}

/// An import the simulated OS does not implement fails the load with its name (the driver
/// image's rule).
#[test]
fn an_unknown_dll_import_fails_the_load_with_its_name() {
    pe::assert_unknown_import_refused(
        UmdImage::load,
        &build_umd().expect("built"),
        ("D3DKMTLock2", "D3DKMTLockX"),
        "renamed-import.dll",
        "gdi32.dll!D3DKMTLockX",
    );
}

/// UM-06, UM-16, UM-19 on the shipped binaries: the DLL opens the adapter by LUID, creates a
/// user-mode queue (ring, ring control, doorbell through the WDDM 3.2 thunks it finds with
/// GetProcAddress), submits a fill of a buffer by writing the ring and storing to its doorbell
/// page — a store the emulator routes to the physical doorbell, as the Linux UMD's — and the
/// device runs it: the queue's progress value is reached and the buffer holds the pattern.
/// No kernel-mode submission is made. Against both builds of the driver: `rvgpu.sys` in the
/// emulator, and the Linux build.
#[test]
fn um_06_um_16_um_19_the_shipped_dll_submits_through_its_doorbell() {
    submit_through_the_doorbell(pe_machine());
    submit_through_the_doorbell(threaded_machine(DriverBuild::Linux));
}

fn submit_through_the_doorbell(m: Arc<Machine>) {
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open_adapter(&p);
    assert_ne!(adapter, 0);
    let mut queue = 0u64;
    assert_eq!(
        call(&p, "rvgpu_create_queue", &[adapter, 0, 0, addr(&mut queue)]),
        OK,
        "{}",
        log_of(&m)
    );
    assert_eq!(p.calls("D3DKMTCreateDoorbell"), 1);
    assert_eq!(p.calls("D3DKMTConnectDoorbell"), 1);
    // The queue's ETW provider registered; no session enables it.
    assert_eq!(p.calls("EventRegister"), 1);
    let mut buffer = 0u64;
    assert_eq!(
        call(
            &p,
            "rvgpu_buffer_create",
            &[adapter, 4096, addr(&mut buffer)]
        ),
        OK
    );
    let mut va = 0u64;
    assert_eq!(
        call(&p, "rvgpu_buffer_gpu_va", &[buffer, addr(&mut va)]),
        OK
    );
    assert_ne!(va, 0);

    // Packets through rvgpu_submit: fill 256 bytes of the buffer.
    const PATTERN: u64 = 0x5EED_0044_C0DE_F00D;
    let cmds = dwords(&[Command::Fill {
        dst: va,
        bytes: 256,
        pattern: PATTERN,
    }]);
    let mut progress = 0u64;
    assert_eq!(submit_dwords(&p, queue, &cmds, &mut progress), OK);
    assert!(progress > 0);
    assert_eq!(
        call(&p, "rvgpu_queue_wait", &[queue, progress, 5_000_000_000]),
        OK,
        "{}",
        log_of(&m)
    );
    // And through the tracked path: fill the next 256 bytes.
    let mut progress2 = 0u64;
    assert_eq!(
        call(
            &p,
            "rvgpu_buffer_fill",
            &[queue, buffer, 256, 256, !PATTERN, addr(&mut progress2)]
        ),
        OK
    );
    assert!(progress2 > progress);
    assert_eq!(
        call(&p, "rvgpu_queue_wait", &[queue, progress2, u64::MAX]),
        OK
    );

    // The device's work, read through the buffer's Lock2 mapping (host memory).
    let mut data = 0u64;
    let queues = [queue];
    assert_eq!(
        call(
            &p,
            "rvgpu_buffer_lock",
            &[buffer, 1, queues.as_ptr() as u64, 1, addr(&mut data)]
        ),
        OK
    );
    // SAFETY: the buffer's CPU mapping, 4096 bytes, locked for reading.
    let words = unsafe { std::slice::from_raw_parts(data as *const u64, 64) };
    assert!(words[..32].iter().all(|w| *w == PATTERN), "{words:x?}");
    assert!(words[32..].iter().all(|w| *w == !PATTERN), "{words:x?}");
    assert_eq!(call(&p, "rvgpu_buffer_unlock", &[buffer]), OK);

    // User-mode submission: doorbell stores, the physical doorbell, no kernel path.
    assert!(p.doorbell_rings() >= 2, "{}", p.doorbell_rings());
    let db = p.doorbells();
    assert_eq!(db.len(), 1);
    let info = m.doorbell_info(0, db[0]).expect("the doorbell");
    assert!(info.writes.1 >= 2, "{info:?}");
    assert_eq!(p.calls("D3DKMTSubmitCommandToHwQueue"), 0);

    assert_eq!(
        call(
            &p,
            "rvgpu_buffer_destroy",
            &[buffer, queues.as_ptr() as u64, 1]
        ),
        OK
    );
    assert_eq!(call(&p, "rvgpu_destroy_queue", &[queue]), OK);
    assert_eq!(call(&p, "rvgpu_close_adapter", &[adapter]), OK);
    assert_eq!(p.open_devices(), 0);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// NF-17, MF-04 on the shipped binaries: a native fence the DLL creates (D3DKMTCreateNativeFence
/// through GetProcAddress), signalled from the CPU (the driver image's
/// DxgkDdiUpdateCurrentValuesFromCpu) and waited for: a poll, a wait with a timeout (an event
/// and WaitForSingleObject) that times out, waits in the event and the blocking form that a
/// signal from another thread releases, and a wait on the application's own event.
#[test]
fn nf_17_mf_04_the_shipped_dll_signals_and_waits_a_native_fence() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open_adapter(&p);
    let mut fence = 0u64;
    assert_eq!(
        call(&p, "rvgpu_fence_create", &[adapter, 3, addr(&mut fence)]),
        OK,
        "{}",
        log_of(&m)
    );
    assert_eq!(call(&p, "rvgpu_fence_wait", &[fence, 3, 0]), OK);
    assert_eq!(call(&p, "rvgpu_fence_wait", &[fence, 4, 0]), TIMEOUT);
    // A bounded wait that nothing satisfies: the event is never signalled.
    assert_eq!(
        call(&p, "rvgpu_fence_wait", &[fence, 4, 20_000_000]),
        TIMEOUT
    );
    assert_eq!(call(&p, "rvgpu_fence_signal", &[fence, 7]), OK);
    assert_eq!(call(&p, "rvgpu_fence_wait", &[fence, 7, 5_000_000_000]), OK);
    assert_eq!(call(&p, "rvgpu_fence_wait", &[fence, 6, u64::MAX]), OK);
    // The 20 ms wait ran in bounded slices, CurrentValue re-read after each (late wakes).
    let slices = rvgpu_umd::wait::slices_in(20_000_000).expect("a deadline");
    assert_eq!(p.calls("WaitForSingleObject"), slices);
    // Waits another thread satisfies (fences may be used from any thread): the event form
    // (a timeout) and the blocking form (none). Each waiter leaves the emulator while it
    // waits, so the signalling thread runs the DLL meanwhile.
    for (value, timeout) in [(9u64, 5_000_000_000u64), (11, u64::MAX)] {
        let waits = p.calls("D3DKMTWaitForSynchronizationObjectFromCpu");
        let waiter = {
            let p = p.clone();
            std::thread::spawn(move || call(&p, "rvgpu_fence_wait", &[fence, value, timeout]))
        };
        // Signal only once the waiter is in the OS (its wait registered, or blocking).
        let t0 = std::time::Instant::now();
        while p.calls("D3DKMTWaitForSynchronizationObjectFromCpu") == waits {
            assert!(
                t0.elapsed().as_secs() < 10,
                "the waiter never reached the thunk"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            !waiter.is_finished(),
            "the wait for {value} ended before the signal"
        );
        assert_eq!(call(&p, "rvgpu_fence_signal", &[fence, value]), OK);
        assert_eq!(waiter.join().expect("the waiter"), OK);
    }
    assert!(p.calls("WaitForSingleObject") >= slices + 2);
    // The event form the application owns: rvgpu_fence_wait_async registers the wait on its
    // event and returns; the event is signalled once the fence reaches the value. Something
    // that is no event of the process is refused.
    let k = |name: &str, args: &[u64]| p.call_import(name, args).expect(name);
    let event = k("CreateEventW", &[0, 1, 0, 0]);
    assert_ne!(event, 0);
    assert_eq!(
        call(&p, "rvgpu_fence_wait_async", &[fence, 0x1234, 0x10]),
        INVALID_ARGUMENT
    );
    assert_eq!(call(&p, "rvgpu_fence_wait_async", &[fence, 13, event]), OK);
    assert_eq!(k("WaitForSingleObject", &[event, 0]), 0x102, "not yet");
    assert_eq!(call(&p, "rvgpu_fence_signal", &[fence, 13]), OK);
    assert_eq!(k("WaitForSingleObject", &[event, 5000]), 0);
    assert_eq!(k("CloseHandle", &[event]), 1);
    assert_eq!(call(&p, "rvgpu_fence_destroy", &[fence]), OK);
    assert_eq!(call(&p, "rvgpu_close_adapter", &[adapter]), OK);
    assert_eq!(p.heap_blocks(), 0, "the DLL freed what it allocated");
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// DDI-03 through the shipped DLL: `rvgpu_va_reserve` at a chosen address
/// (`D3DKMTReserveGpuVirtualAddress`), `rvgpu_buffer_map_va` of the buffer's second page
/// there (`D3DKMTMapGpuVirtualAddress` on a paging queue, waited for), a FILL through that VA
/// lands in the buffer's second page, `rvgpu_va_free` (`D3DKMTFreeGpuVirtualAddress`); a range
/// that is not reserved cannot be freed, pages past the buffer are refused.
#[test]
fn ddi_03_the_shipped_dll_maps_a_buffer_at_a_chosen_va() {
    const CHOSEN: u64 = 0x7000_0000_0000;
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let (adapter, queue) = open_queue(&p);
    let mut buffer = 0u64;
    assert_eq!(
        call(
            &p,
            "rvgpu_buffer_create",
            &[adapter, 8192, addr(&mut buffer)]
        ),
        OK
    );
    let mut va = 0u64;
    assert_eq!(
        call(
            &p,
            "rvgpu_va_reserve",
            &[adapter, CHOSEN, 0x1_0000, addr(&mut va)]
        ),
        OK,
        "{}",
        log_of(&m)
    );
    assert_eq!(va, CHOSEN);
    assert_eq!(
        call(&p, "rvgpu_buffer_map_va", &[buffer, CHOSEN, 1, 2]),
        INVALID_ARGUMENT,
        "pages 1..3 of a two-page buffer"
    );
    // Under 24H2 the DLL mapped each of its allocations itself already (the create gives no
    // VA): count from here.
    let before = p.calls("D3DKMTMapGpuVirtualAddress");
    assert_eq!(
        call(&p, "rvgpu_buffer_map_va", &[buffer, CHOSEN, 1, 1]),
        OK,
        "{}",
        log_of(&m)
    );
    assert_eq!(p.calls("D3DKMTMapGpuVirtualAddress"), before + 1);
    let fill = Command::Fill {
        dst: CHOSEN + 8,
        bytes: 8,
        pattern: 0x5A5A_0003,
    };
    let d = dwords(&[fill]);
    let mut v = 0u64;
    assert_eq!(submit_dwords(&p, queue, &d, &mut v), OK);
    assert_eq!(call(&p, "rvgpu_queue_wait", &[queue, v, u64::MAX]), OK);
    let mut data = 0u64;
    assert_eq!(
        call(&p, "rvgpu_buffer_lock", &[buffer, 1, 0, 0, addr(&mut data)]),
        OK
    );
    // SAFETY: the lock's view of the 8 KiB buffer; words 1 and 513 are inside it.
    let (page0, page1) = unsafe {
        let w = data as *const u64;
        (w.add(1).read_volatile(), w.add(513).read_volatile())
    };
    assert_eq!((page0, page1), (0, 0x5A5A_0003));
    assert_eq!(call(&p, "rvgpu_buffer_unlock", &[buffer]), OK);
    assert_eq!(call(&p, "rvgpu_va_free", &[adapter, CHOSEN, 0x1_0000]), OK);
    assert_ne!(
        call(&p, "rvgpu_va_free", &[adapter, CHOSEN, 0x1_0000]),
        OK,
        "a range freed twice"
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// A FILL through a kernel-mode DMA context of the shipped DLL on node 0 of `m`:
/// `rvgpu_context_create`, `rvgpu_context_submit` of the FILL, until the buffer holds the
/// pattern, then `rvgpu_context_destroy` (a submission after it is
/// RVGPU_STATUS_INVALID_HANDLE). Returns the process for its thunk counts.
fn dma_context_fill(m: &Arc<Machine>) -> Arc<UserProcess> {
    let p = UserProcess::new(m.clone(), umd());
    let adapter = open_adapter(&p);
    let (buffer, va) = buffer_4k(&p, adapter);
    let mut ctx = 0u64;
    assert_eq!(
        call(&p, "rvgpu_context_create", &[adapter, 0, addr(&mut ctx)]),
        OK,
        "{}",
        log_of(m)
    );
    let d = dwords(&[Command::Fill {
        dst: va + 16,
        bytes: 8,
        pattern: 0xD0A_0002,
    }]);
    assert_eq!(
        call(
            &p,
            "rvgpu_context_submit",
            &[ctx, d.as_ptr() as u64, d.len() as u64]
        ),
        OK,
        "{}",
        log_of(m)
    );
    let t0 = std::time::Instant::now();
    loop {
        let mut data = 0u64;
        assert_eq!(
            call(&p, "rvgpu_buffer_lock", &[buffer, 1, 0, 0, addr(&mut data)]),
            OK
        );
        // SAFETY: the lock's view of the 4 KiB buffer; word 2 is inside it.
        let got = unsafe { (data as *const u64).add(2).read_volatile() };
        assert_eq!(call(&p, "rvgpu_buffer_unlock", &[buffer]), OK);
        if got == 0xD0A_0002 {
            break;
        }
        assert!(t0.elapsed().as_secs() < 20, "the FILL never ran");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(call(&p, "rvgpu_context_destroy", &[ctx]), OK);
    assert_eq!(
        call(
            &p,
            "rvgpu_context_submit",
            &[ctx, d.as_ptr() as u64, d.len() as u64]
        ),
        8,
        "RVGPU_STATUS_INVALID_HANDLE after the destroy"
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
    p
}

/// UM-01, classic kernel-mode submission from the shipped DLL on a software-scheduled node:
/// `rvgpu_context_create` (`D3DKMTCreateContextVirtual` without `HwQueueSupported` and a
/// command buffer), `rvgpu_context_submit` copies a FILL into the command buffer and submits it
/// with `D3DKMTSubmitCommand`; VidSch gives it the node's next fence ID, the KMD runs it, the
/// buffer holds the pattern.
#[test]
fn um_01_the_shipped_dll_runs_a_dma_buffer_through_d3dkmtsubmitcommand() {
    let m = pe_machine_sw();
    let (s0, _) = m.legacy_fences(0, 0);
    let p = dma_context_fill(&m);
    assert_eq!(p.calls("D3DKMTSubmitCommand"), 1);
    assert_eq!(p.calls("D3DKMTCreateHwQueue"), 0);
    let (s1, _) = m.legacy_fences(0, 0);
    assert_eq!(s1, s0 + 1, "one new fence ID");
    let t0 = std::time::Instant::now();
    while m.legacy_fences(0, 0).1 < s1 {
        assert!(t0.elapsed().as_secs() < 20, "fence ID {s1} never completed");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// UM-01 on a hardware-scheduled node: the shipped DLL's kernel-mode DMA context is created
/// with `HwQueueSupported` (24H2 refuses one without it there) and one kernel-mode hardware
/// queue; `rvgpu_context_submit` goes through `D3DKMTSubmitCommandToHwQueue` (24H2 refuses
/// `D3DKMTSubmitCommand` on such a context), no native fence is made for it, and the FILL runs.
#[test]
fn um_01_the_shipped_dll_runs_a_dma_buffer_through_a_hardware_queue_on_a_hws_node() {
    let m = pe_machine();
    let p = dma_context_fill(&m);
    assert_eq!(p.calls("D3DKMTSubmitCommand"), 0);
    assert_eq!(p.calls("D3DKMTCreateHwQueue"), 1);
    assert_eq!(p.calls("D3DKMTSubmitCommandToHwQueue"), 1);
    assert_eq!(p.calls("D3DKMTCreateNativeFence"), 0);
    assert_eq!(p.calls("D3DKMTQueryAdapterInfo"), 1, "node 0 learnt once");
}

/// DDI-03 with paging queued (the default `PagingWork::Queued`: every Map and MakeResident
/// answers STATUS_PENDING with a paging fence value not yet reached): the shipped DLL waits
/// for its paging fence before its ring, ring control and buffer are used, so its queue runs
/// and a FILL through the buffer's VA lands.
#[test]
fn ddi_03_the_shipped_dll_waits_for_its_paging_fence() {
    let mut cfg = rvgpu_simos::MachineConfig::single(rvgpu_simos::Mode::Threaded);
    cfg.driver = DriverBuild::Pe(None);
    let m = Arc::new(started(cfg));
    let p = UserProcess::new(m.clone(), umd());
    let (adapter, queue) = open_queue(&p);
    let (buffer, va) = buffer_4k(&p, adapter);
    let d = dwords(&[Command::Fill {
        dst: va + 8,
        bytes: 8,
        pattern: 0x0D11_0003,
    }]);
    let mut v = 0u64;
    assert_eq!(submit_dwords(&p, queue, &d, &mut v), OK);
    assert_eq!(call(&p, "rvgpu_queue_wait", &[queue, v, u64::MAX]), OK);
    let mut data = 0u64;
    assert_eq!(
        call(&p, "rvgpu_buffer_lock", &[buffer, 1, 0, 0, addr(&mut data)]),
        OK
    );
    // SAFETY: the lock's view of the 4 KiB buffer; word 1 is inside it.
    let word = unsafe { (data as *const u64).add(1).read_volatile() };
    assert_eq!(word, 0x0D11_0003);
    assert_eq!(call(&p, "rvgpu_buffer_unlock", &[buffer]), OK);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// NF-13: a native fence shared between two processes through the shipped DLL — created
/// shareable in one, `rvgpu_fence_share` (`D3DKMTShareObjects`), duplicated into the other
/// (`DuplicateHandle`, done here as the OS), `rvgpu_fence_open` there
/// (`D3DKMTOpenNativeFenceFromNtHandle`): CPU signals, a GPU signal and a GPU wait of one
/// process are seen by the other; what cannot be shared is refused with a status.
#[test]
fn nf_13_the_shipped_dll_shares_a_native_fence_between_processes() {
    const INVALID_HANDLE: u64 = 8;
    let m = pe_machine();
    let img = umd();
    let (pa, pb) = (
        UserProcess::new(m.clone(), img.clone()),
        UserProcess::new(m.clone(), img),
    );
    let (aa, qa) = open_queue(&pa);
    let (ab, qb) = open_queue(&pb);
    let (buf, va) = buffer_4k(&pb, ab);
    let mut plain = 0u64;
    assert_eq!(
        call(&pa, "rvgpu_fence_create", &[aa, 0, addr(&mut plain)]),
        OK
    );
    let mut nt = 0u64;
    assert_eq!(
        call(&pa, "rvgpu_fence_share", &[plain, addr(&mut nt)]),
        INVALID_ARGUMENT,
        "a fence not created shareable"
    );
    assert_eq!(nt, 0);
    let mut fa = 0u64;
    assert_eq!(
        call(&pa, "rvgpu_fence_create2", &[aa, 1, 1, addr(&mut fa)]),
        OK
    );
    assert_eq!(call(&pa, "rvgpu_fence_share", &[fa, 0]), INVALID_ARGUMENT);
    assert_eq!(call(&pa, "rvgpu_fence_share", &[fa, addr(&mut nt)]), OK);
    assert_ne!(nt, 0);
    let (from, to) = (pa.nt_processes()[0], pb.nt_processes()[0]);
    let theirs = m.duplicate_handle(from, nt, to).expect("DuplicateHandle");
    assert_eq!(
        pa.call_import("CloseHandle", &[nt]).expect("CloseHandle"),
        1
    );
    let mut fb = 0u64;
    // Another process's value, and a forged one, name nothing in this process.
    for bad in [nt ^ 0x4000, 0x7FF0] {
        assert_eq!(
            call(&pb, "rvgpu_fence_open", &[ab, bad, addr(&mut fb)]),
            INVALID_HANDLE,
            "{bad:#x}"
        );
        assert_eq!(fb, 0);
    }
    assert_eq!(
        call(&pb, "rvgpu_fence_open", &[ab, 0, addr(&mut fb)]),
        INVALID_ARGUMENT
    );
    assert_eq!(
        call(&pb, "rvgpu_fence_open", &[ab, theirs, addr(&mut fb)]),
        OK,
        "{}",
        log_of(&m)
    );
    assert_eq!(
        pb.call_import("CloseHandle", &[theirs])
            .expect("CloseHandle"),
        1
    );
    assert_eq!(
        pb.call_import("CloseHandle", &[theirs])
            .expect("CloseHandle"),
        0
    );
    let mut v = 0u64;
    assert_eq!(call(&pb, "rvgpu_fence_value", &[fb, addr(&mut v)]), OK);
    assert_eq!(v, 1, "the opener sees the creator's value");
    // CPU signal in B, seen in A.
    assert_eq!(call(&pb, "rvgpu_fence_signal", &[fb, 5]), OK);
    assert_eq!(call(&pa, "rvgpu_fence_wait", &[fa, 5, 5_000_000_000]), OK);
    // B's queue waits on the GPU for 7, fills, signals 8; A's CPU signal of 7 releases it.
    let cmds = dwords(&[fill64(va, 0xAB)]);
    let waits = [fb, 7u64];
    let signals = [fb, 8u64];
    let desc = [
        cmds.as_ptr() as u64,
        cmds.len() as u64,
        waits.as_ptr() as u64,
        1,
        signals.as_ptr() as u64,
        1,
    ];
    let mut progress = 0u64;
    assert_eq!(
        call(
            &pb,
            "rvgpu_queue_submit",
            &[qb, desc.as_ptr() as u64, addr(&mut progress)]
        ),
        OK
    );
    assert_eq!(
        call(&pb, "rvgpu_queue_wait", &[qb, progress, 50_000_000]),
        TIMEOUT
    );
    assert_eq!(call(&pa, "rvgpu_fence_signal", &[fa, 7]), OK);
    assert_eq!(call(&pa, "rvgpu_fence_wait", &[fa, 8, 5_000_000_000]), OK);
    assert_eq!(call(&pb, "rvgpu_queue_wait", &[qb, progress, u64::MAX]), OK);
    // The creator's end goes first; the opener's instance keeps the fence.
    assert_eq!(call(&pa, "rvgpu_fence_destroy", &[fa]), OK);
    assert_eq!(call(&pb, "rvgpu_fence_signal", &[fb, 9]), OK);
    assert_eq!(call(&pb, "rvgpu_fence_value", &[fb, addr(&mut v)]), OK);
    assert_eq!(v, 9);
    assert_eq!(call(&pb, "rvgpu_fence_destroy", &[fb]), OK);
    assert_eq!(call(&pa, "rvgpu_fence_destroy", &[plain]), OK);
    assert_eq!(call(&pb, "rvgpu_buffer_destroy", &[buf, 0, 0]), OK);
    for (p, a, q) in [(&pa, aa, qa), (&pb, ab, qb)] {
        assert_eq!(call(p, "rvgpu_destroy_queue", &[q]), OK);
        assert_eq!(call(p, "rvgpu_close_adapter", &[a]), OK);
        assert_eq!(p.heap_blocks(), 0);
    }
    assert_eq!(m.nt_handle_count(from) + m.nt_handle_count(to), 0);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// `examples/two_queues.c`, the README's first program, links with mingw-w64 against the
/// shipped DLL itself: every C API function it calls is an export of `rvgpu_umd.dll`, and the
/// executable imports nothing else of it.
#[test]
fn the_two_queues_example_links_against_the_shipped_dll() {
    let dll = build_umd().unwrap_or_else(|e| panic!("{e}"));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = common::scratch::Scratch::new("pe_umd");
    let exe = dir.join("two_queues.exe");
    let out = std::process::Command::new("x86_64-w64-mingw32-gcc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(root.join("umd/include"))
        .arg(root.join("examples/two_queues.c"))
        .arg(&dll)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("mingw-w64 runs (bash scripts/setup.sh mingw)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = std::process::Command::new("x86_64-w64-mingw32-objdump")
        .arg("-p")
        .arg(&exe)
        .output()
        .expect("objdump");
    let text = String::from_utf8_lossy(&dump.stdout);
    let exports = UmdImage::load(&dll)
        .unwrap_or_else(|e| panic!("{e}"))
        .exports();
    let imported: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.starts_with("rvgpu_") && *w != "rvgpu_umd.dll")
        .collect();
    assert!(imported.len() > 10, "{text}");
    for f in imported {
        assert!(
            exports.iter().any(|e| e == f),
            "{f} is not exported: {exports:?}"
        );
    }
}

/// Attacker-style: the DLL handed garbage returns an error status, and a thunk given a bad
/// structure pointer returns a status instead of halting the simulation (or the host).
#[test]
fn garbage_is_a_status_never_a_halt() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    // The C API validates its arguments: null out-pointers, null handles.
    assert_eq!(
        call(&p, "rvgpu_open_adapter", &[LUID_LOW, 0, 0]),
        INVALID_ARGUMENT
    );
    assert_eq!(
        call(&p, "rvgpu_create_queue", &[0, 0, 0, 0]),
        INVALID_ARGUMENT
    );
    assert_eq!(call(&p, "rvgpu_fence_signal", &[0, 1]), INVALID_ARGUMENT);
    // A LUID no adapter has: the OS's STATUS_INVALID_PARAMETER, mapped by the DLL.
    let mut adapter = 0u64;
    let r = call(&p, "rvgpu_open_adapter", &[0xDEAD, 7, addr(&mut adapter)]);
    assert_ne!(r, OK);
    assert_eq!(adapter, 0);
    // A pointer into nowhere as the submission's command list: the DLL faults in user mode;
    // that is the process's exception, not the machine's.
    let (a, q) = open_queue(&p);
    let mut progress = 0u64;
    match p.call("rvgpu_submit", &[q, 0x10, 4, addr(&mut progress)]) {
        Err(Stop::UserException { code, address, .. }) => {
            assert_eq!(code, 0xC000_0005);
            assert_eq!(address, 0x10);
        }
        other => panic!("expected an access violation in the DLL, got {other:?}"),
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());

    // The thunks themselves, called directly as the DLL calls them (gdi32's entry points):
    // a null structure, an unmapped one, a read-only one (outputs not writable), a handle the
    // process never got, and an array pointer into nowhere.
    let open = "D3DKMTOpenAdapterFromLuid";
    assert_eq!(thunk(&p, open, 0), STATUS_INVALID_PARAMETER);
    assert_eq!(thunk(&p, open, 0x10), STATUS_ACCESS_VIOLATION);
    static RO: [u32; 3] = [0x1000, 0, 0];
    assert_eq!(thunk(&p, open, RO.as_ptr() as u64), STATUS_ACCESS_VIOLATION);
    let mut luid = [0x1000u32, 0, 0];
    assert_eq!(thunk(&p, open, luid.as_mut_ptr() as u64), STATUS_SUCCESS);
    assert_ne!(luid[2], 0);
    // An adapter handle this process never opened.
    let mut dev = [0u64; 8];
    dev[0] = 0x7777_7777;
    assert_eq!(
        thunk(&p, "D3DKMTCreateDevice", dev.as_mut_ptr() as u64),
        STATUS_INVALID_PARAMETER
    );
    // A device handle it never got, an enormous count, arrays into nowhere: the count's pool
    // fails first (`K:DxgkSignalSynchronizationObjectFromCpu` @0x1402B97E0 allocates for the
    // handles before it reads them or looks the device up).
    let s = [0x7777_7777u64 | (u64::from(u32::MAX) << 32), 0x10, 0x10, 0];
    assert_eq!(
        thunk(
            &p,
            "D3DKMTSignalSynchronizationObjectFromCpu",
            s.as_ptr() as u64
        ),
        0xC000_0017
    );
    // Run-time thunks (GetProcAddress) too: an unmapped structure, a null one.
    assert_eq!(
        thunk(&p, "D3DKMTCreateDoorbell", 0x10),
        STATUS_ACCESS_VIOLATION
    );
    assert_eq!(
        thunk(&p, "D3DKMTCreateNativeFence", 0),
        STATUS_INVALID_PARAMETER
    );
    // A CPU wait on an event the process does not have, with a device it never got and arrays
    // into nowhere: the arrays' capture faults first
    // (`K:DxgkWaitForSynchronizationObjectFromCpuInternal` @0x1402AC610), then the device, then
    // the event.
    let mut w = [0x7777_7777u64 | (1 << 32), 0x10, 0x10, 0x1234, 0];
    let wait = "D3DKMTWaitForSynchronizationObjectFromCpu";
    assert_eq!(thunk(&p, wait, w.as_ptr() as u64), STATUS_ACCESS_VIOLATION);
    let (one, zero) = ([1u32], [0u64]);
    (w[1], w[2]) = (one.as_ptr() as u64, zero.as_ptr() as u64);
    assert_eq!(thunk(&p, wait, w.as_ptr() as u64), STATUS_INVALID_PARAMETER);
    w[0] = u64::from(p.devices()[0].device) | (1 << 32);
    assert_eq!(thunk(&p, wait, w.as_ptr() as u64), 0xC000_0008);
    // kernel32 given garbage: a lock word in no memory is an access violation raised in the
    // caller (the process), never a host fault.
    match p.call_import("AcquireSRWLockExclusive", &[0x10]) {
        Err(Stop::UserException { code, .. }) => assert_eq!(code, 0xC000_0005),
        other => panic!("expected an access violation, got {other:?}"),
    }
    assert_eq!(p.call_import("HeapFree", &[0, 0, 0x10]).ok(), Some(0));
    assert!(m.fault().is_none(), "{:?}", m.fault());
    // On Windows the access violation would have ended the process; here the same objects
    // are torn down through the DLL to show that the OS and the driver are intact.
    assert_eq!(call(&p, "rvgpu_destroy_queue", &[q]), OK);
    assert_eq!(call(&p, "rvgpu_close_adapter", &[a]), OK);
}

/// The Direct3D runtimes' entry points of the shipped DLL refuse with `E_NOTIMPL` whatever
/// they are handed (docs/windows.md, "What the Direct3D runtimes find in rvgpu_umd.dll"),
/// and make no thunk call.
#[test]
fn the_dlls_d3d_entry_points_refuse() {
    const E_NOTIMPL: u64 = 0x8000_4001;
    let p = UserProcess::new(pe_machine(), umd());
    for name in ["OpenAdapter", "OpenAdapter10_2", "OpenAdapter12"] {
        assert_eq!(call(&p, name, &[0]), E_NOTIMPL, "{name}");
        assert_eq!(call(&p, name, &[0x10]), E_NOTIMPL, "{name}");
    }
    assert_eq!(p.calls("D3DKMTOpenAdapterFromLuid"), 0);
}

/// Attacker-style, on a live queue: random and bit-flipped command streams handed to the
/// shipped DLL's `rvgpu_submit`. Every stream the UMD's own parser (the host build of the same
/// code) rejects, the DLL rejects with `RVGPU_STATUS_INVALID_ARGUMENT` before anything reaches
/// the ring; nothing faults; and the queue still runs valid work afterwards.
#[test]
fn the_shipped_dll_rejects_what_its_parser_rejects() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let (a, q) = open_queue(&p);
    let (buffer, va) = buffer_4k(&p, a);
    let valid = dwords(&[fill64(va, 0xFEED)]);
    let mut seed = 0x44u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut rejected = 0;
    for i in 0..400 {
        let stream: Vec<u32> = if i % 2 == 0 {
            (0..1 + next() % 48).map(|_| next() as u32).collect()
        } else {
            // A valid packet with one to three bits flipped, or cut short.
            let mut s = valid.clone();
            for _ in 0..1 + next() % 3 {
                let bit = next() as usize % (32 * s.len());
                s[bit / 32] ^= 1 << (bit % 32);
            }
            if next() % 4 == 0 {
                s.truncate(1 + next() as usize % (s.len() - 1));
            }
            s
        };
        if rvgpu_umd::capi::parse_commands(&stream).is_ok() {
            continue;
        }
        rejected += 1;
        let mut progress = u64::MAX;
        let r = submit_dwords(&p, q, &stream, &mut progress);
        assert_eq!(r, INVALID_ARGUMENT, "stream {i}: {stream:x?}");
        assert_eq!(
            progress, 0,
            "stream {i}: a progress value for rejected work"
        );
    }
    assert!(rejected > 300, "only {rejected} streams were rejected");
    assert_eq!(p.calls("D3DKMTSubmitCommandToHwQueue"), 0);
    let rings = p.doorbell_rings();
    assert_eq!(rings, 0, "a rejected stream reached the doorbell");
    let mut progress = 0u64;
    assert_eq!(submit_dwords(&p, q, &valid, &mut progress), OK);
    assert_eq!(
        call(&p, "rvgpu_queue_wait", &[q, progress, 5_000_000_000]),
        OK
    );
    assert!(m.fault().is_none(), "{:?}", m.fault());
    assert_eq!(call(&p, "rvgpu_buffer_destroy", &[buffer, 0, 0]), OK);
    assert_eq!(call(&p, "rvgpu_destroy_queue", &[q]), OK);
    assert_eq!(call(&p, "rvgpu_close_adapter", &[a]), OK);
}

/// UM-10 on the shipped binaries: a device loss (a forced adapter-wide recovery, in which the
/// KMD aborts the queue's doorbell through `DxgkCbDisconnectDoorbell`; the OS writes no
/// doorbell status) makes the DLL's next submission report the device lost without running
/// it, and tearing everything down still returns. Against both builds of the driver.
#[test]
fn um_10_the_shipped_dll_reports_the_device_lost_after_the_kmds_doorbell_abort() {
    report_device_loss(pe_machine());
    report_device_loss(threaded_machine(DriverBuild::Linux));
}

fn report_device_loss(m: Arc<Machine>) {
    const DEVICE_LOST: u64 = 3;
    let p = UserProcess::new(m.clone(), umd());
    let (a, q) = open_queue(&p);
    let (buffer, va) = buffer_4k(&p, a);
    let fill = |offset: u64, pattern: u64| {
        dwords(&[Command::Fill {
            dst: va + offset,
            bytes: 64,
            pattern,
        }])
    };
    let submit = |cmds: &[u32]| {
        let mut progress = 0u64;
        let r = submit_dwords(&p, q, cmds, &mut progress);
        (r, progress)
    };
    let (r, v1) = submit(&fill(0, 0x1111));
    assert_eq!(r, OK);
    assert_eq!(call(&p, "rvgpu_queue_wait", &[q, v1, 5_000_000_000]), OK);
    assert_eq!(p.calls("D3DKMTSubmitCommandToHwQueue"), 0);

    m.device_lost(0).expect("device loss");
    let (r, _) = submit(&fill(64, 0x2222));
    assert_eq!(r, DEVICE_LOST, "{}", log_of(&m));
    assert_eq!(p.calls("D3DKMTSubmitCommandToHwQueue"), 0);
    // Teardown on a lost device: statuses, never a fault.
    let _ = call(&p, "rvgpu_buffer_destroy", &[buffer, 0, 0]);
    let _ = call(&p, "rvgpu_destroy_queue", &[q]);
    let _ = call(&p, "rvgpu_close_adapter", &[a]);
    assert_eq!(p.open_devices(), 0);
    assert!(m.fault().is_none(), "{:?}", m.fault());
}

/// Attacker-style, every entry point: each gdi32 thunk the DLL imports or finds at run time,
/// called as the DLL calls it with a null structure, an unmapped one, a read-only one, one of
/// zeros and one of 0xFF bytes (handles this process never got, huge counts, wild pointers),
/// returns an error NTSTATUS; the kernel32 and advapi32 routines given garbage fail as
/// documented; nothing faults the host or the machine.
#[test]
fn every_thunk_given_garbage_returns_an_error_status() {
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let img = umd();
    let mut thunks: Vec<String> = img
        .imports()
        .iter()
        .filter_map(|i| i.strip_prefix("gdi32.dll!").map(str::to_string))
        .collect();
    for t in [
        "D3DKMTCreateDoorbell",
        "D3DKMTConnectDoorbell",
        "D3DKMTDestroyDoorbell",
        "D3DKMTNotifyWorkSubmission",
        "D3DKMTCreateNativeFence",
        "D3DKMTOpenNativeFenceFromNtHandle",
    ] {
        thunks.push(t.to_string());
    }
    assert_eq!(thunks.len(), 34);
    // Larger than every structure (`D3DKMT_SUBMITCOMMAND`'s 0x180 bytes the largest).
    static RO: [u8; 512] = [0; 512];
    for t in &thunks {
        let mut zeros = [0u8; 512];
        let mut ones = [0xFFu8; 512];
        for (what, arg) in [
            ("null", 0),
            ("unmapped", 0x10),
            ("read-only", RO.as_ptr() as u64),
            ("zeros", zeros.as_mut_ptr() as u64),
            ("0xFF bytes", ones.as_mut_ptr() as u64),
        ] {
            let r = thunk(&p, t, arg);
            assert!(
                r & 0xC000_0000 == 0xC000_0000,
                "{t} given a {what} structure returned {r:#x}"
            );
        }
    }
    // kernel32 and advapi32 with garbage: the documented failure values.
    let k = |name: &str, args: &[u64]| match p.call_import(name, args) {
        Ok(v) => v,
        Err(e) => panic!("{name}: {e:?}"),
    };
    assert_eq!(k("HeapFree", &[0x10, 0, 0x10]), 0);
    assert_eq!(
        k("HeapAlloc", &[0x10, 0, 64]),
        0,
        "a heap that is not the process heap"
    );
    assert_eq!(k("CloseHandle", &[0x1234]), 0);
    assert_eq!(k("WaitForSingleObject", &[0x1234, 0]) as u32, u32::MAX);
    assert_eq!(k("GetModuleHandleW", &[0x10]), 0);
    assert_eq!(k("LoadLibraryW", &[0]), 0);
    assert_eq!(k("GetProcAddress", &[0x10, 0x10]), 0);
    assert_eq!(
        k("CreateEventW", &[0, 1, 0, 0x10]),
        0,
        "named events are refused"
    );
    assert_ne!(k("EventRegister", &[0x10, 0, 0, 0x10]), 0);
    match p.call_import("ReleaseSRWLockExclusive", &[RO.as_ptr() as u64]) {
        Err(Stop::UserException { code, .. }) => assert_eq!(code, 0xC000_0005),
        other => panic!("a read-only lock word: {other:?}"),
    }
    assert!(m.fault().is_none(), "{:?}", m.fault());
    assert_eq!(p.open_devices(), 0);
}

/// The DLL's own instructions per `rvgpu_submit` of one FILL on a connected user-mode queue
/// (ring write, last-queued value, doorbell store, status read: no thunk), measured in the
/// emulator: `RVGPU_PE_COUNT=1 cargo test -p rvgpu-simos --test pe_umd -- --ignored
/// --nocapture dll_instructions` (docs/pe-image.md, "Figures from the real binary").
#[test]
#[ignore = "a measurement: needs RVGPU_PE_COUNT=1"]
fn dll_instructions_per_user_mode_submit() {
    assert!(
        rvgpu_simos::pe::cpu::counting(),
        "run with RVGPU_PE_COUNT=1"
    );
    let m = pe_machine();
    let p = UserProcess::new(m.clone(), umd());
    let (a, q) = open_queue(&p);
    let (b, va) = buffer_4k(&p, a);
    let cmds = dwords(&[fill64(va, 1)]);
    let submits = |n: usize| {
        let mut last = 0u64;
        for _ in 0..n {
            assert_eq!(submit_dwords(&p, q, &cmds, &mut last), OK);
            assert_eq!(call(&p, "rvgpu_queue_wait", &[q, last, u64::MAX]), OK);
        }
    };
    let thunks = p.calls("D3DKMTSubmitCommandToHwQueue");
    submits(100);
    let (c1, i1) = p.instructions("rvgpu_submit").expect("counted");
    submits(100);
    let (c2, i2) = p.instructions("rvgpu_submit").expect("counted");
    let per = (i2 - i1) as f64 / (c2 - c1) as f64;
    assert_eq!(p.calls("D3DKMTSubmitCommandToHwQueue"), thunks);
    println!("rvgpu_umd.dll: {per:.1} instructions per rvgpu_submit (one FILL, user mode)");
    // A GPU signal: rvgpu_queue_submit of a batch with one signal entry and no commands.
    let mut fence = 0u64;
    assert_eq!(
        call(&p, "rvgpu_fence_create", &[a, 0, addr(&mut fence)]),
        OK
    );
    let mut value = 0u64;
    let signals = |n: usize, value: &mut u64| {
        for _ in 0..n {
            *value += 1;
            let entry = [fence, *value];
            let desc = [0u64, 0, 0, 0, entry.as_ptr() as u64, 1];
            let mut last = 0u64;
            assert_eq!(
                call(
                    &p,
                    "rvgpu_queue_submit",
                    &[q, desc.as_ptr() as u64, addr(&mut last)]
                ),
                OK
            );
            assert_eq!(call(&p, "rvgpu_queue_wait", &[q, last, u64::MAX]), OK);
        }
    };
    signals(100, &mut value);
    let (c1, i1) = p.instructions("rvgpu_queue_submit").expect("counted");
    signals(100, &mut value);
    let (c2, i2) = p.instructions("rvgpu_queue_submit").expect("counted");
    let per = (i2 - i1) as f64 / (c2 - c1) as f64;
    assert_eq!(p.calls("D3DKMTSubmitCommandToHwQueue"), thunks);
    println!("rvgpu_umd.dll: {per:.1} instructions per rvgpu_queue_submit of one GPU signal");
    // A CPU signal: rvgpu_fence_signal (its thunk not counted).
    for _ in 0..100 {
        value += 1;
        assert_eq!(call(&p, "rvgpu_fence_signal", &[fence, value]), OK);
    }
    let (c1, i1) = p.instructions("rvgpu_fence_signal").expect("counted");
    for _ in 0..100 {
        value += 1;
        assert_eq!(call(&p, "rvgpu_fence_signal", &[fence, value]), OK);
    }
    let (c2, i2) = p.instructions("rvgpu_fence_signal").expect("counted");
    let per = (i2 - i1) as f64 / (c2 - c1) as f64;
    println!("rvgpu_umd.dll: {per:.1} instructions per rvgpu_fence_signal");
    // A CPU wait for a value the fence already holds: the fast path, no kernel call.
    let waits = p.calls("D3DKMTWaitForSynchronizationObjectFromCpu");
    let reached = |n: usize| {
        for _ in 0..n {
            assert_eq!(call(&p, "rvgpu_fence_wait", &[fence, value, u64::MAX]), OK);
        }
    };
    reached(100);
    let (c1, i1) = p.instructions("rvgpu_fence_wait").expect("counted");
    reached(100);
    let (c2, i2) = p.instructions("rvgpu_fence_wait").expect("counted");
    let per = (i2 - i1) as f64 / (c2 - c1) as f64;
    assert_eq!(
        p.calls("D3DKMTWaitForSynchronizationObjectFromCpu"),
        waits,
        "a wait for a reached value called the OS"
    );
    println!("rvgpu_umd.dll: {per:.1} instructions per rvgpu_fence_wait of a reached value");
    // The C API's floor: a handle lookup and one load. Every fence call above pays it; a Rust
    // caller, holding the fence itself, does not.
    let mut now = 0u64;
    let mut read = |n: usize| {
        for _ in 0..n {
            assert_eq!(call(&p, "rvgpu_fence_value", &[fence, addr(&mut now)]), OK);
        }
    };
    read(100);
    let (c1, i1) = p.instructions("rvgpu_fence_value").expect("counted");
    read(100);
    let (c2, i2) = p.instructions("rvgpu_fence_value").expect("counted");
    assert_eq!(now, value, "rvgpu_fence_value read another value");
    let per = (i2 - i1) as f64 / (c2 - c1) as f64;
    println!("rvgpu_umd.dll: {per:.1} instructions per rvgpu_fence_value");
    assert_eq!(call(&p, "rvgpu_fence_destroy", &[fence]), OK);
    assert_eq!(call(&p, "rvgpu_buffer_destroy", &[b, 0, 0]), OK);
    assert_eq!(call(&p, "rvgpu_destroy_queue", &[q]), OK);
    assert_eq!(call(&p, "rvgpu_close_adapter", &[a]), OK);
}
