"use strict";

// rvgpu.js: a WinDbg JavaScript (data model) extension for rvgpu.sys, for a kernel debugger
// session on the test machine (docs/windows.md, "WinDbg extension script").
//
//   .scriptload <package>\windbg\rvgpu.js
//   !rvgpu_adapters          every adapter of the driver's adapter table
//   !rvgpu_queues            hardware queues (engine, device queue id, user/kernel mode, doorbell)
//   !rvgpu_doorbells         doorbells (bound physical page, owning queue/context/device, state)
//                            and the physical pages' owners
//   !rvgpu_fences            native fences (report tag, CurrentValue/MonitoredValue GPU VAs,
//                            type, opens) and the local handles on them
//   !rvgpu_tdr               the last TDR record: reset counters and, per engine, the last
//                            ResetDone event and LastAbortedFenceId
//   !rvgpu_tdrdump ADDR[, N] decodes the driver's TDR dump record (DxgkDdiCollectDbgInfo2's
//                            buffer, N bytes of it kept) at ADDR: one line per engine
//   dx @$rvgpu()             the same as objects (dx -r3 @$rvgpu() for everything)
//
// Every function takes an optional adapter index (the slot in the driver's adapter table).
//
// What it reads: the driver core's own structures (driver/kmd/src): the adapter table
// `rvgpu_kmd::globals::ADAPTERS`, `Adapter` → `Live` → the scheduler state `Sched` (queues,
// doorbells, contexts, devices, physical doorbells) and the fence table, and `Adapter::tdr`.
// The machine is stopped in the debugger, so the spin locks around them are not taken.
// Containers (`Vec`, the driver's `SortedMap` over two `Vec`s) and `Option`s are decoded from
// their layout (below): the PDB carries no NatVis for the standard library.
//
// Status: written against the structures in this repository and checked on Linux only (the
// names below exist in the driver source: tests/windbg_script.rs; the file parses:
// `node --check`). Not yet run in a live debugger session.

// The module, and the platform type the driver instantiates the core with (src/platform).
// `WinKernel` is an uninhabited enum, which the PDB names `enum2$<...>` (Rust's MSVC encoding
// of enums); a type argument list ending in `>` gets a space before the closing `>`.
const MODULE = "rvgpu";
const PLATFORM = "enum2$<rvgpu::platform::windows::WinKernel>";
const ADAPTER_TYPE = "rvgpu_kmd::adapter::Adapter<" + PLATFORM + " >";
const TABLE_SYMBOL = "rvgpu_kmd::globals::ADAPTERS";

// Engines a device can have (rvgpu_hw::regs::ENGINE_MAX): the length of TdrLog's arrays.
const ENGINE_MAX = 16;

// Every driver structure and field this script reads, by Rust path. `field()` refuses any
// other, and tests/windbg_script.rs checks each against the struct in driver/kmd/src, so the
// script fails its test (not the tester's session) when the driver changes.
const LAYOUT = {
    "rvgpu_kmd::globals::AdapterTable": ["slots"],
    "rvgpu_kmd::globals::Slot": ["ptr"],
    "rvgpu_kmd::adapter::Adapter": ["lifecycle", "live", "stats", "tdr"],
    "rvgpu_kmd::adapter::Live": ["identity", "sched", "fences"],
    "rvgpu_kmd::adapter::Stats": ["isr_claimed", "isr_unclaimed", "dpcs", "overflows"],
    "rvgpu_kmd::device::DeviceIdentity": ["config", "vram_size"],
    "rvgpu_hw::regs::Config": ["engines", "doorbells"],
    "rvgpu_kmd::sync::SpinLock": ["value"],
    "rvgpu_kmd::kmem::SortedMap": ["keys", "values"],
    "rvgpu_kmd::sched::Sched": ["devices", "contexts", "queues", "doorbells", "physical"],
    "rvgpu_kmd::context::Context": ["device"],
    "rvgpu_kmd::hwqueue::HwQueue": [
        "os_handle", "context", "engine", "id", "priority", "user_mode", "progress_gpu",
        "doorbell",
    ],
    "rvgpu_kmd::doorbell::Doorbell": ["os_handle", "queue", "physical", "callbacks"],
    "rvgpu_kmd::doorbell::Physical": ["global", "slots"],
    "rvgpu_kmd::doorbell::Slot": ["owner", "process", "users", "stamp", "pending"],
    "rvgpu_kmd::fence::table::FenceTable": ["globals", "locals"],
    "rvgpu_kmd::fence::table::Fence": ["tag", "current_gpu", "monitored_gpu", "fence_type", "opens"],
    "rvgpu_kmd::fence::table::Local": ["global", "device"],
    "rvgpu_kmd::handle::Handle": ["__0"],
    "rvgpu_hw::addr::GpuVa": ["__0"],
    "rvgpu_kmd::reset::TdrLog": [
        "last_done", "last_rptr", "last_aborted", "engine_resets", "failed_resets",
        "adapter_resets", "invalidated",
    ],
};

