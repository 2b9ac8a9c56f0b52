//! `DxgkInitialize` without displib.lib.
//!
//! The WDK ships `DxgkInitialize` only in the static library displib.lib, which does not exist
//! off Windows. What it does is small and publicly understood (see docs/windows.md, "How the
//! driver registers with Dxgkrnl", for the sources: Microsoft's DxgkInitialize page and
//! ReactOS' reimplementation of displib, `sdk/lib/drivers/displib/displib.c`):
//!
//! 1. load the Dxgkrnl service (`ZwLoadDriver` on its service key); "already loaded" is fine;
//! 2. open `\Device\DxgKrnl` (`IoGetDeviceObjectPointer`), which returns a referenced file
//!    object and the device object;
//! 3. send it the internal device-control request 0x230047, and only if Dxgkrnl does not know
//!    it (`STATUS_INVALID_DEVICE_REQUEST`, a Dxgkrnl older than Windows 8) the original
//!    `IOCTL_VIDEO_DDI_FUNC_REGISTER` (`CTL_CODE(FILE_DEVICE_VIDEO, 0xF, METHOD_NEITHER,
//!    FILE_ANY_ACCESS)` = 0x23003F); with METHOD_NEITHER the output buffer is passed as is, and
//!    Dxgkrnl writes into it the address of its own initialisation routine: `DpiInitializeWin8`
//!    for the first, `DpiInitialize` for the second (the 24H2 `DxgkInternalDeviceIoctl` answers
//!    both; docs/windows-bringup.md BR-06 has the sources, including why the Windows 8
//!    request comes first);
//! 4. call that routine with the driver object, registry path and the miniport's
//!    DRIVER_INITIALIZATION_DATA, and return its status;
//! 5. drop the file-object reference taken in step 2.
//!
//! Unlike ReactOS' version this one never unloads Dxgkrnl on failure: Dxgkrnl is shared by
//! every display adapter in the system (the Basic Display driver among them), and a failing
//! miniport should not try to take it away from them.

use core::ffi::c_void;
use core::ptr;

use crate::ntos::{self, UNICODE_STRING};
use crate::{DRIVER_INITIALIZATION_DATA, NTSTATUS};
use rvgpu_ddi::ntstatus;

/// `CTL_CODE(DeviceType, Function, Method, Access)` (devioctl.h).
const fn ctl_code(device_type: u32, function: u32, method: u32, access: u32) -> u32 {
    (device_type << 16) | (access << 14) | (function << 2) | method
}
/// FILE_DEVICE_VIDEO (devioctl.h).
const FILE_DEVICE_VIDEO: u32 = 0x23;
/// METHOD_NEITHER, FILE_ANY_ACCESS (devioctl.h).
const METHOD_NEITHER: u32 = 3;
const FILE_ANY_ACCESS: u32 = 0;

/// The request that returns Dxgkrnl's initialisation entry point (`DpiInitialize`).
pub const IOCTL_VIDEO_DDI_FUNC_REGISTER: u32 =
    ctl_code(FILE_DEVICE_VIDEO, 0xF, METHOD_NEITHER, FILE_ANY_ACCESS);
const _: () = assert!(IOCTL_VIDEO_DDI_FUNC_REGISTER == 0x0023_003F);
/// The request that returns the Windows 8 entry point (`DpiInitializeWin8`), asked first.
pub const IOCTL_DXGK_INITIALIZE_WIN8: u32 =
    ctl_code(FILE_DEVICE_VIDEO, 0x11, METHOD_NEITHER, FILE_ANY_ACCESS);
const _: () = assert!(IOCTL_DXGK_INITIALIZE_WIN8 == 0x0023_0047);

/// Dxgkrnl's service key, loaded with `ZwLoadDriver`.
const DXGKRNL_SERVICE: &str = r"\Registry\Machine\System\CurrentControlSet\Services\DXGKrnl";
static DXGKRNL_SERVICE_UTF16: [u16; DXGKRNL_SERVICE.len()] = ntos::ascii_utf16(DXGKRNL_SERVICE);
/// Dxgkrnl's device object.
const DXGKRNL_DEVICE: &str = r"\Device\DxgKrnl";
static DXGKRNL_DEVICE_UTF16: [u16; DXGKRNL_DEVICE.len()] = ntos::ascii_utf16(DXGKRNL_DEVICE);

/// The routine Dxgkrnl hands out in reply to [`IOCTL_VIDEO_DDI_FUNC_REGISTER`]; it has
/// `DxgkInitialize`'s signature.
type DpiInitializeFn = unsafe extern "system" fn(
    driver_object: *mut c_void,
    registry_path: *const c_void,
    init_data: *const DRIVER_INITIALIZATION_DATA,
) -> NTSTATUS;

