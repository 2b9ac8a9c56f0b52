//! The stub's parts that need no debugger: the register description and memory access.

use super::target::{description_for_tests, read_memory};

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
