//! The fence DDIs the OS calls outside an object's life: the caps query and check,
//! `DxgkDdiUpdateMonitoredValues` and `DxgkDdiUpdateCurrentValuesFromCpu`.

use super::*;

/// Checks the caps the OS relies on: `MapToGpuSystemProcess` (the OS maps the values into the
/// system process for the CMP and passes those VAs to create, NF-11) and a stride that is a
/// non-zero multiple of 8 (64-bit values, NF-05), at most a page.
pub fn validate_native_fence_caps(c: &DXGK_NATIVE_FENCE_CAPS) -> Result<(), String> {
    if c.MapToGpuSystemProcess == 0 {
        return Err("NATIVE_FENCE_CAPS.MapToGpuSystemProcess is not set".into());
    }
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
    let q = t
        .DxgkDdiQueryAdapterInfo
        .ok_or_else(|| SimError::Simulation("no QueryAdapterInfo".into()))?;
    let mut caps = DXGK_NATIVE_FENCE_CAPS {
        MonitoredValueStride: 0xCDCD_CDCD,
        MapToGpuSystemProcess: 0xCD,
        MinimumAddress: 0xCDCD_CDCD_CDCD_CDCD,
        MaximumAddress: 0xCDCD_CDCD_CDCD_CDCD,
        Reserved: [0xCD; 28],
    };
    let status =
        ddi::query_adapter_info(a, q, DXGKQAITYPE_NATIVE_FENCE_CAPS, At::Caller, &mut caps)?;
    check_status(status)?;
    Ok(caps)
}

/// Fences whose arrays [`Buf`] keeps on the stack.
const INLINE_FENCES: usize = 8;

/// One of the parallel arrays the two update DDIs take: on the stack for the usual few fences,
/// so the DPC's MonitoredValue re-arm does not allocate three times (issue 19).
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

/// `DxgkDdiUpdateMonitoredValues` for `(global, value, MonitoredValue kernel VA)` entries, at
/// device IRQL under the adapter's interrupt lock (synchronised with the ISR, NF-07).
pub(super) fn update_monitored(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
) -> Result<(), SimError> {
    let f = a
        .table
        .slot(|t| t.DxgkDdiUpdateMonitoredValues)
        .ok_or_else(|| SimError::Simulation("no driver loaded".into()))?
        .ok_or_else(|| missing("DxgkDdiUpdateMonitoredValues"))?;
    let mut handles = Buf::collect(entries.iter().map(|e| e.0 as HANDLE), std::ptr::null_mut());
    let mut values = Buf::collect(entries.iter().map(|e| e.1), 0);
    let mut vas = Buf::collect(entries.iter().map(|e| e.2), std::ptr::null_mut());
    let args = DXGKARG_UPDATEMONITOREDVALUES {
        NativeFenceArray: handles.as_mut_ptr(),
        UpdatedValueArray: values.as_mut_ptr(),
        MonitoredValueKernelCpuVa: vas.as_mut_ptr(),
        NumFences: entries.len() as u32,
        Flags: DXGKARG_UPDATEMONITOREDVALUES_FLAGS::default(),
        Reserved: [0; 28],
    };
    let status = {
        let _guard = a.lock_interrupt();
        if !a.connected.load(Ordering::Acquire) {
            return Err(SimError::Simulation(format!(
                "adapter {}'s interrupt is not connected: no UpdateMonitoredValues",
                a.index
            )));
        }
        ddi::call(
            a,
            Routine::DxgkDdiUpdateMonitoredValues,
            f as usize,
            At::Level(Irql::Device),
            || {
                // SAFETY: the driver's DDI with three arrays of NumFences entries that live
                // across the call; the MonitoredValue addresses are OS fence storage.
                unsafe { f(&args) }
            },
        )?
    };
    lock(&a.fence_os).update_monitored_calls += 1;
    check_status(status)
}

/// `DxgkDdiUpdateCurrentValuesFromCpu` at DISPATCH_LEVEL.
pub(super) fn update_current(
    a: &AdapterShared,
    entries: &[(usize, u64, *mut c_void)],
    notification_only: bool,
) -> Result<(), SimError> {
    let f = a
        .table
        .slot(|t| t.DxgkDdiUpdateCurrentValuesFromCpu)
        .ok_or_else(|| SimError::Simulation("no driver loaded".into()))?
        .ok_or_else(|| missing("DxgkDdiUpdateCurrentValuesFromCpu"))?;
    let mut handles = Buf::collect(entries.iter().map(|e| e.0 as HANDLE), std::ptr::null_mut());
    let mut values = Buf::collect(entries.iter().map(|e| e.1), 0);
    let mut vas = Buf::collect(entries.iter().map(|e| e.2), std::ptr::null_mut());
    type Flags = DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS;
    let flags = if notification_only {
        Flags::from_value(Flags::mask(Flags::NotificationOnly))
    } else {
        Flags::default()
    };
    let args = DXGKARG_UPDATECURRENTVALUESFROMCPU {
        NativeFenceArray: handles.as_mut_ptr(),
        UpdatedValueArray: values.as_mut_ptr(),
        CurrentValueKernelCpuVa: vas.as_mut_ptr(),
        NumFences: entries.len() as u32,
        Flags: flags,
        Reserved: [0; 28],
    };
    let status = {
        ddi::call(
            a,
            Routine::DxgkDdiUpdateCurrentValuesFromCpu,
            f as usize,
            At::Level(Irql::Dispatch),
            || {
                // SAFETY: as for update_monitored.
                unsafe { f(&args) }
            },
        )?
    };
    lock(&a.fence_os).update_current_calls += 1;
    check_status(status)
}
