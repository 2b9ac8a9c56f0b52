//! Node rings: the OS-scheduled ("legacy") submission path of every engine (docs/tdr.md#the-kmd;
//! TDR-03, TDR-04, TDR-06, TDR-07).
//!
//! Per node (engine) the KMD owns one kernel ring, a hardware queue of its own that sits
//! **first** in the engine's runlist at a priority above every HW queue
//! ([`NODE_RING_PRIORITY`]). It is fed only by `DxgkDdiSubmitCommand` (paging buffers built by
//! [`crate::paging`]) and `DxgkDdiSubmitCommandVirtual`. Each DMA buffer becomes
//! `INDIRECT(buffer)… + PROGRESS(PROGRESS_IRQ, SubmissionFenceId)`; the ring's progress fence
//! is a KMD-owned word `F`, so `F` is the node's last completed fence ID and the ISR reports
//! `DXGK_INTERRUPT_DMA_COMPLETED` from the `Progress` event ([`NodeRings::on_event`]).
//!
//! Fence bookkeeping (TDR-04), per node:
//! - `S`, last submitted: the highest `SubmissionFenceId` appended (IDs must increase);
//! - `C`, last completed: what the KMD reported. It advances **only** when a PROGRESS ran (the
//!   device runs a PROGRESS after an INDIRECT only if the buffer completed uninterrupted,
//!   hardware.md §6.2), after a successful ResetEngine to the returned `LastAbortedFenceId`
//!   ([`NodeRings::drain`]), and on an adapter reset to `S` ([`NodeRings::drain_all_completed`]);
//! - `F`, the fence word the device writes (what PROGRESS wrote last).
//!
//! Locking. The node state is written at DISPATCH (the submit DDIs) and read at device IRQL
//! (ISR, ResetEngine's snapshot), so [`NodeRings`] lives in [`crate::adapter::IsrState`] and is touched only
//! under the interrupt lock: in the ISR or through [`crate::adapter::Live::synchronized`]. Appending a
//! submission's words (≤ 50) happens inside that routine too. The scheduler lock is never taken
//! inside it (lock order: sched lock → interrupt lock). The descriptor of a node ring
//! (ring, control, fence addresses, id) is fixed at start and copied into
//! [`crate::sched::Sched::nodes`], so [`crate::runlist::build`] reads it without the interrupt
//! lock.
//!
//! Preemption is a drain (docs/tdr.md#the-kmd): the device has no mid-packet preemption, so
//! `DxgkDdiPreemptCommand` reports `DmaPreempted` at once when nothing is pending and otherwise
//! when the ring has drained; a hung ring never drains and the OS's preemption timeout starts
//! the TDR.

use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use rvgpu_hw::addr::GpuVa;

use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl, NO_DOORBELL};

use crate::dma::DmaBuffer;
use crate::dxgk::Dxgk;
use crate::handle::Handle;
use crate::hwqueue::{KernelRing, QueueIds};
use crate::interrupt::DeviceEvent;
use crate::kmem::{self, NoMemory};
use crate::platform::Platform;
use crate::status::{self, Status};
use crate::submit::{self, MAX_SUBMIT_BYTES};

pub mod ddi;
mod fences;
pub mod start;

pub use fences::{Completion, NodeFences, Pending};
/// Ring bytes of a node ring: 64 KiB, about 1,600 one-INDIRECT submissions.
pub const NODE_RING_BYTES: u32 = 64 * 1024;
/// Submissions one node ring tracks at once (fixed capacity, allocated at start: nothing is
/// allocated at DIRQL). The simulated OS keeps at most 256 DMA buffers in flight per node;
/// Windows' limit is UNVERIFIED (docs/tdr.md Q5).
pub const NODE_PENDING_MAX: usize = 1024;
/// Descriptor priority of a node ring: above every HW queue's (docs/tdr.md#the-kmd), whatever
/// band its context is in ([`crate::hws::ContextPriority`] uses bits 0..24).
pub const NODE_RING_PRIORITY: u32 = 1 << 24;
/// Byte offset of the fence word `F` behind the ring and its ring control.
const FENCE_OFFSET: u64 = NODE_RING_BYTES as u64 + RingControl::SIZE;
/// Bytes of one node ring's allocation: ring, ring control, fence word (rounded to a page).
const NODE_ALLOC_BYTES: u64 = NODE_RING_BYTES as u64 + rvgpu_hw::PAGE_SIZE;
/// Words of the longest submission: 16 INDIRECT_VMs and a PROGRESS.
const MAX_WORDS: usize = 16 * 4 + 2;
// `NodeSlots::parked` is a 64-bit mask indexed by engine.
const _: () = assert!(rvgpu_hw::regs::ENGINE_MAX <= 64);

