//! The adapter's registry values Dxgkrnl reads at start (BR-35): the software key the INF's
//! `AddReg` writes (`inf/rvgpu.inf`, `[Rvgpu.SoftwareSettings]`).
//!
//! Only `UserModeDriverName` is modelled. How Windows reads it ([D] 23H2):
//! `DpiGetAdapterInfo` asks `DxgkRetrieveStringFromRegistry` for it, which fails for an absent
//! value, a type other than `REG_SZ` / `REG_MULTI_SZ`, or zero bytes of data; the name is then
//! "missing" (`DXGADAPTER::Initialize`: `OBJECT_NAME_NOT_FOUND` unless compute-only or
//! virtual-GPU-only). `ADAPTER_RENDER::InitializeUserModeDriverNames` splits the value into
//! NUL-terminated names (a `REG_SZ` gets a terminator appended, a `REG_MULTI_SZ` does not): a
//! first string without a terminator is "invalidly formatted", an empty first name "invalid";
//! both `DEVICE_CONFIGURATION_ERROR`.

/// The registry's `UserModeDriverName` as Dxgkrnl reads it (BR-35).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UmdName {
    /// At least one well-formed, non-empty name.
    #[default]
    Valid,
    /// Absent, not a string type, or zero bytes long: [D] `DxgkRetrieveStringFromRegistry`
    /// fails and `DpiGetAdapterInfo` marks the name missing.
    Missing,
    /// A `REG_MULTI_SZ` whose first string has no terminator inside the value.
    BadlyFormed,
    /// Present, but its first name is empty.
    Empty,
}

/// `REG_SZ`.
pub const REG_SZ: u32 = 1;
/// `REG_MULTI_SZ`.
pub const REG_MULTI_SZ: u32 = 7;
/// `REG_DWORD`.
pub const REG_DWORD: u32 = 4;

/// One registry value: its type and raw data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegValue {
    /// `REG_*` type.
    pub ty: u32,
    /// The bytes as stored.
    pub data: Vec<u8>,
}

impl RegValue {
    /// A `REG_MULTI_SZ` of `names`, as an INF's `%REG_MULTI_SZ%` line stores it (each name
    /// NUL-terminated, then one more NUL).
    pub fn multi_sz(names: &[&str]) -> Self {
        let mut units: Vec<u16> = Vec::new();
        for n in names {
            units.extend(n.encode_utf16());
            units.push(0);
        }
        units.push(0);
        Self {
            ty: REG_MULTI_SZ,
            data: units.iter().flat_map(|u| u.to_le_bytes()).collect(),
        }
    }
}

/// Where `%13%` (the driver-store directory of the package) points in the simulated machine.
pub const DRIVER_STORE_DIR: &str =
    r"C:\Windows\System32\DriverStore\FileRepository\rvgpu.inf_amd64_0000000000000000";

/// The `UserModeDriverName` `inf/rvgpu.inf` writes (the UMD, once per D3D runtime slot), as
/// parsed from the INF. An INF that writes none (or does not parse) gives a value of zero
/// bytes, which Dxgkrnl reads as a missing name (BR-35), so the start says so.
pub fn inf_user_mode_driver_name() -> RegValue {
    inf_software_key()
        .ok()
        .and_then(|k| k.get("", "UserModeDriverName").cloned())
        .unwrap_or(RegValue {
            ty: REG_MULTI_SZ,
            data: Vec::new(),
        })
}

// The generator of the images' version resources (one rule for the version stamped) and
// its reader (BR-14).
#[allow(dead_code)]
#[path = "../../../build/version_res.rs"]
pub(crate) mod version_res;

/// BR-14: the version part of the `DriverVer` scripts/package.sh stamps into the INF (the
/// workspace version with a build number of 0), which Windows stores as the device's
/// `DEVPKEY_Device_DriverVersion`.
pub fn inf_driver_version() -> String {
    format!("{}.0", env!("CARGO_PKG_VERSION"))
}

/// BR-14: the `FILEVERSION` build.rs stamps into rvgpu.sys (build/version_res.rs), as the
/// 64-bit value Dxgkrnl reads (`dwFileVersionMS` : `dwFileVersionLS`); 0 if the workspace
/// version is not one the build script accepts (it then fails the image's build).
pub fn stamped_file_version() -> u64 {
    version_res::version_from_cargo(env!("CARGO_PKG_VERSION")).map_or(0, |v| {
        v.iter()
            .fold(0u64, |acc, part| (acc << 16) | u64::from(*part))
    })
}

