//! The INF as PnP reads it and as InfVerif judges a Universal (DCH) display driver's INF:
//! sections, directives, string substitution, DIRIDs, and the install plan that results (files
//! to copy, registry values, the service). Each rule names its page; a broken rule is a
//! [`Refusal`] with the code `pnputil /add-driver /install` reports (setupapi.dev.log shows
//! the same), or, for rules only InfVerif enforces, the code it would surface as and the note
//! that Windows itself is more lenient (simos is as strict as the Dev Center here).
//!
//! Pages (learn.microsoft.com, windows-hardware/drivers/install/): "General Syntax Rules for
//! INF Files", "INF Version Section", "INF Manufacturer Section", "INF Models Section",
//! "INF DDInstall Section", "INF DDInstall.HW Section", "INF DDInstall.Services Section",
//! "INF AddService Directive", "INF AddReg Directive", "INF CopyFiles Directive",
//! "INF DestinationDirs Section", "Using Dirids", "INF SourceDisksFiles Section",
//! "INF SourceDisksNames Section", "INF Strings Section", "Driver Package Isolation"
//! (develop/driver-isolation), "Using a Universal INF File", "Identifiers for PCI Devices"
//! (install/identifiers-for-pci-devices), "Combining platform extensions with operating
//! system versions" (the `NTamd64.10.0...26100` decoration).

use super::codes::*;
use super::refusal::Refusal;
use crate::base::regkey::{RegValue, REG_EXPAND_SZ, REG_SZ};

/// One line of a section: its key (left of `=`, if any) and its fields (right of `=`, split
/// at commas outside quotes; the whole line when there is no `=`), unsubstituted.
#[derive(Clone, Debug)]
pub struct Line {
    pub key: Option<String>,
    pub fields: Vec<String>,
}

/// A parsed INF: its sections in order (names lower-cased: INF names are case-insensitive),
/// and its `[Strings]`.
#[derive(Clone, Debug, Default)]
pub struct Inf {
    pub sections: Vec<(String, Vec<Line>)>,
    pub strings: Vec<(String, String)>,
}

/// A rule only InfVerif enforces (Windows installs such an INF; the Dev Center refuses to sign
/// it, and simos refuses it at install, stricter than Windows).
fn infverif(rule: &'static str, code: u32, why: impl Into<String>) -> Refusal {
    Refusal {
        stage: "InfVerif",
        ..Refusal::pnp(rule, code, why)
    }
}

/// "General Syntax Rules for INF Files": `;` starts a comment outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ';' if !quoted => return line.get(..i).unwrap_or(line),
            _ => {}
        }
    }
    line
}

/// Fields split at commas outside quotes, trimmed (quotes kept for substitution).
fn fields(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                if let Some(f) = out.last_mut() {
                    f.push(c);
                }
            }
            ',' if !quoted => out.push(String::new()),
            _ => {
                if let Some(f) = out.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    out.into_iter().map(|f| f.trim().to_owned()).collect()
}

