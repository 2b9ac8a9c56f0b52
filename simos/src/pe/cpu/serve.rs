//! Serving a stub where the image calls it: the `int3` hook runs the host routine, and the
//! processor goes on to the stub's `ret` without leaving the emulator.
//!
//! A driver calls an import every few instructions, and each `uc_emu_start` costs more than
//! most routines (Unicorn sets the processor up, then invalidates the translations at the exit
//! address when it ends). The hook reads the Windows x64 arguments (RCX, RDX, R8, R9, then the
//! stack above the shadow space), runs the routine outside the guest lock and writes RAX. A
//! routine that calls back into the image (a DPC, a synchronize routine) runs it on a second
//! processor from inside this hook: each Unicorn instance keeps its state to itself. Whatever
//! else the routine did (a bug check, an exception it raises) ends the emulation with the
//! outcome for [`super::run`] to act on, as does code the debugger changed meanwhile (the
//! processor forgets its translations, then goes on at the `ret`).

use super::engine::{Engine, Exit, StubEnd, ARG_REGS, STACK};
use super::stubs::{stub_at, StubResult};
use super::trace::trace;
use super::turns::outside;
use crate::adapter::context;
use crate::pe::unicorn::reg;

/// What the `int3` at `RIP - 1` does: `None` when it was a stub served here (the processor goes
/// on at the return address), else why the processor stops.
pub(super) fn serve_stub(e: &Engine) -> Option<Exit> {
    let rip = e.read(reg::RIP);
    let at = rip.wrapping_sub(1);
    let Some((name, f)) = stub_at(at as usize) else {
        return Some(Exit::Interrupt(3));
    };
    let sp = e.read(reg::RSP) as usize;
    let on_stack = |a: usize| (e.stack..e.stack + STACK - 8).contains(&a);
    let mut words = [0u64; 12];
    for (i, w) in words.iter_mut().enumerate() {
        *w = match ARG_REGS.get(i) {
            Some(&r) => e.read(r),
            None => {
                let a = sp + 0x28 + 8 * (i - 4);
                if on_stack(a) {
                    // SAFETY: inside this engine's stack.
                    unsafe { (a as *const u64).read() }
                } else {
                    0
                }
            }
        };
    }
    if trace() {
        eprintln!(
            "[pe] -> {name}({:#x}, {:#x}, {:#x}, {:#x})",
            words[0], words[1], words[2], words[3]
        );
    }
    let result = outside(|| f(&words));
    if context::current_machine().is_some_and(|m| m.is_halted()) {
        return Some(Exit::Stub(StubEnd::Halted));
    }
    let value = match result {
        StubResult::Return(v) => v,
        StubResult::NoReturn => return Some(Exit::Stub(StubEnd::Halted)),
        StubResult::Raise(code) => return Some(Exit::Stub(StubEnd::Raise { code, at })),
    };
    e.write(reg::RAX, value);
    if e.code_changed_since() {
        // Leave the emulator to forget the translations, and go on at the `ret`.
        return Some(Exit::Stub(StubEnd::Returned));
    }
    // The processor goes on at the stub's `ret`: no PC is written (a PC written in a hook makes
    // Unicorn leave the block, which costs more than the call).
    None
}
