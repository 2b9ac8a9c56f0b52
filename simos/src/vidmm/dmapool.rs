//! VidMm's DMA pools (BR-65, BR-67): where the OS's own DMA buffers come from.
//!
//! - The paging pool (\[D\] `VIDMM_GLOBAL::InitDmaPools`, run by `VidMmInitializePagingProcess`
//!   after the system devices): per physical adapter, two buffers of the driver's
//!   `PagingBufferSize` in segment `PagingBufferSegmentId` (0: contiguous system memory).
//!   Every paging buffer handed to `DxgkDdiBuildPagingBuffer` is one of them, so `DmaSize` is
//!   the driver's own size (`paging_buffer_bytes`).
//! - A privileged pool per context that needs one (\[D\] `DXGCONTEXT::Initialize` →
//!   `EnsurePriviledgedDmaPool`): contexts that do not run in GPU VA, and the contexts of
//!   the session's CDD device. Its buffers come from the context's `DmaBufferSegmentSet`.
//!
//! Both pools check their segment set the same way (\[D\] `VIDMM_DMA_POOL::Init` →
//! `VIDMM_GLOBAL::VerifySegmentSet` with attribute 1): every segment named must exist and be
//! an aperture segment (`DXGK_SEGMENTFLAGS.Aperture`), else `STATUS_INVALID_PARAMETER`. That is
//! the rule the helios notes record as "a CPU-visible BAR memory segment first failed, an
//! aperture segment first passed".

use rvgpu_ddi::memory::DXGK_SEGMENTFLAGS;
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_ddi::submission::DXGK_CONTEXTINFO;

use crate::adapter::bringup::paging::PagingPool;
use crate::adapter::AdapterShared;
use crate::base::bugcheck::{BugCheck, VIDEO_MEMORY_MANAGEMENT_INTERNAL};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::state::vidmm::model::MemoryModel;

/// The first argument helios saw when a GPU-VA context's privileged pool had no segment
/// (`docs/archive/INITDMAPOOLS_HANDOVER.md`).
pub const VIDMM_INTERNAL_NULL_POOL_ALLOCATION: u64 = 0x49;

/// `VIDMM_GLOBAL::VerifySegmentSet(set, attribute = Aperture)`: `Err` names what is wrong.
pub fn verify_segment_set(model: &MemoryModel, set: u32) -> Result<(), String> {
    let n = model.segments.len();
    let valid = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
    if set & !valid != 0 {
        return Err(format!(
            "segment set {set:#x} names segments the driver did not report ({n} reported)"
        ));
    }
    for (i, s) in model.segments.iter().enumerate() {
        if set & (1 << i) != 0 && !s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture) {
            return Err(format!(
                "segment {} in set {set:#x} is not an aperture segment",
                i + 1
            ));
        }
    }
    Ok(())
}

/// BR-65(b)'s facts (`bringup::paging`): the paging pool, created when the paging process is
/// initialised (after the system devices, before the paging fences and VA space).
pub(crate) fn paging_pool(a: &AdapterShared) -> PagingPool {
    let model = lock(&a.mm.memory_model).clone();
    let segment = model.paging_buffer_segment;
    PagingPool {
        segment,
        segment_set: (segment != 0)
            .then(|| verify_segment_set(&model, 1 << (segment - 1).min(31)).err())
            .flatten(),
        size: model.paging_buffer_size,
    }
}

/// The size of every paging buffer VidMm hands to `DxgkDdiBuildPagingBuffer`: the driver's
/// `PagingBufferSize` (the paging pool's buffer size).
pub(crate) fn paging_buffer_bytes(a: &AdapterShared) -> u32 {
    lock(&a.mm.memory_model).paging_buffer_size
}

/// BR-65(c) and BR-67: the privileged DMA pool of a context that gets one, from what the
/// driver's `DxgkDdiCreateContext` returned in `info`. `uses_gpu_va` is DXGCONTEXT's
/// `m_bUseGpuVa` (the node supports GPU VA).
///
/// - A segment set that is not all aperture segments: the context fails with
///   `STATUS_INVALID_PARAMETER` (`VIDMM_DMA_POOL::Init`).
/// - A GPU-VA context with no segment set: the pool takes contiguous memory, which has no
///   VidMm allocation, then maps that missing allocation into the context's VA space
///   (\[D\] `VIDMM_DMA_POOL::AddDmaBufferToPool`): Windows bug-checks (helios saw 0x10E, 0x49).
pub fn privileged_pool(
    model: &MemoryModel,
    uses_gpu_va: bool,
    info: &DXGK_CONTEXTINFO,
) -> Result<(), SimError> {
    let set = info.DmaBufferSegmentSet;
    if set == 0 {
        if uses_gpu_va {
            return Err(SimError::Bugcheck(BugCheck::new(
                VIDEO_MEMORY_MANAGEMENT_INTERNAL,
                [VIDMM_INTERNAL_NULL_POOL_ALLOCATION, 0, 0, 0],
            )));
        }
        return Ok(());
    }
    verify_segment_set(model, set).map_err(|_| SimError::DdiFailed(STATUS_INVALID_PARAMETER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_ddi::memory::DXGK_SEGMENTDESCRIPTOR4;

    fn model() -> MemoryModel {
        let aperture = DXGK_SEGMENTDESCRIPTOR4 {
            Flags: DXGK_SEGMENTFLAGS::default().with(DXGK_SEGMENTFLAGS::Aperture, 1),
            ..Default::default()
        };
        let vram = DXGK_SEGMENTDESCRIPTOR4 {
            Flags: DXGK_SEGMENTFLAGS::default().with(DXGK_SEGMENTFLAGS::CpuVisible, 1),
            ..Default::default()
        };
        MemoryModel {
            segments: vec![aperture, vram],
            paging_buffer_segment: 0,
            paging_buffer_size: 4096,
            gpummu: None,
        }
    }

    fn info(set: u32) -> DXGK_CONTEXTINFO {
        DXGK_CONTEXTINFO {
            DmaBufferSegmentSet: set,
            ..Default::default()
        }
    }

    #[test]
    fn br_65_segment_sets_hold_only_reported_aperture_segments() {
        let m = model();
        assert_eq!(verify_segment_set(&m, 0), Ok(()));
        assert_eq!(verify_segment_set(&m, 0b01), Ok(()));
        assert!(verify_segment_set(&m, 0b10).is_err(), "VRAM is no aperture");
        assert!(
            verify_segment_set(&m, 0b100).is_err(),
            "segment 3 was not reported"
        );
    }

    #[test]
    fn br_67_gpu_va_context_without_a_dma_segment_bug_checks() {
        let m = model();
        match privileged_pool(&m, true, &info(0)) {
            Err(SimError::Bugcheck(b)) => {
                assert_eq!(b.code, VIDEO_MEMORY_MANAGEMENT_INTERNAL);
                assert_eq!(b.params[0], VIDMM_INTERNAL_NULL_POOL_ALLOCATION);
            }
            other => panic!("expected a bug check, got {other:?}"),
        }
        // Without GPU VA the pool is contiguous memory, as Windows allows.
        assert_eq!(privileged_pool(&m, false, &info(0)), Ok(()));
        assert_eq!(privileged_pool(&m, true, &info(0b01)), Ok(()));
        assert_eq!(
            privileged_pool(&m, false, &info(0b10)),
            Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER))
        );
    }
}