// The standard library's inner fields this script reads, as Rust 1.95 lays them out and its
// own debugger scripts (lib/rustlib/etc/lldb_providers.py) read them: atomics hold
// `v: UnsafeCell<_>` (AtomicPtr: `p`), `UnsafeCell` holds `value`, `Vec` holds
// `buf.inner.ptr.pointer.pointer` (the data) and `len`, tuples `__0`, `__1`. An `Option` is
// an `enum2$<...>` with a `tag` (0 None, 1 Some) and `variant1.value.__0` (Some's value).
// The PDB of rvgpu.sys embeds only src/rvgpu.natvis, not the standard library's NatVis, so
// the script decodes these itself.

/// Field `name` of `obj`, a `type` (a LAYOUT key) as the PDB describes it.
function field(obj, type, name) {
    const known = LAYOUT[type];
    if (known === undefined || known.indexOf(name) < 0) {
        throw new Error("rvgpu.js: " + type + "." + name + " is not in LAYOUT");
    }
    const v = obj[name];
    if (v === undefined) {
        throw new Error("rvgpu.js: no field " + name + " in " + type + " (driver and script differ)");
    }
    return v;
}

/// The value of an atomic integer or bool.
function atomic(a) {
    return a.v.value;
}

/// The value inside an `UnsafeCell`.
function cell(c) {
    return c.value;
}

/// The value a spin lock guards (read without the lock: the target is stopped).
function locked(l) {
    return cell(field(l, "rvgpu_kmd::sync::SpinLock", "value"));
}

/// A 64-bit value as a JavaScript number (the values read here are counts and small ids).
function num(x) {
    return typeof x === "number" ? x : x.asNumber();
}

/// The elements of a `Vec<T>`: `len` objects of type T from its buffer (the element type is
/// the first argument of the Vec's type name).
function vecItems(v) {
    const name = v.targetType.name;
    const prefix = "alloc::vec::Vec<";
    const suffix = ",alloc::alloc::Global>";
    if (!name.startsWith(prefix) || !name.endsWith(suffix)) {
        throw new Error("rvgpu.js: not a Vec: " + name);
    }
    const elem = name.slice(prefix.length, name.length - suffix.length);
    const size = num(host.getModuleType(MODULE, elem).size);
    const base = int64(v.buf.inner.ptr.pointer.pointer.address);
    const out = [];
    for (let i = 0; i < num(v.len); i++) {
        out.push(host.createTypedObject(base.add(i * size), MODULE, elem));
    }
    return out;
}

/// `(key, value)` pairs of a driver `SortedMap` (its keys and values are two vectors in the
/// same order).
function mapEntries(m) {
    const values = vecItems(field(m, "rvgpu_kmd::kmem::SortedMap", "values"));
    return vecItems(field(m, "rvgpu_kmd::kmem::SortedMap", "keys")).map(function (k, i) {
        return { key: k, value: values[i] };
    });
}

/// `Some(x)` → x; `None` → null.
function option(o) {
    return num(o.tag) === 1 ? o.variant1.value.__0 : null;
}

/// A scheduler handle (`handle::Handle`, a u64 newtype) as text.
function handle(h) {
    return hex(field(h, "rvgpu_kmd::handle::Handle", "__0"));
}

