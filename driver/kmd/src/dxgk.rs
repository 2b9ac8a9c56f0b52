//! Calls into Dxgkrnl through the `DXGKRNL_INTERFACE` it handed to `DxgkDdiStartDevice`.
//!
//! One safe method per callback the driver uses. Each checks that the slot is present and
//! turns the C conventions (out pointers, BOOLEAN) into Rust ones; the `unsafe` of calling a
//! foreign function pointer lives here only.
//! Reference: <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/dispmprt/ns-dispmprt-_dxgkrnl_interface>.

use core::ffi::c_void;
use core::mem::size_of;
use core::ptr::{self, NonNull};

use rvgpu_ddi::adapter::DXGK_DEVICE_INFO;
use rvgpu_ddi::dxgkrnl::{
    D3DDDI_DOORBELLSTATUS, DXGKARGCB_ALLOCATECONTIGUOUSMEMORY, DXGKARGCB_DISCONNECTDOORBELL,
    DXGKARGCB_DISCONNECTDOORBELL_FLAGS, DXGKARGCB_FREECONTIGUOUSMEMORY, DXGKARGCB_GETHANDLEDATA,
    DXGKCB_GETHANDLEDATAFLAGS, DXGKRNL_INTERFACE, DXGK_HANDLE_ALLOCATION,
};
use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_ddi::{CM_PARTIAL_RESOURCE_DESCRIPTOR, NTSTATUS, PHYSICAL_ADDRESS};

use rvgpu_ddi::feature::{
    DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1, DXGKARGCB_ISFEATUREENABLED2,
    DXGKARGCB_QUERYFEATUREINTERFACE, DXGKCBINT_FEATURE_NATIVEFENCE_1, DXGK_FEATURE_ID,
    DXGK_FEATURE_INTERFACE, DXGK_FEATURE_NATIVE_FENCE, DXGK_FEATURE_VERSION,
    DXGK_ISFEATUREENABLED_RESULT_0,
};

use crate::resources::{self, ResourceError, ResourceList, Resources};
use crate::status::{self, Status};

/// `MmNonCached` in `MEMORY_CACHING_TYPE`: registers are mapped uncached.
const MM_NON_CACHED: i32 = 0;
/// `MmCached`: contiguous system memory shared with an I/O-coherent device.
const MM_CACHED: i32 = 1;

/// The Dxgkrnl callback table of one adapter (a copy: Dxgkrnl keeps the original valid for
/// the adapter's life, and copying it is what the WDK samples do).
#[derive(Clone, Copy)]
pub struct Dxgk {
    raw: DXGKRNL_INTERFACE,
}

// SAFETY: the table holds a handle and function pointers that Dxgkrnl documents as callable
// from any thread at the IRQL each callback allows.
unsafe impl Send for Dxgk {}
// SAFETY: as above.
unsafe impl Sync for Dxgk {}

impl core::fmt::Debug for Dxgk {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dxgk")
            .field("DeviceHandle", &self.raw.DeviceHandle)
            .finish()
    }
}

/// A routine run by `DxgkCbSynchronizeExecution` at device IRQL.
pub type SyncRoutine = unsafe extern "system" fn(context: *mut c_void) -> u8;

impl Dxgk {
    /// Wraps the interface Dxgkrnl passed to StartDevice.
    pub fn new(raw: DXGKRNL_INTERFACE) -> Self {
        Self { raw }
    }

    /// The adapter handle Dxgkrnl knows us by.
    pub fn device_handle(&self) -> *mut c_void {
        self.raw.DeviceHandle
    }

    /// DxgkCbGetDeviceInformation (PASSIVE).
    pub fn device_information(&self) -> Result<DeviceInfo, Status> {
        let f = self
            .raw
            .DxgkCbGetDeviceInformation
            .ok_or(status::NOT_SUPPORTED)?;
        let mut info = DXGK_DEVICE_INFO::default();
        // SAFETY: a Dxgkrnl callback called with its own handle and a valid out pointer.
        let st = unsafe { f(self.raw.DeviceHandle, &mut info) };
        status::check(st).map(|()| DeviceInfo(info))
    }

