//! The FFI of the stand-ins tests put in the driver's DDI slots, in one place: the generic slot
//! entries that receive the OS's raw arguments and hand safe stand-ins references, the saved
//! real DDIs a stand-in calls on, and readers of the arrays the OS's blocks point to. The
//! stand-ins themselves (the sibling modules) are safe code.

use std::sync::Mutex;

use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::interrupt::{DXGKARGCB_NOTIFY_INTERRUPT_DATA, DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED};
use rvgpu_ddi::ntstatus::*;

use crate::base::lock::lock;

/// A `DxgkDdiInterruptRoutine`.
pub type IsrFn = unsafe extern "system" fn(PVOID, ULONG) -> BOOLEAN;

/// The driver's own DDI a stand-in replaced in its slot, saved when the stand-in was installed
/// (the latest driver's: one driver per test at a time).
pub struct Saved<F>(Mutex<Option<F>>);

impl<F: crate::adapter::ddi::Prototype> Default for Saved<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: crate::adapter::ddi::Prototype> Saved<F> {
    /// Nothing saved yet.
    pub const fn new() -> Self {
        Saved(Mutex::new(None))
    }

    /// Saves the slot's routine (`None`: the slot was empty).
    pub fn save(&self, slot: Option<F>) {
        *lock(&self.0) = slot;
    }

    /// Calls the saved routine with the arguments the OS passed the stand-in; `None` when none
    /// is saved.
    pub fn call(&self, args: F::Args<'_>) -> Option<F::Ret> {
        let f = (*lock(&self.0))?;
        // SAFETY: the driver's DDI of this prototype, taken from its validated table; the
        // arguments are what the OS passed the stand-in standing in that slot (the OS's
        // handle, its blocks borrowed for the call), the contract of `ddi::Prototype`.
        Some(unsafe { f.invoke(args) })
    }
}

/// The `MiniportDeviceContext` the OS passed a stand-in ISR.
pub struct DeviceContext(PVOID);

impl DeviceContext {
    /// The context's value (to find the adapter by).
    pub fn raw(&self) -> PVOID {
        self.0
    }

    /// Runs the driver's own ISR with it ([`driver_isr`]).
    pub fn driver_isr(&self, message_number: ULONG) -> BOOLEAN {
        // SAFETY: the context and message number the OS passed the stand-in ISR.
        unsafe { driver_isr(self.0, message_number) }
    }
}

/// A stand-in `DxgkDdiInterruptRoutine`, as safe code; [`isr`] is what goes in the slot.
pub trait IsrStandIn: 'static {
    /// The ISR's work.
    fn run(ctx: &DeviceContext, message_number: ULONG) -> BOOLEAN;
}

/// The slot entry of stand-in ISR `S`.
///
/// # Safety
/// Called by the OS as `DxgkDdiInterruptRoutine`, with its own arguments.
pub unsafe extern "system" fn isr<S: IsrStandIn>(ctx: PVOID, message_number: ULONG) -> BOOLEAN {
    S::run(&DeviceContext(ctx), message_number)
}

/// A stand-in for a `(HANDLE, *mut Block) -> NTSTATUS` DDI ([`handle_mut`]).
pub trait HandleMutStandIn: 'static {
    /// The argument block.
    type Block;
    /// The DDI's work on the OS's handle and block.
    fn run(handle: HANDLE, args: &mut Self::Block) -> NTSTATUS;
}

/// The slot entry of `S`; a NULL block is `STATUS_INVALID_PARAMETER` (the OS never passes one).
///
/// # Safety
/// Called by the OS as the DDI, with its own handle and block.
pub unsafe extern "system" fn handle_mut<S: HandleMutStandIn>(
    handle: HANDLE,
    args: *mut S::Block,
) -> NTSTATUS {
    // SAFETY: null or the OS's block for the call.
    match unsafe { args.as_mut() } {
        Some(args) => S::run(handle, args),
        None => STATUS_INVALID_PARAMETER,
    }
}

