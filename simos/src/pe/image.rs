//! Mapping `rvgpu.sys` as the Windows loader does: sections at their RVAs in fresh memory,
//! base relocations applied, imports bound (here to the simulated kernel's routines), and the
//! instructions the emulator must see to (CR8 accesses, `pause`) found.

use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile64, SectionTable};
use object::LittleEndian as LE;

use super::arena;

/// An instruction the emulator cannot run faithfully on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// `mov reg, cr8`: reads the IRQL into the register (Unicorn number).
    ReadCr8 { reg: i32 },
    /// `mov cr8, reg`: sets the IRQL from the register.
    WriteCr8 { reg: i32 },
    /// `pause` (a spin loop's hint): the processor lets another one run.
    Pause,
}

/// One import the image binds.
#[derive(Clone, Debug)]
pub struct Import {
    /// The module, lower case (`ntoskrnl.exe`).
    pub module: String,
    /// The routine's name.
    pub name: String,
    /// Address of its IAT entry in the mapped image.
    pub iat: usize,
}

/// One section of a mapped image, as its header gives it.
#[derive(Clone, Debug)]
pub struct Section {
    /// The name (`.data`), up to its first NUL.
    pub name: String,
    /// Where it starts in the mapping.
    pub addr: usize,
    /// `VirtualSize`, bounded by `SizeOfImage`.
    pub len: usize,
    /// `Characteristics` (`IMAGE_SCN_*`).
    pub characteristics: u32,
}

/// A mapped image.
#[derive(Debug)]
pub struct Image {
    /// Where it is mapped (an arena range).
    pub base: usize,
    /// `SizeOfImage`.
    pub size: usize,
    /// The entry point (`DriverEntry`).
    pub entry: usize,
    /// Imports by IAT entry, to be bound with [`Image::bind`].
    pub imports: Vec<Import>,
    /// Instructions the emulator handles itself, by address, with their length.
    pub specials: Vec<(usize, u32, Special)>,
    /// Functions (`.pdata`), as `[start, end)` addresses.
    pub functions: Vec<(usize, usize)>,
    /// Named exports (a DLL's): name and address in the mapping. Forwarders are left out
    /// (the images here have none).
    pub exports: Vec<(String, usize)>,
    /// The sections, in the order of the section table.
    pub sections: Vec<Section>,
}

fn uc_reg(r: iced_x86::Register) -> Option<i32> {
    use super::unicorn::reg;
    use iced_x86::Register as R;
    Some(match r {
        R::RAX => reg::RAX,
        R::RBX => reg::RBX,
        R::RCX => reg::RCX,
        R::RDX => reg::RDX,
        R::RSI => reg::RSI,
        R::RDI => reg::RDI,
        R::RBP => reg::RBP,
        R::R8 => reg::R8,
        R::R9 => reg::R9,
        R::R10 => reg::R10,
        R::R11 => reg::R11,
        R::R12 => reg::R12,
        R::R13 => reg::R13,
        R::R14 => reg::R14,
        R::R15 => reg::R15,
        _ => return None,
    })
}

