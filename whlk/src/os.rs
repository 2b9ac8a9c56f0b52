//! The Windows the simulated machines play (`--windows`, one [`Windows`] value: the kernel and
//! the answers where its code and Microsoft's pages disagree; `--without-inf-features`) and
//! what its feature database enabled for the driver.
//!
//! Native fences, and user-mode submission which depends on them, are off on a stock Windows:
//! 24H2 and 25H2 enable `DXGK_FEATURE_NATIVE_FENCE` only through the adapter's
//! `Features\37\Enabled` value, which `inf/rvgpu.inf` writes, and 26H1 does not support it at
//! all (`rvgpu_simos::dxgkrnl::features`, BR-110..112). Under such a Windows the driver still
//! starts and every case that needs no native fence passes (kernel-mode submission, monitored
//! fences); the rest are skipped with the reason (`Capability::NativeFences`).

use std::sync::RwLock;

use rvgpu_ddi::feature::*;
use rvgpu_simos::{Machine, MachineConfig, Mode, Windows};

/// The Windows the simulated machines play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsUnderTest {
    /// The kernel they play and its answers.
    pub windows: Windows,
    /// Whether the adapter's software key has the `Features` values the INF writes.
    pub inf_features: bool,
    /// Hardware-accelerated GPU scheduling (`GraphicsDrivers\\HwSchMode`): one setting for
    /// the whole machine, read at boot. Off, Dxgkrnl enables neither hardware scheduling nor
    /// native fences (BR-81), so nothing user-mode submits.
    pub hwsch: bool,
}

impl Default for OsUnderTest {
    fn default() -> Self {
        Self {
            windows: Windows::from_env(),
            inf_features: true,
            hwsch: true,
        }
    }
}

static CURRENT: RwLock<Option<OsUnderTest>> = RwLock::new(None);

/// The Windows machines configured from now on play (default: 24H2 with the INF's values).
pub fn current() -> OsUnderTest {
    CURRENT
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or_default()
}

/// Makes `os` the Windows of every machine configured from now on.
pub fn set(os: OsUnderTest) {
    *CURRENT.write().unwrap_or_else(|p| p.into_inner()) = Some(os);
}

/// Applies the current Windows to a machine's configuration: the Windows value and hardware
/// scheduling, and the adapters' software keys without the `Features` values when they are
/// removed.
pub fn apply(mc: &mut MachineConfig) {
    let os = current();
    mc.os.windows = os.windows;
    mc.os.hwsch_feature = os.hwsch;
    if !os.inf_features {
        for a in &mut mc.adapters {
            a.software_key.remove_subkey("Features");
        }
    }
}

/// The features the current Windows enabled for the driver on a started adapter, by name and
/// version (in the order Dxgkrnl asked the driver); `Err` when the adapter does not start.
pub fn enabled_features() -> Result<Vec<(&'static str, u16)>, String> {
    let mut mc = MachineConfig::single(Mode::Step);
    apply(&mut mc);
    let mut m = Machine::try_new(mc).map_err(|e| e.to_string())?;
    m.load_driver().map_err(|e| e.to_string())?;
    m.start_adapter(0).map_err(|e| e.to_string())?;
    Ok(m.feature_db(0)
        .enabled
        .iter()
        .map(|&(id, v)| (feature_name(id), v))
        .collect())
}

/// Whether the current Windows enables native fences for the driver (asked once per setting).
pub fn native_fences() -> bool {
    static ASKED: RwLock<Vec<(OsUnderTest, bool)>> = RwLock::new(Vec::new());
    let os = current();
    if let Some(&(_, on)) = ASKED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(o, _)| *o == os)
    {
        return on;
    }
    let on = enabled_features().is_ok_and(|f| f.iter().any(|(n, _)| *n == "NATIVE_FENCE"));
    ASKED
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .push((os, on));
    on
}

/// Why a simulated backend lacks native fences (`Capability::NativeFences`) under the current
/// Windows, if it does.
pub fn why_no_native_fences() -> Option<String> {
    (!native_fences()).then(|| {
        let os = current();
        if !os.hwsch {
            "needs native fences: off with hardware scheduling off (HwSchMode = 1)".into()
        } else if !os.windows.native_fence_supported() {
            format!(
                "needs native fences: Windows {} does not support them",
                os.windows.kernel().name().to_ascii_uppercase()
            )
        } else {
            format!(
                "needs native fences: off on Windows {} without the INF's Features\\37",
                os.windows.kernel().name().to_ascii_uppercase()
            )
        }
    })
}

/// `DXGK_FEATURE_*` without the prefix.
pub fn feature_name(id: DXGK_FEATURE_ID) -> &'static str {
    match id {
        DXGK_FEATURE_HWSCH => "HWSCH",
        DXGK_FEATURE_HWFLIPQUEUE => "HWFLIPQUEUE",
        DXGK_FEATURE_LDA_GPUPV => "LDA_GPUPV",
        DXGK_FEATURE_KMD_SIGNAL_CPU_EVENT => "KMD_SIGNAL_CPU_EVENT",
        DXGK_FEATURE_USER_MODE_SUBMISSION => "USER_MODE_SUBMISSION",
        DXGK_FEATURE_SHARE_BACKING_STORE_WITH_KMD => "SHARE_BACKING_STORE_WITH_KMD",
        DXGK_FEATURE_PAGE_BASED_MEMORY_MANAGER => "PAGE_BASED_MEMORY_MANAGER",
        DXGK_FEATURE_KERNEL_MODE_TESTING => "KERNEL_MODE_TESTING",
        DXGK_FEATURE_GPUVAIOMMU => "GPUVAIOMMU",
        DXGK_FEATURE_NATIVE_FENCE => "NATIVE_FENCE",
        _ => "other",
    }
}
