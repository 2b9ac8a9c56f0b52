//! The audit's own checks.

use super::*;
use crate::allocation::{DXGKARG_CREATEPROCESS, DXGK_ALLOCATIONINFO};
use crate::memory::DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE;
use crate::submission::DXGKARG_CREATECONTEXT;

fn cites(f: Fill) -> bool {
    let (by, text) = match f {
        Fill::Filled { by, how } => (by, how),
        Fill::Zero { by, why } => (by, why),
    };
    (by.starts_with("K:") || by.starts_with("M:")) && by.contains(" @0x") && !text.is_empty()
}

fn check<T>(d: &Ddi<T>) {
    for (i, r) in d.rows.iter().enumerate() {
        assert!(cites(r.fill), "{}.{}: no 24H2 citation", d.block, r.field);
        assert_eq!(
            matches!(r.fill, Fill::Zero { .. }),
            r.is_zero.is_some(),
            "{}.{}",
            d.block,
            r.field
        );
        assert!(
            d.rows.iter().skip(i + 1).all(|o| o.field != r.field),
            "{}.{} twice",
            d.block,
            r.field
        );
    }
}

/// Every row names a 24H2 function by address, every field once; zero rows check.
#[test]
fn every_row_cites_24h2_once() {
    check(&CREATE_PROCESS);
    check(&SET_ROOT_PAGE_TABLE);
    check(&UPDATE_PAGE_TABLE);
    check(&FLUSH_TLB);
    check(&UPDATE_PAGE_TABLE_INVALIDATE);
    check(&CREATE_ALLOCATION);
    check(&ALLOCATION_INFO);
    check(&OPEN_ALLOCATION);
    check(&OPEN_ALLOCATION_INFO);
    check(&CREATE_HWQUEUE);
    check(&CREATE_HWQUEUE_USER_MODE);
    check(&CREATE_DOORBELL);
    check(&SUBMIT_COMMAND_TO_HWQUEUE);
    check(&fence::DESTROY_NATIVE_FENCE);
    check(&fence::CLOSE_NATIVE_FENCE);
    check(&PREEMPT_COMMAND);
    check(&FILL);
    check(&TRANSFER);
    check(&MAP_APERTURE_SEGMENT);
    check(&UNMAP_APERTURE_SEGMENT);
    check(&SUBMIT_COMMAND);
    check(&START_DEVICE);
    check(&BUILD_TEST_COMMAND_BUFFER);
    check(&QUERY_FEATURE_SUPPORT);
    check(&QUERY_FEATURE_INTERFACE);
    check(&QUERY_INTERFACE_SET);
    check(&QUERY_CHILD_RELATIONS);
    check(&CALIBRATE_GPU_CLOCK);
    check(&GET_ROOT_PAGE_TABLE_SIZE);
    check(&SETUP_PRIORITY_BANDS);
    check(&QUERY_DEPENDENT_ENGINE_GROUP);
    check(&QUERY_ADAPTER_INFO);
    check(&QUERY_ADAPTER_INFO_UMD);
    check(&SUBMIT_COMMAND_VIRTUAL);
}

/// The fields of a type-erased set that lack a 24H2 citation, or appear twice, or whose
/// zero check does not match its fill.
fn uncited(set: &dyn Audited) -> std::vec::Vec<std::string::String> {
    let rows: std::vec::Vec<RowView> = (0..).map_while(|i| set.row(i)).collect();
    let mut bad = std::vec::Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if !cites(r.fill) {
            bad.push(std::format!("{}.{}: no 24H2 citation", set.name(), r.field));
        }
        if matches!(r.fill, Fill::Zero { .. }) != r.checks_zero {
            bad.push(std::format!("{}.{}: zero check", set.name(), r.field));
        }
        if rows.iter().skip(i + 1).any(|o| o.field == r.field) {
            bad.push(std::format!("{}.{} twice", set.name(), r.field));
        }
    }
    if rows.is_empty() {
        bad.push(std::format!("{}: no rows", set.name()));
    }
    bad
}

