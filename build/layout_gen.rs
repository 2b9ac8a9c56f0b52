//! The layout-assertion generator: from bindgen's output for the WDK headers (with layout tests
//! on) and the `#[repr(C)]` types of `rvgpu-ddi`, emit compile-time assertions that every
//! `rvgpu-ddi` type that has a WDK counterpart has the WDK's size, alignment and field
//! offsets.
//!
//! Shared by build.rs (`#[path]`) and tests/layout_gen.rs, which tests it on samples of
//! bindgen-style output. Plain std Rust, no dependencies.
//!
//! Input format: bindgen ≥ 0.70 emits its layout tests as constant expressions, e.g.
//!
//! ```text
//! const _: () = {
//!     ["Size of _DXGK_START_INFO"][::std::mem::size_of::<_DXGK_START_INFO>() - 48usize];
//!     ["Alignment of _DXGK_START_INFO"][::std::mem::align_of::<_DXGK_START_INFO>() - 8usize];
//!     ["Offset of field: _DXGK_START_INFO::RequiredDmaQueueEntry"]
//!         [::std::mem::offset_of!(_DXGK_START_INFO, RequiredDmaQueueEntry) - 0usize];
//! };
//! pub type DXGK_START_INFO = _DXGK_START_INFO;
//! ```
//!
//! The labels carry the type and field names and the expression ends in the expected number;
//! the `pub type A = B;` aliases map the typedef names the DDI crate uses to bindgen's tag
//! names. Fields that bindgen puts in anonymous unions or structs (`__bindgen_anon_1`) have
//! no name to match and are reported as unchecked rather than guessed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Size, alignment and named-field offsets of one WDK type, as bindgen computed them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TypeLayout {
    pub size: Option<u64>,
    pub align: Option<u64>,
    pub fields: BTreeMap<String, u64>,
}

/// Everything learnt from one bindgen output.
#[derive(Debug, Default, Clone)]
pub struct WdkLayouts {
    pub types: BTreeMap<String, TypeLayout>,
    /// `pub type A = B;` with B a plain identifier.
    pub aliases: BTreeMap<String, String>,
}

impl WdkLayouts {
    /// The layout of `name`: directly, through typedef aliases, or as the `_NAME` struct tag.
    pub fn find(&self, name: &str) -> Option<(&str, &TypeLayout)> {
        let mut current = name;
        for _ in 0..8 {
            if let Some((k, v)) = self.types.get_key_value(current) {
                return Some((k.as_str(), v));
            }
            match self.aliases.get(current) {
                Some(next) => current = next,
                None => break,
            }
        }
        let tag = format!("_{name}");
        self.types
            .get_key_value(tag.as_str())
            .map(|(k, v)| (k.as_str(), v))
    }
}

/// Parses the layout tests and type aliases out of bindgen's output.
pub fn parse_bindgen(text: &str) -> WdkLayouts {
    let mut out = WdkLayouts::default();
    let mut rest = text;
    while let Some(start) = rest.find("[\"") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("\"]") else { break };
        let label = &after[..end];
        let tail = &after[end + 2..];
        // The expression belongs to this label: up to the next label.
        let expr_end = tail.find("[\"").unwrap_or(tail.len());
        let expr = &tail[..expr_end];
        if let Some(value) = expected_value(expr) {
            if let Some(ty) = label.strip_prefix("Size of ") {
                out.types.entry(ty.trim().to_string()).or_default().size = Some(value);
            } else if let Some(ty) = label.strip_prefix("Alignment of ") {
                out.types.entry(ty.trim().to_string()).or_default().align = Some(value);
            } else if let Some(path) = label.strip_prefix("Offset of field: ") {
                if let Some((ty, field)) = path.trim().split_once("::") {
                    out.types
                        .entry(ty.to_string())
                        .or_default()
                        .fields
                        .insert(field.to_string(), value);
                }
            }
        }
        rest = tail;
    }
    for line in text.lines() {
        let line = line.trim();
        let Some(def) = line.strip_prefix("pub type ") else {
            continue;
        };
        let Some((name, target)) = def.split_once('=') else {
            continue;
        };
        let name = name.trim();
        let target = target.trim().trim_end_matches(';').trim();
        if is_ident(name) && is_ident(target) {
            out.aliases.insert(name.to_string(), target.to_string());
        }
    }
    out
}

/// The `N` of `... - Nusize]` in a bindgen layout expression.
fn expected_value(expr: &str) -> Option<u64> {
    let idx = expr.find("usize]")?;
    let before = expr[..idx].trim_end();
    let digits_start = before
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let number = &before[digits_start..];
    let op = before[..digits_start].trim_end();
    if !op.ends_with('-') {
        return None;
    }
    number.parse().ok()
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// A `#[repr(C)]` struct or union of the DDI crate: where it is and its public fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdiType {
    /// Module path inside the crate, `""` for the crate root.
    pub module: String,
    pub name: String,
    pub fields: Vec<String>,
}

