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
/// `REG_EXPAND_SZ`.
pub const REG_EXPAND_SZ: u32 = 2;

/// One registry value: its type and raw data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegValue {
    /// `REG_*` type.
    pub ty: u32,
    /// The bytes as stored.
    pub data: Vec<u8>,
}

impl RegValue {
    /// A string value of type `ty` (`REG_SZ`, `REG_EXPAND_SZ`): `s` in UTF-16, NUL-terminated.
    pub fn string(ty: u32, s: &str) -> Self {
        let mut units: Vec<u16> = s.encode_utf16().collect();
        units.push(0);
        Self {
            ty,
            data: units.iter().flat_map(|u| u.to_le_bytes()).collect(),
        }
    }

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

/// The `UserModeDriverName` the installed INF wrote (the UMD, once per D3D runtime slot, with
/// `%13%` expanded to the driver-store folder; `crate::install::default_adapter_keys`). An
/// install that wrote none gives a value of zero bytes, which Dxgkrnl reads as a missing name
/// (BR-35), so the start says so.
pub fn inf_user_mode_driver_name() -> RegValue {
    crate::install::default_adapter_keys()
        .user_mode_driver_name
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

/// Software keys by the address of the adapter's PDO (the device object Dxgkrnl passes in
/// `DXGK_DEVICE_INFO::PhysicalDeviceObject`), for the kernel's registry reads
/// ([`software_key_dword`]).
fn software_keys() -> &'static std::sync::RwLock<std::collections::HashMap<usize, RegKey>> {
    static KEYS: std::sync::OnceLock<std::sync::RwLock<std::collections::HashMap<usize, RegKey>>> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(Default::default)
}

/// Makes `key` the software key of the device whose PDO is at `pdo` (replacing a key an
/// earlier adapter left at that address).
pub(crate) fn publish_software_key(pdo: usize, key: RegKey) {
    software_keys()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(pdo, key);
}

/// Withdraws the software key of the device whose PDO is at `pdo`, when its adapter goes: the
/// PDO's address can be reused by a later adapter, and a key left behind would outlive it.
pub(crate) fn withdraw_software_key(pdo: usize) {
    software_keys()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&pdo);
}

/// The `REG_DWORD` `name` in the software key of the device whose PDO is at `pdo`: absent for
/// an unknown PDO, a missing value, another type or a size other than four bytes.
pub(crate) fn software_key_dword(pdo: usize, name: &str) -> Option<u32> {
    let keys = software_keys()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let v = keys.get(&pdo)?.get("", name)?;
    if v.ty != REG_DWORD {
        return None;
    }
    let b: [u8; 4] = v.data.as_slice().try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

/// `inf/rvgpu.inf` as built into the simulation (the registry default is what it writes).
pub const RVGPU_INF: &str = include_str!("../../../inf/rvgpu.inf");

/// The adapter's software key as installing the driver wrote it
/// (`crate::install::default_adapter_keys`).
pub fn inf_software_key() -> Result<RegKey, String> {
    Ok(crate::install::default_adapter_keys().software_key)
}
