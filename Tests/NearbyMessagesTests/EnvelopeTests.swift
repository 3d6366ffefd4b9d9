import Foundation
import NearbyWire
import Testing

@testable import NearbyMessages

@Suite(.timeLimit(.minutes(5))) struct EnvelopeTests {
    @Test("a small message encodes to the documented bytes and back")
    func inlineKnownAnswer() throws {
        let message = Message(text: "hi", namespace: "ns", type: "t")
        let envelope = MessageEnvelope.advertisement(for: message)
        #expect(envelope.bytes == hex("4D 10 02 6E73 01 74 6869"))
        #expect(try MessageEnvelope.decode(envelope.bytes) == .message(message))
    }

    @Test("default namespace and type take two bytes")
    func emptyLabels() throws {
        let message = Message(content: Data([0xFF]))
        #expect(MessageEnvelope.message(message).bytes == hex("4D 10 00 00 FF"))
        #expect(try MessageEnvelope.decode(hex("4D 10 00 00 FF")) == .message(message))
    }

    @Test("a message whose envelope is exactly 131 bytes is inline; one byte more is a descriptor")
    func inlineBoundary() throws {
        let fits = Message(content: Data(repeating: 7, count: 131 - 4))
        #expect(MessageEnvelope.advertisement(for: fits).bytes.count == 131)
        #expect(MessageEnvelope.advertisement(for: fits) == .message(fits))
        let over = Message(content: Data(repeating: 7, count: 131 - 3))
        guard case .descriptor(let descriptor) = MessageEnvelope.advertisement(for: over) else {
            Issue.record("expected a descriptor")
            return
        }
        #expect(descriptor.contentLength == 128)
        #expect(descriptor.describes(over))
        #expect(!descriptor.describes(fits))
    }

    @Test("a descriptor encodes labels, big-endian length and the first 8 bytes of SHA-256")
    func descriptorKnownAnswer() throws {
        let message = Message(content: Data(repeating: 0x41, count: 1000), namespace: "a", type: "bc")
        let bytes = MessageEnvelope.advertisement(for: message).bytes
        #expect(bytes == hex("4D 11 01 61 02 6263 000003E8 c2e686823489ced2"))
        #expect(try MessageEnvelope.decode(bytes) == .descriptor(MessageDescriptor(message)))
    }

    @Test("the fetch request is two bytes")
    func fetchRequest() throws {
        #expect(MessageEnvelope.fetchRequest.bytes == [0x4D, 0x12])
        #expect(try MessageEnvelope.decode([0x4D, 0x12]) == .fetchRequest)
    }

    @Test("foreign and malformed endpoint info is rejected with invalidAdvertisement", arguments: [
        "", "41", "4D", "4D 20 00 00", "4D 13", "4D 10 05 6E", "4D 10 00", "4D 11 00 00 0000", "4D 10 02 FFFE 00",
        "4D 11 00 00 00019001 0102030405060708",  // announces 102,401 bytes
        "4D 11 00 00 00000001 0102030405060708 00",  // trailing byte
    ])
    func malformed(_ text: String) async {
        let code = await nearbyErrorCode { _ = try MessageEnvelope.decode(hex(text)) }
        #expect(code == .invalidAdvertisement, "\(text)")
    }

    @Test("random bytes never crash the decoder")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let count = Int.random(in: 0...140, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if count > 1, Bool.random(using: &generator) { bytes[0] = 0x4D; bytes[1] = 0x10 | (bytes[1] & 0x03) }
            _ = try? MessageEnvelope.decode(bytes)
        }
    }
}

@Suite(.timeLimit(.minutes(5))) struct MessageValidationTests {
    @Test("102,400 bytes are allowed; 102,401 are messageTooLarge")
    func sizeLimit() async throws {
        try Message(content: Data(count: 102_400)).validate()
        let code = await nearbyErrorCode { try Message(content: Data(count: 102_401)).validate() }
        #expect(code == .messageTooLarge)
    }

    @Test("'*' in a namespace or type is invalidMessageLabel", arguments: [("a*", ""), ("", "*"), ("*", "x")])
    func star(_ labels: (String, String)) async {
        let code = await nearbyErrorCode { try Message(text: "x", namespace: labels.0, type: labels.1).validate() }
        #expect(code == .invalidMessageLabel)
    }

    @Test("a type over 32 characters is invalidMessageLabel")
    func longType() async {
        let code = await nearbyErrorCode { try Message(text: "x", type: String(repeating: "t", count: 33)).validate() }
        #expect(code == .invalidMessageLabel)
    }

    @Test("namespace and type may take 115 bytes together, so a descriptor always fits in 131 bytes")
    func labelBudget() async throws {
        let namespace = String(repeating: "n", count: 115 - 32)
        let type = String(repeating: "t", count: 32)
        let message = Message(content: Data(count: 102_400), namespace: namespace, type: type)
        try message.validate()
        #expect(MessageEnvelope.advertisement(for: message).bytes.count == 131)
        let over = Message(text: "x", namespace: namespace + "n", type: type)
        #expect(await nearbyErrorCode { try over.validate() } == .invalidMessageLabel)
    }

    @Test("filters reject '*' and match exact namespace and type")
    func filters() async throws {
        #expect(await nearbyErrorCode { _ = try MessageFilter.namespacedType("ns*", nil) } == .invalidMessageLabel)
        #expect(await nearbyErrorCode { _ = try MessageFilter.namespacedType("ns", "t*") } == .invalidMessageLabel)
        let filter = try MessageFilter.namespacedType("ns", "a").including(namespace: "other", type: nil)
        #expect(filter.matches(namespace: "ns", type: "a"))
        #expect(!filter.matches(namespace: "ns", type: "b"))
        #expect(filter.matches(namespace: "other", type: "anything"))
        #expect(!filter.matches(namespace: "", type: "a"))
        #expect(MessageFilter().matches(namespace: "x", type: "y"))
    }

    @Test("publish refuses oversized messages and '*' before touching any medium")
    func publishErrors() async throws {
        let manager = try testManager("validation", mediums: { _, _ in
            throw NearbyError(.mediumUnavailable, "no medium in this test")
        })
        #expect(await nearbyErrorCode { _ = try await manager.publish(Message(content: Data(count: 102_401))) } == .messageTooLarge)
        #expect(await nearbyErrorCode { _ = try await manager.publish(Message(text: "x", namespace: "a*b")) } == .invalidMessageLabel)
        #expect(await nearbyErrorCode { _ = try await manager.publish(Message(text: "x", type: "*")) } == .invalidMessageLabel)
    }
}
