//! One processor: a Unicorn instance, its stack, the host memory it has mapped, and the hooks
//! that record why it stopped.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::c_void;

use super::code;
use super::count::{on_count, COUNT_RANGES};
use super::memory::{host_mapping, range_of, register_range, round, unregister_range, Range};
use super::serve::{run_routine, StubEnd};
use super::special::{encode, on_special, SPECIALS, UNREGISTERED};
use super::stack;
use super::stubs::stub_at;
use super::window::{mmio_read, mmio_write, on_window_access};
use crate::pe::arena;
use crate::pe::gdb;
use crate::pe::umd::guest;
use crate::pe::unicorn::{self, hook, reg, Api, HookCode, Uc};

/// Why the processor stopped, recorded by a hook.
#[derive(Clone, Copy, Debug)]
pub(super) enum Exit {
    /// An interrupt or exception other than a served stub's `int3`.
    Interrupt(u32),
    /// A stub's routine ended the call other than by returning a value to go on with.
    Stub(StubEnd),
    Invalid,
    Fault {
        addr: u64,
        kind: i32,
    },
    /// A stub's stack argument at `addr` could not be read: the page fault the routine at
    /// stub `at` takes reading it.
    StubArgument {
        addr: u64,
        at: u64,
    },
    /// The debugger changed memory while the processor was stopped before the instruction at
    /// `at`: it left the emulator to forget its translations and go on from where it is.
    Resume {
        at: u64,
    },
}

pub(super) const STACK: usize = 512 * 1024;

/// The registers of the first four arguments (Windows x64).
pub(super) const ARG_REGS: [i32; 4] = [reg::RCX, reg::RDX, reg::R8, reg::R9];

pub(super) struct Engine {
    pub(super) api: &'static Api,
    pub(super) uc: Uc,
    /// The processor's number (the debugger's thread id).
    id: u32,
    pub(super) exit: Cell<Option<Exit>>,
    /// Host memory mapped so far: start → end.
    mapped: RefCell<BTreeMap<usize, usize>>,
    specials_seen: Cell<u64>,
    /// The hooks of each registration of special instructions, by registration number.
    special_hooks: RefCell<BTreeMap<u64, Vec<usize>>>,
    /// The count of forgotten registrations this processor has deleted the hooks of.
    unregistered_seen: Cell<u64>,
    /// Count ranges hooked so far.
    counted: Cell<usize>,
    /// The count of host code changes this processor has forgotten translations for.
    code_seen: Cell<u64>,
    /// The instruction the debugger's hook lets pass once (where the processor resumes after
    /// a [`Exit::Resume`]: the hook already ran there).
    pub(super) skip_debug_at: Cell<Option<u64>>,
    pub(super) stack: usize,
}

