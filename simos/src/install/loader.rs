//! The kernel loader's checks on a driver image before it is mapped (LD-01..LD-05 in
//! docs/windows-bringup.md): what Windows' memory manager checks when it makes an image
//! section of `rvgpu.sys`, what memory integrity (HVCI) demands of a driver, and how the
//! loader resolves its imports. Each check is done on the file's bytes with bounded, checked
//! reads: a malformed file is refused with a status, never a panic.
//!
//! Sources (\[D24\]: 24H2 ntoskrnl, nohuto/decompiled-pseudocode commit 47643d2, folder
//! 11-24H2/ntoskrnl):
//! - LD-01 `MiCreateImageFileMap` @ 0x140944150 (DOS header, `e_lfanew`) and
//!   `MiVerifyImageHeader` @ 0x1409449F8 (the NT headers);
//! - LD-02 `MiCreateImageFileMap` (the section table inside the image, page-sized alignment);
//! - LD-03 `MiParseImageSectionHeaders` @ 0x1409459C0 (the sections' layout);
//! - LD-04 \[M\] "Implement memory integrity compatible code"
//!   (<https://learn.microsoft.com/windows-hardware/drivers/driversecurity/implement-hvci-compatible-code>);
//! - LD-05 `MiResolveImageReferences` @ 0x140A17C94 and `MiSnapThunk` @ 0x140A180B4.

/// `STATUS_INVALID_IMAGE_FORMAT`.
pub const STATUS_INVALID_IMAGE_FORMAT: u32 =
    rvgpu_ddi::ntstatus::STATUS_INVALID_IMAGE_FORMAT as u32;
/// `STATUS_INVALID_IMAGE_NOT_MZ`.
pub const STATUS_INVALID_IMAGE_NOT_MZ: u32 =
    rvgpu_ddi::ntstatus::STATUS_INVALID_IMAGE_NOT_MZ as u32;
/// `STATUS_INVALID_IMAGE_PROTECT`.
pub const STATUS_INVALID_IMAGE_PROTECT: u32 =
    rvgpu_ddi::ntstatus::STATUS_INVALID_IMAGE_PROTECT as u32;
/// `STATUS_DRIVER_ORDINAL_NOT_FOUND`.
pub const STATUS_DRIVER_ORDINAL_NOT_FOUND: u32 =
    rvgpu_ddi::ntstatus::STATUS_DRIVER_ORDINAL_NOT_FOUND as u32;
/// `STATUS_DRIVER_ENTRYPOINT_NOT_FOUND`.
pub const STATUS_DRIVER_ENTRYPOINT_NOT_FOUND: u32 =
    rvgpu_ddi::ntstatus::STATUS_DRIVER_ENTRYPOINT_NOT_FOUND as u32;

/// Why the loader refused the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The rule (`LD-nn`).
    pub rule: &'static str,
    /// The status the load fails with.
    pub status: u32,
    /// What was wrong.
    pub why: String,
}

fn refuse(rule: &'static str, status: u32, why: impl Into<String>) -> Refusal {
    Refusal {
        rule,
        status,
        why: why.into(),
    }
}

/// The ntoskrnl exports a driver may import here: every routine the simulated kernel binds.
/// Each name is a function of the 24H2 ntoskrnl (a file of that name in the decompiled
/// 11-24H2/ntoskrnl folder; `memcpy` and `memset` are there as the bodies `memmove` and
/// `memset_0`, the names ntoskrnl exports them under being the C library's). A name outside
/// this list is refused as Windows refuses a name ntoskrnl does not export (LD-05).
pub const NTOSKRNL_EXPORTS: &[&str] = &[
    "DbgPrintEx",
    "EtwRegister",
    "EtwUnregister",
    "EtwWriteTransfer",
    "ExAllocatePool2",
    "ExFreePoolWithTag",
    "IoBuildDeviceIoControlRequest",
    "IoGetDeviceObjectPointer",
    "IoOpenDeviceRegistryKey",
    "IofCallDriver",
    "KeBugCheckEx",
    "KeCancelTimer",
    "KeFlushQueuedDpcs",
    "KeInitializeDpc",
    "KeInitializeEvent",
    "KeInitializeTimerEx",
    "KeQueryPerformanceCounter",
    "KeSetTimerEx",
    "KeWaitForSingleObject",
    "MmGetPhysicalAddress",
    "ObfDereferenceObject",
    "ZwClose",
    "ZwLoadDriver",
    "ZwQueryValueKey",
    "memcmp",
    "memcpy",
    "memmove",
    "memset",
];

