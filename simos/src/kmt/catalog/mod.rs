//! The thunk catalog: one row per D3DKMT thunk the UMD, the DLL or the harness calls, holding
//! what 24H2 does with it, as read in the decompiled 24H2 dxgkrnl ("K",
//! docs/windows-bringup.md §13):
//!
//! - **source**: the 24H2 functions it enters, with their addresses;
//! - **checks**: each refusal, in the order 24H2 makes them, with its status;
//! - **written back**: the fields of the caller's structure 24H2 writes on success;
//! - **pending**: whether 24H2 may answer STATUS_PENDING;
//! - **entry**: the simulated kernel's entry for it (`crate::kmt::…`), when it has one of its own;
//! - **gaps**: what the simulation still answers otherwise (empty: nothing known).
//!
//! A new row is a constant in the file of its area (devices, memory, queues, sync), named in
//! [`THUNKS`] in alphabetical order, and read before any caller uses the thunk (a unit test
//! fails on a row without a source); `tests/pe_umd_thunks.rs` fails when the DLL imports a
//! thunk without a row.

use rvgpu_ddi::ntstatus;

mod devices;
mod memory;
mod queues;
mod sync;

// The statuses the rows name, as the catalog's `u32` words; the values are ntstatus.h's
// (`rvgpu_ddi::ntstatus`).
const INVALID_PARAMETER: u32 = ntstatus::STATUS_INVALID_PARAMETER as u32;
const UNSUCCESSFUL: u32 = ntstatus::STATUS_UNSUCCESSFUL as u32;
const NOT_SUPPORTED: u32 = ntstatus::STATUS_NOT_SUPPORTED as u32;
const ACCESS_VIOLATION: u32 = ntstatus::STATUS_ACCESS_VIOLATION as u32;
const NO_MEMORY: u32 = ntstatus::STATUS_NO_MEMORY as u32;
const ACCESS_DENIED: u32 = ntstatus::STATUS_ACCESS_DENIED as u32;
const INVALID_HANDLE: u32 = ntstatus::STATUS_INVALID_HANDLE as u32;
const OBJECT_TYPE_MISMATCH: u32 = ntstatus::STATUS_OBJECT_TYPE_MISMATCH as u32;
const DEVICE_REMOVED: u32 = ntstatus::STATUS_DEVICE_REMOVED as u32;
const BUFFER_TOO_SMALL: u32 = ntstatus::STATUS_BUFFER_TOO_SMALL as u32;
const DATATYPE_MISALIGNMENT: u32 = ntstatus::STATUS_DATATYPE_MISALIGNMENT as u32;
const OBJECT_NAME_INVALID: u32 = ntstatus::STATUS_OBJECT_NAME_INVALID as u32;
const GPU_EXCEPTION_ON_DEVICE: u32 = ntstatus::STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE as u32;
const NOT_FOUND: u32 = ntstatus::STATUS_NOT_FOUND as u32;
/// 24H2's answer to a BDD_PNP escape on an adapter that is not the basic display driver's:
/// ntstatus.h names 0xC01E0002 `STATUS_GRAPHICS_INVALID_DISPLAY_ADAPTER`.
const GRAPHICS_INVALID_DISPLAY_ADAPTER: u32 =
    ntstatus::STATUS_GRAPHICS_INVALID_DISPLAY_ADAPTER as u32;

/// A function of the decompiled 24H2 kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// Its name, as the pseudocode names it.
    pub function: &'static str,
    /// Its address.
    pub address: u64,
}

/// One refusal: what the caller passed, and the status 24H2 answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// The condition, in the structure's field names.
    pub what: &'static str,
    /// The NTSTATUS.
    pub status: u32,
}

/// Whether 24H2 answers STATUS_PENDING.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    /// Never.
    No,
    /// When the reason holds.
    When(&'static str),
    /// Not read.
    Unknown,
}

