//! The fence DDIs the OS calls outside an object's life: the caps query and check,
//! `DxgkDdiUpdateMonitoredValues` and `DxgkDdiUpdateCurrentValuesFromCpu`.

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use rvgpu_ddi::adapter::DXGKQAITYPE_NATIVE_FENCE_CAPS;
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::{
    DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES,
    DXGKARG_UPDATEMONITOREDVALUES_FLAGS, DXGK_NATIVE_FENCE_CAPS,
    DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::NTSTATUS;
use rvgpu_kmd::platform::Irql;

use crate::adapter::ddi::{self, check_status, At};
use crate::adapter::irql::Routine;
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::os::answers::{CpuUpdateIrql, ValueUpdates};

use crate::state::sync::fence::PAGE;

/// Checks the caps the OS relies on: a stride that is a non-zero multiple of 8 (64-bit
/// values, NF-05), at most a page. `MapToGpuSystemProcess` is not a condition: where the OS
/// honours it (26H1, the pages) it only decides whether create gets system-process VAs, and
/// 24H2 ignores it ([`crate::os::answers::SystemVas`]).
pub fn validate_native_fence_caps(c: &DXGK_NATIVE_FENCE_CAPS) -> Result<(), String> {
    let s = u64::from(c.MonitoredValueStride);
    if s == 0 || !s.is_multiple_of(8) || s > PAGE {
        return Err(format!(
            "NATIVE_FENCE_CAPS.MonitoredValueStride = {s} (must be a non-zero multiple of 8)"
        ));
    }
    Ok(())
}

/// `DXGKQAITYPE_NATIVE_FENCE_CAPS` (PASSIVE), at adapter start.
pub(crate) fn query_caps(
    a: &AdapterShared,
    t: &DRIVER_INITIALIZATION_DATA,
) -> Result<DXGK_NATIVE_FENCE_CAPS, SimError> {
    let q = ddi::in_table!(t, DxgkDdiQueryAdapterInfo)
        .ok_or_else(|| SimError::NoDdi("DxgkDdiQueryAdapterInfo"))?;
    let mut caps = DXGK_NATIVE_FENCE_CAPS {
        MonitoredValueStride: 0xCDCD_CDCD,
        MapToGpuSystemProcess: 0xCD,
        MinimumAddress: 0xCDCD_CDCD_CDCD_CDCD,
        MaximumAddress: 0xCDCD_CDCD_CDCD_CDCD,
        Reserved: [0xCD; 28],
    };
    let status =
        ddi::query_adapter_info(a, q, DXGKQAITYPE_NATIVE_FENCE_CAPS, At::Caller, &mut caps)?;
    check_status(q, status)?;
    Ok(caps)
}

/// Fences whose arrays [`Buf`] keeps on the stack.
const INLINE_FENCES: usize = 8;

/// One of the parallel arrays the two update DDIs take: on the stack for the usual few fences,
/// so the DPC's MonitoredValue re-arm does not allocate three times.
enum Buf<T: Copy> {
    Inline([T; INLINE_FENCES]),
    Heap(Vec<T>),
}

impl<T: Copy> Buf<T> {
    fn collect(it: impl ExactSizeIterator<Item = T>, fill: T) -> Self {
        if it.len() > INLINE_FENCES {
            return Self::Heap(it.collect());
        }
        let mut a = [fill; INLINE_FENCES];
        for (slot, v) in a.iter_mut().zip(it) {
            *slot = v;
        }
        Self::Inline(a)
    }

    /// Valid while `self` stays where it is (the caller keeps it in a local across the call).
    fn as_mut_ptr(&mut self) -> *mut T {
        match self {
            Self::Inline(a) => a.as_mut_ptr(),
            Self::Heap(v) => v.as_mut_ptr(),
        }
    }
}

/// The three parallel arrays of an update DDI, from `(handle, value, kernel CPU VA)` entries.
struct Arrays {
    handles: Buf<HANDLE>,
    values: Buf<u64>,
    vas: Buf<*mut c_void>,
}

impl Arrays {
    fn of(entries: &[(usize, u64, *mut c_void)]) -> Self {
        Self {
            handles: Buf::collect(entries.iter().map(|e| e.0 as HANDLE), std::ptr::null_mut()),
            values: Buf::collect(entries.iter().map(|e| e.1), 0),
            vas: Buf::collect(entries.iter().map(|e| e.2), std::ptr::null_mut()),
        }
    }

    /// The kernel CPU VAs, or NULL when the call passes none.
    fn cpu_vas(&mut self, with: bool) -> *mut *mut c_void {
        if with {
            self.vas.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        }
    }
}

/// `DxgkDdiUpdateMonitoredValues` for `(global, value, MonitoredValue kernel VA)` entries, at
/// device IRQL under the adapter's interrupt lock (synchronised with the ISR, NF-07).
///
/// 24H2 (`M:VidSchiUpdateNativeFenceMonitoredValue` @0x140045ECC) calls the DDI for one fence
/// at a time with `MonitoredValueKernelCpuVa` NULL and stores nothing itself: the driver must
/// find the storage (26H1 passes the address); the pages have the driver store each value
/// through the kernel CPU VA given ([`ValueUpdates`]). A failure is bug check 0x119 on 24H2
/// ([`check_update_status`]).
pub(super) fn update_monitored(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
) -> Result<(), SimError> {
    match a.os.windows.reading().value_updates {
        ValueUpdates::BatchedWithCpuVa => update_monitored_call(a, entries, true),
        one => {
            for e in entries {
                update_monitored_call(a, std::slice::from_ref(e), one.passes_cpu_va())?;
            }
            Ok(())
        }
    }
}

/// `f` at device IRQL under the adapter's interrupt lock, as VidSch's `DpSynchronizeExecution`
/// calls the update DDIs; an adapter whose interrupt is not connected is not started (no
/// synchronisation is possible then).
fn synchronized(
    a: &AdapterShared,
    f: impl FnOnce() -> Result<NTSTATUS, SimError>,
) -> Result<NTSTATUS, SimError> {
    let _guard = a.lock_interrupt();
    if !a.irq.connected.load(Ordering::Acquire) {
        return Err(SimError::NotStarted(a.index));
    }
    f()
}

/// A failed update DDI: the pages' reading reports the status; 24H2's VidSch bug-checks
/// 0x119 `VIDEO_SCHEDULER_INTERNAL_ERROR` with 0x12 (UpdateMonitoredValues) or 0x13
/// (UpdateCurrentValuesFromCpu), the status and the fence's handle
/// (`M:VidSchiUpdateNativeFenceMonitoredValue`, `M:VidSchiUpdateNativeFenceCurrentValue`).
fn check_update_status(
    a: &AdapterShared,
    routine: Routine,
    status: NTSTATUS,
    code: u64,
    handle: usize,
) -> Result<(), SimError> {
    if status >= 0 || a.os.windows.reading().value_updates == ValueUpdates::BatchedWithCpuVa {
        return ddi::check_routine(routine, status);
    }
    let b = crate::BugCheck::video_scheduler(code, status as u32 as u64, handle as u64, 0);
    a.state.raise_bugcheck(b);
    Err(SimError::Bugcheck(b))
}

fn update_monitored_call(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
    with_cpu_vas: bool,
) -> Result<(), SimError> {
    let f = ddi::slot!(a, DxgkDdiUpdateMonitoredValues)?;
    let mut arrays = Arrays::of(entries);
    let args = DXGKARG_UPDATEMONITOREDVALUES {
        NativeFenceArray: arrays.handles.as_mut_ptr(),
        UpdatedValueArray: arrays.values.as_mut_ptr(),
        MonitoredValueKernelCpuVa: arrays.cpu_vas(with_cpu_vas),
        NumFences: entries.len() as u32,
        Flags: DXGKARG_UPDATEMONITOREDVALUES_FLAGS::default(),
        Reserved: [0; 28],
    };
    let status = synchronized(a, || f.call(a, At::Level(Irql::Device), &args))?;
    lock(&a.fence_os).update_monitored_calls += 1;
    check_update_status(
        a,
        f.routine(),
        status,
        0x12,
        entries.first().map_or(0, |e| e.0),
    )
}

/// What a `DxgkDdiUpdateCurrentValuesFromCpu` call tells the driver (its flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CpuUpdate {
    /// Flags 0: store the value (a CPU signal).
    Store,
    /// `NotificationOnly`: the value changed elsewhere (a cross-adapter fence, NF-16).
    NotificationOnly,
    /// `AlwaysSignaled`: the fence can no longer be relied upon (its device is in error).
    AlwaysSignaled,
}

