//! The adapter's PnP and power life: StartDevice builds the started state ([`Live`]) and
//! publishes it to the ISR, StopDevice unpublishes and frees it, SetPowerState moves between
//! D0 and D3, ResetDevice silences the device before a bug check.

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::Ordering;

use crate::ddi_groups::Filled;
use crate::device;
use crate::dma::DmaBuffer;
use crate::dxgk::Dxgk;
use crate::features::Features;
use crate::fence::registry::Registry;
use crate::fence::table::FenceTable;
use crate::interrupt::{EventRing, EVENT_RING_RECORDS};
use crate::klog;
use crate::kmem::{self, NoMemory};
use crate::mmio::Regs;
use crate::node;
use crate::platform::Platform;
use crate::resources::Resources;
use crate::runlist;
use crate::sched::Sched;
use crate::status::{self, Status};
use crate::sync::SpinLock;

use super::{
    Adapter, IsrCell, IsrState, Lifecycle, Live, PowerState, DISPLAY_ADAPTER_HW_ID, POWER_D0,
    POWER_D3,
};

/// What StartDevice takes from the pool, allocated in one step before any other resource:
/// the started-adapter block itself (filled last), the doorbell page table, the
/// ISR's queue lookup and fence registry, the aperture's page table.
struct StartHeap<P: Platform> {
    live: Box<core::mem::MaybeUninit<Live<P>>>,
    physical: crate::doorbell::Physical,
    queue_irq: crate::log::QueueIrqTable,
    os_queues: crate::hwqueue::os_handles::OsQueueTable,
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
            os_queues: crate::hwqueue::os_handles::OsQueueTable::try_for_adapter::<P>()?,
            // The chunk directory and one chunk; more chunks as fences are created.
            fences: Registry::try_new::<P>(1)?,
        })
    }
}

impl<P: Platform> Adapter<P> {
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
        let quotas = crate::quota::Quotas::read::<P>(info.physical_device_object().cast());
        let hooks = crate::testhooks::Hooks::at_start::<P>(info.physical_device_object().cast());
        let res = dxgk
            .resources(&info)
            .map_err(|_| status::INSUFFICIENT_RESOURCES)?;
        let (regs, va) = Regs::<P>::map(&dxgk, res.mmio.start, res.mmio.length)?;
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
            os_queues,
            fences: isr_fences,
            aperture,
        } = heap;
        let mut sched = Sched::with_physical(physical, runlists);
        sched.runlist_update = identity.caps.contains(rvgpu_hw::regs::Caps::RUNLIST_UPDATE);
        // Node rings (docs/tdr.md#the-kmd): allocated and entered in every engine's runlist
        // before anything else can be, so OS-scheduled work always has its queue.
        let nodes =
            match node::start::bring_up::<P>(&dxgk, &regs, &mut sched, identity.config.engines) {
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
                os_queues,
                backlogged: core::sync::atomic::AtomicUsize::new(0),
                optimized_fence_irq: false,
                power,
                aperture,
                quotas,
                hooks,
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
        let buf = DmaBuffer::alloc::<P>(dxgk, bytes)?;
        // Window 0 is the event ring's: the device may write nothing else of ours yet.
        device::set_window(regs, 0, buf.bus(), bytes);
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
        let live = self.unpublish_live()?;
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
        crate::etw::events::emit::<P, 2>(&crate::etw::events::POWER_DEVICE, || {
            [self.table_slot().into(), u64::from(state.cast_unsigned())]
        });
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
                let n = crate::doorbell::ddi::connected_at_d3(live);
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

    /// ResetDevice: called at high IRQL before a bug check or a soft reboot; must not block or
    /// allocate. Silences the device so it stops interrupting and DMAing.
    pub fn reset_device(&self) {
        if let Some(live) = self.live() {
            live.regs.write(rvgpu_hw::regs::IntEnable::new(0));
            live.regs.write(rvgpu_hw::regs::EventRingCtrl::new(0));
            live.regs.write(rvgpu_hw::regs::EventWbAddr::new(0));
        }
    }
}
