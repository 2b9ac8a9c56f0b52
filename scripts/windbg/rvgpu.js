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
//   dx @$rvgpu()             the same as objects (dx -r3 @$rvgpu() for everything)
//
// Every function takes an optional adapter index (the slot in the driver's adapter table).
//
// What it reads: the driver core's own structures (driver/kmd/src): the adapter table
// `rvgpu_kmd::globals::ADAPTERS`, `Adapter` → `Live` → the scheduler state `Sched` (queues,
// doorbells, contexts, devices, physical doorbells) and the fence table, and `Adapter::tdr`.
// The machine is stopped in the debugger, so the spin locks around them are not taken.
// Containers (`Vec`, the driver's `SortedMap` over a `Vec`) are walked through the Rust
// standard library's NatVis, which rustc embeds in the PDB; `Option` values through their
// display text.
//
// Status: written against the structures in this repository and checked on Linux only (the
// names below exist in the driver source: tests/windbg_script.rs; the file parses:
// `node --check`). Not yet run in a live debugger session.

// The module, and the platform type the driver instantiates the core with (src/platform).
const MODULE = "rvgpu";
const PLATFORM = "rvgpu::platform::windows::WinKernel";
const ADAPTER_TYPE = "rvgpu_kmd::adapter::Adapter<" + PLATFORM + ">";
const TABLE_SYMBOL = "rvgpu_kmd::globals::ADAPTERS";

// Engines a device can have (rvgpu_hw::regs::ENGINE_MAX): the length of TdrLog's arrays.
const ENGINE_MAX = 16;

// Every driver structure and field this script reads, by Rust path. `field()` refuses any
// other, and tests/windbg_script.rs checks each against the struct in driver/kmd/src, so the
// script fails its test (not the tester's session) when the driver changes.
const LAYOUT = {
    "rvgpu_kmd::globals::AdapterTable": ["slots"],
    "rvgpu_kmd::globals::Slot": ["ptr"],
    "rvgpu_kmd::adapter::Adapter": ["lifecycle", "live", "table_slot", "stats", "tdr"],
    "rvgpu_kmd::adapter::Live": ["identity", "sched", "fences", "doorbell_va"],
    "rvgpu_kmd::adapter::Stats": ["isr_claimed", "isr_unclaimed", "dpcs", "overflows"],
    "rvgpu_kmd::device::DeviceIdentity": ["config", "vram_size"],
    "rvgpu_kmd::sync::SpinLock": ["value"],
    "rvgpu_kmd::kmem::SortedMap": ["entries"],
    "rvgpu_kmd::sched::Sched": ["devices", "contexts", "queues", "doorbells", "physical"],
    "rvgpu_kmd::context::Device": ["os_handle", "system", "in_error", "process"],
    "rvgpu_kmd::context::Context": ["device", "engine", "suspended", "os_handle"],
    "rvgpu_kmd::hwqueue::HwQueue": [
        "os_handle", "context", "engine", "id", "priority", "user_mode", "progress_gpu",
        "doorbell",
    ],
    "rvgpu_kmd::doorbell::Doorbell": ["os_handle", "queue", "physical", "callbacks"],
    "rvgpu_kmd::doorbell::Physical": ["global", "slots"],
    "rvgpu_kmd::doorbell::Slot": ["owner", "stamp", "pending"],
    "rvgpu_kmd::fence::table::FenceTable": ["globals", "locals"],
    "rvgpu_kmd::fence::table::Fence": ["tag", "current_gpu", "monitored_gpu", "fence_type", "opens"],
    "rvgpu_kmd::fence::table::Local": ["global", "device"],
    "rvgpu_kmd::reset::TdrLog": [
        "last_done", "last_rptr", "last_aborted", "engine_resets", "failed_resets",
        "adapter_resets", "invalidated",
    ],
};

// The standard library's inner fields this script reads (core::sync::atomic, core::cell):
// AtomicU64/AtomicU32/AtomicU8/AtomicBool hold `v: UnsafeCell<_>`, AtomicPtr `p`, UnsafeCell
// `value` (the NatVis in src/rvgpu.natvis reads them the same way).

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

