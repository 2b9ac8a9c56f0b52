//! The [`HeldRecovery`] capability: the OS's recovery held open (simulation only).

use crate::backend::common::Failure;

use super::user_mode::{ProcessRef, UmQueueRef};

/// The OS's recovery of a hang held open at a point of the harness's choosing, so that
/// something else happens meanwhile. Simulation only: a pause hook of the simulated OS; no
/// D3DKMT call pauses Windows' recovery, and the KMD's test hooks fail a reset or hang a paging
/// buffer but hold none open.
pub trait HeldRecovery {
    /// Submits a HANG on user-mode queue `hang` of process `p` and kills `p` while adapter
    /// `i`'s recovery of it is under way: the OS pauses after its snapshot, before the
    /// driver's engine reset, and another thread kills `p` (in place of
    /// [`super::UserModeSubmission::end_process`]). Returns once the kill has ended: whether it
    /// ended while the recovery was still paused.
    fn kill_during_recovery(
        &mut self,
        i: usize,
        p: ProcessRef,
        hang: UmQueueRef,
    ) -> Result<bool, Failure>;
}