/// A stand-in for a `(HANDLE, *const Block) -> NTSTATUS` DDI ([`handle_ref`]).
pub trait HandleRefStandIn: 'static {
    /// The argument block.
    type Block;
    /// The DDI's work on the OS's handle and block.
    fn run(handle: HANDLE, args: &Self::Block) -> NTSTATUS;
}

/// The slot entry of `S`; a NULL block is `STATUS_INVALID_PARAMETER` (the OS never passes one).
///
/// # Safety
/// Called by the OS as the DDI, with its own handle and block.
pub unsafe extern "system" fn handle_ref<S: HandleRefStandIn>(
    handle: HANDLE,
    args: *const S::Block,
) -> NTSTATUS {
    // SAFETY: null or the OS's block for the call.
    match unsafe { args.as_ref() } {
        Some(args) => S::run(handle, args),
        None => STATUS_INVALID_PARAMETER,
    }
}

/// A stand-in for a `(*const Block) -> NTSTATUS` DDI ([`block_ref`]).
pub trait RefStandIn: 'static {
    /// The argument block.
    type Block;
    /// The DDI's work on the OS's block.
    fn run(args: &Self::Block) -> NTSTATUS;
}

/// The slot entry of `S`; a NULL block is `STATUS_INVALID_PARAMETER` (the OS never passes one).
///
/// # Safety
/// Called by the OS as the DDI, with its own block.
pub unsafe extern "system" fn block_ref<S: RefStandIn>(args: *const S::Block) -> NTSTATUS {
    // SAFETY: null or the OS's block for the call.
    match unsafe { args.as_ref() } {
        Some(args) => S::run(args),
        None => STATUS_INVALID_PARAMETER,
    }
}

/// A stand-in for a `(HANDLE, UINT, *mut Block) -> NTSTATUS` DDI ([`handle_index_mut`]).
pub trait HandleIndexMutStandIn: 'static {
    /// The argument block.
    type Block;
    /// The DDI's work on the OS's handle, index and block.
    fn run(handle: HANDLE, index: UINT, args: &mut Self::Block) -> NTSTATUS;
}

/// The slot entry of `S`; a NULL block is `STATUS_INVALID_PARAMETER` (the OS never passes one).
///
/// # Safety
/// Called by the OS as the DDI, with its own handle, index and block.
pub unsafe extern "system" fn handle_index_mut<S: HandleIndexMutStandIn>(
    handle: HANDLE,
    index: UINT,
    args: *mut S::Block,
) -> NTSTATUS {
    // SAFETY: null or the OS's block for the call.
    match unsafe { args.as_mut() } {
        Some(args) => S::run(handle, index, args),
        None => STATUS_INVALID_PARAMETER,
    }
}

/// Arrays and buffers the OS's argument blocks point to, as a stand-in sees them. Each
/// reader takes the block by reference only, so it reads what the OS built for the call.
pub mod blocks {
    use rvgpu_ddi::adapter::DXGKARG_QUERYADAPTERINFO;
    use rvgpu_ddi::allocation::{DXGKARG_CREATEALLOCATION, DXGK_ALLOCATIONINFO};
    use rvgpu_ddi::fence::DXGKARG_UPDATEMONITOREDVALUES;
    use rvgpu_ddi::HANDLE;

    /// The allocation infos of a `DxgkDdiCreateAllocation` block (`NumAllocations` of them).
    pub fn allocation_infos(args: &mut DXGKARG_CREATEALLOCATION) -> &mut [DXGK_ALLOCATIONINFO] {
        if args.pAllocationInfo.is_null() {
            return &mut [];
        }
        // SAFETY: the OS's array of `NumAllocations` infos for the call, writable by the
        // driver, borrowed with the block.
        unsafe {
            std::slice::from_raw_parts_mut(args.pAllocationInfo, args.NumAllocations as usize)
        }
    }

