//! `D3DKMTGetDeviceState`'s kernel entry, as 24H2 `K:DxgkGetDeviceStateInternal` @0x1402AB150
//! (from `K:DxgkGetDeviceState` @0x1402AB120, previous mode user) answers it: the caller's
//! `D3DKMT_GETDEVICESTATE` as written, the checks in their order with their statuses, and the
//! state back. What an application reads to see that its device was lost, and why.

pub use rvgpu_ddi::d3dkmt::D3DKMT_GETDEVICESTATE;
use rvgpu_umd::kmt::{DeviceExecutionState, KmtHandle, NtStatus};

use super::refusal::row::*;
use crate::machine::Machine;
use crate::state::ums::{DeviceError, DxgDeviceState};
use crate::ums::{self, UmsProcess};

/// `D3DKMT_DEVICESTATE_EXECUTION`.
pub const DEVICESTATE_EXECUTION: u32 = 1;
/// `D3DKMT_DEVICESTATE_PRESENT`.
pub const DEVICESTATE_PRESENT: u32 = 2;
/// `D3DKMT_DEVICESTATE_RESET`.
pub const DEVICESTATE_RESET: u32 = 3;
/// `D3DKMT_DEVICESTATE_PRESENT_DWM`.
pub const DEVICESTATE_PRESENT_DWM: u32 = 4;
/// `D3DKMT_DEVICESTATE_PAGE_FAULT`.
pub const DEVICESTATE_PAGE_FAULT: u32 = 5;
/// `D3DKMT_DEVICESTATE_PRESENT_QUEUE`.
pub const DEVICESTATE_PRESENT_QUEUE: u32 = 6;

/// The state union's first `UINT` (`ExecutionState`, `ResetState`).
pub fn first_u32(a: &D3DKMT_GETDEVICESTATE) -> u32 {
    a.State[0] as u32
}

fn set_first_u32(a: &mut D3DKMT_GETDEVICESTATE, v: u32) {
    a.State[0] = (a.State[0] & !0xFFFF_FFFF) | u64::from(v);
}

/// What 24H2 wrote back, for the caller to copy out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrittenBack {
    /// The whole structure (every state type but RESET).
    All,
    /// Only `ResetState` (RESET, written straight to the caller's memory).
    ResetState,
}

refusals! {
    /// `D3DKMTGetDeviceState`'s refusals, in 24H2's order.
    GetDeviceStateCheck => GET_DEVICE_STATE_CHECKS {
        ProcessContext: "no process context" => INVALID_PARAMETER,
            elsewhere "every simulated caller is a process";
        Device: "StateType not RESET and hDevice not a device handle in the caller's table" => INVALID_PARAMETER;
        PresentRemoved: "StateType PRESENT or PRESENT_DWM on an adapter not active" => DEVICE_REMOVED;
        PresentSource: "StateType PRESENT or PRESENT_DWM: PresentState.VidPnSourceId not below the \
            device's display adapter's source count" => INVALID_PARAMETER,
            elsewhere "not reached: no simulated device has a display adapter";
        PresentNoDisplay: "StateType PRESENT or PRESENT_DWM: the device has no display adapter (a \
            render-only adapter's device)" => INVALID_PARAMETER;
        DeviceRemoved: "StateType PAGE_FAULT or PRESENT_QUEUE on a device not active (stopped with its \
            adapter)" => DEVICE_REMOVED;
        QueueSource: "StateType PRESENT_QUEUE: PresentState.VidPnSourceId not below the adapter's \
            source count (M:VidSchWaitForQueuedPresentLimit @0x1400F0C50; none on a \
            render-only adapter)" => INVALID_PARAMETER;
        QueueError: "StateType PRESENT_QUEUE: the device in error (M:VidSchWaitForQueuedPresentLimit)" => GPU_EXCEPTION_ON_DEVICE,
            elsewhere "not reached: a render-only adapter has no source, so the source check refuses first";
        StateType: "StateType 0, or above PRESENT_QUEUE (7 and up)" => INVALID_PARAMETER;
    }
}

