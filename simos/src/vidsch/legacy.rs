//! The legacy (kernel-mode) VidSch path (docs/tdr.md#the-simulated-os): DMA buffers submitted
//! per node through `DxgkDdiSubmitCommand` with increasing `SubmissionFenceId`s, and a minimal
//! submission path VidMm's paging buffers ([`crate::vidmm::paging`]) take with `Flags.Paging` on
//! the system context.
//!
//! - A process's `D3DKMTSubmitCommand` hands the KMD the UMD's own command buffer by its GPU
//!   VA (`DxgkDdiSubmitCommandVirtual`), with no copy: the GPU reads the words when it runs
//!   the packet, and again when a reset resubmits it (`submit_legacy_va`).
//! - The OS's own DMA buffers (paging, system context) live in contiguous system memory
//!   (`Memory::alloc_system`), submitted by physical address and freed when their fence ID
//!   is retired.
//! - Fence IDs are per node, u32, +1 per submission, never reused (wrap is out of scope, Q5).
//!   In flight per node at most [`IN_FLIGHT_LIMIT`]: a submission beyond it waits (step mode:
//!   rounds; threaded: polls) for completions.
//! - `DxgkDdiSubmitCommand` runs at DISPATCH_LEVEL; an error status is bug check 0x119 / 0x2
//!   (`DRIVER_SUBMIT_FAILED`).
//! - Submissions of a device in error are refused (`STATUS_DEVICE_REMOVED`), and every
//!   submission waits while a recovery holds the node's gate ([`crate::vidsch::tdr`]).
//!
//! Completion, preemption and fault reports are processed by [`crate::vidsch::tdr`] (ISR/DPC time).

use std::time::{Duration, Instant};

use rvgpu_ddi::basic::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::submission::DXGK_SUBMITCOMMANDFLAGS;
use rvgpu_ddi::tdr::*;
use rvgpu_device::device::mmu::{Mmu, Privilege};
use rvgpu_hw::addr::BusAddr;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmu::Access;
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{self, At};
use crate::adapter::waiter::Waiter;
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{vidsch, BugCheck};
use crate::base::clock::MachineTime;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::ums::{self, UmsProcess};
use crate::vidmm::dmabuf::Carved;
use crate::vidsch::tdr::registry as tdr;
use crate::vidsch::tdr::state::{DmaBuf, Packet, TdrEvent, TdrShared};

/// Kernel-mode DMA buffers in flight per node (docs/tdr.md#the-simulated-os: the KMD's ring holds 1024).
pub const IN_FLIGHT_LIMIT: u32 = 256;

/// Most bytes of one `D3DKMTSubmitCommand` here: the DMA buffer size the KMD reports for its
/// contexts (`DXGK_CONTEXTINFO::DmaBufferSize`, `rvgpu_kmd::context::LEGACY_DMA_BUFFER_SIZE`).
pub const MAX_COMMAND_BYTES: u32 = 64 * 1024;

pub(crate) fn encode(cmds: &[Command]) -> Result<Vec<u64>, SimError> {
    let mut words = Vec::new();
    for c in cmds {
        let mut w = [0u64; 16];
        let n = c
            .encode(&mut w)
            .ok_or(SimError::Internal("a command the encoder cannot encode"))?;
        words.extend_from_slice(&w[..n]);
    }
    Ok(words)
}

/// One kernel-mode submission DDI with its arguments.
enum Submit {
    Physical(ddi::Of<PDXGKDDI_SUBMITCOMMAND>, DXGKARG_SUBMITCOMMAND),
    Virtual(
        ddi::Of<PDXGKDDI_SUBMITCOMMANDVIRTUAL>,
        DXGKARG_SUBMITCOMMANDVIRTUAL,
    ),
}

