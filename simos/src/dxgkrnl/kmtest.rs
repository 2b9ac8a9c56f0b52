//! The OS side of the kernel-mode testing interface (WDDM 3.2), as 24H2's Dxgkrnl does it:
//! feature negotiation (`query_interface`) and the known escape that reaches
//! `pfnBuildTestCommandBuffer` from user mode ([`crate::machine::Machine::escape_build_test_command_buffer`]).
//! Overview: \[M\] <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/kernel-mode-testing-of-wddm-features>.
//!
//! Rules, each with its source (\[D\]: 11-24H2 dxgkrnl.sys):
//! - KT-1 \[M\] overview, "Reporting support": the OS asks `DxgkDdiQueryFeatureSupport` for
//!   `DXGK_FEATURE_KERNEL_MODE_TESTING`, then `DxgkDdiQueryFeatureInterface` with the same ID for
//!   `DXGKDDI_KERNELMODETESTINGINTERFACE`. A failed query, a short answer or a null
//!   `pfnBuildTestCommandBuffer` leaves the OS without the function (a triage line), and then
//!   \[D\] `ADAPTER_RENDER::DdiBuildTestCommandBuffer` @ 0x1401A12AC fails the escape with
//!   `STATUS_NOT_SUPPORTED`.
//! - KT-2 \[D\] `DxgkpDriverKnownEscape` @ 0x1403C1B14: fewer than 4 bytes, or an `EscapeType`
//!   other than the four known ones, is `STATUS_INVALID_PARAMETER`; type 3 goes to
//!   `KnownEscapeBuildTestCommandBuffer` @ 0x1401D1030, whose checks follow in its order:
//! - KT-3 test signing off (`g_OSTestSigningEnabled`): `STATUS_INVALID_PARAMETER` (\[M\] "used only
//!   when test-signing is enabled");
//! - KT-4 private data shorter than the 0x70-byte `D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER`:
//!   `STATUS_INVALID_PARAMETER` ("Invalid private driver size");
//! - KT-5 `Operation` 0 or ≥ `D3DDDI_TESTCOMMANDBUFFEROP_MAX`: `STATUS_INVALID_PARAMETER`
//!   ("Invalid command"); nothing else of the command is looked at by the OS: sizes, addresses
//!   and patterns are the driver's to check;
//! - KT-6 `DmaBufferSize` outside 4..=4096 or `DmaBufferPrivateDataSize` above 1024:
//!   `STATUS_INVALID_PARAMETER` (\[M\] "limited to 4 KB … 1 KB");
//! - KT-7 `hContext` must be the process's hardware queue when `Flags.HardwareQueue` is 1 ("Invalid
//!   HwQueue handle"), its context otherwise ("Invalid context handle"): else
//!   `STATUS_INVALID_PARAMETER`; `hDevice` is not read;
//! - KT-8 the driver gets the KMD handle of that object, the command as given, kernel buffers of
//!   the two sizes, and `Flags` with only `HardwareQueue` (the caller's reserved bits do not reach
//!   it); a failure (`STATUS_BUFFER_OVERFLOW` included, which is not `NT_SUCCESS`) is returned
//!   as is, leaving the caller's sizes untouched; any status other than success,
//!   `STATUS_BUFFER_OVERFLOW` and `STATUS_INVALID_PARAMETER` is logged "Driver returned an invalid
//!   NTSTATUS code" (`DdiBuildTestCommandBuffer`);
//! - KT-9 on success, sizes larger than the buffers given are `STATUS_UNSUCCESSFUL` ("Driver
//!   returned invalid DMA buffer size"); otherwise the buffers are copied to the caller's
//!   (probed: a range outside user space is an access violation) and the sizes written back.
//!
//! `DxgkEscape`'s own checks before the known-escape dispatch (handles, flags, adapter state)
//! are the thunk's kernel entry's ([`crate::kmt::escape`]). What the simulation leaves out: the
//! GPU-PV path (a guest adapter forwards the escape to the host),
//! and the kernel-mode caller path (a kernel client's buffers are used in place).

use rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING;
use rvgpu_ddi::feature::{DXGKARG_QUERYFEATUREINTERFACE, DXGKDDI_FEATURE_INTERFACE};
use rvgpu_ddi::kmtest::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_ddi::NTSTATUS;

use crate::adapter::ddi::{self};
use crate::adapter::featuredb::{BuildTestCommandBuffer, FeatureDb};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;
use crate::sync::fence::ProcessId;
use crate::ums::TestTarget;

pub use crate::adapter::rules::STATUS_BUFFER_OVERFLOW;
/// `STATUS_ACCESS_VIOLATION`: what the probe of a user buffer raises.
pub use rvgpu_ddi::ntstatus::STATUS_ACCESS_VIOLATION;
/// Size of the escape's private data (x64).
pub const ESCAPE_SIZE: usize = core::mem::size_of::<D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER>();
/// `D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS::HardwareQueue`.
const HARDWARE_QUEUE: u32 = 1;

/// KT-1: the driver's `pfnBuildTestCommandBuffer`, if the feature is enabled and the driver
/// answers `DxgkDdiQueryFeatureInterface` for it. `iface` is the driver's feature interface.
pub(crate) fn query_interface(
    a: &AdapterShared,
    iface: &DXGKDDI_FEATURE_INTERFACE,
    db: &FeatureDb,
) -> Result<Option<ddi::Ddi<BuildTestCommandBuffer>>, SimError> {
    let Some(version) = db.version(DXGK_FEATURE_KERNEL_MODE_TESTING) else {
        return Ok(None);
    };
    let Some(query) = ddi::in_table!(iface, QueryFeatureInterface) else {
        a.observer()
            .triage("kernel-mode testing enabled without QueryFeatureInterface".into());
        return Ok(None);
    };
    let mut out = DXGKDDI_KERNELMODETESTINGINTERFACE::default();
    let size = core::mem::size_of::<DXGKDDI_KERNELMODETESTINGINTERFACE>() as u16;
    let mut args = DXGKARG_QUERYFEATUREINTERFACE {
        FeatureId: DXGK_FEATURE_KERNEL_MODE_TESTING,
        Version: version,
        InterfaceSize: size,
        Interface: (&raw mut out).cast(),
    };
    let ctx = iface.Context;
    let st = query.passive(a, (ctx, &mut args))?;
    if !NT_SUCCESS(st) || args.InterfaceSize < size || out.pfnBuildTestCommandBuffer.is_none() {
        a.observer().triage(format!(
            "kernel-mode testing interface: status {st:#x}, size {}: not usable",
            args.InterfaceSize
        ));
        return Ok(None);
    }
    // The PE image's routine is its code: the OS calls it through a forwarder.
    #[cfg(target_os = "linux")]
    if let Some(pe) = a.state.pe() {
        out.pfnBuildTestCommandBuffer =
            pe.translate_build_test_command_buffer(out.pfnBuildTestCommandBuffer);
    }
    Ok(ddi::in_table!(out, pfnBuildTestCommandBuffer))
}

/// The highest user-mode address + 1 (`MmUserProbeAddress` on x64): a probed range must end
/// at or below it.
const USER_PROBE_ADDRESS: u64 = 0x7FFF_FFFF_0000;

/// KT-9: the probe of a user buffer of `len` bytes at `p`.
fn probe(p: u64, len: u32) -> Result<(), NTSTATUS> {
    let end = p
        .checked_add(u64::from(len))
        .ok_or(STATUS_ACCESS_VIOLATION)?;
    if len != 0 && (p == 0 || end > USER_PROBE_ADDRESS) {
        return Err(STATUS_ACCESS_VIOLATION);
    }
    Ok(())
}

