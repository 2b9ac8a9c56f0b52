//! What a Windows program has of detection and recovery beyond the device state: kernel-mode
//! DMA contexts (`D3DKMTCreateContextVirtual` without a hardware queue, `D3DKMTSubmitCommand`),
//! and the KMD's test hooks (`rvgpu_hw::testhooks`, a driver-private `D3DKMTEscape`): the
//! journal of what the KMD saw, the text of its last `DxgkDdiCollectDbgInfo`, faults armed in
//! its recovery path (the calls themselves, which another process's server makes too, are
//! `kmd_calls`). The hooks answer only where the device's software key holds
//! `TestHooks` = 1, which the runbook has the tester set (and [`super::sim`] sets, as the tester
//! would).
//!
//! No thunk returns VidSch's fence ID of a DMA buffer: the fence ID [`DmaContexts::submit_dma`]
//! returns is the one of the journal's `Submit` record whose GPU VA is that DMA buffer's (each
//! submission gets a command buffer of its own, so the VA names one submission).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rvgpu_hw::cmd::Command;
use rvgpu_hw::testhooks::{JournalKind, JournalRecord, TestHookOp, JOURNAL_RESUBMISSION};
use rvgpu_umd::kmt::{
    Kmt, NtStatus, STATUS_DEVICE_REMOVED, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE,
};

use super::kmd_calls::{arm, next_seq, read_dbg_info, read_journal, submit_words, thunks};
use super::state::DmaCtx;
use super::sync::TestThunks;
use super::{KmtSession, KmtSync};
use crate::backend::{
    nth, ContextRef, DmaContexts, Failure, KmdFaults, KmdJournal, ProcessRef, Work,
};

/// How long a DMA buffer may take to reach the KMD after `D3DKMTSubmitCommand` returned
/// (VidSch hands it on from its own thread): a recovery on the node, at most.
const SUBMIT_SEEN: Duration = Duration::from_secs(10);

/// The packets of `cmds` as words.
fn words(cmds: &[Command]) -> Result<Vec<u64>, Failure> {
    let mut out = Vec::new();
    let mut w = [0u64; 8];
    for c in cmds {
        let n = c
            .encode(&mut w)
            .ok_or_else(|| Failure::Backend(format!("{c:?} does not fit a packet")))?;
        out.extend_from_slice(&w[..n]);
    }
    Ok(out)
}

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    /// The device of adapter `i` this program sends test-hook escapes on.
    fn hooks_device(&mut self, i: usize) -> Result<Arc<K>, Failure> {
        self.started(i)?;
        if let Some(Some(k)) = self.hooks.devices.get(i) {
            return Ok(k.clone());
        }
        let k = self.machine.open_hooks_device(i)?;
        if self.hooks.devices.len() <= i {
            self.hooks.devices.resize_with(i + 1, || None);
        }
        self.hooks.devices[i] = Some(k.clone());
        Ok(k)
    }

    /// Runs `f` on adapter `i`'s test-hook device. An adapter-wide recovery resets every
    /// device (24H2's `K:ADAPTER_RENDER::Reset` @0x1403F2C34), after which the escape answers
    /// STATUS_DEVICE_REMOVED: the program recovers as a Windows application does, with a new
    /// device, and asks that one.
    pub(super) fn on_hooks_device<T>(
        &mut self,
        i: usize,
        mut f: impl FnMut(&dyn TestThunks) -> Result<T, NtStatus>,
    ) -> Result<T, Failure> {
        let k = self.hooks_device(i)?;
        match f(thunks(&*k)?) {
            Err(s) if s == STATUS_DEVICE_REMOVED => {
                if let Some(slot) = self.hooks.devices.get_mut(i) {
                    *slot = None;
                }
                let k = self.hooks_device(i)?;
                f(thunks(&*k)?).map_err(|s| self.status(s))
            }
            r => r.map_err(|s| self.status(s)),
        }
    }

    /// VidSch's refusal of work for a device in error is the device lost, as the UMD reads it.
    fn dma_status(&self, s: NtStatus) -> Failure {
        self.status(if s == STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE {
            STATUS_DEVICE_REMOVED
        } else {
            s
        })
    }

    /// The fence ID of the first `Submit` record from `from` of the DMA buffer at `gpu_va` on
    /// adapter `i` (not a resubmission), once the KMD has seen it. `from` is taken before the
    /// submission: another process's command buffer may have had the same GPU VA before.
    fn fence_of(&mut self, i: usize, gpu_va: u64, from: u64) -> Result<u32, Failure> {
        let start = Instant::now();
        let mut from = from;
        loop {
            let recs = self.kmd_journal(i, from)?;
            if let Some(r) = recs.iter().find(|r| {
                r.kind == JournalKind::Submit as u16
                    && r.b == gpu_va
                    && r.flags & JOURNAL_RESUBMISSION == 0
            }) {
                return u32::try_from(r.a).map_err(|_| {
                    Failure::Backend(format!("journal: fence ID {:#x} past 32 bits", r.a))
                });
            }
            if let Some(last) = recs.last() {
                from = u64::from(last.seq) + 1;
            }
            if start.elapsed() > SUBMIT_SEEN {
                return Err(Failure::Backend(format!(
                    "the KMD's journal has no Submit of the DMA buffer at {gpu_va:#x} after \
                     {SUBMIT_SEEN:?}"
                )));
            }
            self.check_fault()?;
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The journal and the last `DxgkDdiCollectDbgInfo` text, through the escape.
impl<K: KmtSync + Send + Sync + 'static> KmdJournal for KmtSession<K> {
    fn kmd_journal(&mut self, i: usize, from: u64) -> Result<Vec<JournalRecord>, Failure> {
        self.on_hooks_device(i, |t| read_journal(t, from))
    }

    fn last_dbg_info(&mut self, i: usize) -> Result<(u64, String), Failure> {
        self.on_hooks_device(i, read_dbg_info)
    }

    /// On the device of the queue's process (`super::logs`).
    fn kmd_queue_log(
        &mut self,
        q: crate::backend::UmQueueRef,
        kind: crate::backend::LogKind,
    ) -> Result<Option<Vec<u8>>, Failure> {
        self.queue_log(q, kind)
    }
}

/// Arming a fault through the escape.
impl<K: KmtSync + Send + Sync + 'static> KmdFaults for KmtSession<K> {
    fn arm_kmd_fault(&mut self, i: usize, op: TestHookOp, node: u32) -> Result<(), Failure> {
        let mut refused = None;
        let r = self.on_hooks_device(i, |t| {
            arm(t, op, node).or_else(|e| match e {
                Failure::DdiFailed(s) => Err(NtStatus(s)),
                other => {
                    refused = Some(other);
                    Ok(())
                }
            })
        });
        refused.map_or(r, Err)
    }
}

