//! The five doorbell DDIs of user-mode submission (UM-02, UM-15, UM-20, UM-21;
//! docs/usermode-submission.md, "Doorbells").
//!
//! - `CreateDoorbell` takes the UMD's ring from [`DoorbellPdd`] (checked against the device's
//!   rules) and puts the queue in its engine's runlist. No physical doorbell yet.
//! - `ConnectDoorbell` assigns a physical doorbell. **Dedicated mode**: a free one if there is
//!   one, else the *least recently connected* one is victimised ([`super::Physical::choose`]): under
//!   the scheduler lock the victim is marked disconnected and the page pending for the new
//!   doorbell (so no other connect takes it, and a concurrent destroy or reconnect of the
//!   victim does not touch it); `DxgkCbDisconnectDoorbell(DISCONNECTED_RETRY)` is called with
//!   no lock held (it is PASSIVE_LEVEL); then, under the lock again, `DOORBELL_BIND[i]` is
//!   rebound to the new queue.
//!   **Global mode** (`CAPS.GLOBAL_DOORBELL`): one page per *process*, bound to its process id
//!   (`DOORBELL_BIND[i]` = `Process::id`); every doorbell of the process connects through it
//!   and writes its queue id, and the device rings only that process's user-mode queues from
//!   it, so no process can ring another's queue. Nothing is victimised while
//!   processes with connected doorbells fit in the pages; past that, the least recently
//!   connected process's page is taken and all its doorbells there are victimised
//!   ([`connect_global`]). Either way the DDI returns the kernel VA of the page in the BAR2
//!   mapping, status `CONNECTED`, and then kicks the queue to collect work written while it
//!   had no doorbell (hardware.md 5.5).
//! - `DisconnectDoorbell` (OS-initiated) unbinds and frees the physical doorbell; the queue
//!   stays in the runlist. `DestroyDoorbell` disconnects if needed and takes the queue off the
//!   runlist; the ring is the UMD's and may be freed afterwards.
//! - `NotifyWorkSubmission` kicks the queue.
//! - Power: a connect first holds the engine's power component active (F0 before the page is
//!   bound); the reference is given back whenever the doorbell loses its page (OS disconnect,
//!   victimisation once the callback returned and the victim's queue was kicked, destroy).
//! - At `SetPowerState(D3)` the KMD counts doorbells still connected ([`connected_at_d3`]):
//!   UM-14 has Dxgkrnl disconnect them all first; the driver does not call back from there.
//!
//! **Victims keep their page until the callback returns.** The UMD rings, *then* reads its
//! status page (UM-19). A ring that hits an unbound page while the status page still says
//! `CONNECTED` is lost: the UMD believes it submitted and does not ring again for that work.
//! During victimisation the status changes inside `DxgkCbDisconnectDoorbell` ("KMD should
//! consider the physical doorbell address to be disconnected only after return from this
//! callback"), so the page stays bound to the victim's queue until the callback has returned
//! and is only then rebound to the new queue. (Unbinding first lost a submission in about 1 of 40 runs of a threaded test with 6
//! processes on 4 doorbells; binding after the callback, in none of 150.)
//!
//! **OS-initiated disconnects** follow the OS's order: the DDI unbinds (the contract and the
//! simulated OS require the page unbound when it returns) and kicks the queue, which collects
//! rings up to the kick. Where the OS remaps the VA and writes the status only after the DDI
//! returns, a ring in between hits an unbound page while the status still reads `CONNECTED`
//! and waits for the UMD's next ring or reconnect: no KMD can close that window on this device.
//! Which order each reading of Windows uses, and why, is in docs/usermode-submission.md
//! ("Orders that lose work").
//!
//! **Destroy waits for a callback in flight.** The callback is made with no lock held, so the
//! victim's `DestroyDoorbell` can run meanwhile. Once it has returned the KMD must never name
//! the doorbell to Dxgkrnl again (its handle is then freed or reused), so a doorbell counts the
//! callbacks naming it ([`Doorbell::callbacks`], raised under the lock when it is chosen as the
//! victim, lowered under the lock when the callback has returned) and `DestroyDoorbell` waits,
//! at PASSIVE with no lock held, until that count is zero. The wait lasts one callback.
//!
//! A stale user mapping rings nothing: the device ignores unbound pages (hardware.md 5.5).

use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS_CONNECTED, D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT,
    D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
};
use rvgpu_ddi::submission::{
    DXGKARG_CONNECTDOORBELL, DXGKARG_CREATEDOORBELL, DXGKARG_DESTROYDOORBELL,
    DXGKARG_DISCONNECTDOORBELL, DXGKARG_NOTIFYWORKSUBMISSION,
};
use rvgpu_hw::pdd::{DoorbellPdd, DoorbellValue, DOORBELL_PDD_VERSION, PDD_MAGIC};
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs;
use zerocopy::{FromBytes, IntoBytes};

