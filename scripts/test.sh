#!/usr/bin/env bash
# The one command that runs the whole test suite: scripts/test.sh [swift test args, e.g. --filter NearbyWireTests]
#
# Installs the dependencies (apt packages, the pinned Python venv), builds the package and its tests in the
# host namespaces, then runs `swift test` inside scripts/with-test-network.sh (private network namespace with
# only lo, private dbus + avahi). swift test's output is passed through unchanged and its exit code returned.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

scripts/install-deps.sh

swift build --build-tests

export NEARBY_REPO_ROOT="$repo_root"
export NEARBY_ORACLE_PYTHON="$repo_root/.venv/bin/python"
# The Python with bumble==0.0.236 that the BLE tests run their virtual controllers and peers with.
export NEARBY_BLE_PYTHON="$repo_root/.venv/bin/python"

# Tests run one at a time: several suites share one avahi-daemon and real sockets, and keep-alive tests must not
# be starved by parallel CPU-heavy transfers on a 2-core machine.
# A hung test must not eat the whole CI budget: stop swift test after 70 minutes (exit 124).
exec scripts/with-test-network.sh timeout --signal=TERM --kill-after=30s 70m swift test --no-parallel "$@"
