//! Bug checks: how the simulated machine stops when Windows would.
//!
//! A bug check HALTS the simulated machine. The first one is recorded; from then on no thread of
//! the simulation issues another DDI and every test-facing API returns
//! [`crate::SimError::Bugcheck`]. Nothing unwinds through the driver: a callback (or a kernel
//! service) that detects a violation records the bug check and returns an error status or a
//! harmless value to the driver; the DDI wrapper that called into the driver inspects the machine
//! when the driver returns.
//!
//! Codes and parameters are Microsoft's, from the bug check reference
//! (<https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-code-reference2>).
//! Where Windows leaves a parameter "reserved" or internal, the simulation puts something useful
//! there and says so on the constructor.

use core::fmt;

use rvgpu_kmd::platform::Irql;

/// A recorded bug check: `KeBugCheckEx(code, params[0], params[1], params[2], params[3])`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BugCheck {
    /// The stop code.
    pub code: u32,
    /// Parameters 1 to 4.
    pub params: [u64; 4],
}

/// 0x9 `IRQL_NOT_GREATER_OR_EQUAL`: the IRQL was *lower* than the routine requires.
///
/// Raised by the simulation when a DDI is entered, or a callback called, below the level Windows
/// requires for it (for example `DxgkCbNotifyInterrupt` outside the ISR). Parameters (the
/// simulation's choice; Microsoft documents none): current IRQL, lowest allowed IRQL, the
/// routine's [`crate::adapter::irql::Routine`] id, 0.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0x9--irql-not-greater-or-equal>
pub const IRQL_NOT_GREATER_OR_EQUAL: u32 = 0x9;

/// 0xA `IRQL_NOT_LESS_OR_EQUAL`: pageable (or invalid) memory touched at too high an IRQL.
///
/// Every PASSIVE_LEVEL DDI and callback is pageable code, so entering one at DISPATCH_LEVEL or
/// above faults on its own code: the simulation raises 0xA with parameters (memory referenced =
/// the routine's address, IRQL, bitfield = 8 "execute", address that referenced = the routine's
/// address).
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xa--irql-not-less-or-equal>
pub const IRQL_NOT_LESS_OR_EQUAL: u32 = 0xA;

/// 0x50 `PAGE_FAULT_IN_NONPAGED_AREA`: invalid system memory referenced.
///
/// Raised when the driver accesses a BAR mapping it never got from `DxgkCbMapMemory`, one it
/// already unmapped, or past the end of a mapping. Parameters: address referenced, 0 read / 2
/// write, address that referenced (0: unknown on the host), 0.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0x50--page-fault-in-nonpaged-area>
pub const PAGE_FAULT_IN_NONPAGED_AREA: u32 = 0x50;

/// 0xC4 `DRIVER_VERIFIER_DETECTED_VIOLATION`. The simulation runs as a WHLK machine does, with
/// Driver Verifier on for the miniport, so the violations Verifier catches use its code.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xc4--driver-verifier-detected-violation>
pub const DRIVER_VERIFIER_DETECTED_VIOLATION: u32 = 0xC4;

/// 0xC8 `IRQL_UNEXPECTED_VALUE`: "the processor's IRQL is not what it should be at this time",
/// typically a routine that raised IRQL (or acquired a spin lock) and returned without
/// restoring it. Parameter 1 is `(current IRQL << 16) | (expected IRQL << 8) | UniqueValue`
/// ([`irql_unexpected`]); parameters 2-4 depend on UniqueValue.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xc8--irql-unexpected-value>
pub const IRQL_UNEXPECTED_VALUE: u32 = 0xC8;

/// 0xC7 `TIMER_OR_DPC_INVALID`: a kernel timer or DPC in memory being freed (or a driver
/// unloading) while still set or queued. Parameters: object type (0: a timer), the object's
/// address, the start and end of the memory range checked (0 here: the simulation does not
/// know the bounds of the driver's allocation).
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xc7--timer-or-dpc-invalid>
pub const TIMER_OR_DPC_INVALID: u32 = 0xC7;

/// 0xD1 `DRIVER_IRQL_NOT_LESS_OR_EQUAL`: a driver image touched an invalid or pageable address
/// at DISPATCH_LEVEL or above: here, VidSch following a queue handle at DPC time that is not
/// one of Dxgkrnl's queue objects.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xd1--driver-irql-not-less-or-equal>
pub const DRIVER_IRQL_NOT_LESS_OR_EQUAL: u32 = 0xD1;

/// 0xD5 `DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL`: the driver referenced memory it had freed
/// (under Verifier's special pool a freed page is made inaccessible, so the write faults at
/// once). The simulation cannot trap the write; it keeps freed contiguous memory poisoned and
/// finds the write at Unload. Parameters: address referenced (the first overwritten byte),
/// 1 (write), address that referenced (0: unknown on the host), 0.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xd5--driver-page-fault-in-freed-special-pool>
pub const DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL: u32 = 0xD5;