    /// The output buffer of a `DxgkDdiQueryAdapterInfo` block as a `T`, when it is non-null,
    /// at least that large and aligned for it.
    #[allow(
        clippy::mut_from_ref,
        reason = "the output buffer is the OS's memory for the driver's answer, not the block"
    )]
    pub fn adapter_info_output<T>(args: &DXGKARG_QUERYADAPTERINFO) -> Option<&mut T> {
        let p = args.pOutputData.cast::<T>();
        let fits = (args.OutputDataSize as usize) >= std::mem::size_of::<T>();
        if p.is_null() || !fits || !p.is_aligned() {
            return None;
        }
        // SAFETY: the OS's output buffer for the call (the driver writes its answer there), of
        // `OutputDataSize` bytes (checked to hold a `T`), aligned.
        Some(unsafe { &mut *p })
    }

    /// The (handle, value) pairs of a `DxgkDdiUpdateMonitoredValues` block.
    pub fn monitored_values(args: &DXGKARG_UPDATEMONITOREDVALUES) -> Vec<(usize, u64)> {
        let n = args.NumFences as usize;
        if n == 0 || args.NativeFenceArray.is_null() || args.UpdatedValueArray.is_null() {
            return Vec::new();
        }
        // SAFETY: the OS's arrays of `NumFences` entries each, alive for the call.
        let (handles, values): (&[HANDLE], &[u64]) = unsafe {
            (
                std::slice::from_raw_parts(args.NativeFenceArray, n),
                std::slice::from_raw_parts(args.UpdatedValueArray, n),
            )
        };
        handles
            .iter()
            .zip(values)
            .map(|(h, v)| (*h as usize, *v))
            .collect()
    }
}

/// The callback table the OS gave an adapter, as a driver stand-in calls it.
pub struct Callbacks(DXGKRNL_INTERFACE);

impl Callbacks {
    /// The table of the adapter whose `MiniportDeviceContext` is `ctx`.
    pub fn for_context(ctx: PVOID) -> Option<Self> {
        crate::adapter::AdapterShared::from_context(ctx)
            .and_then(|a| lock(&a.interface).map(|t| Callbacks(t.0)))
    }

    /// `DxgkCbNotifyInterrupt` with `data`. A native-fence report goes with the handles it
    /// lists (`fences`, its array and count); other reports name no memory and `fences` is
    /// not looked at.
    pub fn notify_interrupt(&self, data: &DXGKARGCB_NOTIFY_INTERRUPT_DATA, fences: &mut [HANDLE]) {
        let Some(notify) = self.0.DxgkCbNotifyInterrupt else {
            return;
        };
        let mut data = *data;
        if data.InterruptType == DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED {
            let mut d = data.Anonymous.native_fence_signaled();
            d.SignaledNativeFenceCount = fences.len() as u32;
            d.pSignaledNativeFenceArray = if fences.is_empty() {
                std::ptr::null_mut()
            } else {
                fences.as_mut_ptr()
            };
            data.Anonymous.NativeFenceSignaled = d;
        }
        // SAFETY: the simulation's own callback (this table is the one it handed out) with its
        // own handle and a report whose only pointer is `fences`, alive for the call.
        unsafe { notify(self.0.DeviceHandle, &data) }
    }

    /// `DxgkCbQueueDpc`.
    pub fn queue_dpc(&self) -> BOOLEAN {
        // SAFETY: the simulation's own callback with its own handle.
        self.0
            .DxgkCbQueueDpc
            .map_or(0, |f| unsafe { f(self.0.DeviceHandle) })
    }

    /// `DxgkCbGetDeviceInformation` into a fresh structure.
    pub fn get_device_information(&self) -> NTSTATUS {
        let mut info = rvgpu_ddi::adapter::DXGK_DEVICE_INFO::default();
        // SAFETY: the simulation's own callback with its own handle and a valid out-structure.
        self.0
            .DxgkCbGetDeviceInformation
            .map_or(STATUS_NOT_IMPLEMENTED, |f| unsafe {
                f(self.0.DeviceHandle, &mut info)
            })
    }

