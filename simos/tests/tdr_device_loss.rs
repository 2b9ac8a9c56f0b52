//! Device loss as 24H2 runs it (UM-10, TDR-05, TDR-09): Windows writes no doorbell status when
//! it puts a device in error, so the KMD aborts a guilty device's doorbells itself and its
//! queue learns the loss from the doorbell; an adapter-wide recovery resets every device of
//! the adapter, idle ones of other processes too, and only devices created afterwards work.
//! A process's devices are separate: one device's error signals only the fences registered
//! with it, and a fence opened through a second device is that device's to the KMD.
//! Every test runs on both driver builds and both readings.

mod common;

use common::tdr::*;
use common::*;

use rvgpu_ddi::dxgkrnl::D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT;
use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::native_fence::{
    nt_dxgk_create_native_fence_internal, nt_dxgk_open_native_fence_from_nt_handle_internal,
    D3DKMT_CREATENATIVEFENCE, D3DKMT_OPENNATIVEFENCEFROMNTHANDLE, SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR,
    SYNC_NT_SECURITY_SHARING, SYNC_SHARED,
};
use rvgpu_simos::{Machine, Mode, NativeFence, UmsEvent, UmsProcess};
use rvgpu_umd::fence::FenceMapping;
use rvgpu_umd::kmt::{AllocationCpu, DeviceExecutionState, Kmt, NtStatus};
use rvgpu_umd::submit::{SubmitError, UserQueue};
use zerocopy::IntoBytes;

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

/// `D3DKMTCreateNativeFence` through its kernel entry on `p`'s device, at 5 with `info_flags`;
/// the fence and its D3DKMT handle.
fn create_fence(m: &Machine, p: UmsProcess, info_flags: u32) -> (NativeFence, u32) {
    let mut a = D3DKMT_CREATENATIVEFENCE::new(p.device, 5, info_flags);
    let f = okk(
        m,
        nt_dxgk_create_native_fence_internal(m, &mut a, |h| (h == p.device).then_some(p)),
    );
    (f, a.hSyncObject)
}

/// TDR-05, UM-10: a TDR that blames one device of a process signals only what that device
/// registered. 24H2 `K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC registers a fence with
/// the VidSch device of the DXGDEVICE it is created or opened through (unless
/// `NoSignalMaxValueOnTdr` or `NoSignal`), and `M:VidSchiSignalRegisteredSyncObjects`
/// @0x14003B848 drains the erroring device's own list: the guilty device's native and
/// monitored fences read u64::MAX (not its fence created with `NoSignalMaxValueOnTdr`), and the
/// fences of the same process's other device keep their values, its device active.
#[test]
fn tdr_05_a_tdr_of_one_device_leaves_the_fences_of_its_processs_other_device_alone() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let guilty = ok(&m, m.create_process(0));
    let sibling = ok(&m, m.create_device(&guilty));
    let (kg, ks) = (m.kmt(&guilty), m.kmt(&sibling));
    let (native_g, _) = create_fence(&m, guilty, 0);
    let (kept_g, _) = create_fence(&m, guilty, SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR);
    let (native_s, _) = create_fence(&m, sibling, 0);
    let (_, monitored_g) = okk(&m, kg.create_monitored_fence(5));
    let (_, monitored_s) = okk(&m, ks.create_monitored_fence(5));
    let mut hq = okk(&m, UserQueue::new(kg, &config(0)));
    okk(&m, hq.submit(&[Command::Hang]));
    run_until(&m, "reset", |m| resets(m) == 1);
    assert_ne!(
        kg.device_execution_state(),
        Ok(DeviceExecutionState::ACTIVE),
        "the guilty device is in error"
    );
    assert_eq!(
        native_g.current_value(),
        u64::MAX,
        "the guilty native fence"
    );
    assert_eq!(monitored_g.value(), u64::MAX, "the guilty monitored fence");
    assert_eq!(
        kept_g.current_value(),
        5,
        "NoSignalMaxValueOnTdr: left alone"
    );
    assert_eq!(
        native_s.current_value(),
        5,
        "the other device's native fence"
    );
    assert_eq!(monitored_s.value(), 5, "the other device's monitored fence");
    assert_eq!(
        ks.device_execution_state(),
        Ok(DeviceExecutionState::ACTIVE)
    );
    no_fault(&m);
}

/// NF-13, NF-14: an open goes to the KMD as the opening device's. 24H2
/// `K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC fills `DXGKARG_OPENNATIVEFENCE.hDevice`
/// with the driver handle of the DXGDEVICE the open goes through. A process that opens its own
/// shared fence through its second device asks that device for the fence's report tag (the
/// KMD's escape, which finds the open by the device it was made for) and gets the creator's.
#[test]
fn nf_13_an_open_through_a_processs_second_device_reaches_the_kmd_as_that_devices() {
    let m = tdr_machine(Mode::Step, |_| {});
    let first = ok(&m, m.create_process(0));
    let second = ok(&m, m.create_device(&first));
    let (f, h) = create_fence(&m, first, SYNC_SHARED | SYNC_NT_SECURITY_SHARING);
    let nt = okk(&m, m.kmt(&first).share_native_fence(h));
    let mut a = D3DKMT_OPENNATIVEFENCEFROMNTHANDLE::new(nt, second.device);
    let opened = okk(
        &m,
        nt_dxgk_open_native_fence_from_nt_handle_internal(&m, &mut a, |h| {
            (h == second.device).then_some(second)
        }),
    );
    let mapping = FenceMapping {
        current_value_cpu: a.NativeFenceMapping.CurrentValueCpuVa as usize,
        current_value_gpu: a.NativeFenceMapping.CurrentValueGpuVa,
        monitored_value_gpu: a.NativeFenceMapping.MonitoredValueGpuVa,
    };
    let mut q = rvgpu_umd::fence::tag_request(&mapping);
    okk(&m, m.kmt(&second).escape_driver_private(q.as_mut_bytes()));
    assert_eq!(q.report_tag, f.pdd().report_tag, "the open's report tag");
    assert_eq!(opened.current_value(), 5);
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);

