//! The DDI entry points: `extern "system"` functions in the `DRIVER_INITIALIZATION_DATA`.
//!
//! This module is the FFI boundary and nothing else. Each thunk does three things only: turn
//! the raw pointers into references under Dxgkrnl's pointer contract (stated once, in
//! [`thunk`]), check the raw arguments (null pointers, sizes), and call the module holding the
//! logic. Every thunk returns an NTSTATUS (or what its signature demands) and never panics: a
//! bad argument is STATUS_INVALID_PARAMETER.
//!
//! The thunks are grouped by DDI family: [`pnp`] (life cycle, interrupts, children), [`query`]
//! (what the driver tells the OS about itself), [`memory`] (processes, page tables,
//! allocations), [`fence`] (native fences and their logs), [`submission`] (devices, contexts,
//! queues, doorbells), [`node`] (node rings, paging, present), [`tdr`] (TDR and hardware
//! scheduling) and [`power`] (runtime power). [`table`] answers which optional DDI groups the
//! table fills, for the logic that must not advertise a capability ahead of its DDIs.
//!
//! The table is monomorphised per platform: `initialization_data::<WinKernel>()` in the
//! Windows image, `initialization_data::<SimKernel>()` under the simulated OS.

use core::ffi::c_void;

mod fence;
mod memory;
mod node;
mod pnp;
mod power;
mod query;
mod submission;
pub mod table;
mod tdr;
mod thunk;

use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, DXGKDDI_INTERFACE_VERSION};

use crate::platform::Platform;
use crate::status;
use thunk::{
    on_adapter, on_adapter_mut, on_args, on_args_mut, on_context, on_context_with, on_handle,
    on_handle_mut,
};

/// The slot after `DxgkDdiNotifyWorkSubmission` (byte 1368): `DxgkDdiFlushHwQueue` on
/// Microsoft's reference page and in pre-release headers, `Reserved4` in the 26100 WDK. The
/// 22631 kernel refuses a user-mode-submission node unless it is filled ([D]
/// `ADAPTER_RENDER::Initialize`, triage event 1290, `STATUS_INVALID_PARAMETER`) and never calls
/// it; its signature is not published. Filled so that the node starts under either reading
/// (docs/windows-bringup.md §15, question 2); if a kernel ever calls it, it refuses and reads
/// nothing (an x64 callee may ignore whatever it is passed).
unsafe extern "system" fn flush_hw_queue_slot() -> rvgpu_ddi::NTSTATUS {
    status::NOT_SUPPORTED.code()
}

