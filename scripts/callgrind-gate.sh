#!/usr/bin/env bash
# Instruction-count regression gate: runs scripts/callgrind-submission.sh (K = 50, the K
# docs/performance.md's Submission section states), scripts/callgrind-fences.sh (K = 200; both
# with the scaling tables off) and scripts/pe-instructions.sh (K = 200)
# (rvgpu.sys's own count per DDI in the emulator: ISR, DPC, UpdateMonitoredValues,
# SubmitCommandToHwQueue, ConnectDoorbell), counts rvgpu_umd.dll's own instructions per
# rvgpu_submit, rvgpu_queue_submit and rvgpu_fence_signal in the emulator, and compares the total and own
# (driver or UMD) instruction counts of every row with the committed baseline
# scripts/callgrind-baseline.txt. Fails when a figure grew by more than 10 %, or when a
# submission path exceeds its goal against its floor (GOALS below); a
# figure that shrank by more than 10 % is reported, so the baseline can be re-blessed to keep
# the gain.
#
# Counts are exact for a given build (pinned toolchain, release profile), so the tolerance is
# for code changes, not noise.
#
# Bus accesses too: simos/tests/bus_cost.rs counts, per hot path, the register
# reads (non-posted: a PCIe round trip each) and posted writes the device model saw; the
# baseline's `bus|` rows hold them. A path that gains any read per call fails, as does one whose
# posted writes grow by more than 10 %.
#
# Usage: bash scripts/callgrind-gate.sh            compare (exit 1 on a regression)
#        bash scripts/callgrind-gate.sh --bless    rewrite the baseline from this build
# Needs valgrind and python3; without valgrind, says so and exits 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASELINE="$ROOT/scripts/callgrind-baseline.txt"
K=200
# The submission rows at the K the documents give them for (docs/performance.md, README).
SUBMISSION_K=50
if ! command -v valgrind >/dev/null 2>&1; then
    echo "callgrind-gate: valgrind is not installed; nothing measured."
    exit 0
fi

CURRENT="$(mktemp)"
trap 'rm -f "$CURRENT"' EXIT
# "label|total|own" for every table row with numbers.
for s in "callgrind-submission.sh $SUBMISSION_K" "callgrind-fences.sh $K"; do
    read -r script k <<<"$s"
    RVGPU_CALLGRIND_SCALE=0 bash "$ROOT/scripts/$script" "$k" |
        awk -F'|' '/^\| / && $3 ~ /^ *[0-9-]+ *$/ {
            gsub(/^ +| +$/, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4)
            print $2 "|" $3 "|" $4 }'
done >"$CURRENT"
# "rvgpu.sys: DDI|n|n" per call: the shipped image's own instructions in the x86-64 emulator
# (scripts/pe-instructions.sh, exact for a build), so the image's hot paths are gated too.
bash "$ROOT/scripts/pe-instructions.sh" "$K" |
    awk '/^  Dxgk/ && $NF ~ /^[0-9]+$/ { n = $NF; sub(/ +[0-9]+$/, ""); sub(/^ +/, ""); print "rvgpu.sys: " $0 "|" n "|" n }' \
    >>"$CURRENT"
# The test binaries below are the test command's (--workspace: see bench_bin in callgrind-lib.sh).
# "rvgpu_umd.dll: call|n|n" per call: the shipped DLL's own instructions in the emulator
# (simos/tests/pe_umd.rs `dll_instructions`, exact for a build), beside the Rust UMD's rows.
(cd "$ROOT" && RVGPU_PE_COUNT=1 cargo test -q --workspace --test pe_umd -- --ignored \
    --nocapture dll_instructions) 2>/dev/null |
    awk '/^rvgpu_umd.dll: [0-9.]+ instructions per / {
        n = sprintf("%.0f", $2); sub(/^rvgpu_umd.dll: [0-9.]+ instructions per /, "")
        print "rvgpu_umd.dll: " $0 "|" n "|" n }' >>"$CURRENT"