/// Registers a display miniport with Dxgkrnl; the Rust equivalent of displib's
/// `DxgkInitialize`, and the [`crate::DxgkInitializeFn`] the Windows `DriverEntry` uses.
///
/// # Safety
/// Must be called from `DriverEntry` at PASSIVE_LEVEL with the `DriverObject` and
/// `RegistryPath` the kernel passed in (a `DRIVER_OBJECT*` and a `UNICODE_STRING*`), and a
/// `DRIVER_INITIALIZATION_DATA` that is valid for the duration of the call.
pub unsafe extern "system" fn dxgk_initialize(
    driver_object: *mut c_void,
    registry_path: *const c_void,
    init_data: *const DRIVER_INITIALIZATION_DATA,
) -> NTSTATUS {
    if driver_object.is_null() || registry_path.is_null() || init_data.is_null() {
        return ntstatus::STATUS_INVALID_PARAMETER;
    }
    let service = UNICODE_STRING::from_static(&DXGKRNL_SERVICE_UTF16);
    // SAFETY: `service` is a valid UNICODE_STRING over a static buffer; we are at PASSIVE_LEVEL
    // in DriverEntry (caller contract), as ZwLoadDriver requires.
    let load = unsafe { ntos::ZwLoadDriver(&service) };
    if load < 0 && load != ntstatus::STATUS_IMAGE_ALREADY_LOADED {
        return load;
    }

    let device_name = UNICODE_STRING::from_static(&DXGKRNL_DEVICE_UTF16);
    let mut file_object: *mut c_void = ptr::null_mut();
    let mut device_object: *mut c_void = ptr::null_mut();
    // SAFETY: valid name and out-pointers to locals; PASSIVE_LEVEL.
    let open = unsafe {
        ntos::IoGetDeviceObjectPointer(
            &device_name,
            ntos::FILE_ALL_ACCESS,
            &mut file_object,
            &mut device_object,
        )
    };
    if open < 0 {
        return open;
    }
    if file_object.is_null() || device_object.is_null() {
        return ntstatus::STATUS_INVALID_DEVICE_STATE;
    }

    // SAFETY: the file object is referenced and the device object stays valid while it is;
    // both come from the successful IoGetDeviceObjectPointer above.
    let entry = match unsafe { query_entry_point(device_object, IOCTL_DXGK_INITIALIZE_WIN8) } {
        // SAFETY: as above.
        Err(ntstatus::STATUS_INVALID_DEVICE_REQUEST) => unsafe {
            query_entry_point(device_object, IOCTL_VIDEO_DDI_FUNC_REGISTER)
        },
        other => other,
    };
    let result = entry.and_then(|dpi_initialize| {
        // SAFETY: Dxgkrnl's own initialisation routine, called as displib calls it, with the
        // caller's DriverEntry arguments and a valid table.
        let status = unsafe { dpi_initialize(driver_object, registry_path, init_data) };
        if status < 0 {
            Err(status)
        } else {
            Ok(status)
        }
    });

    // SAFETY: releases the reference IoGetDeviceObjectPointer took on the file object (which
    // also keeps the device object alive); nothing uses either pointer afterwards.
    unsafe { ntos::ObfDereferenceObject(file_object) };
    match result {
        Ok(status) | Err(status) => status,
    }
}

/// Sends the registration request `code` to Dxgkrnl's device and returns the entry point it
/// writes back.
///
/// # Safety
/// `device_object` must be Dxgkrnl's device object, kept alive by a reference the caller holds;
/// PASSIVE_LEVEL.
unsafe fn query_entry_point(
    device_object: *mut c_void,
    code: u32,
) -> Result<DpiInitializeFn, NTSTATUS> {
    let mut entry: Option<DpiInitializeFn> = None;
    let mut event = ntos::KEVENT::zeroed();
    let mut io_status = ntos::IO_STATUS_BLOCK::zeroed();
    // SAFETY: `event` is storage for a KEVENT on this (non-paged, kernel) stack and lives until
    // after the wait below.
    unsafe { ntos::KeInitializeEvent(&mut event, ntos::NOTIFICATION_EVENT, 0) };

    let out_len = u32::try_from(core::mem::size_of::<Option<DpiInitializeFn>>())
        .map_err(|_| ntstatus::STATUS_INVALID_PARAMETER)?;
    // SAFETY: no input buffer; the output buffer is `entry` (pointer-sized, lives until the
    // request completes, since we wait for it below); `event` and `io_status` likewise outlive
    // the request. TRUE = IRP_MJ_INTERNAL_DEVICE_CONTROL.
    let irp = unsafe {
        ntos::IoBuildDeviceIoControlRequest(
            code,
            device_object,
            ptr::null_mut(),
            0,
            (&raw mut entry).cast::<c_void>(),
            out_len,
            1,
            &mut event,
            &mut io_status,
        )
    };
    if irp.is_null() {
        return Err(ntstatus::STATUS_INSUFFICIENT_RESOURCES);
    }
    // SAFETY: `irp` was just built for `device_object`; IofCallDriver takes ownership of it.
    let mut status = unsafe { ntos::IofCallDriver(device_object, irp) };
    if status == ntstatus::STATUS_PENDING {
        // SAFETY: `event` was initialised above and is signalled by the I/O manager when the
        // IRP completes; kernel-mode, non-alertable, no timeout, PASSIVE_LEVEL.
        unsafe {
            ntos::KeWaitForSingleObject(
                (&raw mut event).cast::<c_void>(),
                ntos::EXECUTIVE,
                ntos::KERNEL_MODE,
                0,
                ptr::null(),
            );
        }
        status = io_status.status();
    }
    if status < 0 {
        return Err(status);
    }
    // Option<fn> has the layout of a nullable function pointer: null means Dxgkrnl did not
    // fill it in.
    entry.ok_or(ntstatus::STATUS_PROCEDURE_NOT_FOUND)
}
