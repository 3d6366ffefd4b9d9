#!/usr/bin/env bash
# Usage: scripts/soak-messages.sh [MESSAGES]      (default 1000; as root, like scripts/soak.sh)
#
# Hostile-publisher soak of Nearby Messages (docs/HARDENING.md, "Messages soak"): a victim `nearby service` with a
# subscription, a watcher and a lister as clients, against a hostile publisher (a second `nearby service` driven
# over its socket) that publishes MESSAGES distinct large messages in waves (random content, one in four a poison:
# 100 KiB of 0x01, whose event line is about 800 KiB), while another client sends poison lines to the victim
# (invalid JSON, binary junk, over-long lines, unknown operations) and a `nearby beacons --replay` subscriber
# decodes a flood of spoofed beacons from 50,000 addresses. Every client of the victim must stay connected, the
# victim's RSS and CPU must stay within the limits below, and the beacon subscriber's RSS too. Exits non-zero on
# any violation; the last line is a summary with the figures.
#
# Not run by CI (it takes several minutes). Environment: SOAK_NEARBY=/path/to/nearby (skip the build),
# SOAK_BUILD=debug|release (default debug), SOAK_KEEP=1 (keep the work directory), SOAK_WAVE (messages per wave,
# default 50), SOAK_RSS_LIMIT_MB (default 200: the victim's peak RSS), SOAK_CPU_LIMIT (default 0.25: the victim's
# CPU seconds per message), SOAK_BEACON_RSS_LIMIT_MB (default 80).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
count="${1:-1000}"
if ! [[ "$count" =~ ^[0-9]+$ ]] || ((count < 1)); then
    echo "usage: $0 [MESSAGES]" >&2
    exit 2
fi

if [[ "${NEARBY_TEST_NETNS:-}" != 1 ]]; then
    scripts/install-deps.sh
    if [[ -z "${SOAK_NEARBY:-}" ]]; then
        configuration="${SOAK_BUILD:-debug}"
        swift build -c "$configuration" --product nearby >&2
        SOAK_NEARBY="$(swift build -c "$configuration" --show-bin-path)/nearby"
        export SOAK_NEARBY
    fi
    exec scripts/with-test-network.sh "$repo_root/scripts/soak-messages.sh" "$@"
fi

exec python3 "$repo_root/scripts/soak_messages.py" "$count"