/// The miniport's entry-point table for platform `P`.
pub fn initialization_data<P: Platform>() -> DRIVER_INITIALIZATION_DATA {
    DRIVER_INITIALIZATION_DATA {
        Version: DXGKDDI_INTERFACE_VERSION,
        DxgkDdiAddDevice: Some(pnp::add_device::<P>),
        DxgkDdiStartDevice: Some(pnp::start_device::<P>),
        DxgkDdiStopDevice: Some(on_context::<P, pnp::StopDevice>),
        DxgkDdiRemoveDevice: Some(pnp::remove_device::<P>),
        DxgkDdiDispatchIoRequest: Some(pnp::dispatch_io_request),
        DxgkDdiInterruptRoutine: Some(pnp::interrupt_routine::<P>),
        DxgkDdiDpcRoutine: Some(on_context::<P, pnp::DpcRoutine>),
        DxgkDdiQueryChildRelations: Some(pnp::query_child_relations),
        DxgkDdiQueryChildStatus: Some(pnp::query_child_status),
        DxgkDdiQueryDeviceDescriptor: Some(pnp::query_device_descriptor),
        DxgkDdiSetPowerState: Some(pnp::set_power_state::<P>),
        DxgkDdiNotifyAcpiEvent: Some(pnp::notify_acpi_event),
        DxgkDdiResetDevice: Some(on_context::<P, pnp::ResetDevice>),
        DxgkDdiNotifySurpriseRemoval: Some(on_context_with::<P, pnp::NotifySurpriseRemoval>),
        DxgkDdiUnload: Some(pnp::unload::<P>),
        DxgkDdiQueryInterface: Some(query::query_interface::<P>),
        DxgkDdiControlEtwLogging: Some(pnp::control_etw_logging),
        DxgkDdiQueryAdapterInfo: Some(on_adapter::<P, query::QueryAdapterInfo, _>),
        DxgkDdiCreateNativeFence: Some(on_adapter_mut::<P, fence::CreateNativeFence>),
        DxgkDdiDestroyNativeFence: Some(on_args::<P, fence::DestroyNativeFence, _>),
        DxgkDdiOpenNativeFence: Some(on_adapter::<P, fence::OpenNativeFence, _>),
        DxgkDdiCloseNativeFence: Some(on_adapter::<P, fence::CloseNativeFence, _>),
        DxgkDdiUpdateMonitoredValues: Some(fence::update_monitored_values::<P>),
        DxgkDdiUpdateCurrentValuesFromCpu: Some(fence::update::<P, _>),
        DxgkDdiCreateDevice: Some(on_adapter_mut::<P, submission::CreateDevice>),
        DxgkDdiDestroyDevice: Some(submission::destroy_device::<P>),
        DxgkDdiCreateContext: Some(on_handle_mut::<P, submission::CreateContext>),
        DxgkDdiDestroyContext: Some(submission::destroy_context::<P>),
        DxgkDdiGetNodeMetadata: Some(query::get_node_metadata::<P>),
        DxgkDdiSuspendContext: Some(on_adapter::<P, submission::SuspendContext, _>),
        DxgkDdiResumeContext: Some(on_adapter::<P, submission::ResumeContext, _>),
        DxgkDdiCreateHwQueue: Some(on_handle_mut::<P, submission::CreateHwQueue>),
        DxgkDdiDestroyHwQueue: Some(submission::destroy_hw_queue::<P>),
        DxgkDdiSubmitCommandToHwQueue: Some(submission::submit_command_to_hw_queue::<P>),
        DxgkDdiCreateDoorbell: Some(on_args_mut::<P, submission::CreateDoorbell>),
        DxgkDdiConnectDoorbell: Some(submission::connect_doorbell::<P>),
        DxgkDdiDisconnectDoorbell: Some(on_args::<P, submission::DisconnectDoorbell, _>),
        DxgkDdiDestroyDoorbell: Some(on_args::<P, submission::DestroyDoorbell, _>),
        DxgkDdiNotifyWorkSubmission: Some(on_args::<P, submission::NotifyWorkSubmission, _>),
        Reserved4: flush_hw_queue_slot as *const () as *mut c_void,
        DxgkDdiQueryDependentEngineGroup: Some(on_adapter_mut::<P, tdr::QueryDependentEngineGroup>),
        DxgkDdiQueryEngineStatus: Some(on_adapter_mut::<P, tdr::QueryEngineStatus>),
        DxgkDdiResetEngine: Some(on_adapter_mut::<P, tdr::ResetEngine>),
        // Hardware scheduling (crate::hws). CreateHwContext, DestroyHwContext,
        // SwitchToHwContextList and UpdateHwContextState stay NULL: Windows' VidSch never
        // calls them (its hardware contexts are the CreateContext ones, docs/hws.md §2).
        DxgkDdiSetupPriorityBands: Some(on_adapter::<P, tdr::SetupPriorityBands, _>),
        DxgkDdiSetSchedulingLogBuffer: Some(on_adapter::<P, tdr::SetSchedulingLogBuffer, _>),
        DxgkDdiSetContextSchedulingProperties: Some(
            on_adapter::<P, tdr::SetContextSchedulingProperties, _>,
        ),
        DxgkDdiResetHwEngine: Some(on_adapter::<P, tdr::ResetHwEngine, _>),
        DxgkDdiResumeHwEngine: Some(on_adapter::<P, tdr::ResumeHwEngine, _>),
        DxgkDdiCollectDbgInfo: Some(on_adapter::<P, tdr::CollectDbgInfo, _>),
        DxgkDdiCollectDbgInfo2: Some(on_adapter::<P, tdr::CollectDbgInfo2, _>),
        DxgkDdiResetFromTimeout: Some(on_context::<P, tdr::ResetFromTimeout>),
        DxgkDdiRestartFromTimeout: Some(on_context::<P, tdr::RestartFromTimeout>),
        DxgkDdiSetNativeFenceLogBuffer: Some(on_args::<P, fence::SetNativeFenceLogBuffer, _>),
        DxgkDdiUpdateNativeFenceLogs: Some(on_args::<P, fence::UpdateNativeFenceLogs, _>),
        DxgkDdiCalibrateGpuClock: Some(query::calibrate_gpu_clock::<P>),
        DxgkDdiSetStablePowerState: Some(query::set_stable_power_state::<P>),
        // Runtime power management (UM-13, crate::power).
        DxgkDdiSetPowerComponentFState: Some(power::set_power_component_fstate::<P>),
        DxgkDdiPowerRuntimeControlRequest: Some(power::power_runtime_control_request::<P>),
        DxgkDdiSubmitCommand: Some(on_adapter::<P, node::SubmitCommand, _>),
        DxgkDdiSubmitCommandVirtual: Some(on_adapter::<P, node::SubmitCommandVirtual, _>),
        DxgkDdiPreemptCommand: Some(on_adapter::<P, node::PreemptCommand, _>),
        DxgkDdiQueryCurrentFence: Some(on_adapter_mut::<P, node::QueryCurrentFence>),
        DxgkDdiBuildPagingBuffer: Some(on_adapter_mut::<P, node::BuildPagingBuffer>),
        DxgkDdiPresent: Some(node::present),
        DxgkDdiControlInterrupt: Some(node::control_interrupt),
        DxgkDdiCreateProcess: Some(on_adapter_mut::<P, memory::CreateProcess>),
        DxgkDdiDestroyProcess: Some(on_context_with::<P, memory::DestroyProcess>),
        DxgkDdiGetRootPageTableSize: Some(memory::get_root_page_table_size::<P>),
        DxgkDdiSetRootPageTable: Some(memory::set_root_page_table::<P>),
        DxgkDdiCreateAllocation: Some(on_adapter_mut::<P, memory::CreateAllocation>),
        DxgkDdiDestroyAllocation: Some(on_adapter::<P, memory::DestroyAllocation, _>),
        DxgkDdiDescribeAllocation: Some(memory::describe_allocation),
        DxgkDdiGetStandardAllocationDriverData: Some(memory::get_standard_allocation_driver_data),
        DxgkDdiOpenAllocation: Some(on_handle::<P, memory::OpenAllocation, _>),
        DxgkDdiCloseAllocation: Some(on_handle::<P, memory::CloseAllocation, _>),
        ..Default::default()
    }
}
