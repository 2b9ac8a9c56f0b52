//! The harness's other processes on Windows: `rvgpu-whlk` starts itself as a child
//! (`rvgpu-whlk child ROLE`, a hidden subcommand), hands it kernel objects by NT handle as
//! applications share them, and reads its result over a pipe.
//!
//! The protocol, one line each way at a time over the child's standard input and output:
//! - parent → child: `handle NAME VALUE` for each object, then `go`. `VALUE` is the handle's
//!   value *in the child*: the parent duplicates its own handle into the child's handle table
//!   with `DuplicateHandle` (the child's process handle as the target; the child inherits
//!   nothing but its pipes). A native fence is shared the same way once `D3DKMTShareObjects`
//!   has given the parent an NT handle for it.
//! - child → parent: `result ok TEXT` or `result err TEXT`, then it exits.
//!
//! A child that is killed (`TerminateProcess`, [`Child::kill`]) sends nothing more.
//!
//! What a child does is its *role* ([`ROLES`]). In the `process` role it is one of a case's
//! processes ([`start_process`]): after `go` it answers `ready` once it has a D3DKMT device of
//! its own, then serves the requests of `crate::backend::kmt::remote` line by line. The Windows backend reaches its other processes
//! only through [`Child`]; `rvgpu-whlk child-check` runs [`check`], which needs no GPU, and the
//! test command runs it under Wine (tests/wine.rs).
//!
//! References: DuplicateHandle
//! <https://learn.microsoft.com/en-us/windows/win32/api/handleapi/nf-handleapi-duplicatehandle>,
//! CreateFileMappingW
//! <https://learn.microsoft.com/en-us/windows/win32/api/memoryapi/nf-memoryapi-createfilemappingw>.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::windows::io::AsRawHandle;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use rvgpu_hw::cmd::Command as Packet;
use rvgpu_umd::kmt_windows::WinKmt;

use crate::backend::kmt::remote::{Pipe, RemoteProcess};
use crate::backend::{ExecMode, Failure, ProcessEnd, SessionConfig, SubmitPath};
use windows_sys::Win32::Foundation::{
    CloseHandle, DuplicateHandle, DUPLICATE_SAME_ACCESS, HANDLE, INVALID_HANDLE_VALUE, LUID,
    WAIT_OBJECT_0,
};
use windows_sys::Win32::System::Memory::{
    CreateFileMappingW, MapViewOfFile, UnmapViewOfFile, FILE_MAP_READ, FILE_MAP_WRITE,
    MEMORY_MAPPED_VIEW_ADDRESS, PAGE_READWRITE,
};
use windows_sys::Win32::System::Threading::{
    CreateEventW, GetCurrentProcess, GetCurrentProcessId, SetEvent, WaitForSingleObject,
};

/// A kernel handle this program owns, closed when dropped.
#[derive(Debug)]
pub struct Owned(HANDLE);

impl Owned {
    /// Takes ownership of `h`; `None` for a null or invalid handle (a failed create).
    pub fn new(h: HANDLE) -> Option<Self> {
        (!h.is_null() && h != INVALID_HANDLE_VALUE).then_some(Self(h))
    }

    /// The raw handle, still owned.
    pub fn raw(&self) -> HANDLE {
        self.0
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: this program owns the handle and closes it once.
        unsafe { CloseHandle(self.0) };
    }
}

/// A child process of the harness, in the role it was started for.
#[derive(Debug)]
pub struct Child {
    process: std::process::Child,
    to: Option<ChildStdin>,
    from: BufReader<ChildStdout>,
}

impl Child {
    /// Starts `rvgpu-whlk child ROLE` from this program's own executable.
    pub fn spawn(role: &str) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        let mut process = Command::new(exe)
            .arg("child")
            .arg(role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the child ({role}): {e}"))?;
        let to = process.stdin.take();
        let from = process
            .stdout
            .take()
            .map(BufReader::new)
            .ok_or("the child has no output pipe")?;
        Ok(Self { process, to, from })
    }

    /// The child's process ID.
    pub fn id(&self) -> u32 {
        self.process.id()
    }

