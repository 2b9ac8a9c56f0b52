//! The vfio-user backend: the rvgpu function's regions, DMA and interrupts
//! (docs/hardware.md, "PCI front end (vfio-user)").
//!
//! Regions (vfio PCI indexes): 0 = BAR0 registers through the device's [`MmioBus`]; 2 = BAR2
//! doorbells, with dedicated doorbells a memfd the client may mmap too, whose stores a poller
//! turns into rings ([`crate::doorbell`]); 4 = BAR4 VRAM, a memfd the client may mmap (the same memory the device's
//! [`Memory`] uses as VRAM); 7 = configuration space ([`ConfigSpace`]). 1, 3, 5 (upper halves
//! of the 64-bit BARs), 6 (ROM) and 8 (VGA) have size 0.
//!
//! Accesses a bus would not complete are answered as PCI does: a read returns all-ones and a
//! write is dropped. That covers offsets past a region's end, registers read with a width
//! other than 4 or 8 bytes or at an offset not a multiple of the width, doorbell writes that
//! are not a 4- or 8-byte write at a page's offset 0, and every access to a size-0 region.
//! A region index past 8 is a protocol error (the server's error reply).
//!
//! D3hot (PMCSR, [`ConfigSpace::d3hot`]): every BAR access the server sees is answered the
//! same way, DMA is off the bus and interrupts are held until D0. The mmap'ed part of BAR4
//! is the client's own mapping of VRAM and stays reachable: the server never sees it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rvgpu_device::{Device, DeviceConfig, Memory, Mode};
use rvgpu_hw::addr::{BusAddr, PhysAddr, SYSMEM_LIMIT};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::PAGE_SIZE;
use vfio_bindings::bindings::vfio::{
    vfio_region_info, vfio_region_sparse_mmap_area, VFIO_DMA_UNMAP_FLAG_ALL,
    VFIO_IRQ_INFO_AUTOMASKED, VFIO_IRQ_INFO_EVENTFD, VFIO_IRQ_INFO_MASKABLE,
    VFIO_IRQ_INFO_NORESIZE, VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_ACTION_TRIGGER,
    VFIO_IRQ_SET_ACTION_TYPE_MASK, VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_EVENTFD,
    VFIO_IRQ_SET_DATA_NONE, VFIO_IRQ_SET_DATA_TYPE_MASK, VFIO_REGION_INFO_FLAG_MMAP,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, ServerBackend, ServerRegion, SparseArea};

use crate::irq::IrqRouter;
use crate::pci::{Bars, ConfigSpace, CONFIG_SIZE};
use crate::shm::{self, Mapping, Memfd};

/// vfio PCI region indexes used here.
pub mod region {
    pub const BAR0: u32 = 0;
    pub const BAR2: u32 = 2;
    pub const BAR4: u32 = 4;
    pub const CONFIG: u32 = 7;
    /// Regions the server declares (0..=8: six BARs, ROM, config, VGA).
    pub const COUNT: u32 = 9;
}

/// vfio PCI interrupt indexes.
pub mod irq_index {
    pub const INTX: u32 = 0;
    pub const MSI: u32 = 1;
    /// Indexes the server declares (INTx, MSI, MSI-X, ERR, REQ; the last three with count 0).
    pub const COUNT: u32 = 5;
}

/// Guest RAM mappings one client may have at once. Each is an mmap in the server, and the
/// process's mappings are limited (vm.max_map_count, 65530 by default); QEMU needs a handful.
pub const MAX_DMA_MAPPINGS: usize = 4096;

/// `RVGPU_VFU_TRACE=1`: log interrupt setup and config-space writes (bring-up debugging).
fn trace() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RVGPU_VFU_TRACE").is_some_and(|v| v == "1"))
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

/// A budget for log lines a client can cause (a guest toggling D3hot in a loop must not fill
/// the host's log): a burst of [`LogBudget::BURST`] lines, then one a second; what is held
/// back is counted and reported when the client goes.
#[derive(Debug)]
struct LogBudget {
    tokens: u32,
    refilled: std::time::Instant,
    suppressed: u64,
}

