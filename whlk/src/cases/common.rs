//! Fixtures shared by the case modules (one copy each).

use crate::backend::{
    Backend, BufferRef, ExecMode, Failure, Session, SessionConfig, UmQueueRef, WaitResult, Work,
};
use crate::case::{CaseError, CaseResult};
use crate::ensure;

/// Opens a session configured by `tweak`, loads the driver and starts adapter 0.
pub(crate) fn session(
    b: &dyn Backend,
    mode: ExecMode,
    tweak: impl FnOnce(&mut SessionConfig),
) -> Result<Box<dyn Session>, CaseError> {
    let mut cfg = SessionConfig::new(mode);
    tweak(&mut cfg);
    let mut s = b.open(&cfg)?;
    s.load_driver()?;
    s.start_adapter(0)?;
    Ok(s)
}

/// Stops and removes adapters `0..adapters` in turn, then unloads the driver.
pub(crate) fn shut_down(s: &mut dyn Session, adapters: usize) -> CaseResult {
    for i in 0..adapters {
        s.stop_adapter(i)?;
        s.remove_adapter(i)?;
    }
    s.unload()?;
    Ok(())
}

/// A FILL of one u64.
pub(crate) fn fill(dst: BufferRef, offset: u64, pattern: u64) -> Work {
    Work::Fill {
        dst,
        offset,
        bytes: 8,
        pattern,
    }
}

/// Fails on a bug check, where the backend can observe one (a Windows machine that
/// bug-checked does not come back to report it).
pub(crate) fn no_fault(s: &dyn Session) -> CaseResult {
    if let Some(bc) = observe(s.bug_checks_ref().map(|b| b.bugcheck()))?.flatten() {
        return Err(CaseError::Fail(format!("bug check: {bc}")));
    }
    Ok(())
}

/// `Ok(None)` when the backend cannot make this observation (a simulation-only probe): the
/// checks on it are left out and the case goes on with the rest. The capability goes into the
/// case's `optional` list.
pub(crate) fn observe<T>(r: Result<T, Failure>) -> Result<Option<T>, Failure> {
    match r {
        Err(Failure::Unsupported(_)) => Ok(None),
        other => other.map(Some),
    }
}

/// Waits for progress `v` of `q`; anything but `Satisfied` fails naming `what`.
pub(crate) fn wait(s: &mut dyn Session, q: UmQueueRef, v: u64, what: &str) -> CaseResult {
    let r = s.ums()?.wait_progress(q, v)?;
    ensure!(
        r == WaitResult::Satisfied,
        "{what}: waiting for progress {v} ended {r:?} (completed {})",
        s.ums_ref()?.queue_info(q)?.completed
    );
    Ok(())
}

/// The index of the first event matching `p`.
pub(crate) fn pos<T>(ev: &[T], p: impl Fn(&T) -> bool) -> Option<usize> {
    ev.iter().position(p)
}

/// Which of a case's two forms runs: what the OS records (the simulation's), or what the KMD
/// reports through its test hooks (what a program on Windows can read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// The OS's side.
    Os,
    /// The KMD's side, through its test hooks.
    Kmd,
}

/// The form of a case on `b`: the OS's where the backend has every capability of `os.0`, else
/// the KMD's where it has every one of `kmd.0`; otherwise a skip naming what each lacks, with
/// the labels `os.1` and `kmd.1`, and the OS's reason when the KMD form lacks native fences.
pub(crate) fn two_forms(
    b: &dyn crate::backend::Backend,
    os: (&[crate::backend::Capability], &str),
    kmd: (&[crate::backend::Capability], &str),
) -> Result<Form, CaseError> {
    let caps = b.capabilities();
    let lacks = |need: &[crate::backend::Capability]| -> Vec<&str> {
        need.iter()
            .filter(|c| !caps.contains(**c))
            .map(|c| c.name())
            .collect()
    };
    let (o, k) = (lacks(os.0), lacks(kmd.0));
    if o.is_empty() {
        return Ok(Form::Os);
    }
    if k.is_empty() {
        return Ok(Form::Kmd);
    }
    // Where the OS gave no native fences, say why, as a case needing them outright does.
    let why = k
        .contains(&crate::backend::Capability::NativeFences.name())
        .then(crate::os::why_no_native_fences)
        .flatten()
        .map_or_else(String::new, |w| format!(" ({w})"));
    Err(CaseError::Skip(format!(
        "needs capability {} ({}) or {} ({}), which backend {} lacks{why}",
        o.join(" "),
        os.1,
        k.join(" "),
        kmd.1,
        b.name()
    )))
}
