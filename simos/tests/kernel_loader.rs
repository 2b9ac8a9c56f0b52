//! LD-01..LD-05: the kernel loader's checks on `rvgpu.sys` (`rvgpu_simos::pe::loader`). The
//! shipped image passes them all; a copy broken in one way is refused with Windows' status,
//! before its DriverEntry runs.

mod common;

use rvgpu_simos::pe::loader::{
    check_driver_image, STATUS_DRIVER_ENTRYPOINT_NOT_FOUND, STATUS_INVALID_IMAGE_FORMAT,
    STATUS_INVALID_IMAGE_PROTECT,
};
use rvgpu_simos::pe::{build_image, unicorn, DriverBuild};
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

fn image() -> Vec<u8> {
    std::fs::read(build_image().unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

fn u16_at(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([d[at], d[at + 1]])
}

fn u32_at(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(d[at..at + 4].try_into().unwrap())
}

fn put32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Adds `by` to the little-endian u32 at `at`.
fn add32(d: &mut [u8], at: usize, by: u32) {
    let v = u32_at(d, at) + by;
    put32(d, at, v);
}

/// Sets the bits `bits` in the little-endian u32 at `at`.
fn or32(d: &mut [u8], at: usize, bits: u32) {
    let v = u32_at(d, at) | bits;
    put32(d, at, v);
}

/// Offsets in the file: NT headers, optional header, section table.
struct Layout {
    nt: usize,
    opt: usize,
    sections: usize,
    count: usize,
}

fn layout(d: &[u8]) -> Layout {
    let nt = u32_at(d, 0x3C) as usize;
    let opt = nt + 24;
    Layout {
        nt,
        opt,
        sections: opt + u16_at(d, nt + 20) as usize,
        count: u16_at(d, nt + 6) as usize,
    }
}

/// The section header offset of the section named `name`.
fn section(d: &[u8], name: &str) -> usize {
    let l = layout(d);
    (0..l.count)
        .map(|i| l.sections + 40 * i)
        .find(|&s| d[s..s + 8].starts_with(name.as_bytes()))
        .unwrap_or_else(|| panic!("no {name} section"))
}

/// The header offset of the last section in the table.
fn last_section(d: &[u8]) -> usize {
    let l = layout(d);
    l.sections + 40 * (l.count - 1)
}

fn refused(d: &[u8], memory_integrity: bool, rule: &str, status: u32) {
    match check_driver_image(d, memory_integrity) {
        Err(r) if r.rule == rule && r.status == status => {}
        other => panic!("expected {rule} with {status:#010x}, got {other:?}"),
    }
}

/// A copy of the image broken in one way: what is wrong, the edit that breaks it, and the
/// status the loader refuses it with.
type Broken = (&'static str, fn(&mut Vec<u8>), u32);

/// Every copy in `cases` is refused for `rule` (with memory integrity on); a failure names the
/// case.
fn refused_all(rule: &str, cases: &[Broken]) {
    for &(what, edit, status) in cases {
        match check_driver_image(&mutated(edit), true) {
            Err(r) if r.rule == rule && r.status == status => {}
            other => panic!("{rule}, {what}: expected {status:#010x}, got {other:?}"),
        }
    }
}

fn mutated(edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut d = image();
    edit(&mut d);
    d
}

#[test]
fn ld_rvgpu_sys_passes_every_loader_rule() {
    assert_eq!(check_driver_image(&image(), true), Ok(()));
}

/// LD-01 (`MiVerifyImageHeader`): header rules.
#[test]
fn ld_01_header_rules_refuse_broken_headers() {
    let format = STATUS_INVALID_IMAGE_FORMAT;
    refused_all(
        "LD-01",
        &[
            (
                "not an executable image",
                |d| {
                    let at = layout(d).nt + 22;
                    let c = u16_at(d, at) & !2;
                    d[at..at + 2].copy_from_slice(&c.to_le_bytes());
                },
                format,
            ),
            (
                "FileAlignment neither a multiple of 512 nor SectionAlignment",
                |d| {
                    let at = layout(d).opt + 36;
                    put32(d, at, 0x300);
                },
                format,
            ),
            (
                "ImageBase not 64 KiB aligned",
                |d| {
                    let at = layout(d).opt + 24;
                    or32(d, at, 0x1000);
                },
                format,
            ),
            (
                "SizeOfHeaders not below SizeOfImage",
                |d| {
                    let opt = layout(d).opt;
                    let size = u32_at(d, opt + 56);
                    put32(d, opt + 60, size);
                },
                format,
            ),
            (
                "NT headers not 4-byte aligned",
                |d| {
                    let nt = layout(d).nt as u32;
                    put32(d, 0x3C, nt + 2);
                },
                STATUS_INVALID_IMAGE_PROTECT,
            ),
        ],
    );
}

/// LD-02 (`MiCreateImageFileMap`): a driver's sections are page aligned at least.
#[test]
fn ld_02_sub_page_section_alignment_is_refused() {
    let d = mutated(|d| {
        let opt = layout(d).opt;
        put32(d, opt + 32, 0x200);
        put32(d, opt + 36, 0x200);
    });
    refused(&d, true, "LD-02", STATUS_INVALID_IMAGE_FORMAT);
}

/// LD-03 (`MiParseImageSectionHeaders`): sections back to back, none past SizeOfImage, the
/// last one's file data in the file.
#[test]
fn ld_03_section_layout_rules() {
    let format = STATUS_INVALID_IMAGE_FORMAT;
    refused_all(
        "LD-03",
        &[
            (
                "a gap before .rdata",
                |d| {
                    let s = section(d, ".rdata");
                    add32(d, s + 12, 0x1000);
                },
                format,
            ),
            (
                "the last section running past SizeOfImage",
                |d| {
                    let last = last_section(d);
                    add32(d, last + 8, 0x3000);
                },
                format,
            ),
            (
                "the last section's file data past the end of the file",
                |d| {
                    let last = last_section(d);
                    add32(d, last + 16, 0x10_000);
                },
                format,
            ),
        ],
    );
    // Pages left after the last section are not an error: the last section takes them.
    let d = mutated(|d| {
        let opt = layout(d).opt;
        add32(d, opt + 56, 0x2000);
    });
    assert_eq!(check_driver_image(&d, true), Ok(()));
}

/// LD-04 (memory integrity): no writable code, NX opted in; both accepted with memory
/// integrity off.
#[test]
fn ld_04_memory_integrity_refuses_writable_code_and_no_nx() {
    let wx = mutated(|d| {
        let s = section(d, ".text");
        or32(d, s + 36, 0x8000_0000);
    });
    refused(&wx, true, "LD-04", STATUS_INVALID_IMAGE_FORMAT);
    assert_eq!(check_driver_image(&wx, false), Ok(()));
    let no_nx = mutated(|d| {
        let at = layout(d).opt + 70;
        let c = u16_at(d, at) & !0x100;
        d[at..at + 2].copy_from_slice(&c.to_le_bytes());
    });
    refused(&no_nx, true, "LD-04", STATUS_INVALID_IMAGE_FORMAT);
    assert_eq!(check_driver_image(&no_nx, false), Ok(()));
}

/// LD-05 (`MiSnapThunk`): an import ntoskrnl does not export fails the load with
/// `STATUS_DRIVER_ENTRYPOINT_NOT_FOUND`.
#[test]
fn ld_05_import_ntoskrnl_does_not_export_is_refused() {
    let d = mutated(|d| {
        let at = d
            .windows(13)
            .position(|w| w == b"KeBugCheckEx\0")
            .expect("the import's name");
        d[at..at + 12].copy_from_slice(b"KeBugCheckXx");
    });
    refused(&d, true, "LD-05", STATUS_DRIVER_ENTRYPOINT_NOT_FOUND);
}

/// On a machine: the refused image, installed from a signed package, never reaches
/// DriverEntry, and the load fails with the loader's status.
#[test]
fn ld_04_machine_refuses_to_load_a_writable_code_image() {
    if let Err(e) = unicorn::api() {
        panic!("{e}");
    }
    let d = mutated(|d| {
        let s = section(d, ".text");
        or32(d, s + 36, 0x8000_0000);
    });
    // The broken image in a package signed again: it installs, and the loader refuses it.
    let package = common::pe::package_with_driver_image("package-wx", &d);
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.driver = DriverBuild::Pe(Some(package.dir.clone()));
    let mut m = Machine::new(cfg);
    match m.load_driver() {
        Err(SimError::StartRefused { rule, status, .. }) => {
            assert_eq!(rule, "LD-04");
            assert_eq!(status as u32, STATUS_INVALID_IMAGE_FORMAT);
        }
        other => panic!("expected LD-04, got {other:?}"),
    }
    assert!(m.pe_image().is_none(), "the image was mapped");
}
