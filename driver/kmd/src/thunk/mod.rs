//! The DDI entry points: `extern "system"` functions in the `DRIVER_INITIALIZATION_DATA`.
//!
//! This module is the FFI boundary and nothing else. Each thunk does three things only: turn
//! the raw pointers into references under Dxgkrnl's pointer contract (stated once, in
//! [`contract`]), check the raw arguments (null pointers, sizes), and call the module holding the
//! logic. Every thunk returns an NTSTATUS (or what its signature demands) and never panics: a
//! bad argument is STATUS_INVALID_PARAMETER.
//!
//! The thunks are grouped as the concepts are: `thunk::fence` calls `crate::fence::ddi`,
//! `thunk::doorbell` calls `crate::doorbell::ddi`, and so on; [`adapter`] holds the adapter's
//! life cycle and interrupt entry points. [`contract`] states Dxgkrnl's pointer contract once
//! and holds the generic thunks, the adapter context's lifetime (AddDevice, RemoveDevice) and
//! the typed accessors of the OS's arrays. [`table`] answers which optional DDI groups the
//! table fills, for the logic that must not advertise a capability ahead of its DDIs.
//!
//! The table is monomorphised per platform: `initialization_data::<WinKernel>()` in the
//! Windows image, `initialization_data::<SimKernel>()` under the simulated OS.

use core::ffi::c_void;

mod adapter;
mod allocation;
mod caps;
mod clock;
mod context;
#[allow(unsafe_code)]
pub(crate) mod contract;
mod dbginfo;
mod doorbell;
mod features;
mod fence;
mod hwqueue;
mod hws;
mod log;
mod node;
mod paging;
mod power;
mod present;
mod process;
mod reset;
mod submit;
pub mod table;

use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, DXGKDDI_INTERFACE_VERSION};

use crate::platform::Platform;
use crate::status;
use contract::{
    on_adapter, on_adapter_mut, on_args, on_args_mut, on_context, on_context_with, on_handle,
    on_handle_mut,
};

/// The slot after `DxgkDdiNotifyWorkSubmission` (byte 1368): `DxgkDdiFlushHwQueue` on
/// Microsoft's reference page and in pre-release headers, `Reserved4` in the 26100 WDK. The
/// 22631 kernel refuses a user-mode-submission node unless it is filled (\[D\]
/// `ADAPTER_RENDER::Initialize`, triage event 1290, `STATUS_INVALID_PARAMETER`) and never calls
/// it; its signature is not published. Filled so that the node starts under either reading
/// (docs/windows-bringup.md §15, question 2); if a kernel ever calls it, it refuses and reads
/// nothing (an x64 callee may ignore whatever it is passed).
extern "system" fn flush_hw_queue_slot() -> rvgpu_ddi::NTSTATUS {
    status::NOT_SUPPORTED.code()
}

