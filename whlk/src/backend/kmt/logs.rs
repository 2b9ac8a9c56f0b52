//! The `Logs.*` cases' Windows form on the D3DKMT backend: native fences made through the UMD
//! ([`UmdFences`]: `D3DKMTCreateNativeFence`, the share / `DuplicateHandle` / open sequence,
//! `submit_ops` batches, CPU waits, CurrentValue through the process's CPU view), in this
//! program or forwarded to another process ([`super::remote`]), and a queue's log as the KMD
//! copies it through its test hooks (`TestHookOp::QueueLog`, a driver-private `D3DKMTEscape`),
//! sent on the device of the queue's own process: the KMD answers no other device, as no
//! program on Windows may read another's logs. What the OS does with a log (its drain, its
//! flushes, its fallback scans) stays out of sight here, as it is for a program on Windows.

use std::time::Duration;

use rvgpu_hw::log::{LOG_BUFFER_SIZE, LOG_TYPE_SIGNALS, LOG_TYPE_WAITS};
use rvgpu_umd::kmt::{FenceCpu, Kmt};

use super::kmd_calls::{read_queue_log, thunks};
use super::remote::RemoteOp;
use super::state::KmtFence;
use super::{KmtSession, KmtSync};
use crate::backend::app::{AppFence, AppUmd, FenceId, QueueOp};
use crate::backend::{
    nth, Failure, FenceRef, FenceWork, LogKind, ProcessRef, UmFenceRef, UmQueueRef, UmdFences,
    WaitResult,
};

/// `DXGK_NATIVE_FENCE_LOG_TYPE` of `kind`.
fn log_type(kind: LogKind) -> u32 {
    match kind {
        LogKind::Wait => LOG_TYPE_WAITS,
        LogKind::Signal => LOG_TYPE_SIGNALS,
    }
}

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    /// Queue `q`'s log of `kind` as the KMD copies it to the queue's own process (`None`: the
    /// queue has no such log).
    pub(super) fn queue_log(
        &mut self,
        q: UmQueueRef,
        kind: LogKind,
    ) -> Result<Option<Vec<u8>>, Failure> {
        let room = LOG_BUFFER_SIZE as usize;
        let (bytes, entries) = match self.remote_queue(q)? {
            Some(r) => r.queue_log(q.0, log_type(kind), room)?,
            None => {
                let k = self.queue(q)?;
                let id = k.q.as_ref().map_or(k.info.queue_id, |u| u.info().queue_id);
                let (_, kmt) = self.process(ProcessRef(k.process))?;
                let t = thunks(&*kmt)?;
                read_queue_log(t, id, log_type(kind), room).map_err(|s| self.status(s))?
            }
        };
        Ok((entries != 0).then_some(bytes))
    }

    /// The UMD fence `f`: its process and the seam's fence.
    fn um_fence(&self, f: UmFenceRef) -> Result<&AppFence<KmtFence>, Failure> {
        nth(&self.app.fences, f.0, "UMD fence")
    }

    /// Records `fence` of process `p` in the seam's fence table: its number.
    fn add_um_fence(&mut self, p: usize, fence: KmtFence) -> UmFenceRef {
        self.app.fences.push(AppFence {
            process: p,
            fence,
            destroyed: false,
        });
        UmFenceRef(self.app.fences.len() - 1)
    }
}

/// The UMD's native fences over the seam's fences ([`super::umd`]): a [`UmFenceRef`] is the
/// fence's number in the seam's table, so another process knows it by that number.
impl<K: KmtSync + Send + Sync + 'static> UmdFences for KmtSession<K> {
    fn create_um_fence(&mut self, p: ProcessRef, initial: u64) -> Result<UmFenceRef, Failure> {
        if let Some(r) = self.remote(p.0)? {
            let id = self.app.fences.len();
            r.create_fence(id, initial)?;
            return Ok(self.add_um_fence(p.0, KmtFence::There(id)));
        }
        let f = self.fence_create(p.0, initial, true)?;
        Ok(self.add_um_fence(p.0, f))
    }

    fn open_um_fence(&mut self, f: UmFenceRef, p: ProcessRef) -> Result<UmFenceRef, Failure> {
        let holder = self.um_fence(f)?.process;
        let id = FenceRef(self.app.fences.len());
        let mine = self.fence_open(holder, &self.um_fence(f)?.fence, p.0, id)?;
        Ok(self.add_um_fence(p.0, mine))
    }

    /// One `submit_ops` batch, in this program or in the queue's process; every fence must be
    /// the queue's process's.
    fn submit_fence_ops(&mut self, q: UmQueueRef, ops: &[FenceWork]) -> Result<u64, Failure> {
        let p = self.queue(q)?.process;
        for op in ops {
            if let FenceWork::Wait(f, _) | FenceWork::Signal(f, _) = *op {
                if self.um_fence(f)?.process != p {
                    return Err(Failure::Backend(
                        "the fence is not the queue's process's".into(),
                    ));
                }
            }
        }
        let mut cmds = Vec::with_capacity(ops.len());
        for op in ops {
            if let FenceWork::Work(w) = *op {
                match self.encode(&[w])?.as_slice() {
                    [c] => cmds.push(*c),
                    _ => return Err(Failure::Backend(format!("{w:?} is not one packet"))),
                }
            }
        }
        let mut packets = cmds.into_iter();
        let mut next_packet = || {
            packets
                .next()
                .ok_or_else(|| Failure::Backend("packet encoding".into()))
        };
        if let Some(r) = self.remote_queue(q)? {
            let mut remote = Vec::with_capacity(ops.len());
            for op in ops {
                remote.push(match *op {
                    FenceWork::Wait(f, v) => RemoteOp::Wait(f.0, v),
                    FenceWork::Signal(f, v) => RemoteOp::Signal(f.0, v),
                    FenceWork::Work(_) => RemoteOp::Cmd(next_packet()?),
                });
            }
            return r.submit_ops(q.0, &remote);
        }
        let mut list = Vec::with_capacity(ops.len());
        for op in ops {
            list.push(match *op {
                FenceWork::Wait(f, v) => QueueOp::Wait(FenceId::Native(f.0), v),
                FenceWork::Signal(f, v) => QueueOp::Signal(FenceId::Native(f.0), v),
                FenceWork::Work(_) => QueueOp::Cmd(next_packet()?),
            });
        }
        self.batch(q, &list)
    }

    fn wait_um_fence(
        &mut self,
        f: UmFenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let k = self.um_fence(f)?;
        self.fence_cpu_wait(k.process, &k.fence, value, timeout)
    }

    /// CurrentValue through the process's read-only CPU view of it.
    fn um_fence_value(&self, f: UmFenceRef) -> Result<u64, Failure> {
        let k = self.um_fence(f)?;
        match &k.fence {
            KmtFence::There(id) => self
                .remote(k.process)?
                .ok_or_else(|| Failure::Backend(format!("process {} has ended", k.process)))?
                .fence_value(*id),
            KmtFence::Here(n) => {
                let (_, kmt) = self.process(ProcessRef(k.process))?;
                let view = kmt.native_fence_cpu(n).map_err(|s| self.status(s))?;
                Ok(view.value())
            }
        }
    }
}
