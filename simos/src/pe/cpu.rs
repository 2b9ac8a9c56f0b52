//! Emulated processors that run the image's code for the simulated OS's threads.
//!
//! **One processor per host thread, one instruction stream at a time.** Every simulated-OS
//! thread that calls into the image (a PnP DDI on a test thread, the ISR on the interrupt
//! thread, a DPC, a timer routine, VidSch's worker) runs it on an emulated x86-64 processor of
//! its own (a Unicorn engine kept per thread; a nested call — a callback that calls back into
//! the image — takes a second one). Unicorn's code generator does not make `lock`-prefixed
//! instructions atomic against another engine, so the processors take turns: a global lock is
//! held while any of them executes guest instructions. It is released whenever a processor
//! leaves the image — an ntoskrnl routine or Dxgkrnl callback, a register access (which reaches
//! the device model), and at every `pause` (Rust's `spin_loop`, the body of every spin wait in
//! the driver) — so a spinning processor lets the lock holder run, and a processor waiting in
//! the host never blocks the others. A guest read-modify-write therefore never interleaves
//! with another guest access; the device and the simulated OS never do read-modify-write on
//! memory the driver does (they write what it reads and read what it writes). Limit: a spin
//! loop without `pause` and without a register access would keep the lock; the driver has
//! none (its spin waits are `SpinLock::lock` and two bounded waits, all with `spin_loop`).
//!
//! **Memory.** Host memory is mapped into every processor at its own address, on first touch
//! (a 64 KiB piece of the host mapping that holds the address), so DXGKARG structures, the
//! pool, fence storage and system memory need no copying. Ranges of the address arena (images,
//! stubs, stacks) are mapped whole; register windows are MMIO regions routed to the device.
//! An address that is mapped nowhere is bug check 0x50, as on Windows.
//!
//! **Leaving the image.** Imports and callbacks are addresses in a stub page, each `int3` then
//! `ret`; the trap's hook runs the host routine without the lock and writes RAX, and the
//! processor goes on to the `ret` (`serve`).
//!
//! **A debugger** ([`super::gdb`], `RVGPU_GDB`): every processor made once one was asked for
//! has a code hook on every instruction (breakpoints, single steps, its interrupt), and a bug
//! check raised while a processor runs the image stops the debugger first. Without one, no
//! processor has the hook.

use std::sync::Mutex;

use super::arena;
use super::checked::{page_fault, Access};
use super::gdb;
use super::unicorn::{self, reg};
use crate::adapter::context;
use crate::base::bugcheck::{self, BugCheck};
use crate::base::lock::lock;

/// Reached by the debugger, which changes code behind the processors' back.
pub(super) mod code;
mod count;
mod engine;
mod memory;
mod serve;
mod special;
mod stack;
mod stubs;
mod trace;
mod turns;
mod window;

pub use count::{
    counting, executed, executed_user, register_count_range, register_user_count_range,
};
use engine::{Engine, Exit, ARG_REGS, STACK};
use memory::{host_mapping, range_of};
pub use memory::{register_range, unregister_range, Range};
use serve::StubEnd;
pub use special::{irql_from_cr8, register_specials, unregister_specials, Sites};
pub use stack::{deepest_stacks, StackUse};
pub use stubs::{drop_stubs, StubFn, StubResult, Stubs};
pub(crate) use trace::trace;
use turns::{acquire, holding, release};
pub use window::{register_window, WindowFn};

/// The address every outermost call returns to: the processor stops when it gets there.
fn sentinel() -> Result<usize, String> {
    static S: std::sync::OnceLock<Result<usize, String>> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let base = arena::alloc(4096, arena::Access::ReadWrite)?;
        // SAFETY: fresh read-write page.
        unsafe { std::ptr::write_bytes(base as *mut u8, 0xCC, 4096) };
        register_range(base, 4096, Range::Ram);
        Ok(base)
    })
    .clone()
}

// ---------------------------------------------------------------------------------------------
// Calls into the image.