impl CpuUpdate {
    fn flags(self) -> DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS {
        type Flags = DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS;
        match self {
            Self::Store => Flags::default(),
            Self::NotificationOnly => Flags::from_value(Flags::mask(Flags::NotificationOnly)),
            Self::AlwaysSignaled => Flags::from_value(Flags::mask(Flags::AlwaysSignaled)),
        }
    }
}

/// `DxgkDdiUpdateCurrentValuesFromCpu`: at DISPATCH_LEVEL with the values' kernel CPU VAs by
/// the pages; on 24H2 (`M:VidSchiUpdateNativeFenceCurrentValue` @0x140045B14) for one fence
/// with `CurrentValueKernelCpuVa` NULL, at device IRQL under the interrupt lock
/// (`DpSynchronizeExecution`), the OS storing nothing itself ([`ValueUpdates`],
/// [`CpuUpdateIrql`]).
pub(super) fn update_current(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
    kind: CpuUpdate,
) -> Result<(), SimError> {
    match a.os.windows.reading().value_updates {
        ValueUpdates::BatchedWithCpuVa => update_current_call(a, entries, kind, true),
        one => {
            for e in entries {
                let with = one.passes_cpu_va();
                update_current_call(a, std::slice::from_ref(e), kind, with)?;
            }
            Ok(())
        }
    }
}

