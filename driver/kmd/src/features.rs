//! OS feature negotiation through the Dxgkrnl feature interface (NF-10).
//!
//! Both directions. The OS asks the driver which versions of each feature it implements
//! (`DxgkDdiQueryFeatureSupport` behind `GUID_WDDM_INTERFACE_FEATURE`, [`driver_support`]);
//! the driver, at StartDevice, asks the OS which it enabled and advertises caps and node flags
//! only for those ("For each feature … the driver supports, the driver must call the OS to
//! query the feature's enabled state and enable the feature only if the OS returns
//! Enabled = TRUE", DXGK_FEATURE_ID reference page). Windows fails the start of a driver that
//! advertises `NativeGpuFence` without `DXGK_FEATURE_NATIVE_FENCE`, context scheduling without
//! `DXGK_FEATURE_HWSCH`, or user-mode submission without `DXGK_FEATURE_USER_MODE_SUBMISSION`
//! (docs/windows-bringup.md BR-72, BR-73, BR-84).
//!
//! The sequence follows the seed's sample: `DxgkCbQueryServices(DxgkServicesFeature)` for the
//! feature interface, `IsFeatureEnabled` per feature, then for native fences
//! `QueryFeatureInterface` with the negotiated version and the interface's `GetOSCaps`. An OS
//! without the interface predates WDDM 3.2 (24H2); the driver then enables nothing and runs
//! with the OS's software scheduler and kernel-mode submission only.
//! Reference: <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/querying-wddm-feature-support-and-enablement>.

use rvgpu_ddi::feature::{
    DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1, DXGK_FEATURE_HWSCH, DXGK_FEATURE_ID,
    DXGK_FEATURE_KERNEL_MODE_TESTING, DXGK_FEATURE_NATIVE_FENCE, DXGK_FEATURE_USER_MODE_SUBMISSION,
    DXGK_FEATURE_VERSION,
};

use crate::dxgk::{Dxgk, FeatureInterface};

/// The versions of `id` the driver implements (`DxgkDdiQueryFeatureSupport`), or `None`.
///
/// Version 1 of hardware scheduling (the HWS DDIs of [`crate::hws`]), user-mode submission
/// (doorbells, [`crate::doorbell`]) and native fences. The OS asks before StartDevice, when the
/// driver has not read the device yet, so the answer is what the driver implements; a device
/// without what a feature needs (`CAPS.SCHED_LOG`, `CAPS.NATIVE_FENCE` …) makes the driver
/// leave the feature unused after the OS enabled it ([`Features::hws_active`] and the caps
/// checks), which Windows allows: an enabled feature obliges nothing, an advertised one does.
pub(crate) fn driver_support(
    id: DXGK_FEATURE_ID,
) -> Option<(DXGK_FEATURE_VERSION, DXGK_FEATURE_VERSION)> {
    match id {
        DXGK_FEATURE_HWSCH | DXGK_FEATURE_USER_MODE_SUBMISSION | DXGK_FEATURE_NATIVE_FENCE => {
            Some((1, 1))
        }
        DXGK_FEATURE_KERNEL_MODE_TESTING => {
            Some((KERNEL_MODE_TESTING_VERSION, KERNEL_MODE_TESTING_VERSION))
        }
        _ => None,
    }
}

/// The version of the kernel-mode testing interface the driver implements ([`crate::kmtest`]).
pub(crate) const KERNEL_MODE_TESTING_VERSION: DXGK_FEATURE_VERSION = 1;

/// The native-fence feature as negotiated with the OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeFenceFeature {
    /// Negotiated version of `DXGK_FEATURE_NATIVE_FENCE`.
    pub version: DXGK_FEATURE_VERSION,
    /// What the OS supports (`DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1`).
    pub os_caps: DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1,
}

/// What the OS enabled for this adapter.
#[derive(Debug, Default)]
pub struct Features {
    /// The feature interface, held (referenced) for the adapter's life.
    interface: Option<FeatureInterface>,
    /// Negotiated version of `DXGK_FEATURE_HWSCH`, if the OS enabled it.
    pub hwsch: Option<DXGK_FEATURE_VERSION>,
    /// Negotiated version of `DXGK_FEATURE_USER_MODE_SUBMISSION`, if the OS enabled it.
    pub user_mode_submission: Option<DXGK_FEATURE_VERSION>,
    /// `Some` if the OS enabled native fences and answered the interface query.
    pub native_fence: Option<NativeFenceFeature>,
    /// Negotiated version of `DXGK_FEATURE_KERNEL_MODE_TESTING` ([`crate::kmtest`]).
    pub kernel_mode_testing: Option<DXGK_FEATURE_VERSION>,
}

impl Features {
    /// Queries the OS at StartDevice. An OS without the feature interface (older than the
    /// features the driver needs) yields no features rather than an error: the driver then
    /// runs without native fences, which is what the OS expects of it.
    pub fn negotiate(dxgk: &Dxgk) -> Self {
        let Ok(interface) = dxgk.feature_interface() else {
            return Self::default();
        };
        let hwsch = interface.is_enabled(DXGK_FEATURE_HWSCH);
        let user_mode_submission = interface.is_enabled(DXGK_FEATURE_USER_MODE_SUBMISSION);
        let native_fence = Self::negotiate_native_fence(&interface);
        let kernel_mode_testing = interface.is_enabled(DXGK_FEATURE_KERNEL_MODE_TESTING);
        Self {
            interface: Some(interface),
            hwsch,
            user_mode_submission,
            native_fence,
            kernel_mode_testing,
        }
    }

    fn negotiate_native_fence(i: &FeatureInterface) -> Option<NativeFenceFeature> {
        let version = i.is_enabled(DXGK_FEATURE_NATIVE_FENCE)?;
        let os_caps = i.native_fence_caps(version)?;
        Some(NativeFenceFeature { version, os_caps })
    }

    /// Releases the feature interface (StopDevice).
    pub fn release(&mut self) {
        if let Some(i) = self.interface.take() {
            i.release();
        }
    }
}
