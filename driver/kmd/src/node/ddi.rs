//! The node-ring DDIs (`DxgkDdiSubmitCommand`, `DxgkDdiSubmitCommandVirtual`,
//! `DxgkDdiPreemptCommand`, `DxgkDdiQueryCurrentFence`) over the state of [`super`].

use rvgpu_hw::addr::{BusAddr, GpuVa};

use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_ddi::submission::DXGK_SUBMITCOMMANDFLAGS;
use rvgpu_ddi::tdr::{
    DXGKARG_PREEMPTCOMMAND, DXGKARG_QUERYCURRENTFENCE, DXGKARG_SUBMITCOMMAND,
    DXGKARG_SUBMITCOMMANDVIRTUAL,
};
use rvgpu_hw::regs;
use rvgpu_hw::testhooks::{JournalKind, JOURNAL_PAGING, JOURNAL_RESUBMISSION};

use crate::adapter::{Adapter, Live};
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::status::{self, Status};
use crate::submit;
use crate::testhooks;

use super::{check_range, MAX_WORDS};

/// The KMD context `raw` names on this adapter and node, or `None` for a null handle, with
/// the root its buffers run under: with `virtual_buffer` (a buffer at a VA of the context's
/// process), that process's root ([`crate::sched::Sched::buffer_root`]: a process context
/// without one is refused), else 0 (the ring's own space, for buffers the OS addresses
/// physically).
fn context_on<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    raw: rvgpu_ddi::HANDLE,
    node: u32,
    virtual_buffer: bool,
) -> Result<Option<(Handle, u64)>, Status> {
    if raw.is_null() {
        return Ok(None);
    }
    let h = Handle::decode_on(raw, Kind::Context, a.table_slot())?;
    let s = live.sched.lock();
    let c = s.contexts.get(&h).ok_or(status::INVALID_HANDLE)?;
    if c.engine != node {
        return Err(status::INVALID_PARAMETER);
    }
    let root = if virtual_buffer {
        s.buffer_root(&h)?.unwrap_or(0)
    } else {
        0
    };
    Ok(Some((h, root)))
}

/// Whose DMA buffer a submission is: the context (`None`: the system context) and the root
/// of the space the buffer runs in (a SubmitCommandVirtual buffer: its context's process; 0:
/// the ring's own space, for buffers the OS addresses physically).
#[derive(Clone, Copy, Debug)]
struct Owner {
    context: Option<Handle>,
    root: u64,
}

/// Encodes and appends one DMA buffer to `node`'s ring under the interrupt lock, then kicks
/// the ring's queue (hardware.md 8.5, P1..P4).
fn push<P: Platform>(
    live: &Live<P>,
    node: u32,
    addr: GpuVa,
    bytes: u64,
    fence: u32,
    flags: DXGK_SUBMITCOMMANDFLAGS,
    owner: Owner,
) -> Result<(), Status> {
    let Owner { context, root } = owner;
    if flags.get(DXGK_SUBMITCOMMANDFLAGS::Reserved) != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let null = flags.is_set(DXGK_SUBMITCOMMANDFLAGS::NullRendering) || bytes == 0;
    let paging = flags.is_set(DXGK_SUBMITCOMMANDFLAGS::Paging);
    let mut words = [0u64; MAX_WORDS];
    let n = submit::encode(addr, bytes, root, u64::from(fence), null, &mut words)
        .ok_or(status::INVALID_PARAMETER)?;
    let packets = words.get(..n).ok_or(status::INVALID_PARAMETER)?;
    let appended = live.synchronized(|isr| {
        let r = isr.nodes.get_mut(node).ok_or(status::INVALID_PARAMETER)?;
        r.append(packets, fence, paging, context)?;
        Ok::<u32, Status>(r.queue_id)
    })?;
    let queue_id = appended.inspect_err(|e| {
        // On Windows this status is bug check 0x119 / 0x2: say why first.
        crate::klog!(
            P,
            Error,
            "rvgpu: node {} refused fence {} (last submitted or ring full): {:#x}",
            node,
            fence,
            e.code()
        );
    })?;
    // Journaled before the kick, so that its completion never precedes it in the journal.
    crate::testhooks::note(&live.hooks, || {
        let mut r = testhooks::rec(
            JournalKind::Submit,
            node,
            fence.into(),
            if paging { 0 } else { addr.get() },
        );
        if paging {
            r.flags |= JOURNAL_PAGING;
        }
        if flags.is_set(DXGK_SUBMITCOMMANDFLAGS::Resubmission) {
            r.flags |= JOURNAL_RESUBMISSION;
        }
        r
    });
    live.regs.write_at(node, regs::QueueKick::new(queue_id));
    Ok(())
}

