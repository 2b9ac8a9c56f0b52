//! The VidMm phase: what \[D\] `VidMmiInit` (dxgmms2) checks of the driver's memory answers while
//! `ADAPTER_RENDER::Initialize` creates the render core (BR-60 to BR-65(a), BR-68). A VidMm that
//! fails to initialise is reported by `ADAPTER_RENDER::Initialize` as `STATUS_NO_MEMORY`. The
//! queries and their order are `vidmm::init`'s; each step's rows run before the next query.

use rvgpu_ddi::memory::*;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY};
use rvgpu_ddi::NTSTATUS;

use super::rule::{Facts, Rule, STATUS_DEVICE_CONFIGURATION_ERROR};

/// A query's failure as the rows word it.
fn failed<T>(answer: &Result<T, NTSTATUS>, what: &str) -> Option<String> {
    answer
        .as_ref()
        .err()
        .map(|st| format!("{what} failed ({:#010x})", *st as u32))
}

/// BR-60's facts: the driver's `HighestAcceptableAddress` and the machine's highest physical
/// page (`SYSTEM_BASIC_INFORMATION.HighestPhysicalPageNumber << 12`).
pub struct Address {
    /// `DXGK_DRIVERCAPS::HighestAcceptableAddress`.
    pub acceptable: u64,
    /// The machine's highest physical page.
    pub highest_page: u64,
}

impl Facts for Address {}

/// Checked before any segment query.
pub const ADDRESS_RULES: &[Rule<Address>] = &[Rule::refuse(
    "BR-60",
    "[D] VidMmiInit, ADAPTER_RENDER::Initialize",
    "without IOMMU remapping, `HighestAcceptableAddress` at least the machine's highest \
     physical page",
    STATUS_NO_MEMORY,
    |a| {
        (a.acceptable < a.highest_page).then(|| {
            format!(
                "HighestAcceptableAddress {:#x} is below the highest physical page {:#x}",
                a.acceptable, a.highest_page
            )
        })
    },
)];

/// The counting `DXGKQAITYPE_QUERYSEGMENT4` call's answer.
pub struct SegmentCount {
    /// `NbSegment`, or the status the call failed with.
    pub answer: Result<u32, NTSTATUS>,
    /// 22631 has no lower bound (`Windows::zero_segments_accepted`).
    pub zero_accepted: bool,
}

impl Facts for SegmentCount {}

/// After the counting call.
pub const COUNT_RULES: &[Rule<SegmentCount>] = &[
    Rule::refuse(
        "BR-61",
        "[D] VidMmiQuerySegmentInfo4, VidMmiInit",
        "**`DXGKQAITYPE_QUERYSEGMENT4` (11)** per physical adapter without an array (4-byte \
         index in, 40-byte `DXGK_QUERYSEGMENTOUT4` out) succeeds",
        STATUS_NO_MEMORY,
        |c| failed(&c.answer, "DXGKQAITYPE_QUERYSEGMENT4 (count)"),
    ),
    // VidMmiQuerySegmentInfo4 fails with STATUS_UNSUCCESSFUL; VidMmiInit turns every failure
    // into a NULL VidMm.
    Rule::refuse(
        "BR-62",
        "[D] VidMmiQuerySegmentInfo4",
        "`NbSegment` at most 32",
        STATUS_NO_MEMORY,
        |c| {
            let n = *c.answer.as_ref().ok()?;
            (n > 32).then(|| format!("{n} segments reported (at most 32)"))
        },
    ),
    // Refused right after the counting call, whatever the memory model (no IoMmu exemption).
    Rule::refuse(
        "BR-62",
        "[D24] dxgmms2 `CreatePhysicalAdapterSegments` @ 0x14009B368, @ 0x1400B14D0 \
         (windows-bringup.md §15 Q4)",
        "`NbSegment` at least 1 (24H2; 22631 has no lower bound)",
        STATUS_NO_MEMORY,
        |c| {
            (c.answer == Ok(0) && !c.zero_accepted)
                .then(|| "no segments reported (at least 1)".to_owned())
        },
    ),
];

/// The filling call's answer and the segments it described.
pub struct Segments {
    /// `DRIVER_INITIALIZATION_DATA::Version`.
    pub version: u32,
    /// The filling call's status (not asked, as success, when there is no segment).
    pub fill: Result<(), NTSTATUS>,
    /// The descriptors, at the stride of the descriptor this OS knows.
    pub segments: Vec<DXGK_SEGMENTDESCRIPTOR4>,
    /// `DXGK_QUERYSEGMENTOUT4::PagingBufferSegmentId`.
    pub paging_buffer_segment: u32,
}

impl Facts for Segments {}

