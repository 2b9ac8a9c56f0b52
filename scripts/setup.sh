#!/usr/bin/env bash
# Makes sure the host tools the build and the tests need are installed:
#
#   scripts/setup.sh TOOL...
#
# TOOL: mingw (x86_64-w64-mingw32-gcc), valgrind, osslsigncode, openssl (the last two for the
# test-signed package), unicorn (libunicorn.so.2: the x86-64 emulator rvgpu.sys runs in under
# the simulated OS, docs/pe-image.md; upstream's 2.1.4 build, taken from its PyPI wheel and
# checked against a pinned hash, into target/tools, since Debian 12's 2.0.1 takes a slow path on
# every guest store), wine (Debian's wine64, the second Windows loader
# tests/wine.rs runs rvgpu-whlk.exe under; Debian puts it at /usr/lib/wine/wine64), node
# (Debian's nodejs: runs the WinDbg script over modelled debugger objects), lldb (the
# debugger simos/tests/lldb.rs attaches to rvgpu.sys in the emulator, docs/pe-image.md).
#
# A tool that is missing is installed with apt-get when this runs as root on a machine with
# apt-get (unicorn with pip, as any user); several test binaries may ask at once, so the check and the install happen under one
# lock. When it cannot be installed here, the script prints ONE line saying the command to run and
# exits with status 3, so a caller can stop at once instead of failing test after test.
#
# Used by scripts/package.sh (mingw links rvgpu-whlk.exe), by the tests that need a tool
# (tests/common/setup.rs), and by .ci/run (valgrind for the instruction-count gate).
#
# RVGPU_SETUP_HIDE="TOOL..." treats those tools as missing and not installable, to try the
# failure path without uninstalling anything (tests/setup.rs does).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# The emulator's version and the sha256 of the wheel it comes in (simos/src/pe/unicorn.rs opens
# the library at this path).
UNICORN_VERSION=2.1.4
UNICORN_WHEEL=unicorn-2.1.4-cp37-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
UNICORN_SHA256=9d6e6dea140560de4ebd8446661f7ef84a357d428c14a3ef09dacd306ec8c239
UNICORN_LIB="$ROOT/target/tools/unicorn-$UNICORN_VERSION/libunicorn.so.2"

# TOOL -> the command that proves it is there, and the Debian package that provides it.
command_of() {
    case "$1" in
        mingw) echo x86_64-w64-mingw32-gcc ;;
        valgrind | osslsigncode | openssl) echo "$1" ;;
        unicorn) echo "$UNICORN_LIB" ;;
        wine) echo /usr/lib/wine/wine64 ;;
        node) echo node ;;
        lldb) echo lldb-22 ;;
        *) return 1 ;;
    esac
}
package_of() {
    case "$1" in
        mingw) echo gcc-mingw-w64-x86-64 ;;
        valgrind | osslsigncode | openssl) echo "$1" ;;
        unicorn) echo "unicorn==$UNICORN_VERSION (PyPI)" ;;
        wine) echo wine64 ;;
        node) echo nodejs ;;
        lldb) echo lldb-22 ;;
        *) return 1 ;;
    esac
}

hidden() {
    case " ${RVGPU_SETUP_HIDE:-} " in
        *" $1 "*) return 0 ;;
        *) return 1 ;;
    esac
}

present() {
    hidden "$1" && return 1
    case "$1" in
        # A library, not a command: the file the simulated OS opens.
        unicorn) [ -f "$UNICORN_LIB" ] ;;
        *) command -v "$(command_of "$1")" >/dev/null 2>&1 ;;
    esac
}

fail() {
    echo "rvgpu setup: $*" >&2
    exit 3
}

# Fetches upstream's wheel of the pinned version (the manylinux one for CPython's stable ABI,
# whichever Python runs pip), checks its hash and takes the library out of it.
install_unicorn() {
    local tmp rc=0
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/rvgpu-unicorn.XXXXXX")"
    fetch_unicorn "$tmp" || rc=1
    rm -rf "$tmp"
    return "$rc"
}
fetch_unicorn() {
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
        --python-version 3.11 --implementation cp --abi abi3 -d "$1" \
        "unicorn==$UNICORN_VERSION" || return 1
    echo "$UNICORN_SHA256  $1/$UNICORN_WHEEL" | sha256sum --check --quiet || return 1
    mkdir -p "$(dirname "$UNICORN_LIB")"
    python3 - "$1/$UNICORN_WHEEL" "$UNICORN_LIB.part" <<'PY' || return 1
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("unicorn/lib/libunicorn.so.2") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    mv "$UNICORN_LIB.part" "$UNICORN_LIB"
}

for tool in "$@"; do
    cmd="$(command_of "$tool")" || { echo "scripts/setup.sh: unknown tool $tool" >&2; exit 2; }
    pkg="$(package_of "$tool")"
    present "$tool" && continue

    if [ "$tool" = unicorn ]; then
        hidden unicorn && fail "$cmd is missing; run: bash scripts/setup.sh unicorn"
        log="$(mktemp "${TMPDIR:-/tmp}/rvgpu-setup.XXXXXX")"
        (
            flock 9
            present unicorn && exit 0
            echo "rvgpu setup: fetching $pkg" >&2
            install_unicorn >"$log" 2>&1
        ) 9>"${TMPDIR:-/tmp}/rvgpu-setup.lock" ||
            fail "could not fetch $pkg (its output: $log); run: bash scripts/setup.sh unicorn (it needs python3 -m pip and PyPI)"
        present unicorn || fail "$pkg was fetched but $cmd is missing"
        rm -f "$log"
        continue
    fi

    if ! hidden "$tool" && ! command -v apt-get >/dev/null 2>&1; then
        fail "$cmd is missing; install it with your package manager (Debian: apt-get install -y $pkg)"
    fi
    if hidden "$tool" || [ "$(id -u)" != 0 ]; then
        fail "$cmd is missing; run: sudo apt-get install -y $pkg"
    fi

    lock="${TMPDIR:-/tmp}/rvgpu-setup.lock"
    log="$(mktemp "${TMPDIR:-/tmp}/rvgpu-setup.XXXXXX")"
    (
        flock 9
        # Another process may have installed it while this one waited for the lock.
        present "$tool" && exit 0
        echo "rvgpu setup: installing $pkg (for $cmd) with apt-get" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >"$log" 2>&1 || true
        apt-get install -y -qq "$pkg" >>"$log" 2>&1
    ) 9>"$lock" || fail "apt-get could not install $pkg (its output: $log); run: apt-get update && apt-get install -y $pkg"
    present "$tool" || fail "$pkg was installed but $cmd is still not on PATH"
    rm -f "$log"
done
