//! The kernel-mode testing capability: what a test program has on any WDDM 3.2 driver that
//! implements the kernel-mode testing interface, so that the vendor-neutral cases
//! (`cases::neutral`) never speak a device's command format.
//!
//! Everything goes through D3DKMT thunks: the driver's command buffers come from
//! `D3DKMTEscape` with `D3DDDI_DRIVERESCAPETYPE_BUILDTESTCOMMANDBUFFER` (the OS hands the
//! command to `pfnBuildTestCommandBuffer`), run through `D3DKMTSubmitCommandToHwQueue` on a
//! kernel-mode hardware queue created without private data, and are ordered and observed with
//! monitored fences (`D3DKMTSubmitWaitForSyncObjectsToHwQueue`,
//! `D3DKMTSubmitSignalSyncObjectsToHwQueue`, CPU waits).
//! Reference: <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/kernel-mode-testing-of-wddm-features>.
//!
//! Two things are still rvgpu's: buffers are made by the harness's allocation thunk, which
//! passes rvgpu's allocation private data (the overview page asks for the standard allocation
//! types `EXISTINGHEAP`/`INTERNALBACKINGSTORE`, not bound here), and a backend reaches the escape
//! through [`TestThunks`] (the simulated thunks, and gdi32's `D3DKMTEscape` and
//! `D3DKMTIsFeatureEnabled` on Windows, `kmt::windows`).

use std::sync::Arc;
use std::time::Duration;

use rvgpu_ddi::kmtest::{D3DDDI_TESTCOMMANDBUFFER, TEST_DMA_BUFFER_MAX, TEST_PRIVATE_DATA_MAX};
use rvgpu_umd::kmt::{
    Allocation, AllocationCpu, AllocationKind, HwQueue, Kmt, KmtHandle, NtStatus,
    STATUS_DEVICE_REMOVED, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE,
};

use super::caps::fences::WaitResult;
use super::common::{nth, Failure};
pub use super::kmt::sync::TestThunks;
use super::kmt::sync::{FenceWait, KmtSync, MonitoredSync};

/// A vendor-neutral test command (`D3DDDI_TESTCOMMANDBUFFER`).
#[derive(Clone, Copy, Debug)]
pub enum TestCommand {
    /// `D3DDDI_TESTCOMMANDBUFFEROP_COPY`.
    Copy { src: u64, dst: u64, bytes: u32 },
    /// `D3DDDI_TESTCOMMANDBUFFEROP_FILL`.
    Fill { dst: u64, bytes: u32, pattern: u32 },
    /// `D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_LOOP`: a hung, non-preemptible engine.
    InfiniteLoop,
    /// `D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP`.
    PreemptibleLoop,
    /// Any operation value, arguments zero (the refusal checks).
    Op(u32),
}

impl TestCommand {
    fn raw(self) -> D3DDDI_TESTCOMMANDBUFFER {
        use rvgpu_ddi::kmtest::*;
        match self {
            Self::Copy { src, dst, bytes } => D3DDDI_TESTCOMMANDBUFFER::copy(src, dst, bytes),
            Self::Fill {
                dst,
                bytes,
                pattern,
            } => D3DDDI_TESTCOMMANDBUFFER::fill(dst, bytes, pattern),
            Self::InfiniteLoop => {
                D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_LOOP)
            }
            Self::PreemptibleLoop => {
                D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP)
            }
            Self::Op(op) => D3DDDI_TESTCOMMANDBUFFER::op(op),
        }
    }
}

/// A test process (one D3D device) of the capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestProcess(pub usize);
/// A kernel-mode hardware queue of a test process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestQueue(pub usize);
/// A monitored fence of a test process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestFence(pub usize);
/// A GPU-visible buffer of a test process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestBuffer {
    /// Index in the session.
    pub index: usize,
    /// Its GPU VA in its process.
    pub gpu_va: u64,
}