/// Idle processors. A call takes one (a nested call a second), whichever thread it runs on,
/// and returns it: processors outlive the simulated OS's threads and machines, so the code
/// they translated is translated once per process.
#[allow(
    clippy::vec_box,
    reason = "the hooks hold the engine's address: it must not move"
)]
static POOL: Mutex<Vec<Box<Engine>>> = Mutex::new(Vec::new());

/// Why a call into the image did not return a value.
#[derive(Clone, Debug)]
pub enum Stop {
    /// The machine bug-checked during the call (raised on the current machine).
    Halted,
    /// The emulator could not run (not installed, or an internal error).
    Emulator(String),
    /// User-mode code (the UMD image, [`call_user`]) raised an exception nothing handles —
    /// an access violation, an illegal instruction, `__fastfail` — which on Windows ends the
    /// process, not the machine: `code` is the NTSTATUS (`STATUS_ACCESS_VIOLATION` …),
    /// `address` the faulting data address (0 when none), `rip` where.
    UserException { code: u32, address: u64, rip: u64 },
}

/// The segment bases a call may change and every call restores.
const SEGMENT_BASES: [i32; 2] = [reg::FS_BASE, reg::GS_BASE];

/// Calls the image's function at `addr` with `args` (Windows x64 convention) on this thread's
/// processor; returns RAX. A fault in the image is raised as the bug check Windows would
/// raise, on the current machine.
pub fn call(addr: usize, args: &[u64]) -> Result<u64, Stop> {
    call_in(addr, args, false)
}

/// Calls user-mode code (the UMD image's export at `addr`) with `args` on this thread's
/// processor; returns RAX. A fault in it is the process's exception
/// ([`Stop::UserException`]), never a bug check: user mode cannot stop the machine. What the
/// code calls in the simulated OS runs as for [`call`] (a thunk that reaches the driver image
/// runs it on a second processor, in kernel mode).
pub fn call_user(addr: usize, args: &[u64]) -> Result<u64, Stop> {
    call_in(addr, args, true)
}

fn call_in(addr: usize, args: &[u64], user: bool) -> Result<u64, Stop> {
    if context::current_machine().is_some_and(|m| m.is_halted()) {
        return Err(Stop::Halted);
    }
    let engine = match lock(&POOL).pop() {
        Some(e) => e,
        None => Engine::new().map_err(Stop::Emulator)?,
    };
    let held = holding();
    if !held {
        acquire();
    }
    // The segment bases are the caller's: what the called code sets (a program's trampoline
    // points `gs` at its TEB) ends with the call, so a processor never keeps a base into
    // memory the call's owner frees afterwards.
    let bases = SEGMENT_BASES.map(|r| engine.read(r));
    let r = run(&engine, addr, args, user);
    for (r, v) in SEGMENT_BASES.iter().zip(bases) {
        engine.write(*r, v);
    }
    stack::measure(addr, entry_rsp(&engine, args.len()), engine.stack);
    if !held {
        release();
    }
    lock(&POOL).push(engine);
    r
}

/// Where a call with `args` arguments has its return address: the frame is 16-byte aligned
/// before the call, the return address below it, shadow space and stack arguments above.
fn entry_rsp(e: &Engine, args: usize) -> usize {
    let top = (e.stack + STACK - 256) & !15;
    let extra = args.saturating_sub(4);
    let frame = (top - 0x20 - 8 * extra) & !15;
    frame - 8
}

