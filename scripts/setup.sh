#!/usr/bin/env bash
# Makes sure the host tools the build and the tests need are installed:
#
#   scripts/setup.sh TOOL...
#
# TOOL: mingw (x86_64-w64-mingw32-gcc), valgrind, osslsigncode, openssl (the last two for the
# test-signed package), unicorn (libunicorn.so.2: the x86-64 emulator rvgpu.sys runs in under
# the simulated OS, docs/pe-image.md), wine (Debian's wine64, the second Windows loader
# tests/wine.rs runs rvgpu-whlk.exe under; Debian puts it at /usr/lib/wine/wine64), node
# (Debian's nodejs: runs the WinDbg script over modelled debugger objects), lldb (the
# debugger simos/tests/lldb.rs attaches to rvgpu.sys in the emulator, docs/pe-image.md).
#
# A tool that is missing is installed with apt-get when this runs as root on a machine with
# apt-get; several test binaries may ask at once, so the check and the install happen under one
# lock. When it cannot be installed here, the script prints ONE line saying the command to run and
# exits with status 3, so a caller can stop at once instead of failing test after test.
#
# Used by scripts/package.sh (mingw links rvgpu-whlk.exe), by the tests that need a tool
# (tests/common/setup.rs), and by .ci/run (valgrind for the instruction-count gate).
#
# RVGPU_SETUP_HIDE="TOOL..." treats those tools as missing and not installable, to try the
# failure path without uninstalling anything (tests/setup.rs does).
set -euo pipefail

# TOOL -> the command that proves it is there, and the Debian package that provides it.
command_of() {
    case "$1" in
        mingw) echo x86_64-w64-mingw32-gcc ;;
        valgrind | osslsigncode | openssl) echo "$1" ;;
        unicorn) echo libunicorn.so.2 ;;
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
        unicorn) echo libunicorn2 ;;
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
        # A library, not a command: ask the dynamic linker's cache.
        unicorn) /sbin/ldconfig -p 2>/dev/null | grep -q 'libunicorn\.so\.2 ' ;;
        *) command -v "$(command_of "$1")" >/dev/null 2>&1 ;;
    esac
}

fail() {
    echo "rvgpu setup: $*" >&2
    exit 3
}

for tool in "$@"; do
    cmd="$(command_of "$tool")" || { echo "scripts/setup.sh: unknown tool $tool" >&2; exit 2; }
    pkg="$(package_of "$tool")"
    present "$tool" && continue

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
