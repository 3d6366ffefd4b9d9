#!/usr/bin/env python3
"""Prints the failures recorded in a swift-testing log: scripts/test-failures.py LOG
(or only the tests that started and did not end: scripts/test-failures.py --unfinished LOG)

Each "recorded an issue" line is printed with the lines of its message that follow it (a multi-line expectation
or error), then every test and suite that failed, then the run's last summary line; with no recorded issue (a run
stopped as hung), the tests that started and did not end. scripts/test.sh calls it when
the suite failed, so the end of a CI log says which test failed and why even when the log is cut to its tail.
"""
import re
import sys

MARKERS = ("\u25c7 ", "\u2714 ", "\u2718 ", "\u25b8 ", "\u2192 ", "\u21b3 ")  # ◇ ✔ ✘ ▸ → ↳ start swift-testing lines


def main(path: str) -> int:
    lines = open(path, errors="replace").read().splitlines()
    issues, failed, summary = [], [], None
    index = 0
    while index < len(lines):
        line = lines[index]
        if " recorded an issue" in line:
            block = [line]
            index += 1
            while index < len(lines) and len(block) < 12 and not lines[index].startswith(MARKERS):
                block.append(lines[index])
                index += 1
            # swift-testing prints the issue's comment and details as "↳" lines right after it.
            while index < len(lines) and lines[index].startswith("\u21b3 ") and len(block) < 20:
                block.append(lines[index])
                index += 1
            issues.append(block)
            continue
        if line.startswith("\u2718 ") and " failed" in line:
            if line.startswith("\u2718 Test run"):
                summary = line
            else:
                failed.append(line)
        index += 1
    for block in issues:
        for entry in block:
            print("  " + entry[:1000])
    for line in failed:
        print("  " + line[:500])
    if summary:
        print("  " + summary)
    if not issues and not failed:
        print("  (no recorded issue in the log: the run ended some other way, e.g. stopped as hung; see above)")
        for name, _ in unfinished(lines):
            print("  started and did not end: " + name[:300])
    return 0


def unfinished(lines):
    """The tests and suites that printed "started" and never passed, failed or were skipped (a hung run)."""
    open_tests = {}
    for number, line in enumerate(lines):
        if line.startswith(("\u25c7 Test case ", "\u25c7 Test run")):
            continue
        started = re.match(r"^\S+ (Test|Suite) (.*?) started\.$", line)
        if started:
            open_tests[started.group(1) + " " + started.group(2)] = number
            continue
        ended = re.match(r"^\S+ (Test|Suite) (.*?)( with \d+ test cases?)? ((passed|failed) after [\d.]+ seconds.*|skipped(\.|: .*))$", line)
        if ended:
            open_tests.pop(ended.group(1) + " " + ended.group(2), None)
    return sorted(open_tests.items(), key=lambda item: item[1])


if __name__ == "__main__":
    if sys.argv[1] == "--unfinished":
        # scripts/with-hang-dump.sh's list for a run it stopped: the tests that started and did not end.
        lines = open(sys.argv[2], errors="replace").read().splitlines()
        for name, number in unfinished(lines):
            print(f"  {name} (line {number + 1})")
        sys.exit(0)
    sys.exit(main(sys.argv[1]))
