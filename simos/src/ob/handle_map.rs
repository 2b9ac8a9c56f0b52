//! [`HandleMap`]: a component's objects by D3DKMT handle (UMS's queues and doorbells).
//!
//! A `BTreeMap` made every lookup a few compares deeper as the adapter filled up: a
//! victimising `D3DKMTConnectDoorbell` looks a doorbell and its queue up several times, and
//! its cost grew with the number of queues (it must stay flat with scale). This map finds an
//! object with one hash probe and still iterates in handle order, as the `BTreeMap` did, so
//! every scan (teardown, power-down, VidSch's pump) visits objects in the same order as
//! before (the hash is [`rvgpu_device::hash::MulHash`]): a process's handles increase (`crate::ob::LocalHandles`), so inserts mostly append, and an insert that
//! does not (a handle allocated before another but inserted after it) re-sorts.

use std::collections::HashMap;

use super::KmtHandle;

/// Objects by handle: O(1) lookup, iteration in increasing handle order.
pub(crate) struct HandleMap<V> {
    /// Handle -> position in `slots`.
    index: HashMap<KmtHandle, usize, rvgpu_device::hash::MulHash>,
    /// Entries in increasing handle order; `None` where one was removed (compacted away
    /// once they are half of the vector).
    slots: Vec<Option<(KmtHandle, V)>>,
}

impl<V> Default for HandleMap<V> {
    fn default() -> Self {
        Self {
            index: HashMap::default(),
            slots: Vec::new(),
        }
    }
}

impl<V: std::fmt::Debug> std::fmt::Debug for HandleMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V> HandleMap<V> {
    /// The object with handle `h`.
    pub(crate) fn get(&self, h: &KmtHandle) -> Option<&V> {
        let i = *self.index.get(h)?;
        self.slots.get(i)?.as_ref().map(|(_, v)| v)
    }

    /// The object with handle `h`, mutably.
    pub(crate) fn get_mut(&mut self, h: &KmtHandle) -> Option<&mut V> {
        let i = *self.index.get(h)?;
        self.slots.get_mut(i)?.as_mut().map(|(_, v)| v)
    }

    /// Whether an object has handle `h`.
    pub(crate) fn contains_key(&self, h: &KmtHandle) -> bool {
        self.index.contains_key(h)
    }

    /// Puts `v` under `h`; returns the object it replaces (which keeps its place).
    pub(crate) fn insert(&mut self, h: KmtHandle, v: V) -> Option<V> {
        if let Some(old) = self.get_mut(&h) {
            return Some(std::mem::replace(old, v));
        }
        let in_order = self.keys().next_back().is_none_or(|last| *last < h);
        self.index.insert(h, self.slots.len());
        self.slots.push(Some((h, v)));
        if !in_order {
            self.compact();
        }
        None
    }

    /// Takes the object with handle `h` out.
    pub(crate) fn remove(&mut self, h: &KmtHandle) -> Option<V> {
        let i = self.index.remove(h)?;
        let (_, v) = self.slots.get_mut(i)?.take()?;
        if self.slots.len() > 16 && self.slots.len() > 2 * self.index.len() {
            self.compact();
        }
        Some(v)
    }

    /// Number of objects.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// (handle, object) in increasing handle order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&KmtHandle, &V)> {
        self.slots
            .iter()
            .filter_map(|s| s.as_ref().map(|(h, v)| (h, v)))
    }

    /// Handles in increasing order.
    pub(crate) fn keys(&self) -> impl DoubleEndedIterator<Item = &KmtHandle> {
        self.iter().map(|(h, _)| h)
    }

    /// Objects in increasing handle order.
    pub(crate) fn values(&self) -> impl DoubleEndedIterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Drops the removed slots, sorts by handle and re-indexes.
    fn compact(&mut self) {
        self.slots.retain(Option::is_some);
        self.slots.sort_by_key(|s| s.as_ref().map(|(h, _)| *h));
        self.index.clear();
        for (i, s) in self.slots.iter().enumerate() {
            if let Some((h, _)) = s {
                self.index.insert(*h, i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HandleMap;

    /// Lookups, replacement, removal and iteration in handle order, including an insert
    /// out of order and the compaction after many removals.
    #[test]
    fn handle_map_finds_every_object_and_iterates_in_handle_order() {
        let mut m = HandleMap::default();
        for h in (0x100u32..0x200).step_by(4) {
            assert_eq!(m.insert(h, h * 2), None);
        }
        assert_eq!(m.insert(0x104, 7), Some(0x208), "replaced in place");
        assert_eq!(m.get(&0x104), Some(&7));
        assert_eq!(m.insert(0x0F0, 1), None, "out of order");
        let keys: Vec<u32> = m.keys().copied().collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert_eq!(keys.first(), Some(&0x0F0));
        for h in (0x100u32..0x1C0).step_by(4) {
            assert!(m.remove(&h).is_some());
            assert!(m.get(&h).is_none());
            assert!(!m.contains_key(&h));
        }
        assert_eq!(m.remove(&0x100), None);
        assert_eq!(m.len(), 1 + (0x200 - 0x1C0) / 4);
        for h in (0x1C0u32..0x200).step_by(4) {
            assert_eq!(m.get(&h), Some(&(h * 2)), "{h:#x} after compaction");
        }
        assert_eq!(m.values().count(), m.len(), "no removed slot is iterated");
        assert_eq!(m.get_mut(&0x0F0).map(|v| std::mem::replace(v, 3)), Some(1));
        assert_eq!(m.iter().next(), Some((&0x0F0, &3)));
    }
}
