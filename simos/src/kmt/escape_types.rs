//! `D3DKMTEscape`'s types other than `D3DKMT_ESCAPE_DRIVERPRIVATE`, as 24H2 `K:DxgkEscape`
//! @0x140419AB0 answers them on this machine: a render-only adapter (no display core, its own
//! render core), not paravirtualised, no Win32k, no basic display adapter, no IOMMU, no
//! `TdrTestMode` in the registry, DRT off. Each type's checks are 24H2's, in its order, with
//! its statuses; what 24H2 answers from state the simulation does not keep is
//! STATUS_NOT_SUPPORTED, the simulation's answer (the catalog row's gaps).

use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
use rvgpu_umd::kmt::NtStatus;

use rvgpu_ddi::d3dkmt::D3DKMT_ESCAPE;

use super::refusal::row::*;

/// `DXGKDDI_INTERFACE_VERSION_WDDM2_0`: from this interface version on, `DxgkEscape` refuses
/// the reserved flags and `VirtualMachineData`, and `NoAdapterSynchronization` spares a
/// driver-private escape the adapter's lock (`K:DxgkEscape` @0x140419AB0 compares the version
/// `K:DXGADAPTER::Initialize` @0x14018FAF8 keeps at DXGADAPTER +0x8E8).
pub const INTERFACE_WDDM2_0: u32 = 0x5023;
/// `D3DDDI_ESCAPEFLAGS::HardwareAccess`.
pub const HARDWARE_ACCESS: u32 = 1 << 0;
/// `D3DDDI_ESCAPEFLAGS::NoAdapterSynchronization`.
pub const NO_ADAPTER_SYNCHRONIZATION: u32 = 1 << 3;
/// `D3DDDI_ESCAPEFLAGS::Reserved`.
pub const RESERVED: u32 = 1 << 4;
/// `D3DDDI_ESCAPEFLAGS::VirtualMachineData`.
pub const VIRTUAL_MACHINE_DATA: u32 = 1 << 5;
/// `D3DDDI_ESCAPEFLAGS::DriverKnownEscape`.
pub const DRIVER_KNOWN_ESCAPE: u32 = 1 << 6;
/// `D3DDDI_ESCAPEFLAGS::DriverCommonEscape`.
pub const DRIVER_COMMON_ESCAPE: u32 = 1 << 7;
/// `D3DDDI_ESCAPEFLAGS::Reserved2` (bits 8..31).
pub const RESERVED2: u32 = 0xFFFF_FF00;
refusals! {
    /// `D3DKMTEscape`'s refusals, in 24H2's order.
    EscapeCheck => pub(super) ESCAPE_CHECKS {
        ProcessContext: "no process context" => INVALID_PARAMETER,
            elsewhere "every simulated caller is a process";
        TypeVIDMMVIDSCH: "Type VIDMM, VIDSCH, 28 or 29 without test signing or DRT" => ACCESS_DENIED;
        TypeVIDMMPrivateDriverDataSize: "Type VIDMM: PrivateDriverDataSize under 0x840" => INVALID_PARAMETER;
        PrivateDriverDataSizeOverX200: "PrivateDriverDataSize over 0x200 and no pool for the kernel copy" => NO_MEMORY;
        PPrivateDriverDataReadablePrivateDriverDataSize: "pPrivateDriverData not readable for PrivateDriverDataSize bytes (copied before \
            any handle is looked at)" => ACCESS_VIOLATION;
        FlagsDriverKnownEscapeType: "Flags.DriverKnownEscape with a Type other than DRIVERPRIVATE, hAdapter 0 or \
            Flags.HardwareAccess" => INVALID_PARAMETER;
        TypeDRTTEST: "Type DRT_TEST: PrivateDriverDataSize under 12 or under its second dword, or the \
            first dword not the DRT signature" => INVALID_PARAMETER;
        TypeDRTTEST2: "Type DRT_TEST without test signing or DRT (InternalEscapeEnabled)" => ACCESS_DENIED;
        TypeDIAGNOSTICSGET: "Type DIAGNOSTICS or GET_EXTERNAL_DIAGNOSTICS: PrivateDriverDataSize under 4 or \
            not its first dword + 4" => INVALID_PARAMETER;
        TypeFORCEBDDFALLBACK: "Type FORCE_BDDFALLBACK_HEADLESS or SOFTGPU_ENABLE_DISABLE_HMD without test signing" => ACCESS_DENIED;
        TypeFORCEBDDFALLBACK2: "Type FORCE_BDDFALLBACK_HEADLESS: PrivateDriverDataSize not 1" => INVALID_PARAMETER;
        TypeREQUESTMACHINE: "Type REQUEST_MACHINE_CRASH: PrivateDriverDataSize not 24" => INVALID_PARAMETER;
        TypeREQUESTMACHINE2: "Type REQUEST_MACHINE_CRASH (no crash on request)" => UNSUCCESSFUL;
        TypeSOFTGPUENABLE: "Type SOFTGPU_ENABLE_DISABLE_HMD: PrivateDriverDataSize not 200" => INVALID_PARAMETER;
        TypeLOGCODEPOINT: "Type LOG_CODEPOINT_PACKET: PrivateDriverDataSize not 16" => INVALID_PARAMETER;
        TypeLOGUSERMODE: "Type LOG_USERMODE_DAIG_PACKET: PrivateDriverDataSize under 0x30 or under its \
            second dword, or that dword 0x400 or more" => INVALID_PARAMETER;
        TypeCCDDATABASE: "Type CCD_DATABASE: PrivateDriverDataSize under 4" => INVALID_PARAMETER;
        TypeBDDFALLBACK: "Type BDD_FALLBACK with no basic display adapter to fall back to" => NOT_FOUND;
        HAdapterAdapterHandle: "hAdapter not an adapter handle in the caller's table, 0 included (the types \
            the kernel answers without an adapter end before this)" => INVALID_PARAMETER;
        HDeviceDeviceHAdapter: "hDevice not 0 and not a device of hAdapter's adapter in the caller's table" => INVALID_PARAMETER;
        HContextContextHDevice: "hContext not 0 and not a context of hDevice" => INVALID_PARAMETER;
        AdapterDDIVersion: "an adapter of DDI version 0x5023 or later: Flags.Reserved or Flags bits 8..31 \
            set" => INVALID_PARAMETER;
        AdapterDDIVersion2: "an adapter of DDI version 0x5023 or later: Flags.VirtualMachineData set" => INVALID_PARAMETER;
        DRIVERPRIVATEWithoutAdapter: "DRIVERPRIVATE without adapter access (Flags.DriverCommonEscape, \
            Flags.NoAdapterSynchronization from DDI version 0x5023, or a hybrid discrete \
            adapter): the adapter not active" => DEVICE_REMOVED;
        AdapterActiveStarted: "the adapter not active: not started, or removed (COREADAPTERACCESS::AcquireShared \
            reads DXGADAPTER +200)" => DEVICE_REMOVED;
        DeviceActive: "hDevice not 0 and the device not active (DXGDEVICE +608: stopped with its \
            adapter; a device VidSch put in error is active)" => DEVICE_REMOVED;
        FlagsDriverKnownEscapeRender: "Flags.DriverKnownEscape and no render adapter paired with hAdapter" => INVALID_PARAMETER,
            elsewhere "every simulated adapter has its own render core";
        DRIVERPRIVATEDriverHas: "DRIVERPRIVATE: the driver has no DxgkDdiEscape" => NOT_SUPPORTED;
        DRIVERPRIVATEPrivateDriverDataSizePPrivateDriverData: "DRIVERPRIVATE: PrivateDriverDataSize 0 or pPrivateDriverData NULL" => INVALID_PARAMETER;
        DRIVERPRIVATEVendorX1002: "DRIVERPRIVATE to a vendor 0x1002 adapter without adapter flag 8: \
            PrivateDriverDataSize under 12, or the third dword, its low byte \
            cleared, 0x01000C00, 0x01000D00 or 0x01000E00" => NOT_SUPPORTED;
        DRIVERPRIVATEFlagsDriverCommonEscape: "DRIVERPRIVATE with Flags.DriverCommonEscape" => NOT_SUPPORTED;
        TypeVIDMMCommand: "Type VIDMM command 9 (suspend) without its fifth dword and without DRT" => ACCESS_DENIED;
        TypeTDRDBGCTRLPrivateDriverDataSize: "Type TDRDBGCTRL: PrivateDriverDataSize under 4 with data, a command above 8, or \
            command 8 with PrivateDriverDataSize under 8" => INVALID_PARAMETER;
        TypeTDRDBGCTRLCommands: "Type TDRDBGCTRL: commands 3 to 8 without TdrTestMode in the registry" => NOT_SUPPORTED;
        TypeVIDSCHCommand: "Type VIDSCH: command 2, or command 3 without Flags.HardwareAccess" => INVALID_PARAMETER;
        TypeDEVICEPrivateDriverDataSize: "Type DEVICE: PrivateDriverDataSize under 12 or hDevice 0" => INVALID_PARAMETER;
        TypeDMMOUTPUTDUPL: "Type DMM, OUTPUTDUPL_SNAPSHOT, OUTPUTDUPL_DIAGNOSTICS or MODES_PRUNED_OUT (also \
            through ACTIVATE_SPECIFIC_DIAG) on an adapter without a display core" => NOT_SUPPORTED;
        TypeDEBUGSNAPSHOT: "Type DEBUG_SNAPSHOT: PrivateDriverDataSize under 8" => INVALID_PARAMETER;
        TypeBDDPNP: "Type BDD_PNP to an adapter that is not the basic display driver's" => GRAPHICS_INVALID_DISPLAY_ADAPTER;
        TypeACTIVATESPECIFIC: "Type ACTIVATE_SPECIFIC_DIAG: PrivateDriverDataSize not 8, or the first dword \
            neither 0 nor MODES_PRUNED_OUT" => INVALID_PARAMETER;
        TypeWHQLINFO: "Type WHQL_INFO: PrivateDriverDataSize under 4" => INVALID_PARAMETER;
        TypeBRIGHTNESSWithout: "Type BRIGHTNESS without Flags.HardwareAccess or with PrivateDriverDataSize under \
            0x60C" => INVALID_PARAMETER;
        TypeEDIDCACHE: "Type EDID_CACHE: PrivateDriverDataSize under 4 or not its first dword + 4" => INVALID_PARAMETER;
        TypeHISTORYBUFFER: "Type HISTORY_BUFFER_STATUS: PrivateDriverDataSize under 8 or hDevice 0" => INVALID_PARAMETER;
        TypeMIRACASTADAPTER: "Type MIRACAST_ADAPTER_DIAG_INFO: PrivateDriverDataSize not 32" => INVALID_PARAMETER;
        TypePROCESSVERIFIER: "Type PROCESS_VERIFIER_OPTION or ADAPTER_VERIFIER_OPTION: under 0x20 bytes, or a \
            field out of its range" => INVALID_PARAMETER;
        TypeDODSET: "Type DOD_SET_DIRTYRECT_MODE to an adapter with a render core, or \
            GET_DISPLAY_CONFIGURATIONS to one without a display core" => INVALID_PARAMETER;
        TypeQUERYIOMMU: "Type QUERY_IOMMU_STATUS or QUERY_DMA_REMAPPING_STATUS: PrivateDriverDataSize 0" => INVALID_PARAMETER;
        TypeBelowH2: "a Type below 1024 that 24H2 does not know (7, 19, 22, 26, 35, 40 and up)" => INVALID_PARAMETER;
    }
}

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

