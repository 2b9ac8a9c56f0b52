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
//! **Leaving the image.** Imports and callbacks are addresses in a stub page whose bytes are
//! `int3`; the trap stops the processor, the host reads the Windows x64 arguments (RCX, RDX,
//! R8, R9, then the stack above the shadow space), runs the routine without the lock, writes
//! RAX and returns to the caller as `ret` would.
//!
//! **A debugger** ([`super::gdb`], `RVGPU_GDB`): every processor made once one was asked for
//! has a code hook on every instruction (breakpoints, single steps, its interrupt), and a bug
//! check raised while a processor runs the image stops the debugger first. Without one, no
//! processor has the hook.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex, RwLock};

use rvgpu_kmd::platform::Irql;

use super::arena;
use super::gdb;
use super::image::Special;
use super::unicorn::{self, hook, reg, Api, HookCode, Uc};
use crate::dxgkrnl::bugcheck::{self, BugCheck};
use crate::dxgkrnl::kernel;
use crate::dxgkrnl::state::lock;

mod count;
mod stack;

pub use count::{
    counting, executed, executed_user, register_count_range, register_user_count_range,
};
use count::{on_count, COUNT_RANGES};
pub use stack::{deepest_stacks, StackUse};

// ---------------------------------------------------------------------------------------------
// The lock the processors take turns on.

struct GuestLock {
    held: Mutex<bool>,
    free: Condvar,
}

static GUEST: GuestLock = GuestLock {
    held: Mutex::new(false),
    free: Condvar::new(),
};

thread_local! {
    /// Whether this thread holds the guest lock.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

fn acquire() {
    let mut g = lock(&GUEST.held);
    while *g {
        g = GUEST.free.wait(g).unwrap_or_else(|p| p.into_inner());
    }
    *g = true;
    HOLDING.with(|h| h.set(true));
}

fn release() {
    HOLDING.with(|h| h.set(false));
    *lock(&GUEST.held) = false;
    GUEST.free.notify_one();
}

/// Runs `f` (host code) with the guest lock released, if this thread holds it.
pub fn outside<R>(f: impl FnOnce() -> R) -> R {
    if HOLDING.with(Cell::get) {
        release();
        let r = f();
        acquire();
        r
    } else {
        f()
    }
}

// ---------------------------------------------------------------------------------------------
// Ranges the processors map whole, and the stubs.

/// A range of the arena the processors map on first touch.
#[derive(Clone, Copy, Debug)]
pub enum Range {
    /// Memory (an image, a stub page, a stack).
    Ram,
    /// A register window: accesses go to [`kernel::window_access`] with this base.
    Window,
}

static RANGES: RwLock<BTreeMap<usize, (usize, Range)>> = RwLock::new(BTreeMap::new());

/// Registers `[base, base + len)` (an arena range) for on-demand mapping.
pub fn register_range(base: usize, len: usize, kind: Range) {
    RANGES
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(base, (len, kind));
}

/// Forgets a range (its owner is gone; a processor that still has it mapped keeps it).
pub fn unregister_range(base: usize) {
    RANGES
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&base);
}

/// What an access to a window with its own handler does: `(offset, width, Some(value))` is a
/// write (the result is ignored), `None` a read.
pub type WindowFn = Arc<dyn Fn(usize, usize, Option<u64>) -> u64 + Send + Sync>;

/// Windows whose accesses go to a handler of their own instead of the trap-window registry
/// (a user-mode doorbell page), by base.
static HANDLERS: RwLock<BTreeMap<usize, WindowFn>> = RwLock::new(BTreeMap::new());

/// A register window of `len` bytes whose accesses `handler` answers (on the accessing
/// thread, outside the guest lock, each 8-byte access whole): an MMIO region in every
/// processor, placed in the windows' half of the arena like the BAR windows. Returns its base.
pub fn register_window(len: usize, handler: WindowFn) -> Result<usize, String> {
    let base = arena::alloc(len, arena::Access::Window)?;
    HANDLERS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(base, handler);
    register_range(base, len, Range::Window);
    Ok(base)
}

/// One access to the window at `base`: its own handler, else the trap-window registry.
fn window_io(base: usize, offset: usize, width: usize, write: Option<u64>) -> u64 {
    let h = HANDLERS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&base)
        .cloned();
    match h {
        Some(h) => h(offset, width, write),
        None => kernel::window_access(base, offset, width, write),
    }
}

