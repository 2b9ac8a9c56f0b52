//! ETW: the driver's TraceLogging provider `rvgpu.Kmd` (docs/logs.md, "ETW").
//!
//! Registered at DriverEntry ([`register`]) and unregistered at Unload ([`unregister`])
//! through the [`Platform`] seam (`EtwRegister`/`EtwUnregister`/`EtwWriteTransfer` on
//! Windows, the simulated OS's ETW otherwise). Every event is self-describing: the provider and
//! event metadata ([`meta`]) travel in front of its fields.
//!
//! **The gate.** One word, [`GATE`], has a bit per event ([`events`]): set when an ETW session
//! enabled the provider at the event's level and keywords (the enable callback) *and* Dxgkrnl
//! has not switched driver logging off or below that level (`DxgkDdiControlEtwLogging`, on
//! until it says otherwise). A hot path pays one relaxed load and a branch when its bit is
//! clear; building and writing the event is out of line.

pub mod abi;
pub mod events;
pub mod meta;
mod sink;

pub use abi::*;
pub use sink::{GATE, PROVIDER_META, PROVIDER_NAME};

use sink::HANDLE;

use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use crate::platform::Platform;

/// `rvgpu.Kmd`: {d0e22724-edfb-501e-8fd2-a9a59850c8da}, the GUID TraceLogging and
/// EventSource derive from the name (SHA-1 over their namespace and the upper-cased name in
/// UTF-16BE, version 5), so tools accepting `*rvgpu.Kmd` find it.
pub const PROVIDER_GUID: Guid = Guid {
    Data1: 0xd0e2_2724,
    Data2: 0xedfb,
    Data3: 0x501e,
    Data4: [0x8f, 0xd2, 0xa9, 0xa5, 0x98, 0x50, 0xc8, 0xda],
};

/// DriverEntry calls not yet matched by an Unload (one on Windows; the Linux build serves every
/// simulated machine of a process with one copy of the driver).
static LOADS: AtomicU32 = AtomicU32::new(0);

/// What the two switches last said.
struct Switches {
    lock: AtomicBool,
    session_on: AtomicBool,
    session_level: AtomicU8,
    match_any: AtomicU64,
    match_all: AtomicU64,
    ddi_on: AtomicBool,
    ddi_level: AtomicU8,
}

static SWITCHES: Switches = Switches {
    lock: AtomicBool::new(false),
    session_on: AtomicBool::new(false),
    session_level: AtomicU8::new(0),
    match_any: AtomicU64::new(0),
    match_all: AtomicU64::new(0),
    ddi_on: AtomicBool::new(true),
    ddi_level: AtomicU8::new(0),
};

/// ETW's level rule: level 0 enables every level, otherwise levels up to it.
const fn level_enables(enabled: u8, event: u8) -> bool {
    enabled == 0 || event <= enabled
}

/// ETW's keyword rule: an event without keywords always matches; otherwise it needs one of
/// `any` (or `any` = 0) and all of `all`.
const fn keywords_match(kw: u64, any: u64, all: u64) -> bool {
    kw == 0 || ((any == 0 || kw & any != 0) && kw & all == all)
}

/// Updates the switches under their lock (PASSIVE callers only) and recomputes the gate.
fn update(change: impl FnOnce(&Switches)) {
    let s = &SWITCHES;
    while s
        .lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    change(s);
    let mut gate = 0u32;
    if s.session_on.load(Ordering::Relaxed) && s.ddi_on.load(Ordering::Relaxed) {
        let (sl, dl) = (
            s.session_level.load(Ordering::Relaxed),
            s.ddi_level.load(Ordering::Relaxed),
        );
        let (any, all) = (
            s.match_any.load(Ordering::Relaxed),
            s.match_all.load(Ordering::Relaxed),
        );
        for e in events::ALL {
            let d = &e.descriptor;
            if level_enables(sl, d.level)
                && level_enables(dl, d.level)
                && keywords_match(d.keyword, any, all)
            {
                gate |= e.bit;
            }
        }
    }
    GATE.store(gate, Ordering::Relaxed);
    s.lock.store(false, Ordering::Release);
}

