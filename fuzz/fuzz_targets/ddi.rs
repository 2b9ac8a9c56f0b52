//! libFuzzer entry for the `ddi` target; the logic is rvgpu_fuzz::ddi (fuzz/targets).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rvgpu_fuzz::ddi::run(data));
