//! The GpuMmu paging operations of `DxgkDdiBuildPagingBuffer` (docs/memory.md "Who
//! writes page tables"): VidMm decides every entry; the KMD translates each `DXGK_PTE` into
//! the device's format and writes it with paging-buffer packets that run on the paging node.
//!
//! - `UPDATEPAGETABLE` → `WRITE_DATA` packets of translated entries at the table's physical
//!   address (rvgpu reports `DXGK_PAGETABLEUPDATE_GPU_PHYSICAL`; the paging node's queue runs
//!   in the identity space). Multipass: `MultipassOffset` counts entries already written.
//!   With `UpdateMode` CPU_VIRTUAL (what VidMm sends while it builds the paging process's
//!   space, whatever the driver reported) the entries are stored through the table's CPU
//!   address during the call and the buffer stays empty. With `Flags.Repeat` the one entry
//!   VidMm passes is written to every slot.
//! - `FLUSHTLB` → one `TLB_INVALIDATE` packet for the root, ordered after the writes before
//!   it in the same queue (hardware.md §12.5).
//! - `COPYPAGETABLEENTRIES` → `COPY` packets between tables. The page gives the tables as
//!   GPU virtual addresses of the paging process; rvgpu's paging process is the identity
//!   space, so they are device physical addresses (UNVERIFIED against Windows: VidMm sends
//!   this operation only when it moves page tables, which the simulated VidMm never does).
//!
//! The `USER` bit is the KMD's: a leaf mapped for an allocation the UMD created, or a page of
//! VidMm's own (no allocation named: fence storage, a monitored fence's value), in a process
//! that is not the system process, may be reached from user-mode queues; everything else is
//! kernel-only. VidMm maps a native fence's MonitoredValue page like any page of its own
//! (24H2: no `hAllocation`, no `NativeFence` flag), so the leaves it maps without an allocation
//! are recorded (`fence::pages`), and from the fence's first open that page is never a user
//! page again (NF-01): its recorded leaves are rewritten ([`store_entry`]) and every later
//! leaf of it, whichever table VidMm rewrites, is translated without `USER`.

use core::sync::atomic::Ordering;

use rvgpu_ddi::memory::{
    DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES, DXGK_BUILDPAGINGBUFFER_FLUSHTLB,
    DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE, DXGK_PAGETABLEUPDATE_CPU_VIRTUAL,
    DXGK_PAGETABLEUPDATE_GPU_PHYSICAL, DXGK_PTE, DXGK_UPDATEPAGETABLEFLAGS,
};
use rvgpu_ddi::ntstatus::STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER;
use rvgpu_ddi::NTSTATUS;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::{self, Command};
use rvgpu_hw::mmu;

use crate::adapter::{Adapter, Live};
use crate::allocation;
use crate::args::Call;
use crate::fence;
use crate::gpummu;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::process;
use crate::status::{self, Status};

/// Most ranges one COPYPAGETABLEENTRIES may carry (a table's worth).
const MAX_COPY_RANGES: u32 = 512;
/// Entries translated per WRITE_DATA packet (bounds the stack buffer; the DPC-free PASSIVE
/// path still runs on a small kernel stack).
const BATCH: usize = 64;

/// Whose pages an UPDATEPAGETABLE maps, which decides the `USER` bit of its leaves.
#[derive(Clone, Copy, Debug)]
enum Mapping {
    /// The system (paging) process: kernel-only.
    System,
    /// An allocation the UMD created: user pages, with the allocation's own limits.
    Allocation(allocation::PagePolicy),
    /// A native fence's storage (`DXGK_UPDATEPAGETABLEFLAGS::NativeFence`): CurrentValue is a
    /// user page, MonitoredValue never (NF-01). The pages, as bus page frames.
    NativeFence { current: u64, monitored: u64 },
    /// A native fence whose system addresses the OS did not pass at create: treated as
    /// [`Mapping::Os`].
    UnplacedNativeFence,
    /// VidMm's own mapping for the process (no allocation of the driver's: native-fence
    /// storage, a monitored fence value the process signals from the GPU): user pages but
    /// for the MonitoredValue pages of opened fences (`fence::pages`), which cannot be told
    /// from the others before the open names them.
    Os,
}

