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
