//! `DxgkDdiEscape`: the UMD's private channel to the KMD. It answers two requests: the calling
//! device's slot on a shared native fence's wait board ([`rvgpu_hw::pdd::WaitBoardEscape`]),
//! and the report tag of a native fence the calling device opened from an NT handle
//! ([`rvgpu_hw::pdd::NativeFenceTagEscape`], NF-14): 24H2 gives the opener no private data from
//! the open (`K:NtDxgkOpenNativeFenceFromNtHandleInternal` @0x1401E15EC passes
//! `DXGSYNCOBJECT::Open` @0x1401F4640 no buffer for it and copies the caller's own bytes back),
//! so the creator's [`rvgpu_hw::pdd::NativeFencePdd`] never reaches it. A request that starts
//! with [`rvgpu_hw::testhooks::TestHookEscape`]'s magic and version goes to the test hooks
//! ([`crate::testhooks::escape`]), which answer only when the software key turned them on;
//! of those, the copy of a queue's native fence log ([`TestHookOp::QueueLog`]) is answered
//! here, where the queues and the calling device are known ([`crate::log::ddi::escape_queue_log`]).
//! Anything else is STATUS_INVALID_PARAMETER, and nothing is written.

use rvgpu_ddi::kmtest::DXGKARG_ESCAPE;
use rvgpu_hw::pdd::{
    NativeFenceTagEscape, WaitBoardEscape, NATIVE_FENCE_TAG_ESCAPE_VERSION, PDD_MAGIC,
    WAIT_BOARD_ESCAPE_VERSION,
};
use rvgpu_hw::testhooks::{
    KmdCapsReport, TestHookEscape, TestHookOp, CAPS_MULTI_ENGINE_AWARE, CAPS_NATIVE_GPU_FENCE,
    CAPS_NO_64BIT_ATOMICS, CAPS_PER_ENGINE_TDR,
};
use zerocopy::{FromBytes, IntoBytes};

use crate::adapter::Adapter;
use crate::platform::Platform;
use crate::status::{self, Status};

/// DxgkDdiEscape (PASSIVE) with `data`, Dxgkrnl's kernel copy of the caller's private data
/// (`None` if the OS passed none). Only a request of exactly [`NativeFenceTagEscape`]'s size,
/// magic and version (or a [`WaitBoardEscape`]), without escape flags and with a device, is
/// answered.
pub fn escape<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_ESCAPE,
    data: Option<&mut [u8]>,
) -> Result<(), Status> {
    let data = data.ok_or(status::INVALID_PARAMETER)?;
    if args.Flags != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    if crate::testhooks::is_request(data) {
        if let Some(r) = queue_log_request(a, args, data) {
            return r;
        }
        if let Some(r) = driver_caps_request(a, data) {
            return r;
        }
        let live = a.live();
        let hooks = live.and_then(|l| l.hooks.as_ref());
        let engines = live.map_or(0, |l| l.identity.config.engines);
        return crate::testhooks::escape(hooks, engines, data);
    }
    if data.len() == size_of::<WaitBoardEscape>() {
        return wait_board(a, args, data);
    }
    let mut q =
        NativeFenceTagEscape::read_from_bytes(data).map_err(|_| status::INVALID_PARAMETER)?;
    if q.magic != PDD_MAGIC || q.version != NATIVE_FENCE_TAG_ESCAPE_VERSION {
        return Err(status::INVALID_PARAMETER);
    }
    q.report_tag = crate::fence::ddi::tag_of_open(a, args.hDevice, q.current_value_gpu)?;
    data.copy_from_slice(q.as_bytes());
    Ok(())
}

// The two requests are told apart by their size alone.
const _: () = assert!(size_of::<WaitBoardEscape>() != size_of::<NativeFenceTagEscape>());

/// A [`WaitBoardEscape`]: the calling device's slot on the board of a native fence it holds
/// open, written only through its own escapes (24H2's `K:DxgkEscape` @0x140419AB0 checks that
/// `hDevice` is the caller's and passes the driver that device's handle), and the answer about
/// the fence's other opens. Refused with nothing written on a wrong magic or version, a
/// `publish` or `more` other than 0 or 1, or a fence the device does not hold open.
fn wait_board<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_ESCAPE,
    data: &mut [u8],
) -> Result<(), Status> {
    let bad = status::INVALID_PARAMETER;
    let mut q = WaitBoardEscape::read_from_bytes(data).map_err(|_| bad)?;
    if q.magic != PDD_MAGIC || q.version != WAIT_BOARD_ESCAPE_VERSION || q.publish > 1 || q.more > 1
    {
        return Err(bad);
    }
    let publish = (q.publish == 1).then_some(crate::fence::table::BoardSlot {
        waits: q.waits,
        more: q.more == 1,
    });
    let answer = crate::fence::ddi::board(
        a,
        args.hDevice,
        q.current_value_gpu,
        publish,
        (q.from, q.to),
    )?;
    (q.known, q.passed, q.next) = match answer {
        crate::fence::table::BoardAnswer::Unknown => (0, 0, u64::MAX),
        crate::fence::table::BoardAnswer::Lowest { next, passed } => (1, u32::from(passed), next),
    };
    data.copy_from_slice(q.as_bytes());
    Ok(())
}

