//! Registry keys and values as the INF writes them and Dxgkrnl reads them (the types the
//! installer and the OS share), and what the repository's INF stamps.

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

impl RegValue {
    /// A `REG_DWORD`.
    pub fn dword(v: u32) -> Self {
        Self {
            ty: REG_DWORD,
            data: v.to_le_bytes().to_vec(),
        }
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

/// `inf/rvgpu.inf` as built into the simulation (the registry default is what it writes).
pub const RVGPU_INF: &str = include_str!("../../../inf/rvgpu.inf");

/// BR-14: the version part of the `DriverVer` scripts/package.sh stamps into the INF (the
/// workspace version with a build number of 0), which Windows stores as the device's
/// `DEVPKEY_Device_DriverVersion`.
pub fn inf_driver_version() -> String {
    format!("{}.0", env!("CARGO_PKG_VERSION"))
}
