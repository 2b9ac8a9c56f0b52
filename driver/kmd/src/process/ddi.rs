//! The GPU-process DDIs over the state of [`super`].

use rvgpu_ddi::allocation::{
    DXGKARG_CREATEPROCESS, DXGKARG_GETROOTPAGETABLESIZE, DXGKARG_SETROOTPAGETABLE,
    DXGK_CREATEPROCESSFLAGS,
};
use rvgpu_ddi::memory::D3DGPU_PHYSICAL_ADDRESS;
use rvgpu_ddi::HANDLE;
use rvgpu_hw::{mmu, regs};

use crate::adapter::{Adapter, Live};
use crate::gpummu;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::runlist;
use crate::sched::ddi::with_adapter;
use crate::sched::Sched;
use crate::status::{self, Status};

use super::{Process, MAX_PROCESSES};

/// A process id no live process of `s` has, after the last one handed out (so ids are
/// reused as late as possible); `None` only if every id is taken, which `MAX_PROCESSES`
/// rules out.
fn free_id(s: &Sched) -> Option<u32> {
    let mut id = s.last_process_id;
    for _ in 0..=MAX_PROCESSES {
        id = id.wrapping_add(1);
        if id == 0 || id == rvgpu_hw::queue::NO_QUEUE {
            continue;
        }
        if !s.processes.values().any(|p| p.id == id) {
            return Some(id);
        }
    }
    None
}

/// The device physical address of a page table VidMm names by segment and offset: local
/// memory only (docs/memory.md: page tables live in the local segment), 4 KiB aligned, the
/// whole table inside the segment.
pub fn table_address<P: Platform>(
    live: &Live<P>,
    at: &D3DGPU_PHYSICAL_ADDRESS,
) -> Result<u64, Status> {
    let (base, size) =
        gpummu::local_segment(live.mmu(), at.SegmentId).ok_or(status::INVALID_PARAMETER)?;
    let off = at.SegmentOffset;
    let end = off
        .checked_add(mmu::TABLE_SIZE)
        .ok_or(status::INVALID_PARAMETER)?;
    if !off.is_multiple_of(mmu::TABLE_SIZE) || end > size {
        return Err(status::INVALID_PARAMETER);
    }
    rvgpu_hw::addr::VRAM_BASE
        .checked_add(base)
        .and_then(|b| b.checked_add(off))
        .ok_or(status::INVALID_PARAMETER)
}

/// Physical GPUs behind the adapter: the most PASIDs a process can be given, one per physical
/// GPU (the `DXGKARG_CREATEPROCESS` page).
const PHYSICAL_ADAPTERS: u32 = 1;

/// DxgkDdiCreateProcess (PASSIVE). `NumPasid` is the physical-adapter count whatever the
/// adapter supports (24H2: K `DXGPROCESS_RENDER_ADAPTER_INFO::Initialize` @0x1403ACC00 passes
/// it with `pPasid` NULL on an adapter without a GPU-VA IOMMU; the page with an array), so 0 or
/// 1 is accepted and more is refused. `pPasid` is never read: rvgpu isolates processes by their
/// page tables, not by PASID-tagged translation, so neither a NULL array nor one the driver
/// could not read can matter.
pub fn create<P: Platform>(a: &Adapter<P>, args: &mut DXGKARG_CREATEPROCESS) -> Result<(), Status> {
    let live = a.started()?;
    if !gpummu::supported(live.mmu()) {
        return Err(status::NOT_SUPPORTED);
    }
    let flags = args.Flags;
    let known = DXGK_CREATEPROCESSFLAGS::default()
        .with(DXGK_CREATEPROCESSFLAGS::SystemProcess, 1)
        .with(DXGK_CREATEPROCESSFLAGS::GdiProcess, 1);
    // Virtual-machine processes need a VM worker rvgpu does not support.
    if flags.Value & !known.Value != 0 || args.NumPasid > PHYSICAL_ADAPTERS {
        return Err(status::INVALID_PARAMETER);
    }
    // Room for the records of the storage pages VidMm maps in the process before the
    // driver's next DDI (`fence::pages`): BuildPagingBuffer allocates none.
    live.fences
        .lock()
        .pages
        .try_reserve_spare::<P>()
        .map_err(|_| status::NO_MEMORY)?;
    let h = a.new_handle(Kind::Process)?;
    let mut s = live.sched.lock();
    if s.processes.len() >= MAX_PROCESSES {
        return Err(status::INSUFFICIENT_RESOURCES);
    }
    let id = free_id(&s).ok_or(status::INSUFFICIENT_RESOURCES)?;
    s.processes.try_insert::<P>(
        h,
        Process {
            os_handle: args.hDxgkProcess.addr(),
            system: flags.is_set(DXGK_CREATEPROCESSFLAGS::SystemProcess),
            id,
            root: 0,
        },
    )?;
    s.last_process_id = id;
    drop(s);
    args.hKmdProcess = h.as_handle();
    Ok(())
}

