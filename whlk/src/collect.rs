//! `rvgpu-whlk collect`: gathers what the runbook (docs/test-machine.md, "10. What to send
//! back") asks for after a run or a crash into one folder, then one archive.
//!
//! The gathering is a table ([`PLAN`]): reading commands whose output goes to a text file of
//! the archive, and files copied from Windows' folders and from the tester's folder. A program
//! or file that is not there is a line of `collect-log.txt`, never a failure: the collect step
//! runs on a machine that may have just crashed, and under Wine (the test command), which has
//! few of these tools. The archive is made by Windows' own `tar.exe -a` (Windows 10 and later,
//! `%SystemRoot%\System32`); without it the folder stays and the output says to send that.
//!
//! It changes nothing on the machine except stopping the runbook's ETW session
//! (`tracelog -stop rvgpu`), so that a harness run that did not reach its own stop leaves a
//! complete trace.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An argument of a command: a literal, or a file of the archive's folder.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// Passed as written.
    Lit(&'static str),
    /// The path of this file in the archive's folder (the command writes it).
    Out(&'static str),
}

/// A reading command: the program (found on the path) and its arguments.
#[derive(Clone, Copy, Debug)]
pub struct Cmd {
    /// The program, as the runbook types it.
    pub program: &'static str,
    /// Its arguments.
    pub args: &'static [Arg],
}

/// Where a copied path starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// `%SystemRoot%` (`C:\Windows`).
    Windows,
    /// The tester's folder: where the harness runs and writes its files.
    Folder,
}

/// One step of the gathering.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Commands whose output (both streams) goes to one text file of the archive.
    Run {
        /// The text file.
        file: &'static str,
        /// The commands, in order.
        commands: &'static [Cmd],
    },
    /// A file or files copied into a folder of the archive. `path` is under `root`,
    /// backslash-separated; a last component `*` takes the folder's whole content, `*.ext`
    /// its files ending in `.ext`.
    Take {
        /// Where `path` starts.
        root: Root,
        /// The file or pattern.
        path: &'static str,
        /// The archive's folder it goes to.
        to: &'static str,
        /// Only with `--memory-dump`.
        memory_dump: bool,
    },
    /// The KMD's journal through its test hooks ([`Options::journal`]) into this text file.
    Journal {
        /// The text file.
        file: &'static str,
    },
}

const fn run(file: &'static str, commands: &'static [Cmd]) -> Step {
    Step::Run { file, commands }
}

const fn cmd(program: &'static str, args: &'static [Arg]) -> Cmd {
    Cmd { program, args }
}

const fn take(root: Root, path: &'static str, to: &'static str) -> Step {
    Step::Take {
        root,
        path,
        to,
        memory_dump: false,
    }
}

use Arg::{Lit, Out};

/// The display class's key, where the install writes the adapter's software key.
const DISPLAY_CLASS: &str =
    r"HKLM\SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}";

