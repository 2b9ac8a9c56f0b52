//! The D3DKMT argument blocks the thunks decode (x64). Padding is explicit, so each is plain
//! bytes both ways; the layouts the DLL's side asserts are asserted again here.

use std::mem::{offset_of, size_of};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A structure whose first member is the one handle it carries (`D3DKMT_CLOSEADAPTER`,
/// `D3DKMT_DESTROYDEVICE`, `D3DKMT_DESTROYCONTEXT`, `D3DKMT_DESTROYHWQUEUE`,
/// `D3DDDI_DESTROYPAGINGQUEUE`, `D3DKMT_DESTROYSYNCHRONIZATIONOBJECT`,
/// `D3DKMT_DESTROY_DOORBELL`).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub(super) struct OneHandle {
    pub(super) handle: u32,
}

/// `D3DKMT_CREATEHWQUEUE`.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub(super) struct CreateHwQueue {
    pub(super) h_hw_context: u32,
    pub(super) flags: u32,
    pub(super) private_driver_data_size: u32,
    pub(super) _pad: u32,
    pub(super) p_private_driver_data: u64,
    pub(super) h_hw_queue: u32,
    pub(super) h_progress_fence: u32,
    pub(super) progress_fence_cpu_va: u64,
    pub(super) progress_fence_gpu_va: u64,
}

/// `D3DKMT_SUBMITCOMMANDTOHWQUEUE`.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub(super) struct SubmitCommandToHwQueue {
    pub(super) h_hw_queue: u32,
    pub(super) _pad0: u32,
    pub(super) progress_fence_id: u64,
    pub(super) command_buffer: u64,
    pub(super) command_length: u32,
    pub(super) private_driver_data_size: u32,
    pub(super) p_private_driver_data: u64,
    pub(super) num_primaries: u32,
    pub(super) _pad1: u32,
    pub(super) written_primaries: u64,
}

/// `D3DKMT_CREATE_DOORBELL` (released layout, as `kmt_windows::D3dkmtCreateDoorbell`).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub(super) struct CreateDoorbell {
    pub(super) h_hw_queue: u32,
    pub(super) h_ring_buffer: u32,
    pub(super) h_ring_buffer_control: u32,
    pub(super) flags: u32,
    pub(super) private_driver_data_size: u32,
    pub(super) _pad0: u32,
    pub(super) private_driver_data: u64,
    pub(super) doorbell_cpu_va: u64,
    pub(super) doorbell_secondary_cpu_va: u64,
    pub(super) doorbell_status_cpu_va: u64,
    pub(super) last_queued_value_cpu_va: u64,
    pub(super) h_doorbell: u32,
    pub(super) _pad1: u32,
}

// The layouts the DLL's side asserts (umd/src/kmt_windows/layout.rs; windows-sys for the others).
const _: () = {
    assert!(size_of::<CreateHwQueue>() == 48);
    assert!(offset_of!(CreateHwQueue, p_private_driver_data) == 16);
    assert!(offset_of!(CreateHwQueue, progress_fence_gpu_va) == 40);
    assert!(size_of::<SubmitCommandToHwQueue>() == 56);
    assert!(offset_of!(SubmitCommandToHwQueue, written_primaries) == 48);
    assert!(size_of::<CreateDoorbell>() == 72);
    assert!(offset_of!(CreateDoorbell, private_driver_data) == 24);
    assert!(offset_of!(CreateDoorbell, doorbell_status_cpu_va) == 48);
    assert!(offset_of!(CreateDoorbell, last_queued_value_cpu_va) == 56);
    assert!(offset_of!(CreateDoorbell, h_doorbell) == 64);
};
