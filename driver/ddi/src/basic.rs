//! Base Windows kernel types (ntdef.h / wdm.h / ntddk.h subset) used by the display DDIs.
//!
//! C enums are bound as `pub type X = i32;` plus `pub const` values (the bindgen / windows-rs
//! convention): a value the OS passes that this crate does not know stays representable.
//! Anonymous C unions and structs become a field named `Anonymous` (`Anonymous2`, ...) of a type
//! named `<PARENT>_0` (`_1`, ...), the windows-rs naming convention.

use core::ffi::c_void;

use crate::macros::{
    c_enum, c_marker, c_type, extern_fn, interface_table, opaque_types, union_debug,
};

/// `NTSTATUS`: a kernel status code; negative values are errors. See [`crate::ntstatus`].
pub type NTSTATUS = i32;
/// `BOOLEAN` (`UCHAR`): 0 is FALSE, anything else TRUE.
pub type BOOLEAN = u8;
/// `UCHAR`.
pub type UCHAR = u8;
/// `BYTE`.
pub type BYTE = u8;
/// `USHORT`.
pub type USHORT = u16;
/// `WORD`.
pub type WORD = u16;
/// `UINT16`.
pub type UINT16 = u16;
/// `WCHAR` (UTF-16 code unit).
pub type WCHAR = u16;
/// `ULONG` (32 bits on Windows).
pub type ULONG = u32;
/// `LONG` (32 bits on Windows).
pub type LONG = i32;
/// `UINT`.
pub type UINT = u32;
/// `UINT32`.
pub type UINT32 = u32;
/// `INT`.
pub type INT = i32;
/// `DWORD`.
pub type DWORD = u32;
/// `UINT64`.
pub type UINT64 = u64;
/// `ULONG64`.
pub type ULONG64 = u64;
/// `ULONGLONG`.
pub type ULONGLONG = u64;
/// `LONGLONG`.
pub type LONGLONG = i64;
/// `SIZE_T`.
pub type SIZE_T = usize;
/// `ULONG_PTR`.
pub type ULONG_PTR = usize;
/// `KAFFINITY` (processor mask, pointer sized).
pub type KAFFINITY = usize;
/// `PVOID`.
pub type PVOID = *mut c_void;
/// `HANDLE`: an opaque kernel or driver handle.
pub type HANDLE = *mut c_void;
/// `D3DKMT_HANDLE`: a 32-bit kernel-mode thunk handle (d3dukmdt.h).
pub type D3DKMT_HANDLE = u32;
/// `D3DGPU_VIRTUAL_ADDRESS`: a 64-bit GPU virtual address (d3dukmdt.h).
pub type D3DGPU_VIRTUAL_ADDRESS = u64;
/// `D3DGPU_SIZE_T`: a 64-bit size in GPU address space (d3dukmdt.h).
pub type D3DGPU_SIZE_T = u64;
/// `D3DDDI_VIDEO_PRESENT_SOURCE_ID` (d3dukmdt.h).
pub type D3DDDI_VIDEO_PRESENT_SOURCE_ID = u32;
/// `D3DDDI_VIDEO_PRESENT_TARGET_ID` (d3dukmdt.h).
pub type D3DDDI_VIDEO_PRESENT_TARGET_ID = u32;

/// Position and width of one C bitfield inside its storage word; see [`crate::macros`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BitField {
    /// Index of the least significant bit of the field.
    pub shift: u32,
    /// Number of bits.
    pub width: u32,
}

c_type! {
    /// The `LowPart`/`HighPart` view of [`LARGE_INTEGER`].
    ///
    /// <https://learn.microsoft.com/en-us/windows/win32/api/winnt/ns-winnt-large_integer-r1>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct LARGE_INTEGER_0 {
        /// Low 32 bits.
        #[offset(0)]
        pub LowPart: u32,
        /// High 32 bits (signed).
        #[offset(4)]
        pub HighPart: i32,
    }
}

c_type! {
    /// `LARGE_INTEGER`: a signed 64-bit integer with 8-byte alignment.
    ///
    /// <https://learn.microsoft.com/en-us/windows/win32/api/winnt/ns-winnt-large_integer-r1>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union LARGE_INTEGER {
        /// Split view (anonymous struct in C).
        pub Anonymous: LARGE_INTEGER_0,
        /// Split view (the named `u` member in C).
        pub u: LARGE_INTEGER_0,
        /// The whole value.
        #[offset(0)]
        pub QuadPart: i64,
    }
}

