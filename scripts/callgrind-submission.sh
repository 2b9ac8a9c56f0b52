#!/usr/bin/env bash
# Instructions per user-mode submission, per kernel-mode submission and per doorbell connect
# (issue 6, "Benchmarks"), counted by callgrind (repeatable: the same numbers on every run of
# the same build). Modelled on scripts/callgrind-fences.sh.
#
# Runs the bench binary simos/benches/ums_callgrind.rs under
#   valgrind --tool=callgrind --toggle-collect=<function>
# so that only instructions executed inside that function (inclusive: everything it calls) are
# counted. Each figure comes from two runs, K and 2K operations:
# (Ir(2K) - Ir(K)) / (n(2K) - n(K)), which cancels one-time costs (first call, lazy
# initialisation, queue creation, teardown).
#
# Functions (the workload's wrappers ums_callgrind::cg_* hold exactly the one UMD or thunk
# call: KernelQueue::submit is inlined into its caller and has no symbol of its own):
#   - cg_user_submit   = UserQueue::submit of one FILL: ring writes + doorbell store + status
#                        read (all user mode);
#   - cg_kernel_submit = KernelQueue::submit of the same FILL (baseline): the UMD's command
#                        buffer copy, D3DKMTSubmitCommandToHwQueue in the simulated OS, and the
#                        KMD's DxgkDdiSubmitCommandToHwQueue;
#   - rvgpu_kmd::ddi::submit_command_to_hw_queue = that KMD DDI alone;
#   - rvgpu_device's Core::rescan_queue = the emulated device's synchronous reload of the
#     queue's write pointer on the doorbell store (user mode) or QUEUE_KICK (kernel mode): one
#     call per submission in both paths, emulation rather than driver work (on hardware the
#     store is a posted MMIO write), so the script also gives both submissions without it;
#   - ums::DoorbellCpuState::ring = the doorbell store of the user-mode path (the simulated OS
#     mapping, dummy or physical page, then the device's doorbell handling);
#   - cg_connect       = D3DKMTConnectDoorbell (simulated OS + DxgkDdiConnectDoorbell, with the
#                        DxgkCbDisconnectDoorbell callback when it victimises), and
#     rvgpu_kmd::ddi::connect_doorbell = the KMD DDI alone (callback included), each with
#     64 queues on 1 physical doorbell (every connect victimises) and with a free physical
#     doorbell (baseline).
# The GPU is in step mode: it runs (outside the toggled functions) only between chunks of 128
# submissions, so the rings never fill and no submission waits.
#
# Usage: bash scripts/callgrind-submission.sh [K]     (K defaults to 1000)
# Needs valgrind (written against valgrind 3.19); without it, says so and exits 0.
set -euo pipefail

K="${1:-1000}"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "callgrind-submission: valgrind is not installed (needs valgrind with callgrind," \
        "tested with 3.19); nothing measured."
    exit 0
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

echo "callgrind-submission: $(valgrind --version), K=$K and 2K operations per figure"

BIN="$(cargo bench -p rvgpu-simos --bench ums_callgrind --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*ums_callgrind[^"]*"' | tail -n 1 | sed 's/^"executable":"//; s/"$//')"
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "callgrind-submission: could not build the ums_callgrind bench" >&2
    exit 1
fi

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# run MODE OPS FUNCTION COUNTER -> prints "<Ir> <count>" (COUNTER: submits|connects|ddi_calls)
run() {
    local mode="$1" ops="$2" func="$3" counter="$4" file line ir n
    file="$OUT/cg.$mode.$ops.$(echo "$func" | tr -c 'a-zA-Z0-9_' '_')"
    line="$(RVGPU_CALLGRIND_MODE="$mode" RVGPU_CALLGRIND_OPS="$ops" valgrind --tool=callgrind \
        --callgrind-out-file="$file" --toggle-collect="$func" "$BIN" 2>/dev/null)"
    ir="$(grep -m1 '^summary:' "$file" | awk '{print $2}')"
    n="$(echo "$line" | sed -n "s/.* $counter=\([0-9]*\).*/\1/p")"
    echo "${ir:-0} ${n:-0}"
}

