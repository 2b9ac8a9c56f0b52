//! libFuzzer entry for the `umd_capi` target; the logic is rvgpu_fuzz::umd_capi (fuzz/targets).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rvgpu_fuzz::umd_capi::run(data));