fn range_of(addr: usize) -> Option<(usize, usize, Range)> {
    let r = RANGES.read().unwrap_or_else(|p| p.into_inner());
    let (&b, &(len, kind)) = r.range(..=addr).next_back()?;
    (addr < b + len).then_some((b, len, kind))
}

/// What a stub does when the image calls it: its result for RAX, or the call does not return.
pub enum StubResult {
    /// Return this in RAX.
    Return(u64),
    /// The routine does not return (`KeBugCheckEx`): the image stops here.
    NoReturn,
    /// The routine raises this exception (an NTSTATUS) in a user-mode caller (an access
    /// violation on a bad pointer to `AcquireSRWLockExclusive`): nothing in the DLL handles it,
    /// so the process ends there ([`Stop::UserException`]).
    Raise(u32),
}

/// A host routine the image can call.
pub type StubFn = Arc<dyn Fn(&[u64; 12]) -> StubResult + Send + Sync>;

/// Bytes per stub (each is one `int3`).
const STUB_STRIDE: usize = 16;

/// A page of stubs.
pub struct Stubs {
    base: usize,
    len: usize,
    routines: RwLock<Vec<(String, StubFn)>>,
}

static STUB_PAGES: RwLock<BTreeMap<usize, Arc<Stubs>>> = RwLock::new(BTreeMap::new());

impl Stubs {
    /// Room for `count` stubs.
    pub fn new(count: usize) -> Result<Arc<Self>, String> {
        let len = count.max(1) * STUB_STRIDE;
        let base = arena::alloc(len, arena::Access::ReadWrite)?;
        // SAFETY: fresh read-write memory of `len` bytes (rounded up to a page by the arena).
        unsafe { std::ptr::write_bytes(base as *mut u8, 0xCC, len) };
        register_range(base, len, Range::Ram);
        let s = Arc::new(Self {
            base,
            len,
            routines: RwLock::new(Vec::new()),
        });
        STUB_PAGES
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(base, s.clone());
        Ok(s)
    }

    /// Adds a routine; returns the address the image calls.
    pub fn add(&self, name: &str, f: StubFn) -> Result<usize, String> {
        let mut r = self.routines.write().unwrap_or_else(|p| p.into_inner());
        let at = r.len() * STUB_STRIDE;
        if at >= self.len {
            return Err("stub page full".into());
        }
        r.push((name.to_string(), f));
        Ok(self.base + at)
    }

    fn routine(&self, addr: usize) -> Option<(String, StubFn)> {
        let i = addr.checked_sub(self.base)? / STUB_STRIDE;
        self.routines
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(i)
            .cloned()
    }
}

impl Drop for Stubs {
    fn drop(&mut self) {
        unregister_range(self.base);
        arena::release(self.base, self.len);
    }
}

/// Forgets a stub page (its driver is gone).
pub fn drop_stubs(s: &Arc<Stubs>) {
    STUB_PAGES
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&s.base);
}

fn stub_at(addr: usize) -> Option<(String, StubFn)> {
    let pages = STUB_PAGES.read().unwrap_or_else(|p| p.into_inner());
    let (_, s) = pages.range(..=addr).next_back()?;
    if addr >= s.base + s.len {
        return None;
    }
    s.routine(addr)
}

/// The instructions of loaded images the processors handle themselves, by registration
/// number. A dropped image's entry goes; processors keep its hooks, which can never fire
/// again (its addresses are never reused) and refer to no memory (the hook's user data is the
/// instruction's encoded description, not a pointer).
/// One image's special instructions: (address, length, what).
pub type Sites = Arc<[(usize, u32, Special)]>;

static SPECIALS: RwLock<BTreeMap<u64, Sites>> = RwLock::new(BTreeMap::new());
static SPECIALS_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Makes every processor handle `sites` (an image's CR8 accesses and `pause`s); returns the
/// registration to pass to [`unregister_specials`].
pub fn register_specials(sites: Sites) -> u64 {
    let seq = SPECIALS_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    SPECIALS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(seq, sites);
    seq
}

/// Forgets an image's instructions (the image is gone).
pub fn unregister_specials(seq: u64) {
    SPECIALS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&seq);
}

/// A special instruction as a hook's user data: kind, register and length in one word.
fn encode(len: u32, s: Special) -> usize {
    let (kind, reg) = match s {
        Special::ReadCr8 { reg } => (1usize, reg as usize),
        Special::WriteCr8 { reg } => (2, reg as usize),
        Special::Pause => (3, 0),
    };
    kind | (reg & 0xFFFF) << 8 | (len as usize & 0xFF) << 24
}