/// One thunk.
#[derive(Clone, Copy, Debug)]
pub struct Thunk {
    /// The gdi32 export, `D3DKMT…`.
    pub name: &'static str,
    /// The 24H2 function it enters, with the one its checks continue in, if any.
    pub source: Option<&'static [Source]>,
    /// 24H2's refusals, in order (empty for an unread thunk).
    pub checks: &'static [Check],
    /// The fields 24H2 writes back on success.
    pub written_back: &'static [&'static str],
    /// STATUS_PENDING.
    pub pending: Pending,
    /// The simulated kernel's entry, `crate::kmt::…`, where it has one of its own.
    pub entry: Option<&'static str>,
    /// What the simulation still answers otherwise than 24H2 (empty: nothing known).
    pub gaps: &'static str,
}

const fn check(what: &'static str, status: u32) -> Check {
    Check { what, status }
}

const fn src(function: &'static str, address: u64) -> Source {
    Source { function, address }
}

/// Every thunk with a row, in alphabetical order.
pub const THUNKS: &[Thunk] = &[
    devices::CLOSE_ADAPTER,
    queues::CONNECT_DOORBELL,
    memory::CREATE_ALLOCATION2,
    queues::CREATE_CONTEXT_VIRTUAL,
    devices::CREATE_DEVICE,
    queues::CREATE_DOORBELL,
    queues::CREATE_HW_QUEUE,
    sync::CREATE_NATIVE_FENCE,
    memory::CREATE_PAGING_QUEUE,
    sync::CREATE_SYNCHRONIZATION_OBJECT2,
    memory::DESTROY_ALLOCATION2,
    queues::DESTROY_CONTEXT,
    devices::DESTROY_DEVICE,
    queues::DESTROY_DOORBELL,
    queues::DESTROY_HW_QUEUE,
    memory::DESTROY_PAGING_QUEUE,
    sync::DESTROY_SYNCHRONIZATION_OBJECT,
    devices::ENUM_ADAPTERS2,
    devices::ESCAPE,
    memory::EVICT,
    memory::FREE_GPU_VIRTUAL_ADDRESS,
    devices::GET_DEVICE_STATE,
    memory::INVALIDATE_CACHE,
    devices::IS_FEATURE_ENABLED,
    memory::LOCK2,
    memory::MAKE_RESIDENT,
    memory::MAP_GPU_VIRTUAL_ADDRESS,
    queues::NOTIFY_WORK_SUBMISSION,
    devices::OPEN_ADAPTER_FROM_LUID,
    sync::OPEN_NATIVE_FENCE_FROM_NT_HANDLE,
    devices::QUERY_ADAPTER_INFO,
    memory::RESERVE_GPU_VIRTUAL_ADDRESS,
    sync::SHARE_OBJECTS,
    sync::SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU,
    queues::SUBMIT_COMMAND,
    queues::SUBMIT_COMMAND_TO_HW_QUEUE,
    sync::SUBMIT_SIGNAL_SYNC_OBJECTS_TO_HW_QUEUE,
    sync::SUBMIT_WAIT_FOR_SYNC_OBJECTS_TO_HW_QUEUE,
    memory::UNLOCK2,
    memory::UPDATE_GPU_VIRTUAL_ADDRESS,
    sync::WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU,
];

/// The row of thunk `name`.
pub fn row(name: &str) -> Option<&'static Thunk> {
    THUNKS.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows are sorted and unique, and every row is read: it cites its 24H2 source and says
    /// whether 24H2 answers STATUS_PENDING (a thunk is read before the UMD, the DLL or the
    /// harness calls it).
    #[test]
    fn rows_are_sorted_unique_and_read() {
        for w in THUNKS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        for t in THUNKS {
            assert!(t.name.starts_with("D3DKMT"), "{}", t.name);
            assert!(t.source.is_some_and(|s| !s.is_empty()), "{}", t.name);
            assert!(t.pending != Pending::Unknown, "{}", t.name);
        }
    }
}
