//! The audit of native fences and their logs: creation, opening, closing and destruction, VidSch's
//! value updates, and the log buffers of a user-mode queue.

use super::Ddi;
use crate::fence::{
    DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE,
    DXGKARG_OPENNATIVEFENCE, DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATECURRENTVALUESFROMCPU,
    DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_UPDATENATIVEFENCELOGS,
};

const LOG_BY: &str = "M:VidSchiCreateNativeFenceLog @0x140024634";

/// `DxgkDdiSetNativeFenceLogBuffer` when a user-mode queue is created
/// (`M:VidSchCreateHwQueue` @0x1400224D0): `LOG_BY` creates the queue's two logs (the wait log,
/// type 1 in its header, then the signal log, type 2), each of 64 entries, and hands each to
/// the driver in its own call with a block zeroed on its stack; the block does not say which
/// log it is (the header does).
pub const SET_NATIVE_FENCE_LOG_BUFFER: Ddi<DXGKARG_SETNATIVEFENCELOGBUFFER> = Ddi {
    name: "DxgkDdiSetNativeFenceLogBuffer",
    block: "DXGKARG_SETNATIVEFENCELOGBUFFER",
    rows: &[
        filled_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.hHwQueue,
            true,
            LOG_BY,
            "the driver's handle of the queue"
        ),
        filled_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.NumberOfEntries,
            true,
            LOG_BY,
            "64"
        ),
        filled_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.LogBufferCpuVa,
            true,
            LOG_BY,
            "the log's kernel mapping, its header already written (type and entry count)"
        ),
        filled_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.LogBufferGpuVa,
            true,
            LOG_BY,
            "the log's GPU VA"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.LogBufferSystemProcessGpuVa,
            true,
            LOG_BY,
            "never written: zeroed with the block"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.Flags,
            false,
            LOG_BY,
            "never written"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.Reserved,
            false,
            LOG_BY,
            "never written"
        ),
    ],
};

const LOG_RELEASE_BY: &str = "M:VidSchiDecrementHwQueueReference @0x140020A74";

/// `DxgkDdiSetNativeFenceLogBuffer` when the last reference of a queue that has logs goes
/// (`M:VidSchTerminateHwQueue` @0x14001EF70): `LOG_RELEASE_BY` zeroes a block on its stack and
/// names only the queue, once, before it frees both logs. The driver must take this as
/// "forget the queue's logs": it carries no buffer.
pub const SET_NATIVE_FENCE_LOG_BUFFER_RELEASE: Ddi<DXGKARG_SETNATIVEFENCELOGBUFFER> = Ddi {
    name: "DxgkDdiSetNativeFenceLogBuffer(release)",
    block: "DXGKARG_SETNATIVEFENCELOGBUFFER",
    rows: &[
        filled_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.hHwQueue,
            true,
            LOG_RELEASE_BY,
            "the driver's handle of the queue"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.NumberOfEntries,
            true,
            LOG_RELEASE_BY,
            "zeroed with the block"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.LogBufferCpuVa,
            true,
            LOG_RELEASE_BY,
            "zeroed with the block"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.LogBufferGpuVa,
            true,
            LOG_RELEASE_BY,
            "zeroed with the block"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.LogBufferSystemProcessGpuVa,
            true,
            LOG_RELEASE_BY,
            "zeroed with the block"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.Flags,
            false,
            LOG_RELEASE_BY,
            "zeroed with the block"
        ),
        zero_row!(
            DXGKARG_SETNATIVEFENCELOGBUFFER.Reserved,
            false,
            LOG_RELEASE_BY,
            "zeroed with the block"
        ),
    ],
};

const CURRENT_BY: &str = "M:VidSchiUpdateNativeFenceCurrentValue @0x140045B14";