impl Mapping {
    fn of<P: Platform>(
        a: &Adapter<P>,
        live: &Live<P>,
        op: &DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    ) -> Result<Self, Status> {
        if !allocation::ddi::user_process(a, live, op.hProcess)? {
            return Ok(Self::System);
        }
        if op.Flags.get(DXGK_UPDATEPAGETABLEFLAGS::NativeFence) != 0 {
            if op.hAllocation.is_null() {
                return Ok(Self::UnplacedNativeFence);
            }
            let fences = live.fences.lock();
            let f = fences
                .get(op.hAllocation.addr())
                .ok_or(status::INVALID_HANDLE)?;
            if f.current_gpu.is_null() {
                // Learnt at an earlier open (`fence::pages`): the pages are told apart by their
                // physical words, as for a placed fence. Only the mappings made before the
                // fence's first open cannot be.
                return Ok(match f.words {
                    Some((cv, mv)) => Self::NativeFence {
                        current: cv / mmu::PAGE_4K,
                        monitored: mv / mmu::PAGE_4K,
                    },
                    None => Self::UnplacedNativeFence,
                });
            }
            let frame = |va: GpuVa| va.get() / mmu::PAGE_4K;
            return Ok(Self::NativeFence {
                current: frame(f.current_gpu),
                monitored: frame(f.monitored_gpu),
            });
        }
        if op.hAllocation.is_null() {
            return Ok(Self::Os);
        }
        allocation::ddi::page_policy(a, live, op.hAllocation)
            .map(Self::Allocation)
            .ok_or(status::INVALID_HANDLE)
    }

    /// Whether leaf `e` may be reached from user-mode queues.
    fn user<P: Platform>(&self, live: &Live<P>, e: &DXGK_PTE) -> Result<bool, Status> {
        match *self {
            Self::System => Ok(false),
            Self::Allocation(_) => Ok(true),
            Self::Os | Self::UnplacedNativeFence => {
                if !e.valid() {
                    return Ok(false);
                }
                if e.large_page() {
                    // Fence storage is mapped in 4 KiB pages (a page per slot kind).
                    return Ok(true);
                }
                let page = gpummu::device_address(live.mmu(), e, 0)?;
                Ok(!live.fences.lock().pages.is_protected(page))
            }
            Self::NativeFence { current, monitored } => {
                if !e.valid() {
                    return Ok(false);
                }
                // Fence addresses are device addresses; the entry's is segment-relative for
                // local memory (an INTRA_GPU fence in VRAM, NF-06).
                let page = gpummu::device_address(live.mmu(), e, 0)? / mmu::PAGE_4K;
                if page == monitored {
                    Ok(false)
                } else if page == current {
                    Ok(true)
                } else {
                    // A fence mapping of a page that holds neither of the fence's values.
                    Err(status::INVALID_PARAMETER)
                }
            }
        }
    }
}

/// What one pass wrote: words, and whether the operation is complete.
#[derive(Debug, PartialEq, Eq)]
pub struct Pass {
    pub words: usize,
    /// `Some(next)`: call again with `MultipassOffset = next`.
    pub more: Option<u32>,
}

/// Entry `i` of an UPDATEPAGETABLE's array. With `Repeat` the array holds one entry that
/// every slot takes (24H2's invalidations: M `VIDMM_GLOBAL::UpdatePageTable` @0x1400ABE20
/// points it at one zeroed `DXGK_PTE` on VidMm's stack), otherwise `NumPageTableEntries`.
fn entry(call: Call<'_>, op: &DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE, i: u32) -> Option<DXGK_PTE> {
    let (idx, held) = if op.Flags.get(DXGK_UPDATEPAGETABLEFLAGS::Repeat) != 0 {
        (0, 1)
    } else {
        (
            usize::try_from(i).ok()?,
            usize::try_from(op.NumPageTableEntries).ok()?,
        )
    };
    call.element(op.pPageTableEntries, idx, held)
}

