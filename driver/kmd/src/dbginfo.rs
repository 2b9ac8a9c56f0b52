//! `DxgkDdiCollectDbgInfo`: the driver's part of a debug report (TDR-01).
//!
//! Zero-level synchronisation [l0]: any thread may be inside any other DDI at the same time,
//! including `DxgkDdiResetEngine` on another thread, and for reasons other than the two TDR
//! codes the IRQL is undefined ("can be called at any time and at high IRQL"). For
//! `VIDEO_TDR_TIMEOUT_DETECTED` (0x117) and `VIDEO_ENGINE_TIMEOUT_DETECTED` (0x141) it is
//! PASSIVE_LEVEL [l0], [cdi]. So this reads **registers and atomics only**: no spin lock (the
//! scheduler lock is held across a reset), no `DxgkCbSynchronizeExecution` (the node rings'
//! bookkeeping lives under the interrupt lock), no allocation, no callback. It writes at most
//! `BufferSize` bytes of ASCII text and leaves `pExtension` untouched.
//!
//! Report format (one `key=value` line per item, stable for tooling):
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
use rvgpu_hw::regs;

use crate::adapter::Adapter;
use crate::platform::Platform;
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

/// Writes the report for `reason` into the OS's buffer, then `more` (a line of the caller's),
/// truncating at its end and NUL-terminating. `buf` is the OS's `pBuffer`/`BufferSize`
/// (`None`: null with a non-zero size); an empty buffer gets nothing.
fn write_into<P: Platform>(
    a: &Adapter<P>,
    reason: u32,
    buf: Option<&mut [u8]>,
    more: impl FnOnce(&mut Truncating<'_>) -> fmt::Result,
) -> Result<(), Status> {
    let buf = buf.ok_or(status::INVALID_PARAMETER)?;
    if buf.is_empty() {
        // Nothing can be written; the OS simply gets no driver text.
        return Ok(());
    }
    let mut w = Truncating::new(buf);
    // Truncation is not an error: the writer never fails.
    let _ = report(a, reason, &mut w).and_then(|()| more(&mut w));
    w.terminate();
    Ok(())
}

/// DxgkDdiCollectDbgInfo (level 0; PASSIVE for 0x117/0x141, any IRQL otherwise).
pub(crate) fn collect<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_COLLECTDBGINFO,
    buf: Option<&mut [u8]>,
) -> Result<(), Status> {
    write_into(a, args.Reason, buf, |_| Ok(()))
}

/// DxgkDdiCollectDbgInfo2 (level 0, as [`collect`]): the same report, then what the OS says
/// of the timeout. For `DXGK_TDR_TYPE_ENGINE_TIMEOUT` the payload names the node and, for a
/// hardware-scheduled one, the outstanding suspends and ready interactive queues, in a line
/// `tdr type=6 node=… engine=… completed=… submitted=… suspends=… ready=…`. `hContext` stays
/// NULL: which context hung is known only under the scheduler lock, which level 0 must not
/// take. A NULL or short payload (the page allows it) gives `tdr type=N` alone.
pub(crate) fn collect2<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_COLLECTDBGINFO2,
    buf: Option<&mut [u8]>,
    payload: Option<&DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>,
) -> Result<(), Status> {
    write_into(a, args.Reason, buf, |w| match payload {
        Some(p) if args.TdrType == DXGK_TDR_TYPE_ENGINE_TIMEOUT => writeln!(
            w,
            "tdr type={} node={} engine={} completed={:#x} submitted={:#x} suspends={} ready={}",
            args.TdrType,
            p.NodeOrdinal,
            p.EngineOrdinal,
            p.LastHwCompletedFenceId,
            p.LastHwSubmittedFenceId,
            p.NumberOfPendingSuspendRequests,
            p.NumberOfReadyInteractiveHwQueues
        ),
        _ => writeln!(w, "tdr type={}", args.TdrType),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
