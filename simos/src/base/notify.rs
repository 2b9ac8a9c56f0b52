//! Interrupt notifications: what the driver reports with `DxgkCbNotifyInterrupt`, validated at
//! ISR time and processed by the OS when the driver's DPC calls `DxgkCbNotifyDpc`.

use rvgpu_ddi::interrupt::*;

/// A decoded `DXGKARGCB_NOTIFY_INTERRUPT_DATA`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    /// `DXGK_INTERRUPT_DMA_COMPLETED`.
    DmaCompleted {
        /// `SubmissionFenceId`.
        fence_id: u32,
        /// Node ordinal.
        node: u32,
        /// Engine ordinal.
        engine: u32,
    },
    /// `DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE` (UM-13).
    EngineStateChange {
        /// Node ordinal.
        node: u32,
        /// Engine ordinal.
        engine: u32,
        /// `DXGK_ENGINE_STATE` value.
        new_state: DXGK_ENGINE_STATE,
    },
    /// `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` (NF-14): `None` means "scan every native fence
    /// wait".
    NativeFenceSignaled {
        /// Node ordinal.
        node: u32,
        /// Engine ordinal.
        engine: u32,
        /// The reported handles, or `None` for a NULL array.
        fences: Option<Vec<usize>>,
        /// `Flags.EvaluateLegacyMonitoredFences`: with a NULL array, scan the legacy monitored
        /// fences too (hardware that cannot tell the two apart, NF-14).
        evaluate_legacy: bool,
        /// LOG-08: the adapter advertised `OptimizedNativeFenceSignaledInterrupt`,
        /// so the OS read `hHWQueue` and ignored the array (`fences` is then `None`).
        optimized: bool,
        /// The non-NULL `hHWQueue` (read only when `optimized`): the queue whose signal log to
        /// read; `None` = every queue on the engine.
        hw_queue: Option<usize>,
    },
    /// `DXGK_INTERRUPT_SCHEDULING_LOG_INTERRUPT`: the node's scheduling log reached
    /// its `InterruptEntry`.
    SchedulingLogInterrupt {
        /// Node ordinal.
        node: u32,
        /// Engine ordinal.
        engine: u32,
    },
    /// `DXGK_INTERRUPT_HWQUEUE_PAGE_FAULTED`: a hardware queue's GPU page fault.
    HwQueuePageFaulted {
        /// `FaultedHwQueue` (the driver's queue handle).
        queue: usize,
        /// `FaultedVirtualAddress`.
        va: u64,
        /// Node ordinal.
        node: u32,
        /// `PageFaultFlags`.
        flags: u32,
    },
    /// Another known interrupt type the simulation records without interpreting yet.
    Other {
        /// `DXGK_INTERRUPT_TYPE` value.
        interrupt_type: DXGK_INTERRUPT_TYPE,
    },
}

/// A notification the OS processed, with its order of arrival on the adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Processed {
    /// 0-based sequence number of the report on this adapter.
    pub seq: u64,
    /// What was reported.
    pub notification: Notification,
}

/// Whether the OS knows `t` at all (WDDM 3.2 header).
pub fn is_known_type(t: DXGK_INTERRUPT_TYPE) -> bool {
    (DXGK_INTERRUPT_DMA_COMPLETED..=DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE).contains(&t)
}

/// Whether a render-only adapter may report `t`: display interrupts (VSync, present progress,
/// Miracast) need video present sources, which a render-only adapter does not have (0x119
/// subtype 0x7 `REPORT_VSYNC_ON_RENDER_ONLY_ADAPTER` is Windows' own check for VSync).
pub fn allowed_on_render_only(t: DXGK_INTERRUPT_TYPE) -> bool {
    !matches!(
        t,
        DXGK_INTERRUPT_CRTC_VSYNC
            | DXGK_INTERRUPT_DISPLAYONLY_VSYNC
            | DXGK_INTERRUPT_DISPLAYONLY_PRESENT_PROGRESS
            | DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY
            | DXGK_INTERRUPT_MICACAST_CHUNK_PROCESSING_COMPLETE
            | DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY2
            | DXGK_INTERRUPT_CRTC_VSYNC_WITH_MULTIPLANE_OVERLAY3
    )
}
