#!/usr/bin/env bash
# Regenerates Sources/NearbyWire/Generated/*.pb.swift from Protocols/*.proto.
#
# Uses protoc from apt (protobuf-compiler) and protoc-gen-swift built from the swift-protobuf version this package
# depends on, so the generated code always matches the runtime library. The output is committed; no build plugin.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v protoc >/dev/null 2>&1; then
    echo "protoc not found: apt-get install protobuf-compiler" >&2
    exit 1
fi

swift build --product protoc-gen-swift >/dev/null
plugin="$(swift build --show-bin-path)/protoc-gen-swift"

out=Sources/NearbyWire/Generated
rm -f "$out"/*.pb.swift
protoc \
    --plugin=protoc-gen-swift="$plugin" \
    --swift_out="$out" \
    --swift_opt=Visibility=Public \
    -I Protocols \
    Protocols/*.proto
echo "generated: $(ls "$out")"
