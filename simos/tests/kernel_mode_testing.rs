//! The kernel-mode testing interface end to end: the OS's escape (rules KT-1 … KT-9,
//! `simos/src/dxgkrnl/kmtest.rs`) in front of rvgpu's `pfnBuildTestCommandBuffer`
//! (`driver/kmd/src/kmtest`), and the buffers it builds running on a hardware queue.

mod common;

use common::*;
use rvgpu_ddi::feature::DXGK_FEATURE_KERNEL_MODE_TESTING;
use rvgpu_ddi::kmtest::*;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_SUCCESS};
use rvgpu_hw::pdd::AllocationKind;
use rvgpu_simos::dxgkrnl::kmtest::{escape_data, escape_sizes, STATUS_BUFFER_OVERFLOW};
use rvgpu_simos::kmt::{SimFence, SimKmt, SimMem};
use rvgpu_simos::{Machine, MachineConfig, Mode};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, HwQueue, Kmt, KmtHandle, NtStatus};
use zerocopy::IntoBytes;

/// What each escape test runs on: a kernel-mode hardware queue of `k`'s on a new context, and
/// a `target_size`-byte allocation for the built commands to write.
fn queue(
    m: &Machine,
    k: &SimKmt<'_>,
    target_size: u64,
) -> (KmtHandle, HwQueue<SimFence>, Allocation<SimMem>) {
    let context = okk(m, k.create_context(0));
    let mut qp = hw_queue_pdd();
    let q = okk(m, k.create_hw_queue(context, false, qp.as_mut_bytes()));
    (context, q, okk(m, k.create_allocation(target_size)))
}

/// Builds `cmd` through the escape with a 4 KiB buffer: the bytes, or the escape's status.
fn build(
    k: &SimKmt<'_>,
    target: KmtHandle,
    hardware_queue: bool,
    cmd: D3DDDI_TESTCOMMANDBUFFER,
) -> Result<Vec<u8>, NtStatus> {
    let mut dma = vec![0u8; TEST_DMA_BUFFER_MAX as usize];
    let mut private = vec![0u8; 64];
    let mut data = escape_data(target, hardware_queue, cmd, &mut dma, &mut private);
    k.escape_build_test_command_buffer(&mut data, &mut dma, &mut private)?;
    let (n, p) = escape_sizes(&data).unwrap();
    assert_eq!(p, 0, "rvgpu produces no private data");
    dma.truncate(n as usize);
    Ok(dma)
}

/// Copies `bytes` into a fresh command allocation and submits it to `q` as progress `value`.
fn run(
    m: &Machine,
    k: &SimKmt<'_>,
    q: &HwQueue<SimFence>,
    bytes: &[u8],
    value: u64,
) -> Allocation<SimMem> {
    let c = okk(m, k.create_allocation_as(4096, AllocationKind::Commands));
    for (i, w) in bytes.chunks(8).enumerate() {
        c.mem
            .store(i as u64 * 8, u64::from_le_bytes(w.try_into().unwrap()));
    }
    okk(
        m,
        k.submit_command_to_hw_queue(q.handle, value, c.gpu_va, bytes.len() as u32),
    );
    c
}

/// KT-1: the OS enables the feature rvgpu claims and holds its builder.
#[test]
fn kt_feature_is_negotiated_and_the_builder_is_held() {
    let m = started(MachineConfig::single(Mode::Step));
    let db = m.feature_db(0);
    assert_eq!(db.version(DXGK_FEATURE_KERNEL_MODE_TESTING), Some(1));
    assert!(db.build_test_command_buffer.0.is_some());
}

/// DDI-01: the OS's question for the kernel-mode testing interface is checked against the
/// hand-over audit's set for `DxgkDdiQueryFeatureInterface` as it is handed over, and fills no
/// field 24H2 leaves zero.
#[test]
fn ddi_01_the_testing_interface_query_is_handed_over_as_24h2_fills_it() {
    let m = started(MachineConfig::single(Mode::Step));
    let (blocks, filled) = m.handover(0, rvgpu_ddi::handover::QUERY_FEATURE_INTERFACE.name);
    assert!(blocks > 0, "no DxgkDdiQueryFeatureInterface block checked");
    assert!(filled.is_empty(), "{filled:?}");
}

