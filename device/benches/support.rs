//! What the device's criterion benches share.

use std::time::Duration;

use criterion::Criterion;

/// Criterion with 20 samples, `warm_up` and `measurement` times, then the command line's
/// options.
pub fn criterion(warm_up: Duration, measurement: Duration) -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(warm_up)
        .measurement_time(measurement)
        .configure_from_args()
}
