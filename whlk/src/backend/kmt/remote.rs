//! A case's process that is another process: the D3DKMT session forwards what the case does
//! with it (buffers, user-mode and kernel-mode queues, submissions, waits, the doorbell status)
//! to a server that holds its own D3DKMT device, one request line and one answer line at a
//! time. On Windows the server is a child `rvgpu-whlk` (`crate::child`, role `process`) with
//! its own address space and handle table; over the simulated thunks it is a thread with its
//! own simulated process ([`super::sim`]). [`serve`] is the same code in both.
//!
//! Requests (numbers in hex; `ID` is the session's buffer or queue number):
//! `buffer ID BYTES` → `ok GPUVA SIZE`; `read ID OFFSET` → `ok VALUE`;
//! `write ID OFFSET VALUE` → `ok`; `queue ID NODE user|kernel` → `ok INFO`;
//! `submit ID P P …` (each packet its words joined by `,`) → `ok VALUE`; `wait ID VALUE` →
//! `ok`; `info ID` → `ok INFO`; `doorbell ID` → `ok RAW` or `ok none`; `close ID` → `ok`;
//! `state` → `ok EXECUTIONSTATE` (`D3DKMTGetDeviceState` of its device);
//! `fence ID NT` → `ok` (opens the native fence another process shared, by the NT handle
//! duplicated into this one, with `D3DKMTOpenNativeFenceFromNtHandle`, then closes that
//! handle); `fsignal ID VALUE` → `ok` (a CPU signal); `fwait ID VALUE MS` →
//! `ok reached|timeout|abandoned` (a CPU wait of at most `MS` milliseconds); `fdestroy ID` → `ok`;
//! `dmactx ID NODE` → `ok` (a DMA context, `D3DKMTCreateContextVirtual` without a hardware
//! queue); `dma ID W W …` (the DMA buffer's words) → `ok GPUVA` (`D3DKMTSubmitCommand` of a
//! command buffer of its own, at `GPUVA`);
//! `fcreate ID INITIAL` → `ok` (a shareable native fence of its own, `D3DKMTCreateNativeFence`);
//! `fshare ID` → `ok NT` (`D3DKMTShareObjects` of fence `ID`: a new NT handle in the process's
//! own table, which the parent duplicates out of it as a broker does); `ntclose NT` → `ok`
//! (`CloseHandle` of an NT handle of its own table);
//! `fvalue ID` → `ok VALUE` (its CurrentValue through the process's CPU view); `ops ID OP OP …`
//! → `ok VALUE` (one `submit_ops` batch on queue `ID`: `w.FENCE.VALUE` a GPU wait, `s.FENCE.VALUE`
//! a GPU signal, `c.W,W,…` a packet); `qlog ID TYPE ROOM` → `ok COUNT ENTRIES HEX` (the KMD's
//! copy of queue `ID`'s native fence log of `DXGK_NATIVE_FENCE_LOG_TYPE` `TYPE`, through the
//! test hooks' escape on the process's own device: `COUNT` bytes as hex, `-` for none);
//! `churn LANE LANE …` → `ok REPORT REPORT …` (each lane `NODE.ROUNDS.PER:BATCH:…`, a batch
//! its packets joined by `/`, run as `crate::backend::lanes::churn_lane` on a thread of the
//! process's own, all lanes at once; each report `DONE.KERNEL.ERROR`, `ERROR` the text's bytes
//! in hex or `-`);
//! `exit` → `ok`, and the server ends. A failed thunk answers `status NTSTATUS`, anything else
//! `err TEXT`. `INFO` is `user|kernel LOST LAST COMPLETED QUEUEID SEEN`.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rvgpu_hw::cmd::{self, Command};
use rvgpu_umd::fence::NativeFence;
use rvgpu_umd::fencelog::Op;
use rvgpu_umd::kmt::{
    Allocation, AllocationCpu, DeviceExecutionState, DoorbellStatus, FenceCpu, Kmt, NtStatus,
};
use rvgpu_umd::submit::SubmitError;

use super::sync::{FenceWait, KmtSync};
use crate::backend::lanes::{self, ChurnJob};
use crate::backend::umd_queue::UmdQueue;
use crate::backend::{
    ChurnLane, ChurnReport, Failure, ProcessEnd, ProcessRef, SubmitPath, UmQueueInfo,
};

/// One request and its answer, to a process server.
pub trait Pipe: Send {
    /// Sends `line`, returns the answer line (without its end).
    fn call(&mut self, line: &str) -> Result<String, Failure>;

