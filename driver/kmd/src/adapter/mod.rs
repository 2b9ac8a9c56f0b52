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
//!
//! This module holds the adapter's types and accessors: what an adapter is made of. Its life
//! (start, stop, power, reset) is in [`bring_up`], the interrupt path (ISR, DPC, watchdog) in
//! [`isr`]; everything else is in the concept modules, which the DDIs call directly.

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};

use crate::ddi_groups::Filled;
use crate::device::DeviceIdentity;
use crate::dxgk::Dxgk;
use crate::features::Features;
use crate::fence::handles::HandleMap;
use crate::fence::registry::Registry;
use crate::fence::table::FenceTable;
use crate::handle::{Handle, Kind, Minter};
use crate::interrupt::{EventGuard, EventRing};
use crate::klog;
use crate::kmem::NoMemory;
use crate::mmio::Regs;
use crate::platform::Platform;
use crate::resources::Resources;
use crate::sched::Sched;
use crate::status::{self, Status};
use crate::sync::SpinLock;

#[deny(unsafe_code)]
mod bring_up;
#[deny(unsafe_code)]
mod isr;

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
    /// The node rings (legacy submission path, docs/tdr.md#the-kmd): interrupt lock only.
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
    /// The ISR's queue id → Dxgkrnl's queue object ([`crate::hwqueue::os_handles`]).
    pub os_queues: crate::hwqueue::os_handles::OsQueueTable,
    /// Kernel-mode submissions held back for a full ring ([`crate::submit::ddi::drain_backlog`]).
    pub backlogged: core::sync::atomic::AtomicUsize,
    /// Fence interrupts are reported per hardware queue (LOG-08; set at start from
    /// [`crate::caps::optimized_fence_irq`], never changed while started).
    pub optimized_fence_irq: bool,
    /// The F-state the OS set for each engine's power component ([`crate::power`], UM-13).
    pub power: crate::power::EnginePower,
    /// The aperture segment's page table ([`crate::aperture`]); empty without
    /// the GpuMmu model.
    pub aperture: crate::aperture::Aperture,
    /// Each pool's share between processes, read from the registry at start.
    pub quotas: crate::quota::Quotas,
    /// The test hooks, when the software key turned them on at start ([`crate::testhooks`]).
    pub hooks: Option<crate::testhooks::Hooks>,
    isr: IsrCell,
}

impl<P: Platform> Live<P> {
    /// NF-10: native GPU fences are advertised only when the OS enabled
    /// `DXGK_FEATURE_NATIVE_FENCE` (the OS fails adapter start otherwise), the device implements
    /// them, and the driver's table provides the native-fence DDIs (advertising obliges them,
    /// NF-12). Tying the last condition to the table itself means the bit cannot get ahead of
    /// the implementation.
    pub fn native_gpu_fence(&self) -> bool {
        let os = self.features.native_fence.is_some();
        let device = self
            .identity
            .caps
            .contains(rvgpu_hw::regs::Caps::NATIVE_FENCE);
        // LOG-09: native fences oblige the two log DDIs too (the OS gives every user-mode queue
        // both logs).
        os && device && self.ddis.native_fence && self.ddis.fence_logs
    }

    /// A DDI's `(NodeOrdinal, EngineOrdinal)`: a node of this adapter, on physical adapter 0
    /// (one engine per node, TDR-02); STATUS_INVALID_PARAMETER otherwise.
    pub fn node(&self, node: u32, engine_ordinal: u32) -> Result<u32, Status> {
        if node >= self.identity.config.engines || engine_ordinal != 0 {
            return Err(status::INVALID_PARAMETER);
        }
        Ok(node)
    }

    /// A report the KMD hands to `DxgkCbNotifyInterrupt`, journaled by the test hooks when
    /// they are on (`DmaCompleted`, `DmaPreempted`, native and legacy fence signals; any IRQL,
    /// the ISR's included).
    #[inline(always)]
    pub fn journal_report(&self, d: &rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA) {
        if let Some(h) = &self.hooks {
            journal_report_to(h, d);
        }
    }

