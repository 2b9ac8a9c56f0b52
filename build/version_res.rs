//! The version resource of the Windows images (`VS_VERSION_INFO`, resource type `RT_VERSION`,
//! name 1), written as a compiled resource file (`.res`) that the linker turns into the
//! image's `.rsrc` section: lld-link (rust-lld) takes `.res` files as inputs, so no `rc.exe`,
//! `cvtres.exe` or WDK is needed.
//!
//! One version, the workspace's `version` in `Cargo.toml` with a fourth part of 0, is stamped
//! everywhere: the images' `FILEVERSION` / `PRODUCTVERSION` (here) and the INF's `DriverVer`
//! (`scripts/package.sh`). Dxgkrnl compares the first with the second when it adds the device
//! ([D24] `DpiFdoValidateKmdAndPnpVersionMatch`, docs/windows-bringup.md BR-14).
//!
//! Layouts, from Microsoft's pages: "VS_VERSIONINFO structure", "VS_FIXEDFILEINFO structure",
//! "StringFileInfo structure", "String structure", "VarFileInfo structure", "Var structure"
//! (learn.microsoft.com, `winver.h`), and "RESOURCEHEADER structure" (the `.res` file format:
//! an empty entry first, then one header + data per resource, each 32-bit aligned).
//!
//! Used by `build.rs` (rvgpu.sys), `umd/build.rs` (rvgpu_umd.dll) and the tests, which parse
//! what it writes; [`read_file_version`] reads it back for the simulated Dxgkrnl and
//! `rvgpu-cat check`.

/// `RT_VERSION`.
pub const RT_VERSION: u16 = 16;
/// `VS_FFI_SIGNATURE`.
pub const VS_FFI_SIGNATURE: u32 = 0xFEEF_04BD;
/// `VFT_DLL`.
pub const VFT_DLL: u32 = 2;
/// `VFT_DRV`.
pub const VFT_DRV: u32 = 3;
/// `VFT2_DRV_DISPLAY`.
pub const VFT2_DRV_DISPLAY: u32 = 4;
/// `VOS_NT_WINDOWS32`.
const VOS_NT_WINDOWS32: u32 = 0x0004_0004;
/// `VS_FFI_FILEFLAGSMASK`.
const VS_FFI_FILEFLAGSMASK: u32 = 0x3F;
/// The string table's language and code page: U.S. English, Unicode (`040904B0`).
const LANG_EN_US: u16 = 0x0409;
const CODEPAGE_UNICODE: u16 = 1200;

/// What one image's resource says about itself.
#[derive(Clone, Debug)]
pub struct ImageVersion<'a> {
    /// `a.b.c.d`.
    pub version: [u16; 4],
    /// `VFT_DRV` or `VFT_DLL`.
    pub file_type: u32,
    /// `VFT2_DRV_DISPLAY` for a display driver, else 0.
    pub file_subtype: u32,
    /// `OriginalFilename` and `InternalName`.
    pub file_name: &'a str,
    /// `FileDescription`.
    pub description: &'a str,
}