    /// Ends the server's process: `Normal` after `exit` was answered, `Abnormal` at once, as
    /// `TerminateProcess` ends a process (its objects are the OS's to destroy).
    fn end(&mut self, how: ProcessEnd) -> Result<(), Failure>;
}

/// The session's handle on a process served elsewhere.
pub(crate) struct RemoteProcess {
    pipe: Mutex<Box<dyn Pipe>>,
}

fn hex(s: &str) -> Result<u64, Failure> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16)
        .map_err(|_| Failure::Backend(format!("process server: bad number `{s}`")))
}

fn info_text(i: &UmQueueInfo) -> String {
    let path = match i.path {
        SubmitPath::UserMode => "user",
        SubmitPath::KernelMode => "kernel",
    };
    let seen = match i.os_sees_work {
        Some(true) => "1",
        Some(false) => "0",
        None => "-",
    };
    format!(
        "{path} {} {:x} {:x} {:x} {seen}",
        u8::from(i.lost),
        i.last_submitted,
        i.completed,
        i.queue_id
    )
}

fn parse_info(words: &[&str]) -> Result<UmQueueInfo, Failure> {
    let [path, lost, last, completed, id, seen] = words else {
        return Err(Failure::Backend(format!(
            "process server: bad queue info {words:?}"
        )));
    };
    Ok(UmQueueInfo {
        path: if *path == "user" {
            SubmitPath::UserMode
        } else {
            SubmitPath::KernelMode
        },
        lost: *lost == "1",
        last_submitted: hex(last)?,
        completed: hex(completed)?,
        queue_id: u32::try_from(hex(id)?).unwrap_or(u32::MAX),
        scheduled: None,
        os_sees_work: match *seen {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        },
    })
}

/// Each of `cmds` as a packet's words joined by `,`.
fn packet_words(cmds: &[Command]) -> Result<Vec<String>, Failure> {
    let mut words = [0u64; 8];
    cmds.iter()
        .map(|c| {
            let n = c
                .encode(&mut words)
                .ok_or_else(|| Failure::Backend(format!("{c:?} does not fit a packet")))?;
            let packet: Vec<String> = words
                .get(..n)
                .unwrap_or_default()
                .iter()
                .map(|w| format!("{w:x}"))
                .collect();
            Ok(packet.join(","))
        })
        .collect()
}

/// A churn lane's report as a `churn` answer gives it (`DONE.KERNEL.ERROR`).
fn parse_report(r: &str) -> Result<ChurnReport, Failure> {
    let mut parts = r.splitn(3, '.');
    let (done, kernel, error) = (parts.next(), parts.next(), parts.next());
    let count = |x: Option<&str>| {
        x.map_or(
            Err(Failure::Backend(format!(
                "process server: churn report `{r}`"
            ))),
            hex,
        )
        .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
    };
    let error = match error {
        None | Some("-") => None,
        Some(h) => Some(
            (0..h.len() / 2)
                .filter_map(|i| h.get(2 * i..2 * i + 2))
                .filter_map(|b| u8::from_str_radix(b, 16).ok())
                .map(char::from)
                .collect(),
        ),
    };
    Ok(ChurnReport {
        rounds_done: count(done)?,
        kernel_mode_rounds: count(kernel)?,
        error,
    })
}

/// Where a churn lane runs: over this program's thunks, or in another process.
pub(crate) enum LaneHost<K> {
    /// This program's device.
    Here(Arc<K>),
    /// Another process's.
    There(Arc<RemoteProcess>),
}

