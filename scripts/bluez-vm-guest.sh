#!/usr/bin/env bash
# Runs INSIDE the QEMU guest of scripts/with-bluez-vm.sh (as root, in the host's read-only root filesystem shared
# through 9p). Not for the host. /run/bluez-vm is the host-backed run folder: env (sourced first),
# and the results written here: stdout, stderr, rc, timings and the daemons' logs.
#
# Loads the Bluetooth modules of the downloaded kernel, starts the system dbus-daemon, attaches the Bumble
# controller on /dev/ttyS1 (or /dev/hvc0) as hci0 (btattach -P h4), starts bluetoothd, waits until it exports hci0, then runs
# the command.
set -u

out=/run/bluez-vm
# shellcheck source=/dev/null  # written by with-bluez-vm.sh for each run
source "$out/env"
say() { printf 'bluez-vm-guest: %s\n' "$*" >/dev/console; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
mark() { printf '%s=%s\n' "$1" "$(uptime_s)" >>"$out/timings"; }
fail() {
    say "$*"
    dmesg >"$out/dmesg" 2>&1
    exit 1
}

mark root_mounted
hostname bluez-vm 2>/dev/null || true
ip link set lo up 2>/dev/null || true

# The kernel loads modules on its own (e.g. cmac for SMP) by running /proc/sys/kernel/modprobe from the
# initramfs's root, outside this chroot: point it at a wrapper that runs modprobe on the downloaded kernel's
# modules in here. (The host has no /lib/modules of this kernel.)
modprobe() { /sbin/modprobe -d "$bluez_vm_kernel_dir" -S "$bluez_vm_kernel_release" "$@"; }
printf '#!/bin/sh\nexec chroot /newroot /sbin/modprobe -d %s -S %s "$@"\n' \
    "$bluez_vm_kernel_dir" "$bluez_vm_kernel_release" >/run/bluez-vm-modprobe
chmod 755 /run/bluez-vm-modprobe
echo /newroot/run/bluez-vm-modprobe >/proc/sys/kernel/modprobe
modprobe hci_uart || fail "modprobe hci_uart failed"
if [[ "$bluez_vm_net" == user ]]; then
    modprobe virtio_net || fail "modprobe virtio_net failed"
    for ((i = 0; i < 100; i++)); do
        [[ -e /sys/class/net/eth0 ]] && break
        sleep 0.05
    done
    ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 ||
        fail "could not configure eth0"
fi
mark modules_loaded

mkdir -p /run/dbus
dbus-daemon --system --fork >"$out/dbus.log" 2>&1 || fail "dbus-daemon did not start"

btattach -B "$bluez_vm_tty" -P h4 >"$out/btattach.log" 2>&1 &
for ((i = 0; i < 400; i++)); do
    [[ -e /sys/class/bluetooth/hci0 ]] && break
    sleep 0.05
done
[[ -e /sys/class/bluetooth/hci0 ]] || fail "no hci0 after btattach"
mark hci0_present

bluetoothd_args=(-n)
[[ "$bluez_vm_experimental" == 1 ]] && bluetoothd_args+=(-E)
/usr/libexec/bluetooth/bluetoothd "${bluetoothd_args[@]}" >"$out/bluetoothd.log" 2>&1 &
# Its PID, for tests that stop and restart it (scripts/test-bluez-vm.sh, test g).
echo $! >/run/bluez-vm-bluetoothd.pid
ready=0
for ((i = 0; i < 200; i++)); do
    if dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 \
        org.freedesktop.DBus.Properties.Get string:org.bluez.Adapter1 string:Address >/dev/null 2>&1; then
        ready=1
        break
    fi
    sleep 0.1
done
((ready)) || fail "bluetoothd did not export /org/bluez/hci0"
mark bluetoothd_ready

cd "$bluez_vm_cwd" || fail "no $bluez_vm_cwd in the guest"
# The marker with-bluez-vm.sh looks for: without it, the guest failed before CMD and the boot is retried once.
: >"$out/started"
"${bluez_vm_command[@]}" >"$out/stdout" 2>"$out/stderr" </dev/null
rc=$?
mark command_done
dmesg >"$out/dmesg" 2>&1
printf '%s\n' "$rc" >"$out/rc"
exit 0
