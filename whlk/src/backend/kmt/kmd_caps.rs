//! [`KmdCaps`] on the D3DKMT backend: what the KMD reports to the OS about the adapter (its
//! `DXGK_DRIVERCAPS`, node metadata and `DXGK_USERMODESUBMISSION_CAPS`), which no thunk passes
//! on to a program, read through the KMD's test hooks (`TestHookOp::DriverCaps`, a
//! driver-private `D3DKMTEscape`) as the KMD answers the OS. The hooks off, the KMD answers as
//! to an unknown escape.

use rvgpu_hw::pdd::PDD_MAGIC;
use rvgpu_hw::testhooks::{
    TestHookOp, CAPS_MULTI_ENGINE_AWARE, CAPS_NATIVE_GPU_FENCE, CAPS_NO_64BIT_ATOMICS,
    CAPS_PER_ENGINE_TDR, TEST_HOOK_ESCAPE_VERSION,
};
use rvgpu_umd::kmt::NtStatus;

use super::sync::TestThunks;
use super::{KmtSession, KmtSync};
use crate::backend::{DriverCaps, Failure, KmdCaps, SubmissionCaps};

/// Bytes of the escape's header and of `rvgpu_hw::testhooks::KmdCapsReport`.
const HEADER: usize = 32;
const REPORT: usize = 32;

/// The report's eight little-endian words, through `t`.
fn report(t: &dyn TestThunks) -> Result<[u32; 8], NtStatus> {
    let mut buf = [0u8; HEADER + REPORT];
    for (at, v) in [
        (0, PDD_MAGIC),
        (4, TEST_HOOK_ESCAPE_VERSION),
        (8, TestHookOp::DriverCaps as u32),
    ] {
        if let Some(dst) = buf.get_mut(at..at + 4) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }
    t.escape_driver_private(&mut buf)?;
    let mut words = [0u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        let at = HEADER + 4 * i;
        *w = buf
            .get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, u32::from_le_bytes);
    }
    Ok(words)
}

/// `KmdCapsReport` as the harness's caps.
fn driver_caps(w: &[u32; 8]) -> DriverCaps {
    let [flags, nodes, interrupt_message_number, paging_node, ..] = *w;
    DriverCaps {
        multi_engine_aware: flags & CAPS_MULTI_ENGINE_AWARE != 0,
        native_gpu_fence: flags & CAPS_NATIVE_GPU_FENCE != 0,
        no_64bit_atomics: flags & CAPS_NO_64BIT_ATOMICS != 0,
        nodes,
        per_engine_tdr: flags & CAPS_PER_ENGINE_TDR != 0,
        interrupt_message_number,
        paging_node,
    }
}

/// Through the test hooks' device of the adapter.
impl<K: KmtSync + Send + Sync + 'static> KmdCaps for KmtSession<K> {
    fn driver_caps(&mut self, i: usize) -> Result<DriverCaps, Failure> {
        self.on_hooks_device(i, report).map(|w| driver_caps(&w))
    }

    fn submission_caps(&mut self, i: usize) -> Result<SubmissionCaps, Failure> {
        let w = self.on_hooks_device(i, report)?;
        let [_, nodes, _, _, user_mode_nodes, doorbell_size, ..] = w;
        Ok(SubmissionCaps {
            user_mode_nodes: (0..nodes.min(32))
                .map(|n| user_mode_nodes & (1 << n) != 0)
                .collect(),
            doorbell_size: (doorbell_size != 0).then_some(doorbell_size),
        })
    }
}
