//! The scheduler state of a started adapter: D3D devices, contexts, hardware queues, doorbells,
//! physical doorbells and the per-engine runlists, all under one spin lock (docs/
//! usermode-submission.md, "IRQL and locking").
//!
//! **Handles.** Most submission DDIs carry no adapter handle (`DxgkDdiDestroyDevice`,
//! `DxgkDdiCreateContext`, `DxgkDdiSubmitCommandToHwQueue`, the five doorbell DDIs ...), and a
//! handle is untrusted input: a stale or garbage value must come back as an NTSTATUS, never be
//! dereferenced. So a KMD handle is not a pointer but a number that names its adapter:
//!
//! | bits  | field                                                        |
//! |-------|--------------------------------------------------------------|
//! | 63:56 | adapter slot in [`crate::globals::ADAPTERS`] + 1 (never 0)    |
//! | 55:52 | [`Kind`]                                                     |
//! | 51:0  | sequence number, from a per-adapter counter (never reused)   |
//!
//! A DDI decodes the slot, finds the adapter through the adapter table (lock-free, bounded),
//! takes its scheduler lock and looks the whole handle up in the table of that kind. Anything
//! that does not resolve is `STATUS_INVALID_HANDLE`.
//!
//! **Lock.** [`Sched`] lives in a [`crate::sync::SpinLock`] (DISPATCH). The ISR never takes
//! it. Work done under it is bounded: table updates, runlist rewrites (at most
//! [`crate::runlist::RUNLIST_CAPACITY`] descriptors) and MMIO writes. Calls into Dxgkrnl that
//! need PASSIVE (contiguous memory, `DxgkCbDisconnectDoorbell`) are made with it released.

use crate::kmem::SortedMap;
use alloc::vec::Vec;
use core::ffi::c_void;

use rvgpu_ddi::HANDLE;

use crate::adapter::{Adapter, Live};
use crate::context::{Context, Device};
use crate::dma::DmaBuffer;
use crate::doorbell::{Doorbell, Physical};
use crate::globals::ADAPTERS;
use crate::hwqueue::{HwQueue, QueueIds};
use crate::platform::Platform;
use crate::status::{self, Status};

/// What a KMD handle names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Device = 1,
    Context = 2,
    Queue = 3,
    Doorbell = 4,
    Process = 5,
    Allocation = 6,
}

impl Kind {
    const fn from_bits(v: u64) -> Option<Self> {
        match v {
            1 => Some(Self::Device),
            2 => Some(Self::Context),
            3 => Some(Self::Queue),
            4 => Some(Self::Doorbell),
            5 => Some(Self::Process),
            6 => Some(Self::Allocation),
            _ => None,
        }
    }
}

const SLOT_SHIFT: u32 = 56;
const KIND_SHIFT: u32 = 52;
const SEQ_MASK: u64 = (1 << KIND_SHIFT) - 1;

/// A decoded KMD handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Handle(u64);

impl Handle {
    /// The handle of the `seq`-th object of `kind` on the adapter in `slot`; `None` if `seq`
    /// is 0 or does not fit.
    pub fn new(slot: u8, kind: Kind, seq: u64) -> Option<Self> {
        if seq == 0 || seq > SEQ_MASK || slot == u8::MAX {
            return None;
        }
        let slot = u64::from(slot).checked_add(1)?;
        Some(Self(
            (slot << SLOT_SHIFT) | ((kind as u64) << KIND_SHIFT) | seq,
        ))
    }

    /// Decodes a raw handle of the expected kind; `None` for anything else.
    pub fn decode(raw: HANDLE, kind: Kind) -> Option<Self> {
        let v = u64::try_from(raw.addr()).ok()?;
        let slot = v >> SLOT_SHIFT;
        let k = Kind::from_bits((v >> KIND_SHIFT) & 0xF)?;
        (slot != 0 && k == kind && v & SEQ_MASK != 0).then_some(Self(v))
    }

    /// Decodes a raw handle of the expected kind that names the adapter in `slot`; anything
    /// else is `STATUS_INVALID_HANDLE` (for DDIs that already know their adapter).
    pub fn decode_on(raw: HANDLE, kind: Kind, slot: u8) -> Result<Self, Status> {
        Self::decode(raw, kind)
            .filter(|h| h.slot() == slot)
            .ok_or(status::INVALID_HANDLE)
    }

