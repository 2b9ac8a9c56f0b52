//! What a case asks of a session's machine ([`SessionConfig`]) and how the simulation runs it.

/// How the simulated device and OS run. A real backend ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecMode {
    /// Device CMP thread, interrupt thread, DPC thread: real concurrency.
    Threaded,
    /// Everything on the calling thread, deterministic.
    Step,
}

/// A misbehaving driver the simulation can run in place of parts of the real one, to prove
/// that the OS side catches what Windows catches. Only simulation backends support these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misbehaviour {
    /// The ISR reports `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` naming a native fence handle the
    /// OS never handed out.
    IsrReportsUnknownFenceHandle,
    /// The ISR calls a PASSIVE_LEVEL callback (`DxgkCbAllocateContiguousMemory`) at DIRQL.
    IsrCallsPassiveCallback,
    /// `DxgkDdiResetEngine` adds this to the `LastAbortedFenceId` the real routine reports
    /// (TDR-06: `+1` after a hang of the last packet is S + 1, `-1` after a hardware-queue
    /// hang is C − 1). Process-wide in the simulation: sessions using it run one at a time.
    ResetEngineMisreportsAbortedFence(i32),
    /// The driver's table lacks `DxgkDdiResetEngine` while its caps say
    /// `SupportPerEngineTDR` (TDR-01: the OS must refuse the start).
    NoResetEngineDdi,
}

/// What a case needs from a session.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Threaded or step.
    pub mode: ExecMode,
    /// Number of adapters.
    pub adapters: usize,
    /// Whether the OS enables `DXGK_FEATURE_NATIVE_FENCE` (NF-10).
    pub native_fence_feature: bool,
    /// Whether the OS enables `DXGK_FEATURE_HWSCH`. Off, the OS schedules in
    /// software: kernel-mode DMA buffers only, reset through `DxgkDdiResetEngine` with
    /// `LastAbortedFenceId` (the TDR-03..09 cases); no hardware or user-mode queues.
    /// Unlike the other settings it is one the runbook's tester makes on a Windows test
    /// machine (`HwSchMode`), so any backend opens a session asking for it: one that builds
    /// its machine builds it so, and on another the case reads whether the node is
    /// hardware-scheduled ([`DmaContexts::node_hw_scheduled`](crate::backend::caps::dma_contexts::DmaContexts::node_hw_scheduled)) and is skipped, naming the
    /// setting, where it is.
    pub hwsch_feature: bool,
    /// GPU ticks of idleness after which an engine requests F1 (0 = never).
    pub idle_f1_ticks: u64,
    /// Replace part of the driver with a misbehaving one.
    pub misbehaviour: Option<Misbehaviour>,
    /// With two adapters: the first (the iGPU) has no native fences (NF-18 scenarios 2a/2b).
    pub legacy_igpu: bool,
    /// Physical doorbells of each adapter's device (`None`: the device's default). Fewer
    /// doorbells than user-mode queues forces victimisation (UM-20).
    pub doorbells: Option<u32>,
    /// At least this many physical doorbells on each adapter's device, so that this many
    /// user-mode queues never have to share (`None`: no minimum). Unlike `doorbells` it does
    /// not ask for a particular machine: a backend whose device has fewer refuses the session
    /// as unsupported. The simulation builds exactly this many (unless `doorbells` is set).
    pub min_doorbells: Option<u32>,
    /// At most this many physical doorbells on each adapter's device, so that more user-mode
    /// queues than this must share (`None`: no maximum). Like `min_doorbells` a bound a device
    /// meets or not; the simulation builds exactly this many (unless `doorbells` is set).
    pub max_doorbells: Option<u32>,
    /// The device's global doorbell mode: every queue rings one shared doorbell with its
    /// queue id (UM-21).
    pub global_doorbell: bool,
    /// Entries of every native fence log the OS creates (`None`: the OS's default, 84; a
    /// small number forces overflows, LOG-05).
    pub log_entries: Option<u64>,
    /// Engines (= nodes) of each adapter's device (`None`: the device's default, 2; TDR-02).
    pub engines: Option<u32>,
    /// Whether the device has `CAPS.PER_ENGINE_RESET` (`None`: the default, yes; TDR-01,
    /// TDR-09 without per-engine reset).
    pub per_engine_reset: Option<bool>,
    /// Windows' `ValidateWDDMCaps` policy (off by default, as on Windows): the WDDM 1.2
    /// mandatory-feature check of adapter start (docs/windows-bringup.md BR-52).
    pub validate_wddm_caps: bool,
    /// The OS disconnects every doorbell before F1 and D3 and on device loss, as Microsoft's
    /// pages describe (UM-13, UM-14); Windows 11 24H2 disconnects none
    /// (docs/windows-bringup.md §13). Only a backend that builds its machine can ask for it.
    pub os_disconnects_doorbells: bool,
    /// The OS tears a device down in the pages' order (UM-17, UM-18: per queue, then the
    /// allocations); Windows 11 24H2 frees the allocations first
    /// (docs/windows-bringup.md §13). Only a backend that builds its machine can ask for it.
    pub pages_teardown: bool,
}

impl SessionConfig {
    /// One adapter, step mode, native fences enabled, no idle power requests.
    pub fn new(mode: ExecMode) -> Self {
        Self {
            mode,
            adapters: 1,
            native_fence_feature: true,
            hwsch_feature: true,
            idle_f1_ticks: 0,
            misbehaviour: None,
            legacy_igpu: false,
            doorbells: None,
            min_doorbells: None,
            max_doorbells: None,
            global_doorbell: false,
            log_entries: None,
            engines: None,
            per_engine_reset: None,
            validate_wddm_caps: false,
            os_disconnects_doorbells: false,
            pages_teardown: false,
        }
    }

    /// Whether the configuration asks for a setting only a backend that builds its machine
    /// can honour: anything but the mode, the number of adapters, a misbehaviour, hardware
    /// scheduling (a tester's setting) and the device's doorbells and engines (what the test
    /// machine's `rvgpu-vfu` is started with, [`SessionConfig::device_mismatch`]) differs
    /// from [`SessionConfig::new`].
    pub fn configures_machine(&self) -> bool {
        !self.native_fence_feature
            || self.idle_f1_ticks != 0
            || self.legacy_igpu
            || self.log_entries.is_some()
            || self.per_engine_reset.is_some()
            || self.validate_wddm_caps
            || self.os_disconnects_doorbells
            || self.pages_teardown
    }

    /// Whether the configuration asks anything of the device's doorbells or engines.
    pub fn asks_device(&self) -> bool {
        self.doorbells.is_some()
            || self.min_doorbells.is_some()
            || self.max_doorbells.is_some()
            || self.global_doorbell
            || self.engines.is_some()
    }
}
