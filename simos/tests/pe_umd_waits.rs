//! CPU waits of `rvgpu_umd.dll` on one native fence, several at once, as an application makes
//! them: every wait, blocking or on the application's event, is released once the fence reaches
//! its value, under every reading of MonitoredValue (24H2 raises it over a pending wait when a
//! new wait arrives after CurrentValue passed it: simos/src/os/answers.rs) and on both builds of
//! the driver.

mod common;

use common::dll::{addr, LUID_LOW, OK, TIMEOUT};
use std::sync::Arc;

use common::pe::{call, log_of, pe_machine, threaded_machine, umd};
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::pe::DriverBuild;
use rvgpu_simos::Machine;

const WAIT_OBJECT_0: u64 = 0;
const WAIT_TIMEOUT: u64 = 0x102;

/// The machines of both driver builds: `rvgpu.sys` in the emulator, and the Linux build.
fn both_builds() -> [Arc<Machine>; 2] {
    [pe_machine(), threaded_machine(DriverBuild::Linux)]
}

/// One process of the DLL with an adapter, a user-mode queue and a native fence at 0.
struct App {
    p: Arc<UserProcess>,
    adapter: u64,
    queue: u64,
    fence: u64,
}

impl App {
    fn new(m: &Arc<Machine>) -> Self {
        let p = UserProcess::new(m.clone(), umd());
        let mut adapter = 0u64;
        assert_eq!(
            call(&p, "rvgpu_open_adapter", &[LUID_LOW, 0, addr(&mut adapter)]),
            OK
        );
        let mut queue = 0u64;
        assert_eq!(
            call(&p, "rvgpu_create_queue", &[adapter, 0, 0, addr(&mut queue)]),
            OK
        );
        let mut fence = 0u64;
        assert_eq!(
            call(&p, "rvgpu_fence_create", &[adapter, 0, addr(&mut fence)]),
            OK
        );
        Self {
            p,
            adapter,
            queue,
            fence,
        }
    }

    fn k(&self, name: &str, args: &[u64]) -> u64 {
        self.p.call_import(name, args).expect(name)
    }

    /// A manual-reset event of the process.
    fn event(&self) -> u64 {
        let e = self.k("CreateEventW", &[0, 1, 0, 0]);
        assert_ne!(e, 0);
        e
    }

    /// `rvgpu_fence_wait_async` for `value` on a new event; the event.
    fn wait_async(&self, value: u64) -> u64 {
        let e = self.event();
        assert_eq!(
            call(&self.p, "rvgpu_fence_wait_async", &[self.fence, value, e]),
            OK
        );
        e
    }

    /// The GPU signals the fence to `value` (a batch of one signal on the user-mode queue),
    /// and the queue is waited for until it ran.
    fn gpu_signal(&self, value: u64) {
        self.gpu_signal_of(self.fence, value);
    }

    /// [`Self::gpu_signal`] of another fence of the process.
    fn gpu_signal_of(&self, fence: u64, value: u64) {
        let entry = [fence, value];
        let desc = [0u64, 0, 0, 0, entry.as_ptr() as u64, 1];
        let mut last = 0u64;
        assert_eq!(
            call(
                &self.p,
                "rvgpu_queue_submit",
                &[self.queue, desc.as_ptr() as u64, addr(&mut last)]
            ),
            OK
        );
        assert_eq!(
            call(&self.p, "rvgpu_queue_wait", &[self.queue, last, u64::MAX]),
            OK
        );
        let mut v = 0u64;
        assert_eq!(
            call(&self.p, "rvgpu_fence_value", &[fence, addr(&mut v)]),
            OK
        );
        assert_eq!(v, value);
    }

    /// `WaitForSingleObject(event, ms)`.
    fn wait_event(&self, event: u64, ms: u64) -> u64 {
        self.k("WaitForSingleObject", &[event, ms])
    }

