//! rvgpu-fuzz: the logic of rvgpu's fuzz targets (docs/fuzzing.md).
//!
//! The cargo-fuzz project in `fuzz/` wraps each [`Target`] in a thin `fuzz_target!`; the
//! integration test `replay_corpora` runs every committed corpus file (`fuzz/corpus/<target>/`)
//! through the same functions, so `cargo test` catches regressions without the fuzzer. Every
//! invariant is an assertion: a violation is a panic, which libFuzzer reports as a crash.
//!
//! Targets: [`gpu_ring`] (device + command decoder), [`gpu_device`] (the device under
//! arbitrary registers, user-mode queues and page tables), [`ddi`] (DDIs with user-mode private
//! data through the simulated OS), [`dma_buffer`] (a process's DMA buffer on a kernel-mode queue
//! and a node context), [`kmd_events`] (event ring and fence logs with arbitrary
//! GPU-written contents), [`umd_capi`] (the UMD's C API), [`vfu_backend`] (the vfio-user
//! server's message handling, as a hostile client drives it).

pub mod commands;
pub mod ddi;
pub mod dma_buffer;
pub mod gpu_device;
pub mod gpu_ring;
pub mod input;
pub mod kmd_events;
pub mod step_device;
pub mod umd_capi;
pub mod vfu_backend;
pub mod world;

/// A fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Its name: the `fuzz_targets/<name>.rs` file and the `fuzz/corpus/<name>/` directory.
    pub name: &'static str,
    /// Runs one input; panics on a violated invariant.
    pub run: fn(&[u8]),
    /// Hand-made seed inputs (name, bytes).
    pub seeds: fn() -> Vec<(String, Vec<u8>)>,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "gpu_ring",
        run: gpu_ring::run,
        seeds: gpu_ring::seeds,
    },
    Target {
        name: "gpu_device",
        run: gpu_device::run,
        seeds: gpu_device::seeds,
    },
    Target {
        name: "ddi",
        run: ddi::run,
        seeds: ddi::seeds,
    },
    Target {
        name: "dma_buffer",
        run: dma_buffer::run,
        seeds: dma_buffer::seeds,
    },
    Target {
        name: "kmd_events",
        run: kmd_events::run,
        seeds: kmd_events::seeds,
    },
    Target {
        name: "umd_capi",
        run: umd_capi::run,
        seeds: umd_capi::seeds,
    },
    Target {
        name: "vfu_backend",
        run: vfu_backend::run,
        seeds: vfu_backend::seeds,
    },
];
