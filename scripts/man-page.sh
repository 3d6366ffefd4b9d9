#!/usr/bin/env bash
# Writes the `nearby` man page, .build/man/nearby.1, with swift-argument-parser's generate-manual plugin (from the
# tool's own help, so it always matches it). Read it with `man -l .build/man/nearby.1`; install it with
# `sudo cp .build/man/nearby.1 /usr/local/share/man/man1/`.
#
#   scripts/man-page.sh
set -euo pipefail
cd "$(dirname "$0")/.."

swift package plugin --allow-writing-to-package-directory generate-manual --product nearby \
    --authors "the swift-nearby authors" --output-directory .build/man >&2 \
  || swift package generate-manual --product nearby --output-directory .build/man >&2
ls .build/man/nearby.1