/// FILL and COPY built by the driver run on a hardware queue and do what they say.
#[test]
fn kt_fill_then_copy_on_a_hardware_queue_read_back() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let (_, q, t) = queue(&m, &k, 8192);
    let fill = okk(
        &m,
        build(
            &k,
            q.handle,
            true,
            D3DDDI_TESTCOMMANDBUFFER::fill(t.gpu_va, 4096, 0xC0DE_F00D),
        ),
    );
    let _c1 = run(&m, &k, &q, &fill, 1);
    okk(&m, k.wait_for_fence(q.progress_fence().unwrap(), 1));
    assert_eq!(t.mem.load(0), 0xC0DE_F00D_C0DE_F00D);
    assert_eq!(t.mem.load(4088), 0xC0DE_F00D_C0DE_F00D);
    assert_eq!(t.mem.load(4096), 0, "nothing past NumBytes");
    let copy = okk(
        &m,
        build(
            &k,
            q.handle,
            true,
            D3DDDI_TESTCOMMANDBUFFER::copy(t.gpu_va, t.gpu_va + 4096, 4096),
        ),
    );
    let _c2 = run(&m, &k, &q, &copy, 2);
    okk(&m, k.wait_for_fence(q.progress_fence().unwrap(), 2));
    assert_eq!(t.mem.load(4096 + 8), 0xC0DE_F00D_C0DE_F00D);
    no_fault(&m);
}

/// KT-2 … KT-7: what the OS refuses before the driver sees it.
#[test]
fn kt_os_refuses_bad_escapes_before_the_driver() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let (context, q, t) = queue(&m, &k, 4096);
    let fill = D3DDDI_TESTCOMMANDBUFFER::fill(t.gpu_va, 64, 1);
    let invalid = Err(NtStatus(STATUS_INVALID_PARAMETER));
    let mut dma = vec![0u8; 4096];
    let mut private = vec![0u8; 0];
    // KT-2: too short for the type, unknown type.
    assert_eq!(
        k.escape_build_test_command_buffer(&mut [3, 0], &mut dma, &mut private),
        invalid
    );
    let mut data = escape_data(q.handle, true, fill, &mut dma, &mut private);
    data[0] = 7;
    assert_eq!(
        k.escape_build_test_command_buffer(&mut data, &mut dma, &mut private),
        invalid
    );
    // KT-4: shorter than the structure.
    let mut data = escape_data(q.handle, true, fill, &mut dma, &mut private);
    assert_eq!(
        k.escape_build_test_command_buffer(&mut data[..100], &mut dma, &mut private),
        invalid
    );
    // KT-5: unknown operations.
    for op in [
        D3DDDI_TESTCOMMANDBUFFEROP_INVALID,
        D3DDDI_TESTCOMMANDBUFFEROP_MAX,
        99,
    ] {
        let mut data = escape_data(
            q.handle,
            true,
            D3DDDI_TESTCOMMANDBUFFER::op(op),
            &mut dma,
            &mut private,
        );
        assert_eq!(
            k.escape_build_test_command_buffer(&mut data, &mut dma, &mut private),
            invalid
        );
    }
    // KT-6: DMA buffer of 0 bytes and of more than 4 KiB, private data above 1 KiB.
    for (what, dma_bytes, private_bytes) in [
        ("an empty DMA buffer", 0, 0),
        ("a DMA buffer over 4 KiB", 8192, 0),
        ("private data over 1 KiB", 4096, 2048),
    ] {
        let (mut dma, mut private) = (vec![0u8; dma_bytes], vec![0u8; private_bytes]);
        let mut data = escape_data(q.handle, true, fill, &mut dma, &mut private);
        assert_eq!(
            k.escape_build_test_command_buffer(&mut data, &mut dma, &mut private),
            invalid,
            "KT-6: {what}"
        );
    }
    // KT-7: the flag and the handle's kind disagree; a handle of nothing; another process's.
    assert_eq!(build(&k, context, true, fill).err(), invalid.err());
    assert_eq!(build(&k, q.handle, false, fill).err(), invalid.err());
    assert_eq!(build(&k, 0x1234, false, fill).err(), invalid.err());
    let (_p2, k2) = user_process(&m);
    assert_eq!(build(&k2, q.handle, true, fill).err(), invalid.err());
    assert!(build(&k, q.handle, true, fill).is_ok(), "the owner may");
}