/// 0xF2 `HARDWARE_INTERRUPT_STORM`: a level-triggered interrupt stays asserted and no ISR claims
/// it (or the ISR claims it forever without clearing the source). Parameters: address of the
/// ISR, ISR context (the miniport device context), 0 (no interrupt object on the host), number of
/// consecutive ISR calls that did not clear the line.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0xf2--hardware-interrupt-storm>
pub const HARDWARE_INTERRUPT_STORM: u32 = 0xF2;

/// 0x116 `VIDEO_TDR_FAILURE`: timeout detection and recovery failed to reset the display driver.
/// Parameters: TDR recovery context, faulting address in the driver, NTSTATUS, internal.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0x116---video-tdr-error>
pub const VIDEO_TDR_FAILURE: u32 = 0x116;

/// 0x119 `VIDEO_SCHEDULER_INTERNAL_ERROR`: the video scheduler detected a fatal violation;
/// parameter 1 is the subtype ([`vidsch`]).
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0x119---video-scheduler-internal-error>
pub const VIDEO_SCHEDULER_INTERNAL_ERROR: u32 = 0x119;

/// 0x113 `VIDEO_DXGKRNL_FATAL_ERROR`: "the DirectX graphics kernel subsystem has detected a
/// violation" (Microsoft documents no parameters). Raised, under
/// `OsConfig::ddi_irql_mismatch_is_0x113`, when a DDI that Dxgkrnl calls through a
/// `DXGADAPTER` / `ADAPTER_RENDER` `Ddi*` wrapper returns at another IRQL than it was called at.
/// Parameters as the wrapper logs them (\[D\] `ADAPTER_RENDER::DdiCreateHwQueue`:
/// `WdLogSingleEntry5(0, 0x113, 0x10, this, IRQL before, IRQL after)`):
/// [`dxgkrnl_fatal::DDI_IRQL_MISMATCH`], the adapter object (the simulation passes the DDI's
/// address: there is no `ADAPTER_RENDER` on the host), the IRQL at the call, the IRQL at the
/// return.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0x113---video-dxgkrnl-fatal-error>
pub const VIDEO_DXGKRNL_FATAL_ERROR: u32 = 0x113;

/// Parameter-1 values of [`VIDEO_DXGKRNL_FATAL_ERROR`] the simulation raises (Dxgkrnl's own
/// sub-codes, read in the decompiled wrappers; not in Microsoft's reference).
pub mod dxgkrnl_fatal {
    /// 0x10: a DDI returned at another IRQL than it was called at.
    pub const DDI_IRQL_MISMATCH: u64 = 0x10;
}

/// 0x10E `VIDEO_MEMORY_MANAGEMENT_INTERNAL`: the video memory manager detected a fatal
/// violation; parameter 1 is the subtype.
/// <https://learn.microsoft.com/windows-hardware/drivers/debugger/bug-check-0x10e--video-memory-management-internal>
pub const VIDEO_MEMORY_MANAGEMENT_INTERNAL: u32 = 0x10E;

