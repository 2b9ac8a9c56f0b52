"use strict";
// Runs `!rvgpu_tdrdump` of scripts/windbg/rvgpu.js (path in argv[2]) over dump bytes (hex in
// argv[3]) placed in a modelled target's memory at 0xFFFF800012340000, as WinDbg's JsProvider
// would: `host.memory.readMemoryValues` over those bytes only (reading past them throws, as
// unreadable memory does), `host.diagnostics.debugLog` to stdout. argv[4], when given, is the
// N the tester passes (bytes of the record present). Exits non-zero if the script throws.

const fs = require("fs");

class Int64 {
    constructor(lo, hi) {
        this.v = hi === undefined ? BigInt(lo) : (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
    }
    compareTo(o) {
        const b = o instanceof Int64 ? o.v : BigInt(o);
        return this.v < b ? -1 : this.v > b ? 1 : 0;
    }
    getLowPart() { return Number(this.v & 0xFFFFFFFFn); }
    getHighPart() { return Number(this.v >> 32n); }
    add(n) { return new Int64(this.v + BigInt(n)); }
    asNumber() { return Number(this.v); }
    toString(radix) { return this.v.toString(radix); }
}

const BASE = 0xFFFF800012340000n;
const bytes = Buffer.from(process.argv[3], "hex");
const host = {
    Int64,
    memory: {
        readMemoryValues: (location, count, size) => {
            if (size !== 1) {
                throw new Error("the model reads bytes only");
            }
            const at = Number(location.v - BASE);
            if (at < 0 || at + count > bytes.length) {
                throw new Error("memory at " + location.toString(16) + " is not readable");
            }
            return Array.from(bytes.subarray(at, at + count));
        },
    },
    diagnostics: { debugLog: (s) => process.stdout.write(s) },
    apiVersionSupport: function () {},
    functionAlias: function () {},
};

const text = fs.readFileSync(process.argv[2], "utf8");
const api = new Function("host", text + "\nreturn { tdrDump };")(host);
const n = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
api.tdrDump(new Int64(BASE), n);
