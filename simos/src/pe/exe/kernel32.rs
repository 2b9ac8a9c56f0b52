//! The kernel32.dll routines a mingw-w64 program's CRT imports (besides those the DLL's
//! model has, [`crate::pe::umd::win32`], which bind too), each as its reference page on
//! learn.microsoft.com documents it.
//!
//! - Critical sections: the `CRITICAL_SECTION` in the program's memory is initialized as
//!   Windows leaves it (`LockCount` -1, no owner); ownership is kept here, recursive per
//!   thread. Entering one that was never initialized (or deleted) waits for nothing that can
//!   come: the wait ends, as a critical-section timeout does, with
//!   `STATUS_POSSIBLE_DEADLOCK` raised in the process.
//! - `GetLastError` reads the TEB's `LastErrorValue`, which the routines here set.
//! - `VirtualQuery`/`VirtualProtect` describe and change the protection of the image's pages
//!   (bookkeeping: the emulator keeps the image writable); any other address is
//!   `ERROR_INVALID_PARAMETER` / `ERROR_INVALID_ADDRESS`.
//! - The ANSI code page is 1252 (`IsDBCSLeadByteEx`, the two converters, which also know
//!   UTF-8); other code pages are `ERROR_INVALID_PARAMETER`.
//! - `SetUnhandledExceptionFilter` keeps the filter (the emulator dispatches no exception:
//!   an unhandled one ends the process with its code, which is what the CRT's filter leads
//!   to for an exception no signal handler takes).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::super::umd::guest;
use super::format;
use super::process::{ExeProcess, Handler};
use crate::base::lock::lock;
use crate::pe::cpu::{StubResult, STATUS_ACCESS_VIOLATION};
use zerocopy::IntoBytes;

use StubResult::{Raise, Return};

pub const PAGE_NOACCESS: u32 = 0x01;
pub const PAGE_READONLY: u32 = 0x02;
pub const PAGE_READWRITE: u32 = 0x04;
pub const PAGE_WRITECOPY: u32 = 0x08;
pub const PAGE_EXECUTE: u32 = 0x10;
pub const PAGE_EXECUTE_READ: u32 = 0x20;
pub const PAGE_EXECUTE_READWRITE: u32 = 0x40;
pub const PAGE_EXECUTE_WRITECOPY: u32 = 0x80;
const MEM_COMMIT: u32 = 0x1000;
const MEM_IMAGE: u32 = 0x100_0000;

/// The process's and its thread's ids (the TEB's `ClientId`).
pub const PROCESS_ID: u64 = 0x1F00;
pub const THREAD_ID: u64 = 0x1F04;

/// `STATUS_POSSIBLE_DEADLOCK`: a critical-section wait that timed out.
pub const STATUS_POSSIBLE_DEADLOCK: u32 = rvgpu_ddi::ntstatus::STATUS_POSSIBLE_DEADLOCK as u32;

const ERROR_SUCCESS: u32 = 0;
const ERROR_INVALID_PARAMETER: u32 = 87;
const ERROR_INSUFFICIENT_BUFFER: u32 = 122;
const ERROR_BAD_LENGTH: u32 = 24;
const ERROR_NO_UNICODE_TRANSLATION: u32 = 1113;
const ERROR_INVALID_ADDRESS: u32 = 487;
const ERROR_NOACCESS: u32 = 998;
/// TLS_MINIMUM_AVAILABLE + TLS_EXPANSION_SLOTS.
const TLS_SLOTS: u64 = 64 + 1024;
const CP_ACP: u32 = 0;
const CP_UTF8: u32 = 65001;
const ANSI_CP: u32 = 1252;
/// `MB_ERR_INVALID_CHARS`.
const MB_ERR_INVALID_CHARS: u64 = 0x8;
/// The longest string the converters take here.
const MAX_CHARS: usize = 1 << 20;

/// The routine behind `kernel32.dll!name`.
pub(super) fn import(name: &str) -> Option<Handler> {
    Some(match name {
        "InitializeCriticalSection" => initialize_cs,
        "EnterCriticalSection" => enter_cs,
        "LeaveCriticalSection" => leave_cs,
        "DeleteCriticalSection" => delete_cs,
        "GetLastError" => |p, _| Return(u64::from(p.last_error())),
        "SetLastError" => |p, w| {
            p.set_last_error(w[0] as u32);
            Return(0)
        },
        "GetStartupInfoA" => get_startup_info,
        "SetUnhandledExceptionFilter" => |p, w| Return(p.k32.filter.swap(w[0], Ordering::AcqRel)),
        "Sleep" => sleep,
        "TlsGetValue" => tls_get_value,
        "VirtualQuery" => virtual_query,
        "VirtualProtect" => virtual_protect,
        "IsDBCSLeadByteEx" => is_dbcs_lead_byte_ex,
        "MultiByteToWideChar" => multi_byte_to_wide_char,
        "WideCharToMultiByte" => wide_char_to_multi_byte,
        "GetCurrentProcessId" => |_, _| Return(PROCESS_ID),
        "GetCurrentThreadId" => |_, _| Return(THREAD_ID),
        _ => return None,
    })
}

