//! Where fence values live (NF-05, NF-06): system-memory slots packed at the caps' stride, and
//! the local-memory pages of `INTRA_GPU` fences.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rvgpu_ddi::fence::{
    D3DDDI_NATIVEFENCE_TYPE, D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU, DXGK_NATIVE_FENCE_CAPS,
};
use rvgpu_device::{Memory, SysAlloc};

use crate::base::process_id::ProcessId;

use super::fence::{
    FenceObj, LateWakes, LegacyObj, LocalSlot, NativeFence, Slot, Value, KIND_LEGACY,
    LOCAL_FENCE_VRAM_DIVISOR, PAGE,
};

#[derive(Debug)]
pub(crate) struct Cursor {
    alloc: SysAlloc,
    next: u64,
}

/// Per-adapter native-fence state of the OS.
#[derive(Debug, Default)]
pub struct FenceOs {
    /// `DXGKQAITYPE_NATIVE_FENCE_CAPS`, queried at start when the driver advertised
    /// `NativeGpuFence`.
    pub caps: Option<DXGK_NATIVE_FENCE_CAPS>,
    pub(crate) objs: HashMap<usize, Arc<FenceObj>>,
    /// The fences a NULL native-fence report (or a log drain's fallback scan) resamples:
    /// those with CPU waits or an armed MonitoredValue, and cross-adapter ones.
    /// On a NULL report Windows looks at the pending native-fence waits (docs/performance.md);
    /// an idle fence has nothing to release, so it is not here.
    pub(crate) scan: BTreeSet<usize>,
    /// Packed pages per (process, is-MonitoredValue).
    cursors: HashMap<(ProcessId, u8), Cursor>,
    /// Every system-memory fence page of this adapter, by bus address: the page, its live
    /// values, and the process whose address space maps it at its system VA (legacy monitored
    /// fences' pages; `None` for native-fence pages, which `maps` tracks).
    pub(crate) pages: HashMap<u64, SysPage>,
    /// Pages that were shared with another adapter (NF-16, NF-18): kept for the adapter's
    /// life, as the other adapter's objects use the value too.
    pinned: BTreeSet<u64>,
    /// Empty pages waiting until nothing can reach them any more (`free_empty`).
    pub(crate) empty: BTreeSet<u64>,
    /// Local-memory fence pages (NF-06).
    pub(crate) local: LocalPages,
    pub(crate) work_all: bool,
    pub(crate) work: BTreeSet<usize>,
    pub(crate) legacy: HashMap<usize, Arc<LegacyObj>>,
    pub(crate) legacy_work: bool,
    /// Legacy monitored-fence scans done at DPC time (MF-04).
    pub legacy_scans: u64,
    /// DxgkDdiUpdateMonitoredValues calls.
    pub update_monitored_calls: u64,
    /// DxgkDdiUpdateCurrentValuesFromCpu calls.
    pub update_current_calls: u64,
    /// Fence resamples done at DPC time (one per fence per DPC).
    pub dpc_resamples: u64,
    /// MonitoredValue raised over pending waits, and the late wakes that cost
    /// ([`LateWakes`]).
    pub late_wakes: LateWakes,
    /// Every hardware queue of the adapter with its logs ([`crate::sync::fencelog`]).
    pub(crate) logs: Arc<crate::state::sync::fencelog::LogTable>,
    /// The log drain's counters.
    pub log_counters: crate::state::sync::fencelog::LogCounters,
    /// What the DPC's notifications ask the log drain to read.
    pub(crate) log_req: crate::state::sync::fencelog::DrainRequest,
    /// The OS's trace sink.
    pub(crate) trace: crate::state::sync::trace::SinkSlot,
    /// D3DKMT handle → the process's instance: how a log entry's `hNativeFence`
    /// resolves (the instance's process must be the queue's).
    pub(crate) kmt: HashMap<u32, NativeFence>,
    /// Last GPU counter CalibrateGpuClock returned, and when it was called.
    pub(crate) last_gpu_clock: u64,
    pub(crate) last_calibration: Option<Instant>,
    /// The KMD handles the last `DxgkDdiUpdateNativeFenceLogs` named (tests).
    pub(crate) last_log_update: Vec<usize>,
    /// The fence pages mapped into each process, at VAs of its own.
    pub(crate) maps: super::maps::FenceMaps,
}

impl FenceOs {
    pub(crate) fn stride(&self) -> u64 {
        self.caps.map_or(8, |c| u64::from(c.MonitoredValueStride))
    }

