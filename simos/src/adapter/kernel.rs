//! The host kernel: [`SimKernel`], the simulation's [`Platform`](rvgpu_kmd::platform::Platform) for the driver.
//!
//! What ntoskrnl/hal give the driver on Windows, done on the host:
//! - **MMIO**: `DxgkCbMapMemory` hands the driver, for BAR0, a pointer to a
//!   [`TrapWindow`]; the accessors here look the pointer up in the process-wide window registry
//!   (so an unknown pointer is never dereferenced), check the magic, and call the device's
//!   [`MmioBus`]: every access reaches the device model at once (trap semantics). Windows onto
//!   ordinary memory (BAR4, VRAM) are accessed with volatile loads and stores. An access through
//!   a pointer that is not a live mapping, or past its end, is bug check 0x50
//!   `PAGE_FAULT_IN_NONPAGED_AREA`.
//! - **IRQL**: a thread-local the simulation sets for each call it makes into the driver
//!   (PASSIVE for ordinary DDIs on test threads, DISPATCH in DPCs, DIRQL in the ISR and in
//!   `SynchronizeExecution` routines). [`Platform::raise_to_dispatch`](rvgpu_kmd::platform::Platform::raise_to_dispatch) from above DISPATCH_LEVEL
//!   and [`Platform::lower_irql`](rvgpu_kmd::platform::Platform::lower_irql) to a higher level are Driver Verifier violations 0xC4/0x30 and
//!   0xC4/0x31 (the simulation runs the driver as WHLK does, under Verifier; without it Windows
//!   raises 0x9 and 0xA for the same mistakes).
//! - **Bus addresses**: [`Platform::bus_address`](rvgpu_kmd::platform::Platform::bus_address) looks the VA up in the process-wide registry
//!   of contiguous memory the simulated Dxgkrnl handed out (machines run in parallel test
//!   threads; VAs are unique process-wide, so one registry serves all of them).
//! - **DbgPrint**: captured per machine ([`crate::Machine::driver_log`]), and echoed to stderr
//!   when `RVGPU_SIM_LOG` is set.
//!
//! A violation never unwinds through the driver (it is `extern "system"` code and may not be
//! unwound): the service records the bug check on the thread's current machine and returns a
//! harmless value; the DDI wrapper that called the driver sees the halted machine when the
//! driver returns.

use std::collections::BTreeMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use rvgpu_hw::addr::BusAddr;
use rvgpu_hw::mmio::{MmioBus, TrapWindow};
use rvgpu_kmd::platform::{Irql, Level};

use crate::base::bugcheck::{self, kirql, BugCheck};
use crate::base::lock::lock;
// The thread's IRQL and current machine: their own modules; re-exported where the services
// that use them have always been.
pub use crate::adapter::context::{
    current_machine, current_machine_halted, irql_above, orphan_bugchecks, raise, MachineContext,
};
pub use crate::base::processor::{check_return_irql, current_irql, set_irql, IrqlScope};

// ---------------------------------------------------------------------------------------------
// BAR windows.

/// What a mapped BAR pointer points at.
#[derive(Clone, Copy)]
pub(crate) enum WindowKind {
    /// A register BAR: the pointer is a leaked [`TrapWindow`].
    Trap(&'static TrapWindow),
    /// Plain memory (VRAM through BAR4): volatile accesses at the pointer.
    Memory,
}

struct Window {
    len: usize,
    kind: WindowKind,
    /// Live mappings at this base (two `DxgkCbMapMemory` of the same VRAM range return the
    /// same address; each needs its own unmap).
    refs: usize,
}

/// Live mappings, by base address. Process-wide: pointers are unique in the process.
///
/// Every MMIO access looks its pointer up here (so a stale or foreign pointer is caught, 0x50,
/// and never dereferenced); the lookup takes only the read side, so driver threads on
/// different adapters (or ISR and DPC) do not serialise on it. Map and unmap take the write
/// side.
static WINDOWS: RwLock<BTreeMap<usize, Window>> = RwLock::new(BTreeMap::new());

fn windows_read() -> RwLockReadGuard<'static, BTreeMap<usize, Window>> {
    WINDOWS.read().unwrap_or_else(|p| p.into_inner())
}

fn windows_write() -> RwLockWriteGuard<'static, BTreeMap<usize, Window>> {
    WINDOWS.write().unwrap_or_else(|p| p.into_inner())
}

