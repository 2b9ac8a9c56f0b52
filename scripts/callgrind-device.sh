#!/usr/bin/env bash
# Instructions the emulated device spends per doorbell pickup (ring, pick, decode and execute
# one PROGRESS) with 0 … N idle queues on the same engine ("flat with scale"),
# counted by callgrind over the whole program of device/benches/pick_callgrind.rs. Each figure
# comes from two runs, K and 2K pickups: (Ir(2K) - Ir(K)) / K, which cancels the setup (the
# runlist commit of the idle queues). Device cost only: no driver or OS is involved.
#
# Usage: bash scripts/callgrind-device.sh [K]     (K defaults to 1000)
# RVGPU_CALLGRIND_IDLE_SIZES overrides the idle-queue counts (default "0 64 1023 4094").
# Needs valgrind; without it, says so and exits 0.
set -euo pipefail

K="${1:-1000}"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "callgrind-device: valgrind is not installed; nothing measured."
    exit 0
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source "$ROOT/scripts/callgrind-lib.sh"

BIN="$(cargo bench --workspace --bench pick_callgrind --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*pick_callgrind[^"]*"' | tail -n 1 |
    sed 's/^"executable":"//; s/"$//')"
[ -x "$BIN" ] || { echo "callgrind-device: could not build the pick_callgrind bench" >&2; exit 1; }
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# total IDLE OPS: the program's whole instruction count.
total() {
    local f="$OUT/cg.$1.$2"
    RVGPU_CALLGRIND_IDLE="$1" RVGPU_CALLGRIND_OPS="$2" \
        valgrind --tool=callgrind --callgrind-out-file="$f" "$BIN" >/dev/null 2>&1
    awk '/^summary:/ { print $2 }' "$f"
}

echo "callgrind-device: $(valgrind --version), K=$K and 2K pickups per figure"
echo
echo "| idle queues on the engine | instructions per pickup | vs no idle queue |"
echo "|---:|---:|---:|"
FIRST=""
for N in ${RVGPU_CALLGRIND_IDLE_SIZES:-0 64 1023 4094}; do
    A="$(total "$N" "$K")"
    B="$(total "$N" "$((2 * K))")"
    P="$(awk -v a="$A" -v b="$B" -v k="$K" 'BEGIN { printf "%.0f", (b - a) / k }')"
    [ -z "$FIRST" ] && FIRST="$P"
    echo "| $N | $P | $(ratio "$P" "$FIRST") |"
done
