//! The GPU as a PCI function a Linux guest sees: the [`Board`] for running the real
//! driver, the simulated OS and the UMD inside a VM whose rvgpu functions `rvgpu-vfu` serves
//! across QEMU's PCIe (docs/qemu-guest.md, "The Linux guest"). Each function is an adapter
//! with a board of its own (its BARs, its UIO device and interrupt thread); the boards of one
//! machine share its system memory, as the devices of one PCI bus share the host's RAM.
//!
//! - **BAR0** (`resource0`, mapped from sysfs): every register access is one volatile 32- or
//!   64-bit load or store, which QEMU traps and forwards to the server.
//! - **BAR2** (`resource2`): a doorbell ring is one volatile 64-bit store to its page.
//! - **BAR4** (`resource4`): VRAM, the server's shared memory mapped straight into the guest,
//!   is the [`Memory`]'s VRAM.
//! - **System memory** the OS hands out (contiguous memory, page tables, allocations, fence
//!   pages, rings) is carved from a physical range the guest kernel was told to leave alone
//!   (`memmap=SIZE$BASE`), mapped from `/dev/mem`; its bus address is its guest physical
//!   address, which is where the server's DMA reaches guest RAM.
//! - **Interrupts**: a thread blocks on `/dev/uioN`; each interrupt asserts the adapter's
//!   line (and is a message), and the interrupt thread runs the ISR path as for the
//!   in-process device. Which interrupt depends on the UIO driver bound to the function:
//!   - `uio_pci_generic`: INTx. Its handler masks INTx (the command register's INTx-disable
//!     bit); [`Board::end_of_interrupt`] lowers the line and clears that bit through the sysfs
//!     `config` file, as the UIO documentation says user space re-enables it. The line is
//!     level-triggered: if the device still requests, the unmasked INTx interrupts again.
//!   - `rvgpu_uio_msi` (device/vfu/vm/uio_msi, the guest test's own module): the function's
//!     MSI message. Nothing is masked; [`Board::message_signalled`] tells the OS, which then
//!     gives the driver a message interrupt and runs its ISR once per message.
//!
//! Oracles the in-process device answers from its internals (runlisted queues, TLB contents,
//! engine snapshots, power gating) are not observable on a real function: they return `None`
//! and the simulated OS skips those checks on this board only. Fault injection is the
//! in-process device's; [`Board::lose_device`] does nothing here.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rvgpu_device::{
    DeviceConfig, EngineSnapshot, InterruptLine, Memory, QueueSnapshot, RamBacking,
};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs::{self, Caps, DeviceStatus};

use super::board::Board;
use super::board::PciSpec;
use crate::base::line::SimLine;

/// PCI command register: memory space, bus master, INTx disable (PCI Local Bus 3.0, 6.2.2).
const CMD_MEMORY: u16 = 1 << 1;
const CMD_MASTER: u16 = 1 << 2;
const CMD_INTX_DISABLE: u16 = 1 << 10;
/// Offset of the command register in config space.
const PCI_COMMAND: u64 = 4;

/// Interrupts the UIO devices of every PCI board of this process delivered (for the harness's
/// closing report: the ISRs ran on real interrupts).
static INTERRUPTS_TAKEN: AtomicU64 = AtomicU64::new(0);

/// Interrupts delivered through UIO to the PCI boards of this process so far.
pub fn interrupts_taken() -> u64 {
    INTERRUPTS_TAKEN.load(Ordering::Relaxed)
}