    /// The adapter's translated resources, parsed from the list `info` (as
    /// [`Dxgk::device_information`] returned it) points at.
    pub fn resources(&self, info: &DeviceInfo) -> Result<Resources, ResourceError> {
        let list = OsResourceList(info.0.TranslatedResourceList.cast());
        resources::parse((!list.0.is_null()).then_some(&list as &dyn ResourceList))
    }

    /// DxgkCbMapMemory for a register BAR (PASSIVE): kernel mapping, uncached.
    pub fn map_registers(&self, start: u64, length: u64) -> Result<NonNull<u8>, Status> {
        let f = self.raw.DxgkCbMapMemory.ok_or(status::NOT_SUPPORTED)?;
        let len = u32::try_from(length).map_err(|_| status::INVALID_PARAMETER)?;
        let addr = PHYSICAL_ADDRESS {
            QuadPart: i64::try_from(start).map_err(|_| status::INVALID_PARAMETER)?,
        };
        let mut va: *mut c_void = ptr::null_mut();
        // SAFETY: a Dxgkrnl callback with its own handle, a range from our resource list and
        // a valid out pointer.
        let st = unsafe {
            f(
                self.raw.DeviceHandle,
                addr,
                len,
                0,
                0,
                MM_NON_CACHED,
                &mut va,
            )
        };
        status::check(st)?;
        NonNull::new(va.cast()).ok_or(status::UNSUCCESSFUL)
    }

    /// DxgkCbUnmapMemory (PASSIVE).
    pub fn unmap(&self, va: NonNull<u8>) -> Result<(), Status> {
        let f = self.raw.DxgkCbUnmapMemory.ok_or(status::NOT_SUPPORTED)?;
        // SAFETY: `va` came from DxgkCbMapMemory on this adapter.
        status::check(unsafe { f(self.raw.DeviceHandle, va.as_ptr().cast()) })
    }

    /// DxgkCbAllocateContiguousMemory (PASSIVE): returns (kernel VA, Dxgkrnl handle).
    pub fn allocate_contiguous(&self, bytes: u64) -> Result<(NonNull<u8>, usize), Status> {
        let f = self
            .raw
            .DxgkCbAllocateContiguousMemory
            .ok_or(status::NOT_SUPPORTED)?;
        let mut args = DXGKARGCB_ALLOCATECONTIGUOUSMEMORY {
            NumberOfBytes: usize::try_from(bytes).map_err(|_| status::INVALID_PARAMETER)?,
            HighestAcceptableAddress: PHYSICAL_ADDRESS {
                QuadPart: (rvgpu_hw::addr::SYSMEM_LIMIT - 1).cast_signed(),
            },
            CacheType: MM_CACHED,
            ..Default::default()
        };
        // SAFETY: a Dxgkrnl callback with its own handle and a valid in/out structure.
        status::check(unsafe { f(self.raw.DeviceHandle, &mut args) })?;
        let va = NonNull::new(args.pMemory.cast::<u8>()).ok_or(status::NO_MEMORY)?;
        Ok((va, args.hMemoryHandle as usize))
    }

    /// DxgkCbFreeContiguousMemory (PASSIVE).
    pub fn free_contiguous(&self, handle: usize) -> Result<(), Status> {
        let f = self
            .raw
            .DxgkCbFreeContiguousMemory
            .ok_or(status::NOT_SUPPORTED)?;
        let args = DXGKARGCB_FREECONTIGUOUSMEMORY {
            hMemoryHandle: handle as *mut c_void,
        };
        // SAFETY: the handle came from DxgkCbAllocateContiguousMemory on this adapter.
        status::check(unsafe { f(self.raw.DeviceHandle, &args) })
    }