/// `DxgkDdiUpdateCurrentValuesFromCpu`: `CURRENT_BY` zeroes a block on its stack and calls the
/// driver at device IRQL under the interrupt lock, for at most one fence: a CPU signal
/// (`M:VidSchiSignalSyncObjectsFromCpu` @0x14000EF50, `M:VidSchiCompleteSignalSyncObject`
/// @0x14000F8C0), a fence set always signaled (`M:_VIDSCH_SYNC_OBJECT::SetToAlwaysSignaled`
/// @0x14003B954), or a cross-adapter signal (`M:VidSchiProcessCrossAdapterSignaledSyncObjects`
/// @0x14001FBBC), which may pass no fence at all: a notification only.
pub const UPDATE_CURRENT_VALUES_FROM_CPU: Ddi<DXGKARG_UPDATECURRENTVALUESFROMCPU> = Ddi {
    name: "DxgkDdiUpdateCurrentValuesFromCpu",
    block: "DXGKARG_UPDATECURRENTVALUESFROMCPU",
    rows: &[
        filled_row!(
            DXGKARG_UPDATECURRENTVALUESFROMCPU.NativeFenceArray,
            true,
            CURRENT_BY,
            "the address of the one fence's global handle; null when the caller passes no \
             fence"
        ),
        filled_row!(
            DXGKARG_UPDATECURRENTVALUESFROMCPU.UpdatedValueArray,
            true,
            CURRENT_BY,
            "the address of the new value; null without a fence"
        ),
        zero_row!(
            DXGKARG_UPDATECURRENTVALUESFROMCPU.CurrentValueKernelCpuVa,
            true,
            CURRENT_BY,
            "never written: the driver finds the fence's storage itself"
        ),
        filled_row!(
            DXGKARG_UPDATECURRENTVALUESFROMCPU.NumFences,
            true,
            CURRENT_BY,
            "1 with a fence, 0 without"
        ),
        filled_row!(
            DXGKARG_UPDATECURRENTVALUESFROMCPU.Flags,
            true,
            CURRENT_BY,
            "the caller's flags word (NotificationOnly for a notification)"
        ),
        zero_row!(
            DXGKARG_UPDATECURRENTVALUESFROMCPU.Reserved,
            false,
            CURRENT_BY,
            "never written"
        ),
    ],
};

const MONITORED_BY: &str = "M:VidSchiUpdateNativeFenceMonitoredValue @0x140045ECC";

/// `DxgkDdiUpdateMonitoredValues`: `MONITORED_BY` zeroes a block on its stack and calls the
/// driver at device IRQL under the interrupt lock for one fence, when a waiter's value changes
/// the fence's monitored value (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8,
/// `M:VidSchSubmitWaitFromCpu` @0x14000DF30, `M:VidSchiAcquireSyncObjectForHwQueue`
/// @0x14000396C).
pub const UPDATE_MONITORED_VALUES: Ddi<DXGKARG_UPDATEMONITOREDVALUES> = Ddi {
    name: "DxgkDdiUpdateMonitoredValues",
    block: "DXGKARG_UPDATEMONITOREDVALUES",
    rows: &[
        filled_row!(
            DXGKARG_UPDATEMONITOREDVALUES.NativeFenceArray,
            true,
            MONITORED_BY,
            "the address of the fence's global handle"
        ),
        filled_row!(
            DXGKARG_UPDATEMONITOREDVALUES.UpdatedValueArray,
            true,
            MONITORED_BY,
            "the address of the new monitored value"
        ),
        zero_row!(
            DXGKARG_UPDATEMONITOREDVALUES.MonitoredValueKernelCpuVa,
            true,
            MONITORED_BY,
            "never written: the driver finds the fence's storage itself"
        ),
        filled_row!(
            DXGKARG_UPDATEMONITOREDVALUES.NumFences,
            true,
            MONITORED_BY,
            "1"
        ),
        zero_row!(
            DXGKARG_UPDATEMONITOREDVALUES.Flags,
            false,
            MONITORED_BY,
            "never written"
        ),
        zero_row!(
            DXGKARG_UPDATEMONITOREDVALUES.Reserved,
            false,
            MONITORED_BY,
            "never written"
        ),
    ],
};

