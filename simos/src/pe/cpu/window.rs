//! Register windows: MMIO regions whose accesses reach the device model (or a window's own
//! handler), 8-byte accesses whole.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, RwLock};

use super::memory::{register_range, Range};
use super::trace::trace;
use super::turns::outside;
use crate::adapter::kernel;
use crate::pe::arena;
use crate::pe::unicorn::Uc;

/// What an access to a window with its own handler does: `(offset, width, Some(value))` is a
/// write (the result is ignored), `None` a read.
pub type WindowFn = Arc<dyn Fn(usize, usize, Option<u64>) -> u64 + Send + Sync>;

/// Windows whose accesses go to a handler of their own instead of the trap-window registry
/// (a user-mode doorbell page), by base.
static HANDLERS: RwLock<BTreeMap<usize, WindowFn>> = RwLock::new(BTreeMap::new());

/// A register window of `len` bytes whose accesses `handler` answers (on the accessing
/// thread, outside the guest lock, each 8-byte access whole): an MMIO region in every
/// processor, placed in the windows' half of the arena like the BAR windows. Returns its base.
pub fn register_window(len: usize, handler: WindowFn) -> Result<usize, String> {
    let base = arena::alloc(len, arena::Access::Window)?;
    HANDLERS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(base, handler);
    register_range(base, len, Range::Window);
    Ok(base)
}

/// One access to the window at `base`: its own handler, else the trap-window registry.
fn window_io(base: usize, offset: usize, width: usize, write: Option<u64>) -> u64 {
    let h = HANDLERS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&base)
        .cloned();
    match h {
        Some(h) => h(offset, width, write),
        None => kernel::window_access(base, offset, width, write),
    }
}

// Unicorn hands an MMIO region at most 4 bytes at a time (an 8-byte `mov` arrives as two
// halves, low first), while the bus carries an 8-byte access as one transaction and the
// device's 64-bit registers act on it whole. A memory hook on each window sees the whole
// access first; the halves are joined back into it here. The hook has a price: with any memory
// hook in place, Unicorn sends every guest load and store through its slow path (about a
// third of a run of the image), but the bus must see whole accesses.
thread_local! {
    /// The access the processor is making (address, size), from the memory hook.
    static ACCESS: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
    /// The high half of an 8-byte read, or the low half of an 8-byte write.
    static HALF: Cell<u64> = const { Cell::new(0) };
}

pub(super) unsafe extern "C" fn on_window_access(
    _uc: Uc,
    _kind: i32,
    addr: u64,
    size: i32,
    _v: i64,
    _u: *mut c_void,
) {
    ACCESS.with(|a| a.set((addr, size as u32)));
}

pub(super) unsafe extern "C" fn mmio_read(
    _uc: Uc,
    offset: u64,
    size: u32,
    base: *mut c_void,
) -> u64 {
    let at = base as u64 + offset;
    let (a0, whole) = ACCESS.with(Cell::get);
    let v = if whole == 8 && size == 4 && at == a0 {
        let v = outside(|| window_io(base as usize, offset as usize, 8, None));
        HALF.with(|h| h.set(v >> 32));
        v & 0xFFFF_FFFF
    } else if whole == 8 && size == 4 && at == a0 + 4 {
        HALF.with(Cell::get)
    } else {
        outside(|| window_io(base as usize, offset as usize, size as usize, None))
    };
    if trace() {
        eprintln!(
            "[pe] mmio read {:#x}+{offset:#x}/{size} = {v:#x}",
            base as usize
        );
    }
    v
}

pub(super) unsafe extern "C" fn mmio_write(
    _uc: Uc,
    offset: u64,
    size: u32,
    value: u64,
    base: *mut c_void,
) {
    if trace() {
        eprintln!(
            "[pe] mmio write {:#x}+{offset:#x}/{size} = {value:#x}",
            base as usize
        );
    }
    let at = base as u64 + offset;
    let (a0, whole) = ACCESS.with(Cell::get);
    if whole == 8 && size == 4 && at == a0 {
        HALF.with(|h| h.set(value & 0xFFFF_FFFF));
        return;
    }
    if whole == 8 && size == 4 && at == a0 + 4 {
        let v = HALF.with(Cell::get) | (value << 32);
        outside(|| window_io(base as usize, offset as usize - 4, 8, Some(v)));
        return;
    }
    outside(|| window_io(base as usize, offset as usize, size as usize, Some(value)));
}