/// The capability ([`super::Capability::KernelModeTesting`]).
pub trait KernelModeTesting {
    /// Whether adapter `i`'s driver offers the interface (the OS enabled the feature).
    fn interface_offered(&mut self, i: usize) -> Result<bool, Failure>;
    /// Makes sure TDR is on for adapter `i` (Windows: always).
    fn arm_tdr(&mut self, i: usize) -> Result<(), Failure>;
    /// Opens a test process (a D3D device) on adapter `i`.
    fn open(&mut self, i: usize) -> Result<TestProcess, Failure>;
    /// A context on `node` and a kernel-mode hardware queue on it, without private data.
    fn create_queue(&mut self, p: TestProcess, node: u32) -> Result<TestQueue, Failure>;
    /// `D3DKMTDestroyHwQueue`.
    fn destroy_queue(&mut self, q: TestQueue) -> Result<(), Failure>;
    /// A zeroed GPU-visible buffer of `bytes` bytes.
    fn create_buffer(&mut self, p: TestProcess, bytes: u64) -> Result<TestBuffer, Failure>;
    /// The u64 at `offset` of `b`, read by the CPU.
    fn read(&self, b: TestBuffer, offset: u64) -> Result<u64, Failure>;
    /// The driver's command buffer for `cmd` on `q` through the escape, offering a
    /// `dma_size`-byte buffer: the bytes, or `Failure::DdiFailed` with the escape's status.
    fn build(&mut self, q: TestQueue, cmd: TestCommand, dma_size: u32) -> Result<Vec<u8>, Failure>;
    /// `D3DKMTSubmitCommandToHwQueue` of `bytes` (copied to a fresh allocation); returns the
    /// progress value that marks its completion.
    fn submit(&mut self, q: TestQueue, bytes: &[u8]) -> Result<u64, Failure>;
    /// Waits up to `timeout` for the queue's submissions up to `value` to complete (a
    /// monitored fence the OS signals after them).
    fn wait(&mut self, q: TestQueue, value: u64, timeout: Duration) -> Result<WaitResult, Failure>;
    /// What the fence [`KernelModeTesting::wait`] waits on reads now (its
    /// `FenceValueCPUVirtualAddress`): `u64::MAX` once the OS put the queue's device in error.
    fn done_value(&self, q: TestQueue) -> Result<u64, Failure>;
    /// A monitored fence of `p` at 0.
    fn create_fence(&mut self, p: TestProcess) -> Result<TestFence, Failure>;
    /// Later submissions to `q` wait (on the OS's side) until `f` reaches `value`.
    fn gpu_wait(&mut self, q: TestQueue, f: TestFence, value: u64) -> Result<(), Failure>;
    /// The OS signals `f` to `value` once every earlier submission to `q` completed.
    fn gpu_signal(&mut self, q: TestQueue, f: TestFence, value: u64) -> Result<(), Failure>;
    /// A CPU wait for `f` to reach `value`, up to `timeout`.
    fn cpu_wait(
        &mut self,
        f: TestFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure>;
    /// `D3DKMTSignalSynchronizationObjectFromCpu`.
    fn cpu_signal(&mut self, f: TestFence, value: u64) -> Result<(), Failure>;
}

struct TQueue<K: KmtSync> {
    process: usize,
    context: KmtHandle,
    hw: Option<HwQueue<K::Fence>>,
    /// The fence the OS signals after each submission (what [`KernelModeTesting::wait`] waits on).
    done: MonitoredSync<K::Value>,
    next: u64,
    /// Command buffers, kept while the queue may still read them.
    cmds: Vec<Allocation<K::Mem>>,
}

/// The capability's objects, over one backend's thunks.
pub struct TestingState<K: KmtSync> {
    processes: Vec<Arc<K>>,
    queues: Vec<TQueue<K>>,
    buffers: Vec<Allocation<K::Mem>>,
    fences: Vec<(usize, MonitoredSync<K::Value>)>,
}

impl<K: KmtSync> Default for TestingState<K> {
    fn default() -> Self {
        Self {
            processes: Vec::new(),
            queues: Vec::new(),
            buffers: Vec::new(),
            fences: Vec::new(),
        }
    }
}

/// A session that has [`TestingState`]: implementing this gives it [`KernelModeTesting`].
pub trait TestingHost {
    /// The thunks' type.
    type K: KmtSync + 'static;
    /// The state.
    fn testing(&mut self) -> &mut TestingState<Self::K>;
    /// The state, shared.
    fn testing_ref(&self) -> &TestingState<Self::K>;
    /// Opens a D3D device on adapter `i` (one set of thunks).
    fn open_test_device(&mut self, i: usize) -> Result<Arc<Self::K>, Failure>;
    /// The failure a thunk status stands for (the machine's halt, if there was one).
    fn test_failure(&self, s: NtStatus) -> Failure {
        Failure::DdiFailed(s.0)
    }
    /// [`TestingHost::test_failure`] of a thunk's status as the capability reports it:
    /// VidSch's refusal of work for a device in error
    /// (`STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE`) is the device lost, as the UMD reads it
    /// (UM-10), so a case sees `STATUS_DEVICE_REMOVED` whichever thunk met the lost device.
    fn thunk_failure(&self, s: NtStatus) -> Failure {
        self.test_failure(if s == STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE {
            STATUS_DEVICE_REMOVED
        } else {
            s
        })
    }
}

fn missing() -> Failure {
    Failure::Unsupported("these thunks have no kernel-mode testing escape".into())
}

fn wait_result(w: FenceWait) -> WaitResult {
    match w {
        FenceWait::Reached => WaitResult::Satisfied,
        FenceWait::TimedOut => WaitResult::TimedOut,
        FenceWait::Abandoned => WaitResult::Abandoned,
    }
}

impl<K: KmtSync> TestingState<K> {
    fn process(&self, p: usize) -> Result<&Arc<K>, Failure> {
        nth(&self.processes, p, "test process")
    }

