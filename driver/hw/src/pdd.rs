//! Private driver data: the layouts the KMD and UMD exchange through Dxgkrnl's opaque
//! private-data buffers. Not hardware, but here because both sides depend on this crate and
//! nothing else.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Marks rvgpu private data, so a buffer from another driver (or garbage) is recognised.
pub const PDD_MAGIC: u32 = 0x5244_4450; // "PDDR"
/// Version of [`NativeFencePdd`].
pub const NATIVE_FENCE_PDD_VERSION: u32 = 1;

/// What `DxgkDdiCreateNativeFence` returns to the UMD in `pPrivateDriverData` (64 bytes):
/// how to signal the fence on this adapter's GPU.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct NativeFencePdd {
    /// [`PDD_MAGIC`].
    pub magic: u32,
    /// [`NATIVE_FENCE_PDD_VERSION`].
    pub version: u32,
    /// The tag FENCE_SIGNAL commands carry so the device can report the fence (NF-14).
    pub report_tag: u64,
    /// GPU address of CurrentValue (what FENCE_SIGNAL and FENCE_WAIT address).
    pub current_value_gpu: u64,
    /// GPU address of MonitoredValue (the conditional interrupt's comparand, NF-03).
    pub monitored_value_gpu: u64,
    pub reserved: [u64; 4],
}

const _: () = assert!(core::mem::size_of::<NativeFencePdd>() == 64);
