//! BAR0 register map.
//!
//! Registers have trap semantics: every read or write reaches the device at once and may have
//! side effects (documented per register). 64-bit registers are accessed with one 64-bit
//! access. Offsets not listed read as zero and ignore writes.

use bitflags::bitflags;

/// "RVGP" in little-endian ASCII: the value of [`ID`].
pub const ID_VALUE: u32 = 0x5047_5652;
/// The [`VERSION`] this crate describes: 2.2. Version 1.x had no GPU page tables; 2.0 adds
/// them ([`crate::mmu`], [`Caps::PAGE_TABLES`]): a queue with a non-zero
/// `page_table_base` has its addresses translated, which a 1.x driver would not expect, so
/// the major version changes and a 1.x driver refuses the device cleanly. 2.1 gives the
/// global doorbell one page per process ([`DOORBELL_BIND`] holds a process id there); only
/// a device with [`Caps::GLOBAL_DOORBELL`] behaves differently. 2.2 adds [`FENCE_STORE`],
/// which a driver needs on Windows builds that give it no CPU address of fence values.
/// Registers a driver finds through a capability bit (scheduling logs, runlist updates)
/// leave the version as it is.
pub const VERSION_VALUE: u32 = 0x0002_0002;
/// Key for [`ADAPTER_RESET`]: "RSET".
pub const ADAPTER_RESET_KEY: u32 = 0x5445_5352;

/// Number of system-memory windows (the length of [`SYSWIN_BASE`] / [`SYSWIN_SIZE`]).
pub const SYSWIN_COUNT: usize = <SyswinBase as crate::register::Register>::DECL.count as usize;
/// Stride between windows.
pub const SYSWIN_STRIDE: usize = 0x10;
/// Most physical doorbells the register file can describe.
pub const DOORBELL_MAX: u32 = 512;
/// Base of the per-engine register blocks; engine `e` at `ENGINE_BASE + e * ENGINE_STRIDE`.
pub const ENGINE_BASE: usize = 0x1000;
/// Size of one engine block.
pub const ENGINE_STRIDE: usize = 0x100;
/// Most engines the register file can describe.
pub const ENGINE_MAX: u32 = 16;

