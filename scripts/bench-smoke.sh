#!/usr/bin/env bash
# CI smoke run of the benchmark: builds nearby-bench in release mode, runs `nearby-bench --json --quick` inside the
# private test network (so discovery_latency has an avahi-daemon), and checks that it completed and printed every
# figure with a numeric value. No thresholds: timings on shared machines are noise (see Benchmarks/README.md).
#
# Usage: scripts/bench-smoke.sh   (after scripts/install-deps.sh; the JSON lines are copied to stdout)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

swift build -c release --product nearby-bench
bench="$(swift build -c release --show-bin-path)/nearby-bench"
output="$(mktemp)"
trap 'rm -f "$output"' EXIT

scripts/with-test-network.sh timeout --signal=TERM --kill-after=30s 10m "$bench" --json --quick | tee "$output"

python3 - "$output" <<'PY'
import json, sys
# (metric, baseline, qualifier): the qualifier tells apart lines of one metric and baseline (side, spokes).
expected = {
    ("crypto_limit", "aes_cbc_hmac_sha256", None), ("crypto_open_limit", "aes_cbc_hmac_sha256", None),
    ("wifi_lan_file_throughput", "plain_tcp", None), ("wifi_lan_file_throughput", "crypto_limit", None),
    ("cpu_seconds_per_gib", "plain_tcp", "sender"), ("cpu_seconds_per_gib", "plain_tcp", "receiver"),
    ("wifi_lan_bytes_throughput", "plain_tcp", None), ("wifi_lan_bytes_throughput", "crypto_limit", None),
    ("rss_during_transfer", "receiver_idle_rss", None), ("connect_latency", "plain_tcp", None),
    ("connect_latency_p99", "plain_tcp", None),
    ("star_connect_all", "plain_tcp", "20"), ("star_aggregate_throughput", "single_connection", "10"),
    ("star_aggregate_throughput", "plain_tcp_fan_in", "10"),
    ("idle_connection_memory", None, None), ("discovery_latency", "avahi_tools", None),
}
seen, problems = set(), []
for number, line in enumerate(open(sys.argv[1]), 1):
    line = line.strip()
    if not line:
        continue
    try:
        figure = json.loads(line)
    except ValueError:
        problems.append(f"line {number} is not JSON: {line!r}")
        continue
    key = (figure.get("metric"), figure.get("baseline"), figure.get("side") or figure.get("spokes"))
    seen.add(key)
    if not isinstance(figure.get("value"), (int, float)):
        problems.append(f"{key[0]} has no value: {line}")
    if key[1] is not None and not isinstance(figure.get("ratio"), (int, float)):
        problems.append(f"{key[0]} vs {key[1]} has no ratio: {line}")
for key in sorted(expected - seen, key=str):
    problems.append(f"missing figure {key[0]} (baseline {key[1]}{', ' + key[2] if key[2] else ''})")
if problems:
    print("bench-smoke: FAILED\n  " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"bench-smoke: all {len(expected)} figures printed with values", file=sys.stderr)
PY