impl Inf {
    /// IN-01 ("General Syntax Rules for INF Files"): sections `[name]`, lines `key = fields`
    /// or bare fields, `;` comments, `\` at a line's end continues it. A line before any
    /// section, or a section header without its `]`, is `ERROR_EXPECTED_SECTION_NAME` /
    /// `ERROR_BAD_SECTION_NAME_LINE` in SetupAPI; both are reported as `ERROR_GENERAL_SYNTAX`
    /// here with the line.
    pub fn parse(text: &str) -> Result<Self, Refusal> {
        let mut inf = Inf::default();
        let mut pending = String::new();
        for (n, raw) in text.lines().enumerate() {
            let line = strip_comment(raw).trim();
            if let Some(head) = line.strip_suffix('\\') {
                pending.push_str(head);
                continue;
            }
            let line = if pending.is_empty() {
                line.to_owned()
            } else {
                let joined = format!("{pending}{line}");
                pending.clear();
                joined
            };
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(Refusal::pnp(
                        "IN-01",
                        ERROR_GENERAL_SYNTAX,
                        format!("line {}: section header without ']'", n + 1),
                    ));
                };
                inf.sections
                    .push((name.trim().to_ascii_lowercase(), Vec::new()));
                continue;
            }
            let Some((_, lines)) = inf.sections.last_mut() else {
                return Err(Refusal::pnp(
                    "IN-01",
                    ERROR_GENERAL_SYNTAX,
                    format!("line {}: a line before any section", n + 1),
                ));
            };
            let parsed = match line.split_once('=') {
                Some((k, v)) if !k.contains('"') => Line {
                    key: Some(k.trim().to_owned()),
                    fields: fields(v),
                },
                _ => Line {
                    key: None,
                    fields: fields(&line),
                },
            };
            lines.push(parsed);
        }
        inf.strings = inf
            .section("strings")
            .map(|lines| {
                lines
                    .iter()
                    .filter_map(|l| {
                        let k = l.key.clone()?;
                        let v = l.fields.join(",");
                        let v = v
                            .strip_prefix('"')
                            .and_then(|v| v.strip_suffix('"'))
                            .unwrap_or(&v)
                            .to_owned();
                        Some((k, v))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(inf)
    }

    /// The section `name` (case-insensitive).
    pub fn section(&self, name: &str) -> Option<&Vec<Line>> {
        let name = name.to_ascii_lowercase();
        self.sections
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| l)
    }

    /// The section `name`, or `ERROR_SECTION_NOT_FOUND` naming who asked for it.
    fn require(&self, name: &str, by: &str) -> Result<&Vec<Line>, Refusal> {
        self.section(name).ok_or_else(|| {
            Refusal::pnp(
                "IN-09",
                ERROR_SECTION_NOT_FOUND,
                format!("{by} names [{name}], which the INF lacks"),
            )
        })
    }

    /// The first value of directive `key` in section `section`.
    pub fn value(&self, section: &str, key: &str) -> Option<String> {
        self.section(section)?
            .iter()
            .find(|l| {
                l.key
                    .as_deref()
                    .is_some_and(|k| k.eq_ignore_ascii_case(key))
            })
            .map(|l| l.fields.join(","))
    }

    /// Every value of directive `key` in `section` (a directive may be repeated, and each
    /// names a comma-separated list of sections).
    fn list(&self, section: &str, key: &str) -> Vec<String> {
        self.section(section)
            .into_iter()
            .flatten()
            .filter(|l| {
                l.key
                    .as_deref()
                    .is_some_and(|k| k.eq_ignore_ascii_case(key))
            })
            .flat_map(|l| l.fields.iter().cloned())
            .filter(|f| !f.is_empty())
            .collect()
    }

    /// "INF Strings Section": `%token%` is the token's string, `%%` a percent sign; the DIRID
    /// tokens `%13%` and `%10%` ("Using Dirids") are expanded by `dirid`. A whole field in
    /// quotes loses them.
    pub fn substitute(
        &self,
        field: &str,
        dirid: &dyn Fn(u32) -> Option<String>,
    ) -> Result<String, Refusal> {
        let field = field
            .strip_prefix('"')
            .and_then(|f| f.strip_suffix('"'))
            .unwrap_or(field);
        let mut out = String::new();
        let mut rest = field;
        while let Some(start) = rest.find('%') {
            out.push_str(rest.get(..start).unwrap_or(""));
            let after = rest.get(start + 1..).unwrap_or("");
            let Some(end) = after.find('%') else {
                return Err(Refusal::pnp(
                    "IN-01",
                    ERROR_GENERAL_SYNTAX,
                    format!("unterminated %token% in {field:?}"),
                ));
            };
            let token = after.get(..end).unwrap_or("");
            if token.is_empty() {
                out.push('%');
            } else if let Ok(id) = token.parse::<u32>() {
                out.push_str(&dirid(id).ok_or_else(|| {
                    infverif(
                        "IN-07",
                        ERROR_GENERAL_SYNTAX,
                        format!("DIRID %{id}% is not one a Universal driver may use"),
                    )
                })?);
            } else {
                let value = self
                    .strings
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(token))
                    .map(|(_, v)| v.as_str())
                    .ok_or_else(|| {
                        Refusal::pnp(
                            "IN-01",
                            ERROR_GENERAL_SYNTAX,
                            format!("%{token}% is not in [Strings]"),
                        )
                    })?;
                out.push_str(value);
            }
            rest = after.get(end + 1..).unwrap_or("");
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn number(s: &str) -> Option<u32> {
    let t = s.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// Which registry root an `AddReg` section writes under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegRoot {
    /// The DDInstall section's: the device's software key.
    Software,
    /// The `DDInstall.HW` section's: the device's `Device Parameters` key.
    Hardware,
    /// An `AddService` event-log section's: the service's event-log key.
    EventLog,
}

/// One registry value the INF writes: root, subkey, name, value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegWrite {
    pub root: RegRoot,
    pub subkey: String,
    pub name: String,
    pub value: RegValue,
}

/// The service `AddService` installs ("INF AddService Directive").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub name: String,
    pub display_name: String,
    pub service_type: u32,
    pub start_type: u32,
    pub error_control: u32,
    /// The binary, relative to the driver-store folder (`ServiceBinary = %13%\name`).
    pub binary: String,
}

/// What installing the INF on the device does: the plan, before anything is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `[Version] DriverVer` (`MM/DD/YYYY,a.b.c.d`).
    pub driver_ver: String,
    /// `[Version] CatalogFile`.
    pub catalog: String,
    /// `[Version] Provider`, substituted.
    pub provider: String,
    /// The files the install section copies (all to DIRID 13, the driver-store folder).
    pub files: Vec<String>,
    /// The hardware ID of the models line that matched the device.
    pub matching_id: String,
    /// The install section.
    pub install_section: String,
    /// The registry values, with `%13%` expanded to `store_dir`.
    pub registry: Vec<RegWrite>,
    pub service: Service,
}