/// `Some(x)` → `text(x)`; `None` → null.
function optionText(o, text) {
    const x = option(o);
    return x === null ? null : text(x);
}

/// A GPU virtual address (`rvgpu_hw::addr::GpuVa`) as text.
function gpuVa(a) {
    return hex(field(a, "rvgpu_hw::addr::GpuVa", "__0"));
}

function hex(x) {
    return "0x" + x.toString(16);
}

/// A 64-bit value as the library's Int64 (the data model hands small values over as numbers).
function int64(x) {
    return typeof x === "number" ? new host.Int64(x) : x;
}

/// Every registered adapter: [{ index, address, object }].
function tableAdapters() {
    const table = host.getModuleSymbol(MODULE, TABLE_SYMBOL);
    const slots = field(table, "rvgpu_kmd::globals::AdapterTable", "slots");
    const out = [];
    let i = 0;
    for (const slot of slots) {
        const p = cell(field(slot, "rvgpu_kmd::globals::Slot", "ptr").p);
        const addr = int64(p.address);
        // Null is a free slot, 1 one being claimed (core::ptr::dangling for `()`).
        if (addr.compareTo(1) > 0) {
            out.push({ index: i, address: addr, object: host.createTypedObject(addr, MODULE, ADAPTER_TYPE) });
        }
        i++;
    }
    return out;
}

/// The adapters asked for: all, or the one in table slot `index`.
function selected(index) {
    const all = tableAdapters();
    if (index === undefined) {
        return all;
    }
    return all.filter(function (a) { return a.index === index; });
}

/// The started state of an adapter, or null when it is not started.
function live(adapter) {
    const p = cell(field(adapter, "rvgpu_kmd::adapter::Adapter", "live").p);
    return p.isNull ? null : p.dereference();
}

/// The selected adapters that are started: each as `a` (from `selected`) with its started
/// state `l`.
function started(index) {
    const out = [];
    for (const a of selected(index)) {
        const l = live(a.object);
        if (l !== null) {
            out.push({ a: a, l: l });
        }
    }
    return out;
}

function sched(l) {
    return locked(field(l, "rvgpu_kmd::adapter::Live", "sched"));
}

function describeAdapter(a) {
    const ad = a.object;
    const l = live(ad);
    const stats = field(ad, "rvgpu_kmd::adapter::Adapter", "stats");
    const out = {
        index: a.index,
        address: hex(a.address),
        lifecycle: String(locked(field(ad, "rvgpu_kmd::adapter::Adapter", "lifecycle")).__0),
        started: l !== null,
        isrClaimed: atomic(field(stats, "rvgpu_kmd::adapter::Stats", "isr_claimed")),
        isrUnclaimed: atomic(field(stats, "rvgpu_kmd::adapter::Stats", "isr_unclaimed")),
        dpcs: atomic(field(stats, "rvgpu_kmd::adapter::Stats", "dpcs")),
        eventOverflows: atomic(field(stats, "rvgpu_kmd::adapter::Stats", "overflows")),
    };
    if (l !== null) {
        const id = field(l, "rvgpu_kmd::adapter::Live", "identity");
        const config = field(id, "rvgpu_kmd::device::DeviceIdentity", "config");
        out.engines = field(config, "rvgpu_hw::regs::Config", "engines");
        out.doorbells = field(config, "rvgpu_hw::regs::Config", "doorbells");
        out.vram = hex(field(id, "rvgpu_kmd::device::DeviceIdentity", "vram_size"));
        const s = sched(l);
        out.devices = mapEntries(field(s, "rvgpu_kmd::sched::Sched", "devices")).length;
        out.contexts = mapEntries(field(s, "rvgpu_kmd::sched::Sched", "contexts")).length;
        out.hwQueues = mapEntries(field(s, "rvgpu_kmd::sched::Sched", "queues")).length;
        out.doorbellObjects = mapEntries(field(s, "rvgpu_kmd::sched::Sched", "doorbells")).length;
    }
    return out;
}