/// After the filling call.
pub const SEGMENT_RULES: &[Rule<Segments>] = &[
    Rule::refuse(
        "BR-61",
        "[D] VidMmiQuerySegmentInfo4, VidMmiInit",
        "then with `NbSegment` × `DXGK_SEGMENTDESCRIPTOR4` (96 bytes in the 10.0.22621 header; the \
         23H2 code reads like 104) succeeds",
        STATUS_NO_MEMORY,
        |s| failed(&s.fill, "DXGKQAITYPE_QUERYSEGMENT4 (fill)"),
    ),
    Rule::refuse(
        "BR-63",
        "[D] VidMmiQuerySegmentInfo4 (windows-bringup.md §15 Q9)",
        "interface 0x7005+: `NumUEFIFrameBufferRanges` (byte 92) 0 or 1, 1 on one segment at most",
        STATUS_NO_MEMORY,
        uefi_ranges,
    ),
    Rule::refuse(
        "BR-64",
        "[D] VIDMM_GLOBAL::InitSegments",
        "no segment combines `SupportsCpuHostAperture` with `Aperture` or `CpuVisible`",
        STATUS_NO_MEMORY,
        |s| {
            s.segments.iter().zip(1..).find_map(|(d, id)| {
                let f = d.Flags;
                (f.is_set(DXGK_SEGMENTFLAGS::SupportsCpuHostAperture)
                    && (f.is_set(DXGK_SEGMENTFLAGS::Aperture)
                        || f.is_set(DXGK_SEGMENTFLAGS::CpuVisible)))
                .then(|| {
                    format!("segment {id} combines SupportsCpuHostAperture with Aperture/CpuVisible")
                })
            })
        },
    ),
    Rule::refuse(
        "BR-65",
        "[D] VIDMM_GLOBAL::Init",
        "(a) `PagingBufferSegmentId` 0 (system memory) or a reported segment",
        STATUS_NO_MEMORY,
        |s| {
            let (id, n) = (s.paging_buffer_segment, s.segments.len());
            (u64::from(id) > n as u64)
                .then(|| format!("PagingBufferSegmentId {id} names no segment ({n} reported)"))
        },
    ),
];

fn uefi_ranges(s: &Segments) -> Option<String> {
    if s.version < 0x7005 {
        return None;
    }
    let mut seen = false;
    for (d, id) in s.segments.iter().zip(1..) {
        let ranges = d.NumUEFIFrameBufferRanges;
        if ranges > 1 || (ranges == 1 && seen) {
            return Some(format!(
                "segment {id} reports {ranges} UEFI frame-buffer ranges (0 or 1, on one segment \
                 at most)"
            ));
        }
        seen |= ranges == 1;
    }
    None
}

/// `DXGKQAITYPE_GPUMMUCAPS` (13) for physical adapter 0, asked of a GpuMmu adapter.
pub struct GpuMmu(pub Result<DXGK_GPUMMUCAPS, NTSTATUS>);

impl Facts for GpuMmu {}

const GPU_VA: &str = "[D] ADAPTER_RENDER::Initialize";

/// After the GPU MMU caps.
pub const GPUMMU_RULES: &[Rule<GpuMmu>] = &[
    Rule::refuse(
        "BR-68",
        GPU_VA,
        "with GPU VA: `GPUMMUCAPS` (13, 4-byte index in, 24 bytes out) succeeds for a GpuMmu \
         adapter",
        STATUS_DEVICE_CONFIGURATION_ERROR,
        |g| failed(&g.0, "DXGKQAITYPE_GPUMMUCAPS"),
    ),
    Rule::refuse(
        "BR-68",
        GPU_VA,
        "`PageTableLevelCount` 2 to 6",
        STATUS_DEVICE_CONFIGURATION_ERROR,
        |g| {
            let n = g.0.as_ref().ok()?.PageTableLevelCount;
            (!(2..=6).contains(&n)).then(|| format!("PageTableLevelCount {n} (2..=6)"))
        },
    ),
];

/// One level's `DXGKQAITYPE_PAGETABLELEVELDESC` (14) answer.
pub struct Level {
    /// The level asked (level | adapter << 16 in).
    pub level: u32,
    /// The description, or the status the query failed with.
    pub answer: Result<DXGK_PAGE_TABLE_LEVEL_DESC, NTSTATUS>,
}

impl Facts for Level {}

/// After each level's description.
pub const LEVEL_RULES: &[Rule<Level>] = &[
    Rule::refuse(
        "BR-68",
        GPU_VA,
        "`PAGETABLELEVELDESC` (14) per level (20 bytes out for 0x5012+, else 16) succeeds",
        STATUS_DEVICE_CONFIGURATION_ERROR,
        |l| {
            failed(
                &l.answer,
                &format!("DXGKQAITYPE_PAGETABLELEVELDESC({})", l.level),
            )
        },
    ),
    Rule::refuse(
        "BR-68",
        GPU_VA,
        "a level's `PageTableAlignmentInBytes` a power of two",
        STATUS_INVALID_PARAMETER,
        |l| {
            let a = l.answer.as_ref().ok()?.PageTableAlignmentInBytes;
            (a != 0 && !a.is_power_of_two()).then(|| {
                format!(
                    "level {}: PageTableAlignmentInBytes {a:#x} is not a power of two",
                    l.level
                )
            })
        },
    ),
];
