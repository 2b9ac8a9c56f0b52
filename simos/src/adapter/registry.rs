//! The adapter's registry values Dxgkrnl reads at start (BR-35): the software key the INF's
//! `AddReg` writes (`inf/rvgpu.inf`, `[Rvgpu.SoftwareSettings]`).
//!
//! Only `UserModeDriverName` is modelled. How Windows reads it (\[D\] 23H2):
//! `DpiGetAdapterInfo` asks `DxgkRetrieveStringFromRegistry` for it, which fails for an absent
//! value, a type other than `REG_SZ` / `REG_MULTI_SZ`, or zero bytes of data; the name is then
//! "missing" (`DXGADAPTER::Initialize`: `OBJECT_NAME_NOT_FOUND` unless compute-only or
//! virtual-GPU-only). `ADAPTER_RENDER::InitializeUserModeDriverNames` splits the value into
//! NUL-terminated names (a `REG_SZ` gets a terminator appended, a `REG_MULTI_SZ` does not): a
//! first string without a terminator is "invalidly formatted", an empty first name "invalid";
//! both `DEVICE_CONFIGURATION_ERROR`.

pub use crate::base::regkey::{
    inf_driver_version, RegKey, RegValue, REG_DWORD, REG_EXPAND_SZ, REG_MULTI_SZ, REG_SZ, RVGPU_INF,
};

/// The registry's `UserModeDriverName` as Dxgkrnl reads it (BR-35).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UmdName {
    /// At least one well-formed, non-empty name.
    #[default]
    Valid,
    /// Absent, not a string type, or zero bytes long: \[D\] `DxgkRetrieveStringFromRegistry`
    /// fails and `DpiGetAdapterInfo` marks the name missing.
    Missing,
    /// A `REG_MULTI_SZ` whose first string has no terminator inside the value.
    BadlyFormed,
    /// Present, but its first name is empty.
    Empty,
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

/// The value `name` in the software key of the device whose PDO is at `pdo`: `None` for an
/// unknown PDO, `Some(None)` for a value the key does not hold (the simulated ntoskrnl's
/// `IoOpenDeviceRegistryKey` and `ZwQueryValueKey`, on the Linux host only).
#[cfg(target_os = "linux")]
pub(crate) fn software_key_value(pdo: usize, name: &str) -> Option<Option<RegValue>> {
    let keys = software_keys()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Some(keys.get(&pdo)?.get("", name).cloned())
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

/// The adapter's software key as installing the driver wrote it
/// (`crate::install::default_adapter_keys`).
pub fn inf_software_key() -> Result<RegKey, String> {
    Ok(crate::install::default_adapter_keys().software_key)
}
