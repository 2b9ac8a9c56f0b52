//! The audit of the feature interface: `DxgkDdiQueryFeatureSupport`.

use super::Ddi;
use crate::feature::DXGKARG_QUERYFEATURESUPPORT;

const SUPPORT_BY: &str = "K:IsFeatureEnabledUncached @0x140289024";

/// `DxgkDdiQueryFeatureSupport`, asked lazily the first time anything asks the adapter's
/// feature database (K:DxgkIsFeatureEnabled @0x1402887F8) about a feature whose descriptor
/// says the driver must be asked and whose dependencies are met; the answer is cached.
/// `SUPPORT_BY` zeroes the 12-byte block on its stack and names the feature; a failure counts
/// as "not supported". The interface is the one K:DpiFeatureStartDevice @0x14024DEF8 got from
/// DxgkDdiQueryInterface (GUID_WDDM_INTERFACE_FEATURE, 48 bytes, version 1).
pub const QUERY_FEATURE_SUPPORT: Ddi<DXGKARG_QUERYFEATURESUPPORT> = Ddi {
    name: "DxgkDdiQueryFeatureSupport",
    block: "DXGKARG_QUERYFEATURESUPPORT",
    rows: &[
        filled_row!(
            DXGKARG_QUERYFEATURESUPPORT.FeatureId,
            true,
            SUPPORT_BY,
            "the feature, its category in the top 4 bits"
        ),
        zero_row!(
            DXGKARG_QUERYFEATURESUPPORT.MinSupportedVersion,
            false,
            SUPPORT_BY,
            "an answer, zeroed with the block"
        ),
        zero_row!(
            DXGKARG_QUERYFEATURESUPPORT.MaxSupportedVersion,
            false,
            SUPPORT_BY,
            "an answer, zeroed with the block"
        ),
        filled_row!(
            DXGKARG_QUERYFEATURESUPPORT.AllowExperimental,
            false,
            SUPPORT_BY,
            "whether the database's configuration of the feature allows experimental versions"
        ),
        zero_row!(
            DXGKARG_QUERYFEATURESUPPORT.SupportedByDriver,
            false,
            SUPPORT_BY,
            "an answer, zeroed with the block"
        ),
        zero_row!(
            DXGKARG_QUERYFEATURESUPPORT.SupportedOnCurrentConfig,
            false,
            SUPPORT_BY,
            "an answer, zeroed with the block"
        ),
    ],
};