/// What the collect step gathers, in order (the runbook's table of the archive names each
/// file; tests/collect_script.rs checks both ways).
pub const PLAN: &[Step] = &[
    // The ETW session of step 8, stopped first so that its file is complete.
    run(
        "tracelog.txt",
        &[cmd("tracelog", &[Lit("-stop"), Lit("rvgpu")])],
    ),
    // The machine and the boot entry.
    run("ver.txt", &[cmd("cmd", &[Lit("/c"), Lit("ver")])]),
    run(
        "bcdedit-current.txt",
        &[cmd("bcdedit", &[Lit("/enum"), Lit("{current}")])],
    ),
    run(
        "verifier-querysettings.txt",
        &[cmd("verifier", &[Lit("/querysettings")])],
    ),
    run(
        "manage-bde-status.txt",
        &[cmd("manage-bde", &[Lit("-status"), Lit("C:")])],
    ),
    // The device and the driver store.
    run(
        "pnputil-device.txt",
        &[cmd(
            "pnputil",
            &[
                Lit("/enum-devices"),
                Lit("/deviceid"),
                Lit(r"PCI\VEN_1234&DEV_5256"),
                Lit("/drivers"),
            ],
        )],
    ),
    run(
        "pnputil-drivers.txt",
        &[cmd(
            "pnputil",
            &[Lit("/enum-drivers"), Lit("/class"), Lit("Display")],
        )],
    ),
    // The registry values the runbook sets, and what the install wrote.
    run(
        "reg-export.txt",
        &[
            cmd(
                "reg",
                &[
                    Lit("export"),
                    Lit(r"HKLM\SYSTEM\CurrentControlSet\Control\GraphicsDrivers"),
                    Out("graphicsdrivers.reg"),
                    Lit("/y"),
                ],
            ),
            cmd(
                "reg",
                &[
                    Lit("export"),
                    Lit(
                        r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Debug Print Filter",
                    ),
                    Out("debug-print-filter.reg"),
                    Lit("/y"),
                ],
            ),
            cmd(
                "reg",
                &[
                    Lit("export"),
                    Lit(r"HKLM\SYSTEM\CurrentControlSet\Services\rvgpu"),
                    Out("service-rvgpu.reg"),
                    Lit("/y"),
                ],
            ),
            cmd(
                "reg",
                &[
                    Lit("export"),
                    Lit(DISPLAY_CLASS),
                    Out("display-class.reg"),
                    Lit("/y"),
                ],
            ),
        ],
    ),
    // The event logs.
    run(
        "wevtutil.txt",
        &[
            cmd("wevtutil", &[Lit("epl"), Lit("System"), Out("System.evtx")]),
            cmd(
                "wevtutil",
                &[
                    Lit("epl"),
                    Lit("Microsoft-Windows-CodeIntegrity/Operational"),
                    Out("CodeIntegrity.evtx"),
                ],
            ),
        ],
    ),
    take(Root::Windows, r"INF\setupapi.dev.log", "inf"),
    // Dumps: the minidumps of bug checks, the live dumps of TDRs (WATCHDOG) and others.
    take(Root::Windows, r"Minidump\*.dmp", "Minidump"),
    take(Root::Windows, r"LiveKernelReports\*", "LiveKernelReports"),
    Step::Take {
        root: Root::Windows,
        path: "MEMORY.DMP",
        to: "MEMORY",
        memory_dump: true,
    },
    // What the runbook's harness run wrote in the tester's folder.
    take(Root::Folder, "rvgpu.etl", "run"),
    take(Root::Folder, "rvgpu-results.xml", "run"),
    take(Root::Folder, "rvgpu-timeline.json", "run"),
    take(Root::Folder, "rvgpu-whlk.txt", "run"),
    // What the KMD saw of the run's recoveries (the runbook's test hooks).
    Step::Journal {
        file: "journal.txt",
    },
];

/// The log of the gathering, in the archive's folder.
pub const LOG: &str = "collect-log.txt";

/// The collect step's choices (its command line).
#[derive(Clone, Debug)]
pub struct Options {
    /// Also take `%SystemRoot%\MEMORY.DMP` (a full dump can be many GB).
    pub memory_dump: bool,
    /// Where the archive (or the folder) goes; the tester's folder when `None`.
    pub out: Option<PathBuf>,
    /// Reads the KMD's journal of every rvgpu adapter as text, or says why it cannot
    /// (`rvgpu_whlk::journal::dump`).
    pub journal: fn() -> Result<String, String>,
}

/// What the collect step left for the tester to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The archive.
    Archive(PathBuf),
    /// The folder, with why there is no archive.
    Folder(PathBuf, String),
}

/// The tester's folder: the directory of this executable (where the runbook runs it and
/// where its run wrote its files).
pub fn tester_folder() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `%SystemRoot%`, or `C:\Windows` when the variable is not set.
fn system_root() -> PathBuf {
    std::env::var_os("SystemRoot")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(r"C:\Windows"))
}

