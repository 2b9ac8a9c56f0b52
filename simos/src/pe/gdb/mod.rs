//! A debugger attached to the image: a GDB remote-serial-protocol stub (`RVGPU_GDB=ADDR`).
//!
//! **Off by default.** Nothing here runs unless `RVGPU_GDB=HOST:PORT` is set (read once, when
//! the first processor is made) or [`listen`] is called before any processor exists: only then
//! do processors get the instruction hook, so a run without a debugger executes exactly what it
//! did before. When a session ends, the hook returns at once.
//!
//! **Attaching.** The stub listens on the address and, at the first instruction any processor
//! executes (`DriverEntry`, before the first DDI), waits for one debugger connection: the
//! debugger sees the processor stopped there and sets its breakpoints before anything ran.
//!
//! **Stopping.** The debugger is served on the thread whose processor stopped, while it holds
//! the lock the processors take turns on (`cpu.rs`): every other processor is between
//! instructions (waiting for the lock, or in host code that has to take it to go on), so the
//! whole image is stopped, as a kernel debugger stops every processor of a Windows machine.
//! Every processor is a thread of the debugger (thread id = processor number); breakpoints and
//! single steps are the instruction hook's, so the image's bytes are never changed. A memory
//! write the debugger makes (a patch) makes every processor flush its translations before its
//! next instruction (`cpu/code.rs`), so a patch of code that already ran runs at once.
//! The debugger's interrupt is looked for every `POLL_EVERY` instructions, so it stops the
//! image only while image code runs. A bug check raised while the image runs (its own fault,
//! or a routine it called) stops the debugger with a signal before the bug check is raised
//! (`monitor bugcheck`).
//!
//! **Untrusted input.** Line noise and packets with a bad checksum never reach the protocol
//! library (`framing`); what the packets ask for is bounded here: memory goes through
//! `process_vm_readv`/`process_vm_writev`, so an address the process cannot access is an error
//! reply, never a fault; an unknown thread is an error reply; breakpoints are capped; a
//! protocol error ends the session and the run goes on without a debugger.

mod framing;
mod state;
mod target;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

pub(super) use gdbstub::common::Signal;
use gdbstub::common::Tid;
use gdbstub::conn::{Connection, ConnectionExt};
use gdbstub::stub::state_machine::GdbStubStateMachine;
use gdbstub::stub::{GdbStub, MultiThreadStopReason};

use super::unicorn::Uc;
use crate::base::lock::lock;
use framing::{Frame, Framing};
pub(super) use state::Processor;
pub use state::{modules, note_module};
use state::{BREAKPOINTS, BREAKPOINT_COUNT, LAST_BUGCHECK, PROCESSORS, STEP};
pub use target::slide;
use target::Stopped;

/// Whether a debugger is attached or awaited: the processors' hook does nothing else when
/// false.
static LIVE: AtomicBool = AtomicBool::new(false);

/// Whether the stub waits for its debugger (the next instruction attaches it).
static LISTENING: AtomicBool = AtomicBool::new(false);

/// Whether processors get the instruction hook (a debugger was asked for before the first
/// processor was made).
static HOOKED: AtomicBool = AtomicBool::new(false);

/// Set once the first processor exists: [`listen`] is refused after that.
static STARTED: AtomicBool = AtomicBool::new(false);

type Machine = GdbStubStateMachine<'static, Stopped, Link>;

/// The session: the listener until the debugger connects, then the protocol's state.
enum Session {
    None,
    Listening(TcpListener),
    Attached(Machine),
}

static SESSION: Mutex<Session> = Mutex::new(Session::None);

/// Listens for a debugger on `addr` (`127.0.0.1:0` picks a port). Must come before the first
/// call into any image; the first instruction then waits for the connection. Returns the
/// address listened on.
pub fn listen(addr: &str) -> Result<SocketAddr, String> {
    if STARTED.load(Ordering::Acquire) {
        return Err("the debugger stub must be set up before the first call into an image".into());
    }
    let l =
        TcpListener::bind(addr).map_err(|e| format!("RVGPU_GDB: cannot listen on {addr}: {e}"))?;
    let at = l.local_addr().map_err(|e| format!("RVGPU_GDB: {e}"))?;
    *lock(&SESSION) = Session::Listening(l);
    LISTENING.store(true, Ordering::Release);
    HOOKED.store(true, Ordering::Release);
    LIVE.store(true, Ordering::Release);
    Ok(at)
}

/// Called when a processor is made: reads `RVGPU_GDB` once. True when processors get the
/// instruction hook.
pub(super) fn processors_hooked() -> bool {
    static FROM_ENV: OnceLock<()> = OnceLock::new();
    FROM_ENV.get_or_init(|| {
        if let Some(addr) = std::env::var_os("RVGPU_GDB") {
            let addr = addr.to_string_lossy().into_owned();
            match listen(&addr) {
                Ok(at) => eprintln!("rvgpu: debugger stub listening on {at}"),
                Err(e) => eprintln!("rvgpu: {e}"),
            }
        }
        STARTED.store(true, Ordering::Release);
    });
    HOOKED.load(Ordering::Acquire)
}

