import NearbyWire

/// `OfflineFrame` parsing and every receive rule of ``OfflineFrameValidator``, with both upgrade-address policies;
/// a frame that passes must pass again after re-serialisation.
func fuzzOfflineFrame(_ input: FuzzInput) {
    let bytes = input.bytes
    for policy in [OfflineFrameValidator.Policy(), OfflineFrameValidator.Policy(allowsLoopbackUpgradeAddresses: true)] {
        guard let frame = try? ProtoOfflineFrame(serializedBytes: bytes) else { continue }
        let first = try? OfflineFrameParser.classify(frame, policy: policy)
        guard let first else { continue }
        let reserialized = OfflineFrames.serialize(frame)
        let second = try? OfflineFrameParser.parse(reserialized, policy: policy)
        fuzzCheck(second?.frameType == first.frameType, "a valid frame did not survive re-serialisation")
    }
    _ = try? OfflineFrameParser.parse(bytes)
    _ = OfflineFrameValidator.isRefusedUpgradeAddress(bytes)
}
