//! A program's own mapping of its native fences ([`AppMappings`]): what
//! `D3DKMTCreateNativeFence` answered and the value read through the CPU VA.

use rvgpu_umd::kmt::{FenceCpu, Kmt};

use crate::backend::app::AppMappings;
use crate::backend::caps::OwnFenceMapping;
use crate::backend::kmt::state::KmtFence;
use crate::backend::kmt::{KmtSession, KmtSync};
use crate::backend::Failure;

/// A program reads its own native fence's mapping from `D3DKMTCreateNativeFence`'s answer and
/// its value through the CPU VA, as the UMD does (`Kmt::native_fence_cpu`).
impl<K: KmtSync + Send + Sync + 'static> AppMappings for KmtSession<K> {
    fn fence_own_mapping(&self, p: usize, f: &KmtFence) -> Result<OwnFenceMapping, Failure> {
        let KmtFence::Here(n) = f else {
            return Err(Failure::Unsupported(
                "the mapping of a fence another process holds".into(),
            ));
        };
        let value = self
            .kmt_of(p)?
            .native_fence_cpu(n)
            .map_err(|s| self.status(s))?
            .value();
        Ok(OwnFenceMapping {
            current_cpu: n.current_value_cpu as u64,
            current_gpu: n.gpu.current.get(),
            monitored_gpu: n.gpu.monitored.get(),
            value,
        })
    }
}
