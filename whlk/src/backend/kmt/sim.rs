//! The D3DKMT backend's platform on Linux: the simulated thunks (`rvgpu_simos::kmt`) over the
//! emulated GPU, on a machine brought up the way PnP brings up a Windows test machine (driver
//! loaded, every adapter started, devices running on their own threads) before the case sees
//! it. It exists so that [`super::KmtBackend`] — the code the Windows executable runs — is
//! tested here case by case.

use std::io::{BufRead, BufReader, PipeReader, PipeWriter, Write};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rvgpu_simos::{Machine, UmsProcess};

use super::machine::started_machine;
pub use super::machine::{device, set_device};
use super::remote::{self, Pipe};
use super::{KmtMachine, KmtPlatform};
use crate::backend::nth;
use crate::backend::sim::failure;
use crate::backend::sim::thunks::SessKmt;
use crate::backend::{Failure, ProcessEnd, SessionConfig, TdrTimeouts};

/// Windows' default `TdrDelay`: 2 seconds (*TDR registry keys*,
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/tdr-registry-keys>).
const TDR_DELAY: Duration = Duration::from_secs(2);

/// The simulated platform.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimPlatform;

impl KmtPlatform for SimPlatform {
    type Kmt = SessKmt;

    fn name(&self) -> &'static str {
        "kmt-sim"
    }

    /// What the simulated Windows enables under the run's `HwSchMode` and build.
    fn native_fences(&self) -> bool {
        crate::os::native_fences()
    }

    fn why_no_native_fences(&self) -> String {
        crate::os::why_no_native_fences().unwrap_or_else(|| super::WHY_NO_NATIVE_FENCES.into())
    }

    /// The machine of `config`, its hardware scheduling the machine's (`HwSchMode`, one
    /// setting for the whole boot on Windows), whatever the case asks.
    fn open(&self, config: &SessionConfig) -> Result<Box<dyn KmtMachine<Kmt = SessKmt>>, Failure> {
        let (m, render_only) = started_machine(&SessionConfig {
            hwsch_feature: true,
            ..config.clone()
        })?;
        Ok(Box::new(SimMachine {
            m: Arc::new(m),
            render_only,
            processes: Vec::new(),
        }))
    }
}

struct SimMachine {
    m: Arc<Machine>,
    /// Per adapter, what the driver reported at start (no sources and no children).
    render_only: Vec<bool>,
    /// Each process the backend opened (index = the backend's process index).
    processes: Vec<UmsProcess>,
}

impl KmtMachine for SimMachine {
    type Kmt = SessKmt;

    fn adapters(&self) -> usize {
        self.m.adapter_count()
    }

    fn render_only(&self, i: usize) -> Result<bool, Failure> {
        // What D3DKMTQueryAdapterInfo(KMTQAITYPE_ADAPTERTYPE) tells a Windows program: the OS
        // knows it from the sources and children the driver reported at start.
        self.render_only
            .get(i)
            .copied()
            .ok_or_else(|| Failure::Backend(format!("no adapter {i}")))
    }

    fn open_device(&mut self, i: usize) -> Result<Arc<SessKmt>, Failure> {
        let p = self.m.create_process(i).map_err(failure)?;
        self.processes.push(p);
        Ok(Arc::new(SessKmt::new(self.m.clone(), p)))
    }

    /// A simulated process outside [`SimMachine::processes`]: the case's process indices
    /// stay theirs whenever the hooks' device is opened.
    fn open_hooks_device(&mut self, i: usize) -> Result<Arc<SessKmt>, Failure> {
        let p = self.m.create_process(i).map_err(failure)?;
        Ok(Arc::new(SessKmt::new(self.m.clone(), p)))
    }

