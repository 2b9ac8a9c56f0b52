//! `rvgpu_umd.dll` loaded by two simulated processes: as on Windows, each has its own copy of
//! the DLL's statics (<https://learn.microsoft.com/en-us/windows/win32/dlls/dynamic-link-library-data>),
//! so the C API's handle table of one process knows nothing of another's. A process that
//! guesses or steals another's handle values gets `RVGPU_STATUS_INVALID_HANDLE`
//! (umd/include/rvgpu_umd.h) and reaches none of its objects.

mod common;

use common::dll::{addr, LUID_LOW, OK};
use std::sync::Arc;

use common::pe::{call, pe_machine, umd};
use common::*;
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::Machine;

/// `RvgpuStatus` values (rvgpu_umd.h).
const INVALID_HANDLE: u64 = 8;
const PATTERN: u64 = 0x0A0A_0A0A_0A0A_0A0A;
const ATTACK: u64 = 0x0B0B_0B0B_0B0B_0B0B;

/// A started machine with two processes, A and B, each with its own copy of the DLL.
fn two_processes() -> (Arc<Machine>, Arc<UserProcess>, Arc<UserProcess>) {
    let m = pe_machine();
    let img = umd();
    let (a, b) = (
        UserProcess::new(m.clone(), img.clone()),
        UserProcess::new(m.clone(), img),
    );
    (m, a, b)
}

/// Process A's objects, made through the C API.
struct Objects {
    adapter: u64,
    queue: u64,
    fence: u64,
    buffer: u64,
    context: u64,
}

/// Opens the adapter in `p` and makes one object of every kind: a user-mode queue, a fence at
/// 3, a 4 KiB buffer filled with [`PATTERN`], a DMA context.
fn objects(p: &Arc<UserProcess>) -> Objects {
    let mut o = Objects {
        adapter: 0,
        queue: 0,
        fence: 0,
        buffer: 0,
        context: 0,
    };
    assert_eq!(
        call(
            p,
            "rvgpu_open_adapter",
            &[LUID_LOW, 0, addr(&mut o.adapter)]
        ),
        OK
    );
    let a = o.adapter;
    assert_eq!(
        call(p, "rvgpu_create_queue", &[a, 0, 0, addr(&mut o.queue)]),
        OK
    );
    assert_eq!(
        call(p, "rvgpu_fence_create", &[a, 3, addr(&mut o.fence)]),
        OK
    );
    assert_eq!(
        call(p, "rvgpu_buffer_create", &[a, 4096, addr(&mut o.buffer)]),
        OK
    );
    assert_eq!(
        call(p, "rvgpu_context_create", &[a, 0, addr(&mut o.context)]),
        OK
    );
    let mut progress = 0u64;
    assert_eq!(
        call(
            p,
            "rvgpu_buffer_fill",
            &[o.queue, o.buffer, 0, 4096, PATTERN, addr(&mut progress)]
        ),
        OK
    );
    assert_eq!(
        call(p, "rvgpu_queue_wait", &[o.queue, progress, u64::MAX]),
        OK
    );
    o
}

/// The buffer's 512 words, read through a lock in `p`.
fn contents(p: &Arc<UserProcess>, o: &Objects) -> Vec<u64> {
    let mut data = 0u64;
    let queues = [o.queue];
    assert_eq!(
        call(
            p,
            "rvgpu_buffer_lock",
            &[o.buffer, 1, queues.as_ptr() as u64, 1, addr(&mut data)]
        ),
        OK
    );
    // SAFETY: the lock's view of the 4 KiB buffer, locked for reading.
    let words = unsafe { std::slice::from_raw_parts(data as *const u64, 512) }.to_vec();
    assert_eq!(call(p, "rvgpu_buffer_unlock", &[o.buffer]), OK);
    words
}

