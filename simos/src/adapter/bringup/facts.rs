//! The start's facts besides the caps and the table, and how the OS gathers them: once per start
//! before the caps phase (`gather`), and the answers later phases check.

use rvgpu_ddi::adapter::{
    DXGKARG_HISTORYBUFFERPRECISION, DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_FRAMEBUFFERSAVESIZE,
    DXGKQAITYPE_HISTORYBUFFERPRECISION, DXGK_DRIVERCAPS, DXGK_QUERYADAPTERINFOFLAGS,
    DXGK_QUERYHISTORYBUFFERPRECISIONIN, DXGK_VIDMMCAPS_0,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::NTSTATUS;

use crate::adapter::ddi::{self, At};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::os::CpuArch;

pub use crate::adapter::registry::UmdName;

/// The facts of a start besides the caps and the table.
#[derive(Clone, Copy, Debug)]
pub struct StartFacts {
    /// `DRIVER_INITIALIZATION_DATA::Version` (the DDI interface version).
    pub version: u32,
    /// The CPU architecture Windows runs on (BR-50).
    pub arch: CpuArch,
    /// Windows' `ValidateWDDMCaps` policy (BR-41 pre-2.0 arm, BR-52).
    pub validate_wddm_caps: bool,
    /// `NumberOfVideoPresentSources` from StartDevice (BR-41).
    pub sources: u32,
    /// `NumberOfChildren` from StartDevice (BR-41: the adapter's outputs).
    pub children: u32,
    /// The UMD name read from the adapter's software key (BR-35).
    pub umd_name: UmdName,
    /// BR-55: the answer to `DXGKQAITYPE_FRAMEBUFFERSAVESIZE` for physical adapter 0 (asked only
    /// with `IoMmuSecureModeSupported`): the size, or the driver's failure status.
    pub framebuffer_save_size: Option<Result<u64, NTSTATUS>>,
}

impl StartFacts {
    /// The facts of a render-only start with a valid UMD name.
    pub fn render_only(version: u32, arch: CpuArch, validate_wddm_caps: bool) -> Self {
        Self {
            version,
            arch,
            validate_wddm_caps,
            sources: 0,
            children: 0,
            umd_name: UmdName::Valid,
            framebuffer_save_size: None,
        }
    }
}

/// The start's facts once StartDevice returned `sources` and `children` and DRIVERCAPS was
/// answered: the OS's policies, the UMD name from the adapter's software key (read in
/// `DpiGetAdapterInfo`, BR-35) and the frame-buffer save size (BR-55).
pub(crate) fn gather(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &DXGK_DRIVERCAPS,
    sources: u32,
    children: u32,
) -> Result<StartFacts, SimError> {
    Ok(StartFacts {
        sources,
        children,
        umd_name: crate::adapter::registry::read_umd_name(
            a.registry_keys().user_mode_driver_name.as_ref(),
        ),
        framebuffer_save_size: framebuffer_save_size(a, t, caps)?,
        ..StartFacts::render_only(t.Version, a.os.cpu_arch, a.os.validate_wddm_caps)
    })
}

/// BR-55: `DXGKQAITYPE_FRAMEBUFFERSAVESIZE` for physical adapter 0 (input its 4-byte index,
/// output 8 bytes), asked only when `MemoryManagementCaps.IoMmuSecureModeSupported` is set
/// (\[D\] `DXGADAPTER::Initialize`).
fn framebuffer_save_size(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
    caps: &DXGK_DRIVERCAPS,
) -> Result<Option<Result<u64, NTSTATUS>>, SimError> {
    let secure = caps
        .MemoryManagementCaps
        .Anonymous
        .is_set(DXGK_VIDMMCAPS_0::IoMmuSecureModeSupported);
    let Some(q) = ddi::in_table!(t, DxgkDdiQueryAdapterInfo).filter(|_| secure) else {
        return Ok(None);
    };
    let mut index: u32 = 0;
    let mut size: u64 = 0;
    let args = DXGKARG_QUERYADAPTERINFO {
        Type: DXGKQAITYPE_FRAMEBUFFERSAVESIZE,
        pInputData: (&mut index as *mut u32).cast(),
        InputDataSize: 4,
        pOutputData: (&mut size as *mut u64).cast(),
        OutputDataSize: 8,
        Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
        hKmdProcessHandle: std::ptr::null_mut(),
    };
    let status = ddi::query_adapter_info_args(a, q, At::Caller, &args)?;
    Ok(Some(if status >= 0 { Ok(size) } else { Err(status) }))
}

/// BR-57: `DXGKQAITYPE_HISTORYBUFFERPRECISION` for physical adapter 0, asked at the end of
/// `ADAPTER_RENDER::Initialize`; `None` when the query failed (tolerated) or cannot be asked.
pub(crate) fn history_precision(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
) -> Result<Option<DXGKARG_HISTORYBUFFERPRECISION>, SimError> {
    let Some(q) = ddi::in_table!(t, DxgkDdiQueryAdapterInfo) else {
        return Ok(None);
    };
    let mut index = DXGK_QUERYHISTORYBUFFERPRECISIONIN::default();
    let mut out = DXGKARG_HISTORYBUFFERPRECISION::default();
    let args = DXGKARG_QUERYADAPTERINFO {
        Type: DXGKQAITYPE_HISTORYBUFFERPRECISION,
        pInputData: (&mut index as *mut DXGK_QUERYHISTORYBUFFERPRECISIONIN).cast(),
        InputDataSize: std::mem::size_of_val(&index) as u32,
        pOutputData: (&mut out as *mut DXGKARG_HISTORYBUFFERPRECISION).cast(),
        OutputDataSize: std::mem::size_of_val(&out) as u32,
        Flags: DXGK_QUERYADAPTERINFOFLAGS::default(),
        hKmdProcessHandle: std::ptr::null_mut(),
    };
    let status = ddi::query_adapter_info_args(a, q, At::Caller, &args)?;
    Ok((status >= 0).then_some(out))
}
