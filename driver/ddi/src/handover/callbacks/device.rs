//! The adapter's callbacks: device information, services, the interrupt lock and DPC, handle
//! data, context invalidation and doorbell disconnection.

use super::{dxgkrnl_fatal, field, row, Callback, Irql, Otherwise, Use};
use crate::adapter::DXGK_DEVICE_INFO;
use crate::dxgkrnl::{
    DXGKARGCB_DISCONNECTDOORBELL, DXGKARGCB_GETHANDLEDATA, DXGKARGCB_INVALIDATEHWCONTEXT,
};

/// The handle check every `Dp…` callback of the port driver starts with.
const PORT_HANDLE: &str = "a DEVICE_OBJECT: followed to its extension (+64), which must carry \
    the port's tag and a started-FDO type; NULL or a foreign extension: \
    STATUS_INVALID_PARAMETER (a freed or invented pointer faults on the read)";

/// `STATUS_DEVICE_REMOVED`.
const DEVICE_REMOVED: i32 = 0xC000_02B6u32.cast_signed();

/// The callbacks of this concept.
pub(super) const DEVICE: &[Callback] = &[
    Callback {
        name: "DxgkCbGetDeviceInformation",
        case: None,
        by: "K:DpGetDeviceInformation @0x1403C44A0",
        irql: Irql {
            expects: "PASSIVE_LEVEL",
            otherwise: Otherwise::Logged,
        },
        locks: "",
        rows: &[
            row!("DeviceHandle", PORT_HANDLE),
            row!(
                "DeviceInfo",
                "NULL: STATUS_INVALID_PARAMETER; else its 80 bytes are zeroed, then filled"
            ),
            row!(
                field!(DXGK_DEVICE_INFO.MiniportDeviceContext),
                "written: the context the driver's AddDevice returned"
            ),
            row!(
                field!(DXGK_DEVICE_INFO.TranslatedResourceList),
                "written: the port's translated resource list (the one MapMemory checks \
                 ranges against)"
            ),
            row!(
                field!(DXGK_DEVICE_INFO.DockingState),
                "written only for a driver of interface 0x104E or later on a dock-aware \
                 machine (registry `CurrentDockInfo`); otherwise left zero"
            ),
        ],
        returns: "STATUS_SUCCESS (a failed docking-state read is logged and ignored)",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbQueryServices",
        case: None,
        by: "K:DpQueryServices @0x140235390",
        irql: Irql {
            expects: "PASSIVE_LEVEL",
            otherwise: Otherwise::BugCheck(
                dxgkrnl_fatal(0x15),
                "when the driver's DDI interface version is 0x2003 or later (always for \
                 rvgpu); the call would fail STATUS_INVALID_PARAMETER otherwise",
            ),
        },
        locks: "",
        rows: &[
            row!("DeviceHandle", PORT_HANDLE),
            row!("Interface", "NULL: STATUS_INVALID_PARAMETER"),
            row!(
                "ServicesType",
                "switch: Agp 0, DebugReport 1, TimedOperation 2, SPB 3, BDD 4 \
                 (STATUS_INVALID_HANDLE unless a basic display driver), FirmwareTable 5, \
                 IDD 6 (STATUS_INVALID_HANDLE unless indirect), Feature 7; any other: \
                 STATUS_INVALID_PARAMETER"
            ),
            row!(
                "Interface.Size",
                "must be the kind's own size (Feature: 48, DXGK_FEATURE_INTERFACE), else \
                 STATUS_INVALID_PARAMETER"
            ),
            row!(
                "Interface.Version",
                "must be 1 for kinds 0 to 3 and 5; not read for BDD, IDD and Feature"
            ),
            row!(
                "Interface (out)",
                "Feature: Context (the adapter), InterfaceReference and \
                 InterfaceDereference (both no-ops), IsFeatureEnabled, \
                 QueryFeatureInterface written"
            ),
        ],
        returns: "STATUS_SUCCESS; the refusals above",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbSynchronizeExecution",
        case: None,
        by: "K:DpSynchronizeExecution @0x140026180",
        irql: Irql {
            expects: "<= DIRQL; above DISPATCH_LEVEL only while the device is started",
            otherwise: Otherwise::Fails(DEVICE_REMOVED),
        },
        locks: "the device's remove lock (at or below DISPATCH_LEVEL; a removal in progress \
            fails the call with its status), then the interrupt's spin lock \
            (KeSynchronizeExecution), or with no interrupt connected a port spin lock at \
            raised IRQL",
        rows: &[
            row!("DeviceHandle", PORT_HANDLE),
            row!(
                "SynchronizeRoutine",
                "NULL: STATUS_INVALID_PARAMETER; else called with Context, its BOOLEAN \
                 stored in ReturnValue"
            ),
            row!(
                "ReturnValue",
                "NULL: STATUS_INVALID_PARAMETER (checked before anything else is done)"
            ),
            row!(
                "MessageNumber",
                "read only for a message-signalled interrupt: must be below the message \
                 count, else STATUS_INVALID_PARAMETER; ignored for a line-based one"
            ),
        ],
        returns: "STATUS_SUCCESS with the routine run; an interrupt of another mode: \
            STATUS_SUCCESS without running it",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbQueueDpc",
        case: None,
        by: "K:DpQueueDpc @0x1400333D0",
        irql: Irql {
            expects: "any (KeInsertQueueDpc)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "",
        rows: &[row!(
            "DeviceHandle",
            "checked as every port handle; NULL or foreign: FALSE, logged"
        )],
        returns: "KeInsertQueueDpc's answer: TRUE when queued, FALSE when already queued",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbNotifyDpc",
        case: None,
        by: "K:DxgNotifyDpcCB @0x14002A460, M:VidSchDdiNotifyDpc @0x1400079E0",
        irql: Irql {
            expects: "DISPATCH_LEVEL (asserted)",
            otherwise: Otherwise::Logged,
        },
        locks: "a global spin lock around the Miracast part; VidSch's DPC work runs inside \
            the call",
        rows: &[row!(
            "DeviceHandle",
            "followed to the port extension without a NULL check; with the scheduler's \
             callbacks enabled, VidSch processes the reports queued by NotifyInterrupt \
             (fences, faults, page faults) before returning"
        )],
        returns: "nothing",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbGetHandleData",
        case: None,
        by: "K:DxgGetHandleDataCB @0x1404111E0",
        irql: Irql {
            expects: "below DISPATCH_LEVEL",
            otherwise: Otherwise::BugCheck(
                dxgkrnl_fatal(0x14),
                "when the handle names a live object of the caller's process and the driver's \
                 interface is 0x2003 or later",
            ),
        },
        locks: "the calling process's handle table, shared",
        rows: &[
            row!(
                field!(DXGKARGCB_GETHANDLEDATA.hObject),
                "looked up in the calling process's handle table only: index, generation and \
                 kind must match (allocation 5, resource 4), else NULL"
            ),
            row!(
                field!(DXGKARGCB_GETHANDLEDATA.Type),
                "1 (allocation) or 2 (resource); any other: NULL"
            ),
            row!(
                field!(DXGKARGCB_GETHANDLEDATA.Flags),
                "DeviceSpecific (bit 0): the handle of the allocation's open instead of the \
                 driver's hAllocation (allocations); a resource reads it off the resource"
            ),
        ],
        returns: "the driver's handle, or NULL",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbInvalidateHwContext",
        case: None,
        by: "K:DxgkInvalidateHwContextCB @0x14006C2E0",
        irql: Irql {
            expects: "PASSIVE_LEVEL (asserted)",
            otherwise: Otherwise::Logged,
        },
        locks: "",
        rows: &[
            row!(
                field!(DXGKARGCB_INVALIDATEHWCONTEXT.hAdapter),
                "the adapter (DpiGetDxgAdapter)",
                dxgkrnl_fatal(7),
                "the adapter has no scheduler (VidSch) object"
            ),
            row!(
                field!(DXGKARGCB_INVALIDATEHWCONTEXT.hHwContext),
                "Dxgkrnl's own hardware-context object: its pointer at +8 (the scheduler's \
                 context) is followed; NULL there: nothing done, STATUS_SUCCESS"
            ),
            row!(
                field!(DXGKARGCB_INVALIDATEHWCONTEXT.Flags),
                "passed to the scheduler's invalidation with the context"
            ),
        ],
        returns: "the scheduler's status, or STATUS_SUCCESS; a driver below WDDM 2.5 is \
            asserted against",
        kmd: Use::Calls,
    },
    Callback {
        name: "DxgkCbDisconnectDoorbell",
        case: None,
        by: "K:DxgkDisconnectDoorbellCB @0x1401DB180",
        irql: Irql {
            expects: "PASSIVE_LEVEL (Microsoft's page; the code does not check)",
            otherwise: Otherwise::Unchecked,
        },
        locks: "the queue's device, exclusive (DXGDEVICEACCESSLOCKEXCLUSIVE), unless this \
            thread already holds it",
        rows: &[
            row!(
                field!(DXGKARGCB_DISCONNECTDOORBELL.DisconnectReason),
                "must be 2 or 3 (DISCONNECTED_RETRY, DISCONNECTED_ABORT), else \
                 STATUS_INVALID_PARAMETER; checked first"
            ),
            row!(
                field!(DXGKARGCB_DISCONNECTDOORBELL.hHwQueue),
                "Dxgkrnl's own DXGHWQUEUE: followed (+16, +16) to its device, whose access \
                 lock is taken"
            ),
            row!(
                field!(DXGKARGCB_DISCONNECTDOORBELL.hDoorbell),
                "must be the queue's doorbell (queue +144), else STATUS_INVALID_PARAMETER; a \
                 doorbell with more than one reference is left connected (STATUS_SUCCESS)"
            ),
            row!(field!(DXGKARGCB_DISCONNECTDOORBELL.Flags), "not read"),
        ],
        returns: "DXGDOORBELL::Disconnect's status; the refusals above",
        kmd: Use::Calls,
    },
];
