#!/usr/bin/env bash
# Installs everything the test suite needs on a Debian 12 machine. Idempotent and fast on reruns.
#
# 1. Debian packages (skipped entirely when dpkg-query reports all of them installed).
# 2. A Python venv at <repo>/.venv holding the pinned packages of Tests/Oracle/requirements.txt and
#    Tests/BLE/requirements.txt; pip runs only when those files (or the venv's Python) changed.
#
# Must run as root, or as a user with sudo, for the apt step. Progress goes to stderr.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

log() { printf 'install-deps: %s\n' "$*" >&2; }

apt_packages=(
    protobuf-compiler
    avahi-daemon
    avahi-utils
    libavahi-client-dev
    # NearbyBlueZ (CDBus): libdbus-1 for BlueZ over D-Bus.
    libdbus-1-dev
    dbus
    libbluetooth-dev
    iproute2
    util-linux
    python3-venv
    # NearbyPulseAudio (CPulseSimple) and its tests: a private PulseAudio server with a null sink.
    libpulse-dev
    pulseaudio
    pulseaudio-utils
    # scripts/with-bluez-vm.sh: a QEMU guest running the host's BlueZ on a Bumble controller.
    qemu-system-x86
    busybox-static
    bluez
    kmod
    cpio
    # scripts/with-hang-dump.sh: the stacks of a test process that hangs.
    gdb
)

requirement_files=(
    Tests/Oracle/requirements.txt
    Tests/BLE/requirements.txt
)

venv_dir="$repo_root/.venv"
stamp_file="$venv_dir/.requirements.sha256"

# Serialise concurrent runs (two checkouts or two test runs at once): apt has its own lock, the venv has not.
exec 9>"${TMPDIR:-/tmp}/swift-nearby-install-deps.lock"
flock 9

# --- 1. Debian packages -----------------------------------------------------------------------------------

missing=()
for pkg in "${apt_packages[@]}"; do
    status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]} > 0)); then
    sudo=()
    if ((EUID != 0)); then
        if ! command -v sudo >/dev/null 2>&1; then
            log "missing packages (${missing[*]}) and not root; run as root or install sudo"
            exit 1
        fi
        sudo=(sudo)
    fi
    log "installing: ${missing[*]}"
    "${sudo[@]}" apt-get update
    # policy-rc.d on these machines stops the install from starting avahi-daemon or dbus in the root namespace.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${apt_packages[@]}"
else
    log "all Debian packages present"
fi

# --- 2. Python venv ---------------------------------------------------------------------------------------

# Debian's own python3 matches the python3-venv package installed above; fall back to whatever is on PATH.
if [[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    base_python=/usr/bin/python3
else
    base_python="$(command -v python3)"
fi

# A venv whose interpreter no longer starts (base Python removed or upgraded) is rebuilt from scratch.
if [[ ! -x "$venv_dir/bin/python" ]] || ! "$venv_dir/bin/python" -c 'import sys' >/dev/null 2>&1; then
    log "creating venv at .venv with $base_python"
    rm -rf "$venv_dir"
    "$base_python" -m venv "$venv_dir"
fi

# The stamp covers the requirement files and the venv's Python version.
wanted_stamp="$(
    {
        "$venv_dir/bin/python" -c 'import sys; print(sys.version)'
        for f in "${requirement_files[@]}"; do
            printf '== %s\n' "$f"
            cat "$f"
        done
    } | sha256sum | cut -d' ' -f1
)"

if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$wanted_stamp" ]]; then
    log "venv up to date"
else
    log "installing Python requirements into .venv"
    rm -f "$stamp_file"
    pip_args=()
    for f in "${requirement_files[@]}"; do
        pip_args+=(-r "$f")
    done
    "$venv_dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${pip_args[@]}"
    printf '%s\n' "$wanted_stamp" >"$stamp_file"
    log "venv ready"
fi
