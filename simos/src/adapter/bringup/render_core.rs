//! The render-core phase: what \[D\] `ADAPTER_RENDER::Initialize` and `DXGADAPTER::Initialize`
//! check once the nodes, user-mode submission and VidMm are set up, before power management
//! (BR-57, then BR-54).

use rvgpu_ddi::adapter::DXGKARG_HISTORYBUFFERPRECISION;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;

use super::rule::{slot, when, Facts, Rule, Violation, STATUS_DEVICE_CONFIGURATION_ERROR};

/// What the render-core rows read.
pub struct RenderCore {
    /// `DRIVER_INITIALIZATION_DATA::Version`.
    version: u32,
    /// `DxgkDdiCalibrateGpuClock` and `DxgkDdiSetStablePowerState` both filled.
    clock_ddis: bool,
    /// The `HISTORYBUFFERPRECISION` answer; `None` when the query failed (tolerated).
    history: Option<DXGKARG_HISTORYBUFFERPRECISION>,
}

impl Facts for RenderCore {}

/// The render-core phase's rows, in Windows' order.
pub const RENDER_CORE_RULES: &[Rule<RenderCore>] = &[
    Rule::refuse(
        "BR-57",
        "[D] ADAPTER_RENDER::Initialize; [H] `WDDM_RENDER_ONLY_DDI_CHECKLIST.md`",
        "`HISTORYBUFFERPRECISION` is 0 or 32 to 64 bits; a failed query is tolerated",
        STATUS_DEVICE_CONFIGURATION_ERROR,
        |r| {
            let bits = r.history?.PrecisionBits;
            (bits != 0 && !(32..=64).contains(&bits))
                .then(|| format!("HISTORYBUFFERPRECISION {bits} bits"))
        },
    ),
    // After the render core was created and initialised (one operand lost by the decompiler;
    // the render core from its later use).
    Rule::refuse(
        "BR-54",
        "[D] DXGADAPTER::Initialize",
        "from interface 0x5008, a render core needs DxgkDdiCalibrateGpuClock and \
         DxgkDdiSetStablePowerState",
        STATUS_INVALID_PARAMETER,
        |r| {
            when(
                r.version >= 0x5008 && !r.clock_ddis,
                "DxgkDdiCalibrateGpuClock and DxgkDdiSetStablePowerState are both required",
            )
        },
    ),
];

/// The render-core rows over the table and the history-precision answer (`None`: the query
/// failed); the first that fires.
pub fn check_render_core(
    t: &DRIVER_INITIALIZATION_DATA,
    history: Option<DXGKARG_HISTORYBUFFERPRECISION>,
) -> Option<Violation> {
    let r = RenderCore {
        version: t.Version,
        clock_ddis: slot!(DxgkDdiCalibrateGpuClock).filled(t)
            && slot!(DxgkDdiSetStablePowerState).filled(t),
        history,
    };
    super::rule::first(RENDER_CORE_RULES, &r)
}
