#!/usr/bin/env python3
"""Fails when library code starts an unstructured task without saying who owns it (docs/ARCHITECTURE.md, "Every
long-lived task has an owner that ends it").

Usage: scripts/check-task-owners.py [--list] [PATH ...]   (default: the library modules under Sources)

An unstructured task is `Task { ... }`, `Task(priority: ...) { ... }`, `Task<...> { ... }` or `Task.detached`.
Each needs a comment containing `Owner:` on its own line or on one of the four lines above it, naming who keeps,
cancels or awaits the handle and how the task ends (or why it ends by itself). Task groups, `TaskScope` children
and `TimerTask`s are owned by construction and not matched. Doc comments, strings and the command-line tools,
benchmarks and probes (whose tasks end with the process) are not checked. `--list` prints every site with its
owner comment. Exit status 1 when a site has none.
"""

import os
import re
import sys

LIBRARIES = [
    "NearbyAudio", "NearbyBLE", "NearbyBlueZ", "NearbyConnections", "NearbyCore", "NearbyMessages",
    "NearbyMessagesService", "NearbyPulseAudio", "NearbyQuickShare", "NearbySecurity", "NearbyWiFiLAN", "NearbyWire",
]
TASK = re.compile(r"(?<![\w.])Task(<[^>{}]*>)?\s*(\(\s*(priority|name)[^)]*\))?\s*\{|(?<![\w.])Task\.detached\b")
LOOKBACK = 4


def strip_strings(line):
    return re.sub(r'"(\\.|[^"\\])*"', '""', line)


def check(path, listing):
    problems = 0
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    for index, raw in enumerate(lines):
        stripped = raw.strip()
        if stripped.startswith("///") or stripped.startswith("//"):
            continue
        code = strip_strings(raw.split("//")[0])
        # `-> Task<…> {` and `: Task<…> {` are a type before a body, not a task being started.
        if not any(not code[:m.start()].rstrip().endswith(("->", ":")) for m in TASK.finditer(code)):
            continue
        window = lines[max(0, index - LOOKBACK):index + 1]
        owner = next((line.strip() for line in window if "Owner:" in line), None)
        if owner is None:
            problems += 1
            print(f"{path}:{index + 1}: an unstructured task without an `// Owner:` comment: {stripped}")
        elif listing:
            print(f"{path}:{index + 1}: {owner}")
    return problems


def main(arguments):
    listing = "--list" in arguments
    roots = [a for a in arguments if a != "--list"] or [os.path.join("Sources", name) for name in LIBRARIES]
    problems = 0
    files = 0
    for root in roots:
        for directory, _, names in os.walk(root):
            for name in sorted(names):
                if name.endswith(".swift"):
                    files += 1
                    problems += check(os.path.join(directory, name), listing)
    if problems:
        print(f"check-task-owners: {problems} unstructured task(s) without an owner in {files} files "
              "(docs/ARCHITECTURE.md, \"Every long-lived task has an owner\")", file=sys.stderr)
        return 1
    print(f"check-task-owners: {files} files, every unstructured task names its owner", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
