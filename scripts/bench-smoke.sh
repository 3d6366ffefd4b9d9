#!/usr/bin/env bash
# CI smoke run of the benchmark: builds nearby-bench in release mode, runs `nearby-bench --json --quick` inside the
# private test network (so discovery_latency has an avahi-daemon), and checks that it completed and printed every
# figure with a numeric value. No timing thresholds: wall-clock figures on shared machines are noise (see
# Benchmarks/README.md). One guard: the CPU seconds per GiB of the file transfer, on each side, against the cost of
# the cipher measured in the same run (sealing for the sender, opening for the receiver: 1 GiB at
# crypto_limit / crypto_open_limit). CPU time barely moves with the machine's load, so a side that spends more than
# NEARBY_BENCH_CPU_LIMIT (default 3, as issue 24 asked) times its cipher's cost fails the smoke run: some per-chunk
# work came back. The file is 1 GiB here, as in a full run, not the quick 64 MiB: with 256 MiB the fixed costs of
# the connection and the file raised the receiver from about 2.1x to 2.45x, too close to the limit (quiet 1 GiB runs in
# session 19: sender 1.4-1.9x, receiver 1.8-2.6x; Benchmarks/README.md). When only the guard fails, the cipher and
# the transfers are measured once more (`--only transfer`) and the guard decides on that run: a regression fails
# both, one run slowed by the VM's neighbours does not.
#
# Usage: scripts/bench-smoke.sh   (after scripts/install-deps.sh; the JSON lines are copied to stdout)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

swift build -c release --product nearby-bench
bench="$(swift build -c release --show-bin-path)/nearby-bench"
output="$(mktemp)"
rerun="$(mktemp)"
trap 'rm -f "$output" "$rerun"' EXIT

# check MODE FILE: MODE "all" checks every figure and the CPU guard, "cpu" only the guard. Exits 1 when a figure is
# missing or has no value, 2 when only the CPU guard failed.
check() {
NEARBY_BENCH_CPU_LIMIT="${NEARBY_BENCH_CPU_LIMIT:-3}" python3 - "$1" "$2" <<'PY'
import json, os, sys
mode, path = sys.argv[1], sys.argv[2]
# (metric, baseline, qualifier): the qualifier tells apart lines of one metric and baseline (side, spokes).
expected = {
    ("crypto_limit", "aes_cbc_hmac_sha256", None), ("crypto_open_limit", "aes_cbc_hmac_sha256", None),
    ("parallel_sealing", "crypto_limit", None), ("parallel_sealing", "one_task", None),
    ("wifi_lan_file_throughput", "plain_tcp", None), ("wifi_lan_file_throughput", "crypto_limit", None),
    ("cpu_seconds_per_gib", "plain_tcp", "sender"), ("cpu_seconds_per_gib", "plain_tcp", "receiver"),
    ("wifi_lan_bytes_throughput", "plain_tcp", None), ("wifi_lan_bytes_throughput", "crypto_limit", None),
    ("rss_during_transfer", "receiver_idle_rss", None), ("connect_latency", "plain_tcp", None),
    ("connect_latency_p99", "plain_tcp", None),
    ("star_connect_all", "plain_tcp", "20"), ("star_aggregate_throughput", "single_connection", "10"),
    ("star_aggregate_throughput", "plain_tcp_fan_in", "10"),
    ("idle_connection_memory", None, None), ("discovery_latency", "avahi_tools", None),
}
seen, problems, figures = set(), [], {}
for number, line in enumerate(open(path), 1):
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
    figures[key] = figure
    if not isinstance(figure.get("value"), (int, float)):
        problems.append(f"{key[0]} has no value: {line}")
    if key[1] is not None and not isinstance(figure.get("ratio"), (int, float)):
        problems.append(f"{key[0]} vs {key[1]} has no ratio: {line}")
if mode == "cpu":
    problems = []
else:
    for key in sorted(expected - seen, key=str):
        problems.append(f"missing figure {key[0]} (baseline {key[1]}{', ' + key[2] if key[2] else ''})")
cpu_problems = []

# CPU per GiB of each side against its cipher's cost in the same run (seconds to seal / open 1 GiB on one core).
limit = float(os.environ["NEARBY_BENCH_CPU_LIMIT"])
gib_mb = (1 << 30) / 1e6
for side, cipher_metric, work in (("sender", "crypto_limit", "seal"), ("receiver", "crypto_open_limit", "open")):
    cpu = figures.get(("cpu_seconds_per_gib", "plain_tcp", side), {}).get("value")
    rate = figures.get((cipher_metric, "aes_cbc_hmac_sha256", None), {}).get("value")
    if not isinstance(cpu, (int, float)) or not isinstance(rate, (int, float)) or rate <= 0:
        continue  # already reported as missing above
    cost = gib_mb / rate
    print(f"bench-smoke: {side} CPU {cpu:.2f} s/GiB, {work} cost {cost:.2f} s/GiB ({cipher_metric} {rate:.0f} MB/s): "
          f"{cpu / cost:.2f}x (limit {limit:g}x)", file=sys.stderr)
    if cpu > limit * cost:
        cpu_problems.append(f"{side} CPU per GiB {cpu:.2f} s is {cpu / cost:.2f}x the {work} cost of {cost:.2f} s "
                            f"(limit {limit:g}x): per-chunk overhead came back (Benchmarks/README.md, issue 24)")
if problems or cpu_problems:
    print("bench-smoke: FAILED\n  " + "\n  ".join(problems + cpu_problems), file=sys.stderr)
    sys.exit(1 if problems else 2)
if mode != "cpu":
    print(f"bench-smoke: all {len(expected)} figures printed with values", file=sys.stderr)
PY
}

scripts/with-test-network.sh timeout --signal=TERM --kill-after=30s 10m "$bench" --json --quick --file-mib 1024 | tee "$output"
status=0
check all "$output" || status=$?
if [ "$status" -eq 2 ]; then
    # CPU time moves less with load than wall time, but a VM's neighbours still move it: today's quiet 1 GiB runs
    # put the receiver anywhere between 1.8x and 2.6x. A real regression fails twice; one noisy run does not.
    echo "bench-smoke: the CPU guard failed once; measuring the cipher and the transfers again" >&2
    scripts/with-test-network.sh timeout --signal=TERM --kill-after=30s 10m "$bench" --json --quick --only transfer \
        --file-mib 1024 | tee "$rerun"
    check cpu "$rerun"
elif [ "$status" -ne 0 ]; then
    exit "$status"
fi
