//! VidMm's initialisation from the driver's answers (VidMmiInit, `ADAPTER_RENDER::Initialize`
//! in the decompiled 23H2 dxgkrnl; docs/windows-bringup.md §9): the segments
//! (`DXGKQAITYPE_QUERYSEGMENT4`, BR-61/62/64) and, for a GPU-VA adapter, the GPU MMU caps
//! and one page-table level descriptor per level (`DXGKQAITYPE_GPUMMUCAPS`,
//! `DXGKQAITYPE_PAGETABLELEVELDESC`, BR-68). What it learns is the [`MemoryModel`] the rest of
//! VidMm builds address spaces from; each answer is checked by its rows in
//! `adapter::bringup::vidmm` before the next query, a broken rule a [`Violation`] with the
//! status Windows fails the start with.

use rvgpu_ddi::adapter::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::memory::*;
use rvgpu_ddi::NTSTATUS;

use crate::adapter::bringup::vidmm::{
    self as rows, Address, GpuMmu, Level, SegmentCount, Segments,
};
use crate::adapter::bringup::{first, Violation};
use crate::adapter::ddi::{self, At};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::state::vidmm::model::MemoryModel;

/// Runs VidMm's queries. `Ok(Err(v))`: the start fails with `v`.
pub(crate) fn query(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &DXGK_DRIVERCAPS,
) -> Result<Result<MemoryModel, Violation>, SimError> {
    // BR-60 ([D] `VidMmiInit`): without IOMMU remapping (the simulated machine has none),
    // VidMm is not created when the driver cannot address the machine's highest physical page
    // (SYSTEM_BASIC_INFORMATION.HighestPhysicalPageNumber << 12); ADAPTER_RENDER::Initialize
    // reports the missing VidMm as STATUS_NO_MEMORY. Checked before any segment query.
    let address = Address {
        acceptable: caps.HighestAcceptableAddress.get() as u64,
        highest_page: (rvgpu_hw::addr::SYSMEM_LIMIT - 1) >> 12 << 12,
    };
    if let Some(v) = first(rows::ADDRESS_RULES, &address) {
        return Ok(Err(v));
    }
    let Some(q) = ddi::in_table!(t, DxgkDdiQueryAdapterInfo) else {
        return Ok(Ok(MemoryModel::default()));
    };
    let call = |ty: DXGK_QUERYADAPTERINFOTYPE, input: Buf<'_>, out: Buf<'_>| {
        let args = DXGKARG_QUERYADAPTERINFO {
            Type: ty,
            pInputData: input.0,
            InputDataSize: input.1,
            pOutputData: out.0,
            OutputDataSize: out.1,
            Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
            hKmdProcessHandle: std::ptr::null_mut(),
        };
        ddi::query_adapter_info_args(a, q, At::Caller, &args)
    };
    // BR-61: the counting call (NbSegment 0), then the filling call with an array at the
    // stride of the descriptor this OS knows (VidMmiQuerySegmentInfo4). Either failing fails
    // VidMm, which ADAPTER_RENDER::Initialize reports as STATUS_NO_MEMORY.
    let mut index = 0u32.to_le_bytes();
    let mut out = DXGK_QUERYSEGMENTOUT4::default();
    let st = call(
        DXGKQAITYPE_QUERYSEGMENT4,
        as_bytes(&mut index),
        as_bytes(&mut out),
    )?;
    let count = SegmentCount {
        answer: if st < 0 { Err(st) } else { Ok(out.NbSegment) },
        zero_accepted: a.os.windows.zero_segments_accepted(),
    };
    if let Some(v) = first(rows::COUNT_RULES, &count) {
        return Ok(Err(v));
    }
    let n = out.NbSegment;
    let stride = std::mem::size_of::<DXGK_SEGMENTDESCRIPTOR4>();
    let mut array = vec![0u8; stride * n as usize];
    let mut out = DXGK_QUERYSEGMENTOUT4 {
        NbSegment: n,
        pSegmentDescriptor: array.as_mut_ptr(),
        SegmentDescriptorStride: stride,
        ..Default::default()
    };
    let mut fill = Ok(());
    if n > 0 {
        let st = call(
            DXGKQAITYPE_QUERYSEGMENT4,
            as_bytes(&mut index),
            as_bytes(&mut out),
        )?;
        if st < 0 {
            fill = Err(st);
        }
    }
    let segments: Vec<DXGK_SEGMENTDESCRIPTOR4> = array
        .chunks_exact(stride)
        .filter_map(ddi::read_plain::<DXGK_SEGMENTDESCRIPTOR4>)
        .collect();
    let answer = Segments {
        version: t.Version,
        fill,
        segments,
        paging_buffer_segment: out.PagingBufferSegmentId,
    };
    if let Some(v) = first(rows::SEGMENT_RULES, &answer) {
        return Ok(Err(v));
    }
    let mut model = MemoryModel {
        segments: answer.segments,
        paging_buffer_segment: out.PagingBufferSegmentId,
        paging_buffer_size: out.PagingBufferSize,
        gpummu: None,
    };
    let mm = caps.MemoryManagementCaps.Anonymous;
    let gpu_va = mm.is_set(DXGK_VIDMMCAPS_0::VirtualAddressingSupported)
        && (mm.is_set(DXGK_VIDMMCAPS_0::GpuMmuSupported)
            || mm.is_set(DXGK_VIDMMCAPS_0::IoMmuSupported));
    if !gpu_va || !mm.is_set(DXGK_VIDMMCAPS_0::GpuMmuSupported) {
        return Ok(Ok(model));
    }
    model.gpummu = match query_gpummu(&call)? {
        Ok(m) => Some(m),
        Err(v) => return Ok(Err(v)),
    };
    Ok(Ok(model))
}