/// DxgkDdiDestroyProcess (PASSIVE): the record goes whatever still names it. 24H2 destroys a
/// process's devices before its GPU process (`K:DXGPROCESS::Destroy` @0x14034D4E0, then
/// `K:DXGPROCESS::DestroyAdapterInfo` @0x14036CF30) and ignores the DDI's status
/// (`K:ADAPTER_RENDER::DdiDestroyProcess` @0x1403C0508 only logs it): a refusal would leak the
/// record for good, and with it one of `MAX_PROCESSES`. A device that still names the process
/// (an OS that did not destroy it first) is detached: its queues get no process id.
pub fn destroy<P: Platform>(a: &Adapter<P>, h: HANDLE) -> Result<(), Status> {
    let live = a.started()?;
    let h = Handle::decode_on(h, Kind::Process, a.table_slot())?;
    let mut s = live.sched.lock();
    if !s.processes.contains_key(&h) {
        return Err(status::INVALID_HANDLE);
    }
    for d in s.devices.values_mut().filter(|d| d.process == Some(h)) {
        d.process = None;
    }
    let system = s.processes.remove(&h).is_some_and(|p| p.system);
    if system && s.system_root != 0 {
        // The paging process's tables go back to VidMm: the CMP must not walk them again.
        let old = core::mem::replace(&mut s.system_root, 0);
        live.regs.write(regs::SystemPageTableBase::new(0));
        live.regs.write(regs::TlbInvalidate::new(old));
    }
    drop(s);
    // Its fence mappings go with it (a later process may get the same handle).
    live.fences.lock().pages.forget(h);
    Ok(())
}

/// DxgkDdiGetRootPageTableSize (PASSIVE): the root is one fixed table of 512 entries, so the
/// driver answers that count whatever VidMm asked, and the table's size in bytes.
pub fn root_size(args: &mut DXGKARG_GETROOTPAGETABLESIZE) -> usize {
    if args.PhysicalAdapterIndex != 0 {
        return 0;
    }
    args.NumberOfPte = u32::try_from(mmu::ENTRIES_PER_TABLE).unwrap_or(512);
    usize::try_from(mmu::TABLE_SIZE).unwrap_or(0)
}

/// DxgkDdiSetRootPageTable (PASSIVE, returns nothing): records the root for the context (from
/// then on it wins over the one learnt for its process, [`learn_root`]) and recommits its
/// engine's runlist when the context has queues there, so the device translates their next
/// packet through it. A request the driver cannot honour (unknown context, a root
/// outside local memory) leaves the context as it was and is logged: the DDI has no status.
pub fn set_root<P: Platform>(args: &DXGKARG_SETROOTPAGETABLE) -> Result<(), Status> {
    with_adapter::<P, _>(args.hContext, Kind::Context, |_, live, ctx| {
        if !gpummu::supported(live.mmu()) {
            return Err(status::NOT_SUPPORTED);
        }
        if u64::from(args.NumEntries) > mmu::ENTRIES_PER_TABLE || args.NumEntries == 0 {
            return Err(status::INVALID_PARAMETER);
        }
        let root = table_address(live, &args.Address)?;
        let mut s = live.sched.lock();
        let system = s
            .contexts
            .get(&ctx)
            .and_then(|c| s.devices.get(&c.device))
            .ok_or(status::INVALID_HANDLE)?
            .system;
        if system {
            // A system context runs the paging process: VidMm sets the paging process's root
            // on the paging node's system context ([D] VidSchSetPagingNodePageDirectory from
            // VIDMM_GLOBAL::InitPagingProcessVaSpace). It becomes the CMP's system space
            // (hardware.md 12.4); the system contexts' own rings keep running on the bus, as
            // paging buffers address memory physically (PageTableUpdateMode GPU_PHYSICAL).
            let old = core::mem::replace(&mut s.system_root, root);
            live.regs.write(regs::SystemPageTableBase::new(root));
            if old != 0 && old != root {
                // No translation of the old root may be used after this returns (12.5).
                live.regs.write(regs::TlbInvalidate::new(old));
            }
            return Ok(());
        }
        // The named root wins over the one learnt for the process (`learn_root`); the
        // descriptors change only if the root the context runs under does.
        let before = s
            .contexts
            .get(&ctx)
            .map(|c| s.root_of(c))
            .ok_or(status::INVALID_HANDLE)?;
        let engine = {
            let c = s.contexts.get_mut(&ctx).ok_or(status::INVALID_HANDLE)?;
            c.root = root;
            c.engine
        };
        if before == root {
            return Ok(());
        }
        // With runlist updates only the context's queues are committed (none: nothing);
        // a whole-runlist commit is only worth it when the context has queues.
        if s.runlist_update || s.queues.values().any(|q| q.context == ctx) {
            runlist::commit_context(&live.regs, &s, engine, ctx)?;
        }
        Ok(())
    })
}