/// Where the install runs: the device's IDs and the Windows build.
#[derive(Clone, Debug)]
pub struct Target {
    /// The device's hardware IDs then compatible IDs, most specific first ("Identifiers for
    /// PCI Devices").
    pub ids: Vec<String>,
    /// The Windows build number (26100 for 24H2).
    pub build: u32,
    /// The driver-store folder `%13%` names (`C:\Windows\System32\DriverStore\
    /// FileRepository\<folder>`).
    pub store_dir: String,
}

/// The PCI IDs Windows reports for the rvgpu function, most specific first ("Identifiers for
/// PCI Devices": four hardware IDs, then compatible IDs by class code). The function has no
/// subsystem IDs (0000:0000).
pub fn rvgpu_pci_ids() -> Vec<String> {
    let v = rvgpu_hw::pci::VENDOR_ID;
    let d = rvgpu_hw::pci::DEVICE_ID;
    let r = rvgpu_hw::pci::REVISION_ID;
    let cc = rvgpu_hw::pci::CLASS_CODE;
    let (class, sub) = ((cc >> 16) & 0xFF, (cc >> 8) & 0xFF);
    let prog = cc & 0xFF;
    vec![
        format!("PCI\\VEN_{v:04X}&DEV_{d:04X}&SUBSYS_00000000&REV_{r:02X}"),
        format!("PCI\\VEN_{v:04X}&DEV_{d:04X}&SUBSYS_00000000"),
        format!("PCI\\VEN_{v:04X}&DEV_{d:04X}&REV_{r:02X}"),
        format!("PCI\\VEN_{v:04X}&DEV_{d:04X}"),
        format!("PCI\\VEN_{v:04X}&CC_{class:02X}{sub:02X}{prog:02X}"),
        format!("PCI\\VEN_{v:04X}&CC_{class:02X}{sub:02X}"),
        format!("PCI\\VEN_{v:04X}"),
        format!("PCI\\CC_{class:02X}{sub:02X}{prog:02X}"),
        format!("PCI\\CC_{class:02X}{sub:02X}"),
    ]
}

/// `FLG_ADDREG_TYPE_*` ("INF AddReg Directive").
const FLG_ADDREG_TYPE_MASK: u32 = 0xFFFF_0001;
const FLG_ADDREG_TYPE_SZ: u32 = 0;
const FLG_ADDREG_TYPE_MULTI_SZ: u32 = 0x0001_0000;
const FLG_ADDREG_TYPE_EXPAND_SZ: u32 = 0x0002_0000;
const FLG_ADDREG_TYPE_DWORD: u32 = 0x0001_0001;

