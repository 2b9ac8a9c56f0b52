//! The [`DmaContexts`] capability: kernel-mode contexts and their DMA buffers.

use crate::backend::common::Failure;

use super::user_mode::{ProcessRef, Work};

/// A kernel-mode ("legacy") context of a process on one node (`D3DKMTCreateContext` without
/// hardware queues): its DMA buffers go through `DxgkDdiSubmitCommand` with VidSch's fence IDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContextRef(pub usize);

/// Kernel-mode ("legacy") contexts and their DMA buffers, which the TDR cases hang and
/// recover. A Windows backend has them through `D3DKMTCreateContextVirtual` (no hardware
/// queue) and `D3DKMTSubmitCommand`.
pub trait DmaContexts {
    /// A kernel-mode context of `p` on `node` (`D3DKMTCreateContext`, TDR-02: the node must be
    /// one of the adapter's).
    fn create_context(&mut self, p: ProcessRef, node: u32) -> Result<ContextRef, Failure>;

    /// Submits `work` as one DMA buffer of the context (`DxgkDdiSubmitCommand`); returns
    /// VidSch's fence ID. No thunk returns it: the D3DKMT backend returns the fence ID of the
    /// KMD's journal record of that DMA buffer ([`KmdJournal`](crate::backend::caps::KmdJournal), its `Submit` record whose GPU VA
    /// is the buffer's), 0 where it has no journal. A device in error:
    /// `DdiFailed(STATUS_DEVICE_REMOVED)`.
    fn submit_dma(&mut self, c: ContextRef, work: &[Work]) -> Result<u32, Failure>;

    /// Whether `node` of process `p`'s adapter is hardware-scheduled, as the process reads it
    /// (`KMTQAITYPE_NODEMETADATA`'s `ContextSchedulingSupported`): a DMA context there has no
    /// `D3DKMTSubmitCommand` and no `DxgkDdiResetEngine`. Default: unsupported.
    fn node_hw_scheduled(&mut self, p: ProcessRef, node: u32) -> Result<bool, Failure> {
        let _ = (p, node);
        Err(Failure::Unsupported("KMTQAITYPE_NODEMETADATA".into()))
    }
}
