//! The ETW structures and constants the kernel's ETW routines take (evntprov.h, wdm.h): the
//! [`crate::platform::Platform`] seam's ETW methods are written in them, so they sit apart
//! from the provider that uses the seam.

use core::ffi::c_void;

/// A GUID as Windows lays it out (guiddef.h): the DDI crate's.
pub use rvgpu_ddi::basic::GUID as Guid;

/// `EVENT_DESCRIPTOR` (evntprov.h): 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDescriptor {
    pub id: u16,
    pub version: u8,
    pub channel: u8,
    pub level: u8,
    pub opcode: u8,
    pub task: u16,
    pub keyword: u64,
}
const _: () = assert!(core::mem::size_of::<EventDescriptor>() == 16);

/// `EVENT_DATA_DESCRIPTOR` (evntprov.h): 16 bytes; `kind` is its `Type` byte.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDataDescriptor {
    pub ptr: u64,
    pub size: u32,
    pub kind: u8,
    pub reserved1: u8,
    pub reserved2: u16,
}
const _: () = assert!(core::mem::size_of::<EventDataDescriptor>() == 16);

/// `EVENT_DATA_DESCRIPTOR_TYPE_NONE`: a field's bytes.
pub const DATA_FIELD: u8 = 0;
/// `EVENT_DATA_DESCRIPTOR_TYPE_EVENT_METADATA`.
pub const DATA_EVENT_METADATA: u8 = 1;
/// `EVENT_DATA_DESCRIPTOR_TYPE_PROVIDER_METADATA`.
pub const DATA_PROVIDER_METADATA: u8 = 2;
/// `WINEVENT_CHANNEL_TRACELOGGING`: the channel of every TraceLogging event.
pub const CHANNEL_TRACELOGGING: u8 = 11;
/// `EVENT_CONTROL_CODE_ENABLE_PROVIDER` (the callback's `ControlCode`; 0 disables).
pub const CONTROL_ENABLE: u32 = 1;
/// `EVENT_CONTROL_CODE_DISABLE_PROVIDER`.
pub const CONTROL_DISABLE: u32 = 0;

/// `PETWENABLECALLBACK` (wdm.h): `(SourceId, ControlCode, Level, MatchAnyKeyword,
/// MatchAllKeyword, FilterData, CallbackContext)`.
pub type EnableCallback =
    unsafe extern "system" fn(*const Guid, u32, u8, u64, u64, *const c_void, *mut c_void);
