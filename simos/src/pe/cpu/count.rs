//! Counting the image's instructions (`RVGPU_PE_COUNT=1`): a code hook on every instruction
//! of the registered image ranges, per thread, kernel and user-mode images apart.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::RwLock;

use crate::pe::unicorn::Uc;

/// Whether the processors count the image's instructions (a code hook on every instruction of
/// every image: slow, for the instruction figures only). Set by `RVGPU_PE_COUNT`.
pub fn counting() -> bool {
    static C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *C.get_or_init(|| std::env::var_os("RVGPU_PE_COUNT").is_some())
}

thread_local! {
    /// Image instructions this thread executed (counting mode).
    static EXECUTED: Cell<u64> = const { Cell::new(0) };
    /// User-mode image instructions this thread executed (counting mode), apart.
    static EXECUTED_USER: Cell<u64> = const { Cell::new(0) };
}

/// Image instructions the calling thread has executed so far (counting mode).
pub fn executed() -> u64 {
    EXECUTED.with(Cell::get)
}

/// User-mode image instructions the calling thread has executed so far (counting mode).
pub fn executed_user() -> u64 {
    EXECUTED_USER.with(Cell::get)
}

pub(super) unsafe extern "C" fn on_count(_uc: Uc, _addr: u64, _size: u32, user: *mut c_void) {
    // The hook's user data says whose range it is (0: a kernel image, 1: a user-mode one).
    let counter = if user.is_null() {
        &EXECUTED
    } else {
        &EXECUTED_USER
    };
    counter.with(|c| c.set(c.get() + 1));
}

/// Image ranges to count in (appended when an image is mapped in counting mode).
pub(super) static COUNT_RANGES: RwLock<Vec<(usize, usize, bool)>> = RwLock::new(Vec::new());

/// Counts the instructions executed in `[start, end)` (counting mode).
pub fn register_count_range(start: usize, end: usize) {
    add_count_range(start, end, false);
}

/// Counts the instructions executed in `[start, end)`, a user-mode image's, apart from the
/// kernel images' ([`executed_user`]; counting mode).
pub fn register_user_count_range(start: usize, end: usize) {
    add_count_range(start, end, true);
}

fn add_count_range(start: usize, end: usize, user: bool) {
    if counting() {
        COUNT_RANGES
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push((start, end, user));
    }
}
