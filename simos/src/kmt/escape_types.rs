//! `D3DKMTEscape`'s types other than `D3DKMT_ESCAPE_DRIVERPRIVATE`, as 24H2 `K:DxgkEscape`
//! @0x140419AB0 answers them on this machine: a render-only adapter (no display core, its own
//! render core), not paravirtualised, no Win32k, no basic display adapter, no IOMMU, no
//! `TdrTestMode` in the registry, DRT off. Each type's checks are 24H2's, in its order, with
//! its statuses; what 24H2 answers from state the simulation does not keep is
//! STATUS_NOT_SUPPORTED, the simulation's answer (the catalog row's gaps).

use rvgpu_ddi::ntstatus::{
    self, STATUS_ACCESS_DENIED, STATUS_INVALID_PARAMETER, STATUS_NOT_FOUND, STATUS_NOT_SUPPORTED,
    STATUS_UNSUCCESSFUL,
};
use rvgpu_umd::kmt::NtStatus;

use super::escape::{D3DKMT_ESCAPE, HARDWARE_ACCESS};

/// `D3DKMT_ESCAPE_VIDMM`.
pub const VIDMM: u32 = 1;
/// `D3DKMT_ESCAPE_TDRDBGCTRL`.
pub const TDRDBGCTRL: u32 = 2;
/// `D3DKMT_ESCAPE_VIDSCH`.
pub const VIDSCH: u32 = 3;
/// `D3DKMT_ESCAPE_DEVICE`.
pub const DEVICE: u32 = 4;
/// `D3DKMT_ESCAPE_DMM`.
pub const DMM: u32 = 5;
/// `D3DKMT_ESCAPE_DEBUG_SNAPSHOT`.
pub const DEBUG_SNAPSHOT: u32 = 6;
/// `D3DKMT_ESCAPE_DRT_TEST`.
pub const DRT_TEST: u32 = 8;
/// `D3DKMT_ESCAPE_DIAGNOSTICS`.
pub const DIAGNOSTICS: u32 = 9;
/// `D3DKMT_ESCAPE_OUTPUTDUPL_SNAPSHOT`.
pub const OUTPUTDUPL_SNAPSHOT: u32 = 10;
/// `D3DKMT_ESCAPE_OUTPUTDUPL_DIAGNOSTICS`.
pub const OUTPUTDUPL_DIAGNOSTICS: u32 = 11;
/// `D3DKMT_ESCAPE_BDD_PNP`.
pub const BDD_PNP: u32 = 12;
/// `D3DKMT_ESCAPE_BDD_FALLBACK`.
pub const BDD_FALLBACK: u32 = 13;
/// `D3DKMT_ESCAPE_ACTIVATE_SPECIFIC_DIAG`.
pub const ACTIVATE_SPECIFIC_DIAG: u32 = 14;
/// `D3DKMT_ESCAPE_MODES_PRUNED_OUT`.
pub const MODES_PRUNED_OUT: u32 = 15;
/// `D3DKMT_ESCAPE_WHQL_INFO`.
pub const WHQL_INFO: u32 = 16;
/// `D3DKMT_ESCAPE_BRIGHTNESS`.
pub const BRIGHTNESS: u32 = 17;
/// `D3DKMT_ESCAPE_EDID_CACHE`.
pub const EDID_CACHE: u32 = 18;
/// `D3DKMT_ESCAPE_MIRACAST_DISPLAY_REQUEST`.
pub const MIRACAST_DISPLAY_REQUEST: u32 = 20;
/// `D3DKMT_ESCAPE_HISTORY_BUFFER_STATUS`.
pub const HISTORY_BUFFER_STATUS: u32 = 21;
/// `D3DKMT_ESCAPE_MIRACAST_ADAPTER_DIAG_INFO`.
pub const MIRACAST_ADAPTER_DIAG_INFO: u32 = 23;
/// `D3DKMT_ESCAPE_FORCE_BDDFALLBACK_HEADLESS`.
pub const FORCE_BDDFALLBACK_HEADLESS: u32 = 24;
/// `D3DKMT_ESCAPE_REQUEST_MACHINE_CRASH`.
pub const REQUEST_MACHINE_CRASH: u32 = 25;
/// `D3DKMT_ESCAPE_SOFTGPU_ENABLE_DISABLE_HMD`.
pub const SOFTGPU_ENABLE_DISABLE_HMD: u32 = 27;
/// `D3DKMT_ESCAPE_PROCESS_VERIFIER_OPTION`.
pub const PROCESS_VERIFIER_OPTION: u32 = 28;
/// `D3DKMT_ESCAPE_ADAPTER_VERIFIER_OPTION`.
pub const ADAPTER_VERIFIER_OPTION: u32 = 29;
/// `D3DKMT_ESCAPE_IDD_REQUEST`.
pub const IDD_REQUEST: u32 = 30;
/// `D3DKMT_ESCAPE_DOD_SET_DIRTYRECT_MODE`.
pub const DOD_SET_DIRTYRECT_MODE: u32 = 31;
/// `D3DKMT_ESCAPE_LOG_CODEPOINT_PACKET`.
pub const LOG_CODEPOINT_PACKET: u32 = 32;
/// `D3DKMT_ESCAPE_LOG_USERMODE_DAIG_PACKET`.
pub const LOG_USERMODE_DAIG_PACKET: u32 = 33;
/// `D3DKMT_ESCAPE_GET_EXTERNAL_DIAGNOSTICS`.
pub const GET_EXTERNAL_DIAGNOSTICS: u32 = 34;
/// `D3DKMT_ESCAPE_GET_DISPLAY_CONFIGURATIONS`.
pub const GET_DISPLAY_CONFIGURATIONS: u32 = 36;
/// `D3DKMT_ESCAPE_QUERY_IOMMU_STATUS`.
pub const QUERY_IOMMU_STATUS: u32 = 37;
/// `D3DKMT_ESCAPE_CCD_DATABASE`.
pub const CCD_DATABASE: u32 = 38;
/// `D3DKMT_ESCAPE_QUERY_DMA_REMAPPING_STATUS`.
pub const QUERY_DMA_REMAPPING_STATUS: u32 = 39;
/// `D3DKMT_ESCAPE_WIN32K_START`: this type and every later one are Win32k's.
pub const WIN32K_START: u32 = 1024;

