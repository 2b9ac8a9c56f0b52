//! `rvgpu-whlk`: runs the named cases and prints the results table.
//!
//! ```text
//! rvgpu-whlk [--backend sim|windows|kmt-sim] [--driver linux|pe|pe:DIR] [--umd rust|pe|pe:PATH] [--filter SUBSTR] [--requirement ID[,ID...]]... [--list]
//!             [--windows 22631|24h2|25h2|26h1[+pages]|pages] [--without-inf-features] [--hwsch on|off] [--device SPEC]
//!             [--junit PATH] [--timeline PATH | --no-timeline] [--timeline-svg PATH]
//! ```
//! `--windows` and `--without-inf-features` choose the Windows the simulated machines play
//! ([`rvgpu_whlk::os`]); the run first prints which features that Windows enabled for the
//! driver, and cases that need a disabled one are skipped with the reason.
//! `--requirement` (repeatable, or a comma list) keeps the cases whose requirement list names
//! one of the IDs; an ID no case names is a usage error listing the known IDs. A case needing a
//! capability the backend lacks is reported as skipped with the reason.
//! The run writes the GPU timeline of the cases that produce native-fence operations (Chrome
//! trace-event JSON for ui.perfetto.dev or chrome://tracing; `rvgpu_whlk::timeline`) to
//! `target/rvgpu-timeline.json` unless `--no-timeline`, and prints the path after the table.
//! Exits 0 when no case failed, 1 when one did, 2 on a usage or I/O error.
//!
//! `rvgpu-whlk collect [--memory-dump] [--out DIR]` gathers what the runbook asks a Windows
//! tester to send back into one archive ([`rvgpu_whlk::collect`]), with the KMD's journal
//! through its test hooks ([`rvgpu_whlk::journal`], read by the hidden subcommand `journal` in
//! a process of its own). The hidden subcommands `child ROLE` and `child-check` are the
//! harness's other processes on Windows and their GPU-less proof.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use rvgpu_whlk::backend::kmt::{self, KmtBackend};
use rvgpu_whlk::backend::sim::{pci_backend, SimBackend};
use rvgpu_whlk::backend::Backend;
use rvgpu_whlk::{cases, junit, report, runner, timeline};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendKind {
    /// The emulated GPU under the simulated OS (embedded in this binary).
    Sim,
    /// The installed driver on this Windows machine, through the D3DKMT thunks and the UMD.
    Windows,
    /// The Windows backend's code over the simulated thunks: what `windows` does, run here.
    KmtSim,
}