/// The notification that names no fence: `NumFences` 0, `NotificationOnly`, no arrays. 24H2
/// (`M:VidSchiProcessCrossAdapterSignaledSyncObjects` @0x14001FBBC) sends it to an adapter
/// with native fences whose scan-all flag a peer set (`M:VidSchPostCrossAdapterSignal`
/// @0x140048510 with no object, from `M:VidSchiPropagateCrossAdapterSignal` @0x14003BB2C when
/// the peer's report named no fence), through the same call as one fence
/// (`VidSchiUpdateNativeFenceCurrentValue` with a NULL handle): a failure is bug check 0x119 /
/// 0x13. The pages have no such call; they notify each fence ([`update_current`]).
pub(super) fn notify_unnamed(a: &AdapterShared) -> Result<(), SimError> {
    update_current_call(a, &[], CpuUpdate::NotificationOnly, false)
}

fn update_current_call(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
    kind: CpuUpdate,
    with_cpu_vas: bool,
) -> Result<(), SimError> {
    let f = ddi::slot!(a, DxgkDdiUpdateCurrentValuesFromCpu)?;
    let mut arrays = Arrays::of(entries);
    // 24H2 leaves the whole block zero when it names no fence.
    let none = entries.is_empty();
    let args = DXGKARG_UPDATECURRENTVALUESFROMCPU {
        NativeFenceArray: if none {
            std::ptr::null_mut()
        } else {
            arrays.handles.as_mut_ptr()
        },
        UpdatedValueArray: if none {
            std::ptr::null_mut()
        } else {
            arrays.values.as_mut_ptr()
        },
        CurrentValueKernelCpuVa: arrays.cpu_vas(with_cpu_vas && !none),
        NumFences: entries.len() as u32,
        Flags: kind.flags(),
        Reserved: [0; 28],
    };
    a.observer()
        .handed(&rvgpu_ddi::handover::UPDATE_CURRENT_VALUES_FROM_CPU, &args);
    let call = || {
        f.call_unaudited(
            a,
            At::Level(match a.os.windows.reading().cpu_update_irql {
                CpuUpdateIrql::DeviceUnderInterruptLock => Irql::Device,
                CpuUpdateIrql::Dispatch => Irql::Dispatch,
            }),
            &args,
        )
    };
    let status = match a.os.windows.reading().cpu_update_irql {
        CpuUpdateIrql::DeviceUnderInterruptLock => synchronized(a, call)?,
        CpuUpdateIrql::Dispatch => call()?,
    };
    lock(&a.fence_os).update_current_calls += 1;
    check_update_status(
        a,
        f.routine(),
        status,
        0x13,
        entries.first().map_or(0, |e| e.0),
    )
}
