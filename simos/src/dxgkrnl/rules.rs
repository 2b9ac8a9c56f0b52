//! The rule table: one row per routine the simulated OS checks (every DDI it calls, every
//! callback the driver calls into it) and per DDI slot a start-up rule names, holding every
//! rule of that routine in one place:
//!
//! - **IRQL**: the levels Windows calls the DDI at, or the driver may call the callback at, with
//!   the Microsoft reference page the rule comes from (the "IRQL" line of its Requirements
//!   table); `crate::dxgkrnl::irql::check` enforces it on every call;
//! - **wrapper**: whether Windows calls the DDI through one of Dxgkrnl's IRQL-comparing `Ddi*`
//!   wrappers ([`Wrapper`]);
//! - **slot**: the start-up rule that requires the driver's table to fill the slot ([`Slot`]);
//! - **statuses**: the statuses the DDI's wrapper accepts; another one goes to the adapter's
//!   triage log ([`Statuses`]).
//!
//! The comment above a row says where a rule that is not on the reference page comes from. The
//! [`Routine`] enum is generated from the same rows, in their order.

use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;
use rvgpu_kmd::platform::Irql;

/// `STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST` (ntstatus.h 0xC01E0116): the one failure status
/// Dxgkrnl's `DdiSetPowerComponentFState` wrapper accepts besides success.
pub const STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST: NTSTATUS = 0xC01E_0116_u32 as NTSTATUS;

/// `STATUS_BUFFER_OVERFLOW` (ntstatus.h 0x80000005; a warning: not `NT_SUCCESS`).
pub const STATUS_BUFFER_OVERFLOW: NTSTATUS = 0x8000_0005_u32 as NTSTATUS;

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

/// How Windows wraps a DDI call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapper {
    /// Through one of Dxgkrnl's `DXGADAPTER` / `ADAPTER_RENDER` `Ddi*` wrappers, which compare
    /// the IRQL before and after the call and write a Critical watchdog record 0x113 / 0x10 on a
    /// mismatch (BR-24, docs/windows-bringup.md §15 Q10). Each DDI marked so has such a wrapper
    /// in the 22631 pseudocode ([D]: 165 wrappers carry `WdLogSingleEntry5(0, 0x113, 0x10, …)`,
    /// among them `DdiQueryAdapterInfo`, `DdiCreateHwQueue`, `DdiBuildPagingBuffer`,
    /// `DdiCreateProcess`), `DxgkDdiCreateNativeFence` in the WDDM 3.2 builds ([D24]
    /// `ADAPTER_RENDER::DdiCreateNativeFence` @ 0x140425BF0).
    IrqlChecked,
    /// No IRQL comparison known: the PnP-layer wrappers (`DpiDxgkDdiAddDevice`,
    /// `DpiDxgkDdiStartDevice`, … `DpiDxgkDdiUnload`, `DpiDxgkDdiQueryInterface`) have none,
    /// DDIs not confirmed in either are left here, and callbacks have no DDI wrapper.
    Unchecked,
}

/// The start-up rule that requires a slot of the driver's table (docs/windows-bringup.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// No list rule names the slot.
    None,
    /// BR-02 ([D] `DpiInitializeInternal`): `DxgkInitialize` requires it.
    Load,
    /// BR-02: `DxgkInitialize` requires one of the slots so marked.
    LoadOneOf,
    /// BR-56 ([D] `CreateRenderCore`): one of the DDIs whose presence makes a render core.
    RenderCore,
    /// BR-73: a node with user-mode submission needs it.
    Doorbell,
}

/// The statuses a DDI's wrapper accepts, and the rule that says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statuses {
    /// The rule (`BR-nn`).
    pub rule: &'static str,
    /// The accepted statuses; another is logged to the triage log (not refused).
    pub allowed: &'static [NTSTATUS],
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

/// The prefix of every [`IrqlRule::reference`].
pub const MS: &str = "https://learn.microsoft.com/windows-hardware/drivers/ddi/";

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

/// A slot the simulated OS never calls, named by a slot or status rule.
const fn uncalled() -> Rules {
    Rules {
        irql: None,
        ..at(P, P, "")
    }
}

impl Rules {
    const fn named(self, name: &'static str) -> Self {
        Self { name, ..self }
    }

    const fn ddi_wrapper(self) -> Self {
        Self {
            wrapper: Wrapper::IrqlChecked,
            ..self
        }
    }

    const fn slot(self, slot: Slot) -> Self {
        Self { slot, ..self }
    }

    const fn statuses(self, rule: &'static str, allowed: &'static [NTSTATUS]) -> Self {
        Self {
            statuses: Some(Statuses { rule, allowed }),
            ..self
        }
    }
}