    /// The part of the adapter the memory model's answers read ([`crate::gpummu`]).
    pub fn mmu(&self) -> crate::gpummu::Mmu<'_> {
        crate::gpummu::Mmu {
            identity: &self.identity,
            resources: &self.resources,
            aperture: &self.aperture,
        }
    }

    /// The ISR's state, for the ISR ([`Adapter::interrupt`]), which runs holding the interrupt
    /// lock: directly from DxgkDdiInterruptRoutine, or from the watchdog's look through
    /// DxgkCbSynchronizeExecution. Nothing else calls it.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    fn isr_state_in_isr(&self) -> &mut IsrState {
        // SAFETY: the ISR holds the interrupt lock (IsrCell's invariant) and takes this
        // reference once per run.
        unsafe { &mut *self.isr.0.get() }
    }

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
    /// Dxgkrnl disconnect them first; [`crate::doorbell::ddi::connected_at_d3`]).
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
    /// (`crate::watchdog`). Armed while started and in D0.
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

    /// StopDevice's unpublishing: the watchdog disarmed, interrupts off, the live state taken
    /// out of reach of the ISR under the interrupt lock, and handed back to be torn down.
    fn unpublish_live(&self) -> Result<alloc::boxed::Box<Live<P>>, Status> {
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
        let live = unsafe { alloc::boxed::Box::from_raw(raw) };
        Ok(live)
    }

    /// Arms the interrupt watchdog ([`crate::watchdog`]) with this adapter as its context
    /// (StartDevice, D0, RestartFromTimeout; a no-op if it is armed). Returns whether a timer
    /// is running.
    pub(crate) fn arm_watchdog(&self) -> bool {
        let running = !self.watchdog.begin_arm() || {
            let ctx = ptr::from_ref(self).cast::<c_void>();
            let timer = self.watchdog.timer();
            let period = crate::watchdog::PERIOD_MS;
            // SAFETY: the adapter is the MiniportDeviceContext, which does not move between
            // AddDevice and RemoveDevice; `stop` and `set_power` disarm (flushing a tick in
            // progress) before the started state goes away, and RemoveDevice needs a stopped
            // adapter, so `watchdog_tick::<P>` never sees a freed adapter; `begin_arm` found
            // the timer not armed.
            let r = unsafe { P::timer_arm(timer, period, watchdog_tick::<P>, ctx) };
            self.watchdog.end_arm(r)
        };
        if !running {
            klog!(
                P,
                Warning,
                "rvgpu: no kernel timer: the interrupt watchdog is off"
            );
        }
        running
    }

    /// The started adapter, or `STATUS_INVALID_DEVICE_STATE` (for DDIs that need one).
    pub fn started(&self) -> Result<&Live<P>, Status> {
        self.live().ok_or(status::INVALID_DEVICE_STATE)
    }
}

/// Synchronised routine for `stop`: clears the published pointer at device IRQL.
unsafe extern "system" fn unpublish<P: Platform>(ctx: *mut c_void) -> u8 {
    // SAFETY: `stop` passes a pointer to its adapter's `live` field, alive for the call.
    let slot = unsafe { &*ctx.cast::<AtomicPtr<Live<P>>>() };
    slot.store(ptr::null_mut(), Ordering::Release);
    1
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

/// The journal's side of [`Live::journal_report`], kept out of line so that the ISR's fence
/// path pays only the hooks' check when they are off (a shipped machine).
#[cold]
#[inline(never)]
fn journal_report_to(
    h: &crate::testhooks::Hooks,
    d: &rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA,
) {
    if let Some(r) = crate::args::dma_report(d) {
        h.journal.write(&r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host;

    #[test]
    fn a_platform_without_timers_leaves_the_watchdog_disarmed() {
        let a = Adapter::<Host>::try_new(ptr::null_mut()).unwrap();
        // The adapter outlives the (never running) timer.
        assert!(!a.arm_watchdog());
        assert!(!a.watchdog.is_armed());
        a.watchdog.disarm();
    }
}
