//! DDI-table completeness ("DDI table completeness").
//!
//! Builds the driver's `DRIVER_INITIALIZATION_DATA` exactly as `DriverEntry` does and compares its
//! filled slots with the mandatory slots of the DDI catalog (`rvgpu_ddi::catalog`, class
//! `Mandatory`): the slots a render-only WDDM 3.2 adapter with hardware scheduling (HWS), native
//! GPU fences and user-mode submission must fill.
//!
//! Microsoft publishes no single list of "the DDIs a render-only HWS adapter must implement". The
//! catalog's classes are assembled from the pages that do state obligations; each row's reason
//! says which page and how the decision was made. Where the obligation is inferred (a cap or a
//! project requirement implies the DDI) the reason says so. Rows of class `LeftOut` record slots
//! that were considered and left out, with the reason, so the decision is reviewable; rows of
//! class `Optional` are the filled slots that are not mandatory, each with the reason the driver
//! fills it.
//!
//! [`KNOWN_GAPS`] are the mandatory slots the driver does not fill yet. The tests make the list
//! impossible to go stale: a gap that gets implemented must be removed from it, and a mandatory
//! slot that is neither filled nor a known gap fails. `docs/ddi-status.md`'s tables are generated
//! from the catalog (`docs_tables_are_the_catalogs`; `RVGPU_BLESS=1` rewrites them).
//!
//! `cargo test -p rvgpu --test ddi_table -- --nocapture` prints the filled/missing table.

// Host-side test code that generates and reads text: the kernel no-panic lints do not apply.
#![allow(clippy::string_slice, clippy::arithmetic_side_effects)]

use std::collections::BTreeSet;

use rvgpu_ddi::catalog::{self, Class, Group, CATALOG};
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, DXGKDDI_INTERFACE_VERSION_WDDM3_2};

mod common;
use common::{NullPlatform, NATIVE_FENCE_DDIS};

// Sources, named once so each reason can point at them.
// DRIVER_INITIALIZATION_DATA reference (slot list, interface version per member):
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_driver_initialization_data
// DxgkInitialize reference (sample DriverEntry that fills the core PnP/power/interrupt slots):
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nf-dispmprt-dxgkinitialize
// WDDM driver and feature caps ("Render-Only: implement all the Render-specific DDIs and return a
// null pointer for all the Display-specific DDIs"; feature table per driver type):
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/display/wddm-driver-and-feature-caps
// TDR changes in Windows 8 ("Full graphics and Render only: Mandatory"; SupportPerEngineTDR obliges
// QueryDependentEngineGroup, QueryEngineStatus, ResetEngine and level-0 CollectDbgInfo):
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-changes-in-windows-8
// Native GPU fence objects (lists the KMD DDIs of the feature; seed 000 is a translation of it):
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/display/native-gpu-fence-objects
// User-mode work submission (doorbell DDIs; "IHV drivers and hardware that support UM work
// submission must continue to support the traditional kernel-mode work submission model
// simultaneously"; seed 004 is a translation of it):
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/display/user-mode-work-submission
// DXGK_FEATURE_ID (HWS is DXGK_FEATURE_HWSCH, a feature the driver may only enable when the OS
// says so; a driver that is not ALWAYS_ON must therefore also run with HWS off):
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ne-d3dkmddi-_dxgk_feature_id
//
// Two consequences drive most "classic" entries: (1) HWS is negotiated (DXGK_FEATURE_ID), so the
// software-scheduled path must work when the OS leaves HWS off; (2) user-mode submission requires
// kernel-mode submission to keep working beside it. Both mean the WDDM 2.x kernel-mode render set
// (GPU virtual addressing, because native fences and rings are addressed by GPU VA) is mandatory
// in addition to the HWS, native-fence and doorbell DDIs.
//
// The mandatory slots by area:
// - Miniport core: PnP, power, interrupts, I/O. Every WDDM KMD provides these whatever its type;
//   the DxgkInitialize sample fills them all, and Microsoft lists no exemption for render-only
//   adapters (a render-only driver answers "no children" rather than leaving them null). Source:
//   https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/nf-dispmprt-dxgkinitialize
// - Render set (WDDM 2.x, GPU virtual addressing, kernel-mode submission). Mandatory because a
//   render-only driver implements "all the Render-specific DDIs" (feature-caps page) and the
//   kernel-mode path must keep working beside HWS and user-mode submission (see above).
// - TDR. "Full graphics and Render only: Mandatory" on the TDR page; TDR-01, TDR-09.
// - Hardware scheduling (HWS stage 1). Microsoft publishes no conceptual page listing the HWS
//   DDIs; these are the ones Windows' hardware-scheduling mode calls according to their reference
//   pages and the decompiled 22631 dxgmms2 (VidSchiInitializeNode sets priority bands,
//   VidSchCreateSchedulingLogs hands a log per node, VidSchiUpdateDdiHwContextPriority sets
//   context properties, VidSchiResetHwEngine resets and resumes; docs/hws.md).
// - Native GPU fences: the KMD DDIs the native-fence page lists (NF-12, NF-07, NF-17, LOG-01).
// - User-mode submission: the doorbell DDIs of the user-mode submission page (UM-15).
// - Runtime power management. Optional in the feature-caps table, but "if this feature is
//   supported, DxgkDdiSetPowerComponentFState and DxgkDdiPowerRuntimeControlRequest must be
//   supported"; UM-13 (engine TransitionToF1, the OS moving the power component F0->F1) needs the
//   feature, so both are mandatory for rvgpu.

