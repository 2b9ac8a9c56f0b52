//! GPU processes and their address spaces (docs/memory.md "Address spaces"):
//! `DxgkDdiCreateProcess` / `DxgkDdiDestroyProcess`, `DxgkDdiGetRootPageTableSize` and
//! `DxgkDdiSetRootPageTable`.
//!
//! VidMm owns the page tables; the KMD only learns where a process's root table is and writes
//! it into the descriptor of every hardware queue of the process's contexts
//! (`QueueDescriptor::page_table_base`, hardware.md §12.4). It learns it two ways: per process,
//! from the root-level `UPDATEPAGETABLE` VidMm builds before any of the process's memory is
//! mapped (`hProcess`, `PageTableAddress`: [`ddi::learn_root`]); per context, from
//! `DxgkDdiSetRootPageTable`, which 24H2 sends only at a context's first kernel-mode submission
//! or resume (M `VidSchiEnsureRootPageTableUpdated` @0x1400EAF40) and which wins over the
//! learnt one. A process record tells the paging code whether a mapping belongs to the system
//! (paging) process, whose pages are never reachable from user-mode queues.
//!
//! This module is the state (what a process record is); [`ddi`] holds the DDIs.

pub mod ddi;

/// A GPU process (one per process that opened the adapter, plus the system process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process {
    /// Dxgkrnl's handle of the process.
    pub os_handle: usize,
    /// VidMm's paging process / the system process: its mappings are kernel-only.
    pub system: bool,
    /// The device's process id (`QueueDescriptor::process_id`): unique among the adapter's
    /// live processes, never 0 (queues of no process) or `NO_QUEUE`. In global doorbell mode
    /// the process's doorbell page is bound to it, so only its queues ring through that page
    /// (hardware.md 5.5).
    pub id: u32,
    /// Device physical address of the root table learnt from VidMm's root-level update of
    /// this process ([`ddi::learn_root`]); 0 until then. Its contexts without a root of their
    /// own (`DxgkDdiSetRootPageTable`) run under it.
    pub root: u64,
}

/// Most processes one adapter keeps (bounds what an untrusted caller can grow).
pub const MAX_PROCESSES: usize = 4096;
