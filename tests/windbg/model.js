"use strict";
// Runs scripts/windbg/rvgpu.js (path in argv[2]) over a model of what WinDbg's data model hands
// a script for rvgpu.sys: one started adapter in slot 2 of the adapter table with a device, a
// context, two hardware queues, a connected and a disconnected doorbell, a native fence open
// twice and one engine reset recorded. Shapes follow the driver's structures (the field names
// are the ones tests/windbg_script.rs checks against driver/kmd/src) and the standard
// library's as the PDB lays them out (atomics hold `v`/`p` UnsafeCells; a `Vec` is a buffer
// pointer, a length and a type name, its elements typed objects in the target's memory;
// `Option` is an `enum2$` with a tag; newtypes and tuples have __0/__1). Exits non-zero on the
// first wrong answer.

const fs = require("fs");
const assert = require("assert");

const { Int64 } = require("./int64.js");

const at = (value) => ({ v: { value } });
const cellOf = (value) => ({ value });
const some = (x) => ({ tag: 1, variant1: { value: { __0: x } } });
const none = { tag: 0 };
const h = (n) => ({ __0: n });
const va = (n) => ({ __0: n });
const ptr = (address, target) => ({
    address: new Int64(address),
    isNull: address === 0,
    dereference: () => target,
});
const lock = (value) => ({ value: cellOf(value) });

// The target's memory: typed objects by (address, type), and the sizes of the types.
const memory = new Map();
const sizes = new Map();
let next = 0x100000;
function vec(elem, size, items) {
    sizes.set(elem, size);
    const base = next;
    next += 0x1000;
    items.forEach((item, i) => memory.set((base + i * size).toString(16) + "|" + elem, item));
    return {
        targetType: { name: "alloc::vec::Vec<" + elem + ",alloc::alloc::Global>" },
        buf: { inner: { ptr: { pointer: { pointer: ptr(base, null) } } } },
        len: items.length,
    };
}
// A `SortedMap`: its keys and its values in two vectors, in the same order (`size` is the
// value's).
const map = (k, v, size, pairs) => ({
    keys: vec(k, 8, pairs.map(([a]) => a)),
    values: vec(v, size, pairs.map(([, b]) => b)),
});
const H = "rvgpu_kmd::handle::Handle";

const sched = {
    devices: map(H, "rvgpu_kmd::context::Device", 32, [[h(0xD1), { os_handle: 0x100 }]]),
    contexts: map(H, "rvgpu_kmd::context::Context", 48, [[h(0xC1), { device: h(0xD1) }]]),
    queues: map(H, "rvgpu_kmd::hwqueue::HwQueue", 256, [
        [h(0x51), { os_handle: 0x300, context: h(0xC1), engine: 0, id: 5, priority: 2,
                    user_mode: true, progress_gpu: va(0x7000), doorbell: some(h(0xB1)) }],
        [h(0x52), { os_handle: 0x301, context: h(0xC1), engine: 0, id: 6, priority: 2,
                    user_mode: true, progress_gpu: va(0x7008), doorbell: some(h(0xB2)) }],
    ]),
    doorbells: map(H, "rvgpu_kmd::doorbell::Doorbell", 40, [
        [h(0xB1), { os_handle: 0x400, queue: h(0x51), physical: some(3), callbacks: 0 }],
        [h(0xB2), { os_handle: 0x401, queue: h(0x52), physical: none, callbacks: 1 }],
    ]),
    physical: {
        global: false,
        slots: vec("rvgpu_kmd::doorbell::Slot", 24, [0, 1, 2, 3].map((i) => ({
            owner: i === 3 ? some(h(0xB1)) : none, process: none, users: 0,
            stamp: i === 3 ? 9 : 0, pending: false,
        }))),
    },
};
const fences = {
    globals: map("usize", "rvgpu_kmd::fence::table::Fence", 40, [[0x10, {
        tag: 7, current_gpu: va(0x8000), monitored_gpu: va(0x8008), fence_type: 0, opens: 2 }]]),
    locals: map("usize", "rvgpu_kmd::fence::table::Local", 24, [
        [0x20, { global: 0x10, device: 0x30 }],
        [0x21, { global: 0x10, device: 0x31 }],
        [0x22, { global: 0x11, device: 0x31 }],
    ]),
};
const liveState = {
    identity: { config: { engines: 2, doorbells: 4 }, vram_size: new Int64(0x10000000) },
    sched: lock(sched),
    fences: lock(fences),
};
const none64 = new Int64(0xFFFFFFFF, 0xFFFFFFFF);
const done = Array.from({ length: 16 }, (_, e) => at(e === 1 ? new Int64(5, 1) : none64));
const adapter = {
    lifecycle: lock({ __0: { toString: () => "Started" }, __1: 1 }),
    live: { p: cellOf(ptr(0xA000, liveState)) },
    stats: { isr_claimed: at(10), isr_unclaimed: at(1), dpcs: at(10), overflows: at(0) },
    tdr: {
        last_done: done,
        last_rptr: Array.from({ length: 16 }, (_, e) => at(e === 1 ? 0x40 : 0)),
        last_aborted: Array.from({ length: 16 }, (_, e) => at(e === 1 ? 12 : 0)),
        engine_resets: at(1), failed_resets: at(0), adapter_resets: at(0), invalidated: at(1),
    },
};
const table = {
    slots: Array.from({ length: 16 }, (_, i) => ({
        ptr: { p: cellOf(ptr(i === 2 ? 0xB000 : i === 5 ? 1 : 0, null)) },
        readers: at(0),
    })),
};

