//! libFuzzer entry for the `gpu_device` target; the logic is rvgpu_fuzz::gpu_device (fuzz/targets).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rvgpu_fuzz::gpu_device::run(data));
