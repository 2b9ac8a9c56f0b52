#!/usr/bin/env bash
# Runs a command with CPU-bound processes beside it (the load a shared developer machine or CI
# runner adds), so that a test which counts on the host being idle shows itself.
#   scripts/under-load.sh [-n HOGS] [COMMAND ...]
# HOGS: how many busy loops (default 2). COMMAND: default the README's test command. The
# exit status is the command's. The loops and the command's whole process tree end with the
# script, however it ends (the command's end, Ctrl-C, or a TERM sent to the script alone).
set -uo pipefail
hogs=2
if [ "${1:-}" = "-n" ]; then
    hogs=${2:?"-n needs a count"}
    shift 2
fi
[ "$#" -gt 0 ] || set -- cargo test --workspace
# Job control: the command and each loop get a process group of their own, so one kill ends
# each with everything it started.
set -m
groups=()
cleanup() {
    for g in "${groups[@]+"${groups[@]}"}"; do kill -- "-$g" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
for _ in $(seq "$hogs"); do
    (while :; do :; done) &
    groups+=($!)
done
echo "under-load.sh: $hogs busy loop(s) beside: $*" >&2
# In the background and waited for: a trap runs at once during `wait`, where a foreground
# command would hold it until the command ended.
"$@" &
cmd=$!
groups+=("$cmd")
wait "$cmd"