/// The device side of a trap window, held weakly so that a driver keeping a stale mapping
/// cannot keep a dropped machine's device alive: accesses then read all-ones, like a
/// surprise-removed device.
struct WeakBus(Weak<dyn MmioBus + Send + Sync>);

impl MmioBus for WeakBus {
    fn read32(&self, offset: usize) -> u32 {
        self.0.upgrade().map_or(u32::MAX, |b| b.read32(offset))
    }
    fn write32(&self, offset: usize, value: u32) {
        if let Some(b) = self.0.upgrade() {
            b.write32(offset, value);
        }
    }
    fn read64(&self, offset: usize) -> u64 {
        self.0.upgrade().map_or(u64::MAX, |b| b.read64(offset))
    }
    fn write64(&self, offset: usize, value: u64) {
        if let Some(b) = self.0.upgrade() {
            b.write64(offset, value);
        }
    }
}

/// Creates and registers a trap window of `len` bytes onto `bus`; returns the pointer the
/// driver gets from `DxgkCbMapMemory`.
///
/// The window and its bus reference are leaked on purpose (a few dozen bytes per mapping): a
/// driver that keeps a stale pointer after `DxgkCbUnmapMemory` must not make the host touch
/// freed memory. Accesses go through the registry first, so a stale pointer is caught there.
pub fn map_trap_window(bus: &Arc<dyn MmioBus + Send + Sync>, len: usize) -> NonNull<u8> {
    TRAP_WINDOWS_MAPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let weak: &'static WeakBus = Box::leak(Box::new(WeakBus(Arc::downgrade(bus))));
    let window: &'static TrapWindow = Box::leak(Box::new(TrapWindow {
        magic: TrapWindow::MAGIC,
        bus: weak,
    }));
    // The PE image dereferences its BAR pointer: it gets a range of address space the
    // emulator routes to this window (crate::pe), instead of the window's own address.
    let own = NonNull::from(window).cast::<u8>();
    #[cfg(target_os = "linux")]
    let base = current_machine()
        .and_then(|m| m.pe().cloned())
        .and_then(|image| image.window_range(len))
        .unwrap_or(own);
    #[cfg(not(target_os = "linux"))]
    let base = own;
    windows_write().insert(
        base.as_ptr() as usize,
        Window {
            len,
            kind: WindowKind::Trap(window),
            refs: 1,
        },
    );
    base
}

/// Trap windows mapped so far in the process. Each one leaves its (deliberately leaked, never
/// reused) window and bus reference behind: [`TRAP_WINDOW_RESIDUE`] bytes of host heap that
/// leak checks of the driver must not count as the driver's (low_resources tests).
static TRAP_WINDOWS_MAPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Heap bytes one [`map_trap_window`] leaves allocated for the life of the process.
pub const TRAP_WINDOW_RESIDUE: usize =
    std::mem::size_of::<WeakBus>() + std::mem::size_of::<TrapWindow>();

