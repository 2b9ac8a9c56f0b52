//! The cost of giving a process memory under the GpuMmu model: one
//! `D3DKMTCreateAllocation2` (the KMD's `DxgkDdiCreateAllocation`, VidMm's placement, the page
//! tables written through `DxgkDdiBuildPagingBuffer(UPDATEPAGETABLE)` on the paging node, and
//! VidMm's check walk) followed by its destruction (UPDATEPAGETABLE of invalid entries, FLUSHTLB,
//! `DxgkDdiDestroyAllocation`), for 4 KiB, 64 KiB and 2 MiB, in one step-mode machine.
//!
//! Printed: microseconds per create + destroy and the ratio to the 4 KiB case, measured in
//! the same run, interleaved (one round = one of each size, so machine load hits all alike).
//! The figure includes the emulated GPU running the paging buffers and the simulated OS; it is
//! the cost of the whole path here, not the driver's share (measured apart).
//! `cargo bench -p rvgpu-simos --bench vidmm_map` (`-- --test`: a few rounds only).

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::time::{Duration, Instant};

use rvgpu_simos::{MachineConfig, Mode};
use rvgpu_umd::kmt::Kmt;

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let rounds = if quick { 3 } else { 200 };
    let m = started(MachineConfig::single(Mode::Step));
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let sizes = [4u64 << 10, 64 << 10, 2 << 20];
    let mut total = [Duration::ZERO; 3];
    for _ in 0..rounds {
        for (i, size) in sizes.iter().enumerate() {
            let t = Instant::now();
            let a = okk(&m, k.create_allocation(*size));
            okk(&m, k.destroy_allocation(a.handle));
            total[i] += t.elapsed();
        }
    }
    ok(&m, m.exit_process(&p));
    no_fault(&m);
    let per = |i: usize| total[i].as_secs_f64() * 1e6 / f64::from(rounds);
    println!("vidmm_map: create + map + unmap + destroy, {rounds} rounds");
    for (i, size) in sizes.iter().enumerate() {
        println!(
            "  {:>7} KiB: {:>9.1} us  ({:.2}x the 4 KiB case)",
            size >> 10,
            per(i),
            per(i) / per(0)
        );
    }
}