/// `D3DKMTGetDeviceState`'s row of the thunk catalog ([`super::catalog`]).
pub const GET_DEVICE_STATE: Thunk = Thunk {
    name: "D3DKMTGetDeviceState",
    source: Some(&[
        src("DxgkGetDeviceState", 0x1402AB120),
        src("DxgkGetDeviceStateInternal", 0x1402AB150),
        src("DXGDEVICE::GetDeviceExecutionState", 0x1402ABBB0),
        src("DXGDEVICE::QueryLastCompletedPresentId", 0x1401872E8),
        src("DXGDEVICE::QueryLastCompletedPresentIdDWM", 0x1402ABF50),
    ]),
    checks: GET_DEVICE_STATE_CHECKS,
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

/// `DxgkGetDeviceStateInternal` for the caller's structure `a` (a caller with a process
/// context: the bridge's and SimKmt's callers have one), in 24H2's order (a native adapter):
/// 1. `StateType` RESET: no device looked up; `ResetState.DesktopSwitched` from the process
///    (no desktop switch in the simulation: 0), success;
/// 2. `hDevice` not a device in the caller's handle table (`device`): STATUS_INVALID_PARAMETER;
/// 3. EXECUTION: `K:DXGDEVICE::GetDeviceExecutionState` @0x1402ABBB0 (`execution_state`);
/// 4. PRESENT, PRESENT_DWM: the adapter not active, STATUS_DEVICE_REMOVED; else the device's
///    display adapter answers, and the render-only adapter's devices have none:
///    `K:DXGDEVICE::QueryLastCompletedPresentId` @0x1401872E8 and
///    `K:DXGDEVICE::QueryLastCompletedPresentIdDWM` @0x1402ABF50, STATUS_INVALID_PARAMETER;
/// 5. PAGE_FAULT, PRESENT_QUEUE: the device not active (its adapter removed, `K:DXGDEVICE::Stop`
///    @0x1401BBA38), STATUS_DEVICE_REMOVED; PAGE_FAULT: VidSch's page-fault record of the
///    device (`M:VidSchGetDevicePageFaultInformation` @0x1400A6FC0; none kept here: zeros),
///    success; PRESENT_QUEUE: `M:VidSchWaitForQueuedPresentLimit` @0x1400F0C50 refuses a
///    `VidPnSourceId` not below the adapter's source count, every one on a render-only
///    adapter: STATUS_INVALID_PARAMETER;
/// 6. any other type: STATUS_INVALID_PARAMETER.
///
/// On failure `a` is unchanged.
pub fn dxgk_get_device_state_internal(
    m: &Machine,
    a: &mut D3DKMT_GETDEVICESTATE,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<WrittenBack, NtStatus> {
    let bad = GetDeviceStateCheck::Device.refuse();
    if a.StateType == DEVICESTATE_RESET {
        // `*(a1 + 8) = v5`: 1 only when the process's desktop check fails; the simulated
        // processes have one desktop.
        set_first_u32(a, 0);
        return Ok(WrittenBack::ResetState);
    }
    let p = device(a.hDevice).ok_or(bad)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    let err = ums::device_error(&sh, p.device).ok_or(bad)?;
    let state = ums::device_state(&sh, p.device).ok_or(bad)?;
    // The adapter's state (DXGADAPTER +200) and the DXGDEVICE's (+608): a removal stops
    // both (`K:ADAPTER_RENDER::Stop` @0x14019FC38 stops each device), an adapter-wide reset
    // resets the device (`K:DXGDEVICE::Reset` @0x1401BB7FC).
    let active = ums::device_active(&sh, p.device);
    match a.StateType {
        DEVICESTATE_EXECUTION => {
            set_first_u32(a, execution_state(state, err).0);
            Ok(WrittenBack::All)
        }
        DEVICESTATE_PRESENT | DEVICESTATE_PRESENT_DWM if !active => {
            Err(GetDeviceStateCheck::PresentRemoved.refuse())
        }
        // No display adapter: the query's own refusal (the `VidPnSourceId` bound is the
        // display adapter's, so it is not reached).
        DEVICESTATE_PRESENT | DEVICESTATE_PRESENT_DWM => {
            Err(GetDeviceStateCheck::PresentNoDisplay.refuse())
        }
        DEVICESTATE_PAGE_FAULT | DEVICESTATE_PRESENT_QUEUE if !active => {
            Err(GetDeviceStateCheck::DeviceRemoved.refuse())
        }
        DEVICESTATE_PAGE_FAULT => {
            // `D3DKMT_DEVICEPAGEFAULT_STATE`, the union's first 32 bytes.
            a.State[..4].fill(0);
            Ok(WrittenBack::All)
        }
        // No VidPn source on a render-only adapter.
        DEVICESTATE_PRESENT_QUEUE => Err(GetDeviceStateCheck::QueueSource.refuse()),
        _ => Err(GetDeviceStateCheck::StateType.refuse()),
    }
}

/// `K:DXGDEVICE::GetDeviceExecutionState` @0x1402ABBB0 on a native adapter: the DXGDEVICE's
/// state first (2, reset with its adapter: RESET; 3, reset while hung: HUNG; 4, stopped with
/// its removed adapter, `K:DXGDEVICE::Stop` @0x1401BBA38: STOPPED); an active one (1) answers
/// VidSch's error reason of the device (0 with no reset flag: ACTIVE; 7: HUNG; 6: DMAFAULT;
/// 9, 10, 15..19, 24: DMAPAGEFAULT; 14, 22, 25, 26: STOPPED; 2, 11..13 and any other:
/// OUTOFMEMORY).
pub(crate) fn execution_state(
    state: DxgDeviceState,
    err: Option<DeviceError>,
) -> DeviceExecutionState {
    match state {
        DxgDeviceState::Reset => return DeviceExecutionState::RESET,
        DxgDeviceState::Hung => return DeviceExecutionState::HUNG,
        DxgDeviceState::Stopped => return DeviceExecutionState::STOPPED,
        DxgDeviceState::Active => {}
    }
    match err {
        None => DeviceExecutionState::ACTIVE,
        Some(DeviceError::Hung) => DeviceExecutionState::HUNG,
        Some(DeviceError::PageFault | DeviceError::SubmitRefused) => {
            DeviceExecutionState::ERROR_DMAPAGEFAULT
        }
        Some(DeviceError::Flushed | DeviceError::Reset | DeviceError::Removed) => {
            DeviceExecutionState::STOPPED
        }
        // `K:DXGDEVICE::GetDeviceExecutionState` @0x1402ABBB0: every other reason.
        Some(DeviceError::Other(_)) => DeviceExecutionState::ERROR_OUTOFMEMORY,
    }
}