/// `D3DKMT_DRT_ESCAPE_HEAD`'s signature.
const DRT_SIGNATURE: u32 = 0x5874_7244;

fn st(s: i32) -> NtStatus {
    NtStatus(s)
}

fn dword(data: &[u8], i: usize) -> u32 {
    let at = i.saturating_mul(4);
    data.get(at..at.saturating_add(4))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes)
}

/// What 24H2 answers for a type before it looks at any handle (after the capture and the
/// `DriverKnownEscape` checks): `None` when it goes on to the adapter. Nothing is written
/// back on these paths.
pub(super) fn before_handles(
    a: &D3DKMT_ESCAPE,
    data: &[u8],
    signing: bool,
) -> Option<Result<(), NtStatus>> {
    let bad = Err(st(STATUS_INVALID_PARAMETER));
    let denied = Err(st(STATUS_ACCESS_DENIED));
    let not_modelled = Err(st(STATUS_NOT_SUPPORTED));
    let size = a.PrivateDriverDataSize;
    let r = match a.Type {
        // Evict, evict by NT handle, evict the process's resources: VidMm's, not modelled.
        VIDMM if matches!(dword(data, 0), 5 | 6 | 13) => not_modelled,
        DRT_TEST if size < 12 || size < dword(data, 1) || dword(data, 0) != DRT_SIGNATURE => bad,
        // `K:InternalEscapeEnabled` @0x14018B96C: test signing or DRT.
        DRT_TEST if !signing => denied,
        DRT_TEST => not_modelled,
        DIAGNOSTICS | GET_EXTERNAL_DIAGNOSTICS
            if size < 4 || u64::from(size) != u64::from(dword(data, 0)) + 4 =>
        {
            bad
        }
        DIAGNOSTICS | GET_EXTERNAL_DIAGNOSTICS | MIRACAST_DISPLAY_REQUEST | IDD_REQUEST => {
            not_modelled
        }
        FORCE_BDDFALLBACK_HEADLESS | SOFTGPU_ENABLE_DISABLE_HMD if !signing => denied,
        FORCE_BDDFALLBACK_HEADLESS if size != 1 => bad,
        FORCE_BDDFALLBACK_HEADLESS => Ok(()),
        REQUEST_MACHINE_CRASH if size != 24 => bad,
        REQUEST_MACHINE_CRASH => Err(st(STATUS_UNSUCCESSFUL)),
        SOFTGPU_ENABLE_DISABLE_HMD if size != 200 => bad,
        SOFTGPU_ENABLE_DISABLE_HMD => not_modelled,
        LOG_CODEPOINT_PACKET if size != 16 => bad,
        LOG_CODEPOINT_PACKET => Ok(()),
        LOG_USERMODE_DAIG_PACKET if size < 0x30 || size < dword(data, 1) => bad,
        LOG_USERMODE_DAIG_PACKET if dword(data, 1) >= 0x400 => bad,
        // Written into Dxgkrnl's diagnostic buffer.
        LOG_USERMODE_DAIG_PACKET => Ok(()),
        CCD_DATABASE if size < 4 => bad,
        CCD_DATABASE => not_modelled,
        // No basic display adapter to fall back to.
        // No basic display adapter to fall back to.
        BDD_FALLBACK => Err(st(STATUS_NOT_FOUND)),
        _ => return None,
    };
    Some(r)
}

