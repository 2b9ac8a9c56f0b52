//! What the Direct3D runtimes find in this DLL.
//!
//! The INF names `rvgpu_umd.dll` as the adapter's `UserModeDriverName` (Dxgkrnl requires the
//! value for a render adapter, docs/windows-bringup.md BR-35). When an application creates a
//! Direct3D device on the adapter, the runtime loads the library named there and looks up its
//! entry point: `OpenAdapter` (Direct3D 9), `OpenAdapter10_2` (Direct3D 10 and 11),
//! `OpenAdapter12` (Direct3D 12). rvgpu implements none of those APIs. Each entry point below
//! refuses with `E_NOTIMPL` and touches nothing, so device creation fails with an error the
//! application can act on (choose another adapter) instead of running into a missing export
//! or, worse, a half-initialised function table in someone else's process. Enumerating
//! adapters (DXGI) does not load the library at all. What the runtimes do with the refusal is
//! not verified on Windows: docs/test-machine.md says how to look.

use core::ffi::c_void;

/// `E_NOTIMPL`.
pub const E_NOTIMPL: i32 = 0x8000_4001_u32 as i32;

/// Direct3D 9's entry point (`PFND3DDDI_OPENADAPTER`): refuses.
#[unsafe(no_mangle)]
pub extern "system" fn OpenAdapter(_args: *mut c_void) -> i32 {
    E_NOTIMPL
}

/// Direct3D 10 and 11's entry point (`PFND3D10DDI_OPENADAPTER`): refuses.
#[unsafe(no_mangle)]
pub extern "system" fn OpenAdapter10_2(_args: *mut c_void) -> i32 {
    E_NOTIMPL
}

/// Direct3D 12's entry point (`PFND3D12DDI_OPENADAPTER`): refuses.
#[unsafe(no_mangle)]
pub extern "system" fn OpenAdapter12(_args: *mut c_void) -> i32 {
    E_NOTIMPL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_d3d_entry_point_refuses_without_touching_its_argument() {
        let mut block = [0xA5u8; 64];
        let p = block.as_mut_ptr().cast::<c_void>();
        for f in [OpenAdapter, OpenAdapter10_2, OpenAdapter12] {
            assert_eq!(f(p), E_NOTIMPL);
            assert_eq!(f(core::ptr::null_mut()), E_NOTIMPL);
        }
        assert!(block.iter().all(|b| *b == 0xA5), "argument written");
    }
}