    /// The adapter-table slot the handle names.
    pub fn slot(self) -> u8 {
        u8::try_from((self.0 >> SLOT_SHIFT).saturating_sub(1)).unwrap_or(u8::MAX)
    }

    /// The raw value.
    pub fn raw(self) -> u64 {
        self.0
    }

    /// As the `HANDLE` Dxgkrnl stores (an opaque number, never dereferenced).
    pub fn as_handle(self) -> HANDLE {
        core::ptr::without_provenance_mut::<c_void>(usize::try_from(self.0).unwrap_or(0))
    }
}

impl Sched {
    /// The GPU process that owns device `d` (`None`: the system device, or no process named).
    pub fn process_of_device(&self, d: Handle) -> Option<Handle> {
        self.devices.get(&d).and_then(|d| d.process)
    }

    /// Contexts of process `p` (a scan: asked only near the end of the pool, crate::quota).
    pub fn contexts_of_process(&self, p: Handle) -> usize {
        self.contexts
            .values()
            .filter(|c| self.process_of_device(c.device) == Some(p))
            .count()
    }

    /// Hardware queues of process `p` (likewise).
    pub fn queues_of_process(&self, p: Handle) -> usize {
        self.queues
            .values()
            .filter(|q| {
                self.contexts
                    .get(&q.context)
                    .and_then(|c| self.process_of_device(c.device))
                    == Some(p)
            })
            .count()
    }
}

/// The scheduler state of one started adapter.
#[derive(Debug)]
pub struct Sched {
    pub devices: SortedMap<Handle, Device>,
    pub contexts: SortedMap<Handle, Context>,
    pub queues: SortedMap<Handle, HwQueue>,
    pub doorbells: SortedMap<Handle, Doorbell>,
    /// GPU processes (`DxgkDdiCreateProcess`, [`crate::process`]).
    pub processes: SortedMap<Handle, crate::process::Process>,
    /// The process id last handed out ([`crate::process::Process::id`]).
    pub last_process_id: u32,
    /// Allocations (`DxgkDdiCreateAllocation`, [`crate::allocation`]).
    pub allocations: SortedMap<Handle, crate::allocation::Allocation>,
    pub ids: QueueIds,
    pub physical: Physical,
    /// One runlist buffer per engine (allocated at start, written only under the lock).
    pub runlists: Vec<DmaBuffer>,
    /// Node-ring descriptors, first in each engine's runlist (docs/tdr.md §3.2).
    pub nodes: crate::node::NodeSlots,
    /// Priority bands as the OS set them (hardware scheduling, [`crate::hws`]).
    pub bands: crate::hws::Bands,
    /// Engines reset by `DxgkDdiResetHwEngine` and not yet resumed (bit per engine): held by
    /// the device, so no commit may touch them before `DxgkDdiResumeHwEngine`.
    pub hws_held: u64,
    /// Engines whose scheduling log the OS set (bit per engine): an adapter reset turns
    /// logging off and `DxgkDdiRestartFromTimeout` adopts them again (hardware.md M39).
    pub sched_logs: u64,
    /// The paging process's root (`SYSTEM_PAGE_TABLE_BASE`), as VidMm set it on a system
    /// context (0: none yet, the system space is identity). Restored after an adapter reset.
    pub system_root: u64,
    /// Slots each engine's runlist holds on the device (the `RUNLIST_COUNT` last loaded),
    /// so that an update names only what grew (docs/hardware.md 5.2). Atomics because
    /// commits run with shared access to the state; every write is under the scheduler lock.
    pub runlist_len: [core::sync::atomic::AtomicU32; rvgpu_hw::regs::ENGINE_MAX as usize],
    /// The device takes runlist updates (`CAPS.RUNLIST_UPDATE`): adding or removing one
    /// queue commits its slot, not the whole runlist ([`crate::runlist::commit_slot`]).
    pub runlist_update: bool,
}

impl Default for Sched {
    /// No objects, no doorbells, no runlists (what a stopped adapter leaves).
    fn default() -> Self {
        Self::with_physical(Physical::none(), Vec::new())
    }
}

