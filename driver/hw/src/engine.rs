//! Engines (WDDM nodes), their states and reset.
//!
//! rvgpu has `CONFIG.engines` engines (default 2). Each is a separately schedulable part of
//! the adapter, a WDDM *node*; there is one physical adapter, so every node has
//! EngineOrdinal 0 (TDR-02).

/// Engine 0: compute (the render node in WDDM terms).
pub const ENGINE_COMPUTE: u32 = 0;
/// Engine 1: copy.
pub const ENGINE_COPY: u32 = 1;

/// [`crate::regs::engine::CTRL`] value: reset this engine.
pub const ENGINE_CTRL_RESET: u32 = 1;

/// Engine state in `STATUS` bits 3:0 and in ENGINE_STATE events. Values 0..=2 are chosen to
/// equal `DXGK_ENGINE_STATE` where the OS defines one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum EngineState {
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

impl EngineState {
    /// Decodes a state value.
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Active,
            1 => Self::TransitionToF1,
            2 => Self::Hung,
            3 => Self::Idle,
            4 => Self::Resetting,
            _ => return None,
        })
    }
}

/// `STATUS` register: state in bits 3:0; bit 8 set while some queue has unconsumed commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineStatus {
    pub state: EngineState,
    pub has_work: bool,
}

impl EngineStatus {
    /// Packs into the register value.
    pub const fn to_reg(self) -> u32 {
        (self.state as u32) | if self.has_work { 1 << 8 } else { 0 }
    }

    /// Unpacks; `None` for an unknown state.
    pub const fn from_reg(v: u32) -> Option<Self> {
        match EngineState::from_u32(v & 0xF) {
            Some(state) => Some(Self {
                state,
                has_work: v & (1 << 8) != 0,
            }),
            None => None,
        }
    }
}

/// Result of an engine reset (`RESET_RESULT`).
///
/// Semantics of a successful reset: the engine stops at once; the packet executing in the
/// current queue is aborted (its rptr is in `RESET_RPTR`, its queue in `RESET_QUEUE`); every
/// command before it has completed and its effects are in memory; no command after it has
/// executed. An aborted COPY or FILL may have written a prefix of its destination (it runs in
/// chunks): software must treat the destination of an aborted transfer as undefined. With
/// nothing executing, RESET_QUEUE reads NO_QUEUE and RESET_RPTR 0. All of the engine's queues are dropped from its runlist (the driver reprograms
/// and commits one). Other engines are not touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ResetResult {
    /// No reset has happened.
    None = 0,
    /// The engine was reset.
    Ok = 1,
    /// The reset failed (fault injection, or device lost); only an adapter reset helps.
    Failed = 2,
}

impl ResetResult {
    /// Decodes a result value.
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::None,
            1 => Self::Ok,
            2 => Self::Failed,
            _ => return None,
        })
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
        };
        assert_eq!(EngineStatus::from_reg(s.to_reg()), Some(s));
        assert_eq!(EngineStatus::from_reg(0xF), None);
    }
}
