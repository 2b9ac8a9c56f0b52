//! Runtime power callbacks.

use super::{dxgkrnl_fatal, row, Callback, Irql, Otherwise, Use};

/// What both reference callbacks do with the component index.
const COMPONENT: &str = "the low 16 bits plus the first index of the component type named \
    by the high 16 bits; at or past the adapter's component count: bug check";

/// The callbacks of this concept.
pub(super) const POWER: &[Callback] = &[
    Callback {
        name: "DxgkCbSetPowerComponentActive",
        case: None,
        by: "K:DxgSetPowerComponentActiveCB @0x1403BE700, \
            K:DXGADAPTER::SetPowerComponentActiveCB @0x1400258A4",
        irql: Irql {
            expects: "PASSIVE_LEVEL (Microsoft's page; these functions do not check)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "",
        rows: &[
            row!(
                "hAdapter",
                "the adapter (DpiGetDxgAdapter); the caller's process is \
                 detached for the call"
            ),
            row!(
                "ComponentIndex",
                COMPONENT,
                dxgkrnl_fatal(0x17),
                "an index past the components, or runtime power management not started for \
                 the adapter (K:StartRuntimePowerManagement @0x140195D1C sets it)"
            ),
        ],
        returns: "nothing; the component's active count is raised and the worker brings it \
            to F0",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbSetPowerComponentIdle",
        case: None,
        by: "K:DxgSetPowerComponentIdleCB @0x140010770, \
            K:DXGADAPTER::SetPowerComponentIdleCB @0x140010918",
        irql: Irql {
            expects: "PASSIVE_LEVEL for an engine component (Microsoft's page; these \
                functions do not check)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "",
        rows: &[
            row!("hAdapter", "the adapter (DpiGetDxgAdapter)"),
            row!(
                "ComponentIndex",
                COMPONENT,
                dxgkrnl_fatal(0x17),
                "an index past the components, or runtime power management not started"
            ),
        ],
        returns: "nothing; the active count is dropped (not checked against zero here)",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbCompleteFStateTransition",
        case: None,
        by: "K:DxgkCompleteFStateTransitionCB @0x14006C180",
        irql: Irql {
            expects: "any (Microsoft's page; the wrapper does not check)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "",
        rows: &[
            row!("hAdapter", "the adapter (DpiGetDxgAdapter)"),
            row!(
                "ComponentIndex",
                "passed to K:DXGADAPTER::CompleteFStateTransitionCB @0x140065264 (only for \
                 a component whose F-state transitions the driver completes asynchronously)"
            ),
        ],
        returns: "nothing",
        kmd: Use::Names,
    },
];