use super::{Choice, Doorbell};
use crate::adapter::Live;
use crate::handle::{Handle, Kind};
use crate::klog;
use crate::platform::Platform;
use crate::runlist;
use crate::sched::{self, Sched};
use crate::status::{self, Status};

/// Writes `DOORBELL_BIND[i]` (under the scheduler lock).
fn bind<P: Platform>(live: &Live<P>, i: u32, queue_id: u32) {
    live.regs.write_at(i, regs::DoorbellBind::new(queue_id));
}

/// Reads and checks the UMD's private data (exactly [`DoorbellPdd`]'s 16 bytes, the most
/// Dxgkrnl passes: BR-96); returns it and the ring size it states.
fn read_pdd(data: Option<&[u8]>) -> Result<(DoorbellPdd, u32), Status> {
    let bytes = data
        .filter(|d| d.len() == size_of::<DoorbellPdd>())
        .ok_or(status::INVALID_PARAMETER)?;
    let pdd = DoorbellPdd::read_from_bytes(bytes).map_err(|_| status::INVALID_PARAMETER)?;
    if pdd.magic != PDD_MAGIC || pdd.version != DOORBELL_PDD_VERSION || pdd.reserved != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let size = pdd.ring_size().ok_or(status::INVALID_PARAMETER)?;
    Ok((pdd, size))
}

/// The `DXGKARG_CREATEDOORBELL` flag bits that mean `ResizeRingBufferOperation` under either
/// hand-over (24H2's caller word: bit 1; the pages: bit 0).
const DOORBELL_FLAGS_RESIZE: u32 = 0b11;

/// DxgkDdiCreateDoorbell (PASSIVE).
pub(crate) fn create<P: Platform>(
    args: &mut DXGKARG_CREATEDOORBELL,
    data: Option<&mut [u8]>,
) -> Result<(), Status> {
    sched::ddi::with_adapter::<P, _>(args.hHwQueue, Kind::Queue, |a, live, qh| {
        // 24H2 hands the caller's `D3DKMT_CREATE_DOORBELL_FLAGS` word unchanged
        // (`K:DXGDOORBELL::Initialize` @0x1401D9E74): `ResizeRingBufferOperation` in bit 1, and
        // bit 0 (`RequireSecondaryCpuVA`) refused before it reaches a driver without secondary
        // doorbells. The pages put `ResizeRingBufferOperation` in bit 0. Either bit is a
        // resize; the rest are reserved in both.
        if args.hDoorbell.is_null() || args.Flags.Value & !DOORBELL_FLAGS_RESIZE != 0 {
            return Err(status::INVALID_PARAMETER);
        }
        let resize = args.Flags.Value & DOORBELL_FLAGS_RESIZE != 0;
        let (mut pdd, size) = read_pdd(data.as_deref())?;
        let h = a.new_handle(Kind::Doorbell)?;
        let mut s = live.sched.lock();
        let q = s.queues.get(&qh).ok_or(status::INVALID_HANDLE)?;
        if !q.user_mode {
            return Err(status::INVALID_PARAMETER);
        }
        let device = s
            .contexts
            .get(&q.context)
            .map(|c| c.device)
            .ok_or(status::INVALID_PARAMETER)?;
        let process = s.devices.get(&device).and_then(|d| d.process);
        // The ring is where VidMm mapped the allocations the OS names, in the queue's process
        // (a device without a GPU process has no user-mode queues to ring: UMS needs GPU VA,
        // BR-71/73); the OS names them by the queue's device's own handles.
        let (ring, [ring_alloc, control_alloc]) = crate::allocation::ring_from_allocations(
            a.table_slot(),
            &s.allocations,
            device,
            process,
            args.hRingBuffer,
            args.hRingBufferControl,
            size,
        )?;
        if q.doorbell.is_some() && !resize {
            return Err(status::INVALID_DEVICE_STATE);
        }
        let (engine, queue_id) = (q.engine, q.id);
        s.doorbells.try_insert::<P>(
            h,
            Doorbell {
                os_handle: args.hDoorbell.addr(),
                queue: qh,
                physical: None,
                callbacks: 0,
                held: None,
                allocations: [ring_alloc, control_alloc],
            },
        )?;
        if let Some(q) = s.queues.get_mut(&qh) {
            // With ResizeRingBufferOperation an older doorbell object of the queue stays
            // until the OS destroys it, detached: the queue now runs the new ring.
            q.doorbell = Some(h);
            q.ring = Some(ring);
        }
        if let Err(e) = runlist::commit_slot(&live.regs, &s, engine, queue_id, Some(qh)) {
            s.doorbells.remove(&h);
            if let Some(q) = s.queues.get_mut(&qh) {
                q.doorbell = None;
                q.ring = None;
            }
            let _ = runlist::commit_slot(&live.regs, &s, engine, queue_id, Some(qh));
            return Err(e);
        }
        let global = s.physical.is_global();
        drop(s);
        pdd.ring_value = if global {
            DoorbellValue::QueueId as u32
        } else {
            DoorbellValue::WritePtr as u32
        };
        pdd.queue_id = queue_id;
        // `read_pdd` checked the buffer holds a whole `DoorbellPdd`; it is in/out.
        if let Some(out) = data.and_then(|d| d.get_mut(..size_of::<DoorbellPdd>())) {
            out.copy_from_slice(pdd.as_bytes());
        }
        args.hDoorbell = h.as_handle();
        Ok(())
    })
}

