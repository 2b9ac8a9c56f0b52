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
    /// `pub const NAME: T = <integer>;` (enumerators with `prepend_enum_name(false)`, and
    /// `#define`d integers).
    pub consts: BTreeMap<String, i128>,
    /// Per struct or union: field name -> the field's type when that type is a plain
    /// identifier (used to find bindgen's names of nested anonymous aggregates).
    pub field_types: BTreeMap<String, BTreeMap<String, String>>,
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
        if let Some((k, v)) = self.types.get_key_value(tag.as_str()) {
            return Some((k.as_str(), v));
        }
        self.find_nested(name)
    }

    /// The bindgen name of a type reached by name alone (directly, alias, `_NAME`).
    fn find_direct(&self, name: &str) -> Option<String> {
        let mut current = name;
        for _ in 0..8 {
            if self.types.contains_key(current) {
                return Some(current.to_string());
            }
            match self.aliases.get(current) {
                Some(next) => current = next,
                None => break,
            }
        }
        let tag = format!("_{name}");
        self.types.contains_key(tag.as_str()).then_some(tag)
    }

    /// rvgpu-ddi names nested aggregates `<PARENT>_<N>` (the N+1-th anonymous member, as
    /// windows-rs does) and `<PARENT>_<Member>` (the type of a named member, looked for in
    /// PARENT and its anonymous members). bindgen names them `<parent>__bindgen_ty_<K>`;
    /// follow the parent's field types to find which.
    fn find_nested(&self, name: &str) -> Option<(&str, &TypeLayout)> {
        let parts: Vec<&str> = name.split('_').collect();
        for split in (1..parts.len()).rev() {
            let parent = parts[..split].join("_");
            let Some(mut current) = self.find_direct(&parent) else {
                continue;
            };
            let mut rest = &parts[split..];
            let mut ok = true;
            while !rest.is_empty() {
                let next = if let Ok(n) = rest[0].parse::<u32>() {
                    rest = &rest[1..];
                    self.member_type(&current, &format!("__bindgen_anon_{}", n + 1))
                } else {
                    // A member name may itself contain '_': take the shortest that matches.
                    let mut found = None;
                    for take in 1..=rest.len() {
                        let member = rest[..take].join("_");
                        if let Some(t) = self.member_type_deep(&current, &member) {
                            found = Some(t);
                            rest = &rest[take..];
                            break;
                        }
                    }
                    found
                };
                match next {
                    Some(t) => current = t,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                return self
                    .types
                    .get_key_value(current.as_str())
                    .map(|(k, v)| (k.as_str(), v));
            }
        }
        None
    }

    fn member_type(&self, ty: &str, member: &str) -> Option<String> {
        self.field_types.get(ty)?.get(member).cloned()
    }

    /// A named member of `ty` or of one of its anonymous members (any depth).
    fn member_type_deep(&self, ty: &str, member: &str) -> Option<String> {
        if let Some(t) = self.member_type(ty, member) {
            return Some(t);
        }
        let fields = self.field_types.get(ty)?;
        fields
            .iter()
            .filter(|(k, _)| k.starts_with("__bindgen_anon_"))
            .find_map(|(_, t)| self.member_type_deep(t, member))
    }
}

/// Parses the layout tests and type aliases out of bindgen's output.
pub fn parse_bindgen(text: &str) -> WdkLayouts {
    let mut out = WdkLayouts::default();
    // rustfmt wraps long labels as `[\n    "label",\n]`: fold that back to `["label"]`.
    let folded = fold_labels(text);
    let mut rest = folded.as_str();
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
    // Constants may be wrapped after `=`: take each statement up to its `;`.
    let mut rest = text;
    while let Some(start) = rest.find("pub const ") {
        let stmt = &rest[start + "pub const ".len()..];
        let end = stmt.find(';').unwrap_or(stmt.len());
        let def = &stmt[..end];
        rest = &stmt[end..];
        let Some((name, tail)) = def.split_once(':') else {
            continue;
        };
        let Some((_, value)) = tail.split_once('=') else {
            continue;
        };
        if let (true, Some(v)) = (is_ident(name.trim()), parse_int(value)) {
            out.consts.insert(name.trim().to_string(), v);
        }
    }
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = current.as_ref() {
            if line.starts_with('}') {
                current = None;
                continue;
            }
            if let Some((field, ty)) = line.strip_prefix("pub ").and_then(|f| f.split_once(':')) {
                let ty = ty.trim().trim_end_matches(',').trim();
                if is_ident(field.trim()) && is_ident(ty) {
                    out.field_types
                        .entry(name.clone())
                        .or_default()
                        .insert(field.trim().to_string(), ty.to_string());
                }
            }
            continue;
        }
        let decl = line
            .strip_prefix("pub struct ")
            .or_else(|| line.strip_prefix("pub union "));
        if let Some(decl) = decl {
            if let Some(name) = decl.strip_suffix('{').map(str::trim) {
                if is_ident(name) {
                    current = Some(name.to_string());
                }
            }
        }
    }
    out
}