    /// Duplicates `h` (a handle of this program) into the child and tells it the value under
    /// `name`; the value in the child.
    pub fn give(&mut self, name: &str, h: &Owned) -> Result<usize, String> {
        let mut theirs: HANDLE = std::ptr::null_mut();
        // SAFETY: both process handles are valid (our pseudo-handle, the child's handle held by
        // `process`); `theirs` is a valid out-pointer. The child's copy is closed by the child
        // or by its exit.
        let ok = unsafe {
            DuplicateHandle(
                GetCurrentProcess(),
                h.raw(),
                self.process.as_raw_handle(),
                &raw mut theirs,
                0,
                0,
                DUPLICATE_SAME_ACCESS,
            )
        };
        if ok == 0 {
            return Err(format!(
                "DuplicateHandle of {name} into the child: {}",
                std::io::Error::last_os_error()
            ));
        }
        let value = theirs as usize;
        self.send(&format!("handle {name} {value:#x}"))?;
        Ok(value)
    }

    /// One protocol line to the child.
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let to = self.to.as_mut().ok_or("the child's input is closed")?;
        writeln!(to, "{line}")
            .and_then(|()| to.flush())
            .map_err(|e| format!("writing to the child: {e}"))
    }

    /// Tells the child to start, waits for its result line and its exit: `Ok(text)` for
    /// `result ok text`, `Err` for `result err`, a missing result, or a failed exit.
    pub fn result(mut self) -> Result<String, String> {
        self.send("go")?;
        // End of input: the child reads no more.
        drop(self.to.take());
        let mut line = String::new();
        let mut result = Err("the child ended without a result".to_owned());
        while self
            .from
            .read_line(&mut line)
            .map_err(|e| format!("reading the child: {e}"))?
            > 0
        {
            if let Some(text) = line.trim_end().strip_prefix("result ok") {
                result = Ok(text.trim_start().to_owned());
            } else if let Some(text) = line.trim_end().strip_prefix("result err") {
                result = Err(text.trim_start().to_owned());
            }
            line.clear();
        }
        let status = self
            .process
            .wait()
            .map_err(|e| format!("waiting for the child: {e}"))?;
        match result {
            Ok(_) if !status.success() => Err(format!("the child exited with {status}")),
            r => r,
        }
    }

    /// Tells the child to start without waiting for its result.
    pub fn start(&mut self) -> Result<(), String> {
        self.send("go")
    }

    /// The child's next line (without its end).
    pub fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        let n = self
            .from
            .read_line(&mut line)
            .map_err(|e| format!("reading the child: {e}"))?;
        if n == 0 {
            return Err("the child ended".into());
        }
        Ok(line.trim_end().to_owned())
    }

    /// One request line to a child that serves requests, and its answer.
    pub fn call(&mut self, line: &str) -> Result<String, String> {
        self.send(line)?;
        self.line()
    }

    /// Closes the child's input and waits for it to exit; its exit status.
    pub fn finish(mut self) -> Result<std::process::ExitStatus, String> {
        drop(self.to.take());
        self.process
            .wait()
            .map_err(|e| format!("waiting for the child: {e}"))
    }

    /// Ends the child as Task Manager does (`TerminateProcess`): no clean-up of its own runs.
    /// Its exit status (never a success).
    pub fn kill(mut self) -> Result<std::process::ExitStatus, String> {
        self.process
            .kill()
            .and_then(|()| self.process.wait())
            .map_err(|e| format!("killing the child: {e}"))
    }
}

/// What the parent handed a child: its handles by name, and the protocol lines that were not
/// handles (a role's parameters).
#[derive(Debug, Default)]
pub struct Given {
    /// Handles by name, as values in this (the child's) process.
    pub handles: BTreeMap<String, HANDLE>,
    /// The other lines before `go`.
    pub lines: Vec<String>,
}

impl Given {
    /// The handle given under `name`.
    pub fn handle(&self, name: &str) -> Result<HANDLE, String> {
        self.handles
            .get(name)
            .copied()
            .ok_or_else(|| format!("no handle named {name} was given"))
    }
}

/// A child's role: what it does with what it was given; its result text.
pub type Role = fn(&Given) -> Result<String, String>;

/// The roles a child can play.
pub const ROLES: &[(&str, Role)] = &[
    ("write-section-signal-event", write_section_signal_event),
    ("wait-event", wait_event),
    ("process", process),
    ("process-sim", process_sim),
];

