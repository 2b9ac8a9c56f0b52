//! Register file: identification, configuration, scratch, width rules, device lost.
mod common;

use common::*;
use rvgpu_device::{DeviceConfig, Mode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs::{self, Caps, Config, DeviceStatus};

#[test]
fn identification_and_config() {
    let rig = Rig::step();
    let d = &rig.dev;
    assert_eq!(d.read32(regs::ID), regs::ID_VALUE);
    assert_eq!(d.read32(regs::VERSION), regs::VERSION_VALUE);
    let caps = Caps::from_bits_retain(d.read32(regs::CAPS));
    assert!(caps.contains(
        Caps::NATIVE_FENCE
            | Caps::ATOMIC64
            | Caps::FENCE_LOG
            | Caps::EXACT_FENCE_REPORT
            | Caps::OPTIMIZED_FENCE_IRQ
            | Caps::PER_ENGINE_RESET
            | Caps::IO_COHERENT
    ));
    assert!(!caps.contains(Caps::GLOBAL_DOORBELL));
    let cfg = Config::from_reg(d.read32(regs::CONFIG));
    assert_eq!((cfg.engines, cfg.doorbells), (2, 16));
    assert_eq!(d.read64(regs::VRAM_SIZE), 16 << 20);
    assert_eq!(d.read32(regs::CLOCK_FREQ), 100_000_000);
}

#[test]
fn scratch_and_width_rules() {
    let rig = Rig::step();
    let d = &rig.dev;
    d.write32(regs::SCRATCH, 0x1234_5678);
    assert_eq!(d.read32(regs::SCRATCH), 0x1234_5678);
    assert_eq!(
        d.read64(regs::SCRATCH),
        0x1234_5678,
        "64-bit read zero-extends"
    );
    let (b, _) = regs::syswin_regs(3).unwrap();
    d.write64(b, 0x1_2345_6000);
    assert_eq!(d.read32(b), 0x2345_6000);
    assert_eq!(d.read32(b + 4), 1, "high half at +4");
    d.write32(b + 4, 2);
    assert_eq!(d.read64(b), 0x2_2345_6000);
    assert_eq!(d.read32(0x3FC), 0, "unlisted offset");
    assert_eq!(d.read32(regs::SCRATCH + 1), 0, "unaligned");
}

#[test]
fn gpu_clock_is_monotonic_in_both_modes() {
    let rig = Rig::step();
    let a = rig.dev.read64(regs::GPU_CLOCK);
    rig.dev.step();
    let b = rig.dev.read64(regs::GPU_CLOCK);
    assert!(b > a);
    let rig = Rig::new(DeviceConfig {
        mode: Mode::Threaded,
        ..Default::default()
    });
    let mut last = 0;
    for _ in 0..1000 {
        let t = rig.dev.read64(regs::GPU_CLOCK);
        assert!(t >= last);
        last = t;
    }
}

#[test]
fn custom_config_is_reflected() {
    let rig = Rig::new(DeviceConfig {
        engines: 3,
        doorbells: 4,
        global_doorbell: true,
        exact_fence_report: false,
        optimized_fence_irq: false,
        per_engine_reset: false,
        io_coherent: false,
        vram_size: 1 << 20,
        clock_hz: 1_000_000,
        ..DeviceConfig::step()
    });
    let d = &rig.dev;
    let caps = Caps::from_bits_retain(d.read32(regs::CAPS));
    assert!(caps.contains(Caps::GLOBAL_DOORBELL));
    assert!(!caps.intersects(
        Caps::EXACT_FENCE_REPORT
            | Caps::OPTIMIZED_FENCE_IRQ
            | Caps::PER_ENGINE_RESET
            | Caps::IO_COHERENT
    ));
    assert_eq!(
        Config::from_reg(d.read32(regs::CONFIG)),
        Config {
            engines: 3,
            doorbells: 4
        }
    );
    assert_eq!(d.read64(regs::VRAM_SIZE), 1 << 20);
    assert_eq!(d.read32(regs::CLOCK_FREQ), 1_000_000);
    // Engine 3 does not exist: its block reads zero.
    assert_eq!(
        d.read32(regs::engine_reg(3, regs::engine::STATUS).unwrap()),
        0
    );
}

#[test]
fn device_lost_reads_all_ones_until_adapter_reset() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    rig.dev.lose_device();
    let d = &rig.dev;
    assert_eq!(d.read32(regs::ID), u32::MAX);
    assert_eq!(d.read64(regs::GPU_CLOCK), u64::MAX);
    assert!(
        DeviceStatus::from_bits_retain(d.read32(regs::DEVICE_STATUS)).contains(DeviceStatus::LOST)
    );
    d.write32(regs::SCRATCH, 5);
    rig.submit(&mut q, &[signal(f, 1, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(f.cv), 0, "nothing executes");
    assert!(rig.dev.doorbell_stats().ignored >= 1, "doorbell ignored");
    d.write32(regs::ADAPTER_RESET, 0x1234);
    assert_eq!(d.read32(regs::ID), u32::MAX, "wrong key ignored");
    d.write32(regs::ADAPTER_RESET, regs::ADAPTER_RESET_KEY);
    assert_eq!(d.read32(regs::DEVICE_STATUS), 0);
    assert_eq!(d.read32(regs::ID), regs::ID_VALUE);
    assert_eq!(d.read32(regs::SCRATCH), 0, "power-on value");
    assert_eq!(
        d.read64(regs::syswin_regs(0).unwrap().1),
        0,
        "windows cleared"
    );
}
