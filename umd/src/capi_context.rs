//! The C API's kernel-mode DMA contexts (`RvgpuContext`, [`crate::dma`]): what an application
//! needs to submit through the OS's scheduler one DMA buffer at a time, as the D3D runtime
//! does on a context of a GPU-VA device. `rvgpu_context_create` makes a context on a node of
//! the adapter's device, `rvgpu_context_submit` copies a packet list into its command buffer
//! and submits it, `rvgpu_context_destroy` ends it. The submission is `D3DKMTSubmitCommand` on
//! a node without context scheduling; on a hardware-scheduled node, where Windows refuses it,
//! the context is created with `HwQueueSupported` and a kernel-mode hardware queue, and
//! each buffer goes to it (`D3DKMTSubmitCommandToHwQueue`, [`crate::dma`]).
//!
//! Every argument is checked before a handle is looked up: a null pointer, a null handle, an
//! empty, odd, oversized or malformed command stream is `RVGPU_STATUS_INVALID_ARGUMENT`; a
//! destroyed, forged or other-kind handle `RVGPU_STATUS_INVALID_HANDLE` (`capi::handles`).
//! Calls on one context are serialized by its lock (a submission that waits for the GPU to
//! consume command-buffer space, [`crate::dma`], waits with it held); different contexts may
//! be used from different threads at once.
#![allow(clippy::missing_safety_doc)] // each function documents its contract as "Safety" below

use crate::capi::{parse_commands, RvgpuAdapter, RvgpuStatus};
use crate::dma::COMMAND_BUFFER_SIZE;

crate::capi::opaque_handles! {
    /// Opaque kernel-mode DMA context handle.
    RvgpuContext;
}

/// Most dwords of one `rvgpu_context_submit`: a full command buffer.
pub const MAX_CONTEXT_DWORDS: usize = (COMMAND_BUFFER_SIZE / 4) as usize;

/// The context calls over the types behind the handles: `WinKmt` on Windows, the mock of
/// [`crate::dma`]'s tests on the host's unit tests.
#[cfg(any(windows, test))]
mod imp {
    use crate::capi::buffer::AdapterObj;
    use crate::capi::handles::{self as handles, Kind};
    use crate::capi::{status_from_submit, RvgpuStatus};
    use crate::dma::DmaContext;
    use rvgpu_hw::cmd::Command;

    #[cfg(windows)]
    type K = alloc::sync::Arc<crate::kmt_windows::WinKmt>;
    #[cfg(all(test, not(windows)))]
    type K = crate::dma::tests::Mock;

    pub(super) fn create(a: usize, node: u32) -> Result<usize, RvgpuStatus> {
        let kmt = handles::get::<AdapterObj<K>>(Kind::Adapter, a)?
            .lock()
            .kmt
            .clone();
        let c = DmaContext::new(kmt, node).map_err(status_from_submit)?;
        handles::insert(Kind::Context, c)
    }

    pub(super) fn submit(c: usize, cmds: &[Command]) -> Result<(), RvgpuStatus> {
        let obj = handles::get::<DmaContext<K>>(Kind::Context, c)?;
        let mut g = obj.lock();
        g.submit(cmds).map_err(status_from_submit)
    }

    pub(super) fn destroy(c: usize) -> Result<(), RvgpuStatus> {
        let obj = handles::take::<DmaContext<K>>(Kind::Context, c)?;
        let mut g = obj.lock();
        g.close().map_err(status_from_submit)
    }
}

/// No D3DKMT off Windows: no adapter, so no context either.
#[cfg(not(any(windows, test)))]
mod imp {
    use crate::capi::RvgpuStatus;

    pub(super) fn create(_a: usize, _node: u32) -> Result<usize, RvgpuStatus> {
        Err(RvgpuStatus::InvalidHandle)
    }
    pub(super) fn submit(_c: usize, _cmds: &[rvgpu_hw::cmd::Command]) -> Result<(), RvgpuStatus> {
        Err(RvgpuStatus::InvalidHandle)
    }
    pub(super) fn destroy(_c: usize) -> Result<(), RvgpuStatus> {
        Err(RvgpuStatus::InvalidHandle)
    }
}

fn status(r: Result<(), RvgpuStatus>) -> RvgpuStatus {
    r.err().unwrap_or(RvgpuStatus::Ok)
}

/// Creates a kernel-mode DMA context on node `node` of the adapter's device, with its command
/// buffer. `*out_context` is set to null first and to the context on success.
///
/// # Safety
/// `out_context` must be null or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_context_create(
    adapter: *mut RvgpuAdapter,
    node: u32,
    out_context: *mut *mut RvgpuContext,
) -> RvgpuStatus {
    if out_context.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and writable for one pointer per the caller's contract.
    unsafe { out_context.write(core::ptr::null_mut()) };
    if adapter.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    match imp::create(adapter.addr(), node) {
        Ok(c) => {
            // SAFETY: as above.
            unsafe { out_context.write(crate::capi::handle(c)) };
            RvgpuStatus::Ok
        }
        Err(e) => e,
    }
}