/// 24H2's check of a type between the flags and the adapter's state: VIDMM's suspend command
/// (9) without its fifth dword and without DRT (`DxgEscapeSuspendResumeProcess`'s caller).
pub(super) fn before_access(a: &D3DKMT_ESCAPE, data: &[u8]) -> Result<(), NtStatus> {
    if a.Type == VIDMM && dword(data, 0) == 9 && dword(data, 4) == 0 {
        return Err(st(STATUS_ACCESS_DENIED));
    }
    Ok(())
}

/// What 24H2 answers for a type once the handles, the flags and the adapter's and device's
/// state passed: `Ok(true)` when the kernel copy `data` goes back to the caller. `device`:
/// `hDevice` names one.
pub(super) fn with_adapter(
    a: &D3DKMT_ESCAPE,
    data: &mut [u8],
    device: bool,
) -> Result<bool, NtStatus> {
    let bad = Err(st(STATUS_INVALID_PARAMETER));
    let not_supported = Err(st(STATUS_NOT_SUPPORTED));
    let size = a.PrivateDriverDataSize;
    match a.Type {
        // VidMm's escapes (suspend and resume among them): not modelled.
        VIDMM => not_supported,
        TDRDBGCTRL => tdr_dbg_ctrl(a, data),
        VIDSCH => vidsch(a, data),
        DEVICE if size < 12 || !device => bad,
        // `DXGDEVICE::Escape`: not modelled.
        DEVICE => not_supported,
        // The display core's: none on a render-only adapter.
        DMM | OUTPUTDUPL_SNAPSHOT | OUTPUTDUPL_DIAGNOSTICS | MODES_PRUNED_OUT => not_supported,
        DEBUG_SNAPSHOT if size < 8 => bad,
        // `DxgDbgTakeSnapshot`: not modelled.
        DEBUG_SNAPSHOT => not_supported,
        // Not the basic display driver's adapter: ntstatus.h's name for 0xC01E0002.
        BDD_PNP => Err(st(ntstatus::STATUS_GRAPHICS_INVALID_DISPLAY_ADAPTER)),
        ACTIVATE_SPECIFIC_DIAG if size != 8 => bad,
        // Switches a global diagnostic on or off.
        ACTIVATE_SPECIFIC_DIAG if dword(data, 0) == 0 => Ok(true),
        ACTIVATE_SPECIFIC_DIAG if dword(data, 0) != MODES_PRUNED_OUT => bad,
        ACTIVATE_SPECIFIC_DIAG => not_supported,
        WHQL_INFO if size < 4 => bad,
        // The adapter's WHQL dword: not modelled.
        WHQL_INFO => not_supported,
        BRIGHTNESS if a.Flags & HARDWARE_ACCESS == 0 || size < 0x60C => bad,
        BRIGHTNESS => not_supported,
        EDID_CACHE if size < 4 || u64::from(size) != u64::from(dword(data, 0)) + 4 => bad,
        EDID_CACHE => not_supported,
        HISTORY_BUFFER_STATUS if size < 8 || !device => bad,
        HISTORY_BUFFER_STATUS => {
            // No history-buffer tracing: the first byte 0, the second dword 0.
            write(data, 0, &[0]);
            write(data, 4, &[0; 4]);
            Ok(true)
        }
        MIRACAST_ADAPTER_DIAG_INFO if size != 32 => bad,
        MIRACAST_ADAPTER_DIAG_INFO => not_supported,
        PROCESS_VERIFIER_OPTION | ADAPTER_VERIFIER_OPTION => verifier(a.Type, data),
        // A render adapter takes no dirty-rectangle mode.
        DOD_SET_DIRTYRECT_MODE => bad,
        // `K:DXGADAPTER::IsFullWDDMAdapter` @0x140054D34: a display core too.
        GET_DISPLAY_CONFIGURATIONS => bad,
        QUERY_IOMMU_STATUS | QUERY_DMA_REMAPPING_STATUS if size == 0 => bad,
        QUERY_IOMMU_STATUS | QUERY_DMA_REMAPPING_STATUS => {
            // `SysMmQueryIommuState`: no IOMMU.
            write(data, 0, &[0]);
            Ok(true)
        }
        _ => bad,
    }
}