/// The enable callback ETW calls when a session enables or disables the provider (from
/// inside `EtwRegister` too, if one already listens). PASSIVE_LEVEL. It reads none of its
/// pointers, so it is a safe function.
extern "system" fn enable_callback(
    _source: *const Guid,
    control_code: u32,
    level: u8,
    match_any: u64,
    match_all: u64,
    _filter: *const c_void,
    _context: *mut c_void,
) {
    match control_code {
        CONTROL_ENABLE => update(|s| {
            s.session_on.store(true, Ordering::Relaxed);
            s.session_level.store(level, Ordering::Relaxed);
            s.match_any.store(match_any, Ordering::Relaxed);
            s.match_all.store(match_all, Ordering::Relaxed);
        }),
        CONTROL_DISABLE => update(|s| s.session_on.store(false, Ordering::Relaxed)),
        // Capture-state and later codes: nothing to replay.
        _ => {}
    }
}

/// DxgkDdiControlEtwLogging (PASSIVE): Dxgkrnl's switch for the driver's ETW logging. `Enable`
/// FALSE stops every event; TRUE allows events up to `level` (0: all). No flags are defined:
/// they are ignored.
pub fn control(enable: bool, _flags: u32, level: u8) {
    update(|s| {
        s.ddi_on.store(enable, Ordering::Relaxed);
        s.ddi_level.store(level, Ordering::Relaxed);
    });
}

/// Registers the provider (DriverEntry). A refusal leaves the driver without ETW and is
/// logged; it never fails the load.
pub fn register<P: Platform>() {
    if LOADS.fetch_add(1, Ordering::AcqRel) != 0 {
        return;
    }
    match P::etw_register(&PROVIDER_GUID, enable_callback, core::ptr::null_mut()) {
        Ok(h) => HANDLE.store(h, Ordering::Release),
        Err(st) => crate::klog!(P, Warning, "EtwRegister failed: {:#010x}", st),
    }
}

/// Unregisters the provider (Unload, or a DriverEntry that fails after [`register`]).
pub fn unregister<P: Platform>() {
    let last = LOADS
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok_and(|was| was == 1);
    if !last {
        return;
    }
    update(|s| s.session_on.store(false, Ordering::Relaxed));
    let h = HANDLE.swap(0, Ordering::AcqRel);
    if h != 0 {
        P::etw_unregister(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_and_keyword_rules_follow_etw() {
        assert!(level_enables(0, 5));
        assert!(level_enables(4, 4));
        assert!(!level_enables(3, 4));
        assert!(keywords_match(0, 0x10, 0x10));
        assert!(keywords_match(0x1, 0, 0));
        assert!(!keywords_match(0x1, 0x2, 0));
        assert!(!keywords_match(0x1, 0x1, 0x3));
    }

    /// DDI-04: the session's level and keywords and Dxgkrnl's switch each gate the events.
    #[test]
    fn ddi_04_enable_callback_and_dxgkrnl_switch_set_the_gate() {
        use events::{on, HWQUEUE_CREATE, KW_HWQUEUE, NATIVE_FENCE_SIGNAL, TDR_RESTART};
        let session = |code: u32, level: u8, any: u64| {
            enable_callback(
                core::ptr::null(),
                code,
                level,
                any,
                0,
                core::ptr::null(),
                core::ptr::null_mut(),
            )
        };
        assert!(!on(&HWQUEUE_CREATE), "no session");
        session(CONTROL_ENABLE, 4, KW_HWQUEUE);
        assert!(on(&HWQUEUE_CREATE));
        assert!(!on(&NATIVE_FENCE_SIGNAL), "verbose and another keyword");
        assert!(!on(&TDR_RESTART), "another keyword");
        control(false, 0, 0);
        assert_eq!(GATE.load(Ordering::Relaxed), 0, "Dxgkrnl switched it off");
        control(true, 0, 3);
        assert!(!on(&HWQUEUE_CREATE), "above Dxgkrnl's level");
        control(true, 0, 0);
        assert!(on(&HWQUEUE_CREATE));
        session(CONTROL_ENABLE, 0, 0);
        assert!(
            on(&NATIVE_FENCE_SIGNAL) && on(&TDR_RESTART),
            "level 0, any keyword"
        );
        session(CONTROL_DISABLE, 0, 0);
        assert_eq!(GATE.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn provider_metadata_is_size_then_name() {
        assert_eq!(&PROVIDER_META[..2], &12u16.to_le_bytes());
        assert_eq!(&PROVIDER_META[2..], b"rvgpu.Kmd\0");
    }
}
