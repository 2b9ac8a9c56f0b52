//! The simulated ntoskrnl's routines called as the image's stubs call them, without a machine
//! (a bug check goes to the orphan list).

use std::sync::{Arc, Barrier};

use super::*;
use crate::adapter::context::orphan_bugchecks;

struct Image(KernelState);

impl Instance for Image {
    fn kernel(&self) -> &KernelState {
        &self.0
    }

    fn dxgk_initialize_stub(&self) -> usize {
        0
    }
}

fn args(a: &[u64]) -> [u64; 12] {
    let mut w = [0; 12];
    w[..a.len()].copy_from_slice(a);
    w
}

/// The bug checks 0xC2/0x46 (free of no live allocation) raised so far for block `p`.
fn bad_frees_of(p: u64) -> usize {
    orphan_bugchecks()
        .iter()
        .filter(|b| b.code == BAD_POOL_CALLER && b.params[..2] == [BAD_POOL_FREE_BAD_ADDRESS, p])
        .count()
}

/// Two threads freeing the same pool block at once: it is freed once and the other free is
/// BAD_POOL_CALLER (0xC2/0x46), as on Windows; the block is never released twice (a second
/// release would be a double free of host memory).
#[test]
fn a_pool_block_two_threads_free_at_once_is_freed_once_and_one_free_bugchecks() {
    const TAG: u64 = u32::from_le_bytes(*b"Rvgp") as u64;
    const ROUNDS: usize = 200;
    let img: Arc<dyn Instance> = Arc::new(Image(KernelState::default()));
    // Timers the image set up elsewhere: each free looks through them between finding the
    // block and taking it out, which widens the window two racing frees meet in.
    for i in 0..4096u64 {
        timer(&img, 0x1000 + i * 64);
    }
    for _ in 0..ROUNDS {
        let StubResult::Return(p) = ex_allocate_pool2(&img, &args(&[POOL_FLAG_NON_PAGED, 64, TAG]))
        else {
            panic!("ExAllocatePool2 returns");
        };
        assert_ne!(p, 0);
        let before = bad_frees_of(p);
        let start = Barrier::new(2);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    start.wait();
                    ex_free_pool_with_tag(&img, &args(&[p, TAG]));
                });
            }
        });
        assert_eq!(
            bad_frees_of(p) - before,
            1,
            "one of the two frees bug-checks"
        );
        assert_eq!(lock(&img.kernel().pool).len(), 0, "the block is freed");
    }
}