fn is_24h2_cite(by: &str) -> bool {
    (by.starts_with("K:") || by.starts_with("M:")) && by.contains(" @0x")
}

/// The DDIs whose row sets are still to be written. The list may only shrink: a DDI leaves
/// it when its sets (or its no-block or never-called marker) are in the audit.
const PENDING: &[&str] = &[];

/// Whether `gap` (`docs/<page>.md#<anchor>`) names a heading of a page of the repository's
/// docs.
fn names_a_section(gap: &str) -> bool {
    let Some((page, anchor)) = gap.split_once('#') else {
        return false;
    };
    if !page.starts_with("docs/") || anchor.is_empty() {
        return false;
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(page);
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| {
            h.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect::<std::string::String>()
        })
        .any(|slug| slug == anchor)
}

/// The problems of `audit` against `catalog`: a catalogued DDI without an entry, an entry
/// without a catalogued DDI, an uncited row or marker, a never-called marker on a DDI the
/// simulated OS calls (or the reverse), a mandatory DDI marked unfilled, a pending DDI not in
/// [`PENDING`].
fn coverage_problems(
    catalog: &[crate::catalog::Ddi],
    audit: &[Audit],
) -> std::vec::Vec<std::string::String> {
    use std::format;
    let mut bad = std::vec::Vec::new();
    for d in catalog {
        match audit.iter().filter(|a| a.ddi == d.name).count() {
            1 => {}
            0 => bad.push(format!("{}: no row set", d.name)),
            _ => bad.push(format!("{}: two entries", d.name)),
        }
    }
    for a in audit {
        let Some(d) = catalog.iter().find(|d| d.name == a.ddi) else {
            bad.push(format!("{}: not in the catalog", a.ddi));
            continue;
        };
        match a.cover {
            Cover::Blocks(sets) => {
                if sets.is_empty() {
                    bad.push(format!("{}: no row set", a.ddi));
                }
                for set in sets {
                    bad.extend(uncited(*set));
                }
            }
            Cover::NoBlock { by, why } => {
                if !is_24h2_cite(by) || why.is_empty() {
                    bad.push(format!("{}: no-block marker without a 24H2 caller", a.ddi));
                }
            }
            Cover::NotCalled { by, why } => {
                if !(is_24h2_cite(by) || by.starts_with("https://learn.microsoft.com/"))
                    || why.is_empty()
                {
                    bad.push(format!("{}: never-called marker without a source", a.ddi));
                }
                if d.irql.is_some() {
                    bad.push(format!("{}: the simulated OS calls it", a.ddi));
                }
            }
            Cover::PagesOnly { by, page, why } => {
                if !is_24h2_cite(by)
                    || !page.starts_with("https://learn.microsoft.com/")
                    || why.is_empty()
                {
                    bad.push(format!("{}: pages-only marker without its sources", a.ddi));
                }
                if d.irql.is_none() {
                    bad.push(format!(
                        "{}: pages-only, but the simulated OS never calls it",
                        a.ddi
                    ));
                }
            }
            Cover::NotReached { by, gap, why } => {
                if !is_24h2_cite(by) || why.is_empty() || !names_a_section(gap) {
                    bad.push(format!("{}: not-reached marker without its sources", a.ddi));
                }
            }
            Cover::Unfilled { why } => {
                if why.is_empty() || d.class == crate::catalog::Class::Mandatory {
                    bad.push(format!("{}: a mandatory slot marked unfilled", a.ddi));
                }
            }
            Cover::Pending { what } => {
                if what.is_empty() || !PENDING.contains(&a.ddi) {
                    bad.push(format!("{}: pending without its place in the list", a.ddi));
                }
            }
        }
        if d.irql.is_none() && matches!(a.cover, Cover::Blocks(_) | Cover::NoBlock { .. }) {
            bad.push(format!("{}: audited as handed over, never called", a.ddi));
        }
    }
    bad
}