/// Starts a child in the `process` role on the adapter with LUID (`high`, `low`): once it says
/// `ready` it has its own D3DKMT device there and serves the requests of
/// `crate::backend::kmt::remote`. A child that could not open the device reports why.
pub fn start_process(high: i32, low: u32) -> Result<Child, String> {
    let mut child = Child::spawn("process")?;
    child.send(&format!("adapter {high:x} {low:x}"))?;
    child.start()?;
    let first = child.line()?;
    if first == "ready" {
        return Ok(child);
    }
    let why = first
        .strip_prefix("result err ")
        .unwrap_or(&first)
        .to_owned();
    let _ = child.finish();
    Err(format!("the child process {why}"))
}

/// A role: a case's other process. Opens a D3DKMT device of its own on the adapter the
/// parent names (`adapter HIGH LOW`, the LUID), says `ready`, and serves the parent's requests
/// until `exit` or the end of its input.
fn process(given: &Given) -> Result<String, String> {
    let luid = given
        .lines
        .iter()
        .find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["adapter", high, low] => Some((
                    u32::from_str_radix(high, 16).ok()? as i32,
                    u32::from_str_radix(low, 16).ok()?,
                )),
                _ => None,
            }
        })
        .ok_or("was given no `adapter HIGH LOW` line")?;
    let kmt = WinKmt::open(LUID {
        LowPart: luid.1,
        HighPart: luid.0,
    })
    .map_err(|s| {
        format!(
            "could not open a D3DKMT device on adapter {:x}:{:x}: status {:#x}",
            luid.0, luid.1, s.0 as u32
        )
    })?;
    serve_requests(std::sync::Arc::new(kmt))
}

/// Says `ready`, then serves the parent's requests over `kmt` until `exit` or the end of input.
fn serve_requests<K: crate::backend::kmt::KmtSync + Send + Sync>(
    kmt: std::sync::Arc<K>,
) -> Result<String, String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing to the parent: {e}"))?;
    crate::backend::kmt::remote::serve(kmt, std::io::stdin().lock(), out);
    Ok("served".into())
}

/// The child's side: reads what the parent gives until `go`, plays `role`, writes the result
/// line. The process's exit code: 0 when the role succeeded.
pub fn serve(role: &str) -> i32 {
    let outcome = match ROLES.iter().find(|(name, _)| *name == role) {
        None => Err(format!("unknown role {role}")),
        Some((_, play)) => receive().and_then(|given| play(&given)),
    };
    let (line, code) = match outcome {
        Ok(text) => (format!("result ok {text}"), 0),
        Err(text) => (format!("result err {text}"), 1),
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        return 2;
    }
    code
}

/// The parent's lines up to `go`.
fn receive() -> Result<Given, String> {
    let mut given = Given::default();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("reading the parent: {e}"))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["go"] => return Ok(given),
            ["handle", name, value] => {
                let v = value
                    .strip_prefix("0x")
                    .and_then(|h| usize::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad handle value in `{line}`"))?;
                given.handles.insert((*name).to_owned(), v as HANDLE);
            }
            _ => given.lines.push(line),
        }
    }
    Err("the parent closed the pipe before `go`".into())
}

/// What [`write_section_signal_event`] writes: a text naming the writer's process.
fn signature(pid: u32) -> String {
    format!("written by process {pid}")
}

/// The size of [`check`]'s section.
const SECTION_BYTES: usize = 4096;

