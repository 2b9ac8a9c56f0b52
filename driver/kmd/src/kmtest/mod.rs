//! The kernel-mode testing interface (WDDM 3.2): `DxgkDdiQueryFeatureInterface` for
//! `DXGK_FEATURE_KERNEL_MODE_TESTING` returns `pfnBuildTestCommandBuffer`, which writes rvgpu
//! packets (docs/hardware.md §6) for one vendor-neutral test command, so that a test tool can
//! drive the scheduler, fences, TDR and preemption without knowing the command format.
//! Reference: <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/kernel-mode-testing-of-wddm-features>.
//!
//! What each command becomes ([`build::packets`]):
//! - COPY and FILL: `COPY`/`FILL` packets of at most `cmd::MAX_TRANSFER` bytes each; the FILL
//!   pattern is the 4-byte pattern twice, as the device fills whole 8-byte words.
//! - INFINITE_LOOP: `HANG`, which never completes and holds its engine (a packet is never
//!   preempted, hardware.md §5.4): the engine reports `Hung` and only a reset gets past it.
//! - INFINITE_PREEMPTABLE_LOOP, hardware queues only: `FENCE_WAIT` for `u64::MAX` on the
//!   queue's own progress fence, which the queue's `PROGRESS` packets never reach. The queue is
//!   blocked, not hung: the engine runs every other queue (higher priority first) and the wait
//!   never ends. A queue without a progress fence (24H2's user-mode queues) is refused: the
//!   wait would be at VA 0, which the process may map and write. A context's buffers run on its node's ring, which every context of the engine
//!   shares and which is preempted only by draining (crate::node), so there a preemptible
//!   infinite loop cannot exist: refused.
//!
//! Refusals are `STATUS_INVALID_PARAMETER`, the only failure besides `STATUS_BUFFER_OVERFLOW`
//! that 24H2's Dxgkrnl accepts from this DDI without logging "Driver returned an invalid
//! NTSTATUS code" (\[D\] `ADAPTER_RENDER::DdiBuildTestCommandBuffer` @ 0x1401A12AC):
//! an unknown operation, reserved bits or a reserved word set, a handle that names no context
//! (or hardware queue, per `Flags.HardwareQueue`) of this adapter, a size of 0 or not a multiple
//! of 4 (the reference pages' rule), a size or address the device cannot move (not a multiple
//! of 8, hardware.md §6.2), a range outside the 48-bit GPU VA space every process has
//! (`DXGK_GPUMMUCAPS::VirtualAddressBitCount`), overlapping COPY ranges. An address inside the
//! space but not mapped is the device's to catch: the packet faults (`PageFault`) and only its
//! queue stops (hardware.md §6.3). A null or too small `pDmaBuffer` gets the size needed and
//! `STATUS_BUFFER_OVERFLOW`. No private data is produced (its size out is 0): a buffer carries
//! everything it needs, so a tampered copy can only be a malformed buffer, which the submit
//! path and the device already refuse.

mod build;

use core::mem::size_of;

use rvgpu_ddi::feature::DXGKARG_QUERYFEATUREINTERFACE;
use rvgpu_ddi::kmtest::{
    D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS, DXGKARG_BUILDTESTCOMMANDBUFFER,
    DXGKDDI_KERNELMODETESTINGINTERFACE,
};

use crate::adapter::Adapter;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::status::{self, Status};

pub(crate) use build::{packets, Packets, Target};

/// The one version of the feature rvgpu implements.
use crate::features::KERNEL_MODE_TESTING_VERSION as VERSION;

/// `STATUS_BUFFER_OVERFLOW`: a warning (high bit set, so not `NT_SUCCESS`) that the sizes
/// written back are what the call needs.
pub(crate) const BUFFER_OVERFLOW: Status = Status(0x8000_0005_u32.cast_signed());

/// Whether a `DxgkDdiQueryFeatureInterface(DXGK_FEATURE_KERNEL_MODE_TESTING)` request can be
/// answered: the version rvgpu implements and room for the interface. The OS asks before
/// StartDevice, so nothing here needs the device. Returns the size to report back.
pub(crate) fn interface_request(args: &DXGKARG_QUERYFEATUREINTERFACE) -> Result<u16, Status> {
    let size = size_of::<DXGKDDI_KERNELMODETESTINGINTERFACE>();
    if args.Version != VERSION || usize::from(args.InterfaceSize) < size || args.Interface.is_null()
    {
        return Err(status::INVALID_PARAMETER);
    }
    u16::try_from(size).map_err(|_| status::INVALID_PARAMETER)
}

/// `pfnBuildTestCommandBuffer` once its pointers are references (the thunk is
/// `ddi::query::build_test_command_buffer`): the packets for `args`, written to `out` when it
/// holds them, else `STATUS_BUFFER_OVERFLOW` with the size needed in `args.DmaBufferSize`.
pub(crate) fn build_into<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_BUILDTESTCOMMANDBUFFER,
    out: Option<&mut [u8]>,
) -> Result<(), Status> {
    let p = build(a, args)?;
    let need = p.bytes().ok_or(status::INVALID_PARAMETER)?;
    // Private data: none, so any buffer (or none) is big enough.
    args.DmaBufferPrivateDataSize = 0;
    args.DmaBufferSize = need;
    let len = usize::try_from(need).map_err(|_| status::INVALID_PARAMETER)?;
    match out.and_then(|o| o.get_mut(..len)) {
        Some(dst) => p.write(dst).ok_or(status::INVALID_PARAMETER),
        None => Err(BUFFER_OVERFLOW),
    }
}

/// Validates the request and resolves what the buffer will run on: the packets to write.
pub(crate) fn build<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_BUILDTESTCOMMANDBUFFER,
) -> Result<Packets, Status> {
    let live = a.started()?;
    if args.Flags.get(D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS::Reserved) != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let queue = args
        .Flags
        .get(D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS::HardwareQueue)
        != 0;
    let target = {
        let s = live.sched.lock();
        if queue {
            let h = Handle::decode(args.hContext, Kind::Queue).ok_or(status::INVALID_PARAMETER)?;
            let q = s.queues.get(&h).ok_or(status::INVALID_PARAMETER)?;
            Target::Queue {
                progress: q.progress_gpu,
            }
        } else {
            let h =
                Handle::decode(args.hContext, Kind::Context).ok_or(status::INVALID_PARAMETER)?;
            s.contexts.get(&h).ok_or(status::INVALID_PARAMETER)?;
            Target::Context
        }
    };
    packets(&args.Command, target)
}
