//! The IRQL table: at which interrupt request level Windows calls each DDI, and at which
//! levels the driver may call each Dxgkrnl callback.
//!
//! Every DDI wrapper and every callback of the simulation checks its entry against this table.
//! Each row cites the Microsoft reference page the rule comes from (the "IRQL" line of its
//! Requirements table). A violation is a bug check ([`check`]):
//!
//! - *above* the highest allowed level: PASSIVE_LEVEL routines are pageable code, so running
//!   one at DISPATCH_LEVEL or above faults on its own code: [`IRQL_NOT_LESS_OR_EQUAL`] (0xA);
//! - *below* the lowest allowed level (say `DxgkCbNotifyInterrupt` outside the ISR):
//!   [`IRQL_NOT_GREATER_OR_EQUAL`] (0x9).
//!
//! [`IRQL_NOT_LESS_OR_EQUAL`]: crate::dxgkrnl::bugcheck::IRQL_NOT_LESS_OR_EQUAL
//! [`IRQL_NOT_GREATER_OR_EQUAL`]: crate::dxgkrnl::bugcheck::IRQL_NOT_GREATER_OR_EQUAL

use rvgpu_kmd::platform::Irql;

use crate::dxgkrnl::bugcheck::{self, kirql, BugCheck};

/// A routine whose IRQL the simulation checks: a DDI (OS → driver) or a callback (driver → OS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(clippy::enum_variant_names)] // The names are Microsoft's.
pub enum Routine {
    /// The driver's `DriverEntry` (`DRIVER_INITIALIZE`).
    DriverEntry,
    // DDIs the OS calls.
    DxgkDdiAddDevice,
    DxgkDdiStartDevice,
    DxgkDdiStopDevice,
    DxgkDdiRemoveDevice,
    DxgkDdiDispatchIoRequest,
    DxgkDdiInterruptRoutine,
    DxgkDdiDpcRoutine,
    DxgkDdiQueryChildRelations,
    DxgkDdiQueryChildStatus,
    DxgkDdiQueryDeviceDescriptor,
    DxgkDdiSetPowerState,
    DxgkDdiNotifyAcpiEvent,
    DxgkDdiResetDevice,
    DxgkDdiNotifySurpriseRemoval,
    DxgkDdiUnload,
    DxgkDdiQueryInterface,
    DxgkDdiQueryFeatureSupport,
    DxgkDdiQueryFeatureInterface,
    /// `DXGKDDI_KERNELMODETESTINGINTERFACE::pfnBuildTestCommandBuffer`.
    DxgkDdiBuildTestCommandBuffer,
    DxgkDdiQueryAdapterInfo,
    DxgkDdiCreateNativeFence,
    DxgkDdiOpenNativeFence,
    DxgkDdiCloseNativeFence,
    DxgkDdiDestroyNativeFence,
    DxgkDdiUpdateMonitoredValues,
    DxgkDdiUpdateCurrentValuesFromCpu,
    // User-mode submission: devices, contexts, queues, doorbells, power.
    DxgkDdiGetNodeMetadata,
    DxgkDdiCreateDevice,
    DxgkDdiDestroyDevice,
    DxgkDdiCreateContext,
    DxgkDdiDestroyContext,
    DxgkDdiSuspendContext,
    DxgkDdiResumeContext,
    DxgkDdiCreateHwQueue,
    DxgkDdiDestroyHwQueue,
    DxgkDdiSubmitCommandToHwQueue,
    DxgkDdiCreateDoorbell,
    DxgkDdiConnectDoorbell,
    DxgkDdiDisconnectDoorbell,
    DxgkDdiDestroyDoorbell,
    DxgkDdiNotifyWorkSubmission,
    DxgkDdiSetPowerComponentFState,
    DxgkDdiPowerRuntimeControlRequest,
    /// The driver's `SynchronizeRoutine` passed to `DxgkCbSynchronizeExecution`.
    SynchronizeRoutine,
    // Callbacks the driver calls.
    DxgkCbGetDeviceInformation,
    DxgkCbMapMemory,
    DxgkCbUnmapMemory,
    DxgkCbQueueDpc,
    DxgkCbNotifyInterrupt,
    DxgkCbNotifyDpc,
    DxgkCbSynchronizeExecution,
    DxgkCbAllocateContiguousMemory,
    DxgkCbFreeContiguousMemory,
    DxgkCbQueryServices,
    DxgkCbIsFeatureEnabled,
    DxgkCbQueryFeatureSupport,
    DxgkCbQueryFeatureInterface,
    NativeFenceGetOSCaps,
    DxgkCbLogEtwEvent,
    DxgkCbDisconnectDoorbell,
    /// `INTERFACE::InterfaceReference` of an interface the OS handed out.
    InterfaceReference,
    /// `INTERFACE::InterfaceDereference`.
    InterfaceDereference,
    // Legacy (kernel-mode) scheduling and TDR (docs/tdr.md §2).
    DxgkDdiSubmitCommand,
    DxgkDdiSubmitCommandVirtual,
    DxgkDdiPreemptCommand,
    DxgkDdiQueryCurrentFence,
    DxgkDdiBuildPagingBuffer,
    DxgkDdiQueryDependentEngineGroup,
    DxgkDdiQueryEngineStatus,
    DxgkDdiResetEngine,
    DxgkDdiCollectDbgInfo,
    DxgkDdiCollectDbgInfo2,
    DxgkDdiResetFromTimeout,
    DxgkDdiRestartFromTimeout,
    DxgkCbInvalidateHwContext,
    // Hardware scheduling (`crate::vidsch::hws`).
    DxgkDdiSetupPriorityBands,
    DxgkDdiSetSchedulingLogBuffer,
    DxgkDdiSetContextSchedulingProperties,
    DxgkDdiResetHwEngine,
    DxgkDdiResumeHwEngine,
    // Native fence logs and GPU clock.
    DxgkDdiSetNativeFenceLogBuffer,
    DxgkDdiUpdateNativeFenceLogs,
    DxgkDdiCalibrateGpuClock,
    // GpuMmu memory model (docs/memory.md).
    DxgkDdiCreateProcess,
    DxgkDdiDestroyProcess,
    DxgkDdiSetRootPageTable,
    DxgkDdiGetRootPageTableSize,
    DxgkDdiCreateAllocation,
    DxgkDdiDestroyAllocation,
    DxgkDdiDescribeAllocation,
    DxgkDdiGetStandardAllocationDriverData,
    DxgkDdiOpenAllocation,
    DxgkDdiCloseAllocation,
}

