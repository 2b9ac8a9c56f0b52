//! The x86-64 emulator: Unicorn's C API, loaded at run time.
//!
//! Unicorn (QEMU's TCG behind a small C API) is the emulator the project runs `rvgpu.sys` in.
//! It is loaded with `dlopen` rather than linked: nothing of it is needed to build the
//! workspace (no CMake, no libclang, no 30 MB static library), and its licence (GPL-2.0) stays
//! with the test side — it never reaches `rvgpu.sys`, `rvgpu_umd.dll` or `rvgpu-whlk.exe`, and
//! a build of the simulated OS that never selects the PE image never opens it. Only the
//! handful of functions below are used; their signatures are those of `unicorn/unicorn.h` 2.1.
//!
//! **One version**, [`VERSION`]: upstream's build, which `scripts/setup.sh unicorn` fetches into
//! `target/tools` (docs/pe-image.md, "The emulator", says why not Debian's).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `uc_engine *`.
pub type Uc = *mut c_void;

/// `uc_arch::UC_ARCH_X86`.
pub const ARCH_X86: c_int = 4;
/// `uc_mode::UC_MODE_64`.
pub const MODE_64: c_int = 8;
/// `UC_PROT_ALL`.
pub const PROT_ALL: u32 = 7;

/// `uc_hook_type` values.
pub mod hook {
    /// `UC_HOOK_INTR`: an interrupt or exception (`int3`, `int n`, divide error, …).
    pub const INTR: i32 = 1;
    /// `UC_HOOK_CODE` over a range: before each instruction in it.
    pub const CODE: i32 = 4;
    /// `UC_HOOK_MEM_READ_UNMAPPED | WRITE | FETCH`.
    pub const MEM_UNMAPPED: i32 = 16 | 32 | 64;
    /// `UC_HOOK_MEM_READ`: before each read in the range (with the access's whole size).
    pub const MEM_READ: i32 = 1 << 10;
    /// `UC_HOOK_MEM_WRITE`.
    pub const MEM_WRITE: i32 = 1 << 11;
    /// `UC_HOOK_INSN_INVALID`.
    pub const INSN_INVALID: i32 = 1 << 14;
}

/// `uc_mem_type` of an unmapped access.
pub mod mem {
    /// `UC_MEM_WRITE_UNMAPPED`.
    pub const WRITE_UNMAPPED: i32 = 20;
    /// `UC_MEM_FETCH_UNMAPPED`.
    pub const FETCH_UNMAPPED: i32 = 21;
}

/// `uc_x86_reg` numbers of the registers the bridge uses.
#[allow(missing_docs)]
pub mod reg {
    pub const RAX: i32 = 35;
    pub const RBP: i32 = 36;
    pub const RBX: i32 = 37;
    pub const RCX: i32 = 38;
    pub const RDI: i32 = 39;
    pub const RDX: i32 = 40;
    pub const RIP: i32 = 41;
    pub const RSI: i32 = 43;
    pub const RSP: i32 = 44;
    pub const R8: i32 = 106;
    pub const R9: i32 = 107;
    pub const R10: i32 = 108;
    pub const R11: i32 = 109;
    pub const R12: i32 = 110;
    pub const R13: i32 = 111;
    pub const R14: i32 = 112;
    pub const R15: i32 = 113;
    /// `UC_X86_REG_FS_BASE`: the `fs` segment's base (`IA32_FS_BASE`).
    pub const FS_BASE: i32 = 250;
    /// `UC_X86_REG_GS_BASE`: the `gs` segment's base (`IA32_GS_BASE`).
    pub const GS_BASE: i32 = 251;
}

/// `UC_CTL_WRITE(UC_CTL_TB_FLUSH, 0)`: `uc_ctl` forgets every translated block, so the next
/// execution anywhere translates the bytes as they are now (`uc_ctl_flush_tb`).
pub const CTL_FLUSH_TB: c_int = 10 | (1 << 30);

/// `uc_cb_mmio_read_t`.
pub type MmioRead = unsafe extern "C" fn(Uc, u64, u32, *mut c_void) -> u64;
/// `uc_cb_mmio_write_t`.
pub type MmioWrite = unsafe extern "C" fn(Uc, u64, u32, u64, *mut c_void);
/// `uc_cb_hookintr_t`.
pub type HookIntr = unsafe extern "C" fn(Uc, u32, *mut c_void);
/// `uc_cb_hookcode_t`.
pub type HookCode = unsafe extern "C" fn(Uc, u64, u32, *mut c_void);
/// `uc_cb_eventmem_t`.
pub type HookMemInvalid = unsafe extern "C" fn(Uc, c_int, u64, c_int, i64, *mut c_void) -> bool;
/// `uc_cb_hookinsn_invalid_t`.
pub type HookInsnInvalid = unsafe extern "C" fn(Uc, *mut c_void) -> bool;

