//! The debug report a TDR starts with: `DxgkDdiCollectDbgInfo2` where the driver fills the
//! slot under 24H2's reading, `DxgkDdiCollectDbgInfo` under the pages' ([`DbgInfoDdi`]).

use rvgpu_ddi::ntstatus::{NT_SUCCESS, STATUS_NO_MEMORY, STATUS_SUCCESS, STATUS_UNSUCCESSFUL};
use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGKARG_COLLECTDBGINFO_EXT,
    DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT, DXGK_TDR_TYPE, DXGK_TDR_TYPE_ENGINE_PAGE_FAULT,
    DXGK_TDR_TYPE_ENGINE_TIMEOUT, DXGK_TDR_TYPE_ENGINE_TIMEOUT_PROMOTED, DXGK_TDR_TYPE_FORCED,
    DXGK_TDR_TYPE_PREEMPT_TIMEOUT, VIDEO_ENGINE_TIMEOUT_DETECTED, VIDEO_TDR_TIMEOUT_DETECTED,
};

use crate::adapter::ddi::{self, sim_err};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::os::answers::DbgInfoDdi;
use crate::ums;

use super::state::{TdrDump, TdrEvent, TdrReason, TdrShared};

/// The driver's `DxgkDdiCollectDbgInfo2`.
type CollectDbgInfo2 = ddi::Of<rvgpu_ddi::tdr::PDXGKDDI_COLLECTDBGINFO2>;

/// What a debug report is about.
#[derive(Clone, Copy, Debug)]
pub(super) enum DbgReport {
    /// One node's engine timeout (`DXGK_TDR_TYPE_ENGINE_TIMEOUT`, reason 0x141, the engine
    /// payload). `hw`: the node is hardware-scheduled.
    Engine {
        /// The node.
        node: u32,
        /// Whether the node is hardware-scheduled.
        hw: bool,
    },
    /// The adapter-wide recovery (reason 0x117, no payload), of this kind.
    Adapter(TdrReason),
}

impl DbgReport {
    /// The bug-check code the report is for: 0x141 for the engine types (6 and 12), else
    /// 0x117, as `K:TdrCollectDbgInfoStage1` @0x140368AC0 picks it from the recovery's type.
    fn reason(self) -> u32 {
        match self.tdr_type() {
            DXGK_TDR_TYPE_ENGINE_TIMEOUT | DXGK_TDR_TYPE_ENGINE_PAGE_FAULT => {
                VIDEO_ENGINE_TIMEOUT_DETECTED
            }
            _ => VIDEO_TDR_TIMEOUT_DETECTED,
        }
    }

    /// `TdrType`: the recovery's type as `DXGK_TDR_TYPE` numbers it (d3dkmddi.h's enum,
    /// ne-d3dkmddi-dxgk_tdr_type). Stage1 passes the recovery context's type unchanged: 6 from
    /// `M:VidSchiResetHwEngine` @0x140052878 and `M:VidSchiResetEngine` @0x140047318, the
    /// adapter-wide kinds from `K:TdrIsRecoveryRequired` @0x1401D01F0. [`TdrReason`]'s own
    /// numbers are the simulation's, not these.
    fn tdr_type(self) -> DXGK_TDR_TYPE {
        match self {
            Self::Engine { .. } | Self::Adapter(TdrReason::EngineTimeout) => {
                DXGK_TDR_TYPE_ENGINE_TIMEOUT
            }
            Self::Adapter(TdrReason::AdapterTimeout) => DXGK_TDR_TYPE_PREEMPT_TIMEOUT,
            Self::Adapter(TdrReason::EngineTimeoutPromotedToAdapterReset) => {
                DXGK_TDR_TYPE_ENGINE_TIMEOUT_PROMOTED
            }
            Self::Adapter(TdrReason::Forced) => DXGK_TDR_TYPE_FORCED,
        }
    }
}

/// The debug report of a TDR. The reading decides the DDI ([`DbgInfoDdi`]): 24H2 calls
/// `DxgkDdiCollectDbgInfo2` for every report when the driver fills the slot
/// (`K:DXGADAPTER::_DdiCollectDbgInfoNoLocks` @0x1403698F8), `DxgkDdiCollectDbgInfo` only
/// otherwise; the pages' reading calls `DxgkDdiCollectDbgInfo`.
pub(super) fn collect_dbg_info(
    a: &AdapterShared,
    sh: &TdrShared,
    report: DbgReport,
) -> Result<(), SimError> {
    if a.os.windows.reading().dbg_info == DbgInfoDdi::SecondWhenFilled {
        if let Some(f) = ddi::table_slot!(a, DxgkDdiCollectDbgInfo2)? {
            return collect_dbg_info2(a, sh, f, report);
        }
    }
    collect_dbg_info1(a, sh, report.reason())
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
    let status = f.passive(a, (ctx, &args))?;
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

/// The driver's `DxgkDdiCollectDbgInfo2` (`f`) for `report`, as 24H2 makes it
/// (`K:TdrCollectDbgInfoStage1` @0x140368AC0, `K:DXGADAPTER::_DdiCollectDbgInfoNoLocks`
/// @0x1403698F8). An engine timeout's payload is 40 bytes
/// (`M:VidSchiCollectTdrPayloadEngineTimeout` @0x140051A20: the node; for a hardware-scheduled
/// node its suspend and ready-queue counts, else the node's last completed and submitted
/// fence ids; `hContext` cleared for the driver); an adapter-wide report has none
/// (`K:TdrIsRecoveryRequired` @0x1401D01F0 passes size 0 and no pointer).
///
fn collect_dbg_info2(
    a: &AdapterShared,
    sh: &TdrShared,
    f: CollectDbgInfo2,
    report: DbgReport,
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
    let mut payload = match report {
        DbgReport::Engine { node, hw } => {
            let mut p = DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT {
                NodeOrdinal: node,
                EngineOrdinal: 0,
                LastHwCompletedFenceId: 0,
                LastHwSubmittedFenceId: 0,
                NumberOfPendingSuspendRequests: 0,
                NumberOfReadyInteractiveHwQueues: 0,
                hContext: std::ptr::null_mut(),
            };
            if hw {
                let (suspends, ready) = crate::vidsch::hws::node_queue_counts(a, node);
                p.NumberOfPendingSuspendRequests = suspends;
                p.NumberOfReadyInteractiveHwQueues = ready;
            } else {
                let mut os = lock(&sh.os);
                let n = os.node(node);
                p.LastHwCompletedFenceId = n.c.into();
                p.LastHwSubmittedFenceId = n.s.into();
            }
            Some(p)
        }
        DbgReport::Adapter(_) => None,
    };
    let (payload_size, payload_ptr) = match payload.as_mut() {
        Some(p) => (
            std::mem::size_of::<DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT>() as u32,
            (p as *mut DXGK_TDR_PAYLOAD_ENGINE_TIMEOUT).cast(),
        ),
        None => (0, std::ptr::null_mut()),
    };
    let reason = report.reason();
    let tdr_type = report.tdr_type();
    let mut args = DXGKARG_COLLECTDBGINFO2 {
        Reason: reason,
        pBuffer: buf.as_mut_ptr().cast(),
        BufferSize: SIZE,
        pExtension: &mut ext.ext,
        TdrType: tdr_type,
        TdrPayloadSize: payload_size,
        TdrPayload: payload_ptr,
    };
    let ctx = a.context();
    let status = f.passive(a, (ctx, &mut args))?;
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
    let hcontext = payload.map_or(0, |p| p.hContext as usize);
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
        reason,
        tdr_type,
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
