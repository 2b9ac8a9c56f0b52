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
    entry: Some("adapter::dxgk_close_adapter_impl"),
    gaps: "the adapter handle's open of the process's adapter state is not counted: the \
           state lives until the process ends",
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
    entry: Some("device::dxgk_create_device_impl"),
    gaps: "a failing DxgkDdiCreateProcess or DxgkDdiCreateDevice returns the driver's status, as \
           24H2 does, but is not a catalog check; display-adapter pairing is not modelled",
};

pub(super) const DESTROY_DEVICE: Thunk = Thunk {
    name: "D3DKMTDestroyDevice",
    source: Some(&[
        src("DxgkDestroyDeviceImpl", 0x14039D208),
        src("DXGDEVICE::DestroyAllContexts", 0x14039DC5C),
        src("DXGDEVICE::DestroyAllPagingQueues", 0x14039D880),
        src("DXGDEVICE::DestroyAllDeviceSyncObjects", 0x14039E038),
        src("ADAPTER_RENDER::DestroyDeviceNoLocks", 0x1402ABDE8),
    ]),
    checks: &[
        check("no process context", INVALID_PARAMETER),
        check(
            "hDevice not a device handle in the caller's table",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[],
    pending: Pending::No,
    entry: Some("device::dxgk_destroy_device_impl"),
    gaps: "sync objects are the process's in the simulation: they go with its last device \
           on the adapter, not with the device that made them; the tracked workloads and \
           a display adapter's VidPN source ownership are not modelled; under the pages' \
           reading the device goes as at a normal process exit (UM-17)",
};

pub(super) const ENUM_ADAPTERS2: Thunk = Thunk {
    name: "D3DKMTEnumAdapters2",
    source: Some(&[
        src("DxgkEnumAdapters2", 0x140349F50),
        src("DxgkEnumAdapters2Impl", 0x140349F80),
        src("DxgkEnumAdaptersInternal", 0x140349510),
    ]),
    checks: &[
        check("the D3DKMT_ENUMADAPTERS2 pointer NULL", INVALID_PARAMETER),
        check("no pool for the adapter list", NO_MEMORY),
        check("no process context", INVALID_PARAMETER),
        check(
            "more adapters to list than NumAdapters (after NumAdapters is lowered to the \
             session's maximum adapter count): the handles opened are closed",
            BUFFER_TOO_SMALL,
        ),
    ],
    written_back: &[
        "NumAdapters: the session's maximum adapter count when pAdapters is NULL (nothing \
         else is done), else the number of adapters listed",
        "pAdapters[0..NumAdapters]: hAdapter (a new handle in the caller's table, one per \
         adapter), AdapterLuid, NumOfSources, bPrecisePresentRegionsPreferred; written after \
         NumAdapters, and a fault there returns its status with NumAdapters written and the \
         handles left open (no cleanup around the copy)",
    ],
    pending: Pending::No,
    entry: Some("adapter::dxgk_enum_adapters2_impl"),
    gaps: "m_MaximumGlobalAdapterCount is the machine's adapter count (where 24H2 sets it \
           is not read); a failed wait for PnP transitions is only logged, not modelled; \
           EnumAdaptersCallback's three passes not compared with the simulation's answer",
};

pub(super) const ESCAPE: Thunk = Thunk {
    name: "D3DKMTEscape",
    source: Some(&[
        src("DxgkEscape", 0x140419AB0),
        src("DxgkpDriverKnownEscape", 0x1403C1B14),
    ]),
    checks: &[
        check("no process context", INVALID_PARAMETER),
        check(
            "Type VIDMM, VIDSCH, 28 or 29 without test signing or DRT",
            ACCESS_DENIED,
        ),
        check(
            "Type VIDMM: PrivateDriverDataSize under 0x840",
            INVALID_PARAMETER,
        ),
        check(
            "PrivateDriverDataSize over 0x200 and no pool for the kernel copy",
            NO_MEMORY,
        ),
        check(
            "pPrivateDriverData not readable for PrivateDriverDataSize bytes (copied before \
             any handle is looked at)",
            ACCESS_VIOLATION,
        ),
        check(
            "Flags.DriverKnownEscape with a Type other than DRIVERPRIVATE, hAdapter 0 or \
             Flags.HardwareAccess",
            INVALID_PARAMETER,
        ),
        check(
            "Type DRT_TEST: PrivateDriverDataSize under 12 or under its second dword, or the \
             first dword not the DRT signature",
            INVALID_PARAMETER,
        ),
        check(
            "Type DRT_TEST without test signing or DRT (InternalEscapeEnabled)",
            ACCESS_DENIED,
        ),
        check(
            "Type DIAGNOSTICS or GET_EXTERNAL_DIAGNOSTICS: PrivateDriverDataSize under 4 or \
             not its first dword + 4",
            INVALID_PARAMETER,
        ),
        check(
            "Type FORCE_BDDFALLBACK_HEADLESS or SOFTGPU_ENABLE_DISABLE_HMD without test signing",
            ACCESS_DENIED,
        ),
        check(
            "Type FORCE_BDDFALLBACK_HEADLESS: PrivateDriverDataSize not 1",
            INVALID_PARAMETER,
        ),
        check(
            "Type REQUEST_MACHINE_CRASH: PrivateDriverDataSize not 24",
            INVALID_PARAMETER,
        ),
        check(
            "Type REQUEST_MACHINE_CRASH (no crash on request)",
            UNSUCCESSFUL,
        ),
        check(
            "Type SOFTGPU_ENABLE_DISABLE_HMD: PrivateDriverDataSize not 200",
            INVALID_PARAMETER,
        ),
        check(
            "Type LOG_CODEPOINT_PACKET: PrivateDriverDataSize not 16",
            INVALID_PARAMETER,
        ),
        check(
            "Type LOG_USERMODE_DAIG_PACKET: PrivateDriverDataSize under 0x30 or under its \
             second dword, or that dword 0x400 or more",
            INVALID_PARAMETER,
        ),
        check(
            "Type CCD_DATABASE: PrivateDriverDataSize under 4",
            INVALID_PARAMETER,
        ),
        check(
            "Type BDD_FALLBACK with no basic display adapter to fall back to",
            NOT_FOUND,
        ),
        check(
            "hAdapter not an adapter handle in the caller's table, 0 included (the types \
             the kernel answers without an adapter end before this)",
            INVALID_PARAMETER,
        ),
        check(
            "hDevice not 0 and not a device of hAdapter's adapter in the caller's table",
            INVALID_PARAMETER,
        ),
        check(
            "hContext not 0 and not a context of hDevice",
            INVALID_PARAMETER,
        ),
        check(
            "an adapter of DDI version 0x5023 or later: Flags.Reserved or Flags bits 8..31 \
             set",
            INVALID_PARAMETER,
        ),
        check(
            "an adapter of DDI version 0x5023 or later: Flags.VirtualMachineData set",
            INVALID_PARAMETER,
        ),
        check(
            "DRIVERPRIVATE without adapter access (Flags.DriverCommonEscape, \
             Flags.NoAdapterSynchronization from DDI version 0x5023, or a hybrid discrete \
             adapter): the adapter not active",
            DEVICE_REMOVED,
        ),
        check(
            "the adapter not active: not started, or removed (COREADAPTERACCESS::AcquireShared \
             reads DXGADAPTER +200)",
            DEVICE_REMOVED,
        ),
        check(
            "hDevice not 0 and the device not active (DXGDEVICE +608: stopped with its \
             adapter; a device VidSch put in error is active)",
            DEVICE_REMOVED,
        ),
        check(
            "Flags.DriverKnownEscape and no render adapter paired with hAdapter",
            INVALID_PARAMETER,
        ),
        check(
            "DRIVERPRIVATE: the driver has no DxgkDdiEscape",
            NOT_SUPPORTED,
        ),
        check(
            "DRIVERPRIVATE: PrivateDriverDataSize 0 or pPrivateDriverData NULL",
            INVALID_PARAMETER,
        ),
        check(
            "DRIVERPRIVATE to a vendor 0x1002 adapter without adapter flag 8: \
             PrivateDriverDataSize under 12, or the third dword, its low byte \
             cleared, 0x01000C00, 0x01000D00 or 0x01000E00",
            NOT_SUPPORTED,
        ),
        check("DRIVERPRIVATE with Flags.DriverCommonEscape", NOT_SUPPORTED),
        check(
            "Type VIDMM command 9 (suspend) without its fifth dword and without DRT",
            ACCESS_DENIED,
        ),
        check(
            "Type TDRDBGCTRL: PrivateDriverDataSize under 4 with data, a command above 8, or \
             command 8 with PrivateDriverDataSize under 8",
            INVALID_PARAMETER,
        ),
        check(
            "Type TDRDBGCTRL: commands 3 to 8 without TdrTestMode in the registry",
            NOT_SUPPORTED,
        ),
        check(
            "Type VIDSCH: command 2, or command 3 without Flags.HardwareAccess",
            INVALID_PARAMETER,
        ),
        check(
            "Type DEVICE: PrivateDriverDataSize under 12 or hDevice 0",
            INVALID_PARAMETER,
        ),
        check(
            "Type DMM, OUTPUTDUPL_SNAPSHOT, OUTPUTDUPL_DIAGNOSTICS or MODES_PRUNED_OUT (also \
             through ACTIVATE_SPECIFIC_DIAG) on an adapter without a display core",
            NOT_SUPPORTED,
        ),
        check(
            "Type DEBUG_SNAPSHOT: PrivateDriverDataSize under 8",
            INVALID_PARAMETER,
        ),
        check(
            "Type BDD_PNP to an adapter that is not the basic display driver's",
            GRAPHICS_INVALID_DISPLAY_ADAPTER,
        ),
        check(
            "Type ACTIVATE_SPECIFIC_DIAG: PrivateDriverDataSize not 8, or the first dword \
             neither 0 nor MODES_PRUNED_OUT",
            INVALID_PARAMETER,
        ),
        check(
            "Type WHQL_INFO: PrivateDriverDataSize under 4",
            INVALID_PARAMETER,
        ),
        check(
            "Type BRIGHTNESS without Flags.HardwareAccess or with PrivateDriverDataSize under \
             0x60C",
            INVALID_PARAMETER,
        ),
        check(
            "Type EDID_CACHE: PrivateDriverDataSize under 4 or not its first dword + 4",
            INVALID_PARAMETER,
        ),
        check(
            "Type HISTORY_BUFFER_STATUS: PrivateDriverDataSize under 8 or hDevice 0",
            INVALID_PARAMETER,
        ),
        check(
            "Type MIRACAST_ADAPTER_DIAG_INFO: PrivateDriverDataSize not 32",
            INVALID_PARAMETER,
        ),
        check(
            "Type PROCESS_VERIFIER_OPTION or ADAPTER_VERIFIER_OPTION: under 0x20 bytes, or a \
             field out of its range",
            INVALID_PARAMETER,
        ),
        check(
            "Type DOD_SET_DIRTYRECT_MODE to an adapter with a render core, or \
             GET_DISPLAY_CONFIGURATIONS to one without a display core",
            INVALID_PARAMETER,
        ),
        check(
            "Type QUERY_IOMMU_STATUS or QUERY_DMA_REMAPPING_STATUS: PrivateDriverDataSize 0",
            INVALID_PARAMETER,
        ),
        check(
            "a Type below 1024 that 24H2 does not know (7, 19, 22, 26, 35, 40 and up)",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[
        "pPrivateDriverData: the kernel copy as the driver or the known escape left it, on \
         any NT_SUCCESS status (not on STATUS_BUFFER_OVERFLOW)",
        "pPrivateDriverData after the adapter's checks, on success: HISTORY_BUFFER_STATUS \
         (first byte 0 without history tracing, second dword 0), QUERY_IOMMU_STATUS and \
         QUERY_DMA_REMAPPING_STATUS (first byte 0 without an IOMMU), ACTIVATE_SPECIFIC_DIAG \
         command 0 and VIDSCH command 3 (as captured)",
    ],
    pending: Pending::No,
    entry: Some("escape::dxgk_escape"),
    gaps: "Win32k's types (1024 and up) are STATUS_NOT_SUPPORTED (24H2 hands them to Win32k, \
           which the simulation has not); so is what 24H2 answers from state the simulation \
           keeps none of, past that type's checks: VidMm's evictions, suspend and other \
           commands, VidSch's commands but 2 and 3, DRT tests with test signing, the \
           diagnostics buffers, Miracast and IDD requests, SoftGPU HMDs, the CCD database, \
           TDRDBGCTRL commands 0 to 2 and without data, DEVICE (DXGDEVICE::Escape), \
           DEBUG_SNAPSHOT, WHQL_INFO, BRIGHTNESS, EDID_CACHE, MIRACAST_ADAPTER_DIAG_INFO \
           (and its IsDiagnosticAllowed refusal) and the verifier options; a delay (VIDSCH \
           command 3) does not sleep; DRT is taken as off and the process as neither on the \
           console session nor admin; the vendor 0x1002 check is not made (the simulated \
           adapter is not that vendor's); adapter access (exclusive with \
           Flags.HardwareAccess, which also flushes the scheduler) is not taken: an adapter \
           not active is STATUS_DEVICE_REMOVED whatever the flags; the known escape's and \
           DxgkDdiEscape's statuses are returned as they are; the harness's simulated backend \
           names no adapter handle and starts at the known escape's own checks \
           (SimKmt::escape_driver_private goes through the entry with its process's adapter \
           and device); the GPU-PV forward to the host is not modelled",
};

pub(super) const GET_DEVICE_STATE: Thunk = Thunk {
    name: "D3DKMTGetDeviceState",
    source: Some(&[
        src("DxgkGetDeviceState", 0x1402AB120),
        src("DxgkGetDeviceStateInternal", 0x1402AB150),
        src("DXGDEVICE::GetDeviceExecutionState", 0x1402ABBB0),
        src("DXGDEVICE::QueryLastCompletedPresentId", 0x1401872E8),
        src("DXGDEVICE::QueryLastCompletedPresentIdDWM", 0x1402ABF50),
    ]),
    checks: &[
        check("no process context", INVALID_PARAMETER),
        check(
            "StateType not RESET and hDevice not a device handle in the caller's table",
            INVALID_PARAMETER,
        ),
        check(
            "StateType PRESENT or PRESENT_DWM on an adapter not active",
            DEVICE_REMOVED,
        ),
        check(
            "StateType PRESENT or PRESENT_DWM: PresentState.VidPnSourceId not below the \
             device's display adapter's source count",
            INVALID_PARAMETER,
        ),
        check(
            "StateType PRESENT or PRESENT_DWM: the device has no display adapter (a \
             render-only adapter's device)",
            INVALID_PARAMETER,
        ),
        check(
            "StateType PAGE_FAULT or PRESENT_QUEUE on a device not active (stopped with its \
             adapter)",
            DEVICE_REMOVED,
        ),
        check(
            "StateType PRESENT_QUEUE: PresentState.VidPnSourceId not below the adapter's \
             source count (M:VidSchWaitForQueuedPresentLimit @0x1400F0C50; none on a \
             render-only adapter)",
            INVALID_PARAMETER,
        ),
        check(
            "StateType PRESENT_QUEUE: the device in error (M:VidSchWaitForQueuedPresentLimit)",
            GPU_EXCEPTION_ON_DEVICE,
        ),
        check(
            "StateType 0, or above PRESENT_QUEUE (7 and up)",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[
        "StateType RESET: ResetState only (DesktopSwitched), without a device",
        "any other StateType: the whole structure (0x38 bytes), ExecutionState from \
         VidSch's error reason of the device (7 HUNG, 9 and 19 DMAPAGEFAULT, 14 STOPPED, \
         none ACTIVE; a stopped device STOPPED), PageFaultState from VidSch's record \
         (M:VidSchGetDevicePageFaultInformation @0x1400A6FC0)",
    ],
    pending: Pending::No,
    entry: Some("device_state::dxgk_get_device_state_internal"),
    gaps: "the simulation models no display: a driver that reports VidPn sources is answered \
           as a render-only adapter; VidSch's page-fault record is not kept (PAGE_FAULT \
           writes zeros, also for a device put in error by a page fault); DesktopSwitched is \
           always 0; a DXGDEVICE reset or hung (24H2's states 2 and 3) and the reset flag of \
           reason 0 are not modelled; the paravirtualised (VMBus) path is not modelled; the \
           reason of a refused submission (19) is the 22631 build's \
           (M:SubmitRenderToHwQueue @0x1C00410D0): 24H2's pseudocode shows that call without \
           its arguments",
};

pub(super) const IS_FEATURE_ENABLED: Thunk = Thunk {
    name: "D3DKMTIsFeatureEnabled",
    source: Some(&[
        src("NtDxgkIsFeatureEnabled", 0x1401D1A40),
        src("DpiIsFeatureEnabled", 0x14024E064),
    ]),
    checks: &[
        check("hAdapter not 0: no process context", INVALID_PARAMETER),
        check(
            "hAdapter not 0 and not an adapter handle in the caller's table",
            INVALID_PARAMETER,
        ),
        check(
            "the paired render adapter's device extension without the port's 'Dprt' \
             signature or of another version than 2",
            INVALID_PARAMETER,
        ),
    ],
    written_back: &[
        "Result, on success: the global feature database's answer when hAdapter is 0, \
         else that of the render adapter paired with hAdapter",
    ],
    pending: Pending::No,
    entry: Some("feature::nt_dxgk_is_feature_enabled"),
    gaps: "hAdapter 0: the simulation has no OS-wide feature configuration and answers \
           Version 0, Enabled 0 (24H2's DpiIsFeatureEnabled without an adapter reads the \
           global database); KnownFeature is the simulated OS's list of driver features; \
           the harness's simulated backend answers from the adapter's feature database \
           without the thunk's checks; a failed pairing lookup, adapter access or database \
           lookup (DxgkIsFeatureEnabled) returns its status, not catalog checks",
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
    entry: Some("adapter::dxgk_open_adapter_from_luid_impl"),
    gaps: "a remote session's LUID translation is not modelled; the process's adapter state is made at its first device, as 24H2 \
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
        check(
            "KMTQAITYPE_WDDM_1_2_CAPS: PrivateDriverDataSize not 12",
            INVALID_PARAMETER,
        ),
        check(
            "KMTQAITYPE_WDDM_1_2_CAPS: no render adapter (no caps reported)",
            UNSUCCESSFUL,
        ),
    ],
    written_back: &[
        "KMTQAITYPE_NODEMETADATA: NodeData, the driver's DXGK_NODEMETADATA unchanged \
         (Flags.ContextSchedulingSupported: the node is hardware-scheduled)",
        "KMTQAITYPE_WDDM_1_2_CAPS: the driver's PreemptionCaps, SupportNonVGA, \
         SupportSmoothRotation, SupportPerEngineTDR and SupportSurpriseRemovalInHibernation; \
         SupportCCD set; the display-side bits clear on a render-only adapter",
    ],
    pending: Pending::No,
    entry: Some("query_adapter_info::dxgk_query_adapter_info_impl"),
    gaps: "only KMTQAITYPE_NODEMETADATA and KMTQAITYPE_WDDM_1_2_CAPS are modelled (every \
           other type: STATUS_NOT_SUPPORTED): the UMD and the DLL ask for the first alone \
           (umd/src/nodes.rs), the harness's D3DKMT program for the second (Tdr.PerEngineCaps); \
           the harness asks for KMTQAITYPE_PHYSICALADAPTERDEVICEIDS and \
           KMTQAITYPE_ADAPTERTYPE on Windows only, its simulated backends read the machine",
};
