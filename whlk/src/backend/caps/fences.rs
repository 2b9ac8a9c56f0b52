//! The [`Fences`] capability: native fences (NF-*) on one adapter, CPU waits and signals, and
//! the GPU queues that signal and wait on them.

use std::time::Duration;

use crate::backend::common::Failure;

/// A native fence to create ([`Fences::create_native_fence`]): on adapter `adapter` for
/// `process`, starting at `initial`, and whether other processes may open it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewFence {
    pub adapter: usize,
    pub process: u32,
    pub initial: u64,
    pub shareable: bool,
}

impl NewFence {
    /// `process`'s fence on adapter `adapter`, starting at 0, private to the process.
    pub const fn new(adapter: usize, process: u32) -> Self {
        Self {
            adapter,
            process,
            initial: 0,
            shareable: false,
        }
    }

    /// The same fence, shareable with other processes.
    pub const fn shareable(self) -> Self {
        Self {
            shareable: true,
            ..self
        }
    }
}

/// A native-fence instance a session handed out (one process's handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FenceRef(pub usize);

/// A GPU queue a session set up for fence work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueueRef(pub usize);

/// A pending CPU wait in event form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventRef(pub usize);

/// How a CPU wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// The value was reached.
    Satisfied,
    /// Timed out (step mode: the machine went idle without reaching it).
    TimedOut,
    /// The fence was destroyed while waiting.
    Abandoned,
}

/// Native fences (NF-*) on one adapter, with CPU waits and signals, and GPU queues that signal
/// and wait on them. A Windows backend has these through D3DKMT and the UMD (its GPU queues
/// would be the UMD's queues).
pub trait Fences {
    /// Creates the native fence `new` describes.
    fn create_native_fence(&mut self, new: NewFence) -> Result<FenceRef, Failure>;

    /// Opens `f` for another process on the same adapter.
    fn open_native_fence(&mut self, f: FenceRef, process: u32) -> Result<FenceRef, Failure>;

    /// The process destroys its instance.
    fn destroy_native_fence(&mut self, f: FenceRef) -> Result<(), Failure>;

    /// Registers a CPU wait in event form.
    fn cpu_wait_event(&mut self, f: FenceRef, value: u64) -> Result<EventRef, Failure>;

    /// The event's outcome, if signalled, waiting up to `timeout`.
    fn event_result(&self, e: EventRef, timeout: Duration) -> Option<WaitResult>;

    /// A blocking CPU wait.
    fn cpu_wait(
        &mut self,
        f: FenceRef,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure>;

    /// A CPU signal.
    fn cpu_signal(&mut self, f: FenceRef, value: u64) -> Result<(), Failure>;

    /// A GPU queue on engine `engine` of adapter `i` in `process` (the fences it names must
    /// be open in that process).
    fn gpu_queue(&mut self, i: usize, engine: u32, process: u32) -> Result<QueueRef, Failure>;

    /// Appends a native FENCE_SIGNAL (conditional interrupt) to the queue.
    fn gpu_signal(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure>;

    /// Appends a FENCE_WAIT to the queue.
    fn gpu_wait(&mut self, q: QueueRef, f: FenceRef, value: u64) -> Result<(), Failure>;

    /// Submits what was appended.
    fn gpu_submit(&mut self, q: QueueRef) -> Result<(), Failure>;

    /// Whether the GPU consumed everything submitted to the queue.
    fn gpu_queue_drained(&self, q: QueueRef) -> bool;

    /// The program's own mapping of its fence `f`, where the backend is that program.
    fn own_mapping(&self, f: FenceRef) -> Result<OwnFenceMapping, Failure> {
        let _ = f;
        Err(Failure::Unsupported(
            "the fence's mapping in this program (a D3DKMT program's own)".into(),
        ))
    }
}

/// A native fence as its program maps it (`D3DDDI_NATIVEFENCEMAPPING` in its own process):
/// [`Fences::own_mapping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnFenceMapping {
    /// CurrentValue's read-only CPU VA.
    pub current_cpu: u64,
    /// CurrentValue's GPU VA.
    pub current_gpu: u64,
    /// MonitoredValue's GPU VA.
    pub monitored_gpu: u64,
    /// CurrentValue as read through the CPU VA.
    pub value: u64,
}