/// DxgkDdiSubmitCommand (DISPATCH_LEVEL; an error status is bug check 0x119 / 0x2, so the only
/// errors are malformed arguments and a full ring, which the OS's in-flight limit prevents).
/// The DMA buffer `[DmaBufferPhysicalAddress + DmaBufferSubmissionStartOffset,
/// … + DmaBufferSubmissionEndOffset)` (contiguous system memory with `DmaBufferSegmentId` 0,
/// or an aperture segment address translated through the driver's table)
/// becomes INDIRECTs + `PROGRESS(IRQ, SubmissionFenceId)` on the node ring; `Flags.Paging`
/// is recorded for TDR-03/08. `hContext` is always a context the driver created: Windows
/// submits its own work on the system contexts it creates at start (BR-66), so a null one is
/// a malformed call (`STATUS_INVALID_PARAMETER`), never a "system" submission.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommand>
pub fn submit_command<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_SUBMITCOMMAND,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    let (start, end) = (
        args.DmaBufferSubmissionStartOffset,
        args.DmaBufferSubmissionEndOffset,
    );
    if start > end || end > args.DmaBufferSize {
        return Err(status::INVALID_PARAMETER);
    }
    if args.DmaBufferPrivateDataSize != 0 && args.pDmaBufferPrivateData.is_null() {
        return Err(status::INVALID_PARAMETER);
    }
    let phys = crate::args::quad(&args.DmaBufferPhysicalAddress);
    let phys = u64::try_from(phys).map_err(|_| status::INVALID_PARAMETER)?;
    let bytes = u64::from(end.saturating_sub(start));
    let addr = if args.DmaBufferSegmentId == crate::gpummu::SEGMENT_APERTURE
        && crate::gpummu::supported(live.mmu())
    {
        // A buffer of a privileged DMA pool in the aperture: `DmaBufferPhysicalAddress` is
        // its segment address (the DXGKARG_SUBMITCOMMAND page), which the driver's table
        // translates. The device fetches a DMA buffer by one bus address, so the submitted
        // part must be mapped to contiguous pages (not built: fetching through the MMU).
        let first = phys
            .checked_add(u64::from(start))
            .ok_or(status::INVALID_PARAMETER)?;
        if bytes == 0 {
            // Nothing is fetched (a null submission).
            GpuVa::new(0)
        } else {
            GpuVa::new(
                live.aperture
                    .contiguous(first, bytes)
                    .ok_or(status::INVALID_PARAMETER)?,
            )
        }
    } else if args.DmaBufferSegmentId != 0 {
        // Only the aperture holds DMA buffers (BR-65/67); 0 is contiguous system memory.
        return Err(status::INVALID_PARAMETER);
    } else {
        // The physical address (paging buffers live in contiguous system memory); an OS that
        // passes only the GPU VA (WDDM 2.0 member) gets it used instead: identical in v1's
        // identity addressing.
        let phys = BusAddr::new(phys);
        let base = if !phys.is_null() {
            phys.identity_va()
        } else {
            GpuVa::new(args.DmaBufferVirtualAddress)
        };
        base.checked_add(u64::from(start))
            .ok_or(status::INVALID_PARAMETER)?
    };
    check_range(addr, bytes)?;
    let raw = crate::args::submit_context(args);
    if raw.is_null() {
        return Err(status::INVALID_PARAMETER);
    }
    let context = context_on(a, live, raw, node, false)?;
    push(
        live,
        node,
        addr,
        bytes,
        args.SubmissionFenceId,
        args.Flags,
        Owner {
            context: context.map(|(h, _)| h),
            root: 0,
        },
    )
}

