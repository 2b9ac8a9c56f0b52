//! The kernel routines and structures the image uses, declared here rather than taken from
//! `windows-sys`: that crate declares some kernel routines as imports from user-mode DLLs
//! (`DbgPrintEx` from ntdll.dll), which a driver cannot load. Every import below is from
//! ntoskrnl.exe (by `raw-dylib`, so no import library is needed to link), and
//! `tests/pe_images.rs` checks that the image imports from nothing else.
//!
//! Prototypes and constants are from the WDK headers (wdm.h, ntddk.h, ntstatus.h) as documented
//! on learn.microsoft.com; the page of each routine is linked.
#![allow(non_snake_case, non_camel_case_types, clippy::upper_case_acronyms)]

use core::ffi::c_void;

use crate::NTSTATUS;

/// UNICODE_STRING (ntdef.h): counted UTF-16, lengths in bytes.
/// <https://learn.microsoft.com/windows/win32/api/ntdef/ns-ntdef-_unicode_string>
#[repr(C)]
#[derive(Debug)]
pub struct UNICODE_STRING {
    pub Length: u16,
    pub MaximumLength: u16,
    pub Buffer: *const u16,
}
const _: () = assert!(core::mem::size_of::<UNICODE_STRING>() == 16);
const _: () = assert!(core::mem::offset_of!(UNICODE_STRING, Buffer) == 8);

/// KEVENT (wdm.h): a DISPATCHER_HEADER (24 bytes on x64) and nothing else; opaque here,
/// initialised by `KeInitializeEvent`. 8-byte aligned.
#[repr(C, align(8))]
#[derive(Debug)]
pub struct KEVENT {
    _opaque: [u8; 24],
}
impl KEVENT {
    /// Storage for `KeInitializeEvent` to initialise.
    pub const fn zeroed() -> Self {
        Self { _opaque: [0; 24] }
    }
}

/// KTIMER (wdm.h): on x64 a DISPATCHER_HEADER (24), `ULARGE_INTEGER DueTime` (8),
/// `LIST_ENTRY TimerListEntry` (16), `PKDPC Dpc` (8), `ULONG Processor` and `LONG Period`
/// (4 + 4): 64 bytes, 8-byte aligned. Opaque here, initialised by `KeInitializeTimerEx`.
/// <https://learn.microsoft.com/windows-hardware/drivers/kernel/timer-objects-and-dpcs>
#[repr(C, align(8))]
#[derive(Debug)]
pub struct KTIMER {
    _opaque: [u8; 64],
}
const _: () = assert!(core::mem::size_of::<KTIMER>() == 64);

/// KDPC (wdm.h): on x64 `TargetInfoAsUlong` (4, padded to 8), `SINGLE_LIST_ENTRY` (8),
/// `KAFFINITY ProcessorHistory` (8), then `DeferredRoutine`, `DeferredContext`,
/// `SystemArgument1`, `SystemArgument2`, `DpcData` (8 each): 64 bytes, 8-byte aligned. Opaque
/// here, initialised by `KeInitializeDpc`.
#[repr(C, align(8))]
#[derive(Debug)]
pub struct KDPC {
    _opaque: [u8; 64],
}
const _: () = assert!(core::mem::size_of::<KDPC>() == 64);

impl KTIMER {
    /// Storage for `KeInitializeTimerEx` to initialise.
    pub const fn zeroed() -> Self {
        Self { _opaque: [0; 64] }
    }
}

impl KDPC {
    /// Storage for `KeInitializeDpc` to initialise.
    pub const fn zeroed() -> Self {
        Self { _opaque: [0; 64] }
    }
}

/// `NotificationTimer` (TIMER_TYPE, wdm.h).
pub const NOTIFICATION_TIMER: u32 = 0;

