//! rvgpu-whlk: a WHLK-style harness for rvgpu.
//!
//! Named cases ([`cases::all`]) run against a [`backend::Backend`]; the default backend is the
//! emulated GPU under the simulated OS ([`backend::sim::SimBackend`]). Beyond the adapter life
//! cycle a backend has capabilities ([`backend::Capability`], one trait each); a case declares
//! the ones it needs, and the runner skips it on a backend without one ([`runner::run_case`]).
//! `--requirement ID` selects the cases proving a requirement ([`runner::select_by`]). The
//! binary prints a results table ([`report::table`]), can write a JUnit report
//! ([`junit::render`]) and exits non-zero when a case fails. `cargo test` runs every case too (tests/all_cases.rs). Cases that
//! record native-fence operations attach a [`timeline::Timeline`]
//! ([`runner::attach_timeline`]); the binary writes them as one Chrome trace-event file
//! (`target/rvgpu-timeline.json` by default, [`timeline::to_json`]). `rvgpu-whlk collect`
//! gathers what a Windows tester sends back ([`collect`]); on Windows a case's other process is
//! the harness started again as a child (`child`, Windows only).

pub mod backend;
pub mod case;
pub mod cases;
#[cfg(windows)]
pub mod child;
pub mod collect;
pub mod journal;
pub mod junit;
pub mod os;
pub mod report;
pub mod runner;
pub mod timeline;