/// How many trap windows the process has mapped (see [`TRAP_WINDOW_RESIDUE`]).
pub fn trap_windows_mapped() -> u64 {
    TRAP_WINDOWS_MAPPED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Registers `[base, base + len)` of ordinary memory as a mapped BAR (VRAM). Mapping a base
/// that is already mapped adds a reference (and widens the window to the longer length).
pub fn map_memory_window(base: NonNull<u8>, len: usize) {
    let mut w = windows_write();
    match w.get_mut(&(base.as_ptr() as usize)) {
        Some(win) if matches!(win.kind, WindowKind::Memory) => {
            win.refs += 1;
            win.len = win.len.max(len);
        }
        _ => {
            w.insert(
                base.as_ptr() as usize,
                Window {
                    len,
                    kind: WindowKind::Memory,
                    refs: 1,
                },
            );
        }
    }
}

/// Drops one reference to a mapping (removing it with the last); `false` if `base` was not a
/// live mapping.
pub fn unmap_window(base: usize) -> bool {
    let mut w = windows_write();
    let Some(win) = w.get_mut(&base) else {
        return false;
    };
    win.refs = win.refs.saturating_sub(1);
    if win.refs == 0 {
        w.remove(&base);
    }
    true
}

/// One access of `width` bytes at `base + offset` of a mapped window, for the emulated
/// processor: a read returns the value, a write (`Some(value)`) returns 0. The same checks as
/// the Linux build's accessors (0x50 for an access outside a live mapping).
pub fn window_access(base: usize, offset: usize, width: usize, write: Option<u64>) -> u64 {
    let Some(b) = NonNull::new(base as *mut u8) else {
        return u64::MAX;
    };
    if width != 4 && width != 8 {
        if let Some(m) = current_machine() {
            m.raise_sim_error(format!(
                "a {width}-byte register access at {:#x}: the device decodes 4- and 8-byte accesses only",
                base + offset
            ));
        }
        return u64::MAX;
    }
    let kind = resolve(b, offset, width, write.is_some());
    let Some(WindowKind::Trap(w)) = kind else {
        return if width == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
    };
    let Some(bus) = trap(w) else {
        return u64::MAX;
    };
    match (width, write) {
        (4, None) => u64::from(bus.read32(offset)),
        (4, Some(v)) => {
            bus.write32(offset, v as u32);
            0
        }
        (_, None) => bus.read64(offset),
        (_, Some(v)) => {
            bus.write64(offset, v);
            0
        }
    }
}

/// Whether `base` is a live mapping.
pub fn is_mapped(base: usize) -> bool {
    windows_read().contains_key(&base)
}

/// Resolves an access of `width` bytes at `base + offset`, or raises 0x50 and returns `None`.
/// On a halted machine (the calling thread's) nothing is resolved and nothing is raised: the
/// access reads all-ones / is dropped, as nothing runs after a bug check.
pub(crate) fn resolve(
    base: NonNull<u8>,
    offset: usize,
    width: usize,
    write: bool,
) -> Option<WindowKind> {
    if current_machine_halted() {
        return None;
    }
    let b = base.as_ptr() as usize;
    let found = windows_read()
        .get(&b)
        .filter(|w| {
            offset
                .checked_add(width)
                .is_some_and(|end| end <= w.len && offset.is_multiple_of(width))
        })
        .map(|w| w.kind);
    if found.is_none() {
        raise(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [
                b.wrapping_add(offset) as u64,
                if write { 2 } else { 0 },
                0,
                0,
            ],
        ));
    }
    found
}

