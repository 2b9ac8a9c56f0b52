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

use super::engine::Engine;
use crate::pe::unicorn;

/// How many times the host has changed code; each processor keeps the count it last saw.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// Notes that the host wrote guest memory that may hold code: every processor translates
/// afresh before it next executes.
pub fn code_changed() {
    CHANGES.fetch_add(1, Ordering::AcqRel);
}

impl Engine {
    /// Whether code changed since this processor last forgot its translations.
    pub(super) fn code_changed_since(&self) -> bool {
        self.code_seen.get() != CHANGES.load(Ordering::Acquire)
    }

    /// Forgets this processor's translations if code changed since it last looked.
    pub(super) fn forget_changed_code(&self) {
        let now = CHANGES.load(Ordering::Acquire);
        if self.code_seen.get() != now {
            // SAFETY: the flush request takes no arguments; the instance is ours and is not
            // executing (called between `uc_emu_start`s on its own thread).
            unsafe { (self.api.ctl)(self.uc, unicorn::CTL_FLUSH_TB) };
            self.code_seen.set(now);
        }
    }
}