/// Runs `jobs` at once: a lane of this program's on a thread of its own, the lanes of another
/// process in one `churn` request to it (its own threads run them); the reports in lane order.
pub(crate) fn run_churn<K: Kmt + Send + Sync>(
    jobs: &[ChurnJob<'_, LaneHost<K>>],
) -> Vec<ChurnReport>
where
    Arc<K>: Kmt,
{
    enum Unit<'j, K> {
        Here(usize, &'j Arc<K>, &'j ChurnLane, &'j [Vec<Command>]),
        There(
            Vec<usize>,
            &'j RemoteProcess,
            Vec<(&'j ChurnLane, &'j [Vec<Command>])>,
        ),
    }
    let mut units: Vec<Unit<'_, K>> = Vec::new();
    for (i, (host, lane, cmds)) in jobs.iter().enumerate() {
        match host {
            LaneHost::Here(k) => units.push(Unit::Here(i, k, lane, cmds)),
            LaneHost::There(r) => {
                let same = units.iter_mut().find_map(|u| match u {
                    Unit::There(ids, rr, ls) if std::ptr::eq(*rr, &**r) => Some((ids, ls)),
                    _ => None,
                });
                match same {
                    Some((ids, ls)) => {
                        ids.push(i);
                        ls.push((lane, cmds));
                    }
                    None => units.push(Unit::There(vec![i], r, vec![(lane, cmds)])),
                }
            }
        }
    }
    let done = lanes::run_lanes(
        units,
        true,
        |u| match u {
            Unit::Here(i, k, lane, cmds) => vec![(
                i,
                lanes::churn_lane(|| k.clone(), lane, cmds, |e| format!("UMD: {e:?}")),
            )],
            Unit::There(ids, r, ls) => match r.churn(&ls) {
                Ok(reports) => ids.into_iter().zip(reports).collect(),
                Err(e) => ids
                    .into_iter()
                    .map(|i| {
                        (
                            i,
                            ChurnReport {
                                rounds_done: 0,
                                kernel_mode_rounds: 0,
                                error: Some(format!("in the other process: {e}")),
                            },
                        )
                    })
                    .collect(),
            },
        },
        Vec::new,
    );
    let mut reports: Vec<ChurnReport> = (0..jobs.len()).map(|_| lanes::churn_panicked()).collect();
    for (i, r) in done.into_iter().flatten() {
        if let Some(slot) = reports.get_mut(i) {
            *slot = r;
        }
    }
    reports
}

impl RemoteProcess {
    /// A process served over `pipe`.
    pub(crate) fn new(pipe: Box<dyn Pipe>) -> Self {
        Self {
            pipe: Mutex::new(pipe),
        }
    }

    /// The answer's words after `ok`; a `status` answer as the thunk's failure.
    fn call(&self, line: &str) -> Result<Vec<String>, Failure> {
        let answer = self
            .pipe
            .lock()
            .map_err(|_| Failure::Backend("process server: pipe poisoned".into()))?
            .call(line)?;
        let mut words = answer.split_whitespace();
        match words.next() {
            Some("ok") => Ok(words.map(str::to_owned).collect()),
            Some("status") => {
                let st = words.next().map(hex).transpose()?.unwrap_or(0);
                Err(Failure::DdiFailed(st as u32 as i32))
            }
            _ => Err(Failure::Backend(format!(
                "process server, `{line}`: {answer}"
            ))),
        }
    }

    fn number(&self, line: &str) -> Result<u64, Failure> {
        let w = self.call(line)?;
        w.first().map_or_else(
            || {
                Err(Failure::Backend(format!(
                    "process server: no value for `{line}`"
                )))
            },
            |s| hex(s),
        )
    }

    /// A zeroed buffer of `bytes`: its (GPU VA, size).
    pub(crate) fn create_buffer(&self, id: usize, bytes: u64) -> Result<(u64, u64), Failure> {
        let w = self.call(&format!("buffer {id:x} {bytes:x}"))?;
        match w.as_slice() {
            [va, size] => Ok((hex(va)?, hex(size)?)),
            _ => Err(Failure::Backend(format!(
                "process server: buffer answer {w:?}"
            ))),
        }
    }

    pub(crate) fn read(&self, id: usize, offset: u64) -> Result<u64, Failure> {
        self.number(&format!("read {id:x} {offset:x}"))
    }

    pub(crate) fn write(&self, id: usize, offset: u64, value: u64) -> Result<(), Failure> {
        self.call(&format!("write {id:x} {offset:x} {value:x}"))
            .map(drop)
    }

    pub(crate) fn create_queue(
        &self,
        id: usize,
        node: u32,
        kind: SubmitPath,
    ) -> Result<UmQueueInfo, Failure> {
        let k = match kind {
            SubmitPath::UserMode => "user",
            SubmitPath::KernelMode => "kernel",
        };
        let w = self.call(&format!("queue {id:x} {node:x} {k}"))?;
        parse_info(&w.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Submits `cmds`; the progress value that marks their completion.
    pub(crate) fn submit(&self, id: usize, cmds: &[Command]) -> Result<u64, Failure> {
        let mut line = format!("submit {id:x}");
        for packet in packet_words(cmds)? {
            line.push(' ');
            line.push_str(&packet);
        }
        self.number(&line)
    }

    pub(crate) fn wait(&self, id: usize, value: u64) -> Result<(), Failure> {
        self.call(&format!("wait {id:x} {value:x}")).map(drop)
    }

    pub(crate) fn info(&self, id: usize) -> Result<UmQueueInfo, Failure> {
        let w = self.call(&format!("info {id:x}"))?;
        parse_info(&w.iter().map(String::as_str).collect::<Vec<_>>())
    }

    pub(crate) fn doorbell(&self, id: usize) -> Result<Option<DoorbellStatus>, Failure> {
        let w = self.call(&format!("doorbell {id:x}"))?;
        match w.first().map(String::as_str) {
            Some("none") | None => Ok(None),
            Some(raw) => Ok(Some(DoorbellStatus::from_raw(hex(raw)? as u32 as i32))),
        }
    }

    /// Its device's execution state (`D3DKMTGetDeviceState`).
    pub(crate) fn device_state(&self) -> Result<DeviceExecutionState, Failure> {
        let v = self.number("state")?;
        Ok(DeviceExecutionState(v as u32))
    }

    /// Opens the native fence whose NT handle `nt` was duplicated into the process, as fence
    /// `id`; the process closes `nt`.
    pub(crate) fn open_fence(&self, id: usize, nt: u64) -> Result<(), Failure> {
        self.call(&format!("fence {id:x} {nt:x}")).map(drop)
    }

    /// A CPU signal of fence `id` to `value`.
    pub(crate) fn signal_fence(&self, id: usize, value: u64) -> Result<(), Failure> {
        self.call(&format!("fsignal {id:x} {value:x}")).map(drop)
    }

    /// A CPU wait of fence `id` for `value`, of at most `timeout`.
    pub(crate) fn wait_fence(
        &self,
        id: usize,
        value: u64,
        timeout: Duration,
    ) -> Result<FenceWait, Failure> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let w = self.call(&format!("fwait {id:x} {value:x} {ms:x}"))?;
        match w.first().map(String::as_str) {
            Some("reached") => Ok(FenceWait::Reached),
            Some("timeout") => Ok(FenceWait::TimedOut),
            Some("abandoned") => Ok(FenceWait::Abandoned),
            _ => Err(Failure::Backend(format!(
                "process server: wait answer {w:?}"
            ))),
        }
    }

    /// A shareable native fence `id` of the process, starting at `initial`.
    pub(crate) fn create_fence(&self, id: usize, initial: u64) -> Result<(), Failure> {
        self.call(&format!("fcreate {id:x} {initial:x}")).map(drop)
    }

    /// `D3DKMTShareObjects` of fence `id` in the process: the NT handle's value in *its* table.
    pub(crate) fn share_fence(&self, id: usize) -> Result<u64, Failure> {
        self.number(&format!("fshare {id:x}"))
    }

    /// Closes NT handle `nt` of the process's own table.
    pub(crate) fn close_nt_handle(&self, nt: u64) -> Result<(), Failure> {
        self.call(&format!("ntclose {nt:x}")).map(drop)
    }

    /// Fence `id`'s CurrentValue as the process reads it.
    pub(crate) fn fence_value(&self, id: usize) -> Result<u64, Failure> {
        self.number(&format!("fvalue {id:x}"))
    }

    /// One batch of queue `id`: GPU waits and signals of the process's fences (by their
    /// numbers) and packets, in order; the progress value that marks its completion.
    pub(crate) fn submit_ops(&self, id: usize, ops: &[RemoteOp]) -> Result<u64, Failure> {
        let mut line = format!("ops {id:x}");
        for op in ops {
            match op {
                RemoteOp::Wait(f, v) => line.push_str(&format!(" w.{f:x}.{v:x}")),
                RemoteOp::Signal(f, v) => line.push_str(&format!(" s.{f:x}.{v:x}")),
                RemoteOp::Cmd(c) => {
                    let mut w = [0u64; 8];
                    let n = c
                        .encode(&mut w)
                        .ok_or_else(|| Failure::Backend(format!("{c:?} does not fit a packet")))?;
                    let words: Vec<String> = w.iter().take(n).map(|x| format!("{x:x}")).collect();
                    line.push_str(&format!(" c.{}", words.join(",")));
                }
            }
        }
        self.number(&line)
    }

    /// The KMD's copy of queue `id`'s native fence log of `log_type`, with room for `room`
    /// bytes: `(bytes, NumberOfEntries)` (0 entries: the queue has no such log).
    pub(crate) fn queue_log(
        &self,
        id: usize,
        log_type: u32,
        room: usize,
    ) -> Result<(Vec<u8>, u64), Failure> {
        let w = self.call(&format!("qlog {id:x} {log_type:x} {room:x}"))?;
        let [_, entries, bytes] = w.as_slice() else {
            return Err(Failure::Backend(format!(
                "process server: log answer {w:?}"
            )));
        };
        let bytes = if bytes == "-" {
            Vec::new()
        } else {
            (0..bytes.len() / 2)
                .map(|i| {
                    bytes
                        .get(2 * i..2 * i + 2)
                        .and_then(|b| u8::from_str_radix(b, 16).ok())
                        .ok_or_else(|| Failure::Backend("process server: bad log bytes".into()))
                })
                .collect::<Result<_, _>>()?
        };
        Ok((bytes, hex(entries)?))
    }

    /// Destroys fence `id` in the process.
    pub(crate) fn destroy_fence(&self, id: usize) -> Result<(), Failure> {
        self.call(&format!("fdestroy {id:x}")).map(drop)
    }

    /// A DMA context `id` on `node`.
    pub(crate) fn create_dma_context(&self, id: usize, node: u32) -> Result<(), Failure> {
        self.call(&format!("dmactx {id:x} {node:x}")).map(drop)
    }

    /// Submits `words` as one DMA buffer of context `id`; the buffer's GPU VA.
    pub(crate) fn submit_dma(&self, id: usize, words: &[u64]) -> Result<u64, Failure> {
        let mut line = format!("dma {id:x}");
        for w in words {
            line.push_str(&format!(" {w:x}"));
        }
        self.number(&line)
    }

    pub(crate) fn close_queue(&self, id: usize) -> Result<(), Failure> {
        self.call(&format!("close {id:x}")).map(drop)
    }

    /// Runs `lanes` (every one of this process's) in the process, all at once; their reports.
    fn churn(&self, lanes: &[(&ChurnLane, &[Vec<Command>])]) -> Result<Vec<ChurnReport>, Failure> {
        let mut line = "churn".to_owned();
        for (lane, batches) in lanes {
            line.push_str(&format!(
                " {:x}.{:x}.{:x}",
                lane.node, lane.rounds, lane.batches_per_round
            ));
            for batch in *batches {
                line.push(':');
                line.push_str(&packet_words(batch)?.join("/"));
            }
        }
        let w = self.call(&line)?;
        if w.len() != lanes.len() {
            return Err(Failure::Backend(format!(
                "process server: {} churn reports for {} lanes",
                w.len(),
                lanes.len()
            )));
        }
        w.iter().map(|r| parse_report(r)).collect()
    }

    /// Ends the process: a normal exit closes what it holds first (`exit`), an abnormal one
    /// is a kill.
    pub(crate) fn end(&self, how: ProcessEnd) -> Result<(), Failure> {
        if how == ProcessEnd::Normal {
            self.call("exit")?;
        }
        self.pipe
            .lock()
            .map_err(|_| Failure::Backend("process server: pipe poisoned".into()))?
            .end(how)
    }
}

/// One operation of a [`RemoteProcess::submit_ops`] batch: fences by the session's numbers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RemoteOp {
    Wait(usize, u64),
    Signal(usize, u64),
    Cmd(Command),
}

/// The server's objects.
struct Served<K: KmtSync + Send + Sync> {
    kmt: Arc<K>,
    buffers: BTreeMap<u64, Allocation<K::Mem>>,
    queues: BTreeMap<u64, UmdQueue<Arc<K>>>,
    fences: BTreeMap<u64, NativeFence>,
    /// DMA contexts and the command buffers of their submissions.
    contexts: BTreeMap<u64, super::kmd_calls::LocalContext<K>>,
}

enum Answer {
    Status(i32),
    Err(String),
}

impl From<NtStatus> for Answer {
    fn from(NtStatus(s): NtStatus) -> Self {
        Self::Status(s)
    }
}

impl From<SubmitError> for Answer {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::Kmt(s) => s.into(),
            other => Self::Err(format!("UMD: {other:?}")),
        }
    }
}