impl LARGE_INTEGER {
    /// Builds a value from its 64-bit representation.
    pub const fn from_i64(v: i64) -> Self {
        Self { QuadPart: v }
    }

    /// The 64-bit value.
    pub const fn get(self) -> i64 {
        // SAFETY: every bit pattern of the union's 8 bytes is a valid i64.
        unsafe { self.QuadPart }
    }
}

impl Default for LARGE_INTEGER {
    fn default() -> Self {
        Self { QuadPart: 0 }
    }
}

impl core::fmt::Debug for LARGE_INTEGER {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "LARGE_INTEGER({:#x})", self.get())
    }
}

impl PartialEq for LARGE_INTEGER {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for LARGE_INTEGER {}

/// `PHYSICAL_ADDRESS`: a CPU physical address, stored as a [`LARGE_INTEGER`].
pub type PHYSICAL_ADDRESS = LARGE_INTEGER;

c_type! {
    /// `LUID`: a locally unique identifier (the adapter LUID, for example).
    ///
    /// <https://learn.microsoft.com/en-us/windows/win32/api/winnt/ns-winnt-luid>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
    // Carried inside the D3DKMT blocks, which are read as bytes.
    #[derive(zerocopy::FromBytes, zerocopy::IntoBytes, zerocopy::Immutable)]
    pub struct LUID {
        /// Low 32 bits.
        #[offset(0)]
        pub LowPart: u32,
        /// High 32 bits.
        #[offset(4)]
        pub HighPart: i32,
    }
}

c_type! {
    /// `GUID`.
    ///
    /// <https://learn.microsoft.com/en-us/windows/win32/api/guiddef/ns-guiddef-guid>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
    pub struct GUID {
        /// First 32 bits.
        #[offset(0)]
        pub Data1: u32,
        /// Next 16 bits.
        #[offset(4)]
        pub Data2: u16,
        /// Next 16 bits.
        #[offset(6)]
        pub Data3: u16,
        /// Last 8 bytes.
        #[offset(8)]
        pub Data4: [u8; 8],
    }
}

c_type! {
    /// `UNICODE_STRING`: a counted UTF-16 string (lengths in bytes, not NUL-terminated).
    ///
    /// <https://learn.microsoft.com/en-us/windows/win32/api/ntdef/ns-ntdef-_unicode_string>
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct UNICODE_STRING {
        /// Length of the string in bytes.
        #[offset(0)]
        pub Length: u16,
        /// Size of the buffer in bytes.
        #[offset(2)]
        pub MaximumLength: u16,
        /// The UTF-16 buffer.
        #[offset(8)]
        pub Buffer: *mut u16,
    }
}

impl Default for UNICODE_STRING {
    fn default() -> Self {
        Self {
            Length: 0,
            MaximumLength: 0,
            Buffer: core::ptr::null_mut(),
        }
    }
}

opaque_types! {
    /// `DEVICE_OBJECT`: opaque here; the driver only passes pointers to it around.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_device_object>
    DEVICE_OBJECT;
}
/// `PDEVICE_OBJECT`.
pub type PDEVICE_OBJECT = *mut DEVICE_OBJECT;

/// `MDL` and `PMDL`: the memory descriptor list header (its layout is in [`crate::mdl`]).
pub use crate::mdl::{MDL, PMDL};

opaque_types! {
    /// `DRIVER_OBJECT`: opaque here (passed to `DxgkInitialize`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_driver_object>
    DRIVER_OBJECT;
}
/// `PDRIVER_OBJECT`.
pub type PDRIVER_OBJECT = *mut DRIVER_OBJECT;

extern_fn! {
    /// `PINTERFACE_REFERENCE`: increments an interface's reference count.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/nc-wdm-pinterface_reference>
    pub type PINTERFACE_REFERENCE = fn(Context: PVOID);
    /// `PINTERFACE_DEREFERENCE`: decrements an interface's reference count.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/nc-wdm-pinterface_dereference>
    pub type PINTERFACE_DEREFERENCE = fn(Context: PVOID);
}

interface_table! {
    /// `INTERFACE`: the common header of every query-interface table (wdm.h); `Size` counts the
    /// whole table.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_interface>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct INTERFACE {}
}
/// `PINTERFACE`.
pub type PINTERFACE = *mut INTERFACE;

extern_fn! {
    /// `PKSYNCHRONIZE_ROUTINE`: a routine run synchronised with the ISR
    /// (passed to `DxgkCbSynchronizeExecution`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/nc-wdm-ksynchronize_routine>
    pub type PKSYNCHRONIZE_ROUTINE = fn(SynchronizeContext: PVOID) -> BOOLEAN;
}

c_enum! {
    /// `DEVICE_POWER_STATE` (wdm.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ne-wdm-_device_power_state>
    pub type DEVICE_POWER_STATE = i32 {
        /// Unspecified power state.
        PowerDeviceUnspecified,
        /// D0 (working).
        PowerDeviceD0,
        /// D1.
        PowerDeviceD1,
        /// D2.
        PowerDeviceD2,
        /// D3 (off).
        PowerDeviceD3,
        /// Sentinel.
        PowerDeviceMaximum,
    }
}

/// `POWER_ACTION` (wdm.h); the values are opaque to this driver.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ne-wdm-power_action>
pub type POWER_ACTION = i32;

c_enum! {
    /// `MEMORY_CACHING_TYPE` (wdm.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ne-wdm-_memory_caching_type>
    pub type MEMORY_CACHING_TYPE = i32 {
        /// Uncached.
        MmNonCached,
        /// Write-back cached.
        MmCached,
        /// Write-combined.
        MmWriteCombined,
    }

    /// `INTERFACE_TYPE` (bus type of a resource list, wdm.h).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ne-wdm-_interface_type>
    pub type INTERFACE_TYPE = i32 {
        /// PCI bus.
        PCIBus = 5,
    }
}

/// `CM_RESOURCE_TYPE` values of [`CM_PARTIAL_RESOURCE_DESCRIPTOR::Type`] (wdm.h).
pub mod cm_resource_type {
    /// Unused descriptor.
    pub const CmResourceTypeNull: u8 = 0;
    /// I/O port range.
    pub const CmResourceTypePort: u8 = 1;
    /// Interrupt (line based or message signalled, see the flags).
    pub const CmResourceTypeInterrupt: u8 = 2;
    /// Memory range.
    pub const CmResourceTypeMemory: u8 = 3;
    /// DMA channel.
    pub const CmResourceTypeDma: u8 = 4;
    /// Device-private data.
    pub const CmResourceTypeDevicePrivate: u8 = 129;
    /// Large memory range (`Memory40`/`48`/`64`, see the flags).
    pub const CmResourceTypeMemoryLarge: u8 = 7;
    /// `Flags` bit of an interrupt descriptor: message-signalled.
    pub const CM_RESOURCE_INTERRUPT_MESSAGE: u16 = 0x0002;
    /// `Flags` bit of an interrupt descriptor: latched (edge), not level-sensitive.
    pub const CM_RESOURCE_INTERRUPT_LATCHED: u16 = 0x0001;
}

c_type! {
    /// `u.Generic` / `u.Port` / `u.Memory` of a partial resource descriptor.
    #[size(12)]
    #[repr(C, packed(4))]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE {
        /// Start address.
        #[offset(0)]
        pub Start: PHYSICAL_ADDRESS,
        /// Length in bytes (or in the unit the `Memory40/48/64` variants imply).
        #[offset(8)]
        pub Length: u32,
    }
}

