//! The rule table: one row per routine the simulated OS checks (every DDI it calls, every
//! callback the driver calls into it) and per DDI slot a start-up rule names, holding every
//! rule of that routine in one place:
//!
//! - **IRQL**: the levels Windows calls the DDI at, or the driver may call the callback at, with
//!   the Microsoft reference page the rule comes from (the "IRQL" line of its Requirements
//!   table); `crate::adapter::irql::check` enforces it on every call;
//! - **wrapper**: whether Windows calls the DDI through one of Dxgkrnl's IRQL-comparing `Ddi*`
//!   wrappers ([`Wrapper`]);
//! - **slot**: the start-up rule that requires the driver's table to fill the slot ([`Slot`]);
//! - **statuses**: the statuses the DDI's wrapper accepts; another one goes to the adapter's
//!   triage log ([`Statuses`]).
//!
//! A DDI's rules are its row of the DDI catalog (`rvgpu_ddi::catalog`), where each rule names
//! its source: a DDI's row here is its name alone, which places it in [`Routine`]'s order. The
//! callbacks' rows are written here; the comment above a row says where a rule that is not on
//! the reference page comes from. The [`Routine`] enum is generated from the same rows, in
//! their order.

use rvgpu_ddi::catalog::{self, Ddi, Level};
use rvgpu_kmd::platform::Irql;

pub use rvgpu_ddi::catalog::{
    Slot, Statuses, Wrapper, MS, STATUS_BUFFER_OVERFLOW, STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST,
};
use rvgpu_ddi::NTSTATUS;

/// The levels a routine may run at, inclusive, and where the rule is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqlRule {
    /// Lowest allowed level.
    pub min: Irql,
    /// Highest allowed level.
    pub max: Irql,
    /// Microsoft reference page (appended to [`MS`]).
    pub reference: &'static str,
}

/// Every rule of one routine or slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// The Microsoft name (the slot's name in `DRIVER_INITIALIZATION_DATA` for a DDI).
    pub name: &'static str,
    /// The IRQL rule; `None` for a slot the simulated OS never calls.
    pub irql: Option<IrqlRule>,
    /// How Windows wraps the call.
    pub wrapper: Wrapper,
    /// The start-up rule that requires the slot.
    pub slot: Slot,
    /// The statuses the wrapper accepts (`None`: all).
    pub statuses: Option<Statuses>,
}

const P: Irql = Irql::Passive;
const D: Irql = Irql::Dispatch;
const DIRQL: Irql = Irql::Device;

/// A routine the simulated OS calls or is called at, between `min` and `max`.
const fn at(min: Irql, max: Irql, reference: &'static str) -> Rules {
    Rules {
        name: "",
        irql: Some(IrqlRule {
            min,
            max,
            reference,
        }),
        wrapper: Wrapper::Unchecked,
        slot: Slot::None,
        statuses: None,
    }
}

const fn level(l: Level) -> Irql {
    match l {
        Level::Passive => Irql::Passive,
        Level::Dispatch => Irql::Dispatch,
        Level::Device => Irql::Device,
    }
}

/// The rules of catalog row `d`.
const fn from_catalog(d: &Ddi) -> Rules {
    Rules {
        name: d.name,
        irql: match d.irql {
            Some(r) => Some(IrqlRule {
                min: level(r.min),
                max: level(r.max),
                reference: d.page,
            }),
            None => None,
        },
        wrapper: d.wrapper,
        slot: d.slot,
        statuses: d.statuses,
    }
}

/// The rules of the catalog's row `name` (a compile error if there is none).
const fn catalog_row(name: &'static str) -> Rules {
    match catalog::find(name) {
        Some(d) => from_catalog(d),
        None => panic!("a DDI without a catalog row"),
    }
}

impl Rules {
    const fn named(self, name: &'static str) -> Self {
        Self { name, ..self }
    }
}

/// One row of [`RULES`]: the catalog's for a DDI, `$row` for a callback.
macro_rules! row {
    ($name:ident) => {
        catalog_row(stringify!($name))
    };
    ($name:ident, $row:expr) => {
        $row.named(stringify!($name))
    };
}