/// The report of a node ring's fault on the packet `fence` (`code`, `addr`, `info` from the
/// device's `Fault` record).
///
/// `DXGK_INTERRUPT_DMA_FAULTED` is a bug check on 24H2: `M:VidSchDdiNotifyInterruptWorker`
/// @0x140006B60 sends every type-4 report to 0x119 subtype 0xD. Its page-fault form, with a
/// valid fence, is what 24H2 acts on for a packet it scheduled: the packets before it retire,
/// the faulting one is completed with its device in error (`M:VidSchiProcessIsrFaultedPacket`
/// @0x14004F9A4, `M:VidSchiProcessDpcCompletedPacket` @0x140008BD0). A fault that is not a
/// translation (a bad opcode, say) takes the same form with no address and an error code, which
/// is what `FaultErrorCode` is for. The ring stops at the faulting packet and only an engine
/// reset restarts it, so the report asks for one (`ENGINE_RESET_REQUIRED`, which 24H2 turns into
/// its engine reset request at DPC time); without it the node would wait for the TDR timeout.
fn dma_page_faulted(
    fence: u32,
    node: u32,
    code: Option<rvgpu_hw::event::FaultCode>,
    addr: GpuVa,
    info: u64,
) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    use rvgpu_ddi::interrupt::{
        DXGKARGCB_NOTIFY_INTERRUPT_DATA_DmaPageFaulted as Arm, DXGK_BIND_TABLE_ENTRY_UNKNOWN,
        DXGK_FAULT_ERROR_CODE, DXGK_GENERAL_ERROR_INVALID_INSTRUCTION,
        DXGK_GENERAL_ERROR_PAGE_FAULT, DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED,
        DXGK_PAGE_FAULT_WRITE, DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
        DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
    };
    use rvgpu_hw::event::FaultCode;
    let (va, write, level, error) = match code {
        Some(FaultCode::PageFault) => {
            let i = rvgpu_hw::mmu::FaultInfo::decode(info);
            (
                addr.get(),
                i.is_some_and(|i| i.access == rvgpu_hw::mmu::Access::Write),
                i.map_or(0, |i| u32::from(i.level)),
                DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_PAGE_FAULT),
            )
        }
        // An address outside memory: the access did not happen, as with a translation fault.
        Some(FaultCode::BadAddress) => (
            addr.get(),
            false,
            0,
            DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_PAGE_FAULT),
        ),
        Some(
            FaultCode::BadOpcode
            | FaultCode::BadLength
            | FaultCode::BadHeader
            | FaultCode::BadArgument
            | FaultCode::NestedIndirect,
        ) => (
            0,
            false,
            0,
            DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_INVALID_INSTRUCTION),
        ),
        // The device's own code (0 for one it did not name).
        other => (
            0,
            false,
            0,
            DXGK_FAULT_ERROR_CODE::device_specific(other.map_or(0, |c| c as u32)),
        ),
    };
    let mut flags = DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED;
    if write {
        flags |= DXGK_PAGE_FAULT_WRITE;
    }
    DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_page_faulted(Arm {
        FaultedFenceId: fence,
        FaultedPrimitiveAPISequenceNumber: DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
        FaultedPipelineStage: DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
        FaultedBindTableEntry: DXGK_BIND_TABLE_ENTRY_UNKNOWN,
        PageFaultFlags: flags,
        FaultedVirtualAddress: va,
        NodeOrdinal: node,
        EngineOrdinal: 0,
        PageTableLevel: level,
        FaultErrorCode: error,
        FaultedProcessHandle: core::ptr::null_mut(),
    })
}

/// One node's ring (one per engine).
#[derive(Debug)]
pub struct NodeRing {
    /// Engine (node ordinal).
    pub engine: u32,
    /// Device queue id (from [`QueueIds`] at start; never freed while started).
    pub queue_id: u32,
    /// Ring, ring control and (at [`FENCE_OFFSET`]) the fence word `F`.
    pub ring: KernelRing,
    pub fences: NodeFences,
}

impl NodeRing {
    /// Word index of `F` in the ring's buffer.
    const FENCE_WORD: u64 = FENCE_OFFSET / 8;

    /// GPU address of `F` (the descriptor's `progress_fence`).
    pub fn fence_gpu(&self) -> GpuVa {
        // FENCE_OFFSET is inside every node allocation.
        self.ring.buf.gpu_at(FENCE_OFFSET).unwrap_or(GpuVa::NULL)
    }

    /// `F` as the device last wrote it (acquire); `None` if the buffer is too small (never).
    pub fn fence_value(&self) -> Option<u64> {
        self.ring.buf.load(Self::FENCE_WORD, Ordering::Acquire)
    }

    fn set_fence(&self, v: u32) {
        let _ = self
            .ring
            .buf
            .store(Self::FENCE_WORD, u64::from(v), Ordering::Release);
    }

