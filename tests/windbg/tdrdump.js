"use strict";
// Runs `!rvgpu_tdrdump` of scripts/windbg/rvgpu.js (path in argv[2]) over dump bytes (hex in
// argv[3]) placed in a modelled target's memory at 0xFFFF800012340000, as WinDbg's JsProvider
// would: `host.memory.readMemoryValues` over those bytes only (reading past them throws, as
// unreadable memory does), `host.diagnostics.debugLog` to stdout. argv[4], when given, is the
// N the tester passes (bytes of the record present). Exits non-zero if the script throws.

const fs = require("fs");

const { Int64 } = require("./int64.js");

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
