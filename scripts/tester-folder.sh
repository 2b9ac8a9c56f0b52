#!/usr/bin/env bash
# The tester's folder: everything a Windows test machine and its debugger host need, made by one
# command (docs/test-machine.md, "0. The tester's folder"):
#
#   scripts/tester-folder.sh [--cert-dir DIR] OUT_DIR
#
# OUT_DIR gets the test-signed package with the harness, the PDBs and the WinDbg script
# (scripts/package.sh --test-sign), the folder's README.txt (from scripts/tester/), the runbook
# and the VM's page it names, and what makes the VM on the Linux host: scripts/test-machine.sh
# and the rvgpu-vfu server (built for this host, --profile harness). OUT_DIR
# must be new, empty, or a folder this script made: a file left there from another build would
# travel to the machine with the package.
#
# Environment: as scripts/package.sh (CARGO, RVGPU_TARGET_DIR, RVGPU_DRIVER_DATE,
# RVGPU_TEST_CERT_DIR).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage="usage: tester-folder.sh [--cert-dir DIR] OUT_DIR"
pass=()
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --cert-dir) pass+=(--cert-dir "${2:?--cert-dir needs a directory}"); shift ;;
        -*) echo "tester-folder.sh: unknown option $1 ($usage)" >&2; exit 2 ;;
        *) [ -z "$out" ] || { echo "tester-folder.sh: more than one OUT_DIR" >&2; exit 2; }; out="$1" ;;
    esac
    shift
done
[ -n "$out" ] || { echo "tester-folder.sh: no OUT_DIR ($usage)" >&2; exit 2; }

# The folder's files, as the runbook names them (tests/package_signing.rs checks both).
expected="README.txt qemu-guest.md rvgpu-test.cer rvgpu-vfu rvgpu-whlk.exe rvgpu.cat rvgpu.inf rvgpu.pdb rvgpu.sys rvgpu_umd.dll rvgpu_umd.pdb test-machine.md test-machine.sh windbg/rvgpu.js"

if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
    [ -f "$out/rvgpu-whlk.exe" ] && [ -f "$out/README.txt" ] \
        || { echo "tester-folder.sh: $out is not empty and not a tester's folder" >&2; exit 1; }
    for f in $(cd "$out" && find . -type f | sed 's|^\./||'); do
        case " $expected " in
            *" $f "*) rm -f "$out/$f" ;;
            *) echo "tester-folder.sh: $out holds $f, which is not the folder's" >&2; exit 1 ;;
        esac
    done
fi

bash "$root/scripts/package.sh" --test-sign ${pass[@]+"${pass[@]}"} "$out"
cp "$root/scripts/tester/README.txt" "$out/README.txt"
cp "$root/docs/test-machine.md" "$root/docs/qemu-guest.md" "$root/scripts/test-machine.sh" "$out/"
# The server runs on the Linux host beside QEMU; test-machine.sh looks for it beside itself.
target_dir="${RVGPU_TARGET_DIR:-$root/target/pe}"
(cd "$root" && "${CARGO:-cargo}" build -q --profile harness -p rvgpu-vfu --target-dir "$target_dir")
cp "$target_dir/harness/rvgpu-vfu" "$out/rvgpu-vfu"

have="$(cd "$out" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
[ "$have" = "$expected" ] || {
    echo "tester-folder.sh: $out holds [$have], the runbook names [$expected]" >&2
    exit 1
}
echo "tester-folder.sh: $out (copy it whole to the Linux host, the debugger host and the test machine)"
