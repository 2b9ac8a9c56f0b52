//! The guest lock on hand-written code: locked updates and spin waits across processors.

use std::sync::Arc;

use super::*;
use crate::pe::image::Special;

/// Places `code` in a fresh arena range the processors map.
fn code(bytes: &[u8]) -> usize {
    let base = arena::alloc(bytes.len(), arena::Access::ReadWrite).expect("arena");
    // SAFETY: fresh read-write memory of at least `bytes.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base as *mut u8, bytes.len()) };
    register_range(base, bytes.len(), Range::Ram);
    base
}

/// Two processors incrementing one word with `lock inc` lose no update (they take turns
/// on the guest lock, yielding at each `pause`).
#[test]
fn processors_lose_no_locked_update() {
    // loop: lock inc qword [rcx]; pause; dec rdx; jnz loop; ret
    let f = code(&[
        0xF0, 0x48, 0xFF, 0x01, 0xF3, 0x90, 0x48, 0xFF, 0xCA, 0x75, 0xF5, 0xC3,
    ]);
    register_specials(Arc::from(vec![(f + 4, 2, Special::Pause)]));
    let word = Box::new(std::sync::atomic::AtomicU64::new(0));
    let at = word.as_ptr() as u64;
    const N: u64 = 20_000;
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(move || call(f, &[at, N]).expect("ran"));
        }
    });
    assert_eq!(word.load(std::sync::atomic::Ordering::SeqCst), 2 * N);
}

/// A processor spinning (with `pause`) on a flag that another processor sets ends: the
/// spinner never keeps the lock the setter needs.
#[test]
fn a_spin_on_another_processor_ends() {
    // loop: cmp qword [rcx], 0; jne done; pause; jmp loop; done: ret
    let spin = code(&[
        0x48, 0x83, 0x39, 0x00, 0x75, 0x04, 0xF3, 0x90, 0xEB, 0xF6, 0xC3,
    ]);
    register_specials(Arc::from(vec![(spin + 6, 2, Special::Pause)]));
    // mov qword [rcx], 1; ret
    let set = code(&[0x48, 0xC7, 0x01, 0x01, 0x00, 0x00, 0x00, 0xC3]);
    let flag = Box::new(std::sync::atomic::AtomicU64::new(0));
    let at = flag.as_ptr() as u64;
    std::thread::scope(|s| {
        let spinner = s.spawn(move || call(spin, &[at]).expect("ran"));
        std::thread::sleep(std::time::Duration::from_millis(50));
        call(set, &[at]).expect("ran");
        spinner.join().expect("the spinner ended");
    });
    assert_eq!(flag.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A stub whose routine answers its fifth argument (the first on the stack) and counts its
/// calls.
fn fifth_argument_stub() -> (Arc<Stubs>, usize, Arc<std::sync::atomic::AtomicU64>) {
    let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = calls.clone();
    let stubs = Stubs::new(1).expect("stub page");
    let at = stubs
        .add(
            "FifthArgument",
            Arc::new(move |w: &[u64; 12]| {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                StubResult::Return(w[4])
            }),
        )
        .expect("stub");
    (stubs, at, calls)
}

/// A stub called with a misaligned RSP gets its stack argument (read unaligned, where the
/// image put it).
#[test]
fn a_stub_called_with_a_misaligned_stack_gets_its_stack_argument() {
    let (stubs, stub, calls) = fifth_argument_stub();
    // sub rsp, 0x101; mov [rsp+0x20], r8; call rdx; add rsp, 0x101; ret
    let f = code(&[
        0x48, 0x81, 0xEC, 0x01, 0x01, 0x00, 0x00, 0x4C, 0x89, 0x44, 0x24, 0x20, 0xFF, 0xD2, 0x48,
        0x81, 0xC4, 0x01, 0x01, 0x00, 0x00, 0xC3,
    ]);
    let r = call(f, &[0, stub as u64, 0x1122_3344_5566_7788]);
    assert!(matches!(r, Ok(0x1122_3344_5566_7788)), "{r:?}");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    drop_stubs(&stubs);
}

/// A stub called with RSP where its stack arguments are not mapped (or their addresses wrap
/// past the top of the address space) is the page fault reading the first of them takes on
/// Windows, 0x50 at that address, and its routine does not run.
#[test]
fn a_stub_whose_stack_arguments_are_unmapped_is_a_page_fault_at_the_first() {
    let (stubs, stub, calls) = fifth_argument_stub();
    // mov rsp, rcx; jmp rdx
    let f = code(&[0x48, 0x89, 0xCC, 0xFF, 0xE2]);
    for (sp, first) in [(0x1000u64, 0x1028u64), (u64::MAX - 0xF, 0x18)] {
        let r = call(f, &[sp, stub as u64]);
        assert!(matches!(r, Err(Stop::Halted)), "{r:?}");
        let raised = crate::adapter::context::orphan_bugchecks();
        assert!(
            raised
                .iter()
                .any(|b| b.code == bugcheck::PAGE_FAULT_IN_NONPAGED_AREA
                    && b.params == [first, 0, stub as u64, 0]),
            "RSP {sp:#x}: {raised:?}"
        );
    }
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    drop_stubs(&stubs);
}
