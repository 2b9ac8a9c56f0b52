//! ETW's state: the per-machine sessions, the process-wide provider registrations and the
//! enable callbacks they are told through. What sits above a machine (entering its context to
//! enable or disable a session, Dxgkrnl's `DxgkDdiControlEtwLogging`) is in `crate::etw`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::decode::{self, Decoded};
use crate::base::lock::lock;
use crate::base::processor::IrqlScope;
pub use rvgpu_kmd::etw::Guid;

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
    pub(crate) enables: Mutex<Vec<Enable>>,
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
            notify_in::<()>(g, || None);
        }
    }
}

/// Runs the image's routine at the first argument with the arguments given, on the emulated
/// processor.
pub(crate) type PeRunner = fn(usize, &[u64]);

/// The Linux build's enable callback bound to its context (by the driver->OS FFI,
/// `dxgkrnl::callbacks::ffi`): source, control code, level, match-any, match-all.
pub(crate) type HostCallback = Arc<dyn Fn(&Guid, u32, u8, u64, u64) + Send + Sync>;

/// An enable callback: the Linux build's, or one in the PE image.
#[derive(Clone)]
pub(crate) enum Callback {
    /// A host function with its context.
    Host(HostCallback),
    /// The image's routine and its context, run on the emulated processor by the third field
    /// (the PE loader's `cpu::call`, handed in so that ETW needs nothing above it).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Pe(usize, u64, PeRunner),
}

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Callback::Host(_) => f.write_str("Host"),
            Callback::Pe(routine, ctx, _) => write!(f, "Pe({routine:#x}, {ctx:#x})"),
        }
    }
}

#[derive(Debug)]
struct Registration {
    handle: u64,
    guid: Guid,
    callback: Option<Callback>,
}

static REGISTRATIONS: Mutex<Vec<Registration>> = Mutex::new(Vec::new());
/// Every machine's enables: (machine id, enable).
pub(crate) static ENABLES: Mutex<Vec<(u64, Enable)>> = Mutex::new(Vec::new());
/// REGHANDLEs are opaque to providers; these look like kernel pointers and are never reused.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(0xFFFF_C000_0001_0000);

/// The combined enable every machine's sessions ask of `guid`.
pub(crate) fn combined(guid: Guid) -> Option<Enable> {
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
        Callback::Host(f) => f(&SOURCE, code, level, any, all),
        Callback::Pe(routine, ctx, run) => {
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
                run(routine, &args);
            }
            #[cfg(not(target_os = "linux"))]
            let _ = (routine, ctx, run);
        }
    }
}

/// Tells the registrations of `guid` what the sessions now ask; `enter` (run once, only when a
/// registration has a callback) puts the thread in the machine's context first.
pub(crate) fn notify_in<G>(guid: Guid, enter: impl FnOnce() -> Option<G>) {
    let cbs: Vec<Callback> = lock(&REGISTRATIONS)
        .iter()
        .filter(|r| r.guid == guid)
        .filter_map(|r| r.callback.clone())
        .collect();
    if cbs.is_empty() {
        return;
    }
    let e = combined(guid);
    let _ctx = enter();
    let _irql = IrqlScope::enter(rvgpu_kmd::platform::Irql::Passive);
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
        callback: callback.clone(),
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