/// The escape's private data for `command` on `context` (a hardware queue if `hardware_queue`),
/// naming `dma` and `private` as its buffers with their full sizes.
pub fn escape_data(
    context: KmtHandle,
    hardware_queue: bool,
    command: D3DDDI_TESTCOMMANDBUFFER,
    dma: &mut [u8],
    private: &mut [u8],
) -> [u8; ESCAPE_SIZE] {
    let esc = D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER {
        EscapeType: D3DDDI_DRIVERESCAPETYPE_BUILDTESTCOMMANDBUFFER,
        hDevice: 0,
        hContext: context,
        Flags: D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS {
            Value: u32::from(hardware_queue),
        },
        Command: command,
        pDmaBuffer: dma.as_mut_ptr() as u64,
        pDmaBufferPrivateData: if private.is_empty() {
            0
        } else {
            private.as_mut_ptr() as u64
        },
        DmaBufferSize: u32::try_from(dma.len()).unwrap_or(u32::MAX),
        DmaBufferPrivateDataSize: u32::try_from(private.len()).unwrap_or(u32::MAX),
    };
    esc.to_bytes()
}

/// The `DmaBufferSize` and `DmaBufferPrivateDataSize` of escape data (what the OS wrote back).
pub fn escape_sizes(data: &[u8]) -> Option<(u32, u32)> {
    let w = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
    };
    Some((w(104)?, w(108)?))
}

/// [`crate::machine::Machine::escape_build_test_command_buffer`] on adapter `a`: the escape of
/// process `pid`, `data` its private driver data, `dma` and `private` the caller's buffers
/// (rules KT-2 … KT-9).
pub fn escape_build_test_command_buffer(
    a: &AdapterShared,
    pid: ProcessId,
    data: &mut [u8],
    dma: &mut [u8],
    private: &mut [u8],
) -> Result<NTSTATUS, SimError> {
    // The process's memory is the two slices: a range that is not one of them (from its start)
    // is memory the process does not have.
    let mut out = |p: u64, from: &[u8]| -> Result<(), NTSTATUS> {
        for user in [&mut *dma, &mut *private] {
            if p == user.as_ptr() as u64 && from.len() <= user.len() {
                if let Some(to) = user.get_mut(..from.len()) {
                    to.copy_from_slice(from);
                    return Ok(());
                }
            }
        }
        Err(STATUS_ACCESS_VIOLATION)
    };
    build_test_command_buffer(a, pid, data, &mut out)
}

/// Copies bytes to the process's memory at an address (its fault status).
pub type CopyOut<'a> = dyn FnMut(u64, &[u8]) -> Result<(), NTSTATUS> + 'a;

