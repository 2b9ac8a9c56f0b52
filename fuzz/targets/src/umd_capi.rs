//! `umd_capi`: the UMD's C API (`umd/src/capi.rs`) called with arbitrary argument sequences.
//!
//! On the host the API has no D3DKMT, so no handle can exist: every call must validate its
//! arguments and return a status without touching memory it was not given. Pointers passed
//! are null or point at this target's own objects (the C contract forbids dangling ones, so
//! those are not fuzzed). `rvgpu_submit`'s command stream, the one input the host build
//! parses in full, is arbitrary; a stream that parses must re-encode to the same packets.
//!
//! Input: a sequence of calls, each a selector byte and its arguments.

use core::ffi::c_void;
use std::ptr;

use rvgpu_umd::capi::{self, RvgpuAdapter, RvgpuBuffer, RvgpuFence, RvgpuQueue, RvgpuStatus};
use rvgpu_umd::capi_context::{self as ctx, RvgpuContext};

use crate::input::{Input, Writer};

/// Calls per input at most.
const MAX_CALLS: usize = 64;
/// Call selectors (`sel % SELECTORS`); the last one replays a command stream.
const SELECTORS: u8 = 28;

fn ptr_or_null<T>(b: u8, p: *mut T) -> *mut T {
    if b & 1 == 0 {
        ptr::null_mut()
    } else {
        p
    }
}