/// A test-hook request's header when it asks for `op` (`None`: another op, or too short to
/// say), with the whole escape buffer back for [`hook_parts`].
fn hook_request(data: &mut [u8], op: TestHookOp) -> Option<(TestHookEscape, &mut [u8])> {
    let (q, _) = TestHookEscape::read_from_prefix(data).ok()?;
    (TestHookOp::from_u32(q.op) == Some(op)).then_some((q, data))
}

/// An answered test-hook request's adapter state, header bytes and the room after them.
type HookParts<'a, P> = (&'a crate::adapter::Live<P>, &'a mut [u8], &'a mut [u8]);

/// What every answered test-hook request checks first: the adapter started with its hooks on
/// and the header's reserved field clear (STATUS_INVALID_PARAMETER otherwise). Returns the
/// adapter's live state, the header's bytes and the room after them.
fn hook_parts<'a, P: Platform>(
    a: &'a Adapter<P>,
    q: &TestHookEscape,
    data: &'a mut [u8],
) -> Result<HookParts<'a, P>, Status> {
    let bad = status::INVALID_PARAMETER;
    let live = a.live().ok_or(bad)?;
    if live.hooks.is_none() || q.reserved != 0 {
        return Err(bad);
    }
    let (head, tail) = data
        .split_at_mut_checked(size_of::<TestHookEscape>())
        .ok_or(bad)?;
    Ok((live, head, tail))
}

/// A test-hook request for [`TestHookOp::QueueLog`], answered (`Some`); `None` for any other op.
/// Refused with STATUS_INVALID_PARAMETER and nothing written, as every test-hook request, when
/// the hooks are off, a reserved field is set, or the log cannot be named
/// ([`crate::log::ddi::escape_queue_log`]).
fn queue_log_request<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_ESCAPE,
    data: &mut [u8],
) -> Option<Result<(), Status>> {
    let (mut q, data) = hook_request(data, TestHookOp::QueueLog)?;
    Some((|| {
        let (live, head, tail) = hook_parts(a, &q, data)?;
        let (count, entries) =
            crate::log::ddi::escape_queue_log(a, live, args.hDevice, q.node, q.seq, tail)?;
        q.count = count;
        q.seq = entries;
        head.copy_from_slice(q.as_bytes());
        Ok(())
    })())
}

/// A test-hook request for [`TestHookOp::DriverCaps`], answered (`Some`); `None` for any other
/// op. The caps are what this KMD answers the OS at start (`crate::caps`), the adapter's and
/// no device's. Refused with nothing written when the hooks are off, a reserved field is set
/// or the room after the header is not exactly a [`KmdCapsReport`].
fn driver_caps_request<P: Platform>(a: &Adapter<P>, data: &mut [u8]) -> Option<Result<(), Status>> {
    let (mut q, data) = hook_request(data, TestHookOp::DriverCaps)?;
    let bad = status::INVALID_PARAMETER;
    Some((|| {
        let (live, head, tail) = hook_parts(a, &q, data)?;
        if tail.len() != size_of::<KmdCapsReport>() {
            return Err(bad);
        }
        let c = crate::caps::driver_caps(live);
        let s = c.SchedulingCaps;
        let flag = |on: bool, bit: u32| if on { bit } else { 0 };
        let engines = live.identity.config.engines;
        let mut user_mode_nodes = 0u32;
        for node in 0..engines.min(32) {
            let ums = crate::caps::node_metadata(live, node).is_ok_and(|m| {
                m.Flags
                    .is_set(rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS::UserModeSubmission)
            });
            if ums {
                user_mode_nodes |= 1 << node;
            }
        }
        let doorbell_size = if crate::hws::ddi::user_mode_submission(live) {
            crate::caps::usermode_submission_caps().DoorbellSizeInBytes
        } else {
            0
        };
        let r = KmdCapsReport {
            flags: flag(
                s.is_set(rvgpu_ddi::adapter::DXGK_VIDSCHCAPS::MultiEngineAware),
                CAPS_MULTI_ENGINE_AWARE,
            ) | flag(
                s.is_set(rvgpu_ddi::adapter::DXGK_VIDSCHCAPS::NativeGpuFence),
                CAPS_NATIVE_GPU_FENCE,
            ) | flag(
                s.is_set(rvgpu_ddi::adapter::DXGK_VIDSCHCAPS::No64BitAtomics),
                CAPS_NO_64BIT_ATOMICS,
            ) | flag(c.SupportPerEngineTDR != 0, CAPS_PER_ENGINE_TDR),
            nodes: c.GpuEngineTopology.NbAsymetricProcessingNodes,
            interrupt_message_number: c.InterruptMessageNumber,
            paging_node: c.MemoryManagementCaps.PagingNode,
            user_mode_nodes,
            doorbell_size,
            doorbells: live.identity.config.doorbells,
            device_caps: live.identity.caps.bits(),
        };
        tail.copy_from_slice(r.as_bytes());
        q.count = 1;
        head.copy_from_slice(q.as_bytes());
        Ok(())
    })())
}
