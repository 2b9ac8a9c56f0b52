//! Model of the UMD's CPU waits on one native fence shared by two processes
//! (`umd/src/wait.rs` `Waits`, `umd/src/kmt_windows/waits.rs`) against 24H2's MonitoredValue
//! M (`simos/src/os/answers.rs` `MonitoredValue::RaisedByNewWaits`):
//!
//! - a registration for W sets M := W when `W <= M` or CurrentValue C `>= M`
//!   (`M:VidSchSubmitWaitFromCpu` @0x14000DF30), then releases the fence's satisfied waits;
//! - a release leaves M alone while waits remain and sets it to `u64::MAX` once none does
//!   (`M:VidSchiUnwaitNativeFenceWaiters` @0x1400458E8);
//! - a GPU signal writes C and interrupts when `C >= M`, whose DPC releases the satisfied
//!   waits (`M:UnwaitFencesFromNativeFenceSignaledDpc` @0x1400518DC).
//!
//! The OS is one lock (each of its steps is atomic under the fence's lock there); each process
//! registers under its own table's lock as the UMD does: the registration, a read of C, the
//! table's answer, the re-arm. Process A waits for 1 and 3 on events (no thread of A runs
//! afterwards), process B for 5 on an event and for 9 with a timeout it withdraws, while the
//! GPU signals 1, 3, 4. Held in every interleaving: no waiter is lost (each wait at or below
//! the final value was released), none is released early (C was at its value), the withdrawn
//! wait is never released, and at the end M is at or below every pending wait (so no later
//! signal can strand one). The negative control gives B a table that does not know the fence
//! is shared: loom must find A's wait for 3 lost under B's wait for 5. The same waits from two
//! threads of one process (one table, per-process re-arms) hold the same properties.
//!
//! With the sharers' board (`umd/src/waitboard.rs`) each process, after its registration,
//! publishes its lowest pending wait in its own slot, reads the other slots' lowest and re-arms
//! at the lowest of all: the same properties, also with a third sharer that waits for nothing
//! and writes garbage (zero, reached values, huge values) into its own slot meanwhile. The
//! second negative control lets that sharer write into the others' slots too (one page every
//! sharer maps writable): loom must find a wait lost.

use loom::sync::{Arc, Mutex};
use loom::thread;
use rvgpu_umd::wait::Waits;
use rvgpu_umd::waitboard::{Board, Peers, Slot, Slots};

/// The fence's handle in both processes (the table is per process, so one value serves).
const FENCE: u32 = 4;
/// The owner id of re-arming registrations (the UMD's own event; nobody waits on it).
const REARM: u64 = u64::MAX;

#[derive(Default)]
struct Os {
    m: u64,
    c: u64,
    /// (value, owner) of every registered wait not yet released.
    waiters: Vec<(u64, u64)>,
    /// (owner, value, C) of every release.
    released: Vec<(u64, u64, u64)>,
}

impl Os {
    fn new() -> Self {
        Self {
            m: u64::MAX,
            ..Self::default()
        }
    }

    fn register(&mut self, w: u64, owner: u64) {
        if w <= self.m || self.c >= self.m {
            self.m = w;
        }
        self.waiters.push((w, owner));
        self.unwait();
    }

    fn unwait(&mut self) {
        let c = self.c;
        let released = &mut self.released;
        self.waiters.retain(|&(w, o)| {
            let done = rvgpu_hw::fence::wait_satisfied(c, w);
            if done {
                released.push((o, w, c));
            }
            !done
        });
        if self.waiters.is_empty() {
            self.m = u64::MAX;
        }
    }

    fn signal(&mut self, v: u64) {
        self.c = v;
        if self.c >= self.m {
            self.unwait();
        }
    }

    /// A timed-out wait withdrawn (the OS takes it out and settles the fence).
    fn withdraw(&mut self, owner: u64) {
        self.waiters.retain(|&(_, o)| o != owner);
        self.unwait();
    }
}

