//! Default instance parameters of the device (CONFIG, VRAM_SIZE, CLOCK_FREQ and model
//! timers). An instance may be configured otherwise; the registers always tell the truth.

/// Engines: compute and copy, so per-engine reset and dependent groups mean something.
pub const ENGINES: u32 = 2;
/// Physical doorbells: few enough that victimisation happens in ordinary tests (UM-02).
pub const DOORBELLS: u32 = 16;
/// Bytes of VRAM.
pub const VRAM_SIZE: u64 = 16 << 20;
/// GPU clock frequency in Hz (one tick = 10 ns).
pub const CLOCK_HZ: u32 = 100_000_000;
/// Ticks without progress on a HANG before the engine reports Hung (2 ms).
pub const HANG_DETECT_TICKS: u64 = 200_000;