/// An integer literal as Rust or C writes it: decimal or 0x hex, optional `-`, `_`
/// separators and a type suffix (`65540u32`, `0x1_0004`, `-1i32`).
pub fn parse_int(text: &str) -> Option<i128> {
    let text = text.trim();
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b.trim()),
        None => (false, text),
    };
    let body: String = body.chars().filter(|c| *c != '_').collect();
    let (radix, digits) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => (16, h),
        None => (10, body.as_str()),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let (num, suffix) = digits.split_at(end);
    if num.is_empty()
        || !(suffix.is_empty()
            || [
                "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize",
            ]
            .contains(&suffix))
    {
        return None;
    }
    let v = i128::from_str_radix(num, radix).ok()?;
    Some(if neg { -v } else { v })
}

/// Undoes rustfmt's wrapping of layout-test labels: `[` + whitespace + `"` becomes `["`, and
/// `"` + optional `,` + whitespace + `]` becomes `"]`.
fn fold_labels(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '[' || c == '"' {
            let mut skipped = String::new();
            while let Some(&n) = chars.peek() {
                if n.is_whitespace() || (c == '"' && n == ',' && !skipped.contains(',')) {
                    skipped.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            let next = chars.peek().copied();
            let fold = skipped.contains('\n')
                && ((c == '[' && next == Some('"')) || (c == '"' && next == Some(']')));
            if !fold {
                out.push_str(&skipped);
            }
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

/// How a DDI type is to be compared, from a `// wdk-layout-check: <mode>: <why>` line comment
/// between its doc comment and its declaration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CheckMode {
    /// Size, alignment and every named field.
    #[default]
    Full,
    /// Not compared (e.g. the header version at hand has a pre-release layout); the reason is
    /// reported.
    Skip(String),
    /// The header's type is a prefix of ours (e.g. a DDI table that a newer interface version
    /// extends): common fields are compared and our size must be at least the header's.
    Prefix(String),
}

/// A `#[repr(C)]` struct or union of the DDI crate: where it is and its public fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdiType {
    /// Module path inside the crate, `""` for the crate root.
    pub module: String,
    pub name: String,
    pub fields: Vec<String>,
    /// Declared only to be pointed at (`_opaque: [u8; 0]`): no layout to compare.
    pub opaque: bool,
    pub mode: CheckMode,
}

/// An integer `pub const` of the DDI crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdiConst {
    pub module: String,
    pub name: String,
    pub value: i128,
    /// Set by a `// wdk-layout-check: skip: <why>` line above it.
    pub skip: Option<String>,
}

fn parse_marker(line: &str) -> Option<CheckMode> {
    let rest = line
        .strip_prefix("//")?
        .trim()
        .strip_prefix("wdk-layout-check:")?;
    let (mode, why) = rest.split_once(':').unwrap_or((rest, ""));
    let why = why.trim().to_string();
    match mode.trim() {
        "skip" => Some(CheckMode::Skip(why)),
        "prefix" => Some(CheckMode::Prefix(why)),
        _ => None,
    }
}

/// The fields of the two types `index_word_union!(UNION, PARTS, ..)` declares (rvgpu-ddi's
/// macros.rs), as it declares them: the split-view struct `PARTS`, then `UNION`.
pub const INDEX_WORD_FIELDS: [&[&str]; 2] = [
    &["FirstFreeEntryIndex", "WraparoundCount"],
    &["Anonymous", "AtomicWraparoundAndEntryIndex"],
];

/// The members of the WDM `INTERFACE` header that `interface_table!` (rvgpu-ddi's macros.rs)
/// puts before a table's listed fields.
pub const INTERFACE_HEADER_FIELDS: [&str; 5] = [
    "Size",
    "Version",
    "Context",
    "InterfaceReference",
    "InterfaceDereference",
];

/// The types of one `index_word_union!(UNION, PARTS, ..)` invocation (`args` is its text, on
/// one line or several).
fn index_word_types(module: &str, args: &str, mode: &CheckMode) -> Vec<DdiType> {
    let inner = args.split_once('(').map_or("", |(_, rest)| {
        rest.rsplit_once(')').map_or(rest, |(a, _)| a)
    });
    let names: Vec<&str> = inner.split(',').map(str::trim).take(2).collect();
    let [union, parts] = names[..] else {
        return Vec::new();
    };
    if !is_ident(union) || !is_ident(parts) {
        return Vec::new();
    }
    [parts, union]
        .iter()
        .zip(INDEX_WORD_FIELDS)
        .map(|(name, fields)| DdiType {
            module: module.to_string(),
            name: (*name).to_string(),
            fields: fields.iter().map(|f| (*f).to_string()).collect(),
            opaque: false,
            mode: mode.clone(),
        })
        .collect()
}

/// Finds the `#[repr(C)]` structs and unions with named fields in one source file, including
/// the tables declared through `ddi_table!` (a `header { .. }` and a `slots { .. }` list) and
/// the types of `index_word_union!` (see [`INDEX_WORD_FIELDS`]) and the tables of
/// `interface_table!` (see [`INTERFACE_HEADER_FIELDS`]).
pub fn scan_ddi_source(module: &str, text: &str) -> Vec<DdiType> {
    let mut out = Vec::new();
    let mut index_word: Option<String> = None;
    let mut repr_c = false;
    let mut in_table_macro = false;
    let mut interface_header = false;
    let mut mode = CheckMode::Full;
    let mut current: Option<DdiType> = None;
    let mut depth = 0usize;
    let mut table_fields = false;
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(ty) = current.as_mut() {
            if line.starts_with('}') {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    out.extend(current.take());
                    table_fields = false;
                }
                continue;
            }
            if table_fields && line.ends_with('{') {
                depth += 1;
                continue;
            }
            if line.starts_with("_opaque") {
                ty.opaque = true;
                continue;
            }
            let field = match line.strip_prefix("pub ") {
                Some(f) => Some(f),
                None if table_fields && !line.starts_with("//") && !line.starts_with("#[") => {
                    Some(line)
                }
                None => None,
            };
            if let Some((name, _)) = field.and_then(|f| f.split_once(':')) {
                let name = name.trim();
                if is_ident(name) {
                    ty.fields.push(name.to_string());
                }
            }
            continue;
        }
        if line.starts_with("index_word_union!") || index_word.is_some() {
            let args = index_word.get_or_insert_with(String::new);
            args.push_str(line);
            if line.ends_with(';') {
                out.extend(index_word_types(module, args, &mode));
                index_word = None;
                mode = CheckMode::Full;
            }
            continue;
        }
        if let Some(m) = parse_marker(line) {
            mode = m;
            continue;
        }
        if line.starts_with("ddi_table!") {
            in_table_macro = true;
            continue;
        }
        if line.starts_with("interface_table!") {
            interface_header = true;
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
        if let (true, Some(decl)) = (repr_c || in_table_macro, decl) {
            let name: String = decl
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let rest = decl[name.len()..].trim();
            // Named-field, non-generic types only.
            if !name.is_empty() && rest.starts_with('{') {
                let header: &[&str] = if interface_header {
                    &INTERFACE_HEADER_FIELDS
                } else {
                    &[]
                };
                let ty = DdiType {
                    module: module.to_string(),
                    name,
                    fields: header.iter().map(|f| (*f).to_string()).collect(),
                    opaque: false,
                    mode: std::mem::take(&mut mode),
                };
                if rest.ends_with('}') {
                    out.push(ty);
                } else {
                    current = Some(ty);
                    depth = 1;
                    table_fields = in_table_macro;
                }
            }
        }
        repr_c = false;
        in_table_macro = false;
        interface_header = false;
        mode = CheckMode::Full;
    }
    out
}

