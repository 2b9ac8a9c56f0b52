//! CPU waits of `rvgpu_umd.dll` in two processes on one shared native fence, through the KMD's
//! wait board (docs/performance.md, "Waits through the UMD"): blocking waits arriving as the
//! GPU signals the fence one value at a time, each for a value one and a half arrivals ahead,
//! arrivals taking turns between the processes. Every wait returns at its value (the OS
//! releases it: no late wake by the OS's count, none lost), and the fence interrupts at most 3
//! times per satisfied wait, under both readings of MonitoredValue and on both driver builds;
//! a third process writing garbage on the board changes neither the wakes nor anyone's slot.
//!
//! The test goes on only once the OS shows what it did taken in ([`Machine::native_fence_waits`]:
//! each pending wait on the fence's list, every reached one released; the waiters blocked in
//! `WaitForSingleObject`; the GPU idle with its interrupt serviced), and checks there that
//! MonitoredValue is not above the lowest pending wait.

mod common;

use common::dll::{addr, LUID_LOW, OK};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::pe::{call, log_of, umd};
use common::user_process;
use rvgpu_hw::pdd::{WaitBoardEscape, PDD_MAGIC, WAIT_BOARD_ESCAPE_VERSION, WAIT_BOARD_WAITS};
use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::pe::DriverBuild;
use rvgpu_simos::{FenceWaits, Machine, MachineConfig, Mode, ProcessId};
use rvgpu_umd::kmt::Kmt;
use zerocopy::IntoBytes;

/// Values between two arrivals; each wait is for 1.5 arrivals ahead.
const SPACING: u64 = 8;
/// Arrivals per run.
const ARRIVALS: u64 = 16;
/// Signals with no wait pending, counted before the waits.
const CALIBRATION: u64 = 16;

/// A started threaded machine running `driver` under `reading`.
fn machine(driver: DriverBuild, reading: rvgpu_simos::Windows) -> Arc<Machine> {
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.driver = driver;
    cfg.os.windows = reading;
    Arc::new(common::started(cfg))
}

/// Every machine the runs need, made one at a time: both builds, both readings.
fn machines() -> impl Iterator<Item = (String, Arc<Machine>)> {
    [rvgpu_simos::Windows::W24H2, rvgpu_simos::Windows::PAGES]
        .into_iter()
        .flat_map(|r| [(r, "rvgpu.sys"), (r, "linux")])
        .map(|(reading, name)| {
            let build = match name {
                "linux" => DriverBuild::Linux,
                _ => DriverBuild::Pe(None),
            };
            (
                format!("{name}, {}", reading.name()),
                machine(build, reading),
            )
        })
}

/// One process of the DLL with an adapter, a user-mode queue and a fence handle.
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
        Self {
            p,
            adapter,
            queue,
            fence: 0,
        }
    }

    /// The kernel calls the process made so far (registrations and escapes).
    fn kernel_calls(&self) -> u64 {
        self.p.calls("D3DKMTWaitForSynchronizationObjectFromCpu") + self.p.calls("D3DKMTEscape")
    }

    /// The GPU signals the fence to `value` (one signal on the queue), and the fence is read
    /// until it holds it: nobody waits on the queue's own progress, so only the fence's
    /// signals may interrupt.
    fn gpu_signal(&self, value: u64) {
        let entry = [self.fence, value];
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
        // The machine's time, not the host's: a starved GPU thread is not a GPU that never
        // signals.
        let reached = self.p.machine().run_until(0, Duration::from_secs(10), |_| {
            let mut v = 0u64;
            assert_eq!(
                call(&self.p, "rvgpu_fence_value", &[self.fence, addr(&mut v)]),
                OK
            );
            v >= value
        });
        assert_eq!(reached, Ok(true), "the GPU never signalled {value}");
    }

    fn close(self) {
        assert_eq!(call(&self.p, "rvgpu_fence_destroy", &[self.fence]), OK);
        assert_eq!(call(&self.p, "rvgpu_destroy_queue", &[self.queue]), OK);
        assert_eq!(call(&self.p, "rvgpu_close_adapter", &[self.adapter]), OK);
    }
}