impl From<String> for Answer {
    fn from(e: String) -> Self {
        Self::Err(e)
    }
}

fn num(s: Option<&&str>) -> Result<u64, Answer> {
    let s = s.ok_or_else(|| Answer::Err("missing argument".into()))?;
    u64::from_str_radix(s, 16).map_err(|_| Answer::Err(format!("bad number `{s}`")))
}

/// The packets of a `submit` request.
fn packets(words: &[&str]) -> Result<Vec<Command>, Answer> {
    words
        .iter()
        .map(|p| {
            let w: Vec<u64> = p
                .split(',')
                .map(|x| num(Some(&x)))
                .collect::<Result<_, _>>()?;
            cmd::decode(&w).map_err(|f| Answer::Err(format!("packet {p}: {f:?}")))
        })
        .collect()
}

impl<K: KmtSync + Send + Sync> Served<K> {
    fn queue(&mut self, id: u64) -> Result<&mut UmdQueue<Arc<K>>, Answer> {
        self.queues
            .get_mut(&id)
            .ok_or_else(|| Answer::Err(format!("no queue {id:x}")))
    }

    fn buffer(&self, id: u64) -> Result<&Allocation<K::Mem>, Answer> {
        self.buffers
            .get(&id)
            .ok_or_else(|| Answer::Err(format!("no buffer {id:x}")))
    }

