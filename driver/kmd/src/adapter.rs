//! The adapter: one per PCI function, from `DxgkDdiAddDevice` to `DxgkDdiRemoveDevice`.
//!
//! Concurrency model:
//! - PnP and power DDIs arrive at PASSIVE, serialised by Dxgkrnl; `lifecycle` records where we
//!   are and rejects calls out of order with STATUS_INVALID_DEVICE_STATE.
//! - Everything the ISR needs is in [`Live`], published through an atomic pointer once it is
//!   complete (Release) and unpublished under `DxgkCbSynchronizeExecution` at stop, so an ISR
//!   either sees a whole `Live` or none, and never one being torn down.
//! - The event ring's read pointer is ISR state: touched only at device IRQL under the
//!   interrupt lock ([`IsrCell`]).

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};

use rvgpu_ddi::interrupt::{
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange, DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine,
    DXGKARGCB_NOTIFY_INTERRUPT_DATA, DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS, DXGK_ENGINE_STATE_ACTIVE,
    DXGK_ENGINE_STATE_HUNG, DXGK_ENGINE_STATE_TRANSITION_TO_F1,
    DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE, DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED,
};
use rvgpu_hw::engine::EngineState;

use crate::ddi::table::Filled;
use crate::device::{self, DeviceIdentity};
use crate::dma::DmaBuffer;
use crate::dxgk::Dxgk;
use crate::features::Features;
use crate::fence::handles::HandleMap;
use crate::fence::registry::Registry;
use crate::fence::report::{Batch, Report};
use crate::fence::table::FenceTable;
use crate::handle::{Handle, Kind, Minter};
use crate::interrupt::{DeviceEvent, EventGuard, EventRing, Rejection, EVENT_RING_RECORDS};
use crate::klog;
use crate::kmem::{self, NoMemory};
use crate::mmio::Regs;
use crate::platform::Platform;
use crate::resources::{self, Resources};
use crate::runlist;
use crate::sched::Sched;
use crate::status::{self, Status};
use crate::sync::SpinLock;

/// Where the adapter is in its PnP life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// AddDevice done, not started (or stopped).
    Added,
    /// StartDevice succeeded.
    Started,
    /// RemoveDevice ran; nothing more may be called.
    Removed,
}

/// Device power state as Dxgkrnl set it (`DEVICE_POWER_STATE`: D0 = 1 .. D3 = 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerState(pub i32);

/// State the ISR owns: the event ring's read side and the fence tag registry.
#[derive(Debug)]
pub struct IsrState {
    pub ring: EventRing,
    pub fences: Registry,
    /// The node rings (legacy submission path, docs/tdr.md §3.2): interrupt lock only.
    pub nodes: crate::node::NodeRings,
}

/// Holds [`IsrState`]. Only the ISR and routines run through `DxgkCbSynchronizeExecution`
/// may touch it; both hold the adapter's interrupt lock at device IRQL.
struct IsrCell(UnsafeCell<IsrState>);

// SAFETY: access is serialised by the interrupt lock (see the type's doc); the ring itself is
// plain memory plus indices.
unsafe impl Sync for IsrCell {}
// SAFETY: as above.
unsafe impl Send for IsrCell {}

/// What a started adapter has: the ISR's view.
pub struct Live<P: Platform> {
    pub dxgk: Dxgk,
    pub features: Features,
    /// The optional DDI groups the driver's table fills (fixed for the image).
    pub ddis: Filled,
    pub regs: Regs<P>,
    pub regs_va: NonNull<u8>,
    pub identity: DeviceIdentity,
    pub resources: Resources,
    /// Native fences (PASSIVE/DISPATCH side).
    pub fences: SpinLock<P, FenceTable>,
    /// BAR2 (doorbell aperture) as mapped by `DxgkCbMapMemory`; `None` if the adapter has
    /// no doorbell BAR (user-mode queues then cannot connect).
    pub doorbell_va: Option<NonNull<u8>>,
    /// Devices, contexts, hardware queues, doorbells and runlists (see [`crate::sched`]).
    pub sched: SpinLock<P, Sched>,
    /// The ISR's queue id → queue handle table (LOG-08, [`crate::log::QueueIrqTable`]).
    pub queue_irq: crate::log::QueueIrqTable,
    /// Kernel-mode submissions held back for a full ring ([`crate::submit::drain_backlog`]).
    pub backlogged: core::sync::atomic::AtomicUsize,
    /// Fence interrupts are reported per hardware queue (LOG-08; set at start from
    /// [`crate::caps::optimized_fence_irq`], never changed while started).
    pub optimized_fence_irq: bool,
    /// The F-state the OS set for each engine's power component ([`crate::power`], UM-13).
    pub power: crate::power::EnginePower,
    /// The aperture segment's page table ([`crate::aperture`]); empty without
    /// the GpuMmu model.
    pub aperture: crate::aperture::Aperture,
    isr: IsrCell,
}

impl<P: Platform> Live<P> {
    /// Runs `f` on the ISR's state under the interrupt lock (DxgkCbSynchronizeExecution), so
    /// it never overlaps the ISR. `f` runs at device IRQL: it must not allocate or block.
    pub fn synchronized<F, R>(&self, f: F) -> Result<R, Status>
    where
        F: FnOnce(&mut IsrState) -> R,
    {
        struct Ctx<'a, F, R> {
            cell: &'a IsrCell,
            f: Option<F>,
            out: Option<R>,
        }
        unsafe extern "system" fn run<F: FnOnce(&mut IsrState) -> R, R>(ctx: *mut c_void) -> u8 {
            // SAFETY: `synchronized` passes a pointer to its own `Ctx`, alive for the call.
            let ctx = unsafe { &mut *ctx.cast::<Ctx<'_, F, R>>() };
            if let Some(f) = ctx.f.take() {
                // SAFETY: we run under the interrupt lock (IsrCell's invariant).
                ctx.out = Some(f(unsafe { &mut *ctx.cell.0.get() }));
            }
            1
        }
        let mut ctx = Ctx {
            cell: &self.isr,
            f: Some(f),
            out: None,
        };
        let p = (&raw mut ctx).cast::<c_void>();
        // SAFETY: `run::<F, R>` expects exactly this context, which outlives the call.
        unsafe { self.dxgk.synchronize(run::<F, R>, p) }?;
        ctx.out.ok_or(status::UNSUCCESSFUL)
    }
}