/// Registers processor `id` (its Unicorn instance), a thread for the debugger.
pub(super) fn add_processor(id: u32, uc: Uc) {
    lock(&PROCESSORS).insert(id, uc as usize);
}

/// Forgets processor `id` (closed).
pub(super) fn remove_processor(id: u32) {
    lock(&PROCESSORS).remove(&id);
}

/// Instructions between two looks at the connection for the debugger's interrupt (Ctrl-C)
/// while the image runs.
const POLL_EVERY: u32 = 1 << 16;

/// Instructions executed under the debugger (for [`POLL_EVERY`]).
static TICKS: AtomicU32 = AtomicU32::new(0);

/// Before processor `p` executes the instruction at `addr` (the hook; the caller holds the
/// guest lock). Stops there when the debugger asked to.
pub(super) fn at_instruction(p: Processor, addr: u64) {
    if !LIVE.load(Ordering::Relaxed) {
        return;
    }
    let step = STEP.load(Ordering::Relaxed) == p.id;
    let bp = BREAKPOINT_COUNT.load(Ordering::Relaxed) != 0
        && BREAKPOINTS
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&addr);
    let poll = TICKS
        .fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(POLL_EVERY);
    if !(step || bp || poll || LISTENING.load(Ordering::Relaxed)) {
        return;
    }
    let Some(tid) = Tid::new(p.id as usize) else {
        return;
    };
    let mut session = lock(&SESSION);
    let machine = match std::mem::replace(&mut *session, Session::None) {
        Session::Listening(l) => {
            drop(session);
            return attach(l, p);
        }
        Session::None => return,
        Session::Attached(m) => m,
    };
    drop(session);
    let reason = if bp {
        MultiThreadStopReason::SwBreak(tid)
    } else if step {
        MultiThreadStopReason::SignalWithThread {
            tid,
            signal: Signal::SIGTRAP,
        }
    } else {
        return interrupt_if_asked(machine, p);
    };
    if step {
        STEP.store(0, Ordering::Relaxed);
    }
    stop(machine, p, reason);
}

/// While the image runs: if the debugger sent something (its interrupt), hands it to the
/// protocol, and stops `p` with SIGINT when it was the interrupt.
fn interrupt_if_asked(machine: Machine, p: Processor) {
    let GdbStubStateMachine::Running(mut r) = machine else {
        *lock(&SESSION) = Session::Attached(machine);
        return;
    };
    if !r.borrow_conn().readable() {
        *lock(&SESSION) = Session::Attached(r.into());
        return;
    }
    let byte = match r.borrow_conn().read() {
        Ok(b) => b,
        Err(e) => return end(&format!("connection: {e}")),
    };
    let mut t = Stopped::new(p);
    let machine = match r.incoming_data(&mut t, byte) {
        Ok(GdbStubStateMachine::CtrlCInterrupt(c)) => {
            let reason =
                Tid::new(p.id as usize).map(|tid| MultiThreadStopReason::SignalWithThread {
                    tid,
                    signal: Signal::SIGINT,
                });
            match c.interrupt_handled(&mut t, reason) {
                Ok(m) => m,
                Err(e) => return end(&format!("{e:?}")),
            }
        }
        Ok(m) => m,
        Err(e) => return end(&format!("{e:?}")),
    };
    serve(machine, &mut t);
}

/// A bug check is about to be raised while processor `p` runs the image (`what` names it):
/// the debugger stops with `signal` first.
pub(super) fn bug_check(p: Processor, what: String, signal: Signal) {
    if !LIVE.load(Ordering::Relaxed) {
        return;
    }
    let Some(tid) = Tid::new(p.id as usize) else {
        return;
    };
    let Some(machine) = take_attached() else {
        return;
    };
    eprintln!("rvgpu: {what}: stopped in the debugger");
    *lock(&LAST_BUGCHECK) = Some(what);
    stop(
        machine,
        p,
        MultiThreadStopReason::SignalWithThread { tid, signal },
    );
}

/// Waits for the debugger on `l` and serves it with `p` stopped at its first instruction.
fn attach(l: TcpListener, p: Processor) {
    LISTENING.store(false, Ordering::Release);
    let at = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
    for (name, base, _) in modules() {
        eprintln!(
            "rvgpu: {name} at {base:#x} (slide {:#x})",
            slide(base).unwrap_or(0)
        );
    }
    eprintln!("rvgpu: waiting for a debugger on {at}");
    let stream = match l.accept() {
        Ok((s, _)) => s,
        Err(e) => return end(&format!("accept: {e}")),
    };
    let _ = stream.set_nodelay(true);
    let mut t = Stopped::new(p);
    let machine = match GdbStub::new(Link::new(stream)).run_state_machine(&mut t) {
        Ok(m) => m,
        Err(e) => return end(&format!("{e:?}")),
    };
    serve(machine, &mut t);
}