    fn fence(&self, id: u64) -> Result<&NativeFence, Answer> {
        self.fences
            .get(&id)
            .ok_or_else(|| Answer::Err(format!("no fence {id:x}")))
    }

    /// The native fence requests.
    fn fence_answer(&mut self, words: &[&str]) -> Result<String, Answer> {
        let arg = |i: usize| num(words.get(i));
        match words.first().copied() {
            Some("fence") => {
                let (id, nt) = (arg(1)?, arg(2)?);
                if self.fences.contains_key(&id) {
                    return Err(Answer::Err(format!("fence {id:x} exists")));
                }
                let f = self.kmt.open_native_fence(nt);
                let _ = self.kmt.close_nt_handle(nt);
                self.fences.insert(id, f?);
                Ok(String::new())
            }
            Some("fsignal") => {
                let h = self.fence(arg(1)?)?.kmt;
                self.kmt.signal_from_cpu(h, arg(2)?)?;
                Ok(String::new())
            }
            Some("fwait") => {
                let h = self.fence(arg(1)?)?.kmt;
                let timeout = Duration::from_millis(arg(3)?);
                Ok(match self.kmt.wait_timeout(h, arg(2)?, timeout)? {
                    FenceWait::Reached => "reached",
                    FenceWait::TimedOut => "timeout",
                    FenceWait::Abandoned => "abandoned",
                }
                .into())
            }
            Some("dmactx") => {
                let node = u32::try_from(arg(2)?).map_err(|_| Answer::Err("bad node".into()))?;
                let h = self.kmt.create_context(node)?;
                self.contexts.insert(arg(1)?, (h, Vec::new()));
                Ok(String::new())
            }
            Some("dma") => {
                let id = arg(1)?;
                let w: Vec<u64> = (2..words.len()).map(arg).collect::<Result<_, _>>()?;
                let (h, _) = self
                    .contexts
                    .get(&id)
                    .ok_or_else(|| Answer::Err(format!("no context {id:x}")))?;
                let cb = super::kmd_calls::submit_words(&*self.kmt, *h, &w)?;
                let va = cb.gpu_va;
                if let Some((_, cbs)) = self.contexts.get_mut(&id) {
                    cbs.push(cb);
                }
                Ok(format!("{va:x}"))
            }
            Some("fcreate") => {
                let (id, initial) = (arg(1)?, arg(2)?);
                if self.fences.contains_key(&id) {
                    return Err(Answer::Err(format!("fence {id:x} exists")));
                }
                let f = self.kmt.create_shareable_native_fence(initial)?;
                self.fences.insert(id, f);
                Ok(String::new())
            }
            Some("fshare") => {
                let h = self.fence(arg(1)?)?.kmt;
                Ok(format!("{:x}", self.kmt.share_native_fence(h)?))
            }
            Some("ntclose") => {
                self.kmt.close_nt_handle(arg(1)?)?;
                Ok(String::new())
            }
            Some("fvalue") => {
                let f = *self.fence(arg(1)?)?;
                Ok(format!("{:x}", self.kmt.native_fence_cpu(&f)?.value()))
            }
            Some("ops") => self.ops(arg(1)?, words.get(2..).unwrap_or_default()),
            Some("qlog") => {
                let (id, log_type) = (arg(1)?, arg(2)?);
                let room = usize::try_from(arg(3)?).map_err(|_| Answer::Err("bad room".into()))?;
                let queue_id = self.queue(id)?.info().queue_id;
                let t = self
                    .kmt
                    .testing()
                    .ok_or_else(|| Answer::Err("no D3DKMTEscape".into()))?;
                let log_type =
                    u32::try_from(log_type).map_err(|_| Answer::Err("bad type".into()))?;
                let (bytes, entries) =
                    super::kmd_calls::read_queue_log(t, queue_id, log_type, room)?;
                let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                let text = if text.is_empty() { "-".into() } else { text };
                Ok(format!("{:x} {entries:x} {text}", bytes.len()))
            }
            Some("churn") => self.churn(words.get(1..).unwrap_or_default()),
            Some("fdestroy") => {
                let id = arg(1)?;
                let f = self
                    .fences
                    .remove(&id)
                    .ok_or_else(|| Answer::Err(format!("no fence {id:x}")))?;
                self.kmt.destroy_native_fence(f.kmt)?;
                Ok(String::new())
            }
            other => Err(Answer::Err(format!("unknown request {other:?}"))),
        }
    }