/// DDI-01: every DDI of the catalog has its entry in the audit, and every row of every set
/// names a 24H2 function by address.
#[test]
fn ddi_01_every_catalogued_ddi_has_a_cited_row_set() {
    let bad = coverage_problems(crate::catalog::CATALOG, AUDIT);
    assert!(bad.is_empty(), "{bad:#?}");
    let pending = AUDIT
        .iter()
        .filter(|a| matches!(a.cover, Cover::Pending { .. }))
        .count();
    assert_eq!(
        pending,
        PENDING.len(),
        "a DDI left the pending list: shorten it"
    );
}

/// DDI-01: the coverage check fails on a catalogued DDI left out of the audit, and on a set
/// with a row that cites no 24H2 function.
#[test]
fn ddi_01_a_missing_row_set_or_an_uncited_row_is_caught() {
    let mut shorter: std::vec::Vec<Audit> = AUDIT.to_vec();
    let gone = shorter.remove(
        shorter
            .iter()
            .position(|a| a.ddi == "DxgkDdiCreateContext")
            .unwrap(),
    );
    assert_eq!(
        coverage_problems(crate::catalog::CATALOG, &shorter),
        ["DxgkDdiCreateContext: no row set"]
    );
    static UNCITED: Ddi<crate::submission::DXGKARG_CREATECONTEXT> = Ddi {
        name: "DxgkDdiCreateContext",
        block: "DXGKARG_CREATECONTEXT",
        rows: &[filled_row!(
            DXGKARG_CREATECONTEXT.hContext,
            true,
            "DXGCONTEXT::Initialize",
            "no address"
        )],
    };
    static UNCITED_SETS: [&dyn Audited; 1] = [&UNCITED];
    shorter.push(Audit {
        ddi: gone.ddi,
        cover: Cover::Blocks(&UNCITED_SETS),
    });
    assert_eq!(
        coverage_problems(crate::catalog::CATALOG, &shorter),
        ["DxgkDdiCreateContext.hContext: no 24H2 citation"]
    );
}

/// DDI-01: a pages-only marker needs a 24H2 source and a page and a DDI the simulated OS
/// calls; a not-reached marker needs a 24H2 caller and a gap that names a section of the docs.
#[test]
fn ddi_01_pages_only_and_not_reached_markers_are_held_to_their_sources() {
    let with = |ddi: &'static str, cover: Cover| -> std::vec::Vec<std::string::String> {
        let mut v: std::vec::Vec<Audit> = AUDIT.to_vec();
        let i = v.iter().position(|a| a.ddi == ddi).unwrap();
        v[i] = Audit { ddi, cover };
        coverage_problems(crate::catalog::CATALOG, &v)
    };
    let page = "https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmddi/";
    assert_eq!(
        with(
            "DxgkDdiQueryCurrentFence",
            Cover::PagesOnly {
                by: "VidSch",
                page,
                why: "w"
            }
        ),
        ["DxgkDdiQueryCurrentFence: pages-only marker without its sources"]
    );
    assert_eq!(
        with(
            "DxgkDdiControlInterrupt",
            Cover::PagesOnly {
                by: "K:F @0x1",
                page,
                why: "w"
            }
        ),
        ["DxgkDdiControlInterrupt: pages-only, but the simulated OS never calls it"]
    );
    for gap in [
        concat!("docs/thunks.md", "#no-such-section"),
        "docs/none.md#x",
        "docs/thunks.md",
    ] {
        assert_eq!(
            with(
                "DxgkDdiDescribeAllocation",
                Cover::NotReached {
                    by: "K:F @0x1",
                    gap,
                    why: "w"
                }
            ),
            ["DxgkDdiDescribeAllocation: not-reached marker without its sources"],
            "{gap}"
        );
    }
}

