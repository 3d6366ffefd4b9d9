import Foundation
import NearbyMessages

@testable import NearbyMessagesService

/// Seeds of the targets added for issue 22: the service protocol, the found/lost trackers, the state file.
extension Seeds {
    static func hardening() -> [String: [[UInt8]]] {
        ["service-protocol": serviceProtocol(), "found-lost-flood": foundLostFlood(), "service-state-file": stateFiles()]
    }

    static func serviceProtocol() -> [[UInt8]] {
        let requests = [
            ServiceRequest(id: 1, op: .publish, serviceID: "svc", contentHex: "6869", namespace: "ns", type: "t", background: true),
            ServiceRequest(id: 2, op: .subscribe, serviceID: "svc", namespace: "ns", ttl: 60),
            ServiceRequest(id: 3, op: .watch, handle: "sub-0000abcd"),
            ServiceRequest(id: 4, op: .list),
        ].compactMap { try? ServiceCodec.encode($0) }
        let event = ServiceEvent(.found, Message(text: "hi\u{1}", namespace: "ns", type: "t"), subscription: "sub-0000abcd", serviceID: "svc")
        let replies = [
            try? ServiceCodec.encode(ServiceReply.event(event)),
            try? ServiceCodec.encode(ServiceReply.event(.subscriptionEnded("sub-0000abcd", serviceID: "svc", reason: .expired))),
            try? ServiceCodec.encode(ServiceReply.response(ServiceResponse(id: 4, entries: []))),
        ].compactMap { $0 }
        return requests.map { [0] + Array($0.utf8) } + replies.map { [1, 0] + Array($0.utf8) }
            + [[1, 1, 2, 0x01, 0x02, 1, 0x2A, 1, 0x01, 0xFF, 0xFF, 0], [1, 1, 0, 0, 2, 0xE2, 0x80, 0x10, 0x00, 1]]
    }

    static func foundLostFlood() -> [[UInt8]] {
        // Typed steps (one literal expression of both took the type checker too long on a busy machine).
        let sightings: [UInt8] = (0..<64).flatMap { (index: Int) -> [UInt8] in
            [UInt8(index % 6), UInt8(index % 9), UInt8(index % 5)]
        }
        let refreshes: [UInt8] = (0..<48).flatMap { (index: Int) -> [UInt8] in
            [UInt8(0x10 | (index % 6)), UInt8(index), UInt8(truncatingIfNeeded: index * 3)]
        }
        let first: [UInt8] = [3, 2, 1] + sightings
        let second: [UInt8] = [7, 7, 0] + refreshes + [0x85, 0, 0]
        return [first, second]
    }

    static func stateFiles() -> [[UInt8]] {
        let good = ServiceState(entries: [
            ServiceEntry(handle: "pub-0000abcd", kind: .publication, serviceID: "svc", namespace: "", type: "", contentHex: "6869", background: true),
            ServiceEntry(handle: "sub-0000abcd", kind: .subscription, serviceID: "svc", namespace: "ns", background: true),
        ])
        var bad = good
        bad.entries.append(good.entries[0])
        bad.entries.append(ServiceEntry(handle: "pub-../x", kind: .publication, serviceID: "", contentHex: "zz", background: false))
        return [good, bad].compactMap { try? ServiceCodec.encode($0) }.map { Array($0.utf8) } + [Array("{\"version\":1}".utf8)]
    }
}