    /// `DxgkCbSynchronizeExecution` running `routine` under the interrupt lock; the status and
    /// the routine's answer.
    pub fn synchronize(&self, routine: &mut dyn FnMut() -> BOOLEAN) -> (NTSTATUS, BOOLEAN) {
        unsafe extern "system" fn trampoline(ctx: PVOID) -> BOOLEAN {
            // SAFETY: `ctx` is the `&mut dyn FnMut` below, alive for the synchronous call.
            let f = unsafe { &mut *ctx.cast::<&mut dyn FnMut() -> BOOLEAN>() };
            f()
        }
        let Some(sync) = self.0.DxgkCbSynchronizeExecution else {
            return (STATUS_NOT_IMPLEMENTED, 0);
        };
        let mut routine = routine;
        let mut ret: BOOLEAN = 0;
        // SAFETY: the simulation's own callback with its own handle; the routine's context is
        // `routine`, alive for the synchronous call.
        let status = unsafe {
            sync(
                self.0.DeviceHandle,
                Some(trampoline),
                std::ptr::from_mut(&mut routine).cast(),
                0,
                &mut ret,
            )
        };
        (status, ret)
    }
}

/// Runs the driver's own DPC routine (what [`driver_isr`] is for the ISR).
///
/// # Safety
/// Called from a `DxgkDdiDpcRoutine` stand-in with the argument the OS passed it.
pub unsafe fn driver_dpc(ctx: PVOID) {
    if let Some(f) = crate::adapter::load::DRIVER_DPC.get() {
        // SAFETY: the driver's DPC with the OS's own argument, at DISPATCH_LEVEL.
        unsafe { f(ctx) }
    }
}

/// Runs the driver's own ISR. A stand-in ISR calls it first so the device is still serviced:
/// the GPU interrupts from adapter start on (VidMm pages the paging process's tables in through
/// the GPU), long before the step a test is about. Returns whether the driver claimed it.
///
/// # Safety
/// Called from a `DxgkDdiInterruptRoutine` stand-in with the arguments the OS passed it.
pub unsafe fn driver_isr(ctx: PVOID, message_number: ULONG) -> BOOLEAN {
    match crate::adapter::load::DRIVER_ISR.get() {
        // SAFETY: the driver's ISR with the OS's own arguments, at the IRQL the OS called us.
        Some(f) => unsafe { f(ctx, message_number) },
        None => 0,
    }
}

/// Calls `DxgkCbAllocateContiguousMemory` as a driver would; returns (status, handle, memory).
///
/// # Safety
/// `iface` must be a table the simulation handed out.
pub unsafe fn allocate_contiguous(
    iface: &DXGKRNL_INTERFACE,
    bytes: usize,
) -> (NTSTATUS, HANDLE, PVOID) {
    let Some(f) = iface.DxgkCbAllocateContiguousMemory else {
        return (
            STATUS_NOT_IMPLEMENTED,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
    };
    let mut args = DXGKARGCB_ALLOCATECONTIGUOUSMEMORY {
        NumberOfBytes: bytes,
        LowestAcceptableAddress: LARGE_INTEGER::from_i64(0),
        HighestAcceptableAddress: LARGE_INTEGER::from_i64(-1),
        BoundaryAddressMultiple: LARGE_INTEGER::from_i64(0),
        CacheType: MmCached,
        hMemoryHandle: std::ptr::null_mut(),
        pMemory: std::ptr::null_mut(),
    };
    // SAFETY: the OS's callback with its handle and a valid argument block.
    let s = unsafe { f(iface.DeviceHandle, &mut args) };
    (s, args.hMemoryHandle, args.pMemory)
}

/// Calls `DxgkCbFreeContiguousMemory` as a driver would.
///
/// # Safety
/// `iface` must be a table the simulation handed out.
pub unsafe fn free_contiguous(
    iface: &DXGKRNL_INTERFACE,
    handle: HANDLE,
    memory: PVOID,
) -> NTSTATUS {
    let Some(f) = iface.DxgkCbFreeContiguousMemory else {
        return STATUS_NOT_IMPLEMENTED;
    };
    let _ = memory;
    let args = DXGKARGCB_FREECONTIGUOUSMEMORY {
        hMemoryHandle: handle,
    };
    // SAFETY: the OS's callback with its handle and a valid argument block.
    unsafe { f(iface.DeviceHandle, &args) }
}