    /// A simulated process of its own with its own thunks, served on a thread of its own over
    /// a pipe: the protocol the Windows backend speaks to a child process.
    fn open_remote(&mut self, i: usize) -> Result<Option<Box<dyn Pipe>>, Failure> {
        let p = self.m.create_process(i).map_err(failure)?;
        self.processes.push(p);
        let (from_parent, to_server) = std::io::pipe().map_err(io)?;
        let (from_server, to_parent) = std::io::pipe().map_err(io)?;
        let kmt = Arc::new(SessKmt::new(self.m.clone(), p));
        let server = std::thread::Builder::new()
            .name(format!("process {:?}", p.pid))
            .spawn(move || remote::serve(kmt, BufReader::new(from_parent), to_parent))
            .map_err(io)?;
        Ok(Some(Box::new(SimPipe {
            m: self.m.clone(),
            p,
            to: Some(to_server),
            from: BufReader::new(from_server),
            server: Some(server),
        })))
    }

    fn close_device(&mut self, p: usize, how: ProcessEnd) -> Result<(), Failure> {
        let up = *nth(&self.processes, p, "process")?;
        match how {
            ProcessEnd::Normal => self.m.exit_process(&up),
            ProcessEnd::Abnormal => self.m.kill_process(&up),
        }
        .map_err(failure)
    }

    fn duplicate_nt_handle(&self, from: usize, nt: u64, to: usize) -> Result<u64, Failure> {
        let pid = |p: usize| {
            self.processes
                .get(p)
                .map(|u| u.pid)
                .ok_or_else(|| Failure::Backend(format!("no process {p}")))
        };
        self.m
            .duplicate_handle(pid(from)?, nt, pid(to)?)
            .map_err(failure)
    }

    /// The simulated OS's TDR with the timeout a Windows program gets: `TdrDelay`'s default
    /// (2 s, the *TDR registry keys* page), which no D3DKMT call changes; a HANG is still
    /// found at once, by the device's own report.
    fn enable_tdr(&self, i: usize, t: TdrTimeouts) -> Result<(), Failure> {
        let windows = TdrTimeouts {
            timeout: TDR_DELAY,
            preempt_timeout: t.preempt_timeout.max(Duration::from_millis(50)),
            ..t
        };
        crate::backend::sim::tdr::enable_tdr_on(&self.m, i, windows)
    }

    fn fault(&self) -> Option<Failure> {
        self.m.fault().map(failure)
    }
}

fn io(e: std::io::Error) -> Failure {
    Failure::Backend(format!("process server: {e}"))
}

/// The pipe to a simulated process's server thread.
struct SimPipe {
    m: Arc<Machine>,
    p: UmsProcess,
    to: Option<PipeWriter>,
    from: BufReader<PipeReader>,
    server: Option<JoinHandle<()>>,
}

impl SimPipe {
    /// Closes the server's input and waits for it to end.
    fn stop(&mut self) {
        drop(self.to.take());
        if let Some(t) = self.server.take() {
            let _ = t.join();
        }
    }
}

impl Pipe for SimPipe {
    fn call(&mut self, line: &str) -> Result<String, Failure> {
        let to = self
            .to
            .as_mut()
            .ok_or_else(|| Failure::Backend("the process has ended".into()))?;
        writeln!(to, "{line}")
            .and_then(|()| to.flush())
            .map_err(io)?;
        let mut answer = String::new();
        if self.from.read_line(&mut answer).map_err(io)? == 0 {
            return Err(self.m.fault().map_or_else(
                || Failure::Backend("the process server ended".into()),
                failure,
            ));
        }
        Ok(answer.trim_end().to_owned())
    }

    /// A normal end: the server has closed its queues (`exit`), then the process exits. A kill:
    /// the process dies first, and the server's objects are dropped without their thunks
    /// (their handles died with it).
    fn end(&mut self, how: ProcessEnd) -> Result<(), Failure> {
        let r = match how {
            ProcessEnd::Normal => {
                self.stop();
                self.m.exit_process(&self.p)
            }
            ProcessEnd::Abnormal => {
                let r = self.m.kill_process(&self.p);
                self.stop();
                r
            }
        };
        r.map_err(failure)
    }
}

impl Drop for SimPipe {
    fn drop(&mut self) {
        self.stop();
    }
}
