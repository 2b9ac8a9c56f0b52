//! Checks `inf/rvgpu.inf` with a small INF parser: every referenced section exists, the hardware
//! ID is the emulated device's, the service and registry directives are the ones a WDDM
//! miniport needs, and the file names are the artefacts `scripts/package.sh` produces.
//!
//! The packaged (stamped) INF is checked again in `tests/pe_images.rs`, next to the images.

// Host-side test code: the kernel no-panic lints do not apply to a parser that only ever reads
// our own INF and whose failures are test failures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::indexing_slicing, clippy::string_slice)]
#![allow(clippy::arithmetic_side_effects)]

use std::collections::{BTreeMap, BTreeSet};

/// PCI identity of the emulated device: rvgpu-hw is the single source (docs/hardware.md).
use rvgpu_hw::pci::{DEVICE_ID, HARDWARE_ID, VENDOR_ID};

/// Display class GUID (devguid.h, GUID_DEVCLASS_DISPLAY).
const DISPLAY_CLASS_GUID: &str = "{4d36e968-e325-11ce-bfc1-08002be10318}";

/// Artefact names, as `scripts/package.sh` writes them into the package folder.
const DRIVER_IMAGE: &str = "rvgpu.sys";
const UMD_IMAGE: &str = "rvgpu_umd.dll";

/// One INF line: `key = values` or a bare value list (`key` is `None`).
#[derive(Debug, Clone)]
struct Line {
    key: Option<String>,
    values: Vec<String>,
    number: usize,
}

#[derive(Debug, Default)]
struct Inf {
    /// Section name (lower-cased) -> lines, in order.
    sections: BTreeMap<String, Vec<Line>>,
}

