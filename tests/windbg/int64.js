"use strict";
// WinDbg's host.Int64 as the JsProvider documents it, over a BigInt: what the script's
// arithmetic and comparisons on 64-bit values call. Shared by the modelled debuggers here.

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

module.exports = { Int64 };