c_type! {
    /// `u.Interrupt` of a partial resource descriptor.
    #[size(16)]
    #[repr(C, packed(4))]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct CM_PARTIAL_RESOURCE_DESCRIPTOR_INTERRUPT {
        /// Level (without `NT_PROCESSOR_GROUPS`; with it the same 4 bytes are `USHORT Level; USHORT
        /// Group;`).
        #[offset(0)]
        pub Level: u32,
        /// Vector.
        #[offset(4)]
        pub Vector: u32,
        /// Processor affinity.
        #[offset(8)]
        pub Affinity: KAFFINITY,
    }
}

c_type! {
    /// `u.MessageInterrupt.Raw` of a partial resource descriptor.
    #[size(16)]
    #[repr(C, packed(4))]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct CM_PARTIAL_RESOURCE_DESCRIPTOR_MSI_RAW {
        /// Reserved (`Group` with `NT_PROCESSOR_GROUPS`).
        pub Reserved: u16,
        /// Number of messages allocated.
        #[offset(2)]
        pub MessageCount: u16,
        /// Vector.
        pub Vector: u32,
        /// Processor affinity.
        #[offset(8)]
        pub Affinity: KAFFINITY,
    }
}

c_type! {
    /// `u.MessageInterrupt` of a partial resource descriptor.
    #[size(16)]
    #[repr(C, packed(4))]
    #[derive(Clone, Copy)]
    pub union CM_PARTIAL_RESOURCE_DESCRIPTOR_MSI {
        /// Raw view.
        pub Raw: CM_PARTIAL_RESOURCE_DESCRIPTOR_MSI_RAW,
        /// Translated view (same layout as `Interrupt`).
        pub Translated: CM_PARTIAL_RESOURCE_DESCRIPTOR_INTERRUPT,
    }
}