#[derive(Debug, Parser)]
#[command(
    name = "rvgpu-whlk",
    about = "WHLK-style test cases for the rvgpu WDDM driver"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    /// What to run the cases against.
    #[arg(long, value_enum, default_value_t = BackendKind::Sim)]
    backend: BackendKind,
    /// Only cases whose name contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Where the sim backend's GPU is: `emulated` (in this process) or `pci`, every rvgpu PCI
    /// function of a Linux guest, each an adapter in bus order (`pci:F[,F...]`: these, each a
    /// PCI address such as 0000:00:03.0 or a sysfs directory). Needs root, uio_pci_generic or
    /// rvgpu_uio_msi bound to each function and `memmap=` reserved DMA memory, see `--dma`.
    #[arg(
        long,
        default_value = "emulated",
        value_name = "emulated|pci[:F[,F...]]"
    )]
    board: String,
    /// `--board pci`: the physical range the kernel left alone (`memmap=SIZE$BASE`) that the OS
    /// hands out as system memory, as BASE:SIZE (hex with 0x, or decimal).
    #[arg(
        long,
        default_value = "0x40000000:0x10000000",
        value_name = "BASE:SIZE"
    )]
    dma: String,
    /// Which build of the driver the simulated machines load: `linux` (its Rust code compiled
    /// for this host), or `pe` — the test-signed package a user installs (made on first use by
    /// `scripts/package.sh --test-sign`; `pe:DIR` for another package directory), installed
    /// into each simulated machine as Windows installs it, its `rvgpu.sys` run in an x86-64
    /// emulator behind the simulated Dxgkrnl.
    #[arg(long, default_value = "linux", value_name = "linux|pe|pe:DIR")]
    driver: String,
    /// With `--backend kmt-sim`: which user-mode driver the cases go through: `rust` (the UMD's
    /// Rust code linked into this binary, over the simulated thunks) or `pe` — the shipped
    /// `rvgpu_umd.dll` run in the x86-64 emulator, its C API only (built on first use as
    /// scripts/package.sh builds it; `pe:PATH` for another DLL). Cases that need more than the
    /// C API are skipped with the piece they miss.
    #[arg(long, default_value = "rust", value_name = "rust|pe|pe:PATH")]
    umd: String,
    /// A named subset of cases: `pci` (the list for the PCI board).
    #[arg(long, value_name = "NAME")]
    subset: Option<String>,
    /// Only cases that prove this requirement ID (e.g. UM-20); repeatable or a comma list.
    #[arg(long, value_name = "ID", value_delimiter = ',')]
    requirement: Vec<String>,
    /// List the cases (name, requirements, summary) and exit.
    #[arg(long)]
    list: bool,
    /// Also write a JUnit XML report here.
    #[arg(long, value_name = "PATH")]
    junit: Option<std::path::PathBuf>,
    /// Where to write the GPU timeline (Chrome trace-event JSON: open it in
    /// https://ui.perfetto.dev or chrome://tracing).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "target/rvgpu-timeline.json"
    )]
    timeline: std::path::PathBuf,
    /// Do not write the GPU timeline.
    #[arg(long, conflicts_with_all = ["timeline", "timeline_svg"])]
    no_timeline: bool,
    /// Also draw the timeline as an SVG picture here.
    #[arg(long, value_name = "PATH")]
    timeline_svg: Option<std::path::PathBuf>,
    /// The Windows the simulated machines play (`rvgpu_simos::Windows::parse`): a kernel,
    /// `22631`, `24h2`, `25h2` or `26h1` (no native fences at all), answering as its code does,
    /// or with `+pages` as Microsoft's pages do (`pages`: 24H2's kernel). Default:
    /// `RVGPU_WINDOWS`, else `24h2`. On `22631` the run stops at the driver's install, with
    /// either `--driver`: `rvgpu.inf` targets build 26100 and later (IN-08).
    #[arg(long, value_name = "KERNEL[+pages]|pages")]
    windows: Option<String>,
    /// The simulated adapters' software keys without the `Features` values `rvgpu.inf` writes
    /// (a stock Windows: native fences and user-mode submission off).
    #[arg(long)]
    without_inf_features: bool,
    /// With `--backend kmt-sim`: hardware-accelerated GPU scheduling on the simulated
    /// machine, one setting for the whole run as `HwSchMode` is for a Windows boot (`off`: the
    /// runbook's second pass; native fences and user-mode queues are off with it).
    #[arg(long, value_name = "on|off", default_value = "on")]
    hwsch: String,
    /// With `--backend kmt-sim`: the simulated test machine's device for the whole run, as
    /// `rvgpu-vfu`'s options start the test machine's (docs/test-machine.md): comma-separated
    /// `engines=N`, `doorbells=N`, `global-doorbell`, `vram-mib=N`, the rest as its defaults. A
    /// case asking for another device is skipped, naming the options that give it.
    #[arg(long, value_name = "SPEC")]
    device: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Gathers what docs/test-machine.md's "What to send back" names into one archive (or a
    /// folder, without Windows' tar.exe); changes nothing on the machine but stopping the
    /// runbook's ETW session.
    Collect {
        /// Also take %SystemRoot%\MEMORY.DMP, the full dump of the last bug check.
        #[arg(long)]
        memory_dump: bool,
        /// Where the archive goes (default: this program's folder).
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
    },
    /// Prints the KMD's journal of every rvgpu adapter (collect's `journal.txt`).
    #[command(hide = true)]
    Journal,
    /// A case's other process on Windows: plays ROLE with the handles its parent gives.
    #[command(hide = true)]
    Child {
        /// What the child does.
        role: String,
    },
    /// Proves the child protocol without a GPU: a child writes a section and sets an event
    /// duplicated into it, one is killed while it waits, one serves a case's process over a
    /// simulated machine of its own.
    #[command(hide = true)]
    ChildCheck,
}

