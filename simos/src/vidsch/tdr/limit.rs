//! `TdrLimitCount` / `TdrLimitTime`: too many adapter-wide recoveries in a short time stop the
//! machine instead of recovering again (docs/tdr.md#the-simulated-os).
//!
//! Microsoft, "Timeout detection and recovery (TDR)": by default, when five or more GPU hangs
//! (0x117) and their recoveries happen within one minute, the OS bug-checks on the next hang;
//! engine timeouts (0x141) do not count unless one is promoted to an adapter-wide reset.
//! "TDR registry keys": `TdrLimitCount` (default 5) and `TdrLimitTime` (default 60 s) under
//! `GraphicsDrivers`. The page names no code; 24H2 Dxgkrnl does (\[D24\]):
//! - `TdrInit` @ 0x1401CFC24 reads both values: `TdrLimitCount` 0 reads as 1 and above 32 as
//!   32, `TdrLimitTime` below 5 as 5 and above 3600 as 3600.
//! - `TdrIsRecoveryRequired` @ 0x1401D01F0, on an adapter timeout after the stage-1 debug data
//!   and before the adapter is prepared for the reset, asks `TdrHistoryIsLimitExhausted` @
//!   0x1401CFB50: walking the history of recovered TDRs (64 entries) from the newest back, it
//!   counts the ones no older than `TdrLimitTime` and stops at the first older one; a count of
//!   at least `TdrLimitCount` is `TdrBugcheckOnTimeout(context, 0, 13)` @ 0x140186C5C, that is
//!   `KeBugCheckEx(0x116 VIDEO_TDR_FAILURE, recovery context, owner tag, 0, 13)` — unless
//!   `TdrDebugMode` is 3, which skips the check (`TdrInit` keeps 0 to 3 and reads anything
//!   else as 2).
//!
//! The history is the machine's ([`TdrHistory`], Windows' `g_TdrHistory`): every adapter's
//! recoveries count against one limit. The limits are the timed-out adapter's `TdrConfig`
//! (Windows reads them once for the machine). The recovery context and owner tag are 0 here
//! (the simulation has neither).

use crate::base::bugcheck::{self, BugCheck};
use crate::base::lock::lock;
use crate::state::vidsch::TdrHistory;

use super::state::TdrOs;

/// Entries of the history (`TdrHistoryIsLimitExhausted` indexes it `& 0x3F`).
pub(super) const HISTORY: usize = 64;

/// Parameter 4 of the 0x116 bug check when the limit is exhausted (24H2
/// `TdrIsRecoveryRequired`).
const LIMIT_EXHAUSTED: u64 = 13;

/// `TdrLimitCount` as `TdrInit` reads it.
pub(super) fn limit_count(os: &TdrOs) -> usize {
    os.config.limit_count.clamp(1, 32) as usize
}

/// `TdrLimitTime` in [`TdrHistory::now`]'s unit: rounds in step mode (unclamped: rounds have no
/// seconds to clamp), milliseconds in threaded mode (5 s to 3600 s, as `TdrInit` reads it).
pub(super) fn limit_time(os: &TdrOs) -> u64 {
    if os.step {
        os.config.limit_time_steps
    } else {
        os.config.limit_time.as_secs().clamp(5, 3600) * 1000
    }
}

/// `TdrDebugMode` as `TdrInit` reads it: 0 to 3 kept, anything else 2.
pub(super) fn debug_mode(os: &TdrOs) -> u32 {
    if os.config.debug_mode <= 3 {
        os.config.debug_mode
    } else {
        2
    }
}

/// How many of `times` (oldest first) are no older than `TdrLimitTime` before `now`, walking
/// from the newest and stopping at the first older one, as `TdrHistoryIsLimitExhausted` does.
pub(super) fn recent<'a>(
    os: &TdrOs,
    now: u64,
    times: impl DoubleEndedIterator<Item = &'a u64>,
) -> usize {
    let window = limit_time(os);
    times
        .rev()
        .take_while(|t| now.saturating_sub(**t) <= window)
        .count()
}

/// Whether `TdrLimitCount` recoveries of the machine already happened within `TdrLimitTime`
/// of now (never with `TdrDebugMode` 3).
fn exhausted(os: &TdrOs, history: &TdrHistory) -> bool {
    if debug_mode(os) == 3 {
        return false;
    }
    let now = history.now(os.step);
    recent(os, now, lock(&history.times).iter()) >= limit_count(os)
}