function adapters(index) {
    return selected(index).map(describeAdapter);
}

function queues(index) {
    const out = [];
    for (const { a, l } of started(index)) {
        const s = sched(l);
        for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "queues"))) {
            const q = e.value;
            const T = "rvgpu_kmd::hwqueue::HwQueue";
            out.push({
                adapter: a.index,
                handle: handle(e.key),
                osHandle: hex(field(q, T, "os_handle")),
                context: handle(field(q, T, "context")),
                engine: field(q, T, "engine"),
                queueId: field(q, T, "id"),
                priority: field(q, T, "priority"),
                userMode: field(q, T, "user_mode"),
                progressFenceGpuVa: gpuVa(field(q, T, "progress_gpu")),
                doorbell: optionText(field(q, T, "doorbell"), handle),
            });
        }
    }
    return out;
}

/// queue handle → { context, device } for the doorbells' owners.
function owners(s) {
    const contexts = {};
    for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "contexts"))) {
        contexts[handle(e.key)] = handle(field(e.value, "rvgpu_kmd::context::Context", "device"));
    }
    const byQueue = {};
    for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "queues"))) {
        const ctx = handle(field(e.value, "rvgpu_kmd::hwqueue::HwQueue", "context"));
        byQueue[handle(e.key)] = { context: ctx, device: contexts[ctx] || null };
    }
    return byQueue;
}

function doorbells(index) {
    const out = [];
    for (const { a, l } of started(index)) {
        const s = sched(l);
        const own = owners(s);
        for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "doorbells"))) {
            const d = e.value;
            const T = "rvgpu_kmd::doorbell::Doorbell";
            const queue = handle(field(d, T, "queue"));
            const page = option(field(d, T, "physical"));
            const o = own[queue] || { context: null, device: null };
            out.push({
                adapter: a.index,
                handle: handle(e.key),
                osHandle: hex(field(d, T, "os_handle")),
                boundPage: page,
                state: page === null ? "disconnected" : "connected",
                ownerQueue: queue,
                ownerContext: o.context,
                ownerDevice: o.device,
                victimisationCallbacksInFlight: field(d, T, "callbacks"),
            });
        }
        const phys = field(s, "rvgpu_kmd::sched::Sched", "physical");
        const P = "rvgpu_kmd::doorbell::Physical";
        const S = "rvgpu_kmd::doorbell::Slot";
        const global = field(phys, P, "global");
        vecItems(field(phys, P, "slots")).forEach(function (slot, page) {
            out.push({
                adapter: a.index,
                physicalPage: page,
                globalMode: global,
                // Dedicated mode: the doorbell on the page. Global mode: the process id the
                // page is bound to and how many of its doorbells connect through it.
                owner: optionText(field(slot, S, "owner"), handle),
                ownerProcessId: option(field(slot, S, "process")),
                doorbellsOnPage: field(slot, S, "users"),
                connectStamp: field(slot, S, "stamp"),
                connectPending: field(slot, S, "pending"),
            });
        });
    }
    return out;
}

function fences(index) {
    const out = [];
    for (const { a, l } of started(index)) {
        const table = locked(field(l, "rvgpu_kmd::adapter::Live", "fences"));
        const T = "rvgpu_kmd::fence::table::FenceTable";
        const F = "rvgpu_kmd::fence::table::Fence";
        const L = "rvgpu_kmd::fence::table::Local";
        const locals = mapEntries(field(table, T, "locals"));
        for (const e of mapEntries(field(table, T, "globals"))) {
            const f = e.value;
            const global = hex(e.key);
            out.push({
                adapter: a.index,
                globalHandle: hex(e.key),
                reportTag: hex(field(f, F, "tag")),
                currentValueGpuVa: gpuVa(field(f, F, "current_gpu")),
                monitoredValueGpuVa: gpuVa(field(f, F, "monitored_gpu")),
                fenceType: field(f, F, "fence_type"),
                opens: field(f, F, "opens"),
                localHandles: locals
                    .filter(function (x) { return hex(field(x.value, L, "global")) === global; })
                    .map(function (x) {
                        return { local: hex(x.key), device: hex(field(x.value, L, "device")) };
                    }),
            });
        }
    }
    return out;
}