/// Submits `p` with fence ID `id` through `DxgkDdiSubmitCommand` (DISPATCH_LEVEL) and records
/// it as in flight. The caller holds the gate (shared, or exclusively during a recovery).
fn submit_packet(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    p: Packet,
    resubmission: bool,
) -> Result<u32, SimError> {
    let t = a.table.get().ok_or(SimError::NoDriver)?;
    let mut flags = DXGK_SUBMITCOMMANDFLAGS::default();
    if p.paging {
        flags = flags.with(DXGK_SUBMITCOMMANDFLAGS::Paging, 1);
    }
    if resubmission {
        flags = flags.with(DXGK_SUBMITCOMMANDFLAGS::Resubmission, 1);
    }
    // A process's buffer in its address space goes through SubmitCommandVirtual (GpuMmu:
    // "DxgkDdiSubmitCommandVirtual ... submit a DMA buffer to a context that supports
    // virtual addressing", d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandvirtual); the OS's own
    // buffers by physical address through SubmitCommand.
    // The DMA buffer's private data (24H2 `K:DXGCONTEXT::Initialize` @0x1402CFD80 keeps a
    // lookaside list of the context's `DmaBufferPrivateDataSize`): the UMD's part first (none
    // here), the rest as the pool left it (the 0xCD fill shows a driver reading it).
    let mut private = vec![0xCDu8; private_data_size(a, p.context_kmd) as usize];
    let call = if let Some(va) = p.dma.va() {
        let f = ddi::in_table!(t, DxgkDdiSubmitCommandVirtual)
            .ok_or_else(|| SimError::NoDdi("DxgkDdiSubmitCommandVirtual"))?;
        // 24H2 `M:VidSchiFillSubmitCommandDataVirtual` @0x140018280: the driver's context, the
        // buffer's VA and size, the private data (its start and length), the UMD's part of it,
        // the fence ID, flag bits 0-8 (Paging for a paging packet; NullRendering,
        // ContextSwitch, Resubmission, VirtualMachineData, and for a flip Present, Flip,
        // FlipWithNoWait with VidPnSourceId and FlipInterval: none but Resubmission ever
        // applies here), the engine and node.
        Submit::Virtual(
            f,
            DXGKARG_SUBMITCOMMANDVIRTUAL {
                hContext: p.context_kmd as HANDLE,
                DmaBufferVirtualAddress: va,
                DmaBufferSize: p.bytes,
                pDmaBufferPrivateData: private.as_mut_ptr().cast(),
                DmaBufferPrivateDataSize: private.len() as u32,
                DmaBufferUmdPrivateDataSize: 0,
                SubmissionFenceId: p.id,
                VidPnSourceId: 0,
                FlipInterval: D3DDDI_FLIPINTERVAL_IMMEDIATE,
                Flags: flags,
                EngineOrdinal: 0,
                NodeOrdinal: node,
            },
        )
    } else {
        let (bus_addr, len) = match p.dma {
            DmaBuf::System { bus_addr, len } => (bus_addr, len),
            _ => return Err(SimError::Simulation("a DMA buffer with no address".into())),
        };
        let f = ddi::in_table!(t, DxgkDdiSubmitCommand)
            .ok_or_else(|| SimError::NoDdi("DxgkDdiSubmitCommand"))?;
        Submit::Physical(
            f,
            DXGKARG_SUBMITCOMMAND {
                Anonymous: DXGKARG_SUBMITCOMMAND_0 {
                    hContext: p.context_kmd as HANDLE,
                },
                DmaBufferSegmentId: 0,
                DmaBufferPhysicalAddress: LARGE_INTEGER {
                    QuadPart: bus_addr as i64,
                },
                DmaBufferSize: len as u32,
                DmaBufferSubmissionStartOffset: 0,
                DmaBufferSubmissionEndOffset: p.bytes,
                pDmaBufferPrivateData: std::ptr::null_mut(),
                DmaBufferPrivateDataSize: 0,
                DmaBufferPrivateDataSubmissionStartOffset: 0,
                DmaBufferPrivateDataSubmissionEndOffset: 0,
                SubmissionFenceId: p.id,
                VidPnSourceId: 0,
                FlipInterval: D3DDDI_FLIPINTERVAL_IMMEDIATE,
                Flags: flags,
                EngineOrdinal: 0,
                // Never written by M:VidSchiFillSubmitCommandData @0x14003CFF8: zero.
                DmaBufferVirtualAddress: 0,
                NodeOrdinal: node,
            },
        )
    };
    let id = p.id;
    {
        // Recorded before the call: the completion may be reported before it returns.
        let mut os = lock(&sh.os);
        let now = os.now();
        let n = os.node(node);
        if n.s == n.c {
            n.last_change = now;
        }
        n.s = n.s.max(id);
        n.pending.insert(id, p);
    }
    let ctx = a.context();
    // An error from either is treated as bug check 0x119 / 0x2 (SubmitCommand's page; for
    // SubmitCommandVirtual UNVERIFIED, docs/tdr.md Q5).
    let status = match call {
        // 24H2 `M:VidSchiSendToExecutionQueue` @0x140017660 raises to DISPATCH_LEVEL for its
        // bookkeeping and lowers back before `DxgkDdiSubmitCommandVirtual`: the DDI runs at
        // the VidSch worker's PASSIVE_LEVEL (Dxgkrnl's wrapper takes a lock that needs it,
        // `K:ADAPTER_RENDER::DdiSubmitCommandVirtual` @0x1402FD060); `DxgkDdiSubmitCommand`
        // stays at DISPATCH_LEVEL.
        Submit::Virtual(f, args) => {
            a.observer()
                .handed(&rvgpu_ddi::handover::SUBMIT_COMMAND_VIRTUAL, &args);
            // The buffer stays mapped in the process until the fence ID is retired (an
            // arena's until then; a UMD's, whose destruction AL-03 defers).
            f.call_unaudited(a, At::Level(Irql::Passive), (ctx, &args))?
        }
        Submit::Physical(f, args) => {
            a.observer()
                .handed(&rvgpu_ddi::handover::SUBMIT_COMMAND, &args);
            // The DMA buffer stays allocated until the fence ID is retired.
            f.call_unaudited(a, At::Level(Irql::Dispatch), (ctx, &args))?
        }
    };
    drop(private);
    submit_succeeded(a, status, node, id)?;
    Ok(id)
}

