//! What the device targets ([`crate::gpu_ring`], [`crate::gpu_device`]) share: a fresh
//! step-mode device per input with a canary page outside every window, and the driver-side
//! loop that runs it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_device::{Device, DeviceConfig, LatchLine, Memory, SysAlloc};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs;

/// The word the canary page holds.
const CANARY: u64 = 0xC0FF_EE00_DEAD_BEEF;

/// A fresh step-mode device with `vram` bytes of VRAM and hang detection within a fuzz
/// input's step budget (so hangs are exercised too): `(memory, device, window, canary)`, where
/// `window` is a `window`-byte system allocation for the device to reach (registering it is
/// the target's) and `canary` a page outside every window, filled with a pattern the device
/// must never write ([`assert_canary_intact`]).
pub fn fresh(vram: u64, window: u64) -> (Arc<Memory>, Arc<Device>, SysAlloc, SysAlloc) {
    let mem = Memory::new(vram);
    let cfg = DeviceConfig {
        vram_size: vram,
        hang_detect_ticks: 2_000,
        ..DeviceConfig::step()
    };
    let dev = Device::new(cfg, Arc::clone(&mem), LatchLine::new());
    let window = mem.alloc_system(window, 4096).expect("window");
    let canary = mem.alloc_system(4096, 4096).expect("canary");
    for w in canary.words() {
        w.store(CANARY, Ordering::Relaxed);
    }
    (mem, dev, window, canary)
}

/// Panics if the device wrote the canary page.
pub fn assert_canary_intact(canary: &SysAlloc) {
    for (i, w) in canary.words().iter().enumerate() {
        assert_eq!(
            w.load(Ordering::Relaxed),
            CANARY,
            "canary word {i} outside the system window was written"
        );
    }
}

/// What an ISR does: acknowledge, consume the event records.
pub fn service(dev: &Device) {
    let status = dev.read32(regs::INT_STATUS);
    dev.write32(regs::INT_ACK, status);
    let w = dev.read32(regs::EVENT_RING_WPTR);
    dev.write32(regs::EVENT_RING_RPTR, w);
}

/// Steps `dev` up to `n` passes, each only if `budget` grants it, servicing it every eighth
/// pass and after each idle one, and stops once the device did nothing for five passes in a
/// row (timers such as hang detection expire within two passes).
pub fn run_passes(dev: &Device, n: usize, mut budget: impl FnMut() -> bool) {
    let mut idle = 0;
    for i in 0..n {
        if !budget() {
            return;
        }
        let busy = dev.step();
        if i % 8 == 0 || !busy {
            service(dev);
        }
        idle = if busy { 0 } else { idle + 1 };
        if idle > 4 {
            break;
        }
    }
}
