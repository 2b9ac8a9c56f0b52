//! DMA buffers the simulation writes for a process (`Machine::submit_legacy`, a command list
//! instead of a UMD's command buffer) in that process's address space.
//!
//! On a GpuMmu adapter VidSch submits a process's DMA buffer with
//! `DxgkDdiSubmitCommandVirtual`: `DmaBufferVirtualAddress` is a GPU VA of that process, and
//! the buffer runs with that process's reach (the KMD runs it through INDIRECT_VM with the
//! context's root, hardware.md 12.4). `D3DKMTSubmitCommand` names the UMD's own buffer
//! (`crate::vidsch::legacy`); a command list has none, so it is written here, as a UMD would
//! write its command buffer: each process gets one arena of system memory, mapped once
//! (read-only for the GPU) when it first submits, carved per buffer and returned page by page
//! as fence IDs retire. The arena is unmapped and freed with the process.

use std::collections::BTreeMap;

use rvgpu_device::SysAlloc;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::state::vidmm::gpuva::MapAttrs;
pub(crate) use crate::state::vidmm::mmu::{Arena, ARENA_PAGES};
use crate::vidmm::host::Host;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// A DMA buffer carved from an arena: where the CPU writes it and where the process's GPU
/// reads it.
#[derive(Clone, Copy, Debug)]
pub struct Carved {
    pub bus_addr: u64,
    pub va: u64,
}

/// A buffer of `bytes` in `pid`'s arena on `a` (made and mapped on first use). `Ok(None)`
/// when the process has no GpuMmu address space there (kernel-mode buffers then stay in
/// the system space) or the arena is full for now (the caller waits for retirements).
pub(crate) fn dma_carve(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    bytes: u64,
) -> Result<Option<Carved>, SimError> {
    let pages = bytes.div_ceil(PAGE).max(1);
    if pages > ARENA_PAGES {
        return Err(SimError::Simulation(format!(
            "a DMA buffer of {bytes} bytes is larger than the arena"
        )));
    }
    let has = {
        let v = lock(&a.mm.vidmm);
        match v.processes.get(&pid) {
            None => return Ok(None),
            Some(p) => p.arena.is_some(),
        }
    };
    if !has {
        dma_arena_create(host, a, pid)?;
    }
    let mut v = lock(&a.mm.vidmm);
    let Some(arena) = v.processes.get_mut(&pid).and_then(|p| p.arena.as_mut()) else {
        return Ok(None);
    };
    Ok(arena.carve(pages).map(|first| Carved {
        bus_addr: arena.backing.bus_addr + first * PAGE,
        va: arena.va + first * PAGE,
    }))
}

fn dma_arena_create(host: &dyn Host, a: &AdapterShared, pid: ProcessId) -> Result<(), SimError> {
    let backing = a
        .device
        .memory()
        .alloc_system(ARENA_PAGES * PAGE, PAGE)
        .ok_or(SimError::DdiFailed(rvgpu_ddi::ntstatus::STATUS_NO_MEMORY))?;
    let phys: Vec<_> = (0..ARENA_PAGES)
        .map(|i| (0u32, backing.bus_addr + i * PAGE))
        .collect();
    // Read-only for the GPU: the process's commands read their buffers, never write them.
    let attrs = MapAttrs {
        read_only: true,
        no_execute: false,
    };
    let va = match crate::vidmm::mmu::vidmm_map(host, a, pid, &phys, attrs, Default::default()) {
        Ok(va) => va,
        Err(e) => {
            a.device
                .memory()
                .free_system(rvgpu_hw::addr::BusAddr::new(backing.bus_addr));
            return Err(e);
        }
    };
    let lost = {
        let mut v = lock(&a.mm.vidmm);
        match v.processes.get_mut(&pid) {
            Some(p) if p.arena.is_none() => {
                p.arena = Some(Arena {
                    backing,
                    va,
                    carved: BTreeMap::new(),
                });
                None
            }
            // Another thread of the process made one meanwhile (or the process went):
            // this one goes back.
            _ => Some(backing),
        }
    };
    if let Some(backing) = lost {
        let r = crate::vidmm::mmu::vidmm_unmap(host, a, pid, va, ARENA_PAGES, Default::default());
        a.device
            .memory()
            .free_system(rvgpu_hw::addr::BusAddr::new(backing.bus_addr));
        r?;
    }
    Ok(())
}

/// Returns the buffer at `bus` to its arena; false if no arena of `a` holds it (a buffer of
/// the system space, freed by the caller).
pub(crate) fn dma_release(a: &AdapterShared, bus: u64) -> bool {
    let mut v = lock(&a.mm.vidmm);
    for p in v.processes.values_mut() {
        if let Some(arena) = p.arena.as_mut().filter(|ar| ar.contains(bus)) {
            let first = (bus - arena.backing.bus_addr) / PAGE;
            arena.carved.remove(&first);
            return true;
        }
    }
    false
}

/// The arena of a process being destroyed: its VA and backing, for unmapping and freeing.
pub(crate) fn dma_arena_take(a: &AdapterShared, pid: ProcessId) -> Option<(u64, SysAlloc)> {
    let mut v = lock(&a.mm.vidmm);
    let arena = v.processes.get_mut(&pid)?.arena.take()?;
    Some((arena.va, arena.backing))
}
