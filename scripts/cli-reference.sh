#!/usr/bin/env bash
# Regenerates the Reference part of docs/CLI.md (between its GENERATED HELP markers) from the tool's own help:
# `nearby help COMMAND` at 100 columns for every command, in the order `nearby --experimental-dump-help` lists
# them. CLIReferenceTests fails when the file and the help differ.
#
#   scripts/cli-reference.sh
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --product nearby >&2
nearby="$(swift build --show-bin-path)/nearby"

python3 - "$nearby" <<'PY'
import json, os, re, subprocess, sys

nearby = sys.argv[1]
environment = dict(os.environ, COLUMNS="100")
tree = json.loads(subprocess.run([nearby, "--experimental-dump-help"], check=True, capture_output=True, text=True).stdout)

def paths(command, prefix):
    yield prefix
    for sub in command.get("subcommands", []):
        if sub["commandName"] == "help":
            continue
        yield from paths(sub, prefix + [sub["commandName"]])

sections = []
for path in paths(tree["command"], []):
    text = subprocess.run([nearby, "help", *path], check=True, capture_output=True, text=True, env=environment).stdout
    text = "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))
    sections.append(f"### nearby {' '.join(path)}".rstrip() + "\n\n```text\n" + text + "\n```\n")

doc_path = "docs/CLI.md"
doc = open(doc_path, encoding="utf-8").read()
begin = "<!-- BEGIN GENERATED HELP (scripts/cli-reference.sh) -->\n"
end = "<!-- END GENERATED HELP -->"
head, rest = doc.split(begin, 1)
_, tail = rest.split(end, 1)
open(doc_path, "w", encoding="utf-8").write(head + begin + "\n" + "\n".join(sections) + "\n" + end + tail)
print(f"docs/CLI.md: {len(sections)} commands")
PY
