//! The audit of the feature interface: `DxgkDdiQueryFeatureSupport` and
//! `DxgkDdiQueryFeatureInterface`.

use super::Ddi;
use crate::feature::{DXGKARG_QUERYFEATUREINTERFACE, DXGKARG_QUERYFEATURESUPPORT};

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

const INTERFACE_BY: &str = "K:DxgkQueryFeatureDriverInterface @0x1402888B4";

/// `DxgkDdiQueryFeatureInterface`, for a feature a caller of the adapter wants the driver's
/// interface of (K:DXGADAPTER::QueryFeatureInterface @0x140194144, K:DpiGetAdapterInfo
/// @0x140235D60, both through K:DpiQueryFeatureDriverInterface @0x14024E0D0, which zeroes the
/// caller's interface buffer first). `INTERFACE_BY` zeroes the buffer again and asks the
/// driver only for a feature it knows, that the adapter's database enabled, at a version
/// within the enabled range (else it fails without the call: STATUS_INVALID_PARAMETER for an
/// unknown feature, STATUS_UNSUCCESSFUL otherwise). It fills every field of the 16-byte block
/// on its stack and calls the interface K:DpiFeatureStartDevice @0x14024DEF8 got, with that
/// interface's context.
pub const QUERY_FEATURE_INTERFACE: Ddi<DXGKARG_QUERYFEATUREINTERFACE> = Ddi {
    name: "DxgkDdiQueryFeatureInterface",
    block: "DXGKARG_QUERYFEATUREINTERFACE",
    rows: &[
        filled_row!(
            DXGKARG_QUERYFEATUREINTERFACE.FeatureId,
            true,
            INTERFACE_BY,
            "the caller's feature"
        ),
        filled_row!(
            DXGKARG_QUERYFEATUREINTERFACE.Version,
            true,
            INTERFACE_BY,
            "the caller's version, within the range the database enabled"
        ),
        filled_row!(
            DXGKARG_QUERYFEATUREINTERFACE.InterfaceSize,
            true,
            INTERFACE_BY,
            "the size of the caller's buffer; the driver writes the interface's size back"
        ),
        filled_row!(
            DXGKARG_QUERYFEATUREINTERFACE.Interface,
            true,
            INTERFACE_BY,
            "the caller's buffer, zeroed"
        ),
    ],
};