/// A role: writes [`signature`] into the section given as `section`, then sets the event
/// given as `event`.
fn write_section_signal_event(given: &Given) -> Result<String, String> {
    let section = given.handle("section")?;
    let event = given.handle("event")?;
    // SAFETY: GetCurrentProcessId has no preconditions.
    let me = unsafe { GetCurrentProcessId() };
    let text = signature(me);
    // SAFETY: `section` is a section handle the parent gave with write access; the view is
    // `SECTION_BYTES` long and unmapped below.
    let view = unsafe { MapViewOfFile(section, FILE_MAP_WRITE, 0, 0, SECTION_BYTES) };
    if view.Value.is_null() {
        return Err(format!(
            "MapViewOfFile of the given section: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the view is writable for SECTION_BYTES, more than the text's length.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), view.Value.cast::<u8>(), text.len());
        UnmapViewOfFile(view);
    }
    // SAFETY: `event` is an event handle the parent gave.
    if unsafe { SetEvent(event) } == 0 {
        return Err(format!(
            "SetEvent of the given event: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(format!("pid {me}"))
}

/// A role: waits up to a minute for the event given as `event` (a child to be killed while it
/// waits).
fn wait_event(given: &Given) -> Result<String, String> {
    let event = given.handle("event")?;
    // SAFETY: `event` is an event handle the parent gave.
    match unsafe { WaitForSingleObject(event, wait_ms(Duration::from_secs(60))) } {
        WAIT_OBJECT_0 => Ok("the event was set".into()),
        other => Err(format!("the wait ended with {other:#x}")),
    }
}

/// The protocol proved without a GPU: an event and a section of this process, duplicated into
/// a child, the child writes the section and sets the event, and reports; this process then
/// sees the event set and the child's text in its own view. The summary, or what failed.
pub fn check() -> Result<String, String> {
    // SAFETY: unnamed, default security, manual reset, not set.
    let event = Owned::new(unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) })
        .ok_or_else(|| format!("CreateEventW: {}", std::io::Error::last_os_error()))?;
    // SAFETY: a pagefile-backed section of SECTION_BYTES, unnamed, default security.
    let section = Owned::new(unsafe {
        CreateFileMappingW(
            INVALID_HANDLE_VALUE,
            std::ptr::null(),
            PAGE_READWRITE,
            0,
            SECTION_BYTES as u32,
            std::ptr::null(),
        )
    })
    .ok_or_else(|| format!("CreateFileMappingW: {}", std::io::Error::last_os_error()))?;
    let mut child = Child::spawn("write-section-signal-event")?;
    let pid = child.id();
    // SAFETY: GetCurrentProcessId has no preconditions.
    if pid == unsafe { GetCurrentProcessId() } {
        return Err("the child has this process's ID".into());
    }
    child.give("section", &section)?;
    child.give("event", &event)?;
    let reported = child.result()?;
    // SAFETY: our own event handle.
    let waited = unsafe { WaitForSingleObject(event.raw(), wait_ms(Duration::from_secs(10))) };
    if waited != WAIT_OBJECT_0 {
        return Err(format!(
            "the event is not set after the child's result ({waited:#x})"
        ));
    }
    let expected = signature(pid);
    // SAFETY: our own section, mapped for reading, SECTION_BYTES long, unmapped below.
    let view = unsafe { MapViewOfFile(section.raw(), FILE_MAP_READ, 0, 0, SECTION_BYTES) };
    if view.Value.is_null() {
        return Err(format!(
            "MapViewOfFile: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the view is readable for SECTION_BYTES, at least the expected text's length.
    let seen =
        unsafe { std::slice::from_raw_parts(view.Value.cast::<u8>(), expected.len()) }.to_vec();
    unmap(view);
    if seen != expected.as_bytes() {
        return Err(format!(
            "the section holds {:?}, not {expected:?}",
            String::from_utf8_lossy(&seen)
        ));
    }
    let killed = killed_while_waiting()?;
    let device = process_over_a_simulated_machine()?;
    Ok(format!(
        "child process {pid} ({reported}) received an event and a section by DuplicateHandle, \
         wrote the section, set the event, reported over its pipe; {killed}; {device}"
    ))
}

/// A child killed while it waits on an event of ours ends without a result, and the event,
/// still ours, is neither set nor lost.
fn killed_while_waiting() -> Result<String, String> {
    // SAFETY: unnamed, default security, manual reset, not set.
    let event = Owned::new(unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) })
        .ok_or_else(|| format!("CreateEventW: {}", std::io::Error::last_os_error()))?;
    let mut child = Child::spawn("wait-event")?;
    let pid = child.id();
    child.give("event", &event)?;
    child.start()?;
    let status = child.kill()?;
    if status.success() {
        return Err(format!("the killed child {pid} exited with success"));
    }
    // SAFETY: our own event handle; a zero timeout only reads its state.
    if unsafe { WaitForSingleObject(event.raw(), 0) } == WAIT_OBJECT_0 {
        return Err("the event is set though the killed child never set it".into());
    }
    // SAFETY: our own event handle.
    if unsafe { SetEvent(event.raw()) } == 0 {
        return Err(format!(
            "SetEvent after the child's death: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(format!(
        "child process {pid}, killed while it waited on our event, ended ({status})"
    ))
}

/// The pipe to a child process of the harness.
pub struct ChildPipe(Option<Child>);

impl ChildPipe {
    /// The pipe to `child`, which serves a case's process.
    pub fn new(child: Child) -> Self {
        Self(Some(child))
    }

    fn child(&mut self) -> Result<&mut Child, Failure> {
        self.0
            .as_mut()
            .ok_or_else(|| Failure::Backend("the child process has ended".into()))
    }
}

impl Pipe for ChildPipe {
    fn call(&mut self, line: &str) -> Result<String, Failure> {
        self.child()?.call(line).map_err(Failure::Backend)
    }

    /// A normal end: the child has closed its queues (`exit`) and exits; its device goes with
    /// it. An abnormal one: `TerminateProcess`, the OS destroys what it held.
    fn end(&mut self, how: ProcessEnd) -> Result<(), Failure> {
        let child = self
            .0
            .take()
            .ok_or_else(|| Failure::Backend("the child process has ended".into()))?;
        let r = match how {
            ProcessEnd::Normal => child.finish(),
            ProcessEnd::Abnormal => child.kill(),
        };
        r.map(drop).map_err(Failure::Backend)
    }
}

impl Drop for ChildPipe {
    /// A case that left its process running: the process is killed with the session.
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            let _ = c.kill();
        }
    }
}

/// A case's process as a child, through the very requests the Windows backend sends, without
/// a GPU: the child serves over a simulated machine of its own (role `process-sim`). A buffer,
/// a user-mode queue, a FILL submitted and waited for, the word read back, then the child
/// killed and its pipe found dead.
fn process_over_a_simulated_machine() -> Result<String, String> {
    let mut child = Child::spawn("process-sim")?;
    let pid = child.id();
    child.start()?;
    let first = child.line()?;
    if first != "ready" {
        return Err(format!("the process-sim child said `{first}`"));
    }
    let r = RemoteProcess::new(Box::new(ChildPipe::new(child)));
    let steps = || -> Result<u64, Failure> {
        let (va, _) = r.create_buffer(0, 4096)?;
        r.create_queue(1, 0, SubmitPath::UserMode)?;
        let v = r.submit(
            1,
            &[Packet::Fill {
                dst: va,
                bytes: 8,
                pattern: 0x5A5A,
            }],
        )?;
        r.wait(1, v)?;
        r.read(0, 0)
    };
    let word = steps().map_err(|e| format!("child process {pid}: {e:?}"))?;
    if word != 0x5A5A {
        return Err(format!(
            "child process {pid}'s buffer reads {word:#x} after its fill"
        ));
    }
    r.end(ProcessEnd::Abnormal)
        .map_err(|e| format!("killing child process {pid}: {e:?}"))?;
    if r.read(0, 0).is_ok() {
        return Err(format!("child process {pid} answers after its kill"));
    }
    Ok(format!(
        "child process {pid}, a case's process over a simulated machine, made a buffer and a \
         queue, ran a fill and read it back through the requests, and was killed"
    ))
}

/// A role: a case's process over a simulated machine of its own, for the GPU-less check.
fn process_sim(_given: &Given) -> Result<String, String> {
    use crate::backend::kmt::{sim::SimPlatform, KmtPlatform};
    let config = SessionConfig::new(ExecMode::Threaded);
    let mut machine = SimPlatform
        .open(&config)
        .map_err(|e| format!("could not start a simulated machine: {e:?}"))?;
    let kmt = machine
        .open_device(0)
        .map_err(|e| format!("could not open a device on the simulated machine: {e:?}"))?;
    serve_requests(kmt)
}

fn unmap(view: MEMORY_MAPPED_VIEW_ADDRESS) {
    // SAFETY: a view this program mapped, unmapped once.
    unsafe { UnmapViewOfFile(view) };
}

/// A wait in whole milliseconds for `WaitForSingleObject`.
fn wait_ms(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX - 1)
}