let typed = [];
const host = {
    Int64,
    getModuleSymbol: (module, symbol) => {
        assert.strictEqual(module, "rvgpu");
        assert.strictEqual(symbol, "rvgpu_kmd::globals::ADAPTERS");
        return table;
    },
    createTypedObject: (address, module, type) => {
        assert.strictEqual(module, "rvgpu");
        const item = memory.get(address.toString(16) + "|" + type);
        if (item !== undefined) {
            return item;
        }
        typed.push([address.toString(16), module, type]);
        return adapter;
    },
    getModuleType: (module, type) => {
        assert.ok(sizes.has(type), "no type " + type);
        return { size: new Int64(sizes.get(type)) };
    },
    apiVersionSupport: function (major, minor) { this.v = [major, minor]; },
    functionAlias: function (f, name) { this.f = f; this.name = name; },
};

const text = fs.readFileSync(process.argv[2], "utf8");
const api = new Function("host", text +
    "\nreturn { all, adapters, queues, doorbells, fences, tdr, field, initializeScript };")(host);

// The aliases a tester types.
const names = api.initializeScript().filter((x) => x.name).map((x) => x.name).sort();
assert.deepStrictEqual(names, ["rvgpu", "rvgpu_adapters", "rvgpu_doorbells", "rvgpu_fences",
                               "rvgpu_queues", "rvgpu_tdr", "rvgpu_tdrdump"]);

// Adapters: only the published slot (not the free ones, not the one being claimed).
const ads = api.adapters();
assert.strictEqual(ads.length, 1);
assert.strictEqual(ads[0].index, 2);
// The type name as the PDB spells it (checked against a built rvgpu.pdb).
assert.deepStrictEqual(typed, [["b000", "rvgpu",
    "rvgpu_kmd::adapter::Adapter<enum2$<rvgpu::platform::windows::WinKernel> >"]]);
assert.strictEqual(ads[0].lifecycle, "Started");
assert.strictEqual(ads[0].started, true);
assert.strictEqual(ads[0].engines, 2);
assert.strictEqual(ads[0].hwQueues, 2);
assert.strictEqual(ads[0].doorbellObjects, 2);
assert.strictEqual(api.adapters(7).length, 0);

// Queues.
const qs = api.queues();
assert.deepStrictEqual(qs.map((q) => [q.handle, q.queueId, q.doorbell, q.progressFenceGpuVa]),
                       [["0x51", 5, "0xb1", "0x7000"], ["0x52", 6, "0xb2", "0x7008"]]);

// Doorbells: bound page, owner chain, state; then the physical pages.
const dbs = api.doorbells();
const b1 = dbs.find((d) => d.handle === "0xb1");
const b2 = dbs.find((d) => d.handle === "0xb2");
assert.deepStrictEqual([b1.boundPage, b1.state, b1.ownerQueue, b1.ownerContext, b1.ownerDevice],
                       [3, "connected", "0x51", "0xc1", "0xd1"]);
assert.deepStrictEqual([b2.boundPage, b2.state, b2.victimisationCallbacksInFlight],
                       [null, "disconnected", 1]);
const pages = dbs.filter((d) => d.physicalPage !== undefined);
assert.strictEqual(pages.length, 4);
assert.strictEqual(pages[3].owner, "0xb1");
assert.strictEqual(pages[0].owner, null);
assert.strictEqual(pages[3].ownerProcessId, null, "dedicated mode binds no process");

// Native fences with their local handles.
const fs_ = api.fences();
assert.strictEqual(fs_.length, 1);
assert.strictEqual(fs_[0].reportTag, "0x7");
assert.strictEqual(fs_[0].currentValueGpuVa, "0x8000");
assert.deepStrictEqual(fs_[0].localHandles, [{ local: "0x20", device: "0x30" },
                                              { local: "0x21", device: "0x31" }]);

// The last TDR record: engine 1 only (the others never reset).
const t = api.tdr()[0];
assert.strictEqual(t.engineResets, 1);
assert.strictEqual(t.lastResetPerEngine.length, 1);
assert.deepStrictEqual(t.lastResetPerEngine[0], { engine: 1, resetResult: 1, resetQueue: "0x5",
                                                  abortedReadPointer: "0x40", lastAbortedFenceId: 12 });

// A field the script did not declare is refused; a field the driver lost is reported.
assert.throws(() => api.field(adapter, "rvgpu_kmd::adapter::Adapter", "pdo"), /not in LAYOUT/);
delete adapter.tdr;
assert.throws(() => api.tdr(), /driver and script differ/);

console.log("rvgpu.js over the modelled driver: ok");
