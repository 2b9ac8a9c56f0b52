//! Writes every target's hand-made seeds into `fuzz/corpus/<target>/seed-<name>` (run from the
//! repository root: `cargo run -p rvgpu-fuzz --bin rvgpu-fuzz-seeds`). The committed corpora
//! are these seeds after `cargo fuzz cmin` plus what a campaign added (docs/fuzzing.md). A seed
//! that reveals an open finding is kept under `fuzz/findings/<target>/` instead (same name) and
//! not written to the corpus; once fixed it moves into the corpus as `finding-seed-<name>`,
//! and is not written again under its seed name.

use std::path::Path;

fn main() -> std::io::Result<()> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for t in rvgpu_fuzz::TARGETS {
        let dir = fuzz.join("corpus").join(t.name);
        let findings = fuzz.join("findings").join(t.name);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in (t.seeds)() {
            let file = format!("seed-{name}");
            // An open finding stays under findings/; a fixed one moved into the corpus as
            // `finding-seed-<name>` and is not written twice.
            let fixed = dir.join(format!("finding-{file}"));
            if !findings.join(&file).exists() && !fixed.exists() {
                std::fs::write(dir.join(file), bytes)?;
            }
        }
    }
    Ok(())
}
