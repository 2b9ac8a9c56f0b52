//! The ISR's view of native fences: report tag → the OS's `hGlobalNativeFence`.
//!
//! The device reports a signalled fence by the 64-bit tag the FENCE_SIGNAL command carried.
//! The UMD writes that command, so a tag is untrusted input: it may be stale (the fence was
//! destroyed), forged, or belong to another adapter. Reporting a destroyed handle to the OS is
//! a bug check (NF-14), so the ISR must resolve tags exactly, at device IRQL, without locks it
//! cannot take there and without allocating.
//!
//! Hence a slab preallocated at start: a tag is `generation << 32 | slot`. Create and destroy
//! change slots only inside `DxgkCbSynchronizeExecution` (the interrupt lock, the same lock
//! the ISR holds), so the ISR sees a slot either before or after a change, never during. A
//! destroyed fence's slot gets a new generation, so its old tag never resolves again, even
//! when the slot is reused.

use alloc::vec::Vec;

use crate::kmem::{self, NoMemory};
use crate::platform::Platform;
use rvgpu_hw::addr::GpuVa;

/// What the ISR needs to report a fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsrFence {
    /// The OS's global handle, reported in `pSignaledNativeFenceArray`.
    pub os_handle: usize,
    /// GPU address of the fence's MonitoredValue on this adapter; a report whose address
    /// differs is not this fence's (a forged tag) and is not trusted.
    pub monitored_gpu: GpuVa,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    generation: u32,
    fence: Option<IsrFence>,
}

/// Fixed-capacity registry; every method is allocation-free after `with_capacity`.
#[derive(Debug)]
pub struct Registry {
    slots: Vec<Slot>,
    /// Free slot indices (a stack), preallocated to capacity.
    free: Vec<u32>,
}

/// Why a tag cannot be issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// Every slot is in use.
    Full,
}

impl Registry {
    /// A registry for up to `capacity` live fences (allocates once, at PASSIVE, fallibly).
    pub fn try_with_capacity<P: Platform>(capacity: u32) -> Result<Self, NoMemory> {
        let n = usize::try_from(capacity).map_err(|_| NoMemory)?;
        let slots = kmem::try_from_fn::<P, _>(n, |_| Slot {
            generation: 1,
            fence: None,
        })?;
        // The free stack pops the lowest index first.
        let free = kmem::try_from_fn::<P, _>(n, |k| {
            u32::try_from(n.saturating_sub(k).saturating_sub(1)).unwrap_or(0)
        })?;
        Ok(Self { slots, free })
    }

    /// A registry for host unit tests.
    #[cfg(test)]
    pub fn with_capacity(capacity: u32) -> Self {
        Self::try_with_capacity::<crate::kmem::Host>(capacity).unwrap()
    }

    /// Number of live fences.
    pub fn len(&self) -> usize {
        self.slots.len().saturating_sub(self.free.len())
    }

    /// Whether no fence is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registers a fence and returns its tag. Allocation-free: callable at device IRQL.
    pub fn insert(&mut self, fence: IsrFence) -> Result<u64, RegistryError> {
        let index = self.free.pop().ok_or(RegistryError::Full)?;
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| self.slots.get_mut(i));
        let Some(slot) = slot else {
            return Err(RegistryError::Full);
        };
        slot.fence = Some(fence);
        Ok(tag(slot.generation, index))
    }

    /// Resolves a tag reported by the device. `None` for a stale, forged or out-of-range
    /// tag, or when the reported MonitoredValue address is not the fence's.
    pub fn resolve(&self, tag: u64, monitored_gpu: GpuVa) -> Option<IsrFence> {
        let (generation, index) = split(tag);
        let slot = self.slots.get(usize::try_from(index).ok()?)?;
        let f = slot.fence?;
        (slot.generation == generation && f.monitored_gpu == monitored_gpu).then_some(f)
    }

    /// Unregisters the fence with `tag`; its tag never resolves again. Returns the fence, or
    /// `None` if the tag was not live. Allocation-free (the free stack has capacity).
    pub fn remove(&mut self, tag: u64) -> Option<IsrFence> {
        let (generation, index) = split(tag);
        let slot = self.slots.get_mut(usize::try_from(index).ok()?)?;
        if slot.generation != generation {
            return None;
        }
        let f = slot.fence.take()?;
        // Generation 0 is never issued, so a zeroed tag never resolves.
        slot.generation = match slot.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
        // Never grows: the stack was built with room for every slot.
        let _ = kmem::push_reserved(&mut self.free, index);
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
        IsrFence {
            os_handle: h,
            monitored_gpu: GpuVa::new(0x1000_u64.wrapping_add((h as u64).wrapping_mul(8))),
        }
    }

    #[test]
    fn nf_14_stale_tags_never_resolve_even_when_the_slot_is_reused() {
        let mut r = Registry::with_capacity(1);
        let t1 = r.insert(f(1)).unwrap();
        assert_eq!(r.resolve(t1, f(1).monitored_gpu), Some(f(1)));
        assert_eq!(r.remove(t1), Some(f(1)));
        assert_eq!(r.resolve(t1, f(1).monitored_gpu), None, "destroyed");
        let t2 = r.insert(f(2)).unwrap();
        assert_ne!(t1, t2, "same slot, new generation");
        assert_eq!(
            r.resolve(t1, f(2).monitored_gpu),
            None,
            "old tag, reused slot"
        );
        assert_eq!(r.resolve(t2, f(2).monitored_gpu), Some(f(2)));
        assert_eq!(r.remove(t1), None, "double destroy of a stale tag");
    }

    #[test]
    fn forged_tags_and_addresses_are_rejected() {
        let mut r = Registry::with_capacity(4);
        let t = r.insert(f(7)).unwrap();
        assert_eq!(
            r.resolve(t, rvgpu_hw::addr::GpuVa::new(0xdead)),
            None,
            "MonitoredValue address mismatch"
        );
        assert_eq!(
            r.resolve(t ^ (1 << 40), f(7).monitored_gpu),
            None,
            "wrong generation"
        );
        assert_eq!(r.resolve(u64::MAX, rvgpu_hw::addr::GpuVa::NULL), None);
        assert_eq!(
            r.resolve(0, rvgpu_hw::addr::GpuVa::NULL),
            None,
            "generation 0 is never issued"
        );
    }

    #[test]
    fn capacity_is_enforced_and_freed_slots_come_back() {
        let mut r = Registry::with_capacity(2);
        let a = r.insert(f(1)).unwrap();
        let _b = r.insert(f(2)).unwrap();
        assert_eq!(r.insert(f(3)), Err(RegistryError::Full));
        assert_eq!(r.len(), 2);
        r.remove(a);
        assert!(r.insert(f(3)).is_ok());
        assert_eq!(r.len(), 2);
    }
}