/// Learns process `h_process`'s root from a root-level `UPDATEPAGETABLE` VidMm builds for it
/// (the table at `at`), and moves the queues of the process's contexts that have no root of
/// their own (`DxgkDdiSetRootPageTable`) onto it: their runlist slots are recommitted, as
/// [`set_root`] does.
///
/// Why from the paging path: on hardware-scheduled nodes 24H2 sends `DxgkDdiSetRootPageTable`
/// only from M `VidSchiEnsureRootPageTableUpdated` @0x1400EAF40, reached from a kernel-mode
/// submission (M `VidSchSubmitCommandToHwQueue` @0x140048F00) or a context resume
/// (M `VidSchiSuspendResumeHwContext` @0x140020730), never at context, queue or doorbell
/// creation; a context whose work comes only through doorbells may never get one. VidMm fills
/// `hProcess` (the driver's process handle), `PageTableLevel` and `PageTableAddress` of every
/// update (M `VIDMM_GLOBAL::UpdatePageTable` @0x1400ABE20, `GetDriverUpdateAddress`
/// @0x1400ABA84), and links the process's first tables into its root
/// (M `VIDMM_PAGE_DIRECTORY::CommitVirtualAddressRange` @0x1400F28C0) before any of its memory
/// is mapped. `FLUSHTLB` names the root too (M `VIDMM_GLOBAL::FlushGpuVaTlb` @0x1400E8D80)
/// but comes only after entries are changed, never before a process's first use.
///
/// The system (paging) process is left alone: its root is the CMP's system space, set on the
/// paging node's context. An unknown process handle is STATUS_INVALID_HANDLE, a table outside
/// local memory STATUS_INVALID_PARAMETER; nothing changes then. Allocates nothing (the caller
/// is `DxgkDdiBuildPagingBuffer`).
pub fn learn_root<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_process: HANDLE,
    at: &D3DGPU_PHYSICAL_ADDRESS,
) -> Result<(), Status> {
    let p = Handle::decode_on(h_process, Kind::Process, a.table_slot())?;
    let root = table_address(live, at)?;
    let mut s = live.sched.lock();
    if !note_root(&mut s, p, root)? {
        return Ok(());
    }
    recommit_learnt(&live.regs, &s, p)
}

/// Records `root` as process `p`'s learnt root: whether it changed (the system process's is
/// never recorded). STATUS_INVALID_HANDLE for a process the adapter does not have.
fn note_root(s: &mut Sched, p: Handle, root: u64) -> Result<bool, Status> {
    let process = s.processes.get_mut(&p).ok_or(status::INVALID_HANDLE)?;
    if process.system || process.root == root {
        return Ok(false);
    }
    process.root = root;
    Ok(true)
}

