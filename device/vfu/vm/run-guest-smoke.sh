#!/usr/bin/env bash
# Boots a Linux guest under QEMU (TCG) with the rvgpu function served by rvgpu-vfu, and runs
# inside it the guest_smoke example and then the real driver stack: rvgpu-whlk with the sim
# backend on the PCI board (`--board pci --subset pci`: the real KMD, the simulated OS and the
# UMD driving the function across QEMU's PCIe; docs/qemu-guest.md, "The Linux guest").
# Run by tests/vm.rs. Needs root (debootstrap, chroot, mount) and the Debian mirror.
#
#   device/vfu/vm/run-guest-smoke.sh [WORKDIR]      (default /work/vm)
#
# WORKDIR/trixie is a `debootstrap --variant=minbase trixie` chroot holding QEMU >= 10.1 from
# trixie-backports (the first QEMU with vfio-user-pci), the guest kernel and busybox; it is
# made once and reused. Exit status 0 when guest_smoke printed "N passed, 0 failed", the
# harness printed "N passed, 0 failed, …" with N at least the subset's size (HARNESS_MIN) on
# INTx and on MSI, and Adapter.TwoAdapters passed in the two-function boot.
# Every step is bounded by `timeout`; the wall time of each is printed at the end.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../../.." && pwd)
VM=${1:-/work/vm}
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
# The machine's own Debian mirror, as apt is configured here.
MIRROR=${MIRROR:-$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
ROOT=$VM/trixie
# Cases of `rvgpu-whlk --subset pci` (whlk/src/cases/mod.rs, PCI_SUBSET). WHLK_ARGS selects
# other cases for exploration (e.g. WHLK_ARGS= HARNESS_MIN=0 for every case).
HARNESS_MIN=${HARNESS_MIN:-5}
WHLK_ARGS=${WHLK_ARGS---subset pci}
# What the harness runs in the two-function boot: the case that needs two adapters.
TWO_ARGS="--filter Adapter.TwoAdapters"
# Guest RAM, and the part of it the guest kernel leaves to the harness as DMA memory
# (`memmap=`): below the top of low RAM, where the firmware keeps its tables.
GUEST_RAM=1536M
DMA_BASE=0x40000000
DMA_SIZE=0x10000000

STAGES=()
STAGE_T0=$(date +%s)
t() {
    local now; now=$(date +%s)
    [ -n "${STAGE:-}" ] && STAGES+=("$STAGE: $((now - STAGE_T0)) s")
    STAGE=$1; STAGE_T0=$now
    echo "== $(date +%T) $*"
}
cleanup() {
    umount "$ROOT/dev" 2>/dev/null || true
    umount "$ROOT/proc" 2>/dev/null || true
    [ -n "${TWO:-}" ] && kill "$TWO" 2>/dev/null || true
    [ -n "${WIN:-}" ] && kill "$WIN" 2>/dev/null || true
}
trap cleanup EXIT
mkdir -p "$VM"

if [ ! -x "$ROOT/usr/bin/qemu-system-x86_64" ]; then
    t setup "chroot: debootstrap trixie and QEMU from trixie-backports"
    command -v debootstrap >/dev/null || { apt-get update -qq; apt-get install -y -qq debootstrap >/dev/null; }
    [ -n "$MIRROR" ] || { echo "no Debian mirror configured (set MIRROR)" >&2; exit 2; }
    [ -d "$ROOT/usr" ] || timeout 900 debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >"$VM/debootstrap.log"
    echo "deb $MIRROR trixie-backports main" >"$ROOT/etc/apt/sources.list.d/backports.list"
    mount -t proc proc "$ROOT/proc"
    timeout 900 chroot "$ROOT" sh -c 'apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t trixie-backports qemu-system-x86 >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-image-amd64 busybox-static pciutils >/dev/null'
    umount "$ROOT/proc"
fi
# The Windows machine's firmware, TPM and disk tool, for the third boot (its command line).
if [ ! -r "$ROOT/usr/share/OVMF/OVMF_CODE_4M.secboot.fd" ] || [ ! -x "$ROOT/usr/bin/swtpm" ] || [ ! -x "$ROOT/usr/bin/qemu-img" ]; then
    t setup-firmware "chroot: OVMF, swtpm and qemu-img (the Windows machine's command line)"
    mount -t proc proc "$ROOT/proc"
    timeout 900 chroot "$ROOT" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends -t trixie-backports ovmf swtpm swtpm-tools qemu-utils >/dev/null'
    umount "$ROOT/proc"
fi
chroot "$ROOT" qemu-system-x86_64 --version | head -1
KVER=$(ls "$ROOT/lib/modules" | head -1)

# The guest's MSI path needs a kernel part (uio_pci_generic has INTx only, and Debian's kernel
# has no VFIO no-IOMMU mode): device/vfu/vm/uio_msi, built against the guest kernel's headers.
if [ ! -d "$ROOT/usr/src/linux-headers-$KVER" ] || [ ! -x "$ROOT/usr/bin/make" ]; then
    t setup-headers "chroot: the guest kernel's headers, gcc and make (for the MSI module)"
    mount -t proc proc "$ROOT/proc"
    # -t trixie-backports: QEMU's backport pulled newer elfutils libraries the headers'
    # dependencies must agree with.
    timeout 900 chroot "$ROOT" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends -t trixie-backports linux-headers-$KVER gcc make >/dev/null"
    umount "$ROOT/proc"
fi
t build-module "build: the guest's MSI UIO module (rvgpu_uio_msi.ko)"
rm -rf "$ROOT/tmp/uio_msi"
cp -r "$REPO/device/vfu/vm/uio_msi" "$ROOT/tmp/uio_msi"
timeout 600 chroot "$ROOT" make -s -C "/lib/modules/$KVER/build" M=/tmp/uio_msi modules >"$VM/module.log" 2>&1 ||
    { cat "$VM/module.log"; echo "FAIL: the MSI module did not build"; exit 1; }

# The test command's own build (debug; dynamically linked, so the guest gets the chroot's C
# libraries beside them): under `cargo test --workspace` every binary here is built already and
# this builds nothing (--workspace keeps the features the test command gives each crate).
# RVGPU_VM_PROFILE=release builds optimised ones, for the costs performance.md quotes.
PROFILE=${RVGPU_VM_PROFILE:-debug}
case $PROFILE in
    debug) PROFILE_ARG=() ;;
    release) PROFILE_ARG=(--release) ;;
    *) echo "RVGPU_VM_PROFILE is debug or release, not $PROFILE" >&2; exit 2 ;;
