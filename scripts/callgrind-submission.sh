#!/usr/bin/env bash
# Instructions per user-mode submission, per kernel-mode submission and per doorbell connect
# ("Benchmarks"), counted by callgrind (repeatable: the same numbers on every run of
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
#   - rvgpu_kmd::thunk::submit::submit_command_to_hw_queue = that KMD DDI alone;
#   - cg_floor_submit  = the floor of cg_user_submit: the same ring words, the
#                        last-queued value, the write pointer, the same doorbell store and its
#                        status read, with no UMD logic;
#   - rvgpu_simos::kmt::process::charge_thunk_cost = the modelled system-call cost one thunk charges;
#   - the emulated device's share (the doorbell store, the KMD's MMIO traps) comes from the
#     split below rather than from a function of its own;
#   - cg_connect       = D3DKMTConnectDoorbell (simulated OS + DxgkDdiConnectDoorbell, with the
#                        DxgkCbDisconnectDoorbell callback when it victimises), and
#     rvgpu_kmd::thunk::doorbell::connect_doorbell = the KMD DDI alone (callback included), each with
#     64 queues on 1 physical doorbell (every connect victimises) and with a free physical
#     doorbell (baseline).
# The GPU is in step mode: it runs (outside the toggled functions) only between chunks of 128
# submissions, so the rings never fill and no submission waits.
#
# every figure is also split (scripts/callgrind-split.py, docs/performance.md) into
# the UMD's or KMD's own code, the emulated device (MMIO traps, the doorbell store) and the
# simulated OS (callbacks, thunks, the modelled system-call cost of OsConfig::thunk_cost);
# the user-mode submission is set against its floor (ums_callgrind's `floor` mode: the same
# stores and the same doorbell store), the kernel-mode one against its own (the modelled
# system call plus the DDI); a table shows a victimising connect from 32 to 4,030 queues
# (RVGPU_CALLGRIND_SCALE=0 skips it). Needs python3.
#
# Usage: bash scripts/callgrind-submission.sh [K]     (K defaults to 1000)
# Needs valgrind (written against valgrind 3.19); without it, says so and exits 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/callgrind-lib.sh"
callgrind_start callgrind-submission ums_callgrind "${1:-1000}"

# run MODE OPS FUNCTION COUNTER -> prints "<Ir> <driver> <device> <os> <platform> <count>"
# (COUNTER: submits|connects|ddi_calls; the split by scripts/callgrind-split.py)
run() {
    local mode="$1" ops="$2" func="$3" counter="$4" file line split n
    file="$OUT/cg.$mode.$ops.$(echo "$func $SCALE_ENV" | tr -c 'a-zA-Z0-9_' '_')"
    line="$(profile "$mode" "$ops" "$file" "$func")"
    split="$(python3 "$ROOT/scripts/callgrind-split.py" "$file" "$(root_re "$func")")"
    n="$(echo "$line" | sed -n "s/.* $counter=\([0-9]*\).*/\1/p")"
    echo "$split" | figures "${n:-0}"
}

# The toggle pattern as a regular expression for the split ("*" is a wildcard).
root_re() {
    printf '%s' "$1" | sed 's/[][().+?^$|\\{}]/\\&/g; s/\*/.*/g; s/^/^/'
}

# per MODE FUNCTION COUNTER -> "<total> <driver> <device> <os> <platform>" per operation
per() {
    k2k_of 5 run "$1" "$2" "$3"
}

SCALE_ENV=""
read -r -a USER <<<"$(per user 'ums_callgrind::cg_user_submit*' submits)"
read -r -a FLOOR <<<"$(per floor 'ums_callgrind::cg_floor_submit*' submits)"
read -r -a KERNEL <<<"$(per kernel 'ums_callgrind::cg_kernel_submit*' submits)"
read -r -a KMD_SUBMIT <<<"$(per kernel 'rvgpu_kmd::thunk::submit::submit_command_to_hw_queue*' ddi_calls)"
read -r -a THUNK_COST <<<"$(per kernel 'rvgpu_simos::kmt::process::charge_thunk_cost*' submits)"
read -r -a VICTIM <<<"$(per victim 'ums_callgrind::cg_connect*' connects)"
read -r -a FREE <<<"$(per free 'ums_callgrind::cg_connect*' connects)"
read -r -a KMD_VICTIM <<<"$(per victim 'rvgpu_kmd::thunk::doorbell::connect_doorbell*' ddi_calls)"
read -r -a KMD_FREE <<<"$(per free 'rvgpu_kmd::thunk::doorbell::connect_doorbell*' ddi_calls)"