/// What a victimising connect must tell Dxgkrnl, gathered under the lock.
struct VictimCall {
    victim: Handle,
    os_queue: usize,
    os_doorbell: usize,
}

/// Takes its page from `victim` under the lock: the victim is marked disconnected, so from
/// here on neither its destroy nor its reconnect touches the page. The page stays bound to the
/// victim's queue until Dxgkrnl has remapped the victim's VA (module doc, "Victims keep their page").
fn take_from(s: &mut Sched, victim: Handle) -> Option<VictimCall> {
    let v = s.doorbells.get_mut(&victim)?;
    v.physical = None;
    // Keeps the victim alive (its DestroyDoorbell waits) until the callback has returned.
    v.callbacks = v.callbacks.saturating_add(1);
    let os_doorbell = v.os_handle;
    let queue = v.queue;
    let os_queue = s.queues.get(&queue).map_or(0, |q| q.os_handle);
    Some(VictimCall {
        victim,
        os_queue,
        os_doorbell,
    })
}

/// DxgkDdiConnectDoorbell (PASSIVE).
pub fn connect<P: Platform>(args: &mut DXGKARG_CONNECTDOORBELL) -> Result<(), Status> {
    sched::ddi::with_adapter::<P, _>(args.hDoorbell, Kind::Doorbell, |_, live, h| {
        if args.Flags.Value != 0 {
            // No secondary doorbells (the caps do not offer them).
            return Err(status::NOT_SUPPORTED);
        }
        let base = live.doorbell_va.ok_or(status::INSUFFICIENT_RESOURCES)?;
        // The engine is powered before the queue can fetch a ring through the page.
        hold_for(live, h)?;
        let (page, queue) = match connect_page(live, h) {
            Ok(c) => c,
            Err(e) => {
                release_unconnected(live, h);
                return Err(e);
            }
        };
        let off = u64::from(page).saturating_mul(rvgpu_hw::PAGE_SIZE);
        let off = usize::try_from(off).map_err(|_| status::INVALID_PARAMETER)?;
        // An address inside our BAR2 mapping, handed to Dxgkrnl (never dereferenced here).
        args.KernelCpuVirtualAddress = base.as_ptr().wrapping_add(off).cast();
        args.SecondaryKernelCpuVirtualAddress = core::ptr::null_mut();
        args.Status = D3DDDI_DOORBELLSTATUS_CONNECTED;
        crate::etw::events::emit::<P, 2>(&crate::etw::events::DOORBELL_CONNECT, || {
            [h.as_handle().addr() as u64, page.into()]
        });
        // Collect work the UMD published while the queue had no doorbell (hardware.md 5.5).
        let s = live.sched.lock();
        if let Some(q) = s.queues.get(&queue) {
            live.regs.write_at(q.engine, regs::QueueKick::new(q.id));
        }
        Ok(())
    })
}

/// Takes an active reference on the power component of doorbell `h`'s engine unless it holds
/// one (power module documentation, "Held components"). No lock is held across the callback:
/// the OS may call `DxgkDdiSetPowerComponentFState` (F0) before it returns.
fn hold_for<P: Platform>(live: &Live<P>, h: Handle) -> Result<(), Status> {
    let engine = {
        let s = live.sched.lock();
        let d = s.doorbells.get(&h).ok_or(status::INVALID_HANDLE)?;
        if d.held.is_some() {
            return Ok(());
        }
        s.queues.get(&d.queue).ok_or(status::INVALID_HANDLE)?.engine
    };
    if !crate::power::ddi::hold(live, engine) {
        return Ok(());
    }
    let extra = {
        let mut s = live.sched.lock();
        match s.doorbells.get_mut(&h) {
            Some(d) if d.held.is_none() => {
                d.held = Some(engine);
                false
            }
            // A concurrent connect took one first, or the doorbell was destroyed meanwhile.
            _ => true,
        }
    };
    if extra {
        crate::power::ddi::release(live, engine);
    }
    Ok(())
}