/// The sharers' board and the slot of the process waiting (`None`: no board, C + 1).
type OnBoard<'a> = Option<(&'a Mutex<Sharers>, usize)>;

/// One wait of a process, registered as the UMD registers it; its waiter id in the table.
fn wait(os: &Mutex<Os>, table: &Mutex<Waits>, value: u64, owner: u64, board: OnBoard) -> u64 {
    let mut t = table.lock().unwrap();
    let before = os.lock().unwrap().c;
    if let Some((b, me)) = board {
        // As the shipped UMD: a slot unchanged since its last publish is not published again.
        let slot = t.published(FENCE, before, Some(value));
        if let Some(slot) = t.changed(FENCE, slot) {
            b.lock().unwrap().publish(me, slot);
        }
    }
    os.lock().unwrap().register(value, owner);
    let c = os.lock().unwrap().c;
    let (id, mut rearm) = t.add(FENCE, value, c);
    if let Some((b, me)) = board {
        let peers = b.lock().unwrap().peers(me, before, c);
        rearm = t.rearm_among(FENCE, value, c, peers);
    }
    if let Some(r) = rearm {
        let before = os.lock().unwrap().c;
        os.lock().unwrap().register(r, REARM);
        if let Some((b, me)) = board {
            // The re-arm is a registration too: checked against the board read after it.
            let c = os.lock().unwrap().c;
            let peers = b.lock().unwrap().peers(me, before, c);
            if let Some(r) = Waits::confirm_among(r, c, peers) {
                os.lock().unwrap().register(r, REARM);
            }
        }
    }
    id
}

/// Who waits: two processes that know the fence is shared, two where B does not, or two
/// threads of one process (one table, the fence not shared).
#[derive(Clone, Copy)]
enum Who {
    Shared,
    BUnaware,
    OneProcess,
    /// Both on the board, with a third sharer (slot 2) writing garbage: only into its own
    /// slot, or (`anywhere`) into every slot.
    Board {
        anywhere: bool,
    },
}

/// What the hostile sharer writes, in turn: zero, "no wait", reached and huge values.
const GARBAGE: [u64; 4] = [0, u64::MAX, 1, 1 << 40];

/// The board of A (slot 0), B (slot 1) and the hostile sharer (slot 2).
enum Sharers {
    /// Each slot written only by its owner (`rvgpu_umd::waitboard::Slots`).
    Owned(Slots),
    /// Any slot written by anyone: one page every sharer maps writable.
    Open([Slot; 3]),
}

impl Sharers {
    fn new(anywhere: bool) -> Self {
        if anywhere {
            return Self::Open([Slot::NONE; 3]);
        }
        let mut b = Slots::new(3);
        for me in 0..3 {
            b.publish(me, Slot::NONE);
        }
        Self::Owned(b)
    }

    /// The hostile sharer's `k`th write of `value`: its own slot, or the others' in turn.
    fn scribble(&mut self, k: usize, value: u64) {
        let garbage = Slot {
            waits: [value; rvgpu_umd::waitboard::SLOT_WAITS],
            more: false,
        };
        match self {
            Self::Owned(b) => b.publish(2, garbage),
            Self::Open(s) => s[k % 2] = garbage,
        }
    }
}

impl Board for Sharers {
    fn publish(&mut self, me: usize, slot: Slot) {
        match self {
            Self::Owned(b) => b.publish(me, slot),
            Self::Open(s) => {
                if let Some(m) = s.get_mut(me) {
                    *m = slot;
                }
            }
        }
    }

    fn peers(&self, me: usize, from: u64, to: u64) -> Peers {
        match self {
            Self::Owned(b) => b.peers(me, from, to),
            Self::Open(s) => {
                let others = || (0..3).filter(move |&i| i != me).map(|i| s[i]);
                Peers::Lowest {
                    next: others()
                        .filter_map(|o| o.next_above(to))
                        .min()
                        .unwrap_or(u64::MAX),
                    passed: others().any(|o| o.next_above(from).is_some_and(|w| w <= to)),
                }
            }
        }
    }
}

