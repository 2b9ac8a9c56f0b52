//! The adapter's feature database as negotiated before `DxgkDdiStartDevice`
//! ([`crate::dxgkrnl::features`] builds it): what the driver answered, what is enabled, and
//! the kernel-mode testing function it exported. The adapter holds it; the callbacks read it.

use rvgpu_ddi::feature::{DXGK_FEATURE_ID, DXGK_FEATURE_VERSION};

use crate::adapter::slot::Ddi;

/// What the driver answered for one feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverSupport {
    /// The feature.
    pub id: DXGK_FEATURE_ID,
    /// Versions the driver implements, `None` if it does not.
    pub versions: Option<(DXGK_FEATURE_VERSION, DXGK_FEATURE_VERSION)>,
}

/// The adapter's feature database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureDb {
    /// The driver exported `GUID_WDDM_INTERFACE_FEATURE` (version 1); `false`: legacy table.
    pub driver_interface: bool,
    /// The driver's answers, per feature asked.
    pub support: Vec<DriverSupport>,
    /// Enabled features and their negotiated versions.
    pub enabled: Vec<(DXGK_FEATURE_ID, DXGK_FEATURE_VERSION)>,
    /// `DxgkCbQueryFeatureSupport` calls (BR-80..82): feature, the driver's support state,
    /// the OS's answer (`None`: the call failed).
    pub legacy_queries: Vec<(DXGK_FEATURE_ID, u32, Option<bool>)>,
    /// `pfnBuildTestCommandBuffer` from the driver's kernel-mode testing interface
    /// ([`crate::dxgkrnl::kmtest`]), when that feature is enabled.
    pub build_test_command_buffer: BuildFn,
}

impl FeatureDb {
    /// The negotiated version of `id`, if enabled.
    pub fn version(&self, id: DXGK_FEATURE_ID) -> Option<DXGK_FEATURE_VERSION> {
        self.enabled.iter().find(|(f, _)| *f == id).map(|(_, v)| *v)
    }
}

/// The driver's `pfnBuildTestCommandBuffer` as the feature database keeps it (compared by
/// address).
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildFn(pub Option<Ddi<BuildTestCommandBuffer>>);

/// The pointer type of `pfnBuildTestCommandBuffer`.
pub(crate) type BuildTestCommandBuffer =
    crate::adapter::slot::SlotFn<rvgpu_ddi::kmtest::PDXGKDDI_BUILDTESTCOMMANDBUFFER>;

impl PartialEq for BuildFn {
    fn eq(&self, other: &Self) -> bool {
        self.0.map(|f| f.address()) == other.0.map(|f| f.address())
    }
}
impl Eq for BuildFn {}
