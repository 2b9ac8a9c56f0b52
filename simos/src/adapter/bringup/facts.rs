//! The start's facts besides the caps and the table, as the caps phase reads them; gathered once
//! per start by `super::query::gather`.

use rvgpu_ddi::NTSTATUS;

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
