//! What the UMD learns of a node before it creates a context on it, as a runtime does: whether
//! the node is hardware-scheduled. `D3DKMTQueryAdapterInfo(KMTQAITYPE_NODEMETADATA)` answers
//! with the driver's `DXGK_NODEMETADATA`, whose `Flags.ContextSchedulingSupported` says so
//! (24H2 `K:DxgkQueryAdapterInfoImpl` @0x140383210 hands it on unchanged).
//!
//! It decides two things. The context's `D3DDDI_CREATECONTEXTFLAGS::HwQueueSupported`: 24H2
//! `K:DXGCONTEXT::Initialize` @0x1402CFD80 refuses a context without it on a
//! hardware-scheduled node and one with it on any other node (STATUS_UNSUCCESSFUL both). And how
//! a kernel-mode DMA context submits ([`crate::dma`]): `D3DKMTSubmitCommand` refuses a context
//! created with `HwQueueSupported` (`K:DxgkSubmitCommandInternal` @0x1402A4B90), so on a
//! hardware-scheduled node the work goes to a hardware queue of the context.
//!
//! The answer does not change while the adapter is open, so each implementation of
//! [`Kmt::node_hw_scheduled`](crate::kmt::Kmt::node_hw_scheduled) asks once per node and keeps
//! it ([`NodeScheduling`]).

use core::sync::atomic::{AtomicU64, Ordering};

use crate::kmt::{NtStatus, STATUS_INVALID_PARAMETER};

/// `KMTQAITYPE_NODEMETADATA`.
pub const KMTQAITYPE_NODEMETADATA: u32 = 25;

/// `sizeof(D3DKMT_NODEMETADATA)` (d3dkmthk.h, packed): `NodeOrdinalAndAdapterIndex` (4 bytes)
/// and `NodeData`, a `DXGK_NODEMETADATA` (74 bytes).
pub const NODEMETADATA_SIZE: usize = 78;

/// Offset of `NodeData.Flags` in `D3DKMT_NODEMETADATA`: after `NodeOrdinalAndAdapterIndex`,
/// `EngineType` (4) and `FriendlyName` (32 WCHARs).
const FLAGS_AT: usize = 4 + 4 + 64;

/// `DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported` (bit 0).
const CONTEXT_SCHEDULING_SUPPORTED: u32 = 1;

/// `D3DDDI_CREATECONTEXTFLAGS::HwQueueSupported` (bit 4).
pub const HW_QUEUE_SUPPORTED: u32 = 1 << 4;

/// The `D3DKMT_NODEMETADATA` to pass for `node` of the first (only) physical adapter:
/// `NodeOrdinalAndAdapterIndex` is the node in the low 16 bits, the adapter index above. A node
/// that does not fit 16 bits is `STATUS_INVALID_PARAMETER`.
pub fn node_metadata_request(node: u32) -> Result<[u8; NODEMETADATA_SIZE], NtStatus> {
    if node > 0xFFFF {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let mut md = [0u8; NODEMETADATA_SIZE];
    if let Some(d) = md.get_mut(..4) {
        d.copy_from_slice(&node.to_le_bytes());
    }
    Ok(md)
}

/// Whether the answered `D3DKMT_NODEMETADATA` says the node is hardware-scheduled.
pub fn context_scheduling(md: &[u8; NODEMETADATA_SIZE]) -> bool {
    md.get(FLAGS_AT..FLAGS_AT + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .is_some_and(|b| u32::from_le_bytes(b) & CONTEXT_SCHEDULING_SUPPORTED != 0)
}

/// The `D3DDDI_CREATECONTEXTFLAGS` of a context on a node that is `hw_scheduled` or not.
pub fn context_flags(hw_scheduled: bool) -> u32 {
    if hw_scheduled {
        HW_QUEUE_SUPPORTED
    } else {
        0
    }
}

/// What the UMD learnt of the first 64 nodes of one adapter: asked once per node, kept for the
/// device's life. A node from 64 up is asked every time (no adapter of this driver has one).
#[derive(Debug, Default)]
pub struct NodeScheduling {
    /// Bit `n`: node `n` was asked.
    known: AtomicU64,
    /// Bit `n`: node `n` is hardware-scheduled.
    scheduled: AtomicU64,
}

impl NodeScheduling {
    /// Nothing learnt yet.
    pub const fn new() -> Self {
        Self {
            known: AtomicU64::new(0),
            scheduled: AtomicU64::new(0),
        }
    }

    /// Whether `node` is hardware-scheduled: what was learnt, or `query`'s answer, kept. A
    /// failed query is returned and nothing is kept.
    pub fn get(
        &self,
        node: u32,
        query: impl FnOnce() -> Result<bool, NtStatus>,
    ) -> Result<bool, NtStatus> {
        let Some(bit) = 1u64.checked_shl(node) else {
            return query();
        };
        if self.known.load(Ordering::Acquire) & bit != 0 {
            return Ok(self.scheduled.load(Ordering::Relaxed) & bit != 0);
        }
        let hw = query()?;
        if hw {
            self.scheduled.fetch_or(bit, Ordering::Relaxed);
        }
        self.known.fetch_or(bit, Ordering::Release);
        Ok(hw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    /// UM-03: the node's scheduling is read from `NodeData.Flags` bit 0 of the 78-byte
    /// `D3DKMT_NODEMETADATA`, asked once per node and kept; a failed query is not kept; a node
    /// past 16 bits is refused before any query.
    #[test]
    fn um_03_node_scheduling_read_from_node_metadata_once_per_node() {
        let mut md = node_metadata_request(3).expect("node 3");
        assert_eq!(md[..4], 3u32.to_le_bytes());
        assert!(!context_scheduling(&md));
        md[72] = 1;
        assert!(context_scheduling(&md));
        md[72] = 0b1110;
        assert!(!context_scheduling(&md), "other flag bits");
        assert_eq!(
            node_metadata_request(0x1_0000),
            Err(STATUS_INVALID_PARAMETER)
        );
        assert_eq!(context_flags(true), HW_QUEUE_SUPPORTED);
        assert_eq!(context_flags(false), 0);

        let n = NodeScheduling::new();
        let asked = Cell::new(0);
        let ask = |hw: bool| {
            asked.set(asked.get() + 1);
            Ok(hw)
        };
        assert_eq!(n.get(0, || ask(true)), Ok(true));
        assert_eq!(n.get(0, || ask(false)), Ok(true), "kept");
        assert_eq!(n.get(1, || ask(false)), Ok(false));
        assert_eq!(n.get(1, || ask(true)), Ok(false), "kept");
        assert_eq!(asked.get(), 2);
        assert_eq!(
            n.get(2, || Err(STATUS_INVALID_PARAMETER)),
            Err(STATUS_INVALID_PARAMETER)
        );
        assert_eq!(n.get(2, || ask(true)), Ok(true), "a failure is not kept");
        assert_eq!(n.get(64, || ask(true)), Ok(true));
        assert_eq!(
            n.get(64, || ask(false)),
            Ok(false),
            "past 63: asked each time"
        );
    }
}
