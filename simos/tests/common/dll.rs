//! Helpers of the suites that drive the shipped `rvgpu_umd.dll` in the emulator: its
//! statuses, raw thunk calls, and the objects most cases start from.

use std::sync::Arc;
use std::time::Duration;

use rvgpu_hw::cmd::Command;
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::{Machine, UmsEvent};
use rvgpu_umd::kmt::{AllocationCpu as _, AllocationKind, Kmt as _};

use super::pe::call;

/// `RvgpuStatus` values (rvgpu_umd.h).
pub const OK: u64 = 0;
pub const INVALID_ARGUMENT: u64 = 1;
pub const TIMEOUT: u64 = 4;
/// The LUID the simulated Dxgkrnl gives adapter 0.
pub const LUID_LOW: u64 = 0x1000;
pub const STATUS_SUCCESS: u64 = 0;
pub const STATUS_INVALID_PARAMETER: u64 = 0xC000_000D;
pub const STATUS_ACCESS_VIOLATION: u64 = 0xC000_0005;

/// Calls thunk `name` (as bound for the DLL) with its argument pointer `arg`; its NTSTATUS.
pub fn thunk(p: &Arc<UserProcess>, name: &str, arg: u64) -> u64 {
    match p.call_import(name, &[arg]) {
        Ok(v) => v as u32 as u64,
        Err(e) => panic!("{name}: {e:?}"),
    }
}

pub fn addr<T>(v: &mut T) -> u64 {
    v as *mut T as u64
}

/// Commands as the C API takes them: 64-bit words, each as two dwords, low half first.
pub fn dwords(cmds: &[Command]) -> Vec<u32> {
    let mut out = Vec::new();
    for c in cmds {
        let mut words = [0u64; 16];
        let n = c.encode(&mut words).expect("encodes");
        for w in &words[..n] {
            out.push(*w as u32);
            out.push((*w >> 32) as u32);
        }
    }
    out
}

/// `rvgpu_submit` of `cmds` (dwords, as [`dwords`] makes them) on queue `q`, the progress
/// value written to `progress`; the call's status.
pub fn submit_dwords(p: &Arc<UserProcess>, q: u64, cmds: &[u32], progress: &mut u64) -> u64 {
    call(
        p,
        "rvgpu_submit",
        &[q, cmds.as_ptr() as u64, cmds.len() as u64, addr(progress)],
    )
}

/// The DLL binds every import to the simulated OS: the 26 gdi32 thunks it links against, the
/// kernel32 routines of its runtime (heap, SRW locks, events, waits, module lookup), advapi32's
/// ETW registration and ntdll's C-library routines; its exports are the C API.
/// Opens the adapter and creates a user-mode queue through the DLL's C API: (adapter, queue).
pub fn open_queue(p: &Arc<UserProcess>) -> (u64, u64) {
    let mut a = 0u64;
    assert_eq!(
        call(p, "rvgpu_open_adapter", &[LUID_LOW, 0, addr(&mut a)]),
        OK
    );
    let mut q = 0u64;
    assert_eq!(call(p, "rvgpu_create_queue", &[a, 0, 0, addr(&mut q)]), OK);
    (a, q)
}

/// A 4 KiB buffer through the DLL's C API: (buffer, its GPU VA).
pub fn buffer_4k(p: &Arc<UserProcess>, adapter: u64) -> (u64, u64) {
    let mut b = 0u64;
    assert_eq!(
        call(p, "rvgpu_buffer_create", &[adapter, 4096, addr(&mut b)]),
        OK
    );
    let mut va = 0u64;
    assert_eq!(call(p, "rvgpu_buffer_gpu_va", &[b, addr(&mut va)]), OK);
    (b, va)
}

/// A `D3DKMT_SUBMITCOMMAND` (0x180 bytes, 8-aligned) naming `context`.
pub fn submit_command(context: u32, commands: u64, length: u32) -> [u64; 48] {
    let mut s = [0u64; 48];
    s[0] = commands;
    s[1] = u64::from(length); // Flags 0
    s[3] = 1; // BroadcastContextCount
    s[3] |= u64::from(context) << 32; // BroadcastContext[0] at byte 28
    s
}

