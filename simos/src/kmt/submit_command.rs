//! `D3DKMTSubmitCommand`'s kernel entry, as 24H2 `K:DxgkSubmitCommandInternal` @0x1402A4B90
//! answers it: the caller's `D3DKMT_SUBMITCOMMAND` as written, the checks in their order with
//! their statuses, then the kernel-mode DMA path ([`Machine::submit_legacy_va`]). Nothing is
//! written back.

use zerocopy::FromZeros;

pub use rvgpu_ddi::d3dkmt::D3DKMT_SUBMITCOMMAND;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

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
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    if a.Flags & NO_KMD_ACCESS != 0 && !m.os_config().test_signing {
        return Err(bad);
    }
    let context = |h: KmtHandle| -> Result<UmsProcess, NtStatus> {
        let p = owner(h).ok_or(bad)?;
        m.submit_command_context(&p, h).map_err(super::status)?;
        Ok(p)
    };
    let ctx = a.BroadcastContext[0];
    let p = context(ctx)?;
    let count = a.BroadcastContextCount;
    if count == 0 || count > MAX_BROADCAST || a.NumPrimaries > MAX_PRIMARIES {
        return Err(bad);
    }
    for &h in a.BroadcastContext.iter().take(count as usize).skip(1) {
        if context(h)?.device != p.device {
            return Err(bad);
        }
    }
    if a.NumPrimaries != 0 || a.PrivateDriverDataSize != 0 {
        return Err(bad);
    }
    if count != 1 || a.NumHistoryBuffers != 0 || a.Flags != 0 {
        return Err(NtStatus(STATUS_NOT_SUPPORTED));
    }
    m.submit_legacy_va(
        &p,
        ctx,
        rvgpu_hw::addr::GpuVa::new(a.Commands),
        a.CommandLength,
    )
    .map(|_| ())
    .map_err(super::status)
}