    fn close(self, events: &[u64]) {
        for &e in events {
            assert_eq!(self.k("CloseHandle", &[e]), 1);
        }
        assert_eq!(call(&self.p, "rvgpu_fence_destroy", &[self.fence]), OK);
        assert_eq!(call(&self.p, "rvgpu_destroy_queue", &[self.queue]), OK);
        assert_eq!(call(&self.p, "rvgpu_close_adapter", &[self.adapter]), OK);
        assert_eq!(self.p.heap_blocks(), 0, "the DLL freed what it allocated");
    }
}

/// MF-04 through the shipped DLL: async waits for 3 and 5, the GPU signals 3, a new async
/// wait for 8 arrives (24H2 would raise MonitoredValue to 8 over the wait for 5), the GPU
/// signals 6 and goes idle: the event for 5 is signalled, the one for 8 is not until the fence
/// reaches 8.
#[test]
fn mf_04_an_async_wait_is_released_when_a_later_wait_arrives_after_its_fence_moved() {
    for m in both_builds() {
        let a = App::new(&m);
        let e3 = a.wait_async(3);
        let e5 = a.wait_async(5);
        a.gpu_signal(3);
        assert_eq!(a.wait_event(e3, 5000), WAIT_OBJECT_0);
        let e8 = a.wait_async(8);
        a.gpu_signal(6);
        assert_eq!(
            a.wait_event(e5, 2000),
            WAIT_OBJECT_0,
            "the wait for 5 with the fence at 6\n{}",
            log_of(&m)
        );
        assert_eq!(a.wait_event(e8, 0), WAIT_TIMEOUT, "8 is not reached");
        a.gpu_signal(8);
        assert_eq!(a.wait_event(e8, 5000), WAIT_OBJECT_0);
        a.close(&[e3, e5, e8]);
        assert!(m.fault().is_none(), "{:?}", m.fault());
    }
}

/// MF-04 through the shipped DLL, several events: waits arriving in rising order, each after
/// the fence passed the one before it, with lower waits still pending; every event is
/// signalled once the fence reaches its value, none before.
#[test]
fn mf_04_every_async_wait_of_a_pipelined_loop_is_released_at_its_value() {
    for m in both_builds() {
        let a = App::new(&m);
        let mut events = Vec::new();
        let mut pending: Vec<(u64, u64)> = Vec::new();
        // Each round: two new waits ahead, then the GPU moves one step past the oldest.
        let mut value = 0u64;
        for round in 0..6u64 {
            for ahead in [2u64, 4] {
                let w = round * 2 + ahead;
                let e = a.wait_async(w);
                events.push(e);
                pending.push((w, e));
            }
            value += 2;
            a.gpu_signal(value);
            for &(w, e) in &pending {
                if w <= value {
                    assert_eq!(
                        a.wait_event(e, 2000),
                        WAIT_OBJECT_0,
                        "round {round}: the wait for {w} with the fence at {value}"
                    );
                } else {
                    assert_eq!(a.wait_event(e, 0), WAIT_TIMEOUT, "{w} early at {value}");
                }
            }
            pending.retain(|&(w, _)| w > value);
        }
        a.close(&events);
        assert!(m.fault().is_none(), "{:?}", m.fault());
    }
}