/// The driver's answer to a `DxgkDdiQueryAdapterInfo` of a type, input and output.
type Query<'a> =
    dyn Fn(DXGK_QUERYADAPTERINFOTYPE, Buf<'_>, Buf<'_>) -> Result<NTSTATUS, SimError> + 'a;

/// BR-68: the GpuMmu's caps and one page-table level description per level, through `call`.
#[allow(clippy::type_complexity)]
fn query_gpummu(
    call: &Query<'_>,
) -> Result<Result<(DXGK_GPUMMUCAPS, Vec<DXGK_PAGE_TABLE_LEVEL_DESC>), Violation>, SimError> {
    // BR-68: GPUMMUCAPS per physical adapter must succeed, with 2..=6 levels; then one
    // PAGETABLELEVELDESC per level (input: level | adapter << 16) must succeed with a
    // power-of-two alignment (ADAPTER_RENDER::Initialize).
    let mut index = 0u32.to_le_bytes();
    let mut mmu = DXGK_GPUMMUCAPS::default();
    let st = call(
        DXGKQAITYPE_GPUMMUCAPS,
        as_bytes(&mut index),
        as_bytes(&mut mmu),
    )?;
    if let Some(v) = first(
        rows::GPUMMU_RULES,
        &GpuMmu(if st < 0 { Err(st) } else { Ok(mmu) }),
    ) {
        return Ok(Err(v));
    }
    let mut levels = Vec::new();
    for level in 0..mmu.PageTableLevelCount {
        let mut input = DXGK_QUERYPAGETABLELEVELDESCIN {
            LevelIndex: level as u16,
            PhysicalAdapterIndex: 0,
        };
        let mut d = DXGK_PAGE_TABLE_LEVEL_DESC::default();
        let st = call(
            DXGKQAITYPE_PAGETABLELEVELDESC,
            as_bytes(&mut input),
            as_bytes(&mut d),
        )?;
        let answer = Level {
            level,
            answer: if st < 0 { Err(st) } else { Ok(d) },
        };
        if let Some(v) = first(rows::LEVEL_RULES, &answer) {
            return Ok(Err(v));
        }
        levels.push(d);
    }
    Ok(Ok((mmu, levels)))
}

/// A block the OS lends the driver in a `DXGKARG_QUERYADAPTERINFO`: its address and size,
/// borrowed for the call (the driver may write any bytes: the block is [`ddi::Plain`]).
struct Buf<'a>(
    *mut std::ffi::c_void,
    u32,
    std::marker::PhantomData<&'a mut ()>,
);

fn as_bytes<T: ddi::Plain>(v: &mut T) -> Buf<'_> {
    let size = std::mem::size_of::<T>() as u32;
    Buf((v as *mut T).cast(), size, std::marker::PhantomData)
}