    fn queue(&self, q: TestQueue) -> Result<&TQueue<K>, Failure> {
        nth(&self.queues, q.0, "test queue")
    }

    fn hw(&self, q: TestQueue) -> Result<(&Arc<K>, KmtHandle), Failure> {
        let t = self.queue(q)?;
        let h =
            t.hw.as_ref()
                .ok_or_else(|| Failure::Backend(format!("test queue {} destroyed", q.0)))?
                .handle;
        Ok((self.process(t.process)?, h))
    }

    /// Queue `q`'s thunks and handle, and fence `f`'s handle (for a GPU wait or signal).
    fn hw_and_fence(
        &self,
        q: TestQueue,
        f: TestFence,
    ) -> Result<(Arc<K>, KmtHandle, KmtHandle), Failure> {
        let (k, h) = self.hw(q)?;
        Ok((k.clone(), h, self.fence(f)?.1))
    }

    fn fence(&self, f: TestFence) -> Result<(&Arc<K>, KmtHandle), Failure> {
        let (p, m) = nth(&self.fences, f.0, "test fence")?;
        Ok((self.process(*p)?, m.handle))
    }
}

impl<T: TestingHost> KernelModeTesting for T {
    fn interface_offered(&mut self, i: usize) -> Result<bool, Failure> {
        let k = self.open_test_device(i)?;
        let t = k.testing().ok_or_else(missing)?;
        t.kernel_mode_testing_enabled()
            .map_err(|s| self.thunk_failure(s))
    }

    fn arm_tdr(&mut self, i: usize) -> Result<(), Failure> {
        let k = self.open_test_device(i)?;
        let t = k.testing().ok_or_else(missing)?;
        t.arm_tdr().map_err(|s| self.thunk_failure(s))
    }

    fn open(&mut self, i: usize) -> Result<TestProcess, Failure> {
        let k = self.open_test_device(i)?;
        let st = self.testing();
        st.processes.push(k);
        Ok(TestProcess(st.processes.len() - 1))
    }

