//! An application under the simulated OS: a console `.exe` built for Windows (mingw-w64),
//! mapped and run in the x86-64 emulator as the Windows loader starts a process.
//!
//! [`ExeProcess::load`] maps the image at fresh addresses and applies its base relocations
//! (an image without them cannot move, and no address of the arena is its preferred base:
//! the load fails, as Windows' does when that base is taken), binds its imports — the C API
//! to the exports of the process's own copy of `rvgpu_umd.dll`, the C runtime to [`msvcrt`],
//! kernel32 to [`kernel32`] and then to the DLL's own kernel32 routines — and fails with the
//! name of any import nothing models. It builds the thread's TEB (the `gs` segment of every
//! call into the image), the image's static TLS block, and runs the TLS callbacks with
//! `DLL_PROCESS_ATTACH` before the entry point, as `LdrpInitializeProcess` does.
//!
//! [`ExeProcess::run`] runs the entry point (the CRT's `mainCRTStartup`) on an emulated
//! processor in user mode, through the process's [`UserProcess`] (so the DLL's thunks belong
//! to it). The process ends when `exit` (or `_exit`, `abort`, `_amsg_exit`) is called, with
//! that code; when the entry point returns, with its return value; or with an exception
//! nothing handles (the exception's code, as Windows reports a crashed process's exit code).
//! Whatever the program writes to `stdout` and `stderr` is captured.
//!
//! Every pointer the program hands a routine is copied through [`guest`]: a bad one is the
//! access violation the real routine would take, raised in the process.

pub mod format;
pub mod kernel32;
pub mod msvcrt;

use std::cell::RefCell;
use std::path::Path;
use std::sync::{Arc, Mutex};

use object::pe;
use object::read::pe::{ImageNtHeaders, PeFile64};
use object::LittleEndian as LE;

use super::cpu::{self, Stop, StubResult, Stubs};
use super::umd::{guest, UmdImage, UserProcess};
use super::{arena, image};
use crate::base::lock::lock;
use crate::Machine;

/// A routine of the simulated system DLLs the program calls, with its arguments.
pub(crate) type Handler = fn(&Arc<ExeProcess>, &[u64; 12]) -> StubResult;

