//! Which build of the driver a machine runs (a machine's configuration names it; the loader
//! acts on it).

use std::path::PathBuf;
use std::sync::RwLock;

/// Which build of the driver a machine runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DriverBuild {
    /// The driver's Rust code compiled for this host and linked into the simulation.
    #[default]
    Linux,
    /// `rvgpu.sys` itself, run in the x86-64 emulator, installed from a driver package as
    /// Windows installs it (`crate::install`): the package directory at this path (what
    /// `scripts/package.sh --test-sign` writes), or (`None`) the workspace's test-signed
    /// package, made on first use (`crate::install::package::test_signed`).
    Pe(Option<PathBuf>),
}

static DEFAULT: RwLock<Option<DriverBuild>> = RwLock::new(None);

impl DriverBuild {
    /// The default for new machines: what [`DriverBuild::set_default`] chose, else
    /// `RVGPU_DRIVER` (`pe`, or `pe:DIR` for a package directory), else the Linux build.
    pub fn from_env() -> Self {
        if let Some(d) = DEFAULT.read().unwrap_or_else(|p| p.into_inner()).clone() {
            return d;
        }
        match std::env::var("RVGPU_DRIVER") {
            Ok(v) if v.starts_with("pe") => Self::parse(&v).unwrap_or(Self::Pe(None)),
            _ => Self::Linux,
        }
    }

    /// Makes `d` the build every machine configured from now on loads (the harness's
    /// `--driver`).
    pub fn set_default(d: DriverBuild) {
        *DEFAULT.write().unwrap_or_else(|p| p.into_inner()) = Some(d);
    }

    /// A short name (`linux`, `pe`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Linux => "linux",
            Self::Pe(_) => "pe",
        }
    }

    /// Parses `linux`, `pe` or `pe:DIR` (a package directory).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "linux" => Ok(Self::Linux),
            "pe" => Ok(Self::Pe(None)),
            _ => match s.strip_prefix("pe:") {
                Some(p) => Ok(Self::Pe(Some(PathBuf::from(p)))),
                None => Err(format!("unknown driver build {s} (linux, pe, pe:DIR)")),
            },
        }
    }
}