/// A shareable fence of `a`, opened in `b` through a duplicated NT handle; the NT handle `a`
/// still holds, for a third opener.
fn share_fence(m: &Arc<Machine>, a: &mut App, b: &mut App) -> u64 {
    assert_eq!(
        call(
            &a.p,
            "rvgpu_fence_create2",
            &[a.adapter, 0, 1, addr(&mut a.fence)]
        ),
        OK
    );
    let mut nt = 0u64;
    assert_eq!(
        call(&a.p, "rvgpu_fence_share", &[a.fence, addr(&mut nt)]),
        OK
    );
    let (from, to) = (a.p.nt_processes()[0], b.p.nt_processes()[0]);
    let theirs = m.duplicate_handle(from, nt, to).expect("DuplicateHandle");
    assert_eq!(
        call(
            &b.p,
            "rvgpu_fence_open",
            &[b.adapter, theirs, addr(&mut b.fence)]
        ),
        OK
    );
    assert_eq!(
        b.p.call_import("CloseHandle", &[theirs])
            .expect("CloseHandle"),
        1
    );
    nt
}

/// `hGlobalNativeFence` of the one fence `a` and `b` both hold open.
fn shared_global(m: &Machine, a: &App, b: &App) -> usize {
    let theirs: Vec<usize> = m
        .native_fence_waits(0, b.p.nt_processes()[0])
        .iter()
        .map(|f| f.global)
        .collect();
    let shared: Vec<usize> = m
        .native_fence_waits(0, a.p.nt_processes()[0])
        .iter()
        .map(|f| f.global)
        .filter(|g| theirs.contains(g))
        .collect();
    assert_eq!(shared.len(), 1, "one fence shared: {shared:?}");
    shared[0]
}

/// A waiter thread of `app`: blocking waits, one at a time, for the values it is sent; each
/// result goes back with the value.
fn waiter(app: &Arc<App>) -> Waiter {
    let (tx, rx) = mpsc::channel::<u64>();
    let (done_tx, done) = mpsc::channel();
    let app = app.clone();
    let thread = std::thread::spawn(move || {
        for v in rx {
            let r = call(&app.p, "rvgpu_fence_wait", &[app.fence, v, 20_000_000_000]);
            if done_tx.send((v, r)).is_err() {
                return;
            }
        }
    });
    (tx, done, thread)
}

/// A waiter thread's values to wait for, its results, and the thread.
type Waiter = (
    mpsc::Sender<u64>,
    mpsc::Receiver<(u64, u64)>,
    std::thread::JoinHandle<()>,
);

/// The shared fence as the OS holds it: `global` names it, `pid` is one of its openers.
fn shared_fence(m: &Machine, pid: ProcessId, global: usize) -> FenceWaits {
    m.native_fence_waits(0, pid)
        .into_iter()
        .find(|f| f.global == global)
        .expect("the shared fence is open")
}

/// Blocks until the machine took in everything done so far, as the OS and the device know it:
/// the GPU ran what it was given and its interrupt was serviced (so the interrupt counts are
/// whole), every wait the fence reached was released, each wait of `pending` (value, waiter
/// thread) is on the fence's list, and each process has exactly its pending waiters blocked
/// in `WaitForSingleObject` (their registrations and re-arms are done). With `armed`, then
/// checks that MonitoredValue lies between CurrentValue and the lowest pending value: the fence
/// interrupts at that wait at the latest. Fails on the machine's clock: a satisfied wait the OS
/// never releases, or a registration that never comes.
fn settle(
    what: &str,
    m: &Machine,
    apps: [&App; 2],
    (pid, global): (ProcessId, usize),
    pending: &[(u64, usize)],
    armed: bool,
) {
    let device = m.device(0).expect("an emulated device");
    let waiting = |i: usize| pending.iter().filter(|&&(_, w)| w % 2 == i).count() as u64;
    let mut seen = None;
    let done = m.run_until(0, Duration::from_secs(10), |m| {
        if !device.cmp_asleep() || device.interrupt_pending() {
            return false;
        }
        let f = shared_fence(m, pid, global);
        let released = f.cpu_waits.iter().all(|&w| w > f.current);
        let registered = pending.iter().all(|(t, _)| f.cpu_waits.contains(t));
        let blocked = (0..2).all(|i| apps[i].p.threads_waiting() == waiting(i));
        seen = Some(f);
        released && registered && blocked
    });
    assert_eq!(
        done,
        Ok(true),
        "{what}: a wait the fence reached is still pending (late or lost), or a waiter of \
         {pending:?} never registered: last seen {seen:?}\n{}",
        log_of(m)
    );
    let f = shared_fence(m, pid, global);
    if let Some(lowest) = pending.iter().map(|&(t, _)| t).min().filter(|_| armed) {
        assert!(
            (f.current..=lowest).contains(&f.monitored),
            "{what}: MonitoredValue above the lowest pending wait {lowest}: {f:?}"
        );
    }
}