/// DDI-01: the central check picks the set that applies to a block: a user-mode queue's
/// block is held to the user-mode set (its progress fence zero), a kernel-mode queue's is not.
#[test]
fn ddi_01_a_ddis_set_applies_to_its_own_kind_of_block() {
    use crate::submission::{D3DDDI_CREATEHWQUEUEFLAGS, DXGKARG_CREATEHWQUEUE};
    let mut b = DXGKARG_CREATEHWQUEUE {
        HwQueueProgressFenceGPUVirtualAddress: 0x1000,
        ..Default::default()
    };
    let found = |b: &DXGKARG_CREATEHWQUEUE| {
        let mut v = std::vec::Vec::new();
        for set in sets_of("DxgkDdiCreateHwQueue") {
            assert_eq!(
                set.arg_type(),
                core::any::TypeId::of::<DXGKARG_CREATEHWQUEUE>()
            );
            // SAFETY: `b` is a live DXGKARG_CREATEHWQUEUE, the type the set reads.
            let applied = unsafe {
                set.check((b as *const DXGKARG_CREATEHWQUEUE).cast(), &mut |f| {
                    v.push(f)
                })
            };
            if applied {
                v.push(set.name());
            }
        }
        v
    };
    assert_eq!(found(&b), ["DxgkDdiCreateHwQueue"]);
    b.Flags = b
        .Flags
        .with(D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission, 1);
    assert_eq!(
        found(&b),
        [
            "HwQueueProgressFenceGPUVirtualAddress",
            "DxgkDdiCreateHwQueue(UserModeSubmission)"
        ]
    );
}

/// A block filled where the audit says zero is caught, field by field.
#[test]
fn a_field_24h2_leaves_zero_is_caught_when_filled() {
    let mut b = DXGKARG_CREATEPROCESS {
        NumPasid: 1,
        ..Default::default()
    };
    assert_eq!(CREATE_PROCESS.filled_zero(&b).count(), 0);
    let mut pasid = 0u32;
    b.pPasid = &mut pasid;
    b.ProcessNameLength = 3;
    let got: std::vec::Vec<_> = CREATE_PROCESS.filled_zero(&b).collect();
    assert_eq!(got, ["pPasid", "ProcessNameLength"]);
}

/// An allocation info handed over with an answer already in it is caught: 24H2 zeroes
/// the array.
#[test]
fn an_allocation_info_with_an_answer_is_caught() {
    let mut b = DXGK_ALLOCATIONINFO {
        PrivateDriverDataSize: 16,
        ..Default::default()
    };
    assert_eq!(ALLOCATION_INFO.filled_zero(&b).count(), 0);
    b.Size = 4096;
    b.hAllocation = 8 as crate::HANDLE;
    let got: std::vec::Vec<_> = ALLOCATION_INFO.filled_zero(&b).collect();
    assert_eq!(got, ["Size", "hAllocation"]);
}

/// An invalidation that names the allocation it unmaps, or its offset, is caught: 24H2's
/// carry neither.
#[test]
fn an_invalidation_naming_an_allocation_is_caught() {
    let mut b = DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
        FirstPteVirtualAddress: 0x20_0000,
        ..Default::default()
    };
    assert_eq!(UPDATE_PAGE_TABLE_INVALIDATE.filled_zero(&b).count(), 0);
    b.hAllocation = 8 as crate::HANDLE;
    b.AllocationOffsetInBytes = 0x1000;
    let got: std::vec::Vec<_> = UPDATE_PAGE_TABLE_INVALIDATE.filled_zero(&b).collect();
    assert_eq!(got, ["hAllocation", "AllocationOffsetInBytes"]);
    assert_eq!(
        UPDATE_PAGE_TABLE.filled_zero(&b).count(),
        0,
        "a map may name one"
    );
}

/// DDI-01: a native fence's destroy or close block that carries anything past the driver's handle
/// is caught: 24H2 widens the handle into a zeroed block.
#[test]
fn ddi_01_a_native_fence_destroy_or_close_block_with_flags_is_caught() {
    use crate::fence::{DXGKARG_CLOSENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE};
    let mut d = DXGKARG_DESTROYNATIVEFENCE {
        hGlobalNativeFence: 8 as crate::HANDLE,
        ..Default::default()
    };
    assert_eq!(fence::DESTROY_NATIVE_FENCE.filled_zero(&d).count(), 0);
    d.Flags.Value = 1;
    d.Reserved[31] = 1;
    let got: std::vec::Vec<_> = fence::DESTROY_NATIVE_FENCE.filled_zero(&d).collect();
    assert_eq!(got, ["Flags", "Reserved"]);
    let mut c = DXGKARG_CLOSENATIVEFENCE {
        hLocalNativeFence: 8 as crate::HANDLE,
        ..Default::default()
    };
    assert_eq!(fence::CLOSE_NATIVE_FENCE.filled_zero(&c).count(), 0);
    c.Flags.Value = 1;
    let got: std::vec::Vec<_> = fence::CLOSE_NATIVE_FENCE.filled_zero(&c).collect();
    assert_eq!(got, ["Flags"]);
}

