//! What a DLL session keeps besides its processes, queues and buffers: its fences and the CPU
//! waits on them, and its DMA contexts. The operations are the capability files' (`dll_fences`,
//! `dll_dma`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::fences::FenceQueueState;
use crate::backend::WaitResult;

pub(super) struct DFence {
    pub(super) process: usize,
    /// `RvgpuFence*`.
    pub(super) handle: u64,
    /// The D3DKMT handle the DLL got for it (how the OS names this process's instance), if
    /// one appeared.
    pub(super) kmt: Option<u32>,
    pub(super) destroyed: bool,
}

#[derive(Clone, Copy)]
pub(super) enum Pending {
    Signal(usize, u64),
    Wait(usize, u64),
}

pub(super) struct DEvent {
    pub(super) outcome: Arc<(Mutex<Option<WaitResult>>, Condvar)>,
    pub(super) thread: Option<JoinHandle<()>>,
    /// Step mode: the wait `rvgpu_fence_wait_async` registered instead of a thread:
    /// (process, its Win32 event, `RvgpuFence*`, value).
    pub(super) registered: Option<(usize, u64, u64, u64)>,
}

/// The fence state of a session.
#[derive(Default)]
pub(super) struct FenceState {
    pub(super) queues: FenceQueueState<Pending>,
    pub(super) fences: Vec<DFence>,
    pub(super) events: Vec<DEvent>,
    pub(super) stop: Arc<AtomicBool>,
}

impl FenceState {
    /// Stops and joins the event threads (the session ends).
    pub(super) fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for e in &mut self.events {
            if let Some(t) = e.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// The live fence handles of process `p`, now to be destroyed with it.
    pub(super) fn take_live_of(&mut self, p: usize) -> Vec<u64> {
        self.fences
            .iter_mut()
            .filter(|f| f.process == p && !f.destroyed)
            .map(|f| {
                f.destroyed = true;
                f.handle
            })
            .collect()
    }
}

/// A context the harness made: its process, `RvgpuContext*` (`None` once destroyed) and node.
#[derive(Debug)]
pub(super) struct DContext {
    pub(super) process: usize,
    pub(super) handle: Option<u64>,
    pub(super) node: u32,
}
