//! The debug report a TDR starts with: `DxgkDdiCollectDbgInfo`, or in 24H2's order for a
//! hardware-scheduled node `DxgkDdiCollectDbgInfo2` ([`HwsTdr`]).

use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_NO_MEMORY, STATUS_SUCCESS, STATUS_UNSUCCESSFUL};
use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGKARG_COLLECTDBGINFO_EXT,
    DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT, DXGK_TDR_TYPE_ENGINE_TIMEOUT, VIDEO_ENGINE_TIMEOUT_DETECTED,
};

use crate::adapter::ddi::{self, sim_err};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::os::answers::HwsTdr;
use crate::ums;

use super::state::{TdrDump, TdrEvent, TdrShared};

/// The driver's `DxgkDdiCollectDbgInfo2`.
type CollectDbgInfo2 = ddi::Ddi<
    unsafe extern "system" fn(
        rvgpu_ddi::basic::HANDLE,
        *mut DXGKARG_COLLECTDBGINFO2,
    ) -> rvgpu_ddi::basic::NTSTATUS,
>;

/// The debug report of a TDR with `reason`. `hw_node`: the hardware-scheduled node whose
/// engine timeout it reports. The reading decides the DDI there: 24H2's order
/// ([`HwsTdr::DbgInfoBeforeReset`]) uses `DxgkDdiCollectDbgInfo2` where the driver has the
/// slot; the pages' order, and every other report, `DxgkDdiCollectDbgInfo`.
pub(super) fn collect_dbg_info(
    a: &AdapterShared,
    sh: &TdrShared,
    reason: u32,
    hw_node: Option<u32>,
) -> Result<(), SimError> {
    if let Some(node) = hw_node.filter(|_| a.os.reading.hws_tdr == HwsTdr::DbgInfoBeforeReset) {
        if let Some(f) = ddi::table_slot!(a, DxgkDdiCollectDbgInfo2)? {
            return collect_dbg_info2(a, sh, f, node);
        }
    }
    collect_dbg_info1(a, sh, reason)
}

/// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE with a 4 KiB buffer and a guard after it.
fn collect_dbg_info1(a: &AdapterShared, sh: &TdrShared, reason: u32) -> Result<(), SimError> {
    // A WDDM KMD must implement it; skipping it would hide a missing DDI from every TDR test.
    let f = ddi::table_slot!(a, DxgkDdiCollectDbgInfo)?.ok_or_else(|| {
        sim_err(
            a,
            format!("driver bug: TDR ({reason:#x}) but the driver has no DxgkDdiCollectDbgInfo"),
        )
    })?;
    const SIZE: usize = 4096;
    const GUARD: u8 = 0xA5;
    let mut buf = vec![GUARD; SIZE + 64];
    let mut ext = DXGKARG_COLLECTDBGINFO_EXT::default();
    let args = DXGKARG_COLLECTDBGINFO {
        Reason: reason,
        pBuffer: buf.as_mut_ptr().cast(),
        BufferSize: SIZE,
        pExtension: &mut ext,
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context and a buffer of BufferSize bytes.
    let status = unsafe { ddi::passive_with(a, f, ctx, &args) }?;
    if buf[SIZE..].iter().any(|b| *b != GUARD) {
        return Err(sim_err(
            a,
            format!("driver bug: DxgkDdiCollectDbgInfo({reason:#x}) wrote past BufferSize"),
        ));
    }
    let bytes = if NT_SUCCESS(status) {
        buf[..SIZE].iter().position(|b| *b == 0).unwrap_or(SIZE)
    } else {
        0
    };
    lock(&sh.os)
        .events
        .push(TdrEvent::CollectDbgInfo { reason, bytes });
    Ok(())
}

/// The bytes of a dump kept: up to its last non-zero byte, at least one. The 16 MiB are
/// compared a page at a time (a slice comparison), the last non-zero page byte by byte: a
/// byte loop over all of them is seconds of a TDR's time in an unoptimised build under
/// emulation, while the copies of other engines go on.
fn kept_bytes(dump: &[u8]) -> usize {
    const PAGE: usize = 4096;
    static ZERO: [u8; PAGE] = [0; PAGE];
    (dump.chunks(PAGE).enumerate().rev())
        .find(|(_, page)| !ZERO.starts_with(page))
        .and_then(|(i, page)| page.iter().rposition(|b| *b != 0).map(|k| i * PAGE + k + 1))
        .unwrap_or(1)
}

/// The driver's `DxgkDdiCollectDbgInfo2` (`f`) just before a hardware-scheduled node's reset,
/// as 24H2 makes it
/// (`M:TdrCollectDbgInfoStage1` @0x140368AC0, `K:DXGADAPTER::_DdiCollectDbgInfoNoLocks`
/// @0x1403698F8): reason `VIDEO_ENGINE_TIMEOUT_DETECTED`, `DxgkDdiCollectDbgInfo2` with
/// `DXGK_TDR_TYPE_ENGINE_TIMEOUT` and its 40-byte payload (`hContext` cleared for the driver).
///
/// What Stage1 gives and checks: a zeroed 16 MiB buffer (`ExAllocatePool2` without
/// `POOL_FLAG_UNINITIALIZED`) followed by an "EOR" canary, and a 32-byte extension followed by
/// one; a damaged canary marks the dump corrupt, which here is a driver bug. `NoLocks` accepts
/// only `STATUS_SUCCESS`, `STATUS_UNSUCCESSFUL` and `STATUS_NO_MEMORY` (anything else is
/// "Driver returned an invalid NTSTATUS code"), also a driver bug here. The bytes are kept as
/// [`TdrDump`] keeps them, whatever the status.
fn collect_dbg_info2(
    a: &AdapterShared,
    sh: &TdrShared,
    f: CollectDbgInfo2,
    node: u32,
) -> Result<(), SimError> {
    const SIZE: usize = 16 << 20;
    const CANARY: &[u8; 4] = b"EOR\0";
    let mut buf = vec![0u8; SIZE + CANARY.len()];
    buf[SIZE..].copy_from_slice(CANARY);
    /// The extension and its canary, one allocation as Stage1's 36 bytes.
    #[repr(C)]
    struct Ext {
        ext: DXGKARG_COLLECTDBGINFO_EXT,
        canary: [u8; 4],
    }
    let mut ext = Ext {
        ext: DXGKARG_COLLECTDBGINFO_EXT::default(),
        canary: *CANARY,
    };
    let (suspends, ready) = crate::vidsch::hws::node_queue_counts(a, node);
    let mut payload = DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT {
        NodeOrdinal: node,
        EngineOrdinal: 0,
        LastHwCompletedFenceId: 0,
        LastHwSubmittedFenceId: 0,
        NumberOfPendingSuspendRequests: suspends,
        NumberOfReadyInteractiveHwQueues: ready,
        hContext: std::ptr::null_mut(),
    };
    let mut args = DXGKARG_COLLECTDBGINFO2 {
        Reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
        pBuffer: buf.as_mut_ptr().cast(),
        BufferSize: SIZE,
        pExtension: &mut ext.ext,
        TdrType: DXGK_TDR_TYPE_ENGINE_TIMEOUT,
        TdrPayloadSize: std::mem::size_of::<DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>() as u32,
        TdrPayload: (&mut payload as *mut DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT).cast(),
    };
    let ctx = a.context();
    // SAFETY: the driver's DDI with its context, a buffer of BufferSize bytes, an
    // extension and a payload of TdrPayloadSize bytes, all alive for the call.
    let status = unsafe { ddi::passive_with(a, f, ctx, &mut args) }?;
    if buf[SIZE..] != CANARY[..] || ext.canary != *CANARY {
        return Err(sim_err(
            a,
            "driver bug: DxgkDdiCollectDbgInfo2 wrote past BufferSize or its extension".to_string(),
        ));
    }
    if ![STATUS_SUCCESS, STATUS_UNSUCCESSFUL, STATUS_NO_MEMORY].contains(&status) {
        return Err(sim_err(
            a,
            format!(
                "driver bug: DxgkDdiCollectDbgInfo2 returned {status:#x}, not one of its three"
            ),
        ));
    }
    // Stage1 follows a non-null `hContext` as its own context object into the context's
    // process: it must be the OS's handle of a context of this adapter, never the KMD's.
    let hcontext = payload.hContext as usize;
    if hcontext != 0 && !ums::tdr_is_os_context(a, hcontext) {
        return Err(sim_err(
            a,
            format!(
                "driver bug: DxgkDdiCollectDbgInfo2 named hContext {hcontext:#x}, not the OS's \
                 handle of a context of the adapter"
            ),
        ));
    }
    let kept = kept_bytes(&buf[..SIZE]);
    buf.truncate(kept);
    let mut os = lock(&sh.os);
    os.events.push(TdrEvent::CollectDbgInfo2 {
        reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
        tdr_type: DXGK_TDR_TYPE_ENGINE_TIMEOUT,
        bytes: kept,
    });
    os.last_dump = Some(TdrDump {
        status,
        bytes: buf,
        hcontext,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::kept_bytes;

    /// TDR-01: the dump kept is up to the driver's last non-zero byte, wherever it falls
    /// (first byte, a page's last or first byte, the short last page), at least one byte.
    #[test]
    fn tdr_01_the_dump_kept_ends_at_the_last_non_zero_byte() {
        let mut d = vec![0u8; 3 * 4096 + 100];
        assert_eq!(kept_bytes(&d), 1, "all zero");
        for (at, want) in [(0, 1), (4095, 4096), (4096, 4097), (3 * 4096 + 99, d.len())] {
            d[at] = 0xA5;
            assert_eq!(kept_bytes(&d), want, "non-zero at {at}");
        }
        d[3 * 4096 + 99] = 0;
        assert_eq!(kept_bytes(&d), 4097, "the last one cleared");
    }
}