/// `(slot, reason)` for the catalog's slots of `class`.
fn listed(class: Class) -> Vec<(&'static str, &'static str)> {
    catalog::of_class(class)
        .map(|d| (d.name, d.reason))
        .collect()
}

/// Mandatory slots the driver does not fill today. Implementing one means deleting it here (the
/// `implemented_ddis_are_not_listed_as_gaps` test fails until then). Grouped by the issue that
/// closes them; docs/ddi-status.md has the same list with requirement IDs.
const KNOWN_GAPS: &[&str] = &[
    // (Runtime power management, UM-13: filled by the power work, crate `rvgpu_kmd::power`.)
];

/// The driver's table, built exactly as `DriverEntry` builds it (for a platform whose functions
/// are never called here).
fn table() -> DRIVER_INITIALIZATION_DATA {
    rvgpu_kmd::initialization_data::<NullPlatform>()
}

fn filled(d: &DRIVER_INITIALIZATION_DATA) -> BTreeSet<&'static str> {
    rvgpu_ddi::init::filled_slots(d)
        .filter(|&(_, set)| set)
        .map(|(name, _)| name)
        .collect()
}

fn names(list: &[(&'static str, &'static str)]) -> BTreeSet<&'static str> {
    list.iter().map(|&(n, _)| n).collect()
}

/// Prints every mandatory slot with its state, then any filled non-mandatory slot.
fn print_table(d: &DRIVER_INITIALIZATION_DATA) {
    let set = filled(d);
    let gaps: BTreeSet<_> = KNOWN_GAPS.iter().copied().collect();
    println!("DDI table (Version {:#x})", d.Version);
    println!("{:<42} {:<12} why", "mandatory slot", "state");
    for &(name, why) in &listed(Class::Mandatory) {
        let state = if set.contains(name) {
            "filled"
        } else if gaps.contains(name) {
            "MISSING(gap)"
        } else {
            "MISSING"
        };
        let short = why.split("; http").next().unwrap_or(why);
        println!("{name:<42} {state:<12} {short}");
    }
    let mandatory = names(&listed(Class::Mandatory));
    for name in set.iter().filter(|n| !mandatory.contains(*n)) {
        println!("{name:<42} {:<12} (not mandatory)", "filled");
    }
    let done = listed(Class::Mandatory)
        .iter()
        .filter(|(n, _)| set.contains(n))
        .count();
    println!(
        "{done}/{} mandatory slots filled",
        listed(Class::Mandatory).len()
    );
}

/// Fails with `what` and the slots unless `found` is empty.
fn none<T: std::fmt::Debug>(found: &[T], what: &str) {
    assert!(found.is_empty(), "{what}: {found:?}");
}