/// "INF Models Section" / "Combining platform extensions with operating system versions":
/// `NTamd64[.Major.Minor[.ProductType[.SuiteMask[.BuildNumber]]]]`; a decoration applies on
/// x64 when its version and build are at most the running system's. Returns the build it
/// requires (0: none), or `None` for another architecture.
fn amd64_decoration_build(decoration: &str) -> Option<u32> {
    let lower = decoration.to_ascii_lowercase();
    let rest = lower.strip_prefix("ntamd64")?;
    if rest.is_empty() {
        return Some(0);
    }
    let parts: Vec<&str> = rest.trim_start_matches('.').split('.').collect();
    let major: u32 = parts.first().and_then(|p| p.parse().ok()).unwrap_or(0);
    if major > 10 {
        return None;
    }
    Some(parts.get(4).and_then(|p| p.parse().ok()).unwrap_or(0))
}

/// IN-02..IN-13 on `inf` for `target` (see docs/windows-bringup.md §1).
pub fn plan(inf: &Inf, target: &Target) -> Result<Plan, Refusal> {
    let x = Expand { inf, target };
    let (provider, driver_ver, catalog) = version_section(&x)?;
    let (install, matching_id) = matching_models_line(inf, target)?;
    inf.require(&install, "the models line")?;
    let files = copied_files(inf, &install)?;
    let mut registry = Vec::new();
    add_reg(
        &x,
        inf.list(&install, "AddReg"),
        RegRoot::Software,
        &mut registry,
    )?;
    add_reg(
        &x,
        inf.list(&format!("{install}.HW"), "AddReg"),
        RegRoot::Hardware,
        &mut registry,
    )?;
    let service = function_service(&x, &install, &files, &mut registry)?;
    Ok(Plan {
        driver_ver,
        catalog,
        provider,
        files,
        matching_id,
        install_section: install,
        registry,
        service,
    })
}

/// The INF's `%token%` expansion for the target: DIRID 13 is the target's driver-store folder.
struct Expand<'a> {
    inf: &'a Inf,
    target: &'a Target,
}

impl Expand<'_> {
    fn sub(&self, field: &str) -> Result<String, Refusal> {
        let dirid = |id: u32| match id {
            // "Using Dirids": 13 is the driver-store folder, the only destination a Driver
            // Package Isolation INF copies to; 10 (%windir%) appears in an event-log path.
            13 => Some(self.target.store_dir.clone()),
            10 => Some(r"C:\Windows".to_owned()),
            _ => None,
        };
        self.inf.substitute(field, &dirid)
    }
}