/// Finds the `#[repr(C)]` structs and unions with named fields in one source file.
pub fn scan_ddi_source(module: &str, text: &str) -> Vec<DdiType> {
    let mut out = Vec::new();
    let mut repr_c = false;
    let mut current: Option<DdiType> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(ty) = current.as_mut() {
            if line.starts_with('}') {
                out.extend(current.take());
                continue;
            }
            if let Some(field) = line.strip_prefix("pub ") {
                if let Some((name, _)) = field.split_once(':') {
                    let name = name.trim();
                    if is_ident(name) {
                        ty.fields.push(name.to_string());
                    }
                }
            }
            continue;
        }
        if line.starts_with("#[repr(C") {
            repr_c = true;
            continue;
        }
        if line.starts_with("#[") || line.starts_with("//") || line.is_empty() {
            continue;
        }
        let decl = line
            .strip_prefix("pub struct ")
            .or_else(|| line.strip_prefix("pub union "));
        if let (true, Some(decl)) = (repr_c, decl) {
            let name: String = decl
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let rest = decl[name.len()..].trim();
            // Named-field, non-generic types only.
            if !name.is_empty() && rest.starts_with('{') {
                let ty = DdiType {
                    module: module.to_string(),
                    name,
                    fields: Vec::new(),
                };
                if rest.ends_with('}') {
                    out.push(ty);
                } else {
                    current = Some(ty);
                }
            }
        }
        repr_c = false;
    }
    out
}

/// Scans a crate's `src` directory (module paths from file paths: `lib.rs` is the root,
/// `a.rs` and `a/mod.rs` are `a`, `a/b.rs` is `a::b`).
pub fn scan_ddi_dir(src: &Path) -> Vec<DdiType> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let Ok(rel) = path.strip_prefix(src) else {
                continue;
            };
            let mut parts: Vec<String> = rel
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if matches!(parts.last().map(String::as_str), Some("lib" | "mod")) {
                parts.pop();
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.extend(scan_ddi_source(&parts.join("::"), &text));
            }
        }
    }
    out
}

/// Generator output.
#[derive(Debug, Default)]
pub struct Generated {
    /// Rust source: `const _: () = assert!(..)` items.
    pub code: String,
    /// Number of assertions emitted.
    pub assertions: usize,
    /// What could not be checked, and why (no WDK type of that name, a field bindgen did not
    /// name, ...).
    pub unchecked: Vec<String>,
}

/// Emits the assertions for every DDI type that has a WDK counterpart.
pub fn generate(wdk: &WdkLayouts, ddi: &[DdiType], crate_name: &str) -> Generated {
    let mut g = Generated::default();
    g.code.push_str(
        "// @generated by build/layout_gen.rs from bindgen's view of the WDK headers.\n\
         // Each assertion compares an rvgpu-ddi type with the WDK's layout for x86_64.\n",
    );
    for ty in ddi {
        let path = if ty.module.is_empty() {
            format!("::{crate_name}::{}", ty.name)
        } else {
            format!("::{crate_name}::{}::{}", ty.module, ty.name)
        };
        let Some((wdk_name, layout)) = wdk.find(&ty.name) else {
            g.unchecked.push(format!(
                "{path}: no WDK type named {} or _{}",
                ty.name, ty.name
            ));
            continue;
        };
        if let Some(size) = layout.size {
            let _ = writeln!(
                g.code,
                "const _: () = assert!(::core::mem::size_of::<{path}>() == {size}, \
                 \"{path}: size differs from the WDK's {wdk_name} ({size})\");"
            );
            g.assertions += 1;
        }
        if let Some(align) = layout.align {
            let _ = writeln!(
                g.code,
                "const _: () = assert!(::core::mem::align_of::<{path}>() == {align}, \
                 \"{path}: alignment differs from the WDK's {wdk_name} ({align})\");"
            );
            g.assertions += 1;
        }
        for field in &ty.fields {
            match layout.fields.get(field) {
                Some(offset) => {
                    let _ = writeln!(
                        g.code,
                        "const _: () = assert!(::core::mem::offset_of!({path}, {field}) == {offset}, \
                         \"{path}::{field}: offset differs from the WDK's {wdk_name}::{field} ({offset})\");"
                    );
                    g.assertions += 1;
                }
                None => g.unchecked.push(format!(
                    "{path}::{field}: {wdk_name} has no field of that name (anonymous union?)"
                )),
            }
        }
    }
    g
}
