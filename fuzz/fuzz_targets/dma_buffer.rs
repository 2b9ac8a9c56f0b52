//! libFuzzer entry for the `dma_buffer` target; the logic is rvgpu_fuzz::dma_buffer (fuzz/targets).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rvgpu_fuzz::dma_buffer::run(data));
