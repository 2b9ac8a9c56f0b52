//! Unit tests of the WDK layout-assertion generator (build/layout_gen.rs), on samples of
//! bindgen-style output. The generator itself only runs in build.rs when a WDK is installed.

// Host-side test code (and the generator is build tooling): the kernel lints do not apply.
#![allow(
    clippy::indexing_slicing,
    clippy::string_slice,
    clippy::arithmetic_side_effects,
    dead_code
)]

#[path = "../build/layout_gen.rs"]
mod layout_gen;

use layout_gen::{
    generate, generate_consts, parse_bindgen, parse_int, scan_ddi_consts, scan_ddi_source,
    CheckMode,
};

/// What bindgen 0.73 emits for two small WDK structures (formatted by rustfmt, hence the
/// split offset lines), plus the typedef aliases.
const BINDGEN_SAMPLE: &str = r#"
#[repr(C)]
#[derive(Copy, Clone)]
pub struct _DXGK_START_INFO {
    pub RequiredDmaQueueEntry: ULONG,
    pub AdapterGuid: GUID,
    pub AdapterLuid: LUID,
}
#[allow(clippy::unnecessary_operation, clippy::identity_op)]
const _: () = {
    ["Size of _DXGK_START_INFO"][::std::mem::size_of::<_DXGK_START_INFO>() - 32usize];
    ["Alignment of _DXGK_START_INFO"][::std::mem::align_of::<_DXGK_START_INFO>() - 4usize];
    ["Offset of field: _DXGK_START_INFO::RequiredDmaQueueEntry"]
        [::std::mem::offset_of!(_DXGK_START_INFO, RequiredDmaQueueEntry) - 0usize];
    ["Offset of field: _DXGK_START_INFO::AdapterGuid"]
        [::std::mem::offset_of!(_DXGK_START_INFO, AdapterGuid) - 4usize];
    ["Offset of field: _DXGK_START_INFO::AdapterLuid"]
        [::std::mem::offset_of!(_DXGK_START_INFO, AdapterLuid) - 20usize];
};
pub type DXGK_START_INFO = _DXGK_START_INFO;
pub type PDXGK_START_INFO = *mut _DXGK_START_INFO;
#[repr(C)]
pub struct _DXGKARG_QUERYADAPTERINFO {
    pub Type: DXGK_QUERYADAPTERINFOTYPE,
    pub pInputData: *const ::core::ffi::c_void,
    pub InputDataSize: UINT,
    pub pOutputData: *mut ::core::ffi::c_void,
    pub OutputDataSize: UINT,
    pub __bindgen_anon_1: _DXGKARG_QUERYADAPTERINFO__bindgen_ty_1,
}
const _: () = {
    ["Size of _DXGKARG_QUERYADAPTERINFO"][::std::mem::size_of::<_DXGKARG_QUERYADAPTERINFO>() - 48usize];
    ["Alignment of _DXGKARG_QUERYADAPTERINFO"][::std::mem::align_of::<_DXGKARG_QUERYADAPTERINFO>() - 8usize];
    ["Offset of field: _DXGKARG_QUERYADAPTERINFO::Type"][::std::mem::offset_of!(_DXGKARG_QUERYADAPTERINFO, Type) - 0usize];
    ["Offset of field: _DXGKARG_QUERYADAPTERINFO::pInputData"][::std::mem::offset_of!(_DXGKARG_QUERYADAPTERINFO, pInputData) - 8usize];
    ["Offset of field: _DXGKARG_QUERYADAPTERINFO::InputDataSize"][::std::mem::offset_of!(_DXGKARG_QUERYADAPTERINFO, InputDataSize) - 16usize];
    ["Offset of field: _DXGKARG_QUERYADAPTERINFO::pOutputData"][::std::mem::offset_of!(_DXGKARG_QUERYADAPTERINFO, pOutputData) - 24usize];
    ["Offset of field: _DXGKARG_QUERYADAPTERINFO::OutputDataSize"][::std::mem::offset_of!(_DXGKARG_QUERYADAPTERINFO, OutputDataSize) - 32usize];
};
pub type DXGKARG_QUERYADAPTERINFO = _DXGKARG_QUERYADAPTERINFO;
"#;