    /// The runlist entry (fixed for the ring's life).
    pub fn descriptor(&self) -> QueueDescriptor {
        let r = self.ring.ring();
        QueueDescriptor {
            queue_id: self.queue_id,
            flags: QueueFlags::VALID.bits(),
            ring_base: r.base,
            ring_size: r.size,
            doorbell: NO_DOORBELL,
            ring_control: r.control,
            progress_fence: self.fence_gpu(),
            priority: NODE_RING_PRIORITY,
            ..Default::default()
        }
    }

    /// Appends one submission's words and records it. Refuses, writing nothing, if the fence
    /// ID does not increase or there is no room (ring or pending table).
    fn append(
        &mut self,
        words: &[u64],
        fence: u32,
        paging: bool,
        context: Option<Handle>,
    ) -> Result<(), Status> {
        self.fences.check_submit(fence)?;
        let start = self.ring.write_ptr;
        submit::append(&mut self.ring, words)?;
        self.fences.submitted(Pending {
            fence,
            start,
            end: self.ring.write_ptr,
            paging,
            context,
        })
    }

    /// Sets the ring control's read pointer to the write pointer: the ring is empty when the
    /// queue next enters a runlist. Only meaningful while the ring is out of the runlist (the
    /// CMP's own read pointer is authoritative for a loaded queue, hardware.md M16).
    fn empty_ring(&self) {
        let _ = self.ring.buf.store(
            self.ring.control_word(RingControl::READ_PTR),
            self.ring.write_ptr,
            Ordering::Release,
        );
    }
}

/// The node rings of one adapter, indexed by node ordinal. Lives in [`crate::adapter::IsrState`]: every method
/// runs under the interrupt lock (ISR or [`crate::adapter::Live::synchronized`]).
#[derive(Debug, Default)]
pub struct NodeRings {
    rings: Vec<NodeRing>,
}

/// The runlist-side view of the node rings: descriptors fixed at start (read under the
/// scheduler lock by [`crate::runlist::build`]) and which nodes' rings are parked out of their
/// runlist (ResetEngine's leave/re-enter, docs/tdr.md#the-kmd step 4).
#[derive(Debug, Default)]
pub struct NodeSlots {
    descriptors: Vec<QueueDescriptor>,
    parked: u64,
}

impl NodeSlots {
    /// Slots for the given descriptors, indexed by engine, none parked.
    pub fn new(descriptors: Vec<QueueDescriptor>) -> Self {
        Self {
            descriptors,
            parked: 0,
        }
    }

    /// The node ring's descriptor for `engine`'s runlist, unless parked or absent.
    pub fn entry(&self, engine: u32) -> Option<QueueDescriptor> {
        if engine < 64 && self.parked & (1u64 << engine) != 0 {
            return None;
        }
        self.descriptors.get(usize::try_from(engine).ok()?).copied()
    }

    /// Takes `engine`'s node ring out of (`true`) or back into (`false`) its runlist from the
    /// next commit on. The caller holds the scheduler lock and commits.
    pub fn set_parked(&mut self, engine: u32, parked: bool) {
        if engine >= 64 {
            return;
        }
        let bit = 1u64 << engine;
        if parked {
            self.parked |= bit;
        } else {
            self.parked &= !bit;
        }
    }

    /// The node ring's queue id on `engine`.
    pub fn queue_id(&self, engine: u32) -> Option<u32> {
        self.descriptors
            .get(usize::try_from(engine).ok()?)
            .map(|d| d.queue_id)
    }
}

impl NodeRings {
    /// Allocates one node ring per engine (PASSIVE, bring-up): contiguous memory for ring,
    /// ring control and fence word, zeroed, and a queue id from `ids`. On failure nothing is
    /// kept.
    pub fn alloc<P: Platform>(
        dxgk: &Dxgk,
        engines: u32,
        ids: &mut QueueIds,
    ) -> Result<Self, Status> {
        let n = usize::try_from(engines).map_err(|_| status::INSUFFICIENT_RESOURCES)?;
        let mut out = Self {
            rings: kmem::try_with_capacity::<P, NodeRing>(n)
                .map_err(|_| status::INSUFFICIENT_RESOURCES)?,
        };
        for engine in 0..engines {
            let ring = match Self::alloc_one::<P>(dxgk, engine, ids) {
                Ok(r) => r,
                Err(e) => {
                    out.free(dxgk, ids);
                    return Err(e);
                }
            };
            // Room for every engine was reserved above.
            if let Err(r) = kmem::push_reserved(&mut out.rings, ring) {
                ids.free(r.queue_id);
                let _ = dxgk.free_contiguous(r.ring.buf.handle());
                out.free(dxgk, ids);
                return Err(status::INSUFFICIENT_RESOURCES);
            }
        }
        Ok(out)
    }