/// `a.b.c` (a Cargo version; any pre-release or build suffix ignored) as `[a, b, c, 0]`;
/// `None` when a part is missing or not a 16-bit number.
pub fn version_from_cargo(v: &str) -> Option<[u16; 4]> {
    let core = v.split(['-', '+']).next()?;
    let mut parts = core.split('.');
    let mut out = [0u16; 4];
    for slot in out.iter_mut().take(3) {
        *slot = parts.next()?.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(out)
}

/// `a.b.c.d`.
pub fn dotted(v: [u16; 4]) -> String {
    format!("{}.{}.{}.{}", v[0], v[1], v[2], v[3])
}

fn utf16z(s: &str) -> Vec<u8> {
    let mut out: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
    out.extend_from_slice(&[0, 0]);
    out
}

fn pad4(buf: &mut Vec<u8>) {
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

/// One version-information block: `wLength`, `wValueLength`, `wType`, `szKey`, padding,
/// `Value`, padding, `Children`. `value_len` is in the unit the structure defines (bytes for
/// binary values, characters for text).
fn block(key: &str, value_type: u16, value: &[u8], value_len: u16, children: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 6];
    b.extend(utf16z(key));
    pad4(&mut b);
    b.extend_from_slice(value);
    if !children.is_empty() {
        pad4(&mut b);
        b.extend_from_slice(children);
    }
    let len = u16::try_from(b.len()).unwrap_or(u16::MAX);
    b[0..2].copy_from_slice(&len.to_le_bytes());
    b[2..4].copy_from_slice(&value_len.to_le_bytes());
    b[4..6].copy_from_slice(&value_type.to_le_bytes());
    b
}

fn string_entry(key: &str, value: &str) -> Vec<u8> {
    let data = utf16z(value);
    let chars = u16::try_from(data.len() / 2).unwrap_or(u16::MAX);
    let mut b = block(key, 1, &data, chars, &[]);
    pad4(&mut b);
    b
}

/// The `VS_VERSIONINFO` block (the resource's data).
pub fn version_info(v: &ImageVersion<'_>) -> Vec<u8> {
    let ms = (u32::from(v.version[0]) << 16) | u32::from(v.version[1]);
    let ls = (u32::from(v.version[2]) << 16) | u32::from(v.version[3]);
    let mut fixed = Vec::with_capacity(52);
    for word in [
        VS_FFI_SIGNATURE,
        0x0001_0000, // dwStrucVersion 1.0
        ms,          // dwFileVersionMS
        ls,          // dwFileVersionLS
        ms,          // dwProductVersionMS
        ls,          // dwProductVersionLS
        VS_FFI_FILEFLAGSMASK,
        0, // dwFileFlags
        VOS_NT_WINDOWS32,
        v.file_type,
        v.file_subtype,
        0, // dwFileDateMS
        0, // dwFileDateLS
    ] {
        fixed.extend_from_slice(&word.to_le_bytes());
    }
    let text = dotted(v.version);
    let mut strings = Vec::new();
    for (key, value) in [
        ("CompanyName", "rvgpu project"),
        ("FileDescription", v.description),
        ("FileVersion", text.as_str()),
        ("InternalName", v.file_name),
        ("OriginalFilename", v.file_name),
        ("ProductName", "rvgpu"),
        ("ProductVersion", text.as_str()),
    ] {
        strings.extend(string_entry(key, value));
    }
    let table_key = format!("{LANG_EN_US:04X}{CODEPAGE_UNICODE:04X}");
    let mut table = block(&table_key, 1, &[], 0, &strings);
    pad4(&mut table);
    let mut string_file_info = block("StringFileInfo", 1, &[], 0, &table);
    pad4(&mut string_file_info);
    let translation = (u32::from(CODEPAGE_UNICODE) << 16) | u32::from(LANG_EN_US);
    let mut var = block("Translation", 0, &translation.to_le_bytes(), 4, &[]);
    pad4(&mut var);
    let mut var_file_info = block("VarFileInfo", 1, &[], 0, &var);
    pad4(&mut var_file_info);
    let mut children = string_file_info;
    children.extend(var_file_info);
    block("VS_VERSION_INFO", 0, &fixed, 52, &children)
}

/// One `.res` entry: `RESOURCEHEADER` (type and name as ordinals) and the data, padded.
fn res_entry(out: &mut Vec<u8>, ty: u16, name: u16, memory_flags: u16, language: u16, data: &[u8]) {
    let data_size = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&data_size.to_le_bytes());
    out.extend_from_slice(&32u32.to_le_bytes()); // HeaderSize
    out.extend_from_slice(&[0xFF, 0xFF]);
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&[0xFF, 0xFF]);
    out.extend_from_slice(&name.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // DataVersion
    out.extend_from_slice(&memory_flags.to_le_bytes());
    out.extend_from_slice(&language.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // Version
    out.extend_from_slice(&0u32.to_le_bytes()); // Characteristics
    out.extend_from_slice(data);
    pad4(out);
}

/// The whole `.res` file: the empty entry every resource file starts with, then the version
/// resource (`RT_VERSION`, name 1, U.S. English, `MOVEABLE | PURE` as `rc.exe` writes it).
pub fn res_file(v: &ImageVersion<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    res_entry(&mut out, 0, 0, 0, 0, &[]);
    res_entry(
        &mut out,
        RT_VERSION,
        1,
        0x0030,
        LANG_EN_US,
        &version_info(v),
    );
    out
}

// --- reading an image's version back ---------------------------------------------------

/// The `N` bytes of `b` at `at`, if `b` holds them all.
fn bytes_at<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn rd16(b: &[u8], at: usize) -> Option<u16> {
    bytes_at(b, at).map(u16::from_le_bytes)
}

fn rd32(b: &[u8], at: usize) -> Option<u32> {
    bytes_at(b, at).map(u32::from_le_bytes)
}

/// An image's sections as (virtual address, virtual size, file offset, file size), and its
/// resource directory (RVA, size).
struct Mapped<'a> {
    data: &'a [u8],
    sections: Vec<(u32, u32, u32, u32)>,
}

impl Mapped<'_> {
    /// The bytes at `rva..rva+len`, from the file; `None` past a section's file data.
    fn at(&self, rva: u32, len: u32) -> Option<&[u8]> {
        let end = rva.checked_add(len)?;
        for &(va, vsize, raw, rsize) in &self.sections {
            let span = vsize.max(rsize);
            if rva >= va && end <= va.checked_add(span)? {
                let off = rva.checked_sub(va)?;
                if off.checked_add(len)? > rsize {
                    return None;
                }
                let start = usize::try_from(raw.checked_add(off)?).ok()?;
                return self
                    .data
                    .get(start..start.checked_add(usize::try_from(len).ok()?)?);
            }
        }
        None
    }
}