/// A DDI-crate source file in the style rvgpu-ddi uses.
const DDI_SAMPLE: &str = r#"
/// <https://learn.microsoft.com/...>
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DXGK_START_INFO {
    pub RequiredDmaQueueEntry: ULONG,
    pub AdapterGuid: GUID,
    pub AdapterLuid: LUID,
}

#[repr(C)]
pub struct DXGKARG_QUERYADAPTERINFO {
    pub Type: u32,
    pub pInputData: *const c_void,
    pub InputDataSize: u32,
    pub pOutputData: *mut c_void,
    pub OutputDataSize: u32,
    pub Flags: u32,
    // A comment line
    pub hKmdProcessHandle: HANDLE,
}

pub struct NotReprC {
    pub a: u32,
}

#[repr(C)]
pub struct RvgpuOnlyType {
    pub x: u64,
}

#[repr(C)]
pub struct Tuple(pub u32);
"#;

#[test]
fn parses_sizes_alignments_offsets_and_aliases() {
    let wdk = parse_bindgen(BINDGEN_SAMPLE);
    let start = &wdk.types["_DXGK_START_INFO"];
    assert_eq!(start.size, Some(32));
    assert_eq!(start.align, Some(4));
    assert_eq!(start.fields["AdapterLuid"], 20);
    assert_eq!(wdk.aliases["DXGK_START_INFO"], "_DXGK_START_INFO");
    assert!(
        !wdk.aliases.contains_key("PDXGK_START_INFO"),
        "pointer typedefs are not aliases"
    );
    let (name, qai) = wdk.find("DXGKARG_QUERYADAPTERINFO").unwrap();
    assert_eq!(name, "_DXGKARG_QUERYADAPTERINFO");
    assert_eq!(qai.size, Some(48));
    assert_eq!(qai.fields.len(), 5);
}

#[test]
fn scans_only_repr_c_named_field_types() {
    let ddi = scan_ddi_source("dxgk", DDI_SAMPLE);
    let names: Vec<&str> = ddi.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "DXGK_START_INFO",
            "DXGKARG_QUERYADAPTERINFO",
            "RvgpuOnlyType"
        ]
    );
    assert_eq!(ddi[1].fields.len(), 7);
    assert_eq!(ddi[1].module, "dxgk");
}

#[test]
fn generates_assertions_for_matches_and_reports_the_rest() {
    let wdk = parse_bindgen(BINDGEN_SAMPLE);
    let ddi = scan_ddi_source("", DDI_SAMPLE);
    let g = generate(&wdk, &ddi, "rvgpu_ddi");
    assert!(g.code.contains(
        "const _: () = assert!(::core::mem::size_of::<::rvgpu_ddi::DXGK_START_INFO>() == 32,"
    ));
    assert!(g
        .code
        .contains("::core::mem::align_of::<::rvgpu_ddi::DXGK_START_INFO>() == 4,"));
    assert!(g.code.contains(
        "::core::mem::offset_of!(::rvgpu_ddi::DXGKARG_QUERYADAPTERINFO, OutputDataSize) == 32,"
    ));
    // 2 types x (size + align) + 3 + 5 fields.
    assert_eq!(g.assertions, 12);
    let unchecked = g.unchecked.join("\n");
    assert!(
        unchecked.contains("RvgpuOnlyType: no WDK type"),
        "{unchecked}"
    );
    assert!(
        unchecked.contains("DXGKARG_QUERYADAPTERINFO::Flags"),
        "{unchecked}"
    );
    assert!(
        unchecked.contains("DXGKARG_QUERYADAPTERINFO::hKmdProcessHandle"),
        "{unchecked}"
    );
}

/// The emitted assertions are valid Rust that holds for matching layouts: check them against
/// real repr(C) types whose layouts we also give to the generator as "bindgen output".
#[allow(non_snake_case, non_camel_case_types, clippy::upper_case_acronyms)]
mod rvgpu_ddi_stand_in {
    #[repr(C)]
    pub struct PAIR {
        pub A: u32,
        pub B: u64,
    }
}

