import Crypto
import Foundation
import NearbySecurity
import NearbyWire
import Testing

/// swift-nearby's extension announcement and reconnect proofs (docs/LINK-SAFETY.md), checked against an
/// independent computation with swift-crypto's HKDF and HMAC and against fixed vectors.
@Suite("swift-nearby extension: announcements and reconnect proofs", .timeLimit(.minutes(1)))
struct PeerExtensionTests {
    /// A handshake with fixed keys and randoms, so its secrets (and everything derived) are fixed.
    static func fixedHandshake() throws -> HandshakeHarness.Outcome {
        let clientKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32))
        let serverKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x22, count: 32))
        return try HandshakeHarness.run(
            client: Ukey2Client(privateKey: clientKey, random: [UInt8](repeating: 0x33, count: 32)),
            server: Ukey2Server(privateKey: serverKey, random: [UInt8](repeating: 0x44, count: 32)))
    }

    /// The announcement computed from its description, without `PeerExtension`.
    static func independentAnnouncement(features: UInt8, announcer: UInt8, secret: [UInt8]) -> [UInt8] {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: secret), salt: Array("swift-nearby".utf8),
            info: Array("capabilities".utf8), outputByteCount: 32)
        let body: [UInt8] = [0x53, 0x4E, 1, features]
        let mac = HMAC<SHA256>.authenticationCode(for: [announcer] + body, using: key)
        return body + Array(mac).prefix(16)
    }

    @Test("The announcement is magic, version, features and a 16-byte tag over the announcer's role")
    func layout() throws {
        let outcome = try Self.fixedHandshake()
        let features: PeerExtension.Features = [.payloadAcks, .autoResume]
        let fromClient = PeerExtension.announcement(features, handshake: outcome.client)
        let fromServer = PeerExtension.announcement(features, handshake: outcome.server)
        #expect(fromClient == Self.independentAnnouncement(features: 5, announcer: 0x43, secret: outcome.client.nextProtocolSecret))
        #expect(fromServer == Self.independentAnnouncement(features: 5, announcer: 0x53, secret: outcome.server.nextProtocolSecret))
        #expect(fromClient != fromServer)
        #expect(fromClient.count == PeerExtension.announcementLength)
    }

    @Test("Each side reads the other's announcement; its own reflected back, another handshake's, or an altered one are ignored")
    func verification() throws {
        let outcome = try Self.fixedHandshake()
        let other = try HandshakeHarness.run()
        let fromServer = PeerExtension.announcement(.all, handshake: outcome.server)
        let fromClient = PeerExtension.announcement([.payloadAcks], handshake: outcome.client)
        #expect(PeerExtension.features(in: fromServer, handshake: outcome.client) == .all)
        #expect(PeerExtension.features(in: fromClient, handshake: outcome.server) == [.payloadAcks])
        #expect(PeerExtension.features(in: fromServer, handshake: outcome.server) == nil, "reflected")
        #expect(PeerExtension.features(in: fromServer, handshake: other.client) == nil, "another connection's")
        var altered = fromServer
        altered[3] = 0x01
        #expect(PeerExtension.features(in: altered, handshake: outcome.client) == nil)
        #expect(PeerExtension.features(in: [], handshake: outcome.client) == nil)
        #expect(PeerExtension.features(in: Array(fromServer.prefix(19)), handshake: outcome.client) == nil)
    }

    @Test("Reconnect proofs: both ends share the key; a proof holds for one role and one new handshake only")
    func reconnectProofs() throws {
        let old = try Self.fixedHandshake()
        let key = PeerExtension.reconnectKey(old.client)
        #expect(key == PeerExtension.reconnectKey(old.server) && key.count == 32)
        let fresh = try HandshakeHarness.run()
        let proof = PeerExtension.reconnectProof(key: key, role: .client, newAuthString: fresh.client.authString)
        #expect(PeerExtension.verifyReconnectProof(proof, key: key, peerRole: .client, newAuthString: fresh.server.authString))
        #expect(!PeerExtension.verifyReconnectProof(proof, key: key, peerRole: .server, newAuthString: fresh.server.authString))
        let another = try HandshakeHarness.run()
        #expect(!PeerExtension.verifyReconnectProof(proof, key: key, peerRole: .client, newAuthString: another.server.authString))
        let stranger = PeerExtension.reconnectProof(
            key: CryptoPrimitives.randomBytes(32), role: .client, newAuthString: fresh.client.authString)
        #expect(!PeerExtension.verifyReconnectProof(stranger, key: key, peerRole: .client, newAuthString: fresh.server.authString))
        // Independently: HMAC-SHA256 under HKDF(next-protocol secret, "swift-nearby", "reconnect").
        let independentKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: old.client.nextProtocolSecret), salt: Array("swift-nearby".utf8),
            info: Array("reconnect".utf8), outputByteCount: 32)
        #expect(independentKey.withUnsafeBytes { Array($0) } == key)
        let independentProof = HMAC<SHA256>.authenticationCode(
            for: Array("swift-nearby reconnect".utf8) + [0x43] + fresh.client.authString, using: independentKey)
        #expect(Array(independentProof) == proof)
    }
}