/// IN-02..IN-07, the `[Version]` section: its provider, `DriverVer` and catalog.
fn version_section(x: &Expand<'_>) -> Result<(String, String, String), Refusal> {
    let inf = x.inf;
    // IN-02 "INF Version Section": Signature "$Windows NT$" (or "$Chicago$").
    let signature = inf.value("version", "Signature").ok_or_else(|| {
        Refusal::pnp(
            "IN-02",
            ERROR_WRONG_INF_STYLE,
            "no [Version] Signature: not a Windows NT INF",
        )
    })?;
    let signature = signature.trim_matches('"');
    if !signature.eq_ignore_ascii_case("$Windows NT$")
        && !signature.eq_ignore_ascii_case("$Chicago$")
    {
        return Err(Refusal::pnp(
            "IN-02",
            ERROR_WRONG_INF_STYLE,
            format!("[Version] Signature {signature:?} is not \"$Windows NT$\""),
        ));
    }
    // IN-03 "INF Version Section" and "System-Defined Device Setup Classes": a device INF
    // names its class and the class's GUID, and they agree; a display adapter's class is
    // Display (BR-13: a System-class package never starts as a display adapter).
    let class = inf.value("version", "Class").unwrap_or_default();
    let guid = inf.value("version", "ClassGUID").unwrap_or_default();
    if !class.eq_ignore_ascii_case("Display")
        || !guid.eq_ignore_ascii_case(super::registry::DISPLAY_CLASS_GUID)
    {
        return Err(Refusal::pnp(
            "IN-03",
            ERROR_INVALID_CLASS,
            format!(
                "Class {class:?} / ClassGUID {guid:?}: a display adapter's are Display / {}",
                super::registry::DISPLAY_CLASS_GUID
            ),
        ));
    }
    // IN-04 "INF Version Section": Provider is required (InfVerif).
    let provider = match inf.value("version", "Provider") {
        Some(p) if !p.is_empty() => x.sub(&p)?,
        _ => {
            return Err(infverif(
                "IN-04",
                ERROR_LINE_NOT_FOUND,
                "no [Version] Provider",
            ))
        }
    };
    // IN-05 "INF DriverVer Directive": `MM/DD/YYYY,w.x.y.z`, required; each part a 16-bit
    // number.
    let driver_ver = inf.value("version", "DriverVer").unwrap_or_default();
    let ok_ver = driver_ver.split_once(',').is_some_and(|(date, ver)| {
        let d: Vec<&str> = date.trim().split('/').collect();
        let v: Vec<&str> = ver.trim().split('.').collect();
        d.len() == 3
            && d.iter().all(|p| p.parse::<u16>().is_ok())
            && v.len() == 4
            && v.iter().all(|p| p.parse::<u16>().is_ok())
    });
    if !ok_ver {
        return Err(Refusal::pnp(
            "IN-05",
            ERROR_GENERAL_SYNTAX,
            format!("[Version] DriverVer {driver_ver:?} is not MM/DD/YYYY,w.x.y.z"),
        ));
    }
    // IN-06 "INF Version Section": a signed package names its catalog.
    let catalog = inf
        .value("version", "CatalogFile.NTamd64")
        .or_else(|| inf.value("version", "CatalogFile"))
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            Refusal::pnp(
                "IN-06",
                ERROR_NO_CATALOG_FOR_OEM_INF,
                "no [Version] CatalogFile",
            )
        })?;
    // IN-07 "Driver Package Isolation": PnpLockdown = 1 (the package's files cannot be
    // changed once installed; InfVerif /w).
    if inf.value("version", "PnpLockdown").as_deref() != Some("1") {
        return Err(infverif(
            "IN-07",
            ERROR_LINE_NOT_FOUND,
            "[Version] PnpLockdown is not 1",
        ));
    }
    Ok((provider, driver_ver, catalog))
}

/// IN-08: the install section and hardware ID of the models line that matches the device.
fn matching_models_line(inf: &Inf, target: &Target) -> Result<(String, String), Refusal> {
    // IN-08 "INF Manufacturer Section", "INF Models Section", "Identifiers for PCI
    // Devices": the x64 models section whose decoration the build satisfies, and in it the
    // first device line whose hardware ID is one of the device's IDs (most specific first).
    let manufacturer = inf.require("manufacturer", "the INF")?;
    let mut matched: Option<(String, String)> = None;
    'outer: for id in &target.ids {
        for m in manufacturer {
            let Some((base, decorations)) = m.fields.split_first() else {
                continue;
            };
            let names: Vec<String> = decorations
                .iter()
                .filter(|d| amd64_decoration_build(d).is_some_and(|b| b <= target.build))
                .map(|d| format!("{base}.{d}"))
                .collect();
            for name in names {
                let models = inf.require(&name, "[Manufacturer]")?;
                for line in models {
                    let Some((install, hwids)) = line.fields.split_first() else {
                        continue;
                    };
                    if hwids.iter().any(|h| h.eq_ignore_ascii_case(id)) {
                        matched = Some((install.clone(), id.clone()));
                        break 'outer;
                    }
                }
            }
        }
    }
    matched.ok_or_else(|| {
        Refusal::pnp(
            "IN-08",
            ERROR_NO_SUCH_DEVINST,
            format!(
                "no x64 models line for build {} matches the device's IDs ({})",
                target.build,
                target.ids.join(", ")
            ),
        )
    })
}

