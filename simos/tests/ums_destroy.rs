//! UM-07: what D3DKMTDestroyHwQueue and D3DKMTDestroyContext take along, as 24H2 destroys
//! (`K:DXGHWQUEUE::DestroyCoreState` @0x1402CDD74, `K:DXGCONTEXT::DestroyAllHwQueues`
//! @0x1403A0E60): the real UMD's thunks against the simulated Dxgkrnl, the real KMD and the
//! emulated GPU, in the attacker's order.

mod common;

use common::ums::{connected_raw_queue, events_of, gated_queue, position, raw_queue};
use common::*;
use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT,
};
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_simos::machine::answers::OsDisconnects;
use rvgpu_simos::{Mode, UmsEvent};
use rvgpu_umd::kmt::{AllocationCpu, Kmt, NtStatus};

/// UM-07: as 24H2 destroys (`K:DXGHWQUEUE::DestroyCoreState` @0x1402CDD74,
/// `K:DXGCONTEXT::DestroyAllHwQueues` @0x1403A0E60), destroying a queue takes its doorbell
/// along and destroying a context its queues with theirs; what went along names nothing after,
/// and the process exits clean.
#[test]
fn um_07_destroy_takes_doorbells_and_queues_along() {
    let m = with_doorbells(Mode::Step, 2);
    let (p, k) = user_process(&m);
    let gone = Some(NtStatus(STATUS_INVALID_PARAMETER));
    let q = raw_queue(&m, &k, 0);
    okk(&m, k.destroy_hw_queue(q.queue.handle));
    assert_eq!(k.destroy_doorbell(q.doorbell.handle).err(), gone);
    let q = raw_queue(&m, &k, 0);
    okk(&m, k.destroy_context(q.context));
    assert_eq!(k.destroy_doorbell(q.doorbell.handle).err(), gone);
    assert_eq!(k.destroy_hw_queue(q.queue.handle).err(), gone);
    assert_eq!(k.destroy_context(q.context).err(), gone);
    exits_clean(&m, &p);
}

/// UM-07, the attacker's order: a process destroys the context of a user-mode queue whose
/// doorbell is connected and whose work runs (blocked on a gate) on the GPU. As 24H2
/// (`K:DXGCONTEXT::DestroyAllHwQueues` @0x1403A0E60, `K:DXGHWQUEUE::DestroyCoreState`
/// @0x1402CDD74, `K:DXGDOORBELL::DestroyCoreState` @0x1401D804C) the OS disconnects the
/// doorbell (ABORT), destroys it, then the queue, then the context, each through the driver,
/// which takes the queue off the runlist: the gated work never runs, even once the gate opens,
/// nothing faults and the process exits clean.
#[test]
fn um_07_destroy_context_under_running_user_mode_work() {
    let m = with_doorbells(Mode::Step, 2);
    let (p, k) = user_process(&m);
    let (gate, t, q) = gated_queue(&m, &k);
    ok(&m, m.run_steps(100));
    m.clear_ums_events(0);
    okk(&m, k.destroy_context(q.context));
    let ev = events_of(&m);
    let at = |what: &str, f: &dyn Fn(&UmsEvent) -> bool| {
        position(&ev, f).unwrap_or_else(|| panic!("{what}: {ev:#?}"))
    };
    let disconnect = at("disconnected", &|e| {
        matches!(e, UmsEvent::DisconnectDoorbell { reason, .. }
            if *reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT)
    });
    let doorbell = at("doorbell destroyed", &|e| {
        matches!(e, UmsEvent::DestroyDoorbell { .. })
    });
    let queue = at("queue destroyed", &|e| {
        matches!(e, UmsEvent::DestroyHwQueue { .. })
    });
    let context = at("context destroyed", &|e| {
        matches!(e, UmsEvent::DestroyContext { .. })
    });
    assert!(
        disconnect < doorbell && doorbell < queue && queue < context,
        "24H2's order: {ev:#?}"
    );
    assert!(
        m.device(0).unwrap().queue(q.queue_id).is_none(),
        "the queue is off the runlist"
    );
    gate.mem.store(0, 1);
    ok(&m, m.run_steps(100));
    assert_eq!(t.mem.load(0), 0, "the destroyed queue's work ran");
    no_fault(&m);
    std::mem::forget(q);
    drop((gate, t));
    exits_clean(&m, &p);
}

/// UM-07, what a UMD thread sees while the OS destroys its connected doorbell. 24H2
/// (`K:DXGDOORBELL::DestroyCoreState` @0x1401D804C) calls `DxgkDdiDisconnectDoorbell` while
/// the status page still reads connected and the VA still reaches the physical doorbell, and
/// writes ABORT only after `DxgkDdiDestroyDoorbell`; by the pages the simulated OS writes the
/// status and remaps first, as for every OS-initiated disconnect. Either way the status ends
/// ABORT and the VA on the dummy page.
#[test]
fn um_07_doorbell_destroy_orders_status_and_driver_disconnect_as_the_reading_does() {
    use std::sync::{Arc, Mutex};
    let m = with_doorbells(Mode::Step, 2);
    let (p, k) = user_process(&m);
    let q = connected_raw_queue(&m, &k, 0);
    let cpu = q.doorbell.cpu.state().clone();
    let seen = Arc::new(Mutex::new(None));
    let record = Arc::clone(&seen);
    rvgpu_simos::ums::before_next_os_disconnect_ddi(m.id(), move || {
        let (_, physical) = cpu.write_counts();
        cpu.ring(0);
        let reached = cpu.write_counts().1 - physical;
        *record.lock().unwrap() = Some((cpu.status(), reached));
    });
    okk(&m, k.destroy_doorbell(q.doorbell.handle));
    let (status, reached) = seen
        .lock()
        .unwrap()
        .expect("the destroy disconnected the doorbell");
    if m.os_config().windows.reading().os_disconnects == OsDisconnects::OnDestroyOnly {
        assert!(
            status == D3DDDI_DOORBELLSTATUS_CONNECTED
                || status == D3DDDI_DOORBELLSTATUS_CONNECTED_NOTIFY_KMD,
            "24H2: status {status} at the driver's disconnect"
        );
        assert_eq!(reached, 1, "24H2: the ring reached the physical doorbell");
    } else {
        assert_eq!(status, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT);
        assert_eq!(reached, 0, "the ring landed on the dummy page");
    }
    let after = q.doorbell.cpu.state();
    assert_eq!(after.status(), D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT);
    assert_eq!(after.mapped_page(), None);
    no_fault(&m);
    okk(&m, k.destroy_hw_queue(q.queue.handle));
    std::mem::forget(q);
    exits_clean(&m, &p);
}