impl<P: Platform> core::fmt::Debug for Live<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Live")
            .field("identity", &self.identity)
            .field("resources", &self.resources)
            .finish()
    }
}

/// Counters for debugging (WinDbg shows them through the NatVis) and tests.
#[derive(Debug, Default)]
pub struct Stats {
    pub isr_claimed: AtomicU64,
    pub isr_unclaimed: AtomicU64,
    pub events: AtomicU64,
    pub unknown_events: AtomicU64,
    pub overflows: AtomicU64,
    pub dpcs: AtomicU64,
    /// Events whose handling belongs to a feature not built yet (counted, not dropped
    /// silently).
    pub unhandled_events: AtomicU64,
    /// Doorbells still connected at `SetPowerState(D3)`, summed over power-downs (UM-14 has
    /// Dxgkrnl disconnect them first; [`crate::doorbell::connected_at_d3`]).
    pub d3_doorbells_connected: AtomicU64,
}

/// The per-adapter driver object. Its address is the `MiniportDeviceContext`.
pub struct Adapter<P: Platform> {
    pdo: *mut c_void,
    /// Slot in the driver's adapter table ([`crate::globals::ADAPTERS`]), set once by
    /// AddDevice; `u8::MAX` until then.
    table_slot: AtomicU8,
    lifecycle: SpinLock<P, (Lifecycle, PowerState)>,
    live: AtomicPtr<Live<P>>,
    /// Mints KMD handles ([`crate::handle::Handle`]): never reused, even across restarts, so
    /// a stale handle cannot name a new object.
    handles: Minter,
    /// OS fence handle → (adapter slot, tag), for the DDIs without an adapter handle.
    pub fence_handles: HandleMap,
    pub stats: Stats,
    /// TDR diagnostics (reset results, counters): atomics, read by CollectDbgInfo lock-free.
    pub tdr: crate::reset::TdrLog,
    /// What the ISR checks event records against, and what it dropped.
    pub event_guard: EventGuard,
    /// Finds an interrupt delivery lost with no event after it
    /// ([`crate::watchdog`]). Armed while started and in D0.
    pub watchdog: crate::watchdog::Watchdog<P>,
}

// SAFETY: `pdo` is an opaque OS handle never dereferenced; everything else is synchronised as
// the module documentation describes.
unsafe impl<P: Platform> Send for Adapter<P> {}
// SAFETY: as above.
unsafe impl<P: Platform> Sync for Adapter<P> {}

impl<P: Platform> core::fmt::Debug for Adapter<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Adapter")
            .field("pdo", &self.pdo)
            .field("stats", &self.stats)
            .finish()
    }
}

/// Native fences one adapter can hold at once ([`crate::fence::registry::MAX_FENCES`]: the ISR
/// registry's chunk directory is reserved at this size, since linking a chunk in happens under
/// the interrupt lock). The registry and the handle map grow up to it as fences are created.
pub const FENCES_PER_ADAPTER: u32 = crate::fence::registry::MAX_FENCES;

/// Fences the handle map holds before its first growth (a small table at AddDevice).
const FENCE_HANDLES_AT_ADD: usize = 1024;

/// `DEVICE_POWER_STATE::PowerDeviceD0`.
pub const POWER_D0: i32 = 1;
/// `DEVICE_POWER_STATE::PowerDeviceD3`.
pub const POWER_D3: i32 = 4;
/// `DISPLAY_ADAPTER_HW_ID`: the device UID that means "the adapter itself".
pub const DISPLAY_ADAPTER_HW_ID: u32 = 0xFFFF_FFFF;

/// What StartDevice takes from the pool, allocated in one step before any other resource:
/// the started-adapter block itself (filled last), the doorbell page table, the
/// ISR's queue lookup and fence registry, the aperture's page table.
struct StartHeap<P: Platform> {
    live: Box<core::mem::MaybeUninit<Live<P>>>,
    physical: crate::doorbell::Physical,
    queue_irq: crate::log::QueueIrqTable,
    fences: Registry,
    aperture: crate::aperture::Aperture,
}

impl<P: Platform> StartHeap<P> {
    fn try_alloc(
        engines: u32,
        doorbells: u32,
        global: bool,
        aperture_bytes: u64,
    ) -> Result<Self, NoMemory> {
        Ok(Self {
            aperture: crate::aperture::Aperture::try_new::<P>(aperture_bytes)?,
            live: kmem::try_box::<P, _>(core::mem::MaybeUninit::uninit())?,
            physical: crate::doorbell::Physical::try_new::<P>(doorbells, global)?,
            queue_irq: crate::log::QueueIrqTable::try_for_adapter::<P>(engines)?,
            // The chunk directory and one chunk; more chunks as fences are created.
            fences: Registry::try_new::<P>(1)?,
        })
    }
}

impl<P: Platform> Adapter<P> {
    /// AddDevice: a new, unstarted adapter for physical device object `pdo`. Allocates the
    /// fence handle map (fallibly: AddDevice fails cleanly when the pool is exhausted).
    pub fn try_new(pdo: *mut c_void) -> Result<Self, NoMemory> {
        Ok(Self {
            pdo,
            table_slot: AtomicU8::new(u8::MAX),
            lifecycle: SpinLock::new((Lifecycle::Added, PowerState(POWER_D0))),
            live: AtomicPtr::new(ptr::null_mut()),
            handles: Minter::default(),
            fence_handles: HandleMap::try_new::<P>(
                FENCE_HANDLES_AT_ADD,
                FENCES_PER_ADAPTER as usize,
            )?,
            stats: Stats::default(),
            tdr: crate::reset::TdrLog::default(),
            event_guard: EventGuard::default(),
            watchdog: crate::watchdog::Watchdog::default(),
        })
    }

    /// Records the adapter's slot in the driver's adapter table (AddDevice).
    pub fn set_table_slot(&self, slot: u8) {
        self.table_slot.store(slot, Ordering::Release);
    }