/// What Dxgkrnl makes of the value (`None`: absent).
pub fn read_umd_name(value: Option<&RegValue>) -> UmdName {
    let Some(v) = value else {
        return UmdName::Missing;
    };
    if (v.ty != REG_SZ && v.ty != REG_MULTI_SZ) || v.data.is_empty() {
        return UmdName::Missing;
    }
    let mut units: Vec<u16> = v
        .data
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c.get(1).copied().unwrap_or(0)]))
        .collect();
    if v.ty == REG_SZ {
        units.push(0);
    }
    match units.iter().position(|u| *u == 0) {
        None => UmdName::BadlyFormed,
        Some(0) => UmdName::Empty,
        Some(_) => UmdName::Valid,
    }
}

/// The adapter's software key as the INF's `AddReg` directives write it: `HKR` values under
/// the driver's key (subkey `""` for the key itself). Names compare case-insensitively, as
/// registry names do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegKey {
    /// (subkey, value name, value), in the order the INF writes them.
    pub values: Vec<(String, String, RegValue)>,
}

impl RegKey {
    /// The value `name` under `subkey`.
    pub fn get(&self, subkey: &str, name: &str) -> Option<&RegValue> {
        self.values
            .iter()
            .rev()
            .find(|(k, n, _)| k.eq_ignore_ascii_case(subkey) && n.eq_ignore_ascii_case(name))
            .map(|(_, _, v)| v)
    }

    /// Whether `subkey` exists (some value was written under it or a key below it).
    pub fn has_subkey(&self, subkey: &str) -> bool {
        let prefix = format!("{}\\", subkey.to_ascii_lowercase());
        self.values.iter().any(|(k, _, _)| {
            k.eq_ignore_ascii_case(subkey) || k.to_ascii_lowercase().starts_with(&prefix)
        })
    }

    /// Writes (or replaces) `name` under `subkey`.
    pub fn set(&mut self, subkey: &str, name: &str, value: RegValue) {
        self.remove(subkey, name);
        self.values
            .push((subkey.to_owned(), name.to_owned(), value));
    }

    /// Deletes `name` under `subkey`.
    pub fn remove(&mut self, subkey: &str, name: &str) {
        self.values
            .retain(|(k, n, _)| !(k.eq_ignore_ascii_case(subkey) && n.eq_ignore_ascii_case(name)));
    }

    /// Deletes `subkey` and everything below it.
    pub fn remove_subkey(&mut self, subkey: &str) {
        let prefix = format!("{}\\", subkey.to_ascii_lowercase());
        self.values.retain(|(k, _, _)| {
            !(k.eq_ignore_ascii_case(subkey) || k.to_ascii_lowercase().starts_with(&prefix))
        });
    }
}

impl RegValue {
    /// A `REG_DWORD`.
    pub fn dword(v: u32) -> Self {
        Self {
            ty: REG_DWORD,
            data: v.to_le_bytes().to_vec(),
        }
    }
}

/// `inf/rvgpu.inf` as built into the simulation (the registry default is what it writes).
pub const RVGPU_INF: &str = include_str!("../../../inf/rvgpu.inf");

/// The software key `inf/rvgpu.inf` writes for the adapter ([`parse_inf_software_key`] of
/// [`RVGPU_INF`]).
pub fn inf_software_key() -> Result<RegKey, String> {
    parse_inf_software_key(RVGPU_INF)
}

/// An INF's lines by section (names lower-cased), comments and blank lines dropped, `\`
/// continuations joined.
fn inf_sections(text: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = strip_inf_comment(raw).trim();
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
        if line.starts_with('[') {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                sections.push((name.trim().to_ascii_lowercase(), Vec::new()));
            }
            continue;
        }
        if let Some((_, lines)) = sections.last_mut() {
            lines.push(line);
        }
    }
    sections
}

fn strip_inf_comment(line: &str) -> &str {
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

/// Splits a line's fields at commas outside quotes (quotes kept).
fn inf_fields(s: &str) -> Vec<String> {
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

/// Replaces `%token%` with its `[Strings]` value or, for `%13%`, the driver-store directory;
/// `%%` is a percent sign. Quotes around a whole field are dropped.
fn inf_substitute(field: &str, strings: &[(String, String)]) -> Result<String, String> {
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
            return Err(format!("unterminated %token% in {field:?}"));
        };
        let token = after.get(..end).unwrap_or("");
        if token.is_empty() {
            out.push('%');
        } else if token == "13" {
            out.push_str(DRIVER_STORE_DIR);
        } else {
            let value = strings
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(token))
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| format!("%{token}% is not in [Strings]"))?;
            out.push_str(value);
        }
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    Ok(out)
}

fn inf_number(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => t.parse::<u32>(),
    };
    parsed.map_err(|_| format!("{t:?} is not a number"))
}

