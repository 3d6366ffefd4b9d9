#!/usr/bin/env bash
# Usage: scripts/with-hang-dump.sh [--idle IDLE-MINUTES] [--log FILE] MINUTES CMD [ARGS...]
#
# Runs CMD; if it is still running after MINUTES, or (with --idle) it has printed nothing for IDLE-MINUTES, prints
# the stack of every thread of each test process under it (the swift-testing/XCTest runner `*PackageTests.xctest`
# and any `nearby` it spawned; gdb, batch mode) and the process tree, then ends CMD's process group (TERM, and KILL
# 30 s later) and exits 124, like timeout(1). A hung test then fails CI within minutes, with the place it hung,
# instead of at the end of the whole run's budget: swift test prints a line as each test starts and ends (its
# output is line-buffered here, through stdbuf), so silence longer than the longest test means a test is stuck.
# (swift-testing's own `.timeLimit` cannot end a test whose body never returns to it.) After the stacks it prints
# the tests that started and did not end, and the last lines of output, so the end of a CI log names the test.
# With --log FILE, everything CMD printed is also kept in FILE (scripts/test.sh reprints the failures from it).
set -uo pipefail

idle_minutes=0
keep_log=""
while [[ "${1:-}" == --idle || "${1:-}" == --log ]]; do
    case "$1" in
        --idle) idle_minutes="$2" ;;
        --log) keep_log="$2" ;;
    esac
    shift 2
done
if (($# < 2)); then
    echo "usage: $0 [--idle IDLE-MINUTES] [--log FILE] MINUTES CMD [ARGS...]" >&2
    exit 2
fi
minutes="$1"
shift

# CMD in its own process group, so the whole tree can be ended by its PID. Its output goes through a reader that
# notes the time of the last line (the idle watch).
work="$(mktemp -d "${TMPDIR:-/tmp}/with-hang-dump.XXXXXX")"
stamp="$work/last-output"
: >"$stamp"
mkfifo "$work/output"
# The reader: passes every line through and notes when the last one came.
(
    while IFS= read -r line || [[ -n "$line" ]]; do
        printf '%s\n' "$line"
        printf '%s\n' "$line" >>"$work/log"
        : >"$stamp"
    done <"$work/output"
) &
reader=$!
line_buffered=()
command -v stdbuf >/dev/null && line_buffered=(stdbuf -oL -eL)
setsid "${line_buffered[@]}" "$@" >"$work/output" 2>&1 &
pid=$!
finish() {
    wait "$reader" 2>/dev/null
    [[ -z "$keep_log" ]] || cp "$work/log" "$keep_log" 2>/dev/null || true
    rm -rf "$work"
}
# Interrupted or stopped ourselves (Ctrl-C, an outer timeout): CMD's group goes too.
trap 'kill -TERM -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; finish; exit 130' INT TERM

descendants() {
    local children
    children=$(pgrep -P "$1" || true)
    for child in $children; do
        echo "$child"
        descendants "$child"
    done
}

# The swift-testing tests (and cases) that printed "started" and neither "passed" nor "failed", and the last lines.
unfinished_tests() {
    echo "with-hang-dump: tests that started and did not end:"
    python3 "$(dirname "${BASH_SOURCE[0]}")/test-failures.py" --unfinished "$work/log" || true
    echo "with-hang-dump: the last lines of output:"
    tail -n 15 "$work/log" | cut -c1-300
}

dump_and_end() {
    echo "with-hang-dump: $1; stacks follow" >&2
    ps -o pid,ppid,etime,args --forest -g "$pid" >&2 || true
    for child in $(descendants "$pid"); do
        local name
        name=$(tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null | cut -c1-200)
        case "$name" in
            *PackageTests.xctest* | */nearby\ *)
                echo "with-hang-dump: --- threads of $child: $name" >&2
                if command -v gdb >/dev/null; then
                    timeout 120 gdb -p "$child" -batch -ex "thread apply all bt 30" 2>&1 \
                        | grep -v -e '^\[New LWP' -e '^During symbol reading' -e '^warning: Section' >&2 || true
                else
                    echo "with-hang-dump: gdb is not installed" >&2
                fi
                ;;
        esac
    done
    unfinished_tests >&2
    kill -TERM -- "-$pid" 2>/dev/null
    for _ in $(seq 30); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    kill -KILL -- "-$pid" 2>/dev/null
}

deadline=$((SECONDS + minutes * 60))
while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    kill -0 "$pid" 2>/dev/null || break
    if ((SECONDS >= deadline)); then
        dump_and_end "still running after $minutes min"
        wait "$pid" 2>/dev/null
        finish
        exit 124
    fi
    if ((idle_minutes > 0)); then
        idle=$(($(date +%s) - $(stat -c %Y "$stamp")))
        if ((idle >= idle_minutes * 60)); then
            dump_and_end "no output for $idle_minutes min (a test is stuck)"
            wait "$pid" 2>/dev/null
            finish
            exit 124
        fi
    fi
done
wait "$pid"
rc=$?
finish
exit "$rc"