/// DDI-01: a preemption request with a flag set is caught: 24H2 writes the flags zero.
#[test]
fn ddi_01_a_preemption_with_flags_is_caught() {
    let mut b = crate::tdr::DXGKARG_PREEMPTCOMMAND {
        PreemptionFenceId: 7,
        ..Default::default()
    };
    assert_eq!(PREEMPT_COMMAND.filled_zero(&b).count(), 0);
    b.Flags.Value = 1;
    let got: std::vec::Vec<_> = PREEMPT_COMMAND.filled_zero(&b).collect();
    assert_eq!(got, ["Flags"]);
}

/// DDI-01: the virtual submission's set has a row for every field of the block.
#[test]
fn ddi_01_the_virtual_submission_set_covers_every_field() {
    for f in [
        "hContext",
        "DmaBufferVirtualAddress",
        "DmaBufferSize",
        "pDmaBufferPrivateData",
        "DmaBufferPrivateDataSize",
        "DmaBufferUmdPrivateDataSize",
        "SubmissionFenceId",
        "VidPnSourceId",
        "FlipInterval",
        "Flags",
        "EngineOrdinal",
        "NodeOrdinal",
    ] {
        assert!(SUBMIT_COMMAND_VIRTUAL.row(f).is_some(), "{f}");
    }
}

/// DDI-01: the kernel's own adapter-info question carries no process handle, a process's
/// UMDRIVERPRIVATE question carries no input; each block is held to its own set.
#[test]
fn ddi_01_an_adapter_info_question_is_held_to_its_kind() {
    use crate::adapter::{
        DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_DRIVERCAPS, DXGKQAITYPE_UMDRIVERPRIVATE,
    };
    let found = |b: &DXGKARG_QUERYADAPTERINFO| {
        let mut v = std::vec::Vec::new();
        for set in sets_of("DxgkDdiQueryAdapterInfo") {
            // SAFETY: `b` is a live DXGKARG_QUERYADAPTERINFO, the type the sets read.
            let applied = unsafe {
                set.check((b as *const DXGKARG_QUERYADAPTERINFO).cast(), &mut |f| {
                    v.push(f)
                })
            };
            if applied {
                v.push(set.name());
            }
        }
        v
    };
    let mut input = 0u32;
    let mut b = DXGKARG_QUERYADAPTERINFO {
        Type: DXGKQAITYPE_DRIVERCAPS,
        pInputData: (&mut input as *mut u32).cast(),
        InputDataSize: 4,
        pOutputData: core::ptr::null_mut(),
        OutputDataSize: 0,
        Flags: Default::default(),
        hKmdProcessHandle: 8 as crate::HANDLE,
    };
    assert_eq!(found(&b), ["hKmdProcessHandle", "DxgkDdiQueryAdapterInfo"]);
    b.Type = DXGKQAITYPE_UMDRIVERPRIVATE;
    assert_eq!(
        found(&b),
        [
            "pInputData",
            "InputDataSize",
            "DxgkDdiQueryAdapterInfo(UMDRIVERPRIVATE)"
        ]
    );
}

/// DDI-01: a clock calibration handed over with an answer already in it is caught: 24H2
/// zeroes the block.
#[test]
fn ddi_01_a_clock_calibration_with_an_answer_is_caught() {
    let mut b = crate::adapter::DXGK_GPUCLOCKDATA::default();
    assert_eq!(CALIBRATE_GPU_CLOCK.filled_zero(&b).count(), 0);
    b.GpuFrequency = 1;
    b.Flags.Value = 1;
    let got: std::vec::Vec<_> = CALIBRATE_GPU_CLOCK.filled_zero(&b).collect();
    assert_eq!(got, ["GpuFrequency", "Flags"]);
}