fn run(e: &Engine, addr: usize, args: &[u64], user: bool) -> Result<u64, Stop> {
    let sentinel = sentinel().map_err(Stop::Emulator)? as u64;
    e.sync_specials();
    let rsp = entry_rsp(e, args.len());
    let frame = rsp + 8;
    for (i, a) in args.iter().enumerate().skip(4) {
        // SAFETY: inside this engine's stack range, 8-byte aligned.
        unsafe { ((frame + 0x20 + 8 * (i - 4)) as *mut u64).write(*a) };
    }
    // SAFETY: as above.
    unsafe { (rsp as *mut u64).write(sentinel) };
    e.write(reg::RSP, rsp as u64);
    for (i, r) in ARG_REGS.iter().enumerate() {
        e.write(*r, args.get(i).copied().unwrap_or(0));
    }
    let mut pc = addr as u64;
    loop {
        e.exit.set(None);
        e.forget_changed_code();
        // SAFETY: the instance is ours; `until` is the sentinel.
        let err = unsafe { (e.api.emu_start)(e.uc, pc, sentinel, 0, 0) };
        let rip = e.read(reg::RIP);
        let exit = e.exit.take();
        if exit.is_none() && err == 0 && rip == sentinel {
            return Ok(e.read(reg::RAX));
        }
        match exit {
            Some(Exit::Interrupt(3)) => {
                // Not a stub: the hook serves those (`serve_stub`).
                let at = rip.wrapping_sub(1);
                if user {
                    return user_exception(STATUS_BREAKPOINT, 0, at);
                }
                return fault(
                    e,
                    BugCheck::new(KMODE_EXCEPTION_NOT_HANDLED, [0x8000_0003, at, 0, 0]),
                );
            }
            Some(Exit::Stub(end)) => match end {
                StubEnd::Halted => {
                    halted_in_call(e);
                    return Err(Stop::Halted);
                }
                StubEnd::Raise { code, at } if user => return user_exception(code, 0, at),
                StubEnd::Raise { code, at } => {
                    return fault(
                        e,
                        BugCheck::new(KMODE_EXCEPTION_NOT_HANDLED, [u64::from(code), at, 0, 0]),
                    );
                }
                StubEnd::Returned => pc = rip,
            },
            Some(Exit::Interrupt(n)) => {
                // #DE, #UD and the rest reach KiDispatchException; a driver's unhandled one is
                // 0x1E with the exception code. `int 0x29` is __fastfail: 0x139.
                if user {
                    // What the process's unhandled exception is: the same codes, and
                    // `__fastfail` is STATUS_STACK_BUFFER_OVERRUN (its documented code).
                    let code = match n {
                        0 => 0xC000_0094,
                        6 => 0xC000_001D,
                        0x29 => STATUS_STACK_BUFFER_OVERRUN,
                        _ => STATUS_ACCESS_VIOLATION,
                    };
                    return user_exception(code, 0, rip);
                }
                let (code, status) = match n {
                    0 => (KMODE_EXCEPTION_NOT_HANDLED, 0xC000_0094), // STATUS_INTEGER_DIVIDE_BY_ZERO
                    6 => (KMODE_EXCEPTION_NOT_HANDLED, 0xC000_001D), // STATUS_ILLEGAL_INSTRUCTION
                    0x29 => (KERNEL_SECURITY_CHECK_FAILURE, e.read(reg::RCX)),
                    _ => (KMODE_EXCEPTION_NOT_HANDLED, 0xC000_0005),
                };
                return fault(e, BugCheck::new(code, [status, rip, 0, 0]));
            }
            Some(Exit::Resume { at }) => {
                if rip == at {
                    e.skip_debug_at.set(Some(at));
                }
                pc = rip;
            }
            Some(Exit::Invalid) if user => return user_exception(0xC000_001D, 0, rip),
            Some(Exit::Invalid) => {
                return fault(
                    e,
                    BugCheck::new(KMODE_EXCEPTION_NOT_HANDLED, [0xC000_001D, rip, 0, 0]),
                );
            }
            Some(Exit::StubArgument { addr, at }) => {
                if user {
                    return user_exception(STATUS_ACCESS_VIOLATION, addr, at);
                }
                return fault(e, page_fault(addr, Access::Read, at));
            }
            Some(Exit::Fault { addr, kind }) => {
                if kind == unicorn::mem::FETCH_UNMAPPED
                    && addr != 0
                    && !arena::contains(addr as usize)
                    && host_mapping(addr as usize).is_some()
                {
                    return Err(Stop::Emulator(format!(
                        "the image called host code at {addr:#x} (a host function pointer crossed the bridge untranslated)"
                    )));
                }
                if user {
                    return user_exception(STATUS_ACCESS_VIOLATION, addr, rip);
                }
                let access = match kind {
                    unicorn::mem::WRITE_UNMAPPED => Access::Write,
                    unicorn::mem::FETCH_UNMAPPED => Access::Execute,
                    _ => Access::Read,
                };
                return fault(e, page_fault(addr, access, rip));
            }
            None => {
                let sp = e.read(reg::RSP) as usize;
                let ret = if (e.stack..e.stack + STACK - 8).contains(&sp) {
                    // SAFETY: inside this engine's stack; unaligned, as the image's RSP may be.
                    unsafe { (sp as *const u64).read_unaligned() }
                } else {
                    0
                };
                let host = host_mapping(rip as usize).map(|(a, _, _)| rip as usize - a);
                return Err(Stop::Emulator(format!(
                    "emulation stopped at {rip:#x} (host mapping offset {host:x?}, return address {ret:#x}): {}",
                    unicorn::error_text(e.api, err)
                )));
            }
        }
    }
}

