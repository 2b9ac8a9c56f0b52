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
pub(crate) mod layout;
pub mod msvcrt;
mod process;
mod state;

use std::path::Path;
use std::sync::{Arc, Mutex};

use object::pe;
use object::read::pe::{ImageNtHeaders, PeFile64};
use object::LittleEndian as LE;

use super::cpu::{self, StubResult, Stubs};
use super::umd::{guest, UmdImage, UserProcess};
use super::{arena, image};
use crate::Machine;
pub(crate) use process::Handler;
use process::{teb, Binding, Owned, CURRENT};
pub use process::{ExeProcess, ExitStatus, Outcome};
use state::{Crt, Kernel32};

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
            crt: Crt::default(),
            k32: Kernel32::default(),
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
}