fn table(shared: bool) -> Arc<Mutex<Waits>> {
    let mut t = Waits::default();
    if shared {
        t.share(FENCE);
        // On the board with nothing pending, as `Sharers::new` publishes every slot.
        t.on_board(FENCE, 0x1000, Slot::NONE);
    }
    Arc::new(Mutex::new(t))
}

fn execution(who: Who) {
    let os = Arc::new(Mutex::new(Os::new()));
    let ta = table(!matches!(who, Who::OneProcess));
    let tb = match who {
        Who::Shared | Who::Board { .. } => table(true),
        Who::BUnaware => table(false),
        Who::OneProcess => ta.clone(),
    };
    let anywhere = matches!(who, Who::Board { anywhere: true });
    let on_board = matches!(who, Who::Board { .. });
    let board = Arc::new(Mutex::new(Sharers::new(anywhere)));
    let hostile = on_board.then(|| {
        let board = board.clone();
        thread::spawn(move || {
            for (k, g) in GARBAGE.into_iter().enumerate() {
                board.lock().unwrap().scribble(k, g);
            }
        })
    });
    let a = {
        let (os, board) = (os.clone(), board.clone());
        thread::spawn(move || {
            let mine = on_board.then_some((&*board, 0));
            wait(&os, &ta, 1, 1, mine);
            wait(&os, &ta, 3, 3, mine);
        })
    };
    let b = {
        let (os, board) = (os.clone(), board.clone());
        thread::spawn(move || {
            let mine = on_board.then_some((&*board, 1));
            wait(&os, &tb, 5, 5, mine);
            let id = wait(&os, &tb, 9, 9, mine);
            // The wait for 9 times out: withdrawn from the OS, then from the table.
            let mut tl = tb.lock().unwrap();
            os.lock().unwrap().withdraw(9);
            tl.remove(FENCE, id);
        })
    };
    for v in [1, 3, 4] {
        os.lock().unwrap().signal(v);
    }
    a.join().unwrap();
    b.join().unwrap();
    if let Some(h) = hostile {
        h.join().unwrap();
    }
    let os = os.lock().unwrap();
    for &(o, w, c) in &os.released {
        assert!(c >= w, "released early: owner {o}'s wait for {w} at {c}");
        assert_ne!(o, 9, "the withdrawn wait was released");
    }
    for o in [1u64, 3] {
        assert!(
            os.released.iter().any(|&(x, _, _)| x == o),
            "lost wake-up: the wait for {o} pending with the fence at {}",
            os.c
        );
    }
    let lowest = os.waiters.iter().map(|&(w, _)| w).min().unwrap_or(u64::MAX);
    assert!(
        os.m <= lowest,
        "lost wake-up ahead: M {} above the pending wait for {lowest}",
        os.m
    );
}

/// Every interleaving with up to three preemptions (each step is a lock, so this covers a
/// registration, its read of C and its re-arm split by a signal and the other process).
fn model(who: Who) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || execution(who));
}

#[test]
fn mf_04_two_processes_waits_on_a_shared_fence_are_never_lost_nor_early() {
    model(Who::Shared);
}

#[test]
fn mf_04_waits_of_two_threads_of_one_process_are_never_lost_nor_early() {
    model(Who::OneProcess);
}

#[test]
fn mf_04_waits_on_the_sharers_board_are_never_lost_nor_early_whatever_a_sharer_writes() {
    model(Who::Board { anywhere: false });
}

#[test]
fn mf_04_negative_control_a_board_any_sharer_writes_lets_it_strand_another_s_wait() {
    rvgpu_models::expect_violation(
        || model(Who::Board { anywhere: true }),
        "stranded wait when the hostile sharer can rewrite the others' slots",
        "lost wake-up",
    );
}

#[test]
fn mf_04_negative_control_a_process_unaware_of_sharing_strands_another_s_wait() {
    rvgpu_models::expect_violation(
        || model(Who::BUnaware),
        "stranded wait when B's table does not know the fence is shared",
        "lost wake-up",
    );
}
