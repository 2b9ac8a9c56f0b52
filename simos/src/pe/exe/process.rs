//! One running program's process: its image, its data block, its system DLLs' state, its
//! `UserProcess`, how it ended; calls into the program (loading it is the parent's).

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use super::layout;
use super::state::{Crt, Kernel32};
use crate::base::lock::lock;
use crate::pe::arena;
use crate::pe::cpu::{self, Stop, StubResult, Stubs};
use crate::pe::image;
use crate::pe::umd::{guest, UserProcess};
use crate::Machine;

/// A routine of the simulated system DLLs the program calls, with its arguments.
pub(crate) type Handler = fn(&Arc<ExeProcess>, &[u64; 12]) -> StubResult;

/// What one import of the program binds to.
pub(super) enum Binding {
    /// A host routine, through a stub.
    Host(Handler),
    /// A routine of the DLL's own kernel32 model (`super::umd::win32`).
    Win32(crate::pe::umd::Handler),
    /// Machine code placed in the process's system code range.
    Code(&'static [u8]),
    /// `fprintf`: spills its variable arguments and jumps to `vfprintf` (as msvcrt's does).
    FprintfShim,
    /// An exported variable of the C runtime, at this offset of the process's data block.
    Data(usize),
    /// An export of `rvgpu_umd.dll`.
    Dll(usize),
}

/// TEB fields (x64 `NT_TIB` and what follows it).
pub(super) mod teb {
    pub const STACK_BASE: usize = 0x08;
    pub const SELF: usize = 0x30;
    pub const CLIENT_ID: usize = 0x40;
    pub const TLS_POINTER: usize = 0x58;
    pub const PEB: usize = 0x60;
    pub const LAST_ERROR: usize = 0x68;
}

/// How the process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// `exit(code)` (or the entry point returned `code`).
    Code(u32),
    /// An exception nothing handled: its NTSTATUS (the exit code Windows gives such a
    /// process), the data address it concerned (0 when none) and where.
    Exception { code: u32, address: u64, rip: u64 },
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// How the process ended.
    pub exit: ExitStatus,
    /// What it wrote to `stdout`.
    pub stdout: Vec<u8>,
    /// What it wrote to `stderr`.
    pub stderr: Vec<u8>,
}

impl Outcome {
    /// `stdout` as text.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Why a routine stopped the program (recorded before it raises, so [`ExeProcess::run`] tells
/// an exit from an exception).
#[derive(Clone, Debug)]
pub(super) enum Ending {
    Exit(u32),
    Exception { code: u32, address: u64, rip: u64 },
    Emulator(String),
    Halted,
}

/// The code a routine raises to unwind the program once it has recorded an [`Ending`]
/// (never seen by the program: nothing in it runs after the raise).
pub(super) const ENDING_RAISE: u32 = 0xE000_0E71;

/// The most either stream captures; what comes after is dropped (and counted as written).
const CAPTURE_LIMIT: usize = 1 << 20;

/// One running program: its image, its system DLLs' state and its `UserProcess`.
pub struct ExeProcess {
    pub(super) umd: Arc<UserProcess>,
    pub(super) image: image::Image,
    /// Page protections of the image, as `VirtualProtect` left them.
    pub(super) pages: Mutex<Vec<u32>>,
    /// What the process took of the arena and the emulator (given back when it goes).
    pub(super) owned: Owned,
    /// The process's data block (see [`layout`]).
    pub(super) data: usize,
    /// The call trampoline (sets the TEB, then jumps to R9).
    pub(super) trampoline: usize,
    /// TLS callbacks, in order.
    pub(super) tls_callbacks: Vec<u64>,
    /// The command line, as `argv`.
    pub(super) args: Vec<String>,
    pub(crate) crt: Crt,
    pub(crate) k32: Kernel32,
    pub(super) ending: Mutex<Option<Ending>>,
    pub(super) stdout: Mutex<Vec<u8>>,
    pub(super) stderr: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for ExeProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExeProcess")
            .field("base", &format_args!("{:#x}", self.image.base))
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The program this thread runs (set while its code runs).
    pub(super) static CURRENT: RefCell<Option<Arc<ExeProcess>>> = const { RefCell::new(None) };
}

impl ExeProcess {
    /// The machine.
    pub fn machine(&self) -> &Arc<Machine> {
        self.umd.machine()
    }