    fn create_queue(&mut self, p: TestProcess, node: u32) -> Result<TestQueue, Failure> {
        let k = self.testing_ref().process(p.0)?.clone();
        // The interface's queues are hardware queues, which exist only on a node the GPU
        // schedules (`HwSchMode`, one setting for the machine's boot).
        if !k
            .node_hw_scheduled(node)
            .map_err(|s| self.thunk_failure(s))?
        {
            return Err(Failure::Unsupported(format!(
                "node {node} is scheduled by the OS: the kernel-mode testing interface's \
                 queues are hardware queues, which need hardware-accelerated GPU scheduling \
                 on (HwSchMode = 2)"
            )));
        }
        let r = (|| {
            let context = k.create_context(node)?;
            // No private data: the interface's drivers must take a queue without it.
            let hw = k.create_hw_queue(context, false, &mut [])?;
            let done = k.create_monitored_fence(0)?;
            Ok::<_, NtStatus>((context, hw, done))
        })();
        let (context, hw, done) = r.map_err(|s| self.thunk_failure(s))?;
        let st = self.testing();
        st.queues.push(TQueue {
            process: p.0,
            context,
            hw: Some(hw),
            done,
            next: 1,
            cmds: Vec::new(),
        });
        Ok(TestQueue(st.queues.len() - 1))
    }

    fn destroy_queue(&mut self, q: TestQueue) -> Result<(), Failure> {
        let (k, h) = self.testing_ref().hw(q)?;
        let k = k.clone();
        let context = self.testing_ref().queue(q)?.context;
        k.destroy_hw_queue(h).map_err(|s| self.thunk_failure(s))?;
        k.destroy_context(context)
            .map_err(|s| self.thunk_failure(s))?;
        if let Some(t) = self.testing().queues.get_mut(q.0) {
            t.hw = None;
        }
        Ok(())
    }

    fn create_buffer(&mut self, p: TestProcess, bytes: u64) -> Result<TestBuffer, Failure> {
        let k = self.testing_ref().process(p.0)?.clone();
        let a = k
            .create_allocation(bytes)
            .map_err(|s| self.thunk_failure(s))?;
        let gpu_va = a.gpu_va;
        let st = self.testing();
        st.buffers.push(a);
        Ok(TestBuffer {
            index: st.buffers.len() - 1,
            gpu_va,
        })
    }

    fn read(&self, b: TestBuffer, offset: u64) -> Result<u64, Failure> {
        let a = nth(&self.testing_ref().buffers, b.index, "test buffer")?;
        Ok(a.mem.load(offset))
    }

    fn build(&mut self, q: TestQueue, cmd: TestCommand, dma_size: u32) -> Result<Vec<u8>, Failure> {
        let (k, h) = self.testing_ref().hw(q)?;
        let k = k.clone();
        let t = k.testing().ok_or_else(missing)?;
        let mut dma = vec![0u8; dma_size as usize];
        let mut private = vec![0u8; TEST_PRIVATE_DATA_MAX as usize];
        let mut data =
            rvgpu_simos::dxgkrnl::kmtest::escape_data(h, true, cmd.raw(), &mut dma, &mut private);
        t.escape_build_test_command_buffer(&mut data, &mut dma, &mut private)
            .map_err(|s| self.thunk_failure(s))?;
        let (n, _) = rvgpu_simos::dxgkrnl::kmtest::escape_sizes(&data)
            .ok_or_else(|| Failure::Backend("escape data too short".into()))?;
        if n > dma_size.min(TEST_DMA_BUFFER_MAX) {
            return Err(Failure::Backend(format!("escape wrote back {n} bytes")));
        }
        dma.truncate(n as usize);
        Ok(dma)
    }

