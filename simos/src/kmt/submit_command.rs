//! `D3DKMTSubmitCommand`'s kernel entry, as 24H2 `K:DxgkSubmitCommandInternal` @0x1402A4B90
//! answers it: the caller's `D3DKMT_SUBMITCOMMAND` as written, the checks in their order with
//! their statuses, then the kernel-mode DMA path ([`Machine::submit_legacy_va`]). Nothing is
//! written back.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DKMT_SUBMITCOMMAND` (d3dkmthk.h of WDK 10.0.22621: 64 broadcast contexts, 16 written
/// primaries; 24H2 `K:DxgkSubmitCommandInternal` captures its 0x180 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug)]
#[repr(C)]
pub struct D3dkmtSubmitCommand {
    /// `Commands`: the command buffer's GPU VA.
    pub commands: u64,
    /// `CommandLength`.
    pub command_length: u32,
    /// `Flags` (`D3DKMT_SUBMITCOMMANDFLAGS`).
    pub flags: u32,
    /// `PresentHistoryToken`.
    pub present_history_token: u64,
    /// `BroadcastContextCount`.
    pub broadcast_context_count: u32,
    /// `BroadcastContext`.
    pub broadcast_context: [u32; 64],
    /// Alignment.
    pub _pad0: u32,
    /// `pPrivateDriverData`.
    pub p_private_driver_data: u64,
    /// `PrivateDriverDataSize`.
    pub private_driver_data_size: u32,
    /// `NumPrimaries`.
    pub num_primaries: u32,
    /// `WrittenPrimaries`.
    pub written_primaries: [u32; 16],
    /// `NumHistoryBuffers`.
    pub num_history_buffers: u32,
    /// Alignment.
    pub _pad1: u32,
    /// `HistoryBufferArray`.
    pub history_buffer_array: u64,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(D3dkmtSubmitCommand, broadcast_context_count) == 24);
    assert!(offset_of!(D3dkmtSubmitCommand, p_private_driver_data) == 288);
    assert!(offset_of!(D3dkmtSubmitCommand, written_primaries) == 304);
    assert!(offset_of!(D3dkmtSubmitCommand, history_buffer_array) == 376);
    assert!(size_of::<D3dkmtSubmitCommand>() == 0x180);
};

impl D3dkmtSubmitCommand {
    /// One command buffer of `length` bytes at `commands` on `context`, nothing else.
    pub fn one(context: KmtHandle, commands: u64, length: u32) -> Self {
        let mut broadcast_context = [0; 64];
        broadcast_context[0] = context;
        Self {
            commands,
            command_length: length,
            flags: 0,
            present_history_token: 0,
            broadcast_context_count: 1,
            broadcast_context,
            _pad0: 0,
            p_private_driver_data: 0,
            private_driver_data_size: 0,
            num_primaries: 0,
            written_primaries: [0; 16],
            num_history_buffers: 0,
            _pad1: 0,
            history_buffer_array: 0,
        }
    }
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
    a: &D3dkmtSubmitCommand,
    owner: impl Fn(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    if a.flags & NO_KMD_ACCESS != 0 && !m.os_config().test_signing {
        return Err(bad);
    }
    let context = |h: KmtHandle| -> Result<UmsProcess, NtStatus> {
        let p = owner(h).ok_or(bad)?;
        m.submit_command_context(&p, h).map_err(super::status)?;
        Ok(p)
    };
    let ctx = a.broadcast_context[0];
    let p = context(ctx)?;
    let count = a.broadcast_context_count;
    if count == 0 || count > MAX_BROADCAST || a.num_primaries > MAX_PRIMARIES {
        return Err(bad);
    }
    for &h in a.broadcast_context.iter().take(count as usize).skip(1) {
        if context(h)?.device != p.device {
            return Err(bad);
        }
    }
    if a.num_primaries != 0 || a.private_driver_data_size != 0 {
        return Err(bad);
    }
    if count != 1 || a.num_history_buffers != 0 || a.flags != 0 {
        return Err(NtStatus(STATUS_NOT_SUPPORTED));
    }
    m.submit_legacy_va(
        &p,
        ctx,
        rvgpu_hw::addr::GpuVa::new(a.commands),
        a.command_length,
    )
    .map(|_| ())
    .map_err(super::status)
}