/// Before an adapter-wide reset: the bug check 0x116 (…, 13) and a log line if the limit is
/// exhausted (the caller raises it: this module stays below the adapter).
pub(super) fn check(os: &TdrOs, history: &TdrHistory) -> Option<(BugCheck, String)> {
    if !exhausted(os, history) {
        return None;
    }
    let unit = if os.step { "rounds" } else { "ms" };
    Some((
        BugCheck::new(bugcheck::VIDEO_TDR_FAILURE, [0, 0, 0, LIMIT_EXHAUSTED]),
        format!(
            "adapter timeout after {} adapter-wide recoveries of the machine within \
             TdrLimitTime ({} {unit}): TdrLimitCount exhausted",
            limit_count(os),
            limit_time(os)
        ),
    ))
}

/// After an adapter-wide recovery: its time enters the machine's history.
pub(super) fn record(os: &TdrOs, history: &TdrHistory) {
    let now = history.now(os.step);
    let mut times = lock(&history.times);
    times.push_back(now);
    if times.len() > HISTORY {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A step-mode TDR state whose limits are `count` recoveries within `window` rounds.
    fn step_os(count: u32, window: u64) -> TdrOs {
        let mut os = TdrOs::new(None);
        os.step = true;
        os.config.limit_count = count;
        os.config.limit_time_steps = window;
        os
    }

    /// `n` recoveries recorded now, then `rounds` rounds of the machine.
    fn recover(os: &TdrOs, h: &TdrHistory, n: usize, rounds: u64) {
        for _ in 0..n {
            record(os, h);
        }
        for _ in 0..rounds {
            h.advance_round();
        }
    }

    #[test]
    fn tdr_09_limit_count_reads_0_as_1_and_above_32_as_32() {
        let h = TdrHistory::default();
        let os = step_os(0, 1_000);
        assert!(check(&os, &h).is_none(), "no recovery yet");
        recover(&os, &h, 1, 0);
        let (b, _) = check(&os, &h).expect("TdrLimitCount 0 reads as 1");
        assert_eq!((b.code, b.params), (0x116, [0, 0, 0, LIMIT_EXHAUSTED]));

        let h = TdrHistory::default();
        let os = step_os(40, 1_000);
        recover(&os, &h, 31, 0);
        assert!(check(&os, &h).is_none(), "31 recoveries are below 32");
        recover(&os, &h, 1, 0);
        assert!(check(&os, &h).is_some(), "TdrLimitCount 40 reads as 32");
    }

    #[test]
    fn tdr_09_limit_time_reads_below_5_s_as_5_s_and_above_3600_s_as_3600_s() {
        let mut os = TdrOs::new(None);
        os.step = false;
        for (set, read_ms) in [(1, 5_000), (60, 60_000), (4_000, 3_600_000)] {
            os.config.limit_time = Duration::from_secs(set);
            assert_eq!(limit_time(&os), read_ms, "TdrLimitTime {set} s");
        }
        // Step mode's window is rounds, taken as configured.
        os.step = true;
        os.config.limit_time_steps = 3;
        assert_eq!(limit_time(&os), 3);
    }

    #[test]
    fn tdr_09_only_recoveries_within_the_window_count() {
        let h = TdrHistory::default();
        let os = step_os(2, 50);
        recover(&os, &h, 1, 100);
        recover(&os, &h, 1, 20);
        assert!(
            check(&os, &h).is_none(),
            "the first recovery is 120 rounds old, outside the 50-round window"
        );
        recover(&os, &h, 1, 0);
        assert!(check(&os, &h).is_some(), "two within the last 20 rounds");
        recover(&os, &h, 0, 51);
        assert!(check(&os, &h).is_none(), "both aged out");
    }

    #[test]
    fn tdr_09_tdr_debug_mode_3_skips_the_limit_and_reads_above_3_as_2() {
        let h = TdrHistory::default();
        let mut os = step_os(1, 1_000);
        recover(&os, &h, 3, 0);
        os.config.debug_mode = 3;
        assert!(
            check(&os, &h).is_none(),
            "mode 3 checks no consecutive recoveries"
        );
        os.config.debug_mode = 7;
        assert_eq!(debug_mode(&os), 2);
        assert!(check(&os, &h).is_some(), "7 reads as 2, which checks");
    }

    #[test]
    fn tdr_09_history_keeps_the_newest_64() {
        let h = TdrHistory::default();
        let os = step_os(5, 1_000);
        for _ in 0..70 {
            recover(&os, &h, 1, 1);
        }
        let times = lock(&h.times);
        assert_eq!(times.len(), HISTORY);
        assert_eq!(times.front().copied(), Some(6), "the oldest six dropped");
    }
}