/// The miniport's entry-point table for platform `P`.
pub fn initialization_data<P: Platform>() -> DRIVER_INITIALIZATION_DATA {
    DRIVER_INITIALIZATION_DATA {
        Version: DXGKDDI_INTERFACE_VERSION,
        DxgkDdiAddDevice: Some(contract::add_device::<P>),
        DxgkDdiStartDevice: Some(adapter::start_device::<P>),
        DxgkDdiStopDevice: Some(on_context::<P, adapter::StopDevice>),
        DxgkDdiRemoveDevice: Some(contract::remove_device::<P>),
        DxgkDdiDispatchIoRequest: Some(adapter::dispatch_io_request),
        DxgkDdiInterruptRoutine: Some(adapter::interrupt_routine::<P>),
        DxgkDdiDpcRoutine: Some(on_context::<P, adapter::DpcRoutine>),
        DxgkDdiQueryChildRelations: Some(adapter::query_child_relations),
        DxgkDdiQueryChildStatus: Some(adapter::query_child_status),
        DxgkDdiQueryDeviceDescriptor: Some(adapter::query_device_descriptor),
        DxgkDdiSetPowerState: Some(adapter::set_power_state::<P>),
        DxgkDdiNotifyAcpiEvent: Some(adapter::notify_acpi_event),
        DxgkDdiResetDevice: Some(on_context::<P, adapter::ResetDevice>),
        DxgkDdiNotifySurpriseRemoval: Some(on_context_with::<P, adapter::NotifySurpriseRemoval>),
        DxgkDdiUnload: Some(adapter::unload::<P>),
        DxgkDdiQueryInterface: Some(features::query_interface::<P>),
        DxgkDdiControlEtwLogging: Some(adapter::control_etw_logging),
        DxgkDdiQueryAdapterInfo: Some(on_adapter::<P, caps::QueryAdapterInfo, _>),
        DxgkDdiCreateNativeFence: Some(on_adapter_mut::<P, fence::CreateNativeFence>),
        DxgkDdiDestroyNativeFence: Some(on_args::<P, fence::DestroyNativeFence, _>),
        DxgkDdiOpenNativeFence: Some(on_adapter::<P, fence::OpenNativeFence, _>),
        DxgkDdiCloseNativeFence: Some(on_adapter::<P, fence::CloseNativeFence, _>),
        DxgkDdiEscape: Some(on_adapter::<P, fence::Escape, _>),
        DxgkDdiUpdateMonitoredValues: Some(fence::update_monitored_values::<P>),
        DxgkDdiUpdateCurrentValuesFromCpu: Some(fence::update::<P, _>),
        DxgkDdiCreateDevice: Some(on_adapter_mut::<P, context::CreateDevice>),
        DxgkDdiDestroyDevice: Some(context::destroy_device::<P>),
        DxgkDdiCreateContext: Some(on_handle_mut::<P, context::CreateContext>),
        DxgkDdiDestroyContext: Some(context::destroy_context::<P>),
        DxgkDdiGetNodeMetadata: Some(caps::get_node_metadata::<P>),
        DxgkDdiSuspendContext: Some(on_adapter::<P, context::SuspendContext, _>),
        DxgkDdiResumeContext: Some(on_adapter::<P, context::ResumeContext, _>),
        DxgkDdiCreateHwQueue: Some(on_handle_mut::<P, hwqueue::CreateHwQueue>),
        DxgkDdiDestroyHwQueue: Some(hwqueue::destroy_hw_queue::<P>),
        DxgkDdiSubmitCommandToHwQueue: Some(submit::submit_command_to_hw_queue::<P>),
        DxgkDdiCreateDoorbell: Some(on_args_mut::<P, doorbell::CreateDoorbell>),
        DxgkDdiConnectDoorbell: Some(doorbell::connect_doorbell::<P>),
        DxgkDdiDisconnectDoorbell: Some(on_args::<P, doorbell::DisconnectDoorbell, _>),
        DxgkDdiDestroyDoorbell: Some(on_args::<P, doorbell::DestroyDoorbell, _>),
        DxgkDdiNotifyWorkSubmission: Some(on_args::<P, doorbell::NotifyWorkSubmission, _>),
        Reserved4: flush_hw_queue_slot as *const () as *mut c_void,
        DxgkDdiQueryDependentEngineGroup: Some(
            on_adapter_mut::<P, reset::QueryDependentEngineGroup>,
        ),
        DxgkDdiQueryEngineStatus: Some(on_adapter_mut::<P, reset::QueryEngineStatus>),
        DxgkDdiResetEngine: Some(on_adapter_mut::<P, reset::ResetEngine>),
        // Hardware scheduling (crate::hws). CreateHwContext, DestroyHwContext,
        // SwitchToHwContextList and UpdateHwContextState stay NULL: Windows' VidSch never
        // calls them (its hardware contexts are the CreateContext ones, docs/hws.md §2).
        DxgkDdiSetupPriorityBands: Some(on_adapter::<P, hws::SetupPriorityBands, _>),
        DxgkDdiSetSchedulingLogBuffer: Some(on_adapter::<P, hws::SetSchedulingLogBuffer, _>),
        DxgkDdiSetContextSchedulingProperties: Some(
            on_adapter::<P, hws::SetContextSchedulingProperties, _>,
        ),
        DxgkDdiResetHwEngine: Some(on_adapter::<P, reset::ResetHwEngine, _>),
        DxgkDdiResumeHwEngine: Some(on_adapter::<P, reset::ResumeHwEngine, _>),
        DxgkDdiCollectDbgInfo: Some(on_adapter::<P, dbginfo::CollectDbgInfo, _>),
        DxgkDdiCollectDbgInfo2: Some(on_adapter::<P, dbginfo::CollectDbgInfo2, _>),
        DxgkDdiResetFromTimeout: Some(on_context::<P, reset::ResetFromTimeout>),
        DxgkDdiRestartFromTimeout: Some(on_context::<P, reset::RestartFromTimeout>),
        DxgkDdiSetNativeFenceLogBuffer: Some(on_args::<P, log::SetNativeFenceLogBuffer, _>),
        DxgkDdiUpdateNativeFenceLogs: Some(on_args::<P, log::UpdateNativeFenceLogs, _>),
        DxgkDdiCalibrateGpuClock: Some(clock::calibrate_gpu_clock::<P>),
        DxgkDdiSetStablePowerState: Some(clock::set_stable_power_state::<P>),
        // Runtime power management (UM-13, crate::power).
        DxgkDdiSetPowerComponentFState: Some(power::set_power_component_fstate::<P>),
        DxgkDdiPowerRuntimeControlRequest: Some(power::power_runtime_control_request::<P>),
        DxgkDdiSubmitCommand: Some(on_adapter::<P, node::SubmitCommand, _>),
        DxgkDdiSubmitCommandVirtual: Some(on_adapter::<P, node::SubmitCommandVirtual, _>),
        DxgkDdiPreemptCommand: Some(on_adapter::<P, node::PreemptCommand, _>),
        DxgkDdiQueryCurrentFence: Some(on_adapter_mut::<P, node::QueryCurrentFence>),
        DxgkDdiBuildPagingBuffer: Some(on_adapter_mut::<P, paging::BuildPagingBuffer>),
        DxgkDdiPresent: Some(present::present),
        DxgkDdiControlInterrupt: Some(present::control_interrupt),
        DxgkDdiCreateProcess: Some(on_adapter_mut::<P, process::CreateProcess>),
        DxgkDdiDestroyProcess: Some(on_context_with::<P, process::DestroyProcess>),
        DxgkDdiGetRootPageTableSize: Some(process::get_root_page_table_size::<P>),
        DxgkDdiSetRootPageTable: Some(process::set_root_page_table::<P>),
        DxgkDdiCreateAllocation: Some(on_adapter_mut::<P, allocation::CreateAllocation>),
        DxgkDdiDestroyAllocation: Some(on_adapter::<P, allocation::DestroyAllocation, _>),
        DxgkDdiDescribeAllocation: Some(allocation::describe_allocation),
        DxgkDdiGetStandardAllocationDriverData: Some(
            allocation::get_standard_allocation_driver_data,
        ),
        DxgkDdiOpenAllocation: Some(on_handle::<P, allocation::OpenAllocation, _>),
        DxgkDdiCloseAllocation: Some(on_handle::<P, allocation::CloseAllocation, _>),
        ..Default::default()
    }
}
