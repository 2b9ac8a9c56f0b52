//! libFuzzer entry for the `gpu_ring` target; the logic is rvgpu_fuzz::gpu_ring (fuzz/targets).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rvgpu_fuzz::gpu_ring::run(data));
