//! Unit tests of the WDK layout-assertion generator (build/layout_gen.rs), on samples of
//! bindgen-style output. The generator itself only runs in build.rs when a WDK is installed.

// Host-side test code (and the generator is build tooling): the kernel lints do not apply.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::string_slice,
    clippy::arithmetic_side_effects,
    dead_code
)]

#[path = "../build/layout_gen.rs"]
mod layout_gen;

use layout_gen::{generate, parse_bindgen, scan_ddi_source};

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
