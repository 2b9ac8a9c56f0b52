//! NTSTATUS as a Rust error type; the values are `rvgpu_ddi::ntstatus`'s.

use rvgpu_ddi::{ntstatus, NTSTATUS};

/// A failure NTSTATUS (never a success code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub NTSTATUS);

impl Status {
    /// The raw code.
    pub const fn code(self) -> NTSTATUS {
        self.0
    }
}

pub const UNSUCCESSFUL: Status = Status(ntstatus::STATUS_UNSUCCESSFUL);
pub const INVALID_PARAMETER: Status = Status(ntstatus::STATUS_INVALID_PARAMETER);
pub const NO_MEMORY: Status = Status(ntstatus::STATUS_NO_MEMORY);
pub const INVALID_DEVICE_STATE: Status = Status(ntstatus::STATUS_INVALID_DEVICE_STATE);
pub const NOT_SUPPORTED: Status = Status(ntstatus::STATUS_NOT_SUPPORTED);
pub const NOT_IMPLEMENTED: Status = Status(ntstatus::STATUS_NOT_IMPLEMENTED);
pub const BUFFER_TOO_SMALL: Status = Status(ntstatus::STATUS_BUFFER_TOO_SMALL);
pub const INVALID_HANDLE: Status = Status(ntstatus::STATUS_INVALID_HANDLE);
pub const DEVICE_HARDWARE_ERROR: Status = Status(ntstatus::STATUS_DEVICE_HARDWARE_ERROR);
pub const INSUFFICIENT_RESOURCES: Status = Status(ntstatus::STATUS_INSUFFICIENT_RESOURCES);
/// STATUS_ILLEGAL_INSTRUCTION: a present asks for an operation the hardware does not have.
pub const ILLEGAL_INSTRUCTION: Status = Status(ntstatus::STATUS_ILLEGAL_INSTRUCTION);
/// STATUS_DEVICE_REMOVED: the object's D3D device is in error after an engine reset (UM-10;
/// the code is rvgpu's choice, docs/tdr.md Q5).
pub const DEVICE_REMOVED: Status = Status(ntstatus::STATUS_DEVICE_REMOVED);
/// STATUS_GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED: a render-only adapter has no children.
pub const GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED: Status =
    Status(ntstatus::STATUS_GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED);
/// STATUS_DEVICE_BUSY: the test hooks' debug-report text is being replaced at this moment.
pub const DEVICE_BUSY: Status = Status(ntstatus::STATUS_DEVICE_BUSY);

/// STATUS_SUCCESS.
pub const SUCCESS: NTSTATUS = ntstatus::STATUS_SUCCESS;

/// `NT_SUCCESS`: success and informational codes (high bit clear).
pub const fn nt_success(s: NTSTATUS) -> bool {
    s >= 0
}

/// Converts a returned NTSTATUS into a `Result`.
pub fn check(s: NTSTATUS) -> Result<(), Status> {
    if nt_success(s) {
        Ok(())
    } else {
        Err(Status(s))
    }
}

/// Converts a `Result` back into the NTSTATUS a DDI returns.
pub fn to_ntstatus(r: Result<(), Status>) -> NTSTATUS {
    match r {
        Ok(()) => SUCCESS,
        Err(s) => s.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_codes_are_failures() {
        for s in [
            UNSUCCESSFUL,
            INVALID_PARAMETER,
            NOT_SUPPORTED,
            GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED,
        ] {
            assert!(!nt_success(s.code()));
            assert_eq!(check(s.code()), Err(s));
        }
        assert_eq!(check(SUCCESS), Ok(()));
    }

    /// DDI-01: `DxgkDdiQueryDeviceDescriptor`'s "no descriptor" answer is ntstatus.h's
    /// `STATUS_GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED`, the one code the page names for it.
    #[test]
    fn ddi_01_no_child_descriptor_is_the_ntstatus_h_code() {
        assert_eq!(
            GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED
                .code()
                .cast_unsigned(),
            0xC01E_0401
        );
    }
}