union_debug!(CM_PARTIAL_RESOURCE_DESCRIPTOR_MSI);

c_type! {
    /// Three raw `ULONG`s (`u.Dma`, `u.DevicePrivate`, `u.BusNumber`, `u.DeviceSpecificData`, ...).
    #[size(12)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug)]
    pub struct CM_PARTIAL_RESOURCE_DESCRIPTOR_DATA {
        /// The three words.
        pub Data: [u32; 3],
    }
}

c_type! {
    /// The `u` union of [`CM_PARTIAL_RESOURCE_DESCRIPTOR`] (anonymous type in C; member names
    /// kept).
    #[size(16)]
    #[repr(C, packed(4))]
    #[derive(Clone, Copy)]
    pub union CM_PARTIAL_RESOURCE_DESCRIPTOR_0 {
        /// Generic range view.
        pub Generic: CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE,
        /// I/O port range.
        pub Port: CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE,
        /// Line-based interrupt.
        pub Interrupt: CM_PARTIAL_RESOURCE_DESCRIPTOR_INTERRUPT,
        /// Message-signalled interrupt.
        pub MessageInterrupt: CM_PARTIAL_RESOURCE_DESCRIPTOR_MSI,
        /// Memory range.
        pub Memory: CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE,
        /// Large memory range, length in 256-byte units.
        pub Memory40: CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE,
        /// Large memory range, length in 64 KiB units.
        pub Memory48: CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE,
        /// Large memory range, length in 4 GiB units.
        pub Memory64: CM_PARTIAL_RESOURCE_DESCRIPTOR_RANGE,
        /// Device-private words.
        pub DevicePrivate: CM_PARTIAL_RESOURCE_DESCRIPTOR_DATA,
        /// Any other 12-byte variant.
        pub Dma: CM_PARTIAL_RESOURCE_DESCRIPTOR_DATA,
    }
}

union_debug!(CM_PARTIAL_RESOURCE_DESCRIPTOR_0);

c_type! {
    /// `CM_PARTIAL_RESOURCE_DESCRIPTOR`: one hardware resource (wdm.h, declared under
    /// `#pragma pack(4)`: 20 bytes, 4-byte aligned on x64).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_cm_partial_resource_descriptor>
    #[size(20)]
    #[repr(C, packed(4))]
    #[derive(Clone, Copy, Debug)]
    pub struct CM_PARTIAL_RESOURCE_DESCRIPTOR {
        /// A `CmResourceType*` value, see [`cm_resource_type`].
        #[offset(0)]
        pub Type: u8,
        /// Sharing disposition.
        #[offset(1)]
        pub ShareDisposition: u8,
        /// Type-specific flags.
        #[offset(2)]
        pub Flags: u16,
        /// Type-specific data.
        #[offset(4)]
        pub u: CM_PARTIAL_RESOURCE_DESCRIPTOR_0,
    }
}
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::align_of::<CM_PARTIAL_RESOURCE_DESCRIPTOR>() == 4);

c_type! {
    /// `CM_PARTIAL_RESOURCE_LIST`: a counted list of partial descriptors (variable length; the
    /// array declared with one element is followed by `Count - 1` more).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_cm_partial_resource_list>
    #[size(28)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct CM_PARTIAL_RESOURCE_LIST {
        /// Version.
        #[offset(0)]
        pub Version: u16,
        /// Revision.
        #[offset(2)]
        pub Revision: u16,
        /// Number of descriptors.
        #[offset(4)]
        pub Count: u32,
        /// First descriptor.
        #[offset(8)]
        pub PartialDescriptors: [CM_PARTIAL_RESOURCE_DESCRIPTOR; 1],
    }
}