#[test]
fn every_mandatory_slot_is_filled_or_a_known_gap() {
    let d = table();
    print_table(&d);
    let set = filled(&d);
    let gaps: BTreeSet<_> = KNOWN_GAPS.iter().copied().collect();
    let unaccounted: Vec<_> = listed(Class::Mandatory)
        .iter()
        .map(|&(n, _)| n)
        .filter(|n| !set.contains(n) && !gaps.contains(n))
        .collect();
    none(
        &unaccounted,
        "mandatory slots neither filled nor listed in KNOWN_GAPS",
    );
}

#[test]
fn implemented_ddis_are_not_listed_as_gaps() {
    let set = filled(&table());
    let stale: Vec<_> = KNOWN_GAPS.iter().filter(|n| set.contains(*n)).collect();
    none(
        &stale,
        "these slots are filled now: remove them from KNOWN_GAPS (and docs/ddi-status.md)",
    );
}

#[test]
fn every_filled_slot_is_mandatory_or_justified() {
    let set = filled(&table());
    let mandatory = names(&listed(Class::Mandatory));
    let optional = names(&listed(Class::Optional));
    let unjustified: Vec<_> = set
        .iter()
        .filter(|n| !mandatory.contains(*n) && !optional.contains(*n))
        .collect();
    none(
        &unjustified,
        "filled slots that are neither Mandatory nor Optional with a reason in the catalog",
    );
    // The reserved slots must stay null (dispmprt.h reserves them), except Reserved4: the
    // 26100 WDK's name for the slot Microsoft's reference calls DxgkDdiFlushHwQueue, which the
    // 22631 kernel requires for a user-mode-submission node.
    let reserved: Vec<_> = set
        .iter()
        .filter(|n| n.starts_with("Reserved") && **n != "Reserved4")
        .collect();
    assert!(reserved.is_empty(), "reserved slots filled: {reserved:?}");
}

#[test]
fn version_is_wddm_3_2() {
    let d = table();
    assert_eq!(
        d.Version, DXGKDDI_INTERFACE_VERSION_WDDM3_2,
        "DRIVER_INITIALIZATION_DATA.Version is {:#x}, expected DXGKDDI_INTERFACE_VERSION_WDDM3_2 \
         ({DXGKDDI_INTERFACE_VERSION_WDDM3_2:#x})",
        d.Version
    );
}

/// The lists themselves: a misspelt slot name would make the checks above pass vacuously.
#[test]
fn lists_name_real_slots_and_are_consistent() {
    let all: BTreeSet<_> = DRIVER_INITIALIZATION_DATA::SLOT_NAMES
        .iter()
        .copied()
        .collect();
    let check = |list: &str, slots: &mut dyn Iterator<Item = &'static str>| {
        let mut seen = BTreeSet::new();
        for n in slots {
            assert!(
                all.contains(n),
                "{list}: {n} is not a DRIVER_INITIALIZATION_DATA slot"
            );
            assert!(seen.insert(n), "{list}: {n} listed twice");
        }
    };
    check(
        "Mandatory",
        &mut listed(Class::Mandatory).iter().map(|&(n, _)| n),
    );
    check("KNOWN_GAPS", &mut KNOWN_GAPS.iter().copied());
    check(
        "Optional",
        &mut listed(Class::Optional).iter().map(|&(n, _)| n),
    );
    check(
        "LeftOut",
        &mut listed(Class::LeftOut).iter().map(|&(n, _)| n),
    );

    let mandatory = names(&listed(Class::Mandatory));
    for gap in KNOWN_GAPS {
        assert!(
            mandatory.contains(gap),
            "KNOWN_GAPS: {gap} is not Mandatory"
        );
    }
    for &(n, _) in listed(Class::Optional)
        .iter()
        .chain(&listed(Class::LeftOut))
    {
        assert!(!mandatory.contains(n), "{n} is both Mandatory and optional");
    }
    // A reason without a link rests on the row's own reference page (`Ddi::page`).
    for d in catalog::of_class(Class::Mandatory).chain(catalog::of_class(Class::Optional)) {
        assert!(
            d.reason.contains("https://learn.microsoft.com/") || !d.page.is_empty(),
            "{}: the reason must cite its Microsoft source",
            d.name
        );
    }
    for &(n, why) in &listed(Class::LeftOut) {
        assert!(!why.is_empty(), "{n}: LeftOut needs a reason");
    }
}