    /// The adapter's slot in the driver's adapter table.
    pub fn table_slot(&self) -> u8 {
        self.table_slot.load(Ordering::Acquire)
    }

    /// A new KMD handle of `kind` for an object of this adapter.
    pub fn new_handle(&self, kind: Kind) -> Result<Handle, Status> {
        self.handles.mint(self.table_slot(), kind)
    }

    /// Current lifecycle state.
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle.lock().0
    }

    /// The started adapter, if any. The reference is valid while the adapter stays started,
    /// which Dxgkrnl guarantees for the duration of any DDI other than StopDevice.
    pub fn live(&self) -> Option<&Live<P>> {
        let p = self.live.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was published by `start` from a leaked Box and stays
        // valid until `stop` unpublishes it under the interrupt lock and frees it; callers run
        // inside DDIs that Dxgkrnl does not overlap with StopDevice.
        unsafe { p.as_ref() }
    }

    /// The started adapter, or `STATUS_INVALID_DEVICE_STATE` (for DDIs that need one).
    pub fn started(&self) -> Result<&Live<P>, Status> {
        self.live().ok_or(status::INVALID_DEVICE_STATE)
    }

    /// StartDevice: discover resources, map registers, bring the device up, publish the ISR
    /// state, enable interrupts. On failure everything acquired so far is released.
    pub fn start(&self, dxgk: Dxgk, ddis: Filled) -> Result<(), Status> {
        {
            let mut l = self.lifecycle.lock();
            if l.0 != Lifecycle::Added {
                return Err(status::INVALID_DEVICE_STATE);
            }
            // Claim the transition so a concurrent (buggy) second start fails fast.
            l.0 = Lifecycle::Started;
        }
        match self.bring_up(dxgk, ddis) {
            Ok(mut live) => {
                live.optimized_fence_irq = crate::caps::optimized_fence_irq(&live);
                self.live.store(Box::into_raw(live), Ordering::Release);
                if let Some(l) = self.live() {
                    device::enable_interrupts(&l.regs);
                    self.arm_watchdog();
                    klog!(
                        P,
                        Info,
                        "rvgpu: started, {} engines, {} doorbells, caps {:#x}",
                        l.identity.config.engines,
                        l.identity.config.doorbells,
                        l.identity.caps.bits()
                    );
                }
                Ok(())
            }
            Err(e) => {
                self.lifecycle.lock().0 = Lifecycle::Added;
                klog!(P, Error, "rvgpu: start failed: {:#x}", e.code());
                Err(e)
            }
        }
    }

    fn bring_up(&self, dxgk: Dxgk, ddis: Filled) -> Result<Box<Live<P>>, Status> {
        let info = dxgk.device_information()?;
        // SAFETY: Dxgkrnl's DXGK_DEVICE_INFO points at a valid translated resource list.
        let res = unsafe { resources::parse(info.TranslatedResourceList) }
            .map_err(|_| status::INSUFFICIENT_RESOURCES)?;
        let va = dxgk.map_registers(res.mmio.start, res.mmio.length)?;
        let len = usize::try_from(res.mmio.length).map_err(|_| status::INSUFFICIENT_RESOURCES)?;
        // SAFETY: `va` maps BAR0 for `len` bytes until we unmap it in `tear_down`/below.
        let regs = unsafe { Regs::<P>::new(va, len) };
        let identity = match device::probe(&regs) {
            Ok(id) => id,
            Err(e) => {
                klog!(P, Error, "rvgpu: probe failed: {:?}", e);
                let _ = dxgk.unmap(va);
                return Err(status::DEVICE_HARDWARE_ERROR);
            }
        };
        // The driver's own pool memory before any OS resource beyond the register mapping:
        // if the pool is exhausted, StartDevice fails with nothing else to undo.
        let global = identity
            .caps
            .contains(rvgpu_hw::regs::Caps::GLOBAL_DOORBELL);
        // The aperture's table covers the segment reported to VidMm (only with the GpuMmu
        // model, which is what reports an aperture).
        let aperture_bytes = if identity.caps.contains(rvgpu_hw::regs::Caps::PAGE_TABLES) {
            crate::gpummu::APERTURE_SIZE
        } else {
            0
        };
        let heap = match StartHeap::<P>::try_alloc(
            identity.config.engines,
            identity.config.doorbells,
            global,
            aperture_bytes,
        ) {
            Ok(h) => h,
            Err(NoMemory) => {
                let _ = dxgk.unmap(va);
                return Err(status::INSUFFICIENT_RESOURCES);
            }
        };
        device::quiesce(&regs, identity.config.engines);
        // Every engine powered (F0): Dxgkrnl registers the power components in F0.
        let power = crate::power::EnginePower::default();
        if identity.caps.contains(rvgpu_hw::regs::Caps::ENGINE_POWER) {
            crate::power::power_up_all(&regs, identity.config.engines, &power);
        }
        // Fence storage, rings and logs are allocated by the OS anywhere in system memory, and
        // version 1 of the device has no GPU page tables; so window 1 admits all of system
        // memory (except page 0). This is no DMA isolation: it arrives with per-process page
        // tables (docs/hardware.md, "Addressing").
        let sysmem = rvgpu_hw::addr::BusAddr::new(rvgpu_hw::PAGE_SIZE);
        device::set_window(
            &regs,
            1,
            sysmem,
            rvgpu_hw::addr::SYSMEM_LIMIT.saturating_sub(sysmem.get()),
        );
        device::unbind_doorbells(&regs, identity.config.doorbells);
        // Memory first, the event ring (which the device starts writing) last: a failure
        // before it leaves the device nothing of ours to touch.
        let runlists = match runlist::alloc::<P>(&dxgk, identity.config.engines) {
            Ok(r) => r,
            Err(e) => {
                let _ = dxgk.unmap(va);
                return Err(e);
            }
        };
        let doorbell_va = match Self::map_doorbells(&dxgk, &res, identity.config.doorbells) {
            Ok(v) => v,
            Err(e) => {
                runlist::free(&dxgk, runlists);
                let _ = dxgk.unmap(va);
                return Err(e);
            }
        };
        let writeback = identity.caps.contains(rvgpu_hw::regs::Caps::EVENT_WB);
        let ring = match Self::alloc_event_ring(&dxgk, &regs, writeback, res.message_signaled) {
            Ok(r) => r,
            Err(e) => {
                if let Some(d) = doorbell_va {
                    let _ = dxgk.unmap(d);
                }
                runlist::free(&dxgk, runlists);
                let _ = dxgk.unmap(va);
                return Err(e);
            }
        };
        let StartHeap {
            live: live_box,
            physical,
            queue_irq,
            fences: isr_fences,
            aperture,
        } = heap;
        let mut sched = Sched::with_physical(physical, runlists);
        sched.runlist_update = identity.caps.contains(rvgpu_hw::regs::Caps::RUNLIST_UPDATE);
        // Node rings (docs/tdr.md §3.2): allocated and entered in every engine's runlist
        // before anything else can be, so OS-scheduled work always has its queue.
        let nodes =
            match crate::node::bring_up::<P>(&dxgk, &regs, &mut sched, identity.config.engines) {
                Ok(n) => n,
                Err(e) => {
                    // The device was told about the event ring: stop it before freeing.
                    regs.write(rvgpu_hw::regs::EventRingCtrl::new(0));
                    regs.write(rvgpu_hw::regs::EventWbAddr::new(0));
                    let _ = dxgk.free_contiguous(ring.into_buffer().handle());
                    if let Some(d) = doorbell_va {
                        let _ = dxgk.unmap(d);
                    }
                    runlist::free(&dxgk, core::mem::take(&mut sched.runlists));
                    let _ = dxgk.unmap(va);
                    return Err(e);
                }
            };
        // Negotiated last: nothing after it can fail, so the interface reference it takes is
        // always released by `tear_down`.
        let features = Features::negotiate(&dxgk);
        Ok(Box::write(
            live_box,
            Live {
                dxgk,
                features,
                ddis,
                regs,
                regs_va: va,
                identity,
                resources: res,
                fences: SpinLock::new(FenceTable::default()),
                doorbell_va,
                sched: SpinLock::new(sched),
                queue_irq,
                backlogged: core::sync::atomic::AtomicUsize::new(0),
                optimized_fence_irq: false,
                power,
                aperture,
                isr: IsrCell(UnsafeCell::new(IsrState {
                    ring,
                    fences: isr_fences,
                    nodes,
                })),
            },
        ))
    }

    /// Maps BAR2, the doorbell aperture, the way BAR0 is mapped (uncached kernel mapping):
    /// `doorbells` pages, or as much of them as the BAR holds. `None` if there is no BAR2.
    fn map_doorbells(
        dxgk: &Dxgk,
        res: &Resources,
        doorbells: u32,
    ) -> Result<Option<NonNull<u8>>, Status> {
        let want = u64::from(doorbells).saturating_mul(rvgpu_hw::PAGE_SIZE);
        let len = res.doorbells.length.min(want);
        if len < rvgpu_hw::PAGE_SIZE {
            return Ok(None);
        }
        dxgk.map_registers(res.doorbells.start, len).map(Some)
    }

    /// The event ring, and after it (one more page) the event write-back word when the
    /// device has one (`writeback`); `message`: the interrupt is an MSI (resources).
    fn alloc_event_ring(
        dxgk: &Dxgk,
        regs: &Regs<P>,
        writeback: bool,
        message: bool,
    ) -> Result<EventRing, Status> {
        let ring_bytes = u64::from(EVENT_RING_RECORDS).saturating_mul(32);
        let bytes = if writeback {
            ring_bytes.saturating_add(rvgpu_hw::PAGE_SIZE)
        } else {
            ring_bytes
        };
        let (va, handle) = dxgk.allocate_contiguous(bytes)?;
        let Some(bus) = P::bus_address(va) else {
            let _ = dxgk.free_contiguous(handle);
            return Err(status::INSUFFICIENT_RESOURCES);
        };
        // SAFETY: fresh contiguous memory of `bytes` bytes, page aligned, owned by us until
        // freed through `handle`.
        let buf = unsafe { DmaBuffer::from_raw(va, bus, bytes, handle) };
        buf.zero();
        // Window 0 is the event ring's: the device may write nothing else of ours yet.
        device::set_window(regs, 0, bus, bytes);
        let mut ring = EventRing::new(buf, EVENT_RING_RECORDS).ok_or(status::UNSUCCESSFUL)?;
        ring.set_mode(writeback, message);
        ring.program(regs);
        Ok(ring)
    }

    /// StopDevice: interrupts off, ISR state unpublished under the interrupt lock, device
    /// quiesced, memory and mappings released.
    pub fn stop(&self) -> Result<(), Status> {
        {
            let l = self.lifecycle.lock();
            if l.0 != Lifecycle::Started {
                return Err(status::INVALID_DEVICE_STATE);
            }
        }
        let raw = self.live.load(Ordering::Acquire);
        if raw.is_null() {
            return Err(status::INVALID_DEVICE_STATE);
        }
        // Before anything is torn down: afterwards no watchdog tick runs or will run.
        self.watchdog.disarm();
        // SAFETY: published by `start`, still published (only `stop` clears it, and Dxgkrnl
        // serialises StopDevice with itself).
        let dxgk = unsafe { (*raw).dxgk };
        // SAFETY: as above.
        unsafe { (*raw).regs.write(rvgpu_hw::regs::IntEnable::new(0)) };
        // Unpublish at device IRQL: once this returns no ISR holds or will load the pointer.
        let ctx = ptr::from_ref(&self.live).cast_mut().cast::<c_void>();
        // SAFETY: `unpublish::<P>` expects exactly this context: our `live` slot, which
        // outlives the call.
        unsafe { dxgk.synchronize(unpublish::<P>, ctx) }?;
        // SAFETY: `raw` came from Box::into_raw in `start` and is unreachable by the ISR now.
        let live = unsafe { Box::from_raw(raw) };
        // Fences the OS left behind die with this start; their handles must not route later
        // DDIs (or a restart's creates) to them.
        for h in live.fences.lock().handles() {
            self.fence_handles.remove(h);
        }
        Self::tear_down(*live);
        self.lifecycle.lock().0 = Lifecycle::Added;
        Ok(())
    }

    /// Frees what `start` built; the ISR can no longer reach it. Objects the OS did not
    /// destroy die here: the device is quiesced first (every runlist empty, every doorbell
    /// unbound), so nothing reads their memory any more.
    fn tear_down(mut live: Live<P>) {
        live.features.release();
        device::quiesce(&live.regs, live.identity.config.engines);
        device::unbind_doorbells(&live.regs, live.identity.config.doorbells);
        let sched = core::mem::take(live.sched.get_mut());
        for q in sched.queues.into_values() {
            if let Some(k) = q.kernel {
                let _ = live.dxgk.free_contiguous(k.buf.handle());
            }
        }
        runlist::free(&live.dxgk, sched.runlists);
        if let Some(va) = live.doorbell_va.take() {
            let _ = live.dxgk.unmap(va);
        }
        let isr = live.isr.0.into_inner();
        let mut nodes = isr.nodes;
        nodes.free(&live.dxgk, &mut crate::hwqueue::QueueIds::default());
        let buf = isr.ring.into_buffer();
        let _ = live.dxgk.free_contiguous(buf.handle());
        let _ = live.dxgk.unmap(live.regs_va);
    }

    /// RemoveDevice: only from Added (Dxgkrnl stops first).
    pub fn remove(&self) -> Result<(), Status> {
        let mut l = self.lifecycle.lock();
        if l.0 != Lifecycle::Added {
            return Err(status::INVALID_DEVICE_STATE);
        }
        l.0 = Lifecycle::Removed;
        Ok(())
    }

    /// SetPowerState for the adapter itself.
    pub fn set_power(&self, device_uid: u32, state: i32) -> Result<(), Status> {
        if device_uid != DISPLAY_ADAPTER_HW_ID {
            // A render-only adapter has no children to power.
            return Err(status::INVALID_PARAMETER);
        }
        if !(POWER_D0..=POWER_D3).contains(&state) {
            return Err(status::INVALID_PARAMETER);
        }
        if state == POWER_D0 {
            // The bus driver powered the function up before this call.
            if let Some(live) = self.live() {
                live.regs.set_powered(true);
            }
        } else {
            // Before the device leaves D0, outside the lifecycle lock (disarming waits for a
            // tick in progress, at PASSIVE): no look at a powered-down device's registers.
            self.watchdog.disarm();
            // Doorbells the OS left connected (none, if Dxgkrnl did UM-14's disconnects):
            // counted for CollectDbgInfo, not disconnected from here (see `connected_at_d3`).
            if let Some(live) = self.live() {
                let n = crate::doorbell::connected_at_d3(live);
                if n != 0 {
                    self.stats
                        .d3_doorbells_connected
                        .fetch_add(u64::from(n), Ordering::Relaxed);
                    klog!(
                        P,
                        Warning,
                        "rvgpu: {} doorbells still connected at D3 (UM-14: Dxgkrnl disconnects them first)",
                        n
                    );
                }
            }
        }
        let mut l = self.lifecycle.lock();
        if l.0 == Lifecycle::Removed {
            return Err(status::INVALID_DEVICE_STATE);
        }
        if let Some(live) = self.live() {
            if state == POWER_D0 {
                device::enable_interrupts(&live.regs);
            } else {
                live.regs.write(rvgpu_hw::regs::IntEnable::new(0));
            }
        }
        l.1 = PowerState(state);
        drop(l);
        // Started or not is fixed here: Dxgkrnl serialises power and PnP DDIs.
        if let Some(live) = self.live() {
            if state == POWER_D0 {
                // Runlist changes made out of D0 never reached the device (`runlist::may_commit`
                // defers them): every engine's runlist is committed afresh from the driver's.
                // (The OS suspends every context before D3, so today such changes are
                // removals of queues the device no longer runs; this keeps any other change.)
                let s = live.sched.lock();
                for engine in 0..live.identity.config.engines {
                    let _ = runlist::commit(&live.regs, &s, engine);
                }
                drop(s);
                self.arm_watchdog();
            } else {
                // Out of D0 the bus driver puts the function in D3hot, where BAR reads return
                // all-ones and writes are dropped (hardware.md 13.3): from here on the driver
                // touches no register, and takes no all-ones for a lost device. An ISR that
                // saw the registers powered just before finishes under the interrupt lock
                // before this returns.
                // Under the scheduler lock, so no runlist commit, doorbell binding or kick that
                // passed its check is still writing.
                let s = live.sched.lock();
                live.regs.set_powered(false);
                drop(s);
                let _ = live.synchronized(|_| ());
            }
        }
        Ok(())
    }

    /// Arms the interrupt watchdog ([`crate::watchdog`]) with this adapter as its context
    /// (StartDevice, D0, RestartFromTimeout; a no-op if it is armed).
    pub(crate) fn arm_watchdog(&self) {
        let ctx = ptr::from_ref(self).cast::<c_void>();
        // SAFETY: the adapter is the MiniportDeviceContext, which does not move between
        // AddDevice and RemoveDevice; `stop` and `set_power` disarm (flushing a tick in
        // progress) before the started state goes away, and RemoveDevice needs a stopped
        // adapter, so `watchdog_tick::<P>` never sees a freed adapter.
        if !unsafe { self.watchdog.arm(watchdog_tick::<P>, ctx) } {
            klog!(
                P,
                Warning,
                "rvgpu: no kernel timer: the interrupt watchdog is off"
            );
        }
    }

    /// The watchdog's look, under the interrupt lock: services a delivery lost with nothing
    /// after it by running the ISR. Returns whether it did.
    fn watchdog_look(&self) -> bool {
        let Some(live) = self.live() else {
            return false;
        };
        if live.regs.is_gone() || !live.regs.is_powered() {
            return false;
        }
        let raw = live.regs.read::<rvgpu_hw::regs::IntStatus>().raw();
        if raw == u32::MAX {
            // Nothing on the bus (or a glitch): the ISR and the removal path decide.
            return false;
        }
        // Only causes that raise the line now: a disabled cause pending is not a lost delivery.
        let enabled = live.regs.read::<rvgpu_hw::regs::IntEnable>().raw();
        let pending = raw & enabled & device::ENABLED_CAUSES.bits();
        let runs = self
            .stats
            .isr_claimed
            .load(Ordering::Relaxed)
            .wrapping_add(self.stats.isr_unclaimed.load(Ordering::Relaxed));
        if !self.watchdog.look(pending, runs) {
            return false;
        }
        klog!(
            P,
            Warning,
            "rvgpu: interrupt delivery lost (INT_STATUS {:#x} pending for a watchdog period); servicing it",
            pending
        );
        self.interrupt()
    }

    /// ResetDevice: called at high IRQL before a bug check or a soft reboot; must not block or
    /// allocate. Silences the device so it stops interrupting and DMAing.
    pub fn reset_device(&self) {
        if let Some(live) = self.live() {
            live.regs.write(rvgpu_hw::regs::IntEnable::new(0));
            live.regs.write(rvgpu_hw::regs::EventRingCtrl::new(0));
            live.regs.write(rvgpu_hw::regs::EventWbAddr::new(0));
        }
    }

    /// The ISR. Returns whether the interrupt was ours.
    pub fn interrupt(&self) -> bool {
        let Some(live) = self.live().filter(|l| l.regs.is_powered()) else {
            // Not started, or out of D0 (a shared line): not ours, and nothing to read.
            self.stats.isr_unclaimed.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        // SAFETY: the ISR holds the interrupt lock (IsrCell's invariant).
        let isr = unsafe { &mut *live.isr.0.get() };
        let (ring, registry, nodes) = (&mut isr.ring, &isr.fences, &mut isr.nodes);
        // Node-ring reports (DmaCompleted / DmaPreempted / DmaFaulted, docs/tdr.md §3.3).
        let mut node_emit = |d: &DXGKARGCB_NOTIFY_INTERRUPT_DATA| live.dxgk.notify_interrupt(d);
        let mut batch = if live.optimized_fence_irq {
            Batch::optimized()
        } else {
            Batch::default()
        };
        let mut others = false;
        let mut emit = |r: Report<'_>| notify_fences(live, r);
        let mut fence_reports = false;
        let summary = ring.service(&live.regs, |ev| {
            self.stats.events.fetch_add(1, Ordering::Relaxed);
            // The GPU wrote this record: act on it only if it fits what the driver knows.
            if let Err(why) = check_event(live, &self.event_guard, nodes, &ev) {
                self.event_guard.reject(why);
                return;
            }
            // A Progress or Fault record of a node ring is the legacy path's (TDR-04): it is
            // reported as DMA completion / fault, not as a hardware queue's progress.
            if nodes.on_event(ev, &mut node_emit) {
                others = true;
                return;
            }
            match ev {
                DeviceEvent::FenceSignaled {
                    legacy: true,
                    engine,
                    ..
                } => {
                    fence_reports = true;
                    batch.legacy(engine, &mut emit);
                }
                DeviceEvent::FenceSignaled { engine, queue, .. } if live.optimized_fence_irq => {
                    // LOG-08: name the queue that ran the signal; its signal log has the entry
                    // (LOG-04). Otherwise NULL, plus a full scan if a log read could miss it.
                    fence_reports = true;
                    let slot = self.table_slot();
                    let (hw_queue, evaluate) = match live.queue_irq.lookup(slot, queue) {
                        crate::log::QueueLookup::Named(h) => (Some(h.as_handle().addr()), false),
                        crate::log::QueueLookup::Logless => (None, true),
                        // An anonymous event: a full scan only if some queue of the
                        // engine has no logs. An id outside the table (a node ring, or a
                        // queue destroyed since) may have run any signal: full scan.
                        crate::log::QueueLookup::Unknown if queue == rvgpu_hw::queue::NO_QUEUE => {
                            (None, live.queue_irq.engine_has_logless(engine))
                        }
                        crate::log::QueueLookup::Unknown => (None, true),
                    };
                    batch.native_queue(engine, hw_queue, evaluate, &mut emit);
                }
                DeviceEvent::FenceSignaled { engine, tag, .. } => {
                    fence_reports = true;
                    // By tag alone: the record's MonitoredValue VA is the signalling
                    // process's own (fence::registry).
                    let handle = registry.resolve(tag).map(|f| f.os_handle);
                    batch.native(engine, handle, &mut emit);
                }
                // DMA completed (a PROGRESS with interrupt): the OS reads the queue's progress
                // fence on this node (monitored-fence report). Only a queue created with
                // NativeProgressFence (or one no longer in the table) also needs a "scan
                // everything" native report: the progress write is in no log.
                DeviceEvent::Progress { engine, queue, .. } => {
                    fence_reports = true;
                    let native = live.features.native_fence.is_some()
                        && live.queue_irq.progress_is_native(queue);
                    batch.progress(engine, native, &mut emit);
                }
                other => others |= self.dispatch_event(live, other),
            }
        });
        match &summary {
            Some(s) if s.overflow => {
                fence_reports = true;
                // Lost records may include node-ring completions: report F where it is ahead.
                nodes.lost_events(&mut node_emit);
                let native = live.features.native_fence.is_some();
                batch.lost_events(live.identity.config.engines, native, &mut emit);
            }
            _ => batch.flush(&mut emit),
        }
        let notified = others || fence_reports;
        match summary {
            None => {
                self.stats.isr_unclaimed.fetch_add(1, Ordering::Relaxed);
                false
            }
            Some(s) => {
                self.stats.isr_claimed.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .unknown_events
                    .fetch_add(u64::from(s.unknown), Ordering::Relaxed);
                if s.overflow {
                    self.stats.overflows.fetch_add(1, Ordering::Relaxed);
                }
                if notified {
                    live.dxgk.queue_dpc();
                }
                true
            }
        }
    }

    /// Turns one device event into what Dxgkrnl must hear. Returns whether it was notified.
    fn dispatch_event(&self, live: &Live<P>, ev: DeviceEvent) -> bool {
        match ev {
            DeviceEvent::EngineState {
                engine,
                new: Some(new),
                ..
            } => {
                let state = match new {
                    EngineState::Active => DXGK_ENGINE_STATE_ACTIVE,
                    EngineState::TransitionToF1 => DXGK_ENGINE_STATE_TRANSITION_TO_F1,
                    EngineState::Hung => DXGK_ENGINE_STATE_HUNG,
                    // Idle and Resetting are device-internal; the OS has no state for them.
                    EngineState::Idle | EngineState::Resetting => return false,
                };
                let mut data = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
                    InterruptType: DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE,
                    ..Default::default()
                };
                data.Anonymous.EngineStateChange =
                    DXGKARGCB_NOTIFY_INTERRUPT_DATA_EngineStateChange {
                        NodeOrdinal: engine,
                        EngineOrdinal: 0,
                        NewState: state,
                    };
                live.dxgk.notify_interrupt(&data);
                true
            }
            // The end of an engine reset (hardware.md 7.1: internal to the KMD; ResetEngine
            // reads RESET_* itself): recorded for CollectDbgInfo, nothing to tell the OS.
            DeviceEvent::ResetDone {
                engine,
                result,
                queue,
                rptr,
            } => {
                self.tdr.reset_done(engine, result, queue, rptr);
                false
            }
            // A hardware queue's GPU page fault (hardware.md 12.6): the queue stopped at the
            // faulting packet; Dxgkrnl puts the queue's device in error (UM-10). Node-ring
            // faults never get here (`NodeRings::on_event` reports them as DMA faults).
            DeviceEvent::Fault {
                engine,
                queue,
                code: Some(rvgpu_hw::event::FaultCode::PageFault),
                addr,
                rptr: info,
            } => {
                let Some(h) = live.queue_irq.queue_handle(self.table_slot(), queue) else {
                    self.stats.unhandled_events.fetch_add(1, Ordering::Relaxed);
                    return false;
                };
                live.dxgk
                    .notify_interrupt(&hw_queue_page_faulted(h, engine, addr.get(), info));
                true
            }
            // The CMP wrote the scheduling log's interrupt entry (hardware.md 5.7): the OS
            // reads the log it owns (DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT, WDDM 2.4).
            DeviceEvent::SchedLog { engine, .. } => {
                let mut data = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
                    InterruptType: rvgpu_ddi::interrupt::DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT,
                    ..Default::default()
                };
                data.Anonymous.SchedulingLogInterrupt =
                    rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine {
                        NodeOrdinal: engine,
                        EngineOrdinal: 0,
                    };
                live.dxgk.notify_interrupt(&data);
                true
            }
            // Other faults stop their queue and are caught by the progress-fence timeout
            // (docs/tdr.md); the rest is counted, never silently lost.
            _ => {
                self.stats.unhandled_events.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// The DPC: lets Dxgkrnl process what the ISR notified, then appends kernel-mode
    /// submissions a full ring held back (the PROGRESS interrupts that brought it here freed
    /// the room). No driver lock is held across `DxgkCbNotifyDpc`: 24H2 calls
    /// `DxgkDdiUpdateMonitoredValues` and submissions from inside it.
    pub fn dpc(&self) {
        self.stats.dpcs.fetch_add(1, Ordering::Relaxed);
        if let Some(live) = self.live() {
            live.dxgk.notify_dpc();
            crate::submit::drain_backlog(live);
        }
    }
}

/// The watchdog timer's routine (DISPATCH_LEVEL): one look under the interrupt lock.
///
/// # Safety
/// `context` is the adapter that armed the timer (see `Adapter::arm_watchdog`).
unsafe fn watchdog_tick<P: Platform>(context: *const c_void) {
    // SAFETY: the caller's contract.
    let adapter = unsafe { &*context.cast::<Adapter<P>>() };
    let Some(live) = adapter.live() else {
        return;
    };
    let ctx = context.cast_mut();
    // SAFETY: `watchdog_look_sync::<P>` expects exactly this context, the live adapter. A
    // failed call (the interrupt not connected yet, or disconnected) just skips this look.
    let _ = unsafe { live.dxgk.synchronize(watchdog_look_sync::<P>, ctx) };
}

/// `DxgkCbSynchronizeExecution` routine for [`watchdog_tick`].
unsafe extern "system" fn watchdog_look_sync<P: Platform>(context: *mut c_void) -> u8 {
    // SAFETY: `watchdog_tick` passes the adapter, alive for the call.
    let adapter = unsafe { &*context.cast_const().cast::<Adapter<P>>() };
    u8::from(adapter.watchdog_look())
}

/// A `Fault` naming a queue the driver knows on that engine: with `CAPS.QUEUE_STATE` the
/// device must agree (hardware.md 7.2). A queue it holds but did not stop was not faulted, so
/// the record is false (a faulty device or corrupted event memory), and acting on it would put
/// an innocent process's device in error. A queue it does not hold passes: a descriptor the
/// commit refused, or a queue that left the runlist after faulting (stale, harmless).
fn fault_matches_device<P: Platform>(
    live: &Live<P>,
    engine: u32,
    queue: u32,
) -> Result<(), Rejection> {
    use rvgpu_hw::regs::{Caps, QueueSelect, QueueStateReg};
    if !live.identity.caps.contains(Caps::QUEUE_STATE) {
        return Ok(());
    }
    // The ISR is the pair's only user, under the interrupt lock.
    live.regs.write_at(engine, QueueSelect::new(queue));
    let s = live.regs.read_at::<QueueStateReg>(engine);
    // All-ones: the device is gone; its records are moot, let the removal path decide.
    if s.raw() == u32::MAX || s.present() == 0 || s.faulted() != 0 {
        Ok(())
    } else {
        Err(Rejection::Queue)
    }
}

/// Whether a decoded record is plausible (ISR, device IRQL; reads `STATUS` for engine-state
/// records). Records that could be real but stale (a fence or queue destroyed since the GPU
/// posted them) pass: they lead at most to a "scan everything" report, which signals only
/// what the fences' values already say.
fn check_event<P: Platform>(
    live: &Live<P>,
    guard: &EventGuard,
    nodes: &crate::node::NodeRings,
    ev: &DeviceEvent,
) -> Result<(), Rejection> {
    use rvgpu_hw::queue::NO_QUEUE;
    let engine = ev.engine();
    if engine >= live.identity.config.engines {
        return Err(Rejection::Engine);
    }
    // A queue id named by the record: a node ring of this engine, a live hardware queue of
    // this engine, or (`stale_ok`) an id in range that no live queue has any more.
    let queue_ok = |queue: u32, stale_ok: bool| -> Result<(), Rejection> {
        if let Some(node) = nodes.node_of_queue(queue) {
            return if node == engine {
                Ok(())
            } else {
                Err(Rejection::Queue)
            };
        }
        match live.queue_irq.engine_of(queue) {
            Some(e) if e == engine => Ok(()),
            Some(_) => Err(Rejection::Queue),
            None if stale_ok && live.queue_irq.id_in_range(queue) => Ok(()),
            None => Err(Rejection::Queue),
        }
    };
    match *ev {
        DeviceEvent::FenceSignaled { queue, .. } if queue == NO_QUEUE => Ok(()),
        DeviceEvent::FenceSignaled { queue, .. } => queue_ok(queue, true),
        DeviceEvent::Progress { queue, .. } => queue_ok(queue, true),
        // Runlist-level faults name no queue (hardware.md 7.2).
        DeviceEvent::Fault { queue, .. } if queue == NO_QUEUE => Ok(()),
        DeviceEvent::Fault { queue, .. } => {
            queue_ok(queue, false)?;
            fault_matches_device(live, engine, queue)
        }
        DeviceEvent::EngineState {
            old: Some(_),
            new: Some(new @ (EngineState::Hung | EngineState::TransitionToF1)),
            ..
        } => {
            // The device reports only entries to Hung and TransitionToF1, and the engine stays
            // there until the OS acts (reset, F1/F0): STATUS must show it now.
            let raw = live
                .regs
                .read_at::<rvgpu_hw::regs::EngineStatusReg>(engine)
                .raw();
            match rvgpu_hw::engine::EngineStatus::from_reg(raw) {
                Some(s) if s.state == new && raw != u32::MAX => Ok(()),
                _ => Err(Rejection::State),
            }
        }
        DeviceEvent::EngineState { .. } => Err(Rejection::State),
        DeviceEvent::ResetDone { .. } => {
            if guard.take_reset(engine) {
                Ok(())
            } else {
                Err(Rejection::Reset)
            }
        }
        DeviceEvent::SchedLog { header, .. } => {
            if guard.sched_log_fits(engine, header) {
                Ok(())
            } else {
                Err(Rejection::SchedLog)
            }
        }
    }
}

/// `DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED` for queue `h` from the device's fault record
/// (`info`: `mmu::FaultInfo`). The queue is named by the driver's handle, as LOG-08's
/// `hHWQueue` is (UNVERIFIED which handle Windows expects, docs/memory.md).
fn hw_queue_page_faulted(
    h: crate::handle::Handle,
    engine: u32,
    va: u64,
    info: u64,
) -> DXGKARGCB_NOTIFY_INTERRUPT_DATA {
    use rvgpu_ddi::interrupt::{
        DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted, DXGK_BIND_TABLE_ENTRY_UNKNOWN,
        DXGK_FAULT_ERROR_CODE, DXGK_GENERAL_ERROR_PAGE_FAULT, DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED,
        DXGK_PAGE_FAULT_WRITE, DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
        DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
    };
    let info = rvgpu_hw::mmu::FaultInfo::decode(info);
    let write = info.is_some_and(|i| i.access == rvgpu_hw::mmu::Access::Write);
    let mut data = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
        InterruptType: DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED,
        ..Default::default()
    };
    data.Anonymous.HwQueuePageFaulted = DXGKARGCB_NOTIFY_INTERRUPT_DATA_HwQueuePageFaulted {
        FaultedFenceId: 0,
        FaultedVirtualAddress: va,
        FaultedPrimitiveAPISequenceNumber: DXGK_PRIMITIVE_API_SEQUENCE_NUMBER_UNKNOWN,
        FaultedHwQueue: h.as_handle(),
        NodeOrdinal: engine,
        EngineOrdinal: 0,
        FaultedPipelineStage: DXGK_RENDER_PIPELINE_STAGE_UNKNOWN,
        FaultedBindTableEntry: DXGK_BIND_TABLE_ENTRY_UNKNOWN,
        PageFaultFlags: if write { DXGK_PAGE_FAULT_WRITE } else { 0 },
        PageTableLevel: info.map_or(0, |i| u32::from(i.level)),
        FaultErrorCode: DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_PAGE_FAULT),
    };
    data
}