/// What a run counted.
#[derive(Debug)]
struct Run {
    satisfied: u64,
    interrupts: u64,
    /// `interrupts` less what as many signals cost with no wait pending.
    by_waits: u64,
    kernel_calls: u64,
}

/// The arriving waits of two processes on one shared fence of machine `m` (`what` names it),
/// the GPU signalling one value at a time; `between` runs before every arrival (the hostile
/// opener's turn). Fails on a wait not returned once the fence reached its value (lost), one
/// returned with an error, or one the OS released late.
fn run(
    what: &str,
    m: &Arc<Machine>,
    join: impl FnOnce(rvgpu_simos::ProcessId, u64),
    mut between: impl FnMut(u64),
) -> Run {
    let mut a = App::new(m);
    let mut b = App::new(m);
    let nt = share_fence(m, &mut a, &mut b);
    join(a.p.nt_processes()[0], nt);
    assert_eq!(
        a.p.call_import("CloseHandle", &[nt]).expect("CloseHandle"),
        1
    );
    let fence = (a.p.nt_processes()[0], shared_global(m, &a, &b));
    let (a, b) = (Arc::new(a), Arc::new(b));
    let mut value = 0u64;
    // Two waiter threads per process: arrival k goes to process k % 2.
    let waiters = [waiter(&a), waiter(&b), waiter(&a), waiter(&b)];
    // What the GPU's signals cost with no wait pending: none under 24H2; under the pages every
    // submission of the DLL's queue interrupts, whoever waits. The waits are charged the rest.
    let isr0 = m.interrupt_counts(0).0;
    for _ in 0..CALIBRATION {
        value += 1;
        a.gpu_signal(value);
        settle(what, m, [&a, &b], fence, &[], false);
    }
    let idle = m.interrupt_counts(0).0 - isr0;
    let isr0 = m.interrupt_counts(0).0;
    let first = value;
    let calls0 = a.kernel_calls() + b.kernel_calls();
    let mut pending: Vec<(u64, usize)> = Vec::new();
    let mut satisfied = 0;
    for k in 0..ARRIVALS {
        between(value);
        let target = value + SPACING + SPACING / 2;
        let w = (k % 4) as usize;
        waiters[w].0.send(target).expect("a waiter thread");
        pending.push((target, w));
        settle(what, m, [&a, &b], fence, &pending, true);
        for _ in 0..SPACING {
            value += 1;
            a.gpu_signal(value);
            let (due, rest): (Vec<_>, Vec<_>) = pending.iter().partition(|(t, _)| *t <= value);
            pending = rest;
            for (t, w) in due {
                match waiters[w].1.recv_timeout(Duration::from_secs(5)) {
                    Ok((v, r)) => {
                        assert_eq!((v, r), (t, OK), "{what}: the wait for {t}");
                    }
                    Err(_) => panic!(
                        "{what}: the wait for {t} was lost (fence at {value})\n{}",
                        log_of(m)
                    ),
                }
                satisfied += 1;
            }
            settle(what, m, [&a, &b], fence, &pending, false);
        }
    }
    // The last waits.
    while let Some(&(t, _)) = pending.iter().max() {
        while value < t {
            value += 1;
            a.gpu_signal(value);
        }
        for (t, w) in std::mem::take(&mut pending) {
            let got = waiters[w].1.recv_timeout(Duration::from_secs(5));
            assert_eq!(got.ok(), Some((t, OK)), "{what}: the wait for {t}");
            satisfied += 1;
        }
    }
    settle(what, m, [&a, &b], fence, &[], false);
    let interrupts = m.interrupt_counts(0).0 - isr0;
    let counted = Run {
        satisfied,
        interrupts,
        by_waits: interrupts.saturating_sub(idle * (value - first) / CALIBRATION),
        kernel_calls: a.kernel_calls() + b.kernel_calls() - calls0,
    };
    let late = m.late_wakes(0);
    assert_eq!(late.late, 0, "{what}: waits the OS released late: {late:?}");
    for (tx, _, thread) in waiters {
        drop(tx);
        thread.join().expect("a waiter thread");
    }
    for app in [a, b] {
        Arc::into_inner(app).expect("the waiters ended").close();
    }
    assert!(m.fault().is_none(), "{what}: {:?}", m.fault());
    counted
}

