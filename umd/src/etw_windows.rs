//! The "native fence queued" ETW event on Windows (docs/logs.md#umd): a minimal TraceLogging
//! provider `rvgpu.Umd` with one event, `NativeFenceQueued`, whose fields are those of
//! [`QueuedOp`]. [`EtwFenceTrace`] is a [`FenceTrace`], so a queue forwards its "queued" events
//! to ETW when the C API installs it.
//!
//! **Status, honestly.** Compiled by the `x86_64-pc-windows-msvc` cross-build of rvgpu_umd.dll
//! only; it has never run on Windows (in the x86-64 emulator its registration runs, against an
//! advapi32 that never enables it), and no ETW session has decoded its events. It is written by hand
//! over advapi32's `EventRegister` / `EventSetInformation(EventProviderSetTraits)` /
//! `EventWriteTransfer` (windows-sys), following the TraceLogging self-describing event layout
//! (what TraceLoggingProvider.h's macros generate), because the `tracelogging` crate would be a
//! new dependency of the workspace:
//!
//! - provider metadata: `u16` total size, the provider name (UTF-8, NUL-terminated), passed as
//!   the provider traits and as the first data descriptor (type
//!   `EVENT_DATA_DESCRIPTOR_TYPE_PROVIDER_METADATA`);
//! - event metadata: `u16` total size, one tag byte (0: no tags), the event name, then per field
//!   its name and its `TlgIn` type byte (UINT32 = 8, UINT64 = 10, BOOL32 = 13), passed as the
//!   second data descriptor (type `EVENT_DATA_DESCRIPTOR_TYPE_EVENT_METADATA`);
//! - the field values follow, one data descriptor each; the event descriptor's channel is 11
//!   (the TraceLogging channel).
//!
//! The provider GUID is the one TraceLogging and EventSource derive from the name (SHA-1 of the
//! EventSource namespace and the upper-cased name in UTF-16BE, version nibble 5), so tools that
//! accept `*rvgpu.Umd` find it; it was computed off-line and is checked against the same
//! algorithm's documented example ("MyCompany.MyComponent" →
//! ce5fa4ea-ab00-5402-8b76-9f76ac858fb5) only by that off-line computation.
//!
//! The provider is registered per queue (when the C API creates it) and unregistered when the
//! queue is destroyed: the DLL has no entry point to unregister at unload. GPUView's native
//! fence view does not show these events (it shows Dxgkrnl's own).

use core::ffi::c_void;
use core::ptr;

use windows_sys::core::GUID;
use windows_sys::Win32::System::Diagnostics::Etw::{
    EventProviderEnabled, EventProviderSetTraits, EventRegister, EventSetInformation,
    EventUnregister, EventWriteTransfer, EVENT_DATA_DESCRIPTOR, EVENT_DATA_DESCRIPTOR_0,
    EVENT_DATA_DESCRIPTOR_0_0, EVENT_DATA_DESCRIPTOR_TYPE_EVENT_METADATA,
    EVENT_DATA_DESCRIPTOR_TYPE_PROVIDER_METADATA, EVENT_DESCRIPTOR, REGHANDLE,
};

use crate::fencelog::{FenceTrace, LogKind, QueuedOp};

/// `rvgpu.Umd`: {f3295a17-70a0-5c80-fdf8-4a18f00754c1} (name hash, see the module docs).
pub const PROVIDER_GUID: GUID = GUID {
    data1: 0xf329_5a17,
    data2: 0x70a0,
    data3: 0x5c80,
    data4: [0xfd, 0xf8, 0x4a, 0x18, 0xf0, 0x07, 0x54, 0xc1],
};