/// Decodes TdrLog's `last_done` word (`result << 32 | queue`; all ones: no reset yet).
function resetDone(word) {
    const w = int64(word);
    if (w.compareTo(new host.Int64(0xFFFFFFFF, 0xFFFFFFFF)) === 0) {
        return null;
    }
    return { result: w.getHighPart(), queue: hex(w.getLowPart()) };
}

function tdr(index) {
    const out = [];
    for (const a of selected(index)) {
        const log = field(a.object, "rvgpu_kmd::adapter::Adapter", "tdr");
        const T = "rvgpu_kmd::reset::TdrLog";
        const engines = [];
        const done = field(log, T, "last_done");
        const rptr = field(log, T, "last_rptr");
        const aborted = field(log, T, "last_aborted");
        for (let e = 0; e < ENGINE_MAX; e++) {
            const d = resetDone(atomic(done[e]));
            if (d === null) {
                continue;
            }
            engines.push({
                engine: e,
                resetResult: d.result,
                resetQueue: d.queue,
                abortedReadPointer: hex(atomic(rptr[e])),
                lastAbortedFenceId: atomic(aborted[e]),
            });
        }
        out.push({
            adapter: a.index,
            engineResets: atomic(field(log, T, "engine_resets")),
            failedEngineResets: atomic(field(log, T, "failed_resets")),
            adapterResets: atomic(field(log, T, "adapter_resets")),
            invalidatedContexts: atomic(field(log, T, "invalidated")),
            lastResetPerEngine: engines,
        });
    }
    return out;
}

// The TDR dump record DxgkDdiCollectDbgInfo2 writes (rvgpu_hw::tdrdump, docs/tdr.md): a
// 32-byte header ("RVTD", version, sizes, counts, flags, reason, TDR type, node, resets) then
// one record per engine, little-endian. Windows keeps the bytes only up to the last non-zero
// one, so bytes past N read as zero.
const DUMP_MAGIC = 0x44545652;
const DUMP_HEADER_SIZE = 32;
const DUMP_RECORD_SIZE = 96;
const DUMP_STATES = { 0: "idle", 1: "running", 2: "hung", 3: "reset", 255: "unknown" };
const DUMP_FLAGS = { 1: "sched-busy", 2: "truncated" };
// Record validity bits, in the order the line prints them.
const VALID_QUEUE = 1, VALID_GUILTY = 2, VALID_HANDLES = 4, VALID_RING = 8, VALID_RPTR = 16;
const VALID_WPTR = 32, VALID_SUBMITTED = 64, VALID_COMPLETED = 128, VALID_HUNG_VA = 256;

function le32(b, o) {
    return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}

function le16(b, o) {
    return b[o] | (b[o + 1] << 8);
}

function le64(b, o) {
    return new host.Int64(le32(b, o), le32(b, o + 4));
}

function flagNames(bits, names) {
    const out = [];
    for (const k of Object.keys(names)) {
        if (bits & Number(k)) {
            out.push(names[k]);
        }
    }
    return out.length === 0 ? "none" : out.join(",");
}

/// One engine record as an object and its line.
function dumpEngine(r) {
    const valid = le32(r, 12);
    const e = {
        node: le32(r, 0),
        state: DUMP_STATES[le32(r, 4)] || "state" + le32(r, 4),
        status: hex(le32(r, 8)),
        resets: le32(r, 20),
    };
    let line = "engine " + e.node + ": " + e.state + " status=" + e.status;
    const add = (bit, name, value, text) => {
        if (valid & bit) {
            e[name] = value;
            line += " " + text;
        }
    };
    add(VALID_QUEUE, "queueId", hex(le32(r, 16)), "queue=" + hex(le32(r, 16)));
    add(VALID_GUILTY, "guilty", true, "guilty");
    add(VALID_HANDLES, "context", hex(le64(r, 32)),
        "context=" + hex(le64(r, 32)) + " hwqueue=" + hex(le64(r, 24)));
    add(VALID_SUBMITTED, "lastSubmitted", hex(le64(r, 40)), "submitted=" + hex(le64(r, 40)));
    add(VALID_COMPLETED, "lastCompleted", hex(le64(r, 48)), "completed=" + hex(le64(r, 48)));
    add(VALID_RPTR, "readPointer", hex(le64(r, 56)), "rptr=" + hex(le64(r, 56)));
    add(VALID_WPTR, "writePointer", hex(le64(r, 64)), "wptr=" + hex(le64(r, 64)));
    add(VALID_RING, "ring", hex(le64(r, 80)), "ring=" + hex(le64(r, 80)) + "+" + hex(le32(r, 88)));
    add(VALID_HUNG_VA, "hungPacketGpuVa", hex(le64(r, 72)), "hung_at=" + hex(le64(r, 72)));
    line += " resets=" + e.resets;
    e.line = line;
    return e;
}