/// Hands one fence report to Dxgkrnl (device IRQL).
fn notify_fences<P: Platform>(live: &Live<P>, r: Report<'_>) {
    let data = match r {
        Report::Native { engine, handles } => {
            let (count, array) = match handles {
                // The OS reads the array during the call; it lives on the ISR's stack.
                Some(h) => (
                    u32::try_from(h.len()).unwrap_or(0),
                    h.as_ptr().cast_mut().cast::<rvgpu_ddi::HANDLE>(),
                ),
                None => (0, ptr::null_mut()),
            };
            DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(engine, 0, count, array)
        }
        Report::NativeQueue {
            engine,
            hw_queue,
            evaluate_all,
        } => {
            let h = hw_queue.map_or(ptr::null_mut(), ptr::without_provenance_mut);
            let mut d = DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled_queue(engine, 0, h);
            if evaluate_all {
                d.Flags.set(
                    DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences,
                    1,
                );
            }
            d
        }
        Report::Legacy { engine } => {
            let mut d = DXGKARGCB_NOTIFY_INTERRUPT_DATA {
                InterruptType: DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED,
                ..Default::default()
            };
            d.Anonymous.MonitoredFenceSignaled = DXGKARGCB_NOTIFY_INTERRUPT_DATA_NodeEngine {
                NodeOrdinal: engine,
                EngineOrdinal: 0,
            };
            d
        }
    };
    live.dxgk.notify_interrupt(&data);
}

/// Synchronised routine for `stop`: clears the published pointer at device IRQL.
unsafe extern "system" fn unpublish<P: Platform>(ctx: *mut c_void) -> u8 {
    // SAFETY: `stop` passes a pointer to its adapter's `live` field, alive for the call.
    let slot = unsafe { &*ctx.cast::<AtomicPtr<Live<P>>>() };
    slot.store(ptr::null_mut(), Ordering::Release);
    1
}
