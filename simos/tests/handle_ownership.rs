//! D3DKMT handles are per process. Process B naming process A's fence handle (a
//! guessed number) names nothing: its CPU signal, CPU wait, destroy and GPU waits and signals
//! fail with Windows' statuses (STATUS_INVALID_PARAMETER, as 24H2 answers a handle not in the
//! caller's table), and A's fence is untouched. A destroy or share of a handle
//! not in the caller's table is STATUS_INVALID_PARAMETER (Wine's `d3dkmt.c`, run on Windows:
//! "destroying multiple times fails").

mod common;

use common::*;
use rvgpu_simos::{MachineConfig, Mode};
use rvgpu_umd::kmt::{Kmt, NtStatus};
use rvgpu_umd::submit::{KernelQueue, QueueConfig};

const STATUS_INVALID_HANDLE: NtStatus = NtStatus(0xC000_0008_u32 as i32);
const STATUS_INVALID_PARAMETER: NtStatus = NtStatus(0xC000_000D_u32 as i32);

#[test]
fn another_process_cannot_use_a_fence_by_its_handle() {
    let m = started(MachineConfig::single(Mode::Step));
    let a = ok(&m, m.create_process(0));
    let b = ok(&m, m.create_process(0));
    let ka = m.kmt(&a);
    let kb = m.kmt(&b);
    let (h, fence) = okk(&m, ka.create_monitored_fence(3));

    // 24H2: a handle not in the caller's table (K:SignalSynchronizationObjectFromCpu
    // @0x1402BA4F8, K:WaitForSynchronizationObjectFromCpu @0x1402AD200).
    assert_eq!(
        kb.signal_fence_from_cpu(h, 100),
        Err(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(kb.wait_for_fence(h, 1), Err(STATUS_INVALID_PARAMETER));
    assert_eq!(kb.destroy_monitored_fence(h), Err(STATUS_INVALID_PARAMETER));
    // GPU waits and signals of B's own kernel-mode queue naming A's fence.
    let q = okk(
        &m,
        KernelQueue::new(
            &kb,
            &QueueConfig {
                node: 0,
                command_buffer_size: 4096,
                ..QueueConfig::default()
            },
        ),
    );
    let qh = q.queue_handle();
    assert_eq!(
        kb.submit_wait_to_hw_queue(qh, &[(h, 1)]),
        Err(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(
        kb.submit_signal_to_hw_queue(qh, &[(h, 100)]),
        Err(STATUS_INVALID_PARAMETER)
    );
    assert_eq!(fence.value(), 3, "B changed A's fence");

    // A itself still can.
    okk(&m, ka.signal_fence_from_cpu(h, 5));
    assert_eq!(fence.value(), 5);
    okk(&m, ka.wait_for_fence(h, 5));
    okk(&m, ka.destroy_monitored_fence(h));
    no_fault(&m);
}

const STATUS_INSUFFICIENT_RESOURCES: NtStatus = NtStatus(0xC000_009A_u32 as i32);

/// Hostile sharing: a native fence crosses processes only as Windows lets it, by an NT handle
/// its creator made (`D3DKMTShareObjects`) and duplicated into the other process's handle
/// table. A second process that names the fence by its D3DKMT handle, by the creator's NT
/// handle, or by any guessed value opens nothing; a fence created private cannot be shared at
/// all; a duplicated handle opens the fence, and keeps it alive after its creator exits.
#[test]
fn native_fences_open_only_by_an_nt_handle_duplicated_into_the_opener() {
    for mode in [Mode::Step, Mode::Threaded] {
        let m = started(MachineConfig::single(mode));
        let a = ok(&m, m.create_process(0));
        let b = ok(&m, m.create_process(0));
        let c = ok(&m, m.create_process(0));
        let (ka, kb, kc) = (m.kmt(&a), m.kmt(&b), m.kmt(&c));
        let private = okk(&m, ka.create_native_fence(1));
        let shared = okk(&m, ka.create_shareable_native_fence(2));

        // By the D3DKMT handles (sequential, so guessable): nothing.
        for f in [&private, &shared] {
            assert_eq!(
                kb.open_native_fence(u64::from(f.kmt)).map(|_| ()),
                Err(STATUS_INVALID_HANDLE)
            );
        }
        // A private fence has no NT handle to give.
        assert_eq!(
            ka.share_native_fence(private.kmt),
            Err(STATUS_INVALID_PARAMETER)
        );
        // Nor can B share A's fence by A's D3DKMT handle.
        assert_eq!(
            kb.share_native_fence(shared.kmt),
            Err(STATUS_INVALID_PARAMETER)
        );
        let h = okk(&m, ka.share_native_fence(shared.kmt));
        // A's NT handle, and every guess, names nothing in B's table.
        assert_eq!(
            kb.open_native_fence(h).map(|_| ()),
            Err(STATUS_INVALID_HANDLE)
        );
        for guess in (0..=4096u64).step_by(4).chain([u64::MAX, 1, 2, 3]) {
            assert_eq!(
                kb.open_native_fence(guess).map(|_| ()),
                Err(STATUS_INVALID_HANDLE),
                "guess {guess:#x}"
            );
        }
        // C cannot close A's handle.
        assert_eq!(kc.close_nt_handle(h), Err(STATUS_INVALID_HANDLE));

        // Duplicated into B's table, it opens the fence (B's own instance).
        let hb = ok(&m, m.duplicate_handle(a.pid, h, b.pid));
        let fb = okk(&m, kb.open_native_fence(hb));
        assert_eq!(fb.gpu.tag, shared.gpu.tag, "the same fence");
        // Duplicating a handle B does not hold fails.
        assert!(m.duplicate_handle(b.pid, hb + 4, c.pid).is_err());
        okk(&m, ka.close_nt_handle(h));
        assert_eq!(
            ka.close_nt_handle(h),
            Err(STATUS_INVALID_HANDLE),
            "closed twice"
        );

        // A exits; B's NT handle keeps the fence, B opens it again and closes it.
        ok(&m, m.exit_process(&a));
        let again = okk(&m, kb.open_native_fence(hb));
        okk(&m, kb.close_nt_handle(hb));
        assert_eq!(
            kb.open_native_fence(hb).map(|_| ()),
            Err(STATUS_INVALID_HANDLE)
        );
        okk(&m, kb.destroy_native_fence(again.kmt));
        okk(&m, kb.destroy_native_fence(fb.kmt));
        assert_eq!(m.fence_live_counts(0).0 .0, 0, "no fence left: {mode:?}");
        for p in [&a, &b, &c] {
            assert_eq!(m.nt_handle_count(p.pid), 0);
        }
        ok(&m, m.exit_process(&b));
        exits_clean(&m, &c);
    }
}

/// A process's NT handles are its own to exhaust. One that shares a fence until its
/// handle table is full gets `STATUS_INSUFFICIENT_RESOURCES`; another process still shares;
/// exit closes every handle and the fence goes with the last of them.
#[test]
fn nt_handle_exhaustion_is_per_process_and_reclaimed_at_exit() {
    let m = started(MachineConfig::single(Mode::Step));
    let a = ok(&m, m.create_process(0));
    let b = ok(&m, m.create_process(0));
    let (ka, kb) = (m.kmt(&a), m.kmt(&b));
    let fa = okk(&m, ka.create_shareable_native_fence(0));
    let fb = okk(&m, kb.create_shareable_native_fence(0));
    let mut n = 0usize;
    let full = loop {
        match ka.share_native_fence(fa.kmt) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
        assert!(n <= 1 << 20, "no limit");
    };
    assert_eq!(full, STATUS_INSUFFICIENT_RESOURCES);
    assert_eq!(m.nt_handle_count(a.pid), n);
    okk(&m, kb.share_native_fence(fb.kmt));
    // The fence outlives its instance while A holds handles; A's exit closes them all.
    okk(&m, ka.destroy_native_fence(fa.kmt));
    assert_eq!(m.fence_live_counts(0).0 .0, 2);
    ok(&m, m.exit_process(&a));
    assert_eq!(m.nt_handle_count(a.pid), 0);
    assert_eq!(
        m.fence_live_counts(0).0 .0,
        1,
        "A's fence went with its handles"
    );
    ok(&m, m.exit_process(&b));
    assert_eq!(m.fence_live_counts(0).0 .0, 0);
    no_fault(&m);
}

// The shipped image opens, shares and refuses as the Linux build does.
against_the_pe_image!();