/// Finds the integer `pub const`s of one source file: `pub const NAME: T = <literal>;` (on one
/// line or wrapped after `=`) and the enumerators of `c_enum!` blocks (see [`EnumScan`]); a
/// value written as anything else, e.g. an expression, is left out.
pub fn scan_ddi_consts(module: &str, text: &str) -> Vec<DdiConst> {
    let mut out = Vec::new();
    let mut skip = None;
    let mut c_enum: Option<EnumScan> = None;
    let mut lines = text.lines();
    while let Some(first) = lines.next() {
        if let Some(scan) = c_enum.as_mut() {
            let trimmed = first.trim();
            if let Some(CheckMode::Skip(why)) = parse_marker(trimmed) {
                skip = Some(why);
            } else if let Some((name, value)) = scan.line(trimmed) {
                out.push(DdiConst {
                    module: module.to_string(),
                    name,
                    value,
                    skip: skip.take(),
                });
            }
            if scan.done {
                c_enum = None;
            }
            continue;
        }
        if first.starts_with("c_enum!") {
            c_enum = Some(EnumScan::default());
            continue;
        }
        // rustfmt wraps long constants after `=`: join the statement up to its `;`.
        let mut joined;
        let mut line = first;
        if line.starts_with("pub const ") && !line.contains(';') {
            joined = line.to_string();
            for more in lines.by_ref() {
                joined.push(' ');
                joined.push_str(more.trim());
                if more.contains(';') {
                    break;
                }
            }
            line = joined.as_str();
        }
        let trimmed = line.trim();
        if let Some(CheckMode::Skip(why)) = parse_marker(trimmed) {
            skip = Some(why);
            continue;
        }
        if trimmed.starts_with("//") || trimmed.starts_with("#[") {
            continue;
        }
        // Top-level items only (not associated constants inside an `impl` or a module).
        let Some(def) = line.strip_prefix("pub const ") else {
            skip = None;
            continue;
        };
        let skip = skip.take();
        let Some((name, rest)) = def.split_once(':') else {
            continue;
        };
        let Some((_, value)) = rest.split_once('=') else {
            continue;
        };
        let Some(value) = value.trim().strip_suffix(';') else {
            continue;
        };
        if let (true, Some(value)) = (is_ident(name.trim()), parse_int(value)) {
            out.push(DdiConst {
                module: module.to_string(),
                name: name.trim().to_string(),
                value,
                skip,
            });
        }
    }
    out
}