thread_local! {
    /// BAR0 reads this thread made on any PCI board: what an ISR itself read, apart from
    /// other threads' reads while it ran.
    static THREAD_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// BAR0 reads the calling thread has made on PCI boards so far.
pub(crate) fn thread_reads() -> u64 {
    THREAD_READS.with(|c| c.get())
}

fn count_read(total: &AtomicU64) {
    total.fetch_add(1, Ordering::Relaxed);
    THREAD_READS.with(|c| c.set(c.get().wrapping_add(1)));
}

/// ISR calls on PCI boards of this process, and the BAR0 reads they made themselves.
static ISR_CALLS: AtomicU64 = AtomicU64::new(0);
static ISR_READS: AtomicU64 = AtomicU64::new(0);

/// One ISR call on a PCI board made `reads` register reads (the OS's ledger, per call).
pub(crate) fn note_isr(reads: u64) {
    ISR_CALLS.fetch_add(1, Ordering::Relaxed);
    ISR_READS.fetch_add(reads, Ordering::Relaxed);
}

/// ISR calls on PCI boards of this process so far, and the register reads the ISRs made
/// (on their own thread: other threads' reads while an ISR ran are not counted).
pub fn isr_reads() -> (u64, u64) {
    (
        ISR_CALLS.load(Ordering::Relaxed),
        ISR_READS.load(Ordering::Relaxed),
    )
}

/// Whether the last PCI board opened takes MSI messages (else INTx), for the same report.
static LAST_MSI: AtomicBool = AtomicBool::new(false);

/// "MSI" or "INTx": the interrupt of the last PCI board this process opened.
pub fn interrupt_kind() -> &'static str {
    if LAST_MSI.load(Ordering::Relaxed) {
        "MSI"
    } else {
        "INTx"
    }
}

/// Clears the command register's INTx-disable bit through the function's sysfs `config` file
/// (what uio_pci_generic's handler set), re-enabling INTx. Returns whether it was set.
fn unmask_intx(config: &File) -> io::Result<bool> {
    let mut b = [0u8; 2];
    config.read_exact_at(&mut b, PCI_COMMAND)?;
    let cmd = u16::from_le_bytes(b);
    if cmd & CMD_INTX_DISABLE == 0 {
        return Ok(false);
    }
    config.write_all_at(&(cmd & !CMD_INTX_DISABLE).to_le_bytes(), PCI_COMMAND)?;
    Ok(true)
}

/// A shared mapping of a file: a BAR's sysfs resource, or `/dev/mem`.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory (or device memory) valid for `len` bytes until
// dropped; every access through it is a volatile or atomic access of an aligned word, which
// any thread may make.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(f: &File, offset: u64, len: usize) -> io::Result<Self> {
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?;
        // SAFETY: FFI call creating a fresh shared mapping of `f`; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { ptr: p.cast(), len })
    }

    fn open(path: &Path, offset: u64, len: Option<usize>) -> io::Result<Self> {
        let f = OpenOptions::new().read(true).write(true).open(path)?;
        let len = match len {
            Some(l) => l,
            None => usize::try_from(f.metadata()?.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "BAR too large"))?,
        };
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is empty", path.display()),
            ));
        }
        Self::new(&f, offset, len)
    }

    /// The word of `width` bytes at `off`, if aligned and inside the mapping.
    fn at(&self, off: usize, width: usize) -> Option<*mut u8> {
        if !off.is_multiple_of(width) || off.checked_add(width)? > self.len {
            return None;
        }
        // SAFETY: `off + width <= len` (checked), so the pointer stays inside the mapping.
        Some(unsafe { self.ptr.add(off) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

impl RamBacking for Mapping {
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is valid, 8-byte aligned (page aligned) and `len` bytes long for
        // as long as `self` lives; other agents (the device, through QEMU) change it
        // concurrently, which atomic words allow.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<AtomicU64>(), self.len / 8) }
    }
}

/// Where the kernel lists every PCI function, one directory each, named by its address.
const SYSFS_PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// Every rvgpu function (`1234:5256`) of this machine, in bus order.
pub fn find_functions() -> Vec<PathBuf> {
    find_functions_in(Path::new(SYSFS_PCI_DEVICES))
}

/// Every rvgpu function below `devices` (a sysfs PCI device list), in bus order: the names
/// are `domain:bus:device.function` in fixed-width hex, so their order is the bus's.
fn find_functions_in(devices: &Path) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(devices) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = dir
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let id = |n: &str| std::fs::read_to_string(p.join(n)).unwrap_or_default();
            id("vendor").trim() == "0x1234" && id("device").trim() == "0x5256"
        })
        .collect();
    found.sort();
    found
}

/// `spec` with its functions named: as given, or every rvgpu function of this machine.
/// An error when there is none.
pub fn resolve(spec: &PciSpec) -> io::Result<PciSpec> {
    let functions = if spec.functions.is_empty() {
        find_functions()
    } else {
        spec.functions.clone()
    };
    if functions.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "no 1234:5256 function in sysfs",
        ));
    }
    Ok(PciSpec {
        functions,
        ..spec.clone()
    })
}

