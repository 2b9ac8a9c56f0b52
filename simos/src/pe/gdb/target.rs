//! What the debugger reads and changes while the image is stopped: the processors' registers
//! (x86-64 core, x87 and SSE, in GDB's `amd64` layout), the process's memory, breakpoints,
//! single steps, and two `monitor` commands.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use gdbstub::common::{Signal, Tid};
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSingleStep,
    MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, SwBreakpoint, SwBreakpointOps,
};
use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd, MonitorCmdOps};
use gdbstub::target::ext::target_description_xml_override::{
    TargetDescriptionXmlOverride, TargetDescriptionXmlOverrideOps,
};
use gdbstub::target::{Target, TargetError, TargetResult};
use gdbstub_arch::x86::reg::X86_64CoreRegs;
use gdbstub_arch::x86::X86_64_SSE;

use super::state::{
    modules, Processor, BREAKPOINTS, BREAKPOINT_COUNT, LAST_BUGCHECK, PROCESSORS, STEP,
};
use crate::base::lock::lock;
use crate::pe::unicorn::{self, reg, Uc};

/// The target while stopped: `current` is the processor that stopped.
pub(super) struct Stopped {
    current: Processor,
}

impl Stopped {
    pub(super) fn new(current: Processor) -> Self {
        Self { current }
    }

    /// The Unicorn instance of thread `tid`.
    fn uc(&self, tid: Tid) -> Option<Uc> {
        let id = u32::try_from(tid.get()).ok()?;
        if id == self.current.id {
            return Some(self.current.uc as Uc);
        }
        lock(&PROCESSORS).get(&id).map(|&uc| uc as Uc)
    }
}

/// `uc_x86_reg` numbers beyond those the bridge uses (unicorn/x86.h 2.0).
mod more {
    pub const CS: i32 = 11;
    pub const DS: i32 = 17;
    pub const EFLAGS: i32 = 25;
    pub const ES: i32 = 28;
    pub const FPSW: i32 = 31;
    pub const FS: i32 = 32;
    pub const GS: i32 = 33;
    pub const SS: i32 = 49;
    pub const ST0: i32 = 114;
    pub const XMM0: i32 = 122;
    pub const FPCW: i32 = 246;
    pub const FPTAG: i32 = 247;
    pub const MXCSR: i32 = 249;
}

/// The general registers in GDB's order (rax, rbx, rcx, rdx, rsi, rdi, rbp, rsp, r8–r15).
const GPRS: [i32; 16] = [
    reg::RAX,
    reg::RBX,
    reg::RCX,
    reg::RDX,
    reg::RSI,
    reg::RDI,
    reg::RBP,
    reg::RSP,
    reg::R8,
    reg::R9,
    reg::R10,
    reg::R11,
    reg::R12,
    reg::R13,
    reg::R14,
    reg::R15,
];

/// Reads register `r` of `uc` into a buffer larger than any register Unicorn writes for it.
fn raw(uc: Uc, r: i32) -> [u8; 64] {
    let mut b = [0u8; 64];
    let Ok(api) = unicorn::api() else {
        return b;
    };
    // SAFETY: the instance is stopped (its thread waits for the guest lock this thread holds,
    // or is this thread); 64 bytes hold any x86 register Unicorn reads.
    unsafe { (api.reg_read)(uc, r, b.as_mut_ptr().cast()) };
    b
}

fn read_u64(uc: Uc, r: i32) -> u64 {
    let b = raw(uc, r);
    let mut w = [0u8; 8];
    w.copy_from_slice(b.get(..8).unwrap_or(&[0; 8]));
    u64::from_le_bytes(w)
}

fn write_u64(uc: Uc, r: i32, v: u64) {
    let Ok(api) = unicorn::api() else {
        return;
    };
    // SAFETY: a 64-bit (or narrower) register written from 8 bytes; the instance is stopped.
    unsafe { (api.reg_write)(uc, r, (&raw const v).cast()) };
}

