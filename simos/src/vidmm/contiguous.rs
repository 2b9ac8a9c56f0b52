//! Contiguous memory: `DxgkCbAllocateContiguousMemory` and `DxgkCbFreeContiguousMemory` (VidMm
//! behind the Dxgkrnl callbacks), and the count tests check for leaks.

use std::sync::atomic::Ordering;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::ntstatus::*;

use crate::adapter::kernel;
use crate::base::bugcheck::{self, BugCheck};
use crate::base::lock::lock;
use crate::state::vidmm::Contiguous;

use crate::adapter::callback::enter;
use crate::adapter::irql::Routine;
use crate::adapter::AdapterShared;

/// `DxgkCbAllocateContiguousMemory` (PASSIVE): system memory from the machine's `Memory`,
/// recorded as the driver's; the tracking handle is the VA. As 24H2's
/// `K:DxgkAllocateContiguousMemoryCB` @0x14001ED70 and
/// `K:SysMmCreateContiguousMemoryPhysicalObject` @0x14001F82C: a `CacheType` above
/// `MmWriteCombined` (compared signed) is `STATUS_INVALID_PARAMETER` before anything else; the
/// size is rounded up to whole pages; no memory is `STATUS_NO_MEMORY` with both outputs NULL.
/// `entry` is the callback's address (bug-check parameters); `args` is `None` for a NULL block.
pub(crate) fn allocate_contiguous_memory(
    handle: HANDLE,
    args: Option<&mut DXGKARGCB_ALLOCATECONTIGUOUSMEMORY>,
    entry: usize,
) -> NTSTATUS {
    let Some(a) = enter(Routine::DxgkCbAllocateContiguousMemory, handle, entry) else {
        return STATUS_UNSUCCESSFUL;
    };
    let Some(args) = args else {
        return STATUS_INVALID_PARAMETER;
    };
    if args.CacheType > MmWriteCombined {
        return STATUS_INVALID_PARAMETER;
    }
    let none = |args: &mut DXGKARGCB_ALLOCATECONTIGUOUSMEMORY| {
        args.hMemoryHandle = std::ptr::null_mut();
        args.pMemory = std::ptr::null_mut();
        STATUS_NO_MEMORY
    };
    let Some(bytes) = (args.NumberOfBytes as u64).checked_next_multiple_of(rvgpu_hw::PAGE_SIZE)
    else {
        return none(args);
    };
    let Some(alloc) = a.device.memory().alloc_system(bytes, rvgpu_hw::PAGE_SIZE) else {
        return none(args);
    };
    let highest = args.HighestAcceptableAddress.get() as u64;
    if highest != 0 && alloc.bus_addr + alloc.len - 1 > highest {
        a.device
            .memory()
            .free_system(rvgpu_hw::addr::BusAddr::new(alloc.bus_addr));
        return none(args);
    }
    let va = alloc.cpu_ptr().as_ptr() as usize;
    kernel::register_dma(
        va,
        alloc.len as usize,
        rvgpu_hw::addr::BusAddr::new(alloc.bus_addr),
    );
    args.hMemoryHandle = va as HANDLE;
    args.pMemory = va as PVOID;
    lock(&a.mm.contiguous).insert(va, Contiguous { alloc });
    STATUS_SUCCESS
}

/// `DxgkCbFreeContiguousMemory` (PASSIVE): freeing a handle that is not a live allocation of
/// this adapter (never allocated, or already freed) is bug check 0xC4 subtype 0x10. `entry` and
/// `args` as for [`allocate_contiguous_memory`].
pub(crate) fn free_contiguous_memory(
    handle: HANDLE,
    args: Option<&DXGKARGCB_FREECONTIGUOUSMEMORY>,
    entry: usize,
) -> NTSTATUS {
    let Some(a) = enter(Routine::DxgkCbFreeContiguousMemory, handle, entry) else {
        return STATUS_UNSUCCESSFUL;
    };
    let Some(args) = args else {
        return STATUS_INVALID_PARAMETER;
    };
    let key = args.hMemoryHandle as usize;
    let Some(c) = lock(&a.mm.contiguous).remove(&key) else {
        a.state.raise_bugcheck(BugCheck::verifier(
            bugcheck::verifier::FREE_BAD_ADDRESS,
            key as u64,
            0,
            0,
        ));
        return STATUS_INVALID_PARAMETER;
    };
    kernel::unregister_dma(key);
    a.device
        .memory()
        .free_system(rvgpu_hw::addr::BusAddr::new(c.alloc.bus_addr));
    // Quarantine: the backing stays alive (a stale CPU pointer is still memory-safe) and
    // poisoned; Unload checks the poison.
    for w in c.alloc.words() {
        w.store(crate::state::vidmm::FREED_POISON, Ordering::Release);
    }
    lock(&a.mm.quarantine).push((key, c));
    STATUS_SUCCESS
}

/// Contiguous allocations the driver holds on the adapter now.
pub fn contiguous_allocations(a: &AdapterShared) -> usize {
    lock(&a.mm.contiguous).len()
}
