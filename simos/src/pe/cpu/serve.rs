//! Serving a stub where the image calls it: the `int3` hook runs the host routine, and the
//! processor goes on to the stub's `ret` without leaving the emulator.
//!
//! A driver calls an import every few instructions, and each `uc_emu_start` costs more than
//! most routines (Unicorn sets the processor up, then invalidates the translations at the exit
//! address when it ends). The engine's hook reads the Windows x64 arguments (RCX, RDX, R8, R9,
//! then the stack above the shadow space), the routine runs here outside the guest lock, and
//! the hook writes RAX. A routine that calls back into the image (a DPC, a synchronize routine)
//! runs it on a second processor from inside the hook: each Unicorn instance keeps its state to
//! itself. Whatever else the routine did (a bug check, an exception it raises) ends the
//! emulation with the outcome for [`super::run`] to act on, as does code the debugger changed
//! meanwhile (the processor forgets its translations, then goes on at the `ret`).

use std::sync::Arc;

use super::stubs::{StubFn, StubResult};
use super::trace::trace;
use super::turns::outside;
use crate::adapter::context;

/// How a stub's routine ended the processor's run.
#[derive(Clone, Copy, Debug)]
pub(super) enum StubEnd {
    /// The machine bug-checked in the routine, or it does not return (`KeBugCheckEx`).
    Halted,
    /// The routine raised exception `code` at the stub's address `at`.
    Raise { code: u32, at: u64 },
    /// The routine returned (RAX written) and code changed meanwhile: the processor forgets
    /// its translations and goes on at the stub's `ret`.
    Returned,
}

/// Runs the routine `f` (stub `name` at `at`) with the image's argument words, outside the
/// guest lock: the value for RAX, or how the processor's run ends.
pub(super) fn run_routine(
    name: &Arc<str>,
    f: &StubFn,
    words: &[u64; 12],
    at: u64,
) -> Result<u64, StubEnd> {
    if trace() {
        eprintln!(
            "[pe] -> {name}({:#x}, {:#x}, {:#x}, {:#x})",
            words[0], words[1], words[2], words[3]
        );
    }
    let result = outside(|| f(words));
    if context::current_machine().is_some_and(|m| m.is_halted()) {
        return Err(StubEnd::Halted);
    }
    match result {
        StubResult::Return(v) => Ok(v),
        StubResult::NoReturn => Err(StubEnd::Halted),
        StubResult::Raise(code) => Err(StubEnd::Raise { code, at }),
    }
}