/// The functions this module uses.
#[allow(missing_docs)]
pub struct Api {
    pub open: unsafe extern "C" fn(c_int, c_int, *mut Uc) -> c_int,
    pub close: unsafe extern "C" fn(Uc) -> c_int,
    pub strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    pub reg_read: unsafe extern "C" fn(Uc, c_int, *mut c_void) -> c_int,
    pub reg_write: unsafe extern "C" fn(Uc, c_int, *const c_void) -> c_int,
    pub mem_map_ptr: unsafe extern "C" fn(Uc, u64, usize, u32, *mut c_void) -> c_int,
    pub mmio_map: unsafe extern "C" fn(
        Uc,
        u64,
        usize,
        Option<MmioRead>,
        *mut c_void,
        Option<MmioWrite>,
        *mut c_void,
    ) -> c_int,
    pub emu_start: unsafe extern "C" fn(Uc, u64, u64, u64, usize) -> c_int,
    pub emu_stop: unsafe extern "C" fn(Uc) -> c_int,
    pub ctl: unsafe extern "C" fn(Uc, c_int, ...) -> c_int,
    pub hook_add: unsafe extern "C" fn(
        Uc,
        *mut usize,
        c_int,
        *mut c_void,
        *mut c_void,
        u64,
        u64,
        ...
    ) -> c_int,
    pub hook_del: unsafe extern "C" fn(Uc, usize) -> c_int,
    _lib: libloading::Library,
}

/// The library's version (major, minor, patch): the one `scripts/setup.sh` fetches, and the
/// only one [`api`] accepts.
pub const VERSION: (u32, u32, u32) = (2, 1, 4);

/// The command that fetches the library, for the one-line hint.
pub const FETCH_HINT: &str = "bash scripts/setup.sh unicorn";

/// Where `scripts/setup.sh` puts the library, or `RVGPU_UNICORN`.
fn library_path() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("RVGPU_UNICORN") {
        return p.into();
    }
    let (major, minor, patch) = VERSION;
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/tools")
        .join(format!("unicorn-{major}.{minor}.{patch}"))
        .join("libunicorn.so.2")
}

fn open_library() -> Result<libloading::Library, String> {
    let path = library_path();
    // SAFETY: loading a shared library runs its initialisers; libunicorn's only set up its own
    // globals.
    unsafe { libloading::Library::new(&path) }.map_err(|e| format!("{}: {e}", path.display()))
}

/// Fetches the library when this process may, through the workspace's `scripts/setup.sh
/// unicorn` (pip, under the lock every set-up takes; otherwise it prints the one command to
/// run). `false` when it could not.
fn try_install() -> bool {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scripts")
        .join("setup.sh");
    script.exists()
        && std::process::Command::new("bash")
            .arg(script)
            .arg("unicorn")
            .status()
            .is_ok_and(|s| s.success())
}

fn load() -> Result<Api, String> {
    let lib = match open_library() {
        Ok(l) => l,
        Err(first) => {
            if !try_install() {
                return Err(format!(
                    "the x86-64 emulator (libunicorn.so.2) is not there ({first}); run: {FETCH_HINT}"
                ));
            }
            open_library().map_err(|e| format!("libunicorn.so.2 still not loadable: {e}"))?
        }
    };
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the symbol is a function of the C API with the type of the field it is
            // assigned to (unicorn.h 2.0).
            let s = unsafe { lib.get($name) }.map_err(|e| format!("libunicorn: {e}"))?;
            *s
        }};
    }
    let version: unsafe extern "C" fn(*mut u32, *mut u32) -> u32 = sym!(b"uc_version\0");
    // SAFETY: null out-pointers are allowed; the result packs major, minor, patch, extra.
    let v = unsafe { version(std::ptr::null_mut(), std::ptr::null_mut()) };
    let found = (v >> 24, (v >> 16) & 0xFF, (v >> 8) & 0xFF);
    if found != VERSION {
        return Err(format!(
            "libunicorn {}.{}.{} at {}; the simulated OS runs on {}.{}.{} (run: {FETCH_HINT})",
            found.0,
            found.1,
            found.2,
            library_path().display(),
            VERSION.0,
            VERSION.1,
            VERSION.2
        ));
    }
    Ok(Api {
        open: sym!(b"uc_open\0"),
        close: sym!(b"uc_close\0"),
        strerror: sym!(b"uc_strerror\0"),
        reg_read: sym!(b"uc_reg_read\0"),
        reg_write: sym!(b"uc_reg_write\0"),
        mem_map_ptr: sym!(b"uc_mem_map_ptr\0"),
        mmio_map: sym!(b"uc_mmio_map\0"),
        emu_start: sym!(b"uc_emu_start\0"),
        emu_stop: sym!(b"uc_emu_stop\0"),
        ctl: sym!(b"uc_ctl\0"),
        hook_add: sym!(b"uc_hook_add\0"),
        hook_del: sym!(b"uc_hook_del\0"),
        _lib: lib,
    })
}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// The loaded API, or why it could not be loaded (with the command that fixes it).
pub fn api() -> Result<&'static Api, String> {
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// A Unicorn error code as text.
pub fn error_text(api: &Api, code: c_int) -> String {
    // SAFETY: uc_strerror returns a static NUL-terminated string for any code.
    let p = unsafe { (api.strerror)(code) };
    if p.is_null() {
        return format!("unicorn error {code}");
    }
    // SAFETY: non-null static C string (above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    /// The version the simulated OS accepts is the one `scripts/setup.sh` fetches: otherwise the
    /// library would be fetched into a folder nothing opens.
    #[test]
    fn the_accepted_version_is_the_one_setup_fetches() {
        let script = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup.sh"),
        )
        .unwrap();
        let fetched = script
            .lines()
            .find_map(|l| l.strip_prefix("UNICORN_VERSION="))
            .unwrap();
        let (major, minor, patch) = super::VERSION;
        assert_eq!(fetched, format!("{major}.{minor}.{patch}"));
    }
}
