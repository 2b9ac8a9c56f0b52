//! The msvcrt.dll routines and variables a mingw-w64 program imports: what its CRT startup
//! (`mainCRTStartup`), its `printf` (mingw's own, which writes through `fputc`/`fwrite`) and
//! a C program of the README's kind use. Behaviour from the C runtime reference
//! (<https://learn.microsoft.com/en-us/cpp/c-runtime-library/>).
//!
//! - Heap (`malloc`, `calloc`, `free`): host memory, 16-byte aligned, tracked per process;
//!   freeing a block the heap never gave out is the heap's fail-fast,
//!   `STATUS_HEAP_CORRUPTION`; what is left goes with the process.
//! - Start-up: `__getmainargs` (argv and an empty environment from the heap), `_initterm`
//!   (each non-null entry called in order), `__set_app_type`, `__setusermatherr`, the
//!   variables `_commode`, `_fmode`, `__initenv`, `_acmdln`.
//! - Exit: `_onexit` functions run last-registered first by `_cexit` and `exit`; `exit(n)`
//!   then ends the process with `n`; `_amsg_exit(n)` prints `runtime error R60nn` to stderr
//!   and ends it with 255; `abort` runs a `SIGABRT` handler, prints "abnormal program
//!   termination" and ends it with 3.
//! - Streams: the 20 `FILE`s of `__iob_func`; `stdout` and `stderr` are captured, `stdin`
//!   has nothing to read; a write to any other is `EBADF`. A `FILE *` that is not one of
//!   them (the program opened none) is an invalid parameter: the process ends with
//!   `STATUS_INVALID_CRT_PARAMETER`, as msvcrt's default handler ends it.
//! - Locale: the "C" locale (`localeconv`, code page 0, one byte per character).
//! - `signal` keeps the handlers; only `abort` raises a signal here (the emulator dispatches
//!   no exceptions, so `__C_specific_handler` and the unhandled-exception filter never run).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::super::umd::guest::{self, Bad};
use super::format;
use super::kernel32;
use super::layout;
use super::process::{Binding, ExeProcess};
use super::state::Crt;
use crate::base::lock::lock;
use crate::pe::cpu::{StubResult, STATUS_ACCESS_VIOLATION};
use crate::pe::ntoskrnl;

use StubResult::{Raise, Return};

/// `STATUS_INVALID_CRT_PARAMETER`: msvcrt's default invalid-parameter handler.
const STATUS_INVALID_CRT_PARAMETER: u32 = rvgpu_ddi::ntstatus::STATUS_INVALID_CRT_PARAMETER as u32;
/// `STATUS_HEAP_CORRUPTION`: the heap's fail-fast on a bad free.
const STATUS_HEAP_CORRUPTION: u32 = rvgpu_ddi::ntstatus::STATUS_HEAP_CORRUPTION as u32;
const EBADF: u32 = 9;
const ENOMEM: u32 = 12;
const EINVAL: u32 = 22;
const ERANGE: u32 = 34;
/// `EOF` as an `int` in RAX.
const EOF: u64 = 0xFFFF_FFFF;
/// `SIG_ERR`.
const SIG_ERR: u64 = u64::MAX;
const SIGABRT: u32 = 22;
/// msvcrt's signals: SIGINT, SIGILL, SIGFPE, SIGSEGV, SIGTERM, SIGBREAK, SIGABRT.
const SIGNALS: [u32; 7] = [2, 4, 8, 11, 15, 21, 22];
/// Bytes per `FILE` (x64 msvcrt) and the number `__iob_func` has.
const FILE_SIZE: u64 = 48;
const IOB_ENTRIES: u64 = 20;
/// `FILE._flag` bits.
const IOREAD: u32 = 0x1;
const IOWRT: u32 = 0x2;
/// msvcrt's lock table (`_lock`): 16 general locks and one per `_iob` stream.
const TOTAL_LOCKS: u64 = 16 + IOB_ENTRIES;
/// The largest block the heap gives out here.
const MAX_BLOCK: u64 = 1 << 32;
/// The most `_onexit` functions the table holds.
const MAX_ONEXIT: usize = 32 * 1024;
/// MEMORY_ALLOCATION_ALIGNMENT on x64.
const HEAP_ALIGN: usize = 16;