/// NF-12: the native-fence DDIs the driver must implement: the six fence DDIs and the two
/// log DDIs (LOG-01, LOG-07, LOG-09).
#[test]
fn nf_12_native_fence_ddis_filled_and_log_ddis_tracked() {
    let d = rvgpu_kmd::initialization_data::<NullPlatform>();
    let filled: BTreeSet<&str> = rvgpu_ddi::init::filled_slots(&d)
        .filter(|&(_, set)| set)
        .map(|(n, _)| n)
        .collect();
    for ddi in NATIVE_FENCE_DDIS {
        assert!(filled.contains(ddi), "{ddi} is not filled");
    }
    for ddi in [
        "DxgkDdiSetNativeFenceLogBuffer",
        "DxgkDdiUpdateNativeFenceLogs",
    ] {
        assert!(filled.contains(ddi), "{ddi} is not filled (LOG-09)");
        assert!(!KNOWN_GAPS.contains(&ddi), "{ddi} is filled: not a gap");
    }
}

/// TDR-01: the four DDIs `SupportPerEngineTDR` obliges (QueryDependentEngineGroup,
/// QueryEngineStatus, ResetEngine, level-0 CollectDbgInfo) and the adapter-wide pair are filled,
/// and the driver's advertisement rule (`rvgpu_kmd::per_engine_tdr_for`) sets the bit
/// for a device with `PER_ENGINE_RESET` only.
#[test]
fn tdr_01_per_engine_tdr_ddis_filled_and_cap_gated_on_the_device() {
    use rvgpu_hw::regs::Caps;
    let set = filled(&table());
    for ddi in [
        "DxgkDdiQueryDependentEngineGroup",
        "DxgkDdiQueryEngineStatus",
        "DxgkDdiResetEngine",
        "DxgkDdiCollectDbgInfo",
        "DxgkDdiResetFromTimeout",
        "DxgkDdiRestartFromTimeout",
    ] {
        assert!(set.contains(ddi), "{ddi} is not filled");
    }
    assert!(rvgpu_kmd::per_engine_tdr_for::<NullPlatform>(
        Caps::ATOMIC64 | Caps::PER_ENGINE_RESET
    ));
    assert!(
        !rvgpu_kmd::per_engine_tdr_for::<NullPlatform>(Caps::ATOMIC64),
        "a device without per-engine reset gets the adapter-wide path only (TDR-09)"
    );
    // Hardware-scheduled nodes reset through the HWS pair instead (docs/hws.md §3).
    assert!(set.contains("DxgkDdiResetHwEngine") && set.contains("DxgkDdiResumeHwEngine"));
}

/// UM-22: presentation is not part of user-mode submission, and rvgpu is render-only: none of
/// the present paths beyond the render core's `DxgkDdiPresent` (which Windows demands, BR-47,
/// and which refuses every present: tests/ddi_robustness.rs) is in the table — no present
/// through a hardware queue, no overlay or flip presents — while the user-mode submission DDIs
/// are.
#[test]
fn um_22_no_presentation_ddis_beside_user_mode_submission() {
    let d = table();
    let f = filled(&d);
    for present in [
        "DxgkDdiPresentToHwQueue",
        "DxgkDdiPostMultiPlaneOverlayPresent",
        "DxgkDdiSetInterruptTargetPresentId",
    ] {
        assert!(
            !f.contains(present),
            "{present} is filled in a render-only driver"
        );
    }
    for ums in [
        "DxgkDdiCreateDoorbell",
        "DxgkDdiConnectDoorbell",
        "DxgkDdiDisconnectDoorbell",
        "DxgkDdiDestroyDoorbell",
        "DxgkDdiNotifyWorkSubmission",
    ] {
        assert!(f.contains(ums), "{ums} is missing");
    }
}