/// Submits `dword_count` command dwords (rvgpu packets, 64-bit words low dword first, at
/// most [`MAX_CONTEXT_DWORDS`]; no INDIRECT) as one DMA buffer of the context. They are
/// validated before anything is written. Blocks while the words would go over earlier
/// submissions the GPU has not consumed yet (a failed wait is the OS's status, nothing is
/// submitted). `RVGPU_STATUS_DEVICE_LOST`: the OS put the context's device in error (a
/// timeout and reset); destroy the context.
///
/// # Safety
/// `commands` must be null or valid for reading `dword_count` dwords.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_context_submit(
    context: *mut RvgpuContext,
    commands: *const u32,
    dword_count: usize,
) -> RvgpuStatus {
    if context.is_null() || commands.is_null() || dword_count == 0 {
        return RvgpuStatus::InvalidArgument;
    }
    if dword_count > MAX_CONTEXT_DWORDS {
        return RvgpuStatus::InvalidArgument;
    }
    // SAFETY: non-null and readable for `dword_count` dwords per the caller's contract; the
    // count is bounded above, so the slice's size cannot overflow.
    let dwords = unsafe { core::slice::from_raw_parts(commands, dword_count) };
    match parse_commands(dwords) {
        Ok(cmds) => status(imp::submit(context.addr(), &cmds)),
        Err(e) => e,
    }
}