/// `FLG_ADDREG_TYPE_*` in an `AddReg` line's flags ("INF AddReg Directive").
const FLG_ADDREG_TYPE_MASK: u32 = 0xFFFF_0001;
const FLG_ADDREG_TYPE_SZ: u32 = 0;
const FLG_ADDREG_TYPE_MULTI_SZ: u32 = 0x0001_0000;
const FLG_ADDREG_TYPE_EXPAND_SZ: u32 = 0x0002_0000;
const FLG_ADDREG_TYPE_DWORD: u32 = 0x0001_0001;
/// `REG_EXPAND_SZ`.
pub const REG_EXPAND_SZ: u32 = 2;

fn sz_value(ty: u32, s: &str) -> RegValue {
    let mut units: Vec<u16> = s.encode_utf16().collect();
    units.push(0);
    RegValue {
        ty,
        data: units.iter().flat_map(|u| u.to_le_bytes()).collect(),
    }
}

/// The `HKR` values the INF's install section writes into the driver's software key: the
/// install section is the first device's in the first models section of `[Manufacturer]`,
/// its `AddReg` sections are read in order ("INF AddReg Directive", "INF DDInstall Section"
/// on learn.microsoft.com). Only `HKR` lines are taken; value types `REG_SZ`,
/// `REG_EXPAND_SZ`, `REG_MULTI_SZ` and `REG_DWORD` are understood, anything else is an error.
pub fn parse_inf_software_key(text: &str) -> Result<RegKey, String> {
    let sections = inf_sections(text);
    let section = |name: &str| -> Option<&Vec<String>> {
        let name = name.to_ascii_lowercase();
        sections.iter().find(|(n, _)| *n == name).map(|(_, l)| l)
    };
    let strings: Vec<(String, String)> = section("strings")
        .map(|lines| {
            lines
                .iter()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| {
                    let v = v.trim();
                    let v = v
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .unwrap_or(v);
                    (k.trim().to_owned(), v.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    let manufacturer = section("manufacturer").ok_or("no [Manufacturer] section")?;
    let first = manufacturer.first().ok_or("[Manufacturer] is empty")?;
    let (_, models) = first
        .split_once('=')
        .ok_or("[Manufacturer] line without '='")?;
    let fields = inf_fields(models);
    let base = fields
        .first()
        .ok_or("[Manufacturer] names no models section")?;
    let models_name = match fields.get(1) {
        Some(decoration) => format!("{base}.{decoration}"),
        None => base.clone(),
    };
    let models = section(&models_name).ok_or(format!("no [{models_name}] section"))?;
    let device = models.first().ok_or(format!("[{models_name}] is empty"))?;
    let (_, install) = device
        .split_once('=')
        .ok_or(format!("[{models_name}] line without '='"))?;
    let install = inf_fields(install)
        .into_iter()
        .next()
        .ok_or("a device without an install section")?;
    let install_lines = section(&install).ok_or(format!("no [{install}] section"))?;
    let mut key = RegKey::default();
    for line in install_lines {
        let Some((directive, list)) = line.split_once('=') else {
            continue;
        };
        if !directive.trim().eq_ignore_ascii_case("AddReg") {
            continue;
        }
        for reg_section in inf_fields(list).iter().filter(|s| !s.is_empty()) {
            let lines = section(reg_section).ok_or(format!("no [{reg_section}] section"))?;
            for l in lines {
                let f = inf_fields(l);
                if !f.first().is_some_and(|r| r.eq_ignore_ascii_case("HKR")) {
                    continue;
                }
                let field = |i: usize| -> Result<String, String> {
                    inf_substitute(f.get(i).map_or("", String::as_str), &strings)
                };
                let subkey = field(1)?;
                let name = field(2)?;
                let flags = match field(3)? {
                    s if s.is_empty() => 0,
                    s => inf_number(&s)?,
                };
                let value = match flags & FLG_ADDREG_TYPE_MASK {
                    FLG_ADDREG_TYPE_DWORD => RegValue::dword(inf_number(&field(4)?)?),
                    FLG_ADDREG_TYPE_MULTI_SZ => {
                        let names: Vec<String> =
                            (4..f.len().max(5)).map(field).collect::<Result<_, _>>()?;
                        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                        RegValue::multi_sz(&refs)
                    }
                    FLG_ADDREG_TYPE_EXPAND_SZ => sz_value(REG_EXPAND_SZ, &field(4)?),
                    FLG_ADDREG_TYPE_SZ => sz_value(REG_SZ, &field(4)?),
                    other => {
                        return Err(format!(
                            "[{reg_section}] {l:?}: value type flags {other:#x} not understood"
                        ))
                    }
                };
                key.set(&subkey, &name, value);
            }
        }
    }
    Ok(key)
}