/// A function named on a command line: a sysfs directory as it is, or a PCI address
/// (`0000:00:03.0`) as its directory in the kernel's device list.
pub fn function_path(name: &str) -> PathBuf {
    if name.contains('/') {
        PathBuf::from(name)
    } else {
        Path::new(SYSFS_PCI_DEVICES).join(name)
    }
}

/// The memory a board sees: its VRAM (the mapped BAR4) and the machine's system memory,
/// which the first board of a machine maps from the DMA range and later boards share
/// (`system`), so that one allocator hands out the range to every adapter.
fn board_memory(
    bar4: Arc<dyn RamBacking>,
    spec: &PciSpec,
    system: Option<&Arc<Memory>>,
) -> io::Result<Arc<Memory>> {
    if let Some(m) = system {
        return Ok(m.sibling_with_vram(bar4));
    }
    let dma_len = usize::try_from(spec.dma_size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "DMA range too large"))?;
    let dma = Mapping::open(Path::new("/dev/mem"), spec.dma_base, Some(dma_len))?;
    Memory::with_pool(bar4, spec.dma_base, Arc::new(dma))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad DMA range"))
}

/// The name of the UIO driver whose handler delivers MSI (device/vfu/vm/uio_msi).
const UIO_MSI_NAME: &str = "rvgpu_uio_msi";

/// The UIO device bound to `function` (`/dev/uioN`), if a UIO driver has it, and whether its
/// interrupt is the MSI message (the UIO device's `name` is [`UIO_MSI_NAME`]).
fn find_uio(function: &Path) -> Option<(PathBuf, bool)> {
    let e = std::fs::read_dir(function.join("uio"))
        .ok()?
        .flatten()
        .next()?;
    let name = std::fs::read_to_string(e.path().join("name")).unwrap_or_default();
    Some((
        Path::new("/dev").join(e.file_name()),
        name.trim() == UIO_MSI_NAME,
    ))
}

/// The PCI function as an adapter's board.
pub struct PciBoard {
    bar0: Mapping,
    bar2: Mapping,
    config_space: File,
    memory: Arc<Memory>,
    cfg: DeviceConfig,
    /// The UIO driver delivers the MSI message rather than INTx.
    msi: bool,
    /// BAR0 reads and writes and BAR2 writes this board made (every thread's).
    reads: AtomicU64,
    writes: AtomicU64,
    doorbell_writes: AtomicU64,
    frozen: AtomicBool,
    line: Arc<SimLine>,
    stop: Arc<AtomicBool>,
    uio_thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for PciBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PciBoard").finish_non_exhaustive()
    }
}