const CREATE_FENCE_BY: &str = "K:DXGADAPTERSYNCOBJECT::InitializeAdapterObject @0x1401839C8";

/// `DxgkDdiCreateNativeFence`: `CREATE_FENCE_BY` zeroes the block and fills it from the new
/// fence; it maps nothing into the paging process first, so the system-process VAs stay zero
/// whatever the driver's `MapToGpuSystemProcess` cap says.
pub const CREATE_NATIVE_FENCE: Ddi<DXGKARG_CREATENATIVEFENCE> = Ddi {
    name: "DxgkDdiCreateNativeFence",
    block: "DXGKARG_CREATENATIVEFENCE",
    rows: &[
        filled_row!(
            DXGKARG_CREATENATIVEFENCE.hGlobalNativeFence,
            true,
            CREATE_FENCE_BY,
            "Dxgkrnl's fence object; the driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_CREATENATIVEFENCE.Type,
            true,
            CREATE_FENCE_BY,
            "the caller's fence type"
        ),
        zero_row!(
            DXGKARG_CREATENATIVEFENCE.CurrentValueSystemProcessGpuVa,
            false,
            CREATE_FENCE_BY,
            "no paging-process mapping is made: zero"
        ),
        zero_row!(
            DXGKARG_CREATENATIVEFENCE.MonitoredValueSystemProcessGpuVa,
            false,
            CREATE_FENCE_BY,
            "no paging-process mapping is made: zero"
        ),
        filled_row!(
            DXGKARG_CREATENATIVEFENCE.pPrivateDriverData,
            true,
            CREATE_FENCE_BY,
            "the caller's private data, copied in"
        ),
        zero_row!(
            DXGKARG_CREATENATIVEFENCE.Flags,
            false,
            CREATE_FENCE_BY,
            "zeroed with the block"
        ),
        zero_row!(
            DXGKARG_CREATENATIVEFENCE.Reserved,
            false,
            CREATE_FENCE_BY,
            "zeroed with the block"
        ),
    ],
};

const OPEN_FENCE_BY: &str = "K:DXGDEVICESYNCOBJECT::Initialize @0x1401F5EEC";

/// `DxgkDdiOpenNativeFence`: `OPEN_FENCE_BY` opens the fence in a device of the caller's
/// process and hands the driver that device and the process's VAs of the fence's values.
pub const OPEN_NATIVE_FENCE: Ddi<DXGKARG_OPENNATIVEFENCE> = Ddi {
    name: "DxgkDdiOpenNativeFence",
    block: "DXGKARG_OPENNATIVEFENCE",
    rows: &[
        filled_row!(
            DXGKARG_OPENNATIVEFENCE.hGlobalNativeFence,
            true,
            OPEN_FENCE_BY,
            "the driver's handle of the fence (from DxgkDdiCreateNativeFence)"
        ),
        filled_row!(
            DXGKARG_OPENNATIVEFENCE.hLocalNativeFence,
            true,
            OPEN_FENCE_BY,
            "Dxgkrnl's instance object; the driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_OPENNATIVEFENCE.hDevice,
            true,
            OPEN_FENCE_BY,
            "the driver's handle of the opening device"
        ),
        filled_row!(
            DXGKARG_OPENNATIVEFENCE.CurrentValueGpuVa,
            true,
            OPEN_FENCE_BY,
            "the current value's GPU VA in the process"
        ),
        filled_row!(
            DXGKARG_OPENNATIVEFENCE.MonitoredValueGpuVa,
            true,
            OPEN_FENCE_BY,
            "the monitored value's GPU VA in the process"
        ),
    ],
};

const LOGS_BY: &str = "M:VidSchiProcessNativeFenceSignaledDpc @0x140044BE0";