fn rd16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

fn rd32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn rd64(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// One section header's fields.
#[derive(Clone, Copy, Debug)]
struct Section {
    name: [u8; 8],
    virtual_size: u32,
    virtual_address: u32,
    raw_size: u32,
    raw_pointer: u32,
    characteristics: u32,
}

const IMAGE_SCN_MEM_EXECUTE: u32 = 0x2000_0000;
const IMAGE_SCN_MEM_WRITE: u32 = 0x8000_0000;
const IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE: u16 = 0x0040;
const IMAGE_DLLCHARACTERISTICS_NX_COMPAT: u16 = 0x0100;

fn section_name(s: &Section) -> String {
    let end = s.name.iter().position(|c| *c == 0).unwrap_or(8);
    String::from_utf8_lossy(s.name.get(..end).unwrap_or(&[])).into_owned()
}

/// `x` rounded up to `a` (a power of two), `None` on overflow.
fn align_up(x: u32, a: u32) -> Option<u32> {
    let mask = a.checked_sub(1)?;
    Some(x.checked_add(mask)? & !mask)
}

/// LD-01..LD-05 on the driver file `data`; `memory_integrity`: the machine runs with memory
/// integrity on (LD-04).
pub fn check_driver_image(data: &[u8], memory_integrity: bool) -> Result<(), Refusal> {
    let bad = |rule, why: &str| refuse(rule, STATUS_INVALID_IMAGE_FORMAT, why);
    // LD-01, MiCreateImageFileMap: the DOS header and where the NT headers are. The status
    // for a file without `MZ` comes from a branch not read; STATUS_INVALID_IMAGE_NOT_MZ is
    // the simulation's choice.
    if rd16(data, 0) != Some(0x5A4D) {
        return Err(refuse("LD-01", STATUS_INVALID_IMAGE_NOT_MZ, "no MZ header"));
    }
    let nt = rd32(data, 0x3C).ok_or_else(|| bad("LD-01", "truncated DOS header"))?;
    let fits = nt
        .checked_add(264)
        .is_some_and(|end| usize::try_from(end).is_ok_and(|e| e <= data.len()));
    if !fits {
        return Err(refuse(
            "LD-01",
            STATUS_INVALID_IMAGE_PROTECT,
            format!("e_lfanew {nt:#x} + 264 is past the file's end"),
        ));
    }
    let nt = usize::try_from(nt).map_err(|_| bad("LD-01", "e_lfanew"))?;
    // LD-01, MiVerifyImageHeader.
    if nt % 4 != 0 {
        return Err(refuse(
            "LD-01",
            STATUS_INVALID_IMAGE_PROTECT,
            "the NT headers are not 4-byte aligned",
        ));
    }
    let field16 = |off: usize| {
        nt.checked_add(off)
            .and_then(|a| rd16(data, a))
            .ok_or_else(|| bad("LD-01", "truncated NT headers"))
    };
    let field32 = |off: usize| {
        nt.checked_add(off)
            .and_then(|a| rd32(data, a))
            .ok_or_else(|| bad("LD-01", "truncated NT headers"))
    };
    // A wrong signature goes to MiComputeBadImageHeaderType (not read): the simulation uses
    // STATUS_INVALID_IMAGE_FORMAT.
    if field32(0)? != 0x0000_4550 {
        return Err(bad("LD-01", "no PE signature"));
    }
    let machine = field16(4)?;
    let nsec = field16(6)?;
    let opt_size = field16(20)?;
    let characteristics = field16(22)?;
    if machine == 0 && opt_size == 0 {
        return Err(refuse(
            "LD-01",
            STATUS_INVALID_IMAGE_PROTECT,
            "Machine and SizeOfOptionalHeader are both 0",
        ));
    }
    if characteristics & 0x0002 == 0 {
        return Err(bad("LD-01", "IMAGE_FILE_EXECUTABLE_IMAGE is not set"));
    }
    let magic = field16(24)?;
    if magic != 0x20B && magic != 0x10B {
        return Err(bad("LD-01", &format!("optional header magic {magic:#x}")));
    }
    if magic != 0x20B {
        return Err(bad("LD-01", "a PE32 image cannot be an x64 driver"));
    }
    let section_alignment = field32(24 + 32)?;
    let file_alignment = field32(24 + 36)?;
    let size_of_image = field32(24 + 56)?;
    let size_of_headers = field32(24 + 60)?;
    let dll_characteristics = field16(24 + 70)?;
    let image_base = nt
        .checked_add(24 + 24)
        .and_then(|a| rd64(data, a))
        .ok_or_else(|| bad("LD-01", "truncated optional header"))?;
    check_alignments(section_alignment, file_alignment)?;
    if size_of_image > 0x7700_0000 {
        return Err(bad("LD-01", "SizeOfImage is above 0x77000000"));
    }
    if machine != 0x8664 && machine != 0xAA64 {
        return Err(bad(
            "LD-01",
            &format!("Machine {machine:#x} with a PE32+ header"),
        ));
    }
    if size_of_headers >= size_of_image {
        return Err(bad("LD-01", "SizeOfHeaders is not below SizeOfImage"));
    }
    if image_base & 0xFFFF != 0 {
        return Err(bad("LD-01", "ImageBase is not 64 KiB aligned"));
    }
    if opt_size & 7 != 0 {
        return Err(bad("LD-01", "SizeOfOptionalHeader is not a multiple of 8"));
    }
    // x64 is a "legacy" architecture to MiLegacyImageArchitecture: only other machines must
    // be relocatable and NX-compatible here (memory integrity asks NX of every driver, LD-04).
    let both = IMAGE_DLLCHARACTERISTICS_DYNAMIC_BASE | IMAGE_DLLCHARACTERISTICS_NX_COMPAT;
    if machine == 0xAA64 && dll_characteristics & both != both {
        return Err(bad(
            "LD-01",
            "an ARM64 image without DYNAMIC_BASE and NX_COMPAT",
        ));
    }
    // LD-02, MiCreateImageFileMap: the section table ends inside the image; a driver's
    // sections are page aligned at least.
    let table = nt
        .checked_add(24)
        .and_then(|t| t.checked_add(usize::from(opt_size)))
        .ok_or_else(|| bad("LD-02", "section table offset"))?;
    let table_end = usize::from(nsec)
        .checked_mul(40)
        .and_then(|n| n.checked_add(table))
        .ok_or_else(|| bad("LD-02", "section table size"))?;
    let headers_end = u32::try_from(table_end)
        .map_err(|_| bad("LD-02", "section table size"))?
        .max(size_of_headers);
    if headers_end > size_of_image {
        return Err(bad(
            "LD-02",
            "the headers and section table run past SizeOfImage",
        ));
    }
    if section_alignment < 0x1000 {
        return Err(bad(
            "LD-02",
            &format!("SectionAlignment {section_alignment:#x} is below the page size"),
        ));
    }
    let sections = read_sections(data, table, nsec)?;
    check_layout(
        data,
        &sections,
        (size_of_image, size_of_headers),
        (section_alignment, file_alignment),
    )?;
    if memory_integrity {
        check_memory_integrity(&sections, dll_characteristics, section_alignment)?;
    }
    check_imports(data, nt, &sections)
}

/// LD-01, MiVerifyImageHeader: `FileAlignment` and `SectionAlignment`.
fn check_alignments(section_alignment: u32, file_alignment: u32) -> Result<(), Refusal> {
    if file_alignment & 0x1FF != 0 && file_alignment != section_alignment {
        return Err(bad(
            "LD-01",
            &format!(
                "FileAlignment {file_alignment:#x} is not a multiple of 512 and differs from \
                 SectionAlignment"
            ),
        ));
    }
    if file_alignment == 0 {
        return Err(bad("LD-01", "FileAlignment is 0"));
    }
    if !section_alignment.is_power_of_two() {
        return Err(bad(
            "LD-01",
            &format!("SectionAlignment {section_alignment:#x} is not a power of two"),
        ));
    }
    if !file_alignment.is_power_of_two() {
        return Err(bad(
            "LD-01",
            &format!("FileAlignment {file_alignment:#x} is not a power of two"),
        ));
    }
    if section_alignment < file_alignment {
        return Err(bad("LD-01", "SectionAlignment is below FileAlignment"));
    }
    Ok(())
}

/// A refusal of `rule` with STATUS_INVALID_IMAGE_FORMAT.
fn bad(rule: &'static str, why: &str) -> Refusal {
    refuse(rule, STATUS_INVALID_IMAGE_FORMAT, why)
}

/// LD-02: the `nsec` section headers of the table at file offset `table`.
fn read_sections(data: &[u8], table: usize, nsec: u16) -> Result<Vec<Section>, Refusal> {
    let mut sections = Vec::with_capacity(usize::from(nsec));
    for i in 0..usize::from(nsec) {
        let s = table
            .checked_add(i * 40)
            .ok_or_else(|| bad("LD-02", "section table offset"))?;
        let at = |off: usize| {
            s.checked_add(off)
                .and_then(|a| rd32(data, a))
                .ok_or_else(|| bad("LD-02", "truncated section table"))
        };
        let mut name = [0u8; 8];
        name.copy_from_slice(
            s.checked_add(8)
                .and_then(|e| data.get(s..e))
                .ok_or_else(|| bad("LD-02", "truncated section table"))?,
        );
        sections.push(Section {
            name,
            virtual_size: at(8)?,
            virtual_address: at(12)?,
            raw_size: at(16)?,
            raw_pointer: at(20)?,
            characteristics: at(36)?,
        });
    }
    Ok(sections)
}

/// LD-03 for `sections` of an image of `(SizeOfImage, SizeOfHeaders)` and
/// `(SectionAlignment, FileAlignment)`.
fn check_layout(
    data: &[u8],
    sections: &[Section],
    (size_of_image, size_of_headers): (u32, u32),
    (section_alignment, file_alignment): (u32, u32),
) -> Result<(), Refusal> {
    // LD-03, MiParseImageSectionHeaders: the headers take the first pages, each section
    // starts where the previous one's aligned size ended, none is empty, none runs past
    // SizeOfImage, the last one's file data is in the file. The last section takes whatever
    // pages of SizeOfImage are left after it, so only an image without sections can leave a
    // page unused (refused).
    let page = 0x1000u32;
    let image_pages =
        align_up(size_of_image, page).ok_or_else(|| bad("LD-03", "SizeOfImage"))? / page;
    let mut expected = align_up(size_of_headers, section_alignment)
        .ok_or_else(|| bad("LD-03", "SizeOfHeaders"))?;
    let mut remaining = image_pages
        .checked_sub(expected / page)
        .ok_or_else(|| bad("LD-03", "the headers take more than SizeOfImage"))?;
    let mut last_raw_end = 0u32;
    for (i, s) in sections.iter().enumerate() {
        let name = section_name(s);
        let size = if s.virtual_size == 0 {
            s.raw_size
        } else {
            s.virtual_size
        };
        let raw_end = s
            .raw_pointer
            .checked_add(s.raw_size)
            .ok_or_else(|| bad("LD-03", &format!("{name}: file data past 4 GiB")))?;
        if s.virtual_address != expected || size == 0 {
            return Err(bad(
                "LD-03",
                &format!(
                    "{name}: at {:#x} with size {size:#x}; the layout needs it at {expected:#x}, \
                     not empty",
                    s.virtual_address
                ),
            ));
        }
        let span = align_up(size, section_alignment)
            .ok_or_else(|| bad("LD-03", &format!("{name}: size overflows")))?;
        let mut pages = span / page;
        if pages > remaining {
            return Err(bad("LD-03", &format!("{name}: runs past SizeOfImage")));
        }
        if i + 1 == sections.len() {
            pages = remaining;
        }
        remaining -= pages;
        if s.raw_size != 0 && align_up(raw_end, file_alignment).is_none_or(|e| e < s.raw_pointer) {
            return Err(bad("LD-03", &format!("{name}: file data overflows")));
        }
        last_raw_end = if s.raw_size == 0 { 0 } else { raw_end };
        expected = expected
            .checked_add(
                pages
                    .checked_mul(page)
                    .ok_or_else(|| bad("LD-03", "size"))?,
            )
            .ok_or_else(|| bad("LD-03", &format!("{name}: ends past 4 GiB")))?;
    }
    if usize::try_from(last_raw_end).map_or(true, |e| e > data.len()) {
        return Err(bad(
            "LD-03",
            "the last section's file data is past the file's end",
        ));
    }
    if remaining >= section_alignment / page {
        return Err(bad(
            "LD-03",
            "SizeOfImage leaves pages after the last section",
        ));
    }
    Ok(())
}

/// LD-04 under memory integrity.
fn check_memory_integrity(
    sections: &[Section],
    dll_characteristics: u16,
    section_alignment: u32,
) -> Result<(), Refusal> {
    // LD-04, memory integrity: no section both writable and executable, NX by default, page
    // multiple alignment (checked in LD-02 for every driver). Microsoft documents no status;
    // STATUS_INVALID_IMAGE_FORMAT is the simulation's choice.
    if let Some(s) = sections.iter().find(|s| {
        s.characteristics & (IMAGE_SCN_MEM_WRITE | IMAGE_SCN_MEM_EXECUTE)
            == IMAGE_SCN_MEM_WRITE | IMAGE_SCN_MEM_EXECUTE
    }) {
        return Err(bad(
            "LD-04",
            &format!(
                "section {} is both writable and executable",
                section_name(s)
            ),
        ));
    }
    if dll_characteristics & IMAGE_DLLCHARACTERISTICS_NX_COMPAT == 0 {
        return Err(bad("LD-04", "the image does not opt in to NX (NX_COMPAT)"));
    }
    if !section_alignment.is_multiple_of(0x1000) {
        return Err(bad("LD-04", "SectionAlignment is not a multiple of 0x1000"));
    }
    Ok(())
}

/// The file offset of `rva` (inside a section's file data).
fn file_offset(sections: &[Section], rva: u32) -> Option<usize> {
    sections.iter().find_map(|s| {
        let off = rva.checked_sub(s.virtual_address)?;
        (off < s.raw_size)
            .then(|| usize::try_from(s.raw_pointer.checked_add(off)?).ok())
            .flatten()
    })
}

fn c_string(data: &[u8], at: usize) -> Option<String> {
    let bytes = data.get(at..)?;
    let end = bytes.iter().take(512).position(|c| *c == 0)?;
    Some(String::from_utf8_lossy(bytes.get(..end)?).into_owned())
}

/// LD-05: every import resolves. `MiResolveImageReferences` loads each named module and
/// `MiSnapThunk` looks each name up in its export table: a name it does not export fails the
/// load with `STATUS_DRIVER_ENTRYPOINT_NOT_FOUND`, an ordinal past its table with
/// `STATUS_DRIVER_ORDINAL_NOT_FOUND`. Here ntoskrnl.exe is the only module (another one
/// would have to be found and loaded: refused as a simulation limit, with the entry-point
/// status), and its exports are [`NTOSKRNL_EXPORTS`]; no ordinal is known.
fn check_imports(data: &[u8], nt: usize, sections: &[Section]) -> Result<(), Refusal> {
    let bad = |why: String| refuse("LD-05", STATUS_INVALID_IMAGE_FORMAT, why);
    // Data directory 1 (imports) of a PE32+ optional header: offset 112 + 8.
    let dir = nt
        .checked_add(24 + 120)
        .ok_or_else(|| bad("imports".into()))?;
    let (Some(rva), Some(size)) = (
        rd32(data, dir),
        dir.checked_add(4).and_then(|d| rd32(data, d)),
    ) else {
        return Err(bad("truncated data directories".into()));
    };
    if rva == 0 || size == 0 {
        return Ok(());
    }
    let mut desc = file_offset(sections, rva).ok_or_else(|| bad("import directory".into()))?;
    for _ in 0..256 {
        let field = |off: usize| {
            desc.checked_add(off)
                .and_then(|a| rd32(data, a))
                .ok_or_else(|| bad("truncated import descriptor".into()))
        };
        let (lookup, name_rva, iat) = (field(0)?, field(12)?, field(16)?);
        if name_rva == 0 && iat == 0 {
            return Ok(());
        }
        let module = file_offset(sections, name_rva)
            .and_then(|o| c_string(data, o))
            .ok_or_else(|| bad("import module name".into()))?;
        let mut thunk = file_offset(sections, if lookup != 0 { lookup } else { iat })
            .ok_or_else(|| bad(format!("{module}: import lookup table")))?;
        for _ in 0..4096 {
            let entry = rd64(data, thunk).ok_or_else(|| bad(format!("{module}: thunks")))?;
            if entry == 0 {
                break;
            }
            if !module.eq_ignore_ascii_case("ntoskrnl.exe") {
                return Err(refuse(
                    "LD-05",
                    STATUS_DRIVER_ENTRYPOINT_NOT_FOUND,
                    format!("imports from {module}, which the simulated system does not have"),
                ));
            }
            if entry & (1 << 63) != 0 {
                return Err(refuse(
                    "LD-05",
                    STATUS_DRIVER_ORDINAL_NOT_FOUND,
                    format!("imports ordinal {} from {module}", entry & 0xFFFF),
                ));
            }
            let hint_name = u32::try_from(entry & 0x7FFF_FFFF)
                .ok()
                .and_then(|r| file_offset(sections, r))
                .and_then(|o| o.checked_add(2))
                .and_then(|o| c_string(data, o))
                .ok_or_else(|| bad(format!("{module}: import name")))?;
            if !NTOSKRNL_EXPORTS.contains(&hint_name.as_str()) {
                return Err(refuse(
                    "LD-05",
                    STATUS_DRIVER_ENTRYPOINT_NOT_FOUND,
                    format!("{module} does not export {hint_name}"),
                ));
            }
            thunk = thunk
                .checked_add(8)
                .ok_or_else(|| bad(format!("{module}: thunks")))?;
        }
        desc = desc
            .checked_add(20)
            .ok_or_else(|| bad("import descriptors".into()))?;
    }
    Err(bad("more than 256 import descriptors".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_refused_without_panicking() {
        assert_eq!(
            check_driver_image(&[], true).map_err(|r| r.status),
            Err(STATUS_INVALID_IMAGE_NOT_MZ)
        );
        let mut d = vec![0u8; 64];
        d[0] = b'M';
        d[1] = b'Z';
        d[0x3C] = 0xFF;
        d[0x3D] = 0xFF;
        d[0x3E] = 0xFF;
        d[0x3F] = 0xFF;
        assert_eq!(
            check_driver_image(&d, true).map_err(|r| r.status),
            Err(STATUS_INVALID_IMAGE_PROTECT)
        );
    }
}