/// DMA contexts through the thunks: this program's, and another process's forwarded to it.
impl<K: KmtSync + Send + Sync + 'static> DmaContexts for KmtSession<K> {
    fn create_context(&mut self, p: ProcessRef, node: u32) -> Result<ContextRef, Failure> {
        let adapter = nth(&self.processes, p.0, "process")?.adapter;
        let ctx = if let Some(r) = self.remote(p.0)? {
            r.create_dma_context(self.hooks.contexts.len(), node)?;
            DmaCtx {
                adapter,
                local: None,
                remote: Some(p.0),
            }
        } else {
            let (_, kmt) = self.process(p)?;
            if kmt.node_hw_scheduled(node).map_err(|s| self.status(s))? {
                return Err(Failure::Backend(format!(
                    "node {node} is hardware-scheduled: D3DKMTSubmitCommand refuses its contexts"
                )));
            }
            let h = kmt.create_context(node).map_err(|s| self.status(s))?;
            DmaCtx {
                adapter,
                local: Some((kmt, (h, Vec::new()))),
                remote: None,
            }
        };
        self.hooks.contexts.push(ctx);
        Ok(ContextRef(self.hooks.contexts.len() - 1))
    }

    fn submit_dma(&mut self, c: ContextRef, work: &[Work]) -> Result<u32, Failure> {
        let w = words(&self.encode(work)?)?;
        let adapter = nth(&self.hooks.contexts, c.0, "context")?.adapter;
        let k = self.hooks_device(adapter)?;
        let from = next_seq(thunks(&*k)?).map_err(|s| self.status(s))?;
        let ctx = nth(&self.hooks.contexts, c.0, "context")?;
        let va = match (&ctx.local, ctx.remote) {
            (Some((kmt, (h, _))), _) => {
                let (kmt, h) = (kmt.clone(), *h);
                let cb = submit_words(&*kmt, h, &w).map_err(|s| self.dma_status(s))?;
                let va = cb.gpu_va;
                if let Some((_, (_, cbs))) = self
                    .hooks
                    .contexts
                    .get_mut(c.0)
                    .and_then(|x| x.local.as_mut())
                {
                    cbs.push(cb);
                }
                va
            }
            (None, Some(p)) => {
                let r = self
                    .remote(p)?
                    .ok_or_else(|| Failure::Backend(format!("process {p} has ended")))?;
                r.submit_dma(c.0, &w).map_err(|e| match e {
                    Failure::DdiFailed(s) => self.dma_status(NtStatus(s)),
                    other => other,
                })?
            }
            (None, None) => return Err(Failure::Backend(format!("context {} closed", c.0))),
        };
        self.fence_of(adapter, va, from)
    }

    fn node_hw_scheduled(&mut self, p: ProcessRef, node: u32) -> Result<bool, Failure> {
        let k = match self.process(p) {
            Ok((_, k)) => k,
            Err(_) => {
                let i = nth(&self.processes, p.0, "process")?.adapter;
                self.hooks_device(i)?
            }
        };
        k.node_hw_scheduled(node).map_err(|s| self.status(s))
    }
}