/// UPDATEPAGETABLE from entry `first` on: into `out` as WRITE_DATA packets (GPU_PHYSICAL), or
/// stored straight into the table through its CPU address (CPU_VIRTUAL: 24H2's updates while
/// VidMm builds the paging process's space, M `InitPagingProcessVaSpace` @0x1400F71BC with
/// `GetDriverUpdateAddress` @0x1400ABA84; a refusal there is bug check 0x10E).
pub fn update<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    live: &Live<P>,
    op: &DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    first: u32,
    out: &mut [u64],
) -> Result<Pass, Status> {
    let cpu = match op.UpdateMode {
        DXGK_PAGETABLEUPDATE_GPU_PHYSICAL => false,
        DXGK_PAGETABLEUPDATE_CPU_VIRTUAL => true,
        _ => return Err(status::INVALID_PARAMETER),
    };
    if op.Flags.get(DXGK_UPDATEPAGETABLEFLAGS::Use64KBPages) != 0
        || op.Flags.get(DXGK_UPDATEPAGETABLEFLAGS::Reserved) != 0
    {
        return Err(status::INVALID_PARAMETER);
    }
    let level = u8::try_from(op.PageTableLevel).map_err(|_| status::INVALID_PARAMETER)?;
    if level >= mmu::LEVELS {
        return Err(status::INVALID_PARAMETER);
    }
    let n = op.NumPageTableEntries;
    let end = op
        .StartIndex
        .checked_add(n)
        .ok_or(status::INVALID_PARAMETER)?;
    if n == 0 || u64::from(end) > mmu::ENTRIES_PER_TABLE || op.pPageTableEntries.is_null() {
        return Err(status::INVALID_PARAMETER);
    }
    if first >= n {
        return Err(status::INVALID_PARAMETER);
    }
    let who = Mapping::of(a, live, op)?;
    let policy = match who {
        Mapping::Allocation(al) => Some(al),
        _ => None,
    };
    // Entry `i` in the device's format.
    let translate = |i: u32| -> Result<u64, Status> {
        let mut e = entry(call, op, i).ok_or(status::INVALID_PARAMETER)?;
        if let Some(p) = policy.filter(|_| level == 0 || e.large_page()) {
            // The allocation's own limits apply to its pages whatever VidMm asked (a
            // directory's update that carries a large page carries links too).
            e = e.with_read_only(e.read_only() || p.gpu_read_only);
            e = e.with_no_execute(e.no_execute() || !p.executable);
        }
        // A large page is a leaf one level up (DXGK_PTE::LargePage).
        let user = (level == 0 || e.large_page()) && who.user(live, &e)?;
        gpummu::device_entry(live.mmu(), &e, level, user)
    };
    let (written, next) = if cpu {
        (0, store_entries(call, op, first, translate)?)
    } else {
        write_entries(live, op, first, out, translate)?
    };
    if level == mmu::ROOT_LEVEL && !cpu && first == 0 && !matches!(who, Mapping::System) {
        // The table VidMm writes at the root level is the process's root.
        let at = crate::args::gpu_physical_table(op);
        process::ddi::learn_root(a, live, op.hProcess, &at)?;
    }
    if first == 0 && next > 0 && !matches!(who, Mapping::System) {
        // The first pass translated every entry it wrote: record what the leaves of the
        // process's space now map (the doorbell checks rings against it).
        record(call, a, live, op, who, level, cpu)?;
    }
    if next == first {
        return Ok(Pass {
            words: 0,
            more: Some(first),
        });
    }
    Ok(Pass {
        words: written,
        more: (next < n).then_some(next),
    })
}

