//! Bringing the GPU up and down over MMIO (docs/hardware.md "Bring-up").
//!
//! Nothing here knows about Dxgkrnl; `adapter` calls it with memory it obtained from the OS.

use rvgpu_hw::addr::BusAddr;
use rvgpu_hw::regs::{self, Caps, Config, IntCause};

use crate::mmio::Regs;
use crate::platform::Platform;

/// What the driver learnt from the device's identification registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceIdentity {
    pub version: u32,
    pub caps: Caps,
    pub config: Config,
    pub vram_size: u64,
    /// Bytes of VRAM the CPU reaches through BAR4 (`VRAM_VISIBLE`, at most `vram_size`).
    pub vram_visible: u64,
    pub clock_hz: u32,
}

/// Why the device cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeError {
    /// The ID register does not read "RVGP" (not our device, or it is gone: all-ones).
    BadId(u32),
    /// A major version this driver does not know.
    UnsupportedVersion(u32),
    /// The configuration registers make no sense (no engines, too many, no doorbells).
    BadConfig(u32),
    /// Capabilities this driver requires are missing.
    MissingCaps(u32),
}

/// Capabilities the driver cannot work without. 64-bit atomic fence writes (NF-01): the driver
/// does not implement the OS's 32-bit wrap-around rules for `No64BitAtomics` GPUs (MF-02), so it
/// refuses such a device rather than mis-report it.
pub const REQUIRED_CAPS: Caps = Caps::ATOMIC64;

/// Interrupt causes the driver handles.
pub const ENABLED_CAUSES: IntCause = IntCause::all();

/// Reads and checks the identification registers.
pub fn probe<P: Platform>(regs: &Regs<P>) -> Result<DeviceIdentity, ProbeError> {
    let id = regs.read::<regs::Id>().raw();
    if id != regs::ID_VALUE {
        return Err(ProbeError::BadId(id));
    }
    let version = regs.read::<regs::Version>();
    if version.major() != regs::Version::new(regs::VERSION_VALUE).major() {
        return Err(ProbeError::UnsupportedVersion(version.raw()));
    }
    let version = version.raw();
    let raw_config = regs.read::<regs::ConfigReg>().raw();
    let config = Config::from_reg(raw_config);
    let engines_ok = (1..=regs::ENGINE_MAX).contains(&config.engines);
    let doorbells_ok = (1..=regs::DOORBELL_MAX).contains(&config.doorbells);
    if !engines_ok || !doorbells_ok {
        return Err(ProbeError::BadConfig(raw_config));
    }
    let raw_caps = regs.read::<regs::CapsReg>().raw();
    let caps = Caps::from_bits_truncate(raw_caps);
    if !caps.contains(REQUIRED_CAPS) {
        return Err(ProbeError::MissingCaps(raw_caps));
    }
    let vram_size = regs.read::<regs::VramSize>().raw();
    Ok(DeviceIdentity {
        version,
        caps,
        config,
        vram_size,
        vram_visible: regs.read::<regs::VramVisible>().raw().min(vram_size),
        clock_hz: regs.read::<regs::ClockFreq>().raw(),
    })
}

/// Registers system-memory window `k` (the device's DMA allow-list). Returns false if `k` is
/// out of range.
pub fn set_window<P: Platform>(regs: &Regs<P>, k: usize, base: BusAddr, size: u64) -> bool {
    let (Some(_), Ok(k)) = (regs::syswin_regs(k), u32::try_from(k)) else {
        return false;
    };
    // Size last: a window is live only once it has a size, and by then its base is right.
    regs.write_at(k, regs::SyswinSize::new(0));
    regs.write_at(k, regs::SyswinBase::new(base.get()));
    regs.write_at(k, regs::SyswinSize::new(size));
    true
}

/// Quiesces the device: interrupts off, event posting off, every runlist empty, all windows
/// closed. Used at stop and before a start reprograms everything.
pub fn quiesce<P: Platform>(regs: &Regs<P>, engines: u32) {
    regs.write(regs::IntEnable::new(0));
    regs.write(regs::EventRingCtrl::new(0));
    regs.write(regs::EventWbAddr::new(0));
    for e in 0..engines {
        regs.write_at(e, regs::RunlistCount::new(0));
        regs.write_at(e, regs::RunlistCommit::new(1));
    }
    for k in 0..regs::SYSWIN_COUNT {
        set_window(regs, k, BusAddr::NULL, 0);
    }
    // Whatever was pending belongs to the previous life of the device.
    regs.write(regs::IntAck::new(u32::MAX));
}

/// Unbinds every physical doorbell (`DOORBELL_BIND[i]` = `NO_QUEUE`): at start, nothing of a
/// previous life rings; at stop, nothing rings queues that are gone.
pub fn unbind_doorbells<P: Platform>(regs: &Regs<P>, doorbells: u32) {
    for i in 0..doorbells {
        regs.write_at(i, regs::DoorbellBind::new(rvgpu_hw::queue::NO_QUEUE));
    }
}

/// Turns on the interrupt causes the driver handles.
pub fn enable_interrupts<P: Platform>(regs: &Regs<P>) {
    regs.write(regs::IntEnable::new(ENABLED_CAUSES.bits()));
}