/// `yyyymmdd-hhmmss` (UTC) of a time given in seconds since 1970.
pub fn stamp(secs: u64) -> String {
    let days = secs / 86_400;
    let rest = secs % 86_400;
    // Howard Hinnant's days-to-civil, for days since 1970-01-01 (non-negative).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The gathering's log: each line into `collect-log.txt` and onto the console.
struct Log {
    file: std::fs::File,
}

impl Log {
    fn note(&mut self, line: &str) {
        println!("collect: {line}");
        // A log line that cannot be written is still on the console.
        let _ = writeln!(self.file, "{line}");
    }
}

/// A command as the log shows it.
fn shown(c: &Cmd, work: &Path) -> String {
    let mut s = c.program.to_owned();
    for a in c.args {
        s.push(' ');
        match a {
            Lit(t) => s.push_str(t),
            Out(f) => s.push_str(&work.join(f).display().to_string()),
        }
    }
    s
}

/// Runs the commands of one `Run` step into `file`.
fn run_step(file: &str, commands: &[Cmd], work: &Path, log: &mut Log) {
    let mut text = Vec::new();
    for c in commands {
        let line = shown(c, work);
        let args = c.args.iter().map(|a| match a {
            Lit(t) => std::ffi::OsString::from(t),
            Out(f) => work.join(f).into_os_string(),
        });
        match Command::new(c.program).args(args).output() {
            Ok(out) => {
                log.note(&format!("{file} <- {line} ({})", out.status));
                text.extend_from_slice(format!("> {line}\r\n").as_bytes());
                text.extend_from_slice(&out.stdout);
                text.extend_from_slice(&out.stderr);
            }
            Err(e) => {
                log.note(&format!(
                    "absent: {} ({e}); {file} lacks `{line}`",
                    c.program
                ));
                text.extend_from_slice(format!("> {line}\r\nnot run: {e}\r\n").as_bytes());
            }
        }
    }
    if let Err(e) = std::fs::write(work.join(file), text) {
        log.note(&format!("cannot write {file}: {e}"));
    }
    // A command can succeed without writing its file (a log that does not exist, a stub).
    for c in commands {
        for a in c.args {
            if let Out(f) = a {
                if !work.join(f).is_file() {
                    log.note(&format!("absent: {f} (not written by {})", c.program));
                }
            }
        }
    }
}

/// Copies `from` (a file or a folder, recursively) to `to`; the number of files copied.
fn copy_tree(from: &Path, to: &Path, log: &mut Log) -> usize {
    if from.is_dir() {
        let entries = match std::fs::read_dir(from) {
            Ok(e) => e,
            Err(e) => {
                log.note(&format!("cannot read {}: {e}", from.display()));
                return 0;
            }
        };
        let mut n = 0;
        for e in entries.flatten() {
            n += copy_tree(&e.path(), &to.join(e.file_name()), log);
        }
        n
    } else {
        let copied = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::copy(from, to));
        match copied {
            Ok(_) => 1,
            Err(e) => {
                log.note(&format!("cannot copy {}: {e}", from.display()));
                0
            }
        }
    }
}

/// One `Take` step.
fn take_step(base: &Path, path: &str, to: &Path, log: &mut Log) {
    let mut parts: Vec<&str> = path.split('\\').collect();
    let last = parts.pop().unwrap_or_default();
    let dir = parts.iter().fold(base.to_path_buf(), |p, c| p.join(c));
    let what = format!("{}\\{last}", dir.display());
    let n = match last.strip_prefix('*') {
        Some(suffix) => match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
                .map(|e| copy_tree(&e.path(), &to.join(e.file_name()), log))
                .sum(),
            Err(_) => 0,
        },
        None => {
            let file = dir.join(last);
            if file.exists() {
                copy_tree(&file, &to.join(last), log)
            } else {
                0
            }
        }
    };
    if n == 0 {
        log.note(&format!("absent: {what}"));
    } else {
        log.note(&format!("{} <- {what} ({n} file(s))", to.display()));
    }
}

/// The `Journal` step: `read`'s text, or the line saying why there is none.
fn journal_step(file: &str, read: fn() -> Result<String, String>, work: &Path, log: &mut Log) {
    let text = match read() {
        Ok(t) => {
            log.note(&format!(
                "{file} <- the KMD's journal through its test hooks"
            ));
            t
        }
        Err(why) => {
            log.note(&format!("absent: the KMD's journal ({why})"));
            format!("no journal: {why}\r\n")
        }
    };
    if let Err(e) = std::fs::write(work.join(file), text) {
        log.note(&format!("cannot write {file}: {e}"));
    }
}

/// Windows' own tar (bsdtar, Windows 10 and later), which writes a zip with `-a`.
fn windows_tar() -> PathBuf {
    system_root().join("System32").join("tar.exe")
}

