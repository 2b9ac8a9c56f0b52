//! Addresses are typed where they cross a crate: a `pub fn` of the driver's, the device's, the
//! user-mode driver's or the simulated OS's crates takes a GPU virtual address as
//! `rvgpu_hw::addr::GpuVa`, a bus address as `rvgpu_hw::addr::BusAddr` and an address in the
//! device's physical space (system memory and VRAM) as `rvgpu_hw::addr::PhysAddr`, never as a
//! bare `u64` a caller can mix up with a length, a value or another kind of address.
//!
//! A parameter counts as an address by its name: `va`, `addr`, `address`, `gpa`, `bus`, `pa`
//! alone, or as a `_`-separated end (`first_va`, `bus_addr`) or start (`va_hi`). Windows's
//! own layouts (the DXGKARG_* and D3DKMT structures, the C API of `rvgpu_umd.h`) keep their
//! integer fields; the code converts where it reads them.

use super::functions::functions;
use super::{none_bad, root, tree_files};

/// The crates whose `pub fn`s are checked.
const CRATES: &[&str] = &[
    "driver/hw/src/",
    "driver/kmd/src/",
    "device/src/",
    "umd/src/",
    "simos/src/",
];

/// Trees of those crates whose addresses are not GPU or bus addresses.
const NOT_GPU: &[(&str, &str)] = &[(
    "simos/src/pe/",
    "the PE emulator's addresses are the x86-64 guest's CPU addresses",
)];

/// Signatures bound to a layout outside Rust's types (`file::function(parameter)`), each with
/// its reason. These stay.
const LAYOUT_BOUND: &[(&str, &str)] = &[
    (
        "driver/hw/src/mmu.rs::page(addr)",
        "a page-table entry's address field: a system bus address or a VRAM offset, as the \
         entry's VRAM bit says (hardware.md §12)",
    ),
    (
        "umd/src/capi.rs::rvgpu_buffer_map_va(va)",
        "the C API of rvgpu_umd.h: a `uint64_t`, typed where it is read",
    ),
];

/// Whether a parameter's name says it holds an address.
fn names_an_address(name: &str) -> bool {
    const WORDS: &[&str] = &["va", "addr", "address", "gpa", "bus", "pa"];
    let parts: Vec<&str> = name.split('_').collect();
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
        return false;
    };
    WORDS.contains(last) || WORDS.contains(first)
}

/// The parameters of the function declared from `decl` on: (name, type), split at the
/// top-level commas between the parentheses after the name and generics.
fn parameters(decl: &str) -> Vec<(String, String)> {
    let Some(open) = decl.find('(') else {
        return Vec::new();
    };
    let mut depth = 0i32;
    let mut list = Vec::new();
    let mut cur = String::new();
    for c in decl[open + 1..].chars() {
        match c {
            '(' | '<' | '[' => depth += 1,
            ')' if depth == 0 => break,
            ')' | '>' | ']' => depth -= 1,
            ',' if depth == 0 => {
                list.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    list.push(cur);
    list.iter()
        .filter_map(|p| {
            let (name, ty) = p.split_once(':')?;
            let name = name.trim().trim_start_matches("mut ").trim();
            Some((name.to_owned(), ty.trim().to_owned()))
        })
        .collect()
}

/// Every `pub fn` parameter of `text` named like an address and typed `u64`, as
/// `function(parameter)` with its line.
fn raw_addresses(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (name, line, _) in functions(text) {
        let first = lines.get(line - 1).copied().unwrap_or("");
        if !first.trim_start().starts_with("pub ") {
            continue;
        }
        // The declaration up to its body (or the end of the function's first lines).
        let decl: String = lines[line - 1..]
            .iter()
            .take(40)
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let decl = &decl[decl.find(&format!("fn {name}")).unwrap_or(0)..];
        for (param, ty) in parameters(decl) {
            if ty == "u64" && names_an_address(&param) {
                found.push((format!("{name}({param})"), line));
            }
        }
    }
    found
}

/// The `pub fn`s of the driver's, device's, UMD's and simulated OS's crates take GPU and bus
/// addresses typed, except the layout-bound signatures of [`LAYOUT_BOUND`].
#[test]
fn public_functions_take_addresses_typed() {
    let mut bad = Vec::new();
    let mut seen = Vec::new();
    for file in tree_files() {
        if !file.ends_with(".rs") || !CRATES.iter().any(|c| file.starts_with(c)) {
            continue;
        }
        if NOT_GPU.iter().any(|(t, _)| file.starts_with(t)) {
            continue;
        }
        let name = file.rsplit('/').next().unwrap_or("");
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        for (f, line) in raw_addresses(&text) {
            let id = format!("{file}::{f}");
            if !LAYOUT_BOUND.iter().any(|(l, _)| *l == id) {
                bad.push(format!(
                    "{file}:{line}: `{f}` is a raw u64 address: take GpuVa, BusAddr or PhysAddr"
                ));
            }
            seen.push(id);
        }
    }
    for (k, _) in LAYOUT_BOUND {
        if !seen.iter().any(|s| s == k) {
            bad.push(format!(
                "{k} is typed now (or gone): remove it from its list"
            ));
        }
    }
    none_bad(&bad, "raw u64 addresses at a crate's public functions");
}

/// The scanner finds what it must: an address parameter of a `pub fn` over several lines, by
/// its name's first or last word; not a value, a private function or a typed address.
#[test]
fn the_address_scanner_finds_what_it_must() {
    let text = "\
pub fn a(&self, first_va: u64, value: u64, n: Option<(u64, u64)>,
    va_hi: u64) -> u64 {
    0
}
fn private(va: u64) {}
pub(crate) fn inner(addr: u64) {}
pub const fn typed(va: GpuVa, bus_addr: BusAddr) {}
pub fn len(evaluate: u64, capa: u64) {}
";
    let got: Vec<String> = raw_addresses(text).into_iter().map(|(f, _)| f).collect();
    assert_eq!(got, ["a(first_va)", "a(va_hi)"]);
}