    /// Bytes of the system-memory fence pages.
    pub(crate) fn page_bytes(&self) -> u64 {
        self.pages.values().map(|p| p.alloc.len).sum()
    }

    fn add_page(&mut self, alloc: &SysAlloc, owner: Option<ProcessId>) {
        self.pages.insert(
            alloc.bus_addr,
            SysPage {
                alloc: alloc.clone(),
                live: 0,
                owner,
                paging: false,
            },
        );
    }

    fn count_slot(&mut self, slot: &Slot) {
        if let Some(p) = self.pages.get_mut(&slot.alloc.bus_addr) {
            p.live = p.live.saturating_add(1);
        }
    }

    /// A value of a system page is no longer used: the page's last makes it a candidate for
    /// freeing (no new value is packed into it).
    pub(crate) fn release_slot(&mut self, slot: &Slot) {
        let bus = slot.alloc.bus_addr;
        let Some(p) = self.pages.get_mut(&bus) else {
            return;
        };
        p.live = p.live.saturating_sub(1);
        if p.live != 0 {
            return;
        }
        // The page its process packs into now: every value in it is gone, so it is packed
        // again from the start (the process keeps it until it exits).
        if let Some(c) = self.cursors.values_mut().find(|c| c.alloc.bus_addr == bus) {
            c.next = 0;
            return;
        }
        if !self.pinned.contains(&bus) {
            self.empty.insert(bus);
        }
    }

    /// Process exit: the pages it packed into are no longer its to fill; empty ones can go.
    pub(crate) fn forget_process(&mut self, pid: ProcessId) {
        let mine: Vec<(ProcessId, u8)> = self
            .cursors
            .keys()
            .filter(|(p, _)| *p == pid)
            .copied()
            .collect();
        for k in mine {
            if let Some(c) = self.cursors.remove(&k) {
                let bus = c.alloc.bus_addr;
                let empty = self.pages.get(&bus).is_some_and(|p| p.live == 0);
                if empty && !self.pinned.contains(&bus) {
                    self.empty.insert(bus);
                }
            }
        }
    }

    /// VidMm mapped the page of device address `pa` into the paging process.
    pub(crate) fn paging_mapped(&mut self, pa: u64) {
        if let Some(p) = self.pages.get_mut(&(pa - pa % PAGE)) {
            p.paging = true;
        }
    }

    /// Keeps the page of `slot` for the adapter's life (it is shared with another adapter).
    pub(crate) fn pin(&mut self, slot: &Slot) {
        self.pinned.insert(slot.alloc.bus_addr);
        self.empty.remove(&slot.alloc.bus_addr);
    }

    /// Takes the empty pages nothing can reach any more: no process maps them (`maps` for
    /// native-fence pages; the owner's address space for a legacy page, which stays mapped in
    /// it until exit) — `mapped(page)` and `space_alive(pid)` answer. The caller unmaps them
    /// from the paging process and frees them (`retire_system`). Returns each page with
    /// whether the paging process maps it (native-fence pages; a legacy page only ever was
    /// in its own process).
    pub(crate) fn take_free(
        &mut self,
        mapped: impl Fn(u64) -> bool,
        space_alive: impl Fn(ProcessId) -> bool,
    ) -> Vec<(u64, bool)> {
        let due: Vec<u64> = self
            .empty
            .iter()
            .copied()
            .filter(|bus| {
                self.pages.get(bus).is_some_and(|p| {
                    p.live == 0 && !mapped(*bus) && !p.owner.is_some_and(&space_alive)
                })
            })
            .collect();
        let mut out = Vec::new();
        for bus in due {
            self.empty.remove(&bus);
            if let Some(p) = self.pages.remove(&bus) {
                out.push((bus, p.paging));
            }
        }
        out
    }

    /// A system-memory value in `mem` for `process`.
    pub(crate) fn alloc_slot(
        &mut self,
        mem: &Arc<Memory>,
        process: ProcessId,
        kind: u8,
        shareable: bool,
    ) -> Option<Slot> {
        let stride = self.stride();
        // A legacy value's page is mapped into its process at the system VA until exit.
        let owner = (kind == KIND_LEGACY).then_some(process);
        if shareable {
            let alloc = mem.alloc_system(PAGE, PAGE)?;
            self.add_page(&alloc, owner);
            let slot = Slot { alloc, off: 0 };
            self.count_slot(&slot);
            return Some(slot);
        }
        let key = (process, kind);
        if let Some(c) = self.cursors.get_mut(&key) {
            if c.next + 8 <= PAGE {
                let s = Slot {
                    alloc: c.alloc.clone(),
                    off: c.next,
                };
                c.next += stride;
                self.count_slot(&s);
                return Some(s);
            }
        }
        let alloc = mem.alloc_system(PAGE, PAGE)?;
        self.add_page(&alloc, owner);
        self.cursors.insert(
            key,
            Cursor {
                alloc: alloc.clone(),
                next: stride,
            },
        );
        let slot = Slot { alloc, off: 0 };
        self.count_slot(&slot);
        Some(slot)
    }