impl PciBoard {
    /// Opens `function` (its sysfs directory), maps its BARs and, for the machine's first
    /// board (`system` `None`), the DMA range of `spec`; a later board shares `system`'s
    /// system memory. Turns on memory space and bus mastering with INTx enabled, reads the
    /// device's configuration from its registers, and starts the UIO thread that drives
    /// `line`.
    pub fn open(
        function: &Path,
        spec: &PciSpec,
        system: Option<&Arc<Memory>>,
        line: Arc<SimLine>,
        mode_threaded: bool,
    ) -> io::Result<Arc<Self>> {
        if !mode_threaded {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a PCI board runs in threaded mode only (the device steps on its own)",
            ));
        }
        let (uio_path, msi) = find_uio(function).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} is not bound to uio_pci_generic or {UIO_MSI_NAME}",
                    function.display()
                ),
            )
        })?;
        let bar0 = Mapping::open(&function.join("resource0"), 0, None)?;
        let bar2 = Mapping::open(&function.join("resource2"), 0, None)?;
        let bar4 = Mapping::open(&function.join("resource4"), 0, None)?;
        let memory = board_memory(Arc::new(bar4), spec, system)?;
        let config_space = OpenOptions::new()
            .read(true)
            .write(true)
            .open(function.join("config"))?;
        // Memory space and bus master on, INTx enabled: nothing enabled DMA for a function
        // without a kernel driver, and the function reaches no memory without it.
        let mut b = [0u8; 2];
        config_space.read_exact_at(&mut b, PCI_COMMAND)?;
        let cmd = (u16::from_le_bytes(b) | CMD_MEMORY | CMD_MASTER) & !CMD_INTX_DISABLE;
        config_space.write_all_at(&cmd.to_le_bytes(), PCI_COMMAND)?;
        let mut board = Self {
            bar0,
            bar2,
            config_space,
            memory,
            cfg: DeviceConfig::default(),
            msi,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            doorbell_writes: AtomicU64::new(0),
            frozen: AtomicBool::new(false),
            line,
            stop: Arc::new(AtomicBool::new(false)),
            uio_thread: Mutex::new(None),
        };
        let id = board.read32(regs::ID);
        if id != regs::ID_VALUE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("BAR0 ID reads {id:#x}, not rvgpu's {:#x}", regs::ID_VALUE),
            ));
        }
        board.cfg = board.config_from_registers();
        LAST_MSI.store(msi, Ordering::Relaxed);
        let uio = OpenOptions::new().read(true).open(&uio_path)?;
        let (line, stop) = (board.line.clone(), board.stop.clone());
        let t = std::thread::Builder::new()
            .name("simos-pci-uio".into())
            .spawn(move || uio_thread(uio, line, stop))?;
        *board.uio_thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        Ok(Arc::new(board))
    }

    /// What the in-process device would be configured with, read from CONFIG, CAPS,
    /// CLOCK_FREQ and VRAM_SIZE (docs/hardware.md 3).
    fn config_from_registers(&self) -> DeviceConfig {
        let c = regs::Config::from_reg(self.read32(regs::CONFIG));
        let caps = Caps::from_bits_truncate(self.read32(regs::CAPS));
        DeviceConfig {
            engines: c.engines,
            doorbells: c.doorbells,
            global_doorbell: caps.contains(Caps::GLOBAL_DOORBELL),
            vram_size: self.read64(regs::VRAM_SIZE),
            vram_visible: self.read64(regs::VRAM_VISIBLE),
            clock_hz: self.read32(regs::CLOCK_FREQ),
            exact_fence_report: caps.contains(Caps::EXACT_FENCE_REPORT),
            optimized_fence_irq: caps.contains(Caps::OPTIMIZED_FENCE_IRQ),
            per_engine_reset: caps.contains(Caps::PER_ENGINE_RESET),
            atomic64: caps.contains(Caps::ATOMIC64),
            sched_log: caps.contains(Caps::SCHED_LOG),
            io_coherent: caps.contains(Caps::IO_COHERENT),
            engine_power: caps.contains(Caps::ENGINE_POWER),
            mode: rvgpu_device::Mode::Threaded,
            ..DeviceConfig::default()
        }
    }
}

/// Blocks on `/dev/uioN` (with a timeout, to notice `stop`); each interrupt asserts `line`.
fn uio_thread(mut uio: File, line: Arc<SimLine>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Acquire) {
        let mut p = libc::pollfd {
            fd: uio.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: FFI call with one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, 50) } <= 0 {
            continue;
        }
        let mut b = [0u8; 4];
        if uio.read_exact(&mut b).is_err() {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        INTERRUPTS_TAKEN.fetch_add(1, Ordering::Relaxed);
        line.set(true);
        line.wake();
    }
}

impl MmioBus for PciBoard {
    fn read32(&self, offset: usize) -> u32 {
        count_read(&self.reads);
        match self.bar0.at(offset, 4) {
            // SAFETY: aligned and inside BAR0 (checked by `at`); one volatile load.
            Some(p) if !self.frozen.load(Ordering::Relaxed) => unsafe {
                p.cast::<u32>().read_volatile()
            },
            _ => u32::MAX,
        }
    }

    fn write32(&self, offset: usize, value: u32) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = self.bar0.at(offset, 4) {
            if !self.frozen.load(Ordering::Relaxed) {
                // SAFETY: aligned and inside BAR0; one volatile store.
                unsafe { p.cast::<u32>().write_volatile(value) };
            }
        }
    }

    fn read64(&self, offset: usize) -> u64 {
        count_read(&self.reads);
        match self.bar0.at(offset, 8) {
            // SAFETY: aligned and inside BAR0; one volatile load.
            Some(p) if !self.frozen.load(Ordering::Relaxed) => unsafe {
                p.cast::<u64>().read_volatile()
            },
            _ => u64::MAX,
        }
    }

    fn write64(&self, offset: usize, value: u64) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = self.bar0.at(offset, 8) {
            if !self.frozen.load(Ordering::Relaxed) {
                // SAFETY: aligned and inside BAR0; one volatile store.
                unsafe { p.cast::<u64>().write_volatile(value) };
            }
        }
    }
}

