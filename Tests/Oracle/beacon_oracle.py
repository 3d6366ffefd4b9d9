#!/usr/bin/env python3
"""Independent beacon decoder for the NearbyMessages beacon tests, using PyPI `beacontools` (pinned in
requirements.txt).

Reads a JSON array of advertising-data byte strings (hex) on stdin and prints a JSON array with one object per
input: {"kind": ...fields...}, or {"kind": null} when beacontools does not decode it. Field names follow the Swift
side. Values are passed through as beacontools reports them (its known deviations from the Eddystone spec, e.g.
unsigned TLM temperature and little-endian salt/MIC, are left for the Swift test to account for).
"""
import binascii
import json
import sys

from beacontools import parse_packet
from beacontools.packet_types import (
    EddystoneEIDFrame,
    EddystoneEncryptedTLMFrame,
    EddystoneTLMFrame,
    EddystoneUIDFrame,
    EddystoneURLFrame,
    IBeaconAdvertisement,
)


def _hex(value):
    if isinstance(value, (bytes, bytearray)):
        return binascii.hexlify(bytes(value)).decode()
    return str(value)


def describe(frame):
    if isinstance(frame, EddystoneUIDFrame):
        return {"kind": "eddystone-uid", "tx_power": frame.tx_power, "namespace": frame.namespace,
                "instance": frame.instance}
    if isinstance(frame, EddystoneURLFrame):
        return {"kind": "eddystone-url", "tx_power": frame.tx_power, "url": frame.url}
    if isinstance(frame, EddystoneTLMFrame):
        return {"kind": "eddystone-tlm", "voltage": frame.voltage, "temperature": frame.temperature,
                "advertising_count": frame.advertising_count, "seconds_since_boot": frame.seconds_since_boot}
    if isinstance(frame, EddystoneEncryptedTLMFrame):
        return {"kind": "eddystone-etlm", "encrypted_data": _hex(frame.encrypted_data), "salt": frame.salt,
                "mic": frame.mic}
    if isinstance(frame, EddystoneEIDFrame):
        return {"kind": "eddystone-eid", "tx_power": frame.tx_power, "eid": _hex(frame.eid)}
    if isinstance(frame, IBeaconAdvertisement):
        return {"kind": "ibeacon", "tx_power": frame.tx_power, "uuid": str(frame.uuid), "major": frame.major,
                "minor": frame.minor}
    return {"kind": None}


def main():
    inputs = json.load(sys.stdin)
    out = []
    for text in inputs:
        try:
            frame = parse_packet(bytes.fromhex(text))
        except Exception:  # beacontools raises on some malformed input; that counts as "not decoded"
            frame = None
        out.append(describe(frame) if frame is not None else {"kind": None})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