impl LogBudget {
    const BURST: u32 = 32;

    fn new() -> Self {
        Self {
            tokens: Self::BURST,
            refilled: std::time::Instant::now(),
            suppressed: 0,
        }
    }

    /// Whether one more line may be written now (else it is counted as suppressed).
    fn take(&mut self) -> bool {
        let secs = self.refilled.elapsed().as_secs();
        if secs > 0 {
            let add = u32::try_from(secs).unwrap_or(u32::MAX);
            self.tokens = self.tokens.saturating_add(add).min(Self::BURST);
            self.refilled = std::time::Instant::now();
        }
        if self.tokens == 0 {
            self.suppressed += 1;
            return false;
        }
        self.tokens -= 1;
        true
    }
}

/// What each client gets new: VRAM and the doorbell pages as sealed memfds, and the device's
/// memory over that VRAM. Nothing of it is reused for another client, so descriptors or
/// mappings a client keeps after it disconnects reach only its own, abandoned copy.
struct Fresh {
    vram: Memfd,
    doorbell_mem: Option<Memfd>,
    mem: Arc<Memory>,
}

impl Fresh {
    fn new(cfg: &DeviceConfig, doorbell_bytes: u64) -> io::Result<Self> {
        let vram = Memfd::new("rvgpu-vram", cfg.vram_size)?;
        let mem = if cfg.vram_size == 0 {
            Memory::new(0)
        } else {
            Memory::with_vram(Arc::new(vram.map()?))
        };
        // Global doorbells carry a queue id, which merged rings would lose (crate::doorbell).
        let doorbell_mem = if cfg.global_doorbell {
            None
        } else {
            Some(Memfd::new("rvgpu-doorbells", doorbell_bytes)?)
        };
        Ok(Self {
            vram,
            doorbell_mem,
            mem,
        })
    }
}

/// What the test side (or a log) can see of the served device without going through the
/// protocol: the device currently powered on, its memory, and the interrupt router.
#[derive(Clone, Debug)]
pub struct Probe {
    device: Arc<Mutex<Arc<Device>>>,
    irq: Arc<IrqRouter>,
    d3hot_accesses: Arc<AtomicU64>,
    polled_rings: Arc<AtomicU64>,
}