/// Sets the u32 at byte `at` of a structure built as words.
pub fn set_u32(s: &mut [u64; 48], at: usize, v: u32) {
    let (w, shift) = (at / 8, (at % 8) * 8);
    s[w] = (s[w] & !(0xFFFF_FFFFu64 << shift)) | (u64::from(v) << shift);
}

/// `D3DDDI_CREATECONTEXTFLAGS::HwQueueSupported`.
pub const HW_QUEUE_SUPPORTED: u32 = 1 << 4;
pub const STATUS_UNSUCCESSFUL: u64 = 0xC000_0001;

/// Opens the adapter through the DLL's C API (which creates its device): the adapter.
pub fn open_adapter(p: &Arc<UserProcess>) -> u64 {
    let mut a = 0u64;
    assert_eq!(
        call(p, "rvgpu_open_adapter", &[LUID_LOW, 0, addr(&mut a)]),
        OK
    );
    a
}

/// A context on node 0 of `p`'s device through `D3DKMTCreateContextVirtual` with `flags`
/// (`D3DDDI_CREATECONTEXTFLAGS`).
pub fn raw_context(p: &Arc<UserProcess>, flags: u32) -> u32 {
    let device = p.devices()[0].device;
    let mut c = [0u32; 10];
    c[0] = device;
    c[3] = flags;
    assert_eq!(
        thunk(p, "D3DKMTCreateContextVirtual", c.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    c[8]
}

/// A read-only page of the DLL's process holding `words`.
pub fn read_only(words: &[u64]) -> u64 {
    assert!(words.len() * 8 <= 4096);
    // SAFETY: a new anonymous mapping; no memory of the test's is touched.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(page != libc::MAP_FAILED);
    let at = page.cast::<u64>();
    for (i, w) in words.iter().enumerate() {
        // SAFETY: within the 4 KiB just mapped writable (checked above).
        unsafe { at.add(i).write(*w) };
    }
    // SAFETY: the page just mapped, made read-only; it is never unmapped (a test's page).
    assert_eq!(unsafe { libc::mprotect(page, 4096, libc::PROT_READ) }, 0);
    page as u64
}

/// Puts `p`'s device in error: a FILL through an address no process maps, submitted raw on
/// kernel-mode queue `kq` as its first submission, faults; returns once the OS has handled it.
pub fn device_in_error(m: &Arc<Machine>, p: &Arc<UserProcess>, kq: u32) {
    const NOWHERE: u64 = 0x7000_0000_0000;
    let d = p.devices()[0];
    let cb = match m
        .kmt(&d)
        .create_allocation_as(4096, AllocationKind::Commands)
    {
        Ok(a) => a,
        Err(e) => panic!("a command buffer: {e:?}"),
    };
    let fill = Command::Fill {
        dst: NOWHERE,
        bytes: 8,
        pattern: 0x0BAD,
    };
    let mut words = [0u64; 8];
    let n = fill.encode(&mut words).expect("a FILL encodes");
    for (i, w) in words[..n].iter().enumerate() {
        cb.mem.store(i as u64 * 8, *w);
    }
    // D3DKMT_SUBMITCOMMANDTOHWQUEUE: hHwQueue, HwQueueProgressFenceId, CommandBuffer,
    // CommandLength (byte 24).
    let mut s = [0u64; 7];
    s[0] = u64::from(kq);
    s[1] = 1;
    s[2] = cb.gpu_va;
    s[3] = (n * 8) as u64;
    let r = thunk(p, "D3DKMTSubmitCommandToHwQueue", s.as_mut_ptr() as u64);
    assert_eq!(r, STATUS_SUCCESS, "the faulting submission: {r:#x}");
    let error = UmsEvent::DeviceError { device: d.device };
    let seen = m.run_until(0, Duration::from_secs(10), |m| {
        m.ums_events(0).contains(&error)
    });
    assert_eq!(seen.ok(), Some(true), "no device error: {:?}", m.fault());
}