/// The `DmaBufferPrivateDataSize` the KMD gave for its context `kmd` (0 for a context the OS
/// does not know, the system context).
fn private_data_size(a: &AdapterShared, kmd: usize) -> u32 {
    if kmd == 0 {
        return 0;
    }
    lock(&a.ums)
        .contexts
        .values()
        .find(|c| c.kmd == kmd)
        .map_or(0, |c| c.dma_private_data)
}

/// Resubmits a packet after an engine reset (TDR-03): `new = None` keeps its ID (paging).
pub(crate) fn resubmit(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    mut p: Packet,
    new: Option<u32>,
) -> Result<(), SimError> {
    if let Some(id) = new {
        p.id = id;
    }
    submit_packet(a, sh, node, p, true).map(|_| ())
}

/// The limit of a wait for buffers in flight to retire, which means "no buffer completes":
/// a threaded machine counts it in the machine's time ([`MachineTime`]), so a GPU thread the
/// host starves does not use it up; step mode's, on the host's clock, ends the wait only
/// after a round that made no progress. Started at the first look that finds no room, so a
/// submission that has room reads no clock.
struct RoomLimit {
    host: Instant,
    clock: MachineTime,
    end: Duration,
}

impl RoomLimit {
    fn start(a: &AdapterShared, timeout: Duration) -> Self {
        let clock = MachineTime::of(a.emulated.as_deref());
        let end = clock.now().saturating_add(timeout);
        Self {
            host: Instant::now() + timeout,
            clock,
            end,
        }
    }

    /// Whether the limit passed: on the host's clock for a step-mode wait, else the machine's.
    fn passed(&self, step: bool) -> bool {
        match step {
            true => Instant::now() >= self.host,
            false => self.clock.now() >= self.end,
        }
    }
}