/// `RTL_CRITICAL_SECTION`: DebugInfo, LockCount, RecursionCount, OwningThread,
/// LockSemaphore, SpinCount.
#[derive(zerocopy::IntoBytes, zerocopy::Immutable, Clone, Copy)]
#[repr(C)]
struct CriticalSection {
    debug_info: u64,
    lock_count: i32,
    recursion: i32,
    owner: u64,
    semaphore: u64,
    spin: u64,
}

fn write_cs(at: u64, depth: u32) -> bool {
    let cs = CriticalSection {
        debug_info: u64::MAX,
        lock_count: if depth == 0 { -1 } else { -2 },
        recursion: depth as i32,
        owner: if depth == 0 { 0 } else { THREAD_ID },
        semaphore: 0,
        spin: 0,
    };
    guest::write(at, &cs).is_ok()
}

/// `InitializeCriticalSection(lpCriticalSection)`.
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-initializecriticalsection>
fn initialize_cs(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if !write_cs(w[0], 0) {
        return Raise(STATUS_ACCESS_VIOLATION);
    }
    p.k32.locks.forget(w[0]);
    lock(&p.k32.sections).insert(w[0]);
    Return(0)
}

/// `EnterCriticalSection(lpCriticalSection)`: recursive for the owning thread.
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-entercriticalsection>
fn enter_cs(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if !lock(&p.k32.sections).contains(&w[0]) {
        return Raise(STATUS_POSSIBLE_DEADLOCK);
    }
    if !p
        .k32
        .locks
        .enter(w[0], p.machine().os_config().wait_timeout)
    {
        return Raise(STATUS_POSSIBLE_DEADLOCK);
    }
    if !write_cs(w[0], p.k32.locks.depth(w[0])) {
        return Raise(STATUS_ACCESS_VIOLATION);
    }
    Return(0)
}

/// `LeaveCriticalSection(lpCriticalSection)`: a section this thread does not own is left as
/// it is (Windows' behaviour there is undefined; nothing is released).
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-leavecriticalsection>
fn leave_cs(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if p.k32.locks.leave(w[0]) && !write_cs(w[0], p.k32.locks.depth(w[0])) {
        return Raise(STATUS_ACCESS_VIOLATION);
    }
    Return(0)
}

/// `DeleteCriticalSection(lpCriticalSection)`.
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-deletecriticalsection>
fn delete_cs(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    lock(&p.k32.sections).remove(&w[0]);
    p.k32.locks.forget(w[0]);
    Return(0)
}

/// `GetStartupInfoA(lpStartupInfo)`: a console process started with no options.
/// <https://learn.microsoft.com/en-us/windows/win32/api/processthreadsapi/nf-processthreadsapi-getstartupinfoa>
fn get_startup_info(_p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let mut si = [0u8; 104];
    si[..4].copy_from_slice(&104u32.to_le_bytes());
    if guest::write_bytes(w[0], &si).is_err() {
        return Raise(STATUS_ACCESS_VIOLATION);
    }
    Return(0)
}

/// `Sleep(dwMilliseconds)`; `INFINITE` lasts as long as the simulated OS lets a wait last.
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-sleep>
fn sleep(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let ms = w[0] as u32;
    let d = if ms == u32::MAX {
        p.machine().os_config().wait_timeout
    } else {
        Duration::from_millis(u64::from(ms))
    };
    if d.is_zero() {
        std::thread::yield_now();
    } else {
        std::thread::sleep(d);
    }
    Return(0)
}

/// `TlsGetValue(dwTlsIndex)`: the slot's value (0 until set); an index past the slots is 0
/// with `ERROR_INVALID_PARAMETER`.
/// <https://learn.microsoft.com/en-us/windows/win32/api/processthreadsapi/nf-processthreadsapi-tlsgetvalue>
fn tls_get_value(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let i = w[0] & 0xFFFF_FFFF;
    if i >= TLS_SLOTS {
        p.set_last_error(ERROR_INVALID_PARAMETER);
        return Return(0);
    }
    p.set_last_error(ERROR_SUCCESS);
    Return(lock(&p.k32.tls).get(&i).copied().unwrap_or(0))
}

