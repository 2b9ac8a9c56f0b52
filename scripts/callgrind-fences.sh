#!/usr/bin/env bash
# Instructions per DxgkDdiUpdateMonitoredValues call and per ISR (issue 4, "Benchmarks"),
# counted by callgrind (repeatable: the same numbers on every run of the same build).
#
# Runs the bench binary simos/benches/fence_callgrind.rs under
#   valgrind --tool=callgrind --toggle-collect='rvgpu_kmd::ddi::<function>*'
# so that only instructions executed inside the driver's DDI (inclusive: everything it calls,
# the OS callbacks it makes included) are counted. Each figure comes from two runs, K and 2K
# operations: (Ir(2K) - Ir(K)) / (calls(2K) - calls(K)), which cancels one-time costs (first
# call, lazy initialisation). Baseline in the same run: the ISR of a legacy monitored-fence
# signal (SIGNAL_ALWAYS_IRQ, one MONITORED_FENCE_SIGNALED event) on an adapter without native
# fences.
#
# Usage: bash scripts/callgrind-fences.sh [K]     (K defaults to 1000)
# Needs valgrind (written against valgrind 3.19); without it, says so and exits 0.
set -euo pipefail

K="${1:-1000}"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "callgrind-fences: valgrind is not installed (needs valgrind with callgrind, tested" \
        "with 3.19); nothing measured."
    exit 0
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

echo "callgrind-fences: $(valgrind --version), K=$K and 2K operations per figure"

BIN="$(cargo bench -p rvgpu-simos --bench fence_callgrind --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*fence_callgrind[^"]*"' | tail -n 1 | sed 's/^"executable":"//; s/"$//')"
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "callgrind-fences: could not build the fence_callgrind bench" >&2
    exit 1
fi

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# run MODE OPS FUNCTION -> prints "<Ir> <umv_calls> <isr_calls>"
run() {
    local mode="$1" ops="$2" func="$3" file="$OUT/cg.$1.$2.$3" line
    line="$(RVGPU_CALLGRIND_MODE="$mode" RVGPU_CALLGRIND_OPS="$ops" valgrind --tool=callgrind \
        --callgrind-out-file="$file" --toggle-collect="rvgpu_kmd::ddi::${func}*" "$BIN" 2>/dev/null)"
    local ir umv isr
    ir="$(grep -m1 '^summary:' "$file" | awk '{print $2}')"
    umv="$(echo "$line" | sed -n 's/.*umv_calls=\([0-9]*\).*/\1/p')"
    isr="$(echo "$line" | sed -n 's/.*isr_calls=\([0-9]*\).*/\1/p')"
    echo "${ir:-0} ${umv:-0} ${isr:-0}"
}

# per MODE FUNCTION WHICH(umv|isr) -> instructions per call (2 decimals)
per() {
    local mode="$1" func="$2" which="$3" a b
    read -r -a a <<<"$(run "$mode" "$K" "$func")"
    read -r -a b <<<"$(run "$mode" "$((2 * K))" "$func")"
    local idx=1
    [ "$which" = isr ] && idx=2
    awk -v i1="${a[0]}" -v i2="${b[0]}" -v c1="${a[$idx]}" -v c2="${b[$idx]}" \
        'BEGIN { if (c2 - c1 > 0) printf "%.2f", (i2 - i1) / (c2 - c1); else print "n/a" }'
}

UMV="$(per native update_monitored_values umv)"
ISR="$(per native interrupt_routine isr)"
LEGACY_ISR="$(per legacy interrupt_routine isr)"
RATIO="$(awk -v a="$ISR" -v b="$LEGACY_ISR" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')"

echo
echo "| driver function | instructions per call |"
echo "|---|---:|"
echo "| DxgkDdiUpdateMonitoredValues (one fence) | $UMV |"
echo "| DxgkDdiInterruptRoutine, native fence signal (one event) | $ISR |"
echo "| DxgkDdiInterruptRoutine, legacy monitored-fence signal (baseline) | $LEGACY_ISR |"
echo
echo "ratio native-fence ISR / legacy ISR = $RATIO"