fn check(name: &str, s: RvgpuStatus) {
    // No handle exists on the host: nothing may succeed, everything returns a status.
    assert!(
        matches!(
            s,
            RvgpuStatus::InvalidArgument | RvgpuStatus::NotImplemented | RvgpuStatus::InvalidHandle
        ),
        "{name} returned {s:?} on the host"
    );
    // SAFETY: the function returns a static C string for every status.
    let text = unsafe { std::ffi::CStr::from_ptr(capi::rvgpu_status_string(s as u32)) };
    assert!(!text.to_bytes().is_empty());
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut inp = Input::new(data);
    // Stand-ins for handles: non-null, never dereferenced by a correct host build.
    let mut fake = [0u64; 8];
    let fake_ptr = fake.as_mut_ptr().cast::<c_void>();
    let adapter = fake_ptr.cast::<RvgpuAdapter>();
    let queue = fake_ptr.cast::<RvgpuQueue>();
    let fence = fake_ptr.cast::<RvgpuFence>();
    let buffer = fake_ptr.cast::<RvgpuBuffer>();
    let context = fake_ptr.cast::<RvgpuContext>();
    for _ in 0..MAX_CALLS {
        if inp.is_empty() {
            break;
        }
        let sel = inp.u8();
        let nulls = inp.u8();
        let mut out_ptr: *mut c_void = ptr::null_mut();
        let mut out_u64 = 0u64;
        let mut out_adapter: *mut RvgpuAdapter = ptr::null_mut();
        let mut out_queue: *mut RvgpuQueue = ptr::null_mut();
        let mut out_fence: *mut RvgpuFence = ptr::null_mut();
        let mut out_buffer: *mut RvgpuBuffer = ptr::null_mut();
        let queues = [queue, ptr::null_mut()];
        // SAFETY (every call below): each pointer is null or points at a live local of the
        // right type; "handles" are never dereferenced off Windows (no handle can exist).
        unsafe {
            match sel % SELECTORS {
                0 => {
                    let (lo, hi) = (inp.u32(), inp.u32() as i32);
                    let s = capi::rvgpu_open_adapter(lo, hi, ptr_or_null(nulls, &mut out_adapter));
                    check("open_adapter", s);
                    assert!(out_adapter.is_null(), "an adapter handle was produced");
                }
                1 => check(
                    "close_adapter",
                    capi::rvgpu_close_adapter(ptr_or_null(nulls, adapter)),
                ),
                2 => {
                    let s = capi::rvgpu_create_queue(
                        ptr_or_null(nulls, adapter),
                        inp.u32(),
                        inp.u32(),
                        ptr_or_null(nulls >> 1, &mut out_queue),
                    );
                    check("create_queue", s);
                    assert!(out_queue.is_null());
                }
                3 => check(
                    "destroy_queue",
                    capi::rvgpu_destroy_queue(ptr_or_null(nulls, queue)),
                ),
                4 => {
                    let raw = inp.bytes(2048);
                    let dwords: Vec<u32> = raw
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    let count = if nulls & 4 != 0 {
                        dwords.len()
                    } else {
                        dwords.len().saturating_sub(usize::from(nulls >> 4) % 2)
                    };
                    let cmds = if dwords.is_empty() || nulls & 2 == 0 {
                        ptr::null()
                    } else {
                        dwords.as_ptr()
                    };
                    let s = capi::rvgpu_submit(
                        ptr_or_null(nulls, queue),
                        cmds,
                        count,
                        ptr_or_null(nulls >> 3, &mut out_u64),
                    );
                    check("submit", s);
                    parse_roundtrip(dwords.get(..count).unwrap_or(&[]));
                }
                5 => check(
                    "queue_wait",
                    capi::rvgpu_queue_wait(ptr_or_null(nulls, queue), inp.u64(), inp.u64()),
                ),
                6 => {
                    let s = capi::rvgpu_fence_create(
                        ptr_or_null(nulls, adapter),
                        inp.u64(),
                        ptr_or_null(nulls >> 1, &mut out_fence),
                    );
                    check("fence_create", s);
                    assert!(out_fence.is_null());
                }
                7 => check(
                    "fence_signal",
                    capi::rvgpu_fence_signal(ptr_or_null(nulls, fence), inp.u64()),
                ),
                8 => check(
                    "fence_wait",
                    capi::rvgpu_fence_wait(ptr_or_null(nulls, fence), inp.u64(), inp.u64()),
                ),
                9 => check(
                    "fence_destroy",
                    capi::rvgpu_fence_destroy(ptr_or_null(nulls, fence)),
                ),
                10 => {
                    let s = capi::rvgpu_buffer_create(
                        ptr_or_null(nulls, adapter),
                        inp.u64(),
                        ptr_or_null(nulls >> 1, &mut out_buffer),
                    );
                    check("buffer_create", s);
                    assert!(out_buffer.is_null());
                }
                11 => {
                    let n = usize::from(inp.u8() % 3);
                    let list = if nulls & 2 != 0 {
                        queues.as_ptr()
                    } else {
                        ptr::null()
                    };
                    check(
                        "buffer_destroy",
                        capi::rvgpu_buffer_destroy(ptr_or_null(nulls, buffer), list, n),
                    );
                }
                12 => check(
                    "buffer_gpu_va",
                    capi::rvgpu_buffer_gpu_va(
                        ptr_or_null(nulls, buffer),
                        ptr_or_null(nulls >> 1, &mut out_u64),
                    ),
                ),
                13 => {
                    let n = usize::from(inp.u8() % 3);
                    let list = if nulls & 2 != 0 {
                        queues.as_ptr()
                    } else {
                        ptr::null()
                    };
                    let s = capi::rvgpu_buffer_lock(
                        ptr_or_null(nulls, buffer),
                        inp.u32(),
                        list,
                        n,
                        ptr_or_null(nulls >> 2, &mut out_ptr),
                    );
                    check("buffer_lock", s);
                    assert!(out_ptr.is_null());
                }
                14 => check(
                    "buffer_unlock",
                    capi::rvgpu_buffer_unlock(ptr_or_null(nulls, buffer)),
                ),
                15 => check(
                    "buffer_fill",
                    capi::rvgpu_buffer_fill(
                        ptr_or_null(nulls, queue),
                        ptr_or_null(nulls >> 1, buffer),
                        inp.u64(),
                        inp.u64(),
                        inp.u64(),
                        ptr_or_null(nulls >> 2, &mut out_u64),
                    ),
                ),
                16 => check(
                    "buffer_copy",
                    capi::rvgpu_buffer_copy(
                        ptr_or_null(nulls, queue),
                        ptr_or_null(nulls >> 1, buffer),
                        inp.u64(),
                        ptr_or_null(nulls >> 2, buffer),
                        inp.u64(),
                        inp.u64(),
                        ptr_or_null(nulls >> 3, &mut out_u64),
                    ),
                ),
                17 => {
                    let desc = capi::RvgpuQueueDesc {
                        node: inp.u32(),
                        kind: inp.u32() % 3,
                        priority: inp.u32(),
                        ring_size: inp.u32(),
                    };
                    let s = capi::rvgpu_queue_create(
                        ptr_or_null(nulls, adapter),
                        if nulls & 2 == 0 { ptr::null() } else { &desc },
                        ptr_or_null(nulls >> 2, &mut out_queue),
                    );
                    check("queue_create", s);
                    assert!(out_queue.is_null());
                }
                18 => {
                    let raw = inp.bytes(256);
                    let dwords: Vec<u32> = raw
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    let list = [capi::RvgpuFenceValue {
                        fence: ptr_or_null(nulls >> 4, fence),
                        value: inp.u64(),
                    }];
                    let n = usize::from(inp.u8() % 2);
                    let desc = capi::RvgpuSubmitDesc {
                        commands: if nulls & 8 == 0 {
                            ptr::null()
                        } else {
                            dwords.as_ptr()
                        },
                        dword_count: dwords.len(),
                        waits: if nulls & 16 == 0 {
                            ptr::null()
                        } else {
                            list.as_ptr()
                        },
                        wait_count: n,
                        signals: list.as_ptr(),
                        signal_count: usize::from(inp.u8() % 2),
                    };
                    let s = capi::rvgpu_queue_submit(
                        ptr_or_null(nulls, queue),
                        if nulls & 2 == 0 { ptr::null() } else { &desc },
                        ptr_or_null(nulls >> 2, &mut out_u64),
                    );
                    check("queue_submit", s);
                }
                19 => {
                    let mut st = capi::RvgpuQueueStatus::default();
                    check(
                        "queue_status",
                        capi::rvgpu_queue_status(
                            ptr_or_null(nulls, queue),
                            ptr_or_null(nulls >> 1, &mut st),
                        ),
                    );
                }
                20 => {
                    let mut log = [capi::RvgpuFenceLogEntry::default(); 4];
                    let mut n = 0usize;
                    check(
                        "queue_read_fence_log",
                        capi::rvgpu_queue_read_fence_log(
                            ptr_or_null(nulls, queue),
                            ptr_or_null(nulls >> 1, log.as_mut_ptr()),
                            usize::from(inp.u8() % 5),
                            ptr_or_null(nulls >> 2, &mut n),
                        ),
                    );
                    assert_eq!(n, 0);
                }
                21 => {
                    let s = capi::rvgpu_fence_create2(
                        ptr_or_null(nulls, adapter),
                        inp.u64(),
                        inp.u32(),
                        ptr_or_null(nulls >> 1, &mut out_fence),
                    );
                    check("fence_create2", s);
                    assert!(out_fence.is_null());
                }
                22 => check(
                    "fence_value",
                    capi::rvgpu_fence_value(
                        ptr_or_null(nulls, fence),
                        ptr_or_null(nulls >> 1, &mut out_u64),
                    ),
                ),
                23 => check(
                    "fence_share",
                    capi::rvgpu_fence_share(
                        ptr_or_null(nulls, fence),
                        ptr_or_null(nulls >> 1, &mut out_ptr),
                    ),
                ),
                24 => {
                    let s = capi::rvgpu_fence_open(
                        ptr_or_null(nulls, adapter),
                        ptr_or_null(nulls >> 1, fake_ptr),
                        ptr_or_null(nulls >> 2, &mut out_fence),
                    );
                    check("fence_open", s);
                    assert!(out_fence.is_null());
                }
                25 => {
                    let mut d = capi::RvgpuDeviceStatus::default();
                    let mut b = capi::RvgpuBufferStatus::default();
                    check(
                        "device_status",
                        capi::rvgpu_device_status(
                            ptr_or_null(nulls, adapter),
                            ptr_or_null(nulls >> 1, &mut d),
                        ),
                    );
                    let mut l = capi::RvgpuDeviceLossInfo::default();
                    check(
                        "device_loss_info",
                        capi::rvgpu_device_loss_info(
                            ptr_or_null(nulls >> 4, adapter),
                            ptr_or_null(nulls >> 5, &mut l),
                        ),
                    );
                    check(
                        "buffer_status",
                        capi::rvgpu_buffer_status(
                            ptr_or_null(nulls >> 2, buffer),
                            ptr_or_null(nulls >> 3, &mut b),
                        ),
                    );
                }
                26 => {
                    let s = capi::rvgpu_va_reserve(
                        ptr_or_null(nulls, adapter),
                        inp.u64(),
                        inp.u64(),
                        ptr_or_null(nulls >> 1, &mut out_u64),
                    );
                    check("va_reserve", s);
                    assert_eq!(out_u64, 0);
                    check(
                        "buffer_map_va",
                        capi::rvgpu_buffer_map_va(
                            ptr_or_null(nulls >> 2, buffer),
                            inp.u64(),
                            inp.u64(),
                            inp.u64(),
                        ),
                    );
                    check(
                        "va_free",
                        capi::rvgpu_va_free(ptr_or_null(nulls >> 3, adapter), inp.u64(), inp.u64()),
                    );
                    check(
                        "fence_wait_async",
                        capi::rvgpu_fence_wait_async(
                            ptr_or_null(nulls >> 4, fence),
                            inp.u64(),
                            ptr_or_null(nulls >> 5, fake_ptr),
                        ),
                    );
                    let mut out_context: *mut RvgpuContext = ptr::null_mut();
                    check(
                        "context_create",
                        ctx::rvgpu_context_create(
                            ptr_or_null(nulls >> 6, adapter),
                            inp.u32(),
                            ptr_or_null(nulls >> 7, &mut out_context),
                        ),
                    );
                    assert!(out_context.is_null(), "a context handle was produced");
                    // A stream of up to 16 dwords, and a count no larger (the C contract).
                    let d: Vec<u32> = inp
                        .bytes(64)
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    let n = usize::from(inp.u8()) % (d.len() + 1);
                    check(
                        "context_submit",
                        ctx::rvgpu_context_submit(
                            ptr_or_null(nulls, context),
                            if nulls & 2 == 0 {
                                d.as_ptr()
                            } else {
                                ptr::null()
                            },
                            n,
                        ),
                    );
                    check(
                        "context_destroy",
                        ctx::rvgpu_context_destroy(ptr_or_null(nulls >> 1, context)),
                    );
                }
                _ => {
                    let raw = inp.bytes(2048);
                    let dwords: Vec<u32> = raw
                        .chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    parse_roundtrip(&dwords);
                }
            }
        }
    }
    // The stand-ins were never written through.
    assert!(
        fake.iter().all(|w| *w == 0),
        "a handle stand-in was written"
    );
}