/// Recommits the runlist slots of the queues of process `p`'s contexts that run under its
/// learnt root (no root of their own): one slot each with runlist updates, else each engine
/// they are on once.
fn recommit_learnt<P: Platform>(
    regs: &crate::mmio::Regs<P>,
    s: &Sched,
    p: Handle,
) -> Result<(), Status> {
    let mut engines = 0u32;
    let mut result = Ok(());
    for (h, q) in s.queues.iter() {
        let learnt = s
            .contexts
            .get(&q.context)
            .is_some_and(|c| c.root == 0 && s.process_of_device(c.device) == Some(p));
        if !learnt {
            continue;
        }
        if s.runlist_update {
            // Every slot is committed even after a failure (as `runlist::commit_context`).
            if let Err(e) = runlist::commit_slot(regs, s, q.engine, q.id, Some(*h)) {
                result = Err(e);
            }
        } else {
            engines |= 1u32.checked_shl(q.engine).unwrap_or(0);
        }
    }
    for engine in (0..u32::BITS).filter(|e| engines & (1 << e) != 0) {
        if let Err(e) = runlist::commit(regs, s, engine) {
            result = Err(e);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;
    use crate::handle::fixtures::h;
    use crate::handle::Kind;

    fn process(id: u32) -> Process {
        Process {
            os_handle: 0x100,
            system: false,
            id,
            root: 0,
        }
    }

    /// Process ids skip 0 (queues of no process), `NO_QUEUE` and the ids live processes hold,
    /// and are reused as late as possible.
    #[test]
    fn free_ids_skip_reserved_and_live_ones() {
        let mut s = Sched::new(0, false, alloc::vec::Vec::new());
        assert_eq!(free_id(&s), Some(1));
        s.processes.insert(h(Kind::Process, 1), process(1));
        s.processes.insert(h(Kind::Process, 2), process(2));
        s.last_process_id = 1;
        assert_eq!(free_id(&s), Some(3), "2 is taken");
        s.last_process_id = rvgpu_hw::queue::NO_QUEUE - 1;
        assert_eq!(free_id(&s), Some(3), "NO_QUEUE, wrap past 0, 1 and 2 taken");
    }

    /// A context's queues carry its device's process id; a device of no process gives 0.
    #[test]
    fn id_of_context_follows_device_to_process() {
        let mut s = Sched::new(0, false, alloc::vec::Vec::new());
        let (p, with, without) = (h(Kind::Process, 1), h(Kind::Device, 2), h(Kind::Device, 3));
        s.processes.insert(p, process(7));
        for (d, process) in [(with, Some(p)), (without, None)] {
            s.devices
                .insert(d, crate::context::fixtures::device(process));
        }
        for (n, device) in [(4, with), (5, without)] {
            s.contexts.insert(
                h(Kind::Context, n),
                Context {
                    device,
                    engine: 0,
                    suspended: false,
                    os_handle: 0,
                    root: 0,
                    priority: crate::hws::ContextPriority::DEFAULT,
                },
            );
        }
        assert_eq!(s.process_id_of_context(h(Kind::Context, 4)), 7);
        assert_eq!(s.process_id_of_context(h(Kind::Context, 5)), 0);
        assert_eq!(
            s.process_id_of_context(h(Kind::Context, 6)),
            0,
            "unknown context"
        );
    }

    /// Two processes (handles 1, 2), each with a device (3, 4) and a context (5, 6) on engine
    /// 0 holding one queue with a ring (ids 7, 8).
    fn two_processes() -> Sched {
        use crate::runlist::fixtures::{queue, ring};
        let mut s = Sched::new(0, false, alloc::vec::Vec::new());
        for (n, d, c, q) in [(1, 3, 5, 7u32), (2, 4, 6, 8)] {
            s.processes
                .insert(h(Kind::Process, n), process(q.saturating_sub(6)));
            s.devices.insert(
                h(Kind::Device, d),
                crate::context::fixtures::device(Some(h(Kind::Process, n))),
            );
            s.contexts.insert(
                h(Kind::Context, c),
                Context {
                    device: h(Kind::Device, d),
                    engine: 0,
                    suspended: false,
                    os_handle: 0,
                    root: 0,
                    priority: crate::hws::ContextPriority::DEFAULT,
                },
            );
            s.queues.insert(
                h(Kind::Queue, u64::from(q)),
                queue(c, 0, q, Some(ring(n)), true),
            );
        }
        s
    }

    /// (queue id, root) of each descriptor engine 0's runlist holds.
    fn listed(s: &Sched) -> alloc::vec::Vec<(u32, u64)> {
        crate::runlist::build(s, 0)
            .map(|d| (d.queue_id, d.page_table_base.get()))
            .collect()
    }

    /// UM-15: a process whose work comes only through doorbells runs under the root learnt
    /// from VidMm's root-level update of that process (24H2 sends it no SetRootPageTable);
    /// another process's update gives it nothing, and until its own arrives its queue stays off
    /// the runlist.
    #[test]
    fn um_15_a_doorbell_only_process_runs_under_its_learnt_root_and_no_other_process_s() {
        let mut s = two_processes();
        assert_eq!(
            listed(&s),
            [],
            "no root yet: nothing runs in the identity space"
        );
        assert_eq!(note_root(&mut s, h(Kind::Process, 2), 0x8000), Ok(true));
        assert_eq!(listed(&s), [(8, 0x8000)], "process 2's queue only");
        assert_eq!(
            s.processes.get(&h(Kind::Process, 1)).map(|p| p.root),
            Some(0)
        );
        assert_eq!(note_root(&mut s, h(Kind::Process, 1), 0x4000), Ok(true));
        assert_eq!(listed(&s), [(7, 0x4000), (8, 0x8000)]);
        assert_eq!(s.buffer_root(&h(Kind::Context, 5)), Ok(Some(0x4000)));
        assert_eq!(
            note_root(&mut s, h(Kind::Process, 1), 0x4000),
            Ok(false),
            "the same root again changes nothing"
        );
    }

    /// UM-15: an update naming a process the adapter does not have (unknown, or destroyed) is
    /// refused and leaves every root as it was; the system process's updates set no learnt
    /// root (its space is the CMP's system space).
    #[test]
    fn um_15_an_unknown_process_s_root_is_refused_and_the_system_process_learns_none() {
        let mut s = two_processes();
        assert_eq!(
            note_root(&mut s, h(Kind::Process, 9), 0x4000),
            Err(status::INVALID_HANDLE)
        );
        assert!(s.processes.values().all(|p| p.root == 0));
        assert_eq!(listed(&s), []);
        if let Some(p) = s.processes.get_mut(&h(Kind::Process, 1)) {
            p.system = true;
        }
        assert_eq!(note_root(&mut s, h(Kind::Process, 1), 0x4000), Ok(false));
        assert_eq!(
            s.processes.get(&h(Kind::Process, 1)).map(|p| p.root),
            Some(0)
        );
    }

    /// UM-15: the root DxgkDdiSetRootPageTable names for a context wins over the learnt one,
    /// and a later root-level rewrite at another table (VidMm moved the root) moves only the
    /// contexts that run under the learnt root.
    #[test]
    fn um_15_set_root_page_table_wins_and_a_moved_root_moves_the_learnt_contexts() {
        let mut s = two_processes();
        // A second context of process 1 with its own queue.
        s.contexts.insert(
            h(Kind::Context, 9),
            Context {
                device: h(Kind::Device, 3),
                engine: 0,
                suspended: false,
                os_handle: 0,
                root: 0,
                priority: crate::hws::ContextPriority::DEFAULT,
            },
        );
        s.queues.insert(
            h(Kind::Queue, 10),
            crate::runlist::fixtures::queue(
                9,
                0,
                10,
                Some(crate::runlist::fixtures::ring(3)),
                true,
            ),
        );
        assert_eq!(note_root(&mut s, h(Kind::Process, 1), 0x4000), Ok(true));
        if let Some(c) = s.contexts.get_mut(&h(Kind::Context, 9)) {
            c.root = 0xC000;
        }
        assert_eq!(
            listed(&s),
            [(7, 0x4000), (10, 0xC000)],
            "the named root wins"
        );
        assert_eq!(note_root(&mut s, h(Kind::Process, 1), 0x6000), Ok(true));
        assert_eq!(
            listed(&s),
            [(7, 0x6000), (10, 0xC000)],
            "the learnt root moved; the named one stays"
        );
        assert_eq!(s.buffer_root(&h(Kind::Context, 5)), Ok(Some(0x6000)));
        assert_eq!(s.buffer_root(&h(Kind::Context, 9)), Ok(Some(0xC000)));
    }

    /// The root is one table of 512 entries whatever VidMm asked; another physical adapter
    /// gets 0 bytes.
    #[test]
    fn root_size_is_one_fixed_table_on_adapter_zero_only() {
        let mut args = rvgpu_ddi::allocation::DXGKARG_GETROOTPAGETABLESIZE {
            NumberOfPte: 3,
            PhysicalAdapterIndex: 0,
        };
        assert_eq!(root_size(&mut args), 4096);
        assert_eq!(args.NumberOfPte, 512);
        let mut other = rvgpu_ddi::allocation::DXGKARG_GETROOTPAGETABLESIZE {
            NumberOfPte: 3,
            PhysicalAdapterIndex: 1,
        };
        assert_eq!(root_size(&mut other), 0);
        assert_eq!(other.NumberOfPte, 3, "left as it was");
    }
}