    fn alloc_one<P: Platform>(
        dxgk: &Dxgk,
        engine: u32,
        ids: &mut QueueIds,
    ) -> Result<NodeRing, Status> {
        // Pool memory first: nothing else is held yet if it fails.
        let fences = NodeFences::try_new::<P>(NODE_PENDING_MAX)
            .map_err(|_| status::INSUFFICIENT_RESOURCES)?;
        let id = ids.alloc().ok_or(status::INSUFFICIENT_RESOURCES)?;
        let buf = match DmaBuffer::alloc::<P>(dxgk, NODE_ALLOC_BYTES) {
            Ok(buf) => buf,
            Err(e) => {
                ids.free(id);
                return Err(e);
            }
        };
        Ok(NodeRing {
            engine,
            queue_id: id,
            ring: KernelRing {
                buf,
                size: NODE_RING_BYTES,
                write_ptr: 0,
                backlog: crate::kmem::Backlog::default(),
            },
            fences,
        })
    }

    /// Frees every ring (PASSIVE; the device must no longer run them: runlists quiesced) and
    /// returns their queue ids to `ids`.
    pub fn free(&mut self, dxgk: &Dxgk, ids: &mut QueueIds) {
        for r in self.rings.drain(..) {
            ids.free(r.queue_id);
            let _ = dxgk.free_contiguous(r.ring.buf.handle());
        }
    }

    /// The descriptors for the runlists (see [`NodeSlots`]).
    pub fn try_slots<P: Platform>(&self) -> Result<NodeSlots, NoMemory> {
        let mut d = self.rings.iter().map(NodeRing::descriptor);
        let descriptors =
            kmem::try_from_fn::<P, _>(self.rings.len(), |_| d.next().unwrap_or_default())?;
        Ok(NodeSlots::new(descriptors))
    }

    /// As [`NodeRings::try_slots`], for host unit tests.
    #[cfg(test)]
    pub fn slots(&self) -> NodeSlots {
        self.try_slots::<kmem::Host>().unwrap()
    }

    /// Number of node rings (= engines).
    pub fn len(&self) -> usize {
        self.rings.len()
    }

    /// Whether there are none (adapter not started).
    pub fn is_empty(&self) -> bool {
        self.rings.is_empty()
    }

    /// Node `node`'s ring.
    pub fn get(&self, node: u32) -> Option<&NodeRing> {
        self.rings.get(usize::try_from(node).ok()?)
    }

    /// Node `node`'s ring, mutable.
    pub fn get_mut(&mut self, node: u32) -> Option<&mut NodeRing> {
        self.rings.get_mut(usize::try_from(node).ok()?)
    }

    /// The node whose ring has device queue id `queue_id`.
    pub fn node_of_queue(&self, queue_id: u32) -> Option<u32> {
        self.rings
            .iter()
            .find(|r| r.queue_id == queue_id)
            .map(|r| r.engine)
    }

    /// `(S, C, F)` of `node` (TDR-05 step 4 snapshot, ResetEngine step 3): last submitted,
    /// last completed as reported, and the fence word the device wrote (low 32 bits). `None`
    /// for an unknown node.
    pub fn snapshot(&self, node: u32) -> Option<(u32, u32, u32)> {
        let r = self.get(node)?;
        let f = r.fence_value()?;
        // Only IDs the OS submitted are ever written (PROGRESS values are u32 fence IDs).
        let f = u32::try_from(f).unwrap_or(u32::MAX);
        Some((r.fences.last_submitted, r.fences.last_completed, f))
    }

    /// The fence ID of the pending submission whose ring bytes contain `rptr` (the device's
    /// `RESET_RPTR`, a free-running byte position), if any (docs/tdr.md#the-kmd table, row 1).
    pub fn pending_fence_at(&self, node: u32, rptr: u64) -> Option<u32> {
        self.pending_at(node, rptr).map(|p| p.fence)
    }

    /// The whole pending record at `rptr` (paging flag and owner for TDR-08 / UM-10).
    pub fn pending_at(&self, node: u32, rptr: u64) -> Option<Pending> {
        self.get(node)?.fences.pending_at(rptr)
    }

    /// The packet `node`'s ring faulted on, if not reset since.
    pub fn faulted_fence(&self, node: u32) -> Option<u32> {
        self.get(node)?.fences.faulted()
    }

    /// After a successful ResetEngine on `node` (docs/tdr.md#the-kmd step 4): pending cleared,
    /// `F := C := S := last_aborted`, preemption request dropped, and the ring control's
    /// `read_ptr := write_ptr` so the ring is empty when it re-enters the runlist. The caller
    /// has committed `node`'s runlist without the node ring ([`NodeSlots::set_parked`]) before
    /// and recommits with it after. Returns false for an unknown node.
    pub fn drain(&mut self, node: u32, last_aborted: u32) -> bool {
        let Some(r) = self.get_mut(node) else {
            return false;
        };
        r.fences.reset_to(last_aborted);
        r.set_fence(last_aborted);
        r.empty_ring();
        true
    }

    /// After an adapter reset (ResetFromTimeout): every node's pending submissions count as
    /// completed, `F := C := S` (TDR-04), no preemption outstanding, rings emptied.
    pub fn drain_all_completed(&mut self) {
        for r in &mut self.rings {
            r.fences.all_completed();
            r.set_fence(r.fences.last_submitted);
            r.empty_ring();
        }
    }

