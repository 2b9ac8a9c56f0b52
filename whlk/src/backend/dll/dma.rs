//! [`DmaContexts`] through rvgpu_umd.dll's C API: `rvgpu_context_create` on the process's
//! adapter, `rvgpu_context_submit` of the work encoded as the queue submissions encode it,
//! `rvgpu_context_destroy` when the process closes.
//!
//! An application learns no fence ID from `D3DKMTSubmitCommand`; the cases compare VidSch's
//! IDs, so the harness reads the one the submission got from the OS's record (the
//! [`TdrTrace`] view every DLL session has): the node's last submitted ID, which the call
//! must have advanced, of a DMA buffer of this process's device. On a hardware-scheduled node
//! 24H2 takes no DMA buffer from `D3DKMTSubmitCommand` (a context there is created with
//! `HwQueueSupported`); the DLL submits to the context's kernel-mode hardware queue
//! (`D3DKMTSubmitCommandToHwQueue`), which gets no VidSch fence ID: the OS's record must show
//! the queue's submission, and the ID returned is 0, as a Windows backend's.

use super::state::DContext;
use super::DllSession;
use crate::backend::{ContextRef, DmaContexts, Failure, ProcessRef, TdrTrace, Work};
use rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS;
use rvgpu_simos::{Machine, UmsEvent};

/// Whether node `node` of adapter `i` is hardware-scheduled (`ContextSchedulingSupported` in
/// the metadata the driver reported, what `D3DKMTQueryAdapterInfo(KMTQAITYPE_NODEMETADATA)`
/// passes on).
fn hardware_scheduled(m: &Machine, i: usize, node: u32) -> bool {
    m.node_metadata(i).get(node as usize).is_some_and(|md| {
        let flags = md.Flags;
        flags.is_set(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported)
    })
}

/// Kernel-mode hardware-queue submissions the OS recorded on adapter `i` (held ones too).
fn queue_submissions(m: &Machine, i: usize) -> usize {
    m.ums_events(i)
        .iter()
        .filter(|e| matches!(e, UmsEvent::Submit { .. } | UmsEvent::SubmitHeld { .. }))
        .count()
}

impl DllSession {
    /// Destroys process `p`'s live contexts (before its adapter closes); the first failure.
    pub(crate) fn destroy_contexts_of(&mut self, p: usize) -> Result<(), Failure> {
        let mut first = Ok(());
        let live: Vec<u64> = self
            .dma
            .iter_mut()
            .filter(|c| c.process == p)
            .filter_map(|c| c.handle.take())
            .collect();
        for h in live {
            let r = self.ok(p, "rvgpu_context_destroy", &[h]);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

impl DmaContexts for DllSession {
    fn node_hw_scheduled(&mut self, p: ProcessRef, node: u32) -> Result<bool, Failure> {
        let adapter = self
            .processes
            .get(p.0)
            .map(|d| d.adapter)
            .ok_or_else(|| Failure::Backend(format!("no process {}", p.0)))?;
        Ok(hardware_scheduled(self.machine(), adapter, node))
    }

    fn create_context(&mut self, p: ProcessRef, node: u32) -> Result<ContextRef, Failure> {
        let c = self.create_on_adapter(p.0, "rvgpu_context_create", &[u64::from(node)])?;
        self.dma.push(DContext {
            process: p.0,
            handle: Some(c),
            node,
        });
        Ok(ContextRef(self.dma.len() - 1))
    }

    fn submit_dma(&mut self, c: ContextRef, work: &[Work]) -> Result<u32, Failure> {
        let d = self
            .dma
            .get(c.0)
            .ok_or_else(|| Failure::Backend(format!("no context {}", c.0)))?;
        let (p, node) = (d.process, d.node);
        let h = d
            .handle
            .ok_or_else(|| Failure::Backend(format!("context {} is destroyed", c.0)))?;
        let adapter = self
            .processes
            .get(p)
            .map(|d| d.adapter)
            .ok_or_else(|| Failure::Backend(format!("no process {p}")))?;
        let cmds = crate::backend::encode_work(work, |b, o, n| self.buffer_address(b, o, n))?;
        let dwords = super::dwords(&cmds)?;
        let args = [h, dwords.as_ptr() as u64, dwords.len() as u64];
        if hardware_scheduled(self.machine(), adapter, node) {
            let before = queue_submissions(self.machine(), adapter);
            self.ok(p, "rvgpu_context_submit", &args)?;
            if queue_submissions(self.machine(), adapter) == before {
                return Err(Failure::Backend(format!(
                    "rvgpu_context_submit succeeded but node {node} (hardware-scheduled) \
                     recorded no hardware-queue submission"
                )));
            }
            return Ok(0);
        }
        let (before, _) = self.dma_fences(adapter, node)?;
        self.ok(p, "rvgpu_context_submit", &args)?;
        let (id, _) = self.dma_fences(adapter, node)?;
        if id == before {
            return Err(Failure::Backend(format!(
                "rvgpu_context_submit succeeded but node {node}'s fence ID stayed {id}"
            )));
        }
        let device = self.os_device(p)?.device;
        let other = self
            .machine()
            .legacy_in_flight(adapter, node)
            .into_iter()
            .find(|&(f, _, dev)| f == id && dev != Some(device));
        if let Some((_, paging, dev)) = other {
            return Err(Failure::Backend(format!(
                "node {node}'s last fence ID {id} is not this context's DMA buffer (paging \
                 {paging}, device {dev:?})"
            )));
        }
        Ok(id)
    }
}