/// The named exports of the mapped image `mem` (at `base`) whose export directory is at
/// `rva` (none when the directory is absent or inconsistent). Read from the mapping by hand:
/// the linker may place the directory at an address that is not 4-aligned, which `object`'s
/// typed reader refuses.
fn exports_of(mem: &[u8], base: usize, rva: usize) -> Vec<(String, usize)> {
    let u32_at = |at: usize| -> Option<usize> {
        let b = mem.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let u16_at = |at: usize| -> Option<usize> {
        let b = mem.get(at..at.checked_add(2)?)?;
        Some(u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let mut out = Vec::new();
    if rva == 0 {
        return out;
    }
    let (Some(functions), Some(count), Some(addresses), Some(names), Some(ordinals)) = (
        u32_at(rva + 20),
        u32_at(rva + 24),
        u32_at(rva + 28),
        u32_at(rva + 32),
        u32_at(rva + 36),
    ) else {
        return out;
    };
    for i in 0..count.min(4096) {
        let (Some(name), Some(ordinal)) = (u32_at(names + 4 * i), u16_at(ordinals + 2 * i)) else {
            break;
        };
        if ordinal >= functions {
            continue;
        }
        let Some(target) = u32_at(addresses + 4 * ordinal) else {
            continue;
        };
        let Some(bytes) = mem.get(name..) else {
            continue;
        };
        let end = bytes.iter().position(|&c| c == 0).unwrap_or(0);
        if end == 0 || target == 0 || target >= mem.len() {
            continue;
        }
        out.push((
            String::from_utf8_lossy(&bytes[..end]).into_owned(),
            base + target,
        ));
    }
    out
}

impl Image {
    /// Maps `data` (a PE32+ file) at fresh addresses.
    pub fn map(data: &[u8]) -> Result<Self, String> {
        Self::map_with(data, None)
    }

    /// Maps `data` again at fresh addresses, with the special instructions of `first` (a
    /// mapping of the same file) moved to the new base instead of decoding the code anew: the
    /// code is the same bytes, relocations touch no instruction's opcode.
    pub fn map_again(data: &[u8], first: &Image) -> Result<Self, String> {
        Self::map_with(data, Some(first))
    }

    fn map_with(data: &[u8], first: Option<&Image>) -> Result<Self, String> {
        let file = PeFile64::parse(data).map_err(|e| format!("not a PE32+ image: {e}"))?;
        let nt = file.nt_headers();
        let opt = nt.optional_header();
        if nt.file_header().machine.get(LE) != pe::IMAGE_FILE_MACHINE_AMD64 {
            return Err("not an x64 image".into());
        }
        let size = opt.size_of_image() as usize;
        let headers = opt.size_of_headers() as usize;
        if size == 0 || headers > size || headers > data.len() {
            return Err("bad SizeOfImage/SizeOfHeaders".into());
        }
        let base = arena::alloc(size, arena::Access::ReadWrite)?;
        // SAFETY: [base, base + size) is fresh read-write memory of ours.
        let mem = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, size) };
        mem[..headers].copy_from_slice(&data[..headers]);
        let mut mapped = Vec::new();
        for s in file.section_table().iter() {
            let va = s.virtual_address.get(LE) as usize;
            let name = s.raw_name();
            let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            mapped.push(Section {
                name: String::from_utf8_lossy(&name[..end]).into_owned(),
                addr: base + va,
                len: (s.virtual_size.get(LE) as usize).min(size.saturating_sub(va)),
                characteristics: s.characteristics.get(LE),
            });
            let (off, len) = s.pe_file_range();
            let (off, len) = (off as usize, len as usize);
            let src = data
                .get(off..off + len)
                .ok_or("section past the end of the file")?;
            let dst = mem
                .get_mut(va..va + len)
                .ok_or("section past SizeOfImage")?;
            dst.copy_from_slice(src);
        }
        let delta = (base as u64).wrapping_sub(opt.image_base());
        let dirs = file.data_directories();
        let sections = file.section_table();
        if let Some(mut blocks) = dirs
            .relocation_blocks(data, &sections)
            .map_err(|e| format!("relocations: {e}"))?
        {
            while let Some(block) = blocks.next().map_err(|e| format!("relocations: {e}"))? {
                for r in block {
                    match r.typ {
                        pe::IMAGE_REL_BASED_ABSOLUTE => {}
                        pe::IMAGE_REL_BASED_DIR64 => {
                            let at = r.virtual_address as usize;
                            let slot =
                                mem.get_mut(at..at + 8).ok_or("relocation past the image")?;
                            let v = u64::from_le_bytes(slot.try_into().map_err(|_| "reloc")?);
                            slot.copy_from_slice(&v.wrapping_add(delta).to_le_bytes());
                        }
                        t => return Err(format!("relocation type {t} not supported")),
                    }
                }
            }
        }
        let mut imports = Vec::new();
        if let Some(table) = file.import_table().map_err(|e| format!("imports: {e}"))? {
            let mut descs = table.descriptors().map_err(|e| format!("imports: {e}"))?;
            while let Some(d) = descs.next().map_err(|e| format!("imports: {e}"))? {
                let module = String::from_utf8_lossy(
                    table
                        .name(d.name.get(LE))
                        .map_err(|e| format!("imports: {e}"))?,
                )
                .to_ascii_lowercase();
                let lookup = match d.original_first_thunk.get(LE) {
                    0 => d.first_thunk.get(LE),
                    x => x,
                };
                let mut thunks = table.thunks(lookup).map_err(|e| format!("imports: {e}"))?;
                let mut iat = d.first_thunk.get(LE) as usize;
                while let Some(t) = thunks
                    .next::<pe::ImageNtHeaders64>()
                    .map_err(|e| format!("imports: {e}"))?
                {
                    let name = match table
                        .import::<pe::ImageNtHeaders64>(t)
                        .map_err(|e| format!("imports: {e}"))?
                    {
                        object::read::pe::Import::Name(_, n) => {
                            String::from_utf8_lossy(n).into_owned()
                        }
                        object::read::pe::Import::Ordinal(o) => format!("#{o}"),
                    };
                    imports.push(Import {
                        module: module.clone(),
                        name,
                        iat: base + iat,
                    });
                    iat += 8;
                }
            }
        }
        let exports = dirs
            .get(pe::IMAGE_DIRECTORY_ENTRY_EXPORT)
            .map(|d| exports_of(mem, base, d.virtual_address.get(LE) as usize))
            .unwrap_or_default();
        let mut functions = Vec::new();
        if let Some(d) = dirs.get(pe::IMAGE_DIRECTORY_ENTRY_EXCEPTION) {
            let (rva, len) = (d.virtual_address.get(LE) as usize, d.size.get(LE) as usize);
            let pdata = mem
                .get(rva..rva + len)
                .ok_or("exception directory past the image")?;
            for f in pdata.chunks_exact(12) {
                let start = u32::from_le_bytes([f[0], f[1], f[2], f[3]]) as usize;
                let end = u32::from_le_bytes([f[4], f[5], f[6], f[7]]) as usize;
                if start < end && end <= size {
                    functions.push((base + start, base + end));
                }
            }
        }
        functions.sort_unstable();
        functions.dedup();
        let specials = match first {
            Some(f) => f
                .specials
                .iter()
                .map(|&(at, len, s)| (at - f.base + base, len, s))
                .collect(),
            None => specials_in(&file.section_table(), mem, base, &functions)?,
        };
        Ok(Self {
            base,
            size,
            entry: base + opt.address_of_entry_point() as usize,
            imports,
            specials,
            functions,
            exports,
            sections: mapped,
        })
    }

    /// Writes `addr` into the IAT entry of import `i`.
    pub fn bind(&self, i: &Import, addr: usize) {
        // SAFETY: `iat` is an 8-byte IAT entry inside the mapped image (from its import table).
        unsafe { (i.iat as *mut u64).write_unaligned(addr as u64) };
    }
}

/// The instructions the emulator must see to in the image mapped at `base` (`mem`, with
/// section table `table`, whose `.pdata` functions are `functions`), by address.
fn specials_in(
    table: &SectionTable<'_>,
    mem: &[u8],
    base: usize,
    functions: &[(usize, usize)],
) -> Result<Vec<(usize, u32, Special)>, String> {
    let size = mem.len();
    // Functions from .pdata, and every executable section swept linearly as well: a leaf
    // function without a stack frame has no unwind entry, and the compiler places no data
    // in code sections on x64 (jump tables are in .rdata).
    let mut ranges = functions.to_vec();
    for s in table.iter() {
        if s.characteristics.get(LE) & pe::IMAGE_SCN_MEM_EXECUTE != 0 {
            let va = s.virtual_address.get(LE) as usize;
            let len = (s.virtual_size.get(LE) as usize).min(size.saturating_sub(va));
            ranges.push((base + va, base + va + len));
        }
    }
    let mut specials = Vec::new();
    for &(start, end) in &ranges {
        let code = &mem[start - base..end - base];
        let mut dec =
            iced_x86::Decoder::with_ip(64, code, start as u64, iced_x86::DecoderOptions::NONE);
        while dec.can_decode() {
            let i = dec.decode();
            let special = match i.mnemonic() {
                iced_x86::Mnemonic::Pause => Some(Special::Pause),
                iced_x86::Mnemonic::Mov if i.op0_register() == iced_x86::Register::CR8 => {
                    Some(Special::WriteCr8 {
                        reg: uc_reg(i.op1_register())
                            .ok_or("mov cr8 from an unexpected register")?,
                    })
                }
                iced_x86::Mnemonic::Mov if i.op1_register() == iced_x86::Register::CR8 => {
                    Some(Special::ReadCr8 {
                        reg: uc_reg(i.op0_register())
                            .ok_or("mov to an unexpected register from cr8")?,
                    })
                }
                _ => None,
            };
            if let Some(s) = special {
                specials.push((i.ip() as usize, i.len() as u32, s));
            }
        }
    }
    specials.sort_unstable_by_key(|s| s.0);
    specials.dedup_by_key(|s| s.0);
    Ok(specials)
}
