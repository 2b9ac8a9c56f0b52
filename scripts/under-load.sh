#!/usr/bin/env bash
# Runs a command with CPU-bound processes beside it (the load a shared developer machine or CI
# runner adds), so that a test which counts on the host being idle shows itself.
#   scripts/under-load.sh [-n HOGS] [COMMAND ...]
# HOGS: how many busy loops (default 2). COMMAND: default the README's test command. The
# exit status is the command's; the loops end with it, however it ends.
set -uo pipefail
hogs=2
if [ "${1:-}" = "-n" ]; then
    hogs=${2:?"-n needs a count"}
    shift 2
fi
[ "$#" -gt 0 ] || set -- cargo test --workspace
pids=()
cleanup() { for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
for _ in $(seq "$hogs"); do
    (while :; do :; done) &
    pids+=($!)
done
echo "under-load.sh: $hogs busy loop(s) beside: $*" >&2
"$@"