/// Subtypes (parameter 1) of [`VIDEO_SCHEDULER_INTERNAL_ERROR`], from Microsoft's table.
pub mod vidsch {
    /// `DRIVER_REPORTED_INVALID_FENCE_ID`: the driver reported an invalid fence ID.
    ///
    /// The simulation also uses it for a `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED` report that names
    /// a native fence handle the OS never handed out or already destroyed (NF-14 calls that a
    /// bug check): a native fence handle is the native-fence generation of a fence ID, and no
    /// more specific subtype is documented. Parameters: (0x1, the bad handle, the interrupt
    /// type, the index of the handle in the reported array).
    pub const DRIVER_REPORTED_INVALID_FENCE_ID: u64 = 0x1;
    /// `DRIVER_SUBMIT_FAILED` (0x2): the driver failed a command submission
    /// (`DxgkDdiSubmitCommand`, `DxgkDdiPreemptCommand`: "an error status is bug check 0x119
    /// subtype 0x2", docs/tdr.md#the-simulated-os). Parameters: (0x2, the NTSTATUS, node ordinal, fence ID) —
    /// parameters 2-4 are the simulation's choice.
    pub const DRIVER_SUBMIT_FAILED: u64 = 0x2;
    /// `REPORTED_INVALID_ABORTED_FENCE`: after a successful engine reset the driver reported a
    /// LastAbortedFenceId outside [last completed, last submitted] (TDR-06): (0xA, aborted,
    /// completed, internal).
    pub const REPORTED_INVALID_ABORTED_FENCE: u64 = 0xA;
    /// Simulation-specific subtype (outside Microsoft's table, chosen in the range the table
    /// marks "internal OS state error"): the driver reported an interrupt type the OS does not
    /// know, or a type it may not report on this adapter. Parameters: (0x1000_0001, interrupt
    /// type, 0, 0). Windows asserts on this in its checked scheduler; the code is ours.
    pub const SIM_UNKNOWN_INTERRUPT_TYPE: u64 = 0x1000_0001;
    /// Simulation-specific (same range): `DxgkCbNotifyInterrupt` called by a thread that does
    /// not hold this adapter's interrupt lock (not from its ISR or one of its
    /// `DxgkCbSynchronizeExecution` routines — e.g. from another adapter's ISR). The OS's
    /// interrupt-time scheduler state is only protected by that lock. Parameters:
    /// (0x1000_0002, the DeviceHandle, the interrupt type, 0).
    pub const SIM_NOTIFY_OUTSIDE_INTERRUPT_LOCK: u64 = 0x1000_0002;
    /// Simulation-specific: a report names a `NodeOrdinal` the adapter does not have (not below
    /// `DXGK_DRIVERCAPS::GpuEngineTopology.NbAsymetricProcessingNodes`; 0 nodes if the OS has
    /// not read the caps yet). Parameters: (0x1000_0003, NodeOrdinal, node count, type).
    pub const SIM_INVALID_NODE_ORDINAL: u64 = 0x1000_0003;
    /// Simulation-specific: a report names an `EngineOrdinal` other than 0 (a single physical
    /// adapter has one engine per node). Parameters: (0x1000_0004, EngineOrdinal, node, type).
    pub const SIM_INVALID_ENGINE_ORDINAL: u64 = 0x1000_0004;
    /// Simulation-specific: `EngineStateChange.NewState` is not a `DXGK_ENGINE_STATE` value.
    /// Parameters: (0x1000_0005, NewState, node, type).
    pub const SIM_INVALID_ENGINE_STATE: u64 = 0x1000_0005;
    /// Simulation-specific (LOG-08): with `OptimizedNativeFenceSignaledInterrupt` a
    /// `NativeFenceSignaled.hHWQueue` that is not a live hardware queue of the adapter, or one
    /// on another node. Parameters: (0x1000_0006, hHWQueue, NodeOrdinal, the queue's node or
    /// `u64::MAX` if unknown).
    pub const SIM_INVALID_HW_QUEUE: u64 = 0x1000_0006;
}

/// `UniqueValue`s (low byte of parameter 1) of [`IRQL_UNEXPECTED_VALUE`].
pub mod irql_unexpected {
    /// 3: an interrupt's ServiceRoutine returned at another IRQL (Microsoft's value).
    /// Parameters: (p1, the ISR, the interrupt object — the simulation passes the ISR context
    /// because there is no KINTERRUPT on the host —, 0).
    pub const INTERRUPT_SERVICE_ROUTINE: u64 = 0x3;
    /// Simulation-specific: a DDI returned at another IRQL than it was called at (Windows
    /// catches this where the calling thread next checks its IRQL; the code is the same).
    /// Parameters: (p1, the DDI, 0, the [`crate::adapter::irql::Routine`] id).
    pub const SIM_DDI: u64 = 0x80;
    /// Simulation-specific: `DxgkDdiDpcRoutine` returned at another IRQL than DISPATCH_LEVEL.
    /// Parameters: (p1, the DPC routine, the miniport context, 0).
    pub const SIM_DPC: u64 = 0x81;
    /// Simulation-specific: a `DxgkCbSynchronizeExecution` routine returned at another IRQL
    /// than the interrupt's. Parameters: (p1, the routine, its context, 0).
    pub const SIM_SYNCHRONIZE_ROUTINE: u64 = 0x82;
    /// Simulation-specific: a kernel timer's DPC routine returned at another IRQL than
    /// DISPATCH_LEVEL ([`crate::adapter::ktimer`]). Parameters: (p1, the routine, its context, 0).
    pub const SIM_TIMER_DPC: u64 = 0x83;
}

