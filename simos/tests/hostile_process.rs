//! The attack matrix of docs/robustness.md §6, as a second process would try it.
//!
//! Process A holds one of every object a process can name (allocation, context, user-mode
//! hardware queue with its ring, ring control and doorbell, monitored fence, native fence,
//! paging queue, reserved GPU VA range). Process B, on the same adapter, names each by A's
//! handle (handles are small sequential numbers: guessing them is the cheapest attack) in
//! every thunk that takes one. Every attempt fails with an NTSTATUS (never success, never a
//! simulation error or a halt), and A's objects keep working afterwards. Both modes.

mod common;

use common::*;
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::{Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::{
    AllocationCpu, DestroyFlags, EvictFlags, Kmt, KmtHandle, MakeResidentError, MakeResidentFlags,
    MapGpuVa, NtStatus, ReserveGpuVa,
};
use rvgpu_umd::submit::UserQueue;
use zerocopy::IntoBytes;

const STATUS_NO_MEMORY: i32 = 0xC000_0017_u32 as i32;

/// What A holds.
struct Victim {
    alloc: KmtHandle,
    context: KmtHandle,
    queue: RawQueue,
    monitored: KmtHandle,
    native: KmtHandle,
    paging: KmtHandle,
    va: u64,
}

fn victim(m: &Machine, k: &SimKmt<'_>) -> Victim {
    let alloc = okk(m, k.create_allocation(4096)).handle;
    let context = okk(m, k.create_context(0));
    let queue = raw_queue(m, k);
    let (monitored, _) = okk(m, k.create_monitored_fence(1));
    let native = okk(m, k.create_native_fence(1)).kmt;
    let paging = okk(m, k.create_paging_queue(0)).handle;
    let va = okk(
        m,
        k.reserve_gpu_va(&ReserveGpuVa {
            size: 0x1_0000,
            ..ReserveGpuVa::default()
        }),
    );
    Victim {
        alloc,
        context,
        queue,
        monitored,
        native,
        paging,
        va,
    }
}

/// Every thunk B can aim at A's objects; each must fail. Returns how many were tried.
fn attack(m: &Machine, kb: &SimKmt<'_>, a: &Victim) -> usize {
    let mut tried = 0;
    let mut refused = |what: &str, r: Result<(), NtStatus>| {
        tried += 1;
        match r {
            Err(NtStatus(s)) => assert!(s < 0, "{what}: {s:#x} is not a failure"),
            Ok(()) => panic!("{what}: another process's handle worked"),
        }
        no_fault(m);
    };
    let q = &a.queue;
    // Allocations (and the ring and ring control, which are allocations too).
    for h in [a.alloc, q.ring.handle, q.control.handle] {
        refused("Lock2", kb.lock2(h).map(|_| ()));
        refused("Unlock2", kb.unlock2(h));
        refused(
            "MakeResident",
            kb.make_resident(&[h], MakeResidentFlags::default())
                .map(|_| ())
                .map_err(|e| match e {
                    MakeResidentError::Status(s) => s,
                    MakeResidentError::OverBudget { .. } => NtStatus(STATUS_NO_MEMORY),
                }),
        );
        refused("Evict", kb.evict(&[h], EvictFlags::default()).map(|_| ()));
        refused(
            "MapGpuVirtualAddress",
            kb.map_gpu_va(&MapGpuVa {
                paging_queue: a.paging,
                allocation: h,
                size_in_pages: 1,
                ..MapGpuVa::default()
            })
            .map(|_| ()),
        );
        refused(
            "DestroyAllocation2",
            kb.destroy_allocation2(h, DestroyFlags::default()),
        );
        refused("DestroyAllocation", kb.destroy_allocation(h));
    }
    // Contexts and queues.
    let mut pdd = rvgpu_hw::pdd::HwQueuePdd {
        magic: rvgpu_hw::pdd::PDD_MAGIC,
        version: rvgpu_hw::pdd::HW_QUEUE_PDD_VERSION,
        ..Default::default()
    };
    refused(
        "CreateHwQueue on A's context",
        kb.create_hw_queue(a.context, true, pdd.as_mut_bytes())
            .map(|_| ()),
    );
    refused("DestroyContext", kb.destroy_context(a.context));
    refused(
        "SubmitCommandToHwQueue",
        kb.submit_command_to_hw_queue(q.queue, 1, q.ring.gpu_va, 8),
    );
    refused(
        "SubmitWaitToHwQueue",
        kb.submit_wait_to_hw_queue(q.queue, &[]),
    );
    refused("DestroyHwQueue", kb.destroy_hw_queue(q.queue));
    // Doorbells: B's own queue with A's ring, and A's doorbell.
    let mut dpdd = rvgpu_hw::pdd::DoorbellPdd::for_ring(4096);
    refused(
        "CreateDoorbell on A's queue",
        kb.create_doorbell(
            q.queue,
            q.ring.handle,
            q.control.handle,
            dpdd.as_mut_bytes(),
        )
        .map(|_| ()),
    );
    refused("ConnectDoorbell", kb.connect_doorbell(q.doorbell));
    refused(
        "NotifyWorkSubmission",
        kb.notify_work_submission(q.doorbell),
    );
    refused("DestroyDoorbell", kb.destroy_doorbell(q.doorbell));
    // Fences.
    refused(
        "SignalFromCpu",
        kb.signal_fence_from_cpu(a.monitored, u64::MAX),
    );
    refused("WaitForFence", kb.wait_for_fence(a.monitored, 1));
    refused(
        "DestroyMonitoredFence",
        kb.destroy_monitored_fence(a.monitored),
    );
    refused(
        "ShareObjects (native)",
        kb.share_native_fence(a.native).map(|_| ()),
    );
    refused(
        "OpenNativeFence by D3DKMT handle",
        kb.open_native_fence(u64::from(a.native)).map(|_| ()),
    );
    refused("DestroyNativeFence", kb.destroy_native_fence(a.native));
    // Paging queues and GPU VA.
    refused("DestroyPagingQueue", kb.destroy_paging_queue(a.paging));
    refused("FreeGpuVirtualAddress", kb.free_gpu_va(a.va, 0x1_0000));
    tried
}

/// A's objects still do what they did: its queue runs, its fences signal.
fn still_works(m: &Machine, ka: &SimKmt<'_>, a: &Victim) {
    okk(m, ka.signal_fence_from_cpu(a.monitored, 2));
    okk(m, ka.wait_for_fence(a.monitored, 2));
    work_runs(m, *ka, 0x45);
    okk(m, ka.connect_doorbell(a.queue.doorbell));
    okk(m, ka.destroy_native_fence(a.native));
    okk(m, ka.destroy_paging_queue(a.paging));
    okk(m, ka.free_gpu_va(a.va, 0x1_0000));
}

#[test]
fn attack_matrix_another_process_names_every_object() {
    for mode in [Mode::Step, Mode::Threaded] {
        let mut cfg = MachineConfig::single(mode);
        cfg.adapters[0].device.doorbells = 8;
        let m = started(cfg);
        let a = ok(&m, m.create_process(0));
        let b = ok(&m, m.create_process(0));
        let (ka, kb) = (m.kmt(&a), m.kmt(&b));
        let v = victim(&m, &ka);
        let tried = attack(&m, &kb, &v);
        assert!(tried >= 30, "{tried} attacks");
        still_works(&m, &ka, &v);
        // B is not charged for asking (a failed thunk is not a fault), and both exit clean.
        ok(&m, m.exit_process(&b));
        exits_clean(&m, &a);
    }
}

const STATUS_NO_MEMORY_STATUS: NtStatus = NtStatus(STATUS_NO_MEMORY);

/// Greedy process: one process takes every context and hardware queue it can. It is refused
/// with `STATUS_NO_MEMORY` short of the adapter's end (the driver keeps the last few for
/// processes that hold few, `driver/kmd/src/quota.rs`), and a second process still creates its
/// first context, user-mode queue with its doorbell, and native fence; nothing faults.
#[test]
fn one_process_cannot_take_every_queue_and_context() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].device.doorbells = 8;
    let m = started(cfg);
    let (a, ka) = user_process(&m);
    let mut contexts = Vec::new();
    let refused = loop {
        match ka.create_context(0) {
            Ok(c) => contexts.push(c),
            Err(e) => break e,
        }
        assert!(contexts.len() <= 16_384, "no limit on contexts");
    };
    assert_eq!(
        refused,
        STATUS_NO_MEMORY_STATUS,
        "contexts: {}",
        contexts.len()
    );
    // Queues: many on a few contexts, until refused.
    let mut queues = 0usize;
    let refused = loop {
        let mut pdd = rvgpu_hw::pdd::HwQueuePdd {
            magic: rvgpu_hw::pdd::PDD_MAGIC,
            version: rvgpu_hw::pdd::HW_QUEUE_PDD_VERSION,
            ..Default::default()
        };
        let ctx = contexts[queues % 8];
        match ka.create_hw_queue(ctx, true, pdd.as_mut_bytes()) {
            Ok(_) => queues += 1,
            Err(e) => break e,
        }
        assert!(queues <= 4_096, "no limit on queues");
    };
    assert_eq!(refused, STATUS_NO_MEMORY_STATUS, "queues: {queues}");
    no_fault(&m);

    // B gets its first context, queue, doorbell and fence, and its work runs.
    let (b, kb) = user_process(&m);
    let buf = okk(&m, kb.create_allocation(4096));
    let mut q = okk(&m, UserQueue::new(kb, &config(0)));
    let v = okk(&m, q.submit(&[fill64(buf.gpu_va, 0x46)]));
    okk(&m, q.wait(v));
    assert_eq!(buf.mem.load(0), 0x46);
    okk(&m, kb.create_native_fence(0));
    drop(q);
    // A's exit gives everything back.
    ok(&m, m.exit_process(&a));
    exits_clean(&m, &b);
}

against_the_pe_image!(
    "one_process_cannot_take_every_queue_and_context" =>
        "20,000 objects through the x86-64 emulator take over ten minutes; the quota is \
         driver/kmd/src/quota.rs, the same code in both builds",
);

under_the_pages!();