/// The known escape `D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER` (rules KT-2 … KT-9) of process
/// `pid`, `data` the kernel copy of its private driver data; `out` copies the driver's buffers
/// to the process's memory at the escape's pointers after the probe (its fault status).
pub fn build_test_command_buffer(
    a: &AdapterShared,
    pid: ProcessId,
    data: &mut [u8],
    out: &mut CopyOut<'_>,
) -> Result<NTSTATUS, SimError> {
    // KT-2.
    let Some(kind) = data.get(..4) else {
        return Ok(STATUS_INVALID_PARAMETER);
    };
    if u32::from_le_bytes([kind[0], kind[1], kind[2], kind[3]])
        != D3DDDI_DRIVERESCAPETYPE_BUILDTESTCOMMANDBUFFER
    {
        // Types 0..2 (allocation and resource translation, CPU event usage) are not
        // modelled: each needs objects the simulation does not have.
        return Ok(STATUS_INVALID_PARAMETER);
    }
    // KT-3.
    if !a.os.test_signing {
        return Ok(STATUS_INVALID_PARAMETER);
    }
    // KT-4.
    let Some(mut esc) = D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER::read_from(data) else {
        return Ok(STATUS_INVALID_PARAMETER);
    };
    // KT-5.
    let op = esc.Command.Operation;
    if op == D3DDDI_TESTCOMMANDBUFFEROP_INVALID || op >= D3DDDI_TESTCOMMANDBUFFEROP_MAX {
        return Ok(STATUS_INVALID_PARAMETER);
    }
    // KT-6.
    if !(TEST_DMA_BUFFER_MIN..=TEST_DMA_BUFFER_MAX).contains(&esc.DmaBufferSize)
        || esc.DmaBufferPrivateDataSize > TEST_PRIVATE_DATA_MAX
    {
        return Ok(STATUS_INVALID_PARAMETER);
    }
    // KT-7.
    let queue = esc.Flags.Value & HARDWARE_QUEUE != 0;
    let target = lock(&a.ums).test_target(pid, esc.hContext as KmtHandle);
    let kmd = match (queue, target) {
        (true, Some(TestTarget::Queue { kmd })) | (false, Some(TestTarget::Context { kmd })) => kmd,
        _ => return Ok(STATUS_INVALID_PARAMETER),
    };
    // KT-1: no function, no escape.
    let Some(build) = lock(&a.features).build_test_command_buffer.0 else {
        return Ok(STATUS_NOT_SUPPORTED);
    };
    // KT-8: kernel buffers, the KMD's handle, only the HardwareQueue flag.
    let mut kdma = vec![0u8; esc.DmaBufferSize as usize];
    let mut kpriv = vec![0u8; esc.DmaBufferPrivateDataSize as usize];
    let mut args = DXGKARG_BUILDTESTCOMMANDBUFFER {
        hContext: kmd as rvgpu_ddi::HANDLE,
        Command: esc.Command,
        pDmaBuffer: kdma.as_mut_ptr().cast(),
        pDmaBufferPrivateData: if kpriv.is_empty() {
            std::ptr::null_mut()
        } else {
            kpriv.as_mut_ptr().cast()
        },
        DmaBufferSize: esc.DmaBufferSize,
        DmaBufferPrivateDataSize: esc.DmaBufferPrivateDataSize,
        Flags: D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS {
            Value: esc.Flags.Value & HARDWARE_QUEUE,
        },
    };
    let ctx = a.context();
    let st = build.passive(a, (ctx, &mut args))?;
    crate::adapter::ddi::triage_status(a, build.routine(), st);
    if !NT_SUCCESS(st) {
        return Ok(st);
    }
    // KT-9.
    if args.DmaBufferSize > esc.DmaBufferSize
        || args.DmaBufferPrivateDataSize > esc.DmaBufferPrivateDataSize
    {
        a.observer().triage(format!(
            "DxgkDdiBuildTestCommandBuffer: driver returned invalid DMA buffer size {} / {}",
            args.DmaBufferSize, args.DmaBufferPrivateDataSize
        ));
        return Ok(STATUS_UNSUCCESSFUL);
    }
    let mut copy_out = |p: u64, from: &[u8], n: u32| -> Result<(), NTSTATUS> {
        probe(p, n)?;
        match from.get(..n as usize) {
            Some([]) => Ok(()),
            Some(bytes) => out(p, bytes),
            None => Err(STATUS_ACCESS_VIOLATION),
        }
    };
    if let Err(st) = copy_out(esc.pDmaBuffer, &kdma, args.DmaBufferSize) {
        return Ok(st);
    }
    if let Err(st) = copy_out(
        esc.pDmaBufferPrivateData,
        &kpriv,
        args.DmaBufferPrivateDataSize,
    ) {
        return Ok(st);
    }
    // The two sizes are what the escape hands back; the rest of `data` stays the caller's.
    esc.DmaBufferSize = args.DmaBufferSize;
    esc.DmaBufferPrivateDataSize = args.DmaBufferPrivateDataSize;
    let back = esc.to_bytes();
    if let (Some(to), Some(from)) = (data.get_mut(104..112), back.get(104..112)) {
        to.copy_from_slice(from);
    }
    Ok(STATUS_SUCCESS)
}