/// Parameter-1 values of [`DRIVER_VERIFIER_DETECTED_VIOLATION`] the simulation raises.
pub mod verifier {
    /// 0x10: the driver freed an address that was not returned from an allocate call (or was
    /// already freed). Parameters: (0x10, bad address, 0, 0). The simulation uses it for
    /// `DxgkCbFreeContiguousMemory` of a foreign or already freed address.
    pub const FREE_BAD_ADDRESS: u64 = 0x10;
    /// 0x30: the driver tried to raise IRQL to a value lower than the current IRQL
    /// (KeRaiseIrqlToDpcLevel above DISPATCH_LEVEL). Parameters: (0x30, current, requested, 0).
    pub const RAISE_IRQL_LOWER: u64 = 0x30;
    /// 0x31: the driver tried to lower IRQL to a value higher than the current IRQL.
    /// Parameters: (0x31, current, requested, 0).
    pub const LOWER_IRQL_HIGHER: u64 = 0x31;
    /// 0x02: the driver tried to allocate non-paged pool above DISPATCH_LEVEL. Parameters:
    /// (0x02, current IRQL, pool type (0: non-paged), size; the simulation does not know the
    /// size at the point it checks and reports 0).
    pub const NONPAGED_ALLOC_ABOVE_DISPATCH: u64 = 0x02;
}

/// The `KIRQL` value Windows prints for an [`Irql`] (x64: DIRQL is 3..=12; device interrupts in
/// the simulation use 5, a typical PCI line level).
pub const fn kirql(irql: Irql) -> u64 {
    match irql {
        Irql::Passive => 0,
        Irql::Apc => 1,
        Irql::Dispatch => 2,
        Irql::Device => 5,
    }
}

impl BugCheck {
    /// A bug check with all four parameters.
    pub const fn new(code: u32, params: [u64; 4]) -> Self {
        Self { code, params }
    }

    /// 0x119 with a subtype and three parameters.
    pub const fn video_scheduler(subtype: u64, p2: u64, p3: u64, p4: u64) -> Self {
        Self::new(VIDEO_SCHEDULER_INTERNAL_ERROR, [subtype, p2, p3, p4])
    }

    /// 0xC4 with a subtype and three parameters.
    pub const fn verifier(subtype: u64, p2: u64, p3: u64, p4: u64) -> Self {
        Self::new(DRIVER_VERIFIER_DETECTED_VIOLATION, [subtype, p2, p3, p4])
    }

    /// 0xC8 for a routine that entered at `expected` and returned at `current`.
    pub const fn irql_unexpected(
        current: Irql,
        expected: Irql,
        unique: u64,
        p2: u64,
        p3: u64,
        p4: u64,
    ) -> Self {
        Self::new(
            IRQL_UNEXPECTED_VALUE,
            [
                (kirql(current) << 16) | (kirql(expected) << 8) | unique,
                p2,
                p3,
                p4,
            ],
        )
    }

    /// Name of the stop code, for messages.
    pub const fn name(&self) -> &'static str {
        match self.code {
            IRQL_NOT_GREATER_OR_EQUAL => "IRQL_NOT_GREATER_OR_EQUAL",
            IRQL_NOT_LESS_OR_EQUAL => "IRQL_NOT_LESS_OR_EQUAL",
            PAGE_FAULT_IN_NONPAGED_AREA => "PAGE_FAULT_IN_NONPAGED_AREA",
            DRIVER_VERIFIER_DETECTED_VIOLATION => "DRIVER_VERIFIER_DETECTED_VIOLATION",
            DRIVER_IRQL_NOT_LESS_OR_EQUAL => "DRIVER_IRQL_NOT_LESS_OR_EQUAL",
            IRQL_UNEXPECTED_VALUE => "IRQL_UNEXPECTED_VALUE",
            TIMER_OR_DPC_INVALID => "TIMER_OR_DPC_INVALID",
            HARDWARE_INTERRUPT_STORM => "HARDWARE_INTERRUPT_STORM",
            DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL => "DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL",
            VIDEO_TDR_FAILURE => "VIDEO_TDR_FAILURE",
            VIDEO_SCHEDULER_INTERNAL_ERROR => "VIDEO_SCHEDULER_INTERNAL_ERROR",
            VIDEO_MEMORY_MANAGEMENT_INTERNAL => "VIDEO_MEMORY_MANAGEMENT_INTERNAL",
            VIDEO_DXGKRNL_FATAL_ERROR => "VIDEO_DXGKRNL_FATAL_ERROR",
            _ => "UNKNOWN_BUGCHECK",
        }
    }
}

impl fmt::Debug for BugCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for BugCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [p1, p2, p3, p4] = self.params;
        write!(
            f,
            "{} ({:#x}) ({:#x}, {:#x}, {:#x}, {:#x})",
            self.name(),
            self.code,
            p1,
            p2,
            p3,
            p4
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_code_and_params() {
        let b = BugCheck::video_scheduler(vidsch::DRIVER_REPORTED_INVALID_FENCE_ID, 0xdead, 19, 0);
        assert_eq!(
            b.to_string(),
            "VIDEO_SCHEDULER_INTERNAL_ERROR (0x119) (0x1, 0xdead, 0x13, 0x0)"
        );
    }
}
