//! `TdrLimitCount` / `TdrLimitTime`: too many adapter-wide recoveries in a short time stop the
//! machine instead of recovering again (docs/tdr.md#the-simulated-os).
//!
//! Microsoft, "Timeout detection and recovery (TDR)": by default, when five or more GPU hangs
//! (0x117) and their recoveries happen within one minute, the OS bug-checks on the next hang;
//! engine timeouts (0x141) do not count unless one is promoted to an adapter-wide reset.
//! "TDR registry keys": `TdrLimitCount` (default 5) and `TdrLimitTime` (default 60 s) under
//! `GraphicsDrivers`. The page names no code; 24H2 Dxgkrnl does ([D24]):
//! - `TdrInit` @ 0x1401CFC24 reads both values: `TdrLimitCount` 0 reads as 1 and above 32 as
//!   32, `TdrLimitTime` below 5 as 5 and above 3600 as 3600.
//! - `TdrIsRecoveryRequired` @ 0x1401D01F0, on an adapter timeout after the stage-1 debug data
//!   and before the adapter is prepared for the reset, asks `TdrHistoryIsLimitExhausted` @
//!   0x1401CFB50: walking the history of recovered TDRs (64 entries) from the newest back, it
//!   counts the ones no older than `TdrLimitTime` and stops at the first older one; a count of
//!   at least `TdrLimitCount` is `TdrBugcheckOnTimeout(context, 0, 13)` @ 0x140186C5C, that is
//!   `KeBugCheckEx(0x116 VIDEO_TDR_FAILURE, recovery context, owner tag, 0, 13)`.
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
const HISTORY: usize = 64;

/// Parameter 4 of the 0x116 bug check when the limit is exhausted (24H2
/// `TdrIsRecoveryRequired`).
const LIMIT_EXHAUSTED: u64 = 13;

/// `TdrLimitCount` as `TdrInit` reads it.
fn limit_count(os: &TdrOs) -> usize {
    os.config.limit_count.clamp(1, 32) as usize
}

/// `TdrLimitTime` in [`TdrHistory::now`]'s unit: rounds in step mode (unclamped: rounds have no
/// seconds to clamp), milliseconds in threaded mode (5 s to 3600 s, as `TdrInit` reads it).
fn limit_time(os: &TdrOs) -> u64 {
    if os.step {
        os.config.limit_time_steps
    } else {
        os.config.limit_time.as_secs().clamp(5, 3600) * 1000
    }
}

/// Whether `TdrLimitCount` recoveries of the machine already happened within `TdrLimitTime`
/// of now.
fn exhausted(os: &TdrOs, history: &TdrHistory) -> bool {
    let now = history.now(os.step);
    let window = limit_time(os);
    let recent = lock(&history.times)
        .iter()
        .rev()
        .take_while(|t| now.saturating_sub(**t) <= window)
        .count();
    recent >= limit_count(os)
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
