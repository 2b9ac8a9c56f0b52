//! VidMm's initialisation from the driver's answers (VidMmiInit, `ADAPTER_RENDER::Initialize`
//! in the decompiled 23H2 dxgkrnl; docs/windows-bringup.md §9): the segments
//! (`DXGKQAITYPE_QUERYSEGMENT4`, BR-61/62/64) and, for a GPU-VA adapter, the GPU MMU caps
//! and one page-table level descriptor per level (`DXGKQAITYPE_GPUMMUCAPS`,
//! `DXGKQAITYPE_PAGETABLELEVELDESC`, BR-68). What it learns is the [`MemoryModel`] the rest of
//! VidMm builds address spaces from; a rule the driver breaks is a [`Violation`] with the
//! status Windows fails the start with.

use rvgpu_ddi::adapter::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::memory::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;

use crate::adapter::bringup::{Violation, STATUS_DEVICE_CONFIGURATION_ERROR};
use crate::adapter::ddi::{self, At};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::state::vidmm::model::MemoryModel;

fn violation(rule: &'static str, status: NTSTATUS, why: String) -> Violation {
    Violation { rule, status, why }
}

/// A query VidMm cannot do without: a failing status `st` breaks `rule`, and the start fails
/// with `status`, naming `what` failed.
fn query_failed(
    st: NTSTATUS,
    rule: &'static str,
    status: NTSTATUS,
    what: &str,
) -> Option<Violation> {
    (st < 0).then(|| violation(rule, status, format!("{what} failed ({:#010x})", st as u32)))
}

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
    let highest_page = (rvgpu_hw::addr::SYSMEM_LIMIT - 1) >> 12 << 12;
    let acceptable = caps.HighestAcceptableAddress.get() as u64;
    if acceptable < highest_page {
        return Ok(Err(violation(
            "BR-60",
            STATUS_NO_MEMORY,
            format!(
                "HighestAcceptableAddress {acceptable:#x} is below the highest physical page \
                 {highest_page:#x}"
            ),
        )));
    }
    let Some(q) = ddi::in_table!(t, DxgkDdiQueryAdapterInfo) else {
        return Ok(Ok(MemoryModel::default()));
    };
    let call = |ty: DXGK_QUERYADAPTERINFOTYPE, input: &mut [u8], out: &mut [u8]| {
        let args = DXGKARG_QUERYADAPTERINFO {
            Type: ty,
            pInputData: input.as_mut_ptr().cast(),
            InputDataSize: input.len() as u32,
            pOutputData: out.as_mut_ptr().cast(),
            OutputDataSize: out.len() as u32,
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
    let st = call(DXGKQAITYPE_QUERYSEGMENT4, &mut index, as_bytes(&mut out))?;
    let what = "DXGKQAITYPE_QUERYSEGMENT4 (count)";
    if let Some(v) = query_failed(st, "BR-61", STATUS_NO_MEMORY, what) {
        return Ok(Err(v));
    }
    let n = out.NbSegment;
    // BR-62: at most 32 segments. VidMmiQuerySegmentInfo4 fails with STATUS_UNSUCCESSFUL, but
    // VidMmiInit turns every failure into a NULL VidMm, so the start fails with
    // STATUS_NO_MEMORY like BR-60/61 ([D] `ADAPTER_RENDER::Initialize`).
    if n > 32 {
        return Ok(Err(violation(
            "BR-62",
            STATUS_NO_MEMORY,
            format!("{n} segments reported (at most 32)"),
        )));
    }
    // BR-62, windows-bringup.md §15 Q4: at least one segment. [D24] dxgmms2 `CreatePhysicalAdapterSegments`
    // (@ 0x14009B368 and @ 0x1400B14D0, the two later builds read) refuses a zero count with
    // STATUS_UNSUCCESSFUL right after the counting call, whatever the memory model (no IoMmu
    // exemption); VIDMM_GLOBAL::Init fails, VidMmiInit returns no VidMm and the start fails
    // with STATUS_NO_MEMORY ([D] `ADAPTER_RENDER::Initialize`). 22631 has no lower bound
    // (`OsConfig::zero_segments_accepted`).
    if n == 0 && !a.os.zero_segments_accepted {
        return Ok(Err(violation(
            "BR-62",
            STATUS_NO_MEMORY,
            "no segments reported (at least 1)".into(),
        )));
    }
    let stride = std::mem::size_of::<DXGK_SEGMENTDESCRIPTOR4>();
    let mut array = vec![0u8; stride * n as usize];
    let mut out = DXGK_QUERYSEGMENTOUT4 {
        NbSegment: n,
        pSegmentDescriptor: array.as_mut_ptr(),
        SegmentDescriptorStride: stride,
        ..Default::default()
    };
    if n > 0 {
        let st = call(DXGKQAITYPE_QUERYSEGMENT4, &mut index, as_bytes(&mut out))?;
        let what = "DXGKQAITYPE_QUERYSEGMENT4 (fill)";
        if let Some(v) = query_failed(st, "BR-61", STATUS_NO_MEMORY, what) {
            return Ok(Err(v));
        }
    }
    let segments: Vec<DXGK_SEGMENTDESCRIPTOR4> = array
        .chunks_exact(stride)
        // SAFETY: each chunk is `size_of::<DXGK_SEGMENTDESCRIPTOR4>()` bytes of a plain
        // integer/union structure the driver filled; every bit pattern is valid.
        .map(|c| unsafe {
            c.as_ptr()
                .cast::<DXGK_SEGMENTDESCRIPTOR4>()
                .read_unaligned()
        })
        .collect();
    if let Some(v) = check_segments(t, &segments, out.PagingBufferSegmentId) {
        return Ok(Err(v));
    }
    let mut model = MemoryModel {
        segments,
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

/// BR-63 … BR-65: what VidMm refuses in the segments the driver reported (`None`: nothing).
fn check_segments(
    t: &DRIVER_INITIALIZATION_DATA,
    segments: &[DXGK_SEGMENTDESCRIPTOR4],
    paging_buffer_segment: u32,
) -> Option<Violation> {
    // BR-63 ([D] `VidMmiQuerySegmentInfo4`, interface >= 0x7005): NumUEFIFrameBufferRanges
    // (byte 92) is 0 or 1, and 1 on at most one segment; otherwise no VidMm (NO_MEMORY).
    let mut uefi_segment = None;
    for (i, s) in segments.iter().enumerate() {
        let ranges = s.NumUEFIFrameBufferRanges;
        let twice = ranges == 1 && uefi_segment.is_some();
        if t.Version >= 0x7005 && (ranges > 1 || twice) {
            return Some(violation(
                "BR-63",
                STATUS_NO_MEMORY,
                format!(
                    "segment {} reports {ranges} UEFI frame-buffer ranges (0 or 1, on one \
                     segment at most)",
                    i + 1
                ),
            ));
        }
        if ranges == 1 {
            uefi_segment = Some(i);
        }
    }
    for (i, s) in segments.iter().enumerate() {
        let f = s.Flags;
        // BR-64: a host-aperture segment is neither an aperture nor CPU-visible
        // (VIDMM_GLOBAL::InitSegments, inside VidMmiInit: the start fails with NO_MEMORY).
        if f.is_set(DXGK_SEGMENTFLAGS::SupportsCpuHostAperture)
            && (f.is_set(DXGK_SEGMENTFLAGS::Aperture) || f.is_set(DXGK_SEGMENTFLAGS::CpuVisible))
        {
            return Some(violation(
                "BR-64",
                STATUS_NO_MEMORY,
                format!(
                    "segment {} combines SupportsCpuHostAperture with Aperture/CpuVisible",
                    i + 1
                ),
            ));
        }
    }
    // BR-65(a) ([D] `VIDMM_GLOBAL::Init`, inside VidMmiInit): the paging buffers' segment is 0
    // (system memory) or one of the reported segments; otherwise no VidMm (NO_MEMORY).
    if paging_buffer_segment > segments.len() as u32 {
        return Some(violation(
            "BR-65",
            STATUS_NO_MEMORY,
            format!(
                "PagingBufferSegmentId {paging_buffer_segment} names no segment ({} reported)",
                segments.len()
            ),
        ));
    }
    None
}

/// The driver's answer to a `DxgkDdiQueryAdapterInfo` of a type, input and output.
type Query<'a> =
    dyn Fn(DXGK_QUERYADAPTERINFOTYPE, &mut [u8], &mut [u8]) -> Result<NTSTATUS, SimError> + 'a;

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
    let st = call(DXGKQAITYPE_GPUMMUCAPS, &mut index, as_bytes(&mut mmu))?;
    let what = "DXGKQAITYPE_GPUMMUCAPS";
    if let Some(v) = query_failed(st, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR, what) {
        return Ok(Err(v));
    }
    if !(2..=6).contains(&mmu.PageTableLevelCount) {
        return Ok(Err(violation(
            "BR-68",
            STATUS_DEVICE_CONFIGURATION_ERROR,
            format!("PageTableLevelCount {} (2..=6)", mmu.PageTableLevelCount),
        )));
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
        let what = format!("DXGKQAITYPE_PAGETABLELEVELDESC({level})");
        if let Some(v) = query_failed(st, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR, &what) {
            return Ok(Err(v));
        }
        if d.PageTableAlignmentInBytes != 0 && !d.PageTableAlignmentInBytes.is_power_of_two() {
            return Ok(Err(violation(
                "BR-68",
                STATUS_INVALID_PARAMETER,
                format!(
                    "level {level}: PageTableAlignmentInBytes {:#x} is not a power of two",
                    d.PageTableAlignmentInBytes
                ),
            )));
        }
        levels.push(d);
    }
    Ok(Ok((mmu, levels)))
}

fn as_bytes<T: Copy>(v: &mut T) -> &mut [u8] {
    // SAFETY: `T` is one of the plain repr(C) DDI structures above; the slice covers exactly
    // its bytes for the borrow's life, and the driver writes only integer data into it.
    unsafe { std::slice::from_raw_parts_mut((v as *mut T).cast::<u8>(), std::mem::size_of::<T>()) }
}
