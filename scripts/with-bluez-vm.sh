#!/usr/bin/env bash
# Usage: scripts/with-bluez-vm.sh [--prepare] [CMD [ARGS...]]
#
# Runs CMD inside a small QEMU guest (TCG) that has the real Linux Bluetooth stack: Debian 13's kernel
# (linux-image-6.12.*-amd64, downloaded with apt-get download and unpacked into .build-vm/, never installed),
# the host's root filesystem shared read-only through 9p with tmpfs on /run, /tmp and /var/lib/bluetooth, and
# dbus-daemon + bluetoothd running inside. The guest's second serial port (/dev/ttyS1) is a TCP connection to a
# Bumble virtual controller on the host; `btattach -P h4` turns it into hci0. CMD runs in the same directory as
# on the host (the path is the same through 9p), as root, with HOME=/tmp.
#
# CMD's stdout and stderr are passed through (after the guest has stopped) and its exit code is returned.
# Other exit codes: 124 the guest ran longer than the timeout; 125 the guest did not get as far as running CMD
# (its console log and the daemons' logs are printed to stderr).
#
# A guest that stops, or has not started CMD within NEARBY_BLUEZ_VM_BOOT_TIMEOUT seconds, before CMD ran (no
# "started" marker in its run folder: a TCG kernel panic at boot, bluetoothd not coming up) is booted once more,
# in a fresh run folder, after printing why. CMD is never run twice: once it started, its result is final.
#
# --prepare  only fetch the kernel and build the initramfs (needs network; run it before entering a namespace
#            without network). Without CMD, this is what happens.
#
# Environment:
#   NEARBY_BLUEZ_VM_HCI_PORT     a Bumble controller's H4 TCP port on 127.0.0.1 (e.g. one of Tests/BLE/controllers.py's
#                                ports, linked to the controllers your host-side peers use). Without it, a single
#                                controller is started here for the run.
#   NEARBY_BLUEZ_VM_TIMEOUT      hard limit for the whole guest in seconds (default 300).
#   NEARBY_BLUEZ_VM_BOOT_TIMEOUT seconds the guest may take to start CMD before it is stopped and booted again
#                                (default 150; at most one retry, and no retry once CMD started).
#   NEARBY_BLUEZ_VM_EXPERIMENTAL 1: start bluetoothd with -E (experimental D-Bus interfaces).
#   NEARBY_BLUEZ_VM_LE_ACL       the LE ACL buffer size (27 to 251) of the controller started here (without
#                                NEARBY_BLUEZ_VM_HCI_PORT); Bumble's default is 27.
#   NEARBY_BLUEZ_VM_NET          user: give the guest QEMU user networking (eth0 10.0.2.15; the host's loopback is
#                                10.0.2.2). Default: no network device.
#   NEARBY_BLUEZ_VM_WIRE         virtio: the controller's byte stream is a virtio console (/dev/hvc0) instead of the
#                                second 16550 UART (/dev/ttyS1, the default).
#   NEARBY_BLUEZ_VM_VERBOSE      1: copy the guest's console to stderr while it runs.
#   NEARBY_BLUEZ_VM_KEEP         1: keep the run folder (.build-vm/runs/...) even when CMD succeeded.
#   NEARBY_BLUEZ_VM_KERNEL_PACKAGE  a trixie kernel image package to use instead of linux-image-amd64's target.
# Inside the guest, PATH, LANG and every NEARBY_* variable of the caller are set as on the host, plus
#   NEARBY_BLUEZ_VM=1, NEARBY_BLUEZ_VM_OUT (a host-backed writable folder), NEARBY_BLUEZ_VM_HCI=hci0.
#
# Needs root (QEMU reads the whole root filesystem), qemu-system-x86, busybox-static, bluez, dbus, kmod (see
# scripts/install-deps.sh). Host TCP is used only on 127.0.0.1; nothing is installed on the host.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$repo_root/.build-vm"
guest_script="$repo_root/scripts/bluez-vm-guest.sh"
timeout_seconds="${NEARBY_BLUEZ_VM_TIMEOUT:-300}"