/// An image file's `RT_VERSION` #1 file version, `dwFileVersionMS` : `dwFileVersionLS`, read
/// the way Dxgkrnl's `DxgkpGetFileVersion` reads it (docs/windows-bringup.md BR-14): `Ok(0)`
/// when the image has no such resource, or one shorter than 0x5C bytes or not keyed
/// `VS_VERSION_INFO`; `Err` when the file is not a PE32+ image. Language: a neutral entry if
/// there is one, else the first. Bounded, checked reads: never panics on a malformed file.
pub fn read_file_version(data: &[u8]) -> Result<u64, String> {
    let bad = |m: &str| Err(format!("not a mappable PE32+ image: {m}"));
    if rd16(data, 0) != Some(0x5A4D) {
        return bad("no MZ header");
    }
    let Some(pe) = rd32(data, 0x3C).and_then(|v| usize::try_from(v).ok()) else {
        return bad("truncated DOS header");
    };
    if rd32(data, pe) != Some(0x0000_4550) {
        return bad("no PE signature");
    }
    let (Some(nsec), Some(opt_size)) = (
        pe.checked_add(6).and_then(|a| rd16(data, a)),
        pe.checked_add(20).and_then(|a| rd16(data, a)),
    ) else {
        return bad("truncated file header");
    };
    let Some(opt) = pe.checked_add(24) else {
        return bad("header offset");
    };
    if rd16(data, opt) != Some(0x20B) {
        return bad("not PE32+");
    }
    // Data directory 2 (resources) of a PE32+ optional header: offset 112 + 2 * 8.
    let (Some(rsrc_rva), Some(rsrc_size), Some(ndirs)) = (
        opt.checked_add(128).and_then(|a| rd32(data, a)),
        opt.checked_add(132).and_then(|a| rd32(data, a)),
        opt.checked_add(108).and_then(|a| rd32(data, a)),
    ) else {
        return bad("truncated optional header");
    };
    let Some(table) = opt.checked_add(usize::from(opt_size)) else {
        return bad("header offset");
    };
    let mut sections = Vec::new();
    for i in 0..usize::from(nsec) {
        let Some(s) = i.checked_mul(40).and_then(|o| table.checked_add(o)) else {
            return bad("section table offset");
        };
        let fields = (
            s.checked_add(12).and_then(|a| rd32(data, a)),
            s.checked_add(8).and_then(|a| rd32(data, a)),
            s.checked_add(20).and_then(|a| rd32(data, a)),
            s.checked_add(16).and_then(|a| rd32(data, a)),
        );
        let (Some(va), Some(vsize), Some(raw), Some(rsize)) = fields else {
            return bad("truncated section table");
        };
        sections.push((va, vsize, raw, rsize));
    }
    if ndirs < 3 || rsrc_rva == 0 || rsrc_size == 0 {
        return Ok(0);
    }
    let m = Mapped { data, sections };
    Ok(version_resource(&m, rsrc_rva).unwrap_or(0))
}

/// Walks type 16 → name 1 → language (0, else the first) → data; `None`: not found.
fn version_resource(m: &Mapped<'_>, root: u32) -> Option<u64> {
    // One IMAGE_RESOURCE_DIRECTORY: 16 bytes, then named entries, then ID entries (8 bytes
    // each: name or ID, and the offset of a subdirectory (high bit) or a data entry).
    let entries = |dir_off: u32| -> Option<Vec<(u32, u32)>> {
        let dir = m.at(root.checked_add(dir_off)?, 16)?;
        let named = rd16(dir, 12)?;
        let ids = rd16(dir, 14)?;
        let n = u32::from(named).checked_add(u32::from(ids))?;
        let first = root.checked_add(dir_off)?.checked_add(16)?;
        let raw = m.at(first, n.checked_mul(8)?)?;
        (0..usize::try_from(n).ok()?)
            .map(|i| {
                Some((
                    rd32(raw, i.checked_mul(8)?)?,
                    rd32(raw, i.checked_mul(8)?.checked_add(4)?)?,
                ))
            })
            .collect()
    };
    let sub = |e: &(u32, u32)| (e.1 & 0x8000_0000 != 0).then_some(e.1 & 0x7FFF_FFFF);
    let types = entries(0)?;
    let ty = types.iter().find(|e| e.0 == 16)?;
    let names = entries(sub(ty)?)?;
    let name = names.iter().find(|e| e.0 == 1)?;
    let langs = entries(sub(name)?)?;
    let lang = langs.iter().find(|e| e.0 == 0).or_else(|| langs.first())?;
    if lang.1 & 0x8000_0000 != 0 {
        return None;
    }
    let data_entry = m.at(root.checked_add(lang.1)?, 16)?;
    let (rva, size) = (rd32(data_entry, 0)?, rd32(data_entry, 4)?);
    if size < 0x5C {
        return None;
    }
    let block = m.at(rva, 0x5C)?;
    let key: Vec<u16> = (0..16)
        .map(|i| rd16(block, 6 + 2 * i))
        .collect::<Option<_>>()?;
    let want: Vec<u16> = "VS_VERSION_INFO\0".encode_utf16().collect();
    if key != want {
        return None;
    }
    let ms = rd32(block, 48)?;
    let ls = rd32(block, 52)?;
    Some((u64::from(ms) << 32) | u64::from(ls))
}
