//! `DxgkCbDisconnectDoorbell`, the callback a KMD disconnects a doorbell with.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use rvgpu_ddi::basic::{HANDLE, NTSTATUS};
use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY, DXGKARGCB_DISCONNECTDOORBELL,
};
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_SUCCESS};
use rvgpu_ddi::submission::{DXGKARG_DISCONNECTDOORBELL, DXGKARG_DISCONNECTDOORBELL_FLAGS};

use crate::adapter::ddi::{self, must_succeed};
use crate::adapter::irql::Routine;
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::{OsDisconnects, VictimDisconnect};

use crate::state::ums::events::UmsEvent;
use crate::state::ums::{kernel_handle, DoorbellState};

use super::kmd::needed_ddi;

/// The adapters of the calling thread's machine whose OS knows `handle` as a doorbell (KMD or
/// OS handle); the adapter whose DDI the thread is inside first.
pub(super) fn find_doorbell_adapters(handle: usize) -> Vec<Arc<AdapterShared>> {
    let me = crate::adapter::context::current_machine().map(|m| m.id());
    let inside = ddi::inside();
    let mut v: Vec<Arc<AdapterShared>> = crate::adapter::all_adapters()
        .into_iter()
        .filter(|a| Some(a.state.id()) == me)
        .filter(|a| !lock(&a.ums).doorbells_named(handle).is_empty())
        .collect();
    v.sort_by_key(|a| (Arc::as_ptr(a) as usize != inside) as u8);
    v
}

/// The D3DKMT handle of a destroyed doorbell `handle` named, on the calling thread's machine.
pub(super) fn destroyed_doorbell(handle: usize) -> Option<KmtHandle> {
    let me = crate::adapter::context::current_machine().map(|m| m.id());
    crate::adapter::all_adapters()
        .into_iter()
        .filter(|a| Some(a.state.id()) == me)
        .find_map(|a| lock(&a.ums).destroyed_doorbells.get(&handle).copied())
}

pub(super) type TestHook = Box<dyn FnOnce() + Send>;

/// One-shot actions to run at the start of the next `DxgkCbDisconnectDoorbell` on a machine
/// (tests that need an exact interleaving, e.g. a destroy racing a victimisation).
pub(super) static CALLBACK_HOOKS: Mutex<Vec<(u64, TestHook)>> = Mutex::new(Vec::new());

/// Runs `f` at the start of the next `DxgkCbDisconnectDoorbell` on machine `machine_id`, on
/// the thread the driver calls it from, before the OS looks at the arguments.
pub fn before_next_disconnect_callback(machine_id: u64, f: impl FnOnce() + Send + 'static) {
    lock(&CALLBACK_HOOKS).push((machine_id, Box::new(f)));
}

/// One-shot actions to run just before the next OS-initiated `DxgkDdiDisconnectDoorbell` on
/// a machine (what a UMD thread sees while the OS disconnects its doorbell).
static OS_DISCONNECT_HOOKS: Mutex<Vec<(u64, TestHook)>> = Mutex::new(Vec::new());

/// Runs `f` just before the next OS-initiated `DxgkDdiDisconnectDoorbell` on machine
/// `machine_id`, on the thread that calls it.
pub fn before_next_os_disconnect_ddi(machine_id: u64, f: impl FnOnce() + Send + 'static) {
    lock(&OS_DISCONNECT_HOOKS).push((machine_id, Box::new(f)));
}

pub(super) fn run_test_hook() {
    if let Some(id) = crate::adapter::context::current_machine().map(|m| m.id()) {
        run_hook(&CALLBACK_HOOKS, id);
    }
}

fn run_hook(hooks: &Mutex<Vec<(u64, TestHook)>>, id: u64) {
    let hook = {
        let mut h = lock(hooks);
        h.iter().position(|(m, _)| *m == id).map(|i| h.remove(i).1)
    };
    if let Some(f) = hook {
        f();
    }
}

