//! libFuzzer entry for the `kmd_events` target; the logic is rvgpu_fuzz::kmd_events (fuzz/targets).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rvgpu_fuzz::kmd_events::run(data));