#[test]
fn emitted_numbers_match_rust_layouts() {
    use core::mem::{align_of, offset_of, size_of};
    use rvgpu_ddi_stand_in::PAIR;
    let sample = format!(
        "[\"Size of _PAIR\"][::std::mem::size_of::<_PAIR>() - {}usize];\n\
         [\"Alignment of _PAIR\"][::std::mem::align_of::<_PAIR>() - {}usize];\n\
         [\"Offset of field: _PAIR::A\"][::std::mem::offset_of!(_PAIR, A) - {}usize];\n\
         [\"Offset of field: _PAIR::B\"][::std::mem::offset_of!(_PAIR, B) - {}usize];\n\
         pub type PAIR = _PAIR;\n",
        size_of::<PAIR>(),
        align_of::<PAIR>(),
        offset_of!(PAIR, A),
        offset_of!(PAIR, B)
    );
    let wdk = parse_bindgen(&sample);
    let ddi = scan_ddi_source(
        "",
        "#[repr(C)]\npub struct PAIR {\n    pub A: u32,\n    pub B: u64,\n}\n",
    );
    let g = generate(&wdk, &ddi, "x");
    assert_eq!(g.assertions, 4);
    assert!(g.unchecked.is_empty(), "{:?}", g.unchecked);
    assert!(g.code.contains(&format!(
        "offset_of!(::x::PAIR, B) == {}",
        offset_of!(PAIR, B)
    )));
    assert!(g
        .code
        .contains(&format!("size_of::<::x::PAIR>() == {}", size_of::<PAIR>())));
}

/// rustfmt's wrapped forms of bindgen output: a label split over lines, a constant whose value
/// is on the next line, and nested anonymous aggregates reached through field types.
const BINDGEN_WRAPPED: &str = r#"
#[repr(C)]
pub struct _OUTER {
    pub Kind: UINT,
    pub __bindgen_anon_1: _OUTER__bindgen_ty_1,
}
#[repr(C)]
pub union _OUTER__bindgen_ty_1 {
    pub Small: _OUTER__bindgen_ty_1__bindgen_ty_1,
    pub Value: u64,
}
#[repr(C)]
pub struct _OUTER__bindgen_ty_1__bindgen_ty_1 {
    pub A: UINT,
    pub B: UINT,
}
const _: () = {
    ["Size of _OUTER"][::std::mem::size_of::<_OUTER>() - 16usize];
    ["Offset of field: _OUTER::__bindgen_anon_1"]
        [::std::mem::offset_of!(_OUTER, __bindgen_anon_1) - 8usize];
    ["Size of _OUTER__bindgen_ty_1"][::std::mem::size_of::<_OUTER__bindgen_ty_1>() - 8usize];
    ["Size of _OUTER__bindgen_ty_1__bindgen_ty_1"]
        [::std::mem::size_of::<_OUTER__bindgen_ty_1__bindgen_ty_1>() - 8usize];
    [
        "Offset of field: _OUTER__bindgen_ty_1__bindgen_ty_1::B",
    ][::std::mem::offset_of!(
        _OUTER__bindgen_ty_1__bindgen_ty_1,
        B
    ) - 4usize];
};
pub type OUTER = _OUTER;
pub const SOME_VERY_LONG_ENUMERATOR_NAME: _SOME_VERY_LONG_ENUM_TYPE_NAME =
    400;
pub const HEX_DEFINE: u32 = 65540;
"#;

#[test]
fn parses_wrapped_labels_constants_and_nested_names() {
    let wdk = parse_bindgen(BINDGEN_WRAPPED);
    assert_eq!(
        wdk.types["_OUTER__bindgen_ty_1__bindgen_ty_1"].fields["B"],
        4
    );
    assert_eq!(wdk.consts["SOME_VERY_LONG_ENUMERATOR_NAME"], 400);
    assert_eq!(wdk.consts["HEX_DEFINE"], 0x10004);
    // rvgpu-ddi's names: OUTER_0 is the first anonymous member, OUTER_Small a named member of
    // it.
    assert_eq!(wdk.find("OUTER_0").unwrap().0, "_OUTER__bindgen_ty_1");
    assert_eq!(
        wdk.find("OUTER_Small").unwrap().0,
        "_OUTER__bindgen_ty_1__bindgen_ty_1"
    );
    assert!(wdk.find("OUTER_Missing").is_none());
}

#[test]
fn parses_integer_literals() {
    assert_eq!(parse_int("65540u32"), Some(65540));
    assert_eq!(parse_int("0x1_0004"), Some(0x10004));
    assert_eq!(parse_int("-1i32"), Some(-1));
    assert_eq!(parse_int(" 400 "), Some(400));
    assert_eq!(parse_int("1 << 3"), None);
    assert_eq!(parse_int("FOO"), None);
}

