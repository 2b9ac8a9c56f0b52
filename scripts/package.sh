#!/usr/bin/env bash
# Cross-builds the Windows images on Linux (or any host with rustup) and assembles the driver
# package:
#
#   scripts/package.sh [--test-sign] [--driver-only] [--cert-dir DIR] [OUT_DIR]
#                                                        (default OUT_DIR: package/)
#   scripts/package.sh --stamp-inf FILE       (only write the stamped INF to FILE, build nothing)
#
# OUT_DIR/ gets rvgpu.sys, rvgpu.pdb, rvgpu_umd.dll, rvgpu_umd.pdb and rvgpu.inf with DriverVer
# stamped (date of the last commit, or today; version from Cargo.toml: the same version build.rs
# and umd/build.rs stamp into the images' VS_VERSION_INFO, which Dxgkrnl requires to match,
# docs/windows-bringup.md BR-14), and the harness for a
# test machine, rvgpu-whlk.exe, with the WinDbg script windbg/rvgpu.js (docs/test-machine.md).
# --driver-only leaves out the harness, the WinDbg script and the PDBs: what the simulated
# machine installs (simos::install::package), without the mingw-w64 build.
#
# With --test-sign it also writes what Windows needs to install the package in test-signing
# mode (docs/windows.md, "On Linux (or any host): the test-signed package"):
#   - rvgpu.sys and rvgpu_umd.dll Authenticode-signed with the test certificate (osslsigncode);
#   - rvgpu.cat, the catalog of the INF and the files it copies (tools/rvgpu-cat), signed;
#   - rvgpu-test.cer, the certificate (DER) for the test machine's Root and TrustedPublisher
#     stores.
# The certificate and its key are made with openssl on first use in the certificate directory
# (--cert-dir, else RVGPU_TEST_CERT_DIR, else target/test-cert/) and reused after that; they are
# never part of the repository. The signatures and the catalog are checked before it returns
# (osslsigncode verify, rvgpu-cat check).
#
# The harness is a std program, so it needs a C runtime to link against: it is built for
# x86_64-pc-windows-gnu with Debian's mingw-w64 (gcc-mingw-w64-x86-64), which links against
# the system msvcrt.dll. The MSVC CRT (the msvc target's) cannot be had on Linux.
#
# Environment: CARGO (cargo to use), RVGPU_TARGET_DIR (default target/pe, kept apart from
# target/ so it does not contend with other cargo runs), RVGPU_DRIVER_DATE (MM/DD/YYYY),
# RVGPU_TEST_CERT_DIR (see above).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test_sign=0
driver_only=0
cert_dir="${RVGPU_TEST_CERT_DIR:-$root/target/test-cert}"
out=""
stamp_only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --test-sign) test_sign=1 ;;
        --driver-only) driver_only=1 ;;
        --stamp-inf) stamp_only="${2:?--stamp-inf needs a file}"; shift ;;
        --cert-dir) cert_dir="${2:?--cert-dir needs a directory}"; shift ;;
        -*) echo "package.sh: unknown option $1 (usage: package.sh [--test-sign] [--driver-only] [--cert-dir DIR] [OUT_DIR])" >&2; exit 2 ;;
        *) [ -z "$out" ] || { echo "package.sh: more than one OUT_DIR" >&2; exit 2; }; out="$1" ;;
    esac
    shift
done
out="${out:-$root/package}"

# DriverVer = MM/DD/YYYY,a.b.c.d: the date, and the crate version with a 0 build number (the
# images' FILEVERSION, build/version_res.rs).
version="$(sed -n 's/^version *= *"\([0-9.]*\)".*/\1/p' "$root/Cargo.toml" | head -n1)"
[ -n "$version" ] || { echo "package.sh: no version in Cargo.toml" >&2; exit 1; }
date="${RVGPU_DRIVER_DATE:-$(git -C "$root" log -1 --format=%cd --date=format:%m/%d/%Y 2>/dev/null || date +%m/%d/%Y)}"
stamp_inf() { # the INF with DriverVer stamped, on stdout
    sed -E "s|^DriverVer[[:space:]]*=.*$|DriverVer   = $date,$version.0|" "$root/inf/rvgpu.inf"
}
check_stamp() { # check_stamp FILE
    grep -q "^DriverVer   = $date,$version.0" "$1" \
        || { echo "package.sh: DriverVer was not stamped" >&2; exit 1; }
}
if [ -n "$stamp_only" ]; then
    stamp_inf > "$stamp_only"
    check_stamp "$stamp_only"
    exit 0
fi
cargo="${CARGO:-cargo}"
target=x86_64-pc-windows-msvc
target_dir="${RVGPU_TARGET_DIR:-$root/target/pe}"
bin="$target_dir/$target/driver"

# mingw-w64 is the linker and C runtime for rvgpu-whlk.exe: installed when it can be, else one
# line with the command to run (exit status 3).
[ "$driver_only" = 1 ] || bash "$root/scripts/setup.sh" mingw

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
if [ "$driver_only" = 0 ] && command -v rustup >/dev/null 2>&1; then
    (cd "$root" && rustup target list --installed | grep -qx "$exe_target") \
        || (cd "$root" && rustup target add "$exe_target")
fi
[ "$driver_only" = 1 ] || (cd "$root" && "$cargo" build -p rvgpu-whlk --bin rvgpu-whlk \
    --profile harness --target "$exe_target" --target-dir "$target_dir" \
    --config "target.$exe_target.linker=\"x86_64-w64-mingw32-gcc\"")