/// An OS-initiated disconnect of a connected doorbell. By the pages: the status page gets
/// `reason`, the CPU VA the dummy page, then `DxgkDdiDisconnectDoorbell`.
///
/// Microsoft describes the remap and the status write as happening on return from the DDI.
/// With that order a UMD that rings after the KMD unbound the page and before the OS wrote the
/// status hits an unbound page, then reads `CONNECTED`: its work is lost, whatever the KMD
/// does (the page must be free when the DDI returns). The simulation uses the lossless order
/// instead: status first (a ring through the still-physical VA still reaches the still-bound
/// queue, and the UMD then reconnects harmlessly), then the dummy page, then the DDI. The KMD
/// cannot observe the difference. (A threaded F1 test lost work in about 1 run of 40 with
/// Microsoft's order, in none of 100 with this one.)
///
/// 24H2 disconnects only in a doorbell's destroy (`K:DXGDOORBELL::DestroyCoreState`
/// @0x1401D804C): the DDI alone, while the status page still reads connected and the VA still
/// reaches the physical doorbell; the status becomes ABORT and the VA goes only after
/// `DxgkDdiDestroyDoorbell` ([`super::doorbell::destroy_doorbell`]).
pub(crate) fn os_disconnect(
    a: &AdapterShared,
    h: KmtHandle,
    reason: D3DDDI_DOORBELLSTATUS,
) -> Result<(), SimError> {
    let in_destroy_only = a.os.windows.reading().os_disconnects == OsDisconnects::OnDestroyOnly;
    let kmd = {
        let os = lock(&a.ums);
        match os.doorbells.get(&h) {
            Some(d) if matches!(d.state, DoorbellState::Connected { .. }) => {
                if !in_destroy_only {
                    d.cpu.status.store(reason, Ordering::Release);
                    d.cpu.to_dummy();
                }
                d.kmd
            }
            _ => return Ok(()),
        }
    };
    let f = needed_ddi!(a, DxgkDdiDisconnectDoorbell, "has doorbells")?;
    run_hook(&OS_DISCONNECT_HOOKS, a.state.id());
    let mut args = DXGKARG_DISCONNECTDOORBELL {
        hDoorbell: kmd as HANDLE,
        Flags: DXGKARG_DISCONNECTDOORBELL_FLAGS::default(),
    };
    let status = f.passive(a, &mut args)?;
    must_succeed(a, f, status)?;
    let mut os = lock(&a.ums);
    if let Some(d) = os.doorbells.get_mut(&h) {
        if d.state != DoorbellState::Aborted {
            d.state = if reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT {
                DoorbellState::Aborted
            } else {
                DoorbellState::Disconnected
            };
        }
    }
    os.events.push(UmsEvent::DisconnectDoorbell {
        doorbell: h,
        reason,
    });
    Ok(())
}

