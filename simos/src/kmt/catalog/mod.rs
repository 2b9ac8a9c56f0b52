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
//! A row is a constant beside its kernel entry (`crate::kmt::<entry>`), named in [`THUNKS`] in
//! alphabetical order, and read before any caller uses the thunk (a unit test fails on a row
//! without a source); `tests/pe_umd_thunks.rs` fails when the DLL imports a thunk without a
//! row. A row's checks are declared once with `refusals!`: the entry refuses through the
//! check itself, so it cannot answer a refusal its row does not list, and a check it never
//! makes is a dead-code error unless the row says where else it is made or why it is not.

pub use super::refusal::{Check, Pending, Source, Thunk};

/// Every thunk with a row, in alphabetical order.
pub const THUNKS: &[Thunk] = &[
    super::adapter::CLOSE_ADAPTER,
    super::doorbell::CONNECT_DOORBELL,
    super::allocation::CREATE_ALLOCATION2,
    super::context_virtual::CREATE_CONTEXT_VIRTUAL,
    super::device::CREATE_DEVICE,
    super::doorbell::CREATE_DOORBELL,
    super::hw_queue::CREATE_HW_QUEUE,
    super::native_fence::CREATE_NATIVE_FENCE,
    super::paging_queue::CREATE_PAGING_QUEUE,
    super::sync_object::CREATE_SYNCHRONIZATION_OBJECT2,
    super::allocation::DESTROY_ALLOCATION2,
    super::context_virtual::DESTROY_CONTEXT,
    super::device::DESTROY_DEVICE,
    super::doorbell::DESTROY_DOORBELL,
    super::hw_queue::DESTROY_HW_QUEUE,
    super::paging_queue::DESTROY_PAGING_QUEUE,
    super::destroy_sync::DESTROY_SYNCHRONIZATION_OBJECT,
    super::adapter::ENUM_ADAPTERS2,
    super::escape::ESCAPE,
    super::evict::EVICT,
    super::gpu_va::FREE_GPU_VIRTUAL_ADDRESS,
    super::device_state::GET_DEVICE_STATE,
    super::invalidate_cache::INVALIDATE_CACHE,
    super::feature::IS_FEATURE_ENABLED,
    super::lock::LOCK2,
    super::paging_queue::MAKE_RESIDENT,
    super::gpu_va::MAP_GPU_VIRTUAL_ADDRESS,
    super::doorbell::NOTIFY_WORK_SUBMISSION,
    super::adapter::OPEN_ADAPTER_FROM_LUID,
    super::native_fence::OPEN_NATIVE_FENCE_FROM_NT_HANDLE,
    super::query_adapter_info::QUERY_ADAPTER_INFO,
    super::gpu_va::RESERVE_GPU_VIRTUAL_ADDRESS,
    super::share::SHARE_OBJECTS,
    super::sync_from_cpu::SIGNAL_SYNCHRONIZATION_OBJECT_FROM_CPU,
    super::submit_command::SUBMIT_COMMAND,
    super::hw_queue::SUBMIT_COMMAND_TO_HW_QUEUE,
    super::hw_queue_sync::SUBMIT_SIGNAL_SYNC_OBJECTS_TO_HW_QUEUE,
    super::hw_queue_sync::SUBMIT_WAIT_FOR_SYNC_OBJECTS_TO_HW_QUEUE,
    super::lock::UNLOCK2,
    super::gpu_va::UPDATE_GPU_VIRTUAL_ADDRESS,
    super::sync_from_cpu::WAIT_FOR_SYNCHRONIZATION_OBJECT_FROM_CPU,
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