/// Waits for room on `node`'s ring, within a [`RoomLimit`].
fn wait_for_room(w: Waiter, a: &AdapterShared, sh: &TdrShared, node: u32) -> Result<(), SimError> {
    let mut limit = None;
    loop {
        {
            let mut os = lock(&sh.os);
            let n = os.node(node);
            if n.s.wrapping_sub(n.c) < IN_FLIGHT_LIMIT {
                return Ok(());
            }
        }
        if let Some(f) = a.state.fault() {
            return Err(f.into());
        }
        let limit = limit.get_or_insert_with(|| RoomLimit::start(a, w.timeout));
        match w.step {
            Some(m) => {
                if !m.run_round() && limit.passed(true) {
                    return Err(SimError::Stuck(format!(
                        "node {node}: {IN_FLIGHT_LIMIT} DMA buffers in flight and none completes"
                    )));
                }
            }
            None => {
                if limit.passed(false) {
                    return Err(SimError::Stuck(format!(
                        "node {node}: {IN_FLIGHT_LIMIT} DMA buffers in flight and none completes"
                    )));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

/// An OS DMA buffer (system context, paging) holding `words`: its own system memory,
/// submitted by physical address.
pub(crate) fn new_packet(
    a: &AdapterShared,
    words: &[u64],
    paging: bool,
    device: Option<KmtHandle>,
    context_kmd: usize,
    owners: Vec<KmtHandle>,
) -> Result<Packet, SimError> {
    let bytes = (words.len() * 8).max(8) as u64;
    let alloc = a
        .device
        .memory()
        .alloc_system(
            bytes.next_multiple_of(rvgpu_hw::PAGE_SIZE),
            rvgpu_hw::PAGE_SIZE,
        )
        .ok_or(SimError::DdiFailed(STATUS_NO_MEMORY))?;
    let dma = DmaBuf::System {
        bus_addr: alloc.bus_addr,
        len: alloc.len,
    };
    let p = Packet {
        id: 0,
        serial: 0,
        paging,
        device,
        context_kmd,
        owners,
        dma,
        bytes: 0,
    };
    written(a, p, alloc.bus_addr, words)
}

/// A render packet of `device`'s context `context_kmd`: `bytes` of commands at `dma`.
fn render_packet(dma: DmaBuf, bytes: u32, device: KmtHandle, context_kmd: usize) -> Packet {
    Packet {
        id: 0,
        serial: 0,
        paging: false,
        device: Some(device),
        context_kmd,
        owners: Vec::new(),
        dma,
        bytes,
    }
}

/// `p` with `words` written at `bus_addr`, its buffer in OS memory (freed on failure).
fn written(
    a: &AdapterShared,
    mut p: Packet,
    bus_addr: u64,
    words: &[u64],
) -> Result<Packet, SimError> {
    if a.device
        .memory()
        .write_words(BusAddr::new(bus_addr).phys(), words)
        .is_none()
    {
        free_dma(a, p.dma);
        return Err(SimError::Internal("DMA buffer write failed"));
    }
    p.bytes = (words.len() * 8) as u32;
    Ok(p)
}

/// A DMA buffer of process `pid` holding `words` ([`submit_legacy`]): on a GpuMmu
/// adapter in the process's arena (`crate::vidmm::dmabuf`, `carve` of a size), submitted by
/// its GPU VA; otherwise as [`new_packet`].
fn process_packet(
    w: Waiter,
    a: &AdapterShared,
    carve: Carve,
    pid: ProcessId,
    words: &[u64],
    device: KmtHandle,
    context_kmd: usize,
) -> Result<Packet, SimError> {
    let bytes = (words.len() * 8).max(8) as u64;
    let mut limit = None;
    loop {
        match carve(bytes)? {
            Some(c) => {
                let dma = DmaBuf::Arena {
                    bus_addr: c.bus_addr,
                    va: c.va,
                };
                let p = render_packet(dma, 0, device, context_kmd);
                return written(a, p, c.bus_addr, words);
            }
            None if !lock(&a.mm.vidmm).has_process(pid) => {
                return new_packet(a, words, false, Some(device), context_kmd, Vec::new())
            }
            // The arena is full of buffers in flight: wait for retirements, within a
            // [`RoomLimit`].
            None => {
                if let Some(f) = a.state.fault() {
                    return Err(f.into());
                }
                let limit = limit.get_or_insert_with(|| RoomLimit::start(a, w.timeout));
                let progressed = match w.step {
                    Some(m) => m.run_round(),
                    None => {
                        std::thread::sleep(Duration::from_micros(200));
                        false
                    }
                };
                if !progressed && limit.passed(w.step.is_some()) {
                    return Err(SimError::Stuck(
                        "the process's DMA arena is full and nothing retires".into(),
                    ));
                }
            }
        }
    }
}

/// Frees a DMA buffer after its fence ID retired (or it was dropped): back to its process's
/// arena, or the OS's own system memory; a process's own buffer is the process's.
pub(crate) fn free_dma(a: &AdapterShared, dma: DmaBuf) {
    match dma {
        DmaBuf::System { bus_addr, .. } => {
            a.device.memory().free_system(BusAddr::new(bus_addr));
        }
        // An arena gone with its process was freed whole.
        DmaBuf::Arena { bus_addr, .. } => {
            crate::vidmm::dmabuf::dma_release(a, bus_addr);
        }
        DmaBuf::Process { .. } => {}
    }
}

pub(crate) fn submit_new(
    w: Waiter,
    a: &AdapterShared,
    node: u32,
    mut p: Packet,
) -> Result<u32, SimError> {
    let sh = tdr::shared(a);
    wait_for_room(w, a, &sh, node)?;
    let _g = sh.gate.read().unwrap_or_else(|e| e.into_inner());
    let _order = lock(&sh.submit);
    if p.device.is_some_and(|d| ums::tdr_device_in_error(a, d)) {
        free_dma(a, p.dma);
        return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
    }
    (p.id, p.serial) = {
        let mut os = lock(&sh.os);
        os.serial += 1;
        let serial = os.serial;
        let n = os.node(node);
        let id = n.next_id;
        n.next_id = n.next_id.wrapping_add(1).max(1);
        (id, serial)
    };
    // UM-13: VidSch activates the node's power component before it submits (F0 first; the
    // packet is recorded in flight before the reference goes, so F1 waits for its retirement).
    let active = ums::node_active(a, node)?;
    let r = submit_packet(a, &sh, node, p, false);
    drop(active);
    match a.state.fault() {
        Some(f) => Err(f.into()),
        None => r,
    }
}

/// VidMm's carving of a DMA buffer of a size from the submitting process's arena
/// (`crate::vidmm::dmabuf`): `Ok(None)` when the process has no arena there or it is full for
/// now.
pub(crate) type Carve<'a> = &'a dyn Fn(u64) -> Result<Option<Carved>, SimError>;

/// `cmds` as one DMA buffer of process `p`'s context `context` through
/// `DxgkDdiSubmitCommand` ([`crate::machine::Machine::submit_legacy`]); the fence ID.
pub(crate) fn submit_legacy(
    w: Waiter,
    a: &AdapterShared,
    carve: Carve,
    p: &UmsProcess,
    context: KmtHandle,
    cmds: &[Command],
) -> Result<u32, SimError> {
    let (kmd, node, device, in_error) =
        ums::tdr_context(a, context).ok_or(SimError::DdiFailed(STATUS_INVALID_HANDLE))?;
    if device != p.device {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    }
    refuse_hw_queue_context(a, context)?;
    refuse_no_kmd_context(a, kmd)?;
    if in_error {
        return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
    }
    let words = encode(cmds)?;
    let pk = process_packet(w, a, carve, p.pid, &words, device, kmd)?;
    submit_new(w, a, node, pk)
}

/// `D3DKMTSubmitCommand` of process `p`'s buffer at GPU VA `va`, `bytes` long, on its context
/// `context`, by `DxgkDdiSubmitCommandVirtual` with no copy
/// ([`crate::machine::Machine::submit_legacy_va`], which gives the rules).
pub(crate) fn submit_legacy_va(
    w: Waiter,
    a: &AdapterShared,
    p: &UmsProcess,
    context: KmtHandle,
    va: u64,
    bytes: u32,
) -> Result<Option<u32>, SimError> {
    let bad = SimError::DdiFailed(STATUS_INVALID_PARAMETER);
    let (kmd, node, device, in_error) = check_submit_context(a, p, context)?;
    if bytes == 0 {
        return Ok(None);
    }
    if in_error {
        return Err(SimError::DdiFailed(STATUS_DEVICE_REMOVED));
    }
    if !va.is_multiple_of(8) || !bytes.is_multiple_of(8) || bytes > MAX_COMMAND_BYTES {
        return Err(bad);
    }
    if !fetchable(a, p.pid, va, bytes) {
        return Err(bad);
    }
    // 24H2 `M:VidSchiSubmitRenderVirtualCommand` @0x1400B6C90: the root (if it changed) before
    // the buffer reaches the driver.
    ums::ensure_root(a, context)?;
    let pk = render_packet(DmaBuf::Process { va }, bytes, device, kmd);
    submit_new(w, a, node, pk).map(Some)
}

/// `D3DKMTSubmitCommand`'s rules on a context it names, in 24H2 `K:DxgkSubmitCommandInternal`
/// @0x1402A4B90's order, STATUS_INVALID_PARAMETER each: not a context of `p`'s device (the
/// caller's handle table); created with `HwQueueSupported` (the context's flags word, bit
/// 0x10: a hardware-scheduled context takes work only through its hardware queues). Returns the
/// context's KMD handle, node, device and whether the device is in error.
pub(crate) fn check_submit_context(
    a: &AdapterShared,
    p: &UmsProcess,
    context: KmtHandle,
) -> Result<(usize, u32, KmtHandle, bool), SimError> {
    let bad = SimError::DdiFailed(STATUS_INVALID_PARAMETER);
    let found = ums::tdr_context(a, context).ok_or(bad.clone())?;
    if found.2 != p.device {
        return Err(bad);
    }
    refuse_hw_queue_context(a, context)?;
    refuse_no_kmd_context(a, found.0)?;
    Ok(found)
}

/// A context past [`refuse_hw_queue_context`] with no driver handle `kmd` is a `NoKmdAccess`
/// one: 24H2 checks the submission's private data (`K:DXGCONTEXT::SubmitCommand` @0x1402A6890
/// with `CheckNoKmdAccessPrivateData`) and VidSch runs it with no DDI, which is not simulated.
fn refuse_no_kmd_context(a: &AdapterShared, kmd: usize) -> Result<(), SimError> {
    if kmd == 0 {
        return Err(ddi::sim_err(
            a,
            "not simulated: a kernel-mode submission on a NoKmdAccess context".into(),
        ));
    }
    Ok(())
}

/// A context created with `HwQueueSupported`, then one created `SynchronizationOnly` (its flag
/// `& 8`), is STATUS_INVALID_PARAMETER to `D3DKMTSubmitCommand`
/// (`K:DxgkSubmitCommandInternal` @0x1402A4B90, in that order).
fn refuse_hw_queue_context(a: &AdapterShared, context: KmtHandle) -> Result<(), SimError> {
    if ums::context_hw_queue(a, context) == Some(true)
        || ums::context_sync_only(a, context) == Some(true)
    {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    Ok(())
}

/// `cmds` on the system context of `node` (no owning device); the fence ID.
pub(crate) fn submit_system(
    w: Waiter,
    a: &AdapterShared,
    node: u32,
    cmds: &[Command],
) -> Result<u32, SimError> {
    let words = encode(cmds)?;
    let system = crate::vidsch::system::context(a, node);
    let pk = new_packet(a, &words, false, None, system, Vec::new())?;
    submit_new(w, a, node, pk)
}

/// The OS's `(last submitted, last completed)` fence IDs of `node` (TDR-04).
pub(crate) fn fences(a: &AdapterShared, node: u32) -> (u32, u32) {
    let sh = tdr::shared(a);
    let mut os = lock(&sh.os);
    let n = os.node(node);
    (n.s, n.c)
}

/// Threaded machine: waits until `node`'s last completed fence ID reaches `id`
/// ([`crate::vidmm::inflight::wait_for`]);
/// whether it did within `limit` of the machine's time.
pub(crate) fn wait_completed(
    a: &AdapterShared,
    node: u32,
    id: u32,
    limit: Duration,
) -> Result<bool, SimError> {
    let sh = tdr::shared(a);
    let done = crate::vidmm::inflight::wait_for(a, limit, || {
        (lock(&sh.os).node(node).c >= id).then_some(())
    })?;
    Ok(done.is_some())
}

/// Times VidMm's paging waits on `a` looked at their fence (`wait_completed`).
pub(crate) fn paging_wait_looks(a: &AdapterShared) -> u64 {
    a.sch
        .completion
        .looks
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// Every retired fence ID as `(node, id)`, in order.
pub(crate) fn completed(a: &AdapterShared) -> Vec<(u32, u32)> {
    lock(&tdr::shared(a).os).completed.clone()
}

/// Kernel-mode DMA buffers in flight on `node`: `(fence ID, paging, device)`.
pub(crate) fn in_flight(a: &AdapterShared, node: u32) -> Vec<(u32, bool, Option<KmtHandle>)> {
    let sh = tdr::shared(a);
    let mut os = lock(&sh.os);
    os.node(node)
        .pending
        .values()
        .map(|p| (p.id, p.paging, p.device))
        .collect()
}

/// `DxgkDdiQueryCurrentFence(node)` at PASSIVE_LEVEL (UNVERIFIED level).
pub(crate) fn query_current_fence(a: &AdapterShared, node: u32) -> Result<u32, SimError> {
    let f = a
        .table
        .get()
        .and_then(|t| ddi::in_table!(t, DxgkDdiQueryCurrentFence))
        .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
    let mut args = DXGKARG_QUERYCURRENTFENCE {
        CurrentFence: 0,
        NodeOrdinal: node,
        EngineOrdinal: 0,
    };
    let st = f.passive_unaudited(a, (a.context(), &mut args))?;
    ddi::check_status(f, st)?;
    Ok(args.CurrentFence)
}

/// Whether every page of `bytes` at `va` in process `pid` translates for command fetch with
/// user privilege, as the GPU will fetch it (nothing is read).
fn fetchable(a: &AdapterShared, pid: ProcessId, va: u64, bytes: u32) -> bool {
    let Some((_, segment, root)) = lock(&a.mm.vidmm).process(pid) else {
        return false;
    };
    let Some(root) = crate::vidmm::mmu::segment_pa(a, segment, root) else {
        return false;
    };
    let mmu = Mmu::new();
    let mut at = va;
    let mut left = u64::from(bytes);
    while left > 0 {
        let Ok((_, in_page)) = mmu.translate_page(
            a.device.memory(),
            root,
            rvgpu_hw::addr::GpuVa::new(at),
            Access::Execute,
            Privilege::User,
        ) else {
            return false;
        };
        let n = in_page.min(left);
        if n == 0 {
            return false;
        }
        match at.checked_add(n) {
            Some(next) => at = next,
            None => return false,
        }
        left -= n;
    }
    true
}

/// AL-03 on this path: the last packet (its [`Packet::serial`]) `device` has in flight, whose
/// words may come from an allocation being destroyed; `None` when none is.
pub(crate) fn device_dma_work(a: &AdapterShared, device: KmtHandle) -> Option<u64> {
    let sh = tdr::existing(a)?;
    let os = lock(&sh.os);
    os.nodes
        .iter()
        .flat_map(|n| n.pending.values())
        .filter(|p| p.device == Some(device))
        .map(|p| p.serial)
        .max()
}

/// Whether every packet of `device` up to serial `last` has left VidSch (retired, or dropped
/// with its device in error). Never during a recovery, which holds the packets it resubmits
/// outside the pending lists.
pub(crate) fn device_dma_done(a: &AdapterShared, device: KmtHandle, last: u64) -> bool {
    let Some(sh) = tdr::existing(a) else {
        return true;
    };
    let Ok(_gate) = sh.gate.try_read() else {
        return false;
    };
    let os = lock(&sh.os);
    !os.nodes
        .iter()
        .flat_map(|n| n.pending.values())
        .any(|p| p.device == Some(device) && p.serial <= last)
}

/// Adapter-wide resets of `a` that have dropped their in-flight packets so far.
pub(crate) fn adapter_drops(a: &AdapterShared) -> u64 {
    lock(&tdr::shared(a).os).adapter_drops
}

/// Whether an adapter-wide reset that dropped its packets after the count `before`
/// ([`adapter_drops`]) dropped one of `ids` on `node` before it ran (the reset retires
/// in-flight packets without running them). The count moves with the drop, under the
/// lock that publishes it: a waiter woken by the drop sees it, though the reset is not
/// finished.
pub(crate) fn dropped_by_reset(a: &AdapterShared, node: u32, before: u64, ids: &[u32]) -> bool {
    let sh = tdr::shared(a);
    let os = lock(&sh.os);
    if os.adapter_drops == before || ids.is_empty() {
        return false;
    }
    os.events.iter().rev().any(
        |e| matches!(e, TdrEvent::Dropped { node: n, fence } if *n == node && ids.contains(fence)),
    )
}

/// A submission DDI's status (`DxgkDdiSubmitCommand`, `DxgkDdiSubmitCommandVirtual`,
/// `DxgkDdiPreemptCommand` of fence `id` on `node`): a failure is bug check 0x119 / 0x2
/// (`DRIVER_SUBMIT_FAILED`, with the status, the node and the fence id), raised here.
pub(crate) fn submit_succeeded(
    a: &AdapterShared,
    status: NTSTATUS,
    node: u32,
    id: u32,
) -> Result<(), SimError> {
    if NT_SUCCESS(status) {
        return Ok(());
    }
    let b = BugCheck::video_scheduler(
        vidsch::DRIVER_SUBMIT_FAILED,
        status as u32 as u64,
        u64::from(node),
        u64::from(id),
    );
    a.state.raise_bugcheck(b);
    Err(SimError::Bugcheck(b))
}