# "bus|path|reads|writes" per call, from the device model's counts (not from callgrind).
(cd "$ROOT" && RVGPU_BUS_GATE=1 cargo test -q --workspace --test bus_cost -- --nocapture \
    bus_cost_of_each_hot_path) | grep '^bus|' >>"$CURRENT"

if [ "${1:-}" = --bless ]; then
    {
        echo "# Instruction counts per operation (label|total|own): the submission and connect rows"
        echo "# at K=$SUBMISSION_K (callgrind-submission.sh $SUBMISSION_K), the rest at K=$K; written by"
        echo "# scripts/callgrind-gate.sh --bless. The gate fails on > 10 % growth; bus|path|reads|writes"
        echo "# rows (per call, simos/tests/bus_cost.rs) fail on any added read or > 10 % more writes."
        cat "$CURRENT"
    } >"$BASELINE"
    echo "callgrind-gate: baseline written ($(wc -l <"$CURRENT") rows)"
    exit 0
fi

python3 - "$BASELINE" "$CURRENT" <<'EOF'
import sys

def rows(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        f = line.rstrip("\n").split("|")
        if f[0] == "bus":
            out["bus|" + f[1]] = (float(f[2]), float(f[3]))
        else:
            out[f[0]] = (int(f[1]), int(f[2]))
    return out

base, cur = rows(sys.argv[1]), rows(sys.argv[2])
failed = False
for label, (bt, bo) in base.items():
    if label not in cur:
        print(f"MISSING  {label}: not measured any more")
        failed = True
        continue
    if label.startswith("bus|"):
        (br, bw), (cr, cw) = (bt, bo), cur[label]
        mark = "ok"
        if cr > br + 1e-9:
            mark, failed = "READS", True
        elif bw > 0 and cw / bw > 1.10:
            mark, failed = "GREW", True
        elif cr < br or (bw > 0 and cw / bw < 0.90):
            mark = "shrank (re-bless to keep the gain)"
        print(f"{mark:8} {label[4:]} [register reads, posted writes per call]: "
              f"{br:g}, {bw:g} -> {cr:g}, {cw:g}")
        continue
    for what, b, c in (("total", bt, cur[label][0]), ("own", bo, cur[label][1])):
        if b <= 0:
            continue
        r = c / b
        mark = "ok"
        if r > 1.10:
            mark, failed = "GREW", True
        elif r < 0.90:
            mark = "shrank (re-bless to keep the gain)"
        print(f"{mark:8} {label} [{what}]: {b} -> {c} ({r:.2f}x)")
for label in cur.keys() - base.keys():
    print(f"NEW      {label}: {cur[label]} (not in the baseline; re-bless)")
# Each submission path against its floor, held at its goal (docs/performance.md, Submission):
# the kernel-mode one against the modelled system call and the DDI; the user-mode one against
# the same stores and doorbell store, whole and the UMD's own share.
KERNEL, DDI, CALL = ("KernelQueue::submit, one FILL (UMD + thunk + KMD)",
                     "of which DxgkDdiSubmitCommandToHwQueue",
                     "of which the modelled system call + thunk cost")
USER, FLOOR = ("UserQueue::submit, one FILL (user mode)",
               "floor: the same stores + the same doorbell store")
GOALS = (
    ("kernel-mode submission / its floor", 1.30,
     lambda c: (c[KERNEL][0], c[DDI][0] + c[CALL][0])),
    ("user-mode submission / its floor", 1.05, lambda c: (c[USER][0], c[FLOOR][0])),
    ("the UMD's own share / the floor's", 1.20, lambda c: (c[USER][1], c[FLOOR][1])),
)
for what, goal, parts in GOALS:
    try:
        whole, floor = parts(cur)
    except KeyError as e:
        print(f"MISSING  {what}: no row {e}")
        failed = True
        continue
    r = whole / floor if floor > 0 else float("inf")
    mark = "ok" if r <= goal else "GREW"
    failed = failed or mark != "ok"
    print(f"{mark:8} {what}: {r:.2f} (at most {goal})")
sys.exit(1 if failed else 0)
EOF