// The register map: the one declaration of every register's offset, width, access type and
// fields (docs/hardware.md section 3 is its prose). Engine registers are arrays over
// `ENGINE_MAX` engine blocks; `engine::*` below are their offsets inside a block.
crate::register! {
    /// RO32: identification, always [`ID_VALUE`].
    ID => Id(u32, RO) @ 0x0000;
    /// RO32: specification version, major in bits 31:16, minor in 15:0.
    VERSION => Version(u32, RO) {
        /// Major version: a driver refuses one it does not know.
        major, with_major: 31:16,
        /// Minor version.
        minor, with_minor: 15:0,
    } @ 0x0004;
    /// RO32: [`Caps`].
    CAPS => CapsReg(u32, RO) @ 0x0008;
    /// RO32: [`Config`] packed counts.
    CONFIG => ConfigReg(u32, RO) {
        /// Engines (nodes).
        engines, with_engines: 7:0,
        /// Physical doorbells.
        doorbells, with_doorbells: 31:16,
    } @ 0x000C;
    /// RO64: bytes of local memory.
    VRAM_SIZE => VramSize(u64, RO) @ 0x0010;
    /// RO32: frequency of [`GPU_CLOCK`] in Hz.
    CLOCK_FREQ => ClockFreq(u32, RO) @ 0x0018;
    /// RO64: the GPU clock; monotonic, never goes backwards, also across engine resets.
    GPU_CLOCK => GpuClock(u64, RO) @ 0x0020;
    /// RO32: [`DeviceStatus`].
    DEVICE_STATUS => DeviceStatusReg(u32, RO) @ 0x0028;
    /// WO32: writing [`ADAPTER_RESET_KEY`] resets the whole adapter (all engines, runlists,
    /// doorbell bindings, event ring); any other value is ignored.
    ADAPTER_RESET => AdapterReset(u32, WO) @ 0x002C;
    /// RW32: scratch register for bring-up tests; no side effects.
    SCRATCH => Scratch(u32, RW) @ 0x0030;
    /// WO32: fence synchronisation (NF-07). The write returns only after every fence-signal
    /// operation that began before it has finished its conditional-interrupt decision, so a
    /// MonitoredValue the CPU stored before the write is seen by every later decision.
    FENCE_SYNC => FenceSync(u32, WO) @ 0x0034;
    /// WO32: log flush (LOG-07). Same drain as [`FENCE_SYNC`] for log-entry writes of the
    /// queue whose id is written: when the write returns, every entry that queue's header
    /// counts is in memory.
    LOG_FLUSH => LogFlush(u32, WO) @ 0x0038;
    /// RO32: pending interrupt causes ([`IntCause`]); the line is asserted while
    /// `INT_STATUS & INT_ENABLE != 0`.
    INT_STATUS => IntStatus(u32, RO) @ 0x0040;
    /// RW32: enabled interrupt causes.
    INT_ENABLE => IntEnable(u32, RW) @ 0x0044;
    /// W1C32: writing a bit clears that cause in [`INT_STATUS`].
    INT_ACK => IntAck(u32, W1C) @ 0x0048;
    /// RW64: GPU address of the event ring (system memory, 4 KiB aligned, in a registered
    /// window).
    EVENT_RING_BASE => EventRingBase(u64, RW) @ 0x0050;
    /// RW32: number of records in the event ring, a power of two in 16..=65536.
    EVENT_RING_SIZE => EventRingSize(u32, RW) @ 0x0058;
    /// RW32: bit 0 enables event posting. Enabling resets WPTR and RPTR to zero and re-posts
    /// an ENGINE_STATE record for every engine in TransitionToF1 or Hung (states are posted on
    /// entry, so one entered while posting was off would otherwise never be reported).
    EVENT_RING_CTRL => EventRingCtrl(u32, RW) {
        /// Event posting is on.
        enable, with_enable: 0:0,
    } @ 0x005C;
    /// RO32: free-running count of records the device has written.
    EVENT_RING_WPTR => EventRingWptr(u32, RO) @ 0x0060;
    /// RW32: free-running count of records the driver has consumed. A write that leaves
    /// records unconsumed (`RPTR != WPTR`) raises [`IntCause::EVENT_PENDING`].
    EVENT_RING_RPTR => EventRingRptr(u32, RW) @ 0x0064;
    /// RW64: with [`Caps::EVENT_WB`], the GPU address (system memory, 8-byte aligned,
    /// reachable by the device) of the event write-back word: the device keeps it equal to
    /// `INT_STATUS << 32 | EVENT_RING_WPTR`, so an ISR reads memory, not registers
    /// (docs/hardware.md 7.5). 0: off.
    EVENT_WB_ADDR => EventWbAddr(u64, RW) @ 0x0068;
    /// WO64: the CPU changed the 64-bit fence value at this GPU address (NF-17): the CMP
    /// re-evaluates every FENCE_WAIT blocked on it before the write returns. 0 re-evaluates
    /// every blocked wait (used after `NotificationOnly` updates, NF-16).
    WAIT_RESCAN => WaitRescan(u64, WO) @ 0x0070;
    /// RW64: root (4 KiB-aligned device physical address, [`crate::mmu`]) of the CMP's own
    /// address space, the system (paging) process: runlists, the event ring, log buffers
    /// (`wait_log`/`signal_log`) and [`WAIT_RESCAN`] addresses are translated through it
    /// with kernel privilege. 0 = identity (version 1 behaviour).
    SYSTEM_PAGE_TABLE_BASE => SystemPageTableBase(u64, RW) @ 0x0080;
    /// WO64: invalidates cached translations of the root written (a 4 KiB-aligned device
    /// physical address), or of every root for 0. Trap semantics: the write returns when no
    /// cached translation of that root remains and no packet that was executing with an
    /// older translation is still running (the paging-buffer equivalent is
    /// [`crate::cmd::Opcode::TlbInvalidate`]).
    TLB_INVALIDATE => TlbInvalidate(u64, WO) @ 0x0088;
    /// RO64: bytes of VRAM the CPU reaches through BAR4, from offset 0 (the CPU-visible part
    /// of local memory; the rest is GPU-only). At most [`VRAM_SIZE`]. The KMD reports only
    /// this much as `CpuVisible`.
    VRAM_VISIBLE => VramVisible(u64, RO) @ 0x0090;
    /// WO64 (version 2.2): the device physical address (8-byte aligned, system memory or
    /// VRAM) of the fence word the next [`FENCE_STORE`] writes.
    FENCE_STORE_ADDR => FenceStoreAddr(u64, WO) @ 0x0098;
    /// WO64 (version 2.2): stores the value written at [`FENCE_STORE_ADDR`] (one
    /// single-copy-atomic store, ordered before every later device access), then re-evaluates
    /// the FENCE_WAITs blocked on that physical word, all before the write returns. For fence
    /// values whose address the OS gives the driver only as a process GPU VA (24H2,
    /// docs/hardware.md 8.3). A misaligned address, or one naming no memory, stores nothing.
    FENCE_STORE => FenceStore(u64, WO) @ 0x00A0;
    /// RW64 array: window `k` base at `SYSWIN_BASE + k * SYSWIN_STRIDE` (8-byte aligned).
    SYSWIN_BASE [16; SYSWIN_STRIDE] => SyswinBase(u64, RW) @ 0x0200;
    /// RW64 array: window `k` size in bytes at `SYSWIN_SIZE + k * SYSWIN_STRIDE`; 0 disables
    /// it.
    SYSWIN_SIZE [16; SYSWIN_STRIDE] => SyswinSize(u64, RW) @ 0x0208;
    /// RW32 array: physical doorbell `i` is bound to the queue whose id is at
    /// `DOORBELL_BIND + 4 * i`; [`crate::queue::NO_QUEUE`] unbinds it. Dedicated mode: the
    /// queue id page `i` rings. Global mode ([`Caps::GLOBAL_DOORBELL`], version 2.1): the
    /// process id (`QueueDescriptor::process_id`) whose user-mode queues page `i` may ring.
    DOORBELL_BIND [DOORBELL_MAX; 4] => DoorbellBind(u32, RW) @ 0x0800;

    /// RW64 per engine: GPU address of the runlist: an array of
    /// [`crate::queue::QueueDescriptor`].
    ENGINE_RUNLIST_BASE [ENGINE_MAX; ENGINE_STRIDE] => RunlistBase(u64, RW) @ ENGINE_BASE;
    /// RW32 per engine: number of descriptors in the runlist (at most
    /// [`crate::queue::RUNLIST_MAX`]).
    ENGINE_RUNLIST_COUNT [ENGINE_MAX; ENGINE_STRIDE] => RunlistCount(u32, RW)
        @ ENGINE_BASE + 0x08;
    /// WO32 per engine: writing 1 makes the CMP load the runlist atomically (it reads the
    /// descriptors during the write). Queues (identified by queue id) that stay keep their
    /// read pointer and blocked/fault state; queues that leave stop at a packet boundary
    /// before the write returns: a COPY/FILL in progress is finished first, a HANG in progress
    /// is abandoned (the queue's read pointer stays on it). A bad entry posts a
    /// [`crate::event::FaultCode::BadDescriptor`] fault and is skipped. A commit also ends
    /// the hold that follows an engine reset ([`crate::engine::STATUS_HELD`]).
    ENGINE_RUNLIST_COMMIT [ENGINE_MAX; ENGINE_STRIDE] => RunlistCommit(u32, WO)
        @ ENGINE_BASE + 0x0C;
    /// RO32 per engine: [`crate::engine::EngineStatus`]: state (bits 3:0), `has_work`
    /// (bit 8), `held` (bit 9, [`crate::engine::STATUS_HELD`]).
    ENGINE_STATUS [ENGINE_MAX; ENGINE_STRIDE] => EngineStatusReg(u32, RO) {
        /// [`crate::engine::EngineState`] value.
        state, with_state: 3:0,
        /// Some runlisted queue has unconsumed commands, or a packet is in flight.
        has_work, with_has_work: 8:8,
        /// Held after an engine reset until the next runlist commit.
        held, with_held: 9:9,
    } @ ENGINE_BASE + 0x10;
    /// WO32 per engine: [`crate::engine::ENGINE_CTRL_RESET`] resets this engine only: the
    /// packet in flight is aborted and its queue leaves the runlist, every other queue keeps
    /// its state, and the engine is held until the next `RUNLIST_COMMIT`
    /// ([`crate::engine::ResetResult`]).
    ENGINE_CTRL [ENGINE_MAX; ENGINE_STRIDE] => EngineCtrl(u32, WO) @ ENGINE_BASE + 0x14;
    /// RO32 per engine: [`crate::engine::ResetResult`] of the last reset.
    ENGINE_RESET_RESULT [ENGINE_MAX; ENGINE_STRIDE] => ResetResultReg(u32, RO)
        @ ENGINE_BASE + 0x18;
    /// RO32 per engine: id of the queue whose packet was in flight when the last successful
    /// reset aborted it, or [`crate::queue::NO_QUEUE`] if no packet was in flight.
    ENGINE_RESET_QUEUE [ENGINE_MAX; ENGINE_STRIDE] => ResetQueue(u32, RO)
        @ ENGINE_BASE + 0x1C;
    /// RO64 per engine: ring read pointer (bytes, free-running) of the aborted command in
    /// that queue (the INDIRECT's, for a packet inside an indirect buffer); 0 if nothing was
    /// aborted.
    ENGINE_RESET_RPTR [ENGINE_MAX; ENGINE_STRIDE] => ResetRptr(u64, RO) @ ENGINE_BASE + 0x20;
    /// RO32 per engine: id of the queue the engine is executing now, or
    /// [`crate::queue::NO_QUEUE`].
    ENGINE_CURRENT_QUEUE [ENGINE_MAX; ENGINE_STRIDE] => CurrentQueue(u32, RO)
        @ ENGINE_BASE + 0x28;
    /// WO32 per engine: write a queue id: the CMP rescans that queue's ring control
    /// (kernel-mode submission path, and resubmission after reset).
    ENGINE_QUEUE_KICK [ENGINE_MAX; ENGINE_STRIDE] => QueueKick(u32, WO) @ ENGINE_BASE + 0x2C;
    /// RO64 per engine: total commands this engine has completed (for tests and profiling).
    ENGINE_COMPLETED_COMMANDS [ENGINE_MAX; ENGINE_STRIDE] => CompletedCommands(u64, RO)
        @ ENGINE_BASE + 0x30;
    /// RW64 per engine: CMP (system-space) address of the scheduling log
    /// ([`crate::schedlog`]), 8-byte aligned. Takes effect at the next
    /// [`ENGINE_SCHED_LOG_CTRL`] write.
    ENGINE_SCHED_LOG_BASE [ENGINE_MAX; ENGINE_STRIDE] => SchedLogBase(u64, RW)
        @ ENGINE_BASE + 0x38;
    /// RW32 per engine: entries in the scheduling log, 1..=[`crate::schedlog::ENTRIES_MAX`].
    ENGINE_SCHED_LOG_ENTRIES [ENGINE_MAX; ENGINE_STRIDE] => SchedLogEntries(u32, RW)
        @ ENGINE_BASE + 0x40;
    /// RW32 per engine: index of the entry whose write raises [`IntCause::SCHED_LOG`]
    /// (every time the log wraps round to it); an index at or past `ENTRIES` never does.
    ENGINE_SCHED_LOG_IRQ_ENTRY [ENGINE_MAX; ENGINE_STRIDE] => SchedLogIrqEntry(u32, RW)
        @ ENGINE_BASE + 0x44;
    /// WO32 per engine: 1 adopts the log programmed in the three registers above, starting at
    /// the index and wraparound count in its header; 0 stops logging. Synchronous: when the
    /// write returns the CMP writes nothing more to the previous log. A log it cannot use
    /// (misaligned, unreachable, bad size) posts a `BadAddress` / `BadArgument` fault with
    /// `queue_id` = `NO_QUEUE` and leaves logging off.
    ENGINE_SCHED_LOG_CTRL [ENGINE_MAX; ENGINE_STRIDE] => SchedLogCtrl(u32, WO)
        @ ENGINE_BASE + 0x48;
    /// RW32 per engine: the engine's power state (F-state), [`crate::engine::ENGINE_POWER_F0`]
    /// (running) or [`crate::engine::ENGINE_POWER_F1`] (power-gated: picks and runs nothing;
    /// runlist, queues and a packet in flight are retained; writing F0 resumes). Reads the
    /// current state; other values are ignored. [`Caps::ENGINE_POWER`] only (without it the
    /// register reads 0 and ignores writes). Back to F0 on an adapter reset.
    ENGINE_POWER [ENGINE_MAX; ENGINE_STRIDE] => EnginePower(u32, RW) @ ENGINE_BASE + 0x50;
    /// WO32 per engine: write a runlist slot `s`: the CMP loads an *update* of the runlist
    /// it holds, atomically, before the write returns: it reads `RUNLIST_COUNT`, re-reads
    /// the descriptor in slot `s` (if `s` < the count) and every slot from the count it
    /// last loaded up to the new one, and drops the slots at or past the new count; every
    /// other slot keeps what it last loaded (the driver did not change it). Each re-read
    /// slot follows `RUNLIST_COMMIT`'s stay / leave / enter and `BadDescriptor` rules, a
    /// duplicate id being checked against the whole loaded runlist; the update ends an
    /// engine reset's hold. A commit of a queue set therefore costs the device the slots
    /// that changed, not the runlist ([`Caps::RUNLIST_UPDATE`] only; without it the write is
    /// ignored). docs/hardware.md 5.2.
    ENGINE_RUNLIST_UPDATE [ENGINE_MAX; ENGINE_STRIDE] => RunlistUpdate(u32, WO)
        @ ENGINE_BASE + 0x54;
    /// RW32 per engine: a queue id; [`ENGINE_QUEUE_STATE`] then shows that queue's state in
    /// the engine's loaded runlist (an index/data pair: the ISR, the only user, owns it under
    /// the interrupt lock). [`Caps::QUEUE_STATE`] only (without it: reads 0, ignores writes).
    ENGINE_QUEUE_SELECT [ENGINE_MAX; ENGINE_STRIDE] => QueueSelect(u32, RW)
        @ ENGINE_BASE + 0x58;
    /// RO32 per engine: the state of the queue [`ENGINE_QUEUE_SELECT`] names, read live
    /// from the CMP (no side effects). Lets the driver check a `Fault` record against the
    /// device rather than trust the event ring's memory (docs/hardware.md 7.2).
    /// [`Caps::QUEUE_STATE`] only (without it: reads 0).
    ENGINE_QUEUE_STATE [ENGINE_MAX; ENGINE_STRIDE] => QueueStateReg(u32, RO) {
        /// The queue is in the engine's loaded runlist.
        present, with_present: 0:0,
        /// ... and a fault stopped it (it runs nothing until it leaves the runlist or an
        /// engine or adapter reset).
        faulted, with_faulted: 1:1,
    } @ ENGINE_BASE + 0x5C;
}

