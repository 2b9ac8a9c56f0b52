//! Device loss as 24H2 runs it (UM-10, TDR-05, TDR-09): Windows writes no doorbell status when
//! it puts a device in error, so the KMD aborts a guilty device's doorbells itself and its
//! queue learns the loss from the doorbell; an adapter-wide recovery resets every device of
//! the adapter, idle ones of other processes too, and only devices created afterwards work.
//! Every test runs on both driver builds and both readings.

mod common;

use common::tdr::*;
use common::*;

use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT;
use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::{Mode, UmsEvent};
use rvgpu_umd::kmt::{AllocationCpu, DeviceExecutionState, Kmt, NtStatus};
use rvgpu_umd::submit::{SubmitError, UserQueue};

/// UM-10: a user-mode HANG. Windows writes no doorbell status when it puts the device in error
/// (24H2 `M:VidSchiMarkDeviceAsError`); the KMD aborts the guilty device's connected doorbells
/// through `DxgkCbDisconnectDoorbell(DISCONNECTED_ABORT)`, so the guilty queue learns its loss
/// from its doorbell at its next ring and reports the device removed. The OS disconnected
/// nothing itself; the other device's doorbells are untouched and it continues; a new device
/// works.
#[test]
fn um_10_guilty_queue_learns_its_loss_from_the_kmds_doorbell_abort() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let h = ok(&m, m.create_process(0));
    let (_o, ko) = user_process(&m);
    let to = okk(&m, ko.create_allocation(4096));
    let mut oq0 = okk(&m, UserQueue::new(ko, &config(0)));
    let mut oq1 = okk(&m, UserQueue::new(ko, &config(1)));
    let kh = m.kmt(&h);
    let th = okk(&m, kh.create_allocation(4096));
    let mut hq = okk(&m, UserQueue::new(kh, &config(0)));
    let mut hq1 = okk(&m, UserQueue::new(kh, &config(1)));
    let w = okk(&m, hq1.submit(&[fill(&th, 0, 1)]));
    let v0 = okk(&m, oq0.submit(&[fill(&to, 0, 1)]));
    run_until(&m, "warm", |_| {
        oq0.completed() >= v0 && hq1.completed() >= w
    });
    m.clear_ums_events(0);
    okk(&m, hq.submit(&[Command::Hang]));
    run_until(&m, "reset", |m| resets(m) == 1);
    let ums = m.ums_events(0);
    let aborted: Vec<u32> = ums
        .iter()
        .filter_map(|e| match e {
            UmsEvent::CallbackDisconnect {
                doorbell, reason, ..
            } if *reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT => Some(*doorbell),
            _ => None,
        })
        .collect();
    assert_eq!(
        aborted.len(),
        2,
        "both guilty doorbells, by the KMD: {ums:#?}"
    );
    assert!(
        !ums.iter().any(|e| matches!(
            e,
            UmsEvent::Aborted { .. } | UmsEvent::DisconnectDoorbell { .. }
        )),
        "the OS wrote a doorbell itself: {ums:#?}"
    );
    let guilty_ids = [hq.queue_id(), hq1.queue_id()];
    for db in &aborted {
        let info = m.doorbell_info(0, *db).expect("doorbell");
        assert_eq!(info.status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT);
        let qid = m.hw_queue_id(0, info.queue);
        assert!(qid.is_some_and(|q| guilty_ids.contains(&q)), "{info:?}");
    }
    // The guilty queue rings, reads the abort and reports the device lost.
    assert_eq!(
        hq1.submit(&[fill(&th, 8, 2)]).err(),
        Some(SubmitError::Kmt(NtStatus(STATUS_DEVICE_REMOVED)))
    );
    assert!(hq1.is_lost());
    let a = okk(&m, oq0.submit(&[fill(&to, 8, 2)]));
    let b = okk(&m, oq1.submit(&[fill(&to, 16, 3)]));
    run_until(&m, "innocent work", |_| {
        oq0.completed() >= a && oq1.completed() >= b
    });
    assert_eq!((to.mem.load(8), to.mem.load(16)), (2, 3));
    // The process recreates its device (a new process here) and works.
    let (_h2, kh2) = user_process(&m);
    let t2 = okk(&m, kh2.create_allocation(4096));
    let mut q2 = okk(&m, UserQueue::new(kh2, &config(0)));
    let v = okk(&m, q2.submit(&[fill(&t2, 0, 4)]));
    run_until(&m, "recreated", |_| q2.completed() >= v);
    assert_eq!(t2.mem.load(0), 4);
    no_fault(&m);
}

/// UM-10, TDR-09: an adapter-wide recovery resets every device of the adapter (24H2
/// `K:ADAPTER_RENDER::Reset` calls `K:DXGDEVICE::Reset` on each): an idle device of another
/// process then answers STATUS_DEVICE_REMOVED from a thunk that takes its core access
/// (`K:COREDEVICEACCESS::AcquireShared`: CreateAllocation2) and RESET from
/// D3DKMTGetDeviceState, and its user-mode queue learns it from the KMD's doorbell abort; a
/// device created after the recovery works.
#[test]
fn um_10_adapter_wide_recovery_resets_an_idle_device_of_another_process() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let (_o, ko) = user_process(&m);
    let to = okk(&m, ko.create_allocation(4096));
    let mut oq = okk(&m, UserQueue::new(ko, &config(1)));
    let v = okk(&m, oq.submit(&[fill(&to, 0, 1)]));
    run_until(&m, "warm", |_| oq.completed() >= v);
    assert_eq!(
        ko.device_execution_state(),
        Ok(DeviceExecutionState::ACTIVE)
    );
    // Another process hangs node 0 and its engine reset fails: the adapter-wide path.
    let (_h, kh) = user_process(&m);
    let mut hq = okk(&m, UserQueue::new(kh, &config(0)));
    m.device(0).unwrap().fail_next_reset(0);
    okk(&m, hq.submit(&[Command::Hang]));
    run_until(&m, "adapter reset", |m| adapter_resets(m) == 1);
    let removed = NtStatus(STATUS_DEVICE_REMOVED);
    assert_eq!(ko.device_execution_state(), Ok(DeviceExecutionState::RESET));
    assert_eq!(ko.create_allocation(4096).err(), Some(removed));
    assert_eq!(
        oq.submit(&[fill(&to, 8, 2)]).err(),
        Some(SubmitError::Kmt(removed))
    );
    let (_n, kn) = user_process(&m);
    let tn = okk(&m, kn.create_allocation(4096));
    let mut nq = okk(&m, UserQueue::new(kn, &config(1)));
    let w = okk(&m, nq.submit(&[fill(&tn, 0, 3)]));
    run_until(&m, "new device", |_| nq.completed() >= w);
    assert_eq!(tn.mem.load(0), 3);
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);