/// Generates [`Routine`] from the `calls` rows and [`RULES`] from all rows, `calls` first (so
/// that `RULES[routine as usize]` is the routine's row). A row that is a name alone is a DDI:
/// its rules are its catalog row.
macro_rules! rules {
    (
        calls { $( $(#[$doc:meta])* $name:ident $(=> $row:expr)?; )* }
        slots_only { $( $slot:ident, )* }
    ) => {
        /// A routine whose rules the simulation checks: a DDI (OS → driver) or a callback
        /// (driver → OS).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(clippy::enum_variant_names)] // The names are Microsoft's.
        pub enum Routine {
            $( $(#[$doc])* $name, )*
        }

        impl Routine {
            /// Every routine, in table order.
            pub const ALL: &'static [Routine] = &[ $( Routine::$name, )* ];
        }

        /// The rule table: the routines in [`Routine`] order, then the slots only start-up or
        /// status rules name.
        pub const RULES: &[Rules] = &[
            $( row!($name $(, $row)?), )*
            $( catalog_row(stringify!($slot)), )*
        ];
    };
}

rules! {
    calls {
        /// The driver's `DriverEntry` (`DRIVER_INITIALIZE`).
        DriverEntry => at(P, P, "wdm/nc-wdm-driver_initialize");
        // DDIs the OS calls.
        DxgkDdiAddDevice;
        DxgkDdiStartDevice;
        DxgkDdiStopDevice;
        DxgkDdiRemoveDevice;
        DxgkDdiDispatchIoRequest;
        DxgkDdiInterruptRoutine;
        DxgkDdiDpcRoutine;
        DxgkDdiQueryChildRelations;
        DxgkDdiQueryChildStatus;
        DxgkDdiQueryDeviceDescriptor;
        DxgkDdiSetPowerState;
        DxgkDdiNotifyAcpiEvent;
        DxgkDdiResetDevice;
        DxgkDdiNotifySurpriseRemoval;
        DxgkDdiUnload;
        DxgkDdiControlEtwLogging;
        DxgkDdiQueryInterface;
        DxgkDdiQueryFeatureSupport;
        DxgkDdiQueryFeatureInterface;
        DxgkDdiBuildTestCommandBuffer;
        DxgkDdiQueryAdapterInfo;
        DxgkDdiCreateNativeFence;
        DxgkDdiOpenNativeFence;
        DxgkDdiCloseNativeFence;
        DxgkDdiDestroyNativeFence;
        DxgkDdiUpdateMonitoredValues;
        DxgkDdiUpdateCurrentValuesFromCpu;
        DxgkDdiEscape;
        // User-mode submission: devices, contexts, queues, doorbells, power.
        DxgkDdiGetNodeMetadata;
        DxgkDdiCreateDevice;
        DxgkDdiDestroyDevice;
        DxgkDdiCreateContext;
        DxgkDdiDestroyContext;
        DxgkDdiSuspendContext;
        DxgkDdiResumeContext;
        DxgkDdiCreateHwQueue;
        DxgkDdiDestroyHwQueue;
        DxgkDdiSubmitCommandToHwQueue;
        DxgkDdiCreateDoorbell;
        DxgkDdiConnectDoorbell;
        DxgkDdiDisconnectDoorbell;
        DxgkDdiDestroyDoorbell;
        DxgkDdiNotifyWorkSubmission;
        DxgkDdiSetPowerComponentFState;
        DxgkDdiPowerRuntimeControlRequest;
        /// The driver's `SynchronizeRoutine` passed to `DxgkCbSynchronizeExecution`.
        SynchronizeRoutine => at(DIRQL, DIRQL, "wdm/nc-wdm-ksynchronize_routine");
        // Callbacks the driver calls.
        DxgkCbGetDeviceInformation =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkcb_get_device_information");
        DxgkCbMapMemory => at(P, P, "dispmprt/nc-dispmprt-dxgkcb_map_memory");
        DxgkCbUnmapMemory => at(P, P, "dispmprt/nc-dispmprt-dxgkcb_unmap_memory");
        // "IRQL: Any level".
        DxgkCbQueueDpc => at(P, DIRQL, "dispmprt/nc-dispmprt-dxgkcb_queue_dpc");
        // Called from the ISR (or a SynchronizeExecution routine): device IRQL.
        DxgkCbNotifyInterrupt => at(DIRQL, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkcb_notify_interrupt");
        // Called from DxgkDdiDpcRoutine.
        DxgkCbNotifyDpc => at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkcb_notify_dpc");
        // "IRQL <= DISPATCH_LEVEL".
        DxgkCbSynchronizeExecution =>
            at(P, D, "dispmprt/nc-dispmprt-dxgkcb_synchronize_execution");
        DxgkCbAllocateContiguousMemory =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkcb_allocate_contiguous_memory");
        DxgkCbFreeContiguousMemory =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkcb_free_contiguous_memory");
        DxgkCbQueryServices => at(P, P, "dispmprt/nc-dispmprt-dxgkcb_query_services");
        DxgkCbIsFeatureEnabled => at(P, P, "dispmprt/nc-dispmprt-dxgkcb_isfeatureenabled2");
        // The page states no IRQL; the OS reads registry-derived policy and updates the
        // adapter's feature bits, as its sibling feature callbacks do at PASSIVE_LEVEL.
        DxgkCbQueryFeatureSupport => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_queryfeaturesupport");
        DxgkCbQueryFeatureInterface =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_queryfeatureinterface");
        NativeFenceGetOSCaps =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcbint_featureinterface_nativefence_getoscaps");
        // "can be called at any IRQL".
        DxgkCbLogEtwEvent => at(P, DIRQL, "dispmprt/nc-dispmprt-dxgkcb_log_etw_event");
        DxgkCbDisconnectDoorbell => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_disconnectdoorbell");
        // The page states no IRQL; 24H2's `K:DxgGetHandleDataCB` @0x1404111E0 stops a WDDM 2.3+
        // driver calling it at DISPATCH_LEVEL or above (VIDEO_DXGKRNL_FATAL_ERROR).
        DxgkCbGetHandleData => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_gethandledata");
        DxgkCbSetPowerComponentActive =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentactive");
        // "IRQL <= DISPATCH_LEVEL ... DISPATCH_LEVEL only if the component type is
        // DXGK_POWER_COMPONENT_OTHER": an engine component's is PASSIVE_LEVEL.
        DxgkCbSetPowerComponentIdle =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentidle");
        // PINTERFACE_REFERENCE / PINTERFACE_DEREFERENCE: "IRQL <= DISPATCH_LEVEL".
        /// `INTERFACE::InterfaceReference` of an interface the OS handed out.
        InterfaceReference => at(P, D, "wdm/nc-wdm-pinterface_reference");
        /// `INTERFACE::InterfaceDereference`.
        InterfaceDereference => at(P, D, "wdm/nc-wdm-pinterface_dereference");
        // Legacy (kernel-mode) scheduling and TDR (docs/tdr.md#the-simulated-os).
        DxgkDdiSubmitCommand;
        DxgkDdiSubmitCommandVirtual;
        DxgkDdiPreemptCommand;
        DxgkDdiQueryCurrentFence;
        DxgkDdiBuildPagingBuffer;
        DxgkDdiQueryDependentEngineGroup;
        DxgkDdiQueryEngineStatus;
        DxgkDdiResetEngine;
        DxgkDdiCollectDbgInfo;
        DxgkDdiCollectDbgInfo2;
        DxgkDdiResetFromTimeout;
        DxgkDdiRestartFromTimeout;
        DxgkCbInvalidateHwContext => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_invalidatehwcontext");
        // Hardware scheduling (`crate::vidsch::hws`).
        DxgkDdiSetupPriorityBands;
        DxgkDdiSetSchedulingLogBuffer;
        DxgkDdiSetContextSchedulingProperties;
        DxgkDdiResetHwEngine;
        DxgkDdiResumeHwEngine;
        // Native fence logs and GPU clock.
        DxgkDdiSetNativeFenceLogBuffer;
        DxgkDdiUpdateNativeFenceLogs;
        DxgkDdiCalibrateGpuClock;
        // GpuMmu memory model (docs/memory.md).
        DxgkDdiCreateProcess;
        DxgkDdiDestroyProcess;
        DxgkDdiSetRootPageTable;
        DxgkDdiGetRootPageTableSize;
        DxgkDdiCreateAllocation;
        DxgkDdiDestroyAllocation;
        DxgkDdiDescribeAllocation;
        DxgkDdiGetStandardAllocationDriverData;
        DxgkDdiOpenAllocation;
        DxgkDdiCloseAllocation;
    }
    slots_only {
        DxgkDdiQueryConnectionChange,
        DxgkDdiAcquireSwizzlingRange,
        DxgkDdiReleaseSwizzlingRange,
        DxgkDdiPatch,
        DxgkDdiRender,
        DxgkDdiRenderKm,
        DxgkDdiPresent,
        DxgkDdiCreateOverlay,
        DxgkDdiUpdateOverlay,
        DxgkDdiFlipOverlay,
        DxgkDdiDestroyOverlay,
        DxgkDdiControlInterrupt,
    }
}

/// Every routine row has an IRQL rule (checked when the crate compiles, so [`Routine::rule`]
/// cannot miss).
const _: () = {
    let mut i = 0;
    while i < Routine::ALL.len() {
        assert!(RULES[i].irql.is_some());
        i += 1;
    }
};

impl Routine {
    /// The routine's row of [`RULES`].
    pub const fn rules(self) -> &'static Rules {
        &RULES[self as usize]
    }

    /// The routine's IRQL rule.
    pub const fn rule(self) -> IrqlRule {
        match self.rules().irql {
            Some(r) => r,
            // Unreachable: the assertion above checks every routine row when compiling.
            None => panic!("a routine row without an IRQL rule"),
        }
    }

    /// Full URL of the reference page of [`Routine::rule`].
    pub fn reference_url(self) -> String {
        format!("{MS}{}", self.rule().reference)
    }

    /// Small integer identifying the routine in bug-check parameters.
    pub const fn id(self) -> u64 {
        self as u64
    }
}

/// How many rows `slot` marks (the length of [`slot_names`]).
pub const fn slot_count(slot: Slot) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < RULES.len() {
        if RULES[i].slot as u8 == slot as u8 {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of the rows `slot` marks, in table order, as a constant (`N` is
/// [`slot_count`]`(slot)`).
pub const fn slot_names<const N: usize>(slot: Slot) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut j) = (0, 0);
    while i < RULES.len() {
        if RULES[i].slot as u8 == slot as u8 {
            out[j] = RULES[i].name;
            j += 1;
        }
        i += 1;
    }
    out
}

/// The row of the DDI or slot called `name`.
pub fn by_name(name: &str) -> Option<&'static Rules> {
    RULES.iter().find(|r| r.name == name)
}

/// The names of the slots `slot` marks, in table order.
pub fn slots(slot: Slot) -> impl Iterator<Item = &'static str> {
    RULES.iter().filter(move |r| r.slot == slot).map(|r| r.name)
}

/// Whether the wrapper of `ddi` accepts `status` (BR-23: anything else is logged to the triage
/// log as an invalid status, not refused). A DDI without a status rule accepts every status.
pub fn status_allowed(ddi: &str, status: NTSTATUS) -> bool {
    by_name(ddi)
        .and_then(|r| r.statuses)
        .is_none_or(|s| s.allowed.contains(&status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_routine_is_its_own_row() {
        for (i, r) in Routine::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
            assert_eq!(r.rules().name, format!("{r:?}"));
        }
    }

    #[test]
    fn names_are_unique() {
        for (i, r) in RULES.iter().enumerate() {
            assert!(
                RULES.iter().skip(i + 1).all(|o| o.name != r.name),
                "{}",
                r.name
            );
        }
    }

    /// Every catalog row with a rule the OS enforces (an IRQL, a start-up slot rule or a
    /// status rule) is a row of the table, with the catalog's rules.
    #[test]
    fn the_table_has_every_catalog_row_the_os_enforces() {
        for d in catalog::CATALOG {
            if d.irql.is_some() || d.slot != Slot::None || d.statuses.is_some() {
                assert_eq!(by_name(d.name), Some(&from_catalog(d)), "{}", d.name);
            }
        }
    }

    #[test]
    fn only_routines_have_irql_rules() {
        assert!(RULES
            .iter()
            .skip(Routine::ALL.len())
            .all(|r| r.irql.is_none()));
    }
}