/// Generates [`Routine`] from the `calls` rows and [`RULES`] from all rows, `calls` first (so
/// that `RULES[routine as usize]` is the routine's row).
macro_rules! rules {
    (
        calls { $( $(#[$doc:meta])* $name:ident => $row:expr; )* }
        slots_only { $( $slot:ident => $srow:expr; )* }
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
            $( $row.named(stringify!($name)), )*
            $( $srow.named(stringify!($slot)), )*
        ];
    };
}

rules! {
    calls {
        /// The driver's `DriverEntry` (`DRIVER_INITIALIZE`).
        DriverEntry => at(P, P, "wdm/nc-wdm-driver_initialize");
        // DDIs the OS calls.
        DxgkDdiAddDevice => at(P, P, "dispmprt/nc-dispmprt-dxgkddi_add_device").slot(Slot::Load);
        DxgkDdiStartDevice =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_start_device").slot(Slot::Load);
        DxgkDdiStopDevice => at(P, P, "dispmprt/nc-dispmprt-dxgkddi_stop_device").slot(Slot::Load);
        DxgkDdiRemoveDevice =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_remove_device").slot(Slot::Load);
        DxgkDdiDispatchIoRequest =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_dispatch_io_request").slot(Slot::Load);
        DxgkDdiInterruptRoutine =>
            at(DIRQL, DIRQL, "dispmprt/nc-dispmprt-dxgkddi_interrupt_routine").slot(Slot::Load);
        DxgkDdiDpcRoutine => at(D, D, "dispmprt/nc-dispmprt-dxgkddi_dpc_routine").slot(Slot::Load);
        DxgkDdiQueryChildRelations =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_child_relations").slot(Slot::Load);
        DxgkDdiQueryChildStatus =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_child_status").slot(Slot::LoadOneOf);
        DxgkDdiQueryDeviceDescriptor =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_device_descriptor").slot(Slot::Load);
        DxgkDdiSetPowerState =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_set_power_state").slot(Slot::Load);
        DxgkDdiNotifyAcpiEvent => at(P, P, "dispmprt/nc-dispmprt-dxgkddi_notify_acpi_event");
        // "can be called at any IRQL" (it runs on the bug-check path too).
        DxgkDdiResetDevice =>
            at(P, DIRQL, "dispmprt/nc-dispmprt-dxgkddi_reset_device").slot(Slot::Load);
        // The page gives no IRQL; PnP delivers surprise removal at PASSIVE_LEVEL
        // (UNVERIFIED).
        DxgkDdiNotifySurpriseRemoval =>
            at(P, P, "dispmprt/nc-dispmprt-dxgkddi_notify_surprise_removal");
        DxgkDdiUnload => at(P, P, "dispmprt/nc-dispmprt-dxgkddi_unload").slot(Slot::Load);
        DxgkDdiControlEtwLogging => at(P, P, "dispmprt/nc-dispmprt-dxgkddi_control_etw_logging");
        DxgkDdiQueryInterface => at(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_interface");
        DxgkDdiQueryFeatureSupport => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeaturesupport");
        DxgkDdiQueryFeatureInterface =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeatureinterface");
        // KT-8 ([D24] ADAPTER_RENDER::DdiBuildTestCommandBuffer @ 0x1401A12AC): an IRQL-checked
        // wrapper that logs any status but these three as "an invalid NTSTATUS code".
        DxgkDdiBuildTestCommandBuffer =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_buildtestcommandbuffer")
                .ddi_wrapper()
                .statuses("KT-8", &[
                    STATUS_SUCCESS,
                    STATUS_BUFFER_OVERFLOW,
                    STATUS_INVALID_PARAMETER,
                ]);
        DxgkDdiQueryAdapterInfo =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryadapterinfo")
                .ddi_wrapper()
                .statuses("BR-23", &[
                    STATUS_SUCCESS,
                    STATUS_INVALID_PARAMETER,
                    STATUS_NOT_IMPLEMENTED,
                    STATUS_NO_MEMORY,
                ]);
        DxgkDdiCreateNativeFence =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createnativefence").ddi_wrapper();
        DxgkDdiOpenNativeFence => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_opennativefence");
        DxgkDdiCloseNativeFence => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_closenativefence");
        DxgkDdiDestroyNativeFence => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroynativefence");
        // Device IRQL, synchronised with the ISR (NF-07).
        DxgkDdiUpdateMonitoredValues =>
            at(DIRQL, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_updatemonitoredvalues");
        // The page says DISPATCH_LEVEL (NF-17); 24H2 calls it at device IRQL under the
        // interrupt lock (`M:VidSchiUpdateNativeFenceCurrentValue` @0x140045B14,
        // `DpSynchronizeExecution`; crate::machine::answers::CpuUpdateIrql).
        DxgkDdiUpdateCurrentValuesFromCpu =>
            at(D, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_updatecurrentvaluesfromcpu");
        // User-mode submission: devices, contexts, queues, doorbells, power.
        DxgkDdiGetNodeMetadata =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getnodemetadata")
                .ddi_wrapper()
                .statuses("BR-23", &[STATUS_SUCCESS, STATUS_INVALID_PARAMETER]);
        // BR-91 ([D] ADAPTER_RENDER::DdiCreateDevice): anything but SUCCESS or NO_MEMORY is
        // "an invalid NTSTATUS code" in the triage log; the status still goes to the caller.
        DxgkDdiCreateDevice =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createdevice")
                .ddi_wrapper()
                .slot(Slot::RenderCore)
                .statuses("BR-91", &[STATUS_SUCCESS, STATUS_NO_MEMORY]);
        DxgkDdiDestroyDevice =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroydevice")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkDdiCreateContext =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createcontext")
                .ddi_wrapper()
                .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NO_MEMORY]);
        DxgkDdiDestroyContext =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroycontext").ddi_wrapper();
        // The reference pages of Suspend/ResumeContext give no IRQL; VidSch calls them from
        // its scheduler worker thread at PASSIVE_LEVEL, which is what the simulation allows
        // (a driver that relies on more is outside anything documented).
        DxgkDdiSuspendContext =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_suspendcontext").ddi_wrapper();
        DxgkDdiResumeContext =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resumecontext").ddi_wrapper();
        DxgkDdiCreateHwQueue =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createhwqueue")
                .ddi_wrapper()
                .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY]);
        DxgkDdiDestroyHwQueue =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyhwqueue").ddi_wrapper();
        // "PASSIVE_LEVEL or DISPATCH_LEVEL".
        DxgkDdiSubmitCommandToHwQueue =>
            at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandtohwqueue").ddi_wrapper();
        DxgkDdiCreateDoorbell =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createdoorbell")
                .ddi_wrapper()
                .slot(Slot::Doorbell)
                .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY]);
        DxgkDdiConnectDoorbell =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_connectdoorbell")
                .ddi_wrapper()
                .slot(Slot::Doorbell)
                .statuses("BR-23", &[STATUS_SUCCESS, STATUS_NOT_IMPLEMENTED, STATUS_NO_MEMORY]);
        DxgkDdiDisconnectDoorbell =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_disconnectdoorbell")
                .ddi_wrapper()
                .slot(Slot::Doorbell);
        DxgkDdiDestroyDoorbell =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroydoorbell")
                .ddi_wrapper()
                .slot(Slot::Doorbell);
        DxgkDdiNotifyWorkSubmission =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_notifyworksubmission")
                .ddi_wrapper()
                .slot(Slot::Doorbell);
        // "<= DISPATCH_LEVEL".
        DxgkDdiSetPowerComponentFState =>
            at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddisetpowercomponentfstate")
                .ddi_wrapper()
                .statuses("BR-108", &[STATUS_SUCCESS, STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST]);
        // "req.irql: <=DISPATCH_LEVEL".
        DxgkDdiPowerRuntimeControlRequest =>
            at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddipowerruntimecontrolrequest")
                .ddi_wrapper()
                .statuses("BR-107", &[STATUS_SUCCESS, STATUS_INVALID_PARAMETER]);
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
        //
        // "DISPATCH_LEVEL"; an error status is bug check 0x119 subtype 0x2.
        DxgkDdiSubmitCommand =>
            at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommand")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        // The page gives no IRQL (UNVERIFIED, docs/tdr.md Q5); VidSch submits from its
        // DPC-level scheduler like SubmitCommand, so at most DISPATCH_LEVEL.
        DxgkDdiSubmitCommandVirtual =>
            at(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandvirtual").ddi_wrapper();
        DxgkDdiPreemptCommand =>
            at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_preemptcommand")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        // PASSIVE per the public header (UNVERIFIED, docs/tdr.md Q5).
        DxgkDdiQueryCurrentFence =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_querycurrentfence")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        // PASSIVE per the public header (UNVERIFIED, docs/tdr.md Q5).
        DxgkDdiBuildPagingBuffer =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_buildpagingbuffer")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkDdiQueryDependentEngineGroup =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_querydependentenginegroup").ddi_wrapper();
        DxgkDdiQueryEngineStatus =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryenginestatus").ddi_wrapper();
        DxgkDdiResetEngine => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resetengine").ddi_wrapper();
        // Any IRQL in general; PASSIVE_LEVEL for the two timeout reasons (the only ones the
        // simulation passes).
        DxgkDdiCollectDbgInfo =>
            at(P, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo").ddi_wrapper();
        DxgkDdiCollectDbgInfo2 =>
            at(P, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo2").ddi_wrapper();
        DxgkDdiResetFromTimeout =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resetfromtimeout")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkDdiRestartFromTimeout =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_restartfromtimeout")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkCbInvalidateHwContext => at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_invalidatehwcontext");
        // Hardware scheduling (`crate::vidsch::hws`).
        DxgkDdiSetupPriorityBands =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setupprioritybands").ddi_wrapper();
        DxgkDdiSetSchedulingLogBuffer =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setschedulinglogbuffer").ddi_wrapper();
        DxgkDdiSetContextSchedulingProperties =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setcontextschedulingproperties").ddi_wrapper();
        DxgkDdiResetHwEngine =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resethwengine").ddi_wrapper();
        DxgkDdiResumeHwEngine =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resumehwengine").ddi_wrapper();
        // Native fence logs and GPU clock.
        //
        // The OS calls the three at DISPATCH_LEVEL (docs/logs.md#simulated-os).
        DxgkDdiSetNativeFenceLogBuffer =>
            at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_setnativefencelogbuffer");
        DxgkDdiUpdateNativeFenceLogs =>
            at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_updatenativefencelogs");
        DxgkDdiCalibrateGpuClock =>
            at(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_calibrategpuclock").ddi_wrapper();
        // GpuMmu memory model (docs/memory.md).
        DxgkDdiCreateProcess =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createprocess").ddi_wrapper();
        DxgkDdiDestroyProcess =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyprocess").ddi_wrapper();
        DxgkDdiSetRootPageTable =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setrootpagetable").ddi_wrapper();
        DxgkDdiGetRootPageTableSize =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getrootpagetablesize").ddi_wrapper();
        DxgkDdiCreateAllocation =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createallocation").slot(Slot::RenderCore);
        DxgkDdiDestroyAllocation =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyallocation")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkDdiDescribeAllocation =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_describeallocation")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkDdiGetStandardAllocationDriverData =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getstandardallocationdriverdata")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkDdiOpenAllocation =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_openallocationinfo")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
        DxgkDdiCloseAllocation =>
            at(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_closeallocation")
                .ddi_wrapper()
                .slot(Slot::RenderCore);
    }
    slots_only {
        DxgkDdiQueryConnectionChange => uncalled().slot(Slot::LoadOneOf);
        DxgkDdiAcquireSwizzlingRange => uncalled().slot(Slot::RenderCore);
        DxgkDdiReleaseSwizzlingRange => uncalled().slot(Slot::RenderCore);
        DxgkDdiPatch => uncalled().slot(Slot::RenderCore);
        DxgkDdiRender => uncalled().slot(Slot::RenderCore);
        DxgkDdiRenderKm => uncalled().slot(Slot::RenderCore);
        // [D] `ADAPTER_RENDER::DdiPresent`.
        DxgkDdiPresent =>
            uncalled()
                .slot(Slot::RenderCore)
                .statuses("BR-23", &[
                    STATUS_SUCCESS,
                    STATUS_INVALID_HANDLE,
                    STATUS_NO_MEMORY,
                    STATUS_ILLEGAL_INSTRUCTION,
                    STATUS_PRIVILEGED_INSTRUCTION,
                    STATUS_INSUFFICIENT_RESOURCES,
                    STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER,
                    STATUS_GRAPHICS_CANNOTCOLORCONVERT,
                    STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE,
                ]);
        DxgkDdiCreateOverlay => uncalled().slot(Slot::RenderCore);
        DxgkDdiUpdateOverlay => uncalled().slot(Slot::RenderCore);
        DxgkDdiFlipOverlay => uncalled().slot(Slot::RenderCore);
        DxgkDdiDestroyOverlay => uncalled().slot(Slot::RenderCore);
        // [D] `DXGADAPTER::DdiControlInterrupt`.
        DxgkDdiControlInterrupt =>
            uncalled()
                .statuses("BR-23", &[STATUS_SUCCESS, STATUS_UNSUCCESSFUL, STATUS_NOT_IMPLEMENTED]);

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

    #[test]
    fn only_routines_have_irql_rules() {
        assert!(RULES
            .iter()
            .skip(Routine::ALL.len())
            .all(|r| r.irql.is_none()));
    }
}