impl Probe {
    /// The device instance now serving (a new one after each reset or reconnect).
    pub fn device(&self) -> Arc<Device> {
        Arc::clone(&self.device.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Guest RAM regions on the device's bus: `(bus address, bytes)` (none while the
    /// command register's bus-master bit is clear).
    pub fn dma_regions(&self) -> Vec<(u64, u64)> {
        self.device().memory().mapped_system()
    }

    /// Interrupts delivered to the client's eventfds so far.
    pub fn interrupts_delivered(&self) -> u64 {
        self.irq.delivered()
    }

    /// BAR accesses the client made while the function was in D3hot (answered all-ones or
    /// dropped). Accesses to the mmap'ed part of BAR4 do not reach the server.
    pub fn d3hot_accesses(&self) -> u64 {
        self.d3hot_accesses.load(Ordering::Relaxed)
    }

    /// Doorbell rings taken from the mapped BAR2 (stores that never reached the server).
    pub fn polled_rings(&self) -> u64 {
        self.polled_rings.load(Ordering::Relaxed)
    }
}

/// The rvgpu function behind a vfio-user server.
pub struct Backend {
    cfg: DeviceConfig,
    vram: Memfd,
    mem: Arc<Memory>,
    irq: Arc<IrqRouter>,
    device: Arc<Mutex<Arc<Device>>>,
    config: ConfigSpace,
    bars: Bars,
    /// The client's guest RAM (DMA_MAP with a descriptor) by bus address. It is on the
    /// device's bus only while the command register's bus-master bit is set
    /// (`on_bus`): a function without bus mastering cannot reach memory.
    guest_ram: BTreeMap<u64, Arc<Mapping>>,
    on_bus: bool,
    /// DMA_MAP requests of this session left unreachable (no descriptor, not read/write, or a
    /// file that could shrink under the mapping): QEMU also maps ROMs and other devices'
    /// BARs, which the GPU has no business reaching.
    unreachable_maps: u64,
    /// BAR accesses in D3hot ([`Probe::d3hot_accesses`]).
    d3hot_accesses: Arc<AtomicU64>,
    /// BAR2 as a memfd the client may map (dedicated doorbells only), and its poller (running
    /// only while a client is connected).
    doorbell_mem: Option<Memfd>,
    doorbell_poller: Option<crate::doorbell::Poller>,
    /// The BARs decode (D0): the poller's rings count only then.
    decoding: Arc<AtomicBool>,
    /// Rings the poller delivered ([`Probe::polled_rings`]).
    polled_rings: Arc<AtomicU64>,
    /// Doorbell writes that reached the server as BAR2 writes (trapped).
    trapped_rings: u64,
    /// Log lines the client can cause.
    log_budget: LogBudget,
    /// The memfds and memory were renewed since the last client (false only if renewing
    /// failed: then no client may be served until it succeeds).
    fresh: bool,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("bars", &self.bars)
            .finish_non_exhaustive()
    }
}

impl Backend {
    /// A powered-on function for `cfg` (always threaded: the CMP runs beside the server).
    /// VRAM is a memfd of `cfg.vram_size` bytes (whole pages).
    pub fn new(mut cfg: DeviceConfig) -> io::Result<Self> {
        cfg.mode = Mode::Threaded;
        cfg.vram_size -= cfg.vram_size % PAGE_SIZE;
        // As the device clamps it: BAR2 is sized before the device exists.
        cfg.doorbells = cfg.doorbells.clamp(1, rvgpu_hw::regs::DOORBELL_MAX);
        let bars = Bars::new(cfg.doorbells, cfg.vram_size);
        let Fresh {
            vram,
            doorbell_mem,
            mem,
        } = Fresh::new(&cfg, bars.doorbell)?;
        let irq = IrqRouter::new();
        let device = Device::new(cfg.clone(), mem.clone(), irq.clone());
        device.start();
        Ok(Self {
            config: ConfigSpace::new(bars),
            bars,
            cfg,
            vram,
            mem,
            irq,
            device: Arc::new(Mutex::new(device)),
            guest_ram: BTreeMap::new(),
            on_bus: false,
            unreachable_maps: 0,
            d3hot_accesses: Arc::new(AtomicU64::new(0)),
            doorbell_mem,
            doorbell_poller: None,
            decoding: Arc::new(AtomicBool::new(true)),
            polled_rings: Arc::new(AtomicU64::new(0)),
            trapped_rings: 0,
            log_budget: LogBudget::new(),
            fresh: true,
        })
    }

    /// A handle for looking at the served device from outside the protocol.
    pub fn probe(&self) -> Probe {
        Probe {
            device: Arc::clone(&self.device),
            irq: Arc::clone(&self.irq),
            d3hot_accesses: Arc::clone(&self.d3hot_accesses),
            polled_rings: Arc::clone(&self.polled_rings),
        }
    }