/// What one import of the program binds to.
enum Binding {
    /// A host routine, through a stub.
    Host(Handler),
    /// A routine of the DLL's own kernel32 model (`super::umd::win32`).
    Win32(super::umd::Handler),
    /// Machine code placed in the process's system code range.
    Code(&'static [u8]),
    /// `fprintf`: spills its variable arguments and jumps to `vfprintf` (as msvcrt's does).
    FprintfShim,
    /// An exported variable of the C runtime, at this offset of the process's data block.
    Data(usize),
    /// An export of `rvgpu_umd.dll`.
    Dll(usize),
}

fn bind(module: &str, name: &str, dll: &UserProcess) -> Option<Binding> {
    match module {
        "rvgpu_umd.dll" => dll.export_address(name).map(Binding::Dll),
        "msvcrt.dll" => msvcrt::import(name),
        "kernel32.dll" => kernel32::import(name)
            .map(Binding::Host)
            .or_else(|| super::umd::win32::import(module, name).map(Binding::Win32)),
        _ => None,
    }
}

/// Where things live in the process's data block (the C runtime's exported variables, its
/// streams and locale, the PEB and the TEB).
pub(crate) mod layout {
    /// `_commode` (int).
    pub const COMMODE: usize = 0x000;
    /// `_fmode` (int).
    pub const FMODE: usize = 0x008;
    /// `__initenv` (char **).
    pub const INITENV: usize = 0x010;
    /// `_acmdln` (char *).
    pub const ACMDLN: usize = 0x018;
    /// The main thread's `errno`.
    pub const ERRNO: usize = 0x020;
    /// `struct lconv` of the "C" locale.
    pub const LCONV: usize = 0x040;
    /// Its strings: "." then "".
    pub const LCONV_STRINGS: usize = 0x0C0;
    /// `_iob`: msvcrt's 20 `FILE`s of 48 bytes.
    pub const IOB: usize = 0x100;
    /// The message buffer `strerror` returns.
    pub const STRERROR: usize = 0x500;
    /// The TEB's `ThreadLocalStoragePointer` array (one slot: the image's index 0).
    pub const TLS_ARRAY: usize = 0x600;
    /// The PEB.
    pub const PEB: usize = 0x1000;
    /// The TEB of the process's one thread.
    pub const TEB: usize = 0x2000;
    /// The whole block.
    pub const SIZE: usize = 0x4000;
}

/// TEB fields (x64 `NT_TIB` and what follows it).
mod teb {
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
enum Ending {
    Exit(u32),
    Exception { code: u32, address: u64, rip: u64 },
    Emulator(String),
    Halted,
}

/// The code a routine raises to unwind the program once it has recorded an [`Ending`]
/// (never seen by the program: nothing in it runs after the raise).
const ENDING_RAISE: u32 = 0xE000_0E71;

/// The most either stream captures; what comes after is dropped (and counted as written).
const CAPTURE_LIMIT: usize = 1 << 20;

/// One running program: its image, its system DLLs' state and its `UserProcess`.
pub struct ExeProcess {
    umd: Arc<UserProcess>,
    image: image::Image,
    /// Page protections of the image, as `VirtualProtect` left them.
    pages: Mutex<Vec<u32>>,
    /// What the process took of the arena and the emulator (given back when it goes).
    owned: Owned,
    /// The process's data block (see [`layout`]).
    data: usize,
    /// The call trampoline (sets the TEB, then jumps to R9).
    trampoline: usize,
    /// TLS callbacks, in order.
    tls_callbacks: Vec<u64>,
    /// The command line, as `argv`.
    args: Vec<String>,
    pub(crate) crt: msvcrt::Crt,
    pub(crate) k32: kernel32::Kernel32,
    ending: Mutex<Option<Ending>>,
    stdout: Mutex<Vec<u8>>,
    stderr: Mutex<Vec<u8>>,
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
    static CURRENT: RefCell<Option<Arc<ExeProcess>>> = const { RefCell::new(None) };
}

fn stub_fn(name: &str, h: Handler) -> cpu::StubFn {
    let name = name.to_string();
    Arc::new(
        move |w: &[u64; 12]| match CURRENT.with(|c| c.borrow().clone()) {
            Some(p) => h(&p, w),
            None => {
                eprintln!("rvgpu-simos: the executable called {name} outside its process");
                StubResult::Raise(cpu::STATUS_ACCESS_VIOLATION)
            }
        },
    )
}

fn win32_stub(h: super::umd::Handler) -> cpu::StubFn {
    Arc::new(
        move |w: &[u64; 12]| match CURRENT.with(|c| c.borrow().clone()) {
            Some(p) => h(&p.umd, w),
            None => StubResult::Raise(cpu::STATUS_ACCESS_VIOLATION),
        },
    )
}

/// `mov r10,r9; mov r9,rdx; mov r11,rcx; lea rax,[rsp+0xfff]; and rax,-0x1000;
/// mov rcx,TEB; mov [rcx+8],rax; sub rax,0x40000; mov [rcx+0x10],rax; mov rax,rcx;
/// mov rdx,rax; shr rdx,32; mov ecx,IA32_GS_BASE; wrmsr; mov rcx,r11; mov rdx,r9;
/// xor r9d,r9d; jmp r10`: every call from the OS into the program goes through it, so the
/// thread's `gs` is its TEB and the TEB's stack bounds are the processor's stack (the top
/// 256 KiB of it, which every processor has), as on the thread Windows would run it on.
fn trampoline(teb: u64) -> Vec<u8> {
    let mut c = vec![
        0x4D, 0x89, 0xCA, 0x49, 0x89, 0xD1, 0x49, 0x89, 0xCB, 0x48, 0x8D, 0x84, 0x24, 0xFF, 0x0F,
        0x00, 0x00, 0x48, 0x25, 0x00, 0xF0, 0xFF, 0xFF, 0x48, 0xB9,
    ];
    c.extend_from_slice(&teb.to_le_bytes());
    c.extend_from_slice(&[
        0x48, 0x89, 0x41, 0x08, 0x48, 0x2D, 0x00, 0x00, 0x04, 0x00, 0x48, 0x89, 0x41, 0x10, 0x48,
        0x89, 0xC8, 0x48, 0x89, 0xC2, 0x48, 0xC1, 0xEA, 0x20, 0xB9, 0x01, 0x01, 0x00, 0xC0, 0x0F,
        0x30, 0x4C, 0x89, 0xD9, 0x4C, 0x89, 0xCA, 0x45, 0x31, 0xC9, 0x41, 0xFF, 0xE2,
    ]);
    c
}

/// `mov [rsp+0x18],r8; mov [rsp+0x20],r9; lea r8,[rsp+0x18]; mov rax,VFPRINTF; jmp rax`:
/// the variable arguments spilled to their home slots, next to those the caller passed on
/// the stack, make the `va_list` `vfprintf` takes.
fn fprintf_shim(vfprintf: u64) -> Vec<u8> {
    let mut c = vec![
        0x4C, 0x89, 0x44, 0x24, 0x18, 0x4C, 0x89, 0x4C, 0x24, 0x20, 0x4C, 0x8D, 0x44, 0x24, 0x18,
        0x48, 0xB8,
    ];
    c.extend_from_slice(&vfprintf.to_le_bytes());
    c.extend_from_slice(&[0xFF, 0xE0]);
    c
}

/// The page protection of a section with characteristics `ch` (an image's writable pages
/// are copy-on-write).
fn section_protect(ch: u32) -> u32 {
    let (r, w, x) = (
        ch & pe::IMAGE_SCN_MEM_READ != 0,
        ch & pe::IMAGE_SCN_MEM_WRITE != 0,
        ch & pe::IMAGE_SCN_MEM_EXECUTE != 0,
    );
    match (x, w, r) {
        (true, true, _) => kernel32::PAGE_EXECUTE_WRITECOPY,
        (true, false, true) => kernel32::PAGE_EXECUTE_READ,
        (true, false, false) => kernel32::PAGE_EXECUTE,
        (false, true, _) => kernel32::PAGE_WRITECOPY,
        (false, false, true) => kernel32::PAGE_READONLY,
        (false, false, false) => kernel32::PAGE_NOACCESS,
    }
}

/// `IMAGE_TLS_DIRECTORY64`.
#[derive(zerocopy::FromBytes, Clone, Copy, Debug)]
#[repr(C)]
struct TlsDirectory {
    start: u64,
    end: u64,
    index: u64,
    callbacks: u64,
    zero_fill: u32,
    characteristics: u32,
}

impl ExeProcess {
    /// Loads the program at `path` into a new process on `machine` that has `dll` loaded;
    /// `args` are its command line after the program's name. Fails with the name of an
    /// import nothing models, or when the image is not a 64-bit executable that can be
    /// mapped.
    pub fn load(
        machine: Arc<Machine>,
        dll: Arc<UmdImage>,
        path: &Path,
        args: &[&str],
    ) -> Result<Arc<Self>, String> {
        super::unicorn::api()?;
        let data = std::fs::read(path)
            .map_err(|e| format!("cannot read the executable {}: {e}", path.display()))?;
        let file = PeFile64::parse(&*data).map_err(|e| format!("not a PE32+ image: {e}"))?;
        let fh = file.nt_headers().file_header();
        let ch = fh.characteristics.get(LE);
        if ch & pe::IMAGE_FILE_EXECUTABLE_IMAGE == 0 || ch & pe::IMAGE_FILE_DLL != 0 {
            return Err(format!("{} is not an executable image", path.display()));
        }
        // <https://learn.microsoft.com/en-us/windows/win32/debug/pe-format#characteristics>
        if ch & pe::IMAGE_FILE_RELOCS_STRIPPED != 0 {
            return Err(format!(
                "{} has no relocations, and its preferred base is not free in the simulated \
                 process",
                path.display()
            ));
        }
        let tls_rva = file
            .data_directories()
            .get(pe::IMAGE_DIRECTORY_ENTRY_TLS)
            .map_or(0, |d| d.virtual_address.get(LE) as usize);
        let img = image::Image::map(&data)?;
        let mut owned = Owned::default();
        owned.range(img.base, img.size);
        if img.entry <= img.base || img.entry >= img.base + img.size {
            return Err(format!(
                "{} has no entry point in its image",
                path.display()
            ));
        }
        let mut pages = vec![kernel32::PAGE_READONLY; img.size.div_ceil(4096)];
        for s in file.section_table().iter() {
            let va = s.virtual_address.get(LE) as usize;
            let len = s.virtual_size.get(LE) as usize;
            let prot = section_protect(s.characteristics.get(LE));
            for p in pages
                .iter_mut()
                .skip(va / 4096)
                .take(len.div_ceil(4096).max(1))
            {
                *p = prot;
            }
        }
        // `pause` yields as in the DLL; a CR8 access is the kernel's (the IRQL), never a
        // program's: left to the processor, it changes no simulated IRQL.
        let pauses: Vec<_> = img
            .specials
            .iter()
            .filter(|s| s.2 == image::Special::Pause)
            .copied()
            .collect();
        owned.specials = Some(cpu::register_specials(pauses.into()));
        cpu::register_user_count_range(img.base, img.base + img.size);
        let data_block = arena::alloc(layout::SIZE, arena::Access::ReadWrite)?;
        owned.range(data_block, layout::SIZE);
        let stubs = Stubs::new(img.imports.len() + 4)?;
        owned.stubs = Some(stubs.clone());
        // The process's own copy of the DLL, whose exports the program's imports name.
        let umd = UserProcess::try_new(machine, dll)?;

        // Bind every import, or fail with the first one nothing models.
        let mut code_parts: Vec<(image::Import, Vec<u8>)> = Vec::new();
        let mut shims = Vec::new();
        for i in &img.imports {
            match bind(&i.module, &i.name, &umd) {
                Some(Binding::Host(h)) => img.bind(i, stubs.add(&i.name, stub_fn(&i.name, h))?),
                Some(Binding::Win32(h)) => img.bind(i, stubs.add(&i.name, win32_stub(h))?),
                Some(Binding::Code(b)) => code_parts.push((i.clone(), b.to_vec())),
                Some(Binding::FprintfShim) => shims.push(i.clone()),
                Some(Binding::Data(off)) => img.bind(i, data_block + off),
                Some(Binding::Dll(addr)) => img.bind(i, addr),
                None => {
                    let what = if i.module == "rvgpu_umd.dll" {
                        "which rvgpu_umd.dll does not export"
                    } else {
                        "which the simulated OS does not implement"
                    };
                    return Err(format!(
                        "the executable imports {}!{}, {what}",
                        i.module, i.name
                    ));
                }
            }
        }
        if !shims.is_empty() {
            let v = stubs.add("vfprintf", stub_fn("vfprintf", msvcrt::vfprintf))?;
            for i in shims {
                code_parts.push((i, fprintf_shim(v as u64)));
            }
        }
        let teb_addr = (data_block + layout::TEB) as u64;
        let tramp = trampoline(teb_addr);
        let total = code_parts
            .iter()
            .map(|(_, b)| (b.len() + 15) & !15)
            .sum::<usize>()
            + ((tramp.len() + 15) & !15);
        let code = arena::alloc(total, arena::Access::ReadWrite)?;
        owned.range(code, total);
        let place = |at: usize, bytes: &[u8]| {
            // SAFETY: inside the fresh code range (`total` covers every part).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at as *mut u8, bytes.len()) };
            at + ((bytes.len() + 15) & !15)
        };
        let mut at = place(code, &tramp);
        for (i, bytes) in &code_parts {
            img.bind(i, at);
            at = place(at, bytes);
        }

        let mut p = Self {
            umd,
            pages: Mutex::new(pages),
            owned,
            data: data_block,
            trampoline: code,
            tls_callbacks: Vec::new(),
            args: std::iter::once(
                path.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            )
            .chain(args.iter().map(|a| a.to_string()))
            .collect(),
            crt: msvcrt::Crt::default(),
            k32: kernel32::Kernel32::default(),
            ending: Mutex::new(None),
            stdout: Mutex::new(Vec::new()),
            stderr: Mutex::new(Vec::new()),
            image: img,
        };
        p.init_data();
        if tls_rva != 0 {
            p.init_tls(tls_rva)?;
        }
        Ok(Arc::new(p))
    }