/// Zips `work` into `zip` with Windows' tar; why not, when it could not.
fn zip(work: &Path, zip: &Path) -> Result<(), String> {
    let tar = windows_tar();
    if !tar.exists() {
        return Err(format!("{} is not on this machine", tar.display()));
    }
    let out = Command::new(&tar)
        .arg("-a")
        .arg("-c")
        .arg("-f")
        .arg(zip)
        .arg("-C")
        .arg(work)
        .arg(".")
        .output()
        .map_err(|e| format!("{}: {e}", tar.display()))?;
    if out.status.success() && zip.exists() {
        Ok(())
    } else {
        Err(format!(
            "{} failed ({}): {}",
            tar.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Gathers [`PLAN`] into `<out>\rvgpu-collect-<computer>-<time>` and zips it; the outcome,
/// or why not even the folder could be made.
pub fn collect(opts: &Options) -> Result<Outcome, String> {
    let folder = tester_folder();
    let out = opts.out.clone().unwrap_or_else(|| folder.clone());
    let out = std::path::absolute(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let computer = std::env::var("COMPUTERNAME").unwrap_or_else(|_| "machine".into());
    let name = format!("rvgpu-collect-{computer}-{}", stamp(secs));
    let work = out.join(&name);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let file = std::fs::File::create(work.join(LOG))
        .map_err(|e| format!("{}: {e}", work.join(LOG).display()))?;
    let mut log = Log { file };
    log.note(&format!("tester's folder {}", folder.display()));
    let windows = system_root();
    for step in PLAN {
        match *step {
            Step::Run { file, commands } => run_step(file, commands, &work, &mut log),
            Step::Journal { file } => journal_step(file, opts.journal, &work, &mut log),
            Step::Take {
                memory_dump: true, ..
            } if !opts.memory_dump => {}
            Step::Take { root, path, to, .. } => {
                let base = match root {
                    Root::Windows => &windows,
                    Root::Folder => &folder,
                };
                take_step(base, path, &work.join(to), &mut log);
            }
        }
    }
    let archive = out.join(format!("{name}.zip"));
    match zip(&work, &archive) {
        Ok(()) => {
            log.note(&format!("archive {}", archive.display()));
            drop(log);
            if let Err(e) = std::fs::remove_dir_all(&work) {
                println!("collect: {} left behind: {e}", work.display());
            }
            Ok(Outcome::Archive(archive))
        }
        Err(why) => {
            log.note(&format!(
                "no archive: {why}; send the folder {}",
                work.display()
            ));
            Ok(Outcome::Folder(work, why))
        }
    }
}

/// The names the gathering writes into the archive: each text file, each file a command
/// writes, each folder a copy goes to, and its log.
pub fn entries() -> Vec<&'static str> {
    let mut out = vec![LOG];
    for step in PLAN {
        match step {
            Step::Run { file, commands } => {
                out.push(file);
                for c in *commands {
                    out.extend(c.args.iter().filter_map(|a| match a {
                        Out(f) => Some(*f),
                        Lit(_) => None,
                    }));
                }
            }
            Step::Take { to, .. } => out.push(to),
            Step::Journal { file } => out.push(file),
        }
    }
    out
}

/// The names a reader of the archive finds in it: [`entries`] and the files copied by name.
pub fn names() -> Vec<&'static str> {
    let mut out = entries();
    for step in PLAN {
        if let Step::Take { path, .. } = step {
            out.extend(
                path.rsplit('\\')
                    .next()
                    .filter(|last| !last.starts_with('*')),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_is_utc_calendar_time() {
        assert_eq!(stamp(0), "19700101-000000");
        // The last second of a leap day, then the first of the next month.
        assert_eq!(stamp(1_709_251_199), "20240229-235959");
        assert_eq!(stamp(1_709_251_200), "20240301-000000");
    }

    #[test]
    fn every_run_step_names_a_distinct_file() {
        let e = entries();
        let mut sorted = e.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let takes = PLAN
            .iter()
            .filter(|s| matches!(s, Step::Take { to: "run", .. }))
            .count();
        // "run" is the one folder several copies share.
        assert_eq!(sorted.len() + takes - 1, e.len(), "{e:?}");
    }
}
