//! The two render-core slots rvgpu fills only because Dxgkrnl refuses a render core without them
//! (docs/windows-bringup.md BR-47, \[D\] `ADAPTER_RENDER::CreateRenderCore`): `DxgkDdiPresent`
//! and `DxgkDdiControlInterrupt`.
//!
//! rvgpu is render-only: it reports no VidPN sources, creates no primaries
//! (`DxgkDdiDescribeAllocation` is `NOT_SUPPORTED`), its allocations carry no pixel format, and
//! the device has no blit or scan-out engine (UM-22 keeps presentation out of scope). So there is
//! nothing a present could be turned into, and no vertical-blank interrupt to control.

use rvgpu_ddi::interrupt::DXGK_INTERRUPT_TYPE;
use rvgpu_ddi::present::DXGKARG_PRESENT;

use crate::status::{self, Status};

/// `DxgkDdiPresent`: refuses every present without touching the DMA buffer.
///
/// `STATUS_ILLEGAL_INSTRUCTION` ("instructions that graphics hardware could not support",
/// [DXGKDDI_PRESENT]) is the documented answer for a present the hardware cannot carry out, and
/// one of the statuses Dxgkrnl's `ADAPTER_RENDER::DdiPresent` wrapper accepts (22631). rvgpu's
/// UMD never presents; this answers a present some other caller makes on an rvgpu context.
///
/// [DXGKDDI_PRESENT]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_present
pub fn present(_args: &mut DXGKARG_PRESENT) -> Result<(), Status> {
    Err(status::ILLEGAL_INSTRUCTION)
}

/// `DxgkDdiControlInterrupt`: rvgpu has no CRTC, so no interrupt type can be enabled or
/// disabled. "The driver must return STATUS_NOT_IMPLEMENTED if an interrupt type other than
/// DXGK_INTERRUPT_CRTC_VSYNC is supplied" ([DXGKDDI_CONTROLINTERRUPT]); for
/// `DXGK_INTERRUPT_CRTC_VSYNC` itself the adapter has no vertical retrace to report, and
/// `STATUS_NOT_IMPLEMENTED` is what the page gives for a type the driver does not support.
/// The GPU's own interrupts (fences, engine state, faults) are not under this DDI's control:
/// Dxgkrnl never passes their types here.
///
/// [DXGKDDI_CONTROLINTERRUPT]: https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_controlinterrupt
pub fn control_interrupt(_ty: DXGK_INTERRUPT_TYPE, _enable: bool) -> Result<(), Status> {
    Err(status::NOT_IMPLEMENTED)
}