/// `!rvgpu_tdrdump ADDR[, N]` (a function alias takes its arguments comma-separated): the
/// dump record at ADDR (N: bytes of it present), printed one line per engine and returned as
/// objects.
function tdrDump(address, size) {
    if (address === undefined) {
        throw new Error("rvgpu.js: usage: !rvgpu_tdrdump <address>[, <bytes>]");
    }
    const base = int64(address);
    const limit = size === undefined ? null : num(size);
    const read = (offset, count) => {
        const n = limit === null ? count : Math.max(0, Math.min(count, limit - offset));
        const got = n > 0 ? host.memory.readMemoryValues(base.add(offset), n, 1) : [];
        const out = [];
        for (let i = 0; i < count; i++) {
            out.push(i < n ? num(got[i]) & 0xFF : 0);
        }
        return out;
    };
    const h = read(0, DUMP_HEADER_SIZE);
    const headerSize = le16(h, 6), recordSize = le16(h, 8);
    if (le32(h, 0) !== DUMP_MAGIC || le16(h, 4) < 1 || headerSize < DUMP_HEADER_SIZE
        || recordSize < DUMP_RECORD_SIZE) {
        throw new Error("rvgpu.js: no rvgpu TDR dump at " + hex(base));
    }
    const node = le32(h, 24);
    const dump = {
        version: le16(h, 4),
        engines: le16(h, 10),
        records: le16(h, 12),
        flags: flagNames(le16(h, 14), DUMP_FLAGS),
        reason: hex(le32(h, 16)),
        tdrType: le32(h, 20) | 0,
        timedOutNode: node === 0xFFFFFFFF ? null : node,
        engineResets: le32(h, 28),
        perEngine: [],
    };
    const lines = ["rvgpu TDR dump v" + dump.version + ": reason=" + dump.reason + " type="
        + dump.tdrType + " node=" + (dump.timedOutNode === null ? "none" : dump.timedOutNode)
        + " engines=" + dump.engines + " records=" + dump.records + " resets="
        + dump.engineResets + " flags=" + dump.flags];
    for (let i = 0; i < dump.records; i++) {
        const e = dumpEngine(read(headerSize + i * recordSize, DUMP_RECORD_SIZE));
        dump.perEngine.push(e);
        lines.push(e.line);
    }
    for (const l of lines) {
        host.diagnostics.debugLog(l + "\n");
    }
    return dump;
}

/// Everything, for `dx @$rvgpu()`.
function all(index) {
    return {
        adapters: adapters(index),
        queues: queues(index),
        doorbells: doorbells(index),
        fences: fences(index),
        tdr: tdr(index),
    };
}

function initializeScript() {
    return [
        new host.apiVersionSupport(1, 7),
        new host.functionAlias(all, "rvgpu"),
        new host.functionAlias(adapters, "rvgpu_adapters"),
        new host.functionAlias(queues, "rvgpu_queues"),
        new host.functionAlias(doorbells, "rvgpu_doorbells"),
        new host.functionAlias(fences, "rvgpu_fences"),
        new host.functionAlias(tdr, "rvgpu_tdr"),
        new host.functionAlias(tdrDump, "rvgpu_tdrdump"),
    ];
}
