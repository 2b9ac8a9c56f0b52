#!/usr/bin/env bash
# The Windows test machine in one command (docs/qemu-guest.md, "The Windows test VM"): one or two
# rvgpu-vfu servers, QEMU with KVM and a vfio-user-pci function for each, user-mode networking
# for KDNET, and QEMU's gdb stub for WinDbg's EXDI transport, listening before the first
# instruction runs.
#
#   scripts/test-machine.sh [OPTIONS] DISK            a Windows 11 24H2 x64 disk image
#   scripts/test-machine.sh --check [OPTIONS] DISK    only the prerequisites, one line each missing
#
#   --iso FILE          attach the Windows installation medium (DISK is made, 80 GiB, if missing)
#   --devices N         rvgpu functions: 1 (default), 2 (Adapter.TwoAdapters needs two), or 0:
#                       Windows without the GPU, so without rvgpu.sys (a machine it stops)
#   --wait-debugger     the guest's CPUs stay halted until a debugger on the gdb stub continues
#   --gdb-port N        the gdb stub's port on 127.0.0.1 (default 1234; 0: none)
#   --dir DIR           sockets, logs, firmware variables, TPM state (default: DISK's directory,
#                       subdirectory rvgpu-vm)
#   --vfu FILE          the rvgpu-vfu server (default: beside this script, then PATH, then the
#                       repository's target/release)
#   --vram-mib N        each function's VRAM (BAR4; default 256)
#   --doorbells N --global-doorbell
#                       each function's physical doorbells and doorbell mode, as rvgpu-vfu's
#                       options (docs/test-machine.md's device passes)
#   --ram SIZE --smp N  guest memory (default 8G) and CPUs (default 4)
#   --accel kvm|tcg     kvm (default); tcg only for the Linux guest of the VM test
#   --kernel F --initrd F --append S
#                       boot a Linux kernel instead of DISK (the VM test's guest; no firmware,
#                       TPM or disk; serial console on stdout)
#   --chroot DIR        run DIR's qemu-system-x86_64 inside DIR (the VM test's Debian trixie);
#                       every file QEMU opens must then lie under DIR
#   --once              each server serves one QEMU, then exits (the VM test)
#
# QEMU and the servers run as the user who runs this script: each server makes its socket's
# directory with mode 0700 and accepts connections from its own user only. Exit status: QEMU's;
# 3 when a prerequisite is missing, 2 for a usage error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage="usage: test-machine.sh [--check] [OPTIONS] DISK (options: the script's header)"

check_only=0 iso="" devices=1 wait_debugger=0 gdb_port=1234 dir="" vfu="" vram_mib=256 device_args=()
ram=8G smp=4 accel=kvm kernel="" initrd="" append="" chroot_dir="" once=0 disk=""
need() { [ -n "${2:-}" ] || { echo "test-machine.sh: $1 needs a value ($usage)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
    case "$1" in
        --check) check_only=1 ;;
        --iso) need "$1" "${2:-}"; iso=$2; shift ;;
        --devices) need "$1" "${2:-}"; devices=$2; shift ;;
        --wait-debugger) wait_debugger=1 ;;
        --gdb-port) need "$1" "${2:-}"; gdb_port=$2; shift ;;
        --dir) need "$1" "${2:-}"; dir=$2; shift ;;
        --vfu) need "$1" "${2:-}"; vfu=$2; shift ;;
        --vram-mib) need "$1" "${2:-}"; vram_mib=$2; shift ;;
        --doorbells) need "$1" "${2:-}"; device_args+=(--doorbells "$2"); shift ;;
        --global-doorbell) device_args+=(--global-doorbell) ;;
        --ram) need "$1" "${2:-}"; ram=$2; shift ;;
        --smp) need "$1" "${2:-}"; smp=$2; shift ;;
        --accel) need "$1" "${2:-}"; accel=$2; shift ;;
        --kernel) need "$1" "${2:-}"; kernel=$2; shift ;;
        --initrd) need "$1" "${2:-}"; initrd=$2; shift ;;
        --append) need "$1" "${2:-}"; append=$2; shift ;;
        --chroot) need "$1" "${2:-}"; chroot_dir=$(cd "$2" && pwd); shift ;;
        --once) once=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "test-machine.sh: unknown option $1 ($usage)" >&2; exit 2 ;;
        *) [ -z "$disk" ] || { echo "test-machine.sh: more than one DISK ($usage)" >&2; exit 2; }; disk=$1 ;;
    esac
    shift
