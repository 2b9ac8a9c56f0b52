//! The native fence log DDIs (`DxgkDdiSetNativeFenceLogBuffer`,
//! `DxgkDdiUpdateNativeFenceLogs`) and the ISR table's clearing at destroy, over the state of
//! [`super`].

use core::sync::atomic::Ordering;

use rvgpu_ddi::fence::{DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATENATIVEFENCELOGS};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::regs;

use crate::adapter::{Adapter, Live};
use crate::globals::ADAPTERS;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist;
use crate::sched::ddi::with_adapter;
use crate::status::{self, Status};

use super::{dedup_ids, seq_of, validate, HeaderView};

/// DxgkDdiSetNativeFenceLogBuffer (PASSIVE or DISPATCH_LEVEL; LOG-01, LOG-09). `header`: the
/// buffer's header as the thunk read it through `LogBufferCpuVa`, the OS's kernel mapping of
/// the buffer (refused if unreadable). A failure takes both of the queue's logs away
/// ([`super::QueueLogs::clear`]): 24H2 frees both when either call fails (`M:VidSchiCreateNativeFenceLog`
/// @0x140024634), and the pages' "destroy and recreate" destroys the old buffer before the
/// call, so no log the queue had before may stay in use. The queue then reports NULL
/// (LOG-08), which costs a scan and loses nothing. `view`: the OS's mapping of the buffer,
/// kept with the log for the test hooks ([`super::LogView`]).
pub fn set_log_buffer<P: Platform>(
    args: &DXGKARG_SETNATIVEFENCELOGBUFFER,
    header: Result<HeaderView, Status>,
    view: super::LogView,
) -> Result<(), Status> {
    // The argument checks that need no queue come first (the header read through the CPU VA).
    let set = header.and_then(|header| {
        with_adapter::<P, _>(args.hHwQueue, Kind::Queue, |_, live, h| {
            let (kind, buf, space) = validate(
                args.NumberOfEntries,
                header,
                GpuVa::new(args.LogBufferGpuVa),
                GpuVa::new(args.LogBufferSystemProcessGpuVa),
                live.identity.vram_size,
            )?;
            update(live, h, |logs| {
                logs.set(kind, buf, space);
                logs.keep_view(kind, view);
            })
        })
    });
    if set.is_err() {
        // The status that matters is the set's; a handle naming no queue has nothing to forget.
        let _ = with_adapter::<P, _>(args.hHwQueue, Kind::Queue, |_, live, h| {
            update(live, h, |logs| logs.clear())
        });
    }
    set
}

/// DxgkDdiSetNativeFenceLogBuffer with the release block ([`super::is_release`], DISPATCH_LEVEL,
/// LOG-01): 24H2 sends it when the queue's last reference goes, before
/// `DxgkDdiDestroyHwQueue`, and frees both buffers next. The queue forgets its logs and leaves
/// the device ([`super::QueueLogs::release`]): its slot is recommitted empty, so the device
/// stops it at a packet boundary before this returns and it writes neither buffer again. No
/// allocation, no wait. The OS does not look at the status, so a handle that names no live
/// queue (destroyed already) is only reported.
pub fn release_logs<P: Platform>(args: &DXGKARG_SETNATIVEFENCELOGBUFFER) -> Result<(), Status> {
    with_adapter::<P, _>(args.hHwQueue, Kind::Queue, |_, live, h| {
        update(live, h, |logs| logs.release())
    })
}

/// Changes queue `h`'s logs with `change` under the scheduler lock, keeps the ISR table in
/// step, and, if the queue is in a runlist, recommits its slot and flushes its log writes:
/// the device reads the slot before the commit returns and holds the CMP, so no packet runs
/// with the old addresses after it (hardware.md 5.2), and `LOG_FLUSH` puts any write begun
/// before it in memory.
fn update<P: Platform>(
    live: &Live<P>,
    h: Handle,
    change: impl FnOnce(&mut super::QueueLogs),
) -> Result<(), Status> {
    let flush = {
        let mut s = live.sched.lock();
        let q = s.queues.get_mut(&h).ok_or(status::INVALID_HANDLE)?;
        let previous = q.logs;
        change(&mut q.logs);
        if q.logs == previous {
            return Ok(());
        }
        let (id, engine, complete) = (q.id, q.engine, q.logs.complete());
        if complete && !previous.complete() {
            live.queue_irq.logs_complete(id, seq_of(h), engine);
        } else if !complete && previous.complete() {
            live.queue_irq.logs_released(id, engine);
        }
        let runnable = s.queues.get(&h).is_some_and(|q| s.runnable(q));
        if runnable {
            // The queue keeps its id and ring; the device uses the new addresses from its
            // next packet (hardware.md M14), or drops a released queue's empty slot.
            runlist::commit_slot(&live.regs, &s, engine, id, Some(h))?;
        }
        runnable.then_some(id)
    };
    if let Some(id) = flush {
        live.regs.write(regs::LogFlush::new(id));
    }
    Ok(())
}