const DDI_MARKED: &str = r#"
/// Anonymous member mapping.
#[repr(C)]
pub struct OUTER {
    pub Kind: UINT,
    pub Anonymous: OUTER_0,
}

/// Follows a newer header than the one checked.
// wdk-layout-check: skip: pre-release layout in that header
#[repr(C)]
pub struct SKIPPED {
    pub x: u32,
}

/// Opaque.
#[repr(C)]
pub struct OPAQUE_OBJECT {
    _opaque: [u8; 0],
}

ddi_table! {
    /// A table macro.
    // wdk-layout-check: prefix: newer slots follow
    pub struct TABLE {
        header {
            /// Version.
            Version: ULONG = 0,
        }
        slots {
            /// First slot.
            SlotA: PFN,
            SlotB: PFN,
        }
    }
}

/// Value check.
pub const HEX_DEFINE: u32 = 0x1_0004;
/// Wrapped.
pub const SOME_VERY_LONG_ENUMERATOR_NAME: SOME_VERY_LONG_ENUM_TYPE_NAME =
    400;
// wdk-layout-check: skip: newer enumerator
pub const NEWER: u32 = 7;
pub const RVGPU_OWN: u32 = 1;
impl X {
    pub const ASSOCIATED: u32 = 3;
}
"#;

#[test]
fn scans_markers_opaque_types_and_ddi_tables() {
    let ddi = scan_ddi_source("m", DDI_MARKED);
    let names: Vec<&str> = ddi.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["OUTER", "SKIPPED", "OPAQUE_OBJECT", "TABLE"]);
    assert!(matches!(ddi[1].mode, CheckMode::Skip(_)));
    assert!(ddi[2].opaque);
    assert!(matches!(ddi[3].mode, CheckMode::Prefix(_)));
    assert_eq!(ddi[3].fields, ["Version", "SlotA", "SlotB"]);
    assert_eq!(ddi[0].mode, CheckMode::Full);

    let wdk = parse_bindgen(BINDGEN_WRAPPED);
    let g = generate(&wdk, &ddi, "x");
    // OUTER::Anonymous is bindgen's __bindgen_anon_1 at 8.
    assert!(
        g.code.contains("offset_of!(::x::m::OUTER, Anonymous) == 8"),
        "{}",
        g.code
    );
    let unchecked = g.unchecked.join("\n");
    assert!(
        unchecked.contains("SKIPPED: skipped: pre-release"),
        "{unchecked}"
    );
    assert!(unchecked.contains("OPAQUE_OBJECT: opaque"), "{unchecked}");
}

#[test]
fn prefix_types_assert_at_least_the_header_size() {
    let wdk = parse_bindgen(
        "[\"Size of _TABLE\"][::std::mem::size_of::<_TABLE>() - 16usize];\n\
         [\"Offset of field: _TABLE::SlotA\"][::std::mem::offset_of!(_TABLE, SlotA) - 8usize];\n",
    );
    let ddi = scan_ddi_source("", DDI_MARKED);
    let g = generate(&wdk, &ddi, "x");
    assert!(
        g.code.contains("size_of::<::x::TABLE>() >= 16"),
        "{}",
        g.code
    );
    assert!(g.code.contains("offset_of!(::x::TABLE, SlotA) == 8"));
    assert!(g
        .unchecked
        .iter()
        .any(|u| u.contains("TABLE::SlotB: not in the WDK's _TABLE (newer slots follow)")));
}

#[test]
fn compares_top_level_integer_constants() {
    let consts = scan_ddi_consts("m", DDI_MARKED);
    let names: Vec<&str> = consts.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "HEX_DEFINE",
            "SOME_VERY_LONG_ENUMERATOR_NAME",
            "NEWER",
            "RVGPU_OWN"
        ]
    );
    assert!(consts[2].skip.is_some());
    let wdk = parse_bindgen(BINDGEN_WRAPPED);
    let mut g = layout_gen::Generated::default();
    let missing = generate_consts(&wdk, &consts, "x", &mut g);
    assert_eq!(missing, ["::x::m::RVGPU_OWN"]);
    assert_eq!(g.assertions, 2);
    assert!(g.code.contains("::x::m::HEX_DEFINE as i128 == 65540"));
    assert!(g.unchecked.iter().any(|u| u.contains("NEWER: skipped")));
}