/// Gives back doorbell `h`'s power reference (no lock held) after a connect that left it
/// without a page.
fn release_unconnected<P: Platform>(live: &Live<P>, h: Handle) {
    let engine = {
        let mut s = live.sched.lock();
        match s.doorbells.get_mut(&h) {
            Some(d) if d.physical.is_none() => d.held.take(),
            _ => None,
        }
    };
    if let Some(e) = engine {
        crate::power::ddi::release(live, e);
    }
}

/// Connects doorbell `h` and returns its page and its queue (the victimisation protocol of
/// the module documentation). Each map lookup is done once: a victimising connect's cost
/// grows with the depth of the lookups.
fn connect_page<P: Platform>(live: &Live<P>, h: Handle) -> Result<(u32, Handle), Status> {
    let mut s = live.sched.lock();
    let d = *s.doorbells.get(&h).ok_or(status::INVALID_HANDLE)?;
    let q = s.queues.get(&d.queue).ok_or(status::INVALID_HANDLE)?;
    let queue_id = q.id;
    // UM-10: a device put in error by an engine reset gets no doorbell page again.
    if device_in_error(&s, q.context) {
        return Err(status::DEVICE_REMOVED);
    }
    // A page on a device that is gone would ring nothing; say so instead.
    if live.regs.check_lost() {
        return Err(status::DEVICE_REMOVED);
    }
    if let Some(page) = d.physical {
        return Ok((page, d.queue));
    }
    if s.physical.is_global() {
        return connect_global(live, s, h).map(|page| (page, d.queue));
    }
    let (page, call) = match s.physical.choose() {
        // Global-mode choices never come from `choose`.
        None | Some(Choice::Shared(_) | Choice::VictimProcess(..)) => {
            return Err(status::INSUFFICIENT_RESOURCES)
        }
        Some(Choice::Free(i)) => {
            s.physical.claim(i, h, false);
            bind(live, i, queue_id);
            set_physical(&mut s, h, Some(i));
            return Ok((i, d.queue));
        }
        Some(Choice::Victim(i, victim)) => {
            let call = take_from(&mut s, victim);
            s.physical.claim(i, h, true);
            (i, call)
        }
    };
    drop(s);
    // No KMD lock held: DxgkCbDisconnectDoorbell is PASSIVE_LEVEL.
    if let Some(c) = &call {
        tell_victim::<P>(live, c);
    }
    let mut s = live.sched.lock();
    let mut held = [0u32; rvgpu_hw::regs::ENGINE_MAX as usize];
    if let Some(c) = &call {
        count_held(&mut held, victim_returned(live, &mut s, c.victim));
    }
    let ours = s.physical.owner(page) == Some((h, true));
    let current = s.doorbells.get(&h).map(|d| (d.physical, d.queue));
    let r = match (ours, current.map(|(p, _)| p)) {
        // Still ours and still wanted: bind it.
        (true, Some(None)) => {
            let queue_id = current
                .and_then(|(_, q)| s.queues.get(&q))
                .map_or(queue_id, |q| q.id);
            s.physical.claim(page, h, false);
            bind(live, page, queue_id);
            if let Some(d) = s.doorbells.get_mut(&h) {
                d.physical = Some(page);
            }
            Ok(page)
        }
        // A concurrent connect of the same doorbell won: keep its page, free ours (Dxgkrnl
        // has remapped the victim by now, so the page may be unbound).
        (true, Some(Some(other))) => {
            s.physical.release(page, h);
            bind(live, page, NO_QUEUE);
            Ok(other)
        }
        // Destroyed meanwhile.
        (true, None) => {
            s.physical.release(page, h);
            bind(live, page, NO_QUEUE);
            Err(status::INVALID_HANDLE)
        }
        (false, Some(Some(other))) => Ok(other),
        (false, _) => Err(status::INVALID_HANDLE),
    };
    drop(s);
    release_detached(live, held);
    r.map(|page| (page, d.queue))
}

