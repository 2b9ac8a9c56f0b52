//! Native GPU fences and their logs (NF-, LOG-; d3dkmddi.h, d3dukmdt.h).

use crate::basic::*;
use crate::macros::layout;

/// `DXGK_NATIVE_FENCE_CAPS`: answer to `DXGKQAITYPE_NATIVE_FENCE_CAPS` (56 bytes on x64, which
/// is also the output size dxgkrnl passes for this query).
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgk_native_fence_caps>
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DXGK_NATIVE_FENCE_CAPS {
    /// Stride between the monitored values of fences packed into one page.
    pub MonitoredValueStride: UINT,
    /// Map current/monitored values into the system (paging) process GPU VA space for the CMP.
    pub MapToGpuSystemProcess: BOOLEAN,
    /// Lowest GPU VA for fence mappings (optional, 0 = no limit).
    pub MinimumAddress: D3DGPU_VIRTUAL_ADDRESS,
    /// Highest GPU VA for fence mappings (optional, 0 = no limit).
    pub MaximumAddress: D3DGPU_VIRTUAL_ADDRESS,
    /// Reserved.
    pub Reserved: [BYTE; 28],
}
layout!(
    DXGK_NATIVE_FENCE_CAPS,
    size = 56,
    MonitoredValueStride = 0,
    MapToGpuSystemProcess = 4,
    MinimumAddress = 8,
    MaximumAddress = 16,
    Reserved = 24
);
