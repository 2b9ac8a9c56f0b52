//! Where fence values live (NF-05, NF-06): system-memory slots packed at the caps' stride, and
//! the local-memory pages of `INTRA_GPU` fences.

use super::*;

#[derive(Debug)]
pub(super) struct Cursor {
    alloc: SysAlloc,
    next: u64,
}

/// Per-adapter native-fence state of the OS.
#[derive(Debug, Default)]
pub struct FenceOs {
    /// `DXGKQAITYPE_NATIVE_FENCE_CAPS`, queried at start when the driver advertised
    /// `NativeGpuFence`.
    pub caps: Option<DXGK_NATIVE_FENCE_CAPS>,
    pub(super) objs: HashMap<usize, Arc<FenceObj>>,
    /// The fences a NULL native-fence report (or a log drain's fallback scan) resamples
    /// (issue 19): those with CPU waits or an armed MonitoredValue, and cross-adapter ones.
    /// On a NULL report Windows looks at the pending native-fence waits (docs/performance.md);
    /// an idle fence has nothing to release, so it is not here.
    pub(super) scan: BTreeSet<usize>,
    /// Packed pages per (process, is-MonitoredValue).
    cursors: HashMap<(ProcessId, u8), Cursor>,
    /// Every fence page (kept for the machine's life, see the module docs).
    pages: Vec<SysAlloc>,
    /// Local-memory fence pages (NF-06).
    pub(super) local: LocalPages,
    pub(super) work_all: bool,
    pub(super) work: BTreeSet<usize>,
    pub(super) legacy: HashMap<usize, Arc<LegacyObj>>,
    pub(super) legacy_work: bool,
    /// Legacy monitored-fence scans done at DPC time (MF-04).
    pub legacy_scans: u64,
    /// DxgkDdiUpdateMonitoredValues calls.
    pub update_monitored_calls: u64,
    /// DxgkDdiUpdateCurrentValuesFromCpu calls.
    pub update_current_calls: u64,
    /// Fence resamples done at DPC time (one per fence per DPC).
    pub dpc_resamples: u64,
    /// Issue 5: every hardware queue of the adapter with its logs ([`crate::sync::fencelog`]).
    pub(crate) logs: Arc<crate::sync::fencelog::LogTable>,
    /// Issue 5: the log drain's counters.
    pub log_counters: crate::sync::fencelog::LogCounters,
    /// Issue 5: what the DPC's notifications ask the log drain to read.
    pub(super) log_req: crate::sync::fencelog::DrainRequest,
    /// Issue 5: the OS's trace sink.
    pub(crate) trace: crate::sync::trace::SinkSlot,
    /// Issue 5: D3DKMT handle → the process's instance: how a log entry's `hNativeFence`
    /// resolves (the instance's process must be the queue's).
    pub(super) kmt: HashMap<u32, NativeFence>,
    /// Issue 5: last GPU counter CalibrateGpuClock returned, and when it was called.
    pub(crate) last_gpu_clock: u64,
    pub(crate) last_calibration: Option<Instant>,
    /// Issue 5: the KMD handles the last `DxgkDdiUpdateNativeFenceLogs` named (tests).
    pub(crate) last_log_update: Vec<usize>,
    /// Issue 12: the fence pages mapped into each process, at VAs of its own.
    pub(crate) maps: crate::vidmm::fencemap::FenceMaps,
}

impl FenceOs {
    pub(super) fn stride(&self) -> u64 {
        self.caps.map_or(8, |c| u64::from(c.MonitoredValueStride))
    }

    /// Bytes of the system-memory fence pages.
    pub(super) fn page_bytes(&self) -> u64 {
        self.pages.iter().map(|p| p.len).sum()
    }

    pub(super) fn alloc_slot(
        &mut self,
        a: &AdapterShared,
        process: ProcessId,
        kind: u8,
        shareable: bool,
    ) -> Option<Slot> {
        let stride = self.stride();
        let mem = a.device.memory();
        if shareable {
            let alloc = mem.alloc_system(PAGE, PAGE)?;
            self.pages.push(alloc.clone());
            return Some(Slot { alloc, off: 0 });
        }
        let key = (process, kind);
        if let Some(c) = self.cursors.get_mut(&key) {
            if c.next + 8 <= PAGE {
                let s = Slot {
                    alloc: c.alloc.clone(),
                    off: c.next,
                };
                c.next += stride;
                return Some(s);
            }
        }
        let alloc = mem.alloc_system(PAGE, PAGE)?;
        self.pages.push(alloc.clone());
        self.cursors.insert(
            key,
            Cursor {
                alloc: alloc.clone(),
                next: stride,
            },
        );
        Some(Slot { alloc, off: 0 })
    }

    /// A value for a fence of `fence_type` (NF-06): `INTRA_GPU` values in local memory, every
    /// other fence's in system memory.
    pub(super) fn alloc_value(
        &mut self,
        a: &AdapterShared,
        process: ProcessId,
        kind: u8,
        shareable: bool,
        fence_type: D3DDDI_NATIVEFENCE_TYPE,
    ) -> Option<Value> {
        if fence_type == D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU {
            let stride = self.stride();
            // Kinds 0/1 for system pages, 3/4 for local ones (separate cursors anyway).
            self.local
                .alloc(a.device.memory(), process, kind, shareable, stride)
                .map(Value::Local)
        } else {
            self.alloc_slot(a, process, kind, shareable)
                .map(Value::System)
        }
    }

    pub(super) fn release_value(&mut self, v: &Value) {
        if let Value::Local(l) = v {
            self.local.release(l);
        }
    }
}

/// VidMm's local-memory fence pages (NF-06): whole VRAM pages taken from the top of VRAM
/// down (at most the top 1/[`LOCAL_FENCE_VRAM_DIVISOR`]), packed per process like system
/// pages, returned when their last fence is destroyed.
#[derive(Debug, Default)]
pub(super) struct LocalPages {
    /// Lowest page offset handed out so far (`None`: none yet).
    low: Option<u64>,
    free: Vec<u64>,
    /// Live values per page.
    pub(super) live: HashMap<u64, u32>,
    /// Packed pages per (process, kind): (page, next offset).
    cursors: HashMap<(ProcessId, u8), (u64, u64)>,
}

impl LocalPages {
    pub(super) fn page(&mut self, mem: &Memory) -> Option<u64> {
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

    pub(super) fn alloc(
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

    pub(super) fn release(&mut self, slot: &LocalSlot) {
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
