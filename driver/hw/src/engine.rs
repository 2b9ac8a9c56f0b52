//! Engines (WDDM nodes), their states and reset.
//!
//! rvgpu has `CONFIG.engines` engines (default 2). Each is a separately schedulable part of
//! the adapter, a WDDM *node*; there is one physical adapter, so every node has
//! EngineOrdinal 0 (TDR-02).

use crate::regs::EngineStatusReg;

/// Engine 0: compute (the render node in WDDM terms).
pub const ENGINE_COMPUTE: u32 = 0;
/// Engine 1: copy.
pub const ENGINE_COPY: u32 = 1;

/// [`crate::regs::engine::CTRL`] value: reset this engine (see [`ResetResult`] for what a
/// reset aborts and keeps, and [`STATUS_HELD`] for the hold that follows it).
pub const ENGINE_CTRL_RESET: u32 = 1;

/// [`crate::regs::engine::POWER`] value: F0, the engine is powered and runs work.
pub const ENGINE_POWER_F0: u32 = 0;
/// [`crate::regs::engine::POWER`] value: F1, the engine is power-gated. It picks no queue and
/// runs no packet; a packet in flight stays where it is. The CMP is not gated: runlist
/// commits, doorbells and `QUEUE_KICK` still load write pointers and fence signals still wake
/// waits, so nothing is lost; the work runs once the driver writes [`ENGINE_POWER_F0`].
/// Neither hang nor idle (F1 request) detection runs while gated. Leaving F1 restarts the
/// idle timer (an engine that stays idle requests F1 again after the idle period).
pub const ENGINE_POWER_F1: u32 = 1;
/// Number of F-states the engine has (F0 and F1): the `StateCount` of its power component.
pub const ENGINE_POWER_STATES: u32 = 2;

wire_enum! {
    /// Engine state in `STATUS` bits 3:0 and in ENGINE_STATE events. Values 0..=2 are chosen to
    /// equal `DXGK_ENGINE_STATE` where the OS defines one.
    pub enum EngineState: u32, from_u32 {
        /// Running or able to run work.
        Active = 0,
        /// Idle long enough that the device asks to go to F1 (UM-13).
        TransitionToF1 = 1,
        /// Made no progress for the hang-detection period.
        Hung = 2,
        /// Idle: every runlisted queue is empty or blocked on a wait.
        Idle = 3,
        /// A reset is in progress.
        Resetting = 4,
    }
}

/// `STATUS` bits 3:0: the [`EngineState`].
pub const STATUS_STATE_MASK: u32 = EngineStatusReg::new(0).with_state(u32::MAX).raw();
/// `STATUS` bit 8: some runlisted queue has unconsumed commands (or a packet is in flight).
pub const STATUS_HAS_WORK: u32 = EngineStatusReg::new(0).with_has_work(1).raw();
/// `STATUS` bit 9: the engine is *held* after a successful per-engine reset
/// ([`ENGINE_CTRL_RESET`]). A held engine executes nothing; doorbells and `QUEUE_KICK` still
/// load write pointers, and fence signals from other engines and `WAIT_RESCAN` still wake its
/// queues' waits, but nothing runs until the next `RUNLIST_COMMIT` (value 1), which ends the
/// hold ([`crate::regs::engine::RUNLIST_COMMIT`]). The state reads `Idle` while held. An
/// adapter reset also ends it.
pub const STATUS_HELD: u32 = EngineStatusReg::new(0).with_held(1).raw();

/// `STATUS` register: state in bits 3:0 ([`STATUS_STATE_MASK`]), `has_work` in bit 8
/// ([`STATUS_HAS_WORK`]), `held` in bit 9 ([`STATUS_HELD`]); other bits read 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineStatus {
    pub state: EngineState,
    /// Some runlisted queue has unconsumed commands, or a packet is in flight.
    pub has_work: bool,
    /// Held after an engine reset until the next runlist commit ([`STATUS_HELD`]).
    pub held: bool,
}

impl EngineStatus {
    /// Packs into the register value.
    pub const fn to_reg(self) -> u32 {
        (self.state as u32)
            | if self.has_work { STATUS_HAS_WORK } else { 0 }
            | if self.held { STATUS_HELD } else { 0 }
    }

    /// Unpacks; `None` for an unknown state.
    pub const fn from_reg(v: u32) -> Option<Self> {
        match EngineState::from_u32(v & STATUS_STATE_MASK) {
            Some(state) => Some(Self {
                state,
                has_work: v & STATUS_HAS_WORK != 0,
                held: v & STATUS_HELD != 0,
            }),
            None => None,
        }
    }
}

wire_enum! {
    /// Result of an engine reset (`RESET_RESULT`).
    ///
    /// Semantics of a successful reset: the engine stops at once. The packet *in flight* is
    /// aborted: a COPY or FILL part-way through its chunks, a HANG, or such a packet inside a
    /// started INDIRECT (then the whole INDIRECT is aborted). Its queue is in `RESET_QUEUE` and
    /// the ring read pointer of the aborted packet (of the INDIRECT, for a packet in a buffer) in
    /// `RESET_RPTR`; every command of that queue before it has completed and its effects are in
    /// memory; no command after it has executed. An aborted COPY or FILL may have written a
    /// prefix of its destination (it runs in chunks): software must treat the destination of an
    /// aborted transfer as undefined. A queue that is merely between packets (including between
    /// the packets of an indirect buffer, or blocked on a FENCE_WAIT) is not executing: with no
    /// packet in flight, `RESET_QUEUE` reads `NO_QUEUE`, `RESET_RPTR` 0, and no queue is aborted.
    ///
    /// Only the aborted queue leaves the engine's loaded runlist. Every other queue of the
    /// engine keeps its read pointer, its position in an indirect buffer, its blocked or woken
    /// FENCE_WAIT and its fault state. The engine is then *held* ([`STATUS_HELD`]): it runs
    /// nothing until the driver writes `RUNLIST_COMMIT`, which applies the normal stay / leave /
    /// enter rules (the aborted queue, if recommitted, enters afresh from its ring control).
    /// Other engines are not touched.
    ///
    /// A failed reset changes nothing: `RESET_QUEUE`/`RESET_RPTR` keep their previous values
    /// (read them only after `Ok`), the engine is not held and keeps running or hanging.
    pub enum ResetResult: u32, from_u32 {
        /// No reset has happened.
        None = 0,
        /// The engine was reset.
        Ok = 1,
        /// The reset failed (fault injection, or device lost); only an adapter reset helps.
        Failed = 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_round_trip() {
        let s = EngineStatus {
            state: EngineState::Hung,
            has_work: true,
            held: false,
        };
        assert_eq!(EngineStatus::from_reg(s.to_reg()), Some(s));
        assert_eq!(EngineStatus::from_reg(0xF), None);
        let held = EngineStatus {
            state: EngineState::Idle,
            has_work: true,
            held: true,
        };
        assert_eq!(held.to_reg(), 0x3 | STATUS_HAS_WORK | STATUS_HELD);
        assert_eq!(held.to_reg(), 0x303);
        assert_eq!(EngineStatus::from_reg(held.to_reg()), Some(held));
    }
}

#[cfg(test)]
mod status_bits {
    use super::*;

    #[test]
    fn status_bits_come_from_the_declaration() {
        assert_eq!(STATUS_STATE_MASK, 0xF);
        assert_eq!(STATUS_HAS_WORK, 1 << 8);
        assert_eq!(STATUS_HELD, 1 << 9);
    }
}