c_type! {
    /// `CM_FULL_RESOURCE_DESCRIPTOR`: the resources of one bus.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_cm_full_resource_descriptor>
    #[size(36)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct CM_FULL_RESOURCE_DESCRIPTOR {
        /// Bus type.
        #[offset(0)]
        pub InterfaceType: INTERFACE_TYPE,
        /// Bus number.
        #[offset(4)]
        pub BusNumber: u32,
        /// The descriptors.
        #[offset(8)]
        pub PartialResourceList: CM_PARTIAL_RESOURCE_LIST,
    }
}

c_type! {
    /// `CM_RESOURCE_LIST`: the translated resources handed to the driver (variable length).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/wdm/ns-wdm-_cm_resource_list>
    #[size(40)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct CM_RESOURCE_LIST {
        /// Number of full descriptors.
        #[offset(0)]
        pub Count: u32,
        /// First full descriptor.
        #[offset(4)]
        pub List: [CM_FULL_RESOURCE_DESCRIPTOR; 1],
    }
}
/// `PCM_RESOURCE_LIST`.
pub type PCM_RESOURCE_LIST = *mut CM_RESOURCE_LIST;

/// The common DDI and callback shape `(HANDLE, A) -> NTSTATUS`: the handle of the object it acts
/// on (adapter, device, context, queue), then its argument, usually a pointer to a `DXGKARG_*`
/// structure. The reference page each type links to names the parameters.
pub type DDI_FN<A> = Option<unsafe extern "system" fn(HANDLE, A) -> NTSTATUS>;

extern_fn! {
    /// Placeholder pointer type for a DDI or callback slot whose signature is not bound yet. It has
    /// the size and null representation of every C function pointer, so the table layout is exact;
    /// it must not be called.
    pub type PFN_UNBOUND = fn();
}

/// A C type of these bindings: a struct, union or flag word, an opaque type, a scalar a typedef
/// names, or a pointer to one of them. The macro that declares a type implements it, and
/// nothing outside this crate can (sealed), so a bound on it admits the headers' types and no
/// others; `Kind` says whether the type has a layout of its own ([`Data`]), is only pointed
/// at ([`Opaque`]) or is passed only as an array ([`Element`]).
pub trait CType: sealed::Sealed + 'static {
    /// [`Data`], [`Opaque`] or [`Element`].
    type Kind;
}

/// [`CType::Kind`] of a type with a layout of its own: fields, a flag word, a scalar.
#[derive(Debug)]
pub enum Data {}

/// [`CType::Kind`] of a type only pointed at (`c_void`, the `opaque_types!` ones).
#[derive(Debug)]
pub enum Opaque {}

/// [`CType::Kind`] of a type with a layout of its own that a DDI takes only as an array whose
/// length another parameter gives (`DXGK_CHILD_DESCRIPTOR`): a pointer to one says nothing of
/// how many follow, so it is never passed as a borrow of one value.
#[derive(Debug)]
pub enum Element {}

/// Keeps [`CType`] to this crate's declarations.
pub(crate) mod sealed {
    /// Implemented with [`super::CType`], inside this crate only.
    pub trait Sealed {}
}

c_marker!(Data: u8, u16, u32, u64, i32, i64, usize);
c_marker!(Opaque: c_void);

impl<T: CType> sealed::Sealed for *mut T {}
impl<T: CType> CType for *mut T {
    type Kind = Data;
}
impl<T: CType> sealed::Sealed for *const T {}
impl<T: CType> CType for *const T {
    type Kind = Data;
}

/// A pointer-sized slot of a DDI table: a function pointer (`Option<fn>`) or a reserved `PVOID`.
pub trait DdiSlot {
    /// The null value.
    const NULL: Self;
    /// Whether the slot is non-null.
    fn is_filled(&self) -> bool;
}

impl<F> DdiSlot for Option<F> {
    const NULL: Self = None;
    fn is_filled(&self) -> bool {
        self.is_some()
    }
}

impl DdiSlot for PVOID {
    const NULL: Self = core::ptr::null_mut();
    fn is_filled(&self) -> bool {
        !self.is_null()
    }
}