/// Destroys the context and its command buffer; the handle ends even when the OS reports a
/// failure.
///
/// # Safety
/// None beyond the handle's (it is never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rvgpu_context_destroy(context: *mut RvgpuContext) -> RvgpuStatus {
    if context.is_null() {
        return RvgpuStatus::InvalidArgument;
    }
    status(imp::destroy(context.addr()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::buffer::{AdapterObj, AdapterState};
    use crate::capi::handles::{self as handles, Kind};
    use crate::dma::tests::{Ev, Mock, CTX};
    use alloc::sync::Arc;
    use alloc::vec::Vec;
    use core::ptr;
    use rvgpu_hw::cmd::Command;

    fn dwords(cmds: &[Command]) -> Vec<u32> {
        let mut out = Vec::new();
        for c in cmds {
            let mut w = [0u64; 16];
            let n = c.encode(&mut w).unwrap_or(0);
            for x in w.iter().take(n) {
                out.push(*x as u32);
                out.push((*x >> 32) as u32);
            }
        }
        out
    }

    fn adapter(m: &Mock) -> *mut RvgpuAdapter {
        let a = handles::insert(
            Kind::Adapter,
            AdapterObj {
                kmt: m.clone(),
                state: Arc::new(AdapterState::default()),
            },
        )
        .expect("a slot");
        crate::capi::handle(a)
    }

    fn fill() -> Vec<u32> {
        dwords(&[Command::Fill {
            dst: 0x2000,
            bytes: 8,
            pattern: 7,
        }])
    }

    /// `rvgpu_context_create` with a valid out-pointer: the status and what it holds after.
    fn create(a: *mut RvgpuAdapter, node: u32) -> (RvgpuStatus, *mut RvgpuContext) {
        let mut c: *mut RvgpuContext = crate::capi::handle(0xdead);
        // SAFETY: a valid out-pointer; the adapter handle is never dereferenced.
        let r = unsafe { rvgpu_context_create(a, node, &raw mut c) };
        (r, c)
    }

    /// `rvgpu_context_submit` of `count` dwords at `p`.
    fn submit(c: *mut RvgpuContext, p: *const u32, count: usize) -> RvgpuStatus {
        // SAFETY: every caller passes a stream valid for `count` dwords, or one the call
        // refuses before reading it (null, or a count above the bound).
        unsafe { rvgpu_context_submit(c, p, count) }
    }

    fn destroy(c: *mut RvgpuContext) -> RvgpuStatus {
        // SAFETY: a handle only; it is never dereferenced.
        unsafe { rvgpu_context_destroy(c) }
    }

    /// UM-01, classic kernel-mode submission through the C API: create, submit, destroy.
    #[test]
    fn um_01_the_c_api_creates_submits_and_destroys_a_dma_context() {
        let m = Mock::default();
        let a = adapter(&m);
        let (r, c) = create(a, 2);
        assert_eq!(r, RvgpuStatus::Ok);
        assert!(!c.is_null());
        let d = fill();
        assert_eq!(submit(c, d.as_ptr(), d.len()), RvgpuStatus::Ok);
        assert_eq!(destroy(c), RvgpuStatus::Ok);
        let log = m.0.borrow().log.clone();
        assert_eq!(log.first(), Some(&Ev::Context(2)));
        assert!(log.iter().any(|e| matches!(e, Ev::Submit(CTX, ..))));
        assert_eq!(log.last(), Some(&Ev::AllocGone(crate::dma::tests::CB)));
    }

    /// Attacker's input to `rvgpu_context_create`: a null out-pointer, a null, forged or
    /// other-kind adapter handle; the out-pointer is null after each failure. The OS refusing
    /// the context is its status.
    #[test]
    fn um_01_context_create_refuses_bad_arguments() {
        let m = Mock::default();
        let a = adapter(&m);
        // SAFETY: a null out-pointer is checked before anything is written.
        let r = unsafe { rvgpu_context_create(a, 0, ptr::null_mut()) };
        assert_eq!(r, RvgpuStatus::InvalidArgument);
        let forged: *mut RvgpuAdapter = crate::capi::handle(0x1234_5678);
        for (what, adapter, want) in [
            ("null", ptr::null_mut(), RvgpuStatus::InvalidArgument),
            ("forged", forged, RvgpuStatus::InvalidHandle),
        ] {
            let (r, c) = create(adapter, 0);
            assert_eq!(r, want, "{what}");
            assert!(c.is_null(), "{what}: the out-pointer was not cleared");
        }
        let (r, c) = create(a, 0);
        assert_eq!(r, RvgpuStatus::Ok);
        let (r, c2) = create(c.cast(), 0);
        assert_eq!(
            (r, c2.is_null()),
            (RvgpuStatus::InvalidHandle, true),
            "a context as adapter"
        );
        m.0.borrow_mut().fail_context = Some(crate::kmt::NtStatus(0xC000_000D_u32 as i32));
        let (r, c2) = create(a, 99);
        assert_eq!(
            (r, c2.is_null()),
            (RvgpuStatus::KernelError, true),
            "a bad node"
        );
        assert_eq!(destroy(c), RvgpuStatus::Ok);
    }

    /// Attacker's input to `rvgpu_context_submit` and `rvgpu_context_destroy`: null context
    /// or stream, no dwords, an odd count, a count past the command buffer, a malformed
    /// packet, an INDIRECT, a forged, other-kind or destroyed handle. Nothing reaches the
    /// thunk.
    #[test]
    fn um_01_context_submit_and_destroy_refuse_bad_arguments() {
        let m = Mock::default();
        let a = adapter(&m);
        let (r, c) = create(a, 0);
        assert_eq!(r, RvgpuStatus::Ok);
        let d = fill();
        let indirect = dwords(&[Command::Indirect {
            addr: 0x1000,
            bytes: 8,
        }]);
        let bad_header = [0xFFFF_FFFFu32, 0xFFFF_FFFF];
        let forged: *mut RvgpuContext = crate::capi::handle(0x7777_0000_0500_0FFF);
        let inval = RvgpuStatus::InvalidArgument;
        let bad = RvgpuStatus::InvalidHandle;
        let cases: [(&str, *mut RvgpuContext, *const u32, usize, RvgpuStatus); 9] = [
            ("null context", ptr::null_mut(), d.as_ptr(), d.len(), inval),
            ("null stream", c, ptr::null(), d.len(), inval),
            ("no dwords", c, d.as_ptr(), 0, inval),
            ("odd count", c, d.as_ptr(), d.len() - 1, inval),
            (
                "past the buffer",
                c,
                d.as_ptr(),
                MAX_CONTEXT_DWORDS + 1,
                inval,
            ),
            ("malformed", c, bad_header.as_ptr(), 2, inval),
            ("INDIRECT", c, indirect.as_ptr(), indirect.len(), inval),
            ("forged", forged, d.as_ptr(), d.len(), bad),
            ("an adapter", a.cast(), d.as_ptr(), d.len(), bad),
        ];
        for (what, ctx, p, n, want) in cases {
            assert_eq!(submit(ctx, p, n), want, "{what}");
        }
        assert!(!m.0.borrow().log.iter().any(|e| matches!(e, Ev::Submit(..))));
        assert_eq!(destroy(ptr::null_mut()), inval);
        assert_eq!(destroy(forged), bad);
        assert_eq!(destroy(a.cast()), bad);
        assert_eq!(destroy(c), RvgpuStatus::Ok);
        assert_eq!(destroy(c), bad, "destroyed twice");
        assert_eq!(submit(c, d.as_ptr(), d.len()), bad, "a destroyed context");
    }
}