/// `KDEFERRED_ROUTINE` (wdm.h): runs at DISPATCH_LEVEL.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nc-wdm-kdeferred_routine>
pub type PKDEFERRED_ROUTINE = unsafe extern "system" fn(
    Dpc: *mut KDPC,
    DeferredContext: *mut c_void,
    SystemArgument1: *mut c_void,
    SystemArgument2: *mut c_void,
);

/// IO_STATUS_BLOCK (wdm.h): `union { NTSTATUS Status; PVOID Pointer; }; ULONG_PTR Information;`
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/ns-wdm-_io_status_block>
#[repr(C)]
#[derive(Debug)]
pub struct IO_STATUS_BLOCK {
    /// The `Status`/`Pointer` union; the status is its low 32 bits.
    pub StatusOrPointer: usize,
    pub Information: usize,
}
const _: () = assert!(core::mem::size_of::<IO_STATUS_BLOCK>() == 16);

impl IO_STATUS_BLOCK {
    pub const fn zeroed() -> Self {
        Self {
            StatusOrPointer: 0,
            Information: 0,
        }
    }
    /// The `Status` member of the union.
    #[allow(clippy::cast_possible_truncation)] // NTSTATUS is the low 32 bits by definition.
    pub fn status(&self) -> NTSTATUS {
        (self.StatusOrPointer as u32).cast_signed()
    }
}

/// `POOL_FLAG_NON_PAGED` (wdm.h): non-paged, non-executable pool.
/// <https://learn.microsoft.com/windows-hardware/drivers/kernel/pool_flags>
pub const POOL_FLAG_NON_PAGED: u64 = 0x0000_0000_0000_0040;
/// `FILE_ALL_ACCESS` (winnt.h): STANDARD_RIGHTS_REQUIRED | SYNCHRONIZE | 0x1FF.
pub const FILE_ALL_ACCESS: u32 = 0x001F_01FF;
/// `NotificationEvent` (EVENT_TYPE, wdm.h).
pub const NOTIFICATION_EVENT: u32 = 0;
/// `Executive` (KWAIT_REASON, wdm.h).
pub const EXECUTIVE: u32 = 0;
/// `KernelMode` (KPROCESSOR_MODE, wdm.h).
pub const KERNEL_MODE: i8 = 0;
/// `DPFLTR_IHVVIDEO_ID` (DPFLTR_TYPE, dpfilter.h): component 78 (0x4e).
pub const DPFLTR_IHVVIDEO_ID: u32 = 78;
/// `PLUGPLAY_REGKEY_DRIVER` (wdm.h): the device's software (driver) key.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-ioopendeviceregistrykey>
pub const PLUGPLAY_REGKEY_DRIVER: u32 = 2;
/// `KEY_READ` (winnt.h): STANDARD_RIGHTS_READ | KEY_QUERY_VALUE | KEY_ENUMERATE_SUB_KEYS |
/// KEY_NOTIFY, without SYNCHRONIZE. `ZwQueryValueKey` needs KEY_QUERY_VALUE, which it holds.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-zwcreatekey>
pub const KEY_READ: u32 = 0x0002_0019;
/// `KeyValuePartialInformation` (KEY_VALUE_INFORMATION_CLASS, wdm.h).
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/ne-wdm-_key_value_information_class>
pub const KEY_VALUE_PARTIAL_INFORMATION_CLASS: u32 = 2;
/// `REG_DWORD` (winnt.h): a 32-bit little-endian number.
pub const REG_DWORD: u32 = 4;

