//! The ISR's view of native fences: report tag → the OS's `hGlobalNativeFence`.
//!
//! The device reports a signalled fence by the 64-bit tag the FENCE_SIGNAL command carried.
//! The UMD writes that command, so a tag is untrusted input: it may be stale (the fence was
//! destroyed), forged, or belong to another adapter. Reporting a destroyed handle to the OS is
//! a bug check (NF-14), so the ISR must resolve tags exactly, at device IRQL, without locks it
//! cannot take there and without allocating.
//!
//! The tag alone decides (with its generation). The record's MonitoredValue address cannot
//! help: it is the VA the signalling process wrote, in that process's space, and every process
//! that opens the fence has its own (`D3DDDI_NATIVEFENCEMAPPING`), none of which the KMD is
//! told at create. A live tag forged by another process names a real fence, so the report is
//! one the OS may always get: it re-reads that fence's CurrentValue and releases only waits
//! the value really passed (a spurious report, which Windows tolerates; docs/robustness.md).
//!
//! Hence a slab of slots: a tag is `generation << 32 | slot`. Create and destroy change slots
//! only inside `DxgkCbSynchronizeExecution` (the interrupt lock, the same lock the ISR holds),
//! so the ISR sees a slot either before or after a change, never during. A destroyed fence's
//! slot gets a new generation, so its old tag never resolves again, even when the slot is
//! reused.
//!
//! The slab grows: slots come in chunks of [`CHUNK`], allocated by create outside
//! the interrupt lock ([`Registry::try_chunk`]) and only linked in under it
//! ([`Registry::add_chunk`], no allocation: the chunk directory's room for [`MAX_FENCES`] is
//! reserved when the registry is built). A slot index is (chunk, offset), so resolving a tag
//! stays two indexed loads whatever the number of fences. Chunks are kept until the adapter
//! stops (a freed slot is reused first, so a chunk only ever empties after a burst of destroys).

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::kmem::{self, NoMemory};
use crate::platform::Platform;

/// Slots per chunk (32 bytes each: one chunk is 32 KiB of pool).
pub const CHUNK: u32 = 1024;

/// Most live native fences one adapter can hold: the chunk directory is reserved up front at
/// this size (16 KiB of slice pointers), because linking a chunk in happens under the interrupt lock
/// where nothing may allocate. 1,048,576 is ten times the 100,000 target; a tag's slot
/// field (32 bits) and the device (any 64-bit tag) would allow more.
pub const MAX_FENCES: u32 = 1 << 20;

const CHUNKS: usize = (MAX_FENCES / CHUNK) as usize;

/// No slot (end of the free list).
const NONE: u32 = u32::MAX;

/// What the ISR needs to report a fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsrFence {
    /// The OS's global handle, reported in `pSignaledNativeFenceArray`.
    pub os_handle: usize,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    generation: u32,
    /// Next free slot while this one is on the free list.
    next_free: u32,
    fence: Option<IsrFence>,
}

/// A chunk of [`CHUNK`] fresh slots, allocated outside the interrupt lock.
#[derive(Debug)]
pub struct Chunk(Box<[Slot]>);

/// The registry; every method but [`Registry::try_new`] and [`Registry::try_chunk`] is
/// allocation-free.
#[derive(Debug)]
pub struct Registry {
    /// The chunks; capacity for every chunk up to [`MAX_FENCES`] is reserved at build.
    chunks: Vec<Box<[Slot]>>,
    /// Head of the list of freed slots.
    free_head: u32,
    /// Slots at and above this index were never used.
    fresh: u32,
    live: u32,
}

/// Why a tag cannot be issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// Every slot of the linked chunks is in use: link another chunk
    /// ([`Registry::try_chunk`], [`Registry::add_chunk`]).
    Full,
    /// [`MAX_FENCES`] are live.
    AtLimit,
}

impl Registry {
    /// An empty registry with its chunk directory and `chunks` chunks (allocates at PASSIVE,
    /// fallibly).
    pub fn try_new<P: Platform>(chunks: u32) -> Result<Self, NoMemory> {
        let mut r = Self {
            chunks: kmem::try_with_capacity::<P, _>(CHUNKS)?,
            free_head: NONE,
            fresh: 0,
            live: 0,
        };
        for _ in 0..chunks {
            let c = Self::try_chunk::<P>()?;
            if r.add_chunk(c).is_err() {
                break;
            }
        }
        Ok(r)
    }

    /// A registry for host unit tests, with room for `capacity` fences before it must grow.
    #[cfg(test)]
    pub fn with_capacity(capacity: u32) -> Self {
        Self::try_new::<crate::kmem::Host>(capacity.div_ceil(CHUNK)).unwrap()
    }

