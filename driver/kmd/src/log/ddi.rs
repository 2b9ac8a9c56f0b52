//! The native fence log DDIs (`DxgkDdiSetNativeFenceLogBuffer`,
//! `DxgkDdiUpdateNativeFenceLogs`) and the ISR table's clearing at destroy, over the state of
//! [`super`].

use core::sync::atomic::Ordering;
use rvgpu_hw::addr::GpuVa;

use rvgpu_ddi::fence::{DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATENATIVEFENCELOGS};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::regs;

use crate::adapter::{Adapter, Live};
use crate::globals::ADAPTERS;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist;
use crate::sched::ddi::with_adapter;
use crate::status::{self, Status};

use super::{dedup_ids, seq_of, validate, HeaderView};

/// DxgkDdiSetNativeFenceLogBuffer (DISPATCH_LEVEL; LOG-01, LOG-09). Any failure leaves the
/// queue unchanged. `header`: the buffer's header as the thunk read it through
/// `LogBufferCpuVa`, the OS's kernel mapping of the buffer (refused if unreadable).
pub fn set_log_buffer<P: Platform>(
    args: &DXGKARG_SETNATIVEFENCELOGBUFFER,
    header: Result<HeaderView, Status>,
) -> Result<(), Status> {
    let header = header?;
    with_adapter::<P, _>(args.hHwQueue, Kind::Queue, |_, live, h| {
        let (kind, buf) = validate(
            args.NumberOfEntries,
            header,
            GpuVa::new(args.LogBufferSystemProcessGpuVa),
            live.identity.vram_size,
        )?;
        let flush = {
            let mut s = live.sched.lock();
            let q = s.queues.get_mut(&h).ok_or(status::INVALID_HANDLE)?;
            let previous = q.logs;
            q.logs.set(kind, buf);
            let (id, engine, complete) = (q.id, q.engine, q.logs.complete());
            let runnable = s.queues.get(&h).is_some_and(|q| s.runnable(q));
            if runnable {
                // The queue keeps its id and ring; the device uses the new address from its
                // next packet (hardware.md M14). The commit holds the CMP, so no packet is
                // mid-flight with the old descriptor when it returns.
                if let Err(e) = runlist::commit_slot(&live.regs, &s, engine, id, Some(h)) {
                    if let Some(q) = s.queues.get_mut(&h) {
                        q.logs = previous;
                    }
                    let _ = runlist::commit_slot(&live.regs, &s, engine, id, Some(h));
                    return Err(e);
                }
            }
            if complete && !previous.complete() {
                live.queue_irq.logs_complete(id, seq_of(h), engine);
            }
            runnable.then_some(id)
        };
        if let Some(id) = flush {
            // No write to the old buffer can still be in flight when we return.
            live.regs.write(regs::LogFlush::new(id));
        }
        Ok(())
    })
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