/// Records what update `op` at `level` maps and unmaps, a run of like entries at a time: a
/// directory's update holds links, large pages and invalid entries side by side (24H2 writes
/// a fresh directory whole and an updated one from its first changed entry to its last:
/// M:VIDMM_PAGE_DIRECTORY::CommitVirtualAddressRange @0x1400F28C0), a leaf table's one kind.
fn record<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    live: &Live<P>,
    op: &DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    who: Mapping,
    level: u8,
    cpu: bool,
) -> Result<(), Status> {
    let h_allocation = match who {
        Mapping::Allocation(_) => op.hAllocation,
        _ => core::ptr::null_mut(),
    };
    // Bytes one entry of `level` covers (levels are below `mmu::LEVELS`, checked).
    let span = mmu::span(level).ok_or(status::INVALID_PARAMETER)?;
    let n = op.NumPageTableEntries;
    let kind = |i: u32| -> Result<(u64, bool), Status> {
        let e = entry(call, op, i).ok_or(status::INVALID_PARAMETER)?;
        Ok((pages_per_entry(level, &e, op.Flags), e.valid()))
    };
    let mut i = 0;
    while i < n {
        let (per, valid) = kind(i)?;
        let mut j = i.saturating_add(1);
        while j < n && kind(j)? == (per, valid) {
            j = j.saturating_add(1);
        }
        if per != 0 {
            let from = u64::from(i).saturating_mul(span);
            let va = op.FirstPteVirtualAddress.saturating_add(from);
            let pages = u64::from(j.saturating_sub(i)).saturating_mul(per);
            allocation::ddi::note_mapping(
                a,
                live,
                op.hProcess,
                h_allocation,
                op.AllocationOffsetInBytes.saturating_add(from),
                GpuVa::new(va),
                pages,
                valid,
            );
            if !valid {
                // An unmapping: no fence page stays recorded where nothing is mapped.
                forget_fence_pages(a, live, op.hProcess, GpuVa::new(va), pages);
            }
        }
        i = j;
    }
    let e0 = entry(call, op, 0).ok_or(status::INVALID_PARAMETER)?;
    if level == 0 && e0.valid() && matches!(who, Mapping::UnplacedNativeFence | Mapping::Os) && !cpu
    {
        // Recorded with the entry's device address, which only a GPU_PHYSICAL update
        // names (24H2 sends CPU_VIRTUAL only while it builds the paging process's space,
        // which maps no process's fence pages).
        let at = crate::args::gpu_physical_table(op);
        let table = process::ddi::table_address(live, &at)?;
        note_fence_pages(call, a, live, op, who, table);
    }
    Ok(())
}

/// The 4 KiB pages each entry of an update at `level` whose first entry is `e0` maps or
/// unmaps: a leaf one; a level-1 large page 512; an invalidated level-1 entry 512 too, since
/// whatever it held (a large page, or a leaf table now unlinked) nothing stays mapped in its
/// span. The invalidation names no allocation (24H2: M:VIDMM_PAGE_TABLE::
/// UpdatePageTableInvalidate @0x1400AB920), so the entry alone tells. A fresh table's first
/// clear (`InitialUpdate`) had nothing below it; other entries link tables and map nothing.
fn pages_per_entry(level: u8, e0: &DXGK_PTE, flags: DXGK_UPDATEPAGETABLEFLAGS) -> u64 {
    let initial = flags.get(DXGK_UPDATEPAGETABLEFLAGS::InitialUpdate) != 0;
    match level {
        0 => 1,
        mmu::LARGE_LEVEL if e0.large_page() || (!e0.valid() && !initial) => {
            mmu::PAGE_2M / mmu::PAGE_4K
        }
        _ => 0,
    }
}

