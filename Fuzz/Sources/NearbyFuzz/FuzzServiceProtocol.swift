import Foundation
import NearbyMessages

@testable import NearbyMessagesService

/// Both sides of the service's JSON-line protocol. The first byte picks a side:
///
/// - even: the service reading a client's line (`ServiceRequest`), and the `id` it echoes for a bad line; a request
///   that decodes must encode and decode to itself;
/// - odd: a client reading the service's line (`decodeReply`); an event that decodes must encode and decode to
///   itself, and its message must come back from its hex. Then an event is built from the fuzzer's bytes (content
///   of at most 100 KiB, labels of at most 255 bytes, as a stranger can send): its line must stay within
///   `ServiceCodec.maximumEventLineLength` and decode back to the same message.
func fuzzServiceProtocol(_ input: FuzzInput) {
    var input = input
    let side = input.byte()
    if side & 1 == 0 {
        let line = input.rest()
        _ = MessageServiceServer.requestID(in: line)
        guard let request = try? ServiceCodec.decode(ServiceRequest.self, from: line) else { return }
        guard let encoded = try? ServiceCodec.encode(request) else {
            fuzzCheck(false, "a decoded request does not encode")
            return
        }
        // (Equality is not required: a `ttl` may come back as a neighbouring Double.)
        fuzzCheck((try? ServiceCodec.decode(ServiceRequest.self, from: Array(encoded.utf8))) != nil, "an encoded request does not decode")
        return
    }
    let mode = input.byte()
    if mode & 1 == 0 {
        let line = input.rest()
        guard let reply = try? ServiceCodec.decodeReply(from: line) else { return }
        if case .event(let event) = reply {
            _ = event.kind
            _ = event.decodedMessage
            guard let encoded = try? ServiceCodec.encode(ServiceReply.event(event)) else {
                fuzzCheck(false, "a decoded event does not encode")
                return
            }
            fuzzCheck((try? ServiceCodec.decodeReply(from: Array(encoded.utf8))) == reply, "event did not round-trip")
        }
        return
    }
    let namespace = String(decoding: input.chunk8(), as: UTF8.self)
    let type = String(decoding: input.chunk8(), as: UTF8.self)
    let pattern = input.chunk8()
    let length = Int(input.uint16()) * 2 % (Message.maximumContentSize + 1)
    let content = pattern.isEmpty ? Data(count: length) : Data((0..<length).map { pattern[$0 % pattern.count] })
    // Labels as the wire carries them: at most 255 bytes each (after the UTF-8 repair of invalid bytes, at most 3×).
    let message = Message(
        content: content, namespace: String(decoding: Array(namespace.utf8.prefix(255)), as: UTF8.self),
        type: String(decoding: Array(type.utf8.prefix(255)), as: UTF8.self))
    let event = ServiceEvent(input.byte() & 1 == 0 ? .found : .lost, message, subscription: "sub-0000abcd", serviceID: "svc")
    guard let line = try? ServiceCodec.encode(ServiceReply.event(event)) else {
        fuzzCheck(false, "an event does not encode")
        return
    }
    fuzzCheck(line.utf8.count <= ServiceCodec.maximumEventLineLength, "event line of \(line.utf8.count) bytes")
    guard case .event(let decoded)? = try? ServiceCodec.decodeReply(from: Array(line.utf8)) else {
        fuzzCheck(false, "an event line does not decode")
        return
    }
    fuzzCheck(decoded.decodedMessage == message, "event message did not round-trip")
}