esac
t build "build: rvgpu-vfu, host_counterpart, guest_smoke, rvgpu-whlk ($PROFILE)"
(cd "$REPO" && timeout 1800 cargo build -q "${PROFILE_ARG[@]}" --workspace --bins --examples)
BIN=$TARGET/$PROFILE

t initramfs "initramfs: busybox, lspci, uio modules, the MSI module, guest_smoke, rvgpu-whlk"
IR=$VM/initramfs
rm -rf "$IR"
mkdir -p "$IR"/{bin,proc,sys,dev,tmp,usr/bin,usr/share/misc,lib/modules,lib/x86_64-linux-gnu,lib64}
cp "$ROOT/usr/bin/busybox" "$IR/bin/busybox"
cp "$ROOT/usr/bin/lspci" "$IR/usr/bin/lspci"
cp "$BIN/examples/guest_smoke" "$ROOT/tmp/guest_smoke"
# Without its debug information, most of the file: the initramfs stays small.
strip -o "$ROOT/tmp/rvgpu-whlk" "$BIN/rvgpu-whlk"
# The C libraries each program needs, the chroot's (newer than the build host's, which they
# were linked against).
for p in /usr/bin/lspci /tmp/guest_smoke /tmp/rvgpu-whlk; do
    for l in $(chroot "$ROOT" ldd "$p" | awk '/=>/{print $3}'); do cp -L "$ROOT$l" "$IR/lib/x86_64-linux-gnu/"; done
