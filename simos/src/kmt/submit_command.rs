//! `D3DKMTSubmitCommand`'s kernel entry, as 24H2 `K:DxgkSubmitCommandInternal` @0x1402A4B90
//! answers it: the caller's `D3DKMT_SUBMITCOMMAND` as written, the checks in their order with
//! their statuses, then the kernel-mode DMA path ([`Machine::submit_legacy_va`]). Nothing is
//! written back.

use zerocopy::FromZeros;

pub use rvgpu_ddi::d3dkmt::D3DKMT_SUBMITCOMMAND;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::process::status;
use super::refusal::row::*;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// One command buffer of `length` bytes at `commands` on `context`, nothing else: the
/// `D3DKMT_SUBMITCOMMAND` (24H2 `K:DxgkSubmitCommandInternal` captures its 0x180 bytes) the
/// UMD's Windows thunk fills.
pub fn one(context: KmtHandle, commands: u64, length: u32) -> D3DKMT_SUBMITCOMMAND {
    let mut a = D3DKMT_SUBMITCOMMAND::new_zeroed();
    a.Commands = commands;
    a.CommandLength = length;
    a.BroadcastContextCount = 1;
    a.BroadcastContext[0] = context;
    a
}

/// `D3DKMT_SUBMITCOMMANDFLAGS::NoKmdAccess`.
const NO_KMD_ACCESS: u32 = 1 << 2;
/// The most broadcast contexts and primaries 24H2 takes.
const MAX_BROADCAST: u32 = 64;
const MAX_PRIMARIES: u32 = 16;

refusals! {
    /// `D3DKMTSubmitCommand`'s refusals, in 24H2's order.
    SubmitCommandCheck => SUBMIT_COMMAND_CHECKS {
        NoKmdAccess: "Flags.NoKmdAccess without test signing" => INVALID_PARAMETER;
        PresentRedirected: "Flags.PresentRedirected from a virtual machine" => INVALID_PARAMETER,
            elsewhere "not modelled: no simulated caller is a virtual machine";
        Context: "BroadcastContext[0] not in the caller's handle table" => INVALID_PARAMETER;
        HwQueueContext: "BroadcastContext[0] created with HwQueueSupported" => INVALID_PARAMETER,
            elsewhere "VidSch's context check (`vidsch::legacy::check_submit_context`) makes it";
        SyncOnlyContext: "BroadcastContext[0] SynchronizationOnly" => INVALID_PARAMETER,
            elsewhere "not modelled: the UMD makes no synchronisation-only context";
        Count: "BroadcastContextCount 0 or above 64" => INVALID_PARAMETER;
        Primaries: "NumPrimaries above 16" => INVALID_PARAMETER;
        FurtherContext: "a further broadcast context unknown, synchronisation-only or of another device" => INVALID_PARAMETER;
        FurtherHwQueueContext: "a further broadcast context created with HwQueueSupported" => INVALID_PARAMETER,
            elsewhere "VidSch's context check (`vidsch::legacy::check_submit_context`) makes it";
        NotVirtual: "the context not virtual" => INVALID_PARAMETER,
            elsewhere "not modelled: every simulated context is virtual";
    }
}

/// `D3DKMTSubmitCommand`'s row of the thunk catalog ([`super::catalog`]).
pub const SUBMIT_COMMAND: Thunk = Thunk {
    name: "D3DKMTSubmitCommand",
    source: Some(&[src("DxgkSubmitCommandInternal", 0x1402A4B90)]),
    checks: SUBMIT_COMMAND_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("submit_command::dxgk_submit_command_internal"),
    gaps: "any primary is STATUS_INVALID_PARAMETER on this render-only adapter; more than one \
           broadcast context, history buffers or a flag past the checks is \
           STATUS_NOT_SUPPORTED (the simulated scheduler takes one context's buffer)",
};

/// `DxgkSubmitCommandInternal` for the caller's structure `a`, in 24H2's order, every refusal
/// STATUS_INVALID_PARAMETER unless said:
/// 1. `Flags.NoKmdAccess` without test signing (`PresentRedirected` from a virtual machine does
///    not arise: the simulated OS is no guest);
/// 2. `BroadcastContext[0]` not a context of the caller's (`owner`), or created with
///    `HwQueueSupported`, then `SynchronizationOnly` ([`Machine::submit_command_context`]);
/// 3. `BroadcastContextCount` 0 or above 64; `NumPrimaries` above 16;
/// 4. a further broadcast context unknown, of another device, or refused as in 2;
/// 5. the simulation's own rules (the catalog row's gaps): any primary on this render-only
///    adapter, private data (`DXGCONTEXT::SubmitCommand` @0x1402A6890: the KMD asks for
///    none); more than one broadcast context, history buffers or flags STATUS_NOT_SUPPORTED;
///
/// then the buffer goes to the context's node ([`Machine::submit_legacy_va`]).
pub fn dxgk_submit_command_internal(
    m: &Machine,
    a: &D3DKMT_SUBMITCOMMAND,
    owner: impl Fn(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    if a.Flags & NO_KMD_ACCESS != 0 && !m.os_config().test_signing {
        return Err(SubmitCommandCheck::NoKmdAccess.refuse());
    }
    let context = |h: KmtHandle, unknown: SubmitCommandCheck| -> Result<UmsProcess, NtStatus> {
        let p = owner(h).ok_or(unknown.refuse())?;
        m.submit_command_context(&p, h).map_err(status)?;
        Ok(p)
    };
    let ctx = a.BroadcastContext[0];
    let p = context(ctx, SubmitCommandCheck::Context)?;
    let count = a.BroadcastContextCount;
    if count == 0 || count > MAX_BROADCAST {
        return Err(SubmitCommandCheck::Count.refuse());
    }
    if a.NumPrimaries > MAX_PRIMARIES {
        return Err(SubmitCommandCheck::Primaries.refuse());
    }
    for &h in a.BroadcastContext.iter().take(count as usize).skip(1) {
        if context(h, SubmitCommandCheck::FurtherContext)?.device != p.device {
            return Err(SubmitCommandCheck::FurtherContext.refuse());
        }
    }
    if a.NumPrimaries != 0 || a.PrivateDriverDataSize != 0 {
        return Err(gap(STATUS_INVALID_PARAMETER));
    }
    if count != 1 || a.NumHistoryBuffers != 0 || a.Flags != 0 {
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    m.submit_legacy_va(
        &p,
        ctx,
        rvgpu_hw::addr::GpuVa::new(a.Commands),
        a.CommandLength,
    )
    .map(|_| ())
    .map_err(status)
}
