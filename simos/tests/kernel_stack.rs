//! `rvgpu.sys` on a kernel stack: a thread's kernel stack on x64 Windows is 24 KiB
//! (`KERNEL_STACK_SIZE` 0x6000, `ntddk.h`), shared with the frames of Dxgkrnl and the
//! kernel below and above each DDI. The driver's share is bounded at half of it, and no
//! function in the image may need `__chkstk` (a frame of a page or more: the compiler then
//! probes each page, and a kernel stack's guard page is not grown on demand as a user
//! thread's is; "Kernel stack overflow" and `__chkstk` in Microsoft's "x64 stack usage" /
//! "x64 prolog and epilog" pages).

mod common;

use common::*;
use object::{Object, ObjectSection};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_simos::pe::{build_image, cpu, DriverBuild};
use rvgpu_simos::{MachineConfig, Mode};
use rvgpu_umd::kmt::Kmt;
use rvgpu_umd::submit::{KernelQueue, UserQueue};

/// The driver's share of the 24 KiB kernel stack: half, leaving the rest to Dxgkrnl's frames
/// and the kernel's (interrupt and DPC dispatch, the callbacks the driver makes).
const DRIVER_STACK_BUDGET: usize = 12 * 1024;
/// The largest frame a function may reserve without `__chkstk` (LLVM's and MSVC's probe
/// size: one page).
const PAGE: u32 = 4096;