/// `KMODE_EXCEPTION_NOT_HANDLED`.
pub const KMODE_EXCEPTION_NOT_HANDLED: u32 = 0x1E;
/// `KERNEL_SECURITY_CHECK_FAILURE`.
pub const KERNEL_SECURITY_CHECK_FAILURE: u32 = 0x139;

/// `STATUS_ACCESS_VIOLATION`.
pub const STATUS_ACCESS_VIOLATION: u32 = rvgpu_ddi::ntstatus::STATUS_ACCESS_VIOLATION as u32;
/// `STATUS_BREAKPOINT`.
const STATUS_BREAKPOINT: u32 = rvgpu_ddi::ntstatus::STATUS_BREAKPOINT as u32;
/// `STATUS_STACK_BUFFER_OVERRUN`: how `__fastfail` ends a process.
pub const STATUS_STACK_BUFFER_OVERRUN: u32 =
    rvgpu_ddi::ntstatus::STATUS_STACK_BUFFER_OVERRUN as u32;

fn user_exception(code: u32, address: u64, rip: u64) -> Result<u64, Stop> {
    if trace() {
        eprintln!("[pe] user-mode exception {code:#x} at {rip:#x} (address {address:#x})");
    }
    Err(Stop::UserException { code, address, rip })
}

fn fault(e: &Engine, b: BugCheck) -> Result<u64, Stop> {
    // Where in the image, as a debugger names it (module + offset), for the log.
    let rip = b.params[2] as usize;
    let at = match range_of(rip) {
        Some((base, _, Range::Ram)) => format!("rvgpu.sys+{:#x}", rip - base),
        _ => format!("{rip:#x}"),
    };
    if let Some(m) = context::current_machine() {
        m.push_log(
            rvgpu_kmd::platform::Level::Error,
            format!("PE image: {} at {at}", b.name()),
        );
    }
    if trace() {
        eprintln!("[pe] fault {b} at {at}");
    }
    gdb::bug_check(e.processor(), format!("{b} at {at}"), signal_of(&b));
    context::raise(b);
    Err(Stop::Halted)
}

/// The signal a debugger is stopped with for bug check `b`: the POSIX signal of the same
/// fault, else SIGABRT (the machine stops).
fn signal_of(b: &BugCheck) -> gdb::Signal {
    match (b.code, b.params[0]) {
        (bugcheck::PAGE_FAULT_IN_NONPAGED_AREA, _) => gdb::Signal::SIGSEGV,
        (KMODE_EXCEPTION_NOT_HANDLED, 0xC000_0005) => gdb::Signal::SIGSEGV,
        (KMODE_EXCEPTION_NOT_HANDLED, 0xC000_001D) => gdb::Signal::SIGILL,
        (KMODE_EXCEPTION_NOT_HANDLED, 0xC000_0094) => gdb::Signal::SIGFPE,
        (KMODE_EXCEPTION_NOT_HANDLED, 0x8000_0003) => gdb::Signal::SIGTRAP,
        _ => gdb::Signal::SIGABRT,
    }
}

/// A bug check a routine the image called raised (the machine is halted): the debugger
/// stops at the call first.
fn halted_in_call(e: &Engine) {
    if let Some(b) = context::current_machine().and_then(|m| m.bugcheck()) {
        gdb::bug_check(
            e.processor(),
            format!("{b}, raised in a routine the image called"),
            signal_of(&b),
        );
    }
}

#[cfg(test)]
mod tests;
