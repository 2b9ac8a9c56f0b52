//! `DxgkDdiCollectDbgInfo` and `DxgkDdiCollectDbgInfo2`: the driver's part of a debug report
//! (TDR-01).
//!
//! Zero-level synchronisation [l0]: any thread may be inside any other DDI at the same time,
//! including `DxgkDdiResetEngine` on another thread, and for reasons other than the two TDR
//! codes the IRQL is undefined ("can be called at any time and at high IRQL"). For
//! `VIDEO_TDR_TIMEOUT_DETECTED` (0x117) and `VIDEO_ENGINE_TIMEOUT_DETECTED` (0x141) it is
//! PASSIVE_LEVEL [l0], [cdi]. So nothing here waits: registers and atomics, and (version 2
//! only, at DISPATCH_LEVEL or below) the scheduler state if its lock is free at that moment
//! (the lock is held across a reset); no `DxgkCbSynchronizeExecution` (the node rings'
//! bookkeeping lives under the interrupt lock), no allocation, no callback. `pExtension` is
//! left untouched.
//!
//! `DxgkDdiCollectDbgInfo` writes at most `BufferSize` bytes of ASCII text;
//! `DxgkDdiCollectDbgInfo2` writes the binary dump record of [`rvgpu_hw::tdrdump`] ([`collect2`]).
//!
//! Text format (one `key=value` line per item, stable for tooling):
//!
//! ```text
//! rvgpu reason=0x141 status=0x0 engines=2
//! resets engine=3 failed=1 adapter=0 invalidated=1
//! events rejected=0 engine=0 queue=0 state=0 reset=0 schedlog=0
//! watchdog looks=120 lost_deliveries=0
//! power d3_doorbells_connected=0
//! e0 status=0x303 current=0xffffffff done=0x0 reset_result=1 reset_queue=0x5 reset_rptr=0x40 last_done=1/0x5/0x40 last_aborted=12
//! ```
//!
//! [l0]: https://learn.microsoft.com/windows-hardware/drivers/display/threading-and-synchronization-zero-level
//! [cdi]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo

use core::fmt::{self, Write};
use core::sync::atomic::Ordering;

use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT,
    DXGK_TDR_TYPE_ENGINE_TIMEOUT,
};
use rvgpu_hw::engine::{EngineState, EngineStatus, ResetResult};
use rvgpu_hw::queue::NO_QUEUE;
use rvgpu_hw::regs::{self, ENGINE_MAX};
use rvgpu_hw::tdrdump::{self, TdrDumpEngine, TdrDumpHeader, NO_NODE};
use zerocopy::IntoBytes;

use crate::adapter::{Adapter, Live};
use crate::platform::{Irql, Platform};
use crate::sched::Sched;
use crate::status::{self, Status};

/// Writes into a byte slice, silently truncating at its end (the report is best effort).
#[derive(Debug)]
pub struct Truncating<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Truncating<'a> {
    /// An empty writer over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes written so far (tests inspect it).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// NUL-terminates the text (replacing the last byte if the buffer is full).
    pub fn terminate(&mut self) {
        let at = if self.len < self.buf.len() {
            self.len
        } else {
            self.buf.len().saturating_sub(1)
        };
        if let Some(b) = self.buf.get_mut(at) {
            *b = 0;
        }
    }
}

impl Write for Truncating<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let free = self.buf.len().saturating_sub(self.len);
        let n = s.len().min(free);
        if let (Some(dst), Some(src)) = (
            self.buf.get_mut(self.len..self.len.saturating_add(n)),
            s.as_bytes().get(..n),
        ) {
            dst.copy_from_slice(src);
            self.len = self.len.saturating_add(n);
        }
        Ok(())
    }
}

