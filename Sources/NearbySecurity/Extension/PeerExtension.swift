import NearbyWire

/// swift-nearby's own extension of the protocol, which two swift-nearby peers agree on without any other peer
/// seeing anything it does not already parse.
///
/// Every peer gets `safe_to_disconnect_version` 1 in our CONNECTION_RESPONSE. Beside it, the response carries an
/// *announcement* in `handshake_data` (field 2), a field of Google's schema that its implementation never reads or
/// writes: `"SN"`, the extension version, a feature byte, and a 16-byte tag, HMAC-SHA256 under a key derived from
/// this connection's UKEY2 secret over the announcer's role and those four bytes. Only the peer at the other end of
/// this very handshake can check the tag, so a forged or replayed announcement is ignored, and a peer that sends no
/// valid announcement (any Google peer) is treated by its `safe_to_disconnect_version` alone.
///
/// The same handshake secret keys the proofs of an authenticated reconnect (``reconnectKey(_:)``,
/// ``reconnectProof(key:role:newAuthString:)``): a new channel is bound to the old session by proving knowledge of
/// the old session's key over the new handshake's authentication string.
package enum PeerExtension {
    /// What a swift-nearby peer supports beyond the `safe_to_disconnect_version` it announces.
    package struct Features: OptionSet, Sendable, Hashable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The receiver acknowledges every payload (BYTES too) with PAYLOAD_ACK once it has it.
        package static let payloadAcks = Features(rawValue: 1 << 0)
        /// The endpoint survives a broken channel: the side that connected re-establishes one (AUTO_RECONNECT).
        package static let autoReconnect = Features(rawValue: 1 << 1)
        /// Payloads in flight continue after a reconnect from the receiver's next chunk (AUTO_RESUME).
        package static let autoResume = Features(rawValue: 1 << 2)
    }

    /// The first bytes of an announcement.
    static let magic: [UInt8] = [0x53, 0x4E]
    /// The extension's version.
    static let version: UInt8 = 1
    /// Bytes of the tag kept (of HMAC-SHA256's 32).
    static let tagLength = 16
    /// An announcement's length: magic, version, features, tag.
    package static let announcementLength = 4 + tagLength

    /// The `handshake_data` announcing `features`, made by the side whose UKEY2 result is `handshake`.
    package static func announcement(_ features: Features, handshake: Ukey2HandshakeResult) -> [UInt8] {
        let body = magic + [version, features.rawValue]
        return body + tag(body, announcer: handshake.role, handshake: handshake)
    }

    /// The features the peer announced in `handshakeData`; `nil` when it announced none, or the announcement is
    /// malformed or not made for this handshake (a peer that is not swift-nearby, or a forgery).
    package static func features(in handshakeData: [UInt8], handshake: Ukey2HandshakeResult) -> Features? {
        guard handshakeData.count == announcementLength, Array(handshakeData.prefix(2)) == magic,
            handshakeData[2] == version
        else { return nil }
        let body = Array(handshakeData.prefix(4))
        let peerRole: Ukey2Role = handshake.role == .client ? .server : .client
        let expected = tag(body, announcer: peerRole, handshake: handshake)
        guard CryptoPrimitives.constantTimeEquals(expected, handshakeData.suffix(tagLength)) else { return nil }
        return Features(rawValue: handshakeData[3])
    }

    /// The key that proves, on a new channel, that its owner held this connection's handshake secret.
    package static func reconnectKey(_ handshake: Ukey2HandshakeResult) -> [UInt8] {
        CryptoPrimitives.hkdfSHA256(
            inputKeyMaterial: handshake.nextProtocolSecret, salt: Array("swift-nearby".utf8),
            info: Array("reconnect".utf8))
    }

    /// The proof a side of a reconnect sends: HMAC-SHA256 under the old session's ``reconnectKey(_:)`` over the
    /// sender's role on the new channel and the new handshake's authentication string, so it is valid on that one
    /// channel only.
    package static func reconnectProof(key: [UInt8], role: Ukey2Role, newAuthString: [UInt8]) -> [UInt8] {
        CryptoPrimitives.hmacSHA256(
            key: key, Array("swift-nearby reconnect".utf8) + [role == .client ? 0x43 : 0x53] + newAuthString)
    }

    /// Whether `proof` is the peer's valid ``reconnectProof(key:role:newAuthString:)`` (compared in constant time).
    package static func verifyReconnectProof(
        _ proof: [UInt8], key: [UInt8], peerRole: Ukey2Role, newAuthString: [UInt8]
    ) -> Bool {
        let expected = reconnectProof(key: key, role: peerRole, newAuthString: newAuthString)
        return CryptoPrimitives.constantTimeEquals(expected, proof)
    }

    private static func tag(_ body: [UInt8], announcer: Ukey2Role, handshake: Ukey2HandshakeResult) -> [UInt8] {
        let key = CryptoPrimitives.hkdfSHA256(
            inputKeyMaterial: handshake.nextProtocolSecret, salt: Array("swift-nearby".utf8),
            info: Array("capabilities".utf8))
        let mac = CryptoPrimitives.hmacSHA256(key: key, [announcer == .client ? 0x43 : 0x53] + body)
        return Array(mac.prefix(tagLength))
    }
}
