//! libFuzzer entry for the `vfu_backend` target; the logic is rvgpu_fuzz::vfu_backend
//! (fuzz/targets).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rvgpu_fuzz::vfu_backend::run(data));