/// `DxgkCbDisconnectDoorbell` (PASSIVE_LEVEL) on the driver's argument block, once the
/// callback's entry (`crate::dxgkrnl::callbacks`) checked the IRQL and read the block.
pub(crate) fn cb_disconnect_doorbell(args: &DXGKARGCB_DISCONNECTDOORBELL) -> NTSTATUS {
    let (hq, hd) = (args.hHwQueue as usize, args.hDoorbell as usize);
    let reason = args.DisconnectReason;
    let fail = |msg: String| {
        match crate::adapter::context::current_machine() {
            Some(m) => m.raise_sim_error(format!("driver bug: DxgkCbDisconnectDoorbell: {msg}")),
            None => eprintln!("rvgpu-simos: DxgkCbDisconnectDoorbell outside a machine: {msg}"),
        }
        STATUS_INVALID_PARAMETER
    };
    if reason != D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY
        && reason != D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT
    {
        return fail(format!(
            "DisconnectReason = {reason} is not a D3DDDI_DOORBELLSTATUS_DISCONNECTED_* value"
        ));
    }
    // Not from inside `DxgkDdiSetPowerState`. In the decompiled dxgkrnl (10.0.22631), the
    // callback (`DxgkDisconnectDoorbellCB`) takes the doorbell's context push lock exclusively;
    // the doorbell and submission API paths (`DXGDOORBELLAPILOCKS`) take that lock and then the
    // adapter's core resource shared; and the power path (`DpiPowerArbiterThread`) holds the
    // core resource exclusively from before `DxgkDdiSetPowerState(D3)` until power-up. A thread
    // inside a doorbell API, holding the context lock and waiting for the core resource, and
    // the power thread, inside this callback waiting for that context lock, deadlock: the power
    // IRP never completes (bug check 0x9F). Flagged whether or not another thread is there,
    // as Driver Verifier's deadlock detection flags a lock-order inversion.
    if crate::adapter::ddi::current_routine() == Some(Routine::DxgkDdiSetPowerState) {
        return fail(
            "called from inside DxgkDdiSetPowerState: Dxgkrnl's power path holds the adapter's              core resource exclusively there, and doorbell API threads hold the context lock              this callback takes while they wait for that resource (lock-order inversion, a              possible 0x9F deadlock)"
                .to_string(),
        );
    }
    run_test_hook();
    let Some(a) = find_doorbell_adapters(hd).into_iter().next() else {
        if let Some(dead) = destroyed_doorbell(hd) {
            return fail(used_after_destroy(hd, dead));
        }
        return fail(format!(
            "hDoorbell = {hd:#x} is not a live doorbell (neither a handle the driver returned \
             from DxgkDdiCreateDoorbell nor the OS handle it was given)"
        ));
    };
    let mut os = lock(&a.ums);
    let found = os.doorbells_named(hd).into_iter().find_map(|h| {
        let d = os.doorbells.get(&h)?;
        let q = os.queues.get(&d.queue)?;
        let kmd_pair = d.kmd == hd && q.kmd() == hq;
        // The OS's own pair: the doorbell's kernel handle and Dxgkrnl's queue object (the
        // input `hHwQueue` of the queue's creation).
        let os_pair = kernel_handle(d.handle) == hd && q.dxg.addr() == hq;
        (kmd_pair || os_pair).then_some(d.handle)
    });
    let Some(h) = found else {
        // Re-checked under this lock: the doorbell may have been destroyed since the search.
        let dead = os.destroyed_doorbells.get(&hd).copied();
        let its_queue = os
            .doorbells
            .values()
            .find(|d| d.kmd == hd || kernel_handle(d.handle) == hd)
            .and_then(|d| os.queues.get(&d.queue))
            .map(|q| (q.dxg.addr(), q.kmd()));
        drop(os);
        if let Some(dead) = dead {
            return fail(used_after_destroy(hd, dead));
        }
        return fail(format!(
            "hHwQueue = {hq:#x} is not the queue of doorbell {hd:#x} (its queue's handles are \
             {its_queue:x?} (OS, driver); both handles must be the driver's, or both the OS's, \
             of one doorbell and its queue)"
        ));
    };
    if a.os.windows.reading().victim_disconnect == VictimDisconnect::CallsDriverDisconnect {
        drop(os);
        return disconnect_through_driver(&a, h, reason);
    }
    let Some(d) = os.doorbells.get_mut(&h) else {
        return STATUS_INVALID_PARAMETER;
    };
    let was_connected =
        matches!(d.state, DoorbellState::Connected { .. }) || d.connecting.is_some();
    if let Some(c) = d.connecting.as_mut() {
        // A connect of this doorbell returned from the KMD but the OS has not mapped it yet:
        // the OS will not map it (another doorbell took the page meanwhile).
        *c = Some(reason);
    }
    // The status before the dummy page: a ring between the two still reaches the physical
    // doorbell (the KMD rebinds it only after this callback returns) and the UMD then reads
    // the reason; the other order would let a ring land on the dummy page and the UMD read
    // CONNECTED afterwards (a lost submission).
    match d.state {
        DoorbellState::Aborted => {}
        _ if reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT => {
            d.state = DoorbellState::Aborted;
            d.cpu.status.store(reason, Ordering::Release);
        }
        _ => {
            d.state = DoorbellState::Disconnected;
            d.cpu.status.store(reason, Ordering::Release);
        }
    }
    d.cpu.to_dummy();
    os.events.push(UmsEvent::CallbackDisconnect {
        doorbell: h,
        reason,
        was_connected,
    });
    STATUS_SUCCESS
}