fn dword(data: &[u8], i: usize) -> u32 {
    let at = i.saturating_mul(4);
    data.get(at..at.saturating_add(4))
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes)
}

/// PCI vendor ID 0x1002, whose driver-private escapes 24H2 screens.
const VENDOR_1002: u16 = 0x1002;

/// Whether 24H2 refuses a driver-private escape with kernel copy `data` (not empty) to an
/// adapter of PCI vendor ID `vendor` (DXGADAPTER +420): `DxgkEscape` screens vendor 0x1002's
/// unless the adapter's +444 bit 3 is set (not identified; the simulation takes it as clear),
/// refusing fewer than 12 bytes, and a third dword that, its low byte cleared, is 0x01000C00,
/// 0x01000D00 or 0x01000E00.
pub(super) fn vendor_refuses(vendor: u16, data: &[u8]) -> bool {
    if vendor != VENDOR_1002 {
        return false;
    }
    data.len() < 12
        || matches!(
            dword(data, 2) & 0xFFFF_FF00,
            0x0100_0C00 | 0x0100_0D00 | 0x0100_0E00
        )
}

/// What 24H2 answers for a type before it looks at any handle (after the capture and the
/// `DriverKnownEscape` checks): `None` when it goes on to the adapter. Nothing is written
/// back on these paths.
pub(super) fn before_handles(
    a: &D3DKMT_ESCAPE,
    data: &[u8],
    signing: bool,
) -> Option<Result<(), NtStatus>> {
    type C = EscapeCheck;
    let no = |c: C| Err(c.refuse());
    let not_modelled = Err(gap(STATUS_NOT_SUPPORTED));
    let size = a.PrivateDriverDataSize;
    let r = match a.Type {
        // Evict, evict by NT handle, evict the process's resources: VidMm's, not modelled.
        VIDMM if matches!(dword(data, 0), 5 | 6 | 13) => not_modelled,
        DRT_TEST if size < 12 || size < dword(data, 1) || dword(data, 0) != DRT_SIGNATURE => {
            no(C::TypeDRTTEST)
        }
        // `K:InternalEscapeEnabled` @0x14018B96C: test signing or DRT.
        DRT_TEST if !signing => no(C::TypeDRTTEST2),
        DRT_TEST => not_modelled,
        DIAGNOSTICS | GET_EXTERNAL_DIAGNOSTICS
            if size < 4 || u64::from(size) != u64::from(dword(data, 0)) + 4 =>
        {
            no(C::TypeDIAGNOSTICSGET)
        }
        DIAGNOSTICS | GET_EXTERNAL_DIAGNOSTICS | MIRACAST_DISPLAY_REQUEST | IDD_REQUEST => {
            not_modelled
        }
        FORCE_BDDFALLBACK_HEADLESS | SOFTGPU_ENABLE_DISABLE_HMD if !signing => {
            no(C::TypeFORCEBDDFALLBACK)
        }
        FORCE_BDDFALLBACK_HEADLESS if size != 1 => no(C::TypeFORCEBDDFALLBACK2),
        FORCE_BDDFALLBACK_HEADLESS => Ok(()),
        REQUEST_MACHINE_CRASH if size != 24 => no(C::TypeREQUESTMACHINE),
        REQUEST_MACHINE_CRASH => no(C::TypeREQUESTMACHINE2),
        SOFTGPU_ENABLE_DISABLE_HMD if size != 200 => no(C::TypeSOFTGPUENABLE),
        SOFTGPU_ENABLE_DISABLE_HMD => not_modelled,
        LOG_CODEPOINT_PACKET if size != 16 => no(C::TypeLOGCODEPOINT),
        LOG_CODEPOINT_PACKET => Ok(()),
        LOG_USERMODE_DAIG_PACKET
            if size < 0x30 || size < dword(data, 1) || dword(data, 1) >= 0x400 =>
        {
            no(C::TypeLOGUSERMODE)
        }
        // Written into Dxgkrnl's diagnostic buffer.
        LOG_USERMODE_DAIG_PACKET => Ok(()),
        CCD_DATABASE if size < 4 => no(C::TypeCCDDATABASE),
        CCD_DATABASE => not_modelled,
        // No basic display adapter to fall back to.
        BDD_FALLBACK => no(C::TypeBDDFALLBACK),
        _ => return None,
    };
    Some(r)
}