# per MODE FUNCTION COUNTER -> instructions per operation (2 decimals)
per() {
    local mode="$1" func="$2" counter="$3" a b
    read -r -a a <<<"$(run "$mode" "$K" "$func" "$counter")"
    read -r -a b <<<"$(run "$mode" "$((2 * K))" "$func" "$counter")"
    awk -v i1="${a[0]}" -v i2="${b[0]}" -v c1="${a[1]}" -v c2="${b[1]}" \
        'BEGIN { if (c2 - c1 > 0) printf "%.2f", (i2 - i1) / (c2 - c1); else print "n/a" }'
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'
}

USER="$(per user 'ums_callgrind::cg_user_submit*' submits)"
KERNEL="$(per kernel 'ums_callgrind::cg_kernel_submit*' submits)"
KMD_SUBMIT="$(per kernel 'rvgpu_kmd::ddi::submit_command_to_hw_queue*' ddi_calls)"
DEV_USER="$(per user '*Core>::rescan_queue*' submits)"
DEV_KERNEL="$(per kernel '*Core>::rescan_queue*' submits)"
RING="$(per user '*DoorbellCpuState::ring*' submits)"
VICTIM="$(per victim 'ums_callgrind::cg_connect*' connects)"
FREE="$(per free 'ums_callgrind::cg_connect*' connects)"
KMD_VICTIM="$(per victim 'rvgpu_kmd::ddi::connect_doorbell*' ddi_calls)"
KMD_FREE="$(per free 'rvgpu_kmd::ddi::connect_doorbell*' ddi_calls)"

echo
echo "| operation | instructions per call |"
echo "|---|---:|"
echo "| UserQueue::submit, one FILL (ring + doorbell, user mode) | $USER |"
echo "| KernelQueue::submit, one FILL (UMD + simulated OS + KMD; baseline) | $KERNEL |"
echo "| of which DxgkDdiSubmitCommandToHwQueue (KMD DDI alone) | $KMD_SUBMIT |"
echo "| of UserQueue::submit: the doorbell store (OS mapping + emulated device) | $RING |"
echo "| of UserQueue::submit: the emulated device's write-pointer reload | $DEV_USER |"
echo "| of KernelQueue::submit: the emulated device's write-pointer reload (QUEUE_KICK) | $DEV_KERNEL |"
echo "| D3DKMTConnectDoorbell, victimising (64 queues on 1 physical doorbell) | $VICTIM |"
echo "| D3DKMTConnectDoorbell, free physical doorbell (baseline) | $FREE |"
echo "| DxgkDdiConnectDoorbell alone, victimising (callback included) | $KMD_VICTIM |"
echo "| DxgkDdiConnectDoorbell alone, free physical doorbell | $KMD_FREE |"
echo
echo "ratio user-mode / kernel-mode submission = $(ratio "$USER" "$KERNEL")"
USER_NODEV="$(awk -v a="$USER" -v b="$DEV_USER" 'BEGIN { printf "%.2f", a - b }')"
KERNEL_NODEV="$(awk -v a="$KERNEL" -v b="$DEV_KERNEL" 'BEGIN { printf "%.2f", a - b }')"
echo "without the device's reload: user-mode $USER_NODEV, kernel-mode $KERNEL_NODEV," \
    "ratio $(ratio "$USER_NODEV" "$KERNEL_NODEV")"
echo "ratio user-mode submission / KMD submit DDI alone = $(ratio "$USER" "$KMD_SUBMIT")"
echo "ratio victimising / free connect: thunk $(ratio "$VICTIM" "$FREE")," \
    "KMD DDI $(ratio "$KMD_VICTIM" "$KMD_FREE")"