fn decode(word: usize) -> Option<(u32, Special)> {
    let reg = ((word >> 8) & 0xFFFF) as i32;
    let len = ((word >> 24) & 0xFF) as u32;
    let s = match word & 0xFF {
        1 => Special::ReadCr8 { reg },
        2 => Special::WriteCr8 { reg },
        3 => Special::Pause,
        _ => return None,
    };
    Some((len, s))
}

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
// One processor.

/// Why the processor stopped, recorded by a hook.
#[derive(Clone, Copy, Debug)]
enum Exit {
    Interrupt(u32),
    Invalid,
    Fault { addr: u64, kind: i32 },
}

const STACK: usize = 512 * 1024;

struct Engine {
    api: &'static Api,
    uc: Uc,
    /// The processor's number (the debugger's thread id).
    id: u32,
    exit: Cell<Option<Exit>>,
    /// Host memory mapped so far: start → end.
    mapped: RefCell<BTreeMap<usize, usize>>,
    specials_seen: Cell<u64>,
    /// Count ranges hooked so far.
    counted: Cell<usize>,
    stack: usize,
}

impl Engine {
    fn new() -> Result<Box<Self>, String> {
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
            counted: Cell::new(0),
            stack,
        });
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
    fn processor(&self) -> gdb::Processor {
        gdb::Processor {
            id: self.id,
            uc: self.uc as usize,
        }
    }

    fn read(&self, r: i32) -> u64 {
        let mut v = 0u64;
        // SAFETY: 64-bit register into a u64.
        unsafe { (self.api.reg_read)(self.uc, r, (&raw mut v).cast()) };
        v
    }

    fn write(&self, r: i32, v: u64) {
        // SAFETY: 64-bit register from a u64.
        unsafe { (self.api.reg_write)(self.uc, r, (&raw const v).cast()) };
    }

    /// A code hook over `[begin, end]` calling `callback` with `user`.
    fn code_hook(&self, callback: HookCode, user: usize, begin: usize, end: usize) {
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
    }

    /// Installs the instruction hooks of images loaded since the last call.
    fn sync_specials(&self) {
        let all = SPECIALS.read().unwrap_or_else(|p| p.into_inner());
        let seen = self.specials_seen.get();
        let mut last = seen;
        for (&seq, sites) in all.range(seen + 1..) {
            for &(at, len, kind) in sites.iter() {
                self.code_hook(on_special, encode(len, kind), at, at);
            }
            last = seq;
        }
        self.specials_seen.set(last);
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

fn round(len: usize) -> usize {
    (len + 4095) & !4095
}

/// The host mapping holding `addr`: `[start, end)` and Unicorn protections, if readable.
fn host_mapping(addr: usize) -> Option<(usize, usize, u32)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let range = parts.next()?;
        let perms = parts.next()?;
        let (a, b) = range.split_once('-')?;
        let (a, b) = (
            usize::from_str_radix(a, 16).ok()?,
            usize::from_str_radix(b, 16).ok()?,
        );
        if (a..b).contains(&addr) {
            let p = perms.as_bytes();
            if p.first() != Some(&b'r') {
                return None;
            }
            // Host code is never the image's to run: no EXEC for host mappings.
            let prot = 1 | if p.get(1) == Some(&b'w') { 2 } else { 0 };
            return Some((a, b, prot));
        }
    }
    None
}

unsafe extern "C" fn on_interrupt(uc: Uc, intno: u32, user: *mut c_void) {
    // SAFETY: `user` is the engine that installed the hook (see Engine::new).
    let e = unsafe { &*user.cast::<Engine>() };
    e.exit.set(Some(Exit::Interrupt(intno)));
    // SAFETY: stopping the instance this hook runs on.
    unsafe { (e.api.emu_stop)(uc) };
}

