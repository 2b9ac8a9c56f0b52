//! The stub's parts that need no debugger: the register description and memory access.

use super::target::{description_for_tests, read_memory, write_memory};
use crate::pe::{arena, cpu};

/// The description lists every register of GDB's amd64 layout in `X86_64CoreRegs`' order
/// (57 of them), with the roles LLDB needs to unwind.
#[test]
fn description_lists_the_amd64_registers_in_order() {
    let xml = description_for_tests();
    let names: Vec<&str> = xml
        .split("<reg name=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .collect();
    assert_eq!(names.len(), 57, "{names:?}");
    assert_eq!(names.first(), Some(&"rax"));
    assert_eq!(names.get(16), Some(&"rip"));
    assert_eq!(names.get(17), Some(&"eflags"));
    assert_eq!(names.get(40), Some(&"xmm0"));
    assert_eq!(names.last(), Some(&"mxcsr"));
    for role in ["generic=\"pc\"", "generic=\"sp\"", "generic=\"fp\""] {
        assert!(xml.contains(role), "{role} missing");
    }
}

/// The debugger's memory reads never fault the process: an address nothing maps is an error,
/// a read running into an unmapped page is cut short there.
#[test]
fn memory_reads_from_the_debugger_never_fault() {
    let mut buf = [0u8; 16];
    assert!(read_memory(0, &mut buf).is_err());
    assert!(read_memory(u64::MAX - 7, &mut buf).is_err());
    let page = vec![0x5Au8; 4096];
    let at = page.as_ptr() as u64;
    assert_eq!(read_memory(at, &mut buf), Ok(16));
    assert_eq!(buf, [0x5A; 16]);
}

/// Places `code` in a fresh arena range the processors map.
fn code(bytes: &[u8]) -> usize {
    let base = arena::alloc(bytes.len(), arena::Access::ReadWrite).expect("arena");
    // SAFETY: fresh read-write memory of at least `bytes.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base as *mut u8, bytes.len()) };
    cpu::register_range(base, bytes.len(), cpu::Range::Ram);
    base
}

/// A debugger's patch of code that already ran is what runs next, on a processor that has
/// run other code too: the write makes the processors drop their translations.
#[test]
fn a_patch_to_code_that_already_ran_runs_patched() {
    // mov eax, 1; ret (twice: another range first, so the processor maps more than one)
    let other = code(&[0xB8, 1, 0, 0, 0, 0xC3]);
    let f = code(&[0xB8, 1, 0, 0, 0, 0xC3]);
    for at in [other, f, f] {
        assert_eq!(cpu::call(at, &[]).expect("ran"), 1);
    }
    // The immediate becomes 2, as the debugger's `M` packet writes it.
    write_memory(f as u64 + 1, &[2]).expect("the patch");
    for _ in 0..2 {
        assert_eq!(cpu::call(f, &[]).expect("ran"), 2);
    }
    assert_eq!(cpu::call(other, &[]).expect("ran"), 1);
}