    /// A `churn` request: its lanes on threads of this process, all at once.
    fn churn(&self, words: &[&str]) -> Result<String, Answer> {
        let mut jobs = Vec::with_capacity(words.len());
        for w in words {
            let mut parts = w.split(':');
            let head: Vec<&str> = parts.next().unwrap_or_default().split('.').collect();
            let field = |i: usize| {
                num(head.get(i)).and_then(|v| {
                    u32::try_from(v).map_err(|_| Answer::Err(format!("bad lane `{w}`")))
                })
            };
            let lane = ChurnLane {
                process: ProcessRef(0),
                node: field(0)?,
                rounds: field(1)?,
                batches_per_round: field(2)?,
                work: Vec::new(),
            };
            let batches = parts
                .map(|b| packets(&b.split('/').filter(|p| !p.is_empty()).collect::<Vec<_>>()))
                .collect::<Result<Vec<_>, _>>()?;
            jobs.push((lane, batches));
        }
        let kmt = &self.kmt;
        let reports = lanes::run_lanes(
            &jobs,
            true,
            |(lane, cmds)| lanes::churn_lane(|| kmt.clone(), lane, cmds, |e| format!("UMD: {e:?}")),
            lanes::churn_panicked,
        );
        let text: Vec<String> = reports
            .iter()
            .map(|r| {
                let err = r.error.as_ref().map_or_else(
                    || "-".to_owned(),
                    |e| e.bytes().map(|b| format!("{b:02x}")).collect(),
                );
                format!("{:x}.{:x}.{err}", r.rounds_done, r.kernel_mode_rounds)
            })
            .collect();
        Ok(text.join(" "))
    }

