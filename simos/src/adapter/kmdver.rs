//! BR-14: the KMD's file version against the package's `DriverVer`, checked when Dxgkrnl adds
//! the device, after the miniport's `DxgkDdiAddDevice` has made its context.
//!
//! What Windows does (\[D24\] 24H2 dxgkrnl, commit 47643d2 of nohuto/decompiled-pseudocode,
//! folder 11-24H2):
//! - `DpiAddDevice` @ 0x1402393B0 calls the miniport's AddDevice first, then creates and
//!   attaches the FDO and calls `DpiFdoInitializeFdo`; when that fails it deletes the FDO and
//!   calls the miniport's `DxgkDdiRemoveDevice` with the context AddDevice returned.
//! - `DpiFdoInitializeFdo` @ 0x140242CBC (called by `DpiAddDevice`) reads
//!   `GraphicsDrivers\DisableVersionMismatchCheck`; unless it is non-zero it reads the PDO's
//!   `DEVPKEY_Device_DriverVersion` (the version part of the INF's `DriverVer`) and calls
//!   `DpiFdoValidateKmdAndPnpVersionMatch` @ 0x1403F0520; a failure fails the FDO, so PnP
//!   reports the device as Code 31.
//! - `DpiFdoValidateKmdAndPnpVersionMatch` skips the comparison (success) for a driver whose
//!   interface version is below 0x6000 (the operand is a field of the driver's extension,
//!   read here as the DDI interface version: \[I\]) and for several adapter kinds a render-only
//!   PCI function is not; when the driver's path cannot be had, the file version cannot be read,
//!   the property is absent, the string has fewer than three dots, or a part does not copy
//!   into its six-character buffer or does not convert to an integer. Else it builds a 64-bit
//!   version from the four parts (`a << 16 | b` high, `c << 16 | d` low, 32-bit arithmetic,
//!   `b` and `d` cut to 16 bits) and compares it with the file's; different, and not exempted
//!   by `IsKnownMismatchedVersionedDriver` @ 0x14023C708, it fails with
//!   `STATUS_DEVICE_CONFIGURATION_ERROR` (0xC0000182) after a live dump.
//! - `DxgkpGetFileVersion` @ 0x140393240 maps the file as an image and looks up resource type
//!   16 (`RT_VERSION`), name 1; found, at least 0x5C bytes long and keyed `VS_VERSION_INFO`,
//!   the version is `dwFileVersionMS` (offset 48) : `dwFileVersionLS` (offset 52). No such
//!   resource is not an error: the version is then 0 (0.0.0.0).
//! - `IsKnownMismatchedVersionedDriver`: exempt when both major numbers are below 21
//!   (0x15), and for listed version pairs of three other vendors (0x8086, 0x1002 and the
//!   `QCOM` ID).

use std::path::Path;

/// `STATUS_DEVICE_CONFIGURATION_ERROR`, the status `DpiFdoValidateKmdAndPnpVersionMatch`
/// fails with.
pub use crate::adapter::bringup::STATUS_DEVICE_CONFIGURATION_ERROR;

/// Why the comparison was not made (Windows then lets the device start).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// `GraphicsDrivers\DisableVersionMismatchCheck` is set.
    DisabledByRegistry,
    /// The driver's interface version is below 0x6000.
    OldInterface(u32),
    /// The file version could not be read (the image does not map).
    NoFileVersion(String),
    /// `DEVPKEY_Device_DriverVersion` is absent.
    NoDriverVersion,
    /// The property string is not four dot-separated parts Windows converts.
    Unparsed(String),
}

/// The outcome of BR-14.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Compared and equal.
    Match,
    /// Compared, different, and exempted by `IsKnownMismatchedVersionedDriver`.
    Exempt {
        /// The property's version.
        pnp: u64,
        /// The file's version.
        file: u64,
    },
    /// Not compared.
    Skipped(Skipped),
    /// Compared, different, not exempt: AddDevice fails with 0xC0000182.
    Mismatch {
        /// The property's version.
        pnp: u64,
        /// The file's version.
        file: u64,
    },
}

/// `a.b.c.d` of a 64-bit version.
pub fn dotted(v: u64) -> String {
    format!(
        "{}.{}.{}.{}",
        (v >> 48) & 0xFFFF,
        (v >> 32) & 0xFFFF,
        (v >> 16) & 0xFFFF,
        v & 0xFFFF
    )
}

/// The image's `RT_VERSION` #1 file version as `DxgkpGetFileVersion` @ 0x140393240 reads it:
/// `Ok(0)` when the image has no such resource (or one shorter than 0x5C bytes or not keyed
/// `VS_VERSION_INFO`), `Err` when the file is not a PE32+ image the loader would map. The
/// reader is shared with the build and packaging tools (build/version_res.rs,
/// `read_file_version`).
///
/// The language is the one the resource lookup with language 0 finds: a language-neutral
/// entry if there is one, else the first entry (the simulation does not model the user and
/// system default languages tried in between).
pub fn file_version(data: &[u8]) -> Result<u64, String> {
    crate::adapter::registry::version_res::read_file_version(data)
}

/// The file version of the image at `path` (`Err`: unreadable or not an image).
pub fn file_version_of(path: &Path) -> Result<u64, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    file_version(&data)
}