fn write_u128(uc: Uc, r: i32, v: u128) {
    let Ok(api) = unicorn::api() else {
        return;
    };
    // SAFETY: a 128-bit register written from 16 bytes; the instance is stopped.
    unsafe { (api.reg_write)(uc, r, (&raw const v).cast()) };
}

fn read_regs(uc: Uc, regs: &mut X86_64CoreRegs) {
    for (slot, &r) in regs.regs.iter_mut().zip(GPRS.iter()) {
        *slot = read_u64(uc, r);
    }
    regs.rip = read_u64(uc, reg::RIP);
    regs.eflags = read_u64(uc, more::EFLAGS) as u32;
    let s = &mut regs.segments;
    s.cs = read_u64(uc, more::CS) as u32;
    s.ss = read_u64(uc, more::SS) as u32;
    s.ds = read_u64(uc, more::DS) as u32;
    s.es = read_u64(uc, more::ES) as u32;
    s.fs = read_u64(uc, more::FS) as u32;
    s.gs = read_u64(uc, more::GS) as u32;
    for (r, st) in (more::ST0..).zip(regs.st.iter_mut()) {
        let b = raw(uc, r);
        st.copy_from_slice(b.get(..10).unwrap_or(&[0; 10]));
    }
    regs.fpu.fctrl = read_u64(uc, more::FPCW) as u32 & 0xFFFF;
    regs.fpu.fstat = read_u64(uc, more::FPSW) as u32 & 0xFFFF;
    regs.fpu.ftag = read_u64(uc, more::FPTAG) as u32 & 0xFFFF;
    for (r, x) in (more::XMM0..).zip(regs.xmm.iter_mut()) {
        let b = raw(uc, r);
        let mut w = [0u8; 16];
        w.copy_from_slice(b.get(..16).unwrap_or(&[0; 16]));
        *x = u128::from_le_bytes(w);
    }
    regs.mxcsr = read_u64(uc, more::MXCSR) as u32;
}

/// Writes what the debugger changed: general registers, RIP, EFLAGS, XMM. RIP is written only
/// when it changed (Unicorn restarts translation at a written RIP).
fn write_regs(uc: Uc, regs: &X86_64CoreRegs) {
    let mut now = X86_64CoreRegs::default();
    read_regs(uc, &mut now);
    for ((&new, &old), &r) in regs.regs.iter().zip(now.regs.iter()).zip(GPRS.iter()) {
        if new != old {
            write_u64(uc, r, new);
        }
    }
    if regs.eflags != now.eflags {
        write_u64(uc, more::EFLAGS, u64::from(regs.eflags));
    }
    for ((&new, &old), r) in regs.xmm.iter().zip(now.xmm.iter()).zip(more::XMM0..) {
        if new != old {
            write_u128(uc, r, new);
        }
    }
    if regs.rip != now.rip {
        write_u64(uc, reg::RIP, regs.rip);
    }
}

