//! The power phase: what \[D\] `DXGADAPTER::InitializePowerManagement` checks of the driver's
//! runtime power answers (BR-100 to BR-106, BR-109), late in `DXGADAPTER::Initialize` and only
//! with `SupportRuntimePowerManagement`. The queries and their order are `dxgkrnl::power`'s.

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_ddi::power::*;
use rvgpu_ddi::NTSTATUS;

use super::rule::{Facts, Rule, Violation};

/// `InitializePowerManagement` keeps at most 0xFFFF components (\[D\]: "Miniport returned
/// invalid number of power components").
pub const MAX_COMPONENTS: u32 = 0xFFFF;

/// `ComponentFlags` bits from bit 5 up are reserved (\[D\]: `Flags >= 0x20` → "Reserved flags
/// are not zero").
const FLAGS_RESERVED_FROM: u32 = 0x20;

const SOURCE: &str = "[D] InitializePowerManagement";
const INVALID: NTSTATUS = STATUS_INVALID_PARAMETER;

/// The `NUMPOWERCOMPONENTS` answer: the components of all physical adapters together, or the
/// status the query failed with.
pub struct Count(pub Result<u64, NTSTATUS>);

impl Facts for Count {
    fn driver_status(&self) -> Option<NTSTATUS> {
        self.0.err()
    }
}

/// BR-100's rows.
pub const COUNT_RULES: &[Rule<Count>] = &[
    Rule::driver_status(
        "BR-100",
        SOURCE,
        "`NUMPOWERCOMPONENTS` (6) per physical adapter succeeds (0: no runtime power management)",
        |c| {
            c.0.err().map(|status| {
                format!(
                    "DXGKQAITYPE_NUMPOWERCOMPONENTS failed ({:#010x})",
                    status as u32
                )
            })
        },
    ),
    // "Miniport returned invalid number of power components".
    Rule::refuse(
        "BR-100",
        SOURCE,
        "at most 0xFFFF components",
        INVALID,
        |c| {
            let total = *c.0.as_ref().ok()?;
            (total > u64::from(MAX_COMPONENTS))
                .then(|| format!("{total} power components (at most {MAX_COMPONENTS})"))
        },
    ),
];

/// One `POWERCOMPONENTINFO` answer, and the memory-refresh component seen before it.
pub struct Component {
    /// The component's index.
    pub index: u32,
    /// The answer, or the status the query failed with.
    pub answer: Result<DXGK_POWER_RUNTIME_COMPONENT, NTSTATUS>,
    /// The index of an earlier `MEMORY_REFRESH` component.
    pub memory_refresh: Option<u32>,
}

impl Facts for Component {
    fn driver_status(&self) -> Option<NTSTATUS> {
        self.answer.err()
    }
}

impl Component {
    fn answered(&self) -> Option<&DXGK_POWER_RUNTIME_COMPONENT> {
        self.answer.as_ref().ok()
    }
}