/// KT-3: without test signing the escape does nothing.
#[test]
fn kt_escape_needs_test_signing() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.test_signing = false;
    let m = started(cfg);
    let (_p, k) = user_process(&m);
    let (_, q, t) = queue(&m, &k, 4096);
    assert_eq!(
        build(
            &k,
            q.handle,
            true,
            D3DDDI_TESTCOMMANDBUFFER::fill(t.gpu_va, 64, 1)
        ),
        Err(NtStatus(STATUS_INVALID_PARAMETER))
    );
}

/// The driver's refusals (driver/kmd/src/kmtest) reach the caller as the driver returned them,
/// and a too-small buffer is `STATUS_BUFFER_OVERFLOW` with the caller's sizes untouched (KT-8).
#[test]
fn kt_driver_refusals_and_size_negotiation() {
    let m = started(MachineConfig::single(Mode::Step));
    let (_p, k) = user_process(&m);
    let (context, q, t) = queue(&m, &k, 4096);
    let invalid = Err(NtStatus(STATUS_INVALID_PARAMETER));
    // Not a multiple of 4; a multiple of 4 the device cannot move; outside the 48-bit space.
    for (what, cmd) in [
        (
            "a 6-byte FILL",
            D3DDDI_TESTCOMMANDBUFFER::fill(t.gpu_va, 6, 1),
        ),
        (
            "a 12-byte FILL",
            D3DDDI_TESTCOMMANDBUFFER::fill(t.gpu_va, 12, 1),
        ),
        (
            "a COPY past 48 bits",
            D3DDDI_TESTCOMMANDBUFFER::copy(t.gpu_va, 1 << 48, 64),
        ),
    ] {
        assert_eq!(build(&k, q.handle, true, cmd), invalid, "{what}");
    }
    // A preemptible loop needs a hardware queue.
    let loop_cmd =
        D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP);
    assert_eq!(build(&k, context, false, loop_cmd), invalid);
    assert!(build(&k, q.handle, true, loop_cmd).is_ok());
    assert!(build(
        &k,
        context,
        false,
        D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_LOOP)
    )
    .is_ok());
    // Size negotiation: 8 bytes cannot hold a FILL (32).
    let mut dma = vec![0u8; 8];
    let mut private = vec![];
    let fill = D3DDDI_TESTCOMMANDBUFFER::fill(t.gpu_va, 64, 1);
    let mut data = escape_data(q.handle, true, fill, &mut dma, &mut private);
    assert_eq!(
        k.escape_build_test_command_buffer(&mut data, &mut dma, &mut private),
        Err(NtStatus(STATUS_BUFFER_OVERFLOW))
    );
    assert_eq!(
        escape_sizes(&data),
        Some((8, 0)),
        "the OS writes nothing back on failure"
    );
    let mut dma = vec![0u8; 32];
    let mut data = escape_data(q.handle, true, fill, &mut dma, &mut private);
    assert_eq!(
        k.escape_build_test_command_buffer(&mut data, &mut dma, &mut private),
        Ok(())
    );
    assert_eq!(escape_sizes(&data), Some((32, 0)));
    assert!(
        m.triage_log(0)
            .iter()
            .all(|l| !l.contains("BuildTestCommandBuffer")),
        "{:?}",
        m.triage_log(0)
    );
    let _ = STATUS_SUCCESS;
}

against_the_pe_image!(
    "kt_escape_needs_test_signing" =>
        "the test-signed rvgpu.sys does not load with test signing off (CI-02)",
);
