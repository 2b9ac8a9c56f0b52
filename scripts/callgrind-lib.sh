# Shared by the callgrind scripts (sourced, not run).

# callgrind_start NAME BENCH K: the start of a per-figure script NAME (after it set ROOT and
# sourced this file). Without valgrind, says so and exits 0; otherwise sets K, moves to ROOT,
# prints the versions, builds the rvgpu-simos bench BENCH into BIN (exits 1 when it cannot)
# and makes OUT, a temporary directory removed on exit.
callgrind_start() {
    K="$3"
    cd "$ROOT"
    if ! command -v valgrind >/dev/null 2>&1; then
        echo "$1: valgrind is not installed (needs valgrind with callgrind, tested with 3.19);" \
            "nothing measured."
        exit 0
    fi
    echo "$1: $(valgrind --version), K=$3 and 2K operations per figure"
    BIN="$(bench_bin "$2")"
    if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
        echo "$1: could not build the $2 bench" >&2
        exit 1
    fi
    OUT="$(mktemp -d)"
    trap 'rm -rf "$OUT"' EXIT
}

# profile MODE OPS FILE TOGGLE: runs BIN (with SCALE_ENV in its environment) in mode MODE for
# OPS operations under callgrind, collecting inside the functions TOGGLE matches, into FILE;
# prints the bench's own output line.
profile() {
    env $SCALE_ENV RVGPU_CALLGRIND_MODE="$1" RVGPU_CALLGRIND_OPS="$2" valgrind --tool=callgrind \
        --callgrind-out-file="$3" --toggle-collect="$4" "$BIN" 2>/dev/null
}

# figures COUNTS: reads scripts/callgrind-split.py's "key=value ..." line and prints
# "<total> <driver> <device> <os> <platform> COUNTS".
figures() {
    awk -v n="$1" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        print v["total"], v["driver"], v["device"], v["os"], v["platform"], n }'
}

# bench_bin NAME: builds the rvgpu-simos bench NAME (bench profile) and prints its executable.
# --workspace, not -p: cargo unifies features over the packages a command names, so this is the
# binary CI's `cargo bench --workspace` built (-p would unify them differently and rebuild
# the simulated OS).
bench_bin() {
    cargo bench --workspace --bench "$1" --no-run --message-format=json 2>/dev/null |
        grep -o "\"executable\":\"[^\"]*$1[^\"]*\"" | tail -n 1 |
        sed 's/^"executable":"//; s/"$//'
}

# k2k LINE_K LINE_2K IDX: two lines "<total> <driver> <device> <os> <platform> ..." of the K and
# 2K runs, whose operation count is field IDX (from 0); prints the five figures per operation,
# (2K - K) / (n(2K) - n(K)), which cancels one-time costs.
k2k() {
    local a b
    read -r -a a <<<"$1"
    read -r -a b <<<"$2"
    awk -v c1="${a[$3]}" -v c2="${b[$3]}" \
        -v t1="${a[0]}" -v t2="${b[0]}" -v d1="${a[1]}" -v d2="${b[1]}" \
        -v v1="${a[2]}" -v v2="${b[2]}" -v o1="${a[3]}" -v o2="${b[3]}" \
        -v p1="${a[4]}" -v p2="${b[4]}" 'BEGIN {
        n = c2 - c1
        if (n <= 0) { print "n/a n/a n/a n/a n/a"; exit }
        printf "%.0f %.0f %.0f %.0f %.0f\n", (t2 - t1) / n, (d2 - d1) / n, (v2 - v1) / n,
            (o2 - o1) / n, (p2 - p1) / n }'
}

# k2k_of IDX RUN MODE ARGS...: runs "RUN MODE K ARGS..." and "RUN MODE 2K ARGS..." at once, one
# per processor (callgrind counts instructions, which the other run does not change), then
# prints k2k of the two lines with operation count field IDX.
k2k_of() {
    local idx="$1" run="$2" mode="$3" half="$OUT/k2k.$BASHPID" twice
    shift 3
    "$run" "$mode" "$K" "$@" >"$half" &
    twice="$("$run" "$mode" "$((2 * K))" "$@")"
    wait "$!"
    k2k "$(cat "$half")" "$twice" "$idx"
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}

# row LABEL "FIVE FIGURES": one Markdown table row.
row() {
    local label="$1" f
    read -r -a f <<<"$2"
    echo "| $label | ${f[0]} | ${f[1]} | ${f[2]} | ${f[3]} | ${f[4]} |"
}
