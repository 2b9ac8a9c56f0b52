//! ETW, as far as rvgpu needs it: provider registrations (`EtwRegister`/`EtwUnregister`),
//! sessions that enable providers (their enable callbacks called as Windows calls them), and
//! the events providers write (`EtwWriteTransfer`), decoded from their TraceLogging metadata
//! ([`decode`]) as a consumer decodes an .etl on Windows.
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

pub mod decode;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rvgpu_kmd::etw::EnableCallback;

use crate::base::lock::lock;
use crate::dxgkrnl::state::MachineState;
pub use decode::{DecodeError, Decoded, Value};
pub use rvgpu_kmd::etw::Guid;

/// rvgpu's provider, `rvgpu.Kmd` (the driver's GUID, for sessions to enable).
pub const RVGPU_KMD: Guid = rvgpu_kmd::etw::PROVIDER_GUID;

/// `EVENT_CONTROL_CODE_DISABLE_PROVIDER` / `…_ENABLE_PROVIDER`.
const CONTROL_DISABLE: u32 = 0;
const CONTROL_ENABLE: u32 = 1;

/// What a session asks of a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enable {
    /// The provider.
    pub guid: Guid,
    /// The highest level recorded (0: all).
    pub level: u8,
    /// `MatchAnyKeyword` and `MatchAllKeyword`.
    pub match_any: u64,
    pub match_all: u64,
}

impl Enable {
    /// Every event of `guid`.
    pub fn all(guid: Guid) -> Self {
        Self {
            guid,
            level: 0,
            match_any: 0,
            match_all: 0,
        }
    }

    /// ETW's rule: whether an event of this level and keyword is recorded.
    pub fn wants(&self, level: u8, keyword: u64) -> bool {
        (self.level == 0 || level <= self.level)
            && (keyword == 0
                || ((self.match_any == 0 || keyword & self.match_any != 0)
                    && keyword & self.match_all == self.match_all))
    }
}

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The simulation's QPC when it was written ([`crate::base::clock::qpc`]).
    pub qpc: u64,
    /// The registration's provider GUID.
    pub guid: Guid,
    /// What its metadata says.
    pub decoded: Decoded,
}

/// A machine's ETW session: what it enables and what it recorded.
#[derive(Debug)]
pub struct Session {
    machine: u64,
    enables: Mutex<Vec<Enable>>,
    events: Mutex<Vec<Event>>,
    errors: Mutex<Vec<String>>,
}

impl Session {
    /// The session of machine `machine` (its id), enabling nothing.
    pub(crate) fn new(machine: u64) -> Self {
        Self {
            machine,
            enables: Mutex::default(),
            events: Mutex::default(),
            errors: Mutex::default(),
        }
    }

    /// The events recorded so far, in the order they were written.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.events).clone()
    }

    /// Events that could not be decoded, with the reason (a provider bug).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.errors).clone()
    }

    /// Records an event `guid`'s provider wrote on this machine, if a session enables it.
    pub(crate) fn deliver(
        &self,
        guid: Guid,
        descriptor: &rvgpu_kmd::etw::EventDescriptor,
        data: &[(u8, &[u8])],
    ) {
        let wanted = lock(&self.enables)
            .iter()
            .any(|e| e.guid == guid && e.wants(descriptor.level, descriptor.keyword));
        if !wanted {
            return;
        }
        match decode::decode(
            descriptor.channel,
            descriptor.level,
            descriptor.keyword,
            data,
        ) {
            Ok(decoded) => lock(&self.events).push(Event {
                qpc: crate::base::clock::qpc(),
                guid,
                decoded,
            }),
            Err(e) => lock(&self.errors).push(e.to_string()),
        }
    }
}

impl Drop for Session {
    /// The machine is gone: its sessions stop (the Linux build's registration is told) and its
    /// image's registrations with them.
    fn drop(&mut self) {
        let guids: Vec<Guid> = lock(&self.enables).iter().map(|e| e.guid).collect();
        lock(&ENABLES).retain(|(m, _)| *m != self.machine);
        for g in guids {
            notify(None, g);
        }
    }
}

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

/// An enable callback: the Linux build's, or one in the PE image.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Callback {
    /// A host function and its context.
    Host(EnableCallback, usize),
    /// The image's routine and its context, run on the emulated processor.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Pe(usize, u64),
}

#[derive(Debug)]
struct Registration {
    handle: u64,
    guid: Guid,
    callback: Option<Callback>,
}

static REGISTRATIONS: Mutex<Vec<Registration>> = Mutex::new(Vec::new());
/// Every machine's enables: (machine id, enable).
static ENABLES: Mutex<Vec<(u64, Enable)>> = Mutex::new(Vec::new());
/// REGHANDLEs are opaque to providers; these look like kernel pointers and are never reused.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(0xFFFF_C000_0001_0000);

