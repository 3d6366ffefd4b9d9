import Foundation
import NearbyMessages
import NearbyMessagesService
import NearbyWire
import Testing

@Suite("Service protocol codec", .timeLimit(.minutes(5)))
struct ServiceCodecTests {
    @Test("a request is one line of snake_case JSON and decodes back to itself")
    func requestRoundTrip() throws {
        let request = ServiceRequest(
            id: 7, op: .publish, serviceID: "svc", contentHex: "6869", namespace: "ns", type: "t", ttl: 30, background: true)
        let line = try ServiceCodec.encode(request)
        #expect(
            line
                == #"{"background":true,"content_hex":"6869","id":7,"namespace":"ns","op":"publish","service_id":"svc","ttl":30,"type":"t"}"#)
        #expect(!line.contains("\n"))
        #expect(try ServiceCodec.decode(ServiceRequest.self, from: Data(line.utf8)) == request)
    }

    @Test("a minimal request needs only id and op")
    func minimalRequest() throws {
        let request = try ServiceCodec.decode(ServiceRequest.self, from: Data(#"{"id":1,"op":"list"}"#.utf8))
        #expect(request == ServiceRequest(id: 1, op: .list))
    }

    @Test("an event line decodes as an event, a response line as a response")
    func replies() throws {
        let event = ServiceEvent(.found, Message(text: "hi", namespace: "ns", type: "t"), subscription: "sub-1", serviceID: "svc")
        let eventLine = try ServiceCodec.encode(ServiceReply.event(event))
        #expect(
            eventLine
                == #"{"event":"message_found","message":"hi","message_hex":"6869","namespace":"ns","service_id":"svc","size":2,"subscription":"sub-1","type":"t"}"#)
        #expect(try ServiceCodec.decodeReply(from: Data(eventLine.utf8)) == .event(event))
        #expect(event.kind == .found)
        #expect(event.decodedMessage == Message(text: "hi", namespace: "ns", type: "t"))

        let entry = ServiceEntry(
            handle: "pub-1", kind: .publication, serviceID: "svc", namespace: "", type: "", contentHex: "00",
            background: true, expiresAt: Date(timeIntervalSince1970: 1_800_000_000))
        let response = ServiceResponse(id: 3, entries: [entry])
        let responseLine = try ServiceCodec.encode(ServiceReply.response(response))
        #expect(responseLine.contains(#""expires_at":"2027-01-15T08:00:00Z""#), "\(responseLine)")
        #expect(try ServiceCodec.decodeReply(from: Data(responseLine.utf8)) == .response(response))

        let failure = ServiceResponse.failure(4, ServiceFailure(code: "invalidArgument", message: "no"))
        #expect(
            try ServiceCodec.encode(failure) == #"{"error":{"code":"invalidArgument","message":"no"},"id":4,"ok":false}"#)
    }

    @Test("bad lines are a malformedMessage NearbyError that says what is wrong")
    func badLines() {
        let cases: [(String, String)] = [
            ("not json", "not JSON"),
            (#"{"op":"list"}"#, #"missing "id""#),
            (#"{"id":1,"op":"explode"}"#, #""op""#),
            (#"{"id":"x","op":"list"}"#, #""id""#),
        ]
        for (line, reason) in cases {
            #expect {
                _ = try ServiceCodec.decode(ServiceRequest.self, from: Data(line.utf8))
            } throws: { error in
                guard let error = error as? NearbyError else { return false }
                return error.code == .malformedMessage && error.message.contains(reason)
            }
        }
    }
}
