//! The WinDbg extension script (scripts/windbg/rvgpu.js) and the NatVis (src/rvgpu.natvis) are
//! only ever run in a kernel debugger on the test machine; these tests keep them from going
//! stale here: every driver structure and field they name exists in the driver source, the
//! script reads no field it has not declared, it parses (`node --check`, where node is
//! installed) and its logic holds over a model of the debugger's objects (`node`, a mock
//! `host`), and the package ships it.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::string_slice,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

// Only `succeeded` of the shared set-up is used here.
#[allow(dead_code)]
#[path = "common/setup.rs"]
mod setup;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The string literals of `text`, in order, with the byte offset after each.
fn literals(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j] != b'"' {
                j += 1;
            }
            out.push((text[start..j].to_string(), j + 1));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The script's `LAYOUT` table: Rust path → fields.
fn layout(script: &str) -> BTreeMap<String, Vec<String>> {
    let start = script
        .find("const LAYOUT = {")
        .expect("LAYOUT in the script");
    let end = start + script[start..].find("\n};").expect("end of LAYOUT");
    let block = &script[start..end];
    let mut map = BTreeMap::new();
    let mut key: Option<String> = None;
    for (lit, after) in literals(block) {
        if block[after..].trim_start().starts_with(':') {
            map.insert(lit.clone(), Vec::new());
            key = Some(lit);
        } else if let Some(k) = &key {
            map.get_mut(k).expect("key").push(lit);
        }
    }
    map
}

/// The source file of Rust module path `path` (`crate::a::b`), or `None`.
fn module_file(path: &[&str]) -> Option<PathBuf> {
    let (krate, rest) = path.split_first()?;
    let base = match *krate {
        "rvgpu_kmd" => root().join("driver/kmd/src"),
        "rvgpu_hw" => root().join("driver/hw/src"),
        "rvgpu" => root().join("src"),
        _ => return None,
    };
    let rel = rest.join("/");
    [
        base.join(format!("{rel}.rs")),
        base.join(&rel).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// The field names of `struct name` in `source`: a braced struct's, or `__0`, `__1`, … of a
/// tuple struct (also one the `address!` macro of rvgpu_hw::addr generates).
fn struct_fields(source: &str, name: &str) -> Option<Vec<String>> {
    let found = source
        .match_indices(&format!("struct {name}"))
        .map(|(i, _)| i)
        .find(|&i| {
            let next = source[i + 7 + name.len()..].chars().next();
            matches!(next, Some('<' | ' ' | '{' | '('))
        });
    let Some(at) = found else {
        let generated = source.contains("pub struct $name(u64);")
            && source.split("address! {").skip(1).any(|inv| {
                inv.split('}')
                    .next()
                    .is_some_and(|b| b.lines().any(|l| l.trim() == name))
            });
        return generated.then(|| vec!["__0".to_string()]);
    };
    let after = &source[at + 7 + name.len()..];
    let after = after.trim_start_matches(|c: char| c != '(' && c != '{');
    if let Some(tuple) = after.strip_prefix('(') {
        let body = &tuple[..tuple.find(')')?];
        let n = body.split(',').filter(|f| !f.trim().is_empty()).count();
        return Some((0..n).map(|i| format!("__{i}")).collect());
    }
    let open = at + source[at..].find('{')?;
    let mut depth = 0usize;
    let mut fields = Vec::new();
    let mut close = None;
    for (k, c) in source[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + k);
                    break;
                }
            }
            _ => {}
        }
    }
    for line in source[open + 1..close?].lines() {
        let l = line.trim();
        let l = l
            .strip_prefix("pub(crate) ")
            .or_else(|| l.strip_prefix("pub(super) "))
            .or_else(|| l.strip_prefix("pub "))
            .unwrap_or(l);
        if let Some((ident, _)) = l.split_once(':') {
            if !ident.is_empty() && ident.chars().all(|c| c.is_alphanumeric() || c == '_') {
                fields.push(ident.to_string());
            }
        }
    }
    Some(fields)
}

/// Checks that `path` (`crate::module::Type`) is a struct with every field in `fields`.
fn check_struct(path: &str, fields: &[String], who: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split("::").collect();
    let Some((ty, module)) = parts.split_last() else {
        return vec![format!("{who}: bad path {path}")];
    };
    let Some(file) = module_file(module) else {
        return vec![format!("{who}: no source file for {path}")];
    };
    let src = std::fs::read_to_string(&file).unwrap_or_default();
    let Some(have) = struct_fields(&src, ty) else {
        return vec![format!("{who}: no struct {ty} in {}", file.display())];
    };
    fields
        .iter()
        .filter(|f| !have.contains(f))
        .map(|f| format!("{who}: {path} has no field {f} (fields: {have:?})"))
        .collect()
}