/// The combined enable every machine's sessions ask of `guid`.
fn combined(guid: Guid) -> Option<Enable> {
    let all = lock(&ENABLES);
    let mut it = all.iter().filter(|(_, e)| e.guid == guid).map(|(_, e)| *e);
    let first = it.next()?;
    Some(it.fold(first, |a, b| Enable {
        guid,
        level: if a.level == 0 || b.level == 0 {
            0
        } else {
            a.level.max(b.level)
        },
        match_any: if a.match_any == 0 || b.match_any == 0 {
            0
        } else {
            a.match_any | b.match_any
        },
        match_all: a.match_all & b.match_all,
    }))
}

/// Calls `cb` with what its registration now sees (enable or disable).
fn call(cb: Callback, e: Option<Enable>) {
    // The source id Windows passes from inside EtwRegister is the zero GUID
    // (24H2 `EtwpRegisterKMProvider` @ 0x140A57524); the simulation passes it always.
    static SOURCE: Guid = Guid {
        Data1: 0,
        Data2: 0,
        Data3: 0,
        Data4: [0; 8],
    };
    let (code, level, any, all) = match e {
        Some(e) => (CONTROL_ENABLE, e.level, e.match_any, e.match_all),
        None => (CONTROL_DISABLE, 0, 0, 0),
    };
    match cb {
        Callback::Host(f, ctx) => {
            // SAFETY: the Linux build's callback with the context it registered; it reads
            // nothing through the (null) filter pointer.
            unsafe {
                f(
                    &SOURCE,
                    code,
                    level,
                    any,
                    all,
                    std::ptr::null(),
                    ctx as *mut _,
                )
            }
        }
        Callback::Pe(routine, ctx) => {
            #[cfg(target_os = "linux")]
            {
                let args = [
                    std::ptr::from_ref(&SOURCE) as u64,
                    u64::from(code),
                    u64::from(level),
                    any,
                    all,
                    0,
                    ctx,
                ];
                // A fault in the callback is raised on the machine by the emulator.
                let _ = crate::pe::cpu::call(routine, &args);
            }
            #[cfg(not(target_os = "linux"))]
            let _ = (routine, ctx);
        }
    }
}

/// Tells the registrations of `guid` what the sessions now ask, in `state`'s context when a
/// machine's session changed (the image's callback runs on its emulated processor).
fn notify(state: Option<&Arc<MachineState>>, guid: Guid) {
    let cbs: Vec<Callback> = lock(&REGISTRATIONS)
        .iter()
        .filter(|r| r.guid == guid)
        .filter_map(|r| r.callback)
        .collect();
    if cbs.is_empty() {
        return;
    }
    let e = combined(guid);
    let _ctx = state.map(|s| crate::dxgkrnl::kernel::MachineContext::enter(s.clone()));
    let _irql = crate::dxgkrnl::kernel::IrqlScope::enter(rvgpu_kmd::platform::Irql::Passive);
    for cb in cbs {
        call(cb, e);
    }
}

/// `EtwRegister`'s work once its arguments are checked: a new handle; the callback runs
/// before this returns if a session already enables the provider.
pub(crate) fn register(guid: Guid, callback: Option<Callback>) -> u64 {
    register_then(guid, callback, |_| {})
}

/// As [`register`], with `published(handle)` run before the callback (the image's
/// `RegHandle` written first, as Windows writes it).
pub(crate) fn register_then(
    guid: Guid,
    callback: Option<Callback>,
    published: impl FnOnce(u64),
) -> u64 {
    let handle = NEXT_HANDLE.fetch_add(0x100, Ordering::Relaxed);
    lock(&REGISTRATIONS).push(Registration {
        handle,
        guid,
        callback,
    });
    published(handle);
    if let (Some(cb), Some(e)) = (callback, combined(guid)) {
        call(cb, Some(e));
    }
    handle
}

/// `EtwUnregister`: whether `handle` was a registration.
pub(crate) fn unregister(handle: u64) -> bool {
    let mut regs = lock(&REGISTRATIONS);
    let before = regs.len();
    regs.retain(|r| r.handle != handle);
    regs.len() != before
}

/// The provider of registration `handle`.
pub(crate) fn provider_of(handle: u64) -> Option<Guid> {
    lock(&REGISTRATIONS)
        .iter()
        .find(|r| r.handle == handle)
        .map(|r| r.guid)
}

/// How many registrations of provider `guid` the process holds.
pub fn registrations(guid: Guid) -> usize {
    lock(&REGISTRATIONS)
        .iter()
        .filter(|r| r.guid == guid)
        .count()
}

impl crate::Machine {
    /// DxgkDdiControlEtwLogging (PASSIVE): Dxgkrnl switching the driver's ETW logging.
    pub fn control_etw_logging(
        &self,
        enable: bool,
        flags: u32,
        level: u8,
    ) -> Result<(), crate::SimError> {
        let f = self
            .table()?
            .DxgkDdiControlEtwLogging
            .ok_or_else(|| crate::SimError::Simulation("no DxgkDdiControlEtwLogging".into()))?;
        crate::dxgkrnl::ddi::call_driver(
            &self.state,
            crate::dxgkrnl::rules::Routine::DxgkDdiControlEtwLogging,
            f as usize,
            // SAFETY: the driver's routine with plain values, at PASSIVE_LEVEL.
            || unsafe { f(u8::from(enable), flags, level) },
        )
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
