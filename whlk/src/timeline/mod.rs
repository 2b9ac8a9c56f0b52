//! The GPU timeline (docs/logs.md#the-gpu-timeline): native-fence operations of a run as a Chrome
//! trace-event JSON file that the Perfetto UI (<https://ui.perfetto.dev>) and
//! `chrome://tracing` open, plus an SVG picture of the same data for the README.
//!
//! The input is a [`Timeline`] per case: plain data (hardware queues, one [`FenceOp`] per
//! logged wait or signal, GPU clock [`Calibration`] samples, [`Marker`]s), so this module is
//! tested with synthetic data and knows nothing of the backend. The simulated backend fills it
//! from the OS's trace (`rvgpu_simos::state::sync::trace`: the UMD's "queued" events joined with the log
//! entries the OS drained, and the `DxgkDdiCalibrateGpuClock` samples).
//!
//! **Time.** CPU times are QPC ticks (`qpc_hz` per second); GPU times are GPU clock ticks,
//! mapped to QPC ticks through the calibration samples of their adapter (docs/logs.md#the-gpu-timeline): between two
//! samples linear interpolation (absorbs drift), before the first / after the last
//! extrapolation from the nearest sample with the sample's `qpc_hz / gpu_hz`. The file's `ts`
//! are microseconds since the earliest event of the whole file (float, ns precision).
//!
//! **File** (docs/logs.md#the-gpu-timeline, object form of the Trace Event Format):
//! - one trace "process" per hardware queue, with
//!   `pid = 1_000_000 · (group + 1) + 10_000 · adapter + queue_id`
//!   (group = the case's position in the file; docs/logs.md's `1000 · (adapter + 1) + queue_id`
//!   collides once queue ids reach 1000, which the KMD allows up to 4096), named
//!   `"<case> · HWQueue <id> · engine <node> · adapter <a>"` and sorted by that order;
//! - per operation an async pair `b`/`e` (`cat` `fence`, name `wait` or `signal`, its own
//!   `id`) from the CPU queued time to the GPU end time. Async events, because the boxes of
//!   one queue overlap without nesting, which `X`/`B`/`E` slices must not do (Perfetto issue
//!   4280). An end that maps before its queued time (calibration error) is clamped to the
//!   queued time and the box gets `args.clamped_us`: no negative durations;
//! - a `GPU` thread (tid 1) per queue: `X` slices for wait stalls `[observed, end]` (one queue
//!   executes one packet at a time, so they never overlap) and thread instants at each
//!   signal's end;
//! - instants (`s: "p"`) for operations without a GPU record (entry lost to an overflow, never
//!   drained) or without a queued event, with `args.reason`, and for [`Marker`]s;
//! - a counter on pid 1: the GPU clock's drift against the CPU clock since the first sample of
//!   each adapter, in µs;
//! - `otherData`: generator, `qpc_hz`, the cases, calibration count and mapping uncertainty.
//!
//! Events are sorted by `ts`, metadata first. The JSON is written by hand (no serde in the
//! harness); the unit tests parse it back with a small parser of their own.

mod json;
mod layout;
mod model;
mod svg;
#[cfg(test)]
mod tests;

pub use json::to_json;
pub use model::*;
pub use svg::to_svg;
