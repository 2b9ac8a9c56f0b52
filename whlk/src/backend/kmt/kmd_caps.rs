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
use crate::backend::{DeviceSettings, DriverCaps, Failure, KmdCaps, SessionConfig, SubmissionCaps};

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

impl<K: KmtSync + Send + Sync + 'static> KmtSession<K> {
    /// Adapter `i`'s device as the KMD reports it: its engines, physical doorbells and global
    /// doorbell mode (`KmdCapsReport`'s `nodes`, `doorbells` and `device_caps`), which no
    /// thunk reports. Without the test hooks the KMD answers nothing: unsupported, naming them.
    pub(super) fn device_settings(&mut self, i: usize) -> Result<DeviceSettings, Failure> {
        let w = self.on_hooks_device(i, report).map_err(|e| match e {
            Failure::DdiFailed(s) => Failure::Unsupported(format!(
                "the device's configuration, which the KMD reports through its test hooks \
                 (TestHooks = 1; the escape answered {:#010x})",
                s as u32
            )),
            other => other,
        })?;
        let [_, engines, _, _, _, _, doorbells, device_caps] = w;
        Ok(DeviceSettings {
            doorbells,
            global_doorbell: rvgpu_hw::regs::Caps::from_bits_retain(device_caps)
                .contains(rvgpu_hw::regs::Caps::GLOBAL_DOORBELL),
            engines,
        })
    }

    /// `Unsupported` naming the `rvgpu-vfu` options where adapter `i`'s device is not the
    /// one `config` asks for (a test machine's device is what its server was started as).
    pub(super) fn check_device(&mut self, config: &SessionConfig, i: usize) -> Result<(), Failure> {
        let d = self.device_settings(i)?;
        config
            .device_mismatch(&d)
            .map_or(Ok(()), |why| Err(Failure::Unsupported(why)))
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