    /// The process's `UserProcess` (the DLL's side of it).
    pub fn user_process(&self) -> &Arc<UserProcess> {
        &self.umd
    }

    /// Runs the program: the TLS callbacks (`DLL_PROCESS_ATTACH`), the entry point, and on a
    /// normal end the TLS callbacks again (`DLL_PROCESS_DETACH`). `Err` only when the
    /// emulator could not run it or the machine halted.
    pub fn run(self: &Arc<Self>) -> Result<Outcome, Stop> {
        const DLL_PROCESS_ATTACH: u64 = 1;
        const DLL_PROCESS_DETACH: u64 = 0;
        let module = self.image.base as u64;
        let mut status = None;
        for &cb in &self.tls_callbacks {
            if let Err(e) = self.call(cb, &[module, DLL_PROCESS_ATTACH, 0]) {
                status = Some(self.ended(Err(e))?);
                break;
            }
        }
        let status = match status {
            Some(s) => s,
            None => {
                let r = self.call(self.image.entry as u64, &[]);
                self.ended(r)?
            }
        };
        if matches!(status, ExitStatus::Code(_)) {
            for &cb in &self.tls_callbacks {
                if self.call(cb, &[module, DLL_PROCESS_DETACH, 0]).is_err() {
                    break;
                }
            }
        }
        Ok(Outcome {
            exit: status,
            stdout: lock(&self.stdout).clone(),
            stderr: lock(&self.stderr).clone(),
        })
    }

    /// How the program ended, from what its outermost call returned.
    fn ended(&self, r: Result<u64, Stop>) -> Result<ExitStatus, Stop> {
        let recorded = lock(&self.ending).clone();
        match (recorded, r) {
            (Some(Ending::Exit(c)), _) => Ok(ExitStatus::Code(c)),
            (Some(Ending::Exception { code, address, rip }), _) => {
                Ok(ExitStatus::Exception { code, address, rip })
            }
            (Some(Ending::Emulator(m)), _) => Err(Stop::Emulator(m)),
            (Some(Ending::Halted), _) => Err(Stop::Halted),
            // The initial thread returned: `RtlExitUserThread` with its value ends the process.
            (None, Ok(v)) => Ok(ExitStatus::Code(v as u32)),
            (None, Err(Stop::UserException { code, address, rip })) => {
                Ok(ExitStatus::Exception { code, address, rip })
            }
            (None, Err(e)) => Err(e),
        }
    }

    /// Calls the program's code at `target` with up to three arguments, on this thread.
    fn call(self: &Arc<Self>, target: u64, args: &[u64]) -> Result<u64, Stop> {
        let mut a = [0u64; 4];
        for (d, s) in a.iter_mut().zip(args.iter().take(3)) {
            *d = *s;
        }
        a[3] = target;
        let prev = CURRENT.with(|c| c.replace(Some(self.clone())));
        let r = self.umd.run_at(self.trampoline, &a);
        CURRENT.with(|c| *c.borrow_mut() = prev);
        r
    }

    /// Calls the program's code from inside a routine (an `atexit` function, an initializer,
    /// a signal handler): its result, or what the routine must do to unwind (the program
    /// ended inside: the ending is recorded first).
    pub(crate) fn call_back(
        self: &Arc<Self>,
        target: u64,
        args: &[u64],
    ) -> Result<u64, StubResult> {
        match self.call(target, args) {
            Ok(v) => Ok(v),
            Err(e) => {
                let mut g = lock(&self.ending);
                if g.is_none() {
                    *g = Some(match e {
                        Stop::UserException { code, address, rip } => {
                            Ending::Exception { code, address, rip }
                        }
                        Stop::Emulator(m) => Ending::Emulator(m),
                        Stop::Halted => Ending::Halted,
                    });
                }
                Err(StubResult::Raise(ENDING_RAISE))
            }
        }
    }

