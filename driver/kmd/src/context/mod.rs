//! D3D devices and contexts (`DxgkDdiCreateDevice` … `DxgkDdiResumeContext`).
//!
//! A device is a process's D3D device; a context runs on one engine (`NodeOrdinal`) and owns
//! hardware queues (docs/usermode-submission.md, "Objects"). The driver keeps only what the
//! scheduler needs: which device a context belongs to, its engine, and whether it is
//! suspended. Suspending a context takes its queues off the engine's runlist (UM-11, UM-14,
//! UM-18): when `RUNLIST_COMMIT` returns, nothing of theirs executes any more. Doorbells stay
//! connected and rings stay written; resuming puts the queues back and the CMP loads their
//! write pointers, picking up what was written meanwhile (UM-12).
//!
//! Destruction follows Dxgkrnl's order (doorbells, queues, contexts, device): destroying an
//! object that still has children is refused with `STATUS_INVALID_DEVICE_STATE` rather than
//! leaving children that point at nothing.
//!
//! This module is the state (what a device and a context are); [`ddi`] holds the DDIs that
//! create, suspend, resume and destroy them.

use crate::handle::Handle;

pub mod ddi;

/// A D3D device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Device {
    /// Dxgkrnl's handle of the device.
    pub os_handle: usize,
    /// The system (paging) device.
    pub system: bool,
    /// Put in error by the KMD after one of its hardware queues hung an engine
    /// (`DxgkDdiResetEngine`, UM-10): none of its queues is in a runlist any more.
    pub in_error: bool,
    /// The GPU process (`DXGKARG_CREATEDEVICE::hKmdProcess`), if the OS named one.
    pub process: Option<Handle>,
    /// `process` is a GPU process other than the system one (known at creation): its DMA
    /// buffers run under its contexts' roots ([`crate::sched::buffer_root`]).
    pub user_process: bool,
}

/// A GPU context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    /// The owning device.
    pub device: Handle,
    /// Engine (node ordinal) its queues run on.
    pub engine: u32,
    /// Suspended contexts' queues are not in the runlist.
    pub suspended: bool,
    /// The input value of `DXGKARG_CREATECONTEXT::hContext` (0 if the OS passed none, as for
    /// a system context): Dxgkrnl's context handle (24H2 `K:DXGCONTEXT::Initialize`
    /// @0x1402CFD80), what `DxgkCbInvalidateHwContext` names (`crate::reset`).
    pub os_handle: usize,
    /// Device physical address of the root page table VidMm set for the context
    /// (`DxgkDdiSetRootPageTable`); 0 until then, when the root learnt for its process applies
    /// ([`crate::sched::Sched::root_of`]; none: the identity space, hardware.md §12.2).
    pub root: u64,
    /// Scheduling priority from `DxgkDdiSetContextSchedulingProperties` (hardware
    /// scheduling, [`crate::hws`]); normal band until the OS sets it.
    pub priority: crate::hws::ContextPriority,
}

/// DMA buffer size reported for the legacy (non-HW-queue) submission path. Contexts of this
/// driver submit through hardware queues; the value only has to be a sane page multiple.
pub const LEGACY_DMA_BUFFER_SIZE: u32 = 64 * 1024;

/// Most devices one adapter keeps (bounds the tables an untrusted caller can grow).
pub const MAX_DEVICES: usize = 4096;
/// Most contexts one adapter keeps.
pub const MAX_CONTEXTS: usize = 16_384;

/// Devices for host unit tests (here and in the modules that schedule their contexts).
#[cfg(test)]
pub(crate) mod fixtures {
    use super::Device;
    use crate::handle::Handle;

    /// A device of `process` (a user process when there is one) without an OS handle.
    pub fn device(process: Option<Handle>) -> Device {
        Device {
            os_handle: 0,
            system: false,
            in_error: false,
            process,
            user_process: process.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::fixtures::h;
    use crate::handle::Kind;
    use crate::hwqueue::{HwQueue, Ring};
    use crate::process::Process;
    use crate::sched::Sched;

    /// One device (of process 1 when `process`), one context on engine 0, one queue with a
    /// ring.
    fn state(system_process: bool) -> Sched {
        let mut s = Sched::new(1, false, alloc::vec::Vec::new());
        s.processes.insert(
            h(Kind::Process, 1),
            Process {
                os_handle: 0x10,
                system: system_process,
                id: 1,
                root: 0,
            },
        );
        s.devices.insert(
            h(Kind::Device, 2),
            Device {
                os_handle: 0x20,
                system: false,
                in_error: false,
                process: Some(h(Kind::Process, 1)),
                user_process: !system_process,
            },
        );
        s.contexts.insert(
            h(Kind::Context, 3),
            Context {
                device: h(Kind::Device, 2),
                engine: 0,
                suspended: false,
                os_handle: 0x30,
                root: 0,
                priority: crate::hws::ContextPriority::DEFAULT,
            },
        );
        s.queues.insert(
            h(Kind::Queue, 4),
            HwQueue {
                os_handle: 0x40,
                context: h(Kind::Context, 3),
                engine: 0,
                id: 5,
                priority: 0,
                user_mode: false,
                progress_gpu: rvgpu_hw::addr::GpuVa::new(0x9000),
                progress_cpu: crate::dma::OsWord::NONE,
                last_submitted: 0,
                native_progress: false,
                ring: Some(Ring {
                    base: rvgpu_hw::addr::GpuVa::new(0x10_0000),
                    size: 4096,
                    control: rvgpu_hw::addr::GpuVa::new(0x20_0000),
                }),
                kernel: None,
                doorbell: None,
                logs: crate::log::QueueLogs::default(),
            },
        );
        s
    }

    fn runnable(s: &Sched) -> bool {
        s.runnable(s.queues.get(&h(Kind::Queue, 4)).unwrap())
    }

    /// UM-11/UM-10 and the root rule: a context's queue runs while the context is not
    /// suspended, its device is not in error and, in a process other than the system one,
    /// VidMm has set the context's root page table.
    #[test]
    fn um_11_a_contexts_queue_runs_only_when_suspension_error_and_root_allow() {
        let mut s = state(false);
        assert!(!runnable(&s), "no root yet in a user process");
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().root = 0x4000;
        assert!(runnable(&s));
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().suspended = true;
        assert!(!runnable(&s), "suspended");
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().suspended = false;
        s.devices.get_mut(&h(Kind::Device, 2)).unwrap().in_error = true;
        assert!(!runnable(&s), "device in error");
        let s = state(true);
        assert!(
            runnable(&s),
            "the system process runs in the identity space"
        );
    }

    /// Only queues of the asked engine that may run are runlist entries.
    #[test]
    fn runlist_entries_are_the_runnable_queues_of_the_engine() {
        let mut s = state(true);
        assert_eq!(s.runlist_entries(0).count(), 1);
        assert_eq!(s.runlist_entries(1).count(), 0);
        s.contexts.get_mut(&h(Kind::Context, 3)).unwrap().suspended = true;
        assert_eq!(s.runlist_entries(0).count(), 0);
    }
}