/// KEY_VALUE_PARTIAL_INFORMATION (wdm.h) with room for exactly four bytes of data:
/// `ULONG TitleIndex; ULONG Type; ULONG DataLength; UCHAR Data[1];` (the data at offset 12).
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/ns-wdm-_key_value_partial_information>
#[repr(C)]
#[derive(Debug, Default)]
pub struct KEY_VALUE_PARTIAL_INFORMATION_DWORD {
    pub TitleIndex: u32,
    pub Type: u32,
    pub DataLength: u32,
    pub Data: [u8; 4],
}
const _: () = assert!(core::mem::size_of::<KEY_VALUE_PARTIAL_INFORMATION_DWORD>() == 16);
const _: () = assert!(core::mem::offset_of!(KEY_VALUE_PARTIAL_INFORMATION_DWORD, Data) == 12);

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "system" {
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-exallocatepool2>
    pub fn ExAllocatePool2(Flags: u64, NumberOfBytes: usize, Tag: u32) -> *mut c_void;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-exfreepoolwithtag>
    pub fn ExFreePoolWithTag(P: *mut c_void, Tag: u32);
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kebugcheckex>
    pub fn KeBugCheckEx(
        BugCheckCode: u32,
        BugCheckParameter1: usize,
        BugCheckParameter2: usize,
        BugCheckParameter3: usize,
        BugCheckParameter4: usize,
    ) -> !;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-zwloaddriver>
    pub fn ZwLoadDriver(DriverServiceName: *const UNICODE_STRING) -> NTSTATUS;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-iogetdeviceobjectpointer>
    pub fn IoGetDeviceObjectPointer(
        ObjectName: *const UNICODE_STRING,
        DesiredAccess: u32,
        FileObject: *mut *mut c_void,
        DeviceObject: *mut *mut c_void,
    ) -> NTSTATUS;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-iobuilddeviceiocontrolrequest>
    pub fn IoBuildDeviceIoControlRequest(
        IoControlCode: u32,
        DeviceObject: *mut c_void,
        InputBuffer: *mut c_void,
        InputBufferLength: u32,
        OutputBuffer: *mut c_void,
        OutputBufferLength: u32,
        InternalDeviceIoControl: u8,
        Event: *mut KEVENT,
        IoStatusBlock: *mut IO_STATUS_BLOCK,
    ) -> *mut c_void;
    /// `IoCallDriver` is a macro over this export.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-iocalldriver>
    pub fn IofCallDriver(DeviceObject: *mut c_void, Irp: *mut c_void) -> NTSTATUS;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-keinitializeevent>
    pub fn KeInitializeEvent(Event: *mut KEVENT, Type: u32, State: u8);
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kewaitforsingleobject>
    pub fn KeWaitForSingleObject(
        Object: *mut c_void,
        WaitReason: u32,
        WaitMode: i8,
        Alertable: u8,
        Timeout: *const i64,
    ) -> NTSTATUS;
    /// Returns the PHYSICAL_ADDRESS (a LARGE_INTEGER, returned in RAX) of a mapped address.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/ntddk/nf-ntddk-mmgetphysicaladdress>
    pub fn MmGetPhysicalAddress(BaseAddress: *mut c_void) -> i64;
    /// Returns the performance counter (a LARGE_INTEGER, returned in RAX) and, when
    /// `PerformanceFrequency` is non-null, stores its frequency in Hz there. Any IRQL.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kequeryperformancecounter>
    pub fn KeQueryPerformanceCounter(PerformanceFrequency: *mut i64) -> i64;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-keinitializetimerex>
    pub fn KeInitializeTimerEx(Timer: *mut KTIMER, Type: u32);
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-keinitializedpc>
    pub fn KeInitializeDpc(
        Dpc: *mut KDPC,
        DeferredRoutine: PKDEFERRED_ROUTINE,
        DeferredContext: *mut c_void,
    );
    /// `DueTime` is a LARGE_INTEGER passed by value (negative: relative, in 100 ns units);
    /// `Period` in milliseconds. IRQL <= DISPATCH_LEVEL.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kesettimerex>
    pub fn KeSetTimerEx(Timer: *mut KTIMER, DueTime: i64, Period: i32, Dpc: *mut KDPC) -> u8;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kecanceltimer>
    pub fn KeCancelTimer(Timer: *mut KTIMER) -> u8;
    /// Returns once every queued DPC has run on every processor. PASSIVE_LEVEL.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-keflushqueueddpcs>
    pub fn KeFlushQueuedDpcs();
    /// PASSIVE_LEVEL; the callback may run before it returns.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-etwregister>
    pub fn EtwRegister(
        ProviderId: *const rvgpu_kmd::etw::Guid,
        EnableCallback: Option<rvgpu_kmd::etw::EnableCallback>,
        CallbackContext: *mut c_void,
        RegHandle: *mut u64,
    ) -> NTSTATUS;
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-etwunregister>
    pub fn EtwUnregister(RegHandle: u64) -> NTSTATUS;
    /// Any IRQL (the data must be non-paged above APC_LEVEL).
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-etwwritetransfer>
    pub fn EtwWriteTransfer(
        RegHandle: u64,
        EventDescriptor: *const rvgpu_kmd::etw::EventDescriptor,
        ActivityId: *const rvgpu_kmd::etw::Guid,
        RelatedActivityId: *const rvgpu_kmd::etw::Guid,
        UserDataCount: u32,
        UserData: *const rvgpu_kmd::etw::EventDataDescriptor,
    ) -> NTSTATUS;
    /// `ObDereferenceObject` is a macro over this export.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-obdereferenceobject>
    pub fn ObfDereferenceObject(Object: *mut c_void) -> isize;
    /// PASSIVE_LEVEL; the handle is closed with `ZwClose`.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-ioopendeviceregistrykey>
    pub fn IoOpenDeviceRegistryKey(
        DeviceObject: *mut c_void,
        DevInstKeyType: u32,
        DesiredAccess: u32,
        DeviceRegKey: *mut *mut c_void,
    ) -> NTSTATUS;
    /// PASSIVE_LEVEL. `ResultLength` is written on success and on the two short-buffer
    /// failures (STATUS_BUFFER_OVERFLOW, STATUS_BUFFER_TOO_SMALL).
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-zwqueryvaluekey>
    pub fn ZwQueryValueKey(
        KeyHandle: *mut c_void,
        ValueName: *const UNICODE_STRING,
        KeyValueInformationClass: u32,
        KeyValueInformation: *mut c_void,
        Length: u32,
        ResultLength: *mut u32,
    ) -> NTSTATUS;
    /// PASSIVE_LEVEL.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-zwclose>
    pub fn ZwClose(Handle: *mut c_void) -> NTSTATUS;
}

