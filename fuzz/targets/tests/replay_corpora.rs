//! every committed fuzz corpus file (`fuzz/corpus/<target>/*`, the hand-made seeds
//! among them) replays through its target with no invariant violated, so `cargo test` catches
//! a regression the fuzzer once covered without running the fuzzer. Open findings kept under
//! `fuzz/findings/` are not replayed here (they fail until fixed; docs/fuzzing.md).

use std::path::PathBuf;

use rvgpu_fuzz::{Target, TARGETS};

fn target(name: &str) -> Target {
    *TARGETS.iter().find(|t| t.name == name).expect("target")
}

fn replay(name: &str) {
    let t = target(name);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus for {name}");
    for f in &files {
        let bytes = std::fs::read(f).expect("corpus file");
        let r = std::panic::catch_unwind(|| (t.run)(&bytes));
        assert!(r.is_ok(), "{name}: corpus file {} fails", f.display());
    }
}

#[test]
fn fuzz_corpus_gpu_ring_replays_clean() {
    replay("gpu_ring");
}

#[test]
fn fuzz_corpus_gpu_device_registers_queues_tables_replays_clean() {
    replay("gpu_device");
}

#[test]
fn fuzz_corpus_ddi_private_data_replays_clean() {
    replay("ddi");
}

#[test]
fn fuzz_corpus_kmd_events_replays_clean() {
    replay("kmd_events");
}

#[test]
fn fuzz_corpus_umd_capi_replays_clean() {
    replay("umd_capi");
}

#[test]
fn fuzz_corpus_vfu_backend_replays_clean() {
    replay("vfu_backend");
}

#[test]
fn fuzz_corpus_dma_buffer_replays_clean() {
    replay("dma_buffer");
}

/// A committed `seed-<name>` file is what its target's `seeds()` makes today: a seed left from
/// an older command encoding starts the fuzzer from a sequence that no longer reaches what it
/// was written for (`cargo run -p rvgpu-fuzz --bin rvgpu-fuzz-seeds` rewrites them).
#[test]
fn fuzz_committed_seeds_match_their_targets_seeds() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut stale = Vec::new();
    for t in TARGETS {
        for (name, bytes) in (t.seeds)() {
            let file = corpus.join(t.name).join(format!("seed-{name}"));
            if let Ok(committed) = std::fs::read(&file) {
                if committed != bytes {
                    stale.push(file.display().to_string());
                }
            }
        }
    }
    assert!(stale.is_empty(), "stale seeds: {stale:?}");
}