/// Global mode: connects doorbell `h` through its process's page (one page per process,
/// bound to the process id, hardware.md 5.5). A process that has a page shares it; otherwise
/// a free page is bound to it; with none free, the least recently connected process's page
/// is taken and every doorbell of that process connected through it is victimised, as in
/// dedicated mode (module doc): the page stays bound to the old process until all the
/// callbacks have returned.
fn connect_global<P: Platform>(
    live: &Live<P>,
    mut s: crate::sync::SpinGuard<'_, P, Sched>,
    h: Handle,
) -> Result<u32, Status> {
    let context = s
        .doorbells
        .get(&h)
        .and_then(|d| s.queues.get(&d.queue))
        .map(|q| q.context)
        .ok_or(status::INVALID_HANDLE)?;
    let pid = s.process_id_of_context(context);
    let (page, calls) = match s.physical.choose_process(pid) {
        None => return Err(status::INSUFFICIENT_RESOURCES),
        Some(Choice::Shared(i)) => {
            s.physical.join(i, pid);
            set_physical(&mut s, h, Some(i));
            return Ok(i);
        }
        Some(Choice::Free(i)) => {
            s.physical.join(i, pid);
            bind(live, i, pid);
            set_physical(&mut s, h, Some(i));
            return Ok(i);
        }
        Some(Choice::VictimProcess(i, _)) => {
            // Gather first (fallibly), then change state: a failed allocation leaves
            // everything as it was.
            let n = s
                .doorbells
                .values()
                .filter(|d| d.physical == Some(i))
                .count();
            let mut victims = crate::kmem::try_with_capacity::<P, Handle>(n)
                .map_err(|_| status::INSUFFICIENT_RESOURCES)?;
            let mut calls = crate::kmem::try_with_capacity::<P, VictimCall>(n)
                .map_err(|_| status::INSUFFICIENT_RESOURCES)?;
            for (v, _) in s.doorbells.iter().filter(|(_, d)| d.physical == Some(i)) {
                let _ = crate::kmem::push_reserved(&mut victims, *v);
            }
            for v in victims {
                if let Some(c) = take_from(&mut s, v) {
                    let _ = crate::kmem::push_reserved(&mut calls, c);
                }
            }
            s.physical.claim_for_process(i, pid, h);
            (i, calls)
        }
        // Dedicated-mode choices never come from `choose_process`.
        Some(Choice::Victim(..)) => return Err(status::INSUFFICIENT_RESOURCES),
    };
    drop(s);
    // No KMD lock held: DxgkCbDisconnectDoorbell is PASSIVE_LEVEL.
    for c in &calls {
        tell_victim::<P>(live, c);
    }
    let mut s = live.sched.lock();
    let mut held = [0u32; rvgpu_hw::regs::ENGINE_MAX as usize];
    for c in &calls {
        count_held(&mut held, victim_returned(live, &mut s, c.victim));
    }
    let ours = s.physical.claimed_by(page, h);
    let current = s.doorbells.get(&h).map(|d| d.physical);
    let r = match (ours, current) {
        // Still ours and still wanted: the page now rings this process's queues.
        (true, Some(None)) => {
            s.physical.complete_claim(page);
            bind(live, page, pid);
            set_physical(&mut s, h, Some(page));
            Ok(page)
        }
        // Connected elsewhere meanwhile, or destroyed: the claimed page goes back unbound
        // (the old process's VAs were remapped by the callbacks).
        (true, other) => {
            s.physical.abandon_claim(page);
            bind(live, page, NO_QUEUE);
            other.flatten().ok_or(status::INVALID_HANDLE)
        }
        (false, Some(Some(other))) => Ok(other),
        (false, _) => Err(status::INVALID_HANDLE),
    };
    drop(s);
    release_detached(live, held);
    r
}

/// The victimising callback for `victim` has returned: it may be destroyed again, and its
/// queue is kicked. 24H2 points the victim's VA at the dummy page *before* it writes the
/// status (`K:DXGDOORBELL::Disconnect`), so a ring in between lands on the dummy page while
/// the UMD still reads `CONNECTED` and will not ring again; the status is written by now, so
/// this kick collects that work (every later ring reads the new status and reconnects).
///
/// Returns the engine whose power reference the victim gives back (once the caller has dropped
/// the lock): a doorbell without a page holds none.
fn victim_returned<P: Platform>(live: &Live<P>, s: &mut Sched, victim: Handle) -> Option<u32> {
    let v = s.doorbells.get_mut(&victim)?;
    v.callbacks = v.callbacks.saturating_sub(1);
    let queue = v.queue;
    let held = if v.physical.is_none() {
        v.held.take()
    } else {
        None
    };
    if let Some(q) = s.queues.get(&queue) {
        live.regs.write_at(q.engine, regs::QueueKick::new(q.id));
    }
    held
}

/// Adds a reference [`victim_returned`] gave back to `held` (counts per engine).
fn count_held(held: &mut [u32; rvgpu_hw::regs::ENGINE_MAX as usize], engine: Option<u32>) {
    if let Some(n) = engine
        .and_then(|e| usize::try_from(e).ok())
        .and_then(|e| held.get_mut(e))
    {
        *n = n.saturating_add(1);
    }
}

/// Records doorbell `h`'s page.
fn set_physical(s: &mut Sched, h: Handle, page: Option<u32>) {
    if let Some(d) = s.doorbells.get_mut(&h) {
        d.physical = page;
    }
}

/// Whether the D3D device of `context` was put in error (UM-10). Read here rather than
/// through the reset module, which calls into this one.
fn device_in_error(s: &Sched, context: Handle) -> bool {
    s.contexts
        .get(&context)
        .and_then(|c| s.devices.get(&c.device))
        .is_some_and(|d| d.in_error)
}

