//! Dxgkrnl's feature database for one adapter (WDDM 3.2 feature negotiation): built before
//! `DxgkDdiStartDevice` from the driver's feature interface, read by the driver through the
//! OS's `IsFeatureEnabled` and `QueryFeatureInterface` callbacks.
//!
//! As Windows does (\[D\] 24H2 `DpiFeatureStartDevice`; \[M\] "Querying WDDM feature support and
//! enablement", <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/querying-wddm-feature-support-and-enablement>):
//! the OS asks `DxgkDdiQueryInterface` once for `GUID_WDDM_INTERFACE_FEATURE`, version 1
//! (48 bytes; K:DpiFeatureStartDevice @0x14024DEF8). With the interface it asks `QueryFeatureSupport` for each
//! driver feature and enables a feature only if the driver supports a version the OS has, the
//! OS's policy allows it and its dependencies are enabled. Without the interface it falls back
//! to a legacy table that knows only the oldest feature IDs (HWSCH … SHARE_BACKING_STORE, and
//! GPUVAIOMMU: BR-82), so `DXGK_FEATURE_NATIVE_FENCE` can never be enabled for such a driver.

use rvgpu_ddi::adapter::QUERY_INTERFACE;
use rvgpu_ddi::basic::{GUID, PINTERFACE};
use rvgpu_ddi::feature::*;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::NT_SUCCESS;

use crate::adapter::ddi::{self};
use crate::adapter::featuredb::{DriverSupport, FeatureDb};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;

/// Driver features the OS asks about, in its order.
pub const DRIVER_FEATURES: &[DXGK_FEATURE_ID] = &[
    DXGK_FEATURE_HWSCH,
    DXGK_FEATURE_HWFLIPQUEUE,
    DXGK_FEATURE_USER_MODE_SUBMISSION,
    DXGK_FEATURE_NATIVE_FENCE,
    DXGK_FEATURE_KERNEL_MODE_TESTING,
];

/// The highest version of each feature this simulated OS implements.
const OS_VERSION: DXGK_FEATURE_VERSION = 1;

/// The OS's policy for a feature on this adapter (registry overrides, the adapter's
/// configuration): each of the three features the driver can claim follows its machine switch
/// (`OsConfig::{hwsch,ums,native_fence}_feature`, ANDed with the adapter's); native fences
/// also need the feature database's configuration ([`configure`], BR-110..112); anything else
/// is allowed when the driver supports it.
fn os_allows(a: &AdapterShared, id: DXGK_FEATURE_ID) -> bool {
    match id {
        // BR-78: a DISABLE_HWSCH block-list entry keeps hardware scheduling off.
        DXGK_FEATURE_HWSCH => a.os.hwsch_feature && !a.os.block_list_disable_hwsch,
        DXGK_FEATURE_USER_MODE_SUBMISSION => a.os.ums_feature,
        DXGK_FEATURE_NATIVE_FENCE => {
            a.os.native_fence_feature
                && a.os.windows.supports_feature(id)
                && configure(id, &a.registry_keys().software_key).enabled
        }
        _ => true,
    }
}

/// One feature's configuration in the adapter's feature database: the OS's default for the
/// feature with the adapter's registry overrides applied (\[D24\] 24H2 `ConfigureFeature` @
/// 0x140288094, 25H2 @ 0x140280BF4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureConfig {
    /// Lowest version the OS will enable.
    pub min_version: DXGK_FEATURE_VERSION,
    /// Highest version the OS will enable.
    pub max_version: DXGK_FEATURE_VERSION,
    /// The Enabled bit: clear, the feature is not enabled whatever the driver supports.
    pub enabled: bool,
    /// Passed to the driver's `QueryFeatureSupport` as `AllowExperimental`.
    pub allow_experimental: bool,
}

/// The subkey of the adapter's software key that holds feature `id`'s overrides.
///
/// \[D24\] `DxgkCreateFeatureDatabase` @ 0x1402884A0 opens the adapter's key path with a suffix
/// the decompiled text does not show, and `ConfigureFeature` reads the subkey named by the
/// feature ID in decimal under it; the suffix is taken to be `Features` (\[I\], from the brief
/// of this model and Microsoft's "a registry key can override feature configuration on a
/// per-feature, per-adapter basis"; to confirm on a test machine, docs/test-machine.md).
pub fn feature_subkey(id: DXGK_FEATURE_ID) -> String {
    format!("Features\\{id}")
}