    /// Whether `ev` is of a kind [`NodeRings::on_event`] may take (`Progress`, `Fault`): the
    /// ISR calls it for those only.
    #[inline(always)]
    pub fn may_own(ev: &DeviceEvent) -> bool {
        matches!(ev, DeviceEvent::Progress { .. } | DeviceEvent::Fault { .. })
    }

    /// ISR hook: handles `ev` if it belongs to a node ring (a `Progress` or `Fault` record
    /// naming a node ring's queue id), emitting `DmaCompleted` / `DmaPreempted` /
    /// `DmaPageFaulted`. Returns whether the event was a node ring's (the caller must then not
    /// treat it as a HW-queue event).
    pub fn on_event(
        &mut self,
        ev: DeviceEvent,
        emit: &mut dyn FnMut(&DXGKARGCB_NOTIFY_INTERRUPT_DATA),
    ) -> bool {
        match ev {
            DeviceEvent::Progress { queue, value, .. } => {
                let Some(node) = self.node_of_queue(queue) else {
                    return false;
                };
                if let Some(r) = self.get_mut(node) {
                    let c = r.fences.complete(value);
                    report(node, c, emit);
                }
                true
            }
            DeviceEvent::Fault {
                queue,
                code,
                addr,
                rptr,
                ..
            } => {
                let Some(node) = self.node_of_queue(queue) else {
                    return false;
                };
                if let Some(r) = self.get_mut(node) {
                    // The faulting packet's fence; between packets the next one to run. (A
                    // page fault's `arg2` carries only the low 32 bits of the read pointer,
                    // so the oldest pending packet is the fallback there too.)
                    let fence = r
                        .fences
                        .pending_at(rptr)
                        .or_else(|| r.fences.pending.front().copied())
                        .map(|p| p.fence);
                    if let Some(fence) = fence {
                        r.fences.faulted = Some(fence);
                        emit(&dma_page_faulted(fence, node, code, addr, rptr));
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// ISR hook for a lost-events overflow: reads `F` of every node and reports
    /// `DmaCompleted(F)` where it is ahead of `C`.
    pub fn lost_events(&mut self, emit: &mut dyn FnMut(&DXGKARGCB_NOTIFY_INTERRUPT_DATA)) {
        for r in &mut self.rings {
            if let Some(f) = r.fence_value() {
                let c = r.fences.complete(f);
                report(r.engine, c, emit);
            }
        }
    }

    /// Reads `F` of `node` and reports it if ahead of `C` (QueryCurrentFence). Returns `C`.
    fn catch_up(
        &mut self,
        node: u32,
        emit: &mut dyn FnMut(&DXGKARGCB_NOTIFY_INTERRUPT_DATA),
    ) -> Option<u32> {
        let r = self.get_mut(node)?;
        let f = r.fence_value()?;
        let c = r.fences.complete(f);
        report(node, c, emit);
        Some(r.fences.last_completed)
    }
}

fn report(node: u32, c: Completion, emit: &mut dyn FnMut(&DXGKARGCB_NOTIFY_INTERRUPT_DATA)) {
    if let Some(id) = c.completed {
        emit(&DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_completed(id, node, 0));
    }
    if let Some((id, last)) = c.preempted {
        emit(&DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_preempted(
            id, last, node, 0,
        ));
    }
}

/// Checks a DMA range (`addr`, `bytes`): 8-aligned, inside the address space, at most
/// [`MAX_SUBMIT_BYTES`]; an empty range needs no address.
pub(crate) fn check_range(addr: GpuVa, bytes: u64) -> Result<(), Status> {
    let align = rvgpu_hw::addr::ACCESS_ALIGN;
    if bytes > MAX_SUBMIT_BYTES || !bytes.is_multiple_of(align) {
        return Err(status::INVALID_PARAMETER);
    }
    if bytes != 0
        && (addr.is_null() || !addr.is_aligned(align) || addr.checked_add(bytes).is_none())
    {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_hw::addr::BusAddr;
    use rvgpu_hw::cmd::{decode, Command};

    /// A node ring over leaked host memory (bus address made up; only the CPU side runs).
    fn host_ring(engine: u32, queue_id: u32, size: u32, capacity: usize) -> NodeRing {
        let bytes = u64::from(size) + rvgpu_hw::PAGE_SIZE;
        let buf = DmaBuffer::leak_host(bytes, BusAddr::new(0x40_0000));
        NodeRing {
            engine,
            queue_id,
            ring: KernelRing {
                buf,
                size,
                write_ptr: 0,
                backlog: crate::kmem::Backlog::default(),
            },
            fences: NodeFences::new(capacity),
        }
    }

    fn rings(n: u32) -> NodeRings {
        NodeRings {
            rings: (0..n)
                .map(|e| host_ring(e, 100u32.wrapping_add(e), NODE_RING_BYTES, NODE_PENDING_MAX))
                .collect(),
        }
    }

    fn words(addr: u64, bytes: u64, fence: u32) -> Vec<u64> {
        let mut w = [0u64; MAX_WORDS];
        let n =
            submit::encode(GpuVa::new(addr), bytes, 0, u64::from(fence), false, &mut w).unwrap();
        w[..n].to_vec()
    }

    /// The CMP ran a PROGRESS: the fence word holds `v`, and the ISR sees the event.
    fn progress(r: &mut NodeRings, node: u32, v: u64) -> Vec<DXGKARGCB_NOTIFY_INTERRUPT_DATA> {
        let ring = r.get(node).unwrap();
        ring.ring
            .buf
            .store(NodeRing::FENCE_WORD, v, Ordering::Release);
        let queue = ring.queue_id;
        let mut out = Vec::new();
        let ev = DeviceEvent::Progress {
            engine: node,
            queue,
            value: v,
        };
        assert!(r.on_event(ev, &mut |d| out.push(*d)));
        out
    }

    fn completed(d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA) -> (u32, u32) {
        let c = crate::args::notify::dma_completed(d);
        (c.SubmissionFenceId, c.NodeOrdinal)
    }

    /// TDR-06 row 1/2: the pending submission containing RESET_RPTR, none between packets.
    #[test]
    fn tdr_06_pending_fence_at_read_pointer() {
        let mut r = rings(2);
        for (id, bytes) in [
            (7u32, 4096u64),
            (8, 8),
            (9, 3 * rvgpu_hw::cmd::MAX_INDIRECT),
        ] {
            r.get_mut(1)
                .unwrap()
                .append(&words(0x10_0000, bytes, id), id, id == 8, None)
                .unwrap();
        }
        // 7: 5 words [0, 40); 8: [40, 80); 9: 3 INDIRECTs + PROGRESS = 11 words [80, 168).
        assert_eq!(r.pending_fence_at(1, 0), Some(7));
        assert_eq!(r.pending_fence_at(1, 39), Some(7));
        assert_eq!(r.pending_fence_at(1, 40), Some(8));
        assert!(r.pending_at(1, 40).unwrap().paging);
        assert_eq!(r.pending_fence_at(1, 104), Some(9), "second INDIRECT of 9");
        assert_eq!(r.pending_fence_at(1, 168), None, "past the last packet");
        assert_eq!(r.pending_fence_at(0, 0), None, "other node");
        assert_eq!(r.pending_fence_at(5, 0), None, "no such node");
        progress(&mut r, 1, 8);
        assert_eq!(r.pending_fence_at(1, 0), None, "retired");
        assert_eq!(r.pending_fence_at(1, 80), Some(9));
    }

    /// Ring encoding: each DMA buffer is INDIRECT(s) + PROGRESS(IRQ, fence), published.
    #[test]
    fn tdr_03_ring_holds_indirect_then_progress() {
        let mut r = rings(1);
        let n = r.get_mut(0).unwrap();
        n.append(&words(0x20_0000, 256, 3), 3, false, None).unwrap();
        let w: Vec<u64> = (0..5)
            .map(|i| n.ring.buf.load(i, Ordering::Relaxed).unwrap())
            .collect();
        assert_eq!(
            decode(&w[..3]),
            Ok(Command::Indirect {
                addr: 0x20_0000,
                bytes: 256
            })
        );
        assert_eq!(
            decode(&w[3..]),
            Ok(Command::Progress {
                irq: true,
                value: 3
            })
        );
        let published = n.ring.buf.load(
            n.ring.control_word(RingControl::WRITE_PTR),
            Ordering::Acquire,
        );
        assert_eq!(published, Some(40));
        let d = n.descriptor();
        assert_eq!(d.validate(), Ok(()));
        assert_eq!(d.priority, NODE_RING_PRIORITY);
        assert!(d.priority > rvgpu_hw::pdd::HW_QUEUE_PRIORITY_MAX);
        // Above every context's band and level too.
        assert!(d.priority > crate::hws::ContextPriority::MAX.word() + 0xFF);
        assert_eq!(d.progress_fence.get(), 0x40_0000 + FENCE_OFFSET);
        assert_eq!(d.doorbell, NO_DOORBELL);
    }

    /// A full ring refuses without recording; after the CMP consumed, appends wrap.
    #[test]
    fn ring_full_refuses_then_wraps() {
        let mut n = host_ring(0, 1, 256, 64);
        let set_read = |n: &NodeRing, v: u64| {
            n.ring.buf.store(
                n.ring.control_word(RingControl::READ_PTR),
                v,
                Ordering::Release,
            );
        };
        for id in 1..=6 {
            n.append(&words(0x1000, 8, id), id, false, None).unwrap();
        }
        assert_eq!(
            n.append(&words(0x1000, 8, 7), 7, false, None),
            Err(status::INSUFFICIENT_RESOURCES)
        );
        assert_eq!(n.fences.last_submitted(), 6, "nothing recorded");
        assert_eq!(n.fences.pending_count(), 6);
        set_read(&n, 80);
        n.fences.complete(2);
        n.append(&words(0x1000, 8, 7), 7, false, None).unwrap();
        assert_eq!(n.fences.pending_at(250).map(|p| p.fence), Some(7));
        assert_eq!(n.fences.pending_at(279).map(|p| p.fence), Some(7));
        assert_eq!(n.ring.write_ptr, 280);
    }

    /// TDR-04: a ring's fault is the page-fault report 24H2 acts on (never `DmaFaulted`, a
    /// bug check there): a translation fault carries its address, access and level; a bad
    /// opcode no address and the invalid-instruction code; each asks for an engine reset.
    #[test]
    fn tdr_04_a_ring_fault_is_a_page_fault_report_asking_for_an_engine_reset() {
        use rvgpu_ddi::interrupt::{
            DXGK_FAULT_ERROR_CODE, DXGK_GENERAL_ERROR_INVALID_INSTRUCTION,
            DXGK_GENERAL_ERROR_PAGE_FAULT, DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED,
            DXGK_PAGE_FAULT_WRITE,
        };
        use rvgpu_hw::event::FaultCode;
        use rvgpu_hw::mmu::{Access, FaultInfo, FaultReason};
        let info = FaultInfo {
            reason: FaultReason::ReadOnly,
            access: Access::Write,
            level: 2,
            user: false,
            rptr: 0x40,
        }
        .encode();
        let d = dma_page_faulted(7, 1, Some(FaultCode::PageFault), GpuVa::new(0x9000), info);
        let f = crate::args::notify::dma_page_faulted(&d);
        assert_eq!(
            (f.FaultedFenceId, f.NodeOrdinal, f.EngineOrdinal),
            (7, 1, 0)
        );
        assert_eq!(f.FaultedVirtualAddress, 0x9000);
        assert_eq!(f.PageTableLevel, 2);
        assert_eq!(
            f.PageFaultFlags,
            DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED | DXGK_PAGE_FAULT_WRITE
        );
        assert_eq!(
            f.FaultErrorCode.Value,
            DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_PAGE_FAULT).Value
        );
        let d = dma_page_faulted(8, 0, Some(FaultCode::BadOpcode), GpuVa::new(0x40), 0x40);
        let f = crate::args::notify::dma_page_faulted(&d);
        assert_eq!((f.FaultedFenceId, f.FaultedVirtualAddress), (8, 0));
        assert_eq!(f.PageFaultFlags, DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED);
        assert_eq!(
            f.FaultErrorCode.Value,
            DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_INVALID_INSTRUCTION).Value
        );
    }

    /// The ISR reports DMA_COMPLETED with the node's fence ID; events of other queues are not
    /// the node ring's; a fault names the pending packet at the read pointer.
    #[test]
    fn tdr_04_isr_reports_dma_completed_and_faulted() {
        let mut r = rings(2);
        r.get_mut(0)
            .unwrap()
            .append(&words(0x1000, 8, 11), 11, false, None)
            .unwrap();
        r.get_mut(0)
            .unwrap()
            .append(&words(0x1000, 8, 12), 12, false, None)
            .unwrap();
        let out = progress(&mut r, 0, 11);
        assert_eq!(out.iter().map(completed).collect::<Vec<_>>(), vec![(11, 0)]);
        assert_eq!(r.snapshot(0), Some((12, 11, 11)));
        // A HW queue's progress is not ours.
        let other = DeviceEvent::Progress {
            engine: 0,
            queue: 7,
            value: 12,
        };
        assert!(!r.on_event(other, &mut |_| panic!("nothing to report")));
        // Stale (older) progress: consumed, nothing reported.
        assert!(progress(&mut r, 0, 11).is_empty());
        let mut out = Vec::new();
        let fault = DeviceEvent::Fault {
            engine: 0,
            queue: 100,
            code: None,
            addr: GpuVa::NULL,
            rptr: 40,
        };
        assert!(r.on_event(fault, &mut |d| out.push(*d)));
        assert_eq!(out.len(), 1);
        // The page-fault form (24H2 bug-checks a DmaFaulted report): the packet's fence, no
        // address for a fault that is not a translation, an engine reset asked for.
        let f = crate::args::notify::dma_page_faulted(&out[0]);
        assert_eq!(
            (f.FaultedFenceId, f.NodeOrdinal, f.FaultedVirtualAddress),
            (12, 0, 0)
        );
        assert_eq!(
            f.PageFaultFlags,
            rvgpu_ddi::interrupt::DXGK_PAGE_FAULT_ENGINE_RESET_REQUIRED
        );
    }

    /// After an event-ring overflow the fence words are read and missed completions reported.
    #[test]
    fn lost_events_report_from_the_fence_word() {
        let mut r = rings(2);
        for node in 0..2 {
            r.get_mut(node)
                .unwrap()
                .append(&words(0x1000, 8, 4), 4, false, None)
                .unwrap();
        }
        r.get(1)
            .unwrap()
            .ring
            .buf
            .store(NodeRing::FENCE_WORD, 4, Ordering::Release);
        let mut out = Vec::new();
        r.lost_events(&mut |d| out.push(*d));
        assert_eq!(out.iter().map(completed).collect::<Vec<_>>(), vec![(4, 1)]);
        let mut out = Vec::new();
        assert_eq!(r.catch_up(1, &mut |d| out.push(*d)), Some(4));
        assert!(out.is_empty(), "already reported");
    }

    /// TDR-04/TDR-06: drain sets F = C = S = LastAborted and empties the ring; drain_all sets
    /// F = C = S.
    #[test]
    fn tdr_04_drain_and_drain_all_completed() {
        let mut r = rings(2);
        for id in 1..=3 {
            r.get_mut(0)
                .unwrap()
                .append(&words(0x1000, 8, id), id, id == 2, None)
                .unwrap();
            r.get_mut(1)
                .unwrap()
                .append(&words(0x1000, 8, id), id, false, None)
                .unwrap();
        }
        progress(&mut r, 0, 1);
        assert_eq!(r.snapshot(0), Some((3, 1, 1)));
        assert!(r.drain(0, 2));
        assert_eq!(r.snapshot(0), Some((2, 2, 2)));
        let n = r.get(0).unwrap();
        assert_eq!(
            n.ring.read_ptr(),
            Some(n.ring.write_ptr),
            "ring empty on re-entry"
        );
        assert_eq!(n.fences.pending_count(), 0);
        assert!(!r.drain(9, 0), "unknown node");
        r.drain_all_completed();
        assert_eq!(r.snapshot(0), Some((2, 2, 2)));
        assert_eq!(r.snapshot(1), Some((3, 3, 3)));
        // Resubmission after the reset: IDs above the new S are accepted again.
        r.get_mut(0)
            .unwrap()
            .append(&words(0x1000, 8, 3), 3, true, None)
            .unwrap();
        assert_eq!(r.snapshot(0), Some((3, 2, 2)));
    }

    /// Runlist side: the node ring's descriptor unless parked.
    #[test]
    fn slots_park_and_unpark() {
        let r = rings(2);
        let mut s = r.slots();
        assert_eq!(s.entry(1).map(|d| d.queue_id), Some(101));
        assert_eq!(s.queue_id(0), Some(100));
        s.set_parked(1, true);
        assert_eq!(s.entry(1), None);
        assert_eq!(s.entry(0).map(|d| d.queue_id), Some(100));
        s.set_parked(1, false);
        assert_eq!(s.entry(1).map(|d| d.queue_id), Some(101));
        assert_eq!(s.entry(2), None);
        assert_eq!(r.node_of_queue(101), Some(1));
    }

    /// TDR-03: a DMA range is 8-aligned, at most `MAX_SUBMIT_BYTES`, addressed unless empty,
    /// and does not wrap the address space.
    #[test]
    fn tdr_03_dma_range_is_aligned_bounded_and_addressed() {
        let a = GpuVa::new(0x10_0000);
        assert_eq!(check_range(a, 4096), Ok(()));
        assert_eq!(check_range(a, MAX_SUBMIT_BYTES), Ok(()));
        assert_eq!(
            check_range(GpuVa::NULL, 0),
            Ok(()),
            "empty: no address needed"
        );
        for (addr, bytes) in [
            (a, MAX_SUBMIT_BYTES + 8),
            (a, 12),
            (GpuVa::new(0x10_0004), 8),
            (GpuVa::NULL, 8),
            (GpuVa::new(!7), 16),
        ] {
            assert_eq!(
                check_range(addr, bytes),
                Err(status::INVALID_PARAMETER),
                "{addr:?} + {bytes}"
            );
        }
    }

    /// TDR-05: the reset snapshot is `(S, C, F)` of the node named, found by queue id too;
    /// an unknown node or queue has none.
    #[test]
    fn tdr_05_snapshot_reads_submitted_completed_and_fence_word() {
        let mut r = rings(2);
        for id in [3u32, 4] {
            r.get_mut(1)
                .unwrap()
                .append(&words(0x10_0000, 8, id), id, false, None)
                .unwrap();
        }
        assert_eq!(r.snapshot(1), Some((4, 0, 0)));
        progress(&mut r, 1, 3);
        assert_eq!(r.snapshot(1), Some((4, 3, 3)));
        assert_eq!(r.snapshot(0), Some((0, 0, 0)));
        assert_eq!(r.snapshot(2), None);
        assert_eq!(r.node_of_queue(101), Some(1));
        assert_eq!(r.node_of_queue(7), None);
        assert_eq!((r.len(), r.is_empty()), (2, false));
        assert!(NodeRings::default().is_empty());
    }
}
