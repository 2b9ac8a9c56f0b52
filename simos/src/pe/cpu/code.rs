//! Code changed behind the processors' back: memory written by the host (the debugger's
//! patch) rather than by a processor, which the emulator's translations of it do not see.
//!
//! Each processor forgets all of its translations before it next executes, on its own thread
//! (a processor's translation cache is touched only while it is not executing): at its next
//! `uc_emu_start`, or — under a debugger, whose hook sees every instruction — by leaving the
//! emulator before its next instruction and resuming there ([`super::engine::Exit::Resume`]).
//! Whole flushes, not ranges: patches are rare, and the ranged removal (`uc_ctl_remove_cache`)
//! is not relied on (libunicorn 2.0.1's left a processor's blocks in place once it had mapped
//! more than one range).

use std::sync::atomic::{AtomicU64, Ordering};

/// How many times the host has changed code; each processor keeps the count it last saw.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// Notes that the host wrote guest memory that may hold code: every processor translates
/// afresh before it next executes.
pub fn code_changed() {
    CHANGES.fetch_add(1, Ordering::AcqRel);
}

/// How many times the host has changed code so far.
pub(super) fn changes() -> u64 {
    CHANGES.load(Ordering::Acquire)
}