/// The rows of one component's answer, in the order `InitializePowerManagement` checks them
/// (each quotes the message the checked build traces).
pub const COMPONENT_RULES: &[Rule<Component>] = &[
    Rule::driver_status(
        "BR-101",
        SOURCE,
        "`POWERCOMPONENTINFO` (7) per component (index: component low word, adapter high word, as \
         SetPowerComponentFState gets it), 336 bytes, succeeds",
        |k| {
            k.answer.err().map(|status| {
                format!(
                    "DXGKQAITYPE_POWERCOMPONENTINFO for component {} failed ({:#010x})",
                    k.index, status as u32
                )
            })
        },
    ),
    // "Miniport returned invalid number of F states for component" (StateCount - 1 > 7).
    Rule::refuse("BR-102", SOURCE, "`StateCount` 1 to 8", INVALID, |k| {
        let n = k.answered()?.StateCount;
        (n == 0 || n as usize > DXGK_MAX_F_STATES)
            .then(|| format!("component {}: StateCount {n} (1..=8)", k.index))
    }),
    // "Reserved flags are not zero".
    Rule::refuse(
        "BR-103",
        SOURCE,
        "no reserved flag (< 0x20)",
        INVALID,
        |k| {
            let flags = k.answered()?.Flags.Value;
            (flags >= FLAGS_RESERVED_FROM)
                .then(|| format!("component {}: reserved flag bits set ({flags:#x})", k.index))
        },
    ),
    Rule::refuse(
        "BR-103",
        SOURCE,
        "`ActiveInD3` only on `MEMORY`/`SHARED` with 2 F-states, F1 latency 0, no providers",
        INVALID,
        active_in_d3,
    ),
    // "Invalid component ProviderCount".
    Rule::refuse(
        "BR-103",
        SOURCE,
        "without `ActiveInD3`, `ProviderCount` at most 16",
        INVALID,
        |k| {
            let c = k.answered()?;
            (!c.Flags.is_set(DXGK_POWER_COMPONENT_FLAGS::ActiveInD3)
                && c.ProviderCount as usize > DXGK_MAX_POWER_COMPONENT_PROVIDERS)
                .then(|| {
                    format!(
                        "component {}: ProviderCount {} (at most 16)",
                        k.index, c.ProviderCount
                    )
                })
        },
    ),
    // "DXGK_POWER_COMPONENT_MEMORY_REFRESH component is defined second time".
    Rule::refuse(
        "BR-104",
        SOURCE,
        "at most one `MEMORY_REFRESH`",
        INVALID,
        |k| {
            let c = k.answered()?;
            let first = k.memory_refresh?;
            (c.ComponentMapping.ComponentType == DXGK_POWER_COMPONENT_MEMORY_REFRESH).then(|| {
                format!(
                    "component {}: a second MEMORY_REFRESH component (first: {first})",
                    k.index
                )
            })
        },
    ),
    // "F state count for the DXGK_POWER_COMPONENT_D3_TRANSITION component must be 1 or 2".
    Rule::refuse(
        "BR-104",
        SOURCE,
        "a `D3_TRANSITION` component has 1 or 2 F-states",
        INVALID,
        |k| {
            let c = k.answered()?;
            (c.ComponentMapping.ComponentType == DXGK_POWER_COMPONENT_D3_TRANSITION
                && c.StateCount > 2)
                .then(|| {
                    format!(
                        "component {}: D3_TRANSITION with {} F-states (1 or 2)",
                        k.index, c.StateCount
                    )
                })
        },
    ),
    // "TransitionLatency and ResidencyRequirement must be zero for the F0 state".
    Rule::refuse(
        "BR-105",
        SOURCE,
        "F0: latency and residency 0 or unknown",
        INVALID,
        |k| {
            let f0 = k.answered()?.States.first()?;
            let zero_or_unknown = |v: u64| v == 0 || v == DXGK_FSTATE_UNKNOWN_TIME;
            (!zero_or_unknown(f0.TransitionLatency) || !zero_or_unknown(f0.ResidencyRequirement))
                .then(|| {
                    format!(
                        "component {}: F0 TransitionLatency/ResidencyRequirement not 0",
                        k.index
                    )
                })
        },
    ),
    // "NominalPower must not be zero for the F0 state".
    Rule::refuse("BR-105", SOURCE, "F0: power not 0", INVALID, |k| {
        let f0 = k.answered()?.States.first()?;
        (f0.NominalPower == 0).then(|| format!("component {}: F0 NominalPower 0", k.index))
    }),
    Rule::refuse(
        "BR-105",
        "[D] InitializePowerManagement; [M] DXGK_POWER_RUNTIME_STATE",
        "each higher F-state no more power, no less latency (unknown values not compared)",
        INVALID,
        higher_states,
    ),
];

/// BR-103's `ActiveInD3` arm.
fn active_in_d3(k: &Component) -> Option<String> {
    let c = k.answered()?;
    if !c.Flags.is_set(DXGK_POWER_COMPONENT_FLAGS::ActiveInD3) {
        return None;
    }
    let (i, ty) = (k.index, c.ComponentMapping.ComponentType);
    if ty != DXGK_POWER_COMPONENT_MEMORY && ty != DXGK_POWER_COMPONENT_SHARED {
        Some(format!(
            "component {i}: ActiveInD3 on a type-{ty} component (memory or shared only)"
        ))
    } else if c.StateCount != 2 {
        Some(format!(
            "component {i}: ActiveInD3 with {} F-states (must be 2)",
            c.StateCount
        ))
    } else if c.States.get(1).is_some_and(|f1| f1.TransitionLatency != 0) {
        Some(format!(
            "component {i}: ActiveInD3 with a non-zero F1 TransitionLatency"
        ))
    } else {
        (c.ProviderCount != 0).then(|| format!("component {i}: ActiveInD3 with providers"))
    }
}

/// BR-105 past F0: "NominalPower must be decreasing for higher F states", "TransitionLatency
/// must be increasing for higher F states" (all-ones is unknown and skipped).
fn higher_states(k: &Component) -> Option<String> {
    let c = k.answered()?;
    let states = c.States.get(..c.StateCount as usize).unwrap_or(&[]);
    for (n, pair) in states.windows(2).enumerate() {
        let (prev, s, f) = (&pair[0], &pair[1], n + 1);
        if s.NominalPower != DXGK_FSTATE_UNKNOWN_POWER
            && prev.NominalPower != DXGK_FSTATE_UNKNOWN_POWER
            && s.NominalPower > prev.NominalPower
        {
            return Some(format!(
                "component {}: F{f} NominalPower above F{n}'s",
                k.index
            ));
        }
        if s.TransitionLatency != DXGK_FSTATE_UNKNOWN_TIME
            && prev.TransitionLatency != DXGK_FSTATE_UNKNOWN_TIME
            && s.TransitionLatency < prev.TransitionLatency
        {
            return Some(format!(
                "component {}: F{f} TransitionLatency below F{n}'s",
                k.index
            ));
        }
    }
    None
}

