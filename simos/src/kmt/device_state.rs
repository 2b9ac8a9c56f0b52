//! `D3DKMTGetDeviceState`'s kernel entry, as 24H2 `K:DxgkGetDeviceStateInternal` @0x1402AB150
//! (from `K:DxgkGetDeviceState` @0x1402AB120, previous mode user) answers it: the caller's
//! `D3DKMT_GETDEVICESTATE` as written, the checks in their order with their statuses, and the
//! state back. What an application reads to see that its device was lost, and why.

pub use rvgpu_ddi::d3dkmt::D3DKMT_GETDEVICESTATE;
use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_INVALID_PARAMETER};
use rvgpu_umd::kmt::{DeviceExecutionState, KmtHandle, NtStatus};

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
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
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
    let removed = NtStatus(STATUS_DEVICE_REMOVED);
    match a.StateType {
        DEVICESTATE_EXECUTION => {
            set_first_u32(a, execution_state(state, err).0);
            Ok(WrittenBack::All)
        }
        DEVICESTATE_PRESENT | DEVICESTATE_PRESENT_DWM if !active => Err(removed),
        // No display adapter: the query's own refusal (the `VidPnSourceId` bound is the
        // display adapter's, so it is not reached).
        DEVICESTATE_PRESENT | DEVICESTATE_PRESENT_DWM => Err(bad),
        DEVICESTATE_PAGE_FAULT | DEVICESTATE_PRESENT_QUEUE if !active => Err(removed),
        DEVICESTATE_PAGE_FAULT => {
            // `D3DKMT_DEVICEPAGEFAULT_STATE`, the union's first 32 bytes.
            a.State[..4].fill(0);
            Ok(WrittenBack::All)
        }
        // No VidPn source on a render-only adapter.
        DEVICESTATE_PRESENT_QUEUE => Err(bad),
        _ => Err(bad),
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