/// DDI-01: a legacy submission that names a GPU VA is caught: 24H2 never writes it.
#[test]
fn ddi_01_a_physical_submission_naming_a_gpu_va_is_caught() {
    use crate::tdr::{DXGKARG_SUBMITCOMMAND, DXGKARG_SUBMITCOMMAND_0};
    let mut b = DXGKARG_SUBMITCOMMAND {
        Anonymous: DXGKARG_SUBMITCOMMAND_0 {
            hContext: 8 as crate::HANDLE,
        },
        DmaBufferSegmentId: 0,
        DmaBufferPhysicalAddress: crate::LARGE_INTEGER {
            QuadPart: 0x10_0000,
        },
        DmaBufferSize: 4096,
        DmaBufferSubmissionStartOffset: 0,
        DmaBufferSubmissionEndOffset: 64,
        pDmaBufferPrivateData: core::ptr::null_mut(),
        DmaBufferPrivateDataSize: 0,
        DmaBufferPrivateDataSubmissionStartOffset: 0,
        DmaBufferPrivateDataSubmissionEndOffset: 0,
        SubmissionFenceId: 3,
        VidPnSourceId: 0,
        FlipInterval: 0,
        Flags: Default::default(),
        EngineOrdinal: 0,
        DmaBufferVirtualAddress: 0,
        NodeOrdinal: 0,
    };
    assert_eq!(SUBMIT_COMMAND.filled_zero(&b).count(), 0);
    b.DmaBufferVirtualAddress = 0x1000;
    let got: std::vec::Vec<_> = SUBMIT_COMMAND.filled_zero(&b).collect();
    assert_eq!(got, ["DmaBufferVirtualAddress"]);
}

/// DDI-01: a paging fill with a pattern is caught: 24H2's VidMm only clears.
#[test]
fn ddi_01_a_paging_fill_with_a_pattern_is_caught() {
    use crate::tdr::{DXGKARG_BUILDPAGINGBUFFER_Fill, DXGKARG_BUILDPAGINGBUFFER_Fill_Destination};
    let mut b = DXGKARG_BUILDPAGINGBUFFER_Fill {
        hAllocation: core::ptr::null_mut(),
        FillSize: 4096,
        FillPattern: 0,
        Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
            SegmentId: 1,
            SegmentAddress: crate::LARGE_INTEGER { QuadPart: 0 },
        },
    };
    assert_eq!(FILL.filled_zero(&b).count(), 0);
    b.FillPattern = 0xDEAD_BEEF;
    let got: std::vec::Vec<_> = FILL.filled_zero(&b).collect();
    assert_eq!(got, ["FillPattern"]);
}

/// DDI-01: a paging transfer that starts inside its MDL is caught: 24H2 always passes the MDL
/// from its start.
#[test]
fn ddi_01_a_paging_transfer_with_an_mdl_offset_is_caught() {
    let mut b = crate::tdr::DXGKARG_BUILDPAGINGBUFFER_Transfer {
        TransferSize: 4096,
        ..Default::default()
    };
    assert_eq!(TRANSFER.filled_zero(&b).count(), 0);
    b.MdlOffset = 2;
    let got: std::vec::Vec<_> = TRANSFER.filled_zero(&b).collect();
    assert_eq!(got, ["MdlOffset"]);
}

/// DDI-01: an aperture map that starts inside its MDL is caught: 24H2 maps from the start.
#[test]
fn ddi_01_an_aperture_map_with_an_mdl_offset_is_caught() {
    let mut b = crate::tdr::DXGKARG_BUILDPAGINGBUFFER_MapApertureSegment {
        NumberOfPages: 1,
        ..Default::default()
    };
    assert_eq!(MAP_APERTURE_SEGMENT.filled_zero(&b).count(), 0);
    b.MdlOffset = 1;
    let got: std::vec::Vec<_> = MAP_APERTURE_SEGMENT.filled_zero(&b).collect();
    assert_eq!(got, ["MdlOffset"]);
}