done
case "$devices" in 0 | 1 | 2) ;; *) echo "test-machine.sh: --devices is 0, 1 or 2, not $devices" >&2; exit 2 ;; esac
case "$accel" in kvm | tcg) ;; *) echo "test-machine.sh: --accel is kvm or tcg, not $accel" >&2; exit 2 ;; esac
case "$gdb_port" in *[!0-9]* | "") echo "test-machine.sh: --gdb-port is a number" >&2; exit 2 ;; esac
linux=0
[ -z "$kernel" ] || linux=1
if [ "$linux" = 1 ]; then
    [ -n "$initrd" ] || { echo "test-machine.sh: --kernel needs --initrd" >&2; exit 2; }
    [ -z "$disk" ] || { echo "test-machine.sh: DISK or --kernel, not both" >&2; exit 2; }
    [ -n "$dir" ] || { echo "test-machine.sh: --kernel needs --dir" >&2; exit 2; }
else
    [ -n "$disk" ] || { echo "test-machine.sh: no DISK ($usage)" >&2; exit 2; }
    [ -n "$dir" ] || dir="$(dirname "$disk")/rvgpu-vm"
fi
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac

# QEMU's view of a host path: inside --chroot, the path below it.
inside() {
    if [ -z "$chroot_dir" ]; then
        printf '%s' "$1"
    else
        local abs
        abs="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
        case "$abs" in
            "$chroot_dir"/*) printf '%s' "${abs#"$chroot_dir"}" ;;
            *) echo "test-machine.sh: $1 is outside --chroot $chroot_dir" >&2; exit 2 ;;
        esac
    fi
}
# The chroot's own tools and firmware, when QEMU comes from one.
run=()
[ -z "$chroot_dir" ] || run=(chroot "$chroot_dir")
qemu=(${run[@]+"${run[@]}"} qemu-system-x86_64)

# Every prerequisite is checked before anything starts; each missing one is one line.
missing=()
miss() { missing+=("$*"); }

if [ "$accel" = kvm ]; then
    if [ ! -e /dev/kvm ]; then
        miss "KVM: no /dev/kvm (enable virtualisation in the firmware; modprobe kvm_intel or kvm_amd)"
    elif [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
        miss "KVM: /dev/kvm is not readable and writable by $(id -un) (add the user to group $(stat -c %G /dev/kvm))"
    elif ! grep -qw -e vmx -e svm /proc/cpuinfo; then
        # A /dev/kvm without the CPU's virtualisation (kvm_pvm in a cloud VM) runs only guests
        # made for it, never Windows.
        miss "KVM: the CPU shows no vmx or svm flag (in a VM: turn on nested virtualisation)"
    fi
fi
qemu_version=""
if ! "${qemu[@]}" --version >/dev/null 2>&1; then
    miss "QEMU: no qemu-system-x86_64 (10.1 or later: Debian trixie-backports' qemu-system-x86)"
else
    qemu_version=$("${qemu[@]}" --version | sed -n '1s/.*version \([0-9][0-9.]*\).*/\1/p')
    major=${qemu_version%%.*} minor=${qemu_version#*.}; minor=${minor%%.*}
    if [ -z "$qemu_version" ] || [ "$major" -lt 10 ] || { [ "$major" = 10 ] && [ "$minor" -lt 1 ]; }; then
        miss "QEMU: version ${qemu_version:-unknown}; vfio-user-pci needs 10.1 or later"
    elif ! "${qemu[@]}" -device help 2>/dev/null | grep -q '"vfio-user-pci"'; then
        miss "QEMU: $qemu_version has no vfio-user-pci device (a build without vfio-user)"
    fi
fi
if [ -z "$vfu" ]; then
    for c in "$here/rvgpu-vfu" "$(command -v rvgpu-vfu 2>/dev/null || true)" "$here/../target/release/rvgpu-vfu"; do
        [ -n "$c" ] && [ -x "$c" ] && { vfu=$c; break; }
    done
fi
[ -n "$vfu" ] && [ -x "$vfu" ] ||
    miss "rvgpu-vfu: not found (cargo build --release -p rvgpu-vfu in the repository, then --vfu target/release/rvgpu-vfu)"
if [ "$linux" = 1 ]; then
    for f in "$kernel" "$initrd"; do [ -r "$f" ] || miss "guest: $f is not a readable file"; done
else
    if [ -e "$disk" ]; then
        [ -r "$disk" ] && [ -w "$disk" ] || miss "disk: $disk is not readable and writable by $(id -un)"
    elif [ -z "$iso" ]; then
        miss "disk: $disk does not exist (give --iso with the Windows 11 24H2 x64 ISO to make and install it)"
    elif ! ${run[@]+"${run[@]}"} qemu-img --version >/dev/null 2>&1; then
        miss "qemu-img: needed to make $disk (Debian: qemu-utils)"
    fi
    [ -z "$iso" ] || [ -r "$iso" ] || miss "ISO: $iso is not a readable file"
    ovmf_code=$chroot_dir/usr/share/OVMF/OVMF_CODE_4M.secboot.fd
    ovmf_vars=$chroot_dir/usr/share/OVMF/OVMF_VARS_4M.ms.fd
    for f in "$ovmf_code" "$ovmf_vars"; do [ -r "$f" ] || miss "firmware: no $f (Debian: ovmf)"; done
    ${run[@]+"${run[@]}"} swtpm --version >/dev/null 2>&1 ||
        miss "TPM: no swtpm (Windows 11 needs a TPM 2.0; Debian: swtpm)"
fi
if [ "$gdb_port" != 0 ] && (exec 3<>"/dev/tcp/127.0.0.1/$gdb_port") 2>/dev/null; then
    miss "gdb stub: 127.0.0.1:$gdb_port is in use (--gdb-port another)"
fi
if [ -e "$dir/vfu" ] && [ "$(stat -c %u "$dir/vfu")" != "$(id -u)" ]; then
    miss "sockets: $dir/vfu belongs to uid $(stat -c %u "$dir/vfu"), not $(id -un): QEMU and rvgpu-vfu run as one user (remove it or run as its owner)"
fi
[ "$check_only" = 1 ] || mkdir -p "$dir" 2>/dev/null || miss "state: cannot make $dir (--dir another)"
if [ ${#missing[@]} -gt 0 ]; then
    printf 'test-machine.sh: missing: %s\n' "${missing[@]}" >&2
    exit 3
fi
nested=$(cat /sys/module/kvm_intel/parameters/nested /sys/module/kvm_amd/parameters/nested 2>/dev/null | head -1 || true)
echo "test-machine.sh: QEMU $qemu_version, $accel, $devices rvgpu function(s), nested virtualisation: ${nested:-unknown} (memory integrity needs Y or 1)"
[ "$check_only" = 0 ] || exit 0

pids=()
cleanup() {
    local p
    for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
# A signal (timeout(1), Ctrl+C) ends QEMU and the servers too.
trap 'exit 143' TERM
trap 'exit 130' INT

# One server a function; the first makes the socket directory (0700), the second finds it so.
devargs=()
for i in $(seq "$devices"); do
    sock="$dir/vfu/rvgpu$i.sock"
    rm -f "$sock"
    extra=("${device_args[@]+"${device_args[@]}"}")
    [ "$once" = 0 ] || extra+=(--once)
    "$vfu" --socket "$sock" --vram-mib "$vram_mib" "${extra[@]+"${extra[@]}"}" >"$dir/vfu$i.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
    [ -S "$sock" ] || { echo "test-machine.sh: rvgpu-vfu $i did not listen on $sock:" >&2; cat "$dir/vfu$i.log" >&2; exit 1; }
    devargs+=(-device "{\"driver\":\"vfio-user-pci\",\"id\":\"rvgpu$i\",\"socket\":{\"type\":\"unix\",\"path\":\"$(inside "$sock")\"}}")
done

# Shared guest RAM: the server reaches it for the device's DMA.
args=(-machine "q35,accel=$accel,memory-backend=mem" -object "memory-backend-memfd,id=mem,size=$ram,share=on"
    -m "$ram" -smp "$smp")
[ "$accel" = tcg ] || args+=(-cpu host)
# User-mode networking: the guest reaches every address the host reaches (NAT through the host's
# own sockets), without root, a tap or a bridge. KDNET needs only that: the target sends to the
# debugger host's UDP port and the debugger answers where the packets came from.
args+=(-netdev user,id=net0 -device e1000e,netdev=net0)
[ "$gdb_port" = 0 ] || args+=(-gdb "tcp:127.0.0.1:$gdb_port")
[ "$wait_debugger" = 0 ] || args+=(-S)
args+=(${devargs[@]+"${devargs[@]}"})

if [ "$linux" = 1 ]; then
    args+=(-nographic -no-reboot -kernel "$(inside "$kernel")" -initrd "$(inside "$initrd")" -append "$append")
else
    if [ ! -e "$disk" ]; then
        ${run[@]+"${run[@]}"} qemu-img create -f qcow2 "$(inside "$disk")" 80G >/dev/null
    fi
    [ -e "$dir/OVMF_VARS.fd" ] || cp "$ovmf_vars" "$dir/OVMF_VARS.fd"
    mkdir -p "$dir/tpm"
    rm -f "$dir/tpm/sock"
    ${run[@]+"${run[@]}"} swtpm socket --tpm2 --tpmstate "dir=$(inside "$dir/tpm")" \
        --ctrl "type=unixio,path=$(inside "$dir/tpm")/sock" --terminate >"$dir/swtpm.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$dir/tpm/sock" ] && break; sleep 0.1; done
    format=raw
    case "$disk" in *.qcow2) format=qcow2 ;; esac
    args[1]="${args[1]},smm=on"
    args+=(-global driver=cfi.pflash01,property=secure,value=on
        -drive "if=pflash,format=raw,unit=0,readonly=on,file=$(inside "$ovmf_code")"
        -drive "if=pflash,format=raw,unit=1,file=$(inside "$dir/OVMF_VARS.fd")"
        -chardev "socket,id=tpm,path=$(inside "$dir/tpm/sock")" -tpmdev emulator,id=tpm0,chardev=tpm
        -device tpm-tis,tpmdev=tpm0
        -drive "file=$(inside "$disk"),if=none,id=disk0,format=$format" -device ide-hd,drive=disk0,bus=ide.0
        -vga std)
    [ -z "$iso" ] || args+=(-drive "file=$(inside "$iso"),media=cdrom,if=none,id=cd0" -device ide-cd,drive=cd0,bus=ide.1)
    # Without a local display, the desktop is a VNC server on the loopback address.
    if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
        args+=(-display none -vnc 127.0.0.1:0)
        echo "test-machine.sh: the desktop: VNC on 127.0.0.1:5900 (from another machine: ssh -L 5900:127.0.0.1:5900)"
    fi
fi
[ "$gdb_port" = 0 ] || echo "test-machine.sh: gdb stub (WinDbg's EXDI) on 127.0.0.1:$gdb_port$([ "$wait_debugger" = 0 ] || echo ", the CPUs halted until the debugger continues them")"
echo "test-machine.sh: network: user-mode NAT; KDNET's hostip is the debugger host's address"
echo "test-machine.sh: servers' logs: $dir/vfu*.log"
# In the background, so that a signal reaches the traps at once rather than after QEMU.
"${qemu[@]}" "${args[@]}" <&0 &
qemu_pid=$!
pids+=("$qemu_pid")
status=0
wait "$qemu_pid" || status=$?
# A --once server ends by itself once QEMU has gone; its last lines are the session's summary.
if [ "$once" = 1 ]; then
    for _ in $(seq 100); do
        alive=0
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ "$alive" = 1 ] || break
        sleep 0.1
    done
fi
exit "$status"
