# Shared by scripts/callgrind-submission.sh and scripts/callgrind-fences.sh (sourced, not run).

# bench_bin NAME: builds the rvgpu-simos bench NAME (bench profile) and prints its executable.
bench_bin() {
    cargo bench -p rvgpu-simos --bench "$1" --no-run --message-format=json 2>/dev/null |
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

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'
}

# row LABEL "FIVE FIGURES": one Markdown table row.
row() {
    local label="$1" f
    read -r -a f <<<"$2"
    echo "| $label | ${f[0]} | ${f[1]} | ${f[2]} | ${f[3]} | ${f[4]} |"
}
