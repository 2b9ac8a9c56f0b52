//! Device loss as the D3DKMT thunks answer it on 24H2 (UM-10, NF-13): a fence created or
//! opened with `NoSignalMaxValueOnTdr` is not registered with its device, so the device's error
//! leaves its value alone while the others go to `u64::MAX`; the doorbell, paging-queue and CPU
//! wait thunks take the device's core access, which refuses only a device an adapter-wide reset
//! stopped, not one VidSch merely put in error. Every test runs on both driver builds and both
//! readings.

mod common;

use common::tdr::*;
use common::ums::{connected_raw_queue, raw_queue};
use common::*;

use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER};
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::native_fence::{
    nt_dxgk_create_native_fence_internal, nt_dxgk_open_native_fence_from_nt_handle_internal,
    D3DKMT_CREATENATIVEFENCE, D3DKMT_OPENNATIVEFENCEFROMNTHANDLE, SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR,
    SYNC_NT_SECURITY_SHARING, SYNC_SHARED,
};
use rvgpu_simos::kmt::paging_queue::{dxgk_create_paging_queue_internal, D3DKMT_CREATEPAGINGQUEUE};
use rvgpu_simos::kmt::sync_from_cpu::{
    dxgk_wait_for_synchronization_object_from_cpu_internal, HostArrays,
    D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU,
};
use rvgpu_simos::machine::answers::OsDisconnects;
use rvgpu_simos::{Mode, NativeFence, UmsProcess};
use rvgpu_umd::kmt::{DeviceExecutionState, EvictFlags, Kmt, NtStatus};
use rvgpu_umd::submit::UserQueue;
use zerocopy::IntoBytes;

const REMOVED: NtStatus = NtStatus(STATUS_DEVICE_REMOVED);

/// `D3DKMTCreateNativeFence` through its kernel entry on `p`'s device, at 5 with `info_flags`;
/// the fence and its D3DKMT handle.
fn create_fence(m: &rvgpu_simos::Machine, p: UmsProcess, info_flags: u32) -> (NativeFence, u32) {
    let mut a = D3DKMT_CREATENATIVEFENCE::new(p.device, 5, info_flags);
    let f = okk(
        m,
        nt_dxgk_create_native_fence_internal(m, &mut a, |h| (h == p.device).then_some(p)),
    );
    (f, a.hSyncObject)
}

/// `D3DKMTOpenNativeFenceFromNtHandle` through its kernel entry on `p`'s device with `flags`.
fn open_fence(m: &rvgpu_simos::Machine, p: UmsProcess, nt: u64, flags: u32) -> NativeFence {
    let mut a = D3DKMT_OPENNATIVEFENCEFROMNTHANDLE::new(nt, p.device);
    a.Flags = flags;
    okk(
        m,
        nt_dxgk_open_native_fence_from_nt_handle_internal(m, &mut a, |h| {
            (h == p.device).then_some(p)
        }),
    )
}

/// VidSch puts `k`'s device in error without stopping it: `D3DKMTEvict` of an allocation of
/// another device (24H2 `K:DxgkEvict` marks the device in error, code 0xB).
fn put_in_error(k: &rvgpu_simos::kmt::SimKmt<'_>, foreign: u32) {
    assert_eq!(
        k.evict(&[foreign], EvictFlags::default()).err(),
        Some(NtStatus(STATUS_INVALID_PARAMETER))
    );
    assert_ne!(
        k.device_execution_state(),
        Ok(DeviceExecutionState::ACTIVE),
        "the device in error"
    );
}

/// UM-10 (24H2 `K:NtDxgkCreateNativeFenceInternal` @0x1401F8C68 hands `Info` whole to the
/// create, `K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC registers the creator's instance
/// only without `NoSignal` and `NoSignalMaxValueOnTdr`, `M:VidSchiMarkDeviceAsError`
/// @0x14001FF30 signals only registered objects): the creator's device put in error leaves a
/// fence created with `NoSignalMaxValueOnTdr` at its value; a plain one goes to `u64::MAX`.
#[test]
fn um_10_a_fence_created_no_signal_max_value_on_tdr_keeps_its_value_at_device_error() {
    let m = tdr_machine(Mode::Step, |_| {});
    let (p, k) = user_process(&m);
    let (_o, ko) = user_process(&m);
    let foreign = okk(&m, ko.create_allocation(4096));
    let (kept, _) = create_fence(&m, p, SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR);
    let (plain, _) = create_fence(&m, p, 0);
    put_in_error(&k, foreign.handle);
    assert_eq!(kept.current_value(), 5, "NoSignalMaxValueOnTdr: left alone");
    assert_eq!(plain.current_value(), u64::MAX, "registered: to u64::MAX");
    no_fault(&m);
}