/// The levels a routine may run at, inclusive, and where the rule is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqlRule {
    /// Lowest allowed level.
    pub min: Irql,
    /// Highest allowed level.
    pub max: Irql,
    /// Microsoft reference page.
    pub reference: &'static str,
}

const fn rule(min: Irql, max: Irql, reference: &'static str) -> IrqlRule {
    IrqlRule {
        min,
        max,
        reference,
    }
}

const P: Irql = Irql::Passive;
const D: Irql = Irql::Dispatch;
const DIRQL: Irql = Irql::Device;
const MS: &str = "https://learn.microsoft.com/windows-hardware/drivers/ddi/";

impl Routine {
    /// The routine's IRQL rule.
    pub const fn rule(self) -> IrqlRule {
        // The literal suffixes below are appended to `MS` by `reference_url`.
        match self {
            Self::DriverEntry => rule(P, P, "wdm/nc-wdm-driver_initialize"),
            Self::DxgkDdiAddDevice => rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_add_device"),
            Self::DxgkDdiStartDevice => rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_start_device"),
            Self::DxgkDdiStopDevice => rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_stop_device"),
            Self::DxgkDdiRemoveDevice => rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_remove_device"),
            Self::DxgkDdiDispatchIoRequest => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_dispatch_io_request")
            }
            Self::DxgkDdiInterruptRoutine => rule(
                DIRQL,
                DIRQL,
                "dispmprt/nc-dispmprt-dxgkddi_interrupt_routine",
            ),
            Self::DxgkDdiDpcRoutine => rule(D, D, "dispmprt/nc-dispmprt-dxgkddi_dpc_routine"),
            Self::DxgkDdiQueryChildRelations => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_child_relations")
            }
            Self::DxgkDdiQueryChildStatus => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_child_status")
            }
            Self::DxgkDdiQueryDeviceDescriptor => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_device_descriptor")
            }
            Self::DxgkDdiSetPowerState => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_set_power_state")
            }
            Self::DxgkDdiNotifyAcpiEvent => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_notify_acpi_event")
            }
            // "can be called at any IRQL" (it runs on the bug-check path too).
            Self::DxgkDdiResetDevice => rule(P, DIRQL, "dispmprt/nc-dispmprt-dxgkddi_reset_device"),
            // The page gives no IRQL; PnP delivers surprise removal at PASSIVE_LEVEL
            // (UNVERIFIED).
            Self::DxgkDdiNotifySurpriseRemoval => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_notify_surprise_removal")
            }
            Self::DxgkDdiUnload => rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_unload"),
            Self::DxgkDdiQueryInterface => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkddi_query_interface")
            }
            Self::DxgkDdiQueryFeatureSupport => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeaturesupport")
            }
            Self::DxgkDdiQueryFeatureInterface => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryfeatureinterface")
            }
            Self::DxgkDdiBuildTestCommandBuffer => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_buildtestcommandbuffer")
            }
            Self::DxgkDdiQueryAdapterInfo => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryadapterinfo")
            }
            Self::DxgkDdiCreateNativeFence => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createnativefence")
            }
            Self::DxgkDdiOpenNativeFence => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_opennativefence")
            }
            Self::DxgkDdiCloseNativeFence => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_closenativefence")
            }
            Self::DxgkDdiDestroyNativeFence => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroynativefence")
            }
            // Device IRQL, synchronised with the ISR (NF-07).
            Self::DxgkDdiUpdateMonitoredValues => rule(
                DIRQL,
                DIRQL,
                "d3dkmddi/nc-d3dkmddi-dxgkddi_updatemonitoredvalues",
            ),
            // The page says DISPATCH_LEVEL (NF-17); 24H2 calls it at device IRQL under the
            // interrupt lock (`M:VidSchiUpdateNativeFenceCurrentValue` @0x140045B14,
            // `DpSynchronizeExecution`; crate::machine::answers::CpuUpdateIrql).
            Self::DxgkDdiUpdateCurrentValuesFromCpu => rule(
                D,
                DIRQL,
                "d3dkmddi/nc-d3dkmddi-dxgkddi_updatecurrentvaluesfromcpu",
            ),
            Self::DxgkDdiGetNodeMetadata => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getnodemetadata")
            }
            Self::DxgkDdiCreateDevice => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createdevice"),
            Self::DxgkDdiDestroyDevice => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroydevice"),
            Self::DxgkDdiCreateContext => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createcontext"),
            Self::DxgkDdiDestroyContext => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroycontext")
            }
            // The reference pages of Suspend/ResumeContext give no IRQL; VidSch calls them from
            // its scheduler worker thread at PASSIVE_LEVEL, which is what the simulation allows
            // (a driver that relies on more is outside anything documented).
            Self::DxgkDdiSuspendContext => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_suspendcontext")
            }
            Self::DxgkDdiResumeContext => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resumecontext"),
            Self::DxgkDdiCreateHwQueue => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createhwqueue"),
            Self::DxgkDdiDestroyHwQueue => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyhwqueue")
            }
            // "PASSIVE_LEVEL or DISPATCH_LEVEL".
            Self::DxgkDdiSubmitCommandToHwQueue => {
                rule(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandtohwqueue")
            }
            Self::DxgkDdiCreateDoorbell => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createdoorbell")
            }
            Self::DxgkDdiConnectDoorbell => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_connectdoorbell")
            }
            Self::DxgkDdiDisconnectDoorbell => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_disconnectdoorbell")
            }
            Self::DxgkDdiDestroyDoorbell => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroydoorbell")
            }
            Self::DxgkDdiNotifyWorkSubmission => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_notifyworksubmission")
            }
            // "<= DISPATCH_LEVEL".
            Self::DxgkDdiSetPowerComponentFState => {
                rule(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddisetpowercomponentfstate")
            }
            // "req.irql: <=DISPATCH_LEVEL".
            Self::DxgkDdiPowerRuntimeControlRequest => rule(
                P,
                D,
                "d3dkmddi/nc-d3dkmddi-dxgkddipowerruntimecontrolrequest",
            ),
            Self::SynchronizeRoutine => rule(DIRQL, DIRQL, "wdm/nc-wdm-ksynchronize_routine"),
            Self::DxgkCbGetDeviceInformation => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkcb_get_device_information")
            }
            Self::DxgkCbMapMemory => rule(P, P, "dispmprt/nc-dispmprt-dxgkcb_map_memory"),
            Self::DxgkCbUnmapMemory => rule(P, P, "dispmprt/nc-dispmprt-dxgkcb_unmap_memory"),
            // "IRQL: Any level".
            Self::DxgkCbQueueDpc => rule(P, DIRQL, "dispmprt/nc-dispmprt-dxgkcb_queue_dpc"),
            // Called from the ISR (or a SynchronizeExecution routine): device IRQL.
            Self::DxgkCbNotifyInterrupt => {
                rule(DIRQL, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkcb_notify_interrupt")
            }
            // Called from DxgkDdiDpcRoutine.
            Self::DxgkCbNotifyDpc => rule(D, D, "d3dkmddi/nc-d3dkmddi-dxgkcb_notify_dpc"),
            // "IRQL <= DISPATCH_LEVEL".
            Self::DxgkCbSynchronizeExecution => {
                rule(P, D, "dispmprt/nc-dispmprt-dxgkcb_synchronize_execution")
            }
            Self::DxgkCbAllocateContiguousMemory => rule(
                P,
                P,
                "dispmprt/nc-dispmprt-dxgkcb_allocate_contiguous_memory",
            ),
            Self::DxgkCbFreeContiguousMemory => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkcb_free_contiguous_memory")
            }
            Self::DxgkCbQueryServices => rule(P, P, "dispmprt/nc-dispmprt-dxgkcb_query_services"),
            Self::DxgkCbIsFeatureEnabled => {
                rule(P, P, "dispmprt/nc-dispmprt-dxgkcb_isfeatureenabled2")
            }
            // The page states no IRQL; the OS reads registry-derived policy and updates the
            // adapter's feature bits, as its sibling feature callbacks do at PASSIVE_LEVEL.
            Self::DxgkCbQueryFeatureSupport => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_queryfeaturesupport")
            }
            Self::DxgkCbQueryFeatureInterface => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_queryfeatureinterface")
            }
            Self::NativeFenceGetOSCaps => rule(
                P,
                P,
                "d3dkmddi/nc-d3dkmddi-dxgkcbint_featureinterface_nativefence_getoscaps",
            ),
            // "can be called at any IRQL".
            Self::DxgkCbLogEtwEvent => rule(P, DIRQL, "dispmprt/nc-dispmprt-dxgkcb_log_etw_event"),
            Self::DxgkCbDisconnectDoorbell => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_disconnectdoorbell")
            }
            // PINTERFACE_REFERENCE / PINTERFACE_DEREFERENCE: "IRQL <= DISPATCH_LEVEL".
            Self::InterfaceReference => rule(P, D, "wdm/nc-wdm-pinterface_reference"),
            Self::InterfaceDereference => rule(P, D, "wdm/nc-wdm-pinterface_dereference"),
            // "DISPATCH_LEVEL"; an error status is bug check 0x119 subtype 0x2.
            Self::DxgkDdiSubmitCommand => rule(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommand"),
            // The page gives no IRQL (UNVERIFIED, docs/tdr.md Q5); VidSch submits from its
            // DPC-level scheduler like SubmitCommand, so at most DISPATCH_LEVEL.
            Self::DxgkDdiSubmitCommandVirtual => {
                rule(P, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_submitcommandvirtual")
            }
            Self::DxgkDdiPreemptCommand => {
                rule(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_preemptcommand")
            }
            // PASSIVE per the public header (UNVERIFIED, docs/tdr.md Q5).
            Self::DxgkDdiQueryCurrentFence => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_querycurrentfence")
            }
            // PASSIVE per the public header (UNVERIFIED, docs/tdr.md Q5).
            Self::DxgkDdiBuildPagingBuffer => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_buildpagingbuffer")
            }
            Self::DxgkDdiQueryDependentEngineGroup => rule(
                P,
                P,
                "d3dkmddi/nc-d3dkmddi-dxgkddi_querydependentenginegroup",
            ),
            Self::DxgkDdiQueryEngineStatus => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_queryenginestatus")
            }
            Self::DxgkDdiResetEngine => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resetengine"),
            // Any IRQL in general; PASSIVE_LEVEL for the two timeout reasons (the only ones the
            // simulation passes).
            Self::DxgkDdiCollectDbgInfo => {
                rule(P, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo")
            }
            Self::DxgkDdiCollectDbgInfo2 => {
                rule(P, DIRQL, "d3dkmddi/nc-d3dkmddi-dxgkddi_collectdbginfo2")
            }
            Self::DxgkDdiResetFromTimeout => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resetfromtimeout")
            }
            Self::DxgkDdiRestartFromTimeout => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_restartfromtimeout")
            }
            Self::DxgkCbInvalidateHwContext => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkcb_invalidatehwcontext")
            }
            Self::DxgkDdiSetupPriorityBands => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setupprioritybands")
            }
            Self::DxgkDdiSetSchedulingLogBuffer => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setschedulinglogbuffer")
            }
            Self::DxgkDdiSetContextSchedulingProperties => rule(
                P,
                P,
                "d3dkmddi/nc-d3dkmddi-dxgkddi_setcontextschedulingproperties",
            ),
            Self::DxgkDdiResetHwEngine => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resethwengine"),
            Self::DxgkDdiResumeHwEngine => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_resumehwengine")
            }
            // The OS calls the three at DISPATCH_LEVEL (docs/logs.md §3.6, §9.3).
            Self::DxgkDdiSetNativeFenceLogBuffer => {
                rule(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_setnativefencelogbuffer")
            }
            Self::DxgkDdiUpdateNativeFenceLogs => {
                rule(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_updatenativefencelogs")
            }
            Self::DxgkDdiCalibrateGpuClock => {
                rule(D, D, "d3dkmddi/nc-d3dkmddi-dxgkddi_calibrategpuclock")
            }
            Self::DxgkDdiCreateProcess => rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createprocess"),
            Self::DxgkDdiDestroyProcess => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyprocess")
            }
            Self::DxgkDdiSetRootPageTable => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_setrootpagetable")
            }
            Self::DxgkDdiGetRootPageTableSize => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_getrootpagetablesize")
            }
            Self::DxgkDdiCreateAllocation => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_createallocation")
            }
            Self::DxgkDdiDestroyAllocation => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_destroyallocation")
            }
            Self::DxgkDdiDescribeAllocation => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_describeallocation")
            }
            Self::DxgkDdiGetStandardAllocationDriverData => rule(
                P,
                P,
                "d3dkmddi/nc-d3dkmddi-dxgkddi_getstandardallocationdriverdata",
            ),
            Self::DxgkDdiOpenAllocation => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_openallocationinfo")
            }
            Self::DxgkDdiCloseAllocation => {
                rule(P, P, "d3dkmddi/nc-d3dkmddi-dxgkddi_closeallocation")
            }
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