/// What a component powers, as VidSch maps it.
pub struct Mapping {
    /// The component's index.
    pub index: u32,
    /// `DXGK_POWER_COMPONENT_MAPPING::ComponentType`.
    pub ty: i32,
    /// The mapping's one UINT: an engine's `NodeIndex`, a monitor's `VidPnSourceID`.
    pub target: u32,
    /// The adapter's nodes.
    pub nodes: u32,
    /// The adapter's VidPN sources.
    pub sources: u32,
}

impl Facts for Mapping {}

/// BR-106 (\[D\] `ADAPTER_RENDER::InitializePowerManagement` →
/// `VidSchInitializeComponentPowerManagement`: "VidSchInitializeComponentPowerManagement
/// failed").
pub const MAPPING_RULES: &[Rule<Mapping>] = &[
    Rule::refuse(
        "BR-106",
        "[D] VidSchInitializeComponentPowerManagement",
        "`ENGINE` components name a node",
        INVALID,
        |m| {
            (m.ty == DXGK_POWER_COMPONENT_ENGINE && m.target >= m.nodes).then(|| {
                format!(
                    "component {}: engine component for node {} of {}",
                    m.index, m.target, m.nodes
                )
            })
        },
    ),
    Rule::refuse(
        "BR-106",
        "[D] VidSchInitializeComponentPowerManagement",
        "`MONITOR_REFRESH` components name a source",
        INVALID,
        |m| {
            (m.ty == DXGK_POWER_COMPONENT_MONITOR_REFRESH && m.target >= m.sources).then(|| {
                format!(
                    "component {}: monitor refresh of source {} of {}",
                    m.index, m.target, m.sources
                )
            })
        },
    ),
];

/// An engine component's answered `POWERCOMPONENTPSTATEINFO` (9).
pub struct PStates {
    /// The component's index.
    pub index: u32,
    /// The answer (a failed query is tolerated and not checked).
    pub p: DXGK_POWER_P_COMPONENT,
}

impl Facts for PStates {}

/// BR-109: "P-State StateCount cannot be larger than DXGK_MAX_P_STATES", "P-State cannot
/// specify 0 operating frequency", "P-States must have monotonically decreasing operating
/// frequency".
pub const P_STATE_RULES: &[Rule<PStates>] = &[
    Rule::refuse(
        "BR-109",
        SOURCE,
        "`POWERCOMPONENTPSTATEINFO` (9) per `ENGINE` component (WDDM 1.3+, a failure \
         tolerated): at most 32 states",
        INVALID,
        |s| {
            let n = s.p.StateCount;
            (n as usize > DXGK_MAX_P_STATES)
                .then(|| format!("component {}: {n} P-states (at most 32)", s.index))
        },
    ),
    Rule::refuse(
        "BR-109",
        SOURCE,
        "each P-state's frequency non-zero and not above the previous one's",
        INVALID,
        |s| {
            let states = s.p.States.get(..s.p.StateCount as usize).unwrap_or(&[]);
            for (k, st) in states.iter().enumerate() {
                if st.OperatingFrequency == 0 {
                    return Some(format!("component {}: P{k} has frequency 0", s.index));
                }
                let prev = k.checked_sub(1).and_then(|j| states.get(j));
                if prev.is_some_and(|p| st.OperatingFrequency > p.OperatingFrequency) {
                    return Some(format!(
                        "component {}: P{k} faster than P{}",
                        s.index,
                        k - 1
                    ));
                }
            }
            None
        },
    ),
];

/// BR-100 over the count answer.
pub fn check_count(answer: Result<u64, NTSTATUS>) -> Option<Violation> {
    super::rule::first(COUNT_RULES, &Count(answer))
}

/// BR-101 to BR-105 over one component's answer.
pub fn check_component(c: &Component) -> Option<Violation> {
    super::rule::first(COMPONENT_RULES, c)
}

/// BR-106 over one component's mapping.
pub fn check_mapping(m: &Mapping) -> Option<Violation> {
    super::rule::first(MAPPING_RULES, m)
}

/// BR-109 over one engine component's P-states.
pub fn check_p_states(index: u32, p: &DXGK_POWER_P_COMPONENT) -> Option<Violation> {
    super::rule::first(P_STATE_RULES, &PStates { index, p: *p })
}