    /// A chunk of fresh slots for [`Registry::add_chunk`] (allocates: call outside the
    /// interrupt lock).
    pub fn try_chunk<P: Platform>() -> Result<Chunk, NoMemory> {
        kmem::try_boxed_slice::<P, _>(CHUNK as usize, |_| Slot {
            generation: 1,
            next_free: NONE,
            fence: None,
        })
        .map(Chunk)
    }

    /// Links `chunk` in. Allocation-free (the directory has room): callable at device IRQL.
    /// At [`MAX_FENCES`] the chunk is handed back, to be freed outside the interrupt lock.
    pub fn add_chunk(&mut self, chunk: Chunk) -> Result<(), Chunk> {
        if chunk.0.len() != CHUNK as usize {
            return Err(chunk);
        }
        kmem::push_reserved(&mut self.chunks, chunk.0).map_err(Chunk)
    }

    /// Slots in the linked chunks.
    pub fn capacity(&self) -> usize {
        self.chunks.len().saturating_mul(CHUNK as usize)
    }

    /// Number of live fences.
    pub fn len(&self) -> usize {
        self.live as usize
    }

    /// Whether no fence is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn slot(&self, index: u32) -> Option<&Slot> {
        let c = usize::try_from(index / CHUNK).ok()?;
        let o = usize::try_from(index % CHUNK).ok()?;
        self.chunks.get(c)?.get(o)
    }

    fn slot_mut(&mut self, index: u32) -> Option<&mut Slot> {
        let c = usize::try_from(index / CHUNK).ok()?;
        let o = usize::try_from(index % CHUNK).ok()?;
        self.chunks.get_mut(c)?.get_mut(o)
    }

    /// Registers a fence and returns its tag. Allocation-free: callable at device IRQL.
    pub fn insert(&mut self, fence: IsrFence) -> Result<u64, RegistryError> {
        // A freed slot first (its chunk is already in cache), else a never-used one.
        let index = if self.free_head != NONE {
            self.free_head
        } else if (self.fresh as usize) < self.capacity() {
            self.fresh
        } else if self.capacity() >= MAX_FENCES as usize {
            return Err(RegistryError::AtLimit);
        } else {
            return Err(RegistryError::Full);
        };
        let reused = index == self.free_head;
        let slot = self.slot_mut(index).ok_or(RegistryError::Full)?;
        let next = slot.next_free;
        slot.fence = Some(fence);
        slot.next_free = NONE;
        let t = tag(slot.generation, index);
        if reused {
            self.free_head = next;
        } else {
            self.fresh = self.fresh.saturating_add(1);
        }
        self.live = self.live.saturating_add(1);
        Ok(t)
    }

    /// Resolves a tag reported by the device. `None` for a stale tag (its slot has another
    /// generation), a free slot or an index past the slots.
    pub fn resolve(&self, tag: u64) -> Option<IsrFence> {
        let (generation, index) = split(tag);
        let slot = self.slot(index)?;
        let f = slot.fence?;
        (slot.generation == generation).then_some(f)
    }

    /// Unregisters the fence with `tag`; its tag never resolves again. Returns the fence, or
    /// `None` if the tag was not live. Allocation-free (the free list runs through the slots).
    pub fn remove(&mut self, tag: u64) -> Option<IsrFence> {
        let (generation, index) = split(tag);
        let head = self.free_head;
        let slot = self.slot_mut(index)?;
        if slot.generation != generation {
            return None;
        }
        let f = slot.fence.take()?;
        // Generation 0 is never issued, so a zeroed tag never resolves.
        slot.generation = match slot.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
        slot.next_free = head;
        self.free_head = index;
        self.live = self.live.saturating_sub(1);
        Some(f)
    }
}

const fn tag(generation: u32, index: u32) -> u64 {
    ((generation as u64) << 32) | index as u64
}