/// Checks that `routine` may run at `current`; `address` is the routine's code address (for the
/// 0xA parameters). Returns the bug check Windows would raise otherwise.
pub fn check(routine: Routine, current: Irql, address: usize) -> Result<(), BugCheck> {
    let rule = routine.rule();
    if current > rule.max {
        let addr = address as u64;
        return Err(BugCheck::new(
            bugcheck::IRQL_NOT_LESS_OR_EQUAL,
            [addr, kirql(current), 8, addr],
        ));
    }
    if current < rule.min {
        return Err(BugCheck::new(
            bugcheck::IRQL_NOT_GREATER_OR_EQUAL,
            [kirql(current), kirql(rule.min), routine.id(), 0],
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passive_ddi_at_dispatch_is_0xa() {
        let err = check(Routine::DxgkDdiQueryAdapterInfo, Irql::Dispatch, 0x1000);
        assert_eq!(
            err,
            Err(BugCheck::new(
                bugcheck::IRQL_NOT_LESS_OR_EQUAL,
                [0x1000, 2, 8, 0x1000]
            ))
        );
    }

    #[test]
    fn notify_interrupt_at_passive_is_0x9() {
        let err = check(Routine::DxgkCbNotifyInterrupt, Irql::Passive, 0);
        assert_eq!(
            err.map_err(|b| b.code),
            Err(bugcheck::IRQL_NOT_GREATER_OR_EQUAL)
        );
    }

    #[test]
    fn isr_at_device_is_fine() {
        assert_eq!(
            check(Routine::DxgkDdiInterruptRoutine, Irql::Device, 0),
            Ok(())
        );
        assert_eq!(check(Routine::DxgkCbQueueDpc, Irql::Device, 0), Ok(()));
    }
}