    /// Ends the program with `code` (nothing of it runs after the routine returns this).
    pub(crate) fn exit(&self, code: u32) -> StubResult {
        let mut g = lock(&self.ending);
        if g.is_none() {
            *g = Some(Ending::Exit(code));
        }
        StubResult::Raise(ENDING_RAISE)
    }

    /// Whether the program is ending (an `exit` is under way or done).
    pub(crate) fn ending(&self) -> bool {
        lock(&self.ending).is_some()
    }

    /// Appends to the captured `stdout` (1) or `stderr` (2).
    pub(crate) fn write_stream(&self, stream: usize, bytes: &[u8]) {
        let buf = if stream == 1 {
            &self.stdout
        } else {
            &self.stderr
        };
        let mut b = lock(buf);
        let room = CAPTURE_LIMIT.saturating_sub(b.len());
        b.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Address of `off` in the data block.
    pub(crate) fn data_at(&self, off: usize) -> u64 {
        (self.data + off) as u64
    }

    /// The command line, as `argv`.
    pub(crate) fn args(&self) -> &[String] {
        &self.args
    }

    /// The image's `[base, end)`.
    pub(crate) fn image_range(&self) -> (u64, u64) {
        let b = self.image.base as u64;
        (b, b + self.image.size as u64)
    }

    /// The image's page protections.
    pub(crate) fn pages(&self) -> crate::base::lock::Locked<'_, Vec<u32>> {
        lock(&self.pages)
    }

    /// The thread's last error (TEB `LastErrorValue`).
    pub(crate) fn last_error(&self) -> u32 {
        guest::read((self.data + layout::TEB + teb::LAST_ERROR) as u64).unwrap_or(0)
    }

    /// `SetLastError`.
    pub(crate) fn set_last_error(&self, e: u32) {
        let _ = guest::write((self.data + layout::TEB + teb::LAST_ERROR) as u64, &e);
    }

    /// Blocks the program holds on the C runtime's heap.
    pub fn heap_blocks(&self) -> usize {
        self.crt.blocks()
    }

    /// `TEB.NtTib.StackBase` as the last call into the program set it.
    pub fn stack_base(&self) -> u64 {
        guest::read((self.data + layout::TEB + teb::STACK_BASE) as u64).unwrap_or(0)
    }
}

/// What a process takes of the arena (its image, data, code and TLS ranges, each registered
/// with the processors), its special instructions and its stubs: given back when it drops,
/// so a load that fails half-way leaves nothing behind. The addresses are never reused.
#[derive(Default)]
pub(super) struct Owned {
    pub(super) ranges: Vec<(usize, usize)>,
    pub(super) specials: Option<u64>,
    pub(super) stubs: Option<Arc<Stubs>>,
}

impl Owned {
    /// Takes `[base, base + len)` (fresh from the arena) and registers it as memory.
    pub(super) fn range(&mut self, base: usize, len: usize) {
        cpu::register_range(base, len, cpu::Range::Ram);
        self.ranges.push((base, len));
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(s) = self.specials.take() {
            cpu::unregister_specials(s);
        }
        if let Some(s) = self.stubs.take() {
            cpu::drop_stubs(&s);
        }
        for (base, len) in self.ranges.drain(..) {
            cpu::unregister_range(base);
            arena::release(base, len);
        }
    }
}

impl Drop for ExeProcess {
    /// The process is gone: its image, its data and code ranges and its stubs go (their
    /// addresses are never reused); its heap goes with the C runtime's state; the DLL's side
    /// closes what it left open when the `UserProcess` drops.
    fn drop(&mut self) {
        self.crt.free_heap();
    }
}
