//! PE checks of the cross-built Windows images.
//!
//! Builds the package once per test binary with `scripts/package.sh` (the same command a person
//! runs, into a temporary directory; cargo's own work goes to target/pe, apart from target/),
//! then inspects rvgpu.sys, rvgpu_umd.dll and rvgpu-whlk.exe with the `object` crate. Each check fails with
//! what it found.
//!
//! Budgets (measured sizes are printed by `image_sizes_are_within_budget`; run with
//! `--nocapture` to see them):
//! - rvgpu.sys < 512 KiB: a display miniport of this scope is ~100-300 KiB in C; the margin
//!   covers the driver core growing with later issues.
//! - rvgpu_umd.dll < 256 KiB.
//! - rvgpu-whlk.exe < 12 MiB (it embeds the simulation as well as the Windows backend).

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64};
use object::{LittleEndian as LE, Object, ObjectSection};

#[path = "common/setup.rs"]
mod setup;

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

const SYS_BUDGET: u64 = 512 * 1024;
/// The DLL is about 288 KiB: the one-pass packet check, the kernel-mode path's one-pass copy
/// (each command encoded straight into the command buffer, about 2 KiB of code for fewer
/// instructions per submission), the lock-free handle table and the bounded CPU wait with its
/// ETW event; the budget catches a crate or formatting pulled in.
const DLL_BUDGET: u64 = 320 * 1024;
/// The harness carries the whole simulation too (`--backend sim` works on Windows); ~5 MiB.
const EXE_BUDGET: u64 = 12 * 1024 * 1024;

/// What the harness may import: user-mode system DLLs (the C runtime mingw links against is
/// the system msvcrt.dll), and gdi32 for the D3DKMT thunks. Compared case-insensitively.
const EXE_ALLOW_LIST: &[&str] = &[
    "kernel32.dll",
    "ntdll.dll",
    "advapi32.dll",
    "userenv.dll",
    "ws2_32.dll",
    "bcryptprimitives.dll",
    // In-box: the simulated install stage's catalog check (rvgpu-cat's RSA) draws on
    // getrandom, which calls BCryptGenRandom.
    "bcrypt.dll",
    "msvcrt.dll",
    "gdi32.dll",
];
/// API-set contracts the Rust standard library uses (forwarded to kernel32/kernelbase).
const EXE_API_SETS: &str = "api-ms-win-core-";
/// Debug C runtimes, which are not redistributable and not on a test machine.
const DEBUG_CRTS: &[&str] = &[
    "msvcrtd.dll",
    "ucrtbased.dll",
    "vcruntime140d.dll",
    "msvcp140d.dll",
];

/// Modules a kernel driver may import from.
const KERNEL_ALLOW_LIST: &[&str] = &["ntoskrnl.exe", "hal.dll"];
/// Kernel modules a user-mode DLL must never import.
const KERNEL_MODULES: &[&str] = &[
    "ntoskrnl.exe",
    "hal.dll",
    "dxgkrnl.sys",
    "win32k.sys",
    "ci.dll",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs scripts/package.sh once and returns the package directory. When the package cannot be
/// built (mingw-w64 missing and not installable, or a build error above this line of output),
/// the binary stops at once with one line, not one panic per test.
fn package() -> &'static Path {
    static DIR: OnceLock<Scratch> = OnceLock::new();
    DIR.get_or_init(|| {
        setup::require(&["mingw"]);
        let out = Scratch::new("pe_images-package");
        let status = Command::new("bash")
            .arg(root().join("scripts/package.sh"))
            .arg(&out)
            .env("CARGO", env!("CARGO"))
            .current_dir(root())
            .status();
        match status {
            Ok(s) if s.success() => out,
            Ok(s) => setup::stop(&format!("pe_images: scripts/package.sh failed ({s})")),
            Err(e) => setup::stop(&format!("pe_images: cannot run scripts/package.sh: {e}")),
        }
    })
}

