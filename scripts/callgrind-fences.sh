#!/usr/bin/env bash
# Instructions per DxgkDdiUpdateMonitoredValues call and per ISR ("Benchmarks"),
# counted by callgrind (repeatable: the same numbers on every run of the same build).
#
# Runs the bench binary simos/benches/fence_callgrind.rs under
#   valgrind --tool=callgrind --toggle-collect='rvgpu_kmd::thunk::<function>*'
# so that only instructions executed inside the driver's DDI (inclusive: everything it calls,
# the OS callbacks it makes included) are counted; scripts/callgrind-split.py then splits each
# profile into the driver's own code, the emulated device's MMIO traps and the simulated OS's
# callbacks (docs/performance.md). Needs python3. Each figure comes from two runs, K and 2K
# operations: (Ir(2K) - Ir(K)) / (calls(2K) - calls(K)), which cancels one-time costs (first
# call, lazy initialisation). Baseline in the same run: the ISR of a legacy monitored-fence
# signal (SIGNAL_ALWAYS_IRQ, one MONITORED_FENCE_SIGNALED event) on an adapter without native
# fences.
#
# A second table repeats the native figures with 1,000 and 100,000 native fences on the adapter,
# and adds VidSch's DPC-time work for a NULL native-fence report (the bench's `null` mode, which
# counts rvgpu_simos::sync::fence::dpc::process_dpc_work: the simulated OS, not the driver)
# (RVGPU_CALLGRIND_SCALE=0 skips it; RVGPU_CALLGRIND_SCALE_FENCES="1000 100000" is the default
# list of fence counts).
#
# Usage: bash scripts/callgrind-fences.sh [K]     (K defaults to 1000)
# Needs valgrind (written against valgrind 3.19); without it, says so and exits 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/callgrind-lib.sh"
callgrind_start callgrind-fences fence_callgrind "${1:-1000}"

# run MODE OPS FUNCTION -> prints
# "<Ir> <driver> <device> <os> <platform> <umv_calls> <isr_calls> <null_calls>"
# (the split by scripts/callgrind-split.py). FUNCTION is a DDI thunk of rvgpu_kmd::thunk
# (`group::thunk`), or a full path (starting with "rvgpu").
run() {
    local mode="$1" ops="$2" func="$3" sym line split umv isr null
    local file="$OUT/cg.$1.$2.${3//:/_}.${SCALE_ENV#*=}"
    sym="rvgpu_kmd::thunk::${func}"
    [[ "$func" == rvgpu* ]] && sym="$func"
    line="$(profile "$mode" "$ops" "$file" "${sym}*")"
    split="$(python3 "$ROOT/scripts/callgrind-split.py" "$file" "^${sym}")"
    umv="$(echo "$line" | sed -n 's/.*umv_calls=\([0-9]*\).*/\1/p')"
    isr="$(echo "$line" | sed -n 's/.*isr_calls=\([0-9]*\).*/\1/p')"
    null="$(echo "$line" | sed -n 's/.*null_calls=\([0-9]*\).*/\1/p')"
    echo "$split" | figures "${umv:-0} ${isr:-0} ${null:-0}"
}

# per MODE FUNCTION WHICH(umv|isr|null) -> "<total> <driver> <device> <os> <platform>" per call
per() {
    local idx=5
    [ "$3" = isr ] && idx=6
    [ "$3" = null ] && idx=7
    k2k_of "$idx" run "$1" "$2"
}

NULL_FN="rvgpu_simos::sync::fence::dpc::process_dpc_work"
SCALE_ENV=""
read -r -a UMV <<<"$(per native fence::update_monitored_values umv)"
read -r -a ISR <<<"$(per native adapter::interrupt_routine isr)"
read -r -a LEGACY_ISR <<<"$(per legacy adapter::interrupt_routine isr)"

echo
echo "Instructions per call; driver = the KMD's own code (with what it inlines), device ="
echo "emulated MMIO traps, OS = Dxgkrnl callbacks the driver makes (simulated)."
echo
echo "| driver function | total | driver | device | OS | platform |"
echo "|---|---:|---:|---:|---:|---:|"
row "DxgkDdiUpdateMonitoredValues (one fence)" "${UMV[*]}"
row "DxgkDdiInterruptRoutine, native fence signal (one event)" "${ISR[*]}"
row "DxgkDdiInterruptRoutine, legacy monitored-fence signal (baseline)" "${LEGACY_ISR[*]}"
echo
echo "ratio native-fence ISR / legacy ISR: total $(ratio "${ISR[0]}" "${LEGACY_ISR[0]}")," \
    "driver only $(ratio "${ISR[1]}" "${LEGACY_ISR[1]}")"