/// `c_enum!` blocks as rvgpu-ddi writes them: implicit values count on from the last explicit
/// one (from 0 at the start of each enum), markers and comments inside the block apply as
/// above a `pub const`, and a value the scanner cannot read leaves the implicit ones after it
/// out rather than guessing.
const DDI_ENUMS: &str = r#"
c_enum! {
    /// First enum.
    pub type FIRST = i32 {
        /// Zero.
        FIRST_A,
        FIRST_B,
        // A plain comment.
        FIRST_C = 0x10,
        FIRST_D,
    }

    /// Second enum, in the same block.
    pub type SECOND = u32 {
        SECOND_A,
        // wdk-layout-check: skip: newer enumerator
        SECOND_B,
        SECOND_C = OTHER + 1,
        SECOND_D,
        SECOND_E = 7,
    }
}
pub const AFTER: u32 = 9;
"#;

#[test]
fn reads_c_enum_blocks_with_implicit_values() {
    let consts = scan_ddi_consts("m", DDI_ENUMS);
    let got: Vec<(&str, i128, bool)> = consts
        .iter()
        .map(|c| (c.name.as_str(), c.value, c.skip.is_some()))
        .collect();
    assert_eq!(
        got,
        [
            ("FIRST_A", 0, false),
            ("FIRST_B", 1, false),
            ("FIRST_C", 16, false),
            ("FIRST_D", 17, false),
            ("SECOND_A", 0, false),
            ("SECOND_B", 1, true),
            ("SECOND_E", 7, false),
            ("AFTER", 9, false),
        ]
    );
    let wdk = parse_bindgen("pub const FIRST_D: _FIRST = 17;\npub const SECOND_A: u32 = 0;\n");
    let mut g = layout_gen::Generated::default();
    let missing = generate_consts(&wdk, &consts, "x", &mut g);
    assert_eq!(g.assertions, 2);
    assert!(
        g.code.contains("::x::m::FIRST_D as i128 == 17"),
        "{}",
        g.code
    );
    assert_eq!(missing.len(), 5);
}

#[test]
fn index_word_union_declares_its_two_types() {
    let text = "index_word_union!(\n    LOG_0,\n    LOG_0_0,\n    LOG,\n    \"https://x\"\n);\n\
                // wdk-layout-check: skip: newer\n\
                index_word_union!(NEW_0, NEW_0_0, NEW, \"https://y\");\n";
    let ddi = scan_ddi_source("m", text);
    let got: Vec<(&str, Vec<&str>, bool)> = ddi
        .iter()
        .map(|t| {
            let fields = t.fields.iter().map(String::as_str).collect();
            (
                t.name.as_str(),
                fields,
                matches!(t.mode, CheckMode::Skip(_)),
            )
        })
        .collect();
    let parts = vec!["FirstFreeEntryIndex", "WraparoundCount"];
    let word = vec!["Anonymous", "AtomicWraparoundAndEntryIndex"];
    assert_eq!(
        got,
        [
            ("LOG_0_0", parts.clone(), false),
            ("LOG_0", word.clone(), false),
            ("NEW_0_0", parts, true),
            ("NEW_0", word, true),
        ]
    );
}

#[test]
fn interface_table_fields_follow_the_interface_header() {
    let text = r#"
interface_table! {
    /// Header only.
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct INTERFACE {}
}

interface_table! {
    /// A table.
    // wdk-layout-check: skip: newer
    #[size(40)]
    #[repr(C)]
    pub struct TABLE {
        /// A function.
        #[offset(32)]
        pub Function: PFN,
    }
}

c_type! {
    #[size(4)]
    #[repr(C)]
    pub struct PLAIN {
        #[offset(0)]
        pub Value: u32,
    }
}
"#;
    let ddi = scan_ddi_source("m", text);
    let header = [
        "Size",
        "Version",
        "Context",
        "InterfaceReference",
        "InterfaceDereference",
    ];
    assert_eq!(ddi.len(), 3);
    assert_eq!(ddi[0].name, "INTERFACE");
    assert_eq!(ddi[0].fields, header);
    assert_eq!(ddi[1].name, "TABLE");
    assert_eq!(ddi[1].fields[..5], header);
    assert_eq!(ddi[1].fields[5..], ["Function"]);
    assert!(matches!(ddi[1].mode, CheckMode::Skip(_)));
    assert_eq!(ddi[2].fields, ["Value"]);
}