#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
unsafe extern "C" {
    /// Variadic, cdecl.
    /// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-dbgprintex>
    pub fn DbgPrintEx(ComponentId: u32, Level: u32, Format: *const u8, ...) -> u32;
}

/// Converts an ASCII string to UTF-16 at compile time (for `UNICODE_STRING` constants).
/// Fails the build if `s` is not ASCII or is not exactly `N` bytes long.
pub const fn ascii_utf16<const N: usize>(s: &str) -> [u16; N] {
    assert!(s.len() == N, "length mismatch");
    let mut out = [0u16; N];
    let mut src = s.as_bytes();
    let mut dst: &mut [u16] = &mut out;
    while let ([b, src_rest @ ..], [d, dst_rest @ ..]) = (src, dst) {
        assert!(b.is_ascii(), "UNICODE_STRING constants must be ASCII");
        *d = *b as u16;
        src = src_rest;
        dst = dst_rest;
    }
    out
}

impl UNICODE_STRING {
    /// A `UNICODE_STRING` over a static UTF-16 buffer (not NUL-terminated).
    pub const fn from_static(buf: &'static [u16]) -> Self {
        let bytes = buf.len().saturating_mul(2);
        assert!(bytes <= u16::MAX as usize, "UNICODE_STRING too long");
        #[allow(clippy::cast_possible_truncation)] // checked just above
        let len = bytes as u16;
        Self {
            Length: len,
            MaximumLength: len,
            Buffer: buf.as_ptr(),
        }
    }
}