/// 24H2's check of a type between the flags and the adapter's state: VIDMM's suspend command
/// (9) without its fifth dword and without DRT (`DxgEscapeSuspendResumeProcess`'s caller).
pub(super) fn before_access(a: &D3DKMT_ESCAPE, data: &[u8]) -> Result<(), NtStatus> {
    if a.Type == VIDMM && dword(data, 0) == 9 && dword(data, 4) == 0 {
        return Err(EscapeCheck::TypeVIDMMCommand.refuse());
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
    type C = EscapeCheck;
    let no = |c: C| Err(c.refuse());
    let not_supported = Err(gap(STATUS_NOT_SUPPORTED));
    let size = a.PrivateDriverDataSize;
    match a.Type {
        // VidMm's escapes (suspend and resume among them): not modelled.
        VIDMM => not_supported,
        TDRDBGCTRL => tdr_dbg_ctrl(a, data),
        VIDSCH => vidsch(a, data),
        DEVICE if size < 12 || !device => no(C::TypeDEVICEPrivateDriverDataSize),
        // `DXGDEVICE::Escape`: not modelled.
        DEVICE => not_supported,
        // The display core's: none on a render-only adapter.
        DMM | OUTPUTDUPL_SNAPSHOT | OUTPUTDUPL_DIAGNOSTICS | MODES_PRUNED_OUT => {
            no(C::TypeDMMOUTPUTDUPL)
        }
        DEBUG_SNAPSHOT if size < 8 => no(C::TypeDEBUGSNAPSHOT),
        // `DxgDbgTakeSnapshot`: not modelled.
        DEBUG_SNAPSHOT => not_supported,
        // Not the basic display driver's adapter: ntstatus.h's name for 0xC01E0002.
        BDD_PNP => no(C::TypeBDDPNP),
        ACTIVATE_SPECIFIC_DIAG if size != 8 => no(C::TypeACTIVATESPECIFIC),
        // Switches a global diagnostic on or off.
        ACTIVATE_SPECIFIC_DIAG if dword(data, 0) == 0 => Ok(true),
        ACTIVATE_SPECIFIC_DIAG if dword(data, 0) != MODES_PRUNED_OUT => no(C::TypeACTIVATESPECIFIC),
        // MODES_PRUNED_OUT is the display core's.
        ACTIVATE_SPECIFIC_DIAG => no(C::TypeDMMOUTPUTDUPL),
        WHQL_INFO if size < 4 => no(C::TypeWHQLINFO),
        // The adapter's WHQL dword: not modelled.
        WHQL_INFO => not_supported,
        BRIGHTNESS if a.Flags & HARDWARE_ACCESS == 0 || size < 0x60C => {
            no(C::TypeBRIGHTNESSWithout)
        }
        BRIGHTNESS => not_supported,
        EDID_CACHE if size < 4 || u64::from(size) != u64::from(dword(data, 0)) + 4 => {
            no(C::TypeEDIDCACHE)
        }
        EDID_CACHE => not_supported,
        HISTORY_BUFFER_STATUS if size < 8 || !device => no(C::TypeHISTORYBUFFER),
        HISTORY_BUFFER_STATUS => {
            // No history-buffer tracing: the first byte 0, the second dword 0.
            write(data, 0, &[0]);
            write(data, 4, &[0; 4]);
            Ok(true)
        }
        MIRACAST_ADAPTER_DIAG_INFO if size != 32 => no(C::TypeMIRACASTADAPTER),
        MIRACAST_ADAPTER_DIAG_INFO => not_supported,
        PROCESS_VERIFIER_OPTION | ADAPTER_VERIFIER_OPTION => verifier(a.Type, data),
        // A render adapter takes no dirty-rectangle mode.
        DOD_SET_DIRTYRECT_MODE => no(C::TypeDODSET),
        // `K:DXGADAPTER::IsFullWDDMAdapter` @0x140054D34: a display core too.
        GET_DISPLAY_CONFIGURATIONS => no(C::TypeDODSET),
        QUERY_IOMMU_STATUS | QUERY_DMA_REMAPPING_STATUS if size == 0 => no(C::TypeQUERYIOMMU),
        QUERY_IOMMU_STATUS | QUERY_DMA_REMAPPING_STATUS => {
            // `SysMmQueryIommuState`: no IOMMU.
            write(data, 0, &[0]);
            Ok(true)
        }
        _ => no(C::TypeBelowH2),
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
    type C = EscapeCheck;
    if a.pPrivateDriverData == 0 {
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    if size < 4 {
        return Err(C::TypeTDRDBGCTRLPrivateDriverDataSize.refuse());
    }
    match dword(data, 0) {
        // `TdrDbgCtrl`: not modelled.
        0..=2 => Err(gap(STATUS_NOT_SUPPORTED)),
        8 if size < 8 => Err(C::TypeTDRDBGCTRLPrivateDriverDataSize.refuse()),
        3..=8 => Err(C::TypeTDRDBGCTRLCommands.refuse()),
        _ => Err(C::TypeTDRDBGCTRLPrivateDriverDataSize.refuse()),
    }
}

/// `D3DKMT_ESCAPE_VIDSCH` (test signing only): command 2 refused, command 3 a delay of up to
/// half a second that needs `Flags.HardwareAccess`, the rest VidSch's (not modelled).
fn vidsch(a: &D3DKMT_ESCAPE, data: &mut [u8]) -> Result<bool, NtStatus> {
    match dword(data, 0) {
        2 => Err(EscapeCheck::TypeVIDSCHCommand.refuse()),
        3 if a.Flags & HARDWARE_ACCESS == 0 => Err(EscapeCheck::TypeVIDSCHCommand.refuse()),
        // `KeDelayExecutionThread` for the given hundreds of nanoseconds (at most 5000000):
        // the simulation does not sleep.
        3 => Ok(true),
        _ => Err(gap(STATUS_NOT_SUPPORTED)),
    }
}

/// `D3DKMT_ESCAPE_PROCESS_VERIFIER_OPTION` and `..._ADAPTER_VERIFIER_OPTION` (test signing
/// only): their layout checked, then VidMm's (not modelled).
fn verifier(ty: u32, data: &mut [u8]) -> Result<bool, NtStatus> {
    let bad = Err(EscapeCheck::TypePROCESSVERIFIER.refuse());
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
    Err(gap(STATUS_NOT_SUPPORTED))
}
