#!/usr/bin/env bash
# Boots a Linux guest under QEMU (TCG) with the rvgpu function served by rvgpu-vfu, and runs
# the guest_smoke example inside it (docs/test-machine.md, "QEMU with rvgpu-vfu"). Not part of
# CI yet (issue 16). Needs root (debootstrap, chroot, mount) and the Debian package mirror.
#
#   device/vfu/vm/run-guest-smoke.sh [WORKDIR]      (default /work/vm)
#
# WORKDIR/trixie is a `debootstrap --variant=minbase trixie` chroot holding QEMU >= 10.1 from
# trixie-backports (the first QEMU with vfio-user-pci), the guest kernel and busybox; it is
# made once and reused. Exit status 0 when the guest printed "N passed, 0 failed".
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../../.." && pwd)
VM=${1:-/work/vm}
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
# The machine's own Debian mirror, as apt is configured here.
MIRROR=${MIRROR:-$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
ROOT=$VM/trixie

t() { echo "== $(date +%T) $*"; }
cleanup() {
    umount "$ROOT/dev" 2>/dev/null || true
    umount "$ROOT/proc" 2>/dev/null || true
    [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true
}
trap cleanup EXIT
mkdir -p "$VM"

if [ ! -x "$ROOT/usr/bin/qemu-system-x86_64" ]; then
    t "chroot: debootstrap trixie and QEMU from trixie-backports"
    command -v debootstrap >/dev/null || { apt-get update -qq; apt-get install -y -qq debootstrap >/dev/null; }
    [ -n "$MIRROR" ] || { echo "no Debian mirror configured (set MIRROR)" >&2; exit 2; }
    [ -d "$ROOT/usr" ] || debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >"$VM/debootstrap.log"
    echo "deb $MIRROR trixie-backports main" >"$ROOT/etc/apt/sources.list.d/backports.list"
    mount -t proc proc "$ROOT/proc"
    chroot "$ROOT" sh -c 'apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t trixie-backports qemu-system-x86 >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-image-amd64 busybox-static pciutils >/dev/null'
    umount "$ROOT/proc"
fi
chroot "$ROOT" qemu-system-x86_64 --version | head -1

t "build: rvgpu-vfu (release) and the static guest_smoke"
(cd "$REPO" && cargo build -q --release -p rvgpu-vfu)
(cd "$REPO" && RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release -p rvgpu-vfu \
    --example guest_smoke --target x86_64-unknown-linux-gnu)

t "initramfs: busybox, lspci, uio modules, guest_smoke"
IR=$VM/initramfs
rm -rf "$IR"
mkdir -p "$IR"/{bin,proc,sys,dev,tmp,usr/bin,usr/share/misc,lib/modules,lib/x86_64-linux-gnu,lib64}
cp "$ROOT/usr/bin/busybox" "$IR/bin/busybox"
cp "$ROOT/usr/bin/lspci" "$IR/usr/bin/lspci"
for l in $(chroot "$ROOT" ldd /usr/bin/lspci | awk '/=>/{print $3}'); do cp -L "$ROOT$l" "$IR/lib/x86_64-linux-gnu/"; done
cp -L "$ROOT/lib64/ld-linux-x86-64.so.2" "$IR/lib64/"
cp "$ROOT/usr/share/misc/pci.ids" "$IR/usr/share/misc/" 2>/dev/null || true
KVER=$(ls "$ROOT/lib/modules" | head -1)
for m in uio uio_pci_generic; do xz -dc "$ROOT/lib/modules/$KVER/kernel/drivers/uio/$m.ko.xz" >"$IR/lib/modules/$m.ko"; done
cp "$TARGET/x86_64-unknown-linux-gnu/release/examples/guest_smoke" "$IR/bin/guest_smoke"
cat >"$IR/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "== guest: lspci"
/usr/bin/lspci -nn
echo "== guest: lspci -vvv of the rvgpu function"
/usr/bin/lspci -nn -vvv -d 1234:5256 2>/dev/null
echo "== guest: uio_pci_generic"
insmod /lib/modules/uio.ko && insmod /lib/modules/uio_pci_generic.ko &&
    echo "1234 5256" >/sys/bus/pci/drivers/uio_pci_generic/new_id
echo "== guest: guest_smoke"
/bin/guest_smoke
echo "== guest: done"
poweroff -f
INIT
chmod +x "$IR/init"
(cd "$IR" && find . | ./bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$ROOT/tmp/initrd.gz")
cp "$ROOT/boot/vmlinuz-$KVER" "$ROOT/tmp/vmlinuz"

t "boot: rvgpu-vfu on /tmp/rvgpu.sock (in the chroot), QEMU TCG, 512 MiB shared guest RAM"
rm -f "$ROOT/tmp/rvgpu.sock"
"$TARGET/release/rvgpu-vfu" --socket "$ROOT/tmp/rvgpu.sock" --once >"$VM/vfu.log" 2>&1 &
SERVER=$!
for _ in $(seq 50); do [ -S "$ROOT/tmp/rvgpu.sock" ] && break; sleep 0.1; done
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
# memmap=1M$0x10000000 keeps 1 MiB of guest RAM from the kernel: guest_smoke's DMA memory.
timeout 180 chroot "$ROOT" qemu-system-x86_64 \
    -machine q35,memory-backend=mem \
    -object memory-backend-memfd,id=mem,size=512M,share=on -m 512M \
    -accel tcg -nographic -no-reboot \
    -kernel /tmp/vmlinuz -initrd /tmp/initrd.gz \
    -append 'console=ttyS0 panic=-1 quiet memmap=1M$0x10000000' \
    -device '{"driver":"vfio-user-pci","socket":{"type":"unix","path":"/tmp/rvgpu.sock"}}' \
    >"$VM/qemu.log" 2>&1 || true
wait "$SERVER" || true
SERVER=
t "guest output ($VM/qemu.log; server log $VM/vfu.log)"
sed -n '/== guest:/,$p' "$VM/qemu.log" | tr -d '\r'
grep -Eq '^[0-9]+ passed, 0 failed' <(tr -d '\r' <"$VM/qemu.log")