/// BR-110, BR-111: the feature database's configuration of `id` for an adapter whose software
/// key is `key`.
///
/// - BR-110 (\[D24\] 24H2 `ConfigureFeatureDefaults` @ 0x1402882E4, 25H2 @ 0x140280E44): the
///   defaults of `DXGK_FEATURE_NATIVE_FENCE` (37) and of PAGE_BASED_MEMORY_MANAGER (32) are
///   copied with the Enabled bit cleared, with no condition. The default version range is not
///   in the decompiled text (it is data); it is taken as 1..=1, the only published version.
/// - BR-111 (\[D24\] `ConfigureFeature`): with the adapter's key open, the values `Enabled`,
///   `MinVersion`, `MaxVersion` and `AllowExperimental` of the feature's subkey are read as
///   `REG_DWORD`s (direct, type-checked: the query stops at the first value of another type,
///   the values before it taken). Enabled and AllowExperimental keep their low bit; the range
///   is narrowed to the registry's (min raised, max lowered) and falls back to the default
///   when that leaves it empty.
///
/// Only features 32 and 37 are modelled here (the others keep the switches of
/// `os_allows`); for them the result is the default.
pub fn configure(id: DXGK_FEATURE_ID, key: &crate::adapter::registry::RegKey) -> FeatureConfig {
    use crate::adapter::registry::REG_DWORD;
    let default = FeatureConfig {
        min_version: 1,
        max_version: OS_VERSION,
        enabled: !matches!(
            id,
            DXGK_FEATURE_NATIVE_FENCE | DXGK_FEATURE_PAGE_BASED_MEMORY_MANAGER
        ),
        allow_experimental: false,
    };
    if !matches!(
        id,
        DXGK_FEATURE_NATIVE_FENCE | DXGK_FEATURE_PAGE_BASED_MEMORY_MANAGER
    ) {
        return default;
    }
    let subkey = feature_subkey(id);
    let mut enabled = u32::from(default.enabled);
    let mut min = u32::from(default.min_version);
    let mut max = u32::from(default.max_version);
    let mut experimental = u32::from(default.allow_experimental);
    for (name, slot) in [
        ("Enabled", &mut enabled),
        ("MinVersion", &mut min),
        ("MaxVersion", &mut max),
        ("AllowExperimental", &mut experimental),
    ] {
        let Some(v) = key.get(&subkey, name) else {
            continue;
        };
        let word = (v.ty == REG_DWORD && v.data.len() == 4)
            .then(|| u32::from_le_bytes([v.data[0], v.data[1], v.data[2], v.data[3]]));
        match word {
            Some(w) => *slot = w,
            // The type check fails the whole query from here on.
            None => break,
        }
    }
    let lo = min.max(u32::from(default.min_version));
    let hi = max.min(u32::from(default.max_version));
    let (lo, hi) = if hi < lo {
        (default.min_version, default.max_version)
    } else {
        // Both within the default range, which fits in 16 bits.
        (lo as DXGK_FEATURE_VERSION, hi as DXGK_FEATURE_VERSION)
    };
    FeatureConfig {
        min_version: lo,
        max_version: hi,
        enabled: enabled & 1 != 0,
        allow_experimental: experimental & 1 != 0,
    }
}

/// Dependencies the OS hardcodes. \[M\] "Querying WDDM feature support and enablement",
/// "Dependencies": the features with dependencies are USER_MODE_SUBMISSION, HWSCH and
/// NATIVE_FENCE, "for a particular feature to be enabled, all of its dependencies must also be
/// enabled"; the lists themselves are not published. Modelled from what the documents and the
/// start checks say:
/// - USER_MODE_SUBMISSION → HWSCH (\[M\] user-mode work submission runs on hardware-scheduled
///   nodes; \[D\] BR-73 requires context scheduling on a UMS node) and → NATIVE_FENCE (user-mode
///   queues can only use native fences; 24H2 requires `NativeGpuFence` for a UMS node, windows-bringup.md §7a);
/// - NATIVE_FENCE → HWSCH (\[M\] "Native GPU fence objects": a feature of "GPU hardware
///   scheduling stage 2").
///
/// HWSCH's own dependencies are OS-side (not driver features) and not modelled.
pub fn dependencies(id: DXGK_FEATURE_ID) -> &'static [DXGK_FEATURE_ID] {
    match id {
        DXGK_FEATURE_USER_MODE_SUBMISSION => &[DXGK_FEATURE_HWSCH, DXGK_FEATURE_NATIVE_FENCE],
        DXGK_FEATURE_NATIVE_FENCE => &[DXGK_FEATURE_HWSCH],
        _ => &[],
    }
}