impl Crt {
    /// A heap block of `size` bytes (zeroed when asked), or `None`.
    pub(crate) fn alloc(&self, size: u64, zero: bool) -> Option<u64> {
        if size > MAX_BLOCK {
            return None;
        }
        let layout =
            std::alloc::Layout::from_size_align((size as usize).max(1), HEAP_ALIGN).ok()?;
        // SAFETY: a layout of non-zero size.
        let p = unsafe {
            if zero {
                std::alloc::alloc_zeroed(layout)
            } else {
                std::alloc::alloc(layout)
            }
        };
        if p.is_null() {
            return None;
        }
        lock(&self.heap).insert(p as u64, layout);
        Some(p as u64)
    }

    fn free(&self, p: u64) -> bool {
        let Some(layout) = lock(&self.heap).remove(&p) else {
            return false;
        };
        // SAFETY: a block this heap allocated with `layout`, removed from the table so freed
        // once.
        unsafe { std::alloc::dealloc(p as *mut u8, layout) };
        true
    }

    pub(super) fn free_heap(&self) {
        for (p, l) in lock(&self.heap).drain() {
            // SAFETY: a block this heap allocated with `l`; the process is gone.
            unsafe { std::alloc::dealloc(p as *mut u8, l) };
        }
    }

    /// Heap blocks the program holds.
    pub(crate) fn blocks(&self) -> usize {
        lock(&self.heap).len()
    }
}

