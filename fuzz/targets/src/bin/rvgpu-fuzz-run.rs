//! Runs fuzz inputs through a target without libFuzzer (reproducing a finding, checking a
//! corpus): `cargo run -p rvgpu-fuzz --bin rvgpu-fuzz-run -- <target> <file>...`. Each file
//! runs in this process, in order; the first violated invariant panics with its message.

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_default();
    let Some(t) = rvgpu_fuzz::TARGETS.iter().find(|t| t.name == name) else {
        let names: Vec<_> = rvgpu_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: rvgpu-fuzz-run <target> <file>...; targets: {names:?}");
        std::process::exit(2);
    };
    for f in args {
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{f}: {e}"));
        eprintln!("{f}");
        (t.run)(&bytes);
    }
}