/// `MEMORY_BASIC_INFORMATION` (x64).
#[derive(zerocopy::IntoBytes, zerocopy::Immutable, Clone, Copy)]
#[repr(C)]
struct MemoryBasicInformation {
    base: u64,
    allocation_base: u64,
    allocation_protect: u32,
    partition: u32,
    size: u64,
    state: u32,
    protect: u32,
    kind: u32,
    pad: u32,
}

/// `VirtualQuery(lpAddress, lpBuffer, dwLength)`: the run of the image's pages with the
/// protection of the page holding the address; bytes written, or 0.
/// <https://learn.microsoft.com/en-us/windows/win32/api/memoryapi/nf-memoryapi-virtualquery>
fn virtual_query(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let (addr, buf, len) = (w[0], w[1], w[2]);
    let size = std::mem::size_of::<MemoryBasicInformation>() as u64;
    if len < size {
        p.set_last_error(ERROR_BAD_LENGTH);
        return Return(0);
    }
    let (base, end) = p.image_range();
    if addr < base || addr >= end {
        p.set_last_error(ERROR_INVALID_PARAMETER);
        return Return(0);
    }
    let pages = p.pages();
    let first = ((addr - base) / 4096) as usize;
    let Some(&prot) = pages.get(first) else {
        p.set_last_error(ERROR_INVALID_PARAMETER);
        return Return(0);
    };
    let run = pages[first..].iter().take_while(|&&x| x == prot).count();
    drop(pages);
    let mbi = MemoryBasicInformation {
        base: base + 4096 * first as u64,
        allocation_base: base,
        allocation_protect: PAGE_EXECUTE_WRITECOPY,
        partition: 0,
        size: 4096 * run as u64,
        state: MEM_COMMIT,
        protect: prot,
        kind: MEM_IMAGE,
        pad: 0,
    };
    if guest::write(buf, &mbi).is_err() {
        p.set_last_error(ERROR_NOACCESS);
        return Return(0);
    }
    Return(size)
}

/// `VirtualProtect(lpAddress, dwSize, flNewProtect, lpflOldProtect)`: the image's pages
/// covering the range take the new protection; the first page's old one is returned.
/// <https://learn.microsoft.com/en-us/windows/win32/api/memoryapi/nf-memoryapi-virtualprotect>
fn virtual_protect(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let (addr, size, new, old) = (w[0], w[1], w[2] as u32, w[3]);
    const KNOWN: [u32; 8] = [
        PAGE_NOACCESS,
        PAGE_READONLY,
        PAGE_READWRITE,
        PAGE_WRITECOPY,
        PAGE_EXECUTE,
        PAGE_EXECUTE_READ,
        PAGE_EXECUTE_READWRITE,
        PAGE_EXECUTE_WRITECOPY,
    ];
    if !KNOWN.contains(&new) || old == 0 {
        p.set_last_error(ERROR_INVALID_PARAMETER);
        return Return(0);
    }
    let (base, end) = p.image_range();
    let last = addr.saturating_add(size.max(1));
    if addr < base || last > end {
        p.set_last_error(ERROR_INVALID_ADDRESS);
        return Return(0);
    }
    let (first, stop) = (
        ((addr - base) / 4096) as usize,
        (last - base).div_ceil(4096) as usize,
    );
    let mut pages = p.pages();
    let Some(&was) = pages.get(first) else {
        p.set_last_error(ERROR_INVALID_ADDRESS);
        return Return(0);
    };
    if guest::write(old, &was).is_err() {
        p.set_last_error(ERROR_NOACCESS);
        return Return(0);
    }
    for pg in pages.iter_mut().take(stop).skip(first) {
        *pg = new;
    }
    Return(1)
}

/// Whether the converters know code page `cp`.
fn known_cp(cp: u32) -> bool {
    matches!(cp, CP_ACP | ANSI_CP | CP_UTF8)
}

/// `IsDBCSLeadByteEx(CodePage, TestChar)`: the code pages here have no lead bytes.
/// <https://learn.microsoft.com/en-us/windows/win32/api/winnls/nf-winnls-isdbcsleadbyteex>
fn is_dbcs_lead_byte_ex(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if !known_cp(w[0] as u32) {
        p.set_last_error(ERROR_INVALID_PARAMETER);
    }
    Return(0)
}