/// Concatenates byte strings into a fixed array with its total size in the first two bytes.
const fn blob<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let mut out = [0u8; N];
    let size = N as u16;
    out[0] = size as u8;
    out[1] = (size >> 8) as u8;
    let mut at = 2;
    let mut p = 0;
    while p < parts.len() {
        let part = parts[p];
        let mut i = 0;
        while i < part.len() {
            out[at] = part[i];
            at += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(at == N, "blob size");
    out
}

const TLG_IN_UINT32: u8 = 8;
const TLG_IN_UINT64: u8 = 10;
const TLG_IN_BOOL32: u8 = 13;

/// Provider metadata: size, "rvgpu.Umd\0".
static PROVIDER_META: [u8; 12] = blob(&[b"rvgpu.Umd\0"]);

/// Event metadata: size, tags (0), name, fields (name, type).
static EVENT_META: [u8; 70] = blob(&[
    &[0],
    b"NativeFenceQueued\0",
    b"QueueId\0",
    &[TLG_IN_UINT32],
    b"Kind\0", // 0 = wait, 1 = signal
    &[TLG_IN_UINT32],
    b"Index\0",
    &[TLG_IN_UINT32],
    b"Fence\0",
    &[TLG_IN_UINT32],
    b"Value\0",
    &[TLG_IN_UINT64],
    b"Qpc\0",
    &[TLG_IN_UINT64],
    b"Logged\0",
    &[TLG_IN_BOOL32],
]);

/// `WINEVENT_CHANNEL_TRACELOGGING`.
const CHANNEL_TRACELOGGING: u8 = 11;
/// `TRACE_LEVEL_VERBOSE`.
const LEVEL_VERBOSE: u8 = 5;

/// A TraceLogging event's descriptor: only its level tells the events apart (the metadata
/// names them).
const fn tracelogging_event(level: u8) -> EVENT_DESCRIPTOR {
    EVENT_DESCRIPTOR {
        Id: 0,
        Version: 0,
        Channel: CHANNEL_TRACELOGGING,
        Level: level,
        Opcode: 0,
        Task: 0,
        Keyword: 0,
    }
}

static EVENT: EVENT_DESCRIPTOR = tracelogging_event(LEVEL_VERBOSE);

fn descriptor(p: *const c_void, size: usize, kind: u32) -> EVENT_DATA_DESCRIPTOR {
    EVENT_DATA_DESCRIPTOR {
        Ptr: p as u64,
        Size: u32::try_from(size).unwrap_or(0),
        Anonymous: EVENT_DATA_DESCRIPTOR_0 {
            Anonymous: EVENT_DATA_DESCRIPTOR_0_0 {
                Type: u8::try_from(kind).unwrap_or(0),
                Reserved1: 0,
                Reserved2: 0,
            },
        },
    }
}

fn field<T>(v: &T) -> EVENT_DATA_DESCRIPTOR {
    descriptor(ptr::from_ref(v).cast(), core::mem::size_of::<T>(), 0)
}

/// One registration of the `rvgpu.Umd` provider; writes a `NativeFenceQueued` event per
/// [`QueuedOp`].
#[derive(Debug)]
pub struct EtwFenceTrace {
    handle: REGHANDLE,
}

impl EtwFenceTrace {
    /// Registers the provider; `None` if ETW refuses.
    pub fn register() -> Option<Self> {
        let mut handle: REGHANDLE = 0;
        // SAFETY: a valid GUID, no enable callback (so ETW never calls into this DLL), and a
        // writable handle.
        let r = unsafe { EventRegister(&PROVIDER_GUID, None, ptr::null(), &mut handle) };
        if r != 0 {
            return None;
        }
        // SAFETY: the registration just made; the traits blob is static and its first u16 is
        // its size, as EventProviderSetTraits expects. A failure only loses the name.
        unsafe {
            EventSetInformation(
                handle,
                EventProviderSetTraits,
                PROVIDER_META.as_ptr().cast(),
                u32::try_from(PROVIDER_META.len()).unwrap_or(0),
            )
        };
        Some(Self { handle })
    }

    /// Whether a consumer listens at `level`.
    fn enabled(&self, level: u8) -> bool {
        // SAFETY: a live registration handle; a pure query.
        unsafe { EventProviderEnabled(self.handle, level, 0) }
    }

    /// Writes `event`, whose metadata is `meta`, with `fields` (at most [`MAX_FIELDS`]; more
    /// are dropped) after the provider's and the event's metadata descriptors.
    fn write(
        &self,
        event: &EVENT_DESCRIPTOR,
        meta: &'static [u8],
        fields: &[EVENT_DATA_DESCRIPTOR],
    ) {
        let mut data = [descriptor(ptr::null(), 0, 0); 2 + MAX_FIELDS];
        let mut n = 0;
        let metadata = [
            descriptor(
                PROVIDER_META.as_ptr().cast(),
                PROVIDER_META.len(),
                EVENT_DATA_DESCRIPTOR_TYPE_PROVIDER_METADATA,
            ),
            descriptor(
                meta.as_ptr().cast(),
                meta.len(),
                EVENT_DATA_DESCRIPTOR_TYPE_EVENT_METADATA,
            ),
        ];
        for (d, f) in data.iter_mut().zip(metadata.iter().chain(fields)) {
            *d = *f;
            n += 1;
        }
        // SAFETY: every descriptor points to memory that lives for the call (statics and the
        // caller's fields); no activity ids.
        unsafe {
            EventWriteTransfer(
                self.handle,
                event,
                ptr::null(),
                ptr::null(),
                n,
                data.as_ptr(),
            )
        };
    }
}

/// Fields one event has at most.
const MAX_FIELDS: usize = 7;

impl FenceTrace for EtwFenceTrace {
    fn queued(&self, op: &QueuedOp) {
        if !self.enabled(LEVEL_VERBOSE) {
            return;
        }
        let kind: u32 = match op.kind {
            LogKind::Wait => 0,
            LogKind::Signal => 1,
        };
        let logged: i32 = i32::from(op.logged);
        let fields = [
            field(&op.queue_id),
            field(&kind),
            field(&op.index),
            field(&op.fence),
            field(&op.value),
            field(&op.qpc),
            field(&logged),
        ];
        self.write(&EVENT, &EVENT_META, &fields);
    }
}

/// Event metadata of `LateWake`: a CPU wait on native fence `Fence` for `Value` that the OS had
/// not released when the fence read `Current` (>= `Value`) after a slice ([`crate::wait`]).
static LATE_META: [u8; 35] = blob(&[
    &[0],
    b"LateWake\0",
    b"Fence\0",
    &[TLG_IN_UINT32],
    b"Value\0",
    &[TLG_IN_UINT64],
    b"Current\0",
    &[TLG_IN_UINT64],
]);

/// `TRACE_LEVEL_WARNING`.
const LEVEL_WARNING: u8 = 3;

static LATE_EVENT: EVENT_DESCRIPTOR = tracelogging_event(LEVEL_WARNING);

/// Writes a `LateWake` event of the `rvgpu.Umd` provider (registered for the call: late wakes
/// are rare, and a wait has no queue whose registration it could use).
pub fn late_wake(fence: u32, value: u64, current: u64) {
    let Some(t) = EtwFenceTrace::register() else {
        return;
    };
    if t.enabled(LEVEL_WARNING) {
        t.write(
            &LATE_EVENT,
            &LATE_META,
            &[field(&fence), field(&value), field(&current)],
        );
    }
}

impl Drop for EtwFenceTrace {
    fn drop(&mut self) {
        // SAFETY: the registration made in `register`, unregistered once.
        unsafe { EventUnregister(self.handle) };
    }
}