    /// DxgkCbDisconnectDoorbell (PASSIVE: call it with no spin lock held): tells Dxgkrnl
    /// that the KMD took a doorbell away (victimisation); Dxgkrnl points the UMD's doorbell
    /// VA at a dummy page and writes `reason` to its status page (UM-09). The handles are
    /// Dxgkrnl's own (the input values of CreateHwQueue's `hHwQueue` and CreateDoorbell's
    /// `hDoorbell`).
    pub fn disconnect_doorbell(
        &self,
        os_queue: usize,
        os_doorbell: usize,
        reason: D3DDDI_DOORBELLSTATUS,
    ) -> Result<(), Status> {
        let f = self
            .raw
            .DxgkCbDisconnectDoorbell
            .ok_or(status::NOT_SUPPORTED)?;
        let mut args = DXGKARGCB_DISCONNECTDOORBELL {
            hHwQueue: ptr::without_provenance_mut(os_queue),
            hDoorbell: ptr::without_provenance_mut(os_doorbell),
            Flags: DXGKARGCB_DISCONNECTDOORBELL_FLAGS::default(),
            DisconnectReason: reason,
        };
        // SAFETY: a Dxgkrnl callback with a valid, initialised argument block that outlives
        // the call.
        status::check(unsafe { f(&mut args) })
    }

    /// DxgkCbGetHandleData for an allocation: the driver's handle of the allocation Dxgkrnl's
    /// D3DKMT handle `h` names in the calling process (what `DxgkDdiCreateAllocation` returned
    /// in `hAllocation`), or `None` when Dxgkrnl knows no such allocation there (it answers
    /// NULL). `DxgkDdiOpenAllocation` uses it to find the allocation a device opens.
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_gethandledata>
    pub fn allocation_of(&self, h: u32) -> Option<usize> {
        let f = self.raw.DxgkCbGetHandleData?;
        let args = DXGKARGCB_GETHANDLEDATA {
            hObject: h,
            Type: DXGK_HANDLE_ALLOCATION,
            Flags: DXGKCB_GETHANDLEDATAFLAGS::default(),
        };
        // SAFETY: a Dxgkrnl callback with a valid, initialised argument block that outlives
        // the call.
        let p = unsafe { f(&args) };
        (!p.is_null()).then(|| p.addr())
    }

    /// DxgkCbSetPowerComponentActive (PASSIVE: call it with no lock held, since
    /// `DxgkDdiSetPowerComponentFState` may run meanwhile): one more active reference on power
    /// component `component`, which is in F0 when this returns. Returns whether the callback
    /// was there to call (a missing slot takes no reference, so no Idle may follow).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentactive>
    pub fn set_power_component_active(&self, component: u32) -> bool {
        let Some(f) = self.raw.DxgkCbSetPowerComponentActive else {
            return false;
        };
        // SAFETY: a Dxgkrnl callback with its own adapter handle and a component index the
        // driver reported.
        unsafe { f(self.raw.DeviceHandle, component) };
        true
    }

    /// DxgkCbSetPowerComponentIdle (PASSIVE for an engine component): drops one active
    /// reference taken by [`Dxgk::set_power_component_active`].
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_setpowercomponentidle>
    pub fn set_power_component_idle(&self, component: u32) {
        if let Some(f) = self.raw.DxgkCbSetPowerComponentIdle {
            // SAFETY: as above; pairs with an earlier Active on the same component.
            unsafe { f(self.raw.DeviceHandle, component) };
        }
    }

    /// DxgkCbInvalidateHwContext (PASSIVE: call it with no spin lock held): tells Dxgkrnl that
    /// the context `h_context` caused an engine hang and lost its state in the reset; the OS
    /// puts its device in error and submits nothing more from it (docs/tdr.md#the-kmd step 5,
    /// UM-10). `CollateralDamage` = 0 (primary cause). Which handle Dxgkrnl expects is
    /// UNVERIFIED (docs/tdr.md Q2).
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkcb_invalidatehwcontext>
    pub fn invalidate_hw_context(&self, h_context: usize) -> Result<(), Status> {
        let f = self
            .raw
            .DxgkCbInvalidateHwContext
            .ok_or(status::NOT_SUPPORTED)?;
        let args = rvgpu_ddi::dxgkrnl::DXGKARGCB_INVALIDATEHWCONTEXT {
            hAdapter: self.raw.DeviceHandle,
            hHwContext: ptr::without_provenance_mut(h_context),
            Flags: rvgpu_ddi::dxgkrnl::DXGK_INVALIDATEHWCONTEXTFLAGS::default(),
        };
        // SAFETY: a Dxgkrnl callback with a valid, initialised argument block that outlives
        // the call.
        status::check(unsafe { f(&args) })
    }