log() { printf 'with-bluez-vm: %s\n' "$*" >&2; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

prepare_only=0
if [[ "${1:-}" == --prepare ]]; then
    prepare_only=1
    shift
fi
if (($# == 0)); then
    prepare_only=1
fi

# --- 1. Kernel: Debian 13's image package, unpacked and depmod'ed into .build-vm/kernel/<release> ------------

# The Debian mirror this machine already uses (first deb.debian.org-like URI in its sources), for the trixie suite.
debian_mirror() {
    local uri
    uri="$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
        /etc/apt/sources.list 2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n1 | tr -d ' ')" || true
    printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

fetch_kernel() {
    local apt_dir="$cache/apt" mirror package deb release unpack
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$cache/kernel" "$cache/download"
    mirror="$(debian_mirror)"
    printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s trixie main\n' "$mirror" \
        >"$apt_dir/sources.list"
    # A private apt configuration: its own sources list, lists and cache; the host's apt state is not touched.
    local apt_options=(
        -o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
        -o Dir::State::status=/dev/null -o Acquire::Languages=none -o APT::Sandbox::User=root
    )
    log "fetching the trixie package lists from $mirror"
    apt-get -q "${apt_options[@]}" update >&2
    package="${NEARBY_BLUEZ_VM_KERNEL_PACKAGE:-}"
    if [[ -z "$package" ]]; then
        package="$(apt-cache "${apt_options[@]}" depends linux-image-amd64 |
            awk '/Depends: linux-image-6\.12\.[0-9.]*\+deb13-amd64$/ { print $2; exit }')"
    fi
    if [[ -z "$package" ]]; then
        log "no linux-image-6.12.*+deb13-amd64 package found in trixie"
        return 1
    fi
    log "downloading $package"
    rm -f "$cache/download"/*.deb
    (cd "$cache/download" && apt-get -q "${apt_options[@]}" download "$package" >&2)
    deb="$(ls "$cache/download"/*.deb)"
    unpack="$cache/kernel/unpack.$$"
    rm -rf "$unpack"
    dpkg-deb -x "$deb" "$unpack"
    release="$(ls "$unpack/usr/lib/modules")"
    # kmod 30 looks for BASE/lib/modules; the package puts the modules in usr/lib/modules.
    ln -sfn usr/lib "$unpack/lib"
    depmod -b "$unpack" "$release"
    rm -rf "${cache:?}/kernel/$release"
    mv "$unpack" "$cache/kernel/$release"
    printf '%s\n' "$release" >"$cache/kernel/current"
    rm -f "$deb"
    log "kernel $release ready in .build-vm/kernel/$release"
}

# --- 2. Initramfs: busybox, the modules for 9p over virtio and Bluetooth (decompressed), and /init ----------------------------------------

write_init() {
    cat <<'EOF'
#!/bin/busybox sh
# /init of the with-bluez-vm.sh initramfs: mount the host's root (9p) read-only with tmpfs overlays, then run
# the guest script in it, then power off (QEMU exits).
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "bluez-vm-init: $*"; poweroff -f; }
for module in $(cat /modules/order); do
    insmod "/modules/$module" || fail "insmod $module failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /newroot || fail "no hostroot"
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o ptmxmode=0666 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mount -t tmpfs -o mode=1777 tmpfs /newroot/var/tmp
[ -d /newroot/var/lib/bluetooth ] && mount -t tmpfs -o mode=0700 tmpfs /newroot/var/lib/bluetooth
mkdir -p /newroot/run/bluez-vm
mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=262144 out /newroot/run/bluez-vm || fail "no out share"
echo "bluez-vm-init: root mounted after $(cut -d' ' -f1 /proc/uptime) s"
chroot /newroot /bin/bash /run/bluez-vm/start.sh
sync
umount /newroot/run/bluez-vm
poweroff -f
EOF
}

# Loaded by /init: 9p over virtio for the root, and Bluetooth (modprobe in the guest finds them loaded; insmod from
# the initramfs is much faster than modprobe of xz-compressed modules through 9p under TCG).
initramfs_modules=(virtio_pci 9pnet_virtio 9p hci_uart)

build_initramfs() {
    local release="$1" kdir="$cache/kernel/$1" initramfs="$2" work module
    work="$cache/initramfs.$$"
    rm -rf "$work"
    mkdir -p "$work/bin" "$work/modules"
    cp /bin/busybox "$work/bin/busybox"
    write_init >"$work/init"
    chmod 755 "$work/init"
    : >"$work/modules/order"
    # The load order differs between kernel builds; ask modprobe instead of hard-coding it.
    local seen=" "
    while read -r verb path _; do
        [[ "$verb" == insmod ]] || continue
        module="$(basename "$path")"
        module="${module%.xz}"
        [[ "$seen" == *" $module "* ]] && continue
        seen+="$module "
        case "$path" in
        *.xz) xz -dc "$path" >"$work/modules/$module" ;;
        *.zst) zstd -qdc "$path" >"$work/modules/$module" ;;
        *) cp "$path" "$work/modules/$module" ;;
        esac
        printf '%s\n' "$module" >>"$work/modules/order"
    done < <(for m in "${initramfs_modules[@]}"; do modprobe -d "$kdir" -S "$release" --show-depends "$m"; done)
    (cd "$work" && find . | cpio --quiet -o -H newc) | gzip -1 >"$initramfs.tmp"
    mv "$initramfs.tmp" "$initramfs"
    rm -rf "$work"
}

prepare() {
    mkdir -p "$cache"
    exec 8>"$cache/.prepare.lock"
    flock 8
    local release="" initramfs stamp
    if [[ -r "$cache/kernel/current" ]]; then
        release="$(cat "$cache/kernel/current")"
    fi
    if [[ -z "$release" || ! -f "$cache/kernel/$release/boot/vmlinuz-$release" ]]; then
        local started
        started="$(now)"
        fetch_kernel
        release="$(cat "$cache/kernel/current")"
        log "kernel fetched in $(elapsed "$started") s"
    fi
    initramfs="$cache/initramfs-$release.cpio.gz"
    stamp="$( (write_init; sha256sum /bin/busybox; echo "${initramfs_modules[*]}") | sha256sum | cut -c1-16)"
    if [[ ! -f "$initramfs" || "$(cat "$initramfs.stamp" 2>/dev/null)" != "$stamp" ]]; then
        build_initramfs "$release" "$initramfs"
        printf '%s\n' "$stamp" >"$initramfs.stamp"
        log "initramfs built: .build-vm/$(basename "$initramfs")"
    fi
    exec 8>&-
    kernel_release="$release"
}

for tool in qemu-system-x86_64 depmod modprobe cpio btattach bluetoothd dbus-daemon; do
    if ! command -v "$tool" >/dev/null 2>&1 && [[ ! -x /usr/libexec/bluetooth/$tool ]]; then
        log "$tool missing; run scripts/install-deps.sh"
        exit 125
    fi
done
if ((EUID != 0)); then
    log "needs root (QEMU shares the whole root filesystem read-only)"
    exit 125
fi

kernel_release=""
prepare
if ((prepare_only)); then
    exit 0
fi

# --- 3. One run: a run folder shared read-write, a controller, QEMU under a hard timeout -----------------------

mkdir -p "$cache/runs"
run_dir="$(mktemp -d "$cache/runs/run.XXXXXX")"
controllers_pid=""
qemu_pid=""
keep_run="${NEARBY_BLUEZ_VM_KEEP:-0}"

# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
    set +e
    local pid
    for pid in "$qemu_pid" "$controllers_pid"; do
        [[ -n "$pid" ]] || continue
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    if [[ "$keep_run" != 1 ]]; then
        rm -rf "$run_dir"
    fi
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

hci_port="${NEARBY_BLUEZ_VM_HCI_PORT:-}"
if [[ -z "$hci_port" ]]; then
    python="${NEARBY_BLE_PYTHON:-$repo_root/.venv/bin/python}"
    "$python" "$repo_root/Tests/BLE/controllers.py" 1 --enhanced-connection-complete \
        ${NEARBY_BLUEZ_VM_LE_ACL:+--le-acl-length=$NEARBY_BLUEZ_VM_LE_ACL} >"$run_dir/controllers.out" 2>"$run_dir/controllers.log" &
    controllers_pid=$!
    for ((i = 0; i < 200; i++)); do
        grep -q '^READY' "$run_dir/controllers.out" 2>/dev/null && break
        kill -0 "$controllers_pid" 2>/dev/null || break
        sleep 0.05
    done
    if ! grep -q '^READY' "$run_dir/controllers.out"; then
        log "the Bumble controller did not start:"
        cat "$run_dir/controllers.log" >&2
        exit 125
    fi
    hci_port="$(awk '/^READY/ { print $2 }' "$run_dir/controllers.out")"
fi

# boot_guest RUN_DIR: writes the run's env and start.sh, runs QEMU until it exits (or the hard timeout, or the boot
# deadline without the "started" marker). Sets qemu_rc and boot_failure (why the guest stopped before CMD, or "").
boot_guest() {
    local dir="$1" boot_timeout="${NEARBY_BLUEZ_VM_BOOT_TIMEOUT:-150}" started_at tail_pid="" deadline_hit=0
    # What the guest runs: start.sh (bash, in the chroot) runs the checked-in guest script, which sources env.
    {
        printf 'export NEARBY_BLUEZ_VM=1 NEARBY_BLUEZ_VM_OUT=/run/bluez-vm NEARBY_BLUEZ_VM_HCI=hci0 HOME=/tmp\n'
        while IFS= read -r name; do
            case "$name" in
            PATH | LANG | LC_* | NEARBY_*) printf 'export %s=%q\n' "$name" "${!name}" ;;
            esac
        done < <(compgen -e)
        printf 'bluez_vm_kernel_dir=%q\n' "$cache/kernel/$kernel_release"
        printf 'bluez_vm_kernel_release=%q\n' "$kernel_release"
        printf 'bluez_vm_cwd=%q\n' "$PWD"
        printf 'bluez_vm_experimental=%q\n' "${NEARBY_BLUEZ_VM_EXPERIMENTAL:-0}"
        printf 'bluez_vm_net=%q\n' "${NEARBY_BLUEZ_VM_NET:-}"
        if [[ "${NEARBY_BLUEZ_VM_WIRE:-uart}" == virtio ]]; then
            printf 'bluez_vm_tty=/dev/hvc0\n'
        else
            printf 'bluez_vm_tty=/dev/ttyS1\n'
        fi
        printf 'bluez_vm_command=('
        printf '%q ' "${command[@]}"
        printf ')\n'
    } >"$dir/env"
    printf 'exec /bin/bash %q\n' "$guest_script" >"$dir/start.sh"

    local qemu_args=(
        -accel tcg -cpu max -smp 1 -m 1024
        -nodefaults -no-user-config -display none -no-reboot
        -kernel "$cache/kernel/$kernel_release/boot/vmlinuz-$kernel_release"
        -initrd "$cache/initramfs-$kernel_release.cpio.gz"
        -append "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init"
        -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
        -device "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot"
        -fsdev "local,id=out,path=$dir,security_model=none"
        -device "virtio-9p-pci,fsdev=out,mount_tag=out"
        -chardev "file,id=console,path=$dir/console.log"
        -serial chardev:console
        -chardev "socket,id=bt,host=127.0.0.1,port=$hci_port"
    )
    if [[ "${NEARBY_BLUEZ_VM_WIRE:-uart}" == virtio ]]; then
        qemu_args+=(-device virtio-serial-pci -device virtconsole,chardev=bt)
    else
        qemu_args+=(-serial chardev:bt)
    fi
    if [[ "${NEARBY_BLUEZ_VM_NET:-}" == user ]]; then
        qemu_args+=(-nic user,model=virtio-net-pci)
    else
        qemu_args+=(-nic none)
    fi

    started_at="$(now)"
    timeout --signal=TERM --kill-after=10s "$timeout_seconds" qemu-system-x86_64 "${qemu_args[@]}" \
        </dev/null >"$dir/qemu.log" 2>&1 &
    qemu_pid=$!
    if [[ "${NEARBY_BLUEZ_VM_VERBOSE:-0}" == 1 ]]; then
        tail -n +1 -F --pid="$qemu_pid" "$dir/console.log" >&2 2>/dev/null &
        tail_pid=$!
    fi
    # Until CMD starts, watch the boot deadline; after that, only the hard timeout applies.
    while kill -0 "$qemu_pid" 2>/dev/null && [[ ! -f "$dir/started" ]]; do
        if awk -v a="$started_at" -v b="$(now)" -v t="$boot_timeout" 'BEGIN { exit !(b - a > t) }'; then
            deadline_hit=1
            kill -TERM "$qemu_pid" 2>/dev/null || true
            break
        fi
        sleep 0.5
    done
    set +e
    wait "$qemu_pid"
    qemu_rc=$?
    set -e
    qemu_pid=""
    [[ -z "$tail_pid" ]] || wait "$tail_pid" 2>/dev/null || true
    log "guest ran for $(elapsed "$started_at") s"
    boot_failure=""
    if [[ ! -f "$dir/started" ]]; then
        local last
        last="$(grep -aE 'Kernel panic|bluez-vm-(guest|init):|BUG:|Oops' "$dir/console.log" 2>/dev/null | tail -n 1 | tr -d '\r' || true)"
        if ((deadline_hit)); then
            boot_failure="CMD had not started ${boot_timeout} s after boot (NEARBY_BLUEZ_VM_BOOT_TIMEOUT)"
        elif ((qemu_rc != 124 && qemu_rc != 137)); then # not the hard timeout: that is final
            boot_failure="the guest stopped before CMD started (qemu exit $qemu_rc)"
        fi
        [[ -z "$boot_failure" || -z "$last" ]] || boot_failure+="; console: ${last:0:200}"
    fi
}

command=("$@")
boot_guest "$run_dir"
if [[ -n "$boot_failure" ]]; then
    log "boot failed, booting once more: $boot_failure (logs kept in ${run_dir#"$repo_root"/})"
    [[ ! -s "$run_dir/console.log" ]] || { echo '--- console.log (last 15 lines)'; tail -n 15 "$run_dir/console.log"; } >&2
    run_dir="$(mktemp -d "$cache/runs/run.XXXXXX")"
    boot_guest "$run_dir"
fi

[[ -f "$run_dir/stdout" ]] && cat "$run_dir/stdout"
[[ -f "$run_dir/stderr" ]] && cat "$run_dir/stderr" >&2
[[ -f "$run_dir/timings" ]] && log "guest timings: $(tr '\n' ' ' <"$run_dir/timings")"

if [[ -f "$run_dir/rc" ]]; then
    rc="$(cat "$run_dir/rc")"
    if [[ "$rc" != 0 ]]; then
        keep_run=1
        log "CMD exited with $rc; logs kept in ${run_dir#"$repo_root"/}"
    fi
    exit "$rc"
fi

keep_run=1
if ((qemu_rc == 124 || qemu_rc == 137)); then
    log "the guest did not finish within ${timeout_seconds} s (NEARBY_BLUEZ_VM_TIMEOUT)"
    final=124
else
    log "the guest stopped before CMD finished (qemu exit $qemu_rc${boot_failure:+; $boot_failure})"
    final=125
fi
for f in qemu.log console.log btattach.log bluetoothd.log dbus.log; do
    if [[ -s "$run_dir/$f" ]]; then
        printf -- '--- %s (last 40 lines)\n' "$f" >&2
        tail -n 40 "$run_dir/$f" >&2
    fi
done
log "logs kept in ${run_dir#"$repo_root"/}"
exit "$final"