/// A converter's checks of its arguments (a known code page, a source, a room that is not
/// negative) and its [`input`]; `None`, with `ERROR_INVALID_PARAMETER`, when one fails.
fn converter_input<T: zerocopy::FromBytes + Default + PartialEq + Copy>(
    p: &ExeProcess,
    cp: u32,
    src: u64,
    count: i32,
    room: i32,
) -> Option<Vec<T>> {
    let v = (known_cp(cp) && src != 0 && room >= 0)
        .then(|| input(src, count).ok())
        .flatten();
    if v.is_none() {
        p.set_last_error(ERROR_INVALID_PARAMETER);
    }
    v
}

/// The input string of a converter: `count` units at `at`, or up to and with the NUL
/// when `count` is -1.
fn input<T: zerocopy::FromBytes + Default + PartialEq + Copy>(
    at: u64,
    count: i32,
) -> Result<Vec<T>, ()> {
    if count == -1 {
        let mut v = Vec::new();
        let mut a = at;
        loop {
            let c: T = guest::read(a).map_err(|_| ())?;
            v.push(c);
            if c == T::default() || v.len() > MAX_CHARS {
                return Ok(v);
            }
            a += std::mem::size_of::<T>() as u64;
        }
    }
    let n = usize::try_from(count).map_err(|_| ())?;
    if n == 0 || n > MAX_CHARS {
        return Err(());
    }
    guest::read_array(at, n).map_err(|_| ())
}

/// `MultiByteToWideChar(CodePage, dwFlags, lpMultiByteStr, cbMultiByte, lpWideCharStr,
/// cchWideChar)`: units written (or needed, when `cchWideChar` is 0), 0 on failure.
/// <https://learn.microsoft.com/en-us/windows/win32/api/stringapiset/nf-stringapiset-multibytetowidechar>
fn multi_byte_to_wide_char(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let (cp, flags, src, count, dst, room) =
        (w[0] as u32, w[1], w[2], w[3] as i32, w[4], w[5] as i32);
    let Some(bytes) = converter_input::<u8>(p, cp, src, count, room) else {
        return Return(0);
    };
    let out: Vec<u16> = if cp == CP_UTF8 {
        match std::str::from_utf8(&bytes) {
            Ok(s) => s.encode_utf16().collect(),
            Err(_) if flags & MB_ERR_INVALID_CHARS != 0 => {
                p.set_last_error(ERROR_NO_UNICODE_TRANSLATION);
                return Return(0);
            }
            Err(_) => String::from_utf8_lossy(&bytes).encode_utf16().collect(),
        }
    } else {
        bytes.iter().map(|&b| format::ansi_to_unicode(b)).collect()
    };
    finish(p, &out, dst, room)
}

/// `WideCharToMultiByte(CodePage, dwFlags, lpWideCharStr, cchWideChar, lpMultiByteStr,
/// cbMultiByte, lpDefaultChar, lpUsedDefaultChar)`: a character the code page lacks is `?`.
/// <https://learn.microsoft.com/en-us/windows/win32/api/stringapiset/nf-stringapiset-widechartomultibyte>
fn wide_char_to_multi_byte(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let (cp, src, count, dst, room, used) =
        (w[0] as u32, w[2], w[3] as i32, w[4], w[5] as i32, w[7]);
    let Some(units) = converter_input::<u16>(p, cp, src, count, room) else {
        return Return(0);
    };
    let mut defaulted = false;
    let out: Vec<u8> = if cp == CP_UTF8 {
        String::from_utf16_lossy(&units).into_bytes()
    } else {
        units
            .iter()
            .map(|&u| {
                format::unicode_to_ansi(u).unwrap_or_else(|| {
                    defaulted = true;
                    b'?'
                })
            })
            .collect()
    };
    if used != 0 && cp != CP_UTF8 && guest::write(used, &u32::from(defaulted)).is_err() {
        p.set_last_error(ERROR_NOACCESS);
        return Return(0);
    }
    finish(p, &out, dst, room)
}

/// A converter's output: its length when `room` is 0, else written if it fits.
fn finish<T: zerocopy::IntoBytes + zerocopy::Immutable>(
    p: &ExeProcess,
    out: &[T],
    dst: u64,
    room: i32,
) -> StubResult {
    if room == 0 {
        return Return(out.len() as u64);
    }
    if out.len() > room as usize {
        p.set_last_error(ERROR_INSUFFICIENT_BUFFER);
        return Return(0);
    }
    if guest::write_bytes(dst, out.as_bytes()).is_err() {
        p.set_last_error(ERROR_NOACCESS);
        return Return(0);
    }
    Return(out.len() as u64)
}