/// The rows of a docs/ddi-status.md table: `| a | b |` per row, rows left out by `class`
/// grouped by their text (one table row naming every slot with the same reason).
fn doc_table(class: Class, header: &str) -> String {
    let mut out = format!("{header}\n");
    let cols = header.matches(" | ").count() + 1;
    out.push_str(&format!("|{}\n", " --- |".repeat(cols)));
    let mut rows: Vec<(Vec<&str>, &str, &str)> = Vec::new();
    for d in catalog::of_class(class) {
        match rows
            .iter_mut()
            .find(|r| class == Class::LeftOut && r.1 == d.doc.0)
        {
            Some(r) => r.0.push(d.name),
            None => rows.push((vec![d.name], d.doc.0, d.doc.1)),
        }
    }
    for (names, a, b) in rows {
        let cells = if cols == 2 { vec![a] } else { vec![a, b] };
        out.push_str(&format!(
            "| {} | {} |\n",
            names.join(", "),
            cells.join(" | ")
        ));
    }
    out
}

/// docs/ddi-status.md's slot tables are the catalog's rows, between `<!-- catalog: NAME -->`
/// and `<!-- /catalog -->`; `RVGPU_BLESS=1` rewrites them.
#[test]
fn docs_tables_are_the_catalogs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ddi-status.md");
    let doc = std::fs::read_to_string(path).expect("docs/ddi-status.md");
    let tables = [
        (
            "mandatory",
            doc_table(Class::Mandatory, "| Slot | Requirements | Source |"),
        ),
        (
            "optional",
            doc_table(Class::Optional, "| Slot | What rvgpu does | Why |"),
        ),
        (
            "left out",
            doc_table(Class::LeftOut, "| Slot | Why not mandatory |"),
        ),
    ];
    let mut blessed = doc.clone();
    for (name, want) in &tables {
        let open = format!("<!-- catalog: {name} -->\n");
        let from = blessed.find(&open).map(|i| i + open.len());
        let from = from.unwrap_or_else(|| panic!("docs/ddi-status.md: no `{open}`"));
        let to = from
            + blessed[from..]
                .find("<!-- /catalog -->")
                .expect("end marker");
        blessed.replace_range(from..to, want);
    }
    if std::env::var_os("RVGPU_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(path, &blessed).expect("write docs/ddi-status.md");
        return;
    }
    assert!(
        doc == blessed,
        "docs/ddi-status.md's tables differ from rvgpu_ddi::catalog; regenerate them with\n\n    \
         RVGPU_BLESS=1 cargo test -p rvgpu --test ddi_table docs_tables\n"
    );
}

/// The catalog's groups are the ones the driver's capability checks read: a slot of a group
/// obliges the capability (the KMD's `ddi::table::Filled`), so each is mandatory and filled.
#[test]
fn capability_groups_are_mandatory_and_filled() {
    let set = filled(&table());
    for g in [
        Group::NativeFence,
        Group::FenceLogs,
        Group::PerEngineTdr,
        Group::Hws,
    ] {
        assert!(catalog::of_group(g).count() > 1, "{g:?}");
        for d in catalog::of_group(g) {
            assert_eq!(d.class, Class::Mandatory, "{g:?}: {}", d.name);
            assert!(set.contains(d.name), "{g:?}: {} is not filled", d.name);
        }
    }
}

/// Each catalog row's page is the one the binding of its type cites (driver/ddi/src).
#[test]
fn catalog_pages_are_the_bindings_pages() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/driver/ddi/src");
    let mut source = String::new();
    for e in std::fs::read_dir(dir).expect("driver/ddi/src") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "rs") {
            source.push_str(&std::fs::read_to_string(&p).expect("read"));
        }
    }
    let prefix = "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/";
    let mut checked = 0;
    for d in CATALOG.iter().filter(|d| d.ty != "PVOID") {
        let unbound = format!("unbound_fn!({}, \"{prefix}{}\")", d.ty, d.page);
        let cited = format!("<{prefix}{}>", d.page);
        // The doc comment right above `pub type TY =` names the page.
        let declared = format!("pub type {} =", d.ty);
        let bound = source.match_indices(&declared).any(|(at, _)| {
            let above = &source[..source[..at].rfind('\n').unwrap_or(0)];
            above
                .lines()
                .rev()
                .take_while(|l| l.trim_start().starts_with("//"))
                .any(|l| l.contains(&cited))
        });
        assert!(
            source.contains(&unbound) || bound,
            "{}: the binding of {} does not cite {}",
            d.name,
            d.ty,
            d.page
        );
        checked += 1;
    }
    assert!(checked > 90, "{checked}");
}