/// DxgkDdiSubmitCommandVirtual (DISPATCH-safe; the page gives no IRQL, UNVERIFIED: docs/tdr.md
/// Q5). The DMA buffer at `DmaBufferVirtualAddress` (identity GPU VA in v1) of context
/// `hContext` on its node becomes INDIRECTs + `PROGRESS(IRQ, SubmissionFenceId)` on the node
/// ring. A malformed buffer is `STATUS_INVALID_PARAMETER` (the page allows it for this DDI).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandvirtual>
pub fn submit_command_virtual<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_SUBMITCOMMANDVIRTUAL,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    if args.hContext.is_null() {
        return Err(status::INVALID_HANDLE);
    }
    if args.DmaBufferPrivateDataSize != 0 && args.pDmaBufferPrivateData.is_null() {
        return Err(status::INVALID_PARAMETER);
    }
    if args.DmaBufferUmdPrivateDataSize > args.DmaBufferPrivateDataSize {
        return Err(status::INVALID_PARAMETER);
    }
    let bytes = u64::from(args.DmaBufferSize);
    let addr = GpuVa::new(args.DmaBufferVirtualAddress);
    check_range(addr, bytes)?;
    // A process's buffer runs in its space (INDIRECT_VM with the context's root, user
    // privilege); a process context without a root is refused, never run on the bus.
    let context = context_on(a, live, args.hContext, node, true)?;
    push(
        live,
        node,
        addr,
        bytes,
        args.SubmissionFenceId,
        args.Flags,
        Owner {
            context: context.map(|(h, _)| h),
            root: context.map_or(0, |(_, r)| r),
        },
    )
}

/// DxgkDdiPreemptCommand (DISPATCH_LEVEL; an error is bug check 0x119 / 0x2). Preemption is a
/// drain (docs/tdr.md#the-kmd): completions not reported yet are reported first; then, with
/// nothing pending, `DmaPreempted(PreemptionFenceId, C)` is reported at once from a routine
/// synchronised with the ISR (the page's special case); otherwise the ISR reports it when the
/// ring has drained.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_preemptcommand>
pub fn preempt_command<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_PREEMPTCOMMAND,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    if args
        .Flags
        .get(rvgpu_ddi::tdr::DXGK_PREEMPTCOMMANDFLAGS::Reserved)
        != 0
    {
        return Err(status::INVALID_PARAMETER);
    }
    let id = args.PreemptionFenceId;
    testhooks::note(&live.hooks, || {
        testhooks::rec(JournalKind::PreemptCommand, node, id.into(), 0)
    });
    // Completions the ring made whose interrupt has not come (or never will: a lost delivery)
    // are reported first, so that a ring that has drained is preempted at once. Left to the
    // next interrupt, the preemption would time out into a reset of finished work, and 24H2
    // asks nothing else before it (it never calls QueryCurrentFence).
    caught_up(live, node, |nodes, emit| {
        if let Some((id, last)) = nodes.get_mut(node).and_then(|r| r.fences.preempt(id)) {
            emit(&DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_preempted(
                id, last, node, 0,
            ));
        }
    })?;
    Ok(())
}

/// In a routine synchronised with the ISR: reports what node `node`'s ring completed and was
/// not reported yet (`DmaCompleted`), then runs `then` with the same reporter; queues the DPC
/// when anything was reported. Returns the node's last completed fence ID.
fn caught_up<P: Platform>(
    live: &Live<P>,
    node: u32,
    then: impl FnOnce(&mut crate::node::NodeRings, &mut dyn FnMut(&DXGKARGCB_NOTIFY_INTERRUPT_DATA)),
) -> Result<u32, Status> {
    let dxgk = live.dxgk;
    let mut reported = false;
    let current = live.synchronized(|isr| {
        let mut emit = |d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA| {
            reported = true;
            live.journal_report(d);
            dxgk.notify_interrupt(d);
        };
        let current = isr
            .nodes
            .catch_up(node, &mut emit)
            .ok_or(status::INVALID_PARAMETER)?;
        then(&mut isr.nodes, &mut emit);
        Ok::<u32, Status>(current)
    })??;
    if reported {
        let _ = dxgk.queue_dpc();
    }
    Ok(current)
}

/// DxgkDdiQueryCurrentFence (PASSIVE per the public header, UNVERIFIED; safe at DISPATCH).
/// Reads `F`; a completion not reported yet is reported first (`DmaCompleted` from a routine
/// synchronised with the ISR, as the page requires); returns the node's last completed fence
/// ID.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_querycurrentfence>
pub fn query_current_fence<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_QUERYCURRENTFENCE,
) -> Result<(), Status> {
    let live = a.started()?;
    let node = live.node(args.NodeOrdinal, args.EngineOrdinal)?;
    let current = caught_up(live, node, |_, _| {})?;
    args.CurrentFence = current;
    testhooks::note(&live.hooks, || {
        testhooks::rec(JournalKind::QueryCurrentFence, node, current.into(), 0)
    });
    Ok(())
}