/// Removes a `;` comment that is not inside double quotes.
fn strip_comment(line: &str) -> &str {
    let mut in_quotes = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ';' if !in_quotes => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Splits on commas outside double quotes; trims each field and drops surrounding quotes.
fn split_values(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_quotes = false;
    for c in s.chars() {
        match c {
            '"' => {
                in_quotes = !in_quotes;
                cur.push(c);
            }
            ',' if !in_quotes => {
                out.push(unquote(cur.trim()));
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    out.push(unquote(cur.trim()));
    if out.len() == 1 && out[0].is_empty() {
        out.clear();
    }
    out
}

fn unquote(s: &str) -> String {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
        .to_string()
}

/// Finds the `=` that separates key and value: the first one outside quotes.
fn split_key(s: &str) -> Option<(&str, &str)> {
    let mut in_quotes = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            '=' if !in_quotes => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

fn parse(text: &str) -> Inf {
    let mut inf = Inf::default();
    let mut current: Option<String> = None;
    let mut pending = String::new();
    let mut pending_start = 0;
    for (idx, raw) in text.lines().enumerate() {
        let number = idx + 1;
        let line = strip_comment(raw).trim_end();
        if pending.is_empty() {
            pending_start = number;
        }
        // A trailing backslash continues the logical line (INF syntax).
        if let Some(body) = line.strip_suffix('\\') {
            pending.push_str(body);
            continue;
        }
        pending.push_str(line);
        let logical = std::mem::take(&mut pending);
        let logical = logical.trim();
        if logical.is_empty() {
            continue;
        }
        if let Some(name) = logical.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim().to_ascii_lowercase();
            assert!(
                !inf.sections.contains_key(&name),
                "line {number}: section [{name}] appears twice"
            );
            inf.sections.insert(name.clone(), Vec::new());
            current = Some(name);
            continue;
        }
        let section = current
            .as_ref()
            .unwrap_or_else(|| panic!("line {number}: entry outside any section: {logical}"));
        let (key, values) = match split_key(logical) {
            Some((k, v)) => (Some(k.trim().to_string()), split_values(v)),
            None => (None, split_values(logical)),
        };
        inf.sections.get_mut(section).unwrap().push(Line {
            key,
            values,
            number: pending_start,
        });
    }
    inf
}

impl Inf {
    fn load() -> Inf {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/inf/rvgpu.inf");
        let text = std::fs::read_to_string(path).expect("read inf/rvgpu.inf");
        parse(&text)
    }

    fn section(&self, name: &str) -> &[Line] {
        self.sections
            .get(&name.to_ascii_lowercase())
            .unwrap_or_else(|| {
                panic!(
                    "section [{name}] is referenced but does not exist; sections: {:?}",
                    self.sections.keys().collect::<Vec<_>>()
                )
            })
    }

    fn has_section(&self, name: &str) -> bool {
        self.sections.contains_key(&name.to_ascii_lowercase())
    }

    /// All values of every `key = ...` line in `section` (key case-insensitive).
    fn values(&self, section: &str, key: &str) -> Vec<Vec<String>> {
        self.section(section)
            .iter()
            .filter(|l| {
                l.key
                    .as_deref()
                    .is_some_and(|k| k.eq_ignore_ascii_case(key))
            })
            .map(|l| l.values.clone())
            .collect()
    }

    /// The single value of `key` in `section`.
    fn value(&self, section: &str, key: &str) -> String {
        let all = self.values(section, key);
        assert_eq!(
            all.len(),
            1,
            "[{section}] must have exactly one {key}, found {all:?}"
        );
        all[0].join(",")
    }

    /// Models sections named by [Manufacturer], with their decorations applied.
    fn models_sections(&self) -> Vec<String> {
        let mut out = Vec::new();
        for line in self.section("Manufacturer") {
            let (base, decorations) = line.values.split_first().expect("manufacturer entry");
            if decorations.is_empty() {
                out.push(base.clone());
            }
            for d in decorations {
                out.push(format!("{base}.{d}"));
            }
        }
        out
    }

    /// (description token, install section, hardware IDs) for every device.
    fn devices(&self) -> Vec<(String, String, Vec<String>)> {
        let mut out = Vec::new();
        for models in self.models_sections() {
            for line in self.section(&models) {
                let desc = line.key.clone().expect("models entry has a description");
                let (install, ids) = line.values.split_first().expect("install section");
                out.push((desc, install.clone(), ids.to_vec()));
            }
        }
        out
    }

    fn install_sections(&self) -> BTreeSet<String> {
        self.devices().into_iter().map(|(_, s, _)| s).collect()
    }

    /// CopyFiles sections of every install section.
    fn copy_sections(&self) -> Vec<String> {
        let mut out = Vec::new();
        for install in self.install_sections() {
            for values in self.values(&install, "CopyFiles") {
                for v in values {
                    assert!(!v.starts_with('@'), "use a CopyFiles section, not @{v}");
                    out.push(v);
                }
            }
        }
        out
    }

    fn copied_files(&self) -> BTreeSet<String> {
        let mut files = BTreeSet::new();
        for section in self.copy_sections() {
            for line in self.section(&section) {
                assert!(
                    line.key.is_none(),
                    "line {}: unexpected key in [{section}]",
                    line.number
                );
                let name = line.values.first().expect("file name").to_ascii_lowercase();
                files.insert(name);
            }
        }
        files
    }

    fn strings(&self) -> BTreeMap<String, String> {
        self.section("Strings")
            .iter()
            .map(|l| {
                (
                    l.key.clone().expect("string key").to_ascii_lowercase(),
                    l.values.join(","),
                )
            })
            .collect()
    }
}

/// `%token%` references in a value, skipping `%%` escapes.
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find('%') {
        let after = &rest[start + 1..];
        if let Some(escaped) = after.strip_prefix('%') {
            rest = escaped;
            continue;
        }
        let Some(end) = after.find('%') else { break };
        let token = &after[..end];
        if !token.is_empty() {
            out.push(token.to_string());
        }
        rest = &after[end + 1..];
    }
    out
}

#[test]
fn parser_handles_comments_quotes_and_continuations() {
    let inf = parse(
        "[A]\nkey = \"x;y\", z ; comment\nbare1, bare2\nlong = a, \\\n  b\n[b.NTamd64]\nk=\n",
    );
    let a = inf.section("a");
    assert_eq!(a[0].key.as_deref(), Some("key"));
    assert_eq!(a[0].values, ["x;y", "z"]);
    assert_eq!(a[1].key, None);
    assert_eq!(a[1].values, ["bare1", "bare2"]);
    assert_eq!(a[2].values, ["a", "b"]);
    assert!(inf.has_section("B.ntamd64"));
    assert!(inf.section("b.ntamd64")[0].values.is_empty());
    assert_eq!(tokens("%13%\\x.dll,%%SystemRoot%%,%Name%"), ["13", "Name"]);
}

#[test]
fn version_section_is_a_display_class_inf() {
    let inf = Inf::load();
    assert_eq!(inf.value("Version", "Signature"), "$Windows NT$");
    assert_eq!(inf.value("Version", "Class"), "Display");
    assert!(
        inf.value("Version", "ClassGUID")
            .eq_ignore_ascii_case(DISPLAY_CLASS_GUID),
        "ClassGUID is {}, expected the Display class {DISPLAY_CLASS_GUID}",
        inf.value("Version", "ClassGUID")
    );
    assert_eq!(inf.value("Version", "CatalogFile"), "rvgpu.cat");
    assert_eq!(inf.value("Version", "PnpLockdown"), "1");
    // DriverVer is present but empty: the packaging step stamps it.
    assert_eq!(
        inf.value("Version", "DriverVer"),
        "",
        "DriverVer must stay empty in the source INF (stamped at packaging)"
    );
    assert_eq!(inf.value("ControlFlags", "ExcludeFromSelect"), "*");
}

#[test]
fn hardware_id_is_the_emulated_device() {
    let inf = Inf::load();
    let expected = format!("PCI\\VEN_{VENDOR_ID:04X}&DEV_{DEVICE_ID:04X}");
    assert_eq!(
        expected, HARDWARE_ID,
        "rvgpu_hw::pci::HARDWARE_ID disagrees with its IDs"
    );
    let devices = inf.devices();
    assert!(!devices.is_empty(), "no device in any models section");
    for (desc, _, ids) in &devices {
        assert_eq!(
            ids,
            std::slice::from_ref(&expected),
            "hardware IDs of {desc}"
        );
    }
    // The decoration must be x64 and need at least Windows 11 24H2 (WDDM 3.2).
    for models in inf.models_sections() {
        let lower = models.to_ascii_lowercase();
        assert!(
            lower.contains(".ntamd64"),
            "models section {models} is not NTamd64"
        );
        assert!(
            lower.ends_with(".10.0...26100"),
            "models section {models} lacks the 26100 floor"
        );
    }
    // docs/hardware.md is written alongside; when it exists it must name the same IDs.
    let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/hardware.md");
    if let Ok(text) = std::fs::read_to_string(doc) {
        let lower = text.to_ascii_lowercase();
        for id in [VENDOR_ID, DEVICE_ID] {
            assert!(
                lower.contains(&format!("0x{id:04x}")),
                "docs/hardware.md does not mention {id:#06x}"
            );
        }
    }
}

#[test]
fn every_referenced_section_exists() {
    let inf = Inf::load();
    for (_, install, _) in inf.devices() {
        inf.section(&install);
        // A WDDM miniport is a PnP function driver: it needs a .Services section.
        let services = format!("{install}.Services");
        let adds = inf.values(&services, "AddService");
        assert_eq!(
            adds.len(),
            1,
            "[{services}] must add exactly one service: {adds:?}"
        );
        for add in adds {
            assert!(
                add.len() >= 3,
                "AddService needs name, flags, install section: {add:?}"
            );
            assert_eq!(
                add[1], "0x00000002",
                "AddService flags must be SPSVCINST_ASSOCSERVICE"
            );
            inf.section(&add[2]);
            if let Some(event_log) = add.get(3) {
                for regs in inf.values(event_log, "AddReg") {
                    for r in regs {
                        inf.section(&r);
                    }
                }
            }
        }
        for regs in inf.values(&install, "AddReg") {
            for r in regs {
                inf.section(&r);
            }
        }
        for suffix in ["HW", "CoInstallers", "Interfaces"] {
            let name = format!("{install}.{suffix}");
            if inf.has_section(&name) {
                for regs in inf.values(&name, "AddReg") {
                    for r in regs {
                        inf.section(&r);
                    }
                }
            }
        }
    }
    for section in inf.copy_sections() {
        inf.section(&section);
        let has_dest = inf.section("DestinationDirs").iter().any(|l| {
            l.key.as_deref().is_some_and(|k| {
                k.eq_ignore_ascii_case(&section) || k.eq_ignore_ascii_case("DefaultDestDir")
            })
        });
        assert!(
            has_dest,
            "CopyFiles section [{section}] has no DestinationDirs entry"
        );
    }
    for line in inf.section("DestinationDirs") {
        let key = line.key.as_deref().unwrap();
        if !key.eq_ignore_ascii_case("DefaultDestDir") {
            inf.section(key);
        }
        assert_eq!(
            line.values,
            ["13"],
            "[{key}] should install to the driver store (DIRID 13)"
        );
    }
}

#[test]
fn every_string_token_is_defined() {
    let inf = Inf::load();
    let strings = inf.strings();
    for (name, lines) in &inf.sections {
        if name == "strings" {
            continue;
        }
        for line in lines {
            let mut texts: Vec<&str> = line.values.iter().map(String::as_str).collect();
            if let Some(k) = &line.key {
                texts.push(k);
            }
            for text in texts {
                for t in tokens(text) {
                    let is_dirid = t.chars().all(|c| c.is_ascii_digit());
                    assert!(
                        is_dirid || strings.contains_key(&t.to_ascii_lowercase()),
                        "line {}: %{t}% is not defined in [Strings]",
                        line.number
                    );
                }
            }
        }
    }
}

#[test]
fn service_is_a_demand_start_kernel_driver() {
    let inf = Inf::load();
    for (_, install, _) in inf.devices() {
        let add = &inf.values(&format!("{install}.Services"), "AddService")[0];
        let svc = &add[2];
        assert_eq!(inf.value(svc, "ServiceType"), "1", "SERVICE_KERNEL_DRIVER");
        assert_eq!(inf.value(svc, "StartType"), "3", "SERVICE_DEMAND_START");
        assert_eq!(inf.value(svc, "ErrorControl"), "0", "SERVICE_ERROR_IGNORE");
        assert_eq!(
            inf.value(svc, "ServiceBinary"),
            format!("%13%\\{DRIVER_IMAGE}")
        );
    }
}

#[test]
fn wddm_install_directives() {
    let inf = Inf::load();
    for install in inf.install_sections() {
        let score = inf.value(&install, "FeatureScore");
        let score = u8::from_str_radix(&score, 16)
            .unwrap_or_else(|_| panic!("FeatureScore {score} is not a hex byte"));
        // Vendor WDDM drivers use the E6..F6 band; FF means "no score".
        assert!(
            (0xE6..=0xF6).contains(&score),
            "FeatureScore {score:#x} outside E6..F6"
        );
        let regs: Vec<String> = inf.values(&install, "AddReg").concat();
        let mut umd_names = None;
        for r in &regs {
            for line in inf.section(r) {
                let v = &line.values;
                if v.len() >= 3 && v[0] == "HKR" && v[2].eq_ignore_ascii_case("UserModeDriverName")
                {
                    umd_names = Some(v[4..].to_vec());
                }
            }
        }
        let umd_names = umd_names.expect("UserModeDriverName is set in the software key");
        assert!(!umd_names.is_empty());
        for n in umd_names {
            assert_eq!(n, format!("%13%\\{UMD_IMAGE}"), "UserModeDriverName entry");
        }
    }
}

#[test]
fn file_names_match_the_built_artefacts() {
    let inf = Inf::load();
    let expected: BTreeSet<String> = [DRIVER_IMAGE, UMD_IMAGE]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        inf.copied_files(),
        expected,
        "files copied by the install section"
    );
    let source: BTreeSet<String> = inf
        .section("SourceDisksFiles")
        .iter()
        .map(|l| l.key.clone().unwrap().to_ascii_lowercase())
        .collect();
    assert_eq!(source, expected, "[SourceDisksFiles]");
    let disks: BTreeSet<String> = inf
        .section("SourceDisksNames")
        .iter()
        .map(|l| l.key.clone().unwrap())
        .collect();
    for line in inf.section("SourceDisksFiles") {
        assert!(
            disks.contains(&line.values[0]),
            "disk {} not in [SourceDisksNames]",
            line.values[0]
        );
    }
    // The names follow cargo's output names: the root package `rvgpu` (a .dll renamed to .sys)
    // and the `rvgpu-umd` library.
    assert_eq!(DRIVER_IMAGE, format!("{}.sys", env!("CARGO_PKG_NAME")));
}
