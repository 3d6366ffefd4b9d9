import Crypto
import Foundation
import NearbySecurity
import NearbyWire
import SwiftProtobuf
import Testing

struct Ukey2PublicKeyCodingTests {
    private func encoded(x: [UInt8], y: [UInt8], type: ProtoPublicKeyType = .ecP256) throws -> [UInt8] {
        var key = ProtoGenericPublicKey()
        key.type = type
        key.ecP256PublicKey.x = Data(x)
        key.ecP256PublicKey.y = Data(y)
        return try key.serializedBytes()
    }

    private func coordinates(_ key: P256.KeyAgreement.PublicKey) -> (x: [UInt8], y: [UInt8]) {
        let raw = Array(key.rawRepresentation)
        return (Array(raw[0..<32]), Array(raw[32..<64]))
    }

    @Test("Coordinates are written with a 0x00 in front of the minimal magnitude", .timeLimit(.minutes(5)))
    func writesPrefix() throws {
        for _ in 0..<50 {
            let key = P256.KeyAgreement.PrivateKey().publicKey
            let generic = try ProtoGenericPublicKey(serializedBytes: Ukey2PublicKeyCoding.encode(key))
            #expect(generic.type == .ecP256)
            let (x, y) = coordinates(key)
            #expect(Array(generic.ecP256PublicKey.x) == [0] + x.drop(while: { $0 == 0 }))
            #expect(Array(generic.ecP256PublicKey.y) == [0] + y.drop(while: { $0 == 0 }))
            #expect(try Ukey2PublicKeyCoding.decode(Ukey2PublicKeyCoding.encode(key)).rawRepresentation
                == key.rawRepresentation)
        }
    }

    @Test("Coordinate lengths follow the 1…33 rule", .timeLimit(.minutes(5)))
    func coordinateLengths() throws {
        #expect(try Ukey2PublicKeyCoding.decodeCoordinate([0x05], name: "x") == [UInt8](repeating: 0, count: 31) + [5])
        #expect(try Ukey2PublicKeyCoding.decodeCoordinate([0] + [UInt8](repeating: 0xAB, count: 32), name: "x")
            == [UInt8](repeating: 0xAB, count: 32))
        #expect(throws: NearbyError.self) { try Ukey2PublicKeyCoding.decodeCoordinate([], name: "x") }
        #expect(throws: NearbyError.self) {
            try Ukey2PublicKeyCoding.decodeCoordinate([1] + [UInt8](repeating: 0xAB, count: 32), name: "x")
        }
        #expect(throws: NearbyError.self) {
            try Ukey2PublicKeyCoding.decodeCoordinate([UInt8](repeating: 0, count: 34), name: "x")
        }
    }

    @Test("A 34-byte coordinate in a real key is rejected", .timeLimit(.minutes(5)))
    func rejects34ByteCoordinate() throws {
        let (x, y) = coordinates(P256.KeyAgreement.PrivateKey().publicKey)
        let error = #expect(throws: NearbyError.self) {
            try Ukey2PublicKeyCoding.decode(try self.encoded(x: [0, 0] + x, y: [0] + y))
        }
        #expect(error?.code == .handshakeFailed)
    }

    @Test("A point off the curve is rejected", .timeLimit(.minutes(5)))
    func rejectsOffCurve() throws {
        let (x, y) = coordinates(P256.KeyAgreement.PrivateKey().publicKey)
        var badY = y
        badY[31] ^= 0x01
        #expect(throws: NearbyError.self) { try Ukey2PublicKeyCoding.decode(try self.encoded(x: [0] + x, y: [0] + badY)) }
        #expect(throws: NearbyError.self) {
            try Ukey2PublicKeyCoding.decode(try self.encoded(x: [0], y: [0]))
        }
    }

    @Test("Keys of other types and unparseable bytes are rejected", .timeLimit(.minutes(5)))
    func rejectsOtherTypes() throws {
        let (x, y) = coordinates(P256.KeyAgreement.PrivateKey().publicKey)
        #expect(throws: NearbyError.self) { try Ukey2PublicKeyCoding.decode(try self.encoded(x: x, y: y, type: .rsa2048)) }
        #expect(throws: NearbyError.self) { try Ukey2PublicKeyCoding.decode([0xFF, 0xFF]) }
    }

    @Test("A 32-byte coordinate with its high bit set and no prefix is read as unsigned", .timeLimit(.minutes(5)))
    func acceptsUnprefixedHighBit() throws {
        let key = P256.KeyAgreement.PrivateKey().publicKey
        let (x, y) = coordinates(key)
        let decoded = try Ukey2PublicKeyCoding.decode(try encoded(x: x, y: y))
        #expect(decoded.rawRepresentation == key.rawRepresentation)
    }

    @Test("A handshake with an off-curve ServerInit key fails with BAD_PUBLIC_KEY", .timeLimit(.minutes(5)))
    func handshakeOffCurve() throws {
        var client = Ukey2Client()
        var server = Ukey2Server()
        guard case .send(let serverInitBytes) = server.receive(try client.start()) else {
            Issue.record("no ServerInit"); return
        }
        var envelope = try ProtoUkey2Message(serializedBytes: serverInitBytes)
        var inner = try ProtoUkey2ServerInit(serializedBytes: envelope.messageData)
        var key = try ProtoGenericPublicKey(serializedBytes: inner.publicKey)
        var y = Array(key.ecP256PublicKey.y)
        y[y.count - 1] ^= 0x01
        key.ecP256PublicKey.y = Data(y)
        inner.publicKey = try key.serializedData()
        envelope.messageData = try inner.serializedData()
        let failure = try #require(client.receive(try envelope.serializedBytes() as [UInt8]).failure)
        let alert = try ProtoUkey2Alert(
            serializedBytes: try ProtoUkey2Message(serializedBytes: try #require(failure.alert)).messageData)
        #expect(alert.type == .badPublicKey)
    }
}