done
cp -L "$ROOT/lib64/ld-linux-x86-64.so.2" "$IR/lib64/"
cp "$ROOT/usr/share/misc/pci.ids" "$IR/usr/share/misc/" 2>/dev/null || true
for m in uio uio_pci_generic; do xz -dc "$ROOT/lib/modules/$KVER/kernel/drivers/uio/$m.ko.xz" >"$IR/lib/modules/$m.ko"; done
cp "$ROOT/tmp/uio_msi/rvgpu_uio_msi.ko" "$IR/lib/modules/"
mv "$ROOT/tmp/guest_smoke" "$ROOT/tmp/rvgpu-whlk" "$IR/bin/"
cat >"$IR/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# The second boot (two functions, a debugger attached before the first instruction): the PCI
# list, every config-space read of a function answered by its server; then the harness's
# two-adapter case, each function an adapter on INTx through uio_pci_generic.
if grep -q rvgpu_two_functions /proc/cmdline; then
    echo "== guest: lspci of two rvgpu functions"
    /usr/bin/lspci -nn -d 1234:5256
    echo "guest: \$(/usr/bin/lspci -n -d 1234:5256 | wc -l) rvgpu functions"
    insmod /lib/modules/uio.ko && insmod /lib/modules/uio_pci_generic.ko &&
        echo "1234 5256" >/sys/bus/pci/drivers/uio_pci_generic/new_id
    echo "== guest: rvgpu-whlk --board pci $TWO_ARGS (two functions)"
    /bin/rvgpu-whlk --board pci $TWO_ARGS --dma $DMA_BASE:$DMA_SIZE --no-timeline
    echo "== guest: two-function harness exit \$?"
    poweroff -f
fi
echo "== guest: lspci"
/usr/bin/lspci -nn
echo "== guest: lspci -vvv of the rvgpu function"
/usr/bin/lspci -nn -vvv -d 1234:5256 2>/dev/null
echo "== guest: uio_pci_generic"
insmod /lib/modules/uio.ko && insmod /lib/modules/uio_pci_generic.ko &&
    echo "1234 5256" >/sys/bus/pci/drivers/uio_pci_generic/new_id
