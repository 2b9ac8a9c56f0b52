//! Thunk catalog rows: adapters and devices, and the adapter queries.

use super::*;

pub(super) const CLOSE_ADAPTER: Thunk = Thunk {
    name: "D3DKMTCloseAdapter",
    source: Some(&[
        src("DxgkCloseAdapterImpl", 0x140322C20),
        src("DXGADAPTER::DestroyHandle", 0x140322E94),
    ]),
    checks: &[check(
        "hAdapter not an adapter handle in the caller's table",
        INVALID_PARAMETER,
    )],
    written_back: &[],
    pending: Pending::No,
    entry: None,
    gaps: "the gdi32 bridge answers it itself (no kernel entry of its own); the adapter \
           handle's open of the process's adapter state is not counted: the state lives \
           until the process ends",
};

pub(super) const CREATE_DEVICE: Thunk = Thunk {
    name: "D3DKMTCreateDevice",
    source: Some(&[
        src("DxgkCreateDeviceImpl", 0x14039AA10),
        src("DXGDEVICE::Initialize", 0x1403973B4),
        src("DXGPROCESS::OpenAdapter", 0x14036620C),
        src("DXGPROCESS_RENDER_ADAPTER_INFO::Initialize", 0x1403ACC00),
    ]),
    checks: &[
        check("Flags.TestDevice without test signing", INVALID_PARAMETER),
        check(
            "hAdapter not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check("no handle left in the process's table", NO_MEMORY),
        check(
            "the process blocked on the adapter for repeated engine timeouts",
            ACCESS_DENIED,
        ),
    ],
    written_back: &["hDevice"],
    pending: Pending::No,
    entry: None,
    gaps: "the gdi32 bridge answers it itself (no kernel entry of its own); a failing \
           DxgkDdiCreateProcess or DxgkDdiCreateDevice returns the driver's status, as \
           24H2 does, but is not a catalog check; display-adapter pairing is not modelled",
};

pub(super) const DESTROY_DEVICE: Thunk = Thunk {
    name: "D3DKMTDestroyDevice",
    source: Some(&[src("DxgkDestroyDeviceImpl", 0x14039D208)]),
    checks: &[check(
        "hDevice not a device handle in the caller's table",
        INVALID_PARAMETER,
    )],
    written_back: &[],
    pending: Pending::No,
    entry: None,
    gaps: "the gdi32 bridge answers it itself; the device goes through the simulated \
           OS's process-exit teardown of one device (24H2 destroys contexts, paging \
           queues, sync objects, then the device, without the exit's flush)",
};

pub(super) const OPEN_ADAPTER_FROM_LUID: Thunk = Thunk {
    name: "D3DKMTOpenAdapterFromLuid",
    source: Some(&[
        src("DxgkOpenAdapterFromLuidImpl", 0x14035AC38),
        src("DXGPROCESS::OpenAdapter", 0x14036620C),
    ]),
    checks: &[
        check("no process context", INVALID_PARAMETER),
        check("AdapterLuid no adapter's", INVALID_PARAMETER),
        check("the adapter being removed", ACCESS_DENIED),
        check(
            "the process blocked on the adapter for repeated engine timeouts",
            ACCESS_DENIED,
        ),
        check("the adapter not started", DEVICE_REMOVED),
        check("no handle left in the process's table", NO_MEMORY),
    ],
    written_back: &[
        "hAdapter (0 when the adapter is not started, the table is full or the \
         process's adapter state cannot be made)",
    ],
    pending: Pending::No,
    entry: None,
    gaps: "the gdi32 bridge answers it itself; a remote session's LUID translation is not \
           modelled; the process's adapter state is made at its first device, as 24H2 \
           does for a process without the eager flag (bit 0x80)",
};

pub(super) const QUERY_ADAPTER_INFO: Thunk = Thunk {
    name: "D3DKMTQueryAdapterInfo",
    source: Some(&[src("DxgkQueryAdapterInfoImpl", 0x140383210)]),
    checks: &[
        check("pPrivateDriverData NULL", INVALID_PARAMETER),
        check(
            "PrivateDriverDataSize 0, or overflowing when rounded up to 8",
            INVALID_PARAMETER,
        ),
        check(
            "KMTQAITYPE_NODEMETADATA's input not readable",
            ACCESS_VIOLATION,
        ),
        check(
            "hAdapter not in the caller's handle table",
            INVALID_PARAMETER,
        ),
        check(
            "KMTQAITYPE_NODEMETADATA: PrivateDriverDataSize not 78",
            INVALID_PARAMETER,
        ),
        check(
            "KMTQAITYPE_NODEMETADATA: adapter index past the physical adapters",
            INVALID_PARAMETER,
        ),
        check(
            "KMTQAITYPE_NODEMETADATA: node past the adapter's",
            INVALID_PARAMETER,
        ),
        check("KMTQAITYPE_NODEMETADATA: no node metadata", NOT_SUPPORTED),
    ],
    written_back: &[
        "KMTQAITYPE_NODEMETADATA: NodeData, the driver's DXGK_NODEMETADATA unchanged \
         (Flags.ContextSchedulingSupported: the node is hardware-scheduled)",
    ],
    pending: Pending::No,
    entry: Some("query_adapter_info::dxgk_query_adapter_info_impl"),
    gaps: "only KMTQAITYPE_NODEMETADATA is modelled (every other type: STATUS_NOT_SUPPORTED); \
           the UMD does not call it yet",
};
