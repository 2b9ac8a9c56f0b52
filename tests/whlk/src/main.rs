//! `rvgpu-whlk`: runs the named cases and prints the results table.
//!
//! ```text
//! rvgpu-whlk [--backend sim] [--filter SUBSTR] [--list] [--junit PATH]
//! ```
//! Exits 0 when no case failed, 1 when one did, 2 on a usage or I/O error.

use std::process::ExitCode;

use clap::{Parser, ValueEnum};

use rvgpu_whlk::backend::sim::SimBackend;
use rvgpu_whlk::backend::Backend;
use rvgpu_whlk::{cases, junit, report, runner};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendKind {
    /// The emulated GPU under the simulated OS (embedded in this binary).
    Sim,
}

#[derive(Debug, Parser)]
#[command(
    name = "rvgpu-whlk",
    about = "WHLK-style test cases for the rvgpu WDDM driver"
)]
struct Cli {
    /// What to run the cases against.
    #[arg(long, value_enum, default_value_t = BackendKind::Sim)]
    backend: BackendKind,
    /// Only cases whose name contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// List the cases (name, requirements, summary) and exit.
    #[arg(long)]
    list: bool,
    /// Also write a JUnit XML report here.
    #[arg(long, value_name = "PATH")]
    junit: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let all = cases::all();
    let selected = runner::select(&all, cli.filter.as_deref());
    if cli.list {
        for c in &selected {
            println!(
                "{:<40} {:<24} {}",
                c.name,
                c.requirements.join(" "),
                c.summary
            );
        }
        return ExitCode::SUCCESS;
    }
    if selected.is_empty() {
        eprintln!("rvgpu-whlk: no case matches the filter");
        return ExitCode::from(2);
    }
    let backend: Box<dyn Backend> = match cli.backend {
        BackendKind::Sim => Box::new(SimBackend),
    };
    let reports = runner::run_all(&selected, backend.as_ref());
    print!("{}", report::table(backend.name(), &reports));
    if let Some(path) = &cli.junit {
        if let Err(e) = std::fs::write(path, junit::render(backend.name(), &reports)) {
            eprintln!("rvgpu-whlk: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let (_, failed, _) = runner::totals(&reports);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