/// UM-10, NF-13 (24H2 `K:NtDxgkOpenNativeFenceFromNtHandleInternal` @0x1401E15EC hands
/// `DXGSYNCOBJECT::Open` the caller's `Flags`, only NoSignal and NoWait replaced by the NT
/// handle's access; `K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC): a consumer that opened a
/// producer's shared fence with `NoSignalMaxValueOnTdr` leaves it at its value when its device
/// is put in error; a plain open of another one signals that to `u64::MAX`.
#[test]
fn um_10_nf_13_a_fence_opened_no_signal_max_value_on_tdr_keeps_its_value_at_device_error() {
    let m = tdr_machine(Mode::Step, |_| {});
    let (producer, kp) = user_process(&m);
    let (consumer, kc) = user_process(&m);
    let foreign = okk(&m, kp.create_allocation(4096));
    let shared = SYNC_SHARED | SYNC_NT_SECURITY_SHARING;
    let (kept, hk) = create_fence(&m, producer, shared);
    let (plain, hp) = create_fence(&m, producer, shared);
    let nk = okk(&m, kp.share_native_fence(hk));
    let np = okk(&m, kp.share_native_fence(hp));
    let nk = ok(&m, m.duplicate_handle(producer.pid, nk, consumer.pid));
    let np = ok(&m, m.duplicate_handle(producer.pid, np, consumer.pid));
    let _ok = open_fence(&m, consumer, nk, SYNC_NO_SIGNAL_MAX_VALUE_ON_TDR);
    let _op = open_fence(&m, consumer, np, 0);
    put_in_error(&kc, foreign.handle);
    assert_eq!(kept.current_value(), 5, "NoSignalMaxValueOnTdr: left alone");
    assert_eq!(plain.current_value(), u64::MAX, "registered: to u64::MAX");
    no_fault(&m);
}

/// UM-10 (24H2 `K:DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS` @0x140073C48 takes only the
/// device's core access, `K:COREDEVICEACCESS::AcquireShared` @0x14000F550): a device VidSch put
/// in error, its DXGDEVICE still active, connects a doorbell it had not connected yet. Under
/// the pages' reading the OS aborted the device's doorbells at the error, and an aborted
/// doorbell is refused as such.
#[test]
fn um_10_a_device_merely_in_error_connects_its_doorbell() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let (_p, k) = user_process(&m);
    let (_o, ko) = user_process(&m);
    let foreign = okk(&m, ko.create_allocation(4096));
    let q = raw_queue(&m, &k, 0);
    put_in_error(&k, foreign.handle);
    let r = k.connect_doorbell(q.doorbell.handle);
    if m.os_config().windows.reading().os_disconnects == OsDisconnects::OnPowerAndReset {
        assert_eq!(r, Err(NtStatus(STATUS_INVALID_PARAMETER)), "aborted");
    } else {
        assert_eq!(r, Ok(()), "in error, not stopped");
    }
    no_fault(&m);
}

/// Another process hangs node 0 and its engine reset fails: the adapter-wide path, which
/// leaves `ko`'s device stopped (RESET).
fn stop_by_an_adapter_reset(m: &rvgpu_simos::Machine, ko: &rvgpu_simos::kmt::SimKmt<'_>) {
    let (_h, kh) = user_process(m);
    let mut hq = okk(m, UserQueue::new(kh, &config(0)));
    m.device(0).unwrap().fail_next_reset(0);
    okk(m, hq.submit(&[Command::Hang]));
    run_until(m, "adapter reset", |m| adapter_resets(m) == 1);
    assert_eq!(ko.device_execution_state(), Ok(DeviceExecutionState::RESET));
}