    /// An `ops` request: one `submit_ops` batch of queue `id`.
    fn ops(&mut self, id: u64, words: &[&str]) -> Result<String, Answer> {
        enum Parsed {
            Wait(NativeFence, u64),
            Signal(NativeFence, u64),
            Cmd(Command),
        }
        let mut parsed = Vec::with_capacity(words.len());
        for w in words {
            let mut parts = w.splitn(3, '.');
            let kind = parts.next();
            let (a, b) = (parts.next(), parts.next());
            parsed.push(match kind {
                Some("w") | Some("s") => {
                    let f = *self.fence(num(a.as_ref())?)?;
                    let v = num(b.as_ref())?;
                    if kind == Some("w") {
                        Parsed::Wait(f, v)
                    } else {
                        Parsed::Signal(f, v)
                    }
                }
                Some("c") => {
                    let cmds = packets(a.as_slice())?;
                    match cmds.as_slice() {
                        [c] => Parsed::Cmd(*c),
                        _ => return Err(Answer::Err(format!("bad packet `{w}`"))),
                    }
                }
                _ => return Err(Answer::Err(format!("bad operation `{w}`"))),
            });
        }
        let umd: Vec<Op<'_>> = parsed
            .iter()
            .map(|p| match p {
                Parsed::Wait(f, v) => Op::Wait(f, *v),
                Parsed::Signal(f, v) => Op::Signal(f, *v),
                Parsed::Cmd(c) => Op::Cmd(*c),
            })
            .collect();
        let v = self.queue(id)?.submit_ops(&umd)?;
        Ok(format!("{v:x}"))
    }