/// MF-04 across processes through the shipped DLL and the KMD's board: two processes' blocking
/// waits on one shared fence are each released by the OS at their value (no late wake, none
/// lost), at most 3 interrupts per satisfied wait (beyond what the signals cost with no wait),
/// under 24H2 and the pages, on both builds. Without the board (the C + 1 rule) every signal
/// interrupts under 24H2 while a wait is pending: about 8 per wait here.
#[test]
fn mf_04_processes_sharing_a_fence_wake_on_time_at_most_3_interrupts_per_wait() {
    for (what, m) in machines() {
        let r = run(&what, &m, |_, _| {}, |_| {});
        eprintln!("{what}: {r:?}");
        assert_eq!(r.satisfied, ARRIVALS, "{what}");
        assert!(
            r.kernel_calls > 0 && r.by_waits <= r.interrupts,
            "{what}: {r:?}"
        );
        let per = r.by_waits as f64 / r.satisfied as f64;
        assert!(per <= 3.0, "{what}: {per} interrupts per wait ({r:?})");
    }
}

/// MF-04, a hostile opener: a third process holding the fence open writes garbage on the board
/// before every arrival (zero, reached values, huge values, "more" over reached values, values
/// just ahead) through the only way it has, its own escapes; it cannot write another opener's
/// slot (escapes naming the others' CurrentValue VAs, or no fence, are refused). The two
/// processes' waits are still each released at their value, none late or lost, on both builds
/// and both readings.
#[test]
fn mf_04_a_hostile_opener_writing_garbage_on_the_board_makes_no_wait_late_or_lost() {
    for (what, m) in machines() {
        let (hp, hk) = user_process(&m);
        let escape = |va: u64, waits: [u64; WAIT_BOARD_WAITS], more: u32| {
            let mut q = WaitBoardEscape {
                magic: PDD_MAGIC,
                version: WAIT_BOARD_ESCAPE_VERSION,
                current_value_gpu: va,
                publish: 1,
                more,
                waits,
                ..WaitBoardEscape::default()
            };
            hk.escape_driver_private(q.as_mut_bytes())
        };
        // The hostile opener's CurrentValue VA, once it opened A's NT handle.
        let va = std::cell::Cell::new(0u64);
        let mut k = 0u64;
        let r = run(
            &what,
            &m,
            |a, nt| {
                let theirs = m.duplicate_handle(a, nt, hp.pid).expect("DuplicateHandle");
                let f = hk.open_native_fence(theirs).expect("the hostile open");
                va.set(f.gpu.current.get());
            },
            |c| {
                let g = match k % 6 {
                    0 => ([0; WAIT_BOARD_WAITS], 0),
                    1 => ([c; WAIT_BOARD_WAITS], 0),
                    2 => ([u64::MAX; WAIT_BOARD_WAITS], 0),
                    3 => ([1 << 62; WAIT_BOARD_WAITS], 0),
                    4 => ([c.saturating_sub(3); WAIT_BOARD_WAITS], 1),
                    _ => ([c + 7; WAIT_BOARD_WAITS], 0),
                };
                k += 1;
                assert!(escape(va.get(), g.0, g.1).is_ok(), "{what}: its own slot");
                // VAs it holds no fence at name nobody's slot for it.
                for other in [0, va.get() + 8, va.get() ^ 0x10_0000] {
                    assert!(
                        escape(other, [0; WAIT_BOARD_WAITS], 1).is_err(),
                        "{what}: {other:#x}"
                    );
                }
            },
        );
        eprintln!("{what}, hostile opener: {r:?}");
        assert_eq!(r.satisfied, ARRIVALS, "{what}");
    }
}