fn read(name: &str) -> Vec<u8> {
    let path = package().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse<'a>(name: &str, data: &'a [u8]) -> PeFile64<'a> {
    PeFile64::parse(data).unwrap_or_else(|e| panic!("{name} is not a PE32+ image: {e}"))
}

/// `name` from the package, read and parsed as a PE32+ image. Its bytes live as long as the
/// test process (each test reads an image once), so the parse can borrow them.
fn image(name: &str) -> (&'static [u8], PeFile64<'static>) {
    let data: &'static [u8] = Vec::leak(read(name));
    (data, parse(name, data))
}

/// Fails unless none of the modules `image` imports is one `bad` picks: it imports no `what`.
fn no_import(image: &str, imports: &BTreeSet<String>, what: &str, bad: impl Fn(&str) -> bool) {
    let found: Vec<_> = imports.iter().filter(|m| bad(m)).collect();
    assert!(found.is_empty(), "{image} imports {what}: {found:?}");
}

fn imports(name: &str, file: &PeFile64<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Some(table) = file.import_table().expect("import table") {
        let mut descriptors = table.descriptors().expect("import descriptors");
        while let Some(d) = descriptors.next().expect("import descriptor") {
            let dll = table.name(d.name.get(LE)).expect("import name");
            out.insert(String::from_utf8_lossy(dll).to_ascii_lowercase());
        }
    }
    eprintln!("{name} imports from: {out:?}");
    out
}

/// `(name, RVA)` of every named export.
///
/// Read by hand rather than with `PeFile::exports`: rust-lld places the export directory at a
/// 2-byte-aligned address inside .rdata, which the loader accepts but `object` 0.36 refuses
/// (it reads the directory as an aligned struct).
fn exports(data: &[u8], file: &PeFile64<'_>) -> Vec<(String, u64)> {
    let Some(dir) = file.data_directory(pe::IMAGE_DIRECTORY_ENTRY_EXPORT) else {
        return Vec::new();
    };
    let sections = file.section_table();
    let at = |rva: u32| -> usize {
        let (offset, _) = sections
            .pe_file_range_at(rva)
            .unwrap_or_else(|| panic!("RVA {rva:#x} is in no section"));
        offset as usize
    };
    let u32_at = |off: usize| u32::from_le_bytes(data[off..off + 4].try_into().unwrap());
    let u16_at = |off: usize| u16::from_le_bytes(data[off..off + 2].try_into().unwrap());
    let d = at(dir.virtual_address.get(LE));
    let functions = at(u32_at(d + 28));
    let names = u32_at(d + 24) as usize;
    let name_table = u32_at(d + 32);
    let ordinal_table = u32_at(d + 36);
    let mut out = Vec::new();
    for i in 0..names {
        let name_off = at(u32_at(at(name_table) + 4 * i));
        let end = data[name_off..].iter().position(|&b| b == 0).unwrap();
        let name = String::from_utf8_lossy(&data[name_off..name_off + end]).into_owned();
        let ordinal = u16_at(at(ordinal_table) + 2 * i) as usize;
        out.push((name, u64::from(u32_at(functions + 4 * ordinal))));
    }
    out
}

fn check_common(name: &str, file: &PeFile64<'_>) {
    let machine = file.nt_headers().file_header().machine.get(LE);
    assert_eq!(
        machine,
        pe::IMAGE_FILE_MACHINE_AMD64,
        "{name}: machine is {machine:#x}, not AMD64"
    );

    let dll_chars = file.nt_headers().optional_header().dll_characteristics();
    for (flag, what) in [
        (pe::IMAGE_DLLCHARACTERISTICS_NX_COMPAT, "NX_COMPAT"),
        (pe::IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE, "DYNAMIC_BASE"),
    ] {
        assert!(
            dll_chars & flag != 0,
            "{name}: DllCharacteristics {dll_chars:#06x} lacks {what}"
        );
    }

    for section in file.section_table().iter() {
        let c = section.characteristics.get(LE);
        let sname = String::from_utf8_lossy(section.raw_name())
            .trim_end_matches('\0')
            .to_string();
        assert!(
            !(c & pe::IMAGE_SCN_MEM_WRITE != 0 && c & pe::IMAGE_SCN_MEM_EXECUTE != 0),
            "{name}: section {sname} is both writable and executable ({c:#010x})"
        );
    }
}

