//! What VidMm keeps of processes' GPU VA spaces as the D3DKMT thunks see them (behind
//! `VidMmState::gpuva`): each process's ranges and what they map, and the paging queues.
//! Data and the lookups on it only; the thunks are in [`crate::vidmm::va`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::state::sync::fence::{MonitoredFence, SimEvent};
use crate::state::vidmm::gpuva::MapAttrs;
use rvgpu_umd::kmt::GpuVaProtection;

/// Part of a range that maps pages of one allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UserMap {
    pub(crate) pages: u64,
    pub(crate) allocation: KmtHandle,
    /// The driver's handle (`hAllocation` of the paging operations).
    pub(crate) kmd: usize,
    /// First allocation page mapped.
    pub(crate) offset: u64,
    pub(crate) attrs: MapAttrs,
    /// The Map's (or MAP_PROTECT's) `DriverProtection`, handed to the driver with every
    /// update of the mapping's leaves.
    pub(crate) driver_protection: u64,
    /// Its entries are in the page tables now (the allocation is resident).
    pub(crate) live: bool,
    /// The Map that made it is still queued on its paging queue (`vidmm::va::paging_queue`):
    /// nothing is in the page tables for it, wherever the allocation is, until the queue
    /// reaches it.
    pub(crate) queued: bool,
    /// First VA of the Map's range it belongs to: a range longer than what the allocation
    /// has past the offset is kept as one mapping per repetition, all with the same one.
    pub(crate) range_va: u64,
}

/// One range of a process's space (a VIDMM_VAD).
#[derive(Debug)]
pub(crate) struct Vad {
    pub(crate) len: u64,
    /// Made by Map on free space: it goes with the allocation it was made for.
    pub(crate) by_map: bool,
    /// Mapped parts, by VA; the rest of the range has no access.
    pub(crate) maps: BTreeMap<u64, UserMap>,
}

/// Per-adapter state (behind `VidMmState::gpuva`).
#[derive(Debug, Default)]
pub struct State {
    pub(crate) queues: BTreeMap<KmtHandle, PagingQueue>,
    /// The paging queue each device's simulated runtime (`crate::kmt::SimKmt`) maps and makes
    /// resident its own allocations on, by device: what a UMD keeps with its device, kept
    /// here because `SimKmt` holds no state. VidMm never reads it.
    pub(crate) runtime: HashMap<KmtHandle, KmtHandle>,
    pub(crate) vads: HashMap<ProcessId, BTreeMap<u64, Vad>>,
    /// `D3DKMTUpdateGpuVirtualAddress` calls queued and not yet applied, in call order.
    pub(crate) updates: Vec<QueuedUpdate>,
    /// VidMm's worker is applying updates now (`crate::vidmm::va::update`): another caller
    /// leaves the work to it.
    pub(crate) updates_running: bool,
}

impl State {
    /// The range of `pid` holding all of `[va, va + len)`.
    pub(crate) fn vad_holding(&self, pid: ProcessId, va: u64, len: u64) -> Option<u64> {
        let (start, vad) = self.vads.get(&pid)?.range(..=va).next_back()?;
        let end = start.checked_add(vad.len)?;
        (va.checked_add(len)? <= end).then_some(*start)
    }

    /// Every mapping of `allocation`: (pid, range start, VA, map).
    pub(crate) fn maps_of(&self, allocation: KmtHandle) -> Vec<(ProcessId, u64, u64, UserMap)> {
        let mut out = Vec::new();
        for (pid, vads) in &self.vads {
            for (start, vad) in vads {
                for (va, m) in &vad.maps {
                    if m.allocation == allocation {
                        out.push((*pid, *start, *va, *m));
                    }
                }
            }
        }
        out
    }

    pub(crate) fn map_mut(&mut self, pid: ProcessId, start: u64, va: u64) -> Option<&mut UserMap> {
        self.vads.get_mut(&pid)?.get_mut(&start)?.maps.get_mut(&va)
    }
}

/// A paging queue of a device.
#[derive(Debug)]
pub(crate) struct PagingQueue {
    pub(crate) device: KmtHandle,
    #[allow(dead_code)]
    pub(crate) priority: i32,
    /// `hSyncObject`: the monitored fence paging work on this queue signals.
    pub(crate) fence: KmtHandle,
    pub(crate) fence_obj: MonitoredFence,
    /// The last paging fence value handed out.
    pub(crate) value: u64,
    /// Operations handed out and not yet done, in order: the fence stays below the first.
    pub(crate) backlog: Vec<Queued>,
}

/// A paging queue's operation not yet done: its fence value and, for a Map, the mapping it
/// makes (process, range start, VA).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Queued {
    pub(crate) value: u64,
    pub(crate) map: Option<(ProcessId, u64, u64)>,
}

/// One checked operation of a queued `D3DKMTUpdateGpuVirtualAddress`, in pages VidMm uses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum UpdateStep {
    /// `pages` pages at `va` map the pages of `allocation` (of `device`) from `offset` (a
    /// repetition of a MAP whose allocation range is smaller than its VA range is one step
    /// each).
    Map {
        va: u64,
        pages: u64,
        device: KmtHandle,
        allocation: KmtHandle,
        offset: u64,
        protection: GpuVaProtection,
        /// A MAP_PROTECT's `DriverProtection` (0 for a MAP).
        driver_protection: u64,
    },
    /// `pages` pages at `va` map nothing.
    Unmap { va: u64, pages: u64 },
    /// The mappings of `pages` pages at `src` are made again at `dst`.
    Copy { src: u64, pages: u64, dst: u64 },
}

/// A `D3DKMTUpdateGpuVirtualAddress` VidMm accepted and has not applied yet: it runs once
/// its VidSch wait for `fence` was satisfied (`ready`; set at once for `DoNotWait`), after
/// the earlier updates of `context`, and then signals `fence` to `signal`.
#[derive(Debug)]
pub(crate) struct QueuedUpdate {
    pub(crate) context: KmtHandle,
    pub(crate) device: KmtHandle,
    pub(crate) pid: ProcessId,
    pub(crate) fence: MonitoredFence,
    /// The VidSch-side wait for `FenceValue` (`None`: `DoNotWait`), withdrawn if the update
    /// goes unapplied.
    pub(crate) wait: Option<SimEvent>,
    /// The wait was satisfied: the update may run.
    pub(crate) ready: Arc<AtomicBool>,
    pub(crate) signal: u64,
    pub(crate) steps: Vec<UpdateStep>,
    /// The reserved range the targets lie in, and the one the COPY sources lie in.
    pub(crate) start: u64,
    pub(crate) src_start: Option<u64>,
}
