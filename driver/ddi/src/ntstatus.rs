//! `NTSTATUS` values (ntstatus.h) used by the miniport and the DDIs it implements.
//!
//! Values cross-checked against the windows-sys 0.61 metadata build of ntstatus.h.
//! <https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-erref/596a1078-e883-4972-9bbc-49e60bebca55>
use crate::basic::NTSTATUS;

/// Reinterprets the documented unsigned code as the signed `NTSTATUS` type.
const fn code(v: u32) -> NTSTATUS {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// Success.
pub const STATUS_SUCCESS: NTSTATUS = 0;
/// A wait timed out (success class).
pub const STATUS_TIMEOUT: NTSTATUS = 0x102;
/// The operation is pending (success class).
pub const STATUS_PENDING: NTSTATUS = 0x103;
/// Generic failure.
pub const STATUS_UNSUCCESSFUL: NTSTATUS = code(0xC000_0001);
/// The requested operation is not implemented.
pub const STATUS_NOT_IMPLEMENTED: NTSTATUS = code(0xC000_0002);
/// Invalid information class.
pub const STATUS_INVALID_INFO_CLASS: NTSTATUS = code(0xC000_0003);
/// Length mismatch.
pub const STATUS_INFO_LENGTH_MISMATCH: NTSTATUS = code(0xC000_0004);
/// An access violation (an exception code).
pub const STATUS_ACCESS_VIOLATION: NTSTATUS = code(0xC000_0005);
/// Invalid handle.
pub const STATUS_INVALID_HANDLE: NTSTATUS = code(0xC000_0008);
/// An invalid device request.
pub const STATUS_INVALID_DEVICE_REQUEST: NTSTATUS = code(0xC000_0010);
/// Invalid parameter.
pub const STATUS_INVALID_PARAMETER: NTSTATUS = code(0xC000_000D);
/// Not enough virtual memory or paging file quota.
pub const STATUS_NO_MEMORY: NTSTATUS = code(0xC000_0017);
/// Access denied.
pub const STATUS_ACCESS_DENIED: NTSTATUS = code(0xC000_0022);
/// The output buffer is too small.
pub const STATUS_BUFFER_TOO_SMALL: NTSTATUS = code(0xC000_0023);
/// The object is not of the type asked for.
pub const STATUS_OBJECT_TYPE_MISMATCH: NTSTATUS = code(0xC000_0024);
/// An object name of invalid form.
pub const STATUS_OBJECT_NAME_INVALID: NTSTATUS = code(0xC000_0033);
/// No object of that name.
pub const STATUS_OBJECT_NAME_NOT_FOUND: NTSTATUS = code(0xC000_0034);
/// A structure's revision is not one the callee knows.
pub const STATUS_REVISION_MISMATCH: NTSTATUS = code(0xC000_0059);
/// An image is not a valid executable (the loader).
pub const STATUS_INVALID_IMAGE_FORMAT: NTSTATUS = code(0xC000_007B);
/// A procedure (an export) not found.
pub const STATUS_PROCEDURE_NOT_FOUND: NTSTATUS = code(0xC000_007A);
/// An instruction the hardware does not support.
pub const STATUS_ILLEGAL_INSTRUCTION: NTSTATUS = code(0xC000_001D);
/// A privileged instruction.
pub const STATUS_PRIVILEGED_INSTRUCTION: NTSTATUS = code(0xC000_0096);
/// Integer overflow.
pub const STATUS_INTEGER_OVERFLOW: NTSTATUS = code(0xC000_0095);
/// Insufficient system resources.
pub const STATUS_INSUFFICIENT_RESOURCES: NTSTATUS = code(0xC000_009A);
/// The device is not ready.
pub const STATUS_DEVICE_NOT_READY: NTSTATUS = code(0xC000_00A3);
/// An I/O operation timed out.
pub const STATUS_IO_TIMEOUT: NTSTATUS = code(0xC000_00B5);
/// The request is not supported.
pub const STATUS_NOT_SUPPORTED: NTSTATUS = code(0xC000_00BB);
/// An image has no MZ header (the loader).
pub const STATUS_INVALID_IMAGE_NOT_MZ: NTSTATUS = code(0xC000_012F);
/// An image's sections cannot be given the protection they ask for (the loader).
pub const STATUS_INVALID_IMAGE_PROTECT: NTSTATUS = code(0xC000_0130);
/// A device's configuration is in error (PnP start).
pub const STATUS_DEVICE_CONFIGURATION_ERROR: NTSTATUS = code(0xC000_0182);
/// The image is already loaded.
pub const STATUS_IMAGE_ALREADY_LOADED: NTSTATUS = code(0xC000_010E);
/// An import by ordinal names no export of the driver it imports from (the loader).
pub const STATUS_DRIVER_ORDINAL_NOT_FOUND: NTSTATUS = code(0xC000_0262);
/// An import by name names no export of the driver it imports from (the loader).
pub const STATUS_DRIVER_ENTRYPOINT_NOT_FOUND: NTSTATUS = code(0xC000_0263);
/// A wait would deadlock (the loader lock's timeout).
pub const STATUS_POSSIBLE_DEADLOCK: NTSTATUS = code(0xC000_0194);
/// The device is in a state that does not allow the request.
pub const STATUS_INVALID_DEVICE_STATE: NTSTATUS = code(0xC000_0184);
/// Invalid buffer size.
pub const STATUS_INVALID_BUFFER_SIZE: NTSTATUS = code(0xC000_0206);
/// The object was not found.
pub const STATUS_NOT_FOUND: NTSTATUS = code(0xC000_0225);
/// The device has been removed.
pub const STATUS_DEVICE_REMOVED: NTSTATUS = code(0xC000_02B6);
/// The device stopped responding (hung).
pub const STATUS_DEVICE_HUNG: NTSTATUS = code(0xC000_0507);
/// The device reported a hardware error.
pub const STATUS_DEVICE_HARDWARE_ERROR: NTSTATUS = code(0xC000_0483);
/// An image's hash is not in a catalog the code-integrity check trusts.
pub const STATUS_INVALID_IMAGE_HASH: NTSTATUS = code(0xC000_0428);
/// The heap was found corrupt (a fail-fast code).
pub const STATUS_HEAP_CORRUPTION: NTSTATUS = code(0xC000_0374);
/// A stack buffer overrun (the `__fastfail` exception code).
pub const STATUS_STACK_BUFFER_OVERRUN: NTSTATUS = code(0xC000_0409);
/// An invalid parameter passed to a C runtime function.
pub const STATUS_INVALID_CRT_PARAMETER: NTSTATUS = code(0xC000_0417);
/// The device is powered off (warning class).
pub const STATUS_DEVICE_POWERED_OFF: NTSTATUS = code(0x8000_000F);
/// The device is busy (warning class).
pub const STATUS_DEVICE_BUSY: NTSTATUS = code(0x8000_0011);
/// The data did not fit; what did is returned (warning class).
pub const STATUS_BUFFER_OVERFLOW: NTSTATUS = code(0x8000_0005);
/// A breakpoint (warning class, an exception code).
pub const STATUS_BREAKPOINT: NTSTATUS = code(0x8000_0003);
/// A misaligned pointer (warning class).
pub const STATUS_DATATYPE_MISALIGNMENT: NTSTATUS = code(0x8000_0002);

/// Not enough DMA buffer space to complete the operation.
pub const STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER: NTSTATUS = code(0xC01E_0001);
/// The adapter is not a display adapter of the kind asked for.
pub const STATUS_GRAPHICS_INVALID_DISPLAY_ADAPTER: NTSTATUS = code(0xC01E_0002);
/// A blt with a colour conversion the device cannot perform.
pub const STATUS_GRAPHICS_CANNOTCOLORCONVERT: NTSTATUS = code(0xC01E_0008);
/// The GPU adapter was reset.
pub const STATUS_GRAPHICS_ADAPTER_WAS_RESET: NTSTATUS = code(0xC01E_0003);
/// The driver model is invalid.
pub const STATUS_GRAPHICS_INVALID_DRIVER_MODEL: NTSTATUS = code(0xC01E_0004);
/// Driver version mismatch.
pub const STATUS_GRAPHICS_DRIVER_MISMATCH: NTSTATUS = code(0xC01E_0009);
/// Not enough video memory.
pub const STATUS_GRAPHICS_NO_VIDEO_MEMORY: NTSTATUS = code(0xC01E_0100);
/// The allocation is busy.
pub const STATUS_GRAPHICS_ALLOCATION_BUSY: NTSTATUS = code(0xC01E_0102);
/// Too many references.
pub const STATUS_GRAPHICS_TOO_MANY_REFERENCES: NTSTATUS = code(0xC01E_0103);
/// The allocation is invalid.
pub const STATUS_GRAPHICS_ALLOCATION_INVALID: NTSTATUS = code(0xC01E_0106);
/// A locked allocation cannot be used for rendering.
pub const STATUS_GRAPHICS_CANT_RENDER_LOCKED_ALLOCATION: NTSTATUS = code(0xC01E_0111);
/// The allocation was closed.
pub const STATUS_GRAPHICS_ALLOCATION_CLOSED: NTSTATUS = code(0xC01E_0112);
/// Invalid allocation handle.
pub const STATUS_GRAPHICS_INVALID_ALLOCATION_HANDLE: NTSTATUS = code(0xC01E_0114);
/// The allocation's content was lost.
pub const STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST: NTSTATUS = code(0xC01E_0116);
/// The GPU raised an exception on the device; the device must be reset.
pub const STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE: NTSTATUS = code(0xC01E_0200);
/// Invalid video present source.
pub const STATUS_GRAPHICS_INVALID_VIDEO_PRESENT_SOURCE: NTSTATUS = code(0xC01E_0304);
/// Invalid video present target.
pub const STATUS_GRAPHICS_INVALID_VIDEO_PRESENT_TARGET: NTSTATUS = code(0xC01E_0305);
/// The child device has no descriptor of the type asked for.
pub const STATUS_GRAPHICS_CHILD_DESCRIPTOR_NOT_SUPPORTED: NTSTATUS = code(0xC01E_0401);

/// `NT_SUCCESS()`: success and informational codes are non-negative.
pub const fn NT_SUCCESS(status: NTSTATUS) -> bool {
    status >= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_expected_bits() {
        assert_eq!(STATUS_UNSUCCESSFUL.cast_unsigned(), 0xC000_0001);
        assert_eq!(STATUS_GRAPHICS_NO_VIDEO_MEMORY.cast_unsigned(), 0xC01E_0100);
        assert!(NT_SUCCESS(STATUS_SUCCESS));
        assert!(NT_SUCCESS(STATUS_PENDING));
        assert!(!NT_SUCCESS(STATUS_DEVICE_REMOVED));
    }
}
