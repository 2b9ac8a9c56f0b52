//! Layout facts checked against Microsoft's 10.0.22621 headers (docs/windows.md, "Layouts
//! checked against Microsoft's headers") that an earlier rvgpu-ddi got wrong, asserted here on
//! every host so a regression fails without a WDK:
//!
//! * `DXGK_NODEMETADATA` is packed: 74 bytes, `Flags` at 68, `GpuMmuSupported` at 72,
//!   `IoMmuSupported` at 73. Dxgkrnl keeps the per-node answers in an array with a 74-byte
//!   stride; writing one node's answer must not touch the next entry.
//! * `DXGK_GPUCLOCKDATA` (`DXGKARG_CALIBRATEGPUCLOCK`) has a fourth member `Flags` at 24 and is
//!   28 bytes (packed).
//! * `DXGK_MIRACAST_CHUNK_INFO::ChunkId` is 64-bit at 8 (24 bytes), which moves the rest of the
//!   Miracast arm of `DXGKARGCB_NOTIFY_INTERRUPT_DATA`.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use core::mem::{align_of, offset_of, size_of};

use rvgpu_ddi::adapter::{DXGKARG_CALIBRATEGPUCLOCK, DXGK_GPUCLOCKDATA, DXGK_GPUCLOCKDATA_FLAGS};
use rvgpu_ddi::interrupt::{
    DXGKARGCB_NOTIFY_INTERRUPT_DATA_MiracastEncodeChunkCompleted, DXGK_MIRACAST_CHUNK_INFO,
};
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS};

const STRIDE: usize = 74;
const GUARD: u8 = 0xA5;

#[test]
fn node_metadata_is_74_bytes_packed() {
    assert_eq!(size_of::<DXGK_NODEMETADATA>(), 74);
    assert_eq!(align_of::<DXGK_NODEMETADATA>(), 1);
    assert_eq!(offset_of!(DXGK_NODEMETADATA, Flags), 68);
    assert_eq!(offset_of!(DXGK_NODEMETADATA, GpuMmuSupported), 72);
    assert_eq!(offset_of!(DXGK_NODEMETADATA, IoMmuSupported), 73);
}

/// Writes one answer per node into a 74-byte-stride array the way the KMD stores its answer
/// (`*out = md` through the OS's pointer) and checks that each lands in its own 74 bytes, with
/// the flag word at 68 and the two BOOLEANs at 72/73, and that the guard bytes after the array
/// are untouched.
#[test]
fn node_answers_stay_inside_a_74_byte_stride_array() {
    const NODES: usize = 3;
    let mut buf = vec![GUARD; NODES * STRIDE + 16];
    for node in 0..NODES {
        let md = DXGK_NODEMETADATA {
            EngineType: 1,
            Flags: DXGK_NODEMETADATA_FLAGS::default()
                .with(DXGK_NODEMETADATA_FLAGS::UserModeSubmission, 1),
            GpuMmuSupported: 1,
            IoMmuSupported: u8::try_from(node).expect("small"),
            ..Default::default()
        };
        let slot = buf[node * STRIDE..]
            .as_mut_ptr()
            .cast::<DXGK_NODEMETADATA>();
        // SAFETY: `slot` points at STRIDE (= size_of) writable bytes inside `buf`; the type's
        // alignment is 1.
        unsafe { slot.write(md) };
    }
    for node in 0..NODES {
        let entry = &buf[node * STRIDE..(node + 1) * STRIDE];
        let flags = u32::from_le_bytes(entry[68..72].try_into().expect("4 bytes"));
        assert!(
            DXGK_NODEMETADATA_FLAGS::from_value(flags)
                .is_set(DXGK_NODEMETADATA_FLAGS::UserModeSubmission),
            "node {node}: flags word at 68"
        );
        assert_eq!(entry[72], 1, "node {node}: GpuMmuSupported at 72");
        assert_eq!(
            usize::from(entry[73]),
            node,
            "node {node}: IoMmuSupported at 73"
        );
    }
    assert!(
        buf[NODES * STRIDE..].iter().all(|b| *b == GUARD),
        "bytes past the last 74-byte entry were written"
    );
}

#[test]
fn gpu_clock_data_has_flags_and_is_28_bytes() {
    assert_eq!(size_of::<DXGKARG_CALIBRATEGPUCLOCK>(), 28);
    assert_eq!(size_of::<DXGK_GPUCLOCKDATA>(), 28);
    assert_eq!(align_of::<DXGK_GPUCLOCKDATA>(), 1);
    assert_eq!(offset_of!(DXGK_GPUCLOCKDATA, CpuClockCounter), 16);
    assert_eq!(offset_of!(DXGK_GPUCLOCKDATA, Flags), 24);
    let flags = DXGK_GPUCLOCKDATA_FLAGS::default()
        .with(DXGK_GPUCLOCKDATA_FLAGS::ContextManagementProcessor, 1);
    assert_eq!(flags.Value, 1);
}

#[test]
fn miracast_chunk_id_is_64_bit() {
    assert_eq!(size_of::<DXGK_MIRACAST_CHUNK_INFO>(), 24);
    assert_eq!(offset_of!(DXGK_MIRACAST_CHUNK_INFO, ChunkId), 8);
    assert_eq!(offset_of!(DXGK_MIRACAST_CHUNK_INFO, EncodeRate), 20);
    type Arm = DXGKARGCB_NOTIFY_INTERRUPT_DATA_MiracastEncodeChunkCompleted;
    assert_eq!(offset_of!(Arm, ChunkInfo), 8);
    assert_eq!(offset_of!(Arm, pPrivateDriverData), 32);
    assert_eq!(offset_of!(Arm, Status), 44);
    assert_eq!(size_of::<Arm>(), 48);
}
