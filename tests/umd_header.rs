//! `umd/include/rvgpu_umd.h` must declare exactly the C API that `umd/src/capi.rs` and
//! `umd/src/capi_context.rs` export, with the same parameter and return types, and the same
//! status values.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::string_slice,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;

fn read(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Rust FFI type -> C type, for the types the API uses.
fn c_type(rust: &str) -> String {
    let rust = rust.trim();
    if let Some(inner) = rust.strip_prefix("*mut ") {
        return format!("{} *", c_type(inner)).replace("* *", "**");
    }
    if let Some(inner) = rust.strip_prefix("*const ") {
        let inner = c_type(inner);
        // A const pointer to a pointer: `T *const *` (the pointee is what is const).
        if inner.ends_with('*') {
            return format!("{inner}const *");
        }
        return format!("const {inner} *");
    }
    match rust {
        "u32" => "uint32_t",
        "i32" => "int32_t",
        "u64" => "uint64_t",
        "usize" => "size_t",
        "c_char" => "char",
        "c_void" => "void",
        other => other,
    }
    .to_string()
}

fn normalize(c: &str) -> String {
    c.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" *", "*")
        .replace("* ", "*")
}

/// name -> (return type, [parameter types]) from capi.rs and capi_context.rs.
fn rust_api() -> BTreeMap<String, (String, Vec<String>)> {
    let src = read("umd/src/capi.rs") + &read("umd/src/capi_context.rs");
    let mut out = BTreeMap::new();
    let mut rest = src.as_str();
    while let Some(i) = rest.find("extern \"C\" fn ") {
        let after = &rest[i + "extern \"C\" fn ".len()..];
        let name_end = after.find('(').unwrap();
        let name = after[..name_end].trim().to_string();
        let params_end = after.find(')').unwrap();
        let params: Vec<String> = after[name_end + 1..params_end]
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| normalize(&c_type(p.split_once(':').unwrap().1)))
            .collect();
        let ret_part = &after[params_end + 1..];
        let ret = ret_part
            .trim_start()
            .strip_prefix("->")
            .map_or("void".into(), |r| {
                normalize(&c_type(r.split('{').next().unwrap()))
            });
        out.insert(name, (ret, params));
        rest = &after[params_end..];
    }
    out
}

/// name -> (return type, [parameter types]) from the header's prototypes.
fn header_api() -> BTreeMap<String, (String, Vec<String>)> {
    let h = read("umd/include/rvgpu_umd.h");
    let mut out = BTreeMap::new();
    for line in h
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(");") && l.contains("rvgpu_"))
    {
        let open = line.find('(').unwrap();
        let head = &line[..open];
        let name_start = head
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap()
            + 1;
        let name = head[name_start..].to_string();
        let ret = normalize(&head[..name_start]);
        let params: Vec<String> = line[open + 1..line.len() - 2]
            .split(',')
            .filter(|p| !p.trim().is_empty() && p.trim() != "void")
            .map(|p| {
                let p = p.trim();
                let cut = p
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap()
                    + 1;
                normalize(&p[..cut])
            })
            .collect();
        out.insert(name, (ret, params));
    }
    out
}

#[test]
fn header_declares_the_exported_functions() {
    let rust = rust_api();
    let header = header_api();
    assert!(rust.len() >= 9, "capi.rs: found {:?}", rust.keys());
    assert_eq!(
        rust.keys().collect::<Vec<_>>(),
        header.keys().collect::<Vec<_>>(),
        "function names differ between capi.rs and rvgpu_umd.h"
    );
    for (name, sig) in &rust {
        assert_eq!(
            Some(sig),
            header.get(name),
            "signature of {name} (Rust vs header)"
        );
    }
}

#[test]
fn status_values_agree() {
    let src = read("umd/src/capi/types.rs");
    let enum_body = src
        .split("pub enum RvgpuStatus {")
        .nth(1)
        .unwrap()
        .split('}')
        .next()
        .unwrap();
    let rust: Vec<(String, i64)> = enum_body
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && l.contains('='))
        .map(|l| {
            let (n, v) = l.trim_end_matches(',').split_once('=').unwrap();
            // CamelCase -> RVGPU_STATUS_SCREAMING_CASE
            let mut c = String::from("RVGPU_STATUS");
            for ch in n.trim().chars() {
                if ch.is_uppercase() {
                    c.push('_');
                }
                c.push(ch.to_ascii_uppercase());
            }
            (c, v.trim().parse().unwrap())
        })
        .collect();
    let h = read("umd/include/rvgpu_umd.h");
    let header: Vec<(String, i64)> = h
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("RVGPU_STATUS_"))
        .map(|l| {
            let (n, v) = l.trim_end_matches(',').split_once('=').unwrap();
            (n.trim().to_string(), v.trim().parse().unwrap())
        })
        .collect();
    assert!(!rust.is_empty());
    assert_eq!(rust, header, "RvgpuStatus values (Rust vs header)");
}

/// The `RVGPU_LOCK_*` flag constants of capi.rs and the header's `#define`s: same names, same
/// values (capi.rs asserts at compile time that they are `usage::LockFlags`' bits).
#[test]
fn lock_flag_values_agree() {
    fn parse(v: &str) -> u64 {
        let v = v.trim().trim_end_matches(';').trim_end_matches('u');
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).unwrap(),
            None => v.replace('_', "").parse().unwrap(),
        }
    }
    /// `RVGPU_LOCK_<name>` -> value, from the lines of `text` that start with `prefix`;
    /// `split` tells the name from the value in what follows it.
    fn flags(
        text: &str,
        prefix: &str,
        split: impl Fn(&str) -> (&str, &str),
    ) -> BTreeMap<String, u64> {
        text.lines()
            .map(str::trim)
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|l| {
                let (name, value) = split(l);
                (format!("RVGPU_LOCK_{}", name.trim()), parse(value))
            })
            .collect()
    }
    let rust = flags(&read("umd/src/capi.rs"), "pub const RVGPU_LOCK_", |l| {
        let (n, v) = l.split_once('=').unwrap();
        (n.split(':').next().unwrap(), v)
    });
    let header = flags(
        &read("umd/include/rvgpu_umd.h"),
        "#define RVGPU_LOCK_",
        |l| l.split_once(char::is_whitespace).unwrap(),
    );
    assert_eq!(rust.len(), 5, "capi.rs: {rust:?}");
    assert_eq!(rust, header, "RVGPU_LOCK_* values (Rust vs header)");
}