/// CPU_VIRTUAL: stores entries `first..` into the table at the CPU address VidMm gave;
/// returns the entry after the last stored (all of them). Every entry is translated before
/// any is stored, so a refused one leaves the table as it was.
fn store_entries(
    call: Call<'_>,
    op: &DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    first: u32,
    translate: impl Fn(u32) -> Result<u64, Status>,
) -> Result<u32, Status> {
    let entries = usize::try_from(mmu::ENTRIES_PER_TABLE).map_err(|_| status::INVALID_PARAMETER)?;
    let table = call
        .cpu_table(crate::args::cpu_virtual_table(op), entries)
        .ok_or(status::INVALID_PARAMETER)?;
    let n = op.NumPageTableEntries;
    for i in first..n {
        translate(i)?;
    }
    for i in first..n {
        let v = translate(i)?;
        // StartIndex + n fits the table (checked by `update`).
        let slot = usize::try_from(op.StartIndex.saturating_add(i))
            .ok()
            .and_then(|at| table.get(at))
            .ok_or(status::INVALID_PARAMETER)?;
        slot.store(v, Ordering::Release);
    }
    Ok(n)
}

/// GPU_PHYSICAL: WRITE_DATA packets of entries `first..` into `out`, as many as fit; returns
/// the words written and the entry after the last one written.
fn write_entries<P: Platform>(
    live: &Live<P>,
    op: &DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    first: u32,
    out: &mut [u64],
    translate: impl Fn(u32) -> Result<u64, Status>,
) -> Result<(usize, u32), Status> {
    // The table address arm UpdateMode (GPU_PHYSICAL, checked) names.
    let at = crate::args::gpu_physical_table(op);
    let table = process::ddi::table_address(live, &at)?;
    let n = op.NumPageTableEntries;
    let mut written = 0usize;
    let mut next = first;
    let mut data = [0u64; BATCH];
    while next < n {
        let room = out.len().saturating_sub(written);
        // Header + destination + at least one entry.
        let fits = room.saturating_sub(2).min(BATCH);
        if fits == 0 {
            break;
        }
        let left = n.saturating_sub(next);
        let count = usize::try_from(left).unwrap_or(usize::MAX).min(fits);
        let batch = data.get_mut(..count).ok_or(status::INVALID_PARAMETER)?;
        let mut i = next;
        for slot in batch.iter_mut() {
            *slot = translate(i)?;
            i = i.saturating_add(1);
        }
        let index = u64::from(op.StartIndex.saturating_add(next));
        let dst = table
            .checked_add(index.saturating_mul(mmu::ENTRY_SIZE))
            .ok_or(status::INVALID_PARAMETER)?;
        let tail = out.get_mut(written..).ok_or(status::INVALID_PARAMETER)?;
        let w = cmd::write_data(dst, batch, tail).ok_or(status::INVALID_PARAMETER)?;
        written = written.saturating_add(w);
        next = i;
    }
    Ok((written, next))
}

/// Drops the records of native-fence pages (`fence::pages`) in the `pages` pages VidMm
/// unmaps from `op.FirstPteVirtualAddress` of the operation's process: whatever the mapping
/// was, so that a process's records leave with its fences' pages.
fn forget_fence_pages<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_process: rvgpu_ddi::HANDLE,
    va: GpuVa,
    pages: u64,
) {
    let Ok(process) = Handle::decode_on(h_process, Kind::Process, a.table_slot()) else {
        return;
    };
    let mut fences = live.fences.lock();
    if !fences.pages.is_empty() {
        fences.pages.unmapped(process, va, pages);
    }
}

/// Records the leaves VidMm mapped without naming an allocation (`fence::pages`): where
/// each points, and the entry written at which table address. A fence's first open resolves
/// its values through them and takes `USER` off its MonitoredValue's. A record that does not
/// fit (the room made before, the pool's end, or the process's share of it) is not made; an
/// open that needs it then fails with `STATUS_NO_MEMORY`. Nothing is allocated here.
fn note_fence_pages<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    live: &Live<P>,
    op: &DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE,
    who: Mapping,
    table: u64,
) {
    let Ok(process) = Handle::decode_on(op.hProcess, Kind::Process, a.table_slot()) else {
        return;
    };
    for i in 0..op.NumPageTableEntries {
        let Some(e) = entry(call, op, i) else {
            break;
        };
        let va = GpuVa::new(
            op.FirstPteVirtualAddress
                .saturating_add(u64::from(i).saturating_mul(mmu::PAGE_4K)),
        );
        let pte = u64::from(op.StartIndex.saturating_add(i))
            .saturating_mul(mmu::ENTRY_SIZE)
            .saturating_add(table);
        // The entry as `update` wrote it (translated the same way, before the lock below).
        let leaf = match (e.valid(), gpummu::device_address(live.mmu(), &e, 0)) {
            (true, Ok(phys)) => who
                .user(live, &e)
                .and_then(|user| gpummu::device_entry(live.mmu(), &e, 0, user))
                .ok()
                .map(|entry| fence::pages::Leaf { phys, pte, entry }),
            _ => None,
        };
        let _ = live
            .fences
            .lock()
            .pages
            .note(process, va, leaf, &live.quotas.fence_pages);
    }
}