/// `DxgkDdiUpdateNativeFenceLogs` in the DPC of a native-fence-signaled notification that
/// names a queue (`M:VidSchDdiNotifyDpc` @0x1400079E0): `LOGS_BY` builds the block on its
/// stack for that one queue, through Dxgkrnl's core interface, then reads the queue's signal
/// log from where it last stopped.
pub const UPDATE_NATIVE_FENCE_LOGS: Ddi<DXGKARG_UPDATENATIVEFENCELOGS> = Ddi {
    name: "DxgkDdiUpdateNativeFenceLogs",
    block: "DXGKARG_UPDATENATIVEFENCELOGS",
    rows: &[
        filled_row!(
            DXGKARG_UPDATENATIVEFENCELOGS.NumberOfQueues,
            true,
            LOGS_BY,
            "1"
        ),
        filled_row!(
            DXGKARG_UPDATENATIVEFENCELOGS.hHWQueue,
            true,
            LOGS_BY,
            "the address of the notified queue's driver handle"
        ),
        zero_row!(
            DXGKARG_UPDATENATIVEFENCELOGS.Flags,
            false,
            LOGS_BY,
            "written as zero"
        ),
        zero_row!(
            DXGKARG_UPDATENATIVEFENCELOGS.Reserved,
            false,
            LOGS_BY,
            "written as zero"
        ),
    ],
};

const DESTROY_BY: &str = "K:DXGADAPTERSYNCOBJECT::Stop @0x1402FAA68";

/// `DxgkDdiDestroyNativeFence` when the adapter's object of a native fence stops (its sync
/// object destroyed, or the adapter stopped): `DESTROY_BY` builds the block on its stack from
/// the driver's global handle alone, widened into the first 16 bytes, and zeroes the other 32.
/// It skips the call under its native-fence debug-test switch and only logs a failure.
pub const DESTROY_NATIVE_FENCE: Ddi<DXGKARG_DESTROYNATIVEFENCE> = Ddi {
    name: "DxgkDdiDestroyNativeFence",
    block: "DXGKARG_DESTROYNATIVEFENCE",
    rows: &[
        filled_row!(
            DXGKARG_DESTROYNATIVEFENCE.hGlobalNativeFence,
            true,
            DESTROY_BY,
            "the driver's global handle of the fence, kept from DxgkDdiCreateNativeFence"
        ),
        zero_row!(
            DXGKARG_DESTROYNATIVEFENCE.Flags,
            true,
            DESTROY_BY,
            "the upper half of the handle widened to 16 bytes"
        ),
        zero_row!(
            DXGKARG_DESTROYNATIVEFENCE.Reserved,
            false,
            DESTROY_BY,
            "its first 4 bytes from the widened handle, the rest zeroed on the stack"
        ),
    ],
};

const CLOSE_BY: &str = "K:DXGDEVICESYNCOBJECT::DestroyCoreState @0x1402CE5A0";

/// `DxgkDdiCloseNativeFence` when a device's object of an opened native fence goes (the
/// device, context, queue or paging queue destroyed, or an open undone on error): `CLOSE_BY`
/// builds the block as `DESTROY_BY` does, from the driver's local handle, then forgets the
/// handle. It skips the call while the adapter is stopped and under the debug-test switch, and
/// only logs a failure.
pub const CLOSE_NATIVE_FENCE: Ddi<DXGKARG_CLOSENATIVEFENCE> = Ddi {
    name: "DxgkDdiCloseNativeFence",
    block: "DXGKARG_CLOSENATIVEFENCE",
    rows: &[
        filled_row!(
            DXGKARG_CLOSENATIVEFENCE.hLocalNativeFence,
            true,
            CLOSE_BY,
            "the driver's local handle of the fence, kept from DxgkDdiOpenNativeFence"
        ),
        zero_row!(
            DXGKARG_CLOSENATIVEFENCE.Flags,
            true,
            CLOSE_BY,
            "the upper half of the handle widened to 16 bytes"
        ),
        zero_row!(
            DXGKARG_CLOSENATIVEFENCE.Reserved,
            false,
            CLOSE_BY,
            "its first 4 bytes from the widened handle, the rest zeroed on the stack"
        ),
    ],
};