fn check_pdb(name: &str, file: &PeFile64<'_>, pdb: &str) {
    let info = file
        .pdb_info()
        .expect("debug directory")
        .unwrap_or_else(|| panic!("{name}: no CodeView (RSDS) debug directory entry"));
    let path = String::from_utf8_lossy(info.path()).into_owned();
    let file_name = path.rsplit(['\\', '/']).next().unwrap_or(&path);
    assert_eq!(file_name, pdb, "{name}: debug directory names {path:?}");
    assert!(package().join(pdb).is_file(), "{pdb} is not in the package");
}

/// The PE checksum (as imagehlp's CheckSumMappedFile computes it).
fn pe_checksum(data: &[u8], checksum_offset: usize) -> u32 {
    let mut sum: u64 = 0;
    for (i, chunk) in data.chunks(2).enumerate() {
        let off = i * 2;
        if off == checksum_offset || off == checksum_offset + 2 {
            continue;
        }
        let word = u16::from_le_bytes([chunk[0], *chunk.get(1).unwrap_or(&0)]);
        sum += u64::from(word);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    (sum as u32) + data.len() as u32
}

#[test]
fn driver_image_is_a_native_kernel_driver() {
    let (data, file) = image("rvgpu.sys");
    check_common("rvgpu.sys", &file);
    let opt = file.nt_headers().optional_header();
    assert_eq!(
        opt.subsystem(),
        pe::IMAGE_SUBSYSTEM_NATIVE,
        "rvgpu.sys: subsystem {}",
        opt.subsystem()
    );

    let entry = u64::from(opt.address_of_entry_point());
    let exports = exports(data, &file);
    let driver_entry = exports
        .iter()
        .find(|(n, _)| n == "DriverEntry")
        .unwrap_or_else(|| panic!("rvgpu.sys does not export DriverEntry; exports: {exports:?}"));
    assert_eq!(
        entry, driver_entry.1,
        "rvgpu.sys: AddressOfEntryPoint {entry:#x} is not DriverEntry's RVA ({:#x})",
        driver_entry.1
    );
}

#[test]
fn driver_image_imports_only_kernel_modules() {
    let (_, file) = image("rvgpu.sys");
    let imports = imports("rvgpu.sys", &file);
    assert!(
        !imports.is_empty(),
        "rvgpu.sys imports nothing (is DriverEntry linked?)"
    );
    let outside = format!("from modules outside {KERNEL_ALLOW_LIST:?}");
    no_import("rvgpu.sys", &imports, &outside, |m| {
        !KERNEL_ALLOW_LIST.contains(&m)
    });
}

#[test]
fn driver_image_has_pdb_and_checksum() {
    let (data, file) = image("rvgpu.sys");
    check_pdb("rvgpu.sys", &file, "rvgpu.pdb");
    // CheckSum is at offset 64 of the optional header.
    let pe_offset = u32::from_le_bytes(data[0x3c..0x40].try_into().unwrap()) as usize;
    let checksum_offset = pe_offset + 4 + 20 + 64;
    let stored = u32::from_le_bytes(
        data[checksum_offset..checksum_offset + 4]
            .try_into()
            .unwrap(),
    );
    let computed = pe_checksum(data, checksum_offset);
    assert_eq!(
        stored, computed,
        "rvgpu.sys: PE checksum {stored:#x}, computed {computed:#x}"
    );
}

#[test]
fn driver_image_has_code_and_no_writable_code() {
    let (_, file) = image("rvgpu.sys");
    let text = file
        .section_by_name(".text")
        .expect("rvgpu.sys has no .text section");
    assert!(text.size() > 0, "rvgpu.sys: empty .text");
}

#[test]
fn umd_image_is_a_user_mode_dll_exporting_the_api() {
    let (data, file) = image("rvgpu_umd.dll");
    check_common("rvgpu_umd.dll", &file);
    check_pdb("rvgpu_umd.dll", &file, "rvgpu_umd.pdb");
    let chars = file.nt_headers().file_header().characteristics.get(LE);
    assert!(
        chars & pe::IMAGE_FILE_DLL != 0,
        "rvgpu_umd.dll is not a DLL ({chars:#x})"
    );
    let subsystem = file.nt_headers().optional_header().subsystem();
    assert!(
        subsystem == pe::IMAGE_SUBSYSTEM_WINDOWS_GUI
            || subsystem == pe::IMAGE_SUBSYSTEM_WINDOWS_CUI,
        "rvgpu_umd.dll: subsystem {subsystem} is not a Windows user-mode one"
    );

    let exported: BTreeSet<String> = exports(data, &file).into_iter().map(|(n, _)| n).collect();
    let capi = ["umd/src/capi.rs", "umd/src/capi_context.rs"]
        .map(|f| std::fs::read_to_string(root().join(f)).unwrap())
        .concat();
    let api: BTreeSet<String> = capi
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("pub unsafe extern \"C\" fn ")
                .or_else(|| l.trim().strip_prefix("pub extern \"C\" fn "))
        })
        .map(|l| l.split('(').next().unwrap().to_string())
        .collect();
    assert!(api.len() >= 9, "found only {api:?} in umd/src/capi.rs");
    let missing: Vec<_> = api.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "rvgpu_umd.dll does not export {missing:?}; exports: {exported:?}"
    );
    // the Direct3D runtimes' entry points, which refuse (umd/src/d3d_runtime.rs).
    for entry in ["OpenAdapter", "OpenAdapter10_2", "OpenAdapter12"] {
        assert!(
            exported.contains(entry),
            "rvgpu_umd.dll does not export {entry}; exports: {exported:?}"
        );
    }

    let imports = imports("rvgpu_umd.dll", &file);
    no_import("rvgpu_umd.dll", &imports, "kernel modules", |m| {
        KERNEL_MODULES.contains(&m) || m.ends_with(".sys")
    });
}

