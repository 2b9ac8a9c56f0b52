//! Timeout detection and recovery: the VidSch side (docs/tdr.md#the-simulated-os, TDR-01 … TDR-09,
//! UM-10).
//!
//! **Scheduling state** (per adapter, `TdrOs`): per node the OS's own `(S, C)` — last
//! submitted and last completed fence ID of the kernel-mode ("legacy") path of
//! [`crate::vidsch::legacy`] — with every DMA buffer in flight ([`Packet`]: fence ID, paging flag,
//! owning device, devices owning the allocations it references, its DMA buffer). Interrupt
//! reports of the node (`DMA_COMPLETED`, `DMA_PREEMPTED`, `DMA_FAULTED`, `ENGINE_STATE_CHANGE`
//! to `HUNG`) are captured at ISR time (`isr_report`, under the adapter's interrupt lock) and
//! processed at DPC time (`dpc_process`): a completion ID above S or below C is bug check
//! 0x119 / 0x1; `DmaPreempted.LastCompletedFenceId` must equal the OS's C (else 0x119 / 0x1).
//!
//! **Detection** (VidSch's PASSIVE worker: the adapter's worker thread, or the step loop;
//! `run_passive`): a node with `S > C` and no completion for the timeout; a hardware queue
//! (kernel- or user-mode) of the node that is not suspended, has `last_queued > completed` and
//! whose progress fence has not moved for the timeout (UM-16; a queue blocked on a GPU wait
//! counts too, docs/tdr.md Q7); an `EngineStateChange(HUNG)` (immediate); a `DmaFaulted`.
//! TDR is **opt-in per adapter** ([`Machine::enable_tdr`]): the fence and user-mode submission
//! tests park queues on purpose and must keep their meaning. Windows' TDR is always on.
//!
//! **The TDR-05 sequence** (`recover_node`): preemption attempt (`DxgkDdiPreemptCommand`,
//! DISPATCH; only when the node has kernel-mode DMA buffers in flight: hardware queues are not
//! preempted through it) → preemption timeout → `DxgkDdiCollectDbgInfo(0x141)` (PASSIVE,
//! output bounded by `BufferSize`, checked with a guard) → **snapshot** under the adapter's
//! interrupt lock of `(S, C)` and `ignore_irq` set for the node: from here its reports are
//! recorded as ignored, not processed (other nodes unaffected) → nothing to reset if `S == C`
//! and no queue of the node is stalled → **DPC flush** → `DxgkDdiQueryDependentEngineGroup`
//! (mask must contain the node and no bit ≥ node count) and `DxgkDdiQueryEngineStatus` → the
//! test's pause hook ([`Machine::set_tdr_pause`], TDR-07) → `DxgkDdiResetEngine` per node of the
//! mask → **check**: `LastAbortedFenceId ∉ [C, S]` is bug check 0x119 (0xA, LastAborted, C,
//! node) (TDR-06); the engine must not be left held or resetting → **recover**: IDs up to
//! LastAborted are retired, the aborted packet's device (if `LastAborted > C` at the snapshot,
//! which includes the TDR-07 race) is put in error; an aborted **paging** packet promotes to
//! the adapter-wide path (TDR-08) with the owners of its allocations in error; devices named by
//! `DxgkCbInvalidateHwContext` (only accepted during `DxgkDdiResetEngine`), and the device of a
//! stalled hardware queue when the KMD named none, are put in error; the rest is resubmitted:
//! paging packets first with their original IDs and `Flags.Resubmission` (TDR-03), then render
//! packets of non-errored devices with new IDs `> S`; errored devices' packets are dropped.
//! UM-10: the errored devices' sync objects are signalled; their doorbells keep their status
//! (24H2 writes none; the KMD aborts them through `DxgkCbDisconnectDoorbell`); nothing happens
//! to other devices.
//!
//! **Adapter-wide path** (`adapter_reset`, docs/tdr.md#the-simulated-os): `CollectDbgInfo(0x117)`,
//! `DxgkDdiResetEngine` on each node with packets in flight while the driver's interrupt
//! reports are dropped, every user-mode submission thunk and kernel-mode submission gated,
//! `DxgkDdiResetFromTimeout` (failure: bug check 0x116), every node `C := S` with its in-flight
//! packets dropped and their devices (and every device with a hardware queue behind its
//! last-queued value) in error, `DxgkDdiRestartFromTimeout` (failure: 0x116), UM-10 for the
//! errored devices, then every device of the adapter reset (its thunks answer
//! STATUS_DEVICE_REMOVED, `D3DKMTGetDeviceState` RESET, or HUNG for a hung one). Entered from a
//! failed `DxgkDdiResetEngine` (TDR-09) or an aborted paging packet (TDR-08): reason
//! `EngineTimeoutPromotedToAdapterReset` (9) is recorded; or forced by a test program
//! ([`Machine::device_lost`]).
//!
//! **Hardware-scheduled nodes** (`recover_hw_node`): steps 1–7 in the reading's order
//! ([`HwsTdr`](crate::os::answers::HwsTdr): 24H2 asks for the dependent group first and makes
//! the debug report just before the reset; the pages as above), then
//! `DxgkDdiResetHwEngine` and, only after `STATUS_SUCCESS`, `DxgkDdiResumeHwEngine` instead of
//! `DxgkDdiResetEngine` (\[D\] `VidSchiResetHwEngine`); no fence bookkeeping; either failing goes
//! adapter-wide (reason 9).
//!
//! Every step is a [`TdrEvent`] ([`Machine::tdr_events`]).
//!
//! **Layers**, bottom-up (each module calls only those before it): `state`, `registry`,
//! `limit`, `process`, `report` (ISR/DPC side); `steps` (the steps every path shares) and
//! `dbginfo` (the debug report); `adapter_wide`; `hwsched`; `recovery`; `watchdog` (detection,
//! which starts recovery).
//!
//! [`Machine::enable_tdr`]: crate::Machine::enable_tdr
//! [`Machine::device_lost`]: crate::Machine::device_lost
//! [`Machine::set_tdr_pause`]: crate::Machine::set_tdr_pause
//! [`Machine::tdr_events`]: crate::Machine::tdr_events

mod adapter_wide;
mod dbginfo;
mod hwsched;
mod irq;
mod limit;
mod process;
mod recovery;
mod report;
mod steps;
mod watchdog;

pub(crate) use self::adapter_wide::forced_adapter_reset;
pub(crate) use self::irq::Interrupts;
pub(crate) use self::recovery::recover_node;
pub(crate) use self::report::*;
pub(crate) use self::steps::dependent_group;
pub(crate) use self::watchdog::*;
pub(crate) mod registry;
pub(crate) mod state;
pub(crate) use self::registry::*;
pub use self::state::*;