/// Process B, which has opened nothing, calls the DLL with every handle value process A holds
/// (an adapter, a queue, a fence, a buffer, a context): each call is
/// `RVGPU_STATUS_INVALID_HANDLE` with its out-parameter left 0, as B's own copy of the DLL's
/// handle table is empty. Nothing of A's changes: its fence keeps its value, its buffer its
/// contents, its objects stay open and work, and B holds no device.
#[test]
fn another_process_s_c_api_handles_are_invalid_handles_here() {
    let (m, a, b) = two_processes();
    let o = objects(&a);
    let (objects_before, devices_before) = (a.objects(), a.open_devices());
    let mut out = 0u64;
    let mut status = [0u64; 8];
    let queues = [o.queue];
    let attempts: Vec<(&str, Vec<u64>)> = vec![
        ("rvgpu_fence_signal", vec![o.fence, 10]),
        ("rvgpu_fence_value", vec![o.fence, addr(&mut out)]),
        ("rvgpu_fence_wait", vec![o.fence, 3, 0]),
        ("rvgpu_fence_create", vec![o.adapter, 0, addr(&mut out)]),
        ("rvgpu_create_queue", vec![o.adapter, 0, 0, addr(&mut out)]),
        ("rvgpu_device_status", vec![o.adapter, addr(&mut status)]),
        ("rvgpu_queue_status", vec![o.queue, addr(&mut status)]),
        ("rvgpu_queue_wait", vec![o.queue, 1, 0]),
        (
            "rvgpu_buffer_fill",
            vec![o.queue, o.buffer, 0, 4096, ATTACK, addr(&mut out)],
        ),
        ("rvgpu_buffer_gpu_va", vec![o.buffer, addr(&mut out)]),
        (
            "rvgpu_buffer_lock",
            vec![o.buffer, 2, queues.as_ptr() as u64, 1, addr(&mut out)],
        ),
        ("rvgpu_context_destroy", vec![o.context]),
        ("rvgpu_buffer_destroy", vec![o.buffer, 0, 0]),
        ("rvgpu_fence_destroy", vec![o.fence]),
        ("rvgpu_destroy_queue", vec![o.queue]),
        ("rvgpu_close_adapter", vec![o.adapter]),
    ];
    let mut accepted = Vec::new();
    for (name, args) in &attempts {
        out = 0;
        let r = call(&b, name, args);
        if r != INVALID_HANDLE || out != 0 {
            accepted.push(format!("{name} -> {r} (out {out:#x})"));
        }
    }
    assert!(
        accepted.is_empty(),
        "process B reached process A's objects with A's handle values: {accepted:#?}"
    );
    assert_eq!(b.open_devices(), 0, "B holds a device");
    assert!(b.objects().is_empty(), "B holds objects: {:?}", b.objects());
    // A's objects are as they were, and work.
    assert_eq!(a.objects(), objects_before);
    assert_eq!(a.open_devices(), devices_before);
    let mut value = 0u64;
    assert_eq!(
        call(&a, "rvgpu_fence_value", &[o.fence, addr(&mut value)]),
        OK
    );
    assert_eq!(value, 3, "A's fence");
    assert!(
        contents(&a, &o).iter().all(|w| *w == PATTERN),
        "A's buffer changed"
    );
    assert_eq!(call(&a, "rvgpu_fence_signal", &[o.fence, 4]), OK);
    assert_eq!(call(&a, "rvgpu_context_destroy", &[o.context]), OK);
    assert_eq!(call(&a, "rvgpu_buffer_destroy", &[o.buffer, 0, 0]), OK);
    assert_eq!(call(&a, "rvgpu_fence_destroy", &[o.fence]), OK);
    assert_eq!(call(&a, "rvgpu_destroy_queue", &[o.queue]), OK);
    assert_eq!(call(&a, "rvgpu_close_adapter", &[o.adapter]), OK);
    no_fault(&m);
}

/// What process A's calls write into the DLL's statics (its handle table among them) is A's
/// alone: process B's writable sections hold what B's own calls left there, byte for byte,
/// while A opens, uses and closes objects; A's change.
#[test]
fn a_dll_static_written_by_one_process_is_not_seen_by_another() {
    let (m, a, b) = two_processes();
    // B runs the DLL first, so that whatever its first call sets up is in place.
    let mut adapter = 0u64;
    assert_eq!(
        call(&b, "rvgpu_open_adapter", &[LUID_LOW, 0, addr(&mut adapter)]),
        OK
    );
    let (a_before, b_before) = (a.writable_sections(), b.writable_sections());
    assert!(!b_before.is_empty(), "the DLL has no writable section");
    let o = objects(&a);
    let (a_after, b_after) = (a.writable_sections(), b.writable_sections());
    assert_ne!(a_after, a_before, "A's calls wrote no static");
    let changed: Vec<&str> = b_before
        .iter()
        .zip(&b_after)
        .filter(|(x, y)| x != y)
        .map(|(x, _)| x.0.as_str())
        .collect();
    assert!(
        changed.is_empty(),
        "A's calls changed B's copy of the DLL's sections {changed:?}"
    );
    assert_ne!(o.adapter, 0);
    no_fault(&m);
}

/// TDR-05's per-process block through the DLL: after A's simulated process times out the
/// engine four times within `TdrLimitTime` (on devices recreated in it, as an application does
/// after a loss), 24H2 refuses A's next `D3DKMTOpenAdapterFromLuid` (STATUS_ACCESS_DENIED,
/// `K:DxgkOpenAdapterFromLuidImpl`), so `rvgpu_open_adapter` fails there, while B opens the
/// adapter as before. Under the pages nothing is blocked.
#[test]
fn tdr_05_a_process_blocked_for_repeated_engine_timeouts_cannot_open_the_adapter_the_other_can() {
    use rvgpu_hw::cmd::Command;
    use rvgpu_simos::machine::answers::ProcessTdrBlock;
    use rvgpu_simos::TdrConfig;
    use rvgpu_umd::submit::UserQueue;

    let (m, a, b) = two_processes();
    enable_tdr(&m, TdrConfig::default());
    let o = objects(&a);
    assert_ne!(o.adapter, 0);
    let first = a.devices()[0];
    for n in 1..=4 {
        let d = ok(&m, m.create_device(&first));
        let mut uq = okk(&m, UserQueue::new(m.kmt(&d), &config(0)));
        okk(&m, uq.submit(&[Command::Hang]));
        run_until(&m, "engine reset", |m| m.tdr_counts(0).0 == n);
        // Its device is in error; the queue stays as the process left it.
        std::mem::forget(uq);
    }
    let blocks = m.os_config().windows.reading().process_tdr_block == ProcessTdrBlock::Blocks;
    let mut adapter = 0u64;
    let r = call(&a, "rvgpu_open_adapter", &[LUID_LOW, 0, addr(&mut adapter)]);
    assert_eq!(r == OK, !blocks, "A's open after four timeouts: {r}");
    let mut adapter = 0u64;
    assert_eq!(
        call(&b, "rvgpu_open_adapter", &[LUID_LOW, 0, addr(&mut adapter)]),
        OK
    );
    assert_ne!(adapter, 0);
    no_fault(&m);
}