/// Reads a `c_enum!` block line by line, as rvgpu-ddi writes it:
///
/// ```text
/// c_enum! {
///     /// docs
///     pub type E = i32 {
///         /// docs
///         A,
///         // wdk-layout-check: skip: <why>
///         B = 4,
///         C,
///     }
/// }
/// ```
///
/// One enumerator a line; as in C (and in the macro), an enumerator without `= value` is its
/// predecessor plus one and the first is 0. After a value the scanner cannot read, the implicit
/// ones that follow are left out too.
#[derive(Debug, Default)]
pub struct EnumScan {
    /// Inside an enum's `{ .. }`.
    in_body: bool,
    /// The value of an enumerator written without one.
    next: Option<i128>,
    /// The block's closing brace was read.
    pub done: bool,
}

impl EnumScan {
    /// Takes the next (trimmed) line of the block; returns the enumerator it declares, if any.
    pub fn line(&mut self, line: &str) -> Option<(String, i128)> {
        if line.starts_with("//") || line.starts_with("#[") || line.is_empty() {
            return None;
        }
        if line.starts_with('}') {
            if self.in_body {
                self.in_body = false;
            } else {
                self.done = true;
            }
            return None;
        }
        if line.starts_with("pub type ") && line.ends_with('{') {
            self.in_body = true;
            self.next = Some(0);
            return None;
        }
        if !self.in_body {
            return None;
        }
        let entry = line.strip_suffix(',').unwrap_or(line);
        let (name, value) = match entry.split_once('=') {
            Some((name, value)) => (name.trim(), parse_int(value)),
            None => (entry.trim(), self.next),
        };
        if !is_ident(name) {
            return None;
        }
        self.next = value.and_then(|v| v.checked_add(1));
        value.map(|v| (name.to_string(), v))
    }
}

