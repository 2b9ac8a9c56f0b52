//! The deepest stack each call into the image uses.
//!
//! A thread's kernel stack on x64 Windows is 24 KiB (`KERNEL_STACK_SIZE`, 0x6000, in
//! `ntddk.h`), shared by Dxgkrnl's frames below the DDI and the driver's own; a frame larger
//! than a page needs `__chkstk` to probe the guard page, which a kernel image must not rely on
//! (tests/kernel_stack.rs checks that no function of `rvgpu.sys` calls it). The processors'
//! stacks are larger so an overflow shows as a measurement rather than a crash.
//!
//! Measured by painting: every stack is filled with a pattern when its processor is made; after
//! each outermost call, the deepest word that no longer holds the pattern is the deepest the
//! call wrote, and the words it touched are painted again. The scan downwards from the entry
//! stops after a page of untouched words: without `__chkstk` no frame reserves more than a
//! page, so no written word lies below such a gap. A frame that reserves space it never
//! writes counts up to the last word it wrote (the call's return address at least).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// What a painted word holds.
const PAINT: u64 = 0x5354_4143_4B5F_5041;
/// Untouched bytes that end the scan.
const GAP: usize = 4096;

/// Stack use of one entry point of an image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackUse {
    /// Calls measured.
    pub calls: u64,
    /// The most bytes one call used, its return address included.
    pub deepest: usize,
}

static DEEPEST: Mutex<BTreeMap<usize, StackUse>> = Mutex::new(BTreeMap::new());

/// Stack use of every entry point called so far in this process, by address.
pub fn deepest_stacks() -> BTreeMap<usize, StackUse> {
    DEEPEST.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Paints `[base, base + len)` (a fresh stack).
pub(super) fn paint(base: usize, len: usize) {
    for w in (base..base + len).step_by(8) {
        // SAFETY: the caller's fresh read-write stack, 8-byte aligned.
        unsafe { (w as *mut u64).write(PAINT) };
    }
}

/// After a call of `entry` whose return address was at `rsp` on the stack starting at `base`:
/// records how deep it went and paints what it touched again.
pub(super) fn measure(entry: usize, rsp: usize, base: usize) {
    let mut lowest = rsp;
    let mut w = rsp;
    while w >= base + 8 && lowest - (w - 8) <= GAP {
        w -= 8;
        // SAFETY: inside the stack `[base, rsp)`, 8-byte aligned.
        if unsafe { (w as *const u64).read() } != PAINT {
            lowest = w;
        }
    }
    paint(lowest, rsp - lowest);
    let used = rsp + 8 - lowest;
    let mut d = DEEPEST.lock().unwrap_or_else(|p| p.into_inner());
    let e = d.entry(entry).or_default();
    e.calls += 1;
    e.deepest = e.deepest.max(used);
}
