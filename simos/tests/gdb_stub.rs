//! The emulator's debugger stub (`simos/src/pe/gdb`) against a hostile debugger: the packets
//! arrive over TCP from anyone who can connect, so every request for a bad address, an unknown
//! thread, too many breakpoints or an oversized packet is an error reply or the end of the
//! session — never a crash — and the machine runs on.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use rvgpu_simos::pe::{gdb, DriverBuild};
use rvgpu_simos::{MachineConfig, Mode, NativeFenceDesc};

/// A GDB remote-protocol client, in acknowledged mode.
struct Client(TcpStream);

impl Client {
    fn send_raw(&mut self, bytes: &[u8]) {
        self.0.write_all(bytes).expect("send");
    }

    /// Sends `$body#cc`; the reply's body (acknowledged), `None` if the stub hung up.
    fn ask(&mut self, body: &str) -> Option<String> {
        let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
        self.send_raw(format!("${body}#{sum:02x}").as_bytes());
        self.reply()
    }

    fn reply(&mut self) -> Option<String> {
        let mut byte = [0u8; 1];
        // Skip acknowledgements up to the packet's start.
        loop {
            if self.0.read(&mut byte).ok()? == 0 {
                return None;
            }
            if byte[0] == b'$' {
                break;
            }
        }
        let mut body = Vec::new();
        loop {
            if self.0.read(&mut byte).ok()? == 0 {
                return None;
            }
            if byte[0] == b'#' {
                break;
            }
            body.push(byte[0]);
        }
        let mut sum = [0u8; 2];
        self.0.read_exact(&mut sum).ok()?;
        self.send_raw(b"+");
        Some(String::from_utf8_lossy(&run_length_decoded(&body)).into_owned())
    }
}

/// A reply with the protocol's run-length encoding (`X*n`: `n - 29` more `X`) spelt out.
fn run_length_decoded(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut bytes = body.iter().copied();
    while let Some(b) = bytes.next() {
        if b == b'*' {
            let (Some(&last), Some(n)) = (out.last(), bytes.next()) else {
                break;
            };
            out.extend(std::iter::repeat_n(last, usize::from(n.saturating_sub(29))));
        } else {
            out.push(b);
        }
    }
    out
}

fn is_error(reply: &Option<String>) -> bool {
    reply.as_deref().is_some_and(|r| r.starts_with('E'))
}

/// Reads of unmapped, wrapping and huge ranges, writes to them, registers of threads that do
/// not exist, breakpoints past the stub's limit and description reads past its end are error
/// replies (or empty ones); the stub still answers after them and after line noise; an
/// interrupt stops the running image with SIGINT; an oversized packet ends the session, and
/// the machine runs on without a bug check.
#[test]
fn hostile_packets_get_error_replies_and_the_machine_runs_on() {
    rvgpu_simos::pe::unicorn::api().unwrap_or_else(|e| panic!("{e}"));
    let at = gdb::listen("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    // The machine starts its adapter, then keeps the image busy (native fences made and
    // destroyed) until told to stop, so that an interrupt finds it running.
    static DONE: AtomicBool = AtomicBool::new(false);
    let machine = std::thread::spawn(|| {
        let mut cfg = MachineConfig::single(Mode::Step);
        cfg.driver = DriverBuild::Pe(None);
        let m = started(cfg);
        let pid = device_process(&m, 0);
        let start = Instant::now();
        while !DONE.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(60) {
            if let Ok(f) = m.create_native_fence(0, pid, NativeFenceDesc::default()) {
                let _ = m.destroy_native_fence(&f);
            }
        }
        m.bugcheck()
    });

    let stream = TcpStream::connect(at).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut c = Client(stream);

    let supported = c
        .ask("qSupported:swbreak+;xmlRegisters=i386")
        .expect("qSupported");
    assert!(supported.contains("qXfer:features:read+"), "{supported}");
    let stop = c.ask("?").expect("stop reason");
    assert!(stop.starts_with("T05"), "{stop}");

    // Memory nobody may touch.
    assert!(is_error(&c.ask("m0,10")));
    assert!(is_error(&c.ask("mfffffffffffffff8,10")));
    assert!(is_error(&c.ask("M0,4:deadbeef")));
    assert!(is_error(&c.ask("Mfffffffffffffffe,4:deadbeef")));
    // A length larger than any reply: bounded by the packet buffer, still an answer.
    assert!(c.ask("m0,ffffffffffffffff").is_some());

    // Threads that do not exist.
    let h = c.ask("Hg7fffffff").expect("Hg");
    if h == "OK" {
        assert!(
            is_error(&c.ask("g")),
            "registers of a thread that does not exist"
        );
    }
    assert!(c.ask("Hg1").is_some());

    // More breakpoints than the stub keeps: the excess is refused, nothing breaks.
    let mut refused = 0;
    for i in 0..300u64 {
        let r = c.ask(&format!("Z0,{:x},1", 0x1000 + i)).expect("Z0");
        if r != "OK" {
            refused += 1;
        }
    }
    assert_eq!(refused, 300 - 256, "breakpoints past the limit");
    for i in 0..300u64 {
        c.ask(&format!("z0,{:x},1", 0x1000 + i)).expect("z0");
    }

    // The description read past its end is empty, not out of bounds.
    let past = c
        .ask("qXfer:features:read:target.xml:ffffffffffff,100")
        .expect("qXfer");
    assert_eq!(past, "l");
    let xml = c
        .ask("qXfer:features:read:target.xml:0,ffb")
        .expect("qXfer");
    assert!(xml.contains("org.gnu.gdb.i386.core"), "{xml}");

    // Line noise is dropped, a bad checksum refused.
    c.send_raw(b"\x00\xffgarbage$m0,1#00");
    // Still answering: the registers of the stopped processor, 57 of GDB's amd64 layout.
    let regs = c.ask("g").expect("g after garbage");
    assert_eq!(regs.len(), 2 * 0x218, "{regs}");

    // Running, then interrupted (Ctrl-C): a stop with SIGINT, registers readable there.
    c.send_raw(b"$vCont;c#a8");
    c.send_raw(b"\x03");
    let stop = c.reply().expect("the stop after the interrupt");
    assert!(stop.starts_with("T02"), "{stop}");
    assert_eq!(c.ask("g").expect("g").len(), 2 * 0x218);

    // A packet larger than the stub's buffer ends the session (so does one that does not
    // parse, `mzz,10`: the protocol library takes it as the debugger's failure).
    let big = "m".repeat(64 * 1024);
    c.send_raw(format!("${big}#00").as_bytes());
    assert_eq!(c.reply(), None, "the session outlived an oversized packet");
    DONE.store(true, Ordering::Release);

    let bugcheck = machine.join().expect("the machine ran on");
    assert_eq!(bugcheck, None, "the machine stopped");
}