/// IN-09, IN-10: the files the install section copies, each to the driver store and each on
/// a source disk.
fn copied_files(inf: &Inf, install: &str) -> Result<Vec<String>, Refusal> {
    // IN-09 "INF DestinationDirs Section", "Driver Package Isolation": every file copied
    // goes to DIRID 13.
    let dest_of = |section: &str| -> Option<String> {
        inf.value("destinationdirs", section)
            .or_else(|| inf.value("destinationdirs", "DefaultDestDir"))
    };
    let mut files = Vec::new();
    for list in inf.list(install, "CopyFiles") {
        if let Some(single) = list.strip_prefix('@') {
            files.push(single.to_owned());
            continue;
        }
        let lines = inf.require(&list, "CopyFiles")?;
        let dest = dest_of(&list).unwrap_or_default();
        let dirid = dest.split(',').next().unwrap_or("").trim();
        if dirid != "13" {
            return Err(infverif(
                "IN-09",
                ERROR_GENERAL_SYNTAX,
                format!("[{list}] copies to DIRID {dirid:?}, not 13 (run from the driver store)"),
            ));
        }
        for l in lines {
            if let Some(f) = l.fields.first().filter(|f| !f.is_empty()) {
                files.push(f.clone());
            }
        }
    }
    // IN-10 "INF SourceDisksFiles Section", "INF SourceDisksNames Section": each file copied
    // is listed with a disk that [SourceDisksNames] defines.
    let disks: Vec<String> = inf
        .section("sourcedisksnames")
        .into_iter()
        .flatten()
        .filter_map(|l| l.key.clone())
        .collect();
    for f in &files {
        let disk = inf
            .value("sourcedisksfiles.amd64", f)
            .or_else(|| inf.value("sourcedisksfiles", f));
        let Some(disk) = disk else {
            return Err(Refusal::pnp(
                "IN-10",
                ERROR_LINE_NOT_FOUND,
                format!("{f} is copied but not in [SourceDisksFiles]"),
            ));
        };
        let id = disk.split(',').next().unwrap_or("").trim().to_owned();
        if !disks.contains(&id) {
            return Err(Refusal::pnp(
                "IN-10",
                ERROR_LINE_NOT_FOUND,
                format!("{f} is on disk {id:?}, which [SourceDisksNames] lacks"),
            ));
        }
    }
    Ok(files)
}

/// IN-11: the values of the AddReg `sections`, under `root`, onto `registry`.
fn add_reg(
    x: &Expand<'_>,
    sections: Vec<String>,
    root: RegRoot,
    registry: &mut Vec<RegWrite>,
) -> Result<(), Refusal> {
    // IN-11 "INF AddReg Directive", "Driver Package Isolation": registry values only under
    // HKR (the device's own keys); a universal INF writes no global location.
    for s in sections {
        for l in x.inf.require(&s, "AddReg")? {
            let f = &l.fields;
            let r = f.first().map(String::as_str).unwrap_or("");
            if !r.eq_ignore_ascii_case("HKR") {
                return Err(infverif(
                    "IN-11",
                    ERROR_GENERAL_SYNTAX,
                    format!("[{s}] writes under {r}, not HKR (a global registry location)"),
                ));
            }
            let field = |i: usize| x.sub(f.get(i).map_or("", String::as_str));
            let flags = match field(3)? {
                s if s.is_empty() => 0,
                s => number(&s).ok_or_else(|| {
                    Refusal::pnp("IN-11", ERROR_GENERAL_SYNTAX, format!("flags {s:?}"))
                })?,
            };
            let value = match flags & FLG_ADDREG_TYPE_MASK {
                FLG_ADDREG_TYPE_DWORD => {
                    let v = field(4)?;
                    RegValue::dword(number(&v).ok_or_else(|| {
                        Refusal::pnp("IN-11", ERROR_GENERAL_SYNTAX, format!("DWORD {v:?}"))
                    })?)
                }
                FLG_ADDREG_TYPE_MULTI_SZ => {
                    let names: Vec<String> =
                        (4..f.len().max(5)).map(field).collect::<Result<_, _>>()?;
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    RegValue::multi_sz(&refs)
                }
                FLG_ADDREG_TYPE_EXPAND_SZ => RegValue::string(REG_EXPAND_SZ, &field(4)?),
                FLG_ADDREG_TYPE_SZ => RegValue::string(REG_SZ, &field(4)?),
                other => {
                    return Err(Refusal::pnp(
                        "IN-11",
                        ERROR_GENERAL_SYNTAX,
                        format!("[{s}]: value type flags {other:#x} not understood"),
                    ))
                }
            };
            registry.push(RegWrite {
                root,
                subkey: field(1)?,
                name: field(2)?,
                value,
            });
        }
    }
    Ok(())
}