/// Reports `reason` to the attached debugger and serves it until it resumes.
fn stop(machine: Machine, p: Processor, reason: MultiThreadStopReason<u64>) {
    let mut t = Stopped::new(p);
    let machine = match machine {
        GdbStubStateMachine::Running(r) => match r.report_stop(&mut t, reason) {
            Ok(m) => m,
            Err(e) => return end(&format!("{e:?}")),
        },
        other => other,
    };
    serve(machine, &mut t);
}

/// Takes the attached session's protocol state, if a debugger is attached.
fn take_attached() -> Option<Machine> {
    let mut session = lock(&SESSION);
    match std::mem::replace(&mut *session, Session::None) {
        Session::Attached(m) => Some(m),
        other => {
            *session = other;
            None
        }
    }
}

/// Feeds the debugger's bytes to the protocol until it resumes the target (the session is
/// stored again) or goes away (the run continues without it).
fn serve(mut machine: Machine, t: &mut Stopped) {
    let mut framing = Framing::default();
    loop {
        machine = match machine {
            GdbStubStateMachine::Idle(mut i) => {
                let byte = match i.borrow_conn().read() {
                    Ok(b) => b,
                    Err(e) => return end(&format!("connection: {e}")),
                };
                match framing.push(byte) {
                    Frame::Nothing => GdbStubStateMachine::Idle(i),
                    Frame::Nack => {
                        let c = i.borrow_conn();
                        if let Err(e) = c.write(b'-').and_then(|()| c.flush()) {
                            return end(&format!("connection: {e}"));
                        }
                        GdbStubStateMachine::Idle(i)
                    }
                    Frame::TooLong => return end("a packet longer than any the stub takes"),
                    Frame::Bytes(bytes) => {
                        let mut m = GdbStubStateMachine::Idle(i);
                        for b in bytes {
                            m = match m {
                                GdbStubStateMachine::Idle(i) => match i.incoming_data(t, b) {
                                    Ok(m) => m,
                                    Err(e) => return end(&format!("{e:?}")),
                                },
                                // A whole packet changes the state at its last byte only.
                                other => other,
                            };
                        }
                        m
                    }
                }
            }
            GdbStubStateMachine::Running(r) => {
                *lock(&SESSION) = Session::Attached(r.into());
                return;
            }
            GdbStubStateMachine::CtrlCInterrupt(c) => {
                let reason: Option<MultiThreadStopReason<u64>> =
                    Some(MultiThreadStopReason::Signal(Signal::SIGINT));
                match c.interrupt_handled(t, reason) {
                    Ok(m) => m,
                    Err(e) => return end(&format!("{e:?}")),
                }
            }
            GdbStubStateMachine::Disconnected(d) => {
                let why = d.get_reason();
                return end(&format!("the debugger left ({why:?}); the run goes on"));
            }
        }
    }
}

/// Ends the session: no breakpoints, no stepping, the hook does nothing from now on.
fn end(why: &str) {
    eprintln!("rvgpu: debugger session ended: {why}");
    LIVE.store(false, Ordering::Release);
    STEP.store(0, Ordering::Relaxed);
    BREAKPOINTS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    BREAKPOINT_COUNT.store(0, Ordering::Relaxed);
    *lock(&SESSION) = Session::None;
}

/// The TCP connection, with the replies gathered and sent whole at each flush.
pub(super) struct Link {
    stream: TcpStream,
    out: Vec<u8>,
}

impl Link {
    fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            out: Vec::new(),
        }
    }
}

impl Link {
    /// Whether a byte can be read at once.
    fn readable(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut pfd = libc::pollfd {
            fd: self.stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call; timeout 0 (no wait).
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        n > 0
    }
}

impl Connection for Link {
    type Error = std::io::Error;

    fn write(&mut self, byte: u8) -> Result<(), Self::Error> {
        self.out.push(byte);
        Ok(())
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Self::Error> {
        self.out.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        let r = Write::write_all(&mut self.stream, &self.out);
        self.out.clear();
        r
    }
}

impl ConnectionExt for Link {
    fn read(&mut self) -> Result<u8, Self::Error> {
        let mut b = [0u8; 1];
        Read::read_exact(&mut self.stream, &mut b)?;
        let [v] = b;
        Ok(v)
    }

    fn peek(&mut self) -> Result<Option<u8>, Self::Error> {
        let mut b = [0u8; 1];
        let n = self.stream.peek(&mut b)?;
        let [v] = b;
        Ok((n > 0).then_some(v))
    }
}

#[cfg(test)]
mod tests;
