//! What the processors map: arena ranges whole (memory or a register window), and host memory
//! on first touch, a piece of the host mapping at a time.

use std::collections::BTreeMap;
use std::sync::RwLock;

/// A range of the arena the processors map on first touch.
#[derive(Clone, Copy, Debug)]
pub enum Range {
    /// Memory (an image, a stub page, a stack).
    Ram,
    /// A register window: accesses go to
    /// [`kernel::window_access`](crate::adapter::kernel::window_access) with this base.
    Window,
}

static RANGES: RwLock<BTreeMap<usize, (usize, Range)>> = RwLock::new(BTreeMap::new());

/// Registers `[base, base + len)` (an arena range) for on-demand mapping.
pub fn register_range(base: usize, len: usize, kind: Range) {
    RANGES
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(base, (len, kind));
}

/// Forgets a range (its owner is gone; a processor that still has it mapped keeps it).
pub fn unregister_range(base: usize) {
    RANGES
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&base);
}

pub(super) fn range_of(addr: usize) -> Option<(usize, usize, Range)> {
    let r = RANGES.read().unwrap_or_else(|p| p.into_inner());
    let (&b, &(len, kind)) = r.range(..=addr).next_back()?;
    (addr < b + len).then_some((b, len, kind))
}

pub(super) fn round(len: usize) -> usize {
    (len + 4095) & !4095
}

/// The host mapping holding `addr`: `[start, end)` and Unicorn protections, if readable.
pub(super) fn host_mapping(addr: usize) -> Option<(usize, usize, u32)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let range = parts.next()?;
        let perms = parts.next()?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            usize::from_str_radix(a, 16).ok()?,
            usize::from_str_radix(b, 16).ok()?,
        );
        if (a..b).contains(&addr) {
            let p = perms.as_bytes();
            if p.first() != Some(&b'r') {
                return None;
            }
            // Host code is never the image's to run: no EXEC for host mappings.
            let prot = 1 | if p.get(1) == Some(&b'w') { 2 } else { 0 };
            return Some((a, b, prot));
        }
    }
    None
}
