#!/usr/bin/env bash
# Instructions rvgpu.sys itself executes per DDI call on the hot paths, counted in
# the x86-64 emulator the simulated OS runs the image in (RVGPU_PE_COUNT=1: a hook on every
# instruction of the image; what the image's routines call in the simulated OS is not
# counted, nor are the emulator's own instructions). Counts are exact and repeatable.
#
# The workloads are the callgrind benches' (simos/benches/fence_callgrind.rs: a CPU wait and a
# GPU signal per round, so one ISR, one DPC and two UpdateMonitoredValues per signal;
# simos/benches/ums_callgrind.rs `kernel`: one SubmitCommandToHwQueue per submission, `victim`:
# one ConnectDoorbell per connect), run on the PE image. Each figure is
# (instructions(2K) - instructions(K)) / (calls(2K) - calls(K)), which cancels one-time costs.
# The Linux build's figures (driver's own code, callgrind) are docs/performance.md's.
#
# Usage: bash scripts/pe-instructions.sh [K]     (K defaults to 200)
set -euo pipefail

K="${1:-200}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source "$ROOT/scripts/callgrind-lib.sh"

# counts BENCH MODE K: the per-DDI table the run prints at exit, as "DDI calls instructions".
counts() {
    local bin
    bin="$(bench_bin "$1")"
    RVGPU_DRIVER=pe RVGPU_PE_COUNT=1 RVGPU_CALLGRIND_MODE="$2" RVGPU_CALLGRIND_OPS="$3" \
        "$bin" 2>&1 >/dev/null |
        awk '/calls .* instructions\/call/ { print $1, $2, $2 * $4 }'
}

# per_call TABLE_K TABLE_2K DDI
per_call() {
    awk -v ddi="$3" 'NR == FNR { if ($1 == ddi) { c1 = $2; i1 = $3 } next }
        $1 == ddi { c2 = $2; i2 = $3 }
        END { n = c2 - c1; if (n > 0) printf "%.0f", (i2 - i1) / n; else printf "n/a" }' \
        <(echo "$1") <(echo "$2")
}

K2=$((K * 2))
# Two runs at once, one per processor (the emulator counts instructions, not time); the bench
# binaries are built before, so the two never build at once.
bench_bin fence_callgrind >/dev/null
bench_bin ums_callgrind >/dev/null
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
both() {
    counts "$1" "$2" "$K" >"$OUT/k" &
    counts "$1" "$2" "$K2" >"$OUT/2k"
    wait "$!"
}
both fence_callgrind native
fence_k="$(cat "$OUT/k")" fence_2k="$(cat "$OUT/2k")"
both ums_callgrind kernel
kernel_k="$(cat "$OUT/k")" kernel_2k="$(cat "$OUT/2k")"
both ums_callgrind victim
victim_k="$(cat "$OUT/k")" victim_2k="$(cat "$OUT/2k")"

echo "rvgpu.sys instructions per call (emulator count, K=$K and 2K):"
printf "  %-34s %s\n" \
    "DxgkDdiInterruptRoutine (signal)" "$(per_call "$fence_k" "$fence_2k" DxgkDdiInterruptRoutine)" \
    "DxgkDdiDpcRoutine (signal)" "$(per_call "$fence_k" "$fence_2k" DxgkDdiDpcRoutine)" \
    "DxgkDdiUpdateMonitoredValues" "$(per_call "$fence_k" "$fence_2k" DxgkDdiUpdateMonitoredValues)" \
    "DxgkDdiSubmitCommandToHwQueue" "$(per_call "$kernel_k" "$kernel_2k" DxgkDdiSubmitCommandToHwQueue)" \
    "DxgkDdiConnectDoorbell (victimising)" "$(per_call "$victim_k" "$victim_2k" DxgkDdiConnectDoorbell)"