/// The version `DpiFdoValidateKmdAndPnpVersionMatch` makes of the property string.
pub fn pnp_version(s: &str) -> Result<u64, Skipped> {
    let units: Vec<u16> = s.encode_utf16().take(0x7FFF).collect();
    let dots: Vec<usize> = units
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == u16::from(b'.'))
        .map(|(i, _)| i)
        .take(3)
        .collect();
    let [d1, d2, d3] = dots[..] else {
        return Err(Skipped::Unparsed(format!(
            "{s:?} has fewer than three dots"
        )));
    };
    let spans = [(0, d1), (d1 + 1, d2), (d2 + 1, d3), (d3 + 1, units.len())];
    let mut parts = [0u32; 4];
    for (slot, (start, end)) in parts.iter_mut().zip(spans) {
        let part = units.get(start..end).unwrap_or(&[]);
        // The part is copied into a buffer of six characters first; a longer one fails
        // the copy.
        if part.len() > 6 {
            return Err(Skipped::Unparsed(format!(
                "{s:?}: a part longer than 6 characters"
            )));
        }
        let text = String::from_utf16_lossy(part);
        // Simulation limit: only decimal parts are converted (an INF's DriverVer is decimal);
        // anything else is treated as a failed conversion, which skips the check.
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Skipped::Unparsed(format!(
                "{s:?}: part {text:?} is not a number"
            )));
        }
        *slot = text
            .parse::<u32>()
            .map_err(|_| Skipped::Unparsed(format!("{s:?}: part {text:?} overflows")))?;
    }
    let hi = (parts[0] << 16) | (parts[1] & 0xFFFF);
    let lo = (parts[2] << 16) | (parts[3] & 0xFFFF);
    Ok((u64::from(hi) << 32) | u64::from(lo))
}

/// `IsKnownMismatchedVersionedDriver` @ 0x14023C708: `vendor` is the adapter's vendor ID
/// (`DpiAddDevice` stores the PCI configuration space's vendor word there; for an ACPI device
/// the first four bytes of `_HID`, which is where the `QCOM` value comes from).
pub fn known_mismatch(vendor: u32, pnp: u64, file: u64) -> bool {
    let major = |v: u64| (v >> 48) & 0xFFFF;
    if major(pnp) < 0x15 && major(file) < 0x15 {
        return true;
    }
    match vendor {
        0x8086 => pnp == 0x0016_0014_0010_1215 && file == 0x0015_0014_0010_1215,
        0x1002 => file & !0xFFFF == 0x0015_0013_0080_0000,
        0x4D4F_4351 => {
            (pnp == 0x0016_0012_042C_0000 && file == 0x0016_0012_042B_003C)
                || pnp & !0xFFFF == 0x0848_0038_0000_0000
        }
        _ => false,
    }
}

/// BR-14 as `DpiFdoInitializeFdo` and `DpiFdoValidateKmdAndPnpVersionMatch` apply it.
/// `file` is the file version as read (`Err`: the file does not map).
pub fn check(
    disabled: bool,
    interface_version: u32,
    vendor: u32,
    driver_version: Option<&str>,
    file: Result<u64, String>,
) -> Outcome {
    if disabled {
        return Outcome::Skipped(Skipped::DisabledByRegistry);
    }
    // Dxgkrnl also skips it for interface versions below 0x8000 from the `QCOM` vendor.
    if interface_version < 0x6000 || (vendor == 0x4D4F_4351 && interface_version < 0x8000) {
        return Outcome::Skipped(Skipped::OldInterface(interface_version));
    }
    let file = match file {
        Ok(v) => v,
        Err(e) => return Outcome::Skipped(Skipped::NoFileVersion(e)),
    };
    let Some(s) = driver_version else {
        return Outcome::Skipped(Skipped::NoDriverVersion);
    };
    let pnp = match pnp_version(s) {
        Ok(v) => v,
        Err(e) => return Outcome::Skipped(e),
    };
    if pnp == file {
        Outcome::Match
    } else if known_mismatch(vendor, pnp, file) {
        Outcome::Exempt { pnp, file }
    } else {
        Outcome::Mismatch { pnp, file }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pnp_version_packs_parts_as_windows_does() {
        assert_eq!(pnp_version("1.2.3.4"), Ok(0x0001_0002_0003_0004));
        assert_eq!(pnp_version("31.0.101.5590"), Ok(0x001F_0000_0065_15D6));
        assert!(matches!(pnp_version("1.2.3"), Err(Skipped::Unparsed(_))));
        assert!(matches!(pnp_version("1.2.3.x"), Err(Skipped::Unparsed(_))));
        assert!(matches!(
            pnp_version("1.2.3.1234567"),
            Err(Skipped::Unparsed(_))
        ));
    }

    #[test]
    fn exemption_needs_both_majors_below_21() {
        assert!(known_mismatch(0x1234, 0x0014_0000_0000_0000, 0));
        assert!(!known_mismatch(0x1234, 0x0015_0000_0000_0000, 0));
        assert!(!known_mismatch(0x1234, 0, 0x0015_0000_0000_0000));
    }

    #[test]
    fn garbage_is_not_an_image_and_does_not_panic() {
        assert!(file_version(&[]).is_err());
        assert!(file_version(b"MZ").is_err());
        let mut d = vec![0u8; 0x200];
        d[0] = b'M';
        d[1] = b'Z';
        d[0x3C] = 0xF0;
        assert!(file_version(&d).is_err());
    }
}
