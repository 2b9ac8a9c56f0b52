//! The audit of the PnP DDIs that take a block: `DxgkDdiStartDevice`,
//! `DxgkDdiQueryChildRelations` and `DxgkDdiQueryInterface`.

use super::{Ddi, Fill, Row};
use crate::adapter::{DXGK_CHILD_DESCRIPTOR, DXGK_START_INFO, QUERY_INTERFACE};

const START_BY: &str = "K:DpiFdoStartAdapter @0x140245688";

/// `DxgkDdiStartDevice`'s DXGK_START_INFO: `START_BY` builds it on its stack just before the
/// call, beside the DXGKRNL_INTERFACE it fills in pool for the driver's interface version
/// (audited with the callbacks) and the two counts the driver writes into the adapter's
/// extension. After a successful start it clamps the source count to 1 when the driver
/// reports no children, and enumerates children (DxgkDdiQueryChildRelations) only when it
/// reports some.
pub const START_DEVICE: Ddi<DXGK_START_INFO> = Ddi {
    name: "DxgkDdiStartDevice",
    block: "DXGK_START_INFO",
    rows: &[
        filled_row!(DXGK_START_INFO.RequiredDmaQueueEntry, false, START_BY, "32"),
        filled_row!(
            DXGK_START_INFO.AdapterGuid,
            false,
            START_BY,
            "the adapter's GUID, kept in its extension"
        ),
        filled_row!(
            DXGK_START_INFO.AdapterLuid,
            false,
            START_BY,
            "the adapter's LUID, kept in its extension"
        ),
    ],
};

const CHILDREN_BY: &str = "K:DpiFdoEnumChildDevices @0x1403FF92C";
const CHILDREN_WHY: &str = "an answer: the caller allocates one descriptor more than the \
                            adapter's child count and zeroes the array";

/// `DxgkDdiQueryChildRelations` as the adapter starts (`START_BY`, only when the driver's
/// StartDevice reported children):
/// `CHILDREN_BY` hands the driver a zeroed pool array of the adapter's child count plus one
/// descriptors and its size in bytes, then checks each reported child (its type, output
/// technology, HPD awareness and target id) and fails the start on a bad one. The rows
/// describe the array's first descriptor, the one the argument points to.
pub const QUERY_CHILD_RELATIONS: Ddi<DXGK_CHILD_DESCRIPTOR> = Ddi {
    name: "DxgkDdiQueryChildRelations",
    block: "DXGK_CHILD_DESCRIPTOR",
    rows: &[
        zero_row!(
            DXGK_CHILD_DESCRIPTOR.ChildDeviceType,
            false,
            CHILDREN_BY,
            CHILDREN_WHY
        ),
        Row {
            field: "ChildCapabilities",
            kmd_reads: false,
            fill: Fill::Zero {
                by: CHILDREN_BY,
                why: CHILDREN_WHY,
            },
            is_zero: Some(|b| {
                let c = b.ChildCapabilities;
                // SAFETY: every arm of the union is plain integers; the video-output arm
                // spans its named bytes.
                let v = unsafe { c.Type.VideoOutput };
                v.InterfaceTechnology == 0
                    && v.MonitorOrientationAwareness == 0
                    && v.SupportsSdtvModes == 0
                    && c.HpdAwareness == 0
            }),
        },
        zero_row!(
            DXGK_CHILD_DESCRIPTOR.AcpiUid,
            false,
            CHILDREN_BY,
            CHILDREN_WHY
        ),
        zero_row!(
            DXGK_CHILD_DESCRIPTOR.ChildUid,
            false,
            CHILDREN_BY,
            CHILDREN_WHY
        ),
    ],
};

const INTERFACE_BY: &str = "K:DpiQueryMiniportInterface @0x14018AFAC";

/// `DxgkDdiQueryInterface` for an interface the kernel wants from the adapter (the feature
/// interface at start, and the display, panel, brightness, thermal and virtualization ones):
/// `INTERFACE_BY` builds the request on its stack from its caller's GUID, size, version and
/// buffer, and names the adapter itself as the device. It asks only when the slot is filled,
/// and only logs a failure. (A child's PDO passes a PnP request through instead,
/// K:DpiPdoDispatchPnp @0x1403B44D0; a render-only adapter has no children.)
pub const QUERY_INTERFACE_SET: Ddi<QUERY_INTERFACE> = Ddi {
    name: "DxgkDdiQueryInterface",
    block: "QUERY_INTERFACE",
    rows: &[
        filled_row!(
            QUERY_INTERFACE.InterfaceType,
            true,
            INTERFACE_BY,
            "the caller's GUID"
        ),
        filled_row!(
            QUERY_INTERFACE.Size,
            true,
            INTERFACE_BY,
            "the caller's buffer size"
        ),
        filled_row!(
            QUERY_INTERFACE.Version,
            true,
            INTERFACE_BY,
            "the version the caller asks for"
        ),
        filled_row!(
            QUERY_INTERFACE.Interface,
            true,
            INTERFACE_BY,
            "the caller's buffer, which the driver fills"
        ),
        zero_row!(
            QUERY_INTERFACE.InterfaceSpecificData,
            false,
            INTERFACE_BY,
            "written zero"
        ),
        filled_row!(
            QUERY_INTERFACE.DeviceUid,
            false,
            INTERFACE_BY,
            "0xFFFFFFFF: the adapter, not a child"
        ),
    ],
};