/// Offsets inside an engine block, derived from the declarations above (for code that
/// addresses a block by engine number and register, [`engine_reg`]).
pub mod engine {
    use super::ENGINE_BASE;

    /// [`super::ENGINE_RUNLIST_BASE`] inside the block.
    pub const RUNLIST_BASE: usize = super::ENGINE_RUNLIST_BASE.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_RUNLIST_COUNT`] inside the block.
    pub const RUNLIST_COUNT: usize = super::ENGINE_RUNLIST_COUNT.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_RUNLIST_COMMIT`] inside the block.
    pub const RUNLIST_COMMIT: usize = super::ENGINE_RUNLIST_COMMIT.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_STATUS`] inside the block.
    pub const STATUS: usize = super::ENGINE_STATUS.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_CTRL`] inside the block.
    pub const CTRL: usize = super::ENGINE_CTRL.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_RESET_RESULT`] inside the block.
    pub const RESET_RESULT: usize = super::ENGINE_RESET_RESULT.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_RESET_QUEUE`] inside the block.
    pub const RESET_QUEUE: usize = super::ENGINE_RESET_QUEUE.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_RESET_RPTR`] inside the block.
    pub const RESET_RPTR: usize = super::ENGINE_RESET_RPTR.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_CURRENT_QUEUE`] inside the block.
    pub const CURRENT_QUEUE: usize = super::ENGINE_CURRENT_QUEUE.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_QUEUE_KICK`] inside the block.
    pub const QUEUE_KICK: usize = super::ENGINE_QUEUE_KICK.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_COMPLETED_COMMANDS`] inside the block.
    pub const COMPLETED_COMMANDS: usize =
        super::ENGINE_COMPLETED_COMMANDS.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_SCHED_LOG_BASE`] inside the block.
    pub const SCHED_LOG_BASE: usize = super::ENGINE_SCHED_LOG_BASE.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_SCHED_LOG_ENTRIES`] inside the block.
    pub const SCHED_LOG_ENTRIES: usize = super::ENGINE_SCHED_LOG_ENTRIES.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_SCHED_LOG_IRQ_ENTRY`] inside the block.
    pub const SCHED_LOG_IRQ_ENTRY: usize =
        super::ENGINE_SCHED_LOG_IRQ_ENTRY.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_SCHED_LOG_CTRL`] inside the block.
    pub const SCHED_LOG_CTRL: usize = super::ENGINE_SCHED_LOG_CTRL.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_POWER`] inside the block.
    pub const POWER: usize = super::ENGINE_POWER.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_RUNLIST_UPDATE`] inside the block.
    pub const RUNLIST_UPDATE: usize = super::ENGINE_RUNLIST_UPDATE.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_QUEUE_SELECT`] inside the block.
    pub const QUEUE_SELECT: usize = super::ENGINE_QUEUE_SELECT.wrapping_sub(ENGINE_BASE);
    /// [`super::ENGINE_QUEUE_STATE`] inside the block.
    pub const QUEUE_STATE: usize = super::ENGINE_QUEUE_STATE.wrapping_sub(ENGINE_BASE);
}

/// Offset of register `reg` in engine `e`'s block, or `None` past [`ENGINE_MAX`].
pub const fn engine_reg(e: u32, reg: usize) -> Option<usize> {
    if e >= ENGINE_MAX {
        return None;
    }
    // Bounded by the check above: at most 0x1F00 + reg.
    Some(
        ENGINE_BASE
            .wrapping_add((e as usize).wrapping_mul(ENGINE_STRIDE))
            .wrapping_add(reg),
    )
}

/// Offset of doorbell binding register `i`, or `None` past [`DOORBELL_MAX`].
pub const fn doorbell_bind_reg(i: u32) -> Option<usize> {
    <DoorbellBind as crate::register::Register>::DECL.offset_of(i)
}

/// Offsets of the base and size registers of window `k`, or `None` past [`SYSWIN_COUNT`].
pub fn syswin_regs(k: usize) -> Option<(usize, usize)> {
    let k = u32::try_from(k).ok()?;
    match (
        <SyswinBase as crate::register::Register>::DECL.offset_of(k),
        <SyswinSize as crate::register::Register>::DECL.offset_of(k),
    ) {
        (Some(base), Some(size)) => Some((base, size)),
        _ => None,
    }
}

bitflags! {
    /// [`CAPS`]: what this instance of the device implements.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Caps: u32 {
        /// FENCE_SIGNAL/FENCE_WAIT with conditional interrupts (native fences).
        const NATIVE_FENCE = 1 << 0;
        /// One global doorbell: every queue rings page 0 with its queue id.
        const GLOBAL_DOORBELL = 1 << 1;
        /// Fence events name the queue that was running (LOG-08).
        const OPTIMIZED_FENCE_IRQ = 1 << 2;
        /// Engines can be reset one at a time.
        const PER_ENGINE_RESET = 1 << 3;
        /// 64-bit memory writes are single-copy atomic (NF-01, MF-02).
        const ATOMIC64 = 1 << 4;
        /// LOG_WRITE and native-fence log buffers.
        const FENCE_LOG = 1 << 5;
        /// Fence events identify the fence (report tag); without it every fence event
        /// carries [`crate::event::NO_TAG`] and the driver reports "scan everything".
        const EXACT_FENCE_REPORT = 1 << 6;
        /// GPU page tables (docs/hardware.md 12.3-12.6): per-queue roots in
        /// `QueueDescriptor::page_table_base`, [`SYSTEM_PAGE_TABLE_BASE`],
        /// [`TLB_INVALIDATE`], page faults ([`crate::event::FaultCode::PageFault`]).
        const PAGE_TABLES = 1 << 7;
        /// Per-engine scheduling logs (docs/hardware.md 5.7, [`crate::schedlog`]): the CMP
        /// records when each context starts and stops running, in the OS's
        /// `DXGK_SCHEDULING_LOG_BUFFER` layout, and raises [`IntCause::SCHED_LOG`] when it
        /// writes the programmed interrupt entry.
        const SCHED_LOG = 1 << 8;
        /// The device's DMA is I/O coherent: it snoops the CPU's caches, so CPU writes are
        /// seen without a write-back and GPU writes invalidate stale CPU lines. Without it
        /// (some ARM64 platforms) software maintains the CPU caches itself (AL-06).
        const IO_COHERENT = 1 << 9;
        /// Per-engine power gating (docs/hardware.md 4.3, [`ENGINE_POWER`]): an engine in F1
        /// runs nothing and keeps its state until the driver writes F0.
        const ENGINE_POWER = 1 << 10;
        /// Runlist updates ([`ENGINE_RUNLIST_UPDATE`], docs/hardware.md 5.2): the CMP
        /// re-reads only the runlist slots the driver names, so adding or removing one
        /// queue costs the same with 10 or 4,000 queues on the engine.
        const RUNLIST_UPDATE = 1 << 11;
        /// Queue state registers ([`ENGINE_QUEUE_SELECT`], [`ENGINE_QUEUE_STATE`],
        /// docs/hardware.md 7.2): whether a queue is loaded and whether a fault stopped it,
        /// so a `Fault` record can be checked against the device.
        const QUEUE_STATE = 1 << 12;
        /// The event write-back word ([`EVENT_WB_ADDR`], docs/hardware.md 7.5) and
        /// [`IntCause::EVENT_PENDING`]: an ISR on a message interrupt needs no register read.
        const EVENT_WB = 1 << 13;
    }
}

bitflags! {
    /// [`DEVICE_STATUS`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DeviceStatus: u32 {
        /// The device is lost (surprise removal, fatal error): registers read all-ones
        /// except this one, nothing executes until an adapter reset, and no interrupt is
        /// raised. An ISR that reads INT_STATUS as all-ones must not claim the interrupt.
        const LOST = 1 << 0;
        /// An adapter reset is in progress.
        const RESETTING = 1 << 1;
    }
}

bitflags! {
    /// Interrupt causes ([`INT_STATUS`], [`INT_ENABLE`], [`INT_ACK`]). Details of each
    /// occurrence are in the event ring ([`crate::event`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct IntCause: u32 {
        /// A fence signal needed an interrupt (CurrentValue >= MonitoredValue, NF-03).
        const FENCE_SIGNALED = 1 << 0;
        /// A PROGRESS command with the interrupt flag completed (DMA completed).
        const PROGRESS = 1 << 1;
        /// An engine changed state (idle -> F1 request, hung).
        const ENGINE_STATE = 1 << 2;
        /// A queue faulted (bad command or address).
        const FAULT = 1 << 3;
        /// The event ring was full and at least one record was dropped: the driver must
        /// treat fence reports as incomplete (report "scan everything").
        const EVENT_OVERFLOW = 1 << 4;
        /// An engine reset finished (see the engine's RESET_RESULT).
        const RESET_DONE = 1 << 5;
        /// The CMP wrote an engine's scheduling-log interrupt entry
        /// ([`crate::event::EventKind::SchedLog`]).
        const SCHED_LOG = 1 << 6;
        /// A write to [`EVENT_RING_RPTR`] left records unconsumed (they were posted after the
        /// ISR read the write pointer): raised so that they interrupt again, on a message
        /// interrupt whose cause bits the ISR acknowledged by a posted write.
        const EVENT_PENDING = 1 << 7;
    }
}

/// [`CONFIG`] fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Engines (nodes), 1..=[`ENGINE_MAX`].
    pub engines: u32,
    /// Physical doorbells (pages in BAR2), 1..=[`DOORBELL_MAX`].
    pub doorbells: u32,
}

impl Config {
    /// Packs into the register value: engines in bits 7:0, doorbells in bits 31:16.
    pub const fn to_reg(self) -> u32 {
        ConfigReg::new(0)
            .with_engines(self.engines)
            .with_doorbells(self.doorbells)
            .raw()
    }

    /// Unpacks the register value.
    pub const fn from_reg(v: u32) -> Self {
        let r = ConfigReg::new(v);
        Self {
            engines: r.engines(),
            doorbells: r.doorbells(),
        }
    }
}

const _: () = assert!(engine::POWER + 4 <= ENGINE_STRIDE);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_blocks_do_not_overlap() {
        let last_syswin = syswin_regs(SYSWIN_COUNT - 1).unwrap().1 + 8;
        assert!(last_syswin <= DOORBELL_BIND);
        assert!(doorbell_bind_reg(DOORBELL_MAX - 1).unwrap() + 4 <= ENGINE_BASE);
        assert!(engine_reg(ENGINE_MAX - 1, engine::COMPLETED_COMMANDS).unwrap() + 8 <= 0x1_0000);
        assert_eq!(engine_reg(ENGINE_MAX, 0), None);
        assert_eq!(doorbell_bind_reg(DOORBELL_MAX), None);
        assert_eq!(syswin_regs(SYSWIN_COUNT), None);
    }

    #[test]
    fn declarations_do_not_overlap_and_decode_back() {
        use crate::register::Width;
        let mut spans = std::vec::Vec::new();
        for id in ALL {
            let d = id.decl();
            assert!(
                d.count >= 1 && (d.count == 1) == (d.stride == 0),
                "{}",
                d.name
            );
            for i in 0..d.count {
                let off = d.offset_of(i).unwrap();
                assert_eq!(off % d.width.bytes(), 0, "{} aligned", d.name);
                assert!(off + d.width.bytes() <= 0x1_0000, "{} inside BAR0", d.name);
                assert_eq!(lookup(off), Some((*id, i)), "{}[{i}]", d.name);
                spans.push((off, off + d.width.bytes(), d.name));
            }
            assert_eq!(d.offset_of(d.count), None);
        }
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "{} overlaps {}", w[0].2, w[1].2);
        }
        assert_eq!(RegId::GpuClock.decl().width, Width::W64);
        assert_eq!(RegId::IntAck.decl().access, crate::register::Access::W1C);
        assert_eq!(
            lookup(GPU_CLOCK + 4),
            None,
            "high half is not a register start"
        );
    }

    /// The compile-time decode table agrees with a search of every declaration at every
    /// offset of BAR0, register starts or not.
    #[test]
    fn decode_table_matches_a_search_of_every_declaration() {
        for off in 0..0x1_0000 {
            let searched = ALL
                .iter()
                .find_map(|id| id.decl().index_of(off).map(|i| (*id, i)));
            assert_eq!(lookup(off), searched, "offset {off:#x}");
        }
        assert_eq!(DECLS.len(), ALL.len());
        for (id, d) in ALL.iter().zip(DECLS) {
            assert_eq!(id.decl(), *d);
        }
    }

    #[test]
    fn fields_round_trip() {
        let s = EngineStatusReg::new(0).with_state(3).with_held(1);
        assert_eq!(s.raw(), 0x203);
        assert_eq!((s.state(), s.has_work(), s.held()), (3, 0, 1));
        assert_eq!(ConfigReg::new(0x0010_0002).doorbells(), 16);
        assert_eq!(Version::new(VERSION_VALUE).major(), 2);
    }

    #[test]
    fn config_round_trip() {
        let c = Config {
            engines: 2,
            doorbells: 16,
        };
        assert_eq!(Config::from_reg(c.to_reg()), c);
    }

    #[test]
    fn magic_values_are_ascii() {
        assert_eq!(&ID_VALUE.to_le_bytes(), b"RVGP");
        assert_eq!(&ADAPTER_RESET_KEY.to_le_bytes(), b"RSET");
    }
}