/// The enabled set from the driver's answers and the OS's policy: a feature is enabled when
/// the driver supports a version the OS has, the policy allows it, and every dependency is
/// enabled (resolved to a fixed point, so the order features are asked in does not matter).
pub fn decide(
    support: &[DriverSupport],
    allows: impl Fn(DXGK_FEATURE_ID) -> bool,
) -> Vec<(DXGK_FEATURE_ID, DXGK_FEATURE_VERSION)> {
    let candidates: Vec<(DXGK_FEATURE_ID, DXGK_FEATURE_VERSION)> = support
        .iter()
        .filter_map(|s| {
            let (min, max) = s.versions?;
            let version = max.min(OS_VERSION);
            (version >= min && version > 0 && allows(s.id)).then_some((s.id, version))
        })
        .collect();
    let mut enabled = candidates.clone();
    loop {
        let before = enabled.len();
        let snapshot = enabled.clone();
        enabled.retain(|(id, _)| {
            dependencies(*id)
                .iter()
                .all(|d| snapshot.iter().any(|(e, _)| e == d))
        });
        if enabled.len() == before {
            return enabled;
        }
    }
}

/// Builds the database before StartDevice.
pub fn negotiate(a: &AdapterShared, t: &DRIVER_INITIALIZATION_DATA) -> Result<FeatureDb, SimError> {
    let mut db = FeatureDb::default();
    let Some(iface) = query_interface(a, t)? else {
        // Legacy: none of the driver-supported features this OS knows is in the old table
        // except through DxgkCbQueryFeatureSupport, which the driver drives itself.
        return Ok(db);
    };
    db.driver_interface = true;
    let support = ddi::in_table!(iface, QueryFeatureSupport)
        .ok_or_else(|| ddi::sim_err(a, "feature interface without QueryFeatureSupport".into()))?;
    for &id in DRIVER_FEATURES {
        let mut args = DXGKARG_QUERYFEATURESUPPORT {
            FeatureId: id,
            // BR-111: the database's AllowExperimental bit for the feature.
            AllowExperimental: u8::from(
                configure(id, &a.registry_keys().software_key).allow_experimental,
            ),
            ..Default::default()
        };
        let st = support.passive(a, (iface.Context, &mut args))?;
        let claimed = NT_SUCCESS(st) && args.SupportedByDriver != 0;
        let (min, max) = (args.MinSupportedVersion, args.MaxSupportedVersion);
        // [M] DXGKARG_QUERYFEATURESUPPORT: a supported feature has non-zero versions with
        // Min <= Max; anything else is not a usable answer.
        let versions = (claimed && args.SupportedOnCurrentConfig != 0 && min != 0 && min <= max)
            .then_some((min, max));
        if claimed && versions.is_none() && args.SupportedOnCurrentConfig != 0 {
            a.observer().triage(format!(
                "feature {id}: SupportedByDriver with versions {min}..{max} (must be non-zero, \
                 Min <= Max): treated as unsupported"
            ));
        }
        db.support.push(DriverSupport { id, versions });
    }
    db.enabled = decide(&db.support, |id| os_allows(a, id));
    db.build_test_command_buffer = crate::adapter::featuredb::BuildFn(
        crate::dxgkrnl::kmtest::query_interface(a, &iface, &db)?,
    );
    if iface.InterfaceDereference.is_some() {
        // In the machine's context, as every call into the driver (a fault in it is raised on
        // this machine).
        let _m = crate::adapter::context::MachineContext::enter(a.state.clone());
        ddi::interface_dereference(iface.InterfaceDereference, iface.Context);
    }
    Ok(db)
}