impl Board for PciBoard {
    fn memory(&self) -> &Arc<Memory> {
        &self.memory
    }

    fn config(&self) -> &DeviceConfig {
        &self.cfg
    }

    fn doorbell_write(&self, page: u32, value: u64) {
        self.doorbell_writes.fetch_add(1, Ordering::Relaxed);
        let off = (page as usize).saturating_mul(rvgpu_hw::PAGE_SIZE as usize);
        if let Some(p) = self.bar2.at(off, 8) {
            if !self.frozen.load(Ordering::Relaxed) {
                // SAFETY: aligned and inside BAR2; one volatile store rings the doorbell.
                unsafe { p.cast::<u64>().write_volatile(value) };
            }
        }
    }

    fn is_lost(&self) -> bool {
        DeviceStatus::from_bits_truncate(self.read32(regs::DEVICE_STATUS))
            .contains(DeviceStatus::LOST)
    }

    fn interrupt_pending(&self) -> bool {
        let status = self.read32(regs::INT_STATUS);
        status != u32::MAX && status & self.read32(regs::INT_ENABLE) != 0
    }

    fn gpu_clock(&self) -> u64 {
        self.read64(regs::GPU_CLOCK)
    }

    fn end_of_interrupt(&self) {
        // Lower first, then unmask: a request still pending interrupts again after the unmask
        // and the UIO thread raises the line anew. A message masks nothing.
        self.line.set(false);
        if !self.msi {
            let _ = unmask_intx(&self.config_space);
        }
    }

    fn message_signalled(&self) -> Option<bool> {
        Some(self.msi)
    }

    fn bus_counts(&self) -> Option<rvgpu_device::BusCounts> {
        Some(rvgpu_device::BusCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            doorbell_writes: self.doorbell_writes.load(Ordering::Relaxed),
        })
    }

    fn step(&self) -> bool {
        false
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let t = self
            .uio_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }

    fn freeze(&self) {
        self.frozen.store(true, Ordering::Release);
    }

    /// Fault injection is the in-process device's.
    fn lose_device(&self) {}

    /// Not observable: a runlist lives in memory only the device interprets.
    fn queues(&self) -> Option<Vec<QueueSnapshot>> {
        None
    }

    /// Not observable, as `queues`.
    fn queue(&self, _queue_id: u32) -> Option<Option<QueueSnapshot>> {
        None
    }

    /// Not observable: the TLB is inside the device.
    fn tlb_holds(&self, _root: u64, _start: u64, _end: u64) -> Option<bool> {
        None
    }

    /// Not observable: engine internals.
    fn engine_snapshot(&self, _engine: u32) -> Option<EngineSnapshot> {
        None
    }

    /// Not checked on this board.
    fn engine_gated(&self, _engine: u32) -> Option<bool> {
        None
    }
}