/// The D3D device of doorbell `d`'s queue.
fn device_of(s: &Sched, d: &Doorbell) -> Option<Handle> {
    let q = s.queues.get(&d.queue)?;
    s.contexts.get(&q.context).map(|c| c.device)
}

/// UM-10: every doorbell of `device`, which an engine reset found guilty, is aborted through
/// `DxgkCbDisconnectDoorbell(DISCONNECTED_ABORT)` (PASSIVE_LEVEL, no KMD lock held), so its
/// UMD reads the abort at its next ring and reports the device lost. Windows writes no
/// doorbell status when it puts a device in error (24H2 `M:VidSchiMarkDeviceAsError`
/// @0x14001FF30): only this callback (`K:DxgkDisconnectDoorbellCB` @0x1401DB180, which
/// accepts RETRY and ABORT) tells the UMD. A doorbell already disconnected keeps its status
/// there (the callback leaves a status above `CONNECTED_NOTIFY_KMD` alone) and is not named;
/// its UMD's reconnect is refused instead ([`connect_page`]).
///
/// One connected doorbell per pass, counted in [`Doorbell::callbacks`] across the callback
/// like a victim (its `DestroyDoorbell` waits), so nothing is allocated; each pass takes one
/// page away and the device gets none again, so the loop ends. After the callback the page
/// is unbound if the OS did not disconnect it through the DDI ("KMD should consider the
/// physical doorbell address to be disconnected only after return from this callback") and
/// the power reference goes back.
pub(crate) fn abort_device<P: Platform>(live: &Live<P>, device: Handle) {
    abort_where(live, |_, d| d == device);
}

/// After an adapter reset (`DxgkDdiRestartFromTimeout`): every device the reset put in error
/// has its connected doorbells aborted as in [`abort_device`].
pub(crate) fn abort_devices_in_error<P: Platform>(live: &Live<P>) {
    abort_where(live, |s, d| s.devices.get(&d).is_some_and(|x| x.in_error));
}

/// [`abort_device`] for every connected doorbell whose device `pick` chooses.
fn abort_where<P: Platform>(live: &Live<P>, pick: impl Fn(&Sched, Handle) -> bool) {
    loop {
        let call = {
            let mut s = live.sched.lock();
            let next = s
                .doorbells
                .iter()
                .find(|(_, d)| {
                    d.physical.is_some()
                        && d.callbacks == 0
                        && device_of(&s, d).is_some_and(|dev| pick(&s, dev))
                })
                .map(|(h, _)| *h);
            let Some(h) = next else {
                return;
            };
            let os_queue = s
                .doorbells
                .get(&h)
                .and_then(|d| s.queues.get(&d.queue))
                .map_or(0, |q| q.os_handle);
            let Some(d) = s.doorbells.get_mut(&h) else {
                return;
            };
            d.callbacks = d.callbacks.saturating_add(1);
            VictimCall {
                victim: h,
                os_queue,
                os_doorbell: d.os_handle,
            }
        };
        let r = live.dxgk.disconnect_doorbell(
            call.os_queue,
            call.os_doorbell,
            D3DDDI_DOORBELLSTATUS_DISCONNECTED_ABORT,
        );
        if let Err(e) = r {
            klog!(
                P,
                Warning,
                "rvgpu: DxgkCbDisconnectDoorbell(ABORT) failed: {:#x}",
                e.code()
            );
        }
        let held = {
            let mut s = live.sched.lock();
            disconnect_locked(live, &mut s, call.victim);
            s.doorbells.get_mut(&call.victim).and_then(|d| {
                d.callbacks = d.callbacks.saturating_sub(1);
                d.held.take()
            })
        };
        if let Some(e) = held {
            crate::power::ddi::release(live, e);
        }
    }
}

/// Tells Dxgkrnl that a victim's doorbell is disconnected (no KMD lock held).
fn tell_victim<P: Platform>(live: &Live<P>, c: &VictimCall) {
    let r = live.dxgk.disconnect_doorbell(
        c.os_queue,
        c.os_doorbell,
        D3DDDI_DOORBELLSTATUS_DISCONNECTED_RETRY,
    );
    if let Err(e) = r {
        // The victim is disconnected on our side whatever Dxgkrnl says; its UMD finds out
        // at its next ring (which the unbound page ignores) or reconnect.
        klog!(
            P,
            Warning,
            "rvgpu: DxgkCbDisconnectDoorbell failed: {:#x}",
            e.code()
        );
    }
}