# what VidSch does at DPC time for a NULL native-fence report, with 1,000 fences on
# the adapter and one of them waited on (the bench's null mode). All of it is simulated OS
# (the driver's share is the UpdateMonitoredValues re-arm inside it), so both columns are the
# total; a NULL report that scanned every fence again would cost ~900 instructions per fence.
SCALE_ENV="RVGPU_CALLGRIND_FENCES=999"
read -r -a NULLR <<<"$(per null "$NULL_FN" null)"
SCALE_ENV=""
echo
echo "| simulated OS path (not driver code) | total | OS (all of it) |"
echo "|---|---:|---:|"
echo "| VidSch DPC-time fence work per NULL native-fence report (1,000 fences, 1 waited) | ${NULLR[0]} | ${NULLR[0]} |"

# Teardown flat with scale: N native fences of one process destroyed oldest first (the bench's
# destroy mode), instructions per destroy inside Machine::destroy_native_fence (the simulated
# OS's close and destroy with the KMD's DDIs in them) and the KMD's share (its DDI entry
# rvgpu_kmd::thunk::contract::on_args, inclusive). Always measured: the gate holds both rows,
# and this fails when a destroy at 80,000 fences costs more than 1.2x one at 10,000.
DESTROY_FN='rvgpu_simos::machine::api::fences::<impl rvgpu_simos::machine::Machine>::destroy_native_fence'
destroy_per() { # N -> "<total per destroy> <KMD per destroy>"
    local file="$OUT/cg.destroy.$1" all kmd
    profile destroy "$1" "$file" '*Machine*destroy_native_fence*' >/dev/null
    all="$(python3 "$ROOT/scripts/callgrind-split.py" "$file" "^${DESTROY_FN}\$" | figures 0)"
    kmd="$(python3 "$ROOT/scripts/callgrind-split.py" "$file" '^rvgpu_kmd::thunk::contract::on_args' --within |
        figures 0)"
    awk -v n="$1" -v a="${all%% *}" -v k="${kmd%% *}" 'BEGIN { printf "%.0f %.0f\n", a / n, k / n }'
}
read -r -a D1 <<<"$(destroy_per 10000)"
read -r -a D8 <<<"$(destroy_per 80000)"
echo
echo "| native-fence teardown, oldest first | per destroy | KMD |"
echo "|---|---:|---:|"
echo "| native-fence destroy among 10,000 fences | ${D1[0]} | ${D1[1]} |"
echo "| native-fence destroy among 80,000 fences | ${D8[0]} | ${D8[1]} |"
echo
echo "ratio 80,000 / 10,000 fences (goal <= 1.2): total $(ratio "${D8[0]}" "${D1[0]}"), KMD $(ratio "${D8[1]}" "${D1[1]}")"
for pair in "${D8[0]} ${D1[0]}" "${D8[1]} ${D1[1]}"; do
    if ! awk -v p="$pair" 'BEGIN { split(p, v, " "); exit !(v[2] > 0 && v[1] / v[2] <= 1.2) }'; then
        echo "callgrind-fences: a native-fence destroy grows with the fence count (> 1.2x)" >&2
        exit 1
    fi
done

# Flat with scale: the same figures with idle native fences beside the measured one.
# The adapter's limit is 1,048,576 fences (the KMD's registry directory, MAX_FENCES); creating
# 100,000 fences is set-up, outside the counted functions, and cancels in K/2K.
if [ "${RVGPU_CALLGRIND_SCALE:-1}" != 0 ]; then
    echo
    echo "| native fences on the adapter | UpdateMonitoredValues total | driver | ISR total | driver | NULL report, DPC-time fence work (OS) |"
    echo "|---:|---:|---:|---:|---:|---:|"
    FIRST=()
    for N in ${RVGPU_CALLGRIND_SCALE_FENCES:-1000 100000}; do
        SCALE_ENV="RVGPU_CALLGRIND_FENCES=$((N - 1))"
        read -r -a U <<<"$(per native fence::update_monitored_values umv)"
        read -r -a I <<<"$(per native adapter::interrupt_routine isr)"
        read -r -a Z <<<"$(per null "$NULL_FN" null)"
        echo "| $N | ${U[0]} | ${U[1]} | ${I[0]} | ${I[1]} | ${Z[0]} |"
        if [ "${#FIRST[@]}" = 0 ]; then
            FIRST=("$N" "${U[0]}" "${I[0]}" "${Z[0]}")
        else
            LASTN="$N"
            RATIOS="UpdateMonitoredValues $(ratio "${U[0]}" "${FIRST[1]}"), ISR $(ratio "${I[0]}" "${FIRST[2]}"), NULL report $(ratio "${Z[0]}" "${FIRST[3]}")"
        fi
    done
    if [ -n "${RATIOS:-}" ]; then
        echo
        echo "ratio $LASTN / ${FIRST[0]} fences (goal <= 1.2): $RATIOS"
    fi
fi