echo
echo "Instructions per operation; own = the UMD's or KMD's own code (with what it inlines),"
echo "device = emulated MMIO traps and doorbell store, OS = simulated Dxgkrnl (callbacks,"
echo "thunks, the modelled system-call cost) without the driver code it calls back."
echo
echo "| operation | total | own | device | OS | platform |"
echo "|---|---:|---:|---:|---:|---:|"
row "UserQueue::submit, one FILL (user mode)" "${USER[*]}"
row "floor: the same stores + the same doorbell store" "${FLOOR[*]}"
row "KernelQueue::submit, one FILL (UMD + thunk + KMD)" "${KERNEL[*]}"
row "of which DxgkDdiSubmitCommandToHwQueue" "${KMD_SUBMIT[*]}"
row "of which the modelled system call + thunk cost" "${THUNK_COST[*]}"
row "D3DKMTConnectDoorbell, victimising (64 queues, 1 doorbell)" "${VICTIM[*]}"
row "D3DKMTConnectDoorbell, free doorbell" "${FREE[*]}"
row "DxgkDdiConnectDoorbell, victimising" "${KMD_VICTIM[*]}"
row "DxgkDdiConnectDoorbell, free doorbell" "${KMD_FREE[*]}"
echo
UMD_KERNEL_OWN=$((KERNEL[1] - KMD_SUBMIT[1]))
KERNEL_FLOOR=$((THUNK_COST[0] + KMD_SUBMIT[0]))
echo "the UMD's own share: user mode ${USER[1]}, kernel mode $UMD_KERNEL_OWN"
echo "ratio UMD's own share (user mode) / bare stores = $(ratio "${USER[1]}" "${FLOOR[1]}")"
echo "ratio user-mode submission / its floor = $(ratio "${USER[0]}" "${FLOOR[0]}")"
echo "ratio kernel-mode submission / its floor (modelled system call + DDI," \
    "$KERNEL_FLOOR) = $(ratio "${KERNEL[0]}" "$KERNEL_FLOOR")"
echo "ratio user-mode / kernel-mode submission = $(ratio "${USER[0]}" "${KERNEL[0]}")"
echo "ratio floor / floor (user-mode floor / kernel-mode floor) = $(ratio "${FLOOR[0]}" "$KERNEL_FLOOR")"
echo "ratio victimising / free connect: thunk $(ratio "${VICTIM[0]}" "${FREE[0]}")," \
    "KMD DDI own $(ratio "${KMD_VICTIM[1]}" "${KMD_FREE[1]}")"

# run2 MODE OPS -> two lines as `run` prints them, from one run toggled on cg_connect: the
# whole connect, then DxgkDdiConnectDoorbell inside it (the split of the same profile from
# that root; its calls there are exactly the counted connects, so both divide by `connects`).
run2() {
    local mode="$1" ops="$2" file line n root
    file="$OUT/cg2.$mode.$ops.$(echo "$SCALE_ENV" | tr -c 'a-zA-Z0-9_' '_')"
    line="$(profile "$mode" "$ops" "$file" 'ums_callgrind::cg_connect*')"
    n="$(echo "$line" | sed -n "s/.* connects=\([0-9]*\).*/\1/p")"
    for root in 'ums_callgrind::cg_connect*' 'rvgpu_kmd::thunk::doorbell::connect_doorbell*'; do
        python3 "$ROOT/scripts/callgrind-split.py" "$file" "$(root_re "$root")" \
            $([ "$root" = 'ums_callgrind::cg_connect*' ] || echo --within) | figures "${n:-0}"
    done
}

# Flat with scale: a victimising connect with 32 … 4,030 queues on 16 physical
# doorbells, all on engine 0 (4,030: the most one process may hold, the adapter's 4,096 queue
# ids less the two engines' node rings and the 64 the driver keeps for other processes,
# driver/kmd/src/quota.rs). Setting up N queues is O(N) on the device since runlist updates (it was
# O(N²): every creation committed the whole runlist, about half an hour under callgrind for
# 4,095); one callgrind run per K gives both columns. RVGPU_CALLGRIND_QUEUE_SIZES for
# another list.
if [ "${RVGPU_CALLGRIND_SCALE:-1}" != 0 ]; then
    echo
    echo "| queues on 16 doorbells | D3DKMTConnectDoorbell, victimising | own / device / OS | DxgkDdiConnectDoorbell | own / device / OS | vs the first row (whole connect) |"
    echo "|---:|---:|---:|---:|---:|---:|"
    FIRST=""
    for Q in ${RVGPU_CALLGRIND_QUEUE_SIZES:-32 128 512 1024 2048 4030}; do
        SCALE_ENV="RVGPU_CALLGRIND_QUEUES=$Q RVGPU_CALLGRIND_DOORBELLS=16"
        mapfile -t A < <(run2 victim "$K")
        mapfile -t B < <(run2 victim "$((2 * K))")
        read -r -a C <<<"$(k2k "${A[0]}" "${B[0]}" 5)"
        read -r -a D <<<"$(k2k "${A[1]}" "${B[1]}" 5)"
        [ -z "$FIRST" ] && FIRST="${C[0]}"
        echo "| $Q | ${C[0]} | ${C[1]} / ${C[2]} / ${C[3]} | ${D[0]} | ${D[1]} / ${D[2]} / ${D[3]} | $(ratio "${C[0]}" "$FIRST") |"
    done
fi