    fn dev(&self) -> Arc<Device> {
        Arc::clone(&self.device.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Power-on reset of the function: a new device instance (registers, queues, engines at
    /// their reset values), configuration space at power-on values. Guest RAM mappings and
    /// eventfds stay (they belong to the client's setup, not to the function's state); VRAM
    /// keeps its contents, as an adapter reset does.
    fn power_cycle(&mut self) {
        {
            let mut slot = self.device.lock().unwrap_or_else(|e| e.into_inner());
            // The old CMP thread stops before the new device exists, so the two never drive
            // the line at once.
            slot.stop();
            self.irq.reset();
            let device = Device::new(self.cfg.clone(), Arc::clone(&self.mem), self.irq.clone());
            device.start();
            *slot = device;
        }
        self.config = ConfigSpace::new(self.bars);
        self.decoding.store(true, Ordering::Release);
        if let Some(m) = &self.doorbell_mem {
            // Stores the old instance did not take are not rings for the new one.
            if let Err(e) = m.zero() {
                eprintln!("rvgpu-vfu: clearing the doorbell pages failed: {e}");
            }
        }
        self.follow_bus_master();
    }

    /// Puts the guest RAM on the device's bus or takes it off, as the bus-master bit and the
    /// power state say (a function in D3hot initiates no DMA: PCIe base 3.0, 5.3.1.4).
    fn follow_bus_master(&mut self) {
        let want = self.config.bus_master() && !self.config.d3hot();
        if want == self.on_bus {
            return;
        }
        for (&addr, ram) in &self.guest_ram {
            if want {
                // Cannot overlap: `dma_map` keeps the guest RAM regions disjoint.
                let backing: Arc<dyn rvgpu_device::RamBacking> = ram.clone();
                self.mem.map_system(BusAddr::new(addr), backing);
            } else {
                self.mem.unmap_system(BusAddr::new(addr));
            }
        }
        self.on_bus = want;
    }

    /// Whether a client may be served: the memfds and memory are new since the last one
    /// (tries again to renew them if that failed at the last disconnect).
    pub fn ready(&mut self) -> bool {
        if !self.fresh {
            self.renew();
        }
        self.fresh
    }

    /// A client is connected: the doorbell poller runs while it is.
    pub fn connect(&mut self) -> io::Result<()> {
        self.log_budget = LogBudget::new();
        let Some(fd) = &self.doorbell_mem else {
            return Ok(());
        };
        self.doorbell_poller = Some(crate::doorbell::Poller::start(
            Arc::new(fd.map()?),
            self.dev().config().doorbells,
            Arc::clone(&self.device),
            Arc::clone(&self.decoding),
            Arc::clone(&self.polled_rings),
        )?);
        Ok(())
    }

    /// The client went away: its guest RAM and eventfds are forgotten, the device is stopped
    /// and replaced by one powered on afresh over new VRAM and doorbell memfds (the next
    /// client is another VM). The old VRAM is released only after the old device is stopped
    /// and off the slot, so nothing reaches it any more once it is gone; the client's own
    /// mappings of the old memfds keep only what it already had.
    pub fn disconnect(&mut self) {
        // The VM test reads this: a guest's rings went through the mapped page, not the socket.
        eprintln!(
            "rvgpu-vfu: doorbell rings so far: {} from the mapped BAR2, {} trapped",
            self.polled_rings.load(Ordering::Relaxed),
            self.trapped_rings
        );
        // The poller rings the device: it stops first (and stays stopped without a client).
        self.doorbell_poller = None;
        self.dev().stop();
        self.irq.disconnect();
        if self.unreachable_maps != 0 {
            eprintln!(
                "rvgpu-vfu: {} DMA_MAP requests without a descriptor, not read/write or of a file that could shrink were left unreachable",
                self.unreachable_maps
            );
            self.unreachable_maps = 0;
        }
        if self.log_budget.suppressed != 0 {
            eprintln!(
                "rvgpu-vfu: {} further log lines of that client were held back",
                self.log_budget.suppressed
            );
        }
        self.fresh = false;
        self.renew();
    }

    /// Replaces the memfds, the memory and the device by new ones (see [`Self::disconnect`]).
    /// On failure (out of memory or descriptors) the old ones stay, stopped, and `fresh`
    /// stays false.
    fn renew(&mut self) {
        let fresh = match Fresh::new(&self.cfg, self.bars.doorbell) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("rvgpu-vfu: cannot set up memory for the next client: {e}");
                return;
            }
        };
        {
            let mut slot = self.device.lock().unwrap_or_else(|e| e.into_inner());
            slot.stop();
            self.irq.reset();
            let device = Device::new(self.cfg.clone(), fresh.mem.clone(), self.irq.clone());
            device.start();
            // The old device (and with it the old memory, guest RAM mappings included) goes
            // here, stopped.
            *slot = device;
        }
        self.guest_ram.clear();
        self.on_bus = false;
        self.mem = fresh.mem;
        self.vram = fresh.vram;
        self.doorbell_mem = fresh.doorbell_mem;
        self.config = ConfigSpace::new(self.bars);
        self.decoding.store(true, Ordering::Release);
        self.fresh = true;
    }

    /// The regions to declare to the server, indexes 0..=8.
    pub fn regions(&self) -> Vec<ServerRegion> {
        let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
        (0..region::COUNT)
            .map(|index| {
                let (size, flags) = match index {
                    region::BAR0 => (self.bars.mmio, rw),
                    region::BAR2 if self.doorbell_mem.is_some() => {
                        (self.bars.doorbell, rw | VFIO_REGION_INFO_FLAG_MMAP)
                    }
                    region::BAR2 => (self.bars.doorbell, rw),
                    region::BAR4 if !self.vram.is_empty() => {
                        (self.bars.vram, rw | VFIO_REGION_INFO_FLAG_MMAP)
                    }
                    region::CONFIG => (CONFIG_SIZE as u64, rw),
                    _ => (0, 0),
                };
                let mmap = flags & VFIO_REGION_INFO_FLAG_MMAP != 0;
                ServerRegion {
                    region_info: vfio_region_info {
                        argsz: std::mem::size_of::<vfio_region_info>() as u32,
                        flags,
                        index,
                        cap_offset: 0,
                        size,
                        offset: 0,
                    },
                    // The mmap-able part of BAR4 is VRAM itself (the BAR may be larger: it is
                    // a power of two); BAR2's is the whole doorbell memfd. The server sends the
                    // descriptor only with this list.
                    sparse_areas: match (mmap, index) {
                        (true, region::BAR2) => self.doorbell_mem.iter().map(Memfd::len).collect(),
                        (true, _) => vec![self.vram.len()],
                        _ => Vec::new(),
                    }
                    .into_iter()
                    .map(|size| SparseArea {
                        area: vfio_region_sparse_mmap_area { offset: 0, size },
                    })
                    .collect(),
                    mmap_fd: match (mmap, index) {
                        (true, region::BAR2) => self.doorbell_mem.as_ref().map(Memfd::raw_fd),
                        (true, _) => Some(self.vram.raw_fd()),
                        _ => None,
                    },
                }
            })
            .collect()
    }

    /// The interrupt indexes to declare: INTx (maskable, automasked), MSI (one vector), and
    /// MSI-X, ERR and REQ with no vectors (QEMU expects the first three indexes to exist).
    pub fn irqs() -> Vec<IrqInfo> {
        (0..irq_index::COUNT)
            .map(|index| {
                let (flags, count) = match index {
                    irq_index::INTX => (
                        VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_AUTOMASKED,
                        1,
                    ),
                    irq_index::MSI => (VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE, 1),
                    _ => (0, 0),
                };
                IrqInfo {
                    index,
                    flags,
                    count,
                }
            })
            .collect()
    }

    fn mmio_read(&self, offset: u64, data: &mut [u8]) {
        let dev = self.dev();
        let Some(off) = reg_offset(offset, data.len(), self.bars.mmio) else {
            return;
        };
        match data.len() {
            4 => data.copy_from_slice(&dev.read32(off).to_le_bytes()),
            8 => data.copy_from_slice(&dev.read64(off).to_le_bytes()),
            _ => {}
        }
    }

    fn mmio_write(&self, offset: u64, data: &[u8]) {
        let dev = self.dev();
        let Some(off) = reg_offset(offset, data.len(), self.bars.mmio) else {
            return;
        };
        if let Ok(b) = <[u8; 4]>::try_from(data) {
            dev.write32(off, u32::from_le_bytes(b));
        } else if let Ok(b) = <[u8; 8]>::try_from(data) {
            dev.write64(off, u64::from_le_bytes(b));
        }
    }

    fn doorbell_write(&mut self, offset: u64, data: &[u8]) {
        if reg_offset(offset, data.len(), self.bars.doorbell).is_none()
            || !offset.is_multiple_of(PAGE_SIZE)
        {
            return;
        }
        let value = match <[u8; 8]>::try_from(data) {
            Ok(b) => u64::from_le_bytes(b),
            Err(_) => match <[u8; 4]>::try_from(data) {
                Ok(b) => u64::from(u32::from_le_bytes(b)),
                Err(_) => return,
            },
        };
        // Pages past CONFIG.doorbells are inside the (power-of-two) BAR; the device ignores
        // rings on them.
        if let Ok(page) = u32::try_from(offset / PAGE_SIZE) {
            self.trapped_rings += 1;
            self.dev().doorbell_write(page, value);
        }
    }

    /// Applies a configuration write's effects in an order no interrupt or DMA can slip
    /// through: into D3hot, interrupts are held and guest RAM leaves the bus before anything
    /// else; back to D0, guest RAM returns before a held interrupt is delivered.
    fn follow_config(&mut self, was_d3hot: bool) {
        let d3hot = self.config.d3hot();
        self.decoding.store(!d3hot, Ordering::Release);
        if d3hot != was_d3hot && self.log_budget.take() {
            // Logged (within the budget): the VM test checks the function itself changed state.
            eprintln!(
                "rvgpu-vfu: function in {}",
                if d3hot { "D3hot" } else { "D0" }
            );
        }
        if d3hot {
            self.irq.set_d3hot(true);
            self.follow_bus_master();
            self.irq.set_intx_disabled(self.config.intx_disabled());
        } else {
            self.follow_bus_master();
            self.irq.set_intx_disabled(self.config.intx_disabled());
            self.irq.set_d3hot(false);
        }
    }

    /// A BAR access while in D3hot: counted (BAR0, BAR2, BAR4; the other regions decode
    /// nothing in D0 either), and logged when tracing.
    fn d3hot_access(&self, region: u32, offset: u64) {
        if !matches!(region, region::BAR0 | region::BAR2 | region::BAR4) {
            return;
        }
        self.d3hot_accesses.fetch_add(1, Ordering::Relaxed);
        if trace() {
            eprintln!("rvgpu-vfu: BAR{region} access at {offset:#x} in D3hot");
        }
    }

    fn vram_range(&self, offset: u64, len: usize) -> Option<PhysAddr> {
        let end = offset.checked_add(u64::try_from(len).ok()?)?;
        (end <= self.mem.vram_size()).then_some(PhysAddr::vram(offset)?)
    }
}

/// The register offset of a `len`-byte access at `offset` in a BAR of `size` bytes, if it is
/// one the device decodes: 4 or 8 bytes, aligned to its width, inside the BAR.
fn reg_offset(offset: u64, len: usize, size: u64) -> Option<usize> {
    let width = u64::try_from(len).ok()?;
    if !(width == 4 || width == 8) || !offset.is_multiple_of(width) {
        return None;
    }
    if offset.checked_add(width)? > size {
        return None;
    }
    usize::try_from(offset).ok()
}

impl ServerBackend for Backend {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
        // Anything not completed below reads as all-ones (a PCI master abort).
        data.fill(0xFF);
        if self.config.d3hot() && region != region::CONFIG {
            // In D3hot the function decodes configuration accesses only (PCI PM 1.2, 5.4.1):
            // the request completes as unsupported, which the CPU reads as all-ones.
            self.d3hot_access(region, offset);
            return Ok(());
        }
        match region {
            region::BAR0 => self.mmio_read(offset, data),
            // Doorbell pages read 0 (hardware.md M3).
            region::BAR2 if reg_offset(offset, data.len(), self.bars.doorbell).is_some() => {
                data.fill(0);
            }
            region::BAR4 => {
                if let Some(addr) = self.vram_range(offset, data.len()) {
                    if self.mem.read_bytes(addr, data).is_none() {
                        data.fill(0xFF);
                    }
                }
            }
            region::CONFIG => {
                let level = self.irq.level();
                self.config.read(offset, data, level);
            }
            _ => {}
        }
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
        if region == region::CONFIG {
            let was_d3hot = self.config.d3hot();
            if self.config.write(offset, data) {
                if trace() {
                    eprintln!("rvgpu-vfu: config write {offset:#x} {data:02x?}");
                }
                self.follow_config(was_d3hot);
            }
            return Ok(());
        }
        if self.config.d3hot() {
            // Dropped, as a posted write to a function in D3hot is.
            self.d3hot_access(region, offset);
            return Ok(());
        }
        match region {
            region::BAR0 => self.mmio_write(offset, data),
            region::BAR2 => self.doorbell_write(offset, data),
            region::BAR4 => {
                if let Some(addr) = self.vram_range(offset, data.len()) {
                    let _ = self.mem.write_bytes(addr, data);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> io::Result<()> {
        // Without a descriptor the memory could only be reached with DMA_READ/DMA_WRITE
        // messages, which this server (and the vfio_user crate) does not have; a read-only
        // region is no place for a device that writes wherever its driver points it. Both are
        // accepted and left unreachable: a device access there faults with BadAddress, as
        // behind an IOMMU without that mapping. Failing the map would fail the VM instead.
        let Some(fd) = fd.filter(|_| flags.contains(DmaMapFlags::READ_WRITE)) else {
            self.unreachable_maps += 1;
            return Ok(());
        };
        if self.guest_ram.len() >= MAX_DMA_MAPPINGS {
            return Err(invalid("too many DMA mappings"));
        }
        let end = address.checked_add(size).filter(|&e| e <= SYSMEM_LIMIT);
        let overlaps = |end: u64| {
            self.guest_ram
                .range(..end)
                .next_back()
                .is_some_and(|(&a, m)| a.saturating_add(m.len() as u64) > address)
        };
        match end {
            Some(end) if address.is_multiple_of(PAGE_SIZE) && !overlaps(end) => {}
            _ => {
                return Err(invalid(
                    "DMA_MAP range unaligned, outside the bus or overlapping a mapping",
                ))
            }
        }
        // The mapping must lie inside the file, and the file must not shrink under it later:
        // either would make a device access SIGBUS in the server. A file that could shrink is
        // left unreachable like the maps above (QEMU treats a failed map of its RAM as fatal);
        // a range past the file's end is the client's error.
        let file_len = match shm::pin_size(&fd) {
            Ok(len) => len,
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                self.unreachable_maps += 1;
                if self.log_budget.take() {
                    eprintln!("rvgpu-vfu: guest RAM {address:#x}+{size:#x} left unreachable: {e}");
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if offset.checked_add(size).is_none_or(|e| e > file_len) {
            return Err(invalid("DMA_MAP range past the end of the memory file"));
        }
        let mapping = Arc::new(Mapping::new(&fd, offset, size)?);
        if self.on_bus {
            let backing: Arc<dyn rvgpu_device::RamBacking> = mapping.clone();
            if !self.mem.map_system(BusAddr::new(address), backing) {
                return Err(invalid("DMA_MAP range refused by the bus"));
            }
        }
        self.guest_ram.insert(address, mapping);
        if self.log_budget.take() {
            eprintln!("rvgpu-vfu: guest RAM {address:#x}+{size:#x} on the device's bus");
        }
        Ok(())
    }

    /// Takes off the bus every mapping inside the range (or all of them). A range that cuts
    /// through a mapping is refused and changes nothing: the device cannot keep half of a
    /// mapping, and answering success would leave the client believing memory was released
    /// that the device can still reach. A range that meets no mapping is no error (QEMU also
    /// unmaps what it mapped without a descriptor, which is not kept).
    fn dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64) -> io::Result<()> {
        let all = flags.bits() & VFIO_DMA_UNMAP_FLAG_ALL != 0;
        let mut gone = Vec::new();
        if all {
            gone.extend(self.guest_ram.keys().copied());
        } else {
            let end = address
                .checked_add(size)
                .ok_or_else(|| invalid("DMA_UNMAP range wraps"))?;
            for (&base, m) in &self.guest_ram {
                let m_end = base.saturating_add(m.len() as u64);
                if m_end <= address || base >= end {
                    continue;
                }
                if base < address || m_end > end {
                    return Err(invalid("DMA_UNMAP range cuts through a mapping"));
                }
                gone.push(base);
            }
        }
        for base in gone {
            self.guest_ram.remove(&base);
            self.mem.unmap_system(BusAddr::new(base));
        }
        Ok(())
    }

    fn reset(&mut self) -> io::Result<()> {
        self.power_cycle();
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> io::Result<()> {
        let data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        let action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        if trace() {
            eprintln!(
                "rvgpu-vfu: SET_IRQS index {index} flags {flags:#x} start {start} count {count} fds {}",
                fds.len()
            );
        }
        let msi = match index {
            irq_index::INTX => false,
            irq_index::MSI => true,
            // No vectors: only "disable all" (count 0) is meaningful.
            _ if count == 0 => return Ok(()),
            _ => return Err(invalid("interrupt index has no vectors")),
        };
        if start != 0 || count > 1 {
            return Err(invalid("vector outside 0..1"));
        }
        if data != VFIO_IRQ_SET_DATA_EVENTFD && !fds.is_empty() {
            return Err(invalid("descriptors with a SET_IRQS that takes none"));
        }
        match (action, data) {
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD) => {
                if fds.len() != count as usize {
                    return Err(invalid("one eventfd per vector expected"));
                }
                // Only an eventfd: anything else (a pipe nobody reads) could block the thread
                // that signals it.
                let fd = match fds.into_iter().next() {
                    Some(f) => Some(crate::irq::eventfd(f)?),
                    None => None,
                };
                if msi {
                    self.irq.set_msi(fd);
                } else {
                    self.irq.set_intx(fd);
                }
            }
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE) => {
                if count == 0 {
                    if msi {
                        self.irq.set_msi(None);
                    } else {
                        self.irq.set_intx(None);
                    }
                } else if !self.irq.fire(msi) {
                    return Err(invalid("no eventfd to trigger"));
                }
            }
            (VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_NONE) if !msi => self.irq.unmask_intx(),
            (VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_DATA_NONE) if !msi => self.irq.mask_intx(),
            // An unmask eventfd (KVM's resampling) and masking MSI are not supported.
            _ => return Err(invalid("unsupported SET_IRQS action")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_cannot_make_more_than_the_allowed_number_of_dma_mappings() {
        let mut be = Backend::new(DeviceConfig {
            vram_size: 1 << 20,
            ..DeviceConfig::default()
        })
        .unwrap();
        let pages = MAX_DMA_MAPPINGS as u64 + 1;
        let ram = Memfd::new("guest-ram", pages * PAGE_SIZE).unwrap();
        let rw = || {
            File::options()
                .read(true)
                .write(true)
                .open(format!("/proc/self/fd/{}", ram.raw_fd()))
                .unwrap()
        };
        for i in 0..MAX_DMA_MAPPINGS as u64 {
            let at = i * PAGE_SIZE;
            be.dma_map(
                DmaMapFlags::READ_WRITE,
                at,
                0x4000_0000 + at,
                PAGE_SIZE,
                Some(rw()),
            )
            .unwrap();
        }
        let at = MAX_DMA_MAPPINGS as u64 * PAGE_SIZE;
        assert!(be
            .dma_map(
                DmaMapFlags::READ_WRITE,
                at,
                0x4000_0000 + at,
                PAGE_SIZE,
                Some(rw())
            )
            .is_err());
        // Taking them all off makes room again.
        be.dma_unmap(
            DmaUnmapFlags::from_bits_retain(VFIO_DMA_UNMAP_FLAG_ALL),
            0,
            0,
        )
        .unwrap();
        be.dma_map(
            DmaMapFlags::READ_WRITE,
            0,
            0x4000_0000,
            PAGE_SIZE,
            Some(rw()),
        )
        .unwrap();
    }
}