/// `DxgkDdiQueryInterface(GUID_WDDM_INTERFACE_FEATURE)`, asked once for version 1 (48 bytes),
/// as K:DpiFeatureStartDevice @0x14024DEF8 does; a failure means the legacy table. The request
/// names the adapter itself (DeviceUid 0xFFFFFFFF) and no specific data, as
/// K:DpiQueryMiniportInterface @0x14018AFAC builds it.
fn query_interface(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
) -> Result<Option<DXGKDDI_FEATURE_INTERFACE>, SimError> {
    let Some(q) = ddi::in_table!(t, DxgkDdiQueryInterface) else {
        return Ok(None);
    };
    let guid: GUID = GUID_WDDM_INTERFACE_FEATURE;
    let ctx = a.context();
    let mut buf = [0u8; 48];
    let mut req = QUERY_INTERFACE {
        InterfaceType: &guid,
        Size: 48,
        Version: DXGKDDI_FEATURE_INTERFACE_VERSION_1,
        Interface: buf.as_mut_ptr() as PINTERFACE,
        InterfaceSpecificData: std::ptr::null_mut(),
        DeviceUid: 0xFFFF_FFFF,
    };
    let st = q.passive(a, (ctx, &mut req))?;
    if !NT_SUCCESS(st) {
        return Ok(None);
    }
    let iface: DXGKDDI_FEATURE_INTERFACE = ddi::read_plain(&buf).ok_or(SimError::Internal(
        "feature interface larger than its buffer",
    ))?;
    if iface.Version != DXGKDDI_FEATURE_INTERFACE_VERSION_1 || iface.Size < 48 {
        a.observer().triage(format!(
            "feature interface returned with Size {} Version {}: ignored",
            iface.Size, iface.Version
        ));
        return Ok(None);
    }
    // The PE image's routines are its code: the OS calls them through forwarders.
    #[cfg(target_os = "linux")]
    let iface = match a.state.pe() {
        Some(pe) => pe.translate_feature_interface(iface),
        None => iface,
    };
    Ok(Some(iface))
}

/// Feature IDs the legacy `DxgkCbQueryFeatureSupport` knows; any other is
/// `INVALID_PARAMETER` (BR-82). \[D24\] 24H2 `DpQueryFeatureSupport` @ 0x1402350B0 accepts
/// HWSCH … SHARE_BACKING_STORE (0…5) only: the GPUVAIOMMU (36) arm of the 23H2 build is gone,
/// so every ID above 5 — NATIVE_FENCE (37) among them — is refused. The 25H2 and 26H1 builds
/// are taken to keep the 24H2 list (not read).
pub const LEGACY_FEATURES: &[DXGK_FEATURE_ID] = &[0, 1, 2, 3, 4, 5];

/// BR-80..82: the OS's answer to `DxgkCbQueryFeatureSupport(id, state)`, the legacy path a
/// driver without the feature interface uses. `Err` is the status the callback fails with.
///
/// \[D\] `DpQueryFeatureSupport`: state 0 and unknown IDs are refused. HWSCH, HWFLIPQUEUE and
/// USER_MODE_SUBMISSION share one rule: `HwSchTreatExperimentalAsStable` turns an experimental
/// claim into a stable one; experimental is then not enabled, stable is enabled when
/// `HwSchMode` is 0 or 2, always-on is enabled. IDs 2, 3 and 5 are always enabled. Enabled HWSCH / USER_MODE_SUBMISSION set the
/// adapter bits the node rules read (BR-72/73). The simulated OS's own policy switches
/// (`OsConfig::*_feature`, the BR-78 block list) apply on top, as with the feature interface.
pub fn legacy_decision(
    a: &AdapterShared,
    id: DXGK_FEATURE_ID,
    state: u32,
) -> Result<bool, rvgpu_ddi::NTSTATUS> {
    use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
    if state == DXGK_FEATURE_SUPPORT_ALWAYS_OFF || !LEGACY_FEATURES.contains(&id) {
        return Err(STATUS_INVALID_PARAMETER);
    }
    let scheduled = |state: u32| {
        let state = if state == DXGK_FEATURE_SUPPORT_EXPERIMENTAL
            && a.os.hw_sch_treat_experimental_as_stable
        {
            DXGK_FEATURE_SUPPORT_STABLE
        } else {
            state
        };
        // Two bits are stored; a value above 3 keeps only them.
        match state & 3 {
            DXGK_FEATURE_SUPPORT_STABLE => matches!(a.os.hw_sch_mode, 0 | 2),
            DXGK_FEATURE_SUPPORT_ALWAYS_ON => true,
            _ => false,
        }
    };
    Ok(match id {
        DXGK_FEATURE_HWSCH | DXGK_FEATURE_HWFLIPQUEUE | DXGK_FEATURE_USER_MODE_SUBMISSION => {
            scheduled(state) && os_allows(a, id)
        }
        _ => true,
    })
}