/// Writes the report for adapter `a` (`reason` is the bug-check code asked for).
pub fn report<P: Platform>(a: &Adapter<P>, reason: u32, out: &mut impl Write) -> fmt::Result {
    let Some(live) = a.live() else {
        return writeln!(out, "rvgpu reason={reason:#x} not-started");
    };
    let r = &live.regs;
    let engines = live.identity.config.engines;
    writeln!(
        out,
        "rvgpu reason={reason:#x} status={:#x} engines={engines}",
        r.read::<regs::DeviceStatusReg>().raw()
    )?;
    let t = &a.tdr;
    writeln!(
        out,
        "resets engine={} failed={} adapter={} invalidated={}",
        t.engine_resets.load(Ordering::Relaxed),
        t.failed_resets.load(Ordering::Relaxed),
        t.adapter_resets.load(Ordering::Relaxed),
        t.invalidated.load(Ordering::Relaxed)
    )?;
    let g = &a.event_guard;
    {
        use crate::interrupt::Rejection as R;
        writeln!(
            out,
            "events rejected={} engine={} queue={} state={} reset={} schedlog={}",
            g.rejected_total(),
            g.rejected(R::Engine),
            g.rejected(R::Queue),
            g.rejected(R::State),
            g.rejected(R::Reset),
            g.rejected(R::SchedLog)
        )?;
    }
    writeln!(
        out,
        "watchdog looks={} lost_deliveries={}",
        a.watchdog.looks.load(Ordering::Relaxed),
        a.watchdog.recoveries.load(Ordering::Relaxed)
    )?;
    writeln!(
        out,
        "power d3_doorbells_connected={}",
        a.stats.d3_doorbells_connected.load(Ordering::Relaxed)
    )?;
    for e in 0..engines {
        write!(
            out,
            "e{e} status={:#x} current={:#x} done={:#x} reset_result={} reset_queue={:#x} reset_rptr={:#x}",
            r.read_at::<regs::EngineStatusReg>(e).raw(),
            r.read_at::<regs::CurrentQueue>(e).raw(),
            r.read_at::<regs::CompletedCommands>(e).raw(),
            r.read_at::<regs::ResetResultReg>(e).raw(),
            r.read_at::<regs::ResetQueue>(e).raw(),
            r.read_at::<regs::ResetRptr>(e).raw(),
        )?;
        match t.last_reset_done(e) {
            Some(d) => write!(out, " last_done={}/{:#x}/{:#x}", d.result, d.queue, d.rptr)?,
            None => write!(out, " last_done=none")?,
        }
        writeln!(out, " last_aborted={}", t.last_aborted(e))?;
    }
    Ok(())
}

/// Writes the report for `reason` into the OS's buffer, truncating at its end and
/// NUL-terminating. `buf` is the OS's `pBuffer`/`BufferSize` (`None`: null with a non-zero
/// size); an empty buffer gets nothing.
fn write_into<P: Platform>(
    a: &Adapter<P>,
    reason: u32,
    buf: Option<&mut [u8]>,
) -> Result<(), Status> {
    let buf = buf.ok_or(status::INVALID_PARAMETER)?;
    if buf.is_empty() {
        // Nothing can be written; the OS simply gets no driver text.
        return Ok(());
    }
    let mut w = Truncating::new(buf);
    // Truncation is not an error: the writer never fails.
    let _ = report(a, reason, &mut w);
    w.terminate();
    Ok(())
}

/// DxgkDdiCollectDbgInfo (level 0; PASSIVE for 0x117/0x141, any IRQL otherwise).
pub(crate) fn collect<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_COLLECTDBGINFO,
    buf: Option<&mut [u8]>,
) -> Result<(), Status> {
    keep_for_test_hooks(a, args.Reason);
    write_into(a, args.Reason, buf)
}

/// With the test hooks on ([`crate::testhooks`]): the call journaled and the text report of
/// this moment kept for `LastDbgInfo` (both versions of the DDI; version 2 writes the OS a
/// binary record). Never waits: a report being kept by another call at this moment keeps
/// this one's record only.
fn keep_for_test_hooks<P: Platform>(a: &Adapter<P>, reason: u32) {
    use crate::testhooks::rec;
    use rvgpu_hw::testhooks::JournalKind::CollectDbgInfo;
    let Some(h) = a.live().and_then(|l| l.hooks.as_ref()) else {
        return;
    };
    let record = |bytes: u32| {
        h.journal
            .write(&rec(CollectDbgInfo, 0, reason.into(), bytes.into()))
    };
    let fill = |w: &mut crate::testhooks::journal::TextWriter<'_>| {
        let _ = report(a, reason, w);
    };
    if h.dbg.capture(fill, record).is_none() {
        record(0);
    }
}

/// What one engine's STATUS register says, as a dump state.
fn dump_state(raw: u32) -> u32 {
    if raw == u32::MAX {
        return tdrdump::ENGINE_UNKNOWN;
    }
    match EngineStatus::from_reg(raw) {
        None => tdrdump::ENGINE_UNKNOWN,
        Some(s) if s.held => tdrdump::ENGINE_RESET,
        Some(s) => match s.state {
            EngineState::Hung => tdrdump::ENGINE_HUNG,
            EngineState::Resetting => tdrdump::ENGINE_RESET,
            EngineState::Active if s.has_work => tdrdump::ENGINE_RUNNING,
            EngineState::Active | EngineState::Idle | EngineState::TransitionToF1 => {
                tdrdump::ENGINE_IDLE
            }
        },
    }
}

