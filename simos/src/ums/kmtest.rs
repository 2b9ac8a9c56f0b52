//! The objects the kernel-mode testing escape names ([`crate::dxgkrnl::kmtest`]): a context or
//! hardware queue of the calling process, by D3DKMT handle.

use crate::ob::KmtHandle;
use crate::sync::fence::ProcessId;

use crate::state::ums::UmsOs;

/// What a D3DKMT handle names for the escape, with the KMD's handle of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TestTarget {
    /// A context (`DxgkDdiCreateContext`'s `hContext` out).
    Context { kmd: usize },
    /// A hardware queue (`DxgkDdiCreateHwQueue`'s `hHwQueue` out).
    Queue { kmd: usize },
}

impl UmsOs {
    /// The context or hardware queue `h` of process `pid`: D3DKMT handles are per process, so
    /// another process's object is not found.
    pub(crate) fn test_target(&self, pid: ProcessId, h: KmtHandle) -> Option<TestTarget> {
        let owned = |device: &KmtHandle| self.devices.get(device).is_some_and(|d| d.process == pid);
        if let Some(c) = self.contexts.get(&h) {
            return owned(&c.device).then_some(TestTarget::Context { kmd: c.kmd });
        }
        let q = self.queues.get(&h)?;
        owned(&q.device).then_some(TestTarget::Queue { kmd: q.kmd() })
    }
}