/// Releases (dedicated) or leaves (global) doorbell `h`'s physical doorbell, if it has one,
/// and unbinds it once nothing uses it (caller holds the lock).
fn disconnect_locked<P: Platform>(live: &Live<P>, s: &mut Sched, h: Handle) {
    let Some(page) = s.doorbells.get(&h).and_then(|d| d.physical) else {
        return;
    };
    let free = if s.physical.is_global() {
        s.physical.leave(page)
    } else {
        s.physical.release(page, h)
    };
    if free {
        bind(live, page, NO_QUEUE);
    }
    if let Some(d) = s.doorbells.get_mut(&h) {
        d.physical = None;
    }
}

/// DxgkDdiDestroyHwQueue of a queue that still has doorbells (a refusal would leak it: 24H2
/// `K:ADAPTER_RENDER::DdiDestroyHwQueue`@0x1403B4F34 logs a failure and frees its queue all
/// the same): each doorbell naming `queue` gives up its page and its power reference, so the
/// device can ring nothing through it. The doorbell objects stay until the OS destroys them.
/// The caller releases the returned references (counted per engine) once the lock is dropped.
pub(crate) fn detach_queue<P: Platform>(
    live: &Live<P>,
    s: &mut Sched,
    queue: Handle,
) -> [u32; rvgpu_hw::regs::ENGINE_MAX as usize] {
    let mut held = [0u32; rvgpu_hw::regs::ENGINE_MAX as usize];
    // Each pass clears one doorbell's page and reference, so the loop ends.
    loop {
        let next = s
            .doorbells
            .iter()
            .find(|(_, d)| d.queue == queue && (d.physical.is_some() || d.held.is_some()))
            .map(|(h, _)| *h);
        let Some(h) = next else {
            break;
        };
        disconnect_locked(live, s, h);
        let engine = s.doorbells.get_mut(&h).and_then(|d| d.held.take());
        if let Some(n) = engine
            .and_then(|e| usize::try_from(e).ok())
            .and_then(|e| held.get_mut(e))
        {
            *n = n.saturating_add(1);
        }
    }
    held
}

/// DxgkDdiDestroyAllocation of allocation `alloc` (caller holds the lock): every user-mode
/// queue running a ring in it (ring or ring control) leaves its runlist and its doorbells are
/// detached ([`detach_queue`]), so the device reads none of it again once the DDI returns.
/// 24H2 destroys a device's allocations before its queues (`K:DXGDEVICE::DestroyAllDeviceState`
/// @0x1403A7C64: `DrainAllocations`, then `DestroyDevice`@0x1402CE23C) and the doorbell keeps no
/// reference on them (`K:DXGDOORBELL::Initialize`@0x1401D9E74). The queue stays until the OS
/// destroys it; it runs nothing. References to give back are added to `held`.
pub(crate) fn stop_queues_on<P: Platform>(
    live: &Live<P>,
    s: &mut Sched,
    alloc: Handle,
    held: &mut [u32; rvgpu_hw::regs::ENGINE_MAX as usize],
) {
    loop {
        let next = s
            .doorbells
            .iter()
            .filter(|(_, d)| d.allocations.contains(&alloc))
            .find(|(h, d)| {
                s.queues
                    .get(&d.queue)
                    .is_some_and(|q| q.doorbell == Some(**h) && q.ring.is_some())
            })
            .map(|(_, d)| d.queue);
        let Some(queue) = next else {
            return;
        };
        let slot = s.queues.get_mut(&queue).map(|q| {
            q.ring = None;
            (q.engine, q.id)
        });
        if let Some((engine, id)) = slot {
            // Only empties the queue's slot, which cannot fail for lack of room.
            let _ = runlist::commit_slot(&live.regs, s, engine, id, Some(queue));
        }
        for (n, more) in held.iter_mut().zip(detach_queue(live, s, queue)) {
            *n = n.saturating_add(more);
        }
    }
}

/// Gives back the references [`detach_queue`] took off the doorbells (no lock held).
pub(crate) fn release_detached<P: Platform>(
    live: &Live<P>,
    held: [u32; rvgpu_hw::regs::ENGINE_MAX as usize],
) {
    for (e, n) in (0u32..).zip(held) {
        for _ in 0..n {
            crate::power::ddi::release(live, e);
        }
    }
}