impl Drop for PciBoard {
    fn drop(&mut self) {
        Board::stop(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::line::Wake;

    fn temp(name: &str, bytes: &[u8]) -> (PathBuf, File) {
        let p = std::env::temp_dir().join(format!("rvgpu-pci-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        let f = OpenOptions::new().read(true).write(true).open(&p).unwrap();
        (p, f)
    }

    #[test]
    fn end_of_interrupt_unmasks_intx_and_nothing_else() {
        // A config space (a plain file here) as uio_pci_generic's handler leaves it: memory,
        // bus master and INTx disable set.
        let mut cs = [0u8; 64];
        let cmd = CMD_MEMORY | CMD_MASTER | CMD_INTX_DISABLE | 1 << 8;
        cs[4..6].copy_from_slice(&cmd.to_le_bytes());
        let (p, f) = temp("config", &cs);
        assert!(unmask_intx(&f).unwrap());
        let after = std::fs::read(&p).unwrap();
        let got = u16::from_le_bytes([after[4], after[5]]);
        assert_eq!(
            got,
            CMD_MEMORY | CMD_MASTER | 1 << 8,
            "only INTx disable cleared"
        );
        assert_eq!(&after[..4], &cs[..4]);
        assert!(!unmask_intx(&f).unwrap(), "already unmasked: no write");
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn bar_accesses_are_bounded_and_aligned() {
        // A BAR is a mapped file here; what matters is that a bad offset never leaves it.
        let (p, f) = temp("bar", &[0u8; 4096]);
        let m = Mapping::new(&f, 0, 4096).unwrap();
        assert!(m.at(4092, 4).is_some());
        assert!(m.at(4096, 4).is_none(), "past the end");
        assert!(m.at(4090, 8).is_none(), "unaligned");
        assert!(m.at(usize::MAX - 3, 4).is_none(), "overflow");
        assert_eq!(m.words().len(), 512);
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn a_missing_function_is_a_clear_error() {
        let spec = PciSpec {
            functions: Vec::new(),
            dma_base: 0x4000_0000,
            dma_size: 1 << 20,
        };
        let function = Path::new("/nonexistent/rvgpu-function");
        let line = Arc::new(SimLine::new(Arc::new(Wake::default())));
        let e = PciBoard::open(function, &spec, None, line.clone(), true).unwrap_err();
        assert!(e.to_string().contains("uio_pci_generic"), "{e}");
        let e = PciBoard::open(function, &spec, None, line, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "step mode is refused");
    }

    /// A sysfs PCI device list with the functions `(address, vendor, device)`.
    fn fake_sysfs(name: &str, functions: &[(&str, &str, &str)]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("rvgpu-pci-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (addr, vendor, device) in functions {
            let d = root.join(addr);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vendor"), format!("{vendor}\n")).unwrap();
            std::fs::write(d.join("device"), format!("{device}\n")).unwrap();
        }
        root
    }

    #[test]
    fn ddi_01_every_rvgpu_function_is_found_in_bus_order() {
        let root = fake_sysfs(
            "devices",
            &[
                ("0000:00:04.0", "0x1234", "0x5256"),
                ("0000:00:02.0", "0x8086", "0x10d3"),
                ("0000:00:03.0", "0x1234", "0x5256"),
                ("0000:00:05.0", "0x1234", "0x1111"),
            ],
        );
        let names: Vec<_> = find_functions_in(&root)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["0000:00:03.0", "0000:00:04.0"]);
        assert!(find_functions_in(&root.join("missing")).is_empty());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn ddi_01_a_function_is_named_by_address_or_directory() {
        assert_eq!(
            function_path("0000:00:03.0"),
            Path::new("/sys/bus/pci/devices/0000:00:03.0")
        );
        assert_eq!(function_path("/tmp/f"), Path::new("/tmp/f"));
        let given = PciSpec {
            functions: vec![PathBuf::from("/tmp/f")],
            dma_base: 0x4000_0000,
            dma_size: 1 << 20,
        };
        assert_eq!(resolve(&given).unwrap().functions, given.functions);
    }

    #[test]
    fn ddi_01_a_second_board_shares_the_first_boards_system_memory() {
        // Two BAR4s and a DMA pool, files here; the second board's memory is built as the
        // machine builds it for its second function.
        let (p0, f0) = temp("vram0", &[0u8; 8192]);
        let (p1, f1) = temp("vram1", &[0u8; 4096]);
        let (pp, fp) = temp("pool", &[0u8; 4 * 4096]);
        let spec = PciSpec {
            functions: Vec::new(),
            dma_base: 0x4000_0000,
            dma_size: 4 * 4096,
        };
        let first = Memory::with_pool(
            Arc::new(Mapping::new(&f0, 0, 8192).unwrap()),
            spec.dma_base,
            Arc::new(Mapping::new(&fp, 0, 4 * 4096).unwrap()),
        )
        .unwrap();
        let bar4 = Arc::new(Mapping::new(&f1, 0, 4096).unwrap());
        let second = board_memory(bar4, &spec, Some(&first)).unwrap();
        assert_eq!(second.vram_size(), 4096, "its own VRAM");
        assert_eq!(first.vram_size(), 8192);
        // One allocator: what the second board's adapter takes, the first's cannot.
        let a = second.alloc_system(4096, 4096).unwrap();
        assert_eq!(first.system_used(), 4096);
        let b = first.alloc_system(4096, 4096).unwrap();
        assert_ne!(a.bus_addr, b.bus_addr);
        assert!((spec.dma_base..spec.dma_base + spec.dma_size).contains(&a.bus_addr));
        for p in [p0, p1, pp] {
            std::fs::remove_file(p).unwrap();
        }
    }
}
