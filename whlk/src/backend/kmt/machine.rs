//! The simulated test machine the D3DKMT and DLL backends run on: brought up the way PnP
//! brings up a Windows test machine, with the run's device (`--device`).

use std::sync::RwLock;

use rvgpu_simos::{Machine, MachineConfig, Mode};

use crate::backend::common::Failure;
use crate::backend::config::{ExecMode, SessionConfig};
use crate::backend::device::DeviceSettings;
use crate::backend::sim::{failure, load_driver_as, machine_config};

/// The device every simulated test machine has for the whole run (`--device`), as a test
/// machine's `rvgpu-vfu` is started once with its options: `None` for its defaults.
static DEVICE: RwLock<Option<(DeviceSettings, Option<u64>)>> = RwLock::new(None);

/// Makes `device` (and VRAM of `vram_mib` MiB, if given) the device of every machine this
/// platform builds from now on, as `rvgpu-vfu`'s options make the test machine's.
pub fn set_device(device: DeviceSettings, vram_mib: Option<u64>) {
    if let Ok(mut d) = DEVICE.write() {
        *d = Some((device, vram_mib));
    }
}

/// The device [`set_device`] chose.
pub fn device() -> (DeviceSettings, Option<u64>) {
    DEVICE
        .read()
        .ok()
        .and_then(|d| *d)
        .unwrap_or((DeviceSettings::default(), None))
}

/// A machine as PnP leaves a Windows test machine for `config`: the driver loaded and every
/// adapter started, threaded (a real machine runs its GPU, interrupts and DPCs on their own).
/// Also whether each adapter is render-only (no sources, no children).
pub(crate) fn started_machine(config: &SessionConfig) -> Result<(Machine, Vec<bool>), Failure> {
    // The device is the run's, whatever the case asks: the backend checks the case's wish
    // against it (`KmtSession::check_device`), as it does on a test machine.
    let (device, vram_mib) = device();
    let config = SessionConfig {
        doorbells: Some(device.doorbells),
        min_doorbells: None,
        max_doorbells: None,
        global_doorbell: device.global_doorbell,
        engines: Some(device.engines),
        ..config.clone()
    };
    let (m, starts) = machine_with_vram(&config, false, vram_mib)?;
    Ok((m, starts.into_iter().collect::<Result<_, _>>()?))
}

/// [`started_machine`] that keeps each adapter's start result (render-only, or why PnP could
/// not start it) rather than failing on the first.
/// Threaded, unless `stepped` and `config` asks for step mode (the DLL backend, whose
/// application runs on the harness's thread and drives a step-mode machine in its waits).
#[cfg(target_os = "linux")]
pub(crate) fn machine_after_starts(
    config: &SessionConfig,
    stepped: bool,
) -> Result<(Machine, Vec<Result<bool, Failure>>), Failure> {
    machine_with_vram(config, stepped, None)
}

/// [`machine_after_starts`] with `vram_mib` MiB of VRAM on each device (`None`: the default).
fn machine_with_vram(
    config: &SessionConfig,
    stepped: bool,
    vram_mib: Option<u64>,
) -> Result<(Machine, Vec<Result<bool, Failure>>), Failure> {
    let mode = if stepped && config.mode == ExecMode::Step {
        ExecMode::Step
    } else {
        ExecMode::Threaded
    };
    let mut mc: MachineConfig = machine_config(&SessionConfig {
        mode,
        ..config.clone()
    });
    if let Some(mib) = vram_mib {
        for a in &mut mc.adapters {
            a.device.vram_size = mib.saturating_mul(1 << 20);
        }
    }
    mc.mode = match mode {
        ExecMode::Step => Mode::Step,
        ExecMode::Threaded => Mode::Threaded,
    };
    // The test machine as the runbook's tester configures it (docs/test-machine.md): the
    // KMD's test hooks on (`TestHooks` = 1 in the adapter's software key, which the INF never
    // writes), and hardware scheduling as `HwSchMode` has it for the whole run (`crate::os`;
    // only a backend that builds its machine per case also honours the case's wish).
    for a in &mut mc.adapters {
        a.software_key.values.push((
            String::new(),
            rvgpu_hw::testhooks::TEST_HOOKS_VALUE.into(),
            rvgpu_simos::base::regkey::RegValue::dword(1),
        ));
    }
    let mut m = Machine::new(mc);
    // A misbehaving driver reaches here only through a backend with `FaultInjection`.
    load_driver_as(&mut m, config.misbehaviour)?;
    let starts = (0..m.adapter_count())
        .map(|i| {
            m.start_adapter(i)
                .map(|info| info.sources == 0 && info.children == 0)
                .map_err(failure)
        })
        .collect();
    Ok((m, starts))
}