#[test]
fn harness_exe_is_a_console_program_with_user_mode_imports() {
    let (_, file) = image("rvgpu-whlk.exe");
    check_common("rvgpu-whlk.exe", &file);
    let chars = file.nt_headers().file_header().characteristics.get(LE);
    assert!(
        chars & pe::IMAGE_FILE_DLL == 0 && chars & pe::IMAGE_FILE_EXECUTABLE_IMAGE != 0,
        "rvgpu-whlk.exe is not an executable ({chars:#x})"
    );
    let subsystem = file.nt_headers().optional_header().subsystem();
    assert_eq!(
        subsystem,
        pe::IMAGE_SUBSYSTEM_WINDOWS_CUI,
        "rvgpu-whlk.exe: subsystem {subsystem} is not the console"
    );
    let imports: BTreeSet<String> = imports("rvgpu-whlk.exe", &file)
        .into_iter()
        .map(|m| m.to_ascii_lowercase())
        .collect();
    no_import("rvgpu-whlk.exe", &imports, "a debug CRT", |m| {
        DEBUG_CRTS.contains(&m)
    });
    let outside = format!("modules outside the user-mode allow-list (all: {imports:?})");
    no_import("rvgpu-whlk.exe", &imports, &outside, |m| {
        !EXE_ALLOW_LIST.contains(&m) && !m.starts_with(EXE_API_SETS)
    });
    assert!(
        imports.contains("gdi32.dll"),
        "rvgpu-whlk.exe does not import gdi32.dll, so its D3DKMT backend is not linked: {imports:?}"
    );
}

#[test]
fn image_sizes_are_within_budget() {
    for (name, budget) in [
        ("rvgpu.sys", SYS_BUDGET),
        ("rvgpu_umd.dll", DLL_BUDGET),
        ("rvgpu-whlk.exe", EXE_BUDGET),
    ] {
        let size = std::fs::metadata(package().join(name)).unwrap().len();
        println!(
            "{name}: {size} bytes ({:.1} KiB), budget {} KiB",
            size as f64 / 1024.0,
            budget / 1024
        );
        assert!(
            size < budget,
            "{name} is {size} bytes, over its {budget}-byte budget"
        );
    }
}