/// IN-12: the function driver's service, a kernel driver whose binary the INF copies to the
/// driver store; its event-log AddReg goes onto `registry`.
fn function_service(
    x: &Expand<'_>,
    install: &str,
    files: &[String],
    registry: &mut Vec<RegWrite>,
) -> Result<Service, Refusal> {
    let (inf, target) = (x.inf, x.target);
    // IN-12 "INF DDInstall.Services Section", "INF AddService Directive": the function
    // driver's service (flag 0x2, SPSVCINST_ASSOCSERVICE), a kernel driver (type 1) whose
    // binary is in the driver store.
    let services = format!("{install}.Services");
    let lines = inf.require(&services, "the install section")?;
    let add = lines
        .iter()
        .find(|l| {
            l.key
                .as_deref()
                .is_some_and(|k| k.eq_ignore_ascii_case("AddService"))
        })
        .ok_or_else(|| {
            Refusal::pnp(
                "IN-12",
                ERROR_LINE_NOT_FOUND,
                format!("[{services}] has no AddService"),
            )
        })?;
    let name = add.fields.first().cloned().unwrap_or_default();
    let flags = add.fields.get(1).and_then(|f| number(f)).unwrap_or(0);
    if name.is_empty() || flags & 0x2 == 0 {
        return Err(Refusal::pnp(
            "IN-12",
            ERROR_LINE_NOT_FOUND,
            "AddService does not name the function driver (flag 0x2)",
        ));
    }
    let svc_section = add.fields.get(2).cloned().unwrap_or_default();
    inf.require(&svc_section, "AddService")?;
    let svc_num = |k: &str| inf.value(&svc_section, k).and_then(|v| number(&v));
    let binary = x.sub(&inf.value(&svc_section, "ServiceBinary").unwrap_or_default())?;
    let store_prefix = format!("{}\\", target.store_dir);
    let Some(binary) = binary.strip_prefix(&store_prefix).map(str::to_owned) else {
        return Err(infverif(
            "IN-12",
            ERROR_GENERAL_SYNTAX,
            format!("ServiceBinary {binary:?} is not in the driver store (%13%)"),
        ));
    };
    if !files.iter().any(|f| f.eq_ignore_ascii_case(&binary)) {
        return Err(Refusal::pnp(
            "IN-12",
            ERROR_FILE_NOT_FOUND,
            format!("ServiceBinary {binary} is not a file the INF copies"),
        ));
    }
    let service = Service {
        name: name.clone(),
        display_name: x.sub(&inf.value(&svc_section, "DisplayName").unwrap_or_default())?,
        service_type: svc_num("ServiceType").unwrap_or(0),
        start_type: svc_num("StartType").unwrap_or(u32::MAX),
        error_control: svc_num("ErrorControl").unwrap_or(u32::MAX),
        binary,
    };
    if service.service_type != 1 || service.start_type > 4 || service.error_control > 3 {
        return Err(Refusal::pnp(
            "IN-12",
            ERROR_GENERAL_SYNTAX,
            format!(
                "service {name}: ServiceType {} StartType {} ErrorControl {} (a kernel driver \
                 is type 1, start 0..4, error control 0..3)",
                service.service_type, service.start_type, service.error_control
            ),
        ));
    }
    if let Some(log) = add.fields.get(3).filter(|s| !s.is_empty()) {
        add_reg(x, inf.list(log, "AddReg"), RegRoot::EventLog, registry)?;
    }
    Ok(service)
}