impl Sched {
    /// Empty state over the given physical doorbells and runlist buffers (one per engine).
    /// Allocates nothing: the maps grow fallibly as objects are created.
    pub fn with_physical(physical: Physical, runlists: Vec<DmaBuffer>) -> Self {
        Self {
            devices: SortedMap::new(),
            contexts: SortedMap::new(),
            queues: SortedMap::new(),
            doorbells: SortedMap::new(),
            processes: SortedMap::new(),
            last_process_id: 0,
            allocations: SortedMap::new(),
            ids: QueueIds::default(),
            physical,
            runlists,
            nodes: crate::node::NodeSlots::default(),
            bands: crate::hws::Bands::default(),
            hws_held: 0,
            sched_logs: 0,
            system_root: 0,
            runlist_len: [const { core::sync::atomic::AtomicU32::new(0) };
                rvgpu_hw::regs::ENGINE_MAX as usize],
            runlist_update: false,
        }
    }

    /// Empty state for a device with `doorbells` physical doorbells (`global`: one shared
    /// page), for host unit tests.
    #[cfg(test)]
    pub fn new(doorbells: u32, global: bool, runlists: Vec<DmaBuffer>) -> Self {
        Self::with_physical(Physical::new(doorbells, global), runlists)
    }

    /// Whether queue `q` belongs in its engine's runlist: it has a ring (kernel-mode queues
    /// from creation, user-mode queues while they have a doorbell), its context is not
    /// suspended, its device is not in error (a queue of it hung an engine, UM-10), and, in a
    /// GPU process other than the system one, VidMm has set the context's root page table
    /// (`DxgkDdiSetRootPageTable`): before that the descriptor's root would be 0, the identity
    /// space, where the queue's ring and DMA buffers could reach any memory.
    pub fn runnable(&self, q: &HwQueue) -> bool {
        q.ring.is_some()
            && self.contexts.get(&q.context).is_some_and(|c| {
                let device = self.devices.get(&c.device);
                let needs_root = device
                    .and_then(|d| d.process)
                    .and_then(|p| self.processes.get(&p))
                    .is_some_and(|p| !p.system);
                !c.suspended && !device.is_some_and(|d| d.in_error) && (c.root != 0 || !needs_root)
            })
    }

    /// Queues on `engine` that belong in its runlist, in handle (creation) order.
    pub fn runlist_entries(&self, engine: u32) -> impl Iterator<Item = &HwQueue> + '_ {
        self.queues
            .values()
            .filter(move |q| q.engine == engine && self.runnable(q))
    }
}

/// Runs `f` on the started adapter that `h` names, with the decoded handle. A handle that
/// names no live adapter of this platform is `STATUS_INVALID_HANDLE`.
pub fn with_adapter<P: Platform, R>(
    raw: HANDLE,
    kind: Kind,
    f: impl FnOnce(&Adapter<P>, &Live<P>, Handle) -> Result<R, Status>,
) -> Result<R, Status> {
    let h = Handle::decode(raw, kind).ok_or(status::INVALID_HANDLE)?;
    ADAPTERS
        .with(h.slot(), |a: &Adapter<P>| match a.live() {
            Some(live) => f(a, live, h),
            None => Err(status::INVALID_HANDLE),
        })
        .unwrap_or(Err(status::INVALID_HANDLE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_reject_other_kinds() {
        let h = Handle::new(3, Kind::Queue, 42).unwrap();
        assert_eq!(h.slot(), 3);
        assert_eq!(Handle::decode(h.as_handle(), Kind::Queue), Some(h));
        assert_eq!(Handle::decode(h.as_handle(), Kind::Doorbell), None);
        assert_eq!(Handle::decode(core::ptr::null_mut(), Kind::Queue), None);
        let junk = core::ptr::without_provenance_mut::<c_void>(0x1234);
        assert_eq!(
            Handle::decode(junk, Kind::Device),
            None,
            "slot 0 is never used"
        );
        assert_eq!(Handle::new(0, Kind::Device, 0), None);
        assert_eq!(Handle::new(0, Kind::Device, SEQ_MASK + 1), None);
        let max = Handle::new(u8::MAX - 1, Kind::Doorbell, SEQ_MASK).unwrap();
        assert_eq!(max.slot(), u8::MAX - 1);
        assert_eq!(Handle::decode(max.as_handle(), Kind::Doorbell), Some(max));
    }
}
