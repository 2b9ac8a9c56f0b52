//! The CPU's data cache over one allocation, for platforms whose DMA does not snoop CPU caches
//! (AL-06: some ARM64 systems; the device reports it by clearing `CAPS.IO_COHERENT`).
//!
//! Without it the simulation could not show the bug AL-06 is about: the emulated GPU and the
//! UMD's CPU views share the same atomic words, so every CPU store would be visible to the GPU
//! at once and every GPU write to the CPU. A [`CpuCache`] sits between a cached CPU view
//! ([`crate::kmt::SimMem`]) and the memory; the GPU keeps reading and writing the memory
//! directly, as a non-snooping device does.
//!
//! The model is write-back with 64-byte lines ([`LINE`]):
//! - a load of a line that is not cached fills it from memory, so a GPU write made after the
//!   fill is not seen until the line is invalidated (the CPU may also have filled it
//!   speculatively: a real cache gives no guarantee either way, so the model assumes the
//!   worst case);
//! - a store fills the line if needed and marks it dirty: the GPU does not see it until the
//!   line is written back;
//! - [`CpuCache::invalidate`] (what `D3DKMTInvalidateCache` does) writes back the dirty lines
//!   of a range, whole lines as real hardware does, and drops every line of the range.
//!
//! There is no capacity and no eviction: a line stays until invalidated. A real cache may
//! evict at any time, which hides the bug at random; a model that never does makes a missing
//! invalidation fail every time.
//!
//! One cache is shared by every cached view of an allocation (the OS's allocation object holds
//! it, `ums::allocation::AllocObj`), as every CPU of a machine sees one coherent cache
//! hierarchy; the thunk finds it through the allocation handle.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use rvgpu_device::SysAlloc;

use crate::base::lock::lock;

/// Bytes of one cache line.
pub const LINE: u64 = 64;
const WORDS: usize = (LINE / 8) as usize;

#[derive(Clone, Copy, Debug)]
struct Line {
    words: [u64; WORDS],
    dirty: bool,
}

/// The CPU cache over one allocation (see the module documentation).
#[derive(Debug)]
pub struct CpuCache {
    mem: SysAlloc,
    /// Cached lines by line index (byte offset / [`LINE`]).
    lines: Mutex<BTreeMap<u64, Line>>,
}

impl CpuCache {
    /// An empty cache over `mem`.
    pub fn new(mem: SysAlloc) -> Self {
        Self {
            mem,
            lines: Mutex::new(BTreeMap::new()),
        }
    }

    /// The word at byte `offset` as the CPU sees it (0 outside the allocation or unaligned,
    /// like an uncached view).
    pub fn load(&self, offset: u64) -> u64 {
        if self.mem.word(offset).is_none() {
            return 0;
        }
        let mut lines = lock(&self.lines);
        let line = self.line(&mut lines, offset);
        line.words[word_in_line(offset)]
    }

    /// Stores `value` at byte `offset` into the cache (ignored outside the allocation or
    /// unaligned, like an uncached view).
    pub fn store(&self, offset: u64, value: u64) {
        if self.mem.word(offset).is_none() {
            return;
        }
        let mut lines = lock(&self.lines);
        let line = self.line(&mut lines, offset);
        line.words[word_in_line(offset)] = value;
        line.dirty = true;
    }

    /// Writes back the dirty lines that overlap `[offset, offset + len)` and drops every line
    /// that does. The caller checked the range; an empty one does nothing.
    pub fn invalidate(&self, offset: u64, len: u64) {
        let Some(last) = len.checked_sub(1).and_then(|n| offset.checked_add(n)) else {
            return;
        };
        let mut lines = lock(&self.lines);
        let hit: Vec<u64> = lines
            .range(offset / LINE..=last / LINE)
            .map(|(k, _)| *k)
            .collect();
        for index in hit {
            if let Some(line) = lines.remove(&index) {
                if line.dirty {
                    self.write_back(index, &line);
                }
            }
        }
    }

    /// Lines cached now (tests: a coherent view never fills any).
    pub fn cached_lines(&self) -> usize {
        lock(&self.lines).len()
    }

    /// The cached line holding `offset`, filled from memory on a miss.
    fn line<'l>(&self, lines: &'l mut BTreeMap<u64, Line>, offset: u64) -> &'l mut Line {
        let index = offset / LINE;
        lines.entry(index).or_insert_with(|| {
            let mut words = [0; WORDS];
            for (i, w) in words.iter_mut().enumerate() {
                *w = self
                    .mem
                    .word(index * LINE + 8 * i as u64)
                    .map_or(0, |m| m.load(Ordering::Acquire));
            }
            Line {
                words,
                dirty: false,
            }
        })
    }

    fn write_back(&self, index: u64, line: &Line) {
        for (i, w) in line.words.iter().enumerate() {
            if let Some(m) = self.mem.word(index * LINE + 8 * i as u64) {
                m.store(*w, Ordering::Release);
            }
        }
    }
}

fn word_in_line(offset: u64) -> usize {
    ((offset % LINE) / 8) as usize
}
