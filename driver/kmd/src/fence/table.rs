//! The adapter's native-fence objects and their lifetime rules (NF-13).
//!
//! Dxgkrnl creates a fence once (global handle), then opens it once per process that uses it
//! (local handles), closes local handles as processes let go, and destroys the global object
//! after the last close. The table enforces that order: anything else is refused with an
//! NTSTATUS, never trusted.

use crate::kmem::SortedMap;
use crate::platform::Platform;
use rvgpu_hw::addr::GpuVa;

/// One native fence as the driver knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fence {
    /// The device report tag ([`super::registry`]).
    pub tag: u64,
    /// GPU (system process) address of CurrentValue.
    pub current_gpu: GpuVa,
    /// GPU (system process) address of MonitoredValue.
    pub monitored_gpu: GpuVa,
    /// `D3DDDI_NATIVEFENCE_TYPE`.
    pub fence_type: i32,
    /// Local handles open on it.
    pub opens: u32,
}

/// Why a table operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableError {
    /// The handle is already in use.
    Exists,
    /// No such handle.
    Unknown,
    /// Destroy while local handles are still open.
    StillOpen,
    /// The table could not grow (pool exhausted); nothing changed.
    NoMemory,
}

/// Global fences by `hGlobalNativeFence`, local handles by `hLocalNativeFence`.
#[derive(Debug, Default)]
pub struct FenceTable {
    globals: SortedMap<usize, Fence>,
    locals: SortedMap<usize, Local>,
}

/// A process's handle on a global fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Local {
    pub global: usize,
    pub device: usize,
}

impl FenceTable {
    /// Live global fences.
    pub fn len(&self) -> usize {
        self.globals.len()
    }

    /// Whether no fence is live.
    pub fn is_empty(&self) -> bool {
        self.globals.is_empty()
    }

    /// The global handles of every live fence.
    pub fn handles(&self) -> impl Iterator<Item = usize> + '_ {
        self.globals.keys().copied()
    }

    /// The global fence `h`.
    pub fn get(&self, h: usize) -> Option<&Fence> {
        self.globals.get(&h)
    }

    /// Makes room for one more global fence, so that the next [`FenceTable::create`] cannot
    /// fail for memory.
    pub fn try_reserve<P: Platform>(&mut self) -> Result<(), TableError> {
        self.globals
            .try_reserve::<P>()
            .map_err(|_| TableError::NoMemory)
    }

    /// CreateNativeFence.
    pub fn create<P: Platform>(&mut self, h: usize, fence: Fence) -> Result<(), TableError> {
        if self.globals.contains_key(&h) {
            return Err(TableError::Exists);
        }
        self.globals
            .try_insert::<P>(h, Fence { opens: 0, ..fence })
            .map_err(|_| TableError::NoMemory)?;
        Ok(())
    }

    /// OpenNativeFence: a new local handle on global `g`.
    pub fn open<P: Platform>(
        &mut self,
        g: usize,
        local: usize,
        device: usize,
    ) -> Result<(), TableError> {
        if self.locals.contains_key(&local) {
            return Err(TableError::Exists);
        }
        if !self.globals.contains_key(&g) {
            return Err(TableError::Unknown);
        }
        // Room first, then the entry, then the open count: a failure changes nothing.
        self.locals
            .try_reserve::<P>()
            .map_err(|_| TableError::NoMemory)?;
        self.locals
            .insert_reserved(local, Local { global: g, device })
            .map_err(|_| TableError::NoMemory)?;
        if let Some(f) = self.globals.get_mut(&g) {
            f.opens = f.opens.saturating_add(1);
        }
        Ok(())
    }

    /// CloseNativeFence: releases a local handle; the global object lives on (NF-13).
    pub fn close(&mut self, local: usize) -> Result<Local, TableError> {
        let l = self.locals.remove(&local).ok_or(TableError::Unknown)?;
        if let Some(f) = self.globals.get_mut(&l.global) {
            f.opens = f.opens.saturating_sub(1);
        }
        Ok(l)
    }

    /// DestroyNativeFence: only after every local handle was closed.
    pub fn destroy(&mut self, h: usize) -> Result<Fence, TableError> {
        let f = self.globals.get(&h).ok_or(TableError::Unknown)?;
        if f.opens != 0 {
            return Err(TableError::StillOpen);
        }
        self.globals.remove(&h).ok_or(TableError::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(tag: u64) -> Fence {
        Fence {
            tag,
            current_gpu: GpuVa::new(0x1000),
            monitored_gpu: GpuVa::new(0x2000),
            fence_type: 0,
            opens: 0,
        }
    }

    /// The seed's shared-fence walk-through: A creates and opens, B opens, A closes (the
    /// global lives on), B closes, then the global is destroyed.
    #[test]
    fn nf_13_global_and_local_handle_lifetimes() {
        let mut t = FenceTable::default();
        t.create::<crate::kmem::Host>(0x100, fence(1)).unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xA1, 0xD1).unwrap();
        t.open::<crate::kmem::Host>(0x100, 0xB1, 0xD2).unwrap();
        assert_eq!(t.get(0x100).map(|f| f.opens), Some(2));
        t.close(0xA1).unwrap();
        assert!(t.get(0x100).is_some(), "A's close leaves the global object");
        assert_eq!(
            t.destroy(0x100),
            Err(TableError::StillOpen),
            "B still has it open"
        );
        t.close(0xB1).unwrap();
        assert_eq!(t.destroy(0x100).map(|f| f.tag), Ok(1));
        assert!(t.is_empty());
    }

    #[test]
    fn nf_13_out_of_order_calls_are_refused() {
        let mut t = FenceTable::default();
        assert_eq!(
            t.open::<crate::kmem::Host>(0x100, 0xA1, 0),
            Err(TableError::Unknown),
            "open before create"
        );
        t.create::<crate::kmem::Host>(0x100, fence(1)).unwrap();
        assert_eq!(
            t.create::<crate::kmem::Host>(0x100, fence(2)),
            Err(TableError::Exists)
        );
        t.open::<crate::kmem::Host>(0x100, 0xA1, 0).unwrap();
        assert_eq!(
            t.open::<crate::kmem::Host>(0x100, 0xA1, 0),
            Err(TableError::Exists),
            "local handle reused"
        );
        assert_eq!(t.close(0xFF), Err(TableError::Unknown));
        t.close(0xA1).unwrap();
        assert_eq!(t.close(0xA1), Err(TableError::Unknown), "double close");
        t.destroy(0x100).unwrap();
        assert_eq!(t.destroy(0x100), Err(TableError::Unknown), "double destroy");
    }
}