pub(crate) fn trap(window: &'static TrapWindow) -> Option<&'static dyn MmioBus> {
    if window.magic == TrapWindow::MAGIC {
        Some(window.bus)
    } else {
        // Only registered windows get here and they are never written after creation; a bad
        // magic means host memory corruption, which is worth a loud simulation error.
        if let Some(m) = current_machine() {
            m.raise_sim_error("trap window with a corrupted magic");
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Contiguous memory bus addresses.

/// Contiguous allocations handed out by every machine: VA → (length, bus address).
static DMA: Mutex<BTreeMap<usize, (usize, u64)>> = Mutex::new(BTreeMap::new());

/// Records that `[va, va + len)` is contiguous memory at bus address `bus`.
pub fn register_dma(va: usize, len: usize, bus: BusAddr) {
    lock(&DMA).insert(va, (len, bus.get()));
}

/// Forgets an allocation registered with [`register_dma`].
pub fn unregister_dma(va: usize) {
    lock(&DMA).remove(&va);
}

/// Bus address of `va` if it lies in a registered allocation.
pub fn dma_bus_address(va: usize) -> Option<u64> {
    let map = lock(&DMA);
    let (&start, &(len, bus)) = map.range(..=va).next_back()?;
    let off = va.checked_sub(start)?;
    (off < len).then(|| bus.wrapping_add(off as u64))
}

// ---------------------------------------------------------------------------------------------
// The platform.

/// The simulation's kernel; the `P` the driver is instantiated with under the simulated OS.
#[derive(Debug)]
pub struct SimKernel;

// The `Platform` impl itself is the driver->OS FFI (crate::dxgkrnl::callbacks::ffi); what
// it does beyond touching the driver's pointers is here.

/// `KeRaiseIrql` to DISPATCH_LEVEL: from above it is a Verifier violation (the level is left
/// alone then: the machine is halted, and the matching lower must not make things worse).
pub(crate) fn raise_to_dispatch() -> Irql {
    let current = current_irql();
    if current > Irql::Dispatch {
        raise(BugCheck::verifier(
            bugcheck::verifier::RAISE_IRQL_LOWER,
            kirql(current),
            kirql(Irql::Dispatch),
            0,
        ));
        return current;
    }
    set_irql(Irql::Dispatch);
    current
}

/// `KeLowerIrql` to `previous`: to a higher level it is a Verifier violation.
pub(crate) fn lower_irql(previous: Irql) {
    let current = current_irql();
    if previous > current {
        raise(BugCheck::verifier(
            bugcheck::verifier::LOWER_IRQL_HIGHER,
            kirql(current),
            kirql(previous),
            0,
        ));
        return;
    }
    set_irql(previous);
}

/// An event of the Linux build's provider `handle`, its parts read: to the writing thread's
/// machine's session.
pub(crate) fn etw_write(
    handle: u64,
    descriptor: &rvgpu_kmd::etw::EventDescriptor,
    parts: &[(u8, &[u8])],
) {
    let Some(m) = current_machine() else { return };
    let Some(guid) = crate::base::etw::session::provider_of(handle) else {
        return;
    };
    m.etw().deliver(guid, descriptor, parts);
}

/// The simulation's QPC ([`crate::base::clock::qpc`], 10 MHz), the clock the UMD's queued
/// events use too.
pub(crate) fn query_performance_counter() -> (u64, u64) {
    (crate::base::clock::qpc(), crate::base::clock::QPC_HZ)
}

/// The adapter's software key as the INF wrote it and the machine's configuration changed it
/// (`AdapterConfig::software_key`): what IoOpenDeviceRegistryKey with PLUGPLAY_REGKEY_DRIVER
/// opens for the PDO Dxgkrnl gave the driver, then ZwQueryValueKey
/// (`KeyValuePartialInformation`) reads. A value counts only if it is a `REG_DWORD` of four
/// bytes (learn.microsoft.com, IoOpenDeviceRegistryKey and KEY_VALUE_PARTIAL_INFORMATION).
pub(crate) fn software_key_dword(pdo: usize, name: &str) -> Option<u32> {
    crate::adapter::registry::software_key_dword(pdo, name)
}

/// Verifier's IRQL rule for pool (nothing above DISPATCH_LEVEL: the ISR and synchronized
/// routines must not allocate) and its low-resources simulation, per machine.
pub(crate) fn pool_allocation_permitted() -> bool {
    let irql = current_irql();
    if irql > Irql::Dispatch {
        raise(BugCheck::verifier(
            bugcheck::verifier::NONPAGED_ALLOC_ABOVE_DISPATCH,
            kirql(irql),
            0,
            0,
        ));
        return false;
    }
    current_machine().is_none_or(|m| m.pool().permit())
}

/// `DbgPrint`: to the current machine's driver log.
pub(crate) fn log(level: Level, args: fmt::Arguments<'_>) {
    let text = fmt::format(args);
    match current_machine() {
        Some(m) => m.push_log(level, text),
        None => {
            if std::env::var_os("RVGPU_SIM_LOG").is_some() {
                eprintln!("[no machine {level:?}] {text}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::state::MachineState;
    use rvgpu_kmd::platform::Platform;

    #[test]
    fn irql_raise_and_lower() {
        let state = Arc::new(MachineState::new());
        let _ctx = MachineContext::enter(state.clone());
        let old = SimKernel::raise_to_dispatch();
        assert_eq!(old, Irql::Passive);
        assert_eq!(current_irql(), Irql::Dispatch);
        SimKernel::lower_irql(old);
        assert_eq!(current_irql(), Irql::Passive);
        assert!(state.fault().is_none());
        {
            let _isr = IrqlScope::enter(Irql::Device);
            SimKernel::raise_to_dispatch();
        }
        let b = state.bugcheck().map(|b| (b.code, b.params[0]));
        assert_eq!(
            b,
            Some((
                bugcheck::DRIVER_VERIFIER_DETECTED_VIOLATION,
                bugcheck::verifier::RAISE_IRQL_LOWER
            ))
        );
    }

    #[test]
    fn dma_lookup_is_by_range() {
        register_dma(0x7000_0000, 0x2000, BusAddr::new(0x1_0000));
        assert_eq!(dma_bus_address(0x7000_0010), Some(0x1_0010));
        assert_eq!(dma_bus_address(0x7000_2000), None);
        unregister_dma(0x7000_0000);
        assert_eq!(dma_bus_address(0x7000_0010), None);
    }
}
