//! A test machine's device as the `rvgpu-vfu` options name it, which a backend that does not
//! build its machine reads and names in a skip (`SessionConfig::device_mismatch`).

use std::fmt;

/// What a test machine's device is: the `rvgpu-vfu` options a case's configuration can ask
/// about (`--doorbells`, `--global-doorbell`, `--engines`), as the KMD reports them through its
/// test hooks on Windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceSettings {
    /// Physical doorbells.
    pub doorbells: u32,
    /// One global doorbell page per process.
    pub global_doorbell: bool,
    /// Engines (nodes).
    pub engines: u32,
}

impl Default for DeviceSettings {
    /// `rvgpu-vfu`'s defaults.
    fn default() -> Self {
        Self {
            doorbells: rvgpu_hw::defaults::DOORBELLS,
            global_doorbell: false,
            engines: rvgpu_hw::defaults::ENGINES,
        }
    }
}

impl DeviceSettings {
    /// `rvgpu-vfu`'s options for this device (its VRAM left at the default).
    pub fn vfu_options(&self) -> String {
        let g = if self.global_doorbell {
            " --global-doorbell"
        } else {
            ""
        };
        format!(
            "--engines {} --doorbells {}{g}",
            self.engines, self.doorbells
        )
    }

    /// kmt-sim's `--device` value for this device.
    pub fn device_option(&self) -> String {
        let g = if self.global_doorbell {
            ",global-doorbell"
        } else {
            ""
        };
        format!("engines={},doorbells={}{g}", self.engines, self.doorbells)
    }

    /// Parses kmt-sim's `--device` value: comma-separated `engines=N`, `doorbells=N`,
    /// `global-doorbell`, `vram-mib=N` (`rvgpu-vfu`'s options without their dashes), each
    /// unnamed one as `rvgpu-vfu`'s default.
    pub fn parse(spec: &str) -> Result<(Self, Option<u64>), String> {
        let mut d = Self::default();
        let mut vram_mib = None;
        for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let num = |what: &str| -> Result<u64, String> {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("{what}={value}: a number"))
            };
            let small = |what: &str, max: u32| -> Result<u32, String> {
                u32::try_from(num(what)?)
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| format!("{what}={value}: 1..={max}"))
            };
            match key {
                "engines" => d.engines = small("engines", rvgpu_hw::regs::ENGINE_MAX)?,
                "doorbells" => d.doorbells = small("doorbells", rvgpu_hw::regs::DOORBELL_MAX)?,
                "global-doorbell" if value.is_empty() => d.global_doorbell = true,
                "vram-mib" => vram_mib = Some(num("vram-mib")?),
                _ => {
                    return Err(format!(
                        "{item}: known are engines=N, doorbells=N, global-doorbell, vram-mib=N"
                    ))
                }
            }
        }
        Ok((d, vram_mib))
    }
}

impl fmt::Display for DeviceSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} doorbells{}, {} engines",
            self.doorbells,
            if self.global_doorbell {
                " (global)"
            } else {
                ""
            },
            self.engines
        )
    }
}

#[cfg(test)]
mod device_tests {
    use super::DeviceSettings;

    #[test]
    fn um_21_device_option_takes_rvgpu_vfu_names() {
        let (d, vram) = DeviceSettings::parse("engines=3,doorbells=1,global-doorbell,vram-mib=32")
            .expect("a device");
        assert_eq!(
            (d.engines, d.doorbells, d.global_doorbell, vram),
            (3, 1, true, Some(32))
        );
        assert_eq!(
            d.vfu_options(),
            "--engines 3 --doorbells 1 --global-doorbell"
        );
        assert_eq!(
            DeviceSettings::parse(&d.device_option())
                .expect("a device")
                .0,
            d
        );
        assert_eq!(
            DeviceSettings::parse("").expect("defaults").0,
            DeviceSettings::default()
        );
        for bad in [
            "doorbells=0",
            "doorbells=513",
            "engines=17",
            "doorbells",
            "x=1",
            "global-doorbell=1",
        ] {
            assert!(DeviceSettings::parse(bad).is_err(), "{bad}");
        }
    }
}
