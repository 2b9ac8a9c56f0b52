//! ETW, as far as rvgpu needs it: provider registrations (`EtwRegister`/`EtwUnregister`),
//! sessions that enable providers (their enable callbacks called as Windows calls them), and
//! the events providers write (`EtwWriteTransfer`), decoded from their TraceLogging metadata
//! ([`crate::base::etw::decode`]) as a consumer decodes an .etl on Windows.
//!
//! **Sessions** are per machine ([`Session`], `MachineState::etw`): a session enables a provider
//! GUID at a level and keywords, and records the events of that provider written on its
//! machine's threads. **Registrations** are process-wide: one copy of the driver serves every
//! machine of a process (the Linux build's statics, and the image's, which is mapped once per
//! process), registered through `SimKernel` or the image's ntoskrnl imports (`simos::pe`). A
//! registration's callback sees the sessions of all machines combined, as ETW combines the
//! sessions of one kernel (the highest level, the union of `MatchAnyKeyword`, the intersection
//! of `MatchAllKeyword`); its events go to the writing thread's machine.
//!
//! The enable rules (level 0 = every level; an event without keywords always matches, else it
//! needs one of MatchAny, or MatchAny = 0, and all of MatchAll) are ETW's, from the
//! EnableTraceEx2 reference page.

use std::sync::Arc;

use crate::adapter::context::MachineContext;
use crate::adapter::state::MachineState;
use crate::base::etw::{decode, session};
use crate::base::lock::lock;
pub use decode::{DecodeError, Decoded, Value};
#[cfg(test)]
use session::combined;
use session::ENABLES;
// The PE emulator's ntoskrnl registers the image's providers through these.
#[cfg(target_os = "linux")]
pub(crate) use session::{provider_of, register_then, unregister, Callback};
pub use session::{registrations, Enable, Event, Guid, Session};

/// rvgpu's provider, `rvgpu.Kmd` (the driver's GUID, for sessions to enable).
pub const RVGPU_KMD: Guid = rvgpu_kmd::etw::PROVIDER_GUID;

/// Starts (or changes) `state`'s session for `e.guid`; the provider's enable callbacks run
/// before this returns, on this thread, in `state`'s context.
pub fn enable(state: &Arc<MachineState>, e: Enable) {
    {
        let mut en = lock(&state.etw().enables);
        en.retain(|x| x.guid != e.guid);
        en.push(e);
    }
    {
        let mut all = lock(&ENABLES);
        all.retain(|(m, x)| !(*m == state.id() && x.guid == e.guid));
        all.push((state.id(), e));
    }
    notify(Some(state), e.guid);
}

/// Stops `state`'s session for `guid`.
pub fn disable(state: &Arc<MachineState>, guid: Guid) {
    lock(&state.etw().enables).retain(|x| x.guid != guid);
    lock(&ENABLES).retain(|(m, x)| !(*m == state.id() && x.guid == guid));
    notify(Some(state), guid);
}

/// Tells the registrations of `guid` what the sessions now ask, in `state`'s context when a
/// machine's session changed (the image's callback runs on its emulated processor).
fn notify(state: Option<&Arc<MachineState>>, guid: Guid) {
    session::notify_in(guid, || state.map(|s| MachineContext::enter(s.clone())));
}

impl crate::Machine {
    /// DxgkDdiControlEtwLogging (PASSIVE): Dxgkrnl switching the driver's ETW logging.
    pub fn control_etw_logging(
        &self,
        enable: bool,
        flags: u32,
        level: u8,
    ) -> Result<(), crate::SimError> {
        let f = crate::adapter::ddi::in_table!(self.table()?, DxgkDdiControlEtwLogging)
            .ok_or_else(|| crate::SimError::NoDdi("DxgkDdiControlEtwLogging"))?;
        // The driver-wide rules, then the driver's routine with plain values.
        crate::adapter::ddi::call_driver(&self.state, f, |_| {
            f.call_bare((u8::from(enable), flags, level))
        })
    }

    /// Starts (or changes) this machine's ETW session for `e.guid` ([`enable`]).
    pub fn etw_enable(&self, e: Enable) {
        enable(&self.state, e);
    }

    /// Stops this machine's ETW session for `guid` ([`disable`]).
    pub fn etw_disable(&self, guid: Guid) {
        disable(&self.state, guid);
    }

    /// This machine's ETW session.
    pub fn etw(&self) -> &Session {
        self.state.etw()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Guid = Guid {
        Data1: 1,
        Data2: 2,
        Data3: 3,
        Data4: [4; 8],
    };

    fn descriptor(level: u8, keyword: u64) -> rvgpu_kmd::etw::EventDescriptor {
        rvgpu_kmd::etw::EventDescriptor {
            id: 0,
            version: 0,
            channel: decode::CHANNEL_TRACELOGGING,
            level,
            opcode: 0,
            task: 0,
            keyword,
        }
    }

    /// A provider's malformed metadata is an error the session keeps, never a panic; what the
    /// session does not enable is not even decoded.
    #[test]
    fn ddi_04_session_keeps_decode_errors_and_filters_by_level_and_keyword() {
        let s = Session::new(u64::MAX);
        lock(&s.enables).push(Enable {
            level: 4,
            match_any: 0x2,
            ..Enable::all(G)
        });
        let prov: &[u8] = &[4, 0, b'P', 0];
        let bad_event: &[u8] = &[9, 0, 0, b'E'];
        s.deliver(G, &descriptor(4, 0x2), &[(2, prov), (1, bad_event)]);
        assert_eq!(s.errors().len(), 1, "{:?}", s.errors());
        let event: &[u8] = &[5, 0, 0, b'E', 0];
        s.deliver(G, &descriptor(5, 0x2), &[(2, prov), (1, event)]);
        s.deliver(G, &descriptor(4, 0x1), &[(2, prov), (1, event)]);
        assert!(
            s.events().is_empty(),
            "above the level, outside the keywords"
        );
        s.deliver(G, &descriptor(4, 0x2), &[(2, prov), (1, event)]);
        s.deliver(G, &descriptor(1, 0), &[(2, prov), (1, event)]);
        assert_eq!(s.events().len(), 2);
        assert_eq!(s.events()[0].decoded.name, "E");
    }

    #[test]
    fn sessions_combine_as_etw_combines_them() {
        let a = Enable {
            level: 3,
            match_any: 0x1,
            match_all: 0x3,
            ..Enable::all(G)
        };
        let b = Enable {
            level: 5,
            match_any: 0x4,
            match_all: 0x1,
            ..Enable::all(G)
        };
        lock(&ENABLES).push((u64::MAX - 1, a));
        lock(&ENABLES).push((u64::MAX - 2, b));
        let c = combined(G).expect("enabled");
        lock(&ENABLES).retain(|(m, _)| *m < u64::MAX - 2);
        assert_eq!((c.level, c.match_any, c.match_all), (5, 0x5, 0x1));
        assert!(combined(G).is_none());
    }
}
