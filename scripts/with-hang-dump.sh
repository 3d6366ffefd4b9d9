#!/usr/bin/env bash
# Usage: scripts/with-hang-dump.sh MINUTES CMD [ARGS...]
#
# Runs CMD; if it is still running after MINUTES, prints the stack of every thread of each test process under it
# (the swift-testing/XCTest runner `*PackageTests.xctest` and any `nearby` it spawned; gdb, batch mode) and the
# process tree, then ends CMD's process group (TERM, and KILL 30 s later) and exits 124, like timeout(1).
# A hung test then fails CI with the place it hung instead of only the time it took.
set -uo pipefail

if (($# < 2)); then
    echo "usage: $0 MINUTES CMD [ARGS...]" >&2
    exit 2
fi
minutes="$1"
shift

# CMD in its own process group, so the whole tree can be ended by its PID.
setsid "$@" &
pid=$!
# Interrupted or stopped ourselves (Ctrl-C, an outer timeout): CMD's group goes too.
trap 'kill -TERM -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 130' INT TERM

descendants() {
    local children
    children=$(pgrep -P "$1" || true)
    for child in $children; do
        echo "$child"
        descendants "$child"
    done
}

dump_and_end() {
    echo "with-hang-dump: still running after $minutes min; stacks follow" >&2
    ps -o pid,ppid,etime,args --forest -g "$pid" >&2 || true
    for child in $(descendants "$pid"); do
        local name
        name=$(tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null | cut -c1-200)
        case "$name" in
            *PackageTests.xctest* | */nearby\ *)
                echo "with-hang-dump: --- threads of $child: $name" >&2
                if command -v gdb >/dev/null; then
                    timeout 120 gdb -p "$child" -batch -ex "thread apply all bt 30" 2>&1 | grep -v '^\[New LWP' >&2 || true
                else
                    echo "with-hang-dump: gdb is not installed" >&2
                fi
                ;;
        esac
    done
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
    if ((SECONDS >= deadline)) && kill -0 "$pid" 2>/dev/null; then
        dump_and_end
        wait "$pid" 2>/dev/null
        exit 124
    fi
done
wait "$pid"
