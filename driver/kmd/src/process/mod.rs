//! GPU processes and their address spaces (docs/memory.md "Address spaces"):
//! `DxgkDdiCreateProcess` / `DxgkDdiDestroyProcess`, `DxgkDdiGetRootPageTableSize` and
//! `DxgkDdiSetRootPageTable`.
//!
//! VidMm owns the page tables; the KMD only learns, per context, where the root table is
//! (`DxgkDdiSetRootPageTable`) and writes it into the descriptor of every hardware queue of
//! that context (`QueueDescriptor::page_table_base`, hardware.md §12.4). A process record tells
//! the paging code whether a mapping belongs to the system (paging) process, whose pages are
//! never reachable from user-mode queues.
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
}

/// Most processes one adapter keeps (bounds what an untrusted caller can grow).
pub const MAX_PROCESSES: usize = 4096;