/// The elements of a `Vec`, through the standard library's NatVis.
function vecItems(v) {
    const out = [];
    for (const e of v) {
        out.push(e);
    }
    return out;
}

/// `(key, value)` pairs of a driver `SortedMap`.
function mapEntries(m) {
    return vecItems(field(m, "rvgpu_kmd::kmem::SortedMap", "entries")).map(function (t) {
        return { key: t.__0, value: t.__1 };
    });
}

/// `Some(x)` → the text of x; `None` → null (from the display text of the Option).
function option(o) {
    const text = String(o);
    const m = /^Some\((.*)\)$/.exec(text);
    return m === null ? null : m[1];
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
        out.engines = config.engines;
        out.doorbells = config.doorbells;
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
    for (const a of selected(index)) {
        const l = live(a.object);
        if (l === null) {
            continue;
        }
        const s = sched(l);
        for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "queues"))) {
            const q = e.value;
            const T = "rvgpu_kmd::hwqueue::HwQueue";
            out.push({
                adapter: a.index,
                handle: String(e.key),
                osHandle: hex(field(q, T, "os_handle")),
                context: String(field(q, T, "context")),
                engine: field(q, T, "engine"),
                queueId: field(q, T, "id"),
                priority: field(q, T, "priority"),
                userMode: field(q, T, "user_mode"),
                progressFenceGpuVa: String(field(q, T, "progress_gpu")),
                doorbell: option(field(q, T, "doorbell")),
            });
        }
    }
    return out;
}

/// queue handle → { context, device } for the doorbells' owners.
function owners(s) {
    const contexts = {};
    for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "contexts"))) {
        contexts[String(e.key)] = String(field(e.value, "rvgpu_kmd::context::Context", "device"));
    }
    const byQueue = {};
    for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "queues"))) {
        const ctx = String(field(e.value, "rvgpu_kmd::hwqueue::HwQueue", "context"));
        byQueue[String(e.key)] = { context: ctx, device: contexts[ctx] || null };
    }
    return byQueue;
}

function doorbells(index) {
    const out = [];
    for (const a of selected(index)) {
        const l = live(a.object);
        if (l === null) {
            continue;
        }
        const s = sched(l);
        const own = owners(s);
        for (const e of mapEntries(field(s, "rvgpu_kmd::sched::Sched", "doorbells"))) {
            const d = e.value;
            const T = "rvgpu_kmd::doorbell::Doorbell";
            const queue = String(field(d, T, "queue"));
            const page = option(field(d, T, "physical"));
            const o = own[queue] || { context: null, device: null };
            out.push({
                adapter: a.index,
                handle: String(e.key),
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
                owner: option(field(slot, S, "owner")),
                connectStamp: field(slot, S, "stamp"),
                connectPending: field(slot, S, "pending"),
            });
        });
    }
    return out;
}

function fences(index) {
    const out = [];
    for (const a of selected(index)) {
        const l = live(a.object);
        if (l === null) {
            continue;
        }
        const table = locked(field(l, "rvgpu_kmd::adapter::Live", "fences"));
        const T = "rvgpu_kmd::fence::table::FenceTable";
        const F = "rvgpu_kmd::fence::table::Fence";
        const L = "rvgpu_kmd::fence::table::Local";
        const locals = mapEntries(field(table, T, "locals"));
        for (const e of mapEntries(field(table, T, "globals"))) {
            const f = e.value;
            const global = String(e.key);
            out.push({
                adapter: a.index,
                globalHandle: hex(e.key),
                reportTag: hex(field(f, F, "tag")),
                currentValueGpuVa: String(field(f, F, "current_gpu")),
                monitoredValueGpuVa: String(field(f, F, "monitored_gpu")),
                fenceType: field(f, F, "fence_type"),
                opens: field(f, F, "opens"),
                localHandles: locals
                    .filter(function (x) { return String(field(x.value, L, "global")) === global; })
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
    ];
}
