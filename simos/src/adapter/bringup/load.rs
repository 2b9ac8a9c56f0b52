//! The load phase: what `DxgkInitialize` checks of the miniport's table (\[D\]
//! `DpiInitializeInternal`, BR-01 and BR-02), and which bytes of it Dxgkrnl copies (BR-03).

use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;

use super::rule::{Facts, Rule, Violation, STATUS_REVISION_MISMATCH};
use crate::adapter::rules::{self, Slot};

/// BR-02 (\[D\] `DpiInitializeInternal`): the slots `DxgkInitialize` requires ([`Slot::Load`] in
/// the rule table; one of the [`Slot::LoadOneOf`] pair must be filled too). `NotifyAcpiEvent`,
/// `QueryInterface` and `QueryAdapterInfo` are not checked here (QueryAdapterInfo is, at adapter
/// creation: BR-30).
pub const LOAD_SLOTS: &[&str] = &rules::slot_names::<{ rules::slot_count(Slot::Load) }>(Slot::Load);

impl Facts for DRIVER_INITIALIZATION_DATA {}

const SOURCE: &str = "[D] DpiInitializeInternal";

/// The load phase's rows, in Windows' order.
pub const LOAD_RULES: &[Rule<DRIVER_INITIALIZATION_DATA>] = &[
    Rule::refuse(
        "BR-01",
        SOURCE,
        "`InitData->Version` at least 0x104E (the Vista interface); AddDevice never runs",
        STATUS_REVISION_MISMATCH,
        |t| {
            (t.Version < 0x104E)
                .then(|| format!("interface version {:#x} is older than 0x104E", t.Version))
        },
    ),
    Rule::refuse(
        "BR-02",
        SOURCE,
        "filled: AddDevice, StartDevice, StopDevice, RemoveDevice, DispatchIoRequest, \
         InterruptRoutine, DpcRoutine, QueryChildRelations, QueryChildStatus **or** \
         QueryConnectionChange, QueryDeviceDescriptor, SetPowerState, ResetDevice, Unload",
        STATUS_REVISION_MISMATCH,
        missing_load_slots,
    ),
];

fn missing_load_slots(t: &DRIVER_INITIALIZATION_DATA) -> Option<String> {
    let filled = |name: &str| super::rule::filled_by_name(t, name);
    let mut missing: Vec<&str> = LOAD_SLOTS.iter().copied().filter(|n| !filled(n)).collect();
    let one_of: Vec<&str> = rules::slots(Slot::LoadOneOf).collect();
    let either = one_of.join(" or ");
    if !one_of.iter().any(|n| filled(n)) {
        missing.push(&either);
    }
    (!missing.is_empty()).then(|| format!("required DDIs missing: {}", missing.join(", ")))
}

/// BR-01 and BR-02: what `DxgkInitialize` checks.
pub fn check_load(t: &DRIVER_INITIALIZATION_DATA) -> Result<(), Violation> {
    super::rule::first(LOAD_RULES, t).map_or(Ok(()), Err)
}

/// BR-03 (\[D\] / \[D24\] `DpiGetDriverDataSizeFromVersion`): how many bytes of the miniport's
/// `DRIVER_INITIALIZATION_DATA` Dxgkrnl copies for interface `version`. Slots past it are not
/// seen at all (not rejected). 22631 and the later builds agree up to 0x10003 (1,328 bytes);
/// 22631 then copies its own full table (1,376 bytes) for everything from 0x10004, while the
/// WDDM 3.2 builds (\[D24\], `DpiInitializeEx` passing 1,544 as the full size) copy 1,376 bytes
/// for 0x10004..0x11000 and the whole 1,544-byte table for every version from 0x11001 on. The
/// function never fails, so no version is refused for being newer than the kernel (windows-bringup.md §15 Q1).
pub fn driver_data_size(version: u32) -> usize {
    const SIZES: &[(u32, usize)] = &[
        (0x2001, 496),
        (0x2002, 544),
        (0x2003, 552),
        (0x3001, 568),
        (0x3002, 576),
        (0x3004, 624),
        (0x3005, 632),
        (0x300D, 656),
        (0x4000, 664),
        (0x4002, 696),
        (0x5000, 712),
        (0x6000, 832),
        (0x6002, 864),
        (0x7000, 880),
        (0x7002, 936),
        (0x7003, 952),
        (0x7004, 1008),
        (0x8000, 1032),
        (0x9000, 1056),
        (0x9002, 1104),
        (0x9003, 1112),
        (0x9005, 1128),
        (0x9006, 1144),
        (0xA001, 1152),
        (0xA002, 1160),
        (0xA005, 1168),
        (0xA007, 1176),
        (0xA009, 1184),
        (0xB002, 1192),
        (0xB003, 1208),
        (0xE003, 1232),
        (0xF001, 1264),
        (0xF003, 1288),
        (0x10003, 1296),
        (0x10004, 1328),
        (0x11001, 1376),
    ];
    SIZES.iter().find(|(below, _)| version < *below).map_or(
        std::mem::size_of::<DRIVER_INITIALIZATION_DATA>(),
        |(_, n)| *n,
    )
}

/// BR-03: the table as Dxgkrnl copies it from the driver: only [`driver_data_size`] bytes for
/// the table's version, every later slot NULL.
pub fn table_as_copied(t: &DRIVER_INITIALIZATION_DATA) -> DRIVER_INITIALIZATION_DATA {
    let mut copy = *t;
    let full = std::mem::size_of::<DRIVER_INITIALIZATION_DATA>();
    let keep = driver_data_size(t.Version).min(full);
    // Every byte from `keep` on belongs to a slot, and an all-zero slot is `None`.
    crate::adapter::ddi::zero_from(&mut copy, keep);
    copy
}