# Test signing needs osslsigncode and openssl: say so before the long build, not after.
if [ "$test_sign" = 1 ]; then
    for tool in osslsigncode openssl; do
        command -v "$tool" >/dev/null 2>&1 \
            || { echo "package.sh: --test-sign needs $tool; install it with: apt-get install -y $tool" >&2; exit 1; }
    done
fi

mkdir -p "$out"
rm -f "$out"/rvgpu.sys "$out"/rvgpu.pdb "$out"/rvgpu_umd.dll "$out"/rvgpu_umd.pdb "$out"/rvgpu.inf \
    "$out"/rvgpu-whlk.exe "$out"/rvgpu.cat "$out"/rvgpu-test.cer
cp "$bin/rvgpu.dll" "$out/rvgpu.sys"
cp "$bin/rvgpu_umd.dll" "$out/rvgpu_umd.dll"
if [ "$driver_only" = 0 ]; then
    cp "$bin/rvgpu.pdb" "$out/rvgpu.pdb"
    cp "$bin/rvgpu_umd.pdb" "$out/rvgpu_umd.pdb"
    cp "$target_dir/$exe_target/harness/rvgpu-whlk.exe" "$out/rvgpu-whlk.exe"
    # The WinDbg extension script (docs/windows.md, "WinDbg extension script").
    mkdir -p "$out/windbg"
    cp "$root/scripts/windbg/rvgpu.js" "$out/windbg/rvgpu.js"
fi

stamp_inf > "$out/rvgpu.inf"
check_stamp "$out/rvgpu.inf"

# Every file the INF installs must be in the package.
for f in $(sed -n '/^\[SourceDisksFiles\]/,/^\[/p' "$out/rvgpu.inf" | sed -n 's/^\([A-Za-z0-9_.]*\) *=.*/\1/p'); do
    [ -f "$out/$f" ] || { echo "package.sh: INF names $f, which was not built" >&2; exit 1; }
done

if [ "$test_sign" = 1 ]; then
    # The test certificate: self-signed, for code signing, made once; like makecert -r's, the
    # one Microsoft's test-signing steps use, it is its own root and the signer, with no
    # basicConstraints (openssl's default CA:TRUE is left out: a CA certificate signing code
    # directly is reported to be refused by Windows' chain policy).
    mkdir -p "$cert_dir"
    cert="$cert_dir/rvgpu-test.pem"
    key="$cert_dir/rvgpu-test.key"
    if [ ! -f "$cert" ] || [ ! -f "$key" ]; then
        # Packagers running at once (the test binaries of a fresh clone) make it once: under a
        # lock, into names of their own moved into place key first, so a certificate that
        # exists is whole and its key is beside it.
        (
            flock 9
            [ -f "$cert" ] && [ -f "$key" ] && exit 0
            cnf="$(mktemp)"
            cat > "$cnf" <<'CNF'
[req]
distinguished_name = dn
x509_extensions = ext
prompt = no
[dn]
CN = rvgpu test signing
[ext]
keyUsage = critical, digitalSignature
extendedKeyUsage = codeSigning
subjectKeyIdentifier = hash
CNF
            if ! log="$(umask 077 && openssl req -new -x509 -newkey rsa:3072 -nodes -sha256 \
                    -days 3650 -config "$cnf" -keyout "$key.$$" -out "$cert.$$" 2>&1)"; then
                echo "$log" >&2
                echo "package.sh: openssl could not make the test certificate" >&2
                rm -f "$cnf" "$cert.$$" "$key.$$"
                exit 1
            fi
            rm -f "$cnf"
            mv "$key.$$" "$key"
            mv "$cert.$$" "$cert"
            echo "package.sh: made the test certificate $cert"
        ) 9>"$cert_dir/.lock" || exit 1
    fi
    openssl x509 -in "$cert" -outform DER -out "$out/rvgpu-test.cer"

    sign() { # sign IN: Authenticode SHA-256 signature with the test certificate, in place
        local log
        # A run cut short leaves its output behind, and osslsigncode will not overwrite it.
        rm -f "$1.signed"
        if ! log="$(osslsigncode sign -certs "$cert" -key "$key" -h sha256 -n "rvgpu" \
                -in "$1" -out "$1.signed" 2>&1)"; then
            echo "$log" >&2
            echo "package.sh: osslsigncode could not sign $1" >&2
            exit 1
        fi
        mv "$1.signed" "$1"
    }
    # The images first: the catalog lists their Authenticode hashes, which leave out the
    # signature, but the signed file is the one the hash is taken of.
    sign "$out/rvgpu.sys"
    sign "$out/rvgpu_umd.dll"
    (cd "$root" && "$cargo" build -q -p rvgpu-cat --target-dir "$target_dir/host")
    rvgpu_cat="$target_dir/host/debug/rvgpu-cat"
    "$rvgpu_cat" make "$out" "$out/rvgpu.cat"
    sign "$out/rvgpu.cat"

    for f in rvgpu.sys rvgpu_umd.dll rvgpu.cat; do
        osslsigncode verify -CAfile "$cert" -in "$out/$f" >/dev/null \
            || { echo "package.sh: osslsigncode verify rejects $f" >&2; exit 1; }
    done
    for f in rvgpu.sys rvgpu_umd.dll; do
        osslsigncode verify -CAfile "$cert" -catalog "$out/rvgpu.cat" -in "$out/$f" >/dev/null \
            || { echo "package.sh: osslsigncode does not find $f in rvgpu.cat" >&2; exit 1; }
    done
    "$rvgpu_cat" check "$out"
fi

echo "package.sh: $out"
ls -l "$out"