#[test]
fn windbg_script_names_only_fields_the_driver_has() {
    let script = read("scripts/windbg/rvgpu.js");
    let table = layout(&script);
    assert!(table.len() >= 15, "LAYOUT too small: {table:?}");
    let mut errors = Vec::new();
    for (path, fields) in &table {
        errors.extend(check_struct(path, fields, "rvgpu.js"));
    }
    // The adapter table symbol and the platform type the script builds the adapter type from.
    let globals = read("driver/kmd/src/globals.rs");
    assert!(
        script.contains("\"rvgpu_kmd::globals::ADAPTERS\"")
            && globals.contains("pub static ADAPTERS: AdapterTable"),
        "the adapter table symbol moved"
    );
    // An enum is `enum2$<...>` in the PDB, a struct its plain path.
    let platform = read("src/platform/windows.rs");
    let spelled = if platform.contains("pub enum WinKernel") {
        "\"enum2$<rvgpu::platform::windows::WinKernel>\""
    } else {
        "\"rvgpu::platform::windows::WinKernel\""
    };
    assert!(
        script.contains(spelled),
        "the script does not spell the kernel platform type as {spelled}"
    );
    let regs = read("driver/hw/src/regs.rs");
    assert!(
        regs.contains("pub const ENGINE_MAX: u32 = 16;")
            && script.contains("const ENGINE_MAX = 16;"),
        "ENGINE_MAX differs between the driver and the script"
    );
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn windbg_script_reads_only_declared_fields() {
    let script = read("scripts/windbg/rvgpu.js");
    let table = layout(&script);
    let body = &script[script.find("\n};").expect("end of LAYOUT")..];
    let mut errors = Vec::new();
    let mut calls = 0;
    let mut used = std::collections::BTreeSet::new();
    for (at, _) in body.match_indices("field(") {
        // Skip the definition `function field(obj, type, name)`.
        if body[..at].ends_with("function ") {
            continue;
        }
        calls += 1;
        let args = &body[at + 6..];
        let close = args.find(')').expect("closing paren");
        let parts: Vec<&str> = args[..close].splitn(3, ',').map(str::trim).collect();
        let [_, ty, name] = parts[..] else {
            errors.push(format!("unparsed call field({})", &args[..close]));
            continue;
        };
        // The type is a literal or a `const X = "...";` defined before the call.
        let ty = if let Some(t) = ty.strip_prefix('"') {
            t.trim_end_matches('"').to_string()
        } else {
            let def = format!("const {ty} = \"");
            let Some(d) = body[..at].rfind(&def) else {
                errors.push(format!(
                    "no definition of {ty} before field(..., {ty}, {name})"
                ));
                continue;
            };
            let v = &body[d + def.len()..];
            v[..v.find('"').expect("end")].to_string()
        };
        let name = name.trim_matches('"');
        used.insert((ty.clone(), name.to_string()));
        if !table.get(&ty).is_some_and(|f| f.iter().any(|x| x == name)) {
            errors.push(format!("field {ty}.{name} is read but not in LAYOUT"));
        }
    }
    assert!(
        calls > 40,
        "only {calls} field() calls found: the parser is broken"
    );
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn natvis_names_only_fields_the_driver_has() {
    let natvis = read("src/rvgpu.natvis");
    let mut errors = Vec::new();
    let mut types = 0;
    for chunk in natvis.split("<Type Name=\"").skip(1) {
        types += 1;
        let name = &chunk[..chunk.find('"').expect("type name end")];
        let path = name.split("&lt;").next().unwrap_or(name);
        let body = &chunk[..chunk.find("</Type>").expect("</Type>")];
        // The first member of every expression: `{expr}` in display strings, `<Item>expr<`.
        let mut exprs: Vec<&str> = Vec::new();
        for part in body.split('{').skip(1) {
            if let Some(e) = part.split('}').next() {
                exprs.push(e);
            }
        }
        for part in body.split("<Item ").skip(1) {
            if let Some(e) = part.split('>').nth(1) {
                exprs.push(e.split('<').next().unwrap_or(""));
            }
        }
        let mut fields: Vec<String> = exprs
            .iter()
            .map(|e| {
                e.trim()
                    .trim_start_matches('*')
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .filter(|f| !f.is_empty())
            .collect();
        fields.sort();
        fields.dedup();
        errors.extend(check_struct(path, &fields, "rvgpu.natvis"));
    }
    assert!(types >= 4, "only {types} NatVis types parsed");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

fn node() -> Option<&'static str> {
    ["node", "nodejs"].into_iter().find(|n| {
        Command::new(n)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn windbg_script_parses_and_decodes_a_modelled_driver() {
    let Some(node) = node() else {
        eprintln!("node is not installed: the script's syntax and logic are not checked");
        return;
    };
    let script = root().join("scripts/windbg/rvgpu.js");
    setup::succeeded(
        Command::new(node).arg("--check").arg(&script),
        "node --check",
    );
    let model = root().join("tests/windbg/model.js");
    setup::succeeded(
        Command::new(node).arg(&model).arg(&script),
        "the script over the modelled driver",
    );
}

#[test]
fn package_ships_the_windbg_script() {
    let pkg = read("scripts/package.sh");
    assert!(
        pkg.contains("scripts/windbg/rvgpu.js") && pkg.contains("windbg/"),
        "scripts/package.sh does not copy the WinDbg script"
    );
    assert!(Path::new(&root().join("scripts/windbg/rvgpu.js")).is_file());
}
