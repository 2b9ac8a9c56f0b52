//! The AddDevice phase: what `DpiAddDevice` checks once the miniport's AddDevice succeeded
//! (BR-14: \[D24\] `DpiAddDevice` @ 0x1402393B0 → `DpiFdoInitializeFdo` @ 0x140242CBC →
//! `DpiFdoValidateKmdAndPnpVersionMatch` @ 0x1403F0520). The comparison itself, with its
//! exemptions, is `crate::adapter::kmdver` (which this phase does not import: kmdver names
//! this module's status); a refusal undoes the FDO and calls the miniport's RemoveDevice.

use super::rule::{Facts, Rule, Violation, STATUS_DEVICE_CONFIGURATION_ERROR};

/// What the phase's rows read: the KMD's file version and the device's `DriverVersion`
/// (dotted) when they differ and nothing exempts them.
pub struct KmdVersion(pub Option<(String, String)>);

impl Facts for KmdVersion {}

/// The AddDevice phase's rows.
pub const ADD_DEVICE_RULES: &[Rule<KmdVersion>] = &[Rule::refuse(
    "BR-14",
    "[D24] DpiFdoValidateKmdAndPnpVersionMatch @ 0x1403F0520, IsKnownMismatchedVersionedDriver \
     @ 0x14023C708, DxgkpGetFileVersion @ 0x140393240",
    "the KMD file's `VS_VERSION_INFO` FILEVERSION (none: 0.0.0.0) equals \
     `DEVPKEY_Device_DriverVersion` (the INF's `DriverVer`); exempt: both majors below 21, listed \
     vendor pairs, `GraphicsDrivers\\DisableVersionMismatchCheck`, interface below 0x6000, no \
     property or file; refused: RemoveDevice called, Code 31, live dump 0x193",
    STATUS_DEVICE_CONFIGURATION_ERROR,
    |k| {
        let (file, pnp) = k.0.as_ref()?;
        Some(format!(
            "the KMD's file version {file} differs from the device's DriverVersion {pnp} (both \
             majors below 21 would be exempt)"
        ))
    },
)];

/// BR-14 over the comparison: the file's and the property's versions when they differ.
pub fn check_kmd_version(mismatch: Option<(String, String)>) -> Option<Violation> {
    super::rule::first(ADD_DEVICE_RULES, &KmdVersion(mismatch))
}