#[test]
fn package_folder_is_complete_and_stamped() {
    let mut files: Vec<String> = std::fs::read_dir(package())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "rvgpu-whlk.exe",
            "rvgpu.inf",
            "rvgpu.pdb",
            "rvgpu.sys",
            "rvgpu_umd.dll",
            "rvgpu_umd.pdb",
            "windbg"
        ],
        "package folder contents"
    );
    assert_eq!(
        std::fs::read(package().join("windbg/rvgpu.js")).unwrap(),
        std::fs::read(root().join("scripts/windbg/rvgpu.js")).unwrap(),
        "the packaged WinDbg script is not scripts/windbg/rvgpu.js"
    );
    let inf = std::fs::read_to_string(package().join("rvgpu.inf")).unwrap();
    let line = inf
        .lines()
        .find(|l| l.trim_start().starts_with("DriverVer"))
        .expect("DriverVer line in the packaged INF");
    let value = line.split_once('=').unwrap().1.trim();
    let (date, version) = value
        .split_once(',')
        .unwrap_or_else(|| panic!("DriverVer {value:?}"));
    let date_parts: Vec<&str> = date.split('/').collect();
    assert!(
        date_parts.len() == 3
            && date_parts
                .iter()
                .all(|p| p.chars().all(|c| c.is_ascii_digit())),
        "DriverVer date {date:?} is not MM/DD/YYYY"
    );
    let version_parts: Vec<&str> = version.split('.').collect();
    assert!(
        version_parts.len() == 4 && version_parts.iter().all(|p| p.parse::<u16>().is_ok()),
        "DriverVer version {version:?} is not a.b.c.d (16-bit each)"
    );
    // Every file the INF copies is in the package.
    let mut in_source = false;
    for l in inf.lines() {
        let l = l.split(';').next().unwrap().trim();
        if l.starts_with('[') {
            in_source = l.eq_ignore_ascii_case("[SourceDisksFiles]");
            continue;
        }
        if in_source && !l.is_empty() {
            let file = l.split('=').next().unwrap().trim();
            assert!(
                package().join(file).is_file(),
                "the INF installs {file}, which is not in the package"
            );
        }
    }
}

/// The WinDbg script (scripts/windbg/rvgpu.js) looks the adapter table up by its symbol, builds
/// the adapter's type name and decodes `Option` and `Vec` from their layout: the names it
/// relies on must be in the PDB as it spells them.
#[test]
fn driver_pdb_has_the_names_the_windbg_script_uses() {
    let pdb = read("rvgpu.pdb");
    let script = std::fs::read_to_string(root().join("scripts/windbg/rvgpu.js")).unwrap();
    let has = |name: &str| pdb.windows(name.len()).any(|w| w == name.as_bytes());
    let adapter = "rvgpu_kmd::adapter::Adapter<enum2$<rvgpu::platform::windows::WinKernel> >";
    assert!(
        script.contains("const PLATFORM = \"enum2$<rvgpu::platform::windows::WinKernel>\";")
            && script.contains("\"rvgpu_kmd::adapter::Adapter<\" + PLATFORM + \" >\""),
        "the script no longer builds {adapter}"
    );
    for name in [
        adapter,
        "rvgpu_kmd::globals::ADAPTERS",
        "alloc::vec::Vec<rvgpu_kmd::handle::Handle,alloc::alloc::Global>",
        "alloc::vec::Vec<rvgpu_kmd::hwqueue::HwQueue,alloc::alloc::Global>",
        "alloc::vec::Vec<rvgpu_kmd::doorbell::Slot,alloc::alloc::Global>",
        "enum2$<core::option::Option<rvgpu_kmd::handle::Handle> >::Variant1",
        "enum2$<core::option::Option<u32> >::Variant1",
    ] {
        assert!(has(name), "rvgpu.pdb has no {name}");
    }
}