/// Writes `entry` at the device address `pte` of a page-table entry, at once, with the
/// device's `FENCE_STORE` pair (hardware.md 3.2: an atomic 8-byte store at a physical
/// address), under the interrupt lock that serialises the pair's writers; the caller then
/// invalidates the translations. Used only to take `USER` off leaves VidMm wrote before the
/// driver knew them for MonitoredValue (NF-01); an adapter whose interrupt is no longer
/// connected (stopping) runs nothing and is left as it is.
pub fn store_entry<P: Platform>(live: &Live<P>, pte: u64, entry: u64) {
    let _ = live.synchronized(|_| {
        live.regs.write(rvgpu_hw::regs::FenceStoreAddr::new(pte));
        live.regs.write(rvgpu_hw::regs::FenceStore::new(entry));
    });
}

/// FLUSHTLB: one TLB_INVALIDATE for the root.
pub fn flush<P: Platform>(
    live: &Live<P>,
    op: &DXGK_BUILDPAGINGBUFFER_FLUSHTLB,
    out: &mut [u64],
) -> Result<Pass, Status> {
    let root = process::ddi::table_address(live, &op.RootPageTableAddress)?;
    let words = cmd::tlb_invalidate(root);
    let Some(slot) = out.get_mut(..words.len()) else {
        return Ok(Pass {
            words: 0,
            more: Some(0),
        });
    };
    slot.copy_from_slice(&words);
    Ok(Pass {
        words: words.len(),
        more: None,
    })
}

/// The device address of a whole table given as a paging-process VA (identity).
fn table_va<P: Platform>(live: &Live<P>, va: u64, start: u32, count: u32) -> Result<u64, Status> {
    let vram = live.identity.vram_size;
    let base = rvgpu_hw::addr::VRAM_BASE;
    let off = va.checked_sub(base).ok_or(status::INVALID_PARAMETER)?;
    let end = u64::from(start)
        .checked_add(u64::from(count))
        .ok_or(status::INVALID_PARAMETER)?;
    if !off.is_multiple_of(mmu::TABLE_SIZE)
        || off.checked_add(mmu::TABLE_SIZE).is_none_or(|e| e > vram)
        || end > mmu::ENTRIES_PER_TABLE
    {
        return Err(status::INVALID_PARAMETER);
    }
    va.checked_add(u64::from(start).saturating_mul(mmu::ENTRY_SIZE))
        .ok_or(status::INVALID_PARAMETER)
}