    /// A value for a fence of `fence_type` (NF-06): `INTRA_GPU` values in local memory, every
    /// other fence's in system memory.
    pub(crate) fn alloc_value(
        &mut self,
        mem: &Arc<Memory>,
        process: ProcessId,
        kind: u8,
        shareable: bool,
        fence_type: D3DDDI_NATIVEFENCE_TYPE,
    ) -> Option<Value> {
        if fence_type == D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU {
            let stride = self.stride();
            // Kinds 0/1 for system pages, 3/4 for local ones (separate cursors anyway).
            self.local
                .alloc(mem, process, kind, shareable, stride)
                .map(Value::Local)
        } else {
            self.alloc_slot(mem, process, kind, shareable)
                .map(Value::System)
        }
    }

    pub(crate) fn release_value(&mut self, v: &Value) {
        match v {
            Value::Local(l) => self.local.release(l),
            Value::System(s) => self.release_slot(s),
        }
    }
}

/// One system-memory fence page.
#[derive(Debug)]
pub(crate) struct SysPage {
    alloc: SysAlloc,
    /// Values handed out of it and not released.
    live: u32,
    /// The process whose address space maps it at its system VA (legacy monitored fences).
    pub(crate) owner: Option<ProcessId>,
    /// VidMm mapped it into the paging process (`vidmm_map_system`): unmapped before freed.
    paging: bool,
}

/// VidMm's local-memory fence pages (NF-06): whole VRAM pages taken from the top of VRAM
/// down (at most the top 1/[`LOCAL_FENCE_VRAM_DIVISOR`]), packed per process like system
/// pages, returned when their last fence is destroyed.
#[derive(Debug, Default)]
pub(crate) struct LocalPages {
    /// Lowest page offset handed out so far (`None`: none yet).
    low: Option<u64>,
    free: Vec<u64>,
    /// Live values per page.
    pub(crate) live: HashMap<u64, u32>,
    /// Packed pages per (process, kind): (page, next offset).
    cursors: HashMap<(ProcessId, u8), (u64, u64)>,
}

impl LocalPages {
    pub(crate) fn page(&mut self, mem: &Memory) -> Option<u64> {
        if let Some(p) = self.free.pop() {
            return Some(p);
        }
        let size = mem.vram_size();
        let floor = size - size / LOCAL_FENCE_VRAM_DIVISOR;
        let p = self.low.unwrap_or(size).checked_sub(PAGE)?;
        if p < floor {
            return None;
        }
        self.low = Some(p);
        Some(p)
    }

    pub(crate) fn alloc(
        &mut self,
        mem: &Arc<Memory>,
        process: ProcessId,
        kind: u8,
        shareable: bool,
        stride: u64,
    ) -> Option<LocalSlot> {
        let key = (process, kind);
        let (page, off) = match self.cursors.get_mut(&key) {
            Some((page, next)) if !shareable && *next + 8 <= PAGE => {
                let off = *next;
                *next += stride;
                (*page, off)
            }
            _ => {
                let page = self.page(mem)?;
                // A reused page holds a destroyed fence's values.
                for w in mem
                    .vram_words()
                    .iter()
                    .skip(usize::try_from(page / 8).ok()?)
                    .take(usize::try_from(PAGE / 8).ok()?)
                {
                    w.store(0, Ordering::SeqCst);
                }
                if !shareable {
                    self.cursors.insert(key, (page, stride));
                }
                (page, 0)
            }
        };
        *self.live.entry(page).or_insert(0) += 1;
        Some(LocalSlot {
            mem: mem.clone(),
            page,
            off,
        })
    }

    pub(crate) fn release(&mut self, slot: &LocalSlot) {
        let Some(n) = self.live.get_mut(&slot.page) else {
            return;
        };
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.live.remove(&slot.page);
            self.cursors.retain(|_, (p, _)| *p != slot.page);
            self.free.push(slot.page);
        }
    }
}
