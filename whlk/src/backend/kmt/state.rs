//! What a D3DKMT session holds of its objects apart from the operations on them (`umd`,
//! `hooks`), so that the session (`kmt`) and those operations import it rather than each
//! other.

use std::sync::Arc;

use rvgpu_umd::fence::NativeFence;
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::usage::Buffer;

use super::kmd_calls::LocalContext;
use crate::backend::app::{AppObjects, Waiter};
use crate::backend::Failure;

/// The session's objects of the seam, over thunks `K`.
pub(super) type KmtObjects<K> =
    AppObjects<Buffer<<K as Kmt>::Mem>, <K as Kmt>::Mem, KmtFence, Waiter>;

/// A native fence of the seam on the D3DKMT backend: this program's, or one that another
/// process opened, known there by its number.
pub(crate) enum KmtFence {
    Here(NativeFence),
    There(usize),
}

impl KmtFence {
    /// This program's fence: a GPU operation of this program's queues needs one.
    pub(super) fn here(&self) -> Result<&NativeFence, Failure> {
        match self {
            Self::Here(f) => Ok(f),
            Self::There(_) => Err(Failure::Unsupported(
                "a GPU operation of this program on another process's fence (only its CPU \
                 signals, waits and shares are forwarded)"
                    .into(),
            )),
        }
    }
}

/// A DMA context of a case's process.
pub(super) struct DmaCtx<K: Kmt> {
    pub(super) adapter: usize,
    /// This program's context: its thunks, handle and command buffers.
    pub(super) local: Option<(Arc<K>, LocalContext<K>)>,
    /// Another process's: the process.
    pub(super) remote: Option<usize>,
}

/// The DMA contexts and the test-hook devices of a session.
pub(super) struct HooksState<K: Kmt> {
    pub(super) contexts: Vec<DmaCtx<K>>,
    /// Per adapter, the device this program sends the test-hook escapes on.
    pub(super) devices: Vec<Option<Arc<K>>>,
}

impl<K: Kmt> Default for HooksState<K> {
    fn default() -> Self {
        Self {
            contexts: Vec::new(),
            devices: Vec::new(),
        }
    }
}