/// The record of engine `e`. `sched`: the scheduler state if its lock was free; `payload`: the
/// OS's engine-timeout payload.
fn engine_record<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    sched: Option<&Sched>,
    e: u32,
    payload: Option<&DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>,
) -> TdrDumpEngine {
    let r = &live.regs;
    let status = r.read_at::<regs::EngineStatusReg>(e).raw();
    let mut d = TdrDumpEngine {
        node: e,
        state: dump_state(status),
        status,
        resets: a.tdr.resets(e),
        ..TdrDumpEngine::default()
    };
    // The queue the record is about, whether it is guilty, and a read pointer the device
    // reported for it.
    let current = r.read_at::<regs::CurrentQueue>(e).raw();
    // The OS timed this node out: the packet in flight did not finish in time, even if the
    // device's own hang detection has not fired yet.
    let timed_out = payload.is_some_and(|p| p.NodeOrdinal == e);
    let (queue, guilty, rptr) = match (d.state, a.tdr.last_reset_done(e)) {
        (tdrdump::ENGINE_HUNG, _) => (current, true, None),
        (tdrdump::ENGINE_RUNNING, _) if timed_out => (current, true, None),
        (tdrdump::ENGINE_RESET, Some(x))
            if x.queue != NO_QUEUE && x.result == ResetResult::Ok as u32 =>
        {
            (x.queue, true, Some(x.rptr))
        }
        _ => (current, false, None),
    };
    if queue == NO_QUEUE {
        return d;
    }
    d.queue_id = queue;
    d.valid |= tdrdump::VALID_QUEUE;
    if guilty {
        d.valid |= tdrdump::VALID_GUILTY;
    }
    if let Some(p) = rptr {
        d.read_ptr = p;
        d.valid |= tdrdump::VALID_READ_PTR;
    }
    let Some(s) = sched else {
        return d;
    };
    if s.nodes.queue_id(e) == Some(queue) {
        // The node ring: the OS's own fence IDs for the node it timed out.
        if let Some(n) = s.nodes.entry(e) {
            d.ring_base = n.ring_base.get();
            d.ring_size = n.ring_size;
            d.valid |= tdrdump::VALID_RING;
        }
        if let Some(p) = payload.filter(|p| p.NodeOrdinal == e) {
            d.last_submitted = p.LastHwSubmittedFenceId;
            d.last_completed = p.LastHwCompletedFenceId;
            d.valid |= tdrdump::VALID_SUBMITTED | tdrdump::VALID_COMPLETED;
        }
    } else if let Some(q) = s.queues.values().find(|q| q.id == queue && q.engine == e) {
        d.queue_handle = q.os_handle as u64;
        d.context_handle = crate::reset::context_handle(s, q.context).unwrap_or(0) as u64;
        d.valid |= tdrdump::VALID_HANDLES;
        if let Some(ring) = q.ring {
            d.ring_base = ring.base.get();
            d.ring_size = ring.size;
            d.valid |= tdrdump::VALID_RING;
        }
        if let Some(k) = &q.kernel {
            if rptr.is_none() {
                if let Some(p) = k.read_ptr() {
                    d.read_ptr = p;
                    d.valid |= tdrdump::VALID_READ_PTR;
                }
            }
            d.write_ptr = k.write_ptr;
            d.last_submitted = q.last_submitted;
            d.valid |= tdrdump::VALID_WRITE_PTR | tdrdump::VALID_SUBMITTED;
        }
        // The OS's kernel mapping of the queue's progress fence value: the caller holds the
        // scheduler lock, under which the queue cannot be destroyed.
        if let Some(v) = q.progress_cpu.load(Ordering::Acquire) {
            d.last_completed = v;
            d.valid |= tdrdump::VALID_COMPLETED;
        }
    }
    let known = tdrdump::VALID_GUILTY | tdrdump::VALID_RING | tdrdump::VALID_READ_PTR;
    if d.valid & known == known {
        if let Some(off) = d.read_ptr.checked_rem(u64::from(d.ring_size)) {
            d.hung_gpu_va = d.ring_base.wrapping_add(off);
            d.valid |= tdrdump::VALID_HUNG_VA;
        }
    }
    d
}