fn split(tag: u64) -> (u32, u32) {
    let high = u32::try_from(tag >> 32).unwrap_or(0);
    let low = u32::try_from(tag & 0xFFFF_FFFF).unwrap_or(0);
    (high, low)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(h: usize) -> IsrFence {
        IsrFence { os_handle: h }
    }

    #[test]
    fn nf_14_stale_tags_never_resolve_even_when_the_slot_is_reused() {
        let mut r = Registry::with_capacity(1);
        let t1 = r.insert(f(1)).unwrap();
        assert_eq!(r.resolve(t1), Some(f(1)));
        assert_eq!(r.remove(t1), Some(f(1)));
        assert_eq!(r.resolve(t1), None, "destroyed");
        let t2 = r.insert(f(2)).unwrap();
        assert_ne!(t1, t2, "same slot, new generation");
        assert_eq!(r.resolve(t1), None, "old tag, reused slot");
        assert_eq!(r.resolve(t2), Some(f(2)));
        assert_eq!(r.remove(t1), None, "double destroy of a stale tag");
    }

    /// A record's MonitoredValue VA is the signalling process's own, so it takes no
    /// part: a live tag resolves whatever address came with it; stale or invented tags never.
    #[test]
    fn tags_resolve_by_generation_alone() {
        let mut r = Registry::with_capacity(4);
        let t = r.insert(f(7)).unwrap();
        assert_eq!(r.resolve(t), Some(f(7)));
        assert_eq!(r.resolve(t ^ (1 << 40)), None, "wrong generation");
        assert_eq!(r.resolve(t + 1), None, "a slot never used");
        assert_eq!(r.resolve(u64::MAX), None);
        assert_eq!(r.resolve(0), None, "generation 0 is never issued");
    }

    #[test]
    fn capacity_is_enforced_and_freed_slots_come_back() {
        let mut r = Registry::with_capacity(1);
        assert_eq!(r.capacity(), CHUNK as usize);
        let tags: Vec<u64> = (0..CHUNK as usize)
            .map(|h| r.insert(f(h + 1)).unwrap())
            .collect();
        assert_eq!(r.insert(f(0x9999)), Err(RegistryError::Full));
        assert_eq!(r.len(), CHUNK as usize);
        r.remove(tags[0]);
        assert!(r.insert(f(0x9999)).is_ok());
        assert_eq!(r.len(), CHUNK as usize);
    }

    /// The registry grows by chunks linked in without allocating, tags of every
    /// chunk resolve, and freed slots are reused before fresh ones.
    #[test]
    fn registry_grows_by_chunks_and_reuses_freed_slots() {
        let mut r = Registry::with_capacity(0);
        assert_eq!(r.capacity(), 0);
        assert_eq!(r.insert(f(1)), Err(RegistryError::Full));
        let n = 3 * CHUNK as usize + 5;
        let mut tags = Vec::new();
        for h in 1..=n {
            let t = match r.insert(f(h)) {
                Ok(t) => t,
                Err(RegistryError::Full) => {
                    let c = Registry::try_chunk::<crate::kmem::Host>().unwrap();
                    r.add_chunk(c).unwrap();
                    r.insert(f(h)).unwrap()
                }
                Err(e) => panic!("{e:?}"),
            };
            tags.push(t);
        }
        assert_eq!(r.capacity(), 4 * CHUNK as usize);
        for (h, t) in (1..=n).zip(&tags) {
            assert_eq!(r.resolve(*t), Some(f(h)));
        }
        // Destroy two, re-create two: the same slots come back (new generations), no chunk.
        let (a, b) = (tags[10], tags[2 * CHUNK as usize]);
        r.remove(a).unwrap();
        r.remove(b).unwrap();
        let c1 = r.insert(f(0x1_0000)).unwrap();
        let c2 = r.insert(f(0x1_0001)).unwrap();
        let slots = |t: u64| t & 0xFFFF_FFFF;
        let mut got = [slots(c1), slots(c2)];
        got.sort_unstable();
        let mut want = [slots(a), slots(b)];
        want.sort_unstable();
        assert_eq!(got, want, "freed slots are reused");
        assert_eq!(r.resolve(a), None, "stale tag");
        assert_eq!(r.capacity(), 4 * CHUNK as usize, "no growth for reuse");
    }

    /// A chunk that cannot be allocated (pool exhausted) is an error the caller
    /// reports; the registry is unchanged and grows once memory is back.
    #[test]
    fn registry_growth_fails_cleanly_without_memory() {
        let mut r = Registry::with_capacity(0);
        crate::kmem::tests::budget(0);
        assert_eq!(
            Registry::try_chunk::<crate::kmem::Host>().err(),
            Some(NoMemory)
        );
        crate::kmem::tests::budget(u32::MAX);
        assert_eq!(r.insert(f(1)), Err(RegistryError::Full));
        assert!(r.is_empty());
        r.add_chunk(Registry::try_chunk::<crate::kmem::Host>().unwrap())
            .unwrap();
        assert!(r.insert(f(1)).is_ok());
    }

    /// The directory is reserved for exactly [`MAX_FENCES`]: one chunk more is handed back.
    #[test]
    fn registry_limit_is_max_fences() {
        let mut r = Registry::with_capacity(0);
        for _ in 0..CHUNKS {
            r.add_chunk(Registry::try_chunk::<crate::kmem::Host>().unwrap())
                .unwrap();
        }
        assert_eq!(r.capacity(), MAX_FENCES as usize);
        assert!(r
            .add_chunk(Registry::try_chunk::<crate::kmem::Host>().unwrap())
            .is_err());
    }
}
