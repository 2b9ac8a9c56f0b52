//! The events of `rvgpu.Kmd`: name, level, keyword and fields of each, and the one-line
//! emitters the driver's modules call. Each emitter is inlined: with the event's gate bit
//! clear it costs one relaxed load and a branch; the fields are gathered only past it.

use core::sync::atomic::Ordering;

use super::abi::{EventDescriptor, CHANNEL_TRACELOGGING};
use super::meta::{self, Field, Ty};
pub use super::meta::{Event, MAX_FIELDS};
use super::sink::{self, GATE};
use crate::platform::Platform;

/// Keyword of the native-fence events.
pub const KW_FENCE: u64 = 0x1;
/// Keyword of the doorbell events.
pub const KW_DOORBELL: u64 = 0x2;
/// Keyword of the hardware-queue events.
pub const KW_HWQUEUE: u64 = 0x4;
/// Keyword of the TDR events.
pub const KW_TDR: u64 = 0x8;
/// Keyword of the power events.
pub const KW_POWER: u64 = 0x10;

/// `TRACE_LEVEL_WARNING`.
const WARNING: u8 = 3;
/// `TRACE_LEVEL_INFORMATION`.
const INFO: u8 = 4;
/// `TRACE_LEVEL_VERBOSE`.
const VERBOSE: u8 = 5;

macro_rules! events {
    ($($(#[$doc:meta])* $id:ident = $bit:literal, $name:literal, $level:ident, $kw:ident,
       [$(($f:literal, $t:ident)),* $(,)?];)*) => {
        $(
            $(#[$doc])*
            pub const $id: Event = {
                const FIELDS: &[Field] = &[$(($f, Ty::$t)),*];
                const _: () = assert!(FIELDS.len() <= MAX_FIELDS);
                const META: [u8; meta::event_len($name, FIELDS)] = meta::event($name, FIELDS);
                Event {
                    bit: 1 << $bit,
                    descriptor: EventDescriptor {
                        id: 0,
                        version: 0,
                        channel: CHANNEL_TRACELOGGING,
                        level: $level,
                        opcode: 0,
                        task: 0,
                        keyword: $kw,
                    },
                    meta: &META,
                    fields: FIELDS,
                }
            };
        )*
        /// Every event, for the gate's computation.
        pub static ALL: &[&Event] = &[$(&$id),*];
    };
}

events! {
    /// The ISR took a native-fence signal record off the device's event ring.
    NATIVE_FENCE_SIGNAL = 0, "NativeFenceSignal", VERBOSE, KW_FENCE,
        [("Adapter", U32), ("Engine", U32), ("QueueId", U32), ("Tag", Hex64), ("Value", U64)];
    /// DxgkDdiUpdateMonitoredValues: a CPU now waits for `Value` of the fence.
    NATIVE_FENCE_WAIT = 1, "NativeFenceWait", VERBOSE, KW_FENCE,
        [("Fence", Hex64), ("Value", U64)];
    /// DxgkDdiConnectDoorbell bound a doorbell page to its queue.
    DOORBELL_CONNECT = 2, "DoorbellConnect", INFO, KW_DOORBELL,
        [("Doorbell", Hex64), ("Page", U32)];
    /// The driver kicked a queue's engine: a kernel-mode submission, or a UMD's notify
    /// doorbell (DxgkDdiNotifyWorkSubmission).
    DOORBELL_RING = 3, "DoorbellRing", VERBOSE, KW_DOORBELL,
        [("QueueId", U32), ("Engine", U32)];
    /// DxgkDdiCreateHwQueue succeeded.
    HWQUEUE_CREATE = 4, "HwQueueCreate", INFO, KW_HWQUEUE,
        [("Queue", Hex64), ("QueueId", U32), ("Engine", U32)];
    /// DxgkDdiDestroyHwQueue succeeded.
    HWQUEUE_DESTROY = 5, "HwQueueDestroy", INFO, KW_HWQUEUE,
        [("Queue", Hex64), ("QueueId", U32)];
    /// The OS detected a timeout on a node (DxgkDdiQueryDependentEngineGroup, its first call).
    TDR_TIMEOUT = 6, "TdrTimeoutDetected", WARNING, KW_TDR, [("Adapter", U32), ("Node", U32)];
    /// DxgkDdiResetEngine or DxgkDdiResetHwEngine: one engine reset.
    TDR_ENGINE_RESET = 7, "TdrEngineReset", WARNING, KW_TDR, [("Adapter", U32), ("Node", U32)];
    /// DxgkDdiResetFromTimeout: the adapter reset.
    TDR_ADAPTER_RESET = 8, "TdrAdapterReset", WARNING, KW_TDR, [("Adapter", U32)];
    /// DxgkDdiRestartFromTimeout: the adapter runs again.
    TDR_RESTART = 9, "TdrRestart", WARNING, KW_TDR, [("Adapter", U32)];
    /// DxgkDdiSetPowerState: the adapter's device power state (`DEVICE_POWER_STATE`).
    POWER_DEVICE = 10, "PowerDeviceState", INFO, KW_POWER,
        [("Adapter", U32), ("DeviceState", U32)];
    /// DxgkDdiSetPowerComponentFState: an engine's F-state.
    POWER_FSTATE = 11, "PowerComponentFState", INFO, KW_POWER,
        [("Adapter", U32), ("Component", U32), ("FState", U32)];
}

/// Whether `e` is written: one relaxed load and a test.
#[inline(always)]
pub fn on(e: &Event) -> bool {
    GATE.load(Ordering::Relaxed) & e.bit != 0
}

/// Writes `e` with the fields `values()` gives, if it is on: the values are computed only
/// then.
#[inline(always)]
pub fn emit<P: Platform, const N: usize>(e: &'static Event, values: impl FnOnce() -> [u64; N]) {
    if on(e) {
        sink::write::<P>(e, &values());
    }
}

/// As [`emit`], for a site where only some cases are the event: `values()` says `None` for
/// the others.
#[inline(always)]
pub fn emit_some<P: Platform, const N: usize>(
    e: &'static Event,
    values: impl FnOnce() -> Option<[u64; N]>,
) {
    if on(e) {
        if let Some(v) = values() {
            sink::write::<P>(e, &v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_distinct_and_metadata_sizes_hold() {
        let mut seen = 0u32;
        for e in ALL {
            assert_eq!(seen & e.bit, 0);
            seen |= e.bit;
            let size = u16::from_le_bytes([e.meta[0], e.meta[1]]);
            assert_eq!(usize::from(size), e.meta.len());
            assert_eq!(e.meta[2], 0, "no tags");
        }
    }

    #[test]
    fn status_fields_carry_an_out_type() {
        const F: &[Field] = &[("S", Ty::Status)];
        let m: [u8; meta::event_len("E", F)] = meta::event("E", F);
        assert_eq!(
            m,
            [
                9,
                0,
                0,
                b'E',
                0,
                b'S',
                0,
                meta::IN_INT32 | meta::CHAIN,
                meta::OUT_NTSTATUS
            ]
        );
    }
}