/// The binding of `msvcrt.dll!name`.
pub(super) fn import(name: &str) -> Option<Binding> {
    use Binding::{Data, FprintfShim, Host};
    Some(match name {
        "__C_specific_handler" => Host(|_, _| Return(1)),
        "___lc_codepage_func" => Host(|_, _| Return(0)),
        "___mb_cur_max_func" => Host(|_, _| Return(1)),
        "__getmainargs" => Host(getmainargs),
        "__initenv" => Data(layout::INITENV),
        "__iob_func" => Host(|p, _| Return(p.data_at(layout::IOB))),
        "__set_app_type" => Host(|p, w| {
            p.crt.app_type.store(w[0] as u32, Ordering::Relaxed);
            Return(0)
        }),
        "__setusermatherr" => Host(|p, w| {
            p.crt.matherr.store(w[0], Ordering::Relaxed);
            Return(0)
        }),
        "_acmdln" => Data(layout::ACMDLN),
        "_amsg_exit" => Host(amsg_exit),
        "_cexit" => Host(|p, _| match run_onexit(p) {
            Ok(()) => Return(0),
            Err(r) => r,
        }),
        "_commode" => Data(layout::COMMODE),
        "_errno" => Host(|p, _| Return(p.data_at(layout::ERRNO))),
        "_exit" => Host(|p, w| p.exit(w[0] as u32)),
        "_fmode" => Data(layout::FMODE),
        "_initterm" => Host(initterm),
        "_lock" => Host(crt_lock),
        "_onexit" => Host(onexit),
        "_unlock" => Host(crt_unlock),
        "abort" => Host(abort),
        "calloc" => Host(calloc),
        "exit" => Host(exit),
        "fprintf" => FprintfShim,
        "fputc" => Host(fputc),
        "free" => Host(free),
        "fwrite" => Host(fwrite),
        "localeconv" => Host(|p, _| Return(p.data_at(layout::LCONV))),
        "malloc" => Host(malloc),
        "memcpy" | "memmove" | "memset" | "memcmp" => Binding::Code(ntoskrnl::machine_code(name)?),
        "signal" => Host(signal),
        "strerror" => Host(strerror),
        "strlen" => Host(strlen),
        "strcmp" => Host(|p, w| strncmp(p, &[w[0], w[1], u64::MAX, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
        "strncmp" => Host(strncmp),
        "strtol" => Host(|p, w| strtox(p, w, true)),
        "strtoul" => Host(|p, w| strtox(p, w, false)),
        "vfprintf" => Host(vfprintf),
        "wcslen" => Host(wcslen),
        _ => return None,
    })
}

/// The variables, streams and locale as the process starts.
pub(super) fn init_data(p: &ExeProcess) {
    let put8 = |off: usize, v: u64| {
        let _ = guest::write(p.data_at(off), &v);
    };
    let put4 = |at: u64, v: u32| {
        let _ = guest::write(at, &v);
    };
    // struct lconv of "C": decimal_point ".", every other string "", every char CHAR_MAX.
    let dot = p.data_at(layout::LCONV_STRINGS);
    let empty = dot + 2;
    let _ = guest::write_bytes(dot, b".\0\0");
    put8(layout::LCONV, dot);
    for i in 1..10 {
        put8(layout::LCONV + 8 * i, empty);
    }
    let _ = guest::write_bytes(p.data_at(layout::LCONV + 80), &[0x7F; 8]);
    // stdin, stdout, stderr: _flag (at 24) and _file (at 28).
    for (i, flag) in [(0u64, IOREAD), (1, IOWRT), (2, IOWRT)] {
        let f = p.data_at(layout::IOB) + i * FILE_SIZE;
        put4(f + 24, flag);
        put4(f + 28, i as u32);
    }
    // _acmdln: the command line, each argument quoted when it has a space.
    let line = p
        .args()
        .iter()
        .map(|a| {
            if a.contains([' ', '\t']) || a.is_empty() {
                format!("\"{a}\"")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(b) = p.crt.alloc(line.len() as u64 + 1, true) {
        let _ = guest::write_bytes(b, line.as_bytes());
        put8(layout::ACMDLN, b);
    }
}

fn set_errno(p: &ExeProcess, e: u32) {
    let _ = guest::write(p.data_at(layout::ERRNO), &e);
}

fn av() -> StubResult {
    Raise(STATUS_ACCESS_VIOLATION)
}

/// `__getmainargs(&argc, &argv, &envp, doWildCard, &startinfo)`: argv from the command line
/// (in one heap block, as msvcrt allocates it), an empty environment.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/getmainargs-wgetmainargs>
fn getmainargs(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let args = p.args();
    let n = args.len() as u64;
    let strings: usize = args.iter().map(|a| a.len() + 1).sum();
    let Some(block) = p.crt.alloc(8 * (n + 1) + strings as u64, true) else {
        return Return(u64::from(u32::MAX));
    };
    let mut at = block + 8 * (n + 1);
    for (i, a) in args.iter().enumerate() {
        let _ = guest::write(block + 8 * i as u64, &at);
        let _ = guest::write_bytes(at, a.as_bytes());
        at += a.len() as u64 + 1;
    }
    let Some(env) = p.crt.alloc(8, true) else {
        return Return(u64::from(u32::MAX));
    };
    if guest::write(w[0], &(n as u32)).is_err()
        || guest::write(w[1], &block).is_err()
        || guest::write(w[2], &env).is_err()
    {
        return av();
    }
    Return(0)
}

/// `_initterm(begin, end)`: calls each non-null function pointer of `[begin, end)` in order.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/initterm-initterm-e>
fn initterm(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let (begin, end) = (w[0], w[1]);
    let n = end.saturating_sub(begin) / 8;
    for i in 0..n.min(1 << 16) {
        let f: u64 = match guest::read(begin + 8 * i) {
            Ok(f) => f,
            Err(_) => return av(),
        };
        if f != 0 {
            if let Err(r) = p.call_back(f, &[]) {
                return r;
            }
        }
    }
    Return(0)
}

/// `_onexit(func)`: `func`, or NULL when the table is full.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/onexit-onexit-m>
fn onexit(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let mut t = lock(&p.crt.onexit);
    if t.len() >= MAX_ONEXIT || w[0] == 0 {
        return Return(0);
    }
    t.push(w[0]);
    Return(w[0])
}

/// Runs the `_onexit` functions, last registered first, each once.
fn run_onexit(p: &Arc<ExeProcess>) -> Result<(), StubResult> {
    loop {
        let f = lock(&p.crt.onexit).pop();
        let Some(f) = f else { return Ok(()) };
        p.call_back(f, &[])?;
    }
}

/// `exit(status)`: the `_onexit` functions, then the process ends with `status`.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/exit-exit-exit>
fn exit(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if !p.ending() {
        if let Err(r) = run_onexit(p) {
            return r;
        }
    }
    p.exit(w[0] as u32)
}

/// `_amsg_exit(rterrnum)`: the run-time error message on stderr, exit code 255.
fn amsg_exit(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let msg = format!("\r\nruntime error R6{:03}\r\n", w[0] as u32);
    p.write_stream(2, msg.as_bytes());
    p.exit(255)
}

/// `abort()`: a `SIGABRT` handler runs (reset to the default first); then the message and
/// exit code 3.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/abort>
fn abort(p: &Arc<ExeProcess>, _w: &[u64; 12]) -> StubResult {
    let h = lock(&p.crt.signals).insert(SIGABRT, 0).unwrap_or(0);
    if h > 1 {
        if let Err(r) = p.call_back(h, &[u64::from(SIGABRT)]) {
            return r;
        }
    }
    p.write_stream(2, b"\r\nabnormal program termination\r\n");
    p.exit(3)
}

/// `signal(sig, func)`: the previous handler, or `SIG_ERR` (errno `EINVAL`) for a signal
/// msvcrt does not have.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/signal>
fn signal(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let sig = w[0] as u32;
    if !SIGNALS.contains(&sig) || w[1] == SIG_ERR {
        set_errno(p, EINVAL);
        return Return(SIG_ERR);
    }
    Return(lock(&p.crt.signals).insert(sig, w[1]).unwrap_or(0))
}

fn crt_lock(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if w[0] as u32 as u64 >= TOTAL_LOCKS {
        return av();
    }
    let timeout = p.machine().os_config().wait_timeout;
    if p.crt.locks.enter(w[0] as u32 as u64, timeout) {
        Return(0)
    } else {
        Raise(kernel32::STATUS_POSSIBLE_DEADLOCK)
    }
}

fn crt_unlock(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if w[0] as u32 as u64 >= TOTAL_LOCKS {
        return av();
    }
    p.crt.locks.leave(w[0] as u32 as u64);
    Return(0)
}

/// `malloc(size)`: NULL and `ENOMEM` when it cannot.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/malloc>
fn malloc(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    match p.crt.alloc(w[0], false) {
        Some(b) => Return(b),
        None => {
            set_errno(p, ENOMEM);
            Return(0)
        }
    }
}

/// `calloc(count, size)`: zeroed; NULL and `ENOMEM` on overflow or when it cannot.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/calloc>
fn calloc(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    match w[0].checked_mul(w[1]).and_then(|n| p.crt.alloc(n, true)) {
        Some(b) => Return(b),
        None => {
            set_errno(p, ENOMEM);
            Return(0)
        }
    }
}

/// `free(ptr)`: NULL is nothing; a block the heap did not give out is heap corruption.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/free>
fn free(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    if w[0] == 0 || p.crt.free(w[0]) {
        Return(0)
    } else {
        Raise(STATUS_HEAP_CORRUPTION)
    }
}

/// The index of the `_iob` stream `f` is: `Err` is what the routine does for a pointer
/// that is no stream.
fn stream(p: &ExeProcess, f: u64) -> Result<u64, StubResult> {
    let base = p.data_at(layout::IOB);
    let off = f.wrapping_sub(base);
    if f == 0 || f < base || !off.is_multiple_of(FILE_SIZE) || off / FILE_SIZE >= IOB_ENTRIES {
        return Err(Raise(STATUS_INVALID_CRT_PARAMETER));
    }
    Ok(off / FILE_SIZE)
}

/// Writes `bytes` to stream `i`: false (errno `EBADF`) when it is not open for writing.
fn put(p: &ExeProcess, i: u64, bytes: &[u8]) -> bool {
    if i == 1 || i == 2 {
        p.write_stream(i as usize, bytes);
        true
    } else {
        set_errno(p, EBADF);
        false
    }
}

/// `fputc(c, stream)`: the character written, or `EOF`.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/fputc-fputwc>
fn fputc(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let i = match stream(p, w[1]) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let c = w[0] as u8;
    Return(if put(p, i, &[c]) { u64::from(c) } else { EOF })
}

/// `fwrite(buffer, size, count, stream)`: the number of whole items written.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/fwrite>
fn fwrite(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let (buf, size, count) = (w[0], w[1], w[2]);
    let i = match stream(p, w[3]) {
        Ok(i) => i,
        Err(r) => return r,
    };
    if size == 0 || count == 0 {
        return Return(0);
    }
    let Some(total) = size.checked_mul(count) else {
        set_errno(p, EINVAL);
        return Return(0);
    };
    let mut done = 0u64;
    while done < total {
        let n = (total - done).min(guest::MAX_COPY as u64);
        let Ok(bytes) = guest::read_bytes(buf + done, n as usize) else {
            return av();
        };
        if !put(p, i, &bytes) {
            return Return(done / size);
        }
        done += n;
    }
    Return(count)
}

/// The `va_list` of a `vfprintf` and the strings it names.
struct VaList(u64);

impl format::Args for VaList {
    fn next(&mut self) -> Result<u64, Bad> {
        let v = guest::read(self.0)?;
        self.0 = self.0.checked_add(8).ok_or(Bad::Fault)?;
        Ok(v)
    }
    fn string(&mut self, addr: u64, max: usize) -> Result<Vec<u8>, Bad> {
        read_units::<u8>(addr, max)
    }
    fn wide(&mut self, addr: u64, max: usize) -> Result<Vec<u16>, Bad> {
        read_units::<u16>(addr, max)
    }
}

/// `vfprintf(stream, format, argptr)`: the number of bytes written, or -1.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/vfprintf-vfprintf-l-vfwprintf-vfwprintf-l>
pub(super) fn vfprintf(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let i = match stream(p, w[0]) {
        Ok(i) => i,
        Err(r) => return r,
    };
    let fmt = match read_units::<u8>(w[1], guest::MAX_COPY) {
        Ok(f) => f,
        Err(Bad::Null) => return Raise(STATUS_INVALID_CRT_PARAMETER),
        Err(Bad::Fault) => return av(),
    };
    match format::format(&fmt, &mut VaList(w[2])) {
        Ok(out) => Return(if put(p, i, &out) {
            out.len() as u64
        } else {
            EOF
        }),
        Err(format::Error::Fault) => av(),
        Err(format::Error::Invalid) => Raise(STATUS_INVALID_CRT_PARAMETER),
    }
}

/// msvcrt's messages for `errno` values (`_sys_errlist`).
fn message(e: u32) -> &'static str {
    match e {
        0 => "No error",
        1 => "Operation not permitted",
        2 => "No such file or directory",
        3 => "No such process",
        4 => "Interrupted function call",
        5 => "Input/output error",
        6 => "No such device or address",
        7 => "Arg list too long",
        8 => "Exec format error",
        9 => "Bad file descriptor",
        10 => "No child processes",
        11 => "Resource temporarily unavailable",
        12 => "Not enough space",
        13 => "Permission denied",
        14 => "Bad address",
        16 => "Resource device",
        17 => "File exists",
        18 => "Improper link",
        19 => "No such device",
        20 => "Not a directory",
        21 => "Is a directory",
        22 => "Invalid argument",
        23 => "Too many open files in system",
        24 => "Too many open files",
        25 => "Inappropriate I/O control operation",
        27 => "File too large",
        28 => "No space left on device",
        29 => "Invalid seek",
        30 => "Read-only file system",
        31 => "Too many links",
        32 => "Broken pipe",
        33 => "Domain error",
        34 => "Result too large",
        36 => "Resource deadlock avoided",
        38 => "Filename too long",
        39 => "No locks available",
        40 => "Function not implemented",
        41 => "Directory not empty",
        42 => "Illegal byte sequence",
        _ => "Unknown error",
    }
}

/// `strerror(errnum)`: the message, in the thread's buffer.
fn strerror(p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let at = p.data_at(layout::STRERROR);
    let mut m = message(w[0] as u32).as_bytes().to_vec();
    m.push(0);
    let _ = guest::write_bytes(at, &m);
    Return(at)
}

/// Reads a NUL-terminated string of `T` units from `addr`, a page at a time, at most `max`
/// units (without the NUL).
fn read_units<T: zerocopy::FromBytes + Default + PartialEq + Copy>(
    addr: u64,
    max: usize,
) -> Result<Vec<T>, Bad> {
    let unit = std::mem::size_of::<T>() as u64;
    let mut out = Vec::new();
    let mut at = addr;
    if addr == 0 {
        return Err(Bad::Null);
    }
    while out.len() < max {
        let to_page = 4096 - (at % 4096);
        let n = (to_page / unit).max(1) as usize;
        let chunk = guest::read_array::<T>(at, n)?;
        for c in chunk {
            if c == T::default() || out.len() >= max {
                return Ok(out);
            }
            out.push(c);
        }
        at = at.checked_add(n as u64 * unit).ok_or(Bad::Fault)?;
    }
    Ok(out)
}

/// `strlen(s)`.
fn strlen(_p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    match read_units::<u8>(w[0], usize::MAX) {
        Ok(s) => Return(s.len() as u64),
        Err(_) => av(),
    }
}

/// `wcslen(s)`.
fn wcslen(_p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    match read_units::<u16>(w[0], usize::MAX) {
        Ok(s) => Return(s.len() as u64),
        Err(_) => av(),
    }
}

/// `strncmp(a, b, n)`: the sign of the first difference among the first `n` characters.
fn strncmp(_p: &Arc<ExeProcess>, w: &[u64; 12]) -> StubResult {
    let n = usize::try_from(w[2]).unwrap_or(usize::MAX);
    if n == 0 {
        return Return(0);
    }
    let (Ok(a), Ok(b)) = (read_units::<u8>(w[0], n), read_units::<u8>(w[1], n)) else {
        return av();
    };
    for i in 0..n {
        let (x, y) = (
            a.get(i).copied().unwrap_or(0),
            b.get(i).copied().unwrap_or(0),
        );
        if x != y {
            return Return(u64::from((i32::from(x) - i32::from(y)) as u32));
        }
        if x == 0 {
            break;
        }
    }
    Return(0)
}

/// `strtol` (`signed`) or `strtoul`: C's rules for 32-bit `long`; `*endptr` set when given.
/// <https://learn.microsoft.com/en-us/cpp/c-runtime-library/reference/strtol-wcstol-strtol-l-wcstol-l>
fn strtox(p: &Arc<ExeProcess>, w: &[u64; 12], signed: bool) -> StubResult {
    let (nptr, endptr, base) = (w[0], w[1], w[2] as u32 as i32);
    let Ok(s) = read_units::<u8>(nptr, 4096) else {
        return av();
    };
    let (value, used, overflow) = parse_long(&s, base, signed);
    if overflow {
        set_errno(p, ERANGE);
    }
    if endptr != 0 && guest::write(endptr, &(nptr + used as u64)).is_err() {
        return av();
    }
    Return(u64::from(value))
}

/// Parses a `long` (`signed`) or `unsigned long` as `strtol`/`strtoul` do: (the value's 32
/// bits, the bytes used, whether it overflowed). No digits use nothing.
pub(crate) fn parse_long(s: &[u8], base: i32, signed: bool) -> (u32, usize, bool) {
    if base < 0 || base == 1 || base > 36 {
        return (0, 0, false);
    }
    let mut i = 0;
    while s.get(i).is_some_and(|c| matches!(c, b' ' | b'\t'..=b'\r')) {
        i += 1;
    }
    let neg = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let digit = |c: Option<&u8>| c.and_then(|c| char::from(*c).to_digit(36));
    let mut base = base as u32;
    let hex_prefix = s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && digit(s.get(i + 2)).is_some_and(|d| d < 16);
    if (base == 0 || base == 16) && hex_prefix {
        i += 2;
        base = 16;
    } else if base == 0 {
        base = if s.get(i) == Some(&b'0') { 8 } else { 10 };
    }
    let start = i;
    let mut v: u64 = 0;
    let mut over = false;
    while let Some(d) = digit(s.get(i)).filter(|&d| d < base) {
        v = v * u64::from(base) + u64::from(d);
        if v > u64::from(u32::MAX) {
            over = true;
            v = u64::from(u32::MAX);
        }
        i += 1;
    }
    if i == start {
        return (0, 0, false);
    }
    let value = if signed {
        let limit = if neg { 1u64 << 31 } else { (1u64 << 31) - 1 };
        if over || v > limit {
            return (if neg { 1 << 31 } else { i32::MAX as u32 }, i, true);
        }
        if neg {
            (v as u32).wrapping_neg()
        } else {
            v as u32
        }
    } else if over {
        return (u32::MAX, i, true);
    } else if neg {
        (v as u32).wrapping_neg()
    } else {
        v as u32
    };
    (value, i, false)
}

#[cfg(test)]
mod tests {
    use super::parse_long;

    /// `strtol`/`strtoul` as C specifies them for a 32-bit `long`.
    #[test]
    fn strtol_and_strtoul_follow_c() {
        assert_eq!(parse_long(b"  42x", 0, true), (42, 4, false));
        assert_eq!(parse_long(b"0x1000", 0, false), (0x1000, 6, false));
        assert_eq!(parse_long(b"010", 0, true), (8, 3, false));
        assert_eq!(parse_long(b"0xg", 16, true), (0, 1, false));
        assert_eq!(parse_long(b"-5", 10, true), ((-5i32) as u32, 2, false));
        assert_eq!(parse_long(b"-1", 10, false), (u32::MAX, 2, false));
        assert_eq!(parse_long(b"4294967296", 10, false), (u32::MAX, 10, true));
        assert_eq!(
            parse_long(b"2147483648", 10, true),
            (i32::MAX as u32, 10, true)
        );
        assert_eq!(parse_long(b"-2147483648", 10, true), (1 << 31, 11, false));
        assert_eq!(parse_long(b"zz", 36, true), (35 * 36 + 35, 2, false));
        assert_eq!(parse_long(b"12", 1, true), (0, 0, false));
        assert_eq!(parse_long(b"  +", 10, true), (0, 0, false));
    }
}