/// D3 entry: how many doorbells are still connected (bound to a physical doorbell). UM-14
/// (Microsoft's user-mode submission page) has Dxgkrnl disconnect every doorbell before
/// `SetPowerState(D3)`, which leaves none; a count above zero on a test machine says this
/// Dxgkrnl does not, and the UMDs' rings in D3 reach a function in D3hot (dropped) while their
/// status pages say `CONNECTED` (docs/usermode-submission.md).
///
/// Counted, not disconnected: `DxgkCbDisconnectDoorbell` takes the doorbell's context lock,
/// which Dxgkrnl's doorbell API paths take *before* the adapter's core resource, and the power
/// path holds that resource exclusively around this DDI (decompiled dxgkrnl 10.0.22631:
/// `DxgkDisconnectDoorbellCB`, `DXGDOORBELLAPILOCKS`, `DpiPowerArbiterThread`), so a callback
/// from here can deadlock a sleep transition. The work is not lost either way: every context is
/// suspended before D3 and its queues load their write pointers when they enter the runlist at
/// resume (hardware.md 5.2).
pub fn connected_at_d3<P: Platform>(live: &Live<P>) -> u32 {
    let s = live.sched.lock();
    let n = s
        .doorbells
        .values()
        .filter(|d| d.physical.is_some())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// DxgkDdiDisconnectDoorbell (PASSIVE; succeeds for every doorbell of ours).
pub fn disconnect<P: Platform>(args: &DXGKARG_DISCONNECTDOORBELL) -> Result<(), Status> {
    sched::ddi::with_adapter::<P, _>(args.hDoorbell, Kind::Doorbell, |_, live, h| {
        let mut s = live.sched.lock();
        let d = s.doorbells.get(&h).ok_or(status::INVALID_HANDLE)?;
        let (queue, victim) = (d.queue, d.callbacks > 0);
        disconnect_locked(live, &mut s, h);
        let held = s.doorbells.get_mut(&h).and_then(|d| d.held.take());
        // Collect a ring that hit the unbound page before this kick: the UMD's status page
        // says CONNECTED until Dxgkrnl updates it after this returns, so the UMD will not ring
        // again for that work. A ring after the kick and before Dxgkrnl's remap is still
        // lost (module doc, "OS-initiated disconnects"). A victim told of its disconnect from
        // inside our own ConnectDoorbell (24H2 calls this DDI from the callback) is kicked
        // once the callback has returned instead (`victim_returned`), which covers that
        // window too.
        if !victim {
            if let Some(q) = s.queues.get(&queue) {
                live.regs.write_at(q.engine, regs::QueueKick::new(q.id));
            }
        }
        drop(s);
        // The OS disconnects before it powers the engine down (the pages) or destroys the
        // doorbell: the engine is free to idle; a reconnect takes the reference again.
        if let Some(e) = held {
            crate::power::ddi::release(live, e);
        }
        Ok(())
    })
}

/// DxgkDdiDestroyDoorbell (PASSIVE; succeeds for every doorbell of ours): disconnects, and the
/// queue leaves the runlist before this returns (its ring may be freed afterwards).
pub fn destroy<P: Platform>(args: &DXGKARG_DESTROYDOORBELL) -> Result<(), Status> {
    sched::ddi::with_adapter::<P, _>(args.hDoorbell, Kind::Doorbell, |_, live, h| {
        // Wait (PASSIVE, lock released between looks) for victimisation callbacks naming this
        // doorbell to return: after this DDI Dxgkrnl's handle is dead (module doc).
        let mut s = loop {
            let s = live.sched.lock();
            match s.doorbells.get(&h) {
                None => return Err(status::INVALID_HANDLE),
                Some(d) if d.callbacks == 0 => break s,
                Some(_) => {}
            }
            drop(s);
            core::hint::spin_loop();
        };
        let d = *s.doorbells.get(&h).ok_or(status::INVALID_HANDLE)?;
        disconnect_locked(live, &mut s, h);
        s.doorbells.remove(&h);
        let engine = match s.queues.get_mut(&d.queue) {
            Some(q) if q.doorbell == Some(h) => {
                q.doorbell = None;
                q.ring = None;
                Some((q.engine, q.id))
            }
            _ => None,
        };
        if let Some((e, id)) = engine {
            // Only empties the queue's slot, which cannot fail for lack of room.
            let _ = runlist::commit_slot(&live.regs, &s, e, id, Some(d.queue));
        }
        drop(s);
        if let Some(e) = d.held {
            crate::power::ddi::release(live, e);
        }
        Ok(())
    })
}

/// DxgkDdiNotifyWorkSubmission (PASSIVE): the UMD rang a `CONNECTED_NOTIFY` doorbell.
pub fn notify_work_submission<P: Platform>(
    args: &DXGKARG_NOTIFYWORKSUBMISSION,
) -> Result<(), Status> {
    sched::ddi::with_adapter::<P, _>(args.hHwQueue, Kind::Queue, |_, live, h| {
        let s = live.sched.lock();
        let q = s.queues.get(&h).ok_or(status::INVALID_HANDLE)?;
        if !q.user_mode {
            return Err(status::INVALID_PARAMETER);
        }
        crate::etw::events::emit::<P, 2>(&crate::etw::events::DOORBELL_RING, || {
            [q.id.into(), q.engine.into()]
        });
        live.regs.write_at(q.engine, regs::QueueKick::new(q.id));
        Ok(())
    })
}
