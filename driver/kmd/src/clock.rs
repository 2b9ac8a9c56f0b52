//! `DxgkDdiCalibrateGpuClock` (DISPATCH_LEVEL,
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_calibrategpuclock>):
//! one GPU clock sample paired with one CPU (QPC) sample, which Dxgkrnl uses to map GPU
//! timestamps (native fence log entries, LOG-03/LOG-06) to CPU time (docs/logs.md#kmd).
//!
//! Every engine and the context-management processor read the same `GPU_CLOCK`
//! (hardware.md 11), so the answer does not depend on the node or on
//! `DXGK_GPUCLOCKDATA_FLAGS::ContextManagementProcessor`. The GPU read is bracketed by two
//! QPC reads, three times; the tightest bracket wins and its midpoint is the CPU time. The
//! page asks for the two counters "as close to simultaneously as possible".

use rvgpu_ddi::adapter::DXGKARG_CALIBRATEGPUCLOCK;
use rvgpu_hw::regs;

use crate::adapter::Adapter;
use crate::platform::Platform;
use crate::status::{self, Status};

/// Bracketing rounds per call.
pub const ROUNDS: usize = 3;

/// The best of `ROUNDS` samples: `qpc` returns the CPU counter, `gpu` the GPU counter.
/// Returns `(gpu, cpu midpoint, bracket)`.
pub fn sample(mut qpc: impl FnMut() -> u64, mut gpu: impl FnMut() -> u64) -> (u64, u64, u64) {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..ROUNDS {
        let q0 = qpc();
        let g = gpu();
        let q1 = qpc();
        // A counter that went backwards (it must not) gives a zero-width bracket at q0.
        let width = q1.saturating_sub(q0);
        let mid = q0.saturating_add(width / 2);
        if best.is_none_or(|(_, _, w)| width < w) {
            best = Some((g, mid, width));
        }
    }
    best.unwrap_or((0, 0, 0))
}

/// DxgkDdiCalibrateGpuClock: `node` must be an engine of the adapter and `engine_ordinal` 0
/// (no linked adapters). STATUS_NOT_SUPPORTED if the platform has no CPU counter.
pub fn calibrate<P: Platform>(
    a: &Adapter<P>,
    node: u32,
    engine_ordinal: u32,
    out: &mut DXGKARG_CALIBRATEGPUCLOCK,
) -> Result<(), Status> {
    let live = a.started()?;
    live.node(node, engine_ordinal)?;
    if !live.regs.is_powered() {
        // Out of D0 GPU_CLOCK reads all-ones: no sample to give.
        return Err(status::INVALID_DEVICE_STATE);
    }
    let (_, hz) = P::query_performance_counter();
    if hz == 0 {
        return Err(status::NOT_SUPPORTED);
    }
    let (g, cpu, _) = sample(
        || P::query_performance_counter().0,
        || live.regs.read::<regs::GpuClock>().raw(),
    );
    *out = DXGKARG_CALIBRATEGPUCLOCK {
        GpuFrequency: u64::from(live.identity.clock_hz),
        GpuClockCounter: g,
        CpuClockCounter: cpu,
        // Read through the memory-mapped register, not a context management processor.
        Flags: Default::default(),
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`sample`] over scripted reads: the CPU counter before and after each round, and the
    /// GPU clock read in between.
    fn scripted(cpu: [u64; 6], gpu: [u64; 3]) -> (u64, u64, u64) {
        let (mut q, mut g) = (cpu.into_iter(), gpu.into_iter());
        sample(|| q.next().unwrap(), || g.next().unwrap())
    }

    #[test]
    fn calibration_keeps_the_tightest_bracket_and_its_midpoint() {
        // Rounds: [100, 130] g=5, [200, 210] g=6, [300, 340] g=7.
        let got = scripted([100, 130, 200, 210, 300, 340], [5, 6, 7]);
        assert_eq!(got, (6, 205, 10));
    }

    #[test]
    fn calibration_survives_a_counter_going_backwards() {
        let got = scripted([100, 90, 200, 260, 300, 390], [1, 2, 3]);
        assert_eq!(got, (1, 100, 0));
    }

    #[test]
    fn calibration_output_layout() {
        // d3dkmdt.h packs DXGK_GPUCLOCKDATA: three counters and Flags, no tail padding.
        assert_eq!(size_of::<DXGKARG_CALIBRATEGPUCLOCK>(), 28);
    }
}