unsafe extern "C" fn on_debug(_uc: Uc, addr: u64, _size: u32, user: *mut c_void) {
    // SAFETY: as in on_interrupt.
    let e = unsafe { &*user.cast::<Engine>() };
    gdb::at_instruction(e.processor(), addr);
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

unsafe extern "C" fn on_special(uc: Uc, addr: u64, _size: u32, user: *mut c_void) {
    let Some((len, kind)) = decode(user as usize) else {
        return;
    };
    let Some(api) = unicorn::api().ok() else {
        return;
    };
    let read = |r: i32| {
        let mut v = 0u64;
        // SAFETY: 64-bit register into a u64, on the instance running this hook.
        unsafe { (api.reg_read)(uc, r, (&raw mut v).cast()) };
        v
    };
    let write = |r: i32, v: u64| {
        // SAFETY: as above.
        unsafe { (api.reg_write)(uc, r, (&raw const v).cast()) };
    };
    match kind {
        Special::ReadCr8 { reg: r } => {
            write(r, bugcheck::kirql(kernel::current_irql()));
            write(reg::RIP, addr + u64::from(len));
        }
        Special::WriteCr8 { reg: r } => {
            kernel::set_irql(irql_from_cr8(read(r)));
            write(reg::RIP, addr + u64::from(len));
        }
        Special::Pause => outside(std::thread::yield_now),
    }
}

/// The IRQL a CR8 value stands for (x64: CR8 is the IRQL).
pub fn irql_from_cr8(v: u64) -> Irql {
    match v {
        0 => Irql::Passive,
        1 => Irql::Apc,
        2 => Irql::Dispatch,
        _ => Irql::Device,
    }
}

pub(crate) fn trace() -> bool {
    static T: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *T.get_or_init(|| std::env::var_os("RVGPU_PE_TRACE").is_some())
}

// Unicorn hands an MMIO region at most 4 bytes at a time (an 8-byte `mov` arrives as two
// halves, low first), while the bus carries an 8-byte access as one transaction and the
// device's 64-bit registers act on it whole. A memory hook on each window sees the whole
// access first; the halves are joined back into it here.
thread_local! {
    /// The access the processor is making (address, size), from the memory hook.
    static ACCESS: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
    /// The high half of an 8-byte read, or the low half of an 8-byte write.
    static HALF: Cell<u64> = const { Cell::new(0) };
}

unsafe extern "C" fn on_window_access(
    _uc: Uc,
    _kind: i32,
    addr: u64,
    size: i32,
    _v: i64,
    _u: *mut c_void,
) {
    ACCESS.with(|a| a.set((addr, size as u32)));
}

unsafe extern "C" fn mmio_read(_uc: Uc, offset: u64, size: u32, base: *mut c_void) -> u64 {
    let at = base as u64 + offset;
    let (a0, whole) = ACCESS.with(Cell::get);
    let v = if whole == 8 && size == 4 && at == a0 {
        let v = outside(|| window_io(base as usize, offset as usize, 8, None));
        HALF.with(|h| h.set(v >> 32));
        v & 0xFFFF_FFFF
    } else if whole == 8 && size == 4 && at == a0 + 4 {
        HALF.with(Cell::get)
    } else {
        outside(|| window_io(base as usize, offset as usize, size as usize, None))
    };
    if trace() {
        eprintln!(
            "[pe] mmio read {:#x}+{offset:#x}/{size} = {v:#x}",
            base as usize
        );
    }
    v
}

unsafe extern "C" fn mmio_write(_uc: Uc, offset: u64, size: u32, value: u64, base: *mut c_void) {
    if trace() {
        eprintln!(
            "[pe] mmio write {:#x}+{offset:#x}/{size} = {value:#x}",
            base as usize
        );
    }
    let at = base as u64 + offset;
    let (a0, whole) = ACCESS.with(Cell::get);
    if whole == 8 && size == 4 && at == a0 {
        HALF.with(|h| h.set(value & 0xFFFF_FFFF));
        return;
    }
    if whole == 8 && size == 4 && at == a0 + 4 {
        let v = HALF.with(Cell::get) | (value << 32);
        outside(|| window_io(base as usize, offset as usize - 4, 8, Some(v)));
        return;
    }
    outside(|| window_io(base as usize, offset as usize, size as usize, Some(value)));
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

// SAFETY: an engine is used by one thread at a time (taken out of the pool for a call); a
// Unicorn instance keeps all of its state in itself, so it may move between threads.
unsafe impl Send for Engine {}

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

const ARG_REGS: [i32; 4] = [reg::RCX, reg::RDX, reg::R8, reg::R9];

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
    if kernel::current_machine().is_some_and(|m| m.is_halted()) {
        return Err(Stop::Halted);
    }
    let engine = match lock(&POOL).pop() {
        Some(e) => e,
        None => Engine::new().map_err(Stop::Emulator)?,
    };
    let held = HOLDING.with(Cell::get);
    if !held {
        acquire();
    }
    let r = run(&engine, addr, args, user);
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
        // SAFETY: the instance is ours; `until` is the sentinel.
        let err = unsafe { (e.api.emu_start)(e.uc, pc, sentinel, 0, 0) };
        let rip = e.read(reg::RIP);
        let exit = e.exit.take();
        if exit.is_none() && err == 0 && rip == sentinel {
            return Ok(e.read(reg::RAX));
        }
        match exit {
            Some(Exit::Interrupt(3)) => {
                let at = rip.wrapping_sub(1) as usize;
                let Some((name, f)) = stub_at(at) else {
                    if user {
                        return user_exception(STATUS_BREAKPOINT, 0, at as u64);
                    }
                    return fault(
                        e,
                        BugCheck::new(KMODE_EXCEPTION_NOT_HANDLED, [0x8000_0003, at as u64, 0, 0]),
                    );
                };
                let sp = e.read(reg::RSP) as usize;
                let mut words = [0u64; 12];
                for (i, w) in words.iter_mut().enumerate() {
                    *w = if i < 4 {
                        e.read(ARG_REGS[i])
                    } else {
                        let at = sp + 0x28 + 8 * (i - 4);
                        if (e.stack..e.stack + STACK - 8).contains(&at) {
                            // SAFETY: inside this engine's stack.
                            unsafe { (at as *const u64).read() }
                        } else {
                            0
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
                if kernel::current_machine().is_some_and(|m| m.is_halted()) {
                    halted_in_call(e);
                    return Err(Stop::Halted);
                }
                match result {
                    StubResult::NoReturn => {
                        halted_in_call(e);
                        return Err(Stop::Halted);
                    }
                    StubResult::Raise(code) if user => {
                        return user_exception(code, 0, rip.wrapping_sub(1));
                    }
                    StubResult::Raise(code) => {
                        return fault(
                            e,
                            BugCheck::new(
                                KMODE_EXCEPTION_NOT_HANDLED,
                                [u64::from(code), rip.wrapping_sub(1), 0, 0],
                            ),
                        );
                    }
                    StubResult::Return(v) => {
                        e.write(reg::RAX, v);
                        if !(e.stack..e.stack + STACK - 8).contains(&sp) {
                            return Err(Stop::Emulator(
                                "stack pointer outside the stack at a stub".into(),
                            ));
                        }
                        // SAFETY: inside this engine's stack (checked).
                        let ret = unsafe { (sp as *const u64).read() };
                        e.write(reg::RSP, sp as u64 + 8);
                        pc = ret;
                    }
                }
            }
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
            Some(Exit::Invalid) if user => return user_exception(0xC000_001D, 0, rip),
            Some(Exit::Invalid) => {
                return fault(
                    e,
                    BugCheck::new(KMODE_EXCEPTION_NOT_HANDLED, [0xC000_001D, rip, 0, 0]),
                );
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
                let write = u64::from(kind == unicorn::mem::WRITE_UNMAPPED);
                let fetch = kind == unicorn::mem::FETCH_UNMAPPED;
                return fault(
                    e,
                    BugCheck::new(
                        bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
                        [addr, if fetch { 0x10 } else { write * 2 }, rip, 0],
                    ),
                );
            }
            None => {
                let sp = e.read(reg::RSP) as usize;
                let ret = if (e.stack..e.stack + STACK - 8).contains(&sp) {
                    // SAFETY: inside this engine's stack.
                    unsafe { (sp as *const u64).read() }
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
pub const STATUS_ACCESS_VIOLATION: u32 = 0xC000_0005;
/// `STATUS_BREAKPOINT`.
const STATUS_BREAKPOINT: u32 = 0x8000_0003;
/// `STATUS_STACK_BUFFER_OVERRUN`: how `__fastfail` ends a process.
pub const STATUS_STACK_BUFFER_OVERRUN: u32 = 0xC000_0409;

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
    if let Some(m) = kernel::current_machine() {
        m.push_log(
            rvgpu_kmd::platform::Level::Error,
            format!("PE image: {} at {at}", b.name()),
        );
    }
    if trace() {
        eprintln!("[pe] fault {b} at {at}");
    }
    gdb::bug_check(e.processor(), format!("{b} at {at}"), signal_of(&b));
    kernel::raise(b);
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
    if let Some(b) = kernel::current_machine().and_then(|m| m.bugcheck()) {
        gdb::bug_check(
            e.processor(),
            format!("{b}, raised in a routine the image called"),
            signal_of(&b),
        );
    }
}

#[cfg(test)]
mod tests;