fn write(data: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(d) = data.get_mut(at..at.saturating_add(bytes.len())) {
        d.copy_from_slice(bytes);
    }
}

/// `D3DKMT_ESCAPE_TDRDBGCTRL`: the command is the first dword; every command but the three
/// `TdrDbgCtrl` ones needs `TdrTestMode` in the registry, which the simulation has not.
fn tdr_dbg_ctrl(a: &D3DKMT_ESCAPE, data: &[u8]) -> Result<bool, NtStatus> {
    let size = a.PrivateDriverDataSize;
    // No data: `TdrDbgCtrl(0)`, not modelled.
    if a.pPrivateDriverData == 0 {
        return Err(st(STATUS_NOT_SUPPORTED));
    }
    if size < 4 {
        return Err(st(STATUS_INVALID_PARAMETER));
    }
    match dword(data, 0) {
        // `TdrDbgCtrl`: not modelled.
        0..=2 => Err(st(STATUS_NOT_SUPPORTED)),
        8 if size < 8 => Err(st(STATUS_INVALID_PARAMETER)),
        3..=8 => Err(st(STATUS_NOT_SUPPORTED)),
        _ => Err(st(STATUS_INVALID_PARAMETER)),
    }
}

/// `D3DKMT_ESCAPE_VIDSCH` (test signing only): command 2 refused, command 3 a delay of up to
/// half a second that needs `Flags.HardwareAccess`, the rest VidSch's (not modelled).
fn vidsch(a: &D3DKMT_ESCAPE, data: &mut [u8]) -> Result<bool, NtStatus> {
    match dword(data, 0) {
        2 => Err(st(STATUS_INVALID_PARAMETER)),
        3 if a.Flags & HARDWARE_ACCESS == 0 => Err(st(STATUS_INVALID_PARAMETER)),
        // `KeDelayExecutionThread` for the given hundreds of nanoseconds (at most 5000000):
        // the simulation does not sleep.
        3 => Ok(true),
        _ => Err(st(STATUS_NOT_SUPPORTED)),
    }
}

/// `D3DKMT_ESCAPE_PROCESS_VERIFIER_OPTION` and `..._ADAPTER_VERIFIER_OPTION` (test signing
/// only): their layout checked, then VidMm's (not modelled).
fn verifier(ty: u32, data: &mut [u8]) -> Result<bool, NtStatus> {
    let bad = Err(st(STATUS_INVALID_PARAMETER));
    if data.len() < 0x20 {
        return bad;
    }
    let (on, option) = if ty == PROCESS_VERIFIER_OPTION {
        if dword(data, 0) != 0 || dword(data, 1) != 0 {
            return bad;
        }
        (dword(data, 3), dword(data, 2))
    } else {
        (dword(data, 1), dword(data, 0))
    };
    if on > 1 || !matches!(option, 1000 | 1001) {
        return bad;
    }
    Err(st(STATUS_NOT_SUPPORTED))
}