impl Engine {
    pub(super) fn new() -> Result<Box<Self>, String> {
        static NEXT_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        let api = unicorn::api()?;
        let debugged = gdb::processors_hooked();
        let mut uc: Uc = std::ptr::null_mut();
        // SAFETY: out pointer to a local.
        let e = unsafe { (api.open)(unicorn::ARCH_X86, unicorn::MODE_64, &mut uc) };
        if e != 0 {
            return Err(format!("uc_open: {}", unicorn::error_text(api, e)));
        }
        let stack = arena::alloc(STACK, arena::Access::ReadWrite)?;
        stack::paint(stack, STACK);
        register_range(stack, STACK, Range::Ram);
        let eng = Box::new(Self {
            api,
            uc,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            exit: Cell::new(None),
            mapped: RefCell::new(BTreeMap::new()),
            specials_seen: Cell::new(0),
            special_hooks: RefCell::new(BTreeMap::new()),
            unregistered_seen: Cell::new(0),
            counted: Cell::new(0),
            code_seen: Cell::new(0),
            skip_debug_at: Cell::new(None),
            stack,
        });
        // Up to date with the code changes so far (it has translated nothing to forget).
        eng.forget_changed_code();
        let me = (&*eng as *const Engine).cast_mut().cast::<c_void>();
        let mut h = 0usize;
        // SAFETY: hooks with the callback types Unicorn expects for each hook type; `me` is the
        // boxed engine, which outlives the Unicorn instance (closed in Drop).
        unsafe {
            (api.hook_add)(
                uc,
                &mut h,
                hook::INTR,
                on_interrupt as *mut c_void,
                me,
                1,
                0,
            );
            (api.hook_add)(
                uc,
                &mut h,
                hook::MEM_UNMAPPED,
                on_unmapped as *mut c_void,
                me,
                1,
                0,
            );
            (api.hook_add)(
                uc,
                &mut h,
                hook::INSN_INVALID,
                on_invalid as *mut c_void,
                me,
                1,
                0,
            );
        }
        // Every register window lies in one half of the arena; the hook that sees whole
        // accesses is in place before any code is translated (see `on_window_access`).
        let (ws, we) = arena::window_span()?;
        // SAFETY: a memory hook of the documented type over the windows' half.
        unsafe {
            (api.hook_add)(
                uc,
                &mut h,
                hook::MEM_READ | hook::MEM_WRITE,
                on_window_access as *mut c_void,
                std::ptr::null_mut(),
                ws as u64,
                (we - 1) as u64,
            );
        }
        // SSE on (the image's code is SSE2): CR0.EM clear, CR0.MP set, CR4.OSFXSR|OSXMMEXCPT.
        let cr0 = eng.read(50) & !(1 << 2) | (1 << 1);
        eng.write(50, cr0);
        let cr4 = eng.read(54) | (1 << 9) | (1 << 10);
        eng.write(54, cr4);
        if debugged {
            // Every instruction, before anything is translated: breakpoints and single steps
            // (`gdb`). Only when a debugger was asked for.
            eng.code_hook(on_debug, me as usize, 1, 0);
            gdb::add_processor(eng.id, eng.uc);
        }
        Ok(eng)
    }

    /// This processor, for the debugger.
    pub(super) fn processor(&self) -> gdb::Processor {
        gdb::Processor {
            id: self.id,
            uc: self.uc as usize,
        }
    }

    pub(super) fn read(&self, r: i32) -> u64 {
        let mut v = 0u64;
        // SAFETY: 64-bit register into a u64.
        unsafe { (self.api.reg_read)(self.uc, r, (&raw mut v).cast()) };
        v
    }

    pub(super) fn write(&self, r: i32, v: u64) {
        // SAFETY: 64-bit register from a u64.
        unsafe { (self.api.reg_write)(self.uc, r, (&raw const v).cast()) };
    }

    /// Whether code changed since this processor last forgot its translations
    /// ([`super::code`]).
    pub(super) fn code_changed_since(&self) -> bool {
        self.code_seen.get() != code::changes()
    }

    /// Forgets this processor's translations if code changed since it last looked.
    pub(super) fn forget_changed_code(&self) {
        let now = code::changes();
        if self.code_seen.get() != now {
            // SAFETY: the flush request takes no arguments; the instance is ours and is not
            // executing (called between `uc_emu_start`s on its own thread).
            unsafe { (self.api.ctl)(self.uc, unicorn::CTL_FLUSH_TB) };
            self.code_seen.set(now);
        }
    }

    /// A code hook over `[begin, end]` calling `callback` with `user`; its handle.
    fn code_hook(&self, callback: HookCode, user: usize, begin: usize, end: usize) -> usize {
        let mut h = 0usize;
        // SAFETY: a code hook (the callback has the type UC_HOOK_CODE calls) over the range;
        // `user` is a plain word, never dereferenced.
        unsafe {
            (self.api.hook_add)(
                self.uc,
                &mut h,
                hook::CODE,
                callback as *mut c_void,
                user as *mut c_void,
                begin as u64,
                end as u64,
            )
        };
        h
    }

