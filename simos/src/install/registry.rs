//! The simulated machine's registry (`HKEY_LOCAL_MACHINE`), as far as installing a display
//! driver writes it: values by full key path, names and paths compared case-insensitively as
//! the registry compares them. One [`RegKey`] holds it all, its subkey being the path below
//! `HKLM`; [`Registry::subtree`] gives one key with its subkeys, in the form Dxgkrnl's readers
//! take (`adapter::registry`, `dxgkrnl::features`).

use crate::base::regkey::{RegKey, RegValue};

/// `SYSTEM\CurrentControlSet\Services`: a service's key (`AddService`).
pub const SERVICES: &str = r"SYSTEM\CurrentControlSet\Services";
/// The Display class GUID (the system-defined device setup class of display adapters,
/// learn.microsoft.com "System-Defined Device Setup Classes Available to Vendors").
pub const DISPLAY_CLASS_GUID: &str = "{4d36e968-e325-11ce-bfc1-08002be10318}";
/// `SYSTEM\CurrentControlSet\Control\Class`: the class keys, under which each device's
/// software (driver) key is `<ClassGuid>\<nnnn>` ("HKR" of a DDInstall section's `AddReg`,
/// learn.microsoft.com "INF AddReg Directive").
pub const CLASS: &str = r"SYSTEM\CurrentControlSet\Control\Class";
/// `SYSTEM\CurrentControlSet\Enum`: the device (hardware) keys; "HKR" of a
/// `DDInstall.HW` section's `AddReg` is the instance's `Device Parameters` subkey.
pub const ENUM: &str = r"SYSTEM\CurrentControlSet\Enum";

/// `HKLM` of one simulated machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registry(pub RegKey);

impl Registry {
    /// The value `name` of the key `path`.
    pub fn get(&self, path: &str, name: &str) -> Option<&RegValue> {
        self.0.get(path, name)
    }

    /// Writes (or replaces) `name` under the key `path`.
    pub fn set(&mut self, path: &str, name: &str, value: RegValue) {
        self.0.set(path, name, value);
    }

    /// Whether the key `path` exists (a value under it or a key below it).
    pub fn has_key(&self, path: &str) -> bool {
        self.0.has_subkey(path)
    }

    /// The key `path` with everything below it, its values' subkeys made relative to it
    /// (`""` for the key itself).
    pub fn subtree(&self, path: &str) -> RegKey {
        let lower = path.to_ascii_lowercase();
        let prefix = format!("{lower}\\");
        let mut key = RegKey::default();
        for (k, n, v) in &self.0.values {
            let kl = k.to_ascii_lowercase();
            let rel = if kl == lower {
                Some(String::new())
            } else if kl.starts_with(&prefix) {
                k.get(prefix.len()..).map(str::to_owned)
            } else {
                None
            };
            if let Some(rel) = rel {
                key.set(&rel, n, v.clone());
            }
        }
        key
    }
}

/// The software key of the first display adapter (`<Class>\<Display GUID>\0000`).
pub fn display_software_key(instance: u32) -> String {
    format!(r"{CLASS}\{DISPLAY_CLASS_GUID}\{instance:04}")
}