echo "== guest: guest_smoke"
/bin/guest_smoke
echo "== guest: rvgpu-whlk --board pci $WHLK_ARGS"
s=\$(cut -d' ' -f1 /proc/uptime)
/bin/rvgpu-whlk --board pci $WHLK_ARGS --dma $DMA_BASE:$DMA_SIZE --no-timeline
echo "== guest: harness exit \$?, started at \$s s, ended at \$(cut -d' ' -f1 /proc/uptime) s of uptime"
echo "== guest: rvgpu_uio_msi (the function's MSI message instead of INTx)"
f=\$(basename \$(readlink -f /sys/bus/pci/drivers/uio_pci_generic/*:*.* | head -1))
echo \$f >/sys/bus/pci/drivers/uio_pci_generic/unbind && insmod /lib/modules/rvgpu_uio_msi.ko &&
    /usr/bin/lspci -vvv -d 1234:5256 2>/dev/null | grep -i "MSI:"
echo "== guest: rvgpu-whlk --board pci $WHLK_ARGS (MSI)"
/bin/rvgpu-whlk --board pci $WHLK_ARGS --dma $DMA_BASE:$DMA_SIZE --no-timeline
echo "== guest: MSI harness exit \$?"
echo "== guest: guest_smoke costs (MSI, BAR2 mapped)"
/bin/guest_smoke costs
echo "== guest: done"
poweroff -f
INIT
chmod +x "$IR/init"
(cd "$IR" && find . | ./bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$ROOT/tmp/initrd.gz")
cp "$ROOT/boot/vmlinuz-$KVER" "$ROOT/tmp/vmlinuz"

# scripts/test-machine.sh starts the server and QEMU, as it does for the Windows test machine:
# one QEMU command line. The server makes the socket's directory itself, mode 0700 (only root,
# QEMU's user here, enters).
TM=$ROOT/tmp/test-machine
t boot-and-run "boot: scripts/test-machine.sh, one rvgpu function, QEMU TCG, $GUEST_RAM shared guest RAM"
rm -rf "$TM"
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
# memmap=1M$0x10000000 keeps 1 MiB of guest RAM from the kernel: guest_smoke's DMA memory;
# memmap=$DMA_SIZE$$DMA_BASE the harness's (the simulated OS's system memory).
timeout 900 bash "$REPO/scripts/test-machine.sh" --chroot "$ROOT" --dir "$TM/one" --vfu "$BIN/rvgpu-vfu" \
    --once --accel tcg --devices 1 --gdb-port 0 --ram $GUEST_RAM --smp 2 \
    --kernel "$ROOT/tmp/vmlinuz" --initrd "$ROOT/tmp/initrd.gz" \
    --append "console=ttyS0 panic=-1 quiet memmap=1M\$0x10000000 memmap=$DMA_SIZE\$$DMA_BASE" \
    >"$VM/qemu.log" 2>&1 || true
cp "$TM/one/vfu1.log" "$VM/vfu.log" 2>/dev/null || true

# The second boot: two functions, and the gdb stub WinDbg's EXDI transport uses, with the CPUs
# held before their first instruction. From the host: `?` (why stopped), `g` (the registers:
# RIP still at the reset vector), `D` (detach: the guest runs, lists both functions and runs
# Adapter.TwoAdapters on them, with the first boot's DMA range).
# KVM where the script's own check accepts it (the Windows machine's accelerator), TCG
# otherwise.
ACCEL=tcg
bash "$REPO/scripts/test-machine.sh" --check --chroot "$ROOT" --dir "$TM/two" --vfu "$BIN/rvgpu-vfu" \
    --accel kvm --gdb-port 0 --kernel "$ROOT/tmp/vmlinuz" --initrd "$ROOT/tmp/initrd.gz" && ACCEL=kvm
GDB_PORT=
for p in $(shuf -i 20000-60000 -n 20); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { GDB_PORT=$p; break; }
done
[ -n "$GDB_PORT" ] || { echo "FAIL: no free local port for the gdb stub"; exit 1; }
# One gdb remote-protocol packet on fd 3; prints the reply's data.
gdb_packet() {
    local data=$1 sum=0 i c reply
    for ((i = 0; i < ${#data}; i++)); do
        printf -v c '%d' "'${data:i:1}"
        sum=$(((sum + c) % 256))
    done
    printf '$%s#%02x' "$data" "$sum" >&3
    IFS= read -r -t 30 -d '$' _ <&3 || return 1
    IFS= read -r -t 30 -d '#' reply <&3 || return 1
    IFS= read -r -t 30 -N 2 _ <&3 || return 1
    printf '+' >&3
    printf '%s\n' "$reply"
}
# Attaches to the gdb stub of the machine PID (log LOG) as soon as it listens: why it stopped,
# its registers, detach; prints one line of what it answered.
gdb_attach() {
    local pid=$1 log=$2 connected=0 stop regs detach
    for _ in $(seq 300); do
        if { exec 3<>"/dev/tcp/127.0.0.1/$GDB_PORT"; } 2>/dev/null; then connected=1; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ "$connected" = 1 ] || { cat "$log"; echo "FAIL: the gdb stub on 127.0.0.1:$GDB_PORT did not accept a connection"; exit 1; }
    stop=$(gdb_packet '?' || true)
    regs=$(gdb_packet 'g' || true)
    detach=$(gdb_packet 'D' || true)
    exec 3>&-
    echo "gdb stub: stop reply ${stop:-none}; RIP ${regs:256:16}; detach ${detach:-none}"
}
t boot-two "boot: scripts/test-machine.sh, two rvgpu functions, QEMU $ACCEL, gdb stub on 127.0.0.1:$GDB_PORT before the first instruction"
timeout 300 bash "$REPO/scripts/test-machine.sh" --chroot "$ROOT" --dir "$TM/two" --vfu "$BIN/rvgpu-vfu" \
    --once --accel $ACCEL --devices 2 --gdb-port "$GDB_PORT" --wait-debugger --ram $GUEST_RAM --smp 2 \
    --kernel "$ROOT/tmp/vmlinuz" --initrd "$ROOT/tmp/initrd.gz" \
    --append "console=ttyS0 panic=-1 quiet rvgpu_two_functions memmap=$DMA_SIZE\$$DMA_BASE" \
    >"$VM/qemu-two.log" 2>&1 &
TWO=$!
GDB_TWO=$(gdb_attach "$TWO" "$VM/qemu-two.log")
wait "$TWO" || true
TWO=
cp "$TM/two/vfu1.log" "$VM/vfu-two-1.log" 2>/dev/null || true
cp "$TM/two/vfu2.log" "$VM/vfu-two-2.log" 2>/dev/null || true
echo "$GDB_TWO"

# The third: the Windows machine's own command line (OVMF with Secure Boot variables, swtpm's
# TPM, an empty disk, VNC on the loopback address, two functions), held at the reset vector
# for the gdb stub, then left to run the firmware for a few seconds: QEMU takes every argument.
# No Windows boots (no image here); the script ends it as a signal would.
t boot-windows-line "boot: scripts/test-machine.sh as for Windows (firmware, TPM, disk), QEMU $ACCEL, the firmware only"
rm -rf "$TM/win"
mkdir -p "$TM/win"
chroot "$ROOT" qemu-img create -f qcow2 /tmp/test-machine/win/win11.qcow2 1G >/dev/null
env -u DISPLAY -u WAYLAND_DISPLAY timeout 300 bash "$REPO/scripts/test-machine.sh" --chroot "$ROOT" \
    --dir "$TM/win/state" --vfu "$BIN/rvgpu-vfu" --accel $ACCEL --devices 2 --gdb-port "$GDB_PORT" \
    --wait-debugger --ram 1G --smp 1 "$TM/win/win11.qcow2" >"$VM/qemu-windows-line.log" 2>&1 &
WIN=$!
GDB_WIN=$(gdb_attach "$WIN" "$VM/qemu-windows-line.log")
sleep 5
WIN_RUNNING=no
kill -0 "$WIN" 2>/dev/null && WIN_RUNNING=yes
kill "$WIN" 2>/dev/null || true
wait "$WIN" || true
WIN=
echo "Windows command line: $GDB_WIN; running 5 s after detach: $WIN_RUNNING"
t report "guest output ($VM/qemu.log; server log $VM/vfu.log)"
sed -n '/== guest:/,$p' "$VM/qemu.log" | tr -d '\r'
sed -n '/== guest:/,$p' "$VM/qemu-two.log" | tr -d '\r'
t host "the same three costs in-process on this host (host_counterpart), for comparison"
timeout 300 "$BIN/examples/host_counterpart" || echo "host_counterpart failed (figures only; not a test)"
t end "wall times"
printf '  %s\n' "${STAGES[@]}"
LOG=$(tr -d '\r' <"$VM/qemu.log")
smoke=$(grep -E '^[0-9]+ passed, 0 failed$' <<<"$LOG" || true)
# The harness runs twice: on INTx (uio_pci_generic), then on MSI (rvgpu_uio_msi).
harness=$(grep -E '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' <<<"$LOG" | head -1 || true)
harness_msi=$(sed -n '/(MSI)$/,$p' <<<"$LOG" | grep -E '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' || true)
[ -n "$smoke" ] || { echo "FAIL: guest_smoke did not pass"; exit 1; }
[ -n "$harness" ] || { echo "FAIL: the harness did not pass in the guest"; exit 1; }
# guest_smoke's D3hot step: the PMCSR writes reached the function (QEMU also unmaps the BARs
# itself, so the guest's reads alone would not show it).
grep -q '^rvgpu-vfu: function in D3hot$' "$VM/vfu.log" && grep -q '^rvgpu-vfu: function in D0$' "$VM/vfu.log" ||
    { echo "FAIL: the server did not see the function enter D3hot and come back to D0"; exit 1; }
n=${harness%% *}
[ "$n" -ge "$HARNESS_MIN" ] || { echo "FAIL: the harness passed $n cases, fewer than $HARNESS_MIN"; exit 1; }
[ -n "$harness_msi" ] || { echo "FAIL: the harness did not pass in the guest on MSI"; exit 1; }
n=${harness_msi%% *}
[ "$n" -ge "$HARNESS_MIN" ] || { echo "FAIL: the harness passed $n cases on MSI, fewer than $HARNESS_MIN"; exit 1; }
grep -qE '^PCI board: [1-9][0-9]* MSI interrupts delivered through UIO' <<<"$LOG" ||
    { echo "FAIL: no MSI interrupt reached the harness's PCI board"; exit 1; }
# On MSI the ISR reads no register, but for the INT_STATUS read of a message its
# write-back word does not explain (docs/hardware.md 7.5: a coalesced or reminder message whose
# causes an earlier call drained): a few per hundred calls. On INTx it reads one per call.
msi_reads=$(sed -n '/(MSI)$/,$p' <<<"$LOG" | sed -n 's/^PCI board: [0-9]* ISR calls, \([0-9]*\) register reads.*/\1/p')
msi_calls=$(sed -n '/(MSI)$/,$p' <<<"$LOG" | sed -n 's/^PCI board: \([0-9]*\) ISR calls,.*/\1/p')
[ -n "$msi_calls" ] && [ "$msi_calls" -gt 0 ] && [ $((msi_reads * 4)) -le "$msi_calls" ] ||
    { echo "FAIL: the ISR on MSI read registers: $msi_reads reads in $msi_calls calls"; exit 1; }
# With BAR2 mapped (the server offers it as shared memory, polled for rings), a
# doorbell ring costs the guest a store, at most a tenth of a (trapped) register read.
costs=$(grep -E '^measure \(MSI, BAR2 mapped\)' <<<"$LOG" || true)
polled=$(sed -n 's/^rvgpu-vfu: doorbell rings so far: \([0-9]*\) from the mapped BAR2.*/\1/p' "$VM/vfu.log" | tail -1)
[ "${polled:-0}" -gt 0 ] || { echo "FAIL: no doorbell ring came through the mapped BAR2"; exit 1; }
read_ns=$(sed -n 's/.*register read \([0-9]*\) ns.*/\1/p' <<<"$costs")
ring_ns=$(sed -n 's/.*doorbell ring \([0-9]*\) ns.*/\1/p' <<<"$costs")
[ -n "$read_ns" ] && [ -n "$ring_ns" ] && [ $((ring_ns * 10)) -le "$read_ns" ] ||
    { echo "FAIL: a mapped doorbell ring is not under a tenth of a register read: $costs"; exit 1; }
# The second and third boots: the gdb stub stopped the guest before its first instruction (the
# reset vector, RIP 0xfff0, little-endian in the `g` reply) and let it go on detach.
for line in "$GDB_TWO" "$GDB_WIN"; do
    case "$line" in
        "gdb stub: stop reply "[ST]05*"; RIP f0ff000000000000; detach OK") ;;
        *) echo "FAIL: the gdb stub did not hold the CPU at the reset vector and let it go: $line"; exit 1 ;;
    esac
done
[ "$WIN_RUNNING" = yes ] || { tail -20 "$VM/qemu-windows-line.log"; echo "FAIL: QEMU did not run the Windows machine's command line"; exit 1; }
TWO_LOG=$(tr -d '\r' <"$VM/qemu-two.log")
grep -q '^guest: 2 rvgpu functions$' <<<"$TWO_LOG" ||
    { echo "FAIL: the guest of the second boot did not list two rvgpu functions"; exit 1; }
grep -q '^PCI board: 2 rvgpu function(s), one adapter each: ' <<<"$TWO_LOG" ||
    { echo "FAIL: the harness of the second boot did not take both functions"; exit 1; }
two=$(grep -E '^1 passed, 0 failed, 0 skipped$' <<<"$TWO_LOG" || true)
grep -qE '^Adapter\.TwoAdapters +pass ' <<<"$TWO_LOG" && [ -n "$two" ] ||
    { echo "FAIL: Adapter.TwoAdapters did not pass on the two functions"; exit 1; }
echo "ok: guest_smoke ($smoke), harness in the guest on INTx ($harness) and on MSI ($harness_msi); two functions, Adapter.TwoAdapters on them and the gdb stub; the Windows command line"