    /// Installs the instruction hooks of images loaded since the last call, and deletes those
    /// of images gone since.
    pub(super) fn sync_specials(&self) {
        let all = SPECIALS.read().unwrap_or_else(|p| p.into_inner());
        let seen = self.specials_seen.get();
        let mut last = seen;
        let mut hooks = self.special_hooks.borrow_mut();
        for (&seq, sites) in all.range(seen + 1..) {
            let handles = sites
                .iter()
                .map(|&(at, len, kind)| self.code_hook(on_special, encode(len, kind), at, at))
                .collect();
            hooks.insert(seq, handles);
            last = seq;
        }
        self.specials_seen.set(last);
        let gone = UNREGISTERED.load(std::sync::atomic::Ordering::Acquire);
        if self.unregistered_seen.get() != gone {
            hooks.retain(|seq, handles| {
                if all.contains_key(seq) {
                    return true;
                }
                for &h in handles.iter() {
                    // SAFETY: a hook of this instance, which is not running (called between
                    // `uc_emu_start`s on its own thread).
                    unsafe { (self.api.hook_del)(self.uc, h) };
                }
                false
            });
            self.unregistered_seen.set(gone);
        }
        let ranges = COUNT_RANGES.read().unwrap_or_else(|p| p.into_inner());
        for &(start, end, user) in ranges.iter().skip(self.counted.get()) {
            self.code_hook(on_count, usize::from(user), start, end - 1);
        }
        self.counted.set(ranges.len());
    }

    /// Maps what holds `addr` (on a fault); false when nothing does.
    fn map_for(&self, addr: usize) -> bool {
        if let Some((base, len, kind)) = range_of(addr) {
            let e = match kind {
                // SAFETY: an arena range of `len` bytes that stays mapped while registered.
                Range::Ram => unsafe {
                    (self.api.mem_map_ptr)(
                        self.uc,
                        base as u64,
                        round(len),
                        unicorn::PROT_ALL,
                        base as *mut c_void,
                    )
                },
                // SAFETY: MMIO callbacks of the right types; the user data is the window base;
                // the access hook covers exactly the window.
                Range::Window => unsafe {
                    (self.api.mmio_map)(
                        self.uc,
                        base as u64,
                        round(len),
                        Some(mmio_read),
                        base as *mut c_void,
                        Some(mmio_write),
                        base as *mut c_void,
                    )
                },
            };
            return e == 0;
        }
        if arena::contains(addr) {
            return false;
        }
        let Some((lo, hi, prot)) = host_mapping(addr) else {
            return false;
        };
        // A 64 KiB piece of the host mapping, minus what this processor already mapped.
        let mut start = lo.max(addr & !0xFFFF);
        let mut end = hi.min((addr | 0xFFFF) + 1);
        {
            let m = self.mapped.borrow();
            if let Some((_, &e)) = m.range(..=addr).next_back() {
                start = start.max(e);
            }
            if let Some((&s, _)) = m.range(addr + 1..).next() {
                end = end.min(s);
            }
        }
        if start > addr || end <= addr {
            return false;
        }
        // SAFETY: [start, end) is mapped in this process (from /proc/self/maps) and is given
        // with the host's own permissions.
        let e = unsafe {
            (self.api.mem_map_ptr)(
                self.uc,
                start as u64,
                end - start,
                prot,
                start as *mut c_void,
            )
        };
        if e == 0 {
            self.mapped.borrow_mut().insert(start, end);
        }
        e == 0
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        gdb::remove_processor(self.id);
        // SAFETY: the instance is ours and no longer running.
        unsafe { (self.api.close)(self.uc) };
        unregister_range(self.stack);
        arena::release(self.stack, STACK);
    }
}