/// Reads `buf.len()` bytes of this process at `addr`; the count read (short at the first page
/// the process cannot read), or an error when none is.
pub(super) fn read_memory(addr: u64, buf: &mut [u8]) -> Result<usize, ()> {
    if buf.is_empty() {
        return Ok(0);
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` is our buffer of its length; the kernel checks the remote range (this
    // process's own memory) and fails with EFAULT instead of faulting.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    usize::try_from(n).ok().filter(|&n| n > 0).ok_or(())
}

/// Writes `data` into this process at `addr` (only where the process may write: the copy the
/// thunks use for user memory, which fails instead of faulting).
pub(super) fn write_memory(addr: u64, data: &[u8]) -> Result<(), ()> {
    if data.is_empty() {
        return Ok(());
    }
    crate::pe::umd::guest::write_bytes(addr, data).map_err(|_| ())?;
    // The processors run host memory mapped in place: a write the emulator did not make (a
    // patch of code that already ran) is seen only by a fresh translation.
    crate::pe::cpu::code::code_changed();
    Ok(())
}

/// EFAULT, the errno of a bad address.
const EFAULT: u8 = 14;
/// ESRCH, the errno of an unknown thread.
const ESRCH: u8 = 3;

/// How far the image at `base` lies from the base its headers prefer (what a debugger's
/// `--slide` takes).
pub fn slide(base: usize) -> Option<u64> {
    let mut dos = [0u8; 0x40];
    read_memory(base as u64, &mut dos).ok()?;
    let e_lfanew = u32::from_le_bytes(dos.get(0x3C..0x40)?.try_into().ok()?);
    // PE32+: the optional header's ImageBase sits 24 + 24 bytes after the signature.
    let at = (base as u64)
        .checked_add(u64::from(e_lfanew))?
        .checked_add(24 + 24)?;
    let mut image_base = [0u8; 8];
    read_memory(at, &mut image_base).ok()?;
    Some((base as u64).wrapping_sub(u64::from_le_bytes(image_base)))
}

impl Target for Stopped {
    type Arch = X86_64_SSE;
    type Error = &'static str;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_target_description_xml_override(
        &mut self,
    ) -> Option<TargetDescriptionXmlOverrideOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<MonitorCmdOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadBase for Stopped {
    fn read_registers(&mut self, regs: &mut X86_64CoreRegs, tid: Tid) -> TargetResult<(), Self> {
        let uc = self.uc(tid).ok_or(TargetError::Errno(ESRCH))?;
        read_regs(uc, regs);
        Ok(())
    }

    fn write_registers(&mut self, regs: &X86_64CoreRegs, tid: Tid) -> TargetResult<(), Self> {
        let uc = self.uc(tid).ok_or(TargetError::Errno(ESRCH))?;
        write_regs(uc, regs);
        Ok(())
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8], _tid: Tid) -> TargetResult<usize, Self> {
        read_memory(start, data).map_err(|()| TargetError::Errno(EFAULT))
    }

    fn write_addrs(&mut self, start: u64, data: &[u8], _tid: Tid) -> TargetResult<(), Self> {
        write_memory(start, data).map_err(|()| TargetError::Errno(EFAULT))
    }

    fn list_active_threads(&mut self, add: &mut dyn FnMut(Tid)) -> Result<(), Self::Error> {
        // The processor that stopped first: a debugger takes the first as the current thread.
        if let Some(t) = Tid::new(self.current.id as usize) {
            add(t);
        }
        let others: Vec<u32> = lock(&PROCESSORS)
            .keys()
            .copied()
            .filter(|&id| id != self.current.id)
            .collect();
        for id in others {
            if let Some(t) = Tid::new(id as usize) {
                add(t);
            }
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadResume for Stopped {
    fn resume(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), Self::Error> {
        STEP.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        _tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        // A signal to pass on (after a bug check's stop) has nowhere to go: the bug check is
        // raised when the debugger resumes, whatever it passes.
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSingleStep for Stopped {
    fn set_resume_action_step(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        STEP.store(u32::try_from(tid.get()).unwrap_or(0), Ordering::Relaxed);
        Ok(())
    }
}

impl Breakpoints for Stopped {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

/// Most breakpoints at once (the hook looks each instruction up in them).
const MAX_BREAKPOINTS: usize = 256;

impl SwBreakpoint for Stopped {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        let mut b = BREAKPOINTS.write().unwrap_or_else(|e| e.into_inner());
        if !b.contains(&addr) {
            if b.len() >= MAX_BREAKPOINTS {
                return Ok(false);
            }
            b.push(addr);
        }
        BREAKPOINT_COUNT.store(b.len() as u32, Ordering::Relaxed);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        let mut b = BREAKPOINTS.write().unwrap_or_else(|e| e.into_inner());
        let had = b.contains(&addr);
        b.retain(|&a| a != addr);
        BREAKPOINT_COUNT.store(b.len() as u32, Ordering::Relaxed);
        Ok(had)
    }
}

impl TargetDescriptionXmlOverride for Stopped {
    fn target_description_xml(
        &self,
        _annex: &[u8],
        offset: u64,
        length: usize,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        let xml = description().as_bytes();
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(xml.len());
        let part = xml.get(start..).unwrap_or(&[]);
        let n = part.len().min(length).min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), part.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }
}

impl MonitorCmd for Stopped {
    fn handle_monitor_cmd(
        &mut self,
        cmd: &[u8],
        mut out: ConsoleOutput<'_>,
    ) -> Result<(), Self::Error> {
        match cmd.trim_ascii() {
            b"modules" => {
                for (name, base, size) in modules() {
                    let slide = slide(base).unwrap_or(0);
                    gdbstub::outputln!(
                        out,
                        "{name} base {base:#x} size {size:#x} slide {slide:#x}"
                    );
                }
            }
            b"bugcheck" => match lock(&LAST_BUGCHECK).clone() {
                Some(b) => gdbstub::outputln!(out, "{b}"),
                None => gdbstub::outputln!(out, "no bug check"),
            },
            _ => gdbstub::outputln!(out, "monitor commands: modules, bugcheck"),
        }
        Ok(())
    }
}

/// GDB's `amd64` description (features `org.gnu.gdb.i386.core` and `.sse`), every register
/// listed in `X86_64CoreRegs`' order: LLDB takes the registers from this list only.
fn description() -> &'static str {
    static XML: OnceLock<String> = OnceLock::new();
    XML.get_or_init(|| {
        // name, bits, type, DWARF number (None: none), generic role.
        let mut core: Vec<(String, u32, &str, Option<u32>, &str)> = Vec::new();
        let gprs = [
            ("rax", 0),
            ("rbx", 3),
            ("rcx", 2),
            ("rdx", 1),
            ("rsi", 4),
            ("rdi", 5),
            ("rbp", 6),
            ("rsp", 7),
        ];
        for (n, d) in gprs {
            let (ty, generic) = match n {
                "rbp" => ("data_ptr", "fp"),
                "rsp" => ("data_ptr", "sp"),
                _ => ("int64", ""),
            };
            core.push((n.into(), 64, ty, Some(d), generic));
        }
        for i in 8..16 {
            core.push((format!("r{i}"), 64, "int64", Some(i), ""));
        }
        core.push(("rip".into(), 64, "code_ptr", Some(16), "pc"));
        core.push(("eflags".into(), 32, "int32", Some(49), "flags"));
        for (n, d) in [
            ("cs", 51),
            ("ss", 52),
            ("ds", 53),
            ("es", 50),
            ("fs", 54),
            ("gs", 55),
        ] {
            core.push((n.into(), 32, "int32", Some(d), ""));
        }
        for i in 0..8 {
            core.push((format!("st{i}"), 80, "i387_ext", Some(33 + i), ""));
        }
        for n in [
            "fctrl", "fstat", "ftag", "fiseg", "fioff", "foseg", "fooff", "fop",
        ] {
            core.push((n.into(), 32, "int", None, ""));
        }
        let mut sse: Vec<(String, u32, &str, Option<u32>, &str)> = Vec::new();
        for i in 0..16 {
            sse.push((format!("xmm{i}"), 128, "uint128", Some(17 + i), ""));
        }
        sse.push(("mxcsr".into(), 32, "int", Some(64), ""));
        let mut x = String::from(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n\
             <target version=\"1.0\">\n<architecture>i386:x86-64</architecture>\n",
        );
        let mut regnum = 0;
        for (feature, regs) in [("core", core), ("sse", sse)] {
            let _ = writeln!(x, "<feature name=\"org.gnu.gdb.i386.{feature}\">");
            for (name, bits, ty, dwarf, generic) in regs {
                let _ = write!(
                    x,
                    "<reg name=\"{name}\" bitsize=\"{bits}\" type=\"{ty}\" regnum=\"{regnum}\""
                );
                if let Some(d) = dwarf {
                    let _ = write!(x, " dwarf_regnum=\"{d}\"");
                }
                if !generic.is_empty() {
                    let _ = write!(x, " generic=\"{generic}\"");
                }
                if bits == 128 {
                    x.push_str(" encoding=\"vector\" format=\"vector-uint8\"");
                }
                x.push_str("/>\n");
                regnum += 1;
            }
            x.push_str("</feature>\n");
        }
        x.push_str("</target>\n");
        x
    })
}

#[cfg(test)]
pub(super) fn description_for_tests() -> &'static str {
    description()
}
