//! The emulator's debugger stub (`simos/src/pe/gdb`) patching code: a processor stopped at a
//! breakpoint in code it already ran, whose next instruction the debugger rewrites, runs the
//! rewritten instruction when it goes on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rvgpu_simos::pe::{arena, cpu, gdb};

/// Sends `$body#cc` and returns the reply's body (acknowledged).
fn ask(s: &mut TcpStream, body: &str) -> String {
    let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    s.write_all(format!("${body}#{sum:02x}").as_bytes())
        .expect("send");
    reply(s)
}

fn reply(s: &mut TcpStream) -> String {
    let mut byte = [0u8; 1];
    loop {
        s.read_exact(&mut byte).expect("reply");
        if byte[0] == b'$' {
            break;
        }
    }
    let mut body = Vec::new();
    loop {
        s.read_exact(&mut byte).expect("reply");
        if byte[0] == b'#' {
            break;
        }
        body.push(byte[0]);
    }
    let mut sum = [0u8; 2];
    s.read_exact(&mut sum).expect("checksum");
    s.write_all(b"+").expect("ack");
    String::from_utf8_lossy(&body).into_owned()
}

/// A breakpoint on code that already ran once, the immediate of its first instruction
/// rewritten (`M`) while the processor is stopped there, the breakpoint removed and the
/// processor continued: the call returns the rewritten value, and so does the next one.
#[test]
fn a_patch_made_at_a_breakpoint_runs_when_the_processor_goes_on() {
    rvgpu_simos::pe::unicorn::api().unwrap_or_else(|e| panic!("{e}"));
    let at = gdb::listen("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    // mov eax, 1; ret
    let code = [0xB8u8, 1, 0, 0, 0, 0xC3];
    let f = arena::alloc(code.len(), arena::Access::ReadWrite).expect("arena");
    // SAFETY: fresh read-write memory of at least `code.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), f as *mut u8, code.len()) };
    cpu::register_range(f, code.len(), cpu::Range::Ram);
    let (tx, rx) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        for _ in 0..3 {
            tx.send(cpu::call(f, &[]).expect("ran")).expect("send");
        }
    });
    let mut s = TcpStream::connect(at).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    ask(&mut s, "qSupported:swbreak+");
    assert!(ask(&mut s, "?").starts_with("T05"));
    // Stopped at the first instruction of the first call: a breakpoint there, then go on.
    assert_eq!(ask(&mut s, &format!("Z0,{f:x},1")), "OK");
    s.write_all(b"$vCont;c#a8").expect("continue");
    // The first stop was before the breakpoint existed: the first call returns 1, the
    // second stops at the breakpoint.
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(1));
    assert!(reply(&mut s).starts_with("T05"), "the breakpoint");
    assert_eq!(ask(&mut s, &format!("M{:x},1:02", f + 1)), "OK");
    assert_eq!(ask(&mut s, &format!("z0,{f:x},1")), "OK");
    s.write_all(b"$vCont;c#a8").expect("continue");
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(2));
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(2));
    runner.join().expect("the calls ended");
}
