//! The per-process TDR block: a process whose work times out an engine too often within
//! `TdrLimitTime` loses the adapter (docs/tdr.md#the-simulated-os). The pages have no such
//! block ([`ProcessTdrBlock`]).
//!
//! 24H2 (\[D24\]):
//! - `M:VidSchCreateProcess` @0x1400FE760 gives every process its own TDR history
//!   (`TdrHistoryInit`, the 64-entry ring of the machine's `g_TdrHistory`) and a bitmap with a
//!   bit per adapter index.
//! - `M:VidSchiResetEngine` @0x140047318, for the timed-out node, after `DxgkDdiResetEngine`
//!   (whatever it returned): the device of the context that was running on the node is charged
//!   unless it is a system device (create flag 1), a device of client type 2 (flag 8) or its
//!   process registered as DWM (`M:VidSchRegisterAsDwm` @0x140124F20).
//!   `M:VidSchInvalidateHwContext` @0x1400521E0 charges the device of each context the driver
//!   names in `DxgkCbInvalidateHwContext` during `DxgkDdiResetHwEngine` (the node's recovery
//!   context is set only then), with the same exemptions.
//! - A charge is `TdrHistoryUpdate` @0x1401CFBE0 (the recovery context's time, which
//!   `TdrCreateRecoveryContext` @0x1403EEDD0 stamps when VidSch starts the reset) and
//!   `TdrHistoryIsLimitExhausted(history, context, 1)` @0x1401CFB50: the entries no older than
//!   `TdrLimitTime`, counted from the newest, plus one, reach `TdrLimitCount` — the fourth
//!   timeout within 60 s by default. Then the adapter's bit is set: for good, nothing clears it
//!   while the process lives. `TdrDebugMode` is not read here.
//! - The bit is read by `M:VidSchiCreateDeviceInternal` @0x1400D3D40 (a new device of the
//!   process fails with STATUS_ACCESS_DENIED, after `DxgkDdiCreateDevice`, which
//!   `K:DXGDEVICE::Initialize` @0x1403973B4 calls first) and `M:VidSchIsGpuAccessBlocked`
//!   @0x1400FB9A0, behind `K:ADAPTER_RENDER::IsProcessGpuAccessBlocked` @0x14036E228
//!   (`K:EnumAdaptersCallback` @0x14034F110 leaves the adapter out) and
//!   `K:DxgkOpenAdapterFromLuidImpl` @0x14035AC38 (STATUS_ACCESS_DENIED).
//!
//! The simulation's clock is the machine's TDR clock (rounds in step mode, milliseconds in
//! threaded mode); a device without a process (the system device and contexts) is never
//! charged; the simulation has no device of client type 2.

use crate::adapter::AdapterShared;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::os::answers::ProcessTdrBlock;

use super::limit::{self, HISTORY};
use super::state::{TdrEvent, TdrShared};

/// The device whose context was running on `node` when it timed out: the owner of the oldest
/// DMA buffer in flight (`None` for the OS's own buffers), else the stalled hardware queue's.
pub(super) fn running_device(
    a: &AdapterShared,
    sh: &TdrShared,
    node: u32,
    stalled: Option<KmtHandle>,
) -> Option<KmtHandle> {
    if let Some(p) = lock(&sh.os).node(node).pending.values().next() {
        return p.device;
    }
    let q = stalled.filter(|q| *q != 0)?;
    crate::ums::tdr_queues(a)
        .iter()
        .find(|x| x.handle == q)
        .map(|x| x.device)
}

/// Charges one engine timeout to `device`'s process; blocks the process on this adapter when
/// it is one too many within `TdrLimitTime`.
pub(super) fn charge(a: &AdapterShared, sh: &TdrShared, device: KmtHandle) {
    if a.os.windows.reading().process_tdr_block == ProcessTdrBlock::None {
        return;
    }
    let Some(pid) = lock(&a.ums).devices.get(&device).map(|d| d.process) else {
        return;
    };
    let mut os = lock(&sh.os);
    let history = &a.state.tdr_history;
    let now = history.now(os.step);
    let blocked = {
        let mut processes = lock(&history.processes);
        let p = processes.entry(pid).or_default();
        if p.dwm {
            return;
        }
        p.times.push_back(now);
        if p.times.len() > HISTORY {
            p.times.pop_front();
        }
        let exhausted = limit::recent(&os, now, p.times.iter()) + 1 >= limit::limit_count(&os);
        exhausted && p.blocked.insert(a.index)
    };
    if blocked {
        os.events.push(TdrEvent::ProcessBlocked { device });
    }
}