    /// The PEB, the TEB and the C runtime's variables, as the process starts.
    fn init_data(&self) {
        let d = self.data;
        let put = |off: usize, v: u64| {
            // SAFETY: inside the process's data block, which is ours and 8-byte aligned.
            unsafe { ((d + off) as *mut u64).write_unaligned(v) }
        };
        let teb = (d + layout::TEB) as u64;
        put(layout::TEB + teb::SELF, teb);
        put(layout::TEB + teb::PEB, (d + layout::PEB) as u64);
        put(layout::TEB + teb::CLIENT_ID, kernel32::PROCESS_ID);
        put(layout::TEB + teb::CLIENT_ID + 8, kernel32::THREAD_ID);
        put(
            layout::TEB + teb::TLS_POINTER,
            (d + layout::TLS_ARRAY) as u64,
        );
        // PEB.ImageBaseAddress.
        put(layout::PEB + 0x10, self.image.base as u64);
        msvcrt::init_data(self);
    }

    /// Allocates the static TLS block (index 0, the image's), points the TEB's TLS array at
    /// it and collects the callbacks, as the loader does for an image with a TLS directory.
    /// <https://learn.microsoft.com/en-us/windows/win32/debug/pe-format#the-tls-section>
    fn init_tls(&mut self, rva: usize) -> Result<(), String> {
        let base = self.image.base as u64;
        let end = base + self.image.size as u64;
        let within = |a: u64| a >= base && a < end;
        let dir: TlsDirectory = guest::read(base + rva as u64)
            .map_err(|_| "the TLS directory lies outside the image".to_string())?;
        if dir.end < dir.start
            || (dir.start != dir.end && (!within(dir.start) || dir.end > end))
            || !within(dir.index)
        {
            return Err("the TLS directory names addresses outside the image".into());
        }
        let raw = (dir.end - dir.start) as usize;
        let len = raw
            .checked_add(dir.zero_fill as usize)
            .filter(|&l| l <= guest::MAX_COPY)
            .ok_or("the TLS template is too large")?;
        let block = arena::alloc(len.max(1), arena::Access::ReadWrite)?;
        self.owned.range(block, len.max(1));
        if raw > 0 {
            let bytes = guest::read_bytes(dir.start, raw).map_err(|_| "TLS template")?;
            guest::write_bytes(block as u64, &bytes).map_err(|_| "TLS block")?;
        }
        guest::write(dir.index, &0u32).map_err(|_| "TLS index")?;
        guest::write((self.data + layout::TLS_ARRAY) as u64, &(block as u64))
            .map_err(|_| "TLS array")?;
        if dir.callbacks != 0 {
            if !within(dir.callbacks) {
                return Err("the TLS callbacks lie outside the image".into());
            }
            for i in 0..64u64 {
                let f: u64 = guest::read(dir.callbacks + 8 * i).map_err(|_| "TLS callbacks")?;
                if f == 0 {
                    break;
                }
                if !within(f) {
                    return Err("a TLS callback lies outside the image".into());
                }
                self.tls_callbacks.push(f);
            }
        }
        Ok(())
    }

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
struct Owned {
    ranges: Vec<(usize, usize)>,
    specials: Option<u64>,
    stubs: Option<Arc<Stubs>>,
}

impl Owned {
    /// Takes `[base, base + len)` (fresh from the arena) and registers it as memory.
    fn range(&mut self, base: usize, len: usize) {
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