    /// DxgkCbQueryServices (PASSIVE): fills the interface structure at `interface`, whose
    /// `Size` and `Version` the caller set.
    ///
    /// # Safety
    /// `interface` must point to a writable interface structure of the size its header
    /// declares, for the kind of services asked for.
    pub unsafe fn query_services(
        &self,
        kind: rvgpu_ddi::dxgkrnl::DXGK_SERVICES,
        interface: *mut rvgpu_ddi::INTERFACE,
    ) -> Result<(), Status> {
        let f = self.raw.DxgkCbQueryServices.ok_or(status::NOT_SUPPORTED)?;
        if interface.is_null() {
            return Err(status::INVALID_PARAMETER);
        }
        // SAFETY: a Dxgkrnl callback with its own handle and a caller-owned interface buffer
        // whose header declares its size.
        status::check(unsafe { f(self.raw.DeviceHandle, kind, interface) })
    }

    /// DxgkCbNotifyInterrupt (device IRQL only: from the ISR or a synchronised routine).
    pub fn notify_interrupt(&self, data: &DXGKARGCB_NOTIFY_INTERRUPT_DATA) {
        if let Some(f) = self.raw.DxgkCbNotifyInterrupt {
            // SAFETY: a Dxgkrnl callback with its own handle and a valid, initialised record
            // that outlives the call.
            unsafe { f(self.raw.DeviceHandle, data) }
        }
    }

    /// DxgkCbQueueDpc (device IRQL): true if the DPC was queued (false if already queued).
    pub fn queue_dpc(&self) -> bool {
        match self.raw.DxgkCbQueueDpc {
            // SAFETY: a Dxgkrnl callback with its own handle.
            Some(f) => unsafe { f(self.raw.DeviceHandle) != 0 },
            None => false,
        }
    }

    /// DxgkCbNotifyDpc (DISPATCH, from the DPC routine).
    pub fn notify_dpc(&self) {
        if let Some(f) = self.raw.DxgkCbNotifyDpc {
            // SAFETY: a Dxgkrnl callback with its own handle.
            unsafe { f(self.raw.DeviceHandle) }
        }
    }

    /// DxgkCbSynchronizeExecution: runs `routine(context)` at device IRQL, serialised with the
    /// ISR. Returns the routine's result.
    ///
    /// # Safety
    /// `routine` must be sound to call with `context`, and `context` must stay valid until
    /// this returns.
    pub unsafe fn synchronize(
        &self,
        routine: SyncRoutine,
        context: *mut c_void,
    ) -> Result<bool, Status> {
        let f = self
            .raw
            .DxgkCbSynchronizeExecution
            .ok_or(status::NOT_SUPPORTED)?;
        let mut ret: u8 = 0;
        // SAFETY: a Dxgkrnl callback with its own handle; `routine` and `context` are valid
        // for the duration of the call (the caller's contract).
        let st: NTSTATUS = unsafe { f(self.raw.DeviceHandle, Some(routine), context, 0, &mut ret) };
        status::check(st).map(|()| ret != 0)
    }
}

/// Dxgkrnl's feature interface (`DXGK_FEATURE_INTERFACE`, from DxgkCbQueryServices), referenced
/// until [`FeatureInterface::release`]: its calls made safe, as the callbacks above.
#[derive(Debug)]
pub struct FeatureInterface(DXGK_FEATURE_INTERFACE);

// SAFETY: the interface is a table of Dxgkrnl function pointers and an opaque context that
// Dxgkrnl documents as usable from any thread at PASSIVE_LEVEL.
unsafe impl Send for FeatureInterface {}
// SAFETY: as above; the driver only calls through it at PASSIVE_LEVEL.
unsafe impl Sync for FeatureInterface {}