/// UM-10 through the machine's own loss events: a device lost (a forced adapter-wide
/// recovery) and a device removed.
mod lost_and_removed {
    use super::common::ums::{connected_raw_queue, fill, process_with_target};
    use super::*;
    use rvgpu_simos::DoorbellState;
    use rvgpu_umd::submit::SubmissionPath;

    /// A new process's device (queue, doorbell and ring made anew) runs a FILL through its
    /// doorbell, and the process exits clean.
    fn a_new_device_works(m: &Machine) {
        let (p, k, t) = process_with_target(m);
        let mut q = okk(m, UserQueue::new(k, &config(0)));
        submit_wait(m, &mut q, &[fill(&t, 3)]);
        assert_eq!(t.mem.load(0), 3);
        assert_eq!(q.path(), SubmissionPath::UserMode);
        drop(q);
        exits_clean(m, &p);
    }

    /// UM-10: on device loss (a forced adapter-wide recovery, `Machine::device_lost`) every
    /// connected doorbell goes to `DISCONNECTED_ABORT` through the KMD's
    /// `DxgkCbDisconnectDoorbell`, the OS writing none itself (24H2 writes a status only in
    /// `K:DXGDOORBELL::Initialize`, `Connect`, `Disconnect` from that callback, and
    /// `DestroyCoreState`); the reset device refuses the reconnect (`K:COREDEVICEACCESS::AcquireShared`
    /// @0x14000F550), its queue reports the loss, and a new device's queue works.
    #[test]
    fn um_10_device_loss_aborts_every_doorbell() {
        let m = with_doorbells(Mode::Step, 4);
        let (p, k, t) = process_with_target(&m);
        let raw = connected_raw_queue(&m, &k, 0);
        let mut uq = okk(&m, UserQueue::new(k, &config(0)));
        submit_wait(&m, &mut uq, &[fill(&t, 1)]);
        m.clear_ums_events(0);
        ok(&m, m.device_lost(0));
        let info = m.doorbell_info(0, raw.doorbell.handle).unwrap();
        assert_eq!(info.state, DoorbellState::Aborted);
        assert_eq!(info.status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT);
        assert_eq!(info.mapped_page, None);
        let ev = m.ums_events(0);
        assert!(
            ev.iter().any(|e| matches!(
                e,
                UmsEvent::CallbackDisconnect { doorbell, reason, .. }
                    if *doorbell == raw.doorbell.handle
                        && *reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT
            )),
            "the KMD aborted the doorbell: {ev:#?}"
        );
        assert!(
            !ev.iter().any(|e| matches!(
                e,
                UmsEvent::Aborted { .. } | UmsEvent::DisconnectDoorbell { .. }
            )),
            "the OS wrote a doorbell itself: {ev:#?}"
        );
        assert_eq!(
            k.connect_doorbell(raw.doorbell.handle).err(),
            Some(NtStatus(STATUS_DEVICE_REMOVED))
        );
        assert!(uq.submit(&[fill(&t, 2)]).is_err());
        assert!(uq.is_lost(), "UM-10: the queue reports device loss");
        assert_eq!(t.mem.load(0), 1, "no work ran after the loss");
        drop(uq);
        ok(&m, m.kill_process(&p));
        a_new_device_works(&m);
    }

    /// UM-10, device removed: the device's thunks refuse (`STATUS_DEVICE_REMOVED`) and no doorbell
    /// status is written (24H2 writes one only at a doorbell's create, connect and destroy and from
    /// the driver's `DxgkCbDisconnectDoorbell`); the process learns it from a thunk and a new
    /// process (a new D3D device) recreates queue, doorbell and ring, which work.
    #[test]
    fn um_10_device_removed_writes_no_doorbell_and_a_new_device_works() {
        let m = with_doorbells(Mode::Step, 2);
        let (p, k, t) = process_with_target(&m);
        let mut q = okk(&m, UserQueue::new(k, &config(0)));
        submit_wait(&m, &mut q, &[fill(&t, 1)]);
        m.clear_ums_events(0);
        ok(&m, m.device_removed(0));
        let ev = m.ums_events(0);
        assert!(
            !ev.iter().any(|e| matches!(
                e,
                UmsEvent::Aborted { .. } | UmsEvent::DisconnectDoorbell { .. }
            )),
            "the OS wrote a doorbell itself: {ev:#?}"
        );
        assert_eq!(
            k.create_context(0).err(),
            Some(NtStatus(STATUS_DEVICE_REMOVED))
        );
        drop(q);
        ok(&m, m.kill_process(&p));
        a_new_device_works(&m);
    }
}