/// Runs a subcommand; the exit code.
fn subcommand(sub: &Sub) -> ExitCode {
    match sub {
        Sub::Collect { memory_dump, out } => {
            let opts = rvgpu_whlk::collect::Options {
                memory_dump: *memory_dump,
                out: out.clone(),
                journal: journal_in_child,
            };
            match rvgpu_whlk::collect::collect(&opts) {
                Ok(rvgpu_whlk::collect::Outcome::Archive(zip)) => {
                    println!("rvgpu-whlk collect: send {}", zip.display());
                    ExitCode::SUCCESS
                }
                Ok(rvgpu_whlk::collect::Outcome::Folder(dir, why)) => {
                    println!(
                        "rvgpu-whlk collect: no archive ({why}); send the folder {}",
                        dir.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("rvgpu-whlk collect: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Sub::Journal => match rvgpu_whlk::journal::dump() {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        },
        #[cfg(windows)]
        Sub::Child { role } => {
            ExitCode::from(u8::try_from(rvgpu_whlk::child::serve(role)).unwrap_or(2))
        }
        #[cfg(windows)]
        Sub::ChildCheck => match rvgpu_whlk::child::check() {
            Ok(summary) => {
                println!("child protocol: {summary}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("child protocol: {e}");
                ExitCode::FAILURE
            }
        },
        #[cfg(not(windows))]
        Sub::Child { .. } | Sub::ChildCheck => {
            eprintln!("rvgpu-whlk: child processes are the Windows build's (rvgpu-whlk.exe)");
            ExitCode::from(2)
        }
    }
}

/// `collect`'s journal, read by this program started again as `rvgpu-whlk journal`: a thunk
/// that fails hard (Wine's gdi32 stubs `D3DKMTEnumAdapters2`; a machine after a crash) ends
/// that process, and the collect step notes it and goes on.
fn journal_in_child() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let out = std::process::Command::new(exe)
        .arg("journal")
        .output()
        .map_err(|e| format!("rvgpu-whlk journal: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "rvgpu-whlk journal ({}): {}",
            out.status,
            err.lines().next().unwrap_or_default().trim()
        ))
    }
}

/// `--windows`, `--without-inf-features`, `--hwsch`: the Windows every simulated machine
/// plays, set before the driver is chosen so that the driver's test install runs under it.
fn choose_windows(cli: &Cli) -> Result<rvgpu_whlk::os::OsUnderTest, String> {
    let os = rvgpu_whlk::os::OsUnderTest {
        windows: match &cli.windows {
            Some(w) => rvgpu_simos::Windows::parse(w)?,
            None => rvgpu_simos::Windows::from_env(),
        },
        inf_features: !cli.without_inf_features,
        hwsch: match cli.hwsch.as_str() {
            "on" => true,
            "off" => false,
            other => return Err(format!("--hwsch {other}: on or off")),
        },
    };
    rvgpu_whlk::os::set(os);
    // Machines the harness configures without `rvgpu_whlk::os::apply` play it too.
    rvgpu_simos::Windows::set_default(os.windows);
    Ok(os)
}

/// Prints which features the chosen Windows enabled for the chosen driver.
fn print_features(os: rvgpu_whlk::os::OsUnderTest) -> Result<(), String> {
    let features = rvgpu_whlk::os::enabled_features()?
        .iter()
        .map(|(name, v)| format!("{name} v{v}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "Windows {}{}{}: features enabled for the driver: {features}",
        os.windows.name(),
        if os.inf_features {
            ""
        } else {
            " (the INF's Features values removed)"
        },
        if os.hwsch {
            ""
        } else {
            " (hardware scheduling off)"
        }
    );
    Ok(())
}

/// `--driver`: for the PE image, makes the test-signed package when no directory is given
/// (`scripts/package.sh --test-sign`), installs it once on a test machine to fail early (a
/// refused package, no emulator, an import the simulated kernel lacks) and makes it every
/// machine's driver: each machine installs the package and loads the driver-store image.
#[cfg(target_os = "linux")]
fn choose_driver(arg: &str) -> Result<(), String> {
    use rvgpu_simos::install::{install_and_load, package};
    use rvgpu_simos::pe::{DriverBuild, PeImage};
    let dir = match DriverBuild::parse(arg)? {
        DriverBuild::Linux => return Ok(()),
        DriverBuild::Pe(Some(p)) => p,
        DriverBuild::Pe(None) => package::test_signed()?.dir,
    };
    let image = install_and_load(Some(&dir), &rvgpu_simos::OsConfig::default())?
        .map_err(|r| format!("Windows would refuse the package {}: {r}", dir.display()))?
        .0;
    PeImage::load(&image)?;
    println!(
        "driver: installed from {} (test-signed package), {} run in the x86-64 emulator",
        dir.display(),
        image.display()
    );
    DriverBuild::set_default(DriverBuild::Pe(Some(dir)));
    Ok(())
}

/// `--umd pe[:PATH]`: the backend over the shipped DLL, loaded once to fail early (no
/// emulator, an import the simulated OS lacks).
#[cfg(target_os = "linux")]
fn umd_backend(arg: &str) -> Result<Box<dyn Backend>, String> {
    let path = match arg {
        "pe" => None,
        _ => match arg.strip_prefix("pe:") {
            Some(p) => Some(std::path::PathBuf::from(p)),
            None => return Err("unknown UMD (rust, pe, pe:PATH)".into()),
        },
    };
    let b = rvgpu_whlk::backend::dll::DllBackend::new(path)?;
    println!(
        "UMD: {} (the shipped DLL, run in the x86-64 emulator)",
        b.path().display()
    );
    Ok(Box::new(b))
}

#[cfg(not(target_os = "linux"))]
fn umd_backend(_arg: &str) -> Result<Box<dyn Backend>, String> {
    Err("the shipped DLL runs in the emulator on Linux only".into())
}

/// Writes `text` to `path`, creating its directory.
fn write_file(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}

/// Writes the run's timeline file (and the SVG); returns false on an I/O error.
fn write_timeline(cli: &Cli, reports: &[runner::CaseReport]) -> bool {
    let timelines: Vec<timeline::Timeline> = reports
        .iter()
        .flat_map(|r| r.timelines.iter().cloned())
        .collect();
    if timelines.is_empty() {
        println!(
            "GPU timeline: not written, no selected case produced native-fence operations \
             (Logs.Timeline filtered out or skipped)"
        );
        return true;
    }
    let ops: usize = timelines.iter().map(|t| t.ops.len()).sum();
    let mut outputs = vec![(cli.timeline.clone(), timeline::to_json(&timelines))];
    if let Some(svg) = &cli.timeline_svg {
        outputs.push((svg.clone(), timeline::to_svg(&timelines, 1600)));
    }
    for (path, text) in outputs {
        if let Err(e) = write_file(&path, &text) {
            eprintln!("rvgpu-whlk: cannot write {}: {e}", path.display());
            return false;
        }
        let shown = std::fs::canonicalize(&path).unwrap_or(path);
        println!(
            "GPU timeline ({ops} fence operations from {} case(s)): {}",
            timelines.len(),
            shown.display()
        );
    }
    println!("  open it in https://ui.perfetto.dev or chrome://tracing");
    true
}

/// A number in hex (`0x…`) or decimal.
fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `--board` and `--dma` as a PCI spec (`None` for the emulated board), its functions named:
/// those listed, or every rvgpu function of this machine.
fn pci_spec(cli: &Cli) -> Result<Option<rvgpu_simos::machine::PciSpec>, String> {
    let functions = match cli.board.as_str() {
        "emulated" => return Ok(None),
        "pci" => Vec::new(),
        b => match b.strip_prefix("pci:") {
            Some(list) => list
                .split(',')
                .map(|f| match f.trim() {
                    "" => Err(format!("--board {b}: an empty function name")),
                    f => Ok(function_path(f)),
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => return Err(format!("unknown --board {b} (emulated, pci[:F[,F...]])")),
        },
    };
    let (base, size) = cli
        .dma
        .split_once(':')
        .and_then(|(b, s)| Some((parse_num(b)?, parse_num(s)?)))
        .ok_or_else(|| format!("bad --dma {} (BASE:SIZE)", cli.dma))?;
    let spec = rvgpu_simos::machine::PciSpec {
        functions,
        dma_base: base,
        dma_size: size,
    };
    #[cfg(target_os = "linux")]
    let spec = rvgpu_simos::machine::pci::resolve(&spec).map_err(|e| format!("--board: {e}"))?;
    Ok(Some(spec))
}

/// A function of `--board pci:…`: a sysfs directory, or a PCI address in the kernel's list.
#[cfg(target_os = "linux")]
fn function_path(name: &str) -> std::path::PathBuf {
    rvgpu_simos::machine::pci::function_path(name)
}

/// A function of `--board pci:…` (the PCI board is Linux's: taken as given).
#[cfg(not(target_os = "linux"))]
fn function_path(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(name)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(sub) = &cli.command {
        return subcommand(sub);
    }
    let all = cases::all();
    let mut selected = match runner::select_by(&all, cli.filter.as_deref(), &cli.requirement) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rvgpu-whlk: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.subset.as_deref() {
        None => {}
        Some("pci") => selected.retain(|c| cases::PCI_SUBSET.contains(&c.name)),
        Some(other) => {
            eprintln!("rvgpu-whlk: unknown --subset {other} (known: pci)");
            return ExitCode::from(2);
        }
    }
    let pci = match pci_spec(&cli) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rvgpu-whlk: {e}");
            return ExitCode::from(2);
        }
    };
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
        eprintln!("rvgpu-whlk: no case matches the filter and requirements");
        return ExitCode::from(2);
    }
    let windows = if matches!(cli.backend, BackendKind::Windows) {
        None
    } else {
        match choose_windows(&cli) {
            Ok(os) => Some(os),
            Err(e) => {
                eprintln!(
                    "rvgpu-whlk: --windows {}: {e}",
                    cli.windows.as_deref().unwrap_or("(RVGPU_WINDOWS)")
                );
                return ExitCode::from(2);
            }
        }
    };
    #[cfg(target_os = "linux")]
    if let Err(e) = choose_driver(&cli.driver) {
        eprintln!("rvgpu-whlk: --driver {}: {e}", cli.driver);
        return ExitCode::from(2);
    }
    #[cfg(not(target_os = "linux"))]
    if cli.driver != "linux" {
        eprintln!(
            "rvgpu-whlk: --driver pe runs on Linux only (the emulator is not part of this build)"
        );
        return ExitCode::from(2);
    }
    if let Some(os) = windows {
        if let Err(e) = print_features(os) {
            eprintln!(
                "rvgpu-whlk: --windows {}: {e}",
                cli.windows.as_deref().unwrap_or("(RVGPU_WINDOWS)")
            );
            return ExitCode::from(2);
        }
    }
    if cli.hwsch != "on" && !matches!(cli.backend, BackendKind::KmtSim) {
        eprintln!("rvgpu-whlk: --hwsch {} needs --backend kmt-sim", cli.hwsch);
        return ExitCode::from(2);
    }
    if let Some(spec) = &cli.device {
        if !matches!(cli.backend, BackendKind::KmtSim) || cli.umd != "rust" {
            eprintln!(
                "rvgpu-whlk: --device needs --backend kmt-sim with the Rust UMD (the others \
                 build each case's machine as it asks, or have the device they have)"
            );
            return ExitCode::from(2);
        }
        match rvgpu_whlk::backend::DeviceSettings::parse(spec) {
            Ok((d, vram_mib)) => {
                kmt::sim::set_device(d, vram_mib);
                println!("device: as `rvgpu-vfu {}`", d.vfu_options());
            }
            Err(e) => {
                eprintln!("rvgpu-whlk: --device {spec}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if cli.umd != "rust" && !matches!(cli.backend, BackendKind::KmtSim) {
        eprintln!("rvgpu-whlk: --umd {} needs --backend kmt-sim", cli.umd);
        return ExitCode::from(2);
    }
    let pci_shown = pci.clone();
    let backend: Box<dyn Backend> = match cli.backend {
        BackendKind::Sim => match pci {
            Some(spec) => Box::new(pci_backend(Some(spec))),
            None => Box::new(SimBackend),
        },
        BackendKind::KmtSim if cli.umd != "rust" => match umd_backend(&cli.umd) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("rvgpu-whlk: --umd {}: {e}", cli.umd);
                return ExitCode::from(2);
            }
        },
        BackendKind::KmtSim => Box::new(KmtBackend::new(kmt::sim::SimPlatform)),
        #[cfg(windows)]
        BackendKind::Windows => Box::new(KmtBackend::new(kmt::windows::WinPlatform)),
        #[cfg(not(windows))]
        BackendKind::Windows => {
            eprintln!(
                "rvgpu-whlk: the windows backend runs only on Windows (rvgpu-whlk.exe from \
                 scripts/package.sh); --backend kmt-sim runs its code over the simulated thunks"
            );
            return ExitCode::from(2);
        }
    };
    if let Some(spec) = &pci_shown {
        let names: Vec<String> = spec
            .functions
            .iter()
            .map(|f| {
                f.file_name()
                    .unwrap_or(f.as_os_str())
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        println!(
            "PCI board: {} rvgpu function(s), one adapter each: {}",
            names.len(),
            names.join(", ")
        );
    }
    let reports = runner::run_all(&selected, backend.as_ref());
    #[cfg(target_os = "linux")]
    if cli.board != "emulated" {
        println!(
            "PCI board: {} {} interrupts delivered through UIO",
            rvgpu_simos::machine::pci::interrupts_taken(),
            rvgpu_simos::machine::pci::interrupt_kind()
        );
        let (calls, reads) = rvgpu_simos::machine::pci::isr_reads();
        println!(
            "PCI board: {calls} ISR calls, {reads} register reads by the ISR ({:.2} per call)",
            reads as f64 / calls.max(1) as f64
        );
    }
    print!("{}", report::table(backend.name(), &reports));
    // Waits the OS had not released when the fence already read their value (24H2 raising
    // MonitoredValue over them), ended by the bounded re-check: counted, never silent.
    println!(
        "late wakes (CPU waits ended by their re-check of CurrentValue): {}",
        rvgpu_umd::wait::late_wakes()
    );
    if let Some(path) = &cli.junit {
        if let Err(e) = std::fs::write(path, junit::render(backend.name(), &reports)) {
            eprintln!("rvgpu-whlk: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if !cli.no_timeline && !write_timeline(&cli, &reports) {
        return ExitCode::from(2);
    }
    let (_, failed, _) = runner::totals(&reports);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_is_repeatable_and_a_comma_list() {
        let cli = Cli::try_parse_from([
            "rvgpu-whlk",
            "--requirement",
            "UM-20,TDR-05",
            "--requirement",
            "NF-02",
        ])
        .expect("valid command line");
        assert_eq!(cli.requirement, ["UM-20", "TDR-05", "NF-02"]);
        let none = Cli::try_parse_from(["rvgpu-whlk"]).expect("valid command line");
        assert!(none.requirement.is_empty());
    }

    #[test]
    fn ddi_01_board_pci_takes_a_list_of_addresses_or_directories() {
        let cli = Cli::try_parse_from(["rvgpu-whlk", "--board", "pci:0000:00:03.0,/tmp/f"])
            .expect("valid command line");
        let spec = pci_spec(&cli).expect("a list").expect("a PCI board");
        assert_eq!(
            spec.functions,
            [
                std::path::Path::new("/sys/bus/pci/devices/0000:00:03.0"),
                std::path::Path::new("/tmp/f")
            ]
        );
        for bad in ["pci:", "pci:0000:00:03.0,", "pcie"] {
            let cli = Cli::try_parse_from(["rvgpu-whlk", "--board", bad]).expect("parses");
            assert!(pci_spec(&cli).is_err(), "{bad} is refused");
        }
        let cli = Cli::try_parse_from(["rvgpu-whlk"]).expect("valid command line");
        assert!(pci_spec(&cli).expect("emulated").is_none());
    }

    #[test]
    fn journal_is_a_hidden_subcommand() {
        let cli = Cli::try_parse_from(["rvgpu-whlk", "journal"]).expect("valid command line");
        assert!(matches!(cli.command, Some(Sub::Journal)));
    }

    #[test]
    fn collect_is_a_subcommand_with_its_options() {
        let cli = Cli::try_parse_from(["rvgpu-whlk", "collect", "--memory-dump", "--out", "D"])
            .expect("valid command line");
        assert!(matches!(
            cli.command,
            Some(Sub::Collect { memory_dump: true, out: Some(ref d) }) if d.as_os_str() == "D"
        ));
    }
}
