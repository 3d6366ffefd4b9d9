#!/usr/bin/env bash
# The one command that runs the whole test suite: scripts/test.sh [swift test args, e.g. --filter NearbyWireTests]
#
# Installs the dependencies (apt packages, the pinned Python venv), builds the package and its tests in the
# host namespaces, then runs `swift test` inside scripts/with-test-network.sh (private network namespace with
# only lo, private dbus + avahi). swift test's output is passed through unchanged and its exit code returned.
# Without arguments, the BlueZ VM smoke tests (scripts/test-bluez-vm.sh) run afterwards; see below.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

scripts/install-deps.sh

swift build --build-tests

export NEARBY_REPO_ROOT="$repo_root"
export NEARBY_ORACLE_PYTHON="$repo_root/.venv/bin/python"
# The Python with bumble==0.0.236 that the BLE tests run their virtual controllers and peers with.
export NEARBY_BLE_PYTHON="$repo_root/.venv/bin/python"

# The BlueZ VM smoke tests (scripts/test-bluez-vm.sh: the real kernel Bluetooth stack in a QEMU guest on a Bumble
# controller) run after the Swift suite when no arguments are given; NEARBY_TEST_BLUEZ_VM=1 or 0 forces them on or off.
run_bluez_vm="${NEARBY_TEST_BLUEZ_VM:-$((($# == 0) ? 1 : 0))}"
if [[ "$run_bluez_vm" == 1 ]]; then
    # Fetches Debian 13's kernel into .build-vm/ once (needs the network, so before entering the test namespace).
    scripts/with-bluez-vm.sh --prepare
fi

# Tests run one at a time: several suites share one avahi-daemon and real sockets, and keep-alive tests must not
# be starved by parallel CPU-heavy transfers on a 2-core machine.
# A hung test must not eat the whole CI budget: when swift test has printed nothing for 10 minutes (it prints a line
# as each test starts and ends; the longest test prints progress), or after 40 minutes in all (the suite takes
# about 15 on 2 cores), the stacks of the test processes are printed and swift test is stopped (exit 124;
# scripts/with-hang-dump.sh).
# swift test's output is kept in .build/test-output.log; when it fails, the issues it recorded are printed again
# at the very end (after the BlueZ VM tests), so the tail of a CI log names the failing test and its message.
set +e
test_log="$repo_root/.build/test-output.log"
rm -f "$test_log"
scripts/with-test-network.sh scripts/with-hang-dump.sh --idle 10 --log "$test_log" 40 swift test --no-parallel "$@"
rc=$?
swift_rc=$rc
if [[ "$run_bluez_vm" == 1 ]]; then
    scripts/with-test-network.sh timeout --signal=TERM --kill-after=30s 15m scripts/test-bluez-vm.sh
    vm_rc=$?
    ((rc != 0)) || rc=$vm_rc
fi
if ((swift_rc != 0)) && [[ -s "$test_log" ]]; then
    echo "test.sh: swift test's failures again (all of its output is in $test_log):"
    python3 scripts/test-failures.py "$test_log" || true
fi
exit "$rc"
