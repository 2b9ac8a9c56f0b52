//! What the debugger's stub and its target share: the processors, the breakpoints and the
//! single step asked for, the images mapped, the last bug check.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;
use std::sync::{Mutex, RwLock};

use crate::base::lock::lock;

/// The processor to stop at its next instruction (a single step), 0 for none.
pub(super) static STEP: AtomicU32 = AtomicU32::new(0);

/// Breakpoint addresses.
pub(super) static BREAKPOINTS: RwLock<Vec<u64>> = RwLock::new(Vec::new());
/// `BREAKPOINTS.len()`, read without the lock by the hook.
pub(super) static BREAKPOINT_COUNT: AtomicU32 = AtomicU32::new(0);

/// Every processor, by number: its Unicorn instance.
pub(super) static PROCESSORS: Mutex<BTreeMap<u32, usize>> = Mutex::new(BTreeMap::new());

/// Images mapped so far: name, base, size.
static MODULES: Mutex<Vec<(String, usize, usize)>> = Mutex::new(Vec::new());

/// The last bug check raised under the debugger, as text (`monitor bugcheck`).
pub(super) static LAST_BUGCHECK: Mutex<Option<String>> = Mutex::new(None);

/// Notes an image mapped at `base` (`monitor modules` lists them, with the slide a debugger
/// loads the file at).
pub fn note_module(name: &str, base: usize, size: usize) {
    lock(&MODULES).push((name.to_string(), base, size));
}

/// Images mapped so far: name, base, size.
pub fn modules() -> Vec<(String, usize, usize)> {
    lock(&MODULES).clone()
}

/// The processor that stopped.
#[derive(Clone, Copy, Debug)]
pub struct Processor {
    /// Its number, the debugger's thread id.
    pub id: u32,
    /// Its Unicorn instance (`uc_engine *`), used only while the guest lock is held.
    pub uc: usize,
}