/// UM-10, TDR-09 (24H2 `K:DXGDOORBELLAPILOCKS::DXGDOORBELLAPILOCKS` @0x140073C48 in the create,
/// connect, notify and destroy entries; `K:DxgkCreatePagingQueueInternal` @0x1403967CC between
/// its device lookup and `PhysicalAdapterIndex`): after an adapter-wide recovery stopped an
/// idle device of another process (`K:DXGDEVICE::Reset`, state 2), each of those thunks
/// answers STATUS_DEVICE_REMOVED, and the doorbell stays until the device goes.
#[test]
fn um_10_a_stopped_device_gets_device_removed_from_the_doorbell_and_paging_queue_thunks() {
    let m = tdr_machine(Mode::Step, |a| a.device.doorbells = 8);
    let (o, ko) = user_process(&m);
    let connected = connected_raw_queue(&m, &ko, 1);
    let spare = raw_queue(&m, &ko, 1);
    let context = okk(&m, ko.create_context(1));
    let mut qp = hw_queue_pdd();
    let bare = okk(&m, ko.create_hw_queue(context, true, qp.as_mut_bytes()));
    stop_by_an_adapter_reset(&m, &ko);

    let mut pdd = rvgpu_hw::pdd::DoorbellPdd::for_ring(4096);
    let created = ko.create_doorbell(
        bare.handle,
        spare.ring.handle,
        spare.control.handle,
        pdd.as_mut_bytes(),
    );
    assert_eq!(created.err(), Some(REMOVED), "CreateDoorbell");
    assert_eq!(
        ko.connect_doorbell(spare.doorbell.handle),
        Err(REMOVED),
        "ConnectDoorbell"
    );
    assert_eq!(
        ko.notify_work_submission(connected.doorbell.handle),
        Err(REMOVED),
        "NotifyWorkSubmission"
    );
    assert_eq!(
        ko.destroy_doorbell(connected.doorbell.handle),
        Err(REMOVED),
        "DestroyDoorbell"
    );
    assert!(
        m.doorbell_info(0, connected.doorbell.handle).is_some(),
        "the refused destroy left the doorbell"
    );
    assert_eq!(
        ko.create_paging_queue(0).err(),
        Some(REMOVED),
        "CreatePagingQueue"
    );
    // The core access comes before PhysicalAdapterIndex: an index past the adapter's is not
    // looked at.
    let mut a = D3DKMT_CREATEPAGINGQUEUE {
        hDevice: o.device,
        PhysicalAdapterIndex: 1,
        ..Default::default()
    };
    let r = dxgk_create_paging_queue_internal(&m, &mut a, |h| (h == o.device).then_some(o));
    assert_eq!(r.err(), Some(REMOVED), "CreatePagingQueue, index 1");
    no_fault(&m);
}

/// The wait's structure for one object of `device` with an event handle that names nothing.
fn wait_with_event(device: u32) -> D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
    D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
        hDevice: device,
        ObjectCount: 1,
        ObjectHandleArray: HostArrays::HANDLES,
        FenceValueArray: HostArrays::VALUES,
        hAsyncEvent: 0x4444,
        ..Default::default()
    }
}

/// UM-10: a live device's wait reaches the event (an event handle of nobody's:
/// STATUS_INVALID_HANDLE); once an adapter-wide recovery stopped the device, the same wait is
/// STATUS_DEVICE_REMOVED (the device's state is read before the event), and so is the UMD's
/// blocking wait on one of its fences.
#[test]
fn um_10_a_stopped_device_gets_device_removed_from_the_cpu_wait_before_its_event() {
    let m = tdr_machine(Mode::Step, |_| {});
    let (o, ko) = user_process(&m);
    let (fence, _) = okk(&m, ko.create_monitored_fence(0));
    let no_event = |_: u64| Err(NtStatus(STATUS_INVALID_HANDLE));
    let mem = HostArrays::one(fence, 1);
    let a = wait_with_event(o.device);
    let live = dxgk_wait_for_synchronization_object_from_cpu_internal(&m, &a, &ko, &mem, &no_event);
    assert_eq!(
        live.err(),
        Some(NtStatus(STATUS_INVALID_HANDLE)),
        "live device"
    );

    stop_by_an_adapter_reset(&m, &ko);

    let stopped =
        dxgk_wait_for_synchronization_object_from_cpu_internal(&m, &a, &ko, &mem, &no_event);
    assert_eq!(
        stopped.err(),
        Some(NtStatus(STATUS_DEVICE_REMOVED)),
        "stopped device, with an event"
    );
    assert_eq!(
        ko.wait_for_fence(fence, 1),
        Err(NtStatus(STATUS_DEVICE_REMOVED)),
        "stopped device, the UMD's blocking wait"
    );
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);
