//! The `Machine`'s methods on timeout detection and recovery (TDR): turning it on, forcing
//! and pausing it, and what it recorded.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
use rvgpu_ddi::tdr::{
    DXGKARG_COLLECTDBGINFO, DXGKARG_COLLECTDBGINFO2, DXGKARG_COLLECTDBGINFO_EXT,
    DXGK_TDR_TYPE_FORCED, VIDEO_ENGINE_TIMEOUT_DETECTED,
};
use rvgpu_device::Device;

use crate::adapter::ddi::{self, check_status, sim_err};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::os::Mode;
use crate::vidsch::tdr::{
    dependent_group, recover_node, shared, Cause, PauseHook, TdrConfig, TdrDump, TdrEvent,
    TdrReason, ENABLED,
};

impl Machine {
    /// Turns TDR on for adapter `i` with `config` (off by default, see the module doc).
    pub fn enable_tdr(&self, i: usize, config: TdrConfig) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?;
        let sh = shared(a);
        let mut os = lock(&sh.os);
        if !os.enabled {
            ENABLED.fetch_add(1, Ordering::AcqRel);
        }
        os.enabled = true;
        os.step = self.config().mode == Mode::Step;
        os.config = config;
        let now = os.now();
        for n in os.nodes.iter_mut() {
            n.last_change = now;
        }
        Ok(())
    }

    /// Every TDR step on adapter `i`, in order.
    pub fn tdr_events(&self, i: usize) -> Vec<TdrEvent> {
        self.adapter_shared(i)
            .map(|a| lock(&shared(a).os).events.clone())
            .unwrap_or_default()
    }

    /// The last `DxgkDdiCollectDbgInfo2` dump on adapter `i` (24H2's TDR of a
    /// hardware-scheduled node), as Windows keeps it.
    pub fn last_tdr_dump(&self, i: usize) -> Option<TdrDump> {
        self.adapter_shared(i)
            .ok()
            .and_then(|a| lock(&shared(a).os).last_dump.clone())
    }

    /// The reason of the last recovery on adapter `i` (TDR-09: 9 after a promotion).
    pub fn tdr_reason(&self, i: usize) -> Option<TdrReason> {
        self.adapter_shared(i)
            .ok()
            .and_then(|a| lock(&shared(a).os).reason)
    }

    /// (engine resets, adapter resets) recovered on adapter `i`.
    pub fn tdr_counts(&self, i: usize) -> (u64, u64) {
        self.adapter_shared(i).map_or((0, 0), |a| {
            let sh = shared(a);
            let os = lock(&sh.os);
            (os.resets, os.adapter_resets)
        })
    }

    /// A hook the TDR sequence runs between the snapshot and `DxgkDdiResetEngine` (after the
    /// DPC flush and the dependent-group query): TDR-07 steps the device in it.
    pub fn set_tdr_pause(
        &self,
        i: usize,
        hook: Option<impl FnMut(&Arc<Device>) + Send + 'static>,
    ) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?;
        *lock(&shared(a).pause) = hook.map(|h| Box::new(h) as PauseHook);
        Ok(())
    }

    /// `DxgkDdiQueryDependentEngineGroup(node)` at PASSIVE_LEVEL (TDR-02).
    pub fn query_dependent_engine_group(&self, i: usize, node: u32) -> Result<u64, SimError> {
        let a = self.adapter_shared(i)?.clone();
        let f = ddi::table_slot!(&a, DxgkDdiQueryDependentEngineGroup)?
            .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
        let (st, mask) = dependent_group(&a, f, node)?;
        check_status(f, st)?;
        Ok(mask)
    }

    /// `DxgkDdiCollectDbgInfo(reason)` at PASSIVE_LEVEL from the calling thread (TDR-01's
    /// level-0 test runs it beside other DDIs); returns the text up to the first NUL. It
    /// calls the DDI directly, as a test does: 24H2 never calls it on rvgpu's adapter.
    pub fn collect_dbg_info(&self, i: usize, reason: u32) -> Result<String, SimError> {
        let a = self.adapter_shared(i)?.clone();
        let f = ddi::table_slot!(&a, DxgkDdiCollectDbgInfo)?
            .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
        let mut buf = vec![0u8; 4096];
        let mut ext = DXGKARG_COLLECTDBGINFO_EXT::default();
        let args = DXGKARG_COLLECTDBGINFO {
            Reason: reason,
            pBuffer: buf.as_mut_ptr().cast(),
            BufferSize: buf.len(),
            pExtension: &mut ext,
        };
        let ctx = a.context();
        let st = f.passive(&a, (ctx, &args))?;
        check_status(f, st)?;
        let n = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// `DxgkDdiCollectDbgInfo2(0x141, DXGK_TDR_TYPE_FORCED)` without a payload (the page
    /// allows NULL) at PASSIVE_LEVEL from the calling thread, with a zeroed `size`-byte buffer
    /// and a guard after it, for tests of the buffer contract. Returns the status and the
    /// buffer; a write past `BufferSize` is a simulation error.
    pub fn collect_dbg_info2(
        &self,
        i: usize,
        size: usize,
    ) -> Result<(NTSTATUS, Vec<u8>), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let f = ddi::table_slot!(&a, DxgkDdiCollectDbgInfo2)?
            .ok_or(SimError::DdiFailed(STATUS_NOT_SUPPORTED))?;
        const GUARD: u8 = 0xA5;
        let mut buf = vec![0u8; size + 64];
        buf[size..].fill(GUARD);
        let mut ext = DXGKARG_COLLECTDBGINFO_EXT::default();
        let mut args = DXGKARG_COLLECTDBGINFO2 {
            Reason: VIDEO_ENGINE_TIMEOUT_DETECTED,
            pBuffer: buf.as_mut_ptr().cast(),
            BufferSize: size,
            pExtension: &mut ext,
            TdrType: DXGK_TDR_TYPE_FORCED,
            TdrPayloadSize: 0,
            TdrPayload: std::ptr::null_mut(),
        };
        let ctx = a.context();
        let st = f.passive(&a, (ctx, &mut args))?;
        if buf[size..].iter().any(|b| *b != GUARD) {
            return Err(sim_err(
                &a,
                "driver bug: DxgkDdiCollectDbgInfo2 wrote past BufferSize".to_string(),
            ));
        }
        buf.truncate(size);
        Ok((st, buf))
    }

    /// Runs the TDR sequence on `node` now, as if its timeout had expired (no preemption
    /// attempt). For tests of the sequence itself.
    pub fn force_tdr(&self, i: usize, node: u32) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        let sh = shared(&a);
        let _one = lock(&sh.recovering);
        lock(&sh.os).events.push(TdrEvent::Detected {
            node,
            cause: Cause::DmaTimeout,
        });
        let r = recover_node(
            &a,
            &sh,
            node,
            None,
            &crate::dxgkrnl::interrupt::InterruptPath,
        );
        match self.fault() {
            Some(f) => Err(f),
            None => r,
        }
    }
}
