//! NTSTATUS as a Rust error type.

use rvgpu_ddi::NTSTATUS;

/// A failure NTSTATUS (never a success code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub NTSTATUS);

impl Status {
    /// The raw code.
    pub const fn code(self) -> NTSTATUS {
        self.0
    }
}

/// Builds a failure status from its documented hex value (ntstatus.h).
const fn st(v: u32) -> Status {
    Status(v as NTSTATUS)
}

pub const UNSUCCESSFUL: Status = st(0xC000_0001);
pub const INVALID_PARAMETER: Status = st(0xC000_000D);
pub const NO_MEMORY: Status = st(0xC000_0017);
pub const INVALID_DEVICE_STATE: Status = st(0xC000_0184);
pub const NOT_SUPPORTED: Status = st(0xC000_00BB);
pub const NOT_IMPLEMENTED: Status = st(0xC000_0002);
pub const BUFFER_TOO_SMALL: Status = st(0xC000_0023);
pub const INVALID_HANDLE: Status = st(0xC000_0008);
pub const DEVICE_HARDWARE_ERROR: Status = st(0xC000_0483);
pub const INSUFFICIENT_RESOURCES: Status = st(0xC000_009A);
/// STATUS_ILLEGAL_INSTRUCTION: a present asks for an operation the hardware does not have.
pub const ILLEGAL_INSTRUCTION: Status = st(0xC000_001D);
/// STATUS_DEVICE_REMOVED: the object's D3D device is in error after an engine reset (UM-10;
/// the code is rvgpu's choice, docs/tdr.md Q5).
pub const DEVICE_REMOVED: Status = st(0xC000_02B6);
/// STATUS_GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED: a render-only adapter has no children.
pub const GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED: Status = st(0xC01E_0487);
/// STATUS_DEVICE_BUSY: the test hooks' debug-report text is being replaced at this moment.
pub const DEVICE_BUSY: Status = st(0x8000_0011);

/// STATUS_SUCCESS.
pub const SUCCESS: NTSTATUS = 0;

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
}