    fn submit(&mut self, q: TestQueue, bytes: &[u8]) -> Result<u64, Failure> {
        let (k, h) = self.testing_ref().hw(q)?;
        let k = k.clone();
        let done = self.testing_ref().queue(q)?.done.handle;
        let value = self.testing_ref().queue(q)?.next;
        let size = (bytes.len() as u64).max(8).next_multiple_of(4096);
        let c = k
            .create_allocation_as(size, AllocationKind::Commands)
            .map_err(|s| self.thunk_failure(s))?;
        for (i, w) in bytes.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..w.len()].copy_from_slice(w);
            c.mem.store(i as u64 * 8, u64::from_le_bytes(word));
        }
        let len = u32::try_from(bytes.len())
            .map_err(|_| Failure::Backend("command buffer too big".into()))?;
        k.submit_command_to_hw_queue(h, value, c.gpu_va, len)
            .map_err(|s| self.thunk_failure(s))?;
        k.submit_signal_to_hw_queue(h, &[(done, value)])
            .map_err(|s| self.thunk_failure(s))?;
        if let Some(t) = self.testing().queues.get_mut(q.0) {
            t.cmds.push(c);
            t.next = value + 1;
        }
        Ok(value)
    }

    fn wait(&mut self, q: TestQueue, value: u64, timeout: Duration) -> Result<WaitResult, Failure> {
        let t = self.testing_ref().queue(q)?;
        let k = self.testing_ref().process(t.process)?.clone();
        let done = t.done.handle;
        k.wait_timeout(done, value, timeout)
            .map(wait_result)
            .map_err(|s| self.thunk_failure(s))
    }

    fn done_value(&self, q: TestQueue) -> Result<u64, Failure> {
        use rvgpu_umd::kmt::FenceCpu;
        Ok(self.testing_ref().queue(q)?.done.value.value())
    }

    fn create_fence(&mut self, p: TestProcess) -> Result<TestFence, Failure> {
        let k = self.testing_ref().process(p.0)?.clone();
        let f = k
            .create_monitored_fence(0)
            .map_err(|s| self.thunk_failure(s))?;
        let st = self.testing();
        st.fences.push((p.0, f));
        Ok(TestFence(st.fences.len() - 1))
    }

    fn gpu_wait(&mut self, q: TestQueue, f: TestFence, value: u64) -> Result<(), Failure> {
        let (k, h, fh) = self.testing_ref().hw_and_fence(q, f)?;
        k.submit_wait_to_hw_queue(h, &[(fh, value)])
            .map_err(|s| self.thunk_failure(s))
    }

    fn gpu_signal(&mut self, q: TestQueue, f: TestFence, value: u64) -> Result<(), Failure> {
        let (k, h, fh) = self.testing_ref().hw_and_fence(q, f)?;
        k.submit_signal_to_hw_queue(h, &[(fh, value)])
            .map_err(|s| self.thunk_failure(s))
    }

    fn cpu_wait(
        &mut self,
        f: TestFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitResult, Failure> {
        let (k, fh) = self.testing_ref().fence(f)?;
        let k = k.clone();
        k.wait_timeout(fh, value, timeout)
            .map(wait_result)
            .map_err(|s| self.thunk_failure(s))
    }

    fn cpu_signal(&mut self, f: TestFence, value: u64) -> Result<(), Failure> {
        let (k, fh) = self.testing_ref().fence(f)?;
        let k = k.clone();
        k.signal_from_cpu(fh, value)
            .map_err(|s| self.thunk_failure(s))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rvgpu_umd::kmt::{
        NtStatus, STATUS_DEVICE_REMOVED, STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE,
    };

    use super::{KernelModeTesting, TestCommand, TestingHost, TestingState};
    use crate::backend::kmt::sim::SimPlatform;
    use crate::backend::kmt::KmtBackend;
    use crate::backend::sim::thunks::SessKmt;
    use crate::backend::sim::SimBackend;
    use crate::backend::{Backend, ExecMode, Failure, SessionConfig, WaitResult};

    /// A host whose thunk statuses are what is looked at (it opens no device).
    #[derive(Default)]
    struct Statuses(TestingState<SessKmt>);

    impl TestingHost for Statuses {
        type K = SessKmt;
        fn testing(&mut self) -> &mut TestingState<SessKmt> {
            &mut self.0
        }
        fn testing_ref(&self) -> &TestingState<SessKmt> {
            &self.0
        }
        fn open_test_device(&mut self, _: usize) -> Result<Arc<SessKmt>, Failure> {
            Err(Failure::Unsupported("no device".into()))
        }
    }

    /// UM-10: VidSch's refusal of a test queue's submission for its device in error
    /// (`STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE`, what `D3DKMTSubmitCommandToHwQueue` answers
    /// after the device error) is reported as the device lost, `STATUS_DEVICE_REMOVED`, as the
    /// UMD reads it; any other status goes through as it is.
    #[test]
    fn um_10_a_test_queue_refused_for_the_device_in_error_is_the_device_lost() {
        let h = Statuses::default();
        assert_eq!(
            h.thunk_failure(STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE),
            Failure::DdiFailed(STATUS_DEVICE_REMOVED.0)
        );
        let other = NtStatus(rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER);
        assert_eq!(h.thunk_failure(other), Failure::DdiFailed(other.0));
    }

    const LONG: Duration = Duration::from_secs(10);

    /// A FILL of eight bytes of `pattern` at `dst`, built for `q`.
    fn fill(k: &mut dyn KernelModeTesting, q: super::TestQueue, dst: u64) -> Vec<u8> {
        let cmd = TestCommand::Fill {
            dst,
            bytes: 8,
            pattern: 7,
        };
        k.build(q, cmd, 4096).expect("a FILL built")
    }

    /// UM-10, through the capability: once the OS put a test queue's device in error after
    /// its infinite loop was reset, the queue's next submission reports the device lost,
    /// `STATUS_DEVICE_REMOVED`, while the other process's queue submits on (the adapter is not
    /// removed). The capability copies each submission to a new command allocation, which
    /// 24H2 makes for a device in error (its DXGDEVICE stays active); VidSch's own refusal of
    /// the submission is what reports the loss (the mapping above). On the simulated machine
    /// in process and on the D3DKMT backend's.
    #[test]
    fn um_10_a_test_queue_of_the_device_in_error_submits_no_more_end_to_end() {
        let kmt = KmtBackend::new(SimPlatform);
        for b in [&SimBackend as &dyn Backend, &kmt] {
            let name = b.name();
            let mut s = b
                .open(&SessionConfig::new(ExecMode::Threaded))
                .expect("session");
            s.load_driver().expect("driver");
            s.start_adapter(0).expect("adapter");
            let k = s.kmtest().expect("kernel-mode testing");
            k.arm_tdr(0).expect("TDR armed");
            let (gp, ip) = (k.open(0).expect("guilty"), k.open(0).expect("other"));
            let (gq, iq) = (
                k.create_queue(gp, 0).unwrap(),
                k.create_queue(ip, 0).unwrap(),
            );
            let (gt, it) = (
                k.create_buffer(gp, 4096).unwrap(),
                k.create_buffer(ip, 4096).unwrap(),
            );
            // Built before the hang: the build escape is not what is refused.
            let late = fill(k, gq, gt.gpu_va);
            let hang = k.build(gq, TestCommand::InfiniteLoop, 4096).unwrap();
            let hv = k.submit(gq, &hang).expect("the infinite loop");
            // The device in error: its monitored fences at u64::MAX, their waits released.
            assert_eq!(k.wait(gq, hv, LONG), Ok(WaitResult::Satisfied), "{name}");
            assert_eq!(k.done_value(gq), Ok(u64::MAX), "{name}");
            assert_eq!(
                k.submit(gq, &late),
                Err(Failure::DdiFailed(STATUS_DEVICE_REMOVED.0)),
                "{name}: the guilty queue's submission"
            );
            let other = fill(k, iq, it.gpu_va);
            let v = k.submit(iq, &other).expect("the other process submits");
            assert_eq!(k.wait(iq, v, LONG), Ok(WaitResult::Satisfied), "{name}");
        }
    }
}