/// The victimising callback as 24H2 runs it (`K:DxgkDisconnectDoorbellCB` @0x1401DB180,
/// `K:DXGDOORBELL::Disconnect` @0x1401D82E8): a doorbell already disconnected (status above
/// `CONNECTED_NOTIFY`) is left alone and the call succeeds; otherwise the OS calls the
/// driver's own `DxgkDdiDisconnectDoorbell` for the victim on this thread (the driver is
/// still inside its `DxgkDdiConnectDoorbell`) and ignores its status, then points the CPU VA
/// at the dummy page, then writes the status. (Dxgkrnl also holds the victim's device lock
/// across the call; the simulation does not take its device lock here, since the connecting
/// thread may hold the same one and Windows' lock is not the simulation's mutex.)
fn disconnect_through_driver(
    a: &AdapterShared,
    h: KmtHandle,
    reason: D3DDDI_DOORBELLSTATUS,
) -> NTSTATUS {
    let kmd = {
        let os = lock(&a.ums);
        let Some(d) = os.doorbells.get(&h) else {
            return STATUS_INVALID_PARAMETER;
        };
        if d.connecting.is_none() && !matches!(d.state, DoorbellState::Connected { .. }) {
            return STATUS_SUCCESS;
        }
        d.kmd
    };
    let Some(f) = a
        .table
        .slot(|t| ddi::in_table!(t, DxgkDdiDisconnectDoorbell))
        .flatten()
    else {
        return STATUS_INVALID_PARAMETER;
    };
    let mut args = DXGKARG_DISCONNECTDOORBELL {
        hDoorbell: kmd as HANDLE,
        Flags: DXGKARG_DISCONNECTDOORBELL_FLAGS::default(),
    };
    // The driver's status is ignored; a simulation error or bug check inside it is already
    // recorded on the machine.
    let _ = f.passive(a, &mut args);
    let mut os = lock(&a.ums);
    let Some(d) = os.doorbells.get_mut(&h) else {
        return STATUS_SUCCESS;
    };
    let was_connected =
        matches!(d.state, DoorbellState::Connected { .. }) || d.connecting.is_some();
    if let Some(c) = d.connecting.as_mut() {
        *c = Some(reason);
    }
    d.cpu.to_dummy();
    if d.state != DoorbellState::Aborted {
        d.state = if reason == D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT {
            DoorbellState::Aborted
        } else {
            DoorbellState::Disconnected
        };
        d.cpu.status.store(reason, Ordering::Release);
    }
    os.events.push(UmsEvent::CallbackDisconnect {
        doorbell: h,
        reason,
        was_connected,
    });
    STATUS_SUCCESS
}

/// The driver named doorbell `dead` by `hd` after its `DxgkDdiDestroyDoorbell` returned.
fn used_after_destroy(hd: usize, dead: KmtHandle) -> String {
    format!(
        "hDoorbell = {hd:#x} names doorbell {dead:#x}, whose DxgkDdiDestroyDoorbell already \
         returned: the driver used the handle after the object was destroyed (on Windows a \
         freed Dxgkrnl object, or a reused handle naming another doorbell)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ums::{from_kernel_handle, UmsOs};

    /// `DxgkCbDisconnectDoorbell` resolves an OS kernel handle by computing its
    /// D3DKMT handle instead of scanning every doorbell; only real kernel handles map back.
    #[test]
    fn disconnect_doorbell_lookup_maps_kernel_handles_back_exactly() {
        for h in [0u32, 4, 0x1234, u32::MAX] {
            assert_eq!(from_kernel_handle(kernel_handle(h)), Some(h));
        }
        assert_eq!(from_kernel_handle(kernel_handle(8) + 1), None);
        assert_eq!(from_kernel_handle(0x1234), None);
        let mut os = UmsOs::default();
        os.doorbell_by_kmd.insert((0xD00, 8));
        os.doorbell_by_kmd.insert((0xD00, 4));
        os.doorbell_by_kmd.insert((0xE00, 12));
        assert_eq!(os.doorbells_named(0xD00), vec![4, 8], "in handle order");
        assert_eq!(os.doorbells_named(0xE00), vec![12]);
        assert!(os.doorbells_named(0xF00).is_empty());
        // A kernel handle names only a live doorbell.
        assert!(os.doorbells_named(kernel_handle(12)).is_empty());
    }
}