/// COPYPAGETABLEENTRIES from range `first` on: one COPY per range.
pub fn copy<P: Platform>(
    call: Call<'_>,
    live: &Live<P>,
    op: &DXGK_BUILDPAGINGBUFFER_COPYPAGETABLEENTRIES,
    first: u32,
    out: &mut [u64],
) -> Result<Pass, Status> {
    if op.NumRanges == 0 || op.NumRanges > MAX_COPY_RANGES || op.pRanges.is_null() {
        return Err(status::INVALID_PARAMETER);
    }
    if first >= op.NumRanges {
        return Err(status::INVALID_PARAMETER);
    }
    let mut written = 0usize;
    let mut next = first;
    while next < op.NumRanges {
        let idx = usize::try_from(next).map_err(|_| status::INVALID_PARAMETER)?;
        // VidMm's array holds NumRanges ranges (`idx < NumRanges`, checked).
        let ranges = usize::try_from(op.NumRanges).unwrap_or(0);
        let r = call
            .element(op.pRanges, idx, ranges)
            .ok_or(status::INVALID_PARAMETER)?;
        let n = r.NumPageTableEntries;
        if n == 0 {
            return Err(status::INVALID_PARAMETER);
        }
        let src = table_va(live, r.SrcPageTableAddress, r.SrcStartPteIndex, n)?;
        let dst = table_va(live, r.DstPageTableAddress, r.DstStartPteIndex, n)?;
        let packet = Command::Copy {
            src,
            dst,
            bytes: u64::from(n).saturating_mul(mmu::ENTRY_SIZE),
        };
        let Some(w) = out.get_mut(written..).and_then(|tail| packet.encode(tail)) else {
            break;
        };
        written = written.saturating_add(w);
        next = next.saturating_add(1);
    }
    Ok(Pass {
        words: written,
        more: (next < op.NumRanges).then_some(next),
    })
}

/// Turns a pass into the DDI's result: INSUFFICIENT_DMA_BUFFER with `MultipassOffset` when
/// more remains.
pub fn status_of(pass: &Pass, multipass: &mut u32) -> NTSTATUS {
    match pass.more {
        Some(next) => {
            *multipass = next;
            STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER
        }
        None => {
            *multipass = 0;
            rvgpu_ddi::ntstatus::STATUS_SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DDI-03: what an update's entries map is told from the entries and flags alone, never
    /// from `hAllocation`, which 24H2's invalidations leave null: an invalidated level-1
    /// entry unmaps its whole large page's span; a fresh table's clear and a table link
    /// unmap nothing.
    #[test]
    fn ddi_03_an_invalidated_level_1_entry_unmaps_its_span_without_an_allocation() {
        let none = DXGK_UPDATEPAGETABLEFLAGS::default();
        let initial = none.with(DXGK_UPDATEPAGETABLEFLAGS::InitialUpdate, 1);
        let zero = DXGK_PTE::default();
        let large = DXGK_PTE::from_raw(
            rvgpu_ddi::memory::DXGK_PTE_0::from_value(DXGK_PTE::leaf(0, 0x200).flags())
                .with(rvgpu_ddi::memory::DXGK_PTE_0::LargePage, 1)
                .Value,
            0x200,
        );
        let link = DXGK_PTE::leaf(1, 0x40);
        let span = mmu::PAGE_2M / mmu::PAGE_4K;
        assert!(large.large_page());
        assert_eq!(pages_per_entry(0, &zero, none), 1);
        assert_eq!(pages_per_entry(0, &link, none), 1);
        assert_eq!(pages_per_entry(mmu::LARGE_LEVEL, &zero, none), span);
        assert_eq!(pages_per_entry(mmu::LARGE_LEVEL, &large, none), span);
        assert_eq!(pages_per_entry(mmu::LARGE_LEVEL, &zero, initial), 0);
        assert_eq!(pages_per_entry(mmu::LARGE_LEVEL, &link, none), 0);
        assert_eq!(pages_per_entry(2, &zero, none), 0);
    }

    /// A pass that left ranges asks to be called again from the next one; a complete pass
    /// resets the offset and succeeds.
    #[test]
    fn a_partial_pass_is_insufficient_dma_buffer_with_the_next_offset() {
        let mut offset = 0;
        let partial = Pass {
            words: 8,
            more: Some(3),
        };
        assert_eq!(
            status_of(&partial, &mut offset),
            STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER
        );
        assert_eq!(offset, 3);
        let done = Pass {
            words: 8,
            more: None,
        };
        assert_eq!(
            status_of(&done, &mut offset),
            rvgpu_ddi::ntstatus::STATUS_SUCCESS
        );
        assert_eq!(offset, 0);
    }
}