impl FeatureInterface {
    /// The negotiated version of feature `id`, if the OS enabled it.
    pub fn is_enabled(&self, id: DXGK_FEATURE_ID) -> Option<DXGK_FEATURE_VERSION> {
        let i = &self.0;
        let f = i.IsFeatureEnabled?;
        let mut args = DXGKARGCB_ISFEATUREENABLED2 {
            FeatureId: id,
            ..Default::default()
        };
        // SAFETY: the interface's own function with its own context and a valid argument
        // block; PASSIVE_LEVEL (StartDevice).
        let st = unsafe { f(i.Context, &mut args) };
        let enabled = args
            .Result
            .Anonymous
            .is_set(DXGK_ISFEATUREENABLED_RESULT_0::Enabled);
        (status::check(st).is_ok() && enabled).then_some(args.Result.Version)
    }

    /// The OS's native-fence capabilities, through the native-fence callback interface of
    /// `version`.
    pub fn native_fence_caps(
        &self,
        version: DXGK_FEATURE_VERSION,
    ) -> Option<DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1> {
        let i = &self.0;
        let query = i.QueryFeatureInterface?;
        let mut table = DXGKCBINT_FEATURE_NATIVEFENCE_1::default();
        let mut args = DXGKARGCB_QUERYFEATUREINTERFACE {
            FeatureId: DXGK_FEATURE_NATIVE_FENCE,
            Version: version,
            InterfaceSize: u16::try_from(size_of::<DXGKCBINT_FEATURE_NATIVEFENCE_1>()).ok()?,
            Interface: (&raw mut table).cast::<c_void>(),
        };
        // SAFETY: the interface's own function; `table` is a writable buffer of the size we
        // declare and outlives the call.
        let st = unsafe { query(i.Context, &mut args) };
        status::check(st).ok()?;
        let get_caps = table.GetOSCaps?;
        let mut os_caps = DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1::default();
        // SAFETY: the OS-provided function with a valid out structure.
        status::check(unsafe { get_caps(&mut os_caps) }).ok()?;
        Some(os_caps)
    }

    /// Dereferences the interface (StopDevice).
    pub fn release(self) {
        if let Some(deref) = self.0.InterfaceDereference {
            // SAFETY: balances the reference DxgkCbQueryServices took for us.
            unsafe { deref(self.0.Context) };
        }
    }
}

impl Dxgk {
    /// DxgkCbQueryServices(DxgkServicesFeature): the feature interface, referenced.
    pub fn feature_interface(&self) -> Result<FeatureInterface, Status> {
        let mut i = DXGK_FEATURE_INTERFACE::default();
        // SAFETY: `i` is a DXGK_FEATURE_INTERFACE whose header (set by Default) declares its
        // own size and version, as DxgkServicesFeature expects.
        unsafe {
            self.query_services(rvgpu_ddi::dxgkrnl::DxgkServicesFeature, (&raw mut i).cast())
        }?;
        if i.IsFeatureEnabled.is_none() {
            return Err(status::NOT_SUPPORTED);
        }
        Ok(FeatureInterface(i))
    }
}

/// What DxgkCbGetDeviceInformation answered: the structure, whose resource list is valid while
/// the adapter is (read through [`Dxgk::resources`]).
#[derive(Debug)]
pub struct DeviceInfo(DXGK_DEVICE_INFO);

impl DeviceInfo {
    /// The physical device object.
    pub fn physical_device_object(&self) -> *mut c_void {
        self.0.PhysicalDeviceObject.cast()
    }
}

/// The OS's translated resource list, read at the offsets the parser computes from its counts.
struct OsResourceList(*const u8);

impl OsResourceList {
    /// Reads a plain-data `T` at byte offset `off`, unaligned (the list is packed).
    fn read_at<T: Copy>(&self, off: usize) -> T {
        // SAFETY: the list is the OS's DXGK_DEVICE_INFO::TranslatedResourceList, valid for
        // reads as far as its own counts describe, and `resources::parse` reads only there; a
        // packed plain-data structure, read unaligned.
        unsafe { self.0.wrapping_add(off).cast::<T>().read_unaligned() }
    }
}

impl ResourceList for OsResourceList {
    fn count(&self, off: usize) -> u32 {
        self.read_at(off)
    }
    fn descriptor(&self, off: usize) -> CM_PARTIAL_RESOURCE_DESCRIPTOR {
        self.read_at(off)
    }
}