/// DxgkDdiCollectDbgInfo2 (level 0, PASSIVE for the TDR reasons): the dump record of
/// [`rvgpu_hw::tdrdump`], one engine record per node that fits in `BufferSize`.
///
/// Sources, none of which waits: the engine registers, the [`crate::reset::TdrLog`] atomics,
/// and the scheduler state only if its lock is free now (`try_lock`, at DISPATCH_LEVEL or
/// below; held elsewhere, the header says [`tdrdump::DUMP_SCHED_BUSY`] and the records carry
/// what the registers say). Under it: the queue's OS handles, ring, the KMD's ring pointers of
/// a kernel-mode queue, its last submitted value, and its progress fence through the OS's
/// kernel mapping.
///
/// The payload's `hContext` stays NULL: 24H2 follows it as an object of its own
/// (`TdrCollectDbgInfoStage1` @0x140368AC0), and the KMD's context handles are its own.
///
/// A buffer too small for the header gets nothing and `STATUS_UNSUCCESSFUL`; one that holds
/// fewer records than engines gets those and [`tdrdump::DUMP_TRUNCATED`]. An adapter not
/// started gets a header with no engines.
pub(crate) fn collect2<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_COLLECTDBGINFO2,
    buf: Option<&mut [u8]>,
    payload: Option<&DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>,
) -> Result<(), Status> {
    keep_for_test_hooks(a, args.Reason);
    let buf = buf.ok_or(status::UNSUCCESSFUL)?;
    let live = a.live();
    let header_size = usize::from(tdrdump::HEADER_SIZE);
    let record_size = usize::from(tdrdump::RECORD_SIZE);
    let room = buf
        .len()
        .checked_sub(header_size)
        .and_then(|n| n.checked_div(record_size))
        .ok_or(status::UNSUCCESSFUL)?;
    // Not started: a header with no engines.
    let engines = live.map_or(0, |l| l.identity.config.engines.min(ENGINE_MAX));
    let engines = u16::try_from(engines).unwrap_or(0);
    let records = u16::try_from(room).unwrap_or(u16::MAX).min(engines);
    let payload = payload.filter(|_| args.TdrType == DXGK_TDR_TYPE_ENGINE_TIMEOUT);
    let sched = live
        .filter(|_| P::current_irql() <= Irql::Dispatch)
        .and_then(|l| l.sched.try_lock());
    let mut flags = 0;
    if live.is_some() && sched.is_none() {
        flags |= tdrdump::DUMP_SCHED_BUSY;
    }
    if records < engines {
        flags |= tdrdump::DUMP_TRUNCATED;
    }
    let named = payload.map_or(NO_NODE, |p| p.NodeOrdinal);
    let h = TdrDumpHeader {
        magic: tdrdump::TDR_DUMP_MAGIC,
        version: tdrdump::TDR_DUMP_VERSION,
        header_size: tdrdump::HEADER_SIZE,
        record_size: tdrdump::RECORD_SIZE,
        engine_count: engines,
        records,
        flags,
        reason: args.Reason,
        tdr_type: args.TdrType,
        timed_out_node: named,
        engine_resets: u32::try_from(a.tdr.engine_resets.load(Ordering::Relaxed))
            .unwrap_or(u32::MAX),
    };
    let (head, rest) = buf
        .split_at_mut_checked(header_size)
        .ok_or(status::UNSUCCESSFUL)?;
    head.copy_from_slice(h.as_bytes());
    if let Some(live) = live {
        for (e, out) in (0..u32::from(records)).zip(rest.chunks_exact_mut(record_size)) {
            out.copy_from_slice(engine_record(a, live, sched.as_deref(), e, payload).as_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_states_come_from_the_status_register() {
        let reg = |state, has_work, held| {
            EngineStatus {
                state,
                has_work,
                held,
            }
            .to_reg()
        };
        // (state, has work, held) -> the dump's engine state.
        for (state, has_work, held, want) in [
            (EngineState::Hung, true, false, tdrdump::ENGINE_HUNG),
            (EngineState::Active, true, false, tdrdump::ENGINE_RUNNING),
            (EngineState::Active, false, false, tdrdump::ENGINE_IDLE),
            (EngineState::Idle, true, true, tdrdump::ENGINE_RESET),
            (EngineState::Resetting, false, false, tdrdump::ENGINE_RESET),
        ] {
            assert_eq!(
                dump_state(reg(state, has_work, held)),
                want,
                "{state:?}, has_work {has_work}, held {held}"
            );
        }
        assert_eq!(dump_state(u32::MAX), tdrdump::ENGINE_UNKNOWN);
        assert_eq!(dump_state(0xF), tdrdump::ENGINE_UNKNOWN);
        let progress_value = |va| crate::dma::OsWord::for_test(va).load(Ordering::Acquire);
        assert_eq!(progress_value(0), None);
        assert_eq!(progress_value(0x1001), None, "misaligned");
    }

    #[test]
    fn truncates_and_terminates() {
        let mut b = [0xAAu8; 8];
        let mut w = Truncating::new(&mut b);
        write!(w, "0123456789").unwrap();
        assert_eq!(w.len(), 8);
        w.terminate();
        assert_eq!(&b, b"0123456\0");
        let mut b = [0xAAu8; 8];
        let mut w = Truncating::new(&mut b);
        write!(w, "ab").unwrap();
        w.terminate();
        assert_eq!(&b[..3], b"ab\0");
        let mut empty: [u8; 0] = [];
        let mut w = Truncating::new(&mut empty);
        write!(w, "x").unwrap();
        w.terminate();
        assert!(w.is_empty());
    }
}