/// DxgkDdiUpdateNativeFenceLogs (DISPATCH_LEVEL; LOG-07): one `LOG_FLUSH` per listed queue
/// (consecutive duplicates once). Unknown handles make the call return INVALID_HANDLE after
/// the valid ones were flushed. `handles`: the `NumberOfQueues` handles at `hHWQueue`, as the
/// thunk resolved them (`None` for a null array).
pub fn update_logs<P: Platform>(
    args: &DXGKARG_UPDATENATIVEFENCELOGS,
    handles: Option<&[HANDLE]>,
) -> Result<(), Status> {
    if args.NumberOfQueues == 0 {
        return Ok(());
    }
    let handles = handles.ok_or(status::INVALID_PARAMETER)?;
    let mut result = Ok(());
    let mut rest = handles;
    while let Some(first) = rest.first() {
        // One run of handles naming the same adapter slot: one lock acquisition.
        let slot = Handle::decode(*first, Kind::Queue).map(Handle::slot);
        let run = rest
            .iter()
            .take_while(|h| Handle::decode(**h, Kind::Queue).map(Handle::slot) == slot)
            .count()
            .max(1);
        let (this, next) = rest.split_at(run.min(rest.len()));
        rest = next;
        let r = match slot {
            Some(slot) => ADAPTERS
                .with(slot, |a: &Adapter<P>| match a.live() {
                    Some(live) => flush_run(live, this),
                    None => Err(status::INVALID_HANDLE),
                })
                .unwrap_or(Err(status::INVALID_HANDLE)),
            None => Err(status::INVALID_HANDLE),
        };
        if r.is_err() {
            result = r;
        }
    }
    result
}

/// Flushes the queues of one adapter named by `handles` (the scheduler lock is held while the
/// flush registers are written, so no queue id is freed and reused in between).
fn flush_run<P: Platform>(live: &Live<P>, handles: &[HANDLE]) -> Result<(), Status> {
    let s = live.sched.lock();
    let mut result = Ok(());
    let ids = handles.iter().map(|raw| {
        Handle::decode(*raw, Kind::Queue)
            .and_then(|h| s.queues.get(&h))
            .map(|q| q.id)
    });
    for id in dedup_ids(ids) {
        match id {
            Some(id) => live.regs.write(regs::LogFlush::new(id)),
            None => result = Err(status::INVALID_HANDLE),
        }
    }
    // LOG-07: the flushes returned, so every counted entry is in memory; the caller's reads
    // of the entries must not be hoisted above them.
    core::sync::atomic::fence(Ordering::SeqCst);
    result
}

/// Clears queue `id`'s ISR table entry inside `DxgkCbSynchronizeExecution` (DestroyHwQueue,
/// PASSIVE, after the queue left its runlist): when this returns, no ISR is between reading
/// the entry and reporting its handle. If the callback fails (it does not on Windows), the
/// entry is cleared anyway; a report naming a queue being destroyed is then possible but only
/// for an ISR that started before the destroy.
pub fn clear_queue_irq<P: Platform>(live: &Live<P>, id: u32, engine: u32) {
    let table = &live.queue_irq;
    if live.synchronized(|_| table.remove(id, engine)).is_err() {
        table.remove(id, engine);
    }
}

/// The test hooks' [`TestHookOp::QueueLog`](rvgpu_hw::testhooks::TestHookOp::QueueLog) (PASSIVE,
/// from DxgkDdiEscape with the hooks on): copies the log the request's `seq` names
/// (`LOG_TYPE_WAITS` or `LOG_TYPE_SIGNALS`) of the queue whose device id is the request's
/// `node` into `tail`, as the device wrote it. Only a queue of `h_device` (the escape's device,
/// as Dxgkrnl translated the caller's handle) is answered: another process's queue, an unknown
/// id, a device of no adapter or no device at all are INVALID_PARAMETER, as a queue that does
/// not exist, so a caller learns nothing of other devices' queues. A queue without that log
/// answers 0 entries and copies nothing. Returns `(bytes copied, NumberOfEntries)`.
pub fn escape_queue_log<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_device: HANDLE,
    queue_id: u32,
    log_type: u64,
    tail: &mut [u8],
) -> Result<(u32, u64), Status> {
    let bad = status::INVALID_PARAMETER;
    let kind = u32::try_from(log_type)
        .ok()
        .and_then(super::LogKind::from_type)
        .ok_or(bad)?;
    let device = Handle::decode_on(h_device, Kind::Device, a.table_slot()).map_err(|_| bad)?;
    let s = live.sched.lock();
    let q = s
        .queues
        .values()
        .find(|q| q.id == queue_id && s.contexts.get(&q.context).map(|c| c.device) == Some(device))
        .ok_or(bad)?;
    let view = q.logs.view(kind);
    // Copied under the lock: a replacement or the release of the log waits for it.
    let n = view.copy_to(tail);
    Ok((
        u32::try_from(n).unwrap_or(u32::MAX),
        u64::from(view.entries()),
    ))
}