    fn answer(&mut self, words: &[&str]) -> Result<String, Answer> {
        let arg = |i: usize| num(words.get(i));
        match words.first().copied() {
            Some("buffer") => {
                let a = self.kmt.create_allocation(arg(2)?)?;
                for off in (0..a.size).step_by(8) {
                    a.mem.store(off, 0);
                }
                let text = format!("{:x} {:x}", a.gpu_va, a.size);
                self.buffers.insert(arg(1)?, a);
                Ok(text)
            }
            Some("read") => {
                let a = self.buffer(arg(1)?)?;
                let off = checked(a, arg(2)?)?;
                Ok(format!("{:x}", a.mem.load(off)))
            }
            Some("write") => {
                let a = self.buffer(arg(1)?)?;
                let off = checked(a, arg(2)?)?;
                a.mem.store(off, arg(3)?);
                Ok(String::new())
            }
            Some("queue") => {
                let node = u32::try_from(arg(2)?).map_err(|_| Answer::Err("bad node".into()))?;
                let kind = match words.get(3).copied() {
                    Some("user") => SubmitPath::UserMode,
                    _ => SubmitPath::KernelMode,
                };
                let q = UmdQueue::new(self.kmt.clone(), node, kind)?;
                let text = info_text(&q.info());
                self.queues.insert(arg(1)?, q);
                Ok(text)
            }
            Some("submit") => {
                let cmds = packets(words.get(2..).unwrap_or_default())?;
                let v = self.queue(arg(1)?)?.submit(&cmds)?;
                Ok(format!("{v:x}"))
            }
            Some("wait") => {
                let v = arg(2)?;
                self.queue(arg(1)?)?.wait(v)?;
                Ok(String::new())
            }
            Some("info") => Ok(info_text(&self.queue(arg(1)?)?.info())),
            Some("doorbell") => Ok(match self.queue(arg(1)?)?.doorbell_status() {
                Some(st) => format!("{:x}", raw(st)),
                None => "none".into(),
            }),
            Some("state") => Ok(format!("{:x}", self.kmt.device_execution_state()?.0)),
            Some("close") => {
                let id = arg(1)?;
                let q = self
                    .queues
                    .remove(&id)
                    .ok_or_else(|| Answer::Err(format!("no queue {id:x}")))?;
                q.close()?;
                Ok(String::new())
            }
            _ => self.fence_answer(words),
        }
    }
}

/// `offset` if an 8-byte word at it lies inside `a`.
fn checked<M>(a: &Allocation<M>, offset: u64) -> Result<u64, Answer> {
    let inside = offset.is_multiple_of(8) && offset.checked_add(8).is_some_and(|end| end <= a.size);
    inside
        .then_some(offset)
        .ok_or_else(|| Answer::Err(format!("offset {offset:#x} outside the buffer")))
}

/// The raw `D3DDDI_DOORBELLSTATUS` of `st`.
fn raw(st: DoorbellStatus) -> u32 {
    match st {
        DoorbellStatus::Connected => 0,
        DoorbellStatus::ConnectedNotify => 1,
        DoorbellStatus::DisconnectedRetry => 2,
        DoorbellStatus::DisconnectedAbort => 3,
        DoorbellStatus::Unknown(x) => x as u32,
    }
}

/// Serves requests from `from` over `kmt`, answering on `to`, until `exit` (its queues closed
/// as a process's UMD closes them) or the end of `from` (the process is ending abnormally: the
/// objects are dropped without a close).
pub fn serve<K: KmtSync + Send + Sync>(kmt: Arc<K>, from: impl BufRead, mut to: impl Write) {
    let mut s = Served {
        kmt,
        buffers: BTreeMap::new(),
        queues: BTreeMap::new(),
        fences: BTreeMap::new(),
        contexts: BTreeMap::new(),
    };
    for line in from.lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let exit = words.first() == Some(&"exit");
        let answer = if exit {
            for q in std::mem::take(&mut s.queues).into_values() {
                let _ = q.close();
            }
            Ok(String::new())
        } else {
            s.answer(&words)
        };
        let text = match answer {
            Ok(t) if t.is_empty() => "ok".to_owned(),
            Ok(t) => format!("ok {t}"),
            Err(Answer::Status(st)) => format!("status {:x}", st as u32),
            Err(Answer::Err(e)) => format!("err {e}"),
        };
        if writeln!(to, "{text}").and_then(|()| to.flush()).is_err() || exit {
            break;
        }
    }
}