/// MF-04 under threads of one process (the C API's promise: fences may be waited on from any
/// thread): blocking waits with timeouts and async waits on events, arriving while the GPU
/// signals the fence one value at a time. Every wait returns once its value is reached (none
/// is lost), never before it (the fence reads at least the value afterwards), and a wait for a
/// value never reached times out after its time, not before.
#[test]
fn mf_04_threads_waiting_on_one_fence_are_each_released_at_their_value_and_no_earlier() {
    const LAST: u64 = 60;
    for m in both_builds() {
        let a = Arc::new(App::new(&m));
        let mut threads = Vec::new();
        for t in 0..4u64 {
            let a = a.clone();
            threads.push(std::thread::spawn(move || {
                // Each thread waits for every fourth value, a little ahead of the fence;
                // odd threads on events, even ones blocking.
                let mut v = 3 + t;
                while v <= LAST {
                    if t % 2 == 0 {
                        assert_eq!(
                            call(&a.p, "rvgpu_fence_wait", &[a.fence, v, 10_000_000_000]),
                            OK,
                            "thread {t}: the wait for {v}"
                        );
                    } else {
                        let e = a.wait_async(v);
                        assert_eq!(
                            a.wait_event(e, 10_000),
                            WAIT_OBJECT_0,
                            "thread {t}: the event for {v}"
                        );
                        assert_eq!(a.k("CloseHandle", &[e]), 1);
                    }
                    let mut now = 0u64;
                    assert_eq!(
                        call(&a.p, "rvgpu_fence_value", &[a.fence, addr(&mut now)]),
                        OK
                    );
                    assert!(now >= v, "thread {t}: released for {v} at {now}");
                    v += 4;
                }
            }));
        }
        // A wait for a value never reached ends with its timeout, not before.
        let never = {
            let a = a.clone();
            std::thread::spawn(move || {
                let t0 = std::time::Instant::now();
                let r = call(&a.p, "rvgpu_fence_wait", &[a.fence, 1 << 40, 50_000_000]);
                (r, t0.elapsed())
            })
        };
        for v in 1..=LAST {
            a.gpu_signal(v);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        for t in threads {
            t.join().expect("a waiter thread");
        }
        let (r, took) = never.join().expect("the timed-out waiter");
        assert_eq!(r, TIMEOUT);
        assert!(took >= std::time::Duration::from_millis(50), "{took:?}");
        let a = Arc::into_inner(a).expect("the last reference");
        a.close(&[]);
        assert!(m.fault().is_none(), "{:?}", m.fault());
    }
}

/// A shareable fence of `a`, opened in `b` through a duplicated NT handle: (a's, b's) handles.
fn share_fence(m: &Arc<Machine>, a: &App, b: &App) -> (u64, u64) {
    let mut fa = 0u64;
    assert_eq!(
        call(
            &a.p,
            "rvgpu_fence_create2",
            &[a.adapter, 0, 1, addr(&mut fa)]
        ),
        OK
    );
    let mut nt = 0u64;
    assert_eq!(call(&a.p, "rvgpu_fence_share", &[fa, addr(&mut nt)]), OK);
    let (from, to) = (a.p.nt_processes()[0], b.p.nt_processes()[0]);
    let theirs = m.duplicate_handle(from, nt, to).expect("DuplicateHandle");
    assert_eq!(a.k("CloseHandle", &[nt]), 1);
    let mut fb = 0u64;
    assert_eq!(
        call(
            &b.p,
            "rvgpu_fence_open",
            &[b.adapter, theirs, addr(&mut fb)]
        ),
        OK
    );
    assert_eq!(b.k("CloseHandle", &[theirs]), 1);
    (fa, fb)
}

/// MF-04 across two processes of the DLL on one shared fence, async waits only (no thread of
/// either process runs while the fence moves): A waits for 3 and 5 on events, the GPU signals
/// 3, B's wait for 8 arrives (24H2 raises MonitoredValue from 3 to 8 over A's 5), the GPU
/// signals 6 and goes idle. A's event for 5 is signalled at 6 under every reading, B's is not
/// before 8; each wait costs at most two registrations.
#[test]
fn mf_04_an_async_wait_is_released_at_its_value_under_another_process_s_later_wait() {
    for m in both_builds() {
        let a = App::new(&m);
        let b = App::new(&m);
        let (fa, fb) = share_fence(&m, &a, &b);
        // Each wait is its registration and at most one re-arm, at the lowest pending wait of
        // both processes (the KMD's board: umd/src/waitboard.rs).
        let on = |app: &App, f: u64, v: u64| {
            let e = app.event();
            let before = app.p.calls("D3DKMTWaitForSynchronizationObjectFromCpu");
            assert_eq!(call(&app.p, "rvgpu_fence_wait_async", &[f, v, e]), OK);
            let calls = app.p.calls("D3DKMTWaitForSynchronizationObjectFromCpu") - before;
            assert!((1..=2).contains(&calls), "{calls} registrations for {v}");
            e
        };
        let e3 = on(&a, fa, 3);
        let e5 = on(&a, fa, 5);
        a.gpu_signal_of(fa, 3);
        assert_eq!(a.wait_event(e3, 5000), WAIT_OBJECT_0);
        let e8 = on(&b, fb, 8);
        a.gpu_signal_of(fa, 6);
        assert_eq!(
            a.wait_event(e5, 2000),
            WAIT_OBJECT_0,
            "A's wait for 5 with the fence at 6 and B's wait for 8 pending\n{}",
            log_of(&m)
        );
        assert_eq!(b.wait_event(e8, 0), WAIT_TIMEOUT, "8 is not reached");
        a.gpu_signal_of(fa, 8);
        assert_eq!(b.wait_event(e8, 5000), WAIT_OBJECT_0);
        assert_eq!(b.k("CloseHandle", &[e8]), 1);
        assert_eq!(call(&b.p, "rvgpu_fence_destroy", &[fb]), OK);
        assert_eq!(call(&a.p, "rvgpu_fence_destroy", &[fa]), OK);
        b.close(&[]);
        a.close(&[e3, e5]);
        assert!(m.fault().is_none(), "{:?}", m.fault());
    }
}

/// MF-04 across two processes of the DLL on one shared fence: A's async wait for 3 is released,
/// then process B's async wait for 8 arrives with A's blocking wait for 5 still pending (24H2
/// raises MonitoredValue over it; A cannot re-arm for another process's wait). A's wait still
/// returns soon after the fence is at 6, within its slices (a late wake under 24H2), and B's
/// event is signalled at 8.
#[test]
fn mf_04_a_blocking_wait_outlives_its_value_by_a_bounded_time_under_another_process_s_wait() {
    for m in both_builds() {
        let a = Arc::new(App::new(&m));
        let b = App::new(&m);
        let (fa, fb) = share_fence(&m, &a, &b);
        let waits = a.p.calls("D3DKMTWaitForSynchronizationObjectFromCpu");
        let waiter = |v: u64| {
            let a = a.clone();
            std::thread::spawn(move || {
                let r = call(&a.p, "rvgpu_fence_wait", &[fa, v, 10_000_000_000]);
                (r, std::time::Instant::now())
            })
        };
        // A's wait for 3 on its event (its release re-arms nothing), then the blocking one.
        let e3 = a.event();
        assert_eq!(call(&a.p, "rvgpu_fence_wait_async", &[fa, 3, e3]), OK);
        let w5 = waiter(5);
        let t0 = std::time::Instant::now();
        while a.p.calls("D3DKMTWaitForSynchronizationObjectFromCpu") < waits + 2 {
            assert!(
                t0.elapsed().as_secs() < 10,
                "the waiters never reached the thunk"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let signal = |v: u64| a.gpu_signal_of(fa, v);
        signal(3);
        assert_eq!(a.wait_event(e3, 5000), WAIT_OBJECT_0);
        assert_eq!(a.k("CloseHandle", &[e3]), 1);
        let eb = {
            let e = b.event();
            assert_eq!(call(&b.p, "rvgpu_fence_wait_async", &[fb, 8, e]), OK);
            e
        };
        signal(6);
        let at6 = std::time::Instant::now();
        let (r, done) = w5.join().expect("the wait for 5");
        assert_eq!(r, OK);
        let late = done.saturating_duration_since(at6);
        assert!(
            late < std::time::Duration::from_secs(1),
            "released {late:?} after 6"
        );
        signal(8);
        assert_eq!(b.wait_event(eb, 5000), WAIT_OBJECT_0);
        assert_eq!(b.k("CloseHandle", &[eb]), 1);
        assert_eq!(call(&b.p, "rvgpu_fence_destroy", &[fb]), OK);
        assert_eq!(call(&a.p, "rvgpu_fence_destroy", &[fa]), OK);
        b.close(&[]);
        Arc::into_inner(a).expect("the last reference").close(&[]);
        assert!(m.fault().is_none(), "{:?}", m.fault());
    }
}