/// Scans a crate's `src` directory (module paths from file paths: `lib.rs` is the root,
/// `a.rs` and `a/mod.rs` are `a`, `a/b.rs` is `a::b`).
pub fn scan_ddi_dir(src: &Path) -> (Vec<DdiType>, Vec<DdiConst>) {
    let mut out = Vec::new();
    let mut consts = Vec::new();
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
                consts.extend(scan_ddi_consts(&parts.join("::"), &text));
            }
        }
    }
    (out, consts)
}

/// Generator output.
#[derive(Debug, Default)]
pub struct Generated {
    /// Rust source: `const _: () = assert!(..)` items.
    pub code: String,
    /// Number of assertions emitted.
    pub assertions: usize,
    /// Types compared (at least one assertion), as `path = WDK name`.
    pub checked: Vec<String>,
    /// What could not be checked, and why (no WDK type of that name, a field bindgen did not
    /// name, a skip marker, ...).
    pub unchecked: Vec<String>,
}

/// bindgen's name for a field: rvgpu-ddi's `Anonymous`/`AnonymousN` are bindgen's
/// `__bindgen_anon_1`/`__bindgen_anon_N`.
fn bindgen_field_name(field: &str) -> String {
    match field.strip_prefix("Anonymous") {
        Some("") => "__bindgen_anon_1".to_string(),
        Some(n) if n.chars().all(|c| c.is_ascii_digit()) => format!("__bindgen_anon_{n}"),
        _ => field.to_string(),
    }
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
        if ty.opaque {
            g.unchecked
                .push(format!("{path}: opaque (only pointers to it are used)"));
            continue;
        }
        if let CheckMode::Skip(why) = &ty.mode {
            g.unchecked.push(format!("{path}: skipped: {why}"));
            continue;
        }
        let Some((wdk_name, layout)) = wdk.find(&ty.name) else {
            g.unchecked.push(format!(
                "{path}: no WDK type named {} or _{}",
                ty.name, ty.name
            ));
            continue;
        };
        let before = g.assertions;
        if let Some(size) = layout.size {
            if let CheckMode::Prefix(_) = ty.mode {
                let _ = writeln!(
                    g.code,
                    "const _: () = assert!(::core::mem::size_of::<{path}>() >= {size}, \
                     \"{path}: smaller than the WDK's {wdk_name} ({size})\");"
                );
            } else {
                let _ = writeln!(
                    g.code,
                    "const _: () = assert!(::core::mem::size_of::<{path}>() == {size}, \
                     \"{path}: size differs from the WDK's {wdk_name} ({size})\");"
                );
            }
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
            match layout.fields.get(&bindgen_field_name(field)) {
                Some(offset) => {
                    let _ = writeln!(
                        g.code,
                        "const _: () = assert!(::core::mem::offset_of!({path}, {field}) == {offset}, \
                         \"{path}::{field}: offset differs from the WDK's {wdk_name}::{field} ({offset})\");"
                    );
                    g.assertions += 1;
                }
                None => g.unchecked.push(match &ty.mode {
                    CheckMode::Prefix(why) => {
                        format!("{path}::{field}: not in the WDK's {wdk_name} ({why})")
                    }
                    _ => format!(
                        "{path}::{field}: {wdk_name} has no field of that name (anonymous union?)"
                    ),
                }),
            }
        }
        if g.assertions > before {
            g.checked.push(format!("{path} = {wdk_name}"));
        }
    }
    g
}

/// Emits an equality assertion for every DDI integer constant the headers also define;
/// returns the names of those they do not define (WDDM 3.2 additions, rvgpu's own).
pub fn generate_consts(
    wdk: &WdkLayouts,
    consts: &[DdiConst],
    crate_name: &str,
    g: &mut Generated,
) -> Vec<String> {
    let mut missing = Vec::new();
    for c in consts {
        let path = if c.module.is_empty() {
            format!("::{crate_name}::{}", c.name)
        } else {
            format!("::{crate_name}::{}::{}", c.module, c.name)
        };
        if let Some(why) = &c.skip {
            g.unchecked.push(format!("{path}: skipped: {why}"));
            continue;
        }
        match wdk.consts.get(&c.name) {
            Some(v) => {
                let _ = writeln!(
                    g.code,
                    "const _: () = assert!({path} as i128 == {v}, \
                     \"{path}: value differs from the WDK's ({v})\");"
                );
                g.assertions += 1;
            }
            None => missing.push(path),
        }
    }
    missing
}
