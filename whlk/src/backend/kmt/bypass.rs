//! [`UmdBypass`] on the D3DKMT backend: a thunk call past the UMD's submission core with the
//! process's own handles, as any program on Windows can make it. Only the kernel path on a
//! user-mode queue is offered; whether a ring's memory outlives its handles no thunk shows.

use rvgpu_umd::kmt::{AllocationCpu, AllocationKind, Kmt, NtStatus};

use super::{KmtSession, KmtSync};
use crate::backend::umd_queue::UmdQueue;
use crate::backend::{Failure, UmQueueRef, UmdBypass, Work};

/// Bytes of the command buffer the refused submission names.
const COMMAND_BYTES: u64 = 4096;

impl<K: KmtSync + Send + Sync + 'static> UmdBypass for KmtSession<K> {
    /// `D3DKMTSubmitCommandToHwQueue` on the user-mode queue's own hardware queue, with the
    /// next progress value and `work` in a command buffer of the process.
    fn kernel_submit_on_user_queue(
        &mut self,
        q: UmQueueRef,
        work: &[Work],
    ) -> Result<i32, Failure> {
        let cmds = self.encode(work)?;
        let UmdQueue::User(u) = self.live_queue(q)? else {
            return Err(Failure::Backend(format!(
                "queue {} is not a user-mode queue",
                q.0
            )));
        };
        let k = u.kmt().clone();
        let (queue, value) = (u.hw_queue(), u.last_submitted().saturating_add(1));
        let cb = k
            .create_allocation_as(COMMAND_BYTES, AllocationKind::Commands)
            .map_err(|s| self.status(s))?;
        let mut off = 0u64;
        for c in &cmds {
            let mut w = [0u64; 8];
            let n = c
                .encode(&mut w)
                .ok_or_else(|| Failure::Backend(format!("cannot encode {c:?}")))?;
            for word in w.iter().take(n) {
                if off >= COMMAND_BYTES {
                    return Err(Failure::Backend("the work overflows a 4 KiB buffer".into()));
                }
                cb.mem.store(off, *word);
                off += 8;
            }
        }
        let bytes = u32::try_from(off).unwrap_or(u32::MAX);
        let status = match k.submit_command_to_hw_queue(queue, value, cb.gpu_va, bytes) {
            Ok(()) => 0,
            Err(NtStatus(s)) => s,
        };
        // Refused, nothing references the buffer; accepted (a failure of the case), VidMm
        // keeps it until the work is done.
        let _ = k.destroy_allocation(cb.handle);
        Ok(status)
    }

    fn release_ring_handles(&mut self, q: UmQueueRef) -> Result<(), Failure> {
        let _ = q;
        Err(no_ring_residency())
    }

    fn ring_resident(&self, q: UmQueueRef) -> Result<bool, Failure> {
        let _ = q;
        Err(no_ring_residency())
    }
}

/// Why UM-07 has no Windows form.
fn no_ring_residency() -> Failure {
    Failure::Unsupported(
        "UM-07's ring kept for its doorbell: no D3DKMT call tells whether the memory behind \
         destroyed allocation handles is still allocated (the OS's references are its own), \
         and the UMD's queue owns its ring handles until it closes"
            .into(),
    )
}