#[test]
fn kernel_stack_every_ddi_call_stays_within_half_the_24_kib_kernel_stack() {
    // The test-signed package, installed as a user installs it.
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.driver = DriverBuild::Pe(None);
    let m = started(cfg);
    // A workload that reaches the DDIs of both submission paths, fences and teardown.
    one_user_mode_submission(&m);
    let p = ok(&m, m.create_process(0));
    {
        let k = m.kmt(&p);
        let t = okk(&m, k.create_allocation(4096));
        let mut q = okk(&m, KernelQueue::new(k, &config(0)));
        submit_wait(&m, &mut q, &[fill(&t, 0, 7)]);
        let mut u = okk(&m, UserQueue::new(k, &config(0)));
        submit_wait(&m, &mut u, &[fill(&t, 8, 9)]);
        let f = okk(&m, k.create_shareable_native_fence(0));
        let nt = okk(&m, k.share_native_fence(f.kmt));
        okk(&m, k.close_nt_handle(nt));
        okk(&m, k.destroy_native_fence(f.kmt));
        let (h, _) = okk(&m, k.create_monitored_fence(0));
        okk(&m, k.signal_fence_from_cpu(h, 1));
        okk(&m, k.destroy_monitored_fence(h));
    }
    exits_clean(&m, &p);

    let img = m.pe_image().expect("the machine runs the image");
    let depths = cpu::deepest_stacks();
    let mut rows: Vec<(&str, usize)> = DRIVER_INITIALIZATION_DATA::SLOT_NAMES
        .iter()
        .enumerate()
        .filter_map(|(id, name)| {
            let d = depths.get(&img.code_address(id)?)?;
            Some((*name, d.deepest))
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (name, bytes) in &rows {
        eprintln!("{name:<44} {bytes:>6} bytes");
    }
    assert!(rows.len() >= 20, "too few DDIs measured: {rows:?}");
    let (name, deepest) = rows[0];
    eprintln!("deepest DDI: {name}, {deepest} bytes of {DRIVER_STACK_BUDGET}");
    assert!(
        deepest <= DRIVER_STACK_BUDGET,
        "{name} used {deepest} bytes of stack, over the driver's {DRIVER_STACK_BUDGET}"
    );
}

/// The frame each function of the image reserves, from its x64 unwind information
/// (`.pdata` RUNTIME_FUNCTION entries, UNWIND_INFO codes: Microsoft's "x64 exception
/// handling"): pushes, `UWOP_ALLOC_SMALL` and `UWOP_ALLOC_LARGE`. `(function RVA, bytes)`.
fn frames(data: &[u8]) -> Vec<(u32, u32)> {
    let file = object::File::parse(data).expect("rvgpu.sys parses");
    let pdata = file.section_by_name(".pdata").expect("a .pdata section");
    let base = file.relative_address_base();
    let read_rva = |rva: u32| -> Option<&[u8]> {
        file.sections().find_map(|s| {
            let start = s.address().checked_sub(base)?;
            let off = u64::from(rva).checked_sub(start)?;
            let bytes = s.data().ok()?;
            bytes.get(usize::try_from(off).ok()?..)
        })
    };
    let entries = pdata.data().expect(".pdata bytes");
    let mut out = Vec::new();
    for e in entries.chunks_exact(12) {
        let begin = u32::from_le_bytes(e[0..4].try_into().unwrap());
        let info = u32::from_le_bytes(e[8..12].try_into().unwrap());
        if begin == 0 {
            continue;
        }
        let u = read_rva(info & !1).expect("UNWIND_INFO inside a section");
        let count = usize::from(u[2]);
        let codes: Vec<u16> = (0..count)
            .map(|i| u16::from_le_bytes([u[4 + 2 * i], u[5 + 2 * i]]))
            .collect();
        let (mut bytes, mut i) = (0u32, 0usize);
        while i < codes.len() {
            let op = (codes[i] >> 8) & 0xF;
            let info = u32::from(codes[i] >> 12);
            let slots = match op {
                0 => {
                    bytes += 8; // UWOP_PUSH_NONVOL
                    1
                }
                1 if info == 0 => {
                    bytes += u32::from(codes[i + 1]) * 8; // UWOP_ALLOC_LARGE, size / 8
                    2
                }
                1 => {
                    bytes += u32::from(codes[i + 1]) | u32::from(codes[i + 2]) << 16;
                    3
                }
                2 => {
                    bytes += info * 8 + 8; // UWOP_ALLOC_SMALL
                    1
                }
                4 | 8 => 2, // UWOP_SAVE_NONVOL, UWOP_SAVE_XMM128
                5 | 9 => 3, // their _FAR forms
                10 => {
                    bytes += if info == 0 { 40 } else { 48 }; // UWOP_PUSH_MACHFRAME
                    1
                }
                _ => 1, // UWOP_SET_FPREG, UWOP_EPILOG
            };
            i += slots;
        }
        out.push((begin, bytes));
    }
    out
}

#[test]
fn kernel_stack_no_function_of_the_image_needs_chkstk() {
    let image = build_image().unwrap_or_else(|e| panic!("{e}"));
    let data = std::fs::read(&image).expect("rvgpu.sys");
    let file = object::File::parse(&*data).expect("rvgpu.sys parses");
    // Not imported, not exported, and no symbol of that name.
    let imports = file.imports().expect("imports");
    assert!(
        imports.iter().all(|i| !i.name().ends_with(b"chkstk")),
        "rvgpu.sys imports __chkstk"
    );
    // rvgpu.sys has no export directory (object reports it as an error): nothing exported.
    let exports = file.exports().unwrap_or_default();
    assert!(exports.iter().all(|e| !e.name().ends_with(b"chkstk")));
    use object::ObjectSymbol;
    assert!(file
        .symbols()
        .all(|s| !s.name().unwrap_or("").ends_with("chkstk")));
    // No frame the compiler would have had to probe.
    let frames = frames(&data);
    assert!(
        frames.len() > 100,
        "only {} functions unwound",
        frames.len()
    );
    let (rva, largest) = frames.iter().copied().max_by_key(|f| f.1).unwrap_or((0, 0));
    eprintln!(
        "{} functions; the largest frame is {largest} bytes (function at RVA {rva:#x})",
        frames.len()
    );
    let probed: Vec<_> = frames.iter().filter(|f| f.1 >= PAGE).collect();
    assert!(
        probed.is_empty(),
        "functions whose frame needs __chkstk (RVA, bytes): {probed:x?}"
    );
}