/// What the `int3` at `RIP - 1` does: `None` when it was a stub served here (the processor goes
/// on at the return address), else why the processor stops ([`super::serve`]).
fn serve_stub(e: &Engine) -> Option<Exit> {
    let rip = e.read(reg::RIP);
    let at = rip.wrapping_sub(1);
    let Some((name, f)) = stub_at(at as usize) else {
        return Some(Exit::Interrupt(3));
    };
    let sp = e.read(reg::RSP);
    let mut words = [0u64; 12];
    for (w, &r) in words.iter_mut().zip(ARG_REGS.iter()) {
        *w = e.read(r);
    }
    for (j, w) in words.iter_mut().skip(ARG_REGS.len()).enumerate() {
        *w = match stack_argument(e, sp, j) {
            Ok(v) => v,
            Err(addr) => return Some(Exit::StubArgument { addr, at }),
        };
    }
    let value = match run_routine(&name, &f, &words, at) {
        Ok(v) => v,
        Err(end) => return Some(Exit::Stub(end)),
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

/// Stack argument `j` (the fifth argument is 0) of a call whose return address is at `sp`:
/// above the return address and the caller's 32-byte shadow space (Windows x64), or the
/// address that could not be read. RSP is the image's to set (a bad or misaligned value is
/// its bug): a word inside this processor's stack is read in place, any other through the
/// checked copy user-mode pointers take ([`guest`]), and one that is not mapped is the fault
/// reading it takes on Windows. The hook reads every stack word a routine may take, so a stub
/// call whose RSP lies within 0x68 bytes of the end of mapped memory off this stack faults
/// here even for a routine with fewer arguments.
fn stack_argument(e: &Engine, sp: u64, j: usize) -> Result<u64, u64> {
    let off = 0x28 + 8 * j as u64;
    let addr = sp.checked_add(off).ok_or(sp.wrapping_add(off))?;
    let (base, top) = (e.stack as u64, (e.stack + STACK) as u64);
    if addr >= base && addr.checked_add(8).is_some_and(|end| end <= top) {
        // SAFETY: 8 bytes inside this engine's stack (checked), which stays mapped read-write
        // while the engine lives; read unaligned, as RSP may be.
        return Ok(unsafe { (addr as usize as *const u64).read_unaligned() });
    }
    guest::read::<u64>(addr).map_err(|_| addr)
}

unsafe extern "C" fn on_interrupt(uc: Uc, intno: u32, user: *mut c_void) {
    // SAFETY: `user` is the engine that installed the hook (see Engine::new).
    let e = unsafe { &*user.cast::<Engine>() };
    let exit = if intno == 3 {
        match serve_stub(e) {
            None => return,
            Some(exit) => exit,
        }
    } else {
        Exit::Interrupt(intno)
    };
    e.exit.set(Some(exit));
    // SAFETY: stopping the instance this hook runs on.
    unsafe { (e.api.emu_stop)(uc) };
}

unsafe extern "C" fn on_debug(uc: Uc, addr: u64, _size: u32, user: *mut c_void) {
    // SAFETY: as in on_interrupt.
    let e = unsafe { &*user.cast::<Engine>() };
    if e.skip_debug_at.take() == Some(addr) {
        return;
    }
    gdb::at_instruction(e.processor(), addr);
    if e.code_changed_since() {
        // The debugger wrote memory while this processor was stopped here: it stops before
        // the instruction and resumes afresh (`run`), so a patch runs at once.
        e.exit.set(Some(Exit::Resume { at: addr }));
        // SAFETY: stopping the instance this hook runs on.
        unsafe { (e.api.emu_stop)(uc) };
    }
}

unsafe extern "C" fn on_invalid(_uc: Uc, user: *mut c_void) -> bool {
    // SAFETY: as in on_interrupt.
    let e = unsafe { &*user.cast::<Engine>() };
    e.exit.set(Some(Exit::Invalid));
    false
}

unsafe extern "C" fn on_unmapped(
    _uc: Uc,
    kind: i32,
    addr: u64,
    _size: i32,
    _value: i64,
    user: *mut c_void,
) -> bool {
    // SAFETY: as in on_interrupt.
    let e = unsafe { &*user.cast::<Engine>() };
    if e.map_for(addr as usize) {
        return true;
    }
    e.exit.set(Some(Exit::Fault { addr, kind }));
    false
}

// SAFETY: an engine is used by one thread at a time (taken out of the pool for a call); a
// Unicorn instance keeps all of its state in itself, so it may move between threads.
unsafe impl Send for Engine {}
