#!/usr/bin/env bash
# Cross-builds the Windows images on Linux (or any host with rustup) and assembles the
# unsigned driver package:
#
#   scripts/package.sh [OUT_DIR]        (default: package/)
#
# OUT_DIR/ gets rvgpu.sys, rvgpu.pdb, rvgpu_umd.dll, rvgpu_umd.pdb and rvgpu.inf with DriverVer
# stamped (date of the last commit, or today; version from Cargo.toml), and the harness for a
# test machine, rvgpu-whlk.exe (docs/test-machine.md). Signing and the catalog need Windows
# (cargo make package-windows, docs/windows.md).
#
# The harness is a std program, so it needs a C runtime to link against: it is built for
# x86_64-pc-windows-gnu with Debian's mingw-w64 (gcc-mingw-w64-x86-64), which links against
# the system msvcrt.dll. The MSVC CRT (the msvc target's) cannot be had on Linux.
#
# Environment: CARGO (cargo to use), RVGPU_TARGET_DIR (default target/pe, kept apart from
# target/ so it does not contend with other cargo runs), RVGPU_DRIVER_DATE (MM/DD/YYYY).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/package}"
cargo="${CARGO:-cargo}"
target=x86_64-pc-windows-msvc
target_dir="${RVGPU_TARGET_DIR:-$root/target/pe}"
bin="$target_dir/$target/driver"

# mingw-w64 is the linker and C runtime for rvgpu-whlk.exe: installed when it can be, else one
# line with the command to run (exit status 3).
bash "$root/scripts/setup.sh" mingw

# The target is in rust-toolchain.toml; make sure it is installed when rustup is around.
if command -v rustup >/dev/null 2>&1; then
    (cd "$root" && rustup target list --installed | grep -qx "$target") \
        || (cd "$root" && rustup target add "$target")
fi

common=(--profile driver --target "$target" --target-dir "$target_dir"
        --config "target.$target.linker=\"rust-lld\"" --crate-type cdylib)

# Driver image: link settings come from build.rs.
(cd "$root" && "$cargo" rustc -p rvgpu "${common[@]}")
# UMD image: no CRT (its import libraries are Windows SDK files), no CRT entry point.
(cd "$root" && "$cargo" rustc -p rvgpu-umd --features dll "${common[@]}" -- \
    -C link-arg=/NODEFAULTLIB -C link-arg=/NOENTRY -C link-arg=/DEBUG:FULL \
    -C link-arg=/PDBALTPATH:%_PDB% -C link-arg=/OPT:REF,ICF)

# Harness executable: the same crate as `cargo run -p rvgpu-whlk`, with the Windows backend.
exe_target=x86_64-pc-windows-gnu
if command -v rustup >/dev/null 2>&1; then
    (cd "$root" && rustup target list --installed | grep -qx "$exe_target") \
        || (cd "$root" && rustup target add "$exe_target")
fi
(cd "$root" && "$cargo" build -p rvgpu-whlk --bin rvgpu-whlk --profile harness \
    --target "$exe_target" --target-dir "$target_dir" \
    --config "target.$exe_target.linker=\"x86_64-w64-mingw32-gcc\"")

mkdir -p "$out"
rm -f "$out"/rvgpu.sys "$out"/rvgpu.pdb "$out"/rvgpu_umd.dll "$out"/rvgpu_umd.pdb "$out"/rvgpu.inf \
    "$out"/rvgpu-whlk.exe
cp "$bin/rvgpu.dll" "$out/rvgpu.sys"
cp "$bin/rvgpu.pdb" "$out/rvgpu.pdb"
cp "$bin/rvgpu_umd.dll" "$out/rvgpu_umd.dll"
cp "$bin/rvgpu_umd.pdb" "$out/rvgpu_umd.pdb"
cp "$target_dir/$exe_target/harness/rvgpu-whlk.exe" "$out/rvgpu-whlk.exe"
# The WinDbg extension script (docs/windows.md, "WinDbg extension script").
mkdir -p "$out/windbg"
cp "$root/scripts/windbg/rvgpu.js" "$out/windbg/rvgpu.js"

# DriverVer = MM/DD/YYYY,a.b.c.d: the date, and the crate version with a 0 build number.
version="$(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p' "$root/Cargo.toml" | head -n1)"
[ -n "$version" ] || { echo "package.sh: no version in Cargo.toml" >&2; exit 1; }
date="${RVGPU_DRIVER_DATE:-$(git -C "$root" log -1 --format=%cd --date=format:%m/%d/%Y 2>/dev/null || date +%m/%d/%Y)}"
sed -E "s|^DriverVer[[:space:]]*=.*$|DriverVer   = $date,$version.0|" "$root/inf/rvgpu.inf" > "$out/rvgpu.inf"
grep -q "^DriverVer   = $date,$version.0" "$out/rvgpu.inf" \
    || { echo "package.sh: DriverVer was not stamped" >&2; exit 1; }

# Every file the INF installs must be in the package.
for f in $(sed -n '/^\[SourceDisksFiles\]/,/^\[/p' "$out/rvgpu.inf" | sed -n 's/^\([A-Za-z0-9_.]*\) *=.*/\1/p'); do
    [ -f "$out/$f" ] || { echo "package.sh: INF names $f, which was not built" >&2; exit 1; }
done

echo "package.sh: $out"
ls -l "$out"