/// A stream `parse_commands` accepts re-encodes to the same words; a rejected one is
/// rejected without panicking.
fn parse_roundtrip(dwords: &[u32]) {
    let Ok(cmds) = capi::parse_commands(dwords) else {
        return;
    };
    let mut words = Vec::new();
    for c in &cmds {
        let mut b = vec![0u64; c.len()];
        assert!(c.encode(&mut b).is_some(), "{c:?} does not re-encode");
        words.extend(b);
    }
    let again: Vec<u32> = words
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .collect();
    let reparsed = capi::parse_commands(&again).expect("re-encoded stream parses");
    assert_eq!(cmds, reparsed, "parse → encode → parse changed the packets");
}

/// Seeds: every call with valid-looking arguments, and command streams of every packet.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut w = Writer::new();
    for sel in 0..SELECTORS {
        w.u8(sel).u8(0xff);
        for _ in 0..5 {
            w.u64(4096);
        }
    }
    out.push(("every-call".to_string(), w.finish()));
    let cmds = crate::commands::every_command(0x10_0000);
    let mut dw = Vec::new();
    for c in &cmds {
        let mut b = vec![0u64; c.len()];
        if c.encode(&mut b).is_some() {
            for x in b {
                dw.extend_from_slice(&(x as u32).to_le_bytes());
                dw.extend_from_slice(&((x >> 32) as u32).to_le_bytes());
            }
        }
    }
    let mut w = Writer::new();
    w.u8(4).u8(0xff).bytes(&dw, true);
    w.u8(SELECTORS - 1).u8(0).bytes(&dw, true);
    out.push(("submit-every-packet".to_string(), w.finish()));
    out
}
